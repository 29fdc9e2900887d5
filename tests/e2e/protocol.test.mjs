// The protocol end to end with the official TypeScript SDK client through
// the runtime and one shared (app-scoped) demo server: progress, cancel,
// sampling routed to the right session, elicitation, list_changed after a
// reload, resumption with Last-Event-ID, old protocol versions and batches,
// and pagination cursors across servers.
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import { test } from 'node:test';

import {
	CreateMessageRequestSchema,
	ElicitRequestSchema,
	ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import {
	DEMO_TOOLS,
	connect,
	demo,
	readMessages,
	waitFor,
	withRuntime,
} from './lib.mjs';
import {
	OldClient,
	countFile,
	countLines,
	latch,
	sdkClient,
	sdkClose,
	text,
	waitCountLine,
	waitGetStream,
	within,
} from './protocol-lib.mjs';

// Runs body(rt, file) against a runtime serving one app-scoped demo server
// (with args added to its own) that writes its count file to `file`.
async function withDemo(t, opts, body, args = []) {
	const { dir, file } = await countFile();
	try {
		await withRuntime(
			t,
			{ demo: demo(['--name', 'demo', '--count-file', file, ...args]) },
			opts,
			(rt) => body(rt, file),
		);
	} finally {
		await fsp.rm(dir, { recursive: true, force: true });
	}
}

function sleepCall(ms) {
	return { name: 'demo__sleep', arguments: { ms } };
}

test('progress: a sleep reports increasing progress, then its result', {
	timeout: 60_000,
}, async (t) => {
	await withDemo(t, {}, async (rt) => {
		const c = await sdkClient(rt);
		const seen = [];
		const r = await c.client.callTool(sleepCall(600), undefined, {
			onprogress: (p) => seen.push(p),
		});
		const after = seen.length;
		assert.equal(text(r), 'slept 600 ms');
		assert.ok(seen.length >= 3, `progress: ${JSON.stringify(seen)}`);
		for (let i = 1; i < seen.length; i++)
			assert.ok(
				seen[i].progress > seen[i - 1].progress,
				`not increasing: ${JSON.stringify(seen)}`,
			);
		for (const p of seen) {
			assert.equal(p.total, 600);
			assert.ok(p.progress > 0 && p.progress < 600, JSON.stringify(p));
		}
		// Nothing of this call comes after its result.
		await new Promise((res) => setImmediate(res));
		assert.equal(seen.length, after, 'progress after the result');
		await rt.status(); // tracks every instance pid
		await sdkClose(c);
	});
});

test('cancel: an aborted call sends notifications/cancelled that reaches the server', {
	timeout: 60_000,
}, async (t) => {
	await withDemo(t, {}, async (rt, file) => {
		const c = await sdkClient(rt);
		const ac = new AbortController();
		const first = latch();
		const call = c.client.callTool(sleepCall(5000), undefined, {
			signal: ac.signal,
			onprogress: () => first.open(),
		});
		call.catch(() => {});
		await within(first.wait(), 5000, 'first progress');
		const aborted = Date.now();
		ac.abort('test cancels');
		await assert.rejects(call, /cancel/i);
		assert.ok(
			Date.now() - aborted < 1500,
			`rejected ${Date.now() - aborted} ms after abort`,
		);
		// Only a cancel that reaches the server before the sleep ends
		// writes this line.
		const lines = await waitCountLine(file, 'cancelled sleep', 1, 3000);
		assert.ok(lines.includes('call sleep'), lines.join('|'));

		// The shared instance goes on serving, with nothing in flight.
		const echo = await c.client.callTool({
			name: 'demo__echo',
			arguments: { text: 'still here' },
		});
		assert.equal(text(echo), 'still here');
		const st = await rt.status();
		const inst = st.servers.find((s) => s.name === 'demo').instances[0];
		assert.equal(inst.inflight, 0, JSON.stringify(inst));
		assert.equal(
			(await countLines(file)).filter((l) => l.startsWith('start ')).length,
			1,
			'one start',
		);
		await sdkClose(c);
	});
});

test('cancel: a client that disconnects mid-call cancels it upstream', {
	timeout: 60_000,
}, async (t) => {
	await withDemo(t, {}, async (rt, file) => {
		const a = await sdkClient(rt, { name: 'A' });
		const b = await sdkClient(rt, { name: 'B' });
		// B holds the shared instance the whole time.
		await b.client.listTools();
		const first = latch();
		const call = a.client.callTool(sleepCall(5000), undefined, {
			onprogress: () => first.open(),
		});
		call.catch(() => {});
		await within(first.wait(), 5000, 'first progress');
		const t0 = Date.now();
		// Aborts every HTTP request of A; no DELETE, no cancel message.
		await a.client.close();
		await assert.rejects(call, /closed/i);
		await waitCountLine(file, 'cancelled sleep', 1, 3000);
		assert.ok(Date.now() - t0 < 3000, 'cancelled at once');

		// B still uses the same instance; a call of its own runs whole.
		const r = await b.client.callTool(sleepCall(200));
		assert.equal(text(r), 'slept 200 ms');
		const lines = await countLines(file);
		assert.equal(lines.filter((l) => l === 'cancelled sleep').length, 1);
		assert.equal(lines.filter((l) => l.startsWith('start ')).length, 1);
		await rt.status(); // tracks every instance pid
		await sdkClose(b);
	});
});

// A client with the sampling capability that answers "from NAME"; `asked`
// lists the questions it got; state.gate (when set) is awaited before it
// answers.
async function samplingClient(rt, name, state) {
	const c = await sdkClient(rt, { name, capabilities: { sampling: {} } });
	c.asked = [];
	c.client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
		c.asked.push(req.params.messages[0].content.text);
		if (state.gate)
			await state.gate(name);
		return {
			role: 'assistant',
			content: { type: 'text', text: `from ${name}` },
			model: `model-${name}`,
		};
	});
	return c;
}

test('sampling: one at a time, the session whose call asks answers', {
	timeout: 60_000,
}, async (t) => {
	await withDemo(t, {}, async (rt) => {
		const a = await samplingClient(rt, 'A', {});
		const b = await samplingClient(rt, 'B', {});
		await waitGetStream(a);
		await waitGetStream(b);

		// A asks while B is connected and idle, then the other way.
		const ra = await a.client.callTool({
			name: 'demo__sample',
			arguments: { prompt: 'asked by A' },
		});
		assert.equal(text(ra), 'from A');
		assert.deepEqual(a.asked, ['asked by A']);
		assert.deepEqual(b.asked, []);
		const rb = await b.client.callTool({
			name: 'demo__sample',
			arguments: { prompt: 'asked by B' },
		});
		assert.equal(text(rb), 'from B');
		assert.deepEqual(a.asked, ['asked by A']);
		assert.deepEqual(b.asked, ['asked by B']);
		await rt.status(); // tracks every instance pid
		await sdkClose(a);
		await sdkClose(b);
	});
});

test('sampling: two sessions ask at once through one shared instance', {
	timeout: 60_000,
}, async (t) => {
	// The slow start holds both calls until the instance is ready, so
	// both are in flight upstream before either question comes back.
	const slow = ['--slow-start', '500'];
	await withDemo(t, {}, async (rt, file) => {
		// No answer is given until both questions were asked.
		let asked = 0;
		const both = latch();
		const state = {
			gate: async () => {
				if (++asked === 2)
					both.open();
				await Promise.race([
					both.wait(),
					new Promise((r) => setTimeout(r, 3000)),
				]);
			},
		};
		const a = await samplingClient(rt, 'A', state);
		const b = await samplingClient(rt, 'B', state);
		await waitGetStream(a);
		await waitGetStream(b);
		const [ca, cb] = await Promise.all([
			a.client.callTool({
				name: 'demo__sample',
				arguments: { prompt: 'A asks' },
			}),
			b.client.callTool({
				name: 'demo__sample',
				arguments: { prompt: 'B asks' },
			}),
		]);
		assert.equal(
			(await countLines(file)).filter((l) => l.startsWith('start '))
				.length,
			1,
			'one shared instance',
		);
		assert.deepEqual(
			{ a: a.asked, b: b.asked },
			{ a: ['A asks'], b: ['B asks'] },
			'each session is asked its own question',
		);
		assert.equal(text(ca), 'from A');
		assert.equal(text(cb), 'from B');
		await rt.status(); // tracks every instance pid
		await sdkClose(a);
		await sdkClose(b);
	}, slow);
});

test('elicitation: the client accepts and the server gets its answer', {
	timeout: 60_000,
}, async (t) => {
	await withDemo(t, {}, async (rt) => {
		const c = await sdkClient(rt, { capabilities: { elicitation: {} } });
		const asked = [];
		c.client.setRequestHandler(ElicitRequestSchema, async (req) => {
			asked.push(req.params);
			return { action: 'accept', content: { answer: 'yes' } };
		});
		const r = await c.client.callTool({
			name: 'demo__elicit',
			arguments: { message: 'Proceed?' },
		});
		assert.ok(!r.isError, JSON.stringify(r));
		assert.deepEqual(JSON.parse(text(r)), {
			action: 'accept',
			content: { answer: 'yes' },
		});
		assert.equal(asked.length, 1);
		assert.equal(asked[0].message, 'Proceed?');
		assert.deepEqual(asked[0].requestedSchema.required, ['answer']);
		await rt.status(); // tracks every instance pid
		await sdkClose(c);
	});
});

// Rewrites the runtime's config and sends SIGHUP.
async function reload(rt, servers) {
	await fsp.writeFile(
		rt.configPath,
		JSON.stringify({ mcpServers: servers }, null, 2),
	);
	rt.child.kill('SIGHUP');
}

const toolNames = (p, extra = []) =>
	[...DEMO_TOOLS, ...extra].map((n) => `${p}__${n}`);

// An SDK client that counts tools/list_changed, with its GET stream open.
// Its names() lists the tools, which also tells the runtime what it saw.
async function listChangedClient(rt) {
	const c = await sdkClient(rt);
	c.notes = [];
	c.client.setNotificationHandler(ToolListChangedNotificationSchema, (n) =>
		c.notes.push(n),
	);
	c.notesReach = (n, what) =>
		waitFor(() => c.notes.length >= n, 5000, what);
	c.names = async () =>
		(await c.client.listTools()).tools.map((x) => x.name);
	await waitGetStream(c);
	return c;
}

// The pid of the demo instance, tracked.
async function demoPid(rt, c) {
	const info = JSON.parse(
		text(await c.client.callTool({ name: 'demo__pid', arguments: {} })),
	);
	rt.track(info.pid);
	return info.pid;
}

// Every notification came while no request was open, so on the standing
// GET stream, which is still the first one.
function assertOneGet(c) {
	const gets = c.requests.filter((r) => r.method === 'GET');
	assert.equal(gets.length, 1, JSON.stringify(gets));
}

test('list_changed: a reload that removes a server reaches a connected client on its GET stream', {
	timeout: 60_000,
}, async (t) => {
	const { dir, file } = await countFile();
	const servers = {
		demo: demo(['--name', 'demo', '--count-file', file]),
		demo2: demo(['--name', 'demo2']),
	};
	try {
		await withRuntime(t, servers, async (rt) => {
			const c = await listChangedClient(rt);
			assert.deepEqual(await c.names(), [
				...toolNames('demo'),
				...toolNames('demo2'),
			]);
			const pid = await demoPid(rt, c);

			const { demo2, ...only } = servers;
			await reload(rt, only);
			await c.notesReach(1, 'list_changed after removing demo2');
			assert.deepEqual(await c.names(), toolNames('demo'));

			// The unchanged server kept running through the reload.
			assert.equal(await demoPid(rt, c), pid, 'demo was not restarted');
			const lines = await countLines(file);
			assert.equal(lines.filter((l) => l.startsWith('start ')).length, 1);
			assertOneGet(c);
			await rt.status(); // tracks every instance pid
			await sdkClose(c);
		});
	} finally {
		await fsp.rm(dir, { recursive: true, force: true });
	}
});

test('list_changed: a reload that adds a server reaches a connected client on its GET stream', {
	timeout: 60_000,
}, async (t) => {
	const servers = {
		demo: demo(['--name', 'demo']),
		demo2: demo(['--name', 'demo2']),
	};
	const { demo2, ...only } = servers;
	await withRuntime(t, servers, async (rt) => {
		const c = await listChangedClient(rt);
		// Both run once, so demo2's list is in the tool cache.
		assert.equal((await c.names()).length, 2 * DEMO_TOOLS.length);
		await reload(rt, only);
		await c.notesReach(1, 'list_changed after removing demo2');
		assert.deepEqual(await c.names(), toolNames('demo'));
		await waitFor(
			async () =>
				!(await rt.status()).servers.some((s) => s.name === 'demo2'),
			5000,
			'demo2 gone from status',
		);

		// Back again: its list is known, and the client's view changes.
		await reload(rt, servers);
		await c.notesReach(2, 'list_changed after adding demo2 back');
		assert.deepEqual(await c.names(), [
			...toolNames('demo'),
			...toolNames('demo2'),
		]);

		// A server that never ran: what the client sees will change too.
		await reload(rt, {
			...servers,
			demo3: demo(['--name', 'demo3', '--tools', '1']),
		});
		await c.notesReach(3, 'list_changed after adding demo3');
		assert.deepEqual(await c.names(), [
			...toolNames('demo'),
			...toolNames('demo2'),
			...toolNames('demo3', ['tool_1']),
		]);
		assertOneGet(c);
		await rt.status(); // tracks every instance pid
		await sdkClose(c);
	});
});

test('resumption: a stream closed on purpose resumes with Last-Event-ID and loses nothing', {
	timeout: 60_000,
}, async (t) => {
	await withDemo(t, { args: ['--sse-close-after', '300'] }, async (rt) => {
		const c = await sdkClient(rt, { events: true });
		// The instance runs before the call, so that the call ends
		// (about 1500 ms) while the resumed stream (from about 1300 ms,
		// after the stream's retry: time) is open.
		await c.client.listTools();
		const seen = [];
		const t0 = Date.now();
		const r = await c.client.callTool(sleepCall(1500), undefined, {
			onprogress: (p) => seen.push(p.progress),
		});
		const took = Date.now() - t0;
		assert.equal(text(r), 'slept 1500 ms');
		// The SDK came back with GET and Last-Event-ID (after the
		// stream's retry: time) and had the rest replayed.
		const resumed = c.requests.filter(
			(q) => q.method === 'GET' && q.lastEventId !== null,
		);
		assert.ok(resumed.length >= 1, JSON.stringify(c.requests));
		assert.equal(resumed[0].status, 200);
		assert.ok(took >= 1200, `took ${took} ms`);
		assert.equal(new Set(seen).size, seen.length, `duplicates: ${seen}`);
		for (let i = 1; i < seen.length; i++)
			assert.ok(seen[i] > seen[i - 1], `not increasing: ${seen}`);
		// Nothing lost: the call's events, numbered by the session
		// ("S-N"), run without a gap from the POST's stream into its
		// resumptions, and the client saw every progress among them.
		// (A gap in the progress values could be the server's own stall
		// on a busy machine; a gap in the numbers cannot.)
		const post = c.requests.find(
			(q) => q.method === 'POST' && q.events?.some((e) => e.data.includes('notifications/progress')),
		);
		assert.ok(post, JSON.stringify(c.requests));
		const taps = [post, ...resumed];
		await within(Promise.all(taps.map((q) => q.read)), 5000, 'the streams read to their end');
		const events = taps.flatMap((q) => q.events).filter((e) => e.id);
		const stream = events[0].id.split('-')[0];
		const numbers = events
			.filter((e) => e.id.split('-')[0] === stream)
			.map((e) => Number(e.id.split('-')[1]));
		for (let i = 1; i < numbers.length; i++)
			assert.equal(numbers[i], numbers[i - 1] + 1, `event numbers ${numbers}`);
		assert.ok(post.events.length >= 1 && resumed[0].events.length >= 1, 'events on both sides of the close');
		const progress = events.filter((e) => e.data.includes('notifications/progress'));
		assert.equal(seen.length, progress.length, `progress seen ${seen}, sent ${progress.length}`);
		assert.ok(seen.length >= 3, `progress: ${JSON.stringify(seen)}`);
		// A stream the server ends on purpose is no error to the client.
		assert.deepEqual(c.errors.map((e) => e.message), []);
		await rt.status(); // tracks every instance pid
		await sdkClose(c);
	});
});

test('resumption: a stream resumed after its call ended gets the whole rest replayed', {
	timeout: 60_000,
}, async (t) => {
	const opts = { args: ['--sse-close-after', '300'] };
	await withDemo(t, opts, async (rt, file) => {
		const c = await sdkClient(rt);
		const seen = [];
		// The call ends at about 500 ms; the SDK comes back after the
		// stream's retry: time (1000 ms), when only the replay is left.
		const r = await c.client.callTool(sleepCall(500), undefined, {
			onprogress: (p) => seen.push(p.progress),
		});
		assert.equal(text(r), 'slept 500 ms');
		const resumed = c.requests.filter(
			(q) => q.method === 'GET' && q.lastEventId !== null,
		);
		assert.equal(resumed.length, 1, JSON.stringify(c.requests));
		assert.equal(resumed[0].status, 200);
		assert.ok(seen.length >= 3, `progress: ${seen}`);
		assert.equal(new Set(seen).size, seen.length, `duplicates: ${seen}`);
		for (let i = 1; i < seen.length; i++)
			assert.ok(seen[i] > seen[i - 1], `not increasing: ${seen}`);
		assert.equal(
			(await countLines(file)).filter((l) => l === 'call sleep').length,
			1,
			'run once',
		);
		await rt.status(); // tracks every instance pid
		await sdkClose(c);
	});
});

test('versions: 2024-11-05 and 2025-03-26 clients; a 2025-03-26 batch', {
	timeout: 60_000,
}, async (t) => {
	await withDemo(t, {}, async (rt) => {
		const old = new OldClient(rt.url, '2024-11-05');
		const r1 = await old.initialize();
		assert.equal(r1.protocolVersion, '2024-11-05');
		assert.ok(r1.capabilities.tools, JSON.stringify(r1));
		// No MCP-Protocol-Version header: the runtime must assume an
		// old version, not refuse.
		const res = await old.post({
			jsonrpc: '2.0',
			id: 7,
			method: 'tools/list',
			params: {},
		});
		assert.equal(res.status, 200);
		const [tl] = await readMessages(res);
		assert.equal(tl.id, 7);
		assert.equal(tl.result.tools.length, DEMO_TOOLS.length);
		await rt.status(); // tracks every instance pid
		await old.close();

		const mid = new OldClient(rt.url, '2025-03-26');
		const r2 = await mid.initialize();
		assert.equal(r2.protocolVersion, '2025-03-26');
		const batch = await mid.post([
			{ jsonrpc: '2.0', id: 'p', method: 'ping' },
			{ jsonrpc: '2.0', id: 'l', method: 'tools/list', params: {} },
		]);
		assert.equal(batch.status, 200);
		assert.match(batch.headers.get('content-type'), /^application\/json/);
		const arr = JSON.parse(await batch.text());
		assert.ok(Array.isArray(arr), JSON.stringify(arr));
		assert.equal(arr.length, 2, JSON.stringify(arr));
		const byId = Object.fromEntries(arr.map((m) => [m.id, m]));
		assert.deepEqual(byId.p.result, {});
		assert.deepEqual(
			byId.l.result.tools.map((x) => x.name),
			DEMO_TOOLS.map((n) => `demo__${n}`),
		);
		await rt.status(); // tracks every instance pid
		await mid.close();

		// An unknown version gets the runtime's own latest; batches are
		// no part of it.
		const odd = new OldClient(rt.url, '1999-01-01');
		const r3 = await odd.initialize();
		assert.equal(r3.protocolVersion, '2025-11-25');
		await odd.close();
		const cur = await connect(rt);
		const refused = await cur.post([
			{ jsonrpc: '2.0', id: 1, method: 'ping' },
			{ jsonrpc: '2.0', id: 2, method: 'ping' },
		]);
		assert.equal(refused.status, 400);
		await refused.arrayBuffer();
		await cur.close();
	});
});

test('pagination: cursors stay valid across servers, every tool once in config order', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(
		t,
		{
			a: demo(['--name', 'a', '--tools', '5']),
			// Pages of its own upstream too.
			b: demo(['--name', 'b', '--tools', '5', '--page-size', '3']),
		},
		{ args: ['--page-size', '4'] },
		async (rt) => {
			const c = await connect(rt);
			const extra = [1, 2, 3, 4, 5].map((i) => `tool_${i}`);
			const expected = [
				...[...DEMO_TOOLS, ...extra].map((n) => `a__${n}`),
				...[...DEMO_TOOLS, ...extra].map((n) => `b__${n}`),
			];
			const pages = [];
			const cursors = [];
			let cursor;
			for (let i = 0; i < 100; i++) {
				const r = await c.result(
					'tools/list',
					cursor ? { cursor } : {},
				);
				pages.push(r.tools.map((x) => x.name));
				cursor = r.nextCursor;
				if (!cursor)
					break;
				assert.equal(typeof cursor, 'string');
				cursors.push(cursor);
			}
			for (const p of pages)
				assert.ok(p.length >= 1 && p.length <= 4, JSON.stringify(p));
			assert.deepEqual(pages.flat(), expected);
			assert.equal(pages.length, Math.ceil(expected.length / 4));
			// One page holds the end of a and the start of b.
			assert.ok(
				pages.some(
					(p) =>
						p.some((n) => n.startsWith('a__')) &&
						p.some((n) => n.startsWith('b__')),
				),
				'a page across the two servers',
			);

			// A cursor can be used again, in any order, and gives the same
			// page.
			for (const k of [cursors.length - 1, 3, 0]) {
				const r = await c.result('tools/list', { cursor: cursors[k] });
				assert.deepEqual(
					r.tools.map((x) => x.name),
					pages[k + 1],
					`cursor ${k}`,
				);
			}
			// A cursor of one session is good in another.
			const other = await connect(rt);
			const r = await other.result('tools/list', { cursor: cursors[4] });
			assert.deepEqual(r.tools.map((x) => x.name), pages[5]);
			await other.close();

			const bad = await c.request('tools/list', { cursor: 'nonsense' });
			assert.equal(bad.error?.code, -32602, JSON.stringify(bad));
			await rt.status(); // tracks every instance pid
			await c.close();
		},
	);
});
