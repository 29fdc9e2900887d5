// `mcpvisor relay` on real processes, the official SDK's stdio client as
// the host: finding or starting the runtime (its time printed; `make bench`
// holds the bound), several relays starting at once, the host quitting, a
// long call on a healthy runtime.
// The recovery scenarios are in relay-recovery.test.mjs, the restart mark
// in relay-mark.test.mjs.
import { test } from 'node:test';

import { procStat, waitFor } from './lib.mjs';
import {
	assert,
	callTool,
	hostClose,
	hostConnect,
	runtimeFile,
	runtimesOf,
	withRelayHome,
	DEMO,
	echo,
	homeWith,
} from './relay-lib.mjs';

// How fast the first answer comes is `make bench`'s figure, beside its
// targets (50 ms with a runtime running, 1 s when the relay starts one): a
// sanitized build on a busy machine keeps no such bound. Here: what the
// host gets, and from which runtime.
test('relay: no runtime: starts one and answers through it; with one running, answers through that one', {
	timeout: 60_000,
}, async (t) => {
	await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
		const h = await hostConnect(ctx.home);
		ctx.hosts.push(h);
		const cold = h.ms;
		const info = runtimeFile(ctx.home);
		assert.ok(info?.pid, 'the relay started a runtime');
		assert.deepEqual(runtimesOf(ctx.home), [info.pid]);
		const { tools } = await h.client.listTools();
		assert.ok(tools.some((x) => x.name === 'demo__echo'));
		await echo(h.client);
		const warm = [];
		for (let i = 0; i < 3; i++) {
			const w = await hostConnect(ctx.home);
			ctx.hosts.push(w);
			warm.push(w.ms);
			await echo(w.client, `warm ${i}`);
		}
		console.log(
			`relay first answer: no runtime ${cold.toFixed(1)} ms; runtime running ${warm.map((x) => x.toFixed(1)).join(', ')} ms`,
		);
		assert.deepEqual(runtimesOf(ctx.home), [info.pid], 'still one runtime');
		assert.equal(runtimeFile(ctx.home).pid, info.pid, 'the same runtime');
	});
});

test('relay: the host closes stdin: the relay exits 0 on its own; the runtime it started serves on', {
	timeout: 60_000,
}, async (t) => {
	await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
		const h = await hostConnect(ctx.home);
		await echo(h.client);
		const pid = runtimeFile(ctx.home).pid;
		const ex = await hostClose(h);
		console.log(`relay exit after stdin closed: ${ex.ms.toFixed(1)} ms`);
		// No signal was sent: it left at its stdin's end.
		assert.ok(!ex.stuck, `relay still there ${ex.ms} ms after stdin closed`);
		assert.equal(ex.code, 0, `relay exit: ${ex.code ?? ex.signal}\n${h.stderr()}`);
		assert.ok(!procStat(h.pid), 'relay gone');
		// Shared by hosts: the runtime outlives one relay.
		assert.ok(procStat(pid), 'the runtime it started still runs');
		const h2 = await hostConnect(ctx.home);
		ctx.hosts.push(h2);
		await echo(h2.client);
		assert.equal(runtimeFile(ctx.home).pid, pid, 'the same runtime');
	});
});

test('relay: several relays starting at once share one runtime', {
	timeout: 60_000,
}, async (t) => {
	await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
		const results = await Promise.allSettled(
			[1, 2, 3, 4].map(() => hostConnect(ctx.home)),
		);
		for (const r of results)
			if (r.status === 'fulfilled')
				ctx.hosts.push(r.value);
		for (const r of results)
			assert.equal(r.status, 'fulfilled', r.reason?.message);
		for (const h of ctx.hosts)
			await echo(h.client, `host ${h.pid}`);
		// The home's lock decides: a runtime that lost it exits (after
		// its lock retries, half a second).
		await waitFor(() => runtimesOf(ctx.home).length === 1, 3000, `one runtime (${runtimesOf(ctx.home)})`);
		assert.deepEqual(runtimesOf(ctx.home), [runtimeFile(ctx.home).pid]);
		console.log(`4 relays at once: first answers ${ctx.hosts.map((h) => h.ms.toFixed(0)).join(', ')} ms; one runtime`);
	});
});

test('relay: a long call on a healthy runtime (longer than the silence watch) is not cut off', {
	timeout: 60_000,
}, async (t) => {
	await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
		const h = await hostConnect(ctx.home);
		ctx.hosts.push(h);
		const pid = runtimeFile(ctx.home).pid;
		const r = await callTool(h.client, 'demo__sleep', { ms: 4000 });
		assert.ok(r.result && !r.result.isError, `sleep: ${r.error?.message ?? JSON.stringify(r.result)}`);
		assert.ok(r.ms >= 4000, `answered after ${r.ms} ms`);
		console.log(`relay: 4 s call answered in ${r.ms.toFixed(0)} ms`);
		assert.deepEqual(runtimesOf(ctx.home), [pid], 'the runtime was not replaced');
	});
});
