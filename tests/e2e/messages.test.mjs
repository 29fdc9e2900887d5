// Messages that say what is wrong, and when (issue 19), on the real binary
// and real servers: a last failure with its time and that the server
// recovered since; a tool of a server whose config has an error; a
// refused connection named with its address; the --home a command was
// given in "start one with"; a missing script and `check --start`; columns
// that hold long names; `top`'s "config not reloaded"; a tool's error with
// the "mcpvisor:" prefix. And secrets masked by what they are: never by a
// server's name, never ${HOME}.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';

import {
	DEMO,
	DEMO_TOOLS,
	MCPVISOR,
	connect,
	demo,
	runCli,
	scratchDir,
	waitFor,
	withRuntime,
	writeConfig,
} from './lib.mjs';

const LONG = 'a-server-with-a-much-longer-name';
const WHEN = String.raw`at \d\d:\d\d:\d\d, \d+ s ago`;

// A loopback port nothing listens on (bound, then closed).
async function closedPort() {
	const srv = net.createServer();
	await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
	const { port } = srv.address();
	await new Promise((resolve) => srv.close(resolve));
	return port;
}

// The column a word starts at on the line that begins with name.
function columnOf(text, name, word) {
	const line = text.split('\n').find((l) => l.startsWith(`${name} `));
	assert.ok(line, `no line for ${name} in:\n${text}`);
	return line.indexOf(word);
}

// Pids of the processes whose command line holds mark (to prove them
// gone; nothing is signalled by it).
function pidsWith(mark) {
	const out = [];
	for (const d of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(d))
			continue;
		try {
			if (fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(mark))
				out.push(Number(d));
		} catch {
			// gone meanwhile
		}
	}
	return out;
}

test('status after a server was killed and recovered: when it failed, and that it recovered since', {
	timeout: 40_000,
}, async (t) => {
	const servers = {
		demo: demo(),
		notes: demo(['--name', 'notes'], { scope: 'session' }),
		[LONG]: demo(),
	};
	await withRuntime(t, servers, async (rt) => {
		const c = await connect(rt);
		const killed = [];
		for (const name of ['demo', 'notes']) {
			const first = await rt.demoPids(c, `${name}__pid`);
			process.kill(first.pid, 'SIGKILL');
			await waitFor(async () => {
				const s = await rt.status();
				const inst = s.servers.find((x) => x.name === name).instances[0];
				return inst?.state === 'failed';
			}, 10_000, `${name} failed`);
			// The next call reconnects it.
			const again = await rt.demoPids(c, `${name}__pid`);
			assert.notEqual(again.pid, first.pid);
			killed.push(name);
		}
		const text = await rt.cli(['status']);
		assert.equal(text.code, 0, text.stderr);
		t.diagnostic(`status after a kill and a recovery:\n${text.stdout}`);
		const fail = String.raw`last failed: exited on signal 9 \(Killed\), ${WHEN}; recovered since`;
		assert.match(text.stdout, new RegExp(String.raw`^demo\s+(running|idle)\s+scope app.*\n    ${fail}$`, 'm'));
		const st = await rt.status();
		for (const name of killed) {
			const lf = st.servers.find((x) => x.name === name).lastFailure;
			assert.ok(lf.recoveredAt >= lf.at, JSON.stringify(lf));
		}
		// Its session gone, the session's server runs no instance: the
		// failure is history, told with its time, without its stderr.
		await c.close();
		await waitFor(async () => {
			const s = await rt.status();
			return s.servers.find((x) => x.name === 'notes').instances.length === 0;
		}, 10_000, 'the session instance closed');
		const after = await rt.cli(['status']);
		t.diagnostic(`status after the session ended:\n${after.stdout}`);
		assert.match(after.stdout, new RegExp(String.raw`^notes\s+not running\s+scope session \(${fail}\)\n(?!    stderr:)`, 'm'));
		// The columns hold a name over 16 characters.
		assert.equal(columnOf(after.stdout, LONG, 'not running'), columnOf(after.stdout, 'notes', 'not running'));
		assert.equal(columnOf(after.stdout, LONG, 'not running'), LONG.length + 1);
	});
});

test('a tool of a server whose config has an error: the server and its error, not "Unknown tool"', {
	timeout: 30_000,
}, async (t) => {
	const servers = { demo: demo(), filesystem: { command: 'npx', args: 42 }, off: demo([], { disabled: true }) };
	await withRuntime(t, servers, async (rt) => {
		const r = await rt.cli(['call', 'filesystem__list_directory', '{}']);
		assert.equal(r.code, 1, r.stderr);
		assert.match(r.stderr, /Tool "filesystem__list_directory" cannot be called: server "filesystem" is not served because of an error in its config: .*server "filesystem": field "args": expected an array of strings, got number/);
		assert.doesNotMatch(r.stderr, /Unknown tool/);
		const c = await connect(rt);
		const res = await c.request('tools/call', { name: 'off__echo', arguments: { text: 'x' } });
		assert.match(res.error?.message ?? '', /Tool "off__echo" cannot be called: server "off" is disabled in the config/, JSON.stringify(res));
		// A name no server has is still unknown, with what exists.
		const unknown = await c.request('tools/call', { name: 'nope__echo', arguments: {} });
		assert.match(unknown.error?.message ?? '', /Unknown tool "nope__echo"\. Available: demo__echo/);
		await c.close();
	});
});

test('a refused connection names the address and the cause', { timeout: 30_000 }, async (t) => {
	const port = await closedPort();
	await withRuntime(t, { remote: { url: `http://localhost:${port}/mcp`, scope: 'app' } }, async (rt) => {
		const tools = await rt.cli(['tools']);
		assert.equal(tools.code, 1);
		const said = `the server at localhost:${port} refused the connection during startup`;
		assert.ok(tools.stderr.includes(`server "remote" failed: ${said}`), tools.stderr);
		const text = await rt.cli(['status']);
		assert.ok(text.stdout.includes(said), text.stdout);
	});
});

test('no runtime: "start one with" carries the --home the command was given', { timeout: 20_000 }, async (t) => {
	const home = await scratchDir(t);
	const r = await runCli(['status'], { home });
	assert.equal(r.code, 3);
	assert.ok(r.stderr.includes(`start one with \`mcpvisor serve --home ${home}\``), r.stderr);
	// Relative: made absolute, so it is right wherever it is run.
	const rel = await runCli(['tools', '--home', 'some/where']);
	assert.equal(rel.code, 3);
	assert.ok(rel.stderr.includes(`\`mcpvisor serve --home ${path.resolve('some/where')}\``), rel.stderr);
	// MCPVISOR_HOME: `mcpvisor serve` finds it by itself.
	const env = await runCli(['status'], { env: { MCPVISOR_HOME: home } });
	assert.match(env.stderr, /start one with `mcpvisor serve`\n/);
});

test('check: a missing script is a note; check --start starts each server, says which failed and why, and leaves nothing', {
	timeout: 60_000,
}, async (t) => {
	const dir = await scratchDir(t);
	const tmp = await scratchDir(t, 'mcpvisor-e2e-tmp-');
	const mark = `check-start-${process.pid}-${Date.now()}`;
	const port = await closedPort();
	const file = await writeConfig(dir, {
		demo: { command: DEMO, args: ['--name', mark] },
		[LONG]: { command: DEMO, args: ['--name', mark], scope: 'app' },
		nodejs: { command: process.execPath, args: ['/nonexistent/mcpv-e2e/index.js'] },
		crashy: { command: 'sh', args: ['-c', 'echo boom >&2; exit 3'] },
		remote: { url: `http://localhost:${port}/mcp` },
		off: { command: DEMO, disabled: true },
	});
	const plain = await runCli(['check', file], { home: dir });
	assert.equal(plain.code, 0, plain.stderr);
	assert.match(plain.stderr, /note: server "nodejs": script "\/nonexistent\/mcpv-e2e\/index\.js" does not exist; it will fail to start/);
	assert.match(plain.stdout, /: 6 server\(s\), 0 with errors, 1 that may not start \(see the notes\)$/m);
	// Columns in line with a long name.
	assert.equal(columnOf(plain.stdout, LONG, 'stdio'), columnOf(plain.stdout, 'demo', 'stdio'));
	const json = JSON.parse((await runCli(['check', file, '--json'], { home: dir })).stdout);
	assert.match(json.servers.find((s) => s.name === 'nodejs').notes[0], /does not exist/);

	const r = await runCli(['check', file, '--start'], { home: dir, env: { TMPDIR: tmp }, timeout: 50_000 });
	t.diagnostic(`check --start:\n${r.stdout}${r.stderr}`);
	assert.equal(r.code, 1, r.stdout + r.stderr);
	const n = DEMO_TOOLS.length;
	assert.match(r.stdout, new RegExp(`^demo\\s+ok, ${n} tool\\(s\\)$`, 'm'));
	assert.match(r.stdout, new RegExp(`^${LONG} ok, ${n} tool\\(s\\)$`, 'm'));
	assert.match(r.stdout, /^nodejs\s+failed: exited with code 1 during startup\n\s+.*Cannot find module '\/nonexistent\/mcpv-e2e\/index\.js'/m);
	assert.match(r.stdout, /^crashy\s+failed: exited with code 3 during startup\n\s+boom$/m);
	assert.match(r.stdout, new RegExp(`^remote\\s+failed: the server at localhost:${port} refused the connection during startup$`, 'm'));
	assert.match(r.stdout, /^off\s+not started: disabled$/m);
	assert.match(r.stdout, /: 2 started and listed their tools, 3 failed, 1 not started$/m);
	// The private runtime, its servers and its home are gone.
	assert.deepEqual(fs.readdirSync(tmp), [], 'the private home is removed');
	assert.deepEqual(pidsWith(mark), [], 'no server of the check is left');
	// The user's home saw nothing of it.
	assert.deepEqual(fs.readdirSync(dir).sort(), ['mcp.json']);

	const js = JSON.parse((await runCli(['check', file, '--start', '--json'], { home: dir, env: { TMPDIR: tmp }, timeout: 50_000 })).stdout);
	assert.deepEqual(js.start.map((s) => [s.name, s.result]), [
		['demo', 'ok'], [LONG, 'ok'], ['nodejs', 'failed'], ['crashy', 'failed'], ['remote', 'failed'], ['off', 'not started'],
	]);
});

test('top shows the "config not reloaded" line status shows', { timeout: 30_000 }, async (t) => {
	await withRuntime(t, { demo: demo() }, async (rt) => {
		await fsp.writeFile(rt.configPath, '{ "mcpServers": { "demo": ');
		const reload = await rt.cli(['reload']);
		assert.notEqual(reload.code, 0);
		const top = await rt.cli(['top']);
		assert.equal(top.code, 0, top.stderr);
		assert.match(top.stdout, /^config not reloaded \(the previous config runs\): .*not valid JSON/m, top.stdout);
		const status = await rt.cli(['status']);
		assert.match(status.stdout, /^config not reloaded \(the previous config runs\): .*not valid JSON/m);
	});
});

test('call: a tool\'s error reads as the others do, on stderr with "mcpvisor:"', { timeout: 30_000 }, async (t) => {
	await withRuntime(t, { demo: demo() }, async (rt) => {
		const r = await rt.cli(['call', 'demo__echo', '{}']);
		assert.equal(r.code, 1);
		assert.equal(r.stdout, '');
		assert.match(r.stderr, /^mcpvisor: demo__echo failed: missing required argument "text"$/m);
		const ok = await rt.cli(['call', 'demo__echo', '{"text":"hi"}']);
		assert.equal(ok.stdout, 'hi\n');
	});
});

test('secrets by what they are: ${HOME} and plain values stay readable in the log and status, a secret variable does not', {
	timeout: 30_000,
}, async (t) => {
	const home = await scratchDir(t, 'mcpvisor-e2e-userhome-');
	const SECRET = 'tok-e2e-9f8e7d6c5b4a3f2e1d';
	const servers = {
		paths: demo(['--name', '${HOME}/projects'], { env: { NODE_ENV: 'production' } }),
		keyed: demo(['--name', '${MCPV_E2E_KEY}'], { env: { API_TOKEN: SECRET } }),
	};
	await withRuntime(t, servers, { env: { HOME: home, MCPV_E2E_KEY: SECRET } }, async (rt) => {
		const c = await connect(rt);
		await rt.demoPids(c, 'paths__pid');
		await rt.demoPids(c, 'keyed__pid');
		await waitFor(() => rt.stderr().includes('server keyed: demo:'), 5000, 'the stderr lines');
		assert.ok(rt.stderr().includes(`server paths: demo: "${home}/projects" ready`), rt.stderr());
		assert.ok(rt.stderr().includes('server keyed: demo: "***" ready'), rt.stderr());
		const v = await rt.cli(['status', '-v']);
		assert.ok(v.stdout.includes(`"${home}/projects" ready`), v.stdout);
		const check = await rt.cli(['check', rt.configPath], { env: { HOME: home, MCPV_E2E_KEY: SECRET } });
		assert.match(check.stdout, /env: NODE_ENV=production$/m);
		assert.match(check.stdout, /env: API_TOKEN=\*\*\*$/m);
		for (const out of [rt.stderr(), v.stdout, check.stdout, JSON.stringify(await rt.status())])
			assert.ok(!out.includes(SECRET), 'the secret shows');
		await c.close();
	});
});

test('setup --dry-run: a server named secret-api, 1password, *auth*, *session* or *private* is not masked for its name', {
	timeout: 20_000,
}, async (t) => {
	const home = await scratchDir(t, 'mcpvisor-setup-home-');
	const mh = await scratchDir(t, 'mcpvisor-setup-mh-');
	const file = path.join(home, '.config/Claude/claude_desktop_config.json');
	await fsp.mkdir(path.dirname(file), { recursive: true });
	const names = ['secret-api', '1password', 'github-auth', 'browser-session', 'private-notes'];
	// As Claude Desktop's documentation writes it: arrays on one line.
	const entries = names.map((n) => `    "${n}": {\n      "command": "npx",\n      "args": ["-y", "@acme/${n}-mcp"]` +
		(n === '1password' ? ',\n      "env": {\n        "OP_SERVICE_ACCOUNT_TOKEN": "ops_e2eFIXTURESECRET0123"\n      }' : '') +
		'\n    }');
	await fsp.writeFile(file, `{\n  "mcpServers": {\n${entries.join(',\n')}\n  }\n}\n`);
	const r = await runCli(['setup', 'claude-desktop', '--dry-run'], {
		home: mh,
		env: { HOME: home, XDG_CONFIG_HOME: '', MCPVISOR_HOME: '' },
	});
	assert.equal(r.code, 0, r.stderr);
	t.diagnostic(r.stdout);
	assert.doesNotMatch(r.stdout + r.stderr, /FIXTURESECRET/);
	assert.match(r.stdout, /"OP_SERVICE_ACCOUNT_TOKEN": "\*\*\*"/);
	for (const n of names) {
		assert.match(r.stdout, new RegExp(`^\\+\\s+"${n}": \\{\\n\\+\\s+"command": "npx",\\n\\+\\s+"args": \\["-y", "@acme/${n}-mcp"\\]`, 'm'), n);
		assert.match(r.stdout, new RegExp(`^-\\s+"args": \\["-y", "@acme/${n}-mcp"\\]`, 'm'), n);
	}
	assert.doesNotMatch(r.stdout, /"command": "\*\*\*"|"\*\*\*": \{/);
	assert.match(r.stdout, new RegExp(`"command": "${MCPVISOR.replaceAll('/', '\\/')}"`));
});
