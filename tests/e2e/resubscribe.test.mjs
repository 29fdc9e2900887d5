// A client's resource subscription outlives its server's process: after
// the server is killed (by pid) and started again by the next call, the
// client still hears notifications/resources/updated. A 2025 server (the
// C conformance fixture over stdio) is sent resources/subscribe again
// once the new process is ready; a 2026-07-28 server over stdio
// (fixtures/modern-server.mjs --stdio) has no resources/subscribe, and
// the new process's subscriptions/listen carries resourceSubscriptions.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { instanceOf, waitState } from './failures-lib.mjs';
import { DEMO, REPO, scratchDir, waitFor, withRuntime } from './lib.mjs';

const CONFORMANCE = path.resolve(path.dirname(DEMO), 'conformance-server');
const MODERN = path.join(REPO, 'tests/e2e/fixtures/modern-server.mjs');

async function sdkConnect(rt) {
	const client = new Client({ name: 'mcpvisor-e2e-resub', version: '0.0.0' }, { capabilities: {} });
	const transport = new StreamableHTTPClientTransport(new URL(rt.url));
	await client.connect(transport);
	return { client, transport };
}

// The uris of notifications/resources/updated the client hears.
function hearUpdates(client) {
	const updated = [];
	client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
		updated.push(n.params.uri);
	});
	return updated;
}

// Kills the server's process by pid and waits until mcpvisor saw it go.
async function killServer(rt, name) {
	const { inst } = instanceOf(await rt.status(), name);
	assert.ok(Number.isInteger(inst?.pid), JSON.stringify(inst));
	rt.track(inst.pid);
	process.kill(inst.pid, 'SIGKILL');
	await waitState(rt, name, 'failed');
	return inst.pid;
}

test('a 2025 server killed and started again is subscribed again: the client still hears resources/updated', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { conf: { command: CONFORMANCE, scope: 'app' } }, async (rt) => {
		const { client, transport } = await sdkConnect(rt);
		const updated = hearUpdates(client);
		const uri = 'test://watched-resource';
		await client.listResources();
		await client.subscribeResource({ uri });
		const first = await client.callTool({ name: 'conf__test_update_watched', arguments: {} });
		assert.match(first.content[0].text, /subscriber notified/);
		await waitFor(() => updated.length === 1, 10_000, 'the first update');

		const old = await killServer(rt, 'conf');
		// The next call starts it again; the subscription is sent before
		// the call that waited for the start.
		const second = await client.callTool({ name: 'conf__test_update_watched', arguments: {} });
		assert.match(second.content[0].text, /subscriber notified/,
			'the new process was subscribed before the call');
		await waitFor(() => updated.length === 2, 10_000, 'the update after the restart');
		assert.deepEqual(updated, [uri, uri]);
		const { inst } = instanceOf(await rt.status(), 'conf');
		assert.notEqual(inst.pid, old, 'a new process');
		rt.track(inst.pid);
		assert.match(rt.stderr(), /1 resource subscription sent again \(resources\/subscribe\): test:\/\/watched-resource/);

		// Unsubscribed: the next process is not subscribed.
		await client.unsubscribeResource({ uri });
		await killServer(rt, 'conf');
		const third = await client.callTool({ name: 'conf__test_update_watched', arguments: {} });
		assert.doesNotMatch(third.content[0].text, /subscriber notified/);
		await transport.terminateSession();
		await client.close();
	});
});

// The requests the fixture received, in order (its --log file).
function received(log) {
	if (!fs.existsSync(log))
		return [];
	return fs.readFileSync(log, 'utf8')
		.split('\n')
		.filter((l) => l.startsWith('REQ '))
		.map((l) => JSON.parse(l.slice(4)));
}

test('a 2026-07-28 stdio server killed and started again listens for the subscribed resource again', {
	timeout: 60_000,
}, async (t) => {
	const dir = await scratchDir(t);
	const log = path.join(dir, 'requests.log');
	const server = { command: process.execPath, args: [MODERN, '--stdio', '--log', log], scope: 'app' };
	await withRuntime(t, { modern: server }, async (rt) => {
		const { client, transport } = await sdkConnect(rt);
		const updated = hearUpdates(client);
		const uri = 'mem:///note';
		await client.listResources();
		await client.subscribeResource({ uri });
		const touch = () => client.callTool({ name: 'modern__touch', arguments: { uri } });
		// The listen stream with the new filter replaces the first one
		// asynchronously: touched until the server counts a follower.
		await waitFor(async () => (await touch()).content[0].text === 'told 1', 10_000, 'the uri followed');
		await waitFor(() => updated.length > 0, 10_000, 'the first update');

		const old = await killServer(rt, 'modern');
		const before = received(log).length;
		// Counted before the touch: its update may come before its answer.
		const n = updated.length;
		// The call starts it again; the listen goes out with the start
		// (its order against the call is the server's), so touched until
		// the new process counts a follower: without the restored set it
		// never does.
		await waitFor(async () => (await touch()).content[0].text === 'told 1', 10_000,
			'the uri followed by the new process');
		await waitFor(() => updated.length > n, 10_000, 'the update after the restart');
		assert.ok(updated.every((u) => u === uri), JSON.stringify(updated));
		const listens = received(log).slice(before).filter((r) => r.method === 'subscriptions/listen');
		assert.ok(listens.length > 0, 'the new process was asked to listen');
		assert.deepEqual(listens[0].notifications?.resourceSubscriptions, [uri], JSON.stringify(listens));
		assert.ok(!received(log).some((r) => r.method === 'resources/subscribe'), 'nothing removed went upstream');
		const { inst } = instanceOf(await rt.status(), 'modern');
		assert.notEqual(inst.pid, old, 'a new process');
		rt.track(inst.pid);
		assert.match(rt.stderr(), /1 resource subscription followed again by its listen stream: mem:\/\/\/note/);
		await transport.terminateSession();
		await client.close();
	});
});
