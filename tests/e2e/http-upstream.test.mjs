// HTTP upstreams on real processes: the official server-everything in
// streamableHttp mode, run by mcpvisor on a loopback port it picks (a
// local server), and the same server started by the test on its own port
// (a remote server, reached with a secret header). Also: a squatter on
// the port the last run used, and two local servers started at once.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fsp from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';

import {
	NODE_MODULES,
	connect,
	makeHome,
	procStat,
	runInHome,
	waitFor,
	withRuntime,
	writeConfig,
} from './lib.mjs';

const EVERYTHING = path.join(
	NODE_MODULES,
	'@modelcontextprotocol/server-everything/dist/index.js',
);

// server-everything as a local server: mcpvisor picks the port.
function localEverything(extra = {}) {
	return {
		command: process.execPath,
		args: [EVERYTHING, 'streamableHttp'],
		env: { PORT: '{port}' },
		url: 'http://127.0.0.1:{port}/mcp',
		scope: 'app',
		...extra,
	};
}

function instanceOf(st, name) {
	const s = st.servers.find((x) => x.name === name);
	assert.ok(s, `server ${name} in status`);
	return s.instances?.[0];
}

// Whether something accepts connections on 127.0.0.1:port.
function listening(port) {
	return new Promise((resolve) => {
		const s = net.connect({ host: '127.0.0.1', port });
		s.once('connect', () => {
			s.destroy();
			resolve(true);
		});
		s.once('error', () => resolve(false));
	});
}

// A port nobody holds right now.
function freePort() {
	return new Promise((resolve, reject) => {
		const srv = net.createServer();
		srv.once('error', reject);
		srv.listen(0, '127.0.0.1', () => {
			const { port } = srv.address();
			srv.close(() => resolve(port));
		});
	});
}

// A separate program listening on port (it records any SIGTERM or SIGINT
// it gets in its output, and ignores them). Resolves once it listens.
async function squatter(t, port) {
	const code = `
		const net = require('node:net');
		for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP'])
			process.on(s, () => process.stdout.write('signalled ' + s + '\\n'));
		const srv = net.createServer((c) => c.end('HTTP/1.1 200 OK\\r\\ncontent-length: 2\\r\\n\\r\\nno'));
		srv.listen(${port}, '127.0.0.1', () => process.stdout.write('listening\\n'));
	`;
	const child = spawn(process.execPath, ['-e', code], {
		stdio: ['ignore', 'pipe', 'inherit'],
	});
	let out = '';
	child.stdout.setEncoding('utf8');
	child.stdout.on('data', (d) => {
		out += d;
	});
	t.after(() => child.kill('SIGKILL'));
	await waitFor(() => out.includes('listening'), 5000, 'the squatter listens');
	return { child, output: () => out };
}

test('local server-everything on an owned port: tools, a call, status -v shows the port, stop leaves nothing', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { everything: localEverything() }, async (rt) => {
		const c = await connect(rt);
		const t0 = Date.now();
		const tools = await c.listAll();
		const ready = Date.now() - t0;
		console.log(`# local server-everything: first tools/list answered ${ready} ms after it was sent (spawn, port, initialize)`);
		assert.ok(tools.some((x) => x.name === 'everything__echo'), 'echo listed');

		const echo = await c.call('everything__echo', { message: 'over http' });
		assert.equal(echo.content[0].text, 'Echo: over http');

		const inst = instanceOf(await rt.status(), 'everything');
		assert.equal(inst.transport, 'http-local');
		assert.ok(Number.isInteger(inst.port) && inst.port > 0, `port ${inst.port}`);
		assert.ok(inst.pid > 1, 'pid in status -v');
		assert.equal(inst.url, `http://127.0.0.1:${inst.port}/mcp`);
		assert.ok(await listening(inst.port), 'the server listens on the port status shows');
		// The text of status -v names the port too.
		const text = await rt.cli(['status', '-v']);
		assert.equal(text.code, 0, text.stderr);
		assert.ok(text.stdout.includes(String(inst.port)), text.stdout);

		// Stopping the server stops its process and frees its port.
		const stop = await rt.cli(['stop', 'everything']);
		assert.equal(stop.code, 0, stop.stderr);
		await waitFor(() => procStat(inst.pid) === null, 5000, 'server process gone');
		// Node's leader thread may show as a zombie while its other
		// threads still hold the socket: the port closes a moment later.
		await waitFor(async () => !(await listening(inst.port)), 5000, 'port closed');
	});
});

test('a restart of a local server gets a new port; its client never sees it', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { everything: localEverything() }, async (rt) => {
		const c = await connect(rt);
		await c.call('everything__echo', { message: 'before' });
		const before = instanceOf(await rt.status(), 'everything');
		const r = await rt.cli(['restart', 'everything']);
		assert.equal(r.code, 0, r.stderr);
		// The same client session goes on, on whatever port it is now.
		const echo = await c.call('everything__echo', { message: 'after' });
		assert.equal(echo.content[0].text, 'Echo: after');
		const after = instanceOf(await rt.status(), 'everything');
		assert.equal(after.state, 'running');
		assert.notEqual(after.pid, before.pid, 'not restarted');
		assert.notEqual(after.port, before.port, 'the port just let go of was handed out again');
		await waitFor(() => procStat(before.pid) === null, 5000, 'the old server gone');
	});
});

test('remote server-everything: url + headers with a ${VAR} token that never shows', {
	timeout: 60_000,
}, async (t) => {
	const port = await freePort();
	const server = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
		env: { ...process.env, PORT: String(port) },
		stdio: ['ignore', 'ignore', 'pipe'],
	});
	t.after(() => server.kill('SIGKILL'));
	await waitFor(() => listening(port), 10_000, 'server-everything listens');

	const secret = 'tok-e2e-5f1c9a77b2d04e3f';
	const servers = {
		remote: {
			url: `http://127.0.0.1:${port}/mcp`,
			headers: { Authorization: 'Bearer ${E2E_HTTP_TOKEN}' },
			scope: 'app',
		},
	};
	const home = await makeHome();
	t.after(() => fsp.rm(home, { recursive: true, force: true }));
	const cfg = await writeConfig(home, servers);
	const stderr = await runInHome(t, home, cfg, { env: { E2E_HTTP_TOKEN: secret } }, async (rt) => {
		const c = await connect(rt);
		const tools = await c.listAll();
		assert.ok(tools.some((x) => x.name === 'remote__echo'), 'echo listed');
		const sum = await c.call('remote__get-sum', { a: 2, b: 40 });
		assert.match(sum.content[0].text, /42/);

		const st = await rt.status();
		const inst = instanceOf(st, 'remote');
		assert.equal(inst.transport, 'http');
		assert.equal(inst.url, `http://127.0.0.1:${port}/mcp`);
		assert.equal(inst.pid, undefined, 'a remote server has no pid');
		for (const args of [['status', '--json', '-v'], ['status', '-v'], ['check']]) {
			const r = await rt.cli(args, { env: { E2E_HTTP_TOKEN: secret } });
			assert.ok(!r.stdout.includes(secret), `${args.join(' ')} shows the token`);
			assert.ok(!r.stderr.includes(secret), `${args.join(' ')} prints the token`);
		}
		await c.close();
	});
	assert.ok(!stderr.includes(secret), 'the runtime log holds the token');
	for (const f of await fsp.readdir(home, { recursive: true })) {
		const p = path.join(home, f);
		if (!(await fsp.stat(p)).isFile())
			continue;
		assert.ok(!f.includes(secret), `file name ${f}`);
		const body = await fsp.readFile(p, 'utf8');
		assert.ok(!body.includes(secret), `${f} holds the token`);
	}
	// The server lives on: mcpvisor stops only what it started.
	assert.equal(server.exitCode, null, 'the remote server was stopped');
});

test('a squatter on the port the last run used: a new owned instance still starts, the squatter is left alone', {
	timeout: 80_000,
}, async (t) => {
	const home = await makeHome();
	t.after(() => fsp.rm(home, { recursive: true, force: true }));
	const cfg = await writeConfig(home, { everything: localEverything() });
	let last;
	await runInHome(t, home, cfg, {}, async (rt) => {
		const c = await connect(rt);
		await c.call('everything__echo', { message: 'first run' });
		last = instanceOf(await rt.status(), 'everything');
	});
	assert.ok(last.port > 0);
	await waitFor(async () => !(await listening(last.port)), 5000, 'the first run freed its port');

	// Another program takes the historical port.
	const sq = await squatter(t, last.port);
	await runInHome(t, home, cfg, {}, async (rt) => {
		const c = await connect(rt);
		const echo = await c.call('everything__echo', { message: 'second run' });
		assert.equal(echo.content[0].text, 'Echo: second run');
		const now = instanceOf(await rt.status(), 'everything');
		assert.notEqual(now.port, last.port, 'the squatted port was handed out');
		assert.equal(now.state, 'running');
	});
	assert.equal(sq.child.exitCode, null, 'the squatter was stopped');
	assert.equal(sq.child.signalCode, null);
	assert.ok(!sq.output().includes('signalled'), `squatter: ${sq.output()}`);
	assert.ok(await listening(last.port), 'the squatter still listens');
});

test('two local servers started at once get different ports and both serve', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(
		t,
		{ one: localEverything(), two: localEverything() },
		async (rt) => {
			const c = await connect(rt);
			// One list starts both servers side by side.
			const tools = await c.listAll();
			assert.ok(tools.some((x) => x.name === 'one__echo'));
			assert.ok(tools.some((x) => x.name === 'two__echo'));
			const [a, b] = await Promise.all([
				c.call('one__echo', { message: 'a' }),
				c.call('two__echo', { message: 'b' }),
			]);
			assert.equal(a.content[0].text, 'Echo: a');
			assert.equal(b.content[0].text, 'Echo: b');
			const st = await rt.status();
			const p1 = instanceOf(st, 'one').port;
			const p2 = instanceOf(st, 'two').port;
			assert.ok(p1 > 0 && p2 > 0);
			assert.notEqual(p1, p2, 'two servers on one port');
			console.log(`# two local servers started at once: ports ${p1} and ${p2}`);
		},
	);
});

// A program that takes the port it is given before the server can (what
// another program does between allocation and bind), from outside the
// server's group and without its owner token. It records every byte it
// receives and every signal it gets.
const SQUATTER_JS = `
const fs = require('node:fs');
const net = require('node:net');
const [port, dir, name, host] = process.argv.slice(2);
const log = (s) => fs.appendFileSync(dir + '/' + name + '.log', s + '\\n');
for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP'])
	process.on(s, () => log('signalled ' + s));
net.createServer((c) => c.on('data', (d) => log('data ' + d.toString().split('\\r\\n')[0])))
	.listen(Number(port), host, () => {
		fs.writeFileSync(dir + '/' + name + '.pid', String(process.pid));
	});
`;

// The server's command: its first two starts find their port squatted;
// the third serves. First on 127.0.0.1, and the server never listens:
// the listener found there is the squatter's. Then on ::1 only, where no
// connection to 127.0.0.1 reaches it, but the server's listen on :: fails
// with EADDRINUSE.
function racingWrapper(dir) {
	return `#!/bin/sh
port=$1
n=$(cat "${dir}/starts" 2>/dev/null || echo 0)
n=$((n + 1))
echo $n >"${dir}/starts"
if [ $n -le 2 ]; then
	host=127.0.0.1
	[ $n -eq 2 ] && host=::1
	env -u MCPVISOR_OWNER setsid ${process.execPath} "${dir}/squatter.js" "$port" "${dir}" "sq$n" $host </dev/null >/dev/null 2>&1 &
	i=0
	while [ ! -s "${dir}/sq$n.pid" ] && [ $i -lt 200 ]; do sleep 0.02; i=$((i + 1)); done
	echo "squatted $port"
	echo "$port" >"${dir}/sq$n.port"
	[ $n -eq 1 ] && exec sleep 30
fi
PORT=$port exec ${process.execPath} ${EVERYTHING} streamableHttp
`;
}

test('a port taken between allocation and bind: picked again, the squatters never spoken to nor signalled', {
	timeout: 60_000,
}, async (t) => {
	const dir = await makeHome('mcpvisor-squat-');
	// The squatters are stopped by pid whatever happened, then the
	// folder that names them goes.
	t.after(async () => {
		for (const n of [1, 2]) {
			const pid = Number(await fsp.readFile(path.join(dir, `sq${n}.pid`), 'utf8').catch(() => 0));
			if (pid > 1 && procStat(pid))
				process.kill(pid, 'SIGKILL');
		}
		await fsp.rm(dir, { recursive: true, force: true });
	});
	await fsp.writeFile(path.join(dir, 'squatter.js'), SQUATTER_JS);
	const wrapper = path.join(dir, 'server.sh');
	await fsp.writeFile(wrapper, racingWrapper(dir), { mode: 0o755 });
	const squatters = [];
	await withRuntime(
		t,
		{
			racy: {
				command: wrapper,
				args: ['{port}'],
				url: 'http://127.0.0.1:{port}/mcp',
				scope: 'app',
			},
		},
		async (rt) => {
			const c = await connect(rt);
			const echo = await c.call('racy__echo', { message: 'third time' });
			assert.equal(echo.content[0].text, 'Echo: third time');
			assert.equal((await fsp.readFile(path.join(dir, 'starts'), 'utf8')).trim(), '3');
			const ports = [];
			for (const n of [1, 2]) {
				const pid = Number(await fsp.readFile(path.join(dir, `sq${n}.pid`), 'utf8'));
				squatters.push(pid);
				assert.ok(procStat(pid), `squatter ${n} is alive`);
			}
			const log = rt.stderr();
			// From files: a line the server printed just before it was
			// stopped may still be in its pipe when the stop closes it.
			for (const n of [1, 2])
				ports.push(Number(await fsp.readFile(path.join(dir, `sq${n}.port`), 'utf8')));
			assert.equal(ports.length, 2, log);
			const inst = instanceOf(await rt.status(), 'racy');
			assert.equal(inst.state, 'running');
			assert.ok(!ports.includes(inst.port), `served on a squatted port ${inst.port}`);
			assert.notEqual(ports[0], ports[1], 'the same port twice');
			assert.match(log, /another program answers on port/);
			assert.match(log, /could not bind port/);
		},
	);
	for (const n of [1, 2]) {
		const log = await fsp.readFile(path.join(dir, `sq${n}.log`), 'utf8').catch(() => '');
		assert.doesNotMatch(log, /signalled/, `squatter ${n}: ${log}`);
		assert.doesNotMatch(log, /data/, `squatter ${n} was spoken to: ${log}`);
	}
	for (const pid of squatters)
		assert.ok(procStat(pid), `squatter ${pid} outlived the runtime`);
});
