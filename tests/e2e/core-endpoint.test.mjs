// The endpoint's connection handling under abuse (review 2026-12-01): resets
// after Connection: close, clients that never read, input floods, held
// connections, two readings of one request, stream takeover, sampling in a
// batch, and events over the replay bound. Each test runs a runtime of its
// own and checks that it stays up, bounded, and answers `status`.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { test } from 'node:test';

import {
	MCPVISOR,
	connect,
	demo,
	dial,
	rawPost,
	readMessages,
	sseMessages,
	waitFor,
	withRuntime,
} from './lib.mjs';

const SERVERS = { demo: demo() };
// Memory figures need ASan to give freed memory back: its quarantine
// would otherwise count every freed buffer as resident.
const LEAN = {
	env: {
		ASAN_OPTIONS:
			'detect_leaks=1:abort_on_error=0:exitcode=23:' +
			'quarantine_size_mb=1:allocator_release_to_os_interval_ms=0',
	},
};

// Resident memory of pid in MB.
function rssMB(pid) {
	const m = fs
		.readFileSync(`/proc/${pid}/status`, 'utf8')
		.match(/VmRSS:\s+(\d+) kB/);
	return Number(m[1]) / 1024;
}

// Sends bytes (each string a separate write, waiting a tick in between) on
// a fresh connection and resolves with the status of the first answer.
async function statusOf(port, pieces) {
	const s = await dial(port);
	let text = '';
	const got = new Promise((resolve) => {
		s.on('data', (d) => {
			text += d.toString('latin1');
			const m = text.match(/^HTTP\/1\.1 (\d{3})/);
			if (m)
				resolve(Number(m[1]));
		});
		s.on('close', () => resolve(null));
		s.on('error', () => {});
	});
	for (const p of pieces) {
		s.write(Buffer.from(p, 'latin1'));
		await new Promise((r) => setImmediate(r));
	}
	const status = await got;
	s.destroy();
	return status;
}

// The runtime answers `status` over its Unix socket, within bounds.
async function statusWorks(rt) {
	const r = await rt.cli(['status', '--json'], { timeout: 8000 });
	assert.equal(r.code, 0, `status failed: ${r.stderr}`);
}

test('R1: resets after Connection: close (and a CLI killed while the runtime was stopped) do not crash it', {
	timeout: 60_000,
}, async (t) => {
	// Stopped below: in a process group of its own (Runtime.start).
	await withRuntime(t, SERVERS, { ownGroup: true }, async (rt) => {
		const init = JSON.stringify({
			jsonrpc: '2.0',
			id: 1,
			method: 'initialize',
			params: {
				protocolVersion: '2025-11-25',
				capabilities: {},
				clientInfo: { name: 'rst', version: '1' },
			},
		});
		const req = rawPost(null, init, 'Connection: close\r\n');
		for (let i = 0; i < 50; i++) {
			const s = await dial(rt.port);
			s.on('error', () => {});
			await new Promise((r) => s.write(req, r));
			s.resetAndDestroy();
		}
		// R9's aftermath: a CLI that gave up on a stopped runtime.
		process.kill(rt.child.pid, 'SIGSTOP');
		const cli = spawn(MCPVISOR, ['status', '--home', rt.home], {
			stdio: 'ignore',
		});
		await new Promise((r) => setTimeout(r, 300));
		cli.kill('SIGKILL');
		await new Promise((r) => cli.once('exit', r));
		process.kill(rt.child.pid, 'SIGCONT');
		const c = await connect(rt);
		const r = await c.call('demo__echo', { text: 'still here' });
		assert.equal(r.content[0].text, 'still here');
		await statusWorks(rt);
		assert.equal(rt.exited, null, 'the runtime is alive');
	});
});

test('finding 15: a second Host or Origin, a Host with more than a port, a bare CR and bad chunk framing are refused, however split', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, SERVERS, async (rt) => {
		const p = rt.port;
		const get = 'GET /nothing HTTP/1.1\r\n';
		assert.equal(await statusOf(p, [`${get}Host: localhost\r\n\r\n`]), 404);
		assert.equal(
			await statusOf(p, [
				`${get}Host: localhost\r\nHost: evil.example\r\n\r\n`,
			]),
			400,
			'two Hosts',
		);
		assert.equal(
			await statusOf(p, [
				`${get}Origin: http://localhost\r\nOrigin: http://evil.example\r\n\r\n`,
			]),
			400,
			'two Origins',
		);
		for (const h of ['localhost:80@evil.example', '[::1]evil', 'localhost:'])
			assert.equal(
				await statusOf(p, [`${get}Host: ${h}\r\n\r\n`]),
				403,
				`Host: ${h}`,
			);
		assert.equal(
			await statusOf(p, [`${get}Host: 127.0.0.1:7345\r\n\r\n`]),
			404,
		);
		assert.equal(
			await statusOf(p, [`${get}X:\rXOrigin: http://evil.example\r\n\r\n`]),
			400,
			'bare CR',
		);
		assert.equal(
			await statusOf(p, [
				'POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n' +
					'2\r\nabcdef\r\n0\r\n\r\n',
			]),
			400,
			'chunk data longer than its size',
		);
		// The fuzzer's case: 64 headers and a bad byte, whole or byte
		// by byte, gets one answer.
		const many = `GET / HTTP/1.1\r\n${'g:\n'.repeat(64)}o\xef\r\n\r\n`;
		const whole = await statusOf(p, [many]);
		const split = await statusOf(p, [...many]);
		assert.equal(split, whole, 'the split changes nothing');
		await statusWorks(rt);
	});
});

test('finding 4: status answers and a new client gets in while 4,100 TCP connections are held', {
	timeout: 80_000,
}, async (t) => {
	await withRuntime(t, SERVERS, async (rt) => {
		const held = [];
		try {
			// Slowloris-style: each has begun a request, none is idle.
			for (let i = 0; i < 2100; i++) {
				const s = await dial(rt.port);
				s.on('error', () => {});
				s.write('G');
				held.push(s);
			}
			// Idle keep-alive connections fill the rest of the cap.
			for (let i = 0; i < 2000; i++) {
				const s = await dial(rt.port);
				s.on('error', () => {});
				held.push(s);
			}
			await statusWorks(rt);
			// A client that comes now takes an idle connection's
			// place.
			const c = await connect(rt);
			const r = await c.call('demo__echo', { text: 'in' });
			assert.equal(r.content[0].text, 'in');
			await statusWorks(rt);
		} finally {
			for (const s of held)
				s.destroy();
		}
	});
});

// Resolves once the socket has had unsent bytes for ms on end (the
// runtime stopped reading) or it was closed; true for the first.
async function stalls(s, ms) {
	const end = Date.now() + 15_000;
	let since = null;
	while (Date.now() < end) {
		if (s.destroyed)
			return false;
		if (s.writableLength > 0) {
			since ??= Date.now();
			if (Date.now() - since >= ms)
				return true;
		} else {
			since = null;
		}
		await new Promise((r) => setTimeout(r, 20));
	}
	return false;
}

test('finding 8: a connection whose GET stream is open reads no more than one request ahead', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, SERVERS, LEAN, async (rt) => {
		const c = await connect(rt);
		const before = rssMB(rt.child.pid);
		const s = await dial(rt.port);
		s.on('error', () => {});
		s.write(
			'GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
				`Accept: text/event-stream\r\nMcp-Session-Id: ${c.sid}\r\n\r\n`,
		);
		const junk = Buffer.alloc(1024 * 1024, 'x');
		for (let i = 0; i < 40; i++)
			s.write(junk);
		assert.ok(await stalls(s, 500), 'the runtime stopped reading');
		const grew = rssMB(rt.child.pid) - before;
		assert.ok(grew < 24, `RSS grew ${grew.toFixed(1)} MB for 40 MB sent`);
		s.destroy();
		await statusWorks(rt);
	});
});

test('R4: a client that pipelines large calls and never reads does not grow the runtime', {
	timeout: 80_000,
}, async (t) => {
	await withRuntime(t, SERVERS, LEAN, async (rt) => {
		const c = await connect(rt);
		const big = 'y'.repeat(1_000_000);
		const before = rssMB(rt.child.pid);
		const s = await dial(rt.port);
		s.on('error', () => {});
		s.pause(); // reads nothing
		for (let i = 0; i < 60; i++)
			s.write(
				rawPost(c.sid, {
					jsonrpc: '2.0',
					id: 100 + i,
					method: 'tools/call',
					params: { name: 'demo__echo', arguments: { text: big } },
				}),
			);
		assert.ok(await stalls(s, 1000), 'the runtime stopped taking calls');
		// Meanwhile another client is served as usual.
		const times = [];
		for (let i = 0; i < 10; i++) {
			const t0 = performance.now();
			await c.call('demo__echo', { text: 'x' });
			times.push(performance.now() - t0);
		}
		times.sort((a, b) => a - b);
		const grew = rssMB(rt.child.pid) - before;
		console.log(`R4: RSS ${before.toFixed(1)} -> +${grew.toFixed(1)} MB, p50 ${times[5].toFixed(1)} ms`);
		assert.ok(
			grew < 40,
			`RSS grew ${grew.toFixed(1)} MB for 60 MB of calls never read`,
		);
		assert.ok(times[5] < 500, `p50 ${times[5].toFixed(1)} ms`);
		s.destroy();
		await statusWorks(rt);
	});
});

// Reads SSE messages from a fetch response until pred(msgs) holds.
async function readUntil(res, pred, ms = 10_000) {
	const reader = res.body.getReader();
	const dec = new TextDecoder();
	let text = '';
	const end = Date.now() + ms;
	while (Date.now() < end) {
		const { value, done } = await reader.read();
		if (done)
			break;
		text += dec.decode(value, { stream: true });
		if (pred(text))
			return { text, reader };
	}
	throw new Error(`stream ended or timed out: ${text.slice(0, 300)}`);
}

// The rest of a stream readUntil left, to its end.
async function readRest(reader) {
	const dec = new TextDecoder();
	let rest = '';
	for (;;) {
		const { value, done } = await reader.read();
		if (done)
			return rest + dec.decode();
		rest += dec.decode(value, { stream: true });
	}
}

test('R12: a Last-Event-ID resume does not take a stream another connection holds', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, SERVERS, async (rt) => {
		const c = await connect(rt);
		const res = await c.post({
			jsonrpc: '2.0',
			id: 7,
			method: 'tools/call',
			// Progress makes the stream start (with its priming
			// event) while the call still runs.
			params: {
				name: 'demo__sleep',
				arguments: { ms: 1500 },
				_meta: { progressToken: 'p' },
			},
		});
		const { text, reader } = await readUntil(res, (x) =>
			sseMessages(x).some((m) => m.method === 'notifications/progress'),
		);
		const prime = text.match(/id: ?(\S+)/)[1];
		const resume = await fetch(c.url, {
			headers: {
				accept: 'text/event-stream',
				'mcp-session-id': c.sid,
				'mcp-protocol-version': c.protocol,
				'last-event-id': prime,
			},
		});
		assert.equal(resume.status, 409, 'the stream is held');
		await resume.arrayBuffer();
		// The first connection still gets its answer.
		const rest = text + (await readRest(reader));
		const msgs = sseMessages(rest);
		assert.ok(
			msgs.some((m) => m.id === 7 && m.result),
			`no answer: ${rest.slice(0, 300)}`,
		);
	});
});

test('R22: a sampling request asked during a batched call (2025-03-26) reaches the client', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, SERVERS, async (rt) => {
		const c = await connect(rt, {
			protocol: '2025-03-26',
			capabilities: { sampling: {} },
			name: 'batch',
		});
		assert.equal(c.protocol, '2025-03-26');
		await c.result('tools/list');
		const res = await c.post([
			{
				jsonrpc: '2.0',
				id: 50,
				method: 'tools/call',
				params: { name: 'demo__sample', arguments: { prompt: 'hi' } },
			},
		]);
		assert.equal(res.status, 200);
		const { text, reader } = await readUntil(res, (x) =>
			sseMessages(x).some((m) => m.method === 'sampling/createMessage'),
		);
		const ask = sseMessages(text).find(
			(m) => m.method === 'sampling/createMessage',
		);
		const answer = await c.post({
			jsonrpc: '2.0',
			id: ask.id,
			result: {
				role: 'assistant',
				content: { type: 'text', text: 'sampled' },
				model: 'm',
			},
		});
		assert.equal(answer.status, 202);
		await answer.arrayBuffer();
		const rest = text + (await readRest(reader));
		const reply = sseMessages(rest).find((m) => m.id === 50);
		assert.ok(reply?.result, `no answer: ${rest.slice(-300)}`);
		assert.equal(reply.result.content[0].text, 'sampled');
	});
});

test('R16: an answer over the replay bound is replayed as an error, not kept whole', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, SERVERS, async (rt) => {
		const c = await connect(rt);
		const big = 'z'.repeat(700_000); // over the 512 KiB ring
		const res = await c.post({
			jsonrpc: '2.0',
			id: 9,
			method: 'tools/call',
			params: { name: 'demo__echo', arguments: { text: big } },
		});
		const text = await res.text();
		const prime = text.match(/id: ?(\S+)/)[1];
		const live = sseMessages(text).find((m) => m.id === 9);
		assert.equal(live.result.content[0].text.length, big.length);
		const resume = await fetch(c.url, {
			headers: {
				accept: 'text/event-stream',
				'mcp-session-id': c.sid,
				'mcp-protocol-version': c.protocol,
				'last-event-id': prime,
			},
		});
		assert.equal(resume.status, 200);
		const replay = await readMessages(resume);
		const again = replay.find((m) => m.id === 9);
		assert.ok(again?.error, `replayed: ${JSON.stringify(replay).slice(0, 200)}`);
		assert.match(again.error.message, /no longer kept for replay/);
	});
});
