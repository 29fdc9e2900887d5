// The relay and `mcpvisor restart`: a relay whose runtime is being
// restarted (the restart mark is there) waits for the new runtime instead
// of starting one, keeps the calls the drain lets finish, and carries the
// host's next calls to the new runtime.
import fs from 'node:fs';
import { test } from 'node:test';

import { demo, makeHome, runCli, waitFor, writeConfig } from './lib.mjs';
import {
	assert,
	callTool,
	hostConnect,
	markPath,
	runtimeFile,
	runtimesOf,
	withRelayHome,
} from './relay-lib.mjs';

async function homeWith(servers) {
	const home = await makeHome('mcpvisor-relay-');
	await writeConfig(home, servers);
	return home;
}

const DEMO = () => ({ demo: demo(['--name', 'demo']) });

async function echo(client, text = 'hi') {
	const r = await callTool(client, 'demo__echo', { text });
	assert.ok(r.result && !r.result.isError, `echo: ${r.error?.message ?? JSON.stringify(r.result)}`);
	assert.deepEqual(r.result.content, [{ type: 'text', text }]);
	return r;
}

test('relay: the first call after a finished `mcpvisor restart` goes to the new runtime', {
	timeout: 20_000,
}, async (t) => {
	await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
		const h = await hostConnect(ctx.home);
		ctx.hosts.push(h);
		await echo(h.client);
		const old = runtimeFile(ctx.home).pid;
		const r = await runCli(['restart'], { home: ctx.home });
		assert.equal(r.code, 0, `restart: ${r.stdout}${r.stderr}`);
		const info = runtimeFile(ctx.home);
		assert.notEqual(info.pid, old);
		// It could not have reached the old runtime (gone): not "may
		// or may not have taken effect", but sent to the new one.
		const a = await echo(h.client, 'after');
		console.log(`relay: first call after a restart answered in ${a.ms.toFixed(0)} ms`);
		assert.deepEqual(runtimesOf(ctx.home), [info.pid]);
	});
});

test('relay: waits through `mcpvisor restart` (the mark) instead of starting a runtime; one runtime after', {
	timeout: 30_000,
}, async (t) => {
	await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
		const h = await hostConnect(ctx.home);
		ctx.hosts.push(h);
		await echo(h.client);
		const old = runtimeFile(ctx.home).pid;
		// A call in flight makes the drain, and so the restart, last.
		const inflight = callTool(h.client, 'demo__sleep', { ms: 1000 });
		await new Promise((r) => setTimeout(r, 100));
		const restart = runCli(['restart'], { home: ctx.home });
		await waitFor(() => fs.existsSync(markPath(ctx.home)), 5000, 'the mark');
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
