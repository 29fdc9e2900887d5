// Requests in flight between an instance and its server, on real
// processes: a re-sent request keeps a handle a cancel can find (R2), a
// request that kills its server is re-sent once and backs off (R3),
// toolTimeout is enforced (R11), answers over the line limit and errors
// with id null still answer their call (x3, finding 5), and a server that
// fails shows why (P1, x4).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

import {
	PROTOCOL,
	RawClient,
	connect,
	demo,
	readMessages,
	scratchDir,
	sseMessages,
	waitFor,
	withRuntime,
} from './lib.mjs';
import { sleep, startPids } from './failures-lib.mjs';

const FIXTURE = path.join(
	path.dirname(fileURLToPath(import.meta.url)),
	'outbox-fixture.mjs',
);

function fixture(args = [], extra = {}) {
	return {
		command: process.execPath,
		args: [FIXTURE, ...args],
		scope: 'app',
		...extra,
	};
}

const starts = (file) =>
	fs.existsSync(file)
		? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length
		: 0;

const noSanitizer = (rt) =>
	assert.doesNotMatch(rt.stderr(), /AddressSanitizer|runtime error:/);

test('a cancel after the re-send settles the request once (R2)', {
	timeout: 60_000,
}, async (t) => {
	const home = await scratchDir(t, 'mcpvisor-e2e-uaf-');
	const marker = path.join(home, 'died');
	await withRuntime(
		t,
		{ fx: fixture(['--die-on-read-once', '--late', '800'], { env: { FX_MARKER: marker } }) },
		async (rt) => {
			const c = await connect(rt);
			// Not awaited: its answer is the late one, cancelled.
			const read = c.post({
				jsonrpc: '2.0',
				id: 5,
				method: 'resources/read',
				params: { uri: 'fx://a' },
			});
			read.catch(() => {});
			await waitFor(
				() => /sending resources\/read again/.test(rt.stderr()),
				8000,
				'the re-send',
			);
			const cancel = await c.post({
				jsonrpc: '2.0',
				method: 'notifications/cancelled',
				params: { requestId: 5, reason: 'user' },
			});
			assert.equal(cancel.status, 202);
			await cancel.arrayBuffer();
			// The late answer comes, and reaches nothing.
			await sleep(1200);
			noSanitizer(rt);
			// The session ends too: nothing is settled twice.
			await c.close();
			const c2 = await connect(rt);
			const r = await c2.result('resources/read', { uri: 'fx://a' });
			assert.equal(r.contents[0].text, 'late');
			await c2.close();
			noSanitizer(rt);
		},
	);
});

test('a request that kills its server is re-sent once, then fails and backs off (R3)', {
	timeout: 60_000,
}, async (t) => {
	const home = await scratchDir(t, 'mcpvisor-e2e-poison-');
	const count = path.join(home, 'starts');
	await withRuntime(
		t,
		{ fx: fixture(['--die-on-read'], { env: { FX_COUNT: count } }) },
		async (rt) => {
			const c = await connect(rt);
			await c.result('tools/list');
			const r = await c.request('resources/read', { uri: 'fx://a' });
			assert.ok(r.error, JSON.stringify(r));
			assert.match(r.error.message, /second time/);
			// The first process, one restart for the one re-send.
			assert.equal(starts(count), 2, fs.readFileSync(count, 'utf8'));
			// Within the backoff (1 s, doubling on each failure) a
			// request fails at once, saying so, and starts nothing. One
			// that a busy machine sent after the backoff passed starts
			// the server, which fails again: the next is then within a
			// longer backoff.
			let again;
			let before;
			for (let i = 0; i < 4; i++) {
				before = starts(count);
				again = await c.request('resources/read', { uri: 'fx://a' });
				assert.ok(again.error, JSON.stringify(again));
				if (/next attempt can run in/.test(again.error.message))
					break;
			}
			assert.match(again.error.message, /failed to start .*next attempt can run in/);
			assert.equal(starts(count), before, 'a request within the backoff started the server');
			// Nothing respawns in the background: no loop.
			await sleep(500);
			assert.equal(starts(count), before, fs.readFileSync(count, 'utf8'));
			const st = await rt.status();
			const inst = st.servers.find((s) => s.name === 'fx').instances[0];
			assert.equal(inst.state, 'failed');
			await c.close();
			noSanitizer(rt);
		},
	);
});

test('toolTimeout fails the call, names it, and cancels it on the server (R11)', {
	timeout: 60_000,
}, async (t) => {
	const home = await scratchDir(t, 'mcpvisor-e2e-tt-');
	const count = path.join(home, 'count');
	await withRuntime(
		t,
		{ demo: demo(['--count-file', count], { toolTimeout: '1s' }) },
		async (rt) => {
			const c = await connect(rt);
			const t0 = Date.now();
			const r = await c.request('tools/call', {
				name: 'demo__sleep',
				arguments: { ms: 30000 },
			});
			const took = Date.now() - t0;
			assert.ok(r.error, JSON.stringify(r));
			assert.equal(r.error.code, -32001);
			assert.match(r.error.message, /"demo"/);
			assert.match(r.error.message, /"sleep"/);
			assert.match(r.error.message, /toolTimeout of 1\.000 s/);
			assert.ok(took >= 900 && took < 5000, `took ${took} ms`);
			await waitFor(
				() => fs.readFileSync(count, 'utf8').includes('cancelled sleep'),
				5000,
				'the server told of the cancel',
			);
			// The instance goes on serving.
			const ok = await c.call('demo__echo', { text: 'hi' });
			assert.match(JSON.stringify(ok), /hi/);
			await c.close();
		},
	);
});

test('an answer over 16 MiB and an error with id null answer their calls (x3, 5)', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { fx: fixture() }, async (rt) => {
		const c = await connect(rt);
		for (const idFirst of [false, true]) {
			const r = await c.request('tools/call', {
				name: 'fx__big',
				arguments: { idFirst },
			});
			assert.ok(r.error, 'an error, not a wait');
			assert.match(r.error.message, /over the runtime's 16 MiB limit/);
		}
		const g = await c.request('tools/call', {
			name: 'fx__garble',
			arguments: {},
		});
		assert.ok(g.error, JSON.stringify(g));
		assert.equal(g.error.code, -32700);
		assert.match(g.error.message, /Parse error/);
		const ok = await c.call('fx__echo', { a: 1 });
		assert.match(JSON.stringify(ok), /"a/);
		const st = await rt.status();
		const inst = st.servers.find((s) => s.name === 'fx').instances[0];
		assert.equal(inst.inflight ?? 0, 0);
		await c.close();
	});
});

test('a failed start shows its stderr; stderr is logged with secrets masked (P1)', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(
		t,
		{
			crashy: fixture(
				['--say', 'boom: missing API_KEY (token=s3cr3t-XYZ)', '--exit-at-start', '7'],
				{ env: { TOKEN: 's3cr3t-XYZ' } },
			),
		},
		async (rt) => {
			const c = await connect(rt);
			const r = await c.request('tools/call', {
				name: 'crashy__echo',
				arguments: {},
			});
			assert.ok(r.error, JSON.stringify(r));
			assert.match(r.error.message, /exited with code 7/);
			assert.match(r.error.message, /boom: missing API_KEY/);
			assert.doesNotMatch(JSON.stringify(r), /s3cr3t/);
			await waitFor(
				() => /server crashy: boom: missing API_KEY \(token=\*\*\*\)/.test(rt.stderr()),
				5000,
				'the stderr line in the log',
			);
			assert.doesNotMatch(rt.stderr(), /s3cr3t/);
			await c.close();
			// Its instance is gone with the session: status still
			// says why, and -v what it printed.
			const st = await rt.cli(['status']);
			assert.match(st.stdout, /crashy .*last failed: exited with code 7/);
			const v = await rt.cli(['status', '-v']);
			assert.match(v.stdout, /boom: missing API_KEY \(token=\*\*\*\)/);
			assert.doesNotMatch(v.stdout, /s3cr3t/);
		},
	);
});

test('restart --force during a call is not a failure (x4)', {
	timeout: 60_000,
}, async (t) => {
	const home = await scratchDir(t, 'mcpvisor-e2e-x4-');
	const count = path.join(home, 'count');
	await withRuntime(t, { demo: demo(['--count-file', count]) }, async (rt) => {
		const call = rt.cli(['call', 'demo__sleep', '{"ms":4000}']);
		// At the server (a call still waiting for the start would
		// simply run on the restarted process).
		await waitFor(
			() => fs.existsSync(count) && fs.readFileSync(count, 'utf8').includes('call sleep'),
			8000,
			'the sleep call at the server',
		);
		const r = await rt.cli(['restart', 'demo', '--force']);
		assert.equal(r.code, 0, r.stderr);
		const done = await call;
		assert.notEqual(done.code, 0, `the call was cut short: ${done.stdout} ${done.stderr}`);
		await sleep(300);
		assert.doesNotMatch(rt.stderr(), /restart failed/);
	});
});

// The messages of an SSE response as they come: next(pred) resolves with
// the first that matches, reading no further than it.
function sseReader(res) {
	const reader = res.body.getReader();
	const dec = new TextDecoder();
	let buf = '';
	const queue = [];
	return {
		async next(pred, ms = 8000) {
			const end = Date.now() + ms;
			for (;;) {
				const i = queue.findIndex(pred);
				if (i >= 0)
					return queue.splice(i, 1)[0];
				if (Date.now() > end)
					throw new Error('no such message on the stream');
				const { value, done } = await reader.read();
				if (done)
					throw new Error('the stream ended');
				buf += dec.decode(value, { stream: true });
				const blocks = buf.split(/\r?\n\r?\n/);
				buf = blocks.pop();
				queue.push(...sseMessages(blocks.join('\n\n') + '\n\n'));
			}
		},
	};
}

test('an answer to a server request never reaches the process that replaced the asker (R10)', {
	timeout: 60_000,
}, async (t) => {
	const home = await scratchDir(t, 'mcpvisor-e2e-r10-');
	const count = path.join(home, 'count');
	await withRuntime(t, { demo: demo(['--count-file', count]) }, async (rt) => {
		const c = new RawClient(rt.url);
		const init = await c.post({
			jsonrpc: '2.0',
			id: 0,
			method: 'initialize',
			params: {
				protocolVersion: PROTOCOL,
				capabilities: { sampling: {} },
				clientInfo: { name: 'r10', version: '1' },
			},
		});
		c.sid = init.headers.get('mcp-session-id');
		c.protocol = (await readMessages(init))[0].result.protocolVersion;
		await (await c.post({ jsonrpc: '2.0', method: 'notifications/initialized' })).arrayBuffer();
		const isAsk = (m) => m.method === 'sampling/createMessage';
		const sample = async (id, prompt) => {
			const res = await c.post({
				jsonrpc: '2.0',
				id,
				method: 'tools/call',
				params: { name: 'demo__sample', arguments: { prompt } },
			});
			const s = sseReader(res);
			return { s, ask: await s.next(isAsk) };
		};
		const first = await sample(1, 'first');
		// The server that asked dies before the client answers.
		const [pid1] = startPids(count);
		process.kill(pid1, 'SIGKILL');
		await first.s.next((m) => m.id === 1);
		const second = await sample(2, 'second');
		assert.equal(startPids(count).length, 2);
		const answer = (ask, text) =>
			c.post({
				jsonrpc: '2.0',
				id: ask.id,
				result: {
					role: 'assistant',
					content: { type: 'text', text },
					model: 'm',
				},
			});
		// The late answer to the first process's request: its id may
		// mean the new process's own request.
		await (await answer(first.ask, 'stale')).arrayBuffer();
		await (await answer(second.ask, 'fresh')).arrayBuffer();
		const r = await second.s.next((m) => m.id === 2);
		assert.ok(r.result, JSON.stringify(r));
		assert.equal(r.result.content[0].text, 'fresh');
		assert.match(rt.stderr(), /answer to the server's request not sent: the server that asked is gone/);
		for (const p of startPids(count))
			rt.track(p);
		await c.close();
	});
});
