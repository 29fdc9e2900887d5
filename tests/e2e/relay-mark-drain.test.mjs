// The relay during `mcpvisor restart`'s drain (the restart mark is there):
// a call asked then, which the draining runtime refuses (503, "stopping")
// or which finds its socket gone, never ran, so the relay waits for the new
// runtime and sends it there, instead of starting a runtime of its own; a
// call in flight through the relay is answered by the draining runtime
// (the drain lets it finish).
import fs from 'node:fs';
import { test } from 'node:test';

import { connect, runCli, waitFor } from './lib.mjs';
import {
	assert,
	awaitInflight,
	callTool,
	hostConnect,
	markPath,
	runtimeFile,
	runtimesOf,
	withRelayHome,
	DEMO,
	echo,
	homeWith,
} from './relay-lib.mjs';

test('relay: a call in flight when `mcpvisor restart` drains the runtime is answered, though another call is asked meanwhile', {
	timeout: 120_000,
}, async (t) => {
	await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
		const h = await hostConnect(ctx.home);
		ctx.hosts.push(h);
		await echo(h.client);
		const old = runtimeFile(ctx.home).pid;
		const oldSocket = runtimeFile(ctx.home).socket;
		// A call in flight makes the drain, and so the restart, last.
		const inflight = callTool(h.client, 'demo__sleep', { ms: 3000 });
		await awaitInflight(ctx.home);
		const restart = runCli(['restart'], { home: ctx.home });
		await waitFor(() => fs.existsSync(markPath(ctx.home)), 5000, 'the mark');
		await waitFor(() => !fs.existsSync(oldSocket), 5000, 'the drain (socket gone)');
		// Asked while the runtime drains and is replaced.
		const during = await callTool(h.client, 'demo__echo', { text: 'during' });
		const r = await restart;
		assert.equal(r.code, 0, `restart: ${r.stdout}${r.stderr}`);
		const info = runtimeFile(ctx.home);
		// The runtime that answers is the one restart started, not one
		// of the relay's.
		assert.match(r.stdout, new RegExp(`restarted as pid ${info.pid}\\b`));
		assert.notEqual(info.pid, old);
		assert.deepEqual(runtimesOf(ctx.home), [info.pid], 'one runtime after');
		const s = await inflight;
		assert.ok(s.result && !s.result.isError, `the call in flight drained: ${s.error?.message}`);
		assert.ok(during.result && !during.result.isError, `the call during the restart: ${during.error?.message ?? JSON.stringify(during.result)}`);
		console.log(`relay: call during restart answered in ${during.ms.toFixed(0)} ms`);
		await echo(h.client, 'after');
		assert.ok(!fs.existsSync(markPath(ctx.home)));
	});
});

test('relay: waits through `mcpvisor restart` (the mark) instead of starting a runtime; one runtime after', {
	timeout: 120_000,
}, async (t) => {
	await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
		const h = await hostConnect(ctx.home);
		ctx.hosts.push(h);
		await echo(h.client);
		const old = runtimeFile(ctx.home);
		// Another client's call in flight makes the drain, and so the
		// restart, last a few seconds.
		const other = await connect({ url: old.url });
		const inflight = other.call('demo__sleep', { ms: 3000 });
		await awaitInflight(ctx.home);
		const restart = runCli(['restart'], { home: ctx.home });
		await waitFor(() => fs.existsSync(markPath(ctx.home)), 5000, 'the mark');
		await waitFor(() => !fs.existsSync(old.socket), 5000, 'the drain (socket gone)');
		// Asked while the runtime drains and is replaced.
		const during = await callTool(h.client, 'demo__echo', { text: 'during' });
		const r = await restart;
		assert.equal(r.code, 0, `restart: ${r.stdout}${r.stderr}`);
		const info = runtimeFile(ctx.home);
		// The runtime that answers is the one restart started, not one
		// of the relay's.
		assert.match(r.stdout, new RegExp(`restarted as pid ${info.pid}\\b`));
		assert.notEqual(info.pid, old.pid);
		assert.deepEqual(runtimesOf(ctx.home), [info.pid], 'one runtime after');
		assert.ok(!(await inflight).isError, 'the other call drained');
		assert.ok(during.result && !during.result.isError, `the call during the restart: ${during.error?.message ?? JSON.stringify(during.result)}`);
		assert.deepEqual(during.result.content, [{ type: 'text', text: 'during' }]);
		console.log(`relay: call during restart answered in ${during.ms.toFixed(0)} ms`);
		await echo(h.client, 'after');
		assert.ok(!fs.existsSync(markPath(ctx.home)));
	});
});
