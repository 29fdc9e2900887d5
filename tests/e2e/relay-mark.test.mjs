// The relay and `mcpvisor restart`: after the restart, the host's next call
// goes to the new runtime. What happens during the drain (the restart mark
// is there) is in relay-mark-drain.test.mjs.
import fs from 'node:fs';
import { test } from 'node:test';

import { runCli } from './lib.mjs';
import {
	assert,
	callTool,
	hostConnect,
	runtimeFile,
	runtimesOf,
	withRelayHome,
	DEMO,
	echo,
	homeWith,
} from './relay-lib.mjs';

test('relay: the first call after a finished `mcpvisor restart` goes to the new runtime', {
	timeout: 60_000,
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
