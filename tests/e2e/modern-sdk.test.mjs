// The official TypeScript SDK 2.x client (@modelcontextprotocol/client),
// pinned to MCP 2026-07-28 (no fallback to initialize), through mcpvisor's
// endpoint in front of the 2025-era demo server over stdio (issue 20): it
// lists and calls tools, and the demo's tools that ask the client
// mid-call (elicitation/create, sampling/createMessage) reach the
// client's own handlers through input_required, the client retrying
// by itself; what went over the wire is recorded to show it was the
// stateless revision (no initialize, no session) and a retry per round.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { DEMO_TOOLS, MODERN, demo, scratchDir, withRuntime } from './lib.mjs';
import { countLines } from './protocol-lib.mjs';

// A pinned 2.x client connected to rt that declares elicitation and
// sampling, answers them as the handlers here say, and keeps the method
// (from the JSON body), the Mcp-Method and MCP-Protocol-Version headers and
// the answer's Mcp-Session-Id of each HTTP request its transport makes.
async function modernSdk(rt) {
	const requests = [];
	const recording = async (url, init = {}) => {
		const headers = new Headers(init.headers);
		let method = null;
		try {
			method = JSON.parse(init.body).method ?? null;
		} catch {
			// not a JSON body (GET, DELETE)
		}
		const rec = {
			http: init.method ?? 'GET',
			method,
			mcpMethod: headers.get('mcp-method'),
			version: headers.get('mcp-protocol-version'),
			status: null,
			session: null,
		};
		requests.push(rec);
		const res = await fetch(url, init);
		rec.status = res.status;
		rec.session = res.headers.get('mcp-session-id');
		return res;
	};
	const asked = { elicit: [], sample: [] };
	const client = new Client(
		{ name: 'mcpvisor-e2e-sdk2', version: '0.0.0' },
		{
			capabilities: { elicitation: {}, sampling: {} },
			versionNegotiation: { mode: { pin: MODERN } },
		},
	);
	client.setRequestHandler('elicitation/create', async (req) => {
		asked.elicit.push(req.params);
		return { action: 'accept', content: { answer: `said ${req.params.message}` } };
	});
	client.setRequestHandler('sampling/createMessage', async (req) => {
		asked.sample.push(req.params);
		return {
			role: 'assistant',
			content: { type: 'text', text: 'Paris' },
			model: 'e2e-model',
			stopReason: 'endTurn',
		};
	});
	const errors = [];
	client.onerror = (e) => errors.push(e);
	const transport = new StreamableHTTPClientTransport(new URL(rt.url), { fetch: recording });
	await client.connect(transport);
	return { client, transport, requests, asked, errors };
}

const text = (r) => r.content.map((c) => c.text).join('');

test('SDK 2.x pinned to 2026-07-28: lists and calls tools; elicit and sample of a 2025 server reach its handlers through input_required', {
	timeout: 60_000,
}, async (t) => {
	const dir = await scratchDir(t, 'mcpvisor-e2e-sdk2-');
	const file = path.join(dir, 'count');
	await withRuntime(t, { demo: demo(['--name', 'demo', '--count-file', file]) }, async (rt) => {
		const s = await modernSdk(rt);
		const { client } = s;
		try {
			assert.equal(client.getProtocolEra(), 'modern');
			assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
			assert.equal(client.getServerVersion()?.name, 'mcpvisor');
			assert.ok(client.getServerCapabilities()?.tools, 'tools capability');

			const { tools } = await client.listTools();
			assert.deepEqual(tools.map((x) => x.name), DEMO_TOOLS.map((n) => `demo__${n}`));

			const echo = await client.callTool({ name: 'demo__echo', arguments: { text: 'hello 2026' } });
			assert.deepEqual(echo.content, [{ type: 'text', text: 'hello 2026' }]);
			assert.ok(!echo.isError);
			// structuredContent is checked by the client against outputSchema.
			const sum = await client.callTool({ name: 'demo__add', arguments: { a: 40, b: 2 } });
			assert.deepEqual(sum.structuredContent, { sum: 42 });

			const el = await client.callTool({ name: 'demo__elicit', arguments: { message: 'name?' } });
			assert.ok(!el.isError, JSON.stringify(el));
			assert.deepEqual(JSON.parse(text(el)), { action: 'accept', content: { answer: 'said name?' } });
			assert.equal(s.asked.elicit.length, 1, 'the elicitation handler ran once');
			assert.equal(s.asked.elicit[0].message, 'name?');

			const sm = await client.callTool({ name: 'demo__sample', arguments: { prompt: 'Capital of France?' } });
			assert.ok(!sm.isError, JSON.stringify(sm));
			assert.equal(text(sm), 'Paris');
			assert.equal(s.asked.sample.length, 1, 'the sampling handler ran once');
			assert.equal(s.asked.sample[0].messages[0].content.text, 'Capital of France?');

			// Each upstream call ran once: the retries continued them.
			const lines = await countLines(file);
			assert.equal(lines.filter((l) => l === 'call elicit').length, 1);
			assert.equal(lines.filter((l) => l === 'call sample').length, 1);
			assert.deepEqual(s.errors, []);
		} finally {
			await client.close();
		}
		// The wire: 2026-07-28 on every POST, no initialize, no session,
		// and two tools/call for each tool that asked (the call, the retry).
		const posts = s.requests.filter((r) => r.http === 'POST');
		assert.ok(posts.length > 0);
		assert.deepEqual(posts.filter((r) => r.method === 'initialize'), [], 'no initialize');
		for (const r of posts) {
			assert.equal(r.version, MODERN, `MCP-Protocol-Version of ${r.method}`);
			assert.equal(r.mcpMethod, r.method, `Mcp-Method of ${r.method}`);
			assert.equal(r.status, 200, `${r.method}: HTTP ${r.status}`);
		}
		assert.deepEqual(s.requests.filter((r) => r.session !== null), [], 'no Mcp-Session-Id');
		assert.equal(posts[0].method, 'server/discover', 'the pinned client discovers first');
		assert.equal(posts.filter((r) => r.method === 'tools/call').length, 2 + 2 * 2);
		// The demo's pid, for the teardown to prove it gone.
		await rt.status();
	});
});

// The same client over stdio through `mcpvisor relay` is in
// relay-modern.test.mjs.
