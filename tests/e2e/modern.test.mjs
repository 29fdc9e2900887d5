// MCP 2026-07-28 clients (stateless: no initialize, no session; _meta and
// the SEP-2243 headers on every request) on the same endpoint as 2025
// ones, in front of the 2025-era demo server over stdio (issue 20, the
// design in notes/modern-design.md): server/discover; the envelope's error
// ladder and its HTTP statuses; the methods the revision removed; no
// session ever; resultType and the caching hints; subscriptions/listen;
// log messages only at the level a request asks; closing an answer stream
// cancels the call upstream; and the bridge: a server that asks the client
// mid-call (elicitation, sampling) gives the modern client input_required
// with a requestState while the upstream call waits, and the retry
// continues that same call; a replayed, tampered, foreign or mismatched
// state is refused, and a client that did not declare the capability gets
// -32021. Raw HTTP over fetch (ModernClient in lib.mjs); the official SDK
// 2.x client is in modern-sdk.test.mjs.
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import {
	DEMO,
	DEMO_TOOLS,
	META_CAPS,
	META_INFO,
	META_LOG,
	META_SERVER,
	META_SUB,
	META_VERSION,
	MODERN,
	ModernClient,
	RawClient,
	connect,
	demo,
	readMessages,
	scratchDir,
	sseStream,
	waitFor,
	withRuntime,
} from './lib.mjs';
import { countLines, waitCountLine } from './protocol-lib.mjs';

const ELICIT = { elicitation: {} };
const SAMPLE = { sampling: {} };

// The demo server with a count file (the calls it ran, the cancels it
// got), and the config that serves it as `demo`.
async function demoWithCount(t) {
	const dir = await scratchDir(t, 'mcpvisor-e2e-modern-');
	const file = path.join(dir, 'count');
	return { dir, file, servers: { demo: demo(['--name', 'demo', '--count-file', file]) } };
}

// withRuntime, and the servers' pids learned from status at the end, so
// that the teardown proves them gone too.
function withServers(t, servers, opts, body) {
	if (typeof opts === 'function') {
		body = opts;
		opts = {};
	}
	return withRuntime(t, servers, opts, async (rt) => {
		await body(rt);
		await rt.status();
	});
}

// Two API keys the runtime takes (--api-key-file): two principals.
async function twoKeys(dir) {
	const keyFile = path.join(dir, 'keys');
	const KA = 'modern-key-alice-0123456789';
	const KB = 'modern-key-bob-9876543210';
	await fsp.writeFile(keyFile, `${KA}\n${KB}\n`, { mode: 0o600 });
	return { KA, KB, args: ['--api-key-file', keyFile] };
}

const calls = async (file, tool) =>
	(await countLines(file)).filter((l) => l === `call ${tool}`).length;

// The JSON-RPC error a refused request got (an exchange), checked: HTTP
// status, JSON (not a stream), the code, the request's id echoed.
function assertRefused(r, status, code, what) {
	assert.equal(r.status, status, `${what}: HTTP ${r.status} ${JSON.stringify(r.msgs)}`);
	assert.match(r.contentType, /^application\/json/, `${what}: a JSON answer`);
	assert.equal(r.msgs.length, 1, `${what}: one message`);
	const [m] = r.msgs;
	assert.ok(m.error, `${what}: an error, not ${JSON.stringify(m)}`);
	assert.equal(m.error.code, code, `${what}: ${JSON.stringify(m.error)}`);
	assert.equal(m.id, r.id, `${what}: the request's id is echoed`);
	return m;
}

// The demo instance's calls in flight, from verbose status.
async function inflight(rt) {
	const st = await rt.status();
	const srv = (st.servers ?? []).find((s) => s.name === 'demo');
	return (srv?.instances ?? []).reduce((n, i) => n + (i.inflight ?? 0), 0);
}

const noneInFlight = (rt, what) =>
	waitFor(async () => (await inflight(rt)) === 0, 10_000, `no call in flight ${what}`);

// tools/call of demo__elicit: the first answer, checked to be one
// elicitation input request for question; {params, key, state, ask}.
async function askElicit(c, question, opts = {}) {
	const params = { name: 'demo__elicit', arguments: { message: question } };
	const r = await c.request('tools/call', params, opts);
	assert.ok(r.result, `elicit: ${JSON.stringify(r.error)}`);
	const res = r.result;
	assert.equal(res.resultType, 'input_required', JSON.stringify(res));
	const keys = Object.keys(res.inputRequests ?? {});
	assert.equal(keys.length, 1, `one input request: ${JSON.stringify(res.inputRequests)}`);
	const [key] = keys;
	// The demo names its request "s<N>": a key the server chose is kept.
	assert.match(key, /^s\d+$/, 'the key is the upstream request id');
	const ask = res.inputRequests[key];
	assert.equal(ask.method, 'elicitation/create');
	assert.equal(ask.params.message, question);
	assert.equal(ask.params.requestedSchema.properties.answer.type, 'string');
	assert.equal(ask.id, undefined, 'an input request is no JSON-RPC request');
	assert.equal(ask.jsonrpc, undefined);
	assert.equal(typeof res.requestState, 'string');
	assert.ok(res.requestState.length > 0, 'a requestState');
	// input_required is never cacheable.
	assert.equal(res.ttlMs, undefined);
	assert.equal(res.cacheScope, undefined);
	return { params, key, state: res.requestState, ask };
}

// The retry of a call with answers and a state (a new id, the same params).
function retry(c, params, inputResponses, requestState, opts = {}) {
	return c.request('tools/call', { ...params, inputResponses, requestState }, opts);
}

const accept = (key, answer) => ({ [key]: { action: 'accept', content: { answer } } });

// A completed elicit call's answer (the demo returns what the user said).
function assertElicited(r, answer) {
	assert.ok(r.result, `retry: ${JSON.stringify(r.error)}`);
	assert.equal(r.result.resultType, 'complete', JSON.stringify(r.result));
	assert.ok(!r.result.isError, JSON.stringify(r.result));
	assert.deepEqual(JSON.parse(r.result.content[0].text),
		{ action: 'accept', content: { answer } });
}

test('modern: server/discover says the revision, the capabilities a 2025 client gets, cache hints and serverInfo; no session', {
	timeout: 60_000,
}, async (t) => {
	await withServers(t, { demo: demo(['--name', 'demo']) }, async (rt) => {
		const c = new ModernClient(rt.url);
		const msg = c.message('server/discover');
		const r = await c.exchange(msg);
		assert.equal(r.status, 200, JSON.stringify(r.msgs));
		assert.match(r.contentType, /^application\/json/, 'discover answers with JSON');
		const res = r.reply.result;
		assert.ok(res, JSON.stringify(r.reply));
		assert.deepEqual(res.supportedVersions, [MODERN]);
		assert.equal(res.resultType, 'complete');
		assert.ok(Number.isInteger(res.ttlMs) && res.ttlMs >= 0, `ttlMs ${res.ttlMs}`);
		// Nothing in it depends on a space or a key here.
		assert.equal(res.cacheScope, 'public');
		assert.equal(res.serverInfo, undefined, 'serverInfo is in _meta, not the body');
		// What a 2025 client is told at initialize, on the same runtime.
		const old = new RawClient(rt.url);
		const legacy = await old.initialize();
		// The capabilities a 2025 initialize gives (resources.subscribe and
		// logging are left to the endpoint: the revision has no
		// resources/subscribe or logging/setLevel).
		const caps = res.capabilities;
		assert.deepEqual(caps.tools, legacy.capabilities.tools);
		assert.deepEqual(caps.prompts, legacy.capabilities.prompts);
		assert.equal(caps.resources?.listChanged, legacy.capabilities.resources.listChanged);
		assert.deepEqual(caps.completions, legacy.capabilities.completions);
		assert.ok(caps.tools.listChanged, 'list changes are told (through listen)');
		assert.equal(typeof res.instructions, 'string');
		assert.ok(res.instructions.startsWith(legacy.instructions.split('\n')[0]), res.instructions);
		const info = res._meta?.[META_SERVER];
		assert.equal(info?.name, 'mcpvisor', JSON.stringify(res._meta));
		assert.equal(info.version, legacy.serverInfo.version);
		await old.close();
	});
});

test('modern: the envelope ladder: -32020 header missing or unlike the body, -32602 _meta keys missing, -32022 with the supported list, each HTTP 400, nothing run', {
	timeout: 60_000,
}, async (t) => {
	const { file, servers } = await demoWithCount(t);
	await withServers(t, servers, async (rt) => {
		const c = new ModernClient(rt.url);
		// The server runs, so that a call let through would be counted.
		assert.equal((await c.call('demo__echo', { text: 'warm' })).content[0].text, 'warm');
		const echo = (id, meta) => ({
			jsonrpc: '2.0', id, method: 'tools/call',
			params: { name: 'demo__echo', arguments: { text: 'must not run' }, _meta: meta },
		});
		const full = () => c.meta();
		const without = (k) => {
			const m = full();
			delete m[k];
			return m;
		};

		let r = await c.exchange(echo(101, full()), { headers: { 'mcp-protocol-version': null } });
		assertRefused(r, 400, -32020, 'no MCP-Protocol-Version');

		r = await c.exchange(echo(102, without(META_VERSION)));
		assertRefused(r, 400, -32602, '_meta without protocolVersion');

		r = await c.exchange(echo(103, without(META_CAPS)));
		assertRefused(r, 400, -32602, '_meta without clientCapabilities');
		// The modern header and no _meta at all.
		r = await c.exchange(echo(113, undefined));
		assertRefused(r, 400, -32602, 'the modern header without _meta');

		// clientInfo is only a SHOULD: served without it.
		r = await c.exchange(echo(104, without(META_INFO)));
		assert.equal(r.status, 200, JSON.stringify(r.msgs));
		assert.equal(r.reply.result.content[0].text, 'must not run');
		const ran = await calls(file, 'echo');

		const future = '2999-01-01';
		r = await c.exchange(echo(105, { ...full(), [META_VERSION]: future }));
		const m = assertRefused(r, 400, -32022, 'an unsupported version');
		assert.deepEqual(m.error.data, { supported: [MODERN], requested: future });

		// The header says one version, the body another.
		r = await c.exchange(echo(106, { ...full(), [META_VERSION]: future }),
			{ headers: { 'mcp-protocol-version': MODERN } });
		assertRefused(r, 400, -32020, 'MCP-Protocol-Version unlike the claim');

		r = await c.exchange(echo(107, full()), { headers: { 'mcp-method': 'tools/list' } });
		assertRefused(r, 400, -32020, 'Mcp-Method unlike the method');
		r = await c.exchange(echo(108, full()), { headers: { 'mcp-method': null } });
		assertRefused(r, 400, -32020, 'no Mcp-Method');
		r = await c.exchange(echo(109, full()), { headers: { 'mcp-name': 'demo__add' } });
		assertRefused(r, 400, -32020, 'Mcp-Name unlike params.name');
		r = await c.exchange(echo(110, full()), { headers: { 'mcp-name': null } });
		assertRefused(r, 400, -32020, 'no Mcp-Name on tools/call');
		// A sentinel-encoded name is the name.
		r = await c.exchange(echo(111, full()), {
			headers: { 'mcp-name': `=?base64?${Buffer.from('demo__echo').toString('base64')}?=` },
		});
		assert.equal(r.status, 200, `sentinel Mcp-Name: ${JSON.stringify(r.msgs)}`);
		assert.equal(r.reply.result.content[0].text, 'must not run');

		// A batch with a modern element.
		const batch = await c.post(JSON.stringify([echo(112, full())]));
		assert.equal(batch.status, 400, 'a batch with a modern message');
		await batch.arrayBuffer();

		// Of the refused calls, none reached the server.
		assert.equal(await calls(file, 'echo'), ran + 1, 'only the sentinel call ran after');
	});
});

test('modern: initialize, ping, logging/setLevel and resources/subscribe with modern _meta are 404 -32601; GET and DELETE 405', {
	timeout: 60_000,
}, async (t) => {
	await withServers(t, { demo: demo(['--name', 'demo']) }, async (rt) => {
		const c = new ModernClient(rt.url);
		const gone = [
			['initialize', { protocolVersion: MODERN, capabilities: {}, clientInfo: { name: 'x', version: '0' } }],
			['ping', {}],
			['logging/setLevel', { level: 'debug' }],
			['resources/subscribe', { uri: 'demo://readme' }],
			['resources/unsubscribe', { uri: 'demo://readme' }],
		];
		for (const [method, params] of gone) {
			const r = await c.exchange(c.message(method, params));
			assertRefused(r, 404, -32601, method);
		}
		for (const method of ['GET', 'DELETE']) {
			const res = await fetch(rt.url, {
				method,
				headers: { accept: 'text/event-stream', 'mcp-protocol-version': MODERN },
			});
			assert.equal(res.status, 405, `${method} with the modern header`);
			c.noSession(res, method);
			await res.arrayBuffer();
		}
	});
});

test('modern: results carry resultType, the cacheable ones ttlMs and cacheScope (private with a space); -32002 becomes -32602', {
	timeout: 60_000,
}, async (t) => {
	const space = await scratchDir(t, 'mcpvisor-e2e-modern-space-');
	await withServers(t, { demo: demo(['--name', 'demo']) }, async (rt) => {
		const c = new ModernClient(rt.url);
		const tools = await c.result('tools/list');
		assert.deepEqual(tools.tools.map((x) => x.name), DEMO_TOOLS.map((n) => `demo__${n}`));
		assert.equal(tools.resultType, 'complete');
		assert.ok(Number.isInteger(tools.ttlMs) && tools.ttlMs >= 0, `ttlMs ${tools.ttlMs}`);
		assert.equal(tools.cacheScope, 'public');
		assert.equal(tools._meta?.[META_SERVER]?.name, 'mcpvisor');

		const call = await c.call('demo__add', { a: 2, b: 3 });
		assert.equal(call.resultType, 'complete');
		assert.deepEqual(call.structuredContent, { sum: 5 });
		assert.equal(call.ttlMs, undefined, 'a call result is not cacheable');
		assert.equal(call.cacheScope, undefined);

		for (const [method, params, key] of [
			['prompts/list', {}, 'prompts'],
			['resources/list', {}, 'resources'],
			['resources/templates/list', {}, 'resourceTemplates'],
			['resources/read', { uri: 'demo://readme' }, 'contents'],
		]) {
			const r = await c.result(method, params);
			assert.ok(Array.isArray(r[key]) && r[key].length > 0, `${method}: ${JSON.stringify(r)}`);
			assert.equal(r.resultType, 'complete', method);
			assert.ok(Number.isInteger(r.ttlMs) && r.ttlMs >= 0, `${method} ttlMs ${r.ttlMs}`);
			assert.equal(r.cacheScope, 'public', method);
		}
		const prompt = await c.result('prompts/get', { name: 'demo__greeting', arguments: { name: 'Ada' } });
		assert.equal(prompt.resultType, 'complete');
		assert.equal(prompt.messages[0].content.text, 'Hello, Ada!');

		// A resource nobody serves: the revision's -32602 with the uri
		// (-32002 is a 2025 code a modern server must not send).
		const nf = await c.request('resources/read', { uri: 'nowhere://x' });
		assert.equal(nf.error?.code, -32602, JSON.stringify(nf));
		assert.equal(nf.error.data?.uri, 'nowhere://x');

		// With a space the lists are the space's: private.
		const s = new ModernClient(rt.url, { space });
		const st = await s.result('tools/list');
		assert.equal(st.cacheScope, 'private');
		const sd = await s.result('server/discover');
		assert.equal(sd.cacheScope, 'private');
	});
});

test('modern: a 2025 client (initialize, session, GET stream) on the same endpoint works alongside, its answers unchanged', {
	timeout: 60_000,
}, async (t) => {
	await withServers(t, { demo: demo(['--name', 'demo']) }, async (rt) => {
		const old = await connect(rt);
		const c = new ModernClient(rt.url);
		const a = await old.call('demo__echo', { text: 'old one' });
		const b = await c.call('demo__echo', { text: 'new one' });
		assert.equal(a.content[0].text, 'old one');
		assert.equal(b.content[0].text, 'new one');
		assert.equal(b.resultType, 'complete');
		// The 2025 answers are as they were: no 2026 fields.
		assert.equal(a.resultType, undefined, '2025 call result unchanged');
		const list = await old.result('tools/list');
		assert.equal(list.resultType, undefined, '2025 list unchanged');
		assert.equal(list.ttlMs, undefined);
		assert.equal(list.cacheScope, undefined);
		// Its GET stream is still served (405 is for the modern header).
		const ctl = new AbortController();
		const get = await fetch(rt.url, {
			method: 'GET',
			headers: old.headers({ accept: 'text/event-stream' }),
			signal: ctl.signal,
		});
		assert.equal(get.status, 200, 'the 2025 GET stream');
		ctl.abort();
		// Interleaved, both still go.
		assert.equal((await c.call('demo__echo', { text: 'again new' })).content[0].text, 'again new');
		assert.equal((await old.call('demo__echo', { text: 'again old' })).content[0].text, 'again old');
		await old.close();
	});
});

test('modern: subscriptions/listen acknowledges first, tags each message with its id, and sends only the kinds asked', {
	timeout: 90_000,
}, async (t) => {
	// The demo's notify_changed announces a change to a list that stays
	// the same, which mcpvisor does not pass on (http.test.mjs), and
	// nothing in the demo changes its lists while it runs; real changes
	// come from the config: a reload that changes the demo's tool and
	// prompt filters (the process is kept), then one that drops them.
	await withServers(t, { demo: demo(['--name', 'demo']) }, async (rt) => {
		const c = new ModernClient(rt.url);
		// What the client sees now, before it listens (and again after a
		// change: a client that has not read the new list need not hear
		// of the next change).
		const relist = async () => {
			await c.result('tools/list');
			await c.result('prompts/list');
			await c.result('resources/list');
		};
		await relist();
		const tools = await c.listen(
			{ toolsListChanged: true, resourceSubscriptions: ['demo://readme'] },
			{ id: 'listen-tools' });
		const prompts = await c.listen({ promptsListChanged: true }, { id: 77 });
		try {
			const acked = async (l) => {
				const ack = await l.next(() => true, 5000, `the first message of listen ${l.id}`);
				assert.equal(ack.method, 'notifications/subscriptions/acknowledged', JSON.stringify(ack));
				assert.equal(ack.params._meta?.[META_SUB], l.id, 'the ack is tagged with the listen id');
				return Object.entries(ack.params.notifications)
					.filter(([, v]) => v === true || (Array.isArray(v) && v.length))
					.map(([k]) => k);
			};
			// The resource it follows is named in the ack too.
			assert.deepEqual(await acked(tools), ['toolsListChanged', 'resourceSubscriptions']);
			assert.deepEqual(await acked(prompts), ['promptsListChanged']);

			const isKind = (kind) => (m) => m.method === `notifications/${kind}/list_changed`;
			const count = (l, kind) => l.msgs.filter(isKind(kind)).length;
			const reload = async (filters) => {
				await fsp.writeFile(rt.configPath, JSON.stringify({
					mcpServers: { demo: demo(['--name', 'demo'], filters) },
				}));
				const r = await rt.cli(['reload']);
				assert.equal(r.code, 0, r.stderr);
			};
			// 1: the tools and the prompts change (resources not).
			await reload({ tools: { deny: ['echo'] }, prompts: { deny: ['greeting'] } });
			await tools.next(isKind('tools'), 20_000, 'tools/list_changed on the tools listener');
			await prompts.next(isKind('prompts'), 20_000, 'prompts/list_changed on the prompts listener');
			const seen = (await c.result('tools/list')).tools.map((x) => x.name);
			assert.ok(!seen.includes('demo__echo') && seen.includes('demo__add'), seen.join());
			await relist();
			// 2: both change back. Anything of change 1 a listener should
			// not have had came before its own notice of change 2.
			await reload({});
			await waitFor(() => count(tools, 'tools') >= 2, 20_000, 'the second tools/list_changed');
			await waitFor(() => count(prompts, 'prompts') >= 2, 20_000, 'the second prompts/list_changed');
			for (const [l, kind] of [[tools, 'tools'], [prompts, 'prompts']]) {
				const upTo = l.msgs.slice(0, l.msgs.findLastIndex(isKind(kind)) + 1);
				assert.deepEqual([...new Set(upTo.map((m) => m.method))], [
					'notifications/subscriptions/acknowledged',
					`notifications/${kind}/list_changed`,
				], `listen ${l.id} hears its ack, then only its kind`);
				assert.equal(upTo.filter((m) => m.method === 'notifications/subscriptions/acknowledged').length, 1);
				for (const m of upTo)
					assert.equal(m.params?._meta?.[META_SUB], l.id, `tagged: ${JSON.stringify(m)}`);
			}
		} finally {
			tools.close();
			prompts.close();
		}
	});
});

test('modern: notifications/message reaches a call only when its _meta asks a level, and only at or above it', {
	timeout: 60_000,
}, async (t) => {
	await withServers(t, { demo: demo(['--name', 'demo']) }, async (rt) => {
		const c = new ModernClient(rt.url);
		const logged = async (level, text) => {
			const msg = c.message('tools/call', { name: 'demo__log', arguments: { message: text } },
				{ meta: level ? { [META_LOG]: level } : {} });
			const r = await c.exchange(msg);
			assert.equal(r.status, 200, JSON.stringify(r.msgs));
			assert.ok(r.reply?.result, JSON.stringify(r.msgs));
			assert.equal(r.reply.result.resultType, 'complete');
			const logs = r.msgs.filter((m) => m.method === 'notifications/message');
			for (const l of logs)
				assert.ok(r.msgs.indexOf(l) < r.msgs.indexOf(r.reply), 'the log comes before the answer');
			return logs;
		};
		// The demo logs at info.
		const info = await logged('info', 'at-info');
		assert.equal(info.length, 1, 'logLevel info: the info message');
		assert.equal(info[0].params.level, 'info');
		assert.equal(info[0].params.data, 'at-info');
		const debug = await logged('debug', 'at-debug');
		assert.equal(debug.length, 1, 'logLevel debug: the info message');
		assert.equal(debug[0].params.data, 'at-debug');
		assert.deepEqual(await logged('warning', 'at-warning'), [], 'logLevel warning: no info message');
		assert.deepEqual(await logged(null, 'unasked'), [], 'no logLevel: no message at all');
		// An invalid level is refused (-32602).
		const bad = await c.exchange(c.message('tools/call',
			{ name: 'demo__log', arguments: { message: 'x' } }, { meta: { [META_LOG]: 'loud' } }));
		assertRefused(bad, 400, -32602, 'logLevel "loud"');
	});
});

test('modern: progress flows on a call\'s stream, and closing the stream cancels the call upstream', {
	timeout: 60_000,
}, async (t) => {
	const { file, servers } = await demoWithCount(t);
	await withServers(t, servers, async (rt) => {
		const c = new ModernClient(rt.url);
		// With a progress token: SSE at once, progress on it.
		const ctl = new AbortController();
		const msg = c.message('tools/call', { name: 'demo__sleep', arguments: { ms: 60_000 } },
			{ meta: { progressToken: 'sleepy' } });
		const res = await c.post(msg, { signal: ctl.signal });
		assert.equal(res.status, 200);
		assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
		let progress = null;
		try {
			for await (const m of sseStream(res.body)) {
				if (m.method === 'notifications/progress') {
					progress = m;
					break;
				}
			}
		} finally {
			ctl.abort();
		}
		assert.equal(progress?.params.progressToken, 'sleepy', JSON.stringify(progress));
		assert.equal(progress.params.total, 60_000);
		await waitCountLine(file, 'cancelled sleep', 1, 10_000);
		await noneInFlight(rt, 'after the first stream closed');

		// Without one: nothing is sent before the answer, so the head may be
		// held; closing the connection then cancels all the same.
		const ctl2 = new AbortController();
		const pending = c.post(c.message('tools/call',
			{ name: 'demo__sleep', arguments: { ms: 60_000 } }), { signal: ctl2.signal });
		pending.catch(() => {});
		await waitCountLine(file, 'call sleep', 2, 10_000);
		await waitFor(async () => (await inflight(rt)) === 1, 10_000, 'the second sleep in flight');
		ctl2.abort();
		await waitCountLine(file, 'cancelled sleep', 2, 10_000);
		await noneInFlight(rt, 'after the second connection closed');
		// The runtime serves on.
		assert.equal((await c.call('demo__echo', { text: 'after' })).content[0].text, 'after');
	});
});

test('modern bridge: elicitation mid-call becomes input_required; the retry continues the same upstream call; a replay is -32602', {
	timeout: 60_000,
}, async (t) => {
	const { file, servers } = await demoWithCount(t);
	await withServers(t, servers, async (rt) => {
		const c = new ModernClient(rt.url, { caps: ELICIT });
		const { params, key, state } = await askElicit(c, 'What is your name?');
		// The upstream call waits meanwhile.
		assert.equal(await inflight(rt), 1, 'the upstream call waits');
		const done = await retry(c, params, accept(key, 'Ada'), state);
		assertElicited(done, 'Ada');
		assert.equal(await calls(file, 'elicit'), 1, 'the retry continued the one call');
		await noneInFlight(rt, 'after the answer');

		// The same state again: used up.
		const again = await c.exchange(c.message('tools/call',
			{ ...params, inputResponses: accept(key, 'Eve'), requestState: state }));
		assert.equal(again.status, 200, 'a refused state is a JSON-RPC error, HTTP 200');
		assert.equal(again.reply?.error?.code, -32602, JSON.stringify(again.msgs));
		assert.equal(await calls(file, 'elicit'), 1, 'a replay starts nothing');
	});
});

test('modern bridge: a retry without the answer is asked again with a new state; then the answer completes the call', {
	timeout: 60_000,
}, async (t) => {
	const { file, servers } = await demoWithCount(t);
	await withServers(t, servers, async (rt) => {
		const c = new ModernClient(rt.url, { caps: ELICIT });
		const first = await askElicit(c, 'Colour?');
		const r = await retry(c, first.params, {}, first.state);
		assert.ok(r.result, JSON.stringify(r.error));
		assert.equal(r.result.resultType, 'input_required', JSON.stringify(r.result));
		assert.deepEqual(Object.keys(r.result.inputRequests), [first.key], 'the same request again');
		assert.equal(r.result.inputRequests[first.key].params.message, 'Colour?');
		assert.equal(typeof r.result.requestState, 'string');
		assert.notEqual(r.result.requestState, first.state, 'each round has its own state');
		assertElicited(await retry(c, first.params, accept(first.key, 'blue'), r.result.requestState), 'blue');
		assert.equal(await calls(file, 'elicit'), 1);
	});
});

test('modern bridge: a tampered state is -32602', {
	timeout: 60_000,
}, async (t) => {
	const { servers } = await demoWithCount(t);
	await withServers(t, servers, async (rt) => {
		const c = new ModernClient(rt.url, { caps: ELICIT });
		const { params, key, state } = await askElicit(c, 'Tamper?');
		const r = await c.exchange(c.message('tools/call',
			{ ...params, inputResponses: accept(key, 'x'), requestState: `${state}-TAMPERED` }));
		assert.equal(r.status, 200, 'a JSON-RPC error, HTTP 200');
		assert.equal(r.reply?.error?.code, -32602, JSON.stringify(r.msgs));
		// Not a test of what comes after (the next one is): the genuine
		// state ends the call if the tamper left it waiting.
		await retry(c, params, accept(key, 'x'), state);
		await noneInFlight(rt, 'at the end');
	});
});

test('modern bridge: a tampered state cancels the waiting upstream call; the genuine state is then refused too', {
	timeout: 60_000,
}, async (t) => {
	// Issue 20: a tampered state gets -32602 "and the waiting upstream call
	// is cancelled". reqstate_open gives no handle for a state whose MAC
	// fails, so the endpoint has to find the call another way; kept apart
	// from the test above so that the two outcomes show separately.
	const { file, servers } = await demoWithCount(t);
	await withServers(t, servers, async (rt) => {
		const c = new ModernClient(rt.url, { caps: ELICIT });
		const { params, key, state } = await askElicit(c, 'Tamper?');
		const r = await c.exchange(c.message('tools/call',
			{ ...params, inputResponses: accept(key, 'x'), requestState: `${state}-TAMPERED` }));
		assert.equal(r.reply?.error?.code, -32602, JSON.stringify(r.msgs));
		await waitCountLine(file, 'cancelled client request', 1, 10_000);
		await noneInFlight(rt, 'after the tampered state');
		const late = await retry(c, params, accept(key, 'x'), state);
		assert.equal(late.error?.code, -32602, JSON.stringify(late));
	});
});

test('modern bridge: a state sent with other arguments is -32602 and cancels the waiting call', {
	timeout: 60_000,
}, async (t) => {
	const { file, servers } = await demoWithCount(t);
	await withServers(t, servers, async (rt) => {
		const c = new ModernClient(rt.url, { caps: ELICIT });
		const { key, state } = await askElicit(c, 'Original question?');
		const other = { name: 'demo__elicit', arguments: { message: 'Another question?' } };
		const r = await retry(c, other, accept(key, 'x'), state);
		assert.equal(r.error?.code, -32602, JSON.stringify(r));
		await waitCountLine(file, 'cancelled client request', 1, 10_000);
		await noneInFlight(rt, 'after the mismatched state');
		assert.equal(await calls(file, 'elicit'), 1, 'the mismatched retry started no call');
	});
});

test('modern bridge: another principal (another API key, or the runtime user without one) cannot use a state; its owner still can', {
	timeout: 60_000,
}, async (t) => {
	const { dir, file, servers } = await demoWithCount(t);
	const { KA, KB, args } = await twoKeys(dir);
	await withServers(t, servers, { args }, async (rt) => {
		const alice = new ModernClient(rt.url, { caps: ELICIT, key: KA });
		const bob = new ModernClient(rt.url, { caps: ELICIT, key: KB });
		const me = new ModernClient(rt.url, { caps: ELICIT });
		const { params, key, state } = await askElicit(alice, 'Secret?');
		for (const [who, c] of [['another key', bob], ['no key', me]]) {
			const r = await retry(c, params, accept(key, `from ${who}`), state);
			assert.equal(r.error?.code, -32602, `${who}: ${JSON.stringify(r)}`);
		}
		// Not cancelled: the owner's retry completes the call.
		assert.equal(await inflight(rt), 1, 'the call still waits');
		assertElicited(await retry(alice, params, accept(key, 'from alice'), state), 'from alice');
		const lines = await countLines(file);
		assert.equal(lines.filter((l) => l === 'call elicit').length, 1);
		assert.ok(!lines.includes('cancelled client request'), 'nothing was cancelled');
		// The keys never reach the log.
		assert.ok(!rt.stderr().includes(KA) && !rt.stderr().includes(KB));
	});
});

test('modern bridge: a call left at input_required blocks no one else on its server; its retry waits for the turn and completes', {
	timeout: 60_000,
}, async (t) => {
	const { dir, file, servers } = await demoWithCount(t);
	const { KA, KB, args } = await twoKeys(dir);
	await withServers(t, servers, { args }, async (rt) => {
		const alice = new ModernClient(rt.url, { caps: ELICIT, key: KA });
		const bob = new ModernClient(rt.url, { caps: ELICIT, key: KB });
		// Alice's call waits for her (she may never come back): the
		// server asked and waits too, so Bob's call on it goes now, where
		// it used to wait for Alice's state to expire (10 minutes).
		const { params, key, state } = await askElicit(alice, 'Later?');
		assert.equal((await bob.call('demo__echo', { text: 'not blocked' })).content[0].text,
			'not blocked');
		// Bob's slow call is on the server when Alice comes back: her
		// answer waits for it, then her call completes with it.
		const slow = bob.call('demo__sleep', { ms: 1500 });
		await waitCountLine(file, 'call sleep', 1, 10_000);
		const done = retry(alice, params, accept(key, 'Ada'), state);
		assert.ok((await slow).content, 'Bob\'s call completes');
		assertElicited(await done, 'Ada');
		assert.equal(await calls(file, 'elicit'), 1, 'the retry continued the one call');
		await noneInFlight(rt, 'after both');
	});
});

test('modern bridge: two calls that elicit from one stdio server at once each get only their own question and answer', {
	timeout: 60_000,
}, async (t) => {
	const { file, servers } = await demoWithCount(t);
	await withServers(t, servers, async (rt) => {
		const a = new ModernClient(rt.url, { caps: ELICIT, name: 'client-a' });
		const b = new ModernClient(rt.url, { caps: ELICIT, name: 'client-b' });
		const call = (c, who) => {
			const params = { name: 'demo__elicit', arguments: { message: `question of ${who}` } };
			return c.request('tools/call', params).then((r) => ({ who, c, params, r }));
		};
		// Both at once; a bridge may hold one until the other is done, so
		// each is answered as it comes.
		const pending = new Map([['a', call(a, 'a')], ['b', call(b, 'b')]]);
		while (pending.size) {
			const { who, c, params, r } = await Promise.race(pending.values());
			pending.delete(who);
			assert.equal(r.result?.resultType, 'input_required', `${who}: ${JSON.stringify(r)}`);
			const [[key, ask]] = Object.entries(r.result.inputRequests);
			assert.equal(ask.params.message, `question of ${who}`, `${who} is asked its own question`);
			assertElicited(await retry(c, params, accept(key, `answer of ${who}`), r.result.requestState),
				`answer of ${who}`);
		}
		assert.equal(await calls(file, 'elicit'), 2);
	});
});

test('modern bridge: sampling mid-call becomes input_required; the model\'s answer completes the call', {
	timeout: 60_000,
}, async (t) => {
	const { file, servers } = await demoWithCount(t);
	await withServers(t, servers, async (rt) => {
		const c = new ModernClient(rt.url, { caps: SAMPLE });
		const params = { name: 'demo__sample', arguments: { prompt: 'Capital of France?' } };
		const r = await c.result('tools/call', params);
		assert.equal(r.resultType, 'input_required', JSON.stringify(r));
		const [[key, ask]] = Object.entries(r.inputRequests);
		assert.equal(ask.method, 'sampling/createMessage');
		assert.equal(ask.params.messages[0].content.text, 'Capital of France?');
		assert.equal(ask.params.maxTokens, 256);
		const done = await retry(c, params, {
			[key]: { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'e2e-model', stopReason: 'endTurn' },
		}, r.requestState);
		assert.ok(done.result, JSON.stringify(done.error));
		assert.equal(done.result.resultType, 'complete');
		assert.equal(done.result.content[0].text, 'Paris');
		assert.equal(await calls(file, 'sample'), 1);
	});
});

test('modern bridge: sample without sampling declared is HTTP 400 -32021 with requiredCapabilities, and the upstream call ends', {
	timeout: 60_000,
}, async (t) => {
	const { servers } = await demoWithCount(t);
	await withServers(t, servers, async (rt) => {
		// It declares elicitation, not sampling.
		const c = new ModernClient(rt.url, { caps: ELICIT });
		// The server runs first: an answer with nothing before it for a
		// second gets its (SSE) head, and then no status can say 400.
		assert.equal((await c.call('demo__echo', { text: 'warm' })).content[0].text, 'warm');
		const r = await c.exchange(c.message('tools/call',
			{ name: 'demo__sample', arguments: { prompt: 'Capital of France?' } }));
		const m = assertRefused(r, 400, -32021, 'sampling not declared');
		const req = m.error.data?.requiredCapabilities;
		assert.ok(req && typeof req === 'object' && !Array.isArray(req), JSON.stringify(m.error));
		assert.ok(req.sampling && typeof req.sampling === 'object' && !Array.isArray(req.sampling),
			`requiredCapabilities.sampling is an object: ${JSON.stringify(req)}`);
		assert.equal(req.elicitation, undefined);
		await noneInFlight(rt, 'after -32021');
		// The same client, declaring it, gets the bridge.
		const ok = new ModernClient(rt.url, { caps: { ...ELICIT, ...SAMPLE } });
		const r2 = await ok.result('tools/call', { name: 'demo__sample', arguments: { prompt: 'again' } });
		assert.equal(r2.resultType, 'input_required');
		await readMessages(await ok.post(ok.message('tools/call', {
			name: 'demo__sample', arguments: { prompt: 'again' },
			inputResponses: { [Object.keys(r2.inputRequests)[0]]: { role: 'assistant', content: { type: 'text', text: 'fine' }, model: 'm' } },
			requestState: r2.requestState,
		})));
		await noneInFlight(rt, 'at the end');
	});
});

// A resource followed through listen: subscribed on the server behind
// (the C conformance fixture, which can subscribe), and its update comes
// tagged to the stream that follows it, not to one that does not.
test('modern: subscriptions/listen follows resources: resourceSubscriptions acknowledged, updates tagged, only to who follows', {
	timeout: 90_000,
}, async (t) => {
	const fixture = path.resolve(path.dirname(DEMO), 'conformance-server');
	await withServers(t, { conf: { command: fixture, scope: 'app', prefix: '' } }, async (rt) => {
		const c = new ModernClient(rt.url);
		const caps = (await c.result('server/discover')).capabilities;
		assert.equal(caps.resources?.subscribe, true, 'the fixture can subscribe');
		const watch = await c.listen({ resourceSubscriptions: ['test://watched-resource'] }, { id: 'watch' });
		const other = await c.listen({ resourceSubscriptions: ['test://static-text'] }, { id: 'other' });
		try {
			const ack = await watch.next(() => true, 5000, 'the ack');
			assert.equal(ack.method, 'notifications/subscriptions/acknowledged');
			assert.deepEqual(ack.params.notifications.resourceSubscriptions, ['test://watched-resource']);
			await other.next(() => true, 5000, 'the other ack');
			const r = await c.result('tools/call', { name: 'test_update_watched', arguments: {} });
			assert.match(r.content[0].text, /subscriber notified/, 'the server had the subscription');
			const up = await watch.next((m) => m.method === 'notifications/resources/updated', 20_000, 'the update');
			assert.equal(up.params.uri, 'test://watched-resource');
			assert.equal(up.params._meta?.[META_SUB], 'watch');
			// The other stream follows another resource: it heard nothing
			// of this one (its update would have come before the answer
			// of a call made after it).
			await c.result('tools/list');
			assert.equal(other.msgs.filter((m) => m.method === 'notifications/resources/updated').length, 0);
		} finally {
			watch.close();
			other.close();
		}
		// Nobody follows it any more: the server's subscription is let go.
		await waitFor(async () => {
			const r = await c.result('tools/call', { name: 'test_update_watched', arguments: {} });
			return !/subscriber notified/.test(r.content[0].text);
		}, 20_000, 'the subscription let go once its stream closed');
	});
});
