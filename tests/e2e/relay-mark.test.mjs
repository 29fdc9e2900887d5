// The relay and `mcpvisor restart`: after the restart, the host's next call
// goes to the new runtime. What happens during the drain (the restart mark
// is there) is in relay-mark-drain.test.mjs.
import fs from 'node:fs';
import { test } from 'node:test';

import { demo, makeHome, runCli, writeConfig } from './lib.mjs';
import {
	assert,
	callTool,
	hostConnect,
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
