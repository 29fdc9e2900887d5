// Helpers of the staying-up tests (failures.test.mjs): the demo's count
// file read and watched, a GET stream that keeps every message, one
// instance out of status, and a runtime run in a home that outlives it
// (for the tool cache across runs).
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';

import { sseMessages, waitFor } from './lib.mjs';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The lines of a demo count file ([] while it does not exist).
export function countLines(file) {
	let text;
	try {
		text = fs.readFileSync(file, 'utf8');
	} catch (e) {
		if (e.code === 'ENOENT')
			return [];
		throw e;
	}
	return text.split('\n').filter((l) => l !== '');
}

// The pids of the `start PID` lines, in order.
export function startPids(file) {
	return countLines(file)
		.filter((l) => l.startsWith('start '))
		.map((l) => Number(l.slice(6)));
}

export function startCount(file) {
	return startPids(file).length;
}

// How many `call TOOL` lines the file holds.
export function callCount(file, tool) {
	return countLines(file).filter((l) => l === `call ${tool}`).length;
}

// Tracks every server pid in the count file that is still alive, so that
// the teardown proves each one gone (a dead pid is not tracked: it may be
// reused by then).
export function trackStarts(rt, file) {
	for (const pid of startPids(file))
		if (fs.existsSync(`/proc/${pid}`))
			rt.track(pid);
}

// Polls a count file and records when each `start` line first appeared.
export class StartWatcher {
	constructor(file, everyMs = 10) {
		this.file = file;
		this.times = [];
		this.timer = setInterval(() => this.poll(), everyMs);
		this.poll();
	}

	poll() {
		const n = startCount(this.file);
		while (this.times.length < n)
			this.times.push(Date.now());
	}

	stop() {
		clearInterval(this.timer);
		this.poll();
		return this.times;
	}
}

// A GET stream on c's session that keeps every message it carries.
export async function openGetStream(rt, c) {
	const ac = new AbortController();
	const res = await fetch(rt.url, {
		method: 'GET',
		headers: {
			accept: 'text/event-stream',
			'mcp-session-id': c.sid,
			'mcp-protocol-version': c.protocol,
		},
		signal: ac.signal,
	});
	if (res.status !== 200)
		throw new Error(`GET stream: HTTP ${res.status}`);
	const stream = { messages: [], closed: false };
	const reader = res.body.getReader();
	const dec = new TextDecoder();
	let buf = '';
	stream.done = (async () => {
		try {
			for (;;) {
				const { value, done } = await reader.read();
				if (done)
					break;
				buf += dec.decode(value, { stream: true });
				const cut = buf.lastIndexOf('\n\n');
				if (cut < 0)
					continue;
				stream.messages.push(...sseMessages(buf.slice(0, cut)));
				buf = buf.slice(cut + 2);
			}
		} catch {
			// aborted by close()
		}
		stream.closed = true;
	})();
	stream.close = async () => {
		ac.abort();
		await stream.done;
	};
	return stream;
}

// The first instance of server in a `status --json -v` answer.
export function instanceOf(st, server) {
	const s = st.servers.find((x) => x.name === server);
	if (!s)
		throw new Error(`no server ${server} in status`);
	return { server: s, inst: s.instances[0] };
}

// Waits until server's instance is in state (bounded), and returns it.
export async function waitState(rt, server, state, ms = 8000) {
	return waitFor(
		async () => {
			const { inst } = instanceOf(await rt.status(), server);
			return inst?.state === state ? inst : null;
		},
		ms,
		`${server} to be ${state}`,
	);
}

// Resolves once status shows a request in flight on server's instance:
// one that holds the instance, which may still wait for its start (not
// yet at the server). To wait for a call at the server, watch the demo's
// count file (callCount) instead.
export function waitInflight(rt, server, ms = 5000) {
	return waitFor(
		async () => {
			const { inst } = instanceOf(await rt.status(), server);
			return inst?.inflight > 0;
		},
		ms,
		`a request in flight on ${server}`,
	);
}

// A request and how long it took (sent to answered), in ms.
export async function timed(promise) {
	const t0 = performance.now();
	const value = await promise;
	return { value, ms: performance.now() - t0 };
}

// Every regular file under dir, recursively (paths).
export async function filesUnder(dir) {
	const out = [];
	let ents;
	try {
		ents = await fsp.readdir(dir, { withFileTypes: true });
	} catch (e) {
		if (e.code === 'ENOENT')
			return out;
		throw e;
	}
	for (const e of ents) {
		const p = path.join(dir, e.name);
		if (e.isDirectory())
			out.push(...(await filesUnder(p)));
		else if (e.isFile())
			out.push(p);
	}
	return out.sort();
}

