// The endpoint's answer streams over time (review 2026-12-01, verification
// of main): a quiet SSE stream gets a heartbeat comment about once a
// second (SPEC Relay), and GET streams fed junk until the runtime stopped
// reading them are closed once their client is gone (the get_flood repro:
// 8 sockets used to stay ESTABLISHED forever).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';

import { connect, demo, dial, waitFor, withRuntime } from './lib.mjs';

const SERVERS = { demo: demo() };

function fdCount(pid) {
	return fs.readdirSync(`/proc/${pid}/fd`).length;
}

// Opens the session's GET stream on a raw socket; resolves once the
// answer's head has come.
async function openGet(port, sid) {
	const s = await dial(port);
	s.on('error', () => {});
	let text = '';
	const head = new Promise((resolve, reject) => {
		s.on('data', (d) => {
			text += d.toString('latin1');
			if (text.includes('\r\n\r\n'))
				resolve();
		});
		s.on('close', () => reject(new Error(`closed: ${text}`)));
	});
	s.write(
		`GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
			`Accept: text/event-stream\r\nMcp-Session-Id: ${sid}\r\n\r\n`,
	);
	await head;
	return { s, text: () => text };
}

test('a quiet GET stream gets an SSE comment about once a second', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, SERVERS, async (rt) => {
		const c = await connect(rt);
		const res = await fetch(rt.url, {
			headers: {
				accept: 'text/event-stream',
				'mcp-session-id': c.sid,
				'mcp-protocol-version': '2025-11-25',
			},
		});
		assert.equal(res.status, 200);
		const reader = res.body.getReader();
		const dec = new TextDecoder();
		let text = '';
		const seen = [];
		const t0 = Date.now();
		while (seen.length < 5 && Date.now() - t0 < 12_000) {
			const { value, done } = await reader.read();
			if (done)
				break;
			text += dec.decode(value);
			const n = text.split('\n').filter((l) => l.startsWith(': ')).length;
			while (seen.length < n)
				seen.push(Date.now());
		}
		await reader.cancel();
		assert.equal(seen.length, 5, `comments seen: ${JSON.stringify(text)}`);
		// The mean of four gaps: one read that a busy machine delays
		// moves it by a quarter of the delay, where a single gap could
		// be halved or doubled.
		const gap = (seen[4] - seen[0]) / 4;
		console.log(`heartbeat gaps: ${seen.slice(1).map((x, i) => x - seen[i]).join(', ')} ms`);
		assert.ok(gap > 500 && gap < 2000, `mean heartbeat gap ${gap} ms`);
		await c.close();
	});
});

test('get_flood: GET streams fed junk are closed once their client is gone', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, SERVERS, async (rt) => {
		const pid = rt.child.pid;
		const N = 8;
		const clients = [];
		for (let i = 0; i < N; i++)
			clients.push(await connect(rt));
		const before = fdCount(pid);
		const streams = [];
		for (const c of clients)
			streams.push(await openGet(rt.port, c.sid));
		assert.ok(fdCount(pid) >= before + N);
		// Junk until the runtime stops reading: writes back up in Node.
		const junk = Buffer.alloc(1 << 20, 'J');
		for (const { s } of streams)
			for (let i = 0; i < 16; i++)
				s.write(junk);
		await waitFor(
			() => streams.every(({ s }) => s.writableLength > 0),
			10_000,
			'the runtime to stop reading the flooded streams',
		);
		for (const { s } of streams)
			s.destroy();
		await waitFor(
			() => fdCount(pid) <= before,
			8000,
			`the runtime's fds back to ${before} (now ${fdCount(pid)})`,
		);
		for (const c of clients)
			await c.close();
	});
});
