// Process lifetime on real processes: SIGTERM stops every server the runtime
// started (grandchildren and SIGTERM-ignoring servers included), and servers
// that cannot start show as failed while the good ones keep serving.
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import { DEMO_TOOLS, connect, demo, nodeServer, withRuntime } from './lib.mjs';

test('SIGTERM: exit 0, no server, grandchild or SIGTERM-ignoring server left', {
	timeout: 40_000,
}, async () => {
	await withRuntime(
		{
			plain: demo(['--name', 'plain']),
			gc: demo(['--name', 'gc', '--grandchild']),
			stubborn: demo(['--name', 'stubborn', '--ignore-sigterm']),
			both: demo(['--name', 'both', '--grandchild', '--ignore-sigterm']),
			everything: nodeServer(
				'@modelcontextprotocol/server-everything/dist/index.js',
				['stdio'],
			),
		},
		async (rt) => {
			const c = await connect(rt);
			const tools = await c.listAll();
			for (const p of ['plain', 'gc', 'stubborn', 'both'])
				assert.ok(tools.some((t) => t.name === `${p}__echo`), p);
			assert.ok(tools.some((t) => t.name === 'everything__echo'));

			const gc = await rt.demoPids(c, 'gc__pid');
			const both = await rt.demoPids(c, 'both__pid');
			await rt.demoPids(c, 'plain__pid');
			await rt.demoPids(c, 'stubborn__pid');
			assert.ok(gc.grandchild > 1 && both.grandchild > 1);
			// The grandchild lives in the server's process group, which
			// is its own, not the runtime's.
			assert.equal(gc.pgid, gc.pid, 'server leads its own group');
			assert.equal(gc.ppid, rt.child.pid, 'server is the runtime child');

			const st = await rt.status();
			assert.equal(rt.pids.size, 5 + 2, 'instance pids learned');
			for (const s of st.servers)
				assert.equal(s.instances[0].state, 'running', s.name);

			// A call in flight when SIGTERM arrives is answered, not
			// dropped: finished, or cancelled with an error.
			const inflight = c.request('tools/call', {
				name: 'plain__sleep',
				arguments: { ms: 300 },
			});
			await waitInflight(rt, 'plain');
			const t0 = Date.now();
			rt.child.kill('SIGTERM');
			const reply = await inflight;
			assert.ok(reply.result || reply.error, JSON.stringify(reply));
			const ex = await rt.exitPromise;
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

// Resolves once status shows a call in flight on server's instance.
async function waitInflight(rt, server) {
	const end = Date.now() + 5000;
	for (;;) {
		const st = await rt.status();
		const s = st.servers.find((x) => x.name === server);
		if (s.instances[0]?.inflight > 0)
			return;
		if (Date.now() > end)
			throw new Error(`no call in flight on ${server}`);
	}
}

test('failed servers: exit at start and missing command show the reason; good server serves', {
	timeout: 30_000,
}, async () => {
	await withRuntime(
		{
			good: demo(['--name', 'good']),
			early: demo(['--name', 'early', '--exit-at-start', '7', '--stderr-lines', '3'], {
				startupTimeout: '5s',
			}),
			missing: {
				command: '/nonexistent/mcpvisor-e2e/no-such-server',
				args: [],
				scope: 'app',
				startupTimeout: '5s',
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
			// startup timeout.
			assert.ok(took < 4000, `tools/list took ${took} ms`);

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
