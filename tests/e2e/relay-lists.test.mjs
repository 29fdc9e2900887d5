// After a new runtime the relay compares the lists the host saw with the
// new runtime's and sends list_changed only for those that differ: a
// restart that changes nothing costs the host no round of lists.
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { test } from 'node:test';

import { demo, procStat, waitFor, writeConfig } from './lib.mjs';
import { assert, echo, hostConnect, runtimeFile, withRelayHome, DEMO, homeWith } from './relay-lib.mjs';

// Stops the runtime the relay started (it is replaced on the next call).
async function stopRuntime(home) {
	const pid = runtimeFile(home).pid;
	process.kill(pid, 'SIGTERM');
	await waitFor(() => !procStat(pid), 5000, `runtime ${pid} gone`);
	return pid;
}

test('relay: a new runtime brings tools/list_changed only when the tools differ', {
	timeout: 60_000,
}, async (t) => {
	await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
		const h = await hostConnect(ctx.home);
		ctx.hosts.push(h);
		const notes = [];
		h.client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => notes.push(n));
		const before = (await h.client.listTools()).tools.map((x) => x.name).sort();

		// Same config: the relay asks the new runtime for the tools
		// before the host's call goes (its answer comes from the
		// catalogue, the call's from a server that must start), so by the
		// time the call and a list after it are answered, a change would
		// have been told.
		await stopRuntime(ctx.home);
		await echo(h.client, 'same');
		const again = (await h.client.listTools()).tools.map((x) => x.name).sort();
		assert.deepEqual(again, before);
		assert.equal(notes.length, 0, 'no list_changed for the same tools');

		// Another server in the config: the next runtime lists more.
		await writeConfig(ctx.home, { ...DEMO(), other: demo(['--name', 'other']) });
		await stopRuntime(ctx.home);
		await echo(h.client, 'more');
		await waitFor(() => notes.length >= 1, 5000, 'tools/list_changed');
		const after = (await h.client.listTools()).tools.map((x) => x.name);
		assert.ok(after.some((n) => n.startsWith('other__')), `tools: ${after}`);
		assert.equal(notes.length, 1);
	});
});
