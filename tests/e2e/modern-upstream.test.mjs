// mcpvisor in front of a server that speaks only MCP 2026-07-28
// (fixtures/modern-server.mjs, a remote url server): found out by
// server/discover, spoken to in its revision (every request with _meta and
// the standard headers, no initialize, no session), its list changes heard
// on subscriptions/listen; and its input_required answers, turned into
// elicitation requests for a 2025 client (the SDK 1.x), passed through
// untouched to a 2026 client; a 2025 client's resources/subscribe,
// unsubscribe and logging/setLevel (which the revision removed) kept
// working: the subscribed uris followed by the listen stream's
// resourceSubscriptions, the level sent as each request's _meta logLevel.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
	ElicitRequestSchema,
	LoggingMessageNotificationSchema,
	ResourceUpdatedNotificationSchema,
	ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { ModernClient, REPO, startListener, waitFor, withRuntime } from './lib.mjs';

const FIXTURE = path.join(REPO, 'tests/e2e/fixtures/modern-server.mjs');

// The requests the fixture printed, in order.
function requests(server) {
	return server
		.output()
		.split('\n')
		.filter((l) => l.startsWith('REQ '))
		.map((l) => JSON.parse(l.slice(4)));
}

async function modernServer(t) {
	const server = await startListener(t, FIXTURE, [], 'the 2026 fixture');
	return { server, config: { modern: { url: `http://127.0.0.1:${server.port}/mcp`, scope: 'app' } } };
}

async function sdkConnect(rt, capabilities = {}) {
	const client = new Client({ name: 'mcpvisor-e2e-2025', version: '0.0.0' }, { capabilities });
	const transport = new StreamableHTTPClientTransport(new URL(rt.url));
	await client.connect(transport);
	return { client, transport };
}

test('a 2025 client lists and calls a 2026-only server through mcpvisor, and hears its list change', {
	timeout: 60_000,
}, async (t) => {
	const { server, config } = await modernServer(t);
	await withRuntime(t, config, async (rt) => {
		const { client, transport } = await sdkConnect(rt);
		const { tools } = await client.listTools();
		assert.deepEqual(tools.map((x) => x.name),
			['modern__echo', 'modern__ask', 'modern__add_tool', 'modern__touch', 'modern__log']);
		const echo = await client.callTool({ name: 'modern__echo', arguments: { text: 'héllo' } });
		assert.deepEqual(echo.content, [{ type: 'text', text: 'héllo' }]);
		assert.ok(!echo.isError);

		// Spoken to in its revision: the probe, then requests with the
		// envelope; never initialize, never a session.
		const seen = requests(server);
		assert.equal(seen[0].method, 'server/discover');
		assert.ok(!seen.some((r) => r.method === 'initialize'), 'no initialize was sent');
		for (const r of seen) {
			assert.equal(r.headers['mcp-protocol-version'], '2026-07-28', `${r.method}: version header`);
			assert.equal(r.headers['mcp-method'], r.method, `${r.method}: Mcp-Method`);
			assert.equal(r.headers['mcp-session-id'], undefined, `${r.method}: no session`);
			assert.equal(r.meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
			assert.equal(typeof r.meta['io.modelcontextprotocol/clientCapabilities'], 'object');
			assert.equal(r.meta['io.modelcontextprotocol/clientInfo']?.name, 'mcpvisor');
		}
		const call = seen.find((r) => r.method === 'tools/call');
		assert.equal(call.headers['mcp-name'], 'echo');
		await waitFor(() => requests(server).some((r) => r.method === 'subscriptions/listen'),
			10_000, 'the listen stream');

		const st = await rt.status();
		const inst = st.servers.find((x) => x.name === 'modern').instances[0];
		assert.equal(inst.protocolVersion, '2026-07-28');

		// A tool added upstream: its list_changed comes on the listen
		// stream, mcpvisor lists again, and the client hears of it.
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

test('input_required from a 2026 server becomes elicitation requests to a 2025 client, round after round', {
	timeout: 60_000,
}, async (t) => {
	const { server, config } = await modernServer(t);
	await withRuntime(t, config, async (rt) => {
		const { client, transport } = await sdkConnect(rt, { elicitation: {} });
		const asked = [];
		client.setRequestHandler(ElicitRequestSchema, async (req) => {
			asked.push(req.params.message);
			return { action: 'accept', content: { name: asked.length === 1 ? 'Ada' : 'Grace' } };
		});
		const r = await client.callTool({ name: 'modern__ask', arguments: { rounds: 2 } });
		assert.deepEqual(r.content, [{ type: 'text', text: 'Hello Ada and Grace' }]);
		assert.deepEqual(asked, ['Your name (round 1)?', 'Your name (round 2)?']);
		// Each retry went with a new id, the answers, and the state as
		// the server gave it (the fixture refuses any other).
		// The fixture prints each request on its stdout, which may reach
		// this process after the answer did: wait for the lines, then
		// count exactly.
		const toolCalls = () => requests(server).filter((x) => x.method === 'tools/call');
		await waitFor(() => toolCalls().length >= 3, 10_000, 'the three tools/call lines of the fixture');
		const calls = toolCalls();
		assert.equal(calls.length, 3);
		assert.equal(new Set(calls.map((c) => c.id)).size, 3, 'a new id per round');
		assert.equal(calls[0].requestState, undefined);
		assert.deepEqual(calls[1].inputResponses, { name_0: { action: 'accept', content: { name: 'Ada' } } });
		assert.equal(typeof calls[2].requestState, 'string');
		await transport.terminateSession();
		await client.close();
	});
});

test('input_required from a 2026 server reaches a 2026 client untouched, and its retry goes upstream', {
	timeout: 60_000,
}, async (t) => {
	const { server, config } = await modernServer(t);
	await withRuntime(t, config, async (rt) => {
		const mc = new ModernClient(rt.url, { caps: { elicitation: {} } });
		const first = await mc.request('tools/call', { name: 'modern__ask', arguments: {} });
		const res1 = first.result ?? first;
		assert.equal(res1.resultType, 'input_required', JSON.stringify(first));
		const upstreamState = requests(server).length; // for the order below
		assert.ok(upstreamState > 0);
		const key = Object.keys(res1.inputRequests)[0];
		assert.equal(key, 'name_0');
		assert.equal(res1.inputRequests[key].method, 'elicitation/create');
		const second = await mc.request('tools/call', {
			name: 'modern__ask',
			arguments: {},
			inputResponses: { [key]: { action: 'accept', content: { name: 'Lin' } } },
			requestState: res1.requestState,
		});
		const res2 = second.result ?? second;
		assert.deepEqual(res2.content, [{ type: 'text', text: 'Hello Lin' }], JSON.stringify(second));
		const toolCalls = () => requests(server).filter((x) => x.method === 'tools/call');
		await waitFor(() => toolCalls().length >= 2, 10_000, 'the two tools/call lines of the fixture');
		const calls = toolCalls();
		assert.equal(calls.length, 2);
		assert.equal(calls[1].requestState, res1.requestState, 'the state went back byte for byte');
		assert.equal(calls[1].meta['io.modelcontextprotocol/clientCapabilities']?.elicitation !== undefined, true);
	});
});

test('a 2025 client subscribes to a 2026 server\'s resource and sets its log level through mcpvisor', {
	timeout: 60_000,
}, async (t) => {
	const { server, config } = await modernServer(t);
	await withRuntime(t, config, async (rt) => {
		const { client, transport } = await sdkConnect(rt);
		const { resources } = await client.listResources();
		const note = resources.find((r) => r.name === 'note' || r.uri.endsWith('note'));
		assert.ok(note, JSON.stringify(resources));
		const updated = [];
		client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
			updated.push(n.params.uri);
		});
		const logs = [];
		client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
			logs.push(n.params.level);
		});

		// The revision has no resources/subscribe: mcpvisor answers it
		// and follows the uri on a listen stream of its own.
		await client.subscribeResource({ uri: note.uri });
		const touched = await client.callTool({ name: 'modern__touch', arguments: { uri: 'mem:///note' } });
		assert.deepEqual(touched.content, [{ type: 'text', text: 'told 1' }]);
		await waitFor(() => updated.length > 0, 10_000, 'notifications/resources/updated at the client');
		assert.deepEqual(updated, [note.uri]);
		const seen = requests(server);
		assert.ok(!seen.some((r) => r.method === 'resources/subscribe'), 'nothing removed went upstream');
		assert.ok(seen.some((r) => r.method === 'subscriptions/listen' &&
			JSON.stringify(r.notifications?.resourceSubscriptions) === '["mem:///note"]'),
		JSON.stringify(seen.filter((r) => r.method === 'subscriptions/listen')));

		// Unsubscribed: the stream that followed it is let go of.
		await client.unsubscribeResource({ uri: note.uri });
		await waitFor(async () => {
			const r = await client.callTool({ name: 'modern__touch', arguments: { uri: 'mem:///note' } });
			return r.content[0].text === 'told 0';
		}, 10_000, 'no listener following mem:///note any more');

		// No level set: the server is asked for no log messages.
		await client.callTool({ name: 'modern__log', arguments: {} });
		assert.deepEqual(logs, []);
		// logging/setLevel is answered by mcpvisor; the level goes in the
		// _meta of what follows, and the messages at it reach the client.
		await client.setLoggingLevel('info');
		const logged = await client.callTool({ name: 'modern__log', arguments: {} });
		assert.deepEqual(logged.content, [{ type: 'text', text: 'logged' }]);
		await waitFor(() => logs.length >= 2, 10_000, 'notifications/message at the client');
		assert.deepEqual(logs, ['info', 'warning']);
		const logCalls = () => requests(server).filter((r) => r.method === 'tools/call' &&
			r.headers['mcp-name'] === 'log');
		await waitFor(() => logCalls().length >= 2, 10_000, 'the fixture\'s lines');
		const [before, after] = logCalls();
		assert.equal(before.meta['io.modelcontextprotocol/logLevel'], undefined);
		assert.equal(after.meta['io.modelcontextprotocol/logLevel'], 'info');
		assert.ok(!requests(server).some((r) => r.method === 'logging/setLevel'));
		await transport.terminateSession();
		await client.close();
	});
});

test('two 2025 clients of one shared 2026 server each get the log lines at their own level, and no other\'s', {
	timeout: 60_000,
}, async (t) => {
	const { server, config } = await modernServer(t);
	await withRuntime(t, config, async (rt) => {
		// Three clients of the one app-scoped instance: A asks for debug,
		// B for warning, C for nothing.
		const clients = {};
		for (const who of ['A', 'B', 'C']) {
			const c = await sdkConnect(rt);
			c.logs = [];
			c.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
				c.logs.push(n.params.level);
			});
			clients[who] = c;
		}
		// The instance runs (a listing starts it) when the levels are set.
		await clients.A.client.listTools();
		await clients.A.client.setLoggingLevel('debug');
		await clients.B.client.setLoggingLevel('warning');
		// The fixture sends a call's lines on its answer stream, before
		// its answer: they are in by the time the answer is.
		for (const who of ['A', 'B', 'C']) {
			const r = await clients[who].client.callTool({ name: 'modern__log', arguments: {} });
			assert.deepEqual(r.content, [{ type: 'text', text: 'logged' }]);
		}
		// A second round in the other order: the last setLevel made is
		// not what every client gets.
		for (const who of ['C', 'B', 'A'])
			await clients[who].client.callTool({ name: 'modern__log', arguments: {} });
		assert.deepEqual(clients.A.logs, ['debug', 'info', 'warning', 'debug', 'info', 'warning']);
		assert.deepEqual(clients.B.logs, ['warning', 'warning']);
		assert.deepEqual(clients.C.logs, []);
		// Upstream, each call asked for its own client's level.
		const logCalls = () => requests(server).filter((r) => r.method === 'tools/call' &&
			r.headers['mcp-name'] === 'log');
		await waitFor(() => logCalls().length >= 6, 10_000, 'the fixture\'s lines');
		assert.deepEqual(logCalls().map((r) => r.meta['io.modelcontextprotocol/logLevel'] ?? null),
			['debug', 'warning', null, null, 'warning', 'debug']);
		assert.ok(!requests(server).some((r) => r.method === 'logging/setLevel'));
		for (const c of Object.values(clients)) {
			await c.transport.terminateSession();
			await c.client.close();
		}
	});
});

test('a 2025 client\'s log level set before its 2026 server runs still reaches its calls', {
	timeout: 60_000,
}, async (t) => {
	const { server, config } = await modernServer(t);
	await withRuntime(t, config, async (rt) => {
		const { client, transport } = await sdkConnect(rt);
		const logs = [];
		client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
			logs.push(n.params.level);
		});
		// Nothing has started the server yet: the level is the session's.
		await client.setLoggingLevel('info');
		const r = await client.callTool({ name: 'modern__log', arguments: {} });
		assert.deepEqual(r.content, [{ type: 'text', text: 'logged' }]);
		assert.deepEqual(logs, ['info', 'warning']);
		const logCalls = () => requests(server).filter((x) => x.method === 'tools/call' &&
			x.headers['mcp-name'] === 'log');
		await waitFor(() => logCalls().length >= 1, 10_000, 'the fixture\'s line');
		assert.equal(logCalls()[0].meta['io.modelcontextprotocol/logLevel'], 'info');
		await transport.terminateSession();
		await client.close();
	});
});
