// The terminal commands on the loop's HTTP client (httpc_fetch): a frozen
// runtime is reported within the default timeout, never waited on, and a
// tool call longer than the silence timeout still succeeds, because the
// runtime's answer stream carries heartbeats while the call runs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { demo, withRuntime } from './lib.mjs';

test('cli: a frozen runtime is reported by status (10 s) and call (5 s of silence); after SIGCONT both work', {
	timeout: 80_000,
}, async (t) => {
	// Stopped below: in a process group of its own (Runtime.start).
	await withRuntime(t, { demo: demo() }, { ownGroup: true }, async (rt) => {
		const pid = rt.info.pid;
		// No MCPVISOR_TIMEOUT: the defaults are what is tested.
		const env = { MCPVISOR_TIMEOUT: '' };
		process.kill(pid, 'SIGSTOP');
		let st;
		let call;
		const t0 = Date.now();
		try {
			const timed = (p) => p.then((r) => ({ ...r, ms: Date.now() - t0 }));
			[st, call] = await Promise.all([
				timed(rt.cli(['status'], { env, timeout: 20_000 })),
				timed(rt.cli(['call', 'demo__echo', '{"text":"x"}'], { env, timeout: 20_000 })),
			]);
		} finally {
			process.kill(pid, 'SIGCONT');
		}
		assert.equal(st.signal, null, 'status was not killed by the test');
		assert.equal(st.code, 1, st.stderr);
		assert.match(st.stderr, new RegExp(`runtime at pid ${pid} did not answer within 10 s; it may be frozen`));
		// Its own 10 s, not the test's 20 s (no signal): how much later a
		// busy machine lets it exit is no part of the promise.
		assert.ok(st.ms >= 9_500, `status gave up after ${st.ms} ms`);
		assert.equal(call.signal, null, 'call was not killed by the test');
		assert.equal(call.code, 1, call.stderr);
		assert.match(call.stderr, new RegExp(`runtime at pid ${pid} did not answer within 5 s; it may be frozen`));
		assert.ok(call.ms >= 4_500, `call gave up after ${call.ms} ms`);
		console.log(`gave up: status after ${st.ms} ms, call after ${call.ms} ms`);
		assert.equal(st.stderr.split('\n').filter(Boolean).length, 1, 'one sentence');

		const again = await rt.cli(['status']);
		assert.equal(again.code, 0, again.stderr);
		assert.match(again.stdout, new RegExp(`runtime pid ${pid}`));
		const echo = await rt.cli(['call', 'demo__echo', '{"text":"back"}']);
		assert.equal(echo.code, 0, echo.stderr);
		assert.equal(echo.stdout.trim(), 'back');
		assert.equal(rt.exited, null, 'the runtime is alive');
	});
});

test('cli: a call longer than the silence timeout succeeds (heartbeats keep its answer alive)', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { demo: demo() }, async (rt) => {
		const env = { MCPVISOR_TIMEOUT: '' };
		const t0 = Date.now();
		const r = await rt.cli(['call', 'demo__sleep', '{"ms":6500}'], { env, timeout: 20_000 });
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stdout, /slept 6500 ms/);
		assert.ok(Date.now() - t0 >= 6_500);
	});
});
