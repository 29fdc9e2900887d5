// Helpers of the HTTP server tests (http-faults*.test.mjs): the demo
// fixture served over HTTP by the test (a remote server), and a recording
// proxy between mcpvisor and it that counts and times every request, and
// can make the server's session expire or the server hang on demand, so
// that a test knows exactly when a fault starts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';

import { DEMO, procStat, readMessages, sseMessages, startListener } from './lib.mjs';

// The path the fixture serves MCP on (Streamable HTTP, and the legacy
// transport's SSE stream).
export const FIX_PATH = '/mcp';

// The demo fixture over HTTP on a port the kernel picks (--http 0), with
// extra flags; stopped (SIGTERM, then SIGKILL, by pid) when test t ends,
// and proved gone. Resolves with {url, port, pid, stderr()}.
export async function startFixture(t, args = [], { path = FIX_PATH } = {}) {
	const { pid, port, output, exit } = await startListener(t, DEMO, ['--http', '0', ...args],
		`the fixture (${args.join(' ')})`);
	return {
		port,
		pid,
		url: `http://127.0.0.1:${port}${path}`,
		stderr: output,
		exit,
	};
}

// What the proxy saw of one request.
//   at, doneAt: ms (performance.now) when it came and when its answer's
//   head went back; method, path, sid (Mcp-Session-Id), lastEventId,
//   rpc: the JSON-RPC method of a POST (or 'response' for a client's
//   answer), status, newSid: the session id an initialize got.

// A recording HTTP proxy on 127.0.0.1 in front of target (a url): every
// request is forwarded and recorded; expire() makes every session seen so
// far answer 404 (its open streams end, as when a server drops a
// session); hang(true) holds every new request unanswered.
export class FaultProxy {
	static async start(t, target) {
		const p = new FaultProxy(new URL(target));
		await new Promise((r) => p.server.listen(0, '127.0.0.1', r));
		p.port = p.server.address().port;
		p.url = `http://127.0.0.1:${p.port}${p.target.pathname}`;
		t.after(() => p.close());
		return p;
	}

	constructor(target) {
		this.target = target;
		this.requests = [];
		this.dead = new Set();
		this.open = new Set(); // {sid, res} of answers still streaming
		this.held = new Set();
		this.hanging = false;
		this.dies = []; // JSON-RPC methods whose next POST dies after the work
		this.agent = new http.Agent({ keepAlive: true });
		this.server = http.createServer((req, res) => this.handle(req, res));
	}

	async handle(req, res) {
		const rec = {
			at: performance.now(),
			method: req.method,
			path: req.url,
			sid: req.headers['mcp-session-id'] ?? null,
			lastEventId: req.headers['last-event-id'] ?? null,
			auth: req.headers.authorization !== undefined,
			rpc: null,
			status: null,
			doneAt: null,
		};
		this.requests.push(rec);
		const chunks = [];
		for await (const c of req)
			chunks.push(c);
		const body = Buffer.concat(chunks);
		if (req.method === 'POST') {
			try {
				const j = JSON.parse(body.toString('utf8'));
				const one = Array.isArray(j) ? j[0] : j;
				rec.rpc = one?.method ?? 'response';
				rec.id = one?.id;
			} catch {
				rec.rpc = 'unparsable';
			}
		}
		const die = rec.rpc ? this.dies.indexOf(rec.rpc) : -1;
		if (die >= 0) {
			// The server does the work; then the connection dies before a
			// byte of the answer (a crash after the work, a balancer
			// reset).
			this.dies.splice(die, 1);
			rec.died = true;
			const up = http.request({
				host: this.target.hostname,
				port: this.target.port,
				method: req.method,
				path: req.url,
				headers: { ...req.headers, host: this.target.host },
				agent: this.agent,
			});
			up.on('response', (ur) => {
				ur.resume();
				ur.on('end', () => req.socket.destroy());
			});
			up.on('error', () => req.socket.destroy());
			up.end(body);
			return;
		}
		if (this.hanging) {
			this.held.add(res);
			res.on('close', () => this.held.delete(res));
			return;
		}
		if (rec.sid && this.dead.has(rec.sid)) {
			rec.status = 404;
			rec.doneAt = performance.now();
			res.writeHead(404, { 'content-type': 'application/json' });
			res.end(
				JSON.stringify({
					jsonrpc: '2.0',
					id: null,
					error: { code: -32001, message: 'Session not found' },
				}),
			);
			return;
		}
		const headers = { ...req.headers, host: this.target.host };
		const up = http.request({
			host: this.target.hostname,
			port: this.target.port,
			method: req.method,
			path: req.url,
			headers,
			agent: this.agent,
		});
		up.on('response', (ur) => {
			rec.status = ur.statusCode;
			rec.doneAt = performance.now();
			rec.newSid = ur.headers['mcp-session-id'] ?? null;
			rec.wwwAuthenticate = ur.headers['www-authenticate'] ?? null;
			rec.contentType = ur.headers['content-type'] ?? null;
			res.writeHead(ur.statusCode, ur.headers);
			res.flushHeaders();
			const entry = { sid: rec.sid ?? rec.newSid, res };
			this.open.add(entry);
			ur.on('data', (d) => res.write(d));
			ur.on('end', () => {
				this.open.delete(entry);
				res.end();
			});
			ur.on('error', () => res.destroy());
			ur.on('aborted', () => res.destroy());
			res.on('close', () => {
				this.open.delete(entry);
				ur.destroy();
			});
		});
		up.on('error', () => res.destroy());
		res.on('close', () => up.destroy());
		up.end(body);
	}

	// Every session seen so far is gone: 404 from now on, and what it
	// still streams is cut. Returns the time of the fault.
	expire() {
		for (const r of this.requests) {
			if (r.sid)
				this.dead.add(r.sid);
			if (r.newSid)
				this.dead.add(r.newSid);
		}
		for (const e of [...this.open])
			if (e.sid && this.dead.has(e.sid)) {
				this.open.delete(e);
				e.res.destroy();
			}
		return performance.now();
	}

	// The next POST of JSON-RPC method rpc is run by the server, then its
	// connection dies without a byte of answer.
	dieAfterWork(rpc) {
		this.dies.push(rpc);
	}

	hang(on = true) {
		this.hanging = on;
		if (!on)
			for (const res of [...this.held])
				res.destroy();
	}

	// Requests matching a filter over the records.
	count(pred = () => true) {
		return this.requests.filter(pred).length;
	}

	initializes() {
		return this.requests.filter((r) => r.rpc === 'initialize');
	}

	async close() {
		this.hang(false);
		for (const e of this.open)
			e.res.destroy();
		this.agent.destroy();
		this.server.closeAllConnections?.();
		await new Promise((r) => this.server.close(r));
	}
}

// The resource_metadata URL of a WWW-Authenticate challenge, or null.
export function resourceMetadata(challenge) {
	const m = /resource_metadata="([^"]+)"/.exec(challenge ?? '');
	return m ? m[1] : null;
}

// The processes (pids) whose command line holds every one of words.
export function pidsWith(...words) {
	const out = [];
	for (const name of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(name))
			continue;
		let argv;
		try {
			argv = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
		} catch {
			continue;
		}
		if (words.every((w) => argv.includes(w)) && procStat(Number(name)))
			out.push(Number(name));
	}
	return out;
}

// The argument after flag in pid's command line, or null.
export function argAfter(pid, flag) {
	try {
		const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
		const i = argv.indexOf(flag);
		return i >= 0 ? argv[i + 1] : null;
	} catch {
		return null;
	}
}

// Every answer to one request of client c (a RawClient) on its POST
// stream: a stream that answered twice would show two.
export async function readAnswers(c, method, params = {}) {
	const id = c.nextId++;
	const res = await c.post({ jsonrpc: '2.0', id, method, params });
	assert.equal(res.status, 200, `${method}: HTTP ${res.status}`);
	return (await readMessages(res)).filter((m) => m.id === id);
}

// One request of client c (a RawClient) whose POST stream is read as it
// comes: the server's requests on it are answered by onRequest(msg) (a
// result object), its notifications kept. Resolves with {reply, notes,
// asked} once the answer to this request arrives.
export async function streamRequest(c, method, params, onRequest = () => ({})) {
	const id = c.nextId++;
	const res = await c.post({ jsonrpc: '2.0', id, method, params });
	assert.equal(res.status, 200, `${method}: HTTP ${res.status}`);
	const out = { reply: null, notes: [], asked: [] };
	const handle = async (m) => {
		if (m.method && m.id !== undefined) {
			out.asked.push(m);
			const r = await c.post({ jsonrpc: '2.0', id: m.id, result: await onRequest(m) });
			assert.equal(r.status, 202, `answer to ${m.method}: HTTP ${r.status}`);
			await r.arrayBuffer();
		} else if (m.method) {
			out.notes.push(m);
		} else if (m.id === id) {
			out.reply = m;
		}
	};
	const ct = res.headers.get('content-type') ?? '';
	if (!ct.startsWith('text/event-stream')) {
		for (const m of await readMessages(res))
			await handle(m);
		return out;
	}
	const reader = res.body.getReader();
	const dec = new TextDecoder();
	let buf = '';
	while (!out.reply) {
		const { value, done } = await reader.read();
		if (done)
			break;
		buf += dec.decode(value, { stream: true });
		const cut = buf.lastIndexOf('\n\n');
		if (cut < 0)
			continue;
		const text = buf.slice(0, cut);
		buf = buf.slice(cut + 2);
		for (const m of sseMessages(text))
			await handle(m);
	}
	await reader.cancel().catch(() => {});
	return out;
}
