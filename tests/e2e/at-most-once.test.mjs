// At most once over HTTP, on real processes: the demo fixture served over
// HTTP by the test behind a recording proxy. A tool call whose kept-alive
// connection dies after the server did the work runs once (libcurl would
// replay it on a fresh connection), and a call whose POST met the 404 of
// an expired session (it never ran) goes once on the new session and is
// answered.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';

import { connect, scratchDir, waitFor, withRuntime } from './lib.mjs';
import { callCount, timed } from './failures-lib.mjs';
import { FaultProxy, startFixture } from './http-faults-lib.mjs';

function callReq(c, name, args = {}) {
	return c.request('tools/call', { name, arguments: args });
}

test('a call whose kept-alive connection dies after the work runs once and is answered "may or may not"', {
	timeout: 30_000,
}, async (t) => {
	const dir = await scratchDir(t);
	const cf = path.join(dir, 'count');
	const fx = await startFixture(t, ['--count-file', cf]);
	const px = await FaultProxy.start(t, fx.url);
	await withRuntime(t, { x: { url: px.url, type: 'http', scope: 'app' } }, async (rt) => {
		const c = await connect(rt);
		await c.listAll();
		const first = await callReq(c, 'x__echo', { text: 'one' });
		assert.ok(first.result, JSON.stringify(first));
		assert.equal(callCount(cf, 'echo'), 1);
		px.dieAfterWork('tools/call');
		const lost = await callReq(c, 'x__echo', { text: 'two' });
		assert.ok(px.requests.some((r) => r.died), 'the connection died after the work');
		assert.equal(callCount(cf, 'echo'), 2, 'the call that died ran twice');
		assert.ok(lost.error, `the call: ${JSON.stringify(lost)}`);
		assert.match(lost.error.message, /may or may not have taken effect/);
		// Give a replay every chance to arrive before counting.
		const after = await callReq(c, 'x__echo', { text: 'three' });
		assert.ok(after.result, JSON.stringify(after));
		const calls = px.count((r) => r.rpc === 'tools/call');
		t.diagnostic(`runs of the call that died: ${callCount(cf, 'echo') - 2}; tools/call POSTs seen: ${calls}`);
		assert.equal(callCount(cf, 'echo'), 3, 'the call that died ran twice');
		assert.equal(calls, 3);
		await c.close();
	});
});

test('a call whose POST met the 404 of an expired session ran nowhere: sent once on the new session and answered', {
	timeout: 30_000,
}, async (t) => {
	const dir = await scratchDir(t);
	const cf = path.join(dir, 'count');
	const fx = await startFixture(t, ['--count-file', cf]);
	const px = await FaultProxy.start(t, fx.url);
	await withRuntime(t, { x: { url: px.url, type: 'http', scope: 'app' } }, async (rt) => {
		const c = await connect(rt);
		await c.listAll();
		assert.equal(px.initializes().length, 1);
		// The server restarts: every session it had is gone.
		const at = px.expire();
		const r = await timed(callReq(c, 'x__echo', { text: 'after the restart' }));
		assert.ok(r.value.result, `the call: ${JSON.stringify(r.value)}`);
		assert.equal(r.value.result.content[0].text, 'after the restart');
		assert.equal(callCount(cf, 'echo'), 1, 'ran once');
		const posts = px.requests.filter((q) => q.rpc === 'tools/call');
		assert.deepEqual(posts.map((q) => q.status), [404, 200], 'refused once, then sent once');
		const answeredMs = posts[1].doneAt - at;
		t.diagnostic(`answered ${answeredMs.toFixed(0)} ms after the server restart (${r.ms.toFixed(0)} ms for the client)`);
		assert.ok(answeredMs < 3000, `answered ${answeredMs} ms after the restart`);
		await waitFor(() => px.initializes().length === 2, 5000, 'one re-initialize');
		await c.close();
	});
});
