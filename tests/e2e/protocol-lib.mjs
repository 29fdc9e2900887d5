// Helpers of the protocol end-to-end tests: official SDK clients that record
// their HTTP requests, the demo fixture's count file, and raw JSON-RPC over
// fetch for the protocol versions the SDK client no longer speaks.
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { WAIT_SCALE, makeHome, readMessages, waitFor } from './lib.mjs';

// The events of an SSE response as they come, read from a copy of it:
// [{id, data}] in rec.events; rec.read resolves when the stream ends.
function tapEvents(rec, res) {
	rec.events = [];
	const reader = res.clone().body.getReader();
	const dec = new TextDecoder();
	let buf = '';
	rec.read = (async () => {
		try {
			for (;;) {
				const { value, done } = await reader.read();
				if (done)
					break;
				buf += dec.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
				let i;
				while ((i = buf.indexOf('\n\n')) >= 0) {
					const ev = buf.slice(0, i);
					buf = buf.slice(i + 2);
					const field = (f) =>
						ev
							.split('\n')
							.filter((l) => l.startsWith(`${f}:`))
							.map((l) => l.slice(f.length + 1).replace(/^ /, ''));
					const data = field('data');
					if (data.length)
						rec.events.push({ id: field('id')[0] ?? null, data: data.join('\n') });
				}
			}
		} catch {
			// aborted with the client
		}
	})();
}

// An SDK client connected to rt. Every HTTP request its transport makes is
// kept in `requests` ({method, lastEventId, status, contentType}), so a test
// can tell that a GET stream was opened or resumed; with `events`, each SSE
// response's events too (tapEvents).
export async function sdkClient(
	rt,
	{ name = 'mcpvisor-e2e-protocol', capabilities = {}, reconnect, events = false } = {},
) {
	const requests = [];
	const recordingFetch = async (url, init = {}) => {
		const headers = new Headers(init.headers);
		const rec = {
			method: init.method ?? 'GET',
			lastEventId: headers.get('last-event-id'),
			status: null,
			contentType: null,
		};
		requests.push(rec);
		const res = await fetch(url, init);
		rec.status = res.status;
		rec.contentType = res.headers.get('content-type');
		if (events && /^text\/event-stream/.test(rec.contentType ?? ''))
			tapEvents(rec, res);
		return res;
	};
	const client = new Client(
		{ name, version: '0.0.0' },
		{ capabilities },
	);
	const errors = [];
	client.onerror = (e) => errors.push(e);
	const transport = new StreamableHTTPClientTransport(new URL(rt.url), {
		fetch: recordingFetch,
		...(reconnect ? { reconnectionOptions: reconnect } : {}),
	});
	await client.connect(transport);
	return { client, transport, requests, errors };
}

// Resolves once the SDK's standing GET stream is open (it opens it on its
// own after notifications/initialized, when the server offers one).
export function waitGetStream(c, ms = 5000) {
	return waitFor(
		() =>
			c.requests.some(
				(r) =>
					r.method === 'GET' &&
					r.lastEventId === null &&
					r.status === 200 &&
					/^text\/event-stream/.test(r.contentType ?? ''),
			),
		ms,
		'the SDK client to open its GET stream',
	);
}

// Ends the session with DELETE (the SDK's close() sends none) and closes.
export async function sdkClose(c) {
	try {
		await c.transport.terminateSession();
	} finally {
		await c.client.close();
	}
}

// A private folder for a test's count file; removed by the caller.
export async function countFile() {
	const dir = await makeHome('mcpvisor-e2e-proto-');
	return { dir, file: path.join(dir, 'count') };
}

// The lines of the demo server's count file ([] before it exists).
export async function countLines(file) {
	try {
		return (await fsp.readFile(file, 'utf8')).split('\n').filter(Boolean);
	} catch (e) {
		if (e.code === 'ENOENT')
			return [];
		throw e;
	}
}

// Resolves with the lines once `line` occurs at least n times.
export function waitCountLine(file, line, n = 1, ms = 5000) {
	return waitFor(
		async () => {
			const lines = await countLines(file);
			return lines.filter((l) => l === line).length >= n && lines;
		},
		ms,
		`${n} x "${line}" in ${file}`,
	);
}

// The text of a tool result's first content part.
export function text(result) {
	assert.ok(
		Array.isArray(result?.content) && result.content.length > 0,
		`no content in ${JSON.stringify(result)}`,
	);
	return result.content[0].text;
}

// A one-shot latch: wait() resolves once open() was called.
export function latch() {
	let open;
	const p = new Promise((r) => {
		open = r;
	});
	return { open, wait: () => p };
}

// Rejects after ms (times WAIT_SCALE: a hang guard) with what; for
// promises that must settle.
export function within(promise, bound, what) {
	const ms = bound * WAIT_SCALE;
	let timer;
	const limit = new Promise((_, reject) => {
		timer = setTimeout(
			() => reject(new Error(`${what}: not settled in ${ms} ms`)),
			ms,
		);
	});
	return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

// A raw session over fetch that speaks an older protocol version: the
// protocol header is sent only when the version has one (2025-06-18 on).
export class OldClient {
	constructor(url, version) {
		this.url = url;
		this.version = version;
		this.sid = null;
		this.nextId = 1;
	}

	headers() {
		const h = {
			'content-type': 'application/json',
			accept: 'application/json, text/event-stream',
		};
		if (this.sid)
			h['mcp-session-id'] = this.sid;
		return h;
	}

	post(body) {
		return fetch(this.url, {
			method: 'POST',
			headers: this.headers(),
			body: JSON.stringify(body),
		});
	}

	// The initialize result; the session id is kept.
	async initialize() {
		const res = await this.post({
			jsonrpc: '2.0',
			id: this.nextId++,
			method: 'initialize',
			params: {
				protocolVersion: this.version,
				capabilities: {},
				clientInfo: { name: 'old-client', version: '0.0.0' },
			},
		});
		assert.equal(res.status, 200, `initialize ${this.version}: status`);
		this.sid = res.headers.get('mcp-session-id');
		assert.ok(this.sid, 'no Mcp-Session-Id');
		const [msg] = await readMessages(res);
		assert.ok(msg?.result, `initialize: ${JSON.stringify(msg)}`);
		const n = await this.post({
			jsonrpc: '2.0',
			method: 'notifications/initialized',
		});
		assert.equal(n.status, 202, 'initialized status');
		await n.arrayBuffer();
		return msg.result;
	}

	async close() {
		if (!this.sid)
			return;
		const res = await fetch(this.url, {
			method: 'DELETE',
			headers: { 'mcp-session-id': this.sid },
		});
		await res.arrayBuffer();
		this.sid = null;
	}
}
