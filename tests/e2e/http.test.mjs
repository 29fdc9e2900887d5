// The Streamable HTTP endpoint at the HTTP level, with plain fetch, node's
// http module and curl: status codes of bad requests, the GET stream,
// Expect: 100-continue, keep-alive, and the same endpoint on the Unix socket.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';

import {
	DEMO,
	PROTOCOL,
	RawClient,
	connect,
	demo,
	makeHome,
	readMessages,
	sseMessages,
	withRuntime,
} from './lib.mjs';

const JSON_CT = 'application/json';
const ACCEPT = 'application/json, text/event-stream';
const MAX_BODY = 4 * 1024 * 1024;

function initBody(id = 1) {
	return JSON.stringify({
		jsonrpc: '2.0',
		id,
		method: 'initialize',
		params: {
			protocolVersion: PROTOCOL,
			capabilities: {},
			clientInfo: { name: 'mcpvisor-e2e-http', version: '0.0.0' },
		},
	});
}

function rpc(id, method, params = {}) {
	return JSON.stringify({ jsonrpc: '2.0', id, method, params });
}

// One request with node's http module: on a TCP port or a Unix socket,
// through an agent or not. Resolves with status, headers, body text and
// whether the socket was reused.
function httpReq({ url, socketPath, agent, method = 'POST', headers = {}, body }) {
	return new Promise((resolve, reject) => {
		const u = new URL(url ?? 'http://localhost/mcp');
		const req = http.request(
			{
				host: socketPath ? undefined : u.hostname,
				port: socketPath ? undefined : u.port,
				socketPath,
				path: u.pathname + u.search,
				method,
				headers,
				agent,
			},
			(res) => {
				let text = '';
				res.setEncoding('utf8');
				res.on('data', (d) => (text += d));
				res.on('end', () =>
					resolve({
						status: res.statusCode,
						headers: res.headers,
						text,
						reused: req.reusedSocket,
						localPort: req.socket?.localPort,
					}),
				);
				res.on('error', reject);
			},
		);
		req.on('error', reject);
		req.setTimeout(10_000, () => req.destroy(new Error('request timed out')));
		req.end(body);
	});
}

// Runs curl; input, when given, is its standard input (for `-d @-`).
function curl(args, { input, timeout = 10_000 } = {}) {
	return new Promise((resolve) => {
		const child = execFile(
			'curl',
			args,
			{ timeout, maxBuffer: 16 * 1024 * 1024 },
			(err, stdout, stderr) =>
				resolve({ code: err ? (err.code ?? -1) : 0, stdout, stderr }),
		);
		// The runtime may refuse before reading all of it.
		child.stdin.on('error', () => {});
		child.stdin.end(input);
	});
}

// curl -H arguments for a header object.
const curlHeaders = (h) =>
	Object.entries(h).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);

async function jsonBody(res) {
	const text = await res.text();
	try {
		return JSON.parse(text);
	} catch {
		throw new Error(`not JSON (${res.status}): ${text.slice(0, 200)}`);
	}
}

test('HTTP: status codes of bad and edge requests', { timeout: 40_000 }, async (t) => {
	await withRuntime(t, { demo: demo() }, async (rt) => {
		const c = await connect(rt);
		const url = rt.url;
		const good = {
			'content-type': JSON_CT,
			accept: ACCEPT,
			'mcp-session-id': c.sid,
			'mcp-protocol-version': c.protocol,
		};
		const post = (headers, body) =>
			fetch(url, { method: 'POST', headers, body });

		await t.test('a good request on the session works (control)', async () => {
			const res = await post(good, rpc(10, 'tools/list'));
			assert.equal(res.status, 200);
			const [msg] = await readMessages(res);
			assert.ok(msg.result.tools.some((x) => x.name === 'demo__echo'));
		});

		await t.test('POST without Mcp-Session-Id after init: 400', async () => {
			const { 'mcp-session-id': _, ...h } = good;
			const res = await post(h, rpc(11, 'tools/list'));
			assert.equal(res.status, 400);
			const body = await jsonBody(res);
			assert.equal(body.jsonrpc, '2.0');
			assert.ok(body.error, JSON.stringify(body));
		});

		await t.test('unknown session id: 404', async () => {
			const res = await post(
				{ ...good, 'mcp-session-id': 'ffffffffffffffffffffffffffffffff' },
				rpc(12, 'tools/list'),
			);
			assert.equal(res.status, 404);
			assert.ok((await jsonBody(res)).error);
		});

		await t.test('bad Origin: 403; a loopback Origin is accepted', async () => {
			const bad = await post(
				{ ...good, origin: 'http://evil.example' },
				rpc(13, 'tools/list'),
			);
			assert.equal(bad.status, 403);
			await bad.arrayBuffer();
			const badInit = await post(
				{ 'content-type': JSON_CT, accept: ACCEPT, origin: 'http://evil.example' },
				initBody(),
			);
			assert.equal(badInit.status, 403, 'initialize from a bad Origin');
			assert.equal(badInit.headers.get('mcp-session-id'), null);
			await badInit.arrayBuffer();
			const ok = await post(
				{ ...good, origin: `http://localhost:${rt.port}` },
				rpc(14, 'tools/list'),
			);
			assert.equal(ok.status, 200);
			await ok.arrayBuffer();
		});

		await t.test('Accept: text/html: 406', async () => {
			const res = await post({ ...good, accept: 'text/html' }, rpc(15, 'tools/list'));
			assert.equal(res.status, 406);
			await res.arrayBuffer();
		});

		await t.test('GET without Accept: text/event-stream: 406', async () => {
			const res = await fetch(url, {
				method: 'GET',
				headers: { accept: 'application/json', 'mcp-session-id': c.sid },
			});
			assert.equal(res.status, 406);
			await res.arrayBuffer();
		});

		await t.test('wrong Content-Type: 415', async () => {
			const res = await post(
				{ ...good, 'content-type': 'text/plain' },
				rpc(16, 'tools/list'),
			);
			assert.equal(res.status, 415);
			await res.arrayBuffer();
		});

		const big = rpc(17, 'tools/call', {
			name: 'demo__echo',
			arguments: { text: 'x'.repeat(MAX_BODY) },
		});
		assert.ok(big.length > MAX_BODY);

		await t.test('body over 4 MiB: 413 (curl, Expect); 1 MiB works', async () => {
			// curl sends Expect: 100-continue, so the body is never sent.
			const viaCurl = await curl(
				[
					'-sS', '-o', '/dev/null', '-w', '%{http_code}',
					'--max-time', '8', ...curlHeaders(good),
					'--data-binary', '@-', url,
				],
				{ input: big },
			);
			assert.equal(viaCurl.stdout, '413', viaCurl.stderr);
			const text = 'y'.repeat(1024 * 1024);
			const ok = await c.call('demo__echo', { text });
			assert.equal(ok.content[0].text.length, text.length);
		});

		await t.test('body over 4 MiB sent at once (fetch, node http): 413, not a reset', async () => {
			// The reset wins a race against the answer, so try a few
			// times; fetch lost it every time when measured.
			for (let i = 0; i < 3; i++) {
				let res;
				try {
					res = await fetch(url, { method: 'POST', headers: good, body: big });
				} catch (e) {
					assert.fail(
						`try ${i + 1}: fetch got no 413, the connection ` +
							`failed: ${e.message} (${e.cause?.code ?? e.cause?.message})`,
					);
				}
				assert.equal(res.status, 413);
				await res.arrayBuffer();
				try {
					res = await httpReq({ url, headers: good, body: big });
				} catch (e) {
					assert.fail(`try ${i + 1}: node http got no 413: ${e.message}`);
				}
				assert.equal(res.status, 413);
			}
		});

		await t.test('invalid JSON: 400 with a -32700 body', async () => {
			const res = await post(good, '{"jsonrpc": "2.0", "id": 1, "meth');
			assert.equal(res.status, 400);
			const body = await jsonBody(res);
			assert.equal(body.jsonrpc, '2.0');
			assert.equal(body.error.code, -32700);
			assert.equal(body.id, null);
		});

		await t.test('notification-only POST: 202 with no body', async () => {
			const res = await post(
				good,
				JSON.stringify({
					jsonrpc: '2.0',
					method: 'notifications/cancelled',
					params: { requestId: 999, reason: 'test' },
				}),
			);
			assert.equal(res.status, 202);
			assert.equal(await res.text(), '');
		});

		await t.test('unsupported MCP-Protocol-Version: 400', async () => {
			const res = await post(
				{ ...good, 'mcp-protocol-version': '1999-01-01' },
				rpc(18, 'tools/list'),
			);
			assert.equal(res.status, 400);
			assert.match(JSON.stringify(await jsonBody(res)), /1999-01-01/);
		});

		await t.test('other paths: 404', async () => {
			const other = await fetch(new URL('/nope', url), {
				method: 'POST',
				headers: good,
				body: rpc(20, 'tools/list'),
			});
			assert.equal(other.status, 404);
			await other.arrayBuffer();
		});

		await t.test('DELETE ends the session, then 404', async () => {
			const d = new RawClient(url);
			await d.initialize();
			const h = { ...good, 'mcp-session-id': d.sid };
			const del = await fetch(url, { method: 'DELETE', headers: h });
			assert.ok(del.status === 200 || del.status === 204, `${del.status}`);
			await del.arrayBuffer();
			const after = await post(h, rpc(21, 'tools/list'));
			assert.equal(after.status, 404);
			await after.arrayBuffer();
			// The first session is untouched.
			const still = await post(good, rpc(22, 'ping'));
			assert.equal(still.status, 200);
			await still.arrayBuffer();
		});
		await c.close();
	});
});

// Reads SSE messages from a fetch body until pred matches one, bounded.
async function awaitSse(res, pred, ms) {
	const reader = res.body.getReader();
	const dec = new TextDecoder();
	let buf = '';
	let timedOut = false;
	const timer = setTimeout(() => {
		timedOut = true;
		reader.cancel().catch(() => {});
	}, ms);
	try {
		for (;;) {
			const { value, done } = await reader.read();
			if (done)
				throw new Error(
					(timedOut
						? `no such message within ${ms} ms`
						: 'the stream ended before the message') +
						`; the stream had:\n${buf}`,
				);
			buf += dec.decode(value, { stream: true });
			const cut = buf.lastIndexOf('\n\n');
			if (cut < 0)
				continue;
			const hit = sseMessages(buf.slice(0, cut + 2)).find(pred);
			if (hit)
				return hit;
		}
	} finally {
		clearTimeout(timer);
		reader.cancel().catch(() => {});
	}
}

// A GET stream on c's session.
async function openGet(rt, c, ac) {
	const res = await fetch(rt.url, {
		method: 'GET',
		headers: {
			accept: 'text/event-stream',
			'mcp-session-id': c.sid,
			'mcp-protocol-version': c.protocol,
		},
		signal: ac.signal,
	});
	assert.equal(res.status, 200);
	assert.match(res.headers.get('content-type'), /^text\/event-stream/);
	return res;
}

const isToolsChanged = (m) => m.method === 'notifications/tools/list_changed';

test('HTTP: GET opens an SSE stream; a list_changed that changes nothing is not passed on', {
	timeout: 60_000,
}, async (t) => {
	// Clients are told when the list they see changes (the next test), not
	// each time a server says so: the demo's notify_changed announces a
	// change to a list that stays the same, so the stream must stay quiet.
	await withRuntime(t, { demo: demo() }, async (rt) => {
		const c = await connect(rt);
		const before = await c.listAll();
		const ac = new AbortController();
		const res = await openGet(rt, c, ac);
		assert.equal(res.status, 200);
		assert.match(res.headers.get('content-type'), /text\/event-stream/);
		const got = awaitSse(res, isToolsChanged, 1500);
		const r = await c.call('demo__notify_changed', {});
		assert.equal(r.content[0].text, 'sent');
		try {
			await assert.rejects(got, /no such message/);
		} finally {
			ac.abort();
		}
		const after = await c.listAll();
		assert.deepEqual(
			after.map((x) => x.name),
			before.map((x) => x.name),
		);
		await c.close();
	});
});

test('HTTP: a server that comes back with other tools brings tools/list_changed on the GET stream', {
	timeout: 60_000,
}, async (t) => {
	const home = await makeHome('mcpvisor-e2e-ntools-');
	const ntools = path.join(home, 'ntools');
	await fsp.writeFile(ntools, '0');
	// The server reads how many extra tools to offer at each start.
	const script =
		`exec "${DEMO}" --name live --die-in-call count ` +
		`--tools "$(cat '${ntools}')"`;
	try {
		await withRuntime(
			t,
			{ live: { command: '/bin/sh', args: ['-c', script], scope: 'app' } },
			async (rt) => {
				const c = await connect(rt);
				const before = await c.listAll();
				assert.equal(before.length, 12);
				const first = await rt.demoPids(c, 'live__pid');
				const ac = new AbortController();
				const res = await openGet(rt, c, ac);
				const got = awaitSse(res, isToolsChanged, 8000);

				await fsp.writeFile(ntools, '2');
				// The server dies in this call; the call fails.
				const died = await c.request('tools/call', {
					name: 'live__count',
					arguments: {},
				});
				assert.ok(died.error || died.result?.isError, JSON.stringify(died));
				// The next call restarts it, with two more tools.
				const again = await rt.demoPids(c, 'live__pid');
				assert.notEqual(again.pid, first.pid, 'restarted');
				try {
					await got;
				} finally {
					ac.abort();
				}
				const after = await c.listAll();
				assert.deepEqual(
					after.slice(12).map((t) => t.name),
					['live__tool_1', 'live__tool_2'],
				);
				await c.close();
			},
		);
	} finally {
		await fsp.rm(home, { recursive: true, force: true });
	}
});

test('HTTP: Expect: 100-continue on a large POST is answered without a stall', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { demo: demo() }, async (rt) => {
		const c = await connect(rt);
		await c.listAll();
		const text = 'z'.repeat(256 * 1024);
		const body = rpc(30, 'tools/call', {
			name: 'demo__echo',
			arguments: { text },
		});
		const res = await curl(
			[
				'-sS', '-v', '--max-time', '8',
				...curlHeaders({
					'content-type': JSON_CT,
					accept: ACCEPT,
					'mcp-session-id': c.sid,
					'mcp-protocol-version': c.protocol,
					expect: '100-continue',
				}),
				// A missing interim answer would stall for this long
				// (1 s by default).
				'--expect100-timeout', '5',
				'--data-binary', '@-',
				'-w', '\n%{http_code} %{time_total}',
				rt.url,
			],
			{ input: body },
		);
		assert.equal(res.code, 0, res.stderr.slice(-2000));
		assert.match(res.stderr, /> Expect: 100-continue/i, 'curl sent Expect');
		assert.match(res.stderr, /< HTTP\/1\.1 100 Continue/, 'got 100 Continue');
		const nl = res.stdout.lastIndexOf('\n');
		const [code, secs] = res.stdout.slice(nl + 1).split(' ');
		assert.equal(code, '200');
		// Without an interim 100, curl waits --expect100-timeout (5 s
		// here) before sending the body; the margin is for a loaded CI.
		assert.ok(Number(secs) < 2.5, `took ${secs} s`);
		const body2 = res.stdout.slice(0, nl);
		const msgs = body2.startsWith('{')
			? [JSON.parse(body2)]
			: sseMessages(body2);
		const reply = msgs.find((m) => m.id === 30);
		assert.equal(reply.result.content[0].text, text);
		await c.close();
	});
});

test('HTTP: keep-alive carries several requests on one connection', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { demo: demo() }, async (rt) => {
		const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
		try {
			const base = { 'content-type': JSON_CT, accept: ACCEPT };
			const init = await httpReq({
				url: rt.url,
				agent,
				headers: base,
				body: initBody(),
			});
			assert.equal(init.status, 200);
			assert.equal(init.reused, false, 'first request opens the socket');
			const sid = init.headers['mcp-session-id'];
			const proto = JSON.parse(init.text).result.protocolVersion;
			const h = {
				...base,
				'mcp-session-id': sid,
				'mcp-protocol-version': proto,
			};
			const seq = [
				// a notification (202), a JSON answer, an SSE answer
				// (tools/call streams), and an error status.
				[JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), 202],
				[rpc(2, 'tools/list'), 200],
				[rpc(3, 'tools/call', { name: 'demo__echo', arguments: { text: 'ka' } }), 200],
				[rpc(4, 'ping'), 200],
				['{bad json', 400],
				[rpc(5, 'tools/call', { name: 'demo__add', arguments: { a: 1, b: 1 } }), 200],
			];
			const ports = new Set([init.localPort]);
			for (const [body, status] of seq) {
				const r = await httpReq({ url: rt.url, agent, headers: h, body });
				assert.equal(r.status, status, `${body}: ${r.text}`);
				assert.equal(r.reused, true, `socket not reused for ${body}`);
				ports.add(r.localPort);
			}
			assert.equal(ports.size, 1, 'one local port for every request');
			const last = await httpReq({
				url: rt.url,
				agent,
				headers: h,
				body: rpc(6, 'tools/call', { name: 'demo__echo', arguments: { text: 'end' } }),
			});
			const [m] = last.headers['content-type'].startsWith('text/event-stream')
				? sseMessages(last.text)
				: [JSON.parse(last.text)];
			assert.equal(m.result.content[0].text, 'end');
			assert.equal(last.reused, true);
		} finally {
			agent.destroy();
		}
	});
});

test('Unix socket: the same endpoint, private to the user', { timeout: 30_000 }, async (t) => {
	await withRuntime(t, { demo: demo() }, async (rt) => {
		const sock = rt.socket;
		const st = fs.statSync(sock);
		assert.ok(st.isSocket(), `${sock} is a socket`);
		assert.equal(st.mode & 0o077, 0, `socket mode ${(st.mode & 0o777).toString(8)}`);

		const base = { 'content-type': JSON_CT, accept: ACCEPT };
		const init = await httpReq({ socketPath: sock, headers: base, body: initBody() });
		assert.equal(init.status, 200, init.text);
		const sid = init.headers['mcp-session-id'];
		assert.ok(sid);
		const h = { ...base, 'mcp-session-id': sid };
		const n = await httpReq({
			socketPath: sock,
			headers: h,
			body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
		});
		assert.equal(n.status, 202);
		const list = await httpReq({ socketPath: sock, headers: h, body: rpc(2, 'tools/list') });
		assert.equal(list.status, 200);
		const tools = JSON.parse(list.text).result.tools.map((x) => x.name);
		assert.ok(tools.includes('demo__echo'), tools.join());

		// curl over the socket: the session made there is the same hub's.
		const r = await curl([
			'-sS', '--max-time', '8', '--unix-socket', sock,
			...curlHeaders({ ...h, 'mcp-protocol-version': PROTOCOL }),
			'--data-binary',
			rpc(3, 'tools/call', { name: 'demo__echo', arguments: { text: 'via socket' } }),
			'http://localhost/mcp',
		]);
		assert.equal(r.code, 0, r.stderr);
		const msgs = r.stdout.startsWith('{') ? [JSON.parse(r.stdout)] : sseMessages(r.stdout);
		assert.equal(msgs.find((m) => m.id === 3).result.content[0].text, 'via socket');

		// The session opened on the socket is usable over TCP too: one
		// runtime, one set of sessions.
		const tcp = await fetch(rt.url, {
			method: 'POST',
			headers: h,
			body: rpc(4, 'ping'),
		});
		assert.equal(tcp.status, 200);
		await tcp.arrayBuffer();

		const st2 = await rt.status();
		assert.ok(st2.sessions >= 1, JSON.stringify(st2.sessions));
	});
});

test('HTTP: a method the runtime does not know reaches the server its params name', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(
		t,
		{ demo: demo(['--name', 'first']), other: demo(['--name', 'second']) },
		async (rt) => {
			const c = await connect(rt);
			await c.listAll();
			// x-demo/echo is in no MCP revision: the runtime passes it to
			// the server that owns the tool named, with the name that
			// server knows.
			const r = await c.result('x-demo/echo', {
				name: 'other__echo',
				extra: 7,
			});
			assert.equal(r.server, 'second');
			assert.deepEqual(r.params, { name: 'echo', extra: 7 });
			// Params that name nothing anyone owns: -32601.
			const miss = await c.request('x-demo/echo', { name: 'ghost__x' });
			assert.equal(miss.error?.code, -32601);
			const bare = await c.request('x-demo/echo', {});
			assert.equal(bare.error?.code, -32601);
			await c.close();
		},
	);
});

// Reads a response body to its end, or fails after ms.
async function readToEnd(res, ms) {
	const timer = setTimeout(() => res.body.cancel('timeout'), ms);
	try {
		return await res.text();
	} finally {
		clearTimeout(timer);
	}
}

test('HTTP: a GET stream ends when a newer one takes its place and when its session ends', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { demo: demo() }, async (rt) => {
		const c = await connect(rt);
		const ac = new AbortController();
		const first = await openGet(rt, c, ac);
		const firstDone = readToEnd(first, 5000);
		const second = await openGet(rt, c, ac);
		// The first stream is finished by the runtime, not left hanging.
		const text = await firstDone;
		assert.match(text, /^id: \d+-\d+\nretry: 1000\n/, 'it had its priming event');
		const secondDone = readToEnd(second, 5000);
		await c.close(); // DELETE
		const rest = await secondDone;
		assert.match(rest, /^id: \d+-\d+\nretry: 1000\n/);
		ac.abort();
	});
});

test('HTTP: a forwarded call answered first and alone is one JSON body with a length; progress first, or a large answer, makes it an SSE stream', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { demo: demo() }, async (rt) => {
		const c = await connect(rt);
		// The answer alone: application/json, Content-Length, the answer.
		const quick = await c.post({
			jsonrpc: '2.0',
			id: 11,
			method: 'tools/call',
			params: { name: 'demo__echo', arguments: { text: 'quick' } },
		});
		const qt = await quick.text();
		assert.equal(quick.status, 200);
		assert.equal(quick.headers.get('content-type'), JSON_CT, qt);
		assert.equal(Number(quick.headers.get('content-length')), Buffer.byteLength(qt));
		assert.equal(quick.headers.get('mcp-session-id'), c.sid);
		const answer = JSON.parse(qt);
		assert.equal(answer.id, 11);
		assert.equal(answer.result.content[0].text, 'quick');
		// Progress before the answer (the demo sends it every 100 ms): a
		// stream, its priming event first,
		// then the progress, then the answer.
		const slow = await c.post({
			jsonrpc: '2.0',
			id: 12,
			method: 'tools/call',
			params: { name: 'demo__sleep', arguments: { ms: 350 }, _meta: { progressToken: 'p12' } },
		});
		const st = await slow.text();
		assert.match(slow.headers.get('content-type'), /^text\/event-stream/);
		assert.match(st, /^id: \d+-\d+\nretry: 1000\n/, 'the priming event first');
		const msgs = sseMessages(st);
		assert.equal(msgs[0].method, 'notifications/progress', st);
		assert.equal(msgs.at(-1).id, 12);
		// An answer over 64 KiB stays resumable: a stream.
		const big = await c.post({
			jsonrpc: '2.0',
			id: 13,
			method: 'tools/call',
			params: { name: 'demo__echo', arguments: { text: 'b'.repeat(70_000) } },
		});
		const bt = await big.text();
		assert.match(big.headers.get('content-type'), /^text\/event-stream/);
		assert.equal(sseMessages(bt).find((m) => m.id === 13).result.content[0].text.length, 70_000);
		await c.close();
	});
});

// The event ids ("S-N": stream S, event N of the session) of an SSE body.
const eventIds = (text) =>
	[...text.matchAll(/^id: ?(\d+)-(\d+)$/gm)].map((m) => ({ s: Number(m[1]), n: Number(m[2]) }));

test('HTTP: an answer that goes as JSON keeps nothing for replay; a stream that starts late still replays its answer', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { demo: demo() }, async (rt) => {
		const c = await connect(rt);
		const call = (id, name, args, meta) =>
			c.post({
				jsonrpc: '2.0',
				id,
				method: 'tools/call',
				params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
			});
		// A stream (progress first), then an answer alone (JSON), then a
		// stream again: the JSON answer took no stream number and no event
		// of the replay ring, so the third stream's ids follow the first's.
		const first = await (await call(21, 'demo__sleep', { ms: 150 }, { progressToken: 'p21' })).text();
		const json = await call(22, 'demo__echo', { text: 'alone' });
		assert.equal(json.headers.get('content-type'), JSON_CT);
		assert.equal(JSON.parse(await json.text()).id, 22);
		const third = await (await call(23, 'demo__sleep', { ms: 150 }, { progressToken: 'p23' })).text();
		const a = eventIds(first);
		const b = eventIds(third);
		assert.ok(a.length >= 2 && b.length >= 2, `${first}\n${third}`);
		assert.equal(b[0].s, a[0].s + 1, 'the next stream number');
		assert.equal(b[0].n, a.at(-1).n + 1, 'the next event of the session');
		// No message in its first second: the stream starts with the first
		// heartbeat (its head and priming event), and the answer that comes
		// later is still numbered and kept: resuming from the priming event
		// replays it.
		const late = await call(24, 'demo__sleep', { ms: 1300 });
		assert.match(late.headers.get('content-type'), /^text\/event-stream/);
		const lt = await late.text();
		const prime = lt.match(/^id: ?(\S+)\nretry: 1000\n/);
		assert.ok(prime, lt);
		assert.equal(sseMessages(lt).at(-1).id, 24);
		const again = await fetch(rt.url, {
			method: 'GET',
			headers: {
				accept: 'text/event-stream',
				'mcp-session-id': c.sid,
				'mcp-protocol-version': c.protocol,
				'last-event-id': prime[1],
			},
		});
		assert.equal(again.status, 200);
		const replay = sseMessages(await again.text());
		assert.deepEqual(replay.map((m) => m.id), [24], JSON.stringify(replay));
		await c.close();
	});
});
