// mcpvisor in front of stdio servers of MCP 2026-07-28
// (fixtures/modern-server.mjs --stdio): the initialize goes first, as it
// came, and only its error is followed by server/discover on the same
// process; the server is then spoken to in its revision (_meta on every
// request, no notifications/initialized, list changes on a
// subscriptions/listen whose messages carry its id), for 2025 clients
// (the SDK 1.x, input_required rounds answered through them) and 2026
// clients alike. A 2025 stdio server that exits on any request before
// initialize (--stdio --legacy) gets exactly one initialize and never a
// server/discover. The verdict is kept in the tool cache: the next
// runtime sends server/discover first.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
	ElicitRequestSchema,
	ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { filesUnder } from './failures-lib.mjs';
import {
	ModernClient,
	REPO,
	makeHome,
	runInHome,
	scratchDir,
	waitFor,
	withRuntime,
	writeConfig,
} from './lib.mjs';

const FIXTURE = path.join(REPO, 'tests/e2e/fixtures/modern-server.mjs');

// The requests the fixture received, in order (its --log file).
function received(log) {
	if (!fs.existsSync(log))
		return [];
	return fs.readFileSync(log, 'utf8')
		.split('\n')
		.filter((l) => l.startsWith('REQ '))
		.map((l) => JSON.parse(l.slice(4)));
}

function stdioServer(log, extra = []) {
	return { command: process.execPath, args: [FIXTURE, '--stdio', ...extra, '--log', log], scope: 'app' };
}

async function sdkConnect(rt, capabilities = {}) {
	const client = new Client({ name: 'mcpvisor-e2e-2025', version: '0.0.0' }, { capabilities });
	const transport = new StreamableHTTPClientTransport(new URL(rt.url));
	await client.connect(transport);
	return { client, transport };
}

const NAMES = ['modern__echo', 'modern__ask', 'modern__add_tool', 'modern__touch', 'modern__log'];

test('a 2025 client calls a 2026-only stdio server through mcpvisor, is asked its input, and hears its list change', {
	timeout: 60_000,
}, async (t) => {
	const dir = await scratchDir(t);
	const log = path.join(dir, 'requests.log');
	await withRuntime(t, { modern: stdioServer(log) }, async (rt) => {
		const { client, transport } = await sdkConnect(rt, { elicitation: {} });
		const { tools } = await client.listTools();
		assert.deepEqual(tools.map((x) => x.name), NAMES);
		const echo = await client.callTool({ name: 'modern__echo', arguments: { text: 'héllo' } });
		assert.deepEqual(echo.content, [{ type: 'text', text: 'héllo' }]);

		// The initialize first, as it came; its error, then the probe on
		// the same process; from there the revision.
		const seen = received(log);
		assert.equal(seen[0].method, 'initialize');
		assert.equal(seen[0].meta['io.modelcontextprotocol/protocolVersion'], undefined);
		assert.equal(seen[1].method, 'server/discover');
		assert.equal(seen.filter((r) => r.method === 'initialize').length, 1);
		assert.ok(!seen.some((r) => r.method === 'notifications/initialized'), 'no initialized');
		for (const r of seen.slice(1).filter((x) => x.id !== undefined)) {
			assert.equal(r.meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28', r.method);
			assert.equal(typeof r.meta['io.modelcontextprotocol/clientCapabilities'], 'object', r.method);
		}
		const st = await rt.status();
		const inst = st.servers.find((x) => x.name === 'modern').instances[0];
		assert.equal(inst.protocolVersion, '2026-07-28');

		// input_required over stdio: the round's request goes to this
		// client, the retry upstream with the state as it came.
		client.setRequestHandler(ElicitRequestSchema, async () => ({
			action: 'accept',
			content: { name: 'Ada' },
		}));
		const asked = await client.callTool({ name: 'modern__ask', arguments: { rounds: 1 } });
		assert.deepEqual(asked.content, [{ type: 'text', text: 'Hello Ada' }]);

		// A tool added upstream: list_changed on the listen stream (tagged
		// with its id over stdio) reaches the client.
		await waitFor(() => received(log).some((r) => r.method === 'subscriptions/listen'),
			10_000, 'the listen request');
		let changed = 0;
		client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
			changed++;
		});
		await client.callTool({ name: 'modern__add_tool', arguments: { name: 'later' } });
		await waitFor(() => changed > 0, 10_000, 'tools/list_changed at the client');
		const again = await client.listTools();
		assert.ok(again.tools.some((x) => x.name === 'modern__later'), 'the new tool is listed');
		await transport.terminateSession();
		await client.close();
	});
});

test('a 2026 client calls a 2026-only stdio server through mcpvisor and hears its list change', {
	timeout: 60_000,
}, async (t) => {
	const dir = await scratchDir(t);
	const log = path.join(dir, 'requests.log');
	await withRuntime(t, { modern: stdioServer(log) }, async (rt) => {
		const mc = new ModernClient(rt.url, { caps: { experimental: { 'e2e-mark': {} } } });
		const list = await mc.result('tools/list');
		assert.deepEqual(list.tools.map((x) => x.name), NAMES);
		const echo = await mc.call('modern__echo', { text: 'modern' });
		assert.deepEqual(echo.content, [{ type: 'text', text: 'modern' }]);
		const call = received(log).find((r) => r.method === 'tools/call');
		assert.equal(call.meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
		assert.deepEqual(call.meta['io.modelcontextprotocol/clientCapabilities'],
			{ experimental: { 'e2e-mark': {} } }, 'a modern client\'s own capabilities go upstream');
		const l = await mc.listen({ toolsListChanged: true });
		await l.next((m) => m.method === 'notifications/subscriptions/acknowledged', 10_000, 'the ack');
		await mc.call('modern__add_tool', { name: 'newer' });
		await l.next((m) => m.method === 'notifications/tools/list_changed', 10_000, 'list_changed');
		l.close();
	});
});

test('a 2025 stdio server gets exactly one initialize and never server/discover', {
	timeout: 60_000,
}, async (t) => {
	const dir = await scratchDir(t);
	const log = path.join(dir, 'requests.log');
	await withRuntime(t, { legacy: stdioServer(log, ['--legacy']) }, async (rt) => {
		const { client, transport } = await sdkConnect(rt);
		const { tools } = await client.listTools();
		assert.deepEqual(tools.map((x) => x.name), ['legacy__echo']);
		const echo = await client.callTool({ name: 'legacy__echo', arguments: { text: 'old' } });
		assert.deepEqual(echo.content, [{ type: 'text', text: 'old' }]);
		const seen = received(log);
		assert.equal(seen[0].method, 'initialize');
		assert.equal(seen.filter((r) => r.method === 'initialize').length, 1);
		assert.ok(!seen.some((r) => r.method === 'server/discover'), JSON.stringify(seen.map((r) => r.method)));
		assert.ok(!seen.some((r) => r.meta['io.modelcontextprotocol/protocolVersion']), 'no 2026 _meta');
		const inst = (await rt.status()).servers.find((x) => x.name === 'legacy').instances[0];
		assert.equal(inst.protocolVersion, '2025-11-25');
		assert.equal(inst.restarts ?? 0, 0);
		await transport.terminateSession();
		await client.close();
	});
});

test('the era of a 2026 stdio server is kept in the tool cache: the next runtime probes first', {
	timeout: 90_000,
}, async (t) => {
	const home = await makeHome();
	t.after(() => fsp.rm(home, { recursive: true, force: true }));
	const log = path.join(home, 'requests.log');
	const config = await writeConfig(home, { modern: stdioServer(log) });
	await runInHome(t, home, config, {}, async (rt) => {
		const { client, transport } = await sdkConnect(rt);
		await client.callTool({ name: 'modern__echo', arguments: { text: 'one' } });
		await transport.terminateSession();
		await client.close();
	});
	const first = received(log);
	assert.deepEqual(first.slice(0, 2).map((r) => r.method), ['initialize', 'server/discover']);
	const files = (await filesUnder(path.join(home, 'cache', 'tools'))).filter((f) => f.endsWith('.json'));
	assert.equal(files.length, 1, `${await filesUnder(home)}`);
	assert.match(await fsp.readFile(files[0], 'utf8'), /"era":\s*"2026-07-28"/);

	await runInHome(t, home, config, {}, async (rt) => {
		const { client, transport } = await sdkConnect(rt);
		const echo = await client.callTool({ name: 'modern__echo', arguments: { text: 'two' } });
		assert.deepEqual(echo.content, [{ type: 'text', text: 'two' }]);
		await transport.terminateSession();
		await client.close();
	});
	const second = received(log).slice(first.length);
	assert.equal(second[0].method, 'server/discover', JSON.stringify(second.map((r) => r.method)));
	assert.ok(!second.some((r) => r.method === 'initialize'), 'no initialize to a server known modern');
});
