// The terminal client (`mcpvisor tools`, `call`, `status`, `check`, `stop`)
// against a real runtime, with its stdout and exit codes checked.
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import {
	DEMO_TOOLS,
	connect,
	demo,
	makeHome,
	runCli,
	withRuntime,
	writeConfig,
} from './lib.mjs';

const BOTH = [
	...DEMO_TOOLS.map((n) => `demo__${n}`),
	...DEMO_TOOLS.map((n) => `other__${n}`),
];

test('cli: tools, call, status and an unknown tool against one runtime', {
	timeout: 120_000,
}, async (t) => {
	await withRuntime(t, { demo: demo(), other: demo(['--name', 'other']) }, async (rt) => {
		// Nothing started before the first request that needs a server.
		let st = await rt.status();
		assert.deepEqual(
			st.servers.map((s) => s.name),
			['demo', 'other'],
		);
		for (const s of st.servers) {
			assert.equal(s.scope, 'app');
			for (const i of s.instances)
				assert.notEqual(i.state, 'running', JSON.stringify(i));
		}

		const tools = await rt.cli(['tools']);
		assert.equal(tools.code, 0, tools.stderr);
		const lines = tools.stdout.trim().split('\n');
		assert.deepEqual(lines.map((l) => l.split(/\s+/)[0]), BOTH);
		assert.match(lines[0], /^demo__echo\s+Echo the given text back\.$/);

		const only = await rt.cli(['tools', 'other', '--json']);
		assert.equal(only.code, 0, only.stderr);
		assert.deepEqual(
			JSON.parse(only.stdout).map((x) => x.name),
			DEMO_TOOLS.map((n) => `other__${n}`),
		);

		// A client session that has used both servers holds them, so the
		// CLI's calls below reach the same running instances.
		const c = await connect(rt);
		assert.deepEqual((await c.listAll()).map((x) => x.name), BOTH);
		const held = await rt.demoPids(c, 'demo__pid');

		const hi = await rt.cli(['call', 'demo__echo', '{"text":"hi"}']);
		assert.equal(hi.code, 0, hi.stderr);
		assert.equal(hi.stdout, 'hi\n');

		const add = await rt.cli(['call', 'other__add', '{"a":1,"b":2}', '--json']);
		assert.equal(add.code, 0, add.stderr);
		assert.deepEqual(JSON.parse(add.stdout).structuredContent, { sum: 3 });

		const pid = await rt.cli(['call', 'demo__pid']);
		assert.equal(pid.code, 0, pid.stderr);
		assert.equal(JSON.parse(pid.stdout).pid, held.pid, 'same instance');

		const fail = await rt.cli(['call', 'demo__fail', '{}']);
		assert.equal(fail.code, 1, 'a tool error exits 1');
		// An error, as the others read: on stderr, "mcpvisor:" first.
		assert.match(fail.stderr, /^mcpvisor: demo__fail failed: .*always fails/m);
		assert.equal(fail.stdout, '');

		for (const name of ['demo__nope', 'nope__echo']) {
			const unknown = await rt.cli(['call', name, '{}']);
			assert.equal(unknown.code, 1, name);
			assert.match(unknown.stderr, new RegExp(name));
			assert.match(unknown.stderr, /demo__echo/, `${name}: names available tools`);
		}

		const badJson = await rt.cli(['call', 'demo__echo', '{not json']);
		assert.equal(badJson.code, 2, badJson.stderr);
		assert.match(badJson.stderr, /JSON object/);

		st = await rt.status();
		const byName = Object.fromEntries(st.servers.map((s) => [s.name, s]));
		for (const n of ['demo', 'other']) {
			const [inst] = byName[n].instances;
			assert.equal(inst.state, 'running', JSON.stringify(inst));
			assert.equal(inst.lists.tools, DEMO_TOOLS.length);
			assert.ok(Number.isInteger(inst.pid) && inst.pid > 1);
			assert.ok(inst.sessions.includes(c.sid) || inst.sessions.length >= 1,
				`${n}: sessions ${JSON.stringify(inst.sessions)}`);
		}
		assert.equal(byName.demo.instances[0].pid, held.pid);
		assert.equal(st.pid, rt.info.pid);
		assert.equal(st.port, rt.port);
		assert.ok(st.sessions >= 1, `sessions: ${st.sessions}`);

		// Human status names every server and its state.
		const human = await rt.cli(['status']);
		assert.equal(human.code, 0, human.stderr);
		// A running instance that no request holds may read as idle.
		assert.match(human.stdout, /^demo\s+(running|idle)\b/m);
		assert.match(human.stdout, /^other\s+(running|idle)\b/m);
		await c.close();
	});
});

test('cli: call of an unknown tool names the available ones with no session open', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { demo: demo() }, async (rt) => {
		// The plain terminal case: no client holds the server, so its
		// instance closes between the CLI's own sessions.
		const hi = await rt.cli(['call', 'demo__echo', '{"text":"hi"}']);
		assert.equal(hi.code, 0, hi.stderr);
		assert.equal(hi.stdout, 'hi\n');
		const unknown = await rt.cli(['call', 'demo__nope', '{}']);
		assert.equal(unknown.code, 1);
		assert.match(unknown.stderr, /demo__nope/);
		assert.match(unknown.stderr, /demo__echo/, 'names available tools');
		await rt.status();
	});
});

test('cli: no runtime exits 3; check validates a config', {
	timeout: 60_000,
}, async (t) => {
	const home = await makeHome();
	try {
		for (const args of [['status'], ['tools'], ['call', 'demo__echo', '{}']]) {
			const r = await runCli(args, { home });
			assert.equal(r.code, 3, `${args[0]}: ${r.stdout}${r.stderr}`);
			assert.ok(r.stderr.length > 0, `${args[0]} says why`);
		}

		const good = await writeConfig(home, { demo: demo() });
		const ok = await runCli(['check', good, '--json']);
		assert.equal(ok.code, 0, ok.stderr);
		assert.match(ok.stdout, /demo/);

		const badFile = path.join(home, 'bad.json');
		await fsp.writeFile(
			badFile,
			JSON.stringify({
				mcpServers: {
					demo: demo(),
					broken: { command: 42, scope: 'app' },
				},
			}),
		);
		const bad = await runCli(['check', badFile]);
		assert.equal(bad.code, 2, `${bad.stdout}${bad.stderr}`);
		assert.match(bad.stdout + bad.stderr, /broken/);

		// A url server is valid and check shows its transport; header
		// values and an arg from a variable stay masked.
		const urlFile = path.join(home, 'url.json');
		await fsp.writeFile(
			urlFile,
			JSON.stringify({
				mcpServers: {
					remote: {
						url: 'https://example.invalid/mcp',
						headers: { Authorization: 'Bearer hdr-secret-1' },
					},
					local: {
						command: '/bin/true',
						args: ['--token=${MCPV_E2E_TOKEN}'],
					},
				},
			}),
		);
		const url = await runCli(['check', urlFile], {
			env: { MCPV_E2E_TOKEN: 'arg-secret-2' },
		});
		assert.equal(url.code, 0, `${url.stdout}${url.stderr}`);
		assert.match(url.stdout, /^remote\s.*transport auto\s+https:\/\/example\.invalid\/mcp$/m);
		assert.match(url.stdout, /^local\s.*transport stdio\s/m);
		assert.doesNotMatch(url.stderr, /not serve/);
		assert.doesNotMatch(url.stdout + url.stderr, /hdr-secret-1|arg-secret-2/);
		assert.match(url.stdout, /--token=\$\{MCPV_E2E_TOKEN\}/);
	} finally {
		await fsp.rm(home, { recursive: true, force: true });
	}
});

test('cli: stop drains the runtime and it exits 0', { timeout: 30_000 }, async (t) => {
	await withRuntime(t, { demo: demo(['--grandchild']) }, async (rt) => {
		const c = await connect(rt);
		const info = await rt.demoPids(c);
		assert.ok(info.grandchild > 1, 'grandchild pid');
		await rt.status();
		const r = await rt.cli(['stop']);
		assert.equal(r.code, 0, r.stderr);
		const ex = await rt.waitExit();
		assert.equal(ex.code, 0, 'exit code after mcpvisor stop');
		await assert.rejects(
			fsp.access(path.join(rt.home, 'run', 'runtime.json')),
			'runtime file removed',
		);
	});
});
