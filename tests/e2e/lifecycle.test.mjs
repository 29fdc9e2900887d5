// Process lifetime on real processes: SIGTERM stops every server the runtime
// started (grandchildren and SIGTERM-ignoring servers included), and servers
// that cannot start show as failed while the good ones keep serving.
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import {
	DEMO_TOOLS,
	connect,
	demo,
	nodeServer,
	waitFor,
	withRuntime,
} from './lib.mjs';

const STUBBORN = {
	plain: demo(['--name', 'plain']),
	gc: demo(['--name', 'gc', '--grandchild']),
	stubborn: demo(['--name', 'stubborn', '--ignore-sigterm']),
	both: demo(['--name', 'both', '--grandchild', '--ignore-sigterm']),
};

// Starts every server and learns every pid: instances and grandchildren.
async function learnAll(rt, c, names) {
	const tools = await c.listAll();
	for (const p of names)
		assert.ok(tools.some((t) => t.name === `${p}__echo`), p);
	const info = {};
	for (const p of names)
		info[p] = await rt.demoPids(c, `${p}__pid`);
	return { tools, info };
}

// Resolves once status shows a call in flight on server's instance.
function waitInflight(rt, server) {
	return waitFor(
		async () => {
			const st = await rt.status();
			const s = st.servers.find((x) => x.name === server);
			return s.instances[0]?.inflight > 0;
		},
		5000,
		`a call in flight on ${server}`,
	);
}

test('SIGTERM: exit 0, no server, grandchild or SIGTERM-ignoring server left', {
	timeout: 80_000,
}, async (t) => {
	await withRuntime(
		t,
		{
			...STUBBORN,
			everything: nodeServer(
				'@modelcontextprotocol/server-everything/dist/index.js',
				['stdio'],
			),
		},
		async (rt) => {
			const c = await connect(rt);
			const { tools, info } = await learnAll(rt, c, Object.keys(STUBBORN));
			assert.ok(tools.some((t) => t.name === 'everything__echo'));
			assert.ok(info.gc.grandchild > 1 && info.both.grandchild > 1);
			// Each server leads its own process group (so the stop can
			// reach its grandchildren) and is the runtime's child.
			assert.equal(info.gc.pgid, info.gc.pid, 'own process group');
			assert.equal(info.gc.ppid, rt.child.pid, 'child of the runtime');

			const st = await rt.status();
			assert.equal(rt.pids.size, 5 + 2, 'pids learned');
			for (const s of st.servers)
				assert.equal(s.instances[0].state, 'running', s.name);

			const t0 = Date.now();
			rt.terminate();
			const ex = await rt.waitExit();
			const took = Date.now() - t0;
			assert.equal(ex.code, 0, 'exit code');
			// Stop: stdin closed, SIGTERM, SIGKILL after a bounded wait.
			assert.ok(took < 12_000, `stop took ${took} ms`);
			await assert.rejects(
				fsp.access(path.join(rt.home, 'run', 'runtime.json')),
				'runtime file removed on exit',
			);
		},
	);
});

test('SIGINT stops the runtime like SIGTERM: exit 0, servers gone', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { gc: demo(['--name', 'gc', '--grandchild']) }, async (rt) => {
		const c = await connect(rt);
		const info = await rt.demoPids(c, 'gc__pid');
		assert.ok(info.grandchild > 1);
		await rt.status();
		rt.terminate('SIGINT');
		assert.equal((await rt.waitExit()).code, 0, 'exit code after SIGINT');
	});
});

test('SIGTERM with a call in flight: the call is answered, then exit 0', {
	timeout: 60_000,
}, async (t) => {
	// A grace longer than the call, so that the call must finish.
	const opts = { args: ['--grace', '5s'] };
	await withRuntime(t, { plain: demo(['--name', 'plain']) }, opts, async (rt) => {
		const c = await connect(rt);
		await learnAll(rt, c, ['plain']);
		// Drain: calls in flight finish, or are cancelled with an
		// error after a bounded grace; never cut off without an answer.
		const inflight = c
			.request('tools/call', {
				name: 'plain__sleep',
				arguments: { ms: 1500 },
			})
			.catch((e) => ({ lost: `${e.message} ${e.cause?.message ?? ''}` }));
		await waitInflight(rt, 'plain');
		rt.terminate();
		const reply = await inflight;
		assert.ok(
			reply.result || reply.error,
			`in-flight call got no answer: ${JSON.stringify(reply)}`,
		);
		assert.ok(reply.result, `finished within the grace: ${JSON.stringify(reply)}`);
		assert.equal((await rt.waitExit(8000)).code, 0, 'exit code');
	});
});

test('a second SIGTERM while draining still stops every process and exits 0', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, STUBBORN, async (rt) => {
		const c = await connect(rt);
		await learnAll(rt, c, Object.keys(STUBBORN));
		await rt.status();
		rt.terminate();
		// The SIGTERM-ignoring servers hold the drain for its SIGKILL
		// delay; a second signal (a host, or Ctrl-C twice) lands then.
		await waitFor(
			() => /stopping \(SIGTERM\)/.test(rt.stderr()),
			5000,
			'the runtime to start draining',
		);
		rt.terminate();
		const ex = await rt.waitExit();
		assert.equal(
			ex.code,
			0,
			`exit after a second SIGTERM: ${ex.code ?? ex.signal}`,
		);
	});
});

test('failed servers: exit at start and missing command show the reason; good server serves', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(
		t,
		{
			good: demo(['--name', 'good']),
			early: demo(['--name', 'early', '--exit-at-start', '7', '--stderr-lines', '3'], {
				startupTimeout: '30s',
			}),
			missing: {
				command: '/nonexistent/mcpvisor-e2e/no-such-server',
				args: [],
				scope: 'app',
				startupTimeout: '30s',
			},
		},
		async (rt) => {
			const c = await connect(rt);
			const t0 = Date.now();
			const tools = await c.listAll();
			const took = Date.now() - t0;
			assert.deepEqual(
				tools.map((t) => t.name),
				DEMO_TOOLS.map((n) => `good__${n}`),
			);
			// Failing fast: neither bad server holds the list up to its
			// startup timeout (30 s: half of it is a margin a busy
			// machine keeps).
			assert.ok(took < 15_000, `tools/list took ${took} ms`);

			const echo = await c.call('good__echo', { text: 'still here' });
			assert.equal(echo.content[0].text, 'still here');
			await rt.demoPids(c, 'good__pid');

			const st = await rt.status();
			const by = Object.fromEntries(st.servers.map((s) => [s.name, s]));
			assert.equal(by.good.instances[0].state, 'running');

			const early = by.early.instances[0];
			assert.equal(early.state, 'failed', JSON.stringify(early));
			assert.match(early.error, /\b7\b/, 'exit code in the reason');
			assert.match(early.stderr, /stderr line 3 of 3/);
			assert.match(early.stderr, /exiting at start with code 7/);

			const missing = by.missing.instances[0];
			assert.equal(missing.state, 'failed', JSON.stringify(missing));
			assert.match(
				missing.error,
				/no such file|not found|ENOENT|no-such-server/i,
			);

			// A call to a failed server's tool fails with an error, and
			// good calls keep working after it.
			const bad = await c.request('tools/call', {
				name: 'early__echo',
				arguments: { text: 'x' },
			});
			assert.ok(
				bad.error || bad.result?.isError,
				`early__echo: ${JSON.stringify(bad)}`,
			);
			const sum = await c.call('good__add', { a: 20, b: 22 });
			assert.deepEqual(sum.structuredContent, { sum: 42 });

			// The human status says failed and why.
			const human = await rt.cli(['status']);
			assert.equal(human.code, 0, human.stderr);
			assert.match(human.stdout, /^early\s+failed\b/m);
			assert.match(human.stdout, /^missing\s+failed\b/m);
		},
	);
});
