// Sessions and request routing under abuse, on real processes: the idle
// sweep never ends a call in flight (R5), sessions are capped (finding 9),
// the fast tools/call path answers what jansson refuses and cannot be
// told one tool while another runs (findings 5 and 13), and a server's
// request reaches only the session whose call caused it (P3).
import assert from 'node:assert/strict';
import test from 'node:test';

import { CreateMessageRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import {
	RawClient,
	connect,
	demo,
	readMessages,
	waitFor,
	withRuntime,
} from './lib.mjs';
import { sdkClient, sdkClose, text, waitGetStream } from './protocol-lib.mjs';

const DEMO = { demo: demo(['--name', 'demo']) };

// R5 (repro/expiry.py): with --session-timeout 2s, a 6 s call of a client
// without a GET stream ran into the sweep (every 5 s) and died with "the
// session ended" at ~5 s.
test('the idle sweep never ends a session with a call in flight', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, DEMO, { args: ['--session-timeout', '2s'] }, async (rt) => {
		const c = await connect(rt);
		const r = await c.call('demo__sleep', { ms: 6000 });
		assert.equal(r.content[0].text, 'slept 6000 ms');
		// Its idle time starts now: the session is still there.
		await c.result('ping');
		await c.close();
		await rt.status();
	});
});

function initBody(id = 1) {
	return {
		jsonrpc: '2.0',
		id,
		method: 'initialize',
		params: {
			protocolVersion: '2025-11-25',
			capabilities: {},
			clientInfo: { name: 'flood', version: '0' },
		},
	};
}

// Finding 9 (tests_http.py sessions_flood): 20,000 initialize made 20,000
// sessions. With --max-sessions 3: a flood keeps 3, the session idle
// longest makes room, a busy one never does, and when all are busy
// initialize gets 503 with a JSON-RPC error.
test('sessions are capped: idle ones make room, busy ones are kept', {
	timeout: 80_000,
}, async (t) => {
	await withRuntime(t, DEMO, { args: ['--max-sessions', '3'] }, async (rt) => {
		const busy = [await connect(rt), await connect(rt), await connect(rt)];
		// Still running when the fourth initialize comes, however long a
		// busy machine takes to see them in flight (1.5 s calls had
		// ended, and an idle session made room: 200, not 503).
		const calls = busy.map((c) => c.call('demo__sleep', { ms: 8000 }));
		// The three calls are in flight once the instance runs them.
		await waitFor(async () => {
			const st = await rt.status();
			const inst = st.servers[0].instances[0];
			return inst && inst.inflight >= 3;
		}, 5000, 'three calls in flight');
		const refused = await new RawClient(rt.url).post(initBody(9));
		assert.equal(refused.status, 503);
		const [err] = await readMessages(refused);
		assert.equal(err.id, 9);
		assert.match(err.error.message, /Too many sessions/);
		for (const r of await Promise.all(calls))
			assert.equal(r.content[0].text, 'slept 8000 ms');
		// busy[0] is used again: busy[1] is now idle longest.
		await busy[0].result('ping');
		await busy[2].result('ping');
		const fresh = await connect(rt);
		const gone = await busy[1].post({ jsonrpc: '2.0', id: 5, method: 'ping' });
		assert.equal(gone.status, 404, 'the session idle longest was ended');
		await gone.arrayBuffer();
		await busy[0].result('ping');
		// A flood never holds more than the cap.
		for (let i = 0; i < 50; i++) {
			const r = await new RawClient(rt.url).post(initBody(i));
			assert.equal(r.status, 200);
			await r.arrayBuffer();
		}
		const st = await rt.status();
		assert.equal(st.sessions, 3);
		await fresh.close();
	});
});

// A tools/call as raw bytes in session c; the messages of its answer.
async function rawCall(c, bytes) {
	const res = await fetch(c.url, {
		method: 'POST',
		headers: c.headers(),
		body: bytes,
		signal: AbortSignal.timeout(5000),
	});
	return { status: res.status, msgs: await readMessages(res) };
}

const head = (id) =>
	`{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":`;

// Finding 5 (repro/fastpath.py, hang60.py): on a warm session these went
// to the server raw; its parse error (id null) was dropped and the client
// got nothing, ever.
test('the fast path answers what jansson refuses, at once', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, DEMO, async (rt) => {
		const c = await connect(rt);
		await c.call('demo__echo', { text: 'warm' });
		const bad = [
			Buffer.concat([
				Buffer.from(`${head(2)}{"name":"demo__echo","arguments":{"text":"bad `),
				Buffer.from([0xff, 0xfe]),
				Buffer.from(' utf8"}}}'),
			]),
			`${head(3)}{"name":"demo__echo","arguments":{"text":"\\ud800"}}}`,
			`${head(4)}{"name":"demo__echo","arguments":{"text":"a\\u0000b"}}}`,
			`${head(5)}{"name":"demo__echo","arguments":{"text":"x","n":1e999}}}`,
			`${head(6)}{"name":"demo__echo","arguments":{"n":99999999999999999999}}}`,
		];
		for (const body of bad) {
			const r = await rawCall(c, body);
			assert.equal(r.status, 400, String(body));
			assert.equal(r.msgs[0].error.code, -32700, String(body));
		}
		// The session and its server are fine afterwards.
		const ok = await rawCall(c, `${head(8)}{"name":"demo__echo","arguments":{"text":"ok"}}}`);
		assert.equal(ok.msgs.at(-1).result.content[0].text, 'ok');
		const st = await rt.status();
		assert.equal(st.servers[0].instances[0].inflight, 0, 'nothing hangs');
		await c.close();
	});
});

// Finding 13 / R14: the fast path routed "name":"demo__echo" while the
// server, reading the escaped "n\u0061me" last, ran add ({"sum":3}).
test('escaped or repeated names cannot route one tool and run another', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, DEMO, async (rt) => {
		const c = await connect(rt);
		await c.call('demo__echo', { text: 'warm' });
		const args = '"arguments":{"a":1,"b":2,"text":"t"}';
		for (const params of [
			`{"name":"demo__echo","n\\u0061me":"add",${args}}`,
			`{"name":"demo__echo","name":"add",${args}}`,
		]) {
			const r = await rawCall(c, `${head(6)}${params}}`);
			const reply = r.msgs.at(-1);
			assert.ok(reply, params);
			// Read once, as jansson reads it: the last "name", "add",
			// which is no tool of this runtime.
			assert.ok(reply.error, `${params}: ${JSON.stringify(reply)}`);
			assert.match(reply.error.message, /Unknown tool "add"/);
		}
		// An escaped _meta is read as _meta: the client's token comes back,
		// the server never sees it.
		const r = await rawCall(
			c,
			`${head(7)}{"name":"demo__sleep","_m\\u0065ta":{"progressToken":"raw-client-token"},"arguments":{"ms":250}}}`,
		);
		const notes = r.msgs.filter((m) => m.method === 'notifications/progress');
		assert.ok(notes.length >= 1, JSON.stringify(r.msgs));
		for (const n of notes)
			assert.equal(n.params.progressToken, 'raw-client-token');
		assert.equal(r.msgs.at(-1).result.content[0].text, 'slept 250 ms');
		const count = await c.call('demo__count', {});
		assert.equal(JSON.parse(count.content[0].text).add, undefined, 'add never ran');
		await c.close();
	});
});

// P3 (repro/clients/run.sh p3): a plain client's call on a shared server
// got "[rich-client] sampled answer" and the rich client's roots.
test('server requests reach only the session whose call caused them', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, DEMO, async (rt) => {
		const rich = await sdkClient(rt, {
			name: 'rich',
			capabilities: { sampling: {}, roots: { listChanged: true } },
		});
		const asked = [];
		rich.client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
			asked.push(req.params.messages[0].content.text);
			return {
				role: 'assistant',
				content: { type: 'text', text: '[rich] sampled answer' },
				model: 'm',
			};
		});
		rich.client.setRequestHandler(ListRootsRequestSchema, async () => {
			asked.push('roots');
			return { roots: [{ uri: 'file:///projA', name: 'projA' }] };
		});
		await waitGetStream(rich);
		await rich.client.callTool({ name: 'demo__echo', arguments: { text: 'x' } });
		const plain = await sdkClient(rt, { name: 'plain' });
		const s = await plain.client.callTool({
			name: 'demo__sample',
			arguments: { prompt: 'plain asks' },
		});
		assert.equal(s.isError, true);
		assert.match(text(s), /does not support sampling/);
		const roots = await plain.client.callTool({ name: 'demo__roots', arguments: {} });
		assert.equal(text(roots), '[]');
		// The rich client's own call on an app server: asked for sampling,
		// never for roots (app servers get none).
		const own = await rich.client.callTool({
			name: 'demo__sample',
			arguments: { prompt: 'rich asks' },
		});
		assert.equal(text(own), '[rich] sampled answer');
		const r2 = await rich.client.callTool({ name: 'demo__roots', arguments: {} });
		assert.equal(text(r2), '[]');
		assert.deepEqual(asked, ['rich asks']);
		await rt.status();
		await sdkClose(plain);
		await sdkClose(rich);
	});
});
