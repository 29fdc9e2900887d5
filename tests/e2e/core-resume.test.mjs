// Nothing is lost on resume: a client that comes back with Last-Event-ID
// after its answer went out of reach (over the 8 MiB a connection may hold
// unread, then over the replay ring; or set aside and then pushed out of
// the ring) is told so with an error answer for that request, and the
// stream ends, instead of leaving the client waiting for ever.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
	connect,
	demo,
	dial,
	rawPost,
	readMessages,
	waitFor,
	withRuntime,
} from './lib.mjs';

// A tools/call of demo__echo with 4 KiB of text.
function echo4k(id) {
	return {
		jsonrpc: '2.0',
		id,
		method: 'tools/call',
		params: { name: 'demo__echo', arguments: { text: 'a'.repeat(4096) } },
	};
}

// POSTs body on a connection of its own and stops reading after the
// priming event; once the runtime says it set the stream aside, drops the
// connection. The priming event's id.
async function postAndStopReading(rt, c, body, ms) {
	const s = await dial(rt.port);
	s.on('error', () => {});
	let head = '';
	const prime = new Promise((resolve) => {
		const onData = (d) => {
			head += d.toString('latin1');
			const m = head.match(/\nid: ?(\S+)/);
			if (m) {
				// The client stops reading here.
				s.pause();
				s.off('data', onData);
				resolve(m[1]);
			}
		};
		s.on('data', onData);
	});
	s.write(rawPost(c.sid, body, `Mcp-Protocol-Version: ${c.protocol}\r\n`));
	const lastEventId = await prime;
	await waitFor(
		() => /client reads nothing/.test(rt.stderr()),
		ms,
		'the runtime set the stream aside',
	);
	s.destroy();
	return lastEventId;
}

// GET with Last-Event-ID; the messages of the resumed stream, which must
// end (a stream that never ends is the hang this guards against).
async function resume(c, lastEventId, ms = 5000) {
	const res = await fetch(c.url, {
		headers: {
			accept: 'text/event-stream',
			'mcp-session-id': c.sid,
			'mcp-protocol-version': c.protocol,
			'last-event-id': lastEventId,
		},
		signal: AbortSignal.timeout(ms),
	});
	assert.equal(res.status, 200);
	try {
		return await readMessages(res);
	} catch (e) {
		throw new Error(`the resumed stream did not end: ${e.message}`);
	}
}

function assertDropped(msgs, id) {
	const m = msgs.find((x) => x.id === id);
	assert.ok(m?.error, `no error answer for ${id}: ${JSON.stringify(msgs).slice(0, 300)}`);
	assert.match(m.error.message, /did not read it in time/);
	assert.match(m.error.message, /may or may not have taken effect/);
	assert.equal(m.error.data?.retrySafe, false);
}

test('a call whose answer overflows a client that stopped reading: the resume gets an error answer, not a hang', {
	timeout: 60_000,
}, async (t) => {
	// echo answers 2400 times its text: 4 KiB in, about 9.4 MiB out,
	// over the 8 MiB a connection may hold and over the 512 KiB ring.
	const servers = { demo: demo(['--echo-repeat', '2400']) };
	await withRuntime(t, servers, async (rt) => {
		const c = await connect(rt);
		await c.call('demo__echo', { text: 'warm' }); // the instance runs
		const lastEventId = await postAndStopReading(rt, c, echo4k('big-1'), 10_000);
		const msgs = await resume(c, lastEventId);
		assertDropped(msgs, 'big-1');
		// The session goes on.
		const r = await c.call('demo__echo', { text: 'k' });
		assert.equal(r.content[0].text.length, 2400);
	});
});

test('an answer that came while its stream was set aside, then left the ring: the resume gets an error answer', {
	timeout: 60_000,
}, async (t) => {
	const servers = { demo: demo() };
	const opts = { args: ['--sse-close-after', '1000'] };
	await withRuntime(t, servers, opts, async (rt) => {
		const c = await connect(rt);
		await c.call('demo__echo', { text: 'warm' });
		// Closed on purpose at 1000 ms: the call goes on, set aside.
		const res = await c.post({
			jsonrpc: '2.0',
			id: 's-1',
			method: 'tools/call',
			params: { name: 'demo__sleep', arguments: { ms: 1300 } },
		});
		const text = await res.text();
		const lastEventId = text.match(/id: ?(\S+)/)[1];
		assert.ok(!text.includes('"s-1"'), 'not answered before the close');
		// Its answer comes while no connection holds the stream.
		await waitFor(
			async () => {
				const st = await rt.status();
				const srv = st.servers.find((x) => x.name === 'demo');
				return srv.instances.every((i) => (i.inflight ?? 0) === 0);
			},
			10_000,
			'the set-aside call to be answered',
		);
		// More than the 512 KiB ring, on other streams.
		for (let i = 0; i < 2; i++)
			await c.call('demo__echo', { text: 'p'.repeat(300_000) });
		const msgs = await resume(c, lastEventId);
		assertDropped(msgs, 's-1');
	});
});

// A session of protocol 2025-03-26, the one that has batches.
async function connectBatching(rt) {
	const c = await connect(rt, { protocol: '2025-03-26', name: 'core-resume' });
	assert.equal(c.protocol, '2025-03-26');
	return c;
}

test('answers that piled up past 8 MiB and out of the ring: the resume answers every request, then ends', {
	timeout: 80_000,
}, async (t) => {
	// 60 answers of 300 KiB each (18 MiB): more than the connection may
	// hold unread plus what the kernel buffers, and each fits the ring,
	// which keeps only the newest of them.
	const servers = { demo: demo(['--echo-repeat', '75']) };
	await withRuntime(t, servers, async (rt) => {
		const c = await connectBatching(rt);
		await c.call('demo__echo', { text: 'w' });
		const ids = Array.from({ length: 60 }, (_, i) => `b-${i}`);
		const lastEventId = await postAndStopReading(rt, c, ids.map(echo4k), 15_000);
		const msgs = await resume(c, lastEventId, 15_000);
		const answers = msgs.filter((m) => m.id !== undefined);
		assert.deepEqual(
			answers.map((m) => m.id).sort(),
			[...ids].sort(),
			'one answer per request',
		);
		const dropped = answers.filter((m) => m.error);
		console.log(`resume: ${dropped.length} of ${ids.length} answers dropped, the rest replayed or live`);
		assert.ok(dropped.length > 0, 'some answers left the ring');
		for (const m of dropped)
			assertDropped([m], m.id);
		for (const m of answers.filter((x) => x.result))
			assert.equal(m.result.content[0].text.length, 4096 * 75);
	});
});
