// Shared helpers of the end-to-end tests: a private home per test, the real
// runtime started on a free port, a raw MCP client over fetch, the CLI, and
// the teardown that proves the runtime exits 0 and leaves no process behind.
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(
	path.dirname(fileURLToPath(import.meta.url)),
	'../..',
);
export const MCPVISOR = path.resolve(
	REPO,
	process.env.MCPVISOR_BIN || 'build/san/mcpvisor',
);
export const DEMO = path.resolve(
	REPO,
	process.env.DEMO_SERVER || 'build/san/demo-server',
);
export const NODE_MODULES = path.join(REPO, 'tests/node_modules');

// Bounds for waiting; the sanitized build starts in well under a second.
export const START_MS = 10_000;
export const STOP_MS = 15_000;
const CLI_MS = 20_000;
const STDERR_KEEP = 64 * 1024;

// The protocol version our raw client speaks.
export const PROTOCOL = '2025-11-25';

// Sanitizer options that keep reports on stderr and exit codes non-zero.
export const SAN_ENV = {
	ASAN_OPTIONS:
		process.env.ASAN_OPTIONS ||
		'detect_leaks=1:abort_on_error=0:exitcode=23',
	UBSAN_OPTIONS:
		process.env.UBSAN_OPTIONS || 'print_stacktrace=1:halt_on_error=1',
};

// A demo server entry for a config: {command, args, scope: app, ...extra}.
export function demo(args = [], extra = {}) {
	return { command: DEMO, args, scope: 'app', ...extra };
}

// A node program (a package's dist entry) as an app-scoped stdio server.
export function nodeServer(entry, args = [], extra = {}) {
	return {
		command: process.execPath,
		args: [path.join(NODE_MODULES, entry), ...args],
		scope: 'app',
		...extra,
	};
}

// How status shows a session: a digest of its id, never the id.
export function sessionLabel(sid) {
	return crypto.createHash('sha256').update(sid).digest('hex').slice(0, 6);
}

export async function makeHome(prefix = 'mcpvisor-e2e-') {
	return fsp.mkdtemp(path.join(os.tmpdir(), prefix));
}

// A temporary folder (for counter files, key files) removed when test t
// ends, whether it passed or not.
export async function scratchDir(t, prefix = 'mcpvisor-e2e-') {
	const dir = await makeHome(prefix);
	t.after(() => fsp.rm(dir, { recursive: true, force: true }));
	return dir;
}

// The bounds of waitFor and protocol-lib's within are hang guards, not
// measures: they are stretched this many times (MCPVISOR_E2E_WAIT_SCALE),
// since what a quiet machine does in 5 s a machine whose two CPUs run
// fifteen things at once may take three times over. A wait that ends as
// it should is no longer for it.
export const WAIT_SCALE = Number(process.env.MCPVISOR_E2E_WAIT_SCALE) || 3;

// Resolves when cond() is truthy, polling at a short interval, and throws
// with what() when the bound (times WAIT_SCALE) passes first.
export async function waitFor(cond, bound, what) {
	const ms = bound * WAIT_SCALE;
	const end = Date.now() + ms;
	let last;
	for (;;) {
		try {
			const v = await cond();
			if (v)
				return v;
		} catch (e) {
			last = e;
		}
		if (Date.now() > end)
			throw new Error(
				`timed out after ${ms} ms waiting for ${what}` +
					(last ? `: ${last.message}` : ''),
			);
		await new Promise((r) => setTimeout(r, 20));
	}
}

// A fixture server the test starts: file with args (a node script run by
// this node, or a program), its output kept (the last 64 KiB of stdout and
// stderr), stopped (SIGTERM, then SIGKILL after 3 s, by pid) and proved
// gone when test t ends. Resolves once it prints "listening on [HOST:]PORT"
// with {child, pid, port, output(), exit}; what names it in errors.
export async function startListener(t, file, args, what) {
	const node = file.endsWith('.mjs');
	const child = spawn(node ? process.execPath : file, node ? [file, ...args] : args, {
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	let out = '';
	let exited = null;
	const exit = new Promise((resolve) => {
		child.on('exit', (code, signal) => {
			exited = { code, signal };
			resolve(exited);
		});
		child.on('error', (e) => {
			exited = { error: e };
			resolve(exited);
		});
	});
	for (const s of [child.stdout, child.stderr]) {
		s.setEncoding('utf8').on('data', (d) => {
			out = (out + d).slice(-64 * 1024);
		});
	}
	t.after(async () => {
		if (exited)
			return;
		child.kill('SIGTERM');
		const late = setTimeout(() => child.kill('SIGKILL'), 3000);
		await exit;
		clearTimeout(late);
		assert.equal(procStat(child.pid), null, `${what} is gone`);
	});
	const port = await waitFor(
		() => {
			if (exited)
				throw new Error(`${what} exited: ${JSON.stringify(exited)}\n${out}`);
			return Number(/listening on (?:\S*:)?(\d+)/.exec(out)?.[1]) || null;
		},
		START_MS,
		`${what} to listen`,
	);
	return { child, pid: child.pid, port, output: () => out, exit };
}

// /proc/PID/stat fields after the command name: state, ppid, pgrp and the
// start time (field 22); null when the process is gone or a zombie.
export function procStat(pid) {
	let stat;
	try {
		stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
	} catch {
		return null;
	}
	const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
	if (rest[0] === 'Z' || rest[0] === 'X')
		return null;
	return {
		state: rest[0],
		ppid: Number(rest[1]),
		pgrp: Number(rest[2]),
		start: rest[19],
	};
}

// The start time of a process, or null when it is gone.
function procStart(pid) {
	return procStat(pid)?.start ?? null;
}

// True while pid is a live process that is the one we learned (same start
// time), so that a reused pid is never signalled.
function pidAlive(pid, start) {
	try {
		process.kill(pid, 0);
	} catch (e) {
		if (e.code === 'ESRCH')
			return false;
		throw e;
	}
	const now = procStart(pid);
	return now !== null && (start === undefined || now === start);
}

export function runCli(args, { home, env, timeout = CLI_MS, input } = {}) {
	const full = home ? [...args, '--home', home] : args;
	return new Promise((resolve) => {
		const child = execFile(
			MCPVISOR,
			full,
			{
				env: { ...process.env, ...SAN_ENV, ...env },
				timeout,
				maxBuffer: 8 * 1024 * 1024,
			},
			(err, stdout, stderr) => {
				resolve({
					code: err ? (err.code ?? null) : 0,
					signal: err?.signal ?? null,
					stdout,
					stderr,
				});
			},
		);
		if (input !== undefined)
			child.stdin.end(input);
	});
}

// One running `mcpvisor serve`. Use through withRuntime, which stops it.
export class Runtime {
	constructor(home, configPath) {
		this.home = home;
		this.configPath = configPath;
		this.pids = new Map(); // pid -> start time when learned
		this.stderrText = '';
		this.stdoutText = '';
		this.exited = null;
	}

	stderr() {
		return this.stderrText;
	}

	// Remembers a pid the test learned, to prove it gone at the end.
	track(pid) {
		if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid)
			return;
		if (!this.pids.has(pid))
			this.pids.set(pid, procStart(pid) ?? undefined);
	}

	// The config file's watch is off unless watch is true: a test that
	// rewrites the config and reloads by hand must see its own reload
	// alone (autoreload.test.mjs tests the watch). ownGroup: its own
	// session and process group, for a test that stops it with SIGSTOP.
	// In the runner's group, a stopped runtime makes the kernel send the
	// whole group SIGHUP and SIGCONT at the next exit in it once the group
	// is orphaned (as a runner started in the background leaves it): the
	// runtime reloads and runs on, and the runner itself is hung up.
	async start({ env = {}, args = [], watch = false, ownGroup = false } = {}) {
		const child = spawn(
			MCPVISOR,
			[
				'serve',
				'--config',
				this.configPath,
				'--port',
				'0',
				'--home',
				this.home,
				...(watch ? [] : ['--no-watch']),
				...args,
			],
			{
				env: { ...process.env, ...SAN_ENV, ...env },
				stdio: ['ignore', 'pipe', 'pipe'],
				detached: ownGroup,
			},
		);
		this.child = child;
		this.exitPromise = new Promise((resolve) => {
			child.on('exit', (code, signal) => {
				this.exited = { code, signal };
				resolve(this.exited);
			});
			// A binary that cannot run (missing, being relinked).
			child.on('error', (e) => {
				this.stderrText += `spawn ${MCPVISOR}: ${e.message}\n`;
				this.exited = { code: null, signal: null, error: e };
				resolve(this.exited);
			});
		});
		child.stderr.setEncoding('utf8');
		child.stderr.on('data', (d) => {
			this.stderrText = (this.stderrText + d).slice(-STDERR_KEEP);
		});
		child.stdout.setEncoding('utf8');
		const line = new Promise((resolve, reject) => {
			const timer = setTimeout(
				() =>
					reject(
						new Error(
							`no endpoint line within ${START_MS} ms; ` +
								`stderr:\n${this.stderrText}`,
						),
					),
				START_MS,
			);
			child.stdout.on('data', (d) => {
				this.stdoutText += d;
				const m = this.stdoutText.match(
					/mcpvisor: endpoint (http:\/\/127\.0\.0\.1:\d+\/mcp)/,
				);
				if (m) {
					clearTimeout(timer);
					resolve(m[1]);
				}
			});
			this.exitPromise.then(({ code, signal, error }) => {
				clearTimeout(timer);
				reject(
					new Error(
						`mcpvisor serve ${error ? 'could not run' : 'exited'} ` +
							`(${error?.message ?? code ?? signal}) ` +
							`before listening; stderr:\n${this.stderrText}`,
					),
				);
			});
		});
		this.url = await line;
		const file = path.join(this.home, 'run', 'runtime.json');
		this.info = await waitFor(
			async () => JSON.parse(await fsp.readFile(file, 'utf8')),
			START_MS,
			file,
		);
		assert.equal(this.info.url, this.url, 'runtime.json url');
		assert.equal(this.info.pid, child.pid, 'runtime.json pid');
		this.port = this.info.port;
		this.socket = this.info.socket;
		return this;
	}

	cli(args, opts = {}) {
		return runCli(args, { home: this.home, ...opts });
	}

	// `status --json -v`, and every instance pid in it tracked.
	async status() {
		const r = await this.cli(['status', '--json', '-v']);
		assert.equal(r.code, 0, `status failed: ${r.stderr}`);
		const s = JSON.parse(r.stdout);
		for (const srv of s.servers ?? [])
			for (const inst of srv.instances ?? [])
				if (inst.pid)
					this.track(inst.pid);
		return s;
	}

	// Calls the demo `pid` tool through the raw client and tracks its pids.
	async demoPids(client, tool = 'demo__pid') {
		const r = await client.call(tool, {});
		const info = JSON.parse(r.content[0].text);
		this.track(info.pid);
		if (info.grandchild)
			this.track(info.grandchild);
		return info;
	}

	// The runtime's exit ({code, signal}), or an error when it has not
	// exited within ms.
	async waitExit(ms = STOP_MS) {
		let timer;
		const late = new Promise((_, reject) => {
			timer = setTimeout(
				() => reject(new Error(`the runtime did not exit within ${ms} ms`)),
				ms,
			);
		});
		try {
			return await Promise.race([this.exitPromise, late]);
		} finally {
			clearTimeout(timer);
		}
	}

	// Sends SIGTERM once; a test that sends its own uses this so that the
	// teardown does not send a second one.
	terminate(signal = 'SIGTERM') {
		if (!this.termSent)
			this.termAt = Date.now();
		this.termSent = true;
		this.child.kill(signal);
	}

	// SIGTERM, the exit code, and every learned pid gone. Returns a list
	// of problems (empty when clean); kills leftovers by pid.
	async stop() {
		const problems = [];
		if (!this.child)
			return problems;
		if (!this.exited && !this.termSent)
			this.terminate();
		// STOP_MS from the first SIGTERM, the test's own included.
		const left = Math.max(
			1000,
			(this.termAt ?? Date.now()) + STOP_MS - Date.now(),
		);
		const timeout = new Promise((r) => {
			const t = setTimeout(() => r(null), left);
			t.unref();
		});
		let ex = await Promise.race([this.exitPromise, timeout]);
		if (!ex) {
			problems.push(`runtime did not exit within ${STOP_MS} ms of SIGTERM`);
			this.child.kill('SIGKILL');
			ex = await this.exitPromise;
		} else if (!ex.error && ex.code !== 0) {
			// (a spawn error has already failed start())
			problems.push(
				`runtime exited with ${ex.code ?? 'signal ' + ex.signal}`,
			);
		}
		// A process killed by the runtime may be reaped a moment after
		// the runtime exits (by init); wait for that, bounded.
		const alive = () =>
			[...this.pids].filter(([pid, st]) => pidAlive(pid, st));
		try {
			await waitFor(() => alive().length === 0, 10_000, 'learned pids gone');
		} catch {
			for (const [pid] of alive()) {
				problems.push(`pid ${pid} outlived the runtime`);
				try {
					process.kill(pid, 'SIGKILL');
				} catch {
					// already gone
				}
			}
		}
		return problems;
	}
}

export async function writeConfig(home, servers) {
	const file = path.join(home, 'mcp.json');
	await fsp.writeFile(file, JSON.stringify({ mcpServers: servers }, null, 2));
	return file;
}

// Runs body(rt) on rt (started with opts), then stops it. Returns what
// went wrong: the body's failure and the problems found at stop (exit code,
// processes left). When the test times out, the body is abandoned and the
// stop runs at once.
async function runRuntime(t, rt, opts, body) {
	const abandoned = new Promise((_, reject) => {
		const why = () =>
			reject(new Error('test timed out or was cancelled'));
		if (t.signal.aborted)
			why();
		t.signal.addEventListener('abort', why, { once: true });
	});
	abandoned.catch(() => {});
	let failure = null;
	// What an abandoned body does later must not surface as an
	// unhandled rejection in another test.
	const settle = (p) => {
		p.catch(() => {});
		return Promise.race([p, abandoned]);
	};
	try {
		await settle(rt.start(opts));
		await settle(body(rt));
	} catch (e) {
		failure = e;
	}
	let problems;
	try {
		problems = await rt.stop();
	} catch (e) {
		problems = [`stop: ${e.message}`];
	}
	return { failure, problems };
}

// A new error, so that reporters that print an assertion's own message
// still show the stop problems and the runtime's stderr.
function runtimeError(rt, failure, problems) {
	const tail = rt.stderr().split('\n').slice(-40).join('\n');
	let msg = failure ? failure.message : problems.join('; ');
	if (failure && problems.length)
		msg += `\n(also at stop: ${problems.join('; ')})`;
	return new Error(`${msg}\n--- runtime stderr (tail) ---\n${tail}`, {
		cause: failure ?? undefined,
	});
}

// Runs body(rt) against a fresh runtime serving servers, then stops it and
// fails when it did not exit 0 or left a learned process behind. The
// runtime's stderr is attached to any failure. t is the test context: when
// the test times out, the body is abandoned and the teardown runs at once.
export async function withRuntime(t, servers, opts, body) {
	if (typeof opts === 'function') {
		body = opts;
		opts = {};
	}
	const home = await makeHome();
	const rt = new Runtime(home, await writeConfig(home, servers));
	const { failure, problems } = await runRuntime(t, rt, opts, body);
	// The failure carries the runtime's stderr; MCPVISOR_E2E_KEEP=1 keeps
	// the home (config, state, cache) to look at.
	if (!(process.env.MCPVISOR_E2E_KEEP && (failure || problems.length)))
		await fsp.rm(home, { recursive: true, force: true });
	if (failure || problems.length)
		throw runtimeError(rt, failure, problems);
}

// The same in an existing home with the given config file (which stay,
// for the next run). Returns the runtime's stderr.
export async function runInHome(t, home, configPath, opts, body) {
	const rt = new Runtime(home, configPath);
	const { failure, problems } = await runRuntime(t, rt, opts, body);
	if (failure || problems.length)
		throw runtimeError(rt, failure, problems);
	return rt.stderr();
}

// ---- a raw MCP client over fetch ----

// Every JSON-RPC message in an SSE body.
export function sseMessages(text) {
	const out = [];
	for (const block of text.split(/\r?\n\r?\n/)) {
		const data = block
			.split(/\r?\n/)
			.filter((l) => l.startsWith('data:'))
			.map((l) => l.slice(5).replace(/^ /, ''));
		// An event with empty data (a priming event) dispatches nothing.
		if (data.length && data.join('\n') !== '')
			out.push(JSON.parse(data.join('\n')));
	}
	return out;
}

// The messages of an SSE body as they come (an async iterable of byte
// chunks, res.body): each event's data parsed as JSON (sseMessages).
export async function* sseStream(body) {
	const dec = new TextDecoder();
	let buf = '';
	for await (const chunk of body) {
		buf += dec.decode(chunk, { stream: true });
		let i;
		while ((i = buf.indexOf('\n\n')) >= 0) {
			const block = buf.slice(0, i);
			buf = buf.slice(i + 2);
			yield* sseMessages(block);
		}
	}
}

// The messages of a response to a POST, whether JSON or SSE.
export async function readMessages(res) {
	const text = await res.text();
	const ct = res.headers.get('content-type') || '';
	if (ct.startsWith('text/event-stream'))
		return sseMessages(text);
	if (!text)
		return [];
	const j = JSON.parse(text);
	return Array.isArray(j) ? j : [j];
}

export class RawClient {
	constructor(url, { fetchImpl = fetch } = {}) {
		this.url = url;
		this.fetch = fetchImpl;
		this.sid = null;
		this.nextId = 1;
		this.notes = [];
	}

	headers(extra = {}) {
		const h = {
			'content-type': 'application/json',
			accept: 'application/json, text/event-stream',
			...extra,
		};
		if (this.sid)
			h['mcp-session-id'] = this.sid;
		if (this.protocol)
			h['mcp-protocol-version'] = this.protocol;
		return h;
	}

	post(body, extra = {}) {
		return this.fetch(this.url, {
			method: 'POST',
			headers: this.headers(extra),
			body: typeof body === 'string' ? body : JSON.stringify(body),
		});
	}

	// protocol, capabilities and name are what the client declares.
	async initialize({ protocol = PROTOCOL, capabilities = {}, name = 'mcpvisor-e2e' } = {}) {
		const res = await this.post({
			jsonrpc: '2.0',
			id: this.nextId++,
			method: 'initialize',
			params: {
				protocolVersion: protocol,
				capabilities,
				clientInfo: { name, version: '0.0.0' },
			},
		});
		assert.equal(res.status, 200, 'initialize status');
		this.sid = res.headers.get('mcp-session-id');
		assert.ok(this.sid, 'initialize gave no Mcp-Session-Id');
		const [msg] = await readMessages(res);
		assert.ok(msg.result, `initialize: ${JSON.stringify(msg)}`);
		this.protocol = msg.result.protocolVersion;
		const n = await this.post({
			jsonrpc: '2.0',
			method: 'notifications/initialized',
		});
		assert.equal(n.status, 202, 'initialized notification status');
		await n.arrayBuffer();
		return msg.result;
	}

	// The JSON-RPC response to one request; notifications that came on
	// the same stream are kept in this.notes.
	async request(method, params = {}) {
		const id = this.nextId++;
		const res = await this.post({ jsonrpc: '2.0', id, method, params });
		assert.equal(res.status, 200, `${method}: HTTP ${res.status}`);
		const msgs = await readMessages(res);
		const reply = msgs.find((m) => m.id === id);
		this.notes.push(...msgs.filter((m) => m.id === undefined));
		assert.ok(reply, `${method}: no response in ${JSON.stringify(msgs)}`);
		return reply;
	}

	async result(method, params = {}) {
		const r = await this.request(method, params);
		assert.ok(r.result, `${method} failed: ${JSON.stringify(r.error)}`);
		return r.result;
	}

	call(name, args = {}) {
		return this.result('tools/call', { name, arguments: args });
	}

	// Every tool across pages, following nextCursor.
	async listAll(method = 'tools/list', key = 'tools') {
		const all = [];
		let cursor;
		for (let i = 0; i < 1000; i++) {
			const r = await this.result(method, cursor ? { cursor } : {});
			all.push(...r[key]);
			cursor = r.nextCursor;
			if (!cursor)
				return all;
		}
		throw new Error('more than 1000 pages');
	}

	async close() {
		if (!this.sid)
			return;
		const res = await this.fetch(this.url, {
			method: 'DELETE',
			headers: { 'mcp-session-id': this.sid },
		});
		await res.arrayBuffer();
		this.sid = null;
	}
}

// A raw client that has initialized against rt (opts: see initialize).
export async function connect(rt, opts) {
	const c = new RawClient(rt.url);
	await c.initialize(opts);
	return c;
}

// ---- raw HTTP on a socket, for what fetch cannot do (stop reading,
// split writes, reset) ----

export const ACCEPT = 'application/json, text/event-stream';

// A raw TCP connection to the runtime.
export function dial(port) {
	return new Promise((resolve, reject) => {
		const s = net.connect(port, '127.0.0.1', () => resolve(s));
		s.once('error', reject);
	});
}

// The bytes of a POST /mcp of body (a string, or JSON of it), in session
// sid (or none), with extra header lines (each ending in CRLF).
export function rawPost(sid, body, extra = '') {
	const b = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
	return Buffer.concat([
		Buffer.from(
			'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
				'Content-Type: application/json\r\n' +
				`Accept: ${ACCEPT}\r\n` +
				(sid ? `Mcp-Session-Id: ${sid}\r\n` : '') +
				extra +
				`Content-Length: ${b.length}\r\n\r\n`,
		),
		b,
	]);
}

// The names of the twelve built-in tools of the demo server, in its order.
export const DEMO_TOOLS = [
	'echo',
	'add',
	'pid',
	'sleep',
	'count',
	'fail',
	'env',
	'sample',
	'elicit',
	'roots',
	'notify_changed',
	'log',
];

// ---- a raw MCP 2026-07-28 client over fetch (stateless: no initialize,
// no session; _meta and the SEP-2243 headers on every request) ----

export const MODERN = '2026-07-28';
export const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CAPS = 'io.modelcontextprotocol/clientCapabilities';
export const META_INFO = 'io.modelcontextprotocol/clientInfo';
export const META_LOG = 'io.modelcontextprotocol/logLevel';
export const META_SERVER = 'io.modelcontextprotocol/serverInfo';
export const META_SUB = 'io.modelcontextprotocol/subscriptionId';

// A header value as SEP-2243 sends it: the text itself when it is visible
// ASCII without surrounding spaces (and not sentinel-shaped), else the
// base64 sentinel.
export function mcpHeaderValue(s) {
	const plain = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(s);
	if (plain && !/^=\?base64\?.*\?=$/i.test(s))
		return s;
	return `=?base64?${Buffer.from(s, 'utf8').toString('base64')}?=`;
}

// What Mcp-Name carries for a message, or null when the method has none.
function mcpName(msg) {
	const p = msg.params ?? {};
	if (msg.method === 'tools/call' || msg.method === 'prompts/get')
		return typeof p.name === 'string' ? p.name : null;
	if (msg.method === 'resources/read')
		return typeof p.uri === 'string' ? p.uri : null;
	return null;
}

// One 2026-07-28 client. caps: the clientCapabilities it declares on every
// request; key: an API key sent as Authorization: Bearer (the principal);
// space: the ?space= folder. Every answer is checked to carry no
// Mcp-Session-Id (the revision has none, and mcpvisor mints none for it).
export class ModernClient {
	constructor(url, { caps = {}, key = null, space = null, name = 'mcpvisor-e2e-modern' } = {}) {
		this.url = space ? `${url}?space=${encodeURIComponent(space)}` : url;
		this.caps = caps;
		this.key = key;
		this.name = name;
		this.nextId = 1;
	}

	// The request _meta: the three envelope keys, then extra over them.
	meta(extra = {}) {
		return {
			[META_VERSION]: MODERN,
			[META_CAPS]: this.caps,
			[META_INFO]: { name: this.name, version: '0.0.0' },
			...extra,
		};
	}

	// A request message; id defaults to the next number. meta is merged
	// over this.meta(); meta: null sends params without _meta.
	message(method, params = {}, { id, meta = {} } = {}) {
		const p = { ...params };
		if (meta !== null)
			p._meta = { ...this.meta(), ...meta, ...(params._meta ?? {}) };
		return { jsonrpc: '2.0', id: id ?? this.nextId++, method, params: p };
	}

	// The HTTP headers of a POST of msg: MCP-Protocol-Version (the
	// _meta claim, or MODERN), Mcp-Method, Mcp-Name where the method has
	// one, the key; extra over them (a null value leaves a header out).
	headersFor(msg, extra = {}) {
		const h = {
			'content-type': 'application/json',
			accept: 'application/json, text/event-stream',
			'mcp-protocol-version': MODERN,
		};
		if (msg && !Array.isArray(msg) && msg.method) {
			h['mcp-method'] = msg.method;
			const claim = msg.params?._meta?.[META_VERSION];
			if (typeof claim === 'string')
				h['mcp-protocol-version'] = claim;
			const n = mcpName(msg);
			if (n !== null)
				h['mcp-name'] = mcpHeaderValue(n);
		}
		if (this.key)
			h.authorization = `Bearer ${this.key}`;
		for (const [k, v] of Object.entries(extra)) {
			if (v === null)
				delete h[k.toLowerCase()];
			else
				h[k.toLowerCase()] = v;
		}
		return h;
	}

	noSession(res, what) {
		assert.equal(res.headers.get('mcp-session-id'), null,
			`${what}: a modern answer carries no Mcp-Session-Id`);
	}

	// POSTs msg (an object, or a string sent as it is) with headersFor;
	// the Response, unread.
	async post(msg, { headers = {}, signal } = {}) {
		const res = await fetch(this.url, {
			method: 'POST',
			headers: this.headersFor(typeof msg === 'string' ? null : msg, headers),
			body: typeof msg === 'string' ? msg : JSON.stringify(msg),
			signal,
		});
		this.noSession(res, `POST ${msg.method ?? 'batch'}`);
		return res;
	}

	// Sends msg and reads the whole answer: {id (msg's), status, headers,
	// contentType, msgs (every message, JSON or SSE), reply (the answer
	// with msg's id), notes (the notifications among msgs)}.
	async exchange(msg, opts = {}) {
		const res = await this.post(msg, opts);
		const msgs = await readMessages(res);
		const reply = msgs.find((m) => m.id === msg.id && (m.result || m.error)) ?? null;
		return {
			id: msg.id,
			status: res.status,
			headers: res.headers,
			contentType: res.headers.get('content-type') ?? '',
			msgs,
			reply,
			notes: msgs.filter((m) => m.id === undefined),
		};
	}

	// A request answered 200: its reply (result or error). opts: meta
	// (over the envelope), id, headers.
	async request(method, params = {}, opts = {}) {
		const msg = this.message(method, params, opts);
		const r = await this.exchange(msg, opts);
		assert.equal(r.status, 200, `${method}: HTTP ${r.status} ${JSON.stringify(r.msgs)}`);
		assert.ok(r.reply, `${method}: no answer to id ${msg.id} in ${JSON.stringify(r.msgs)}`);
		return r.reply;
	}

	async result(method, params = {}, opts = {}) {
		const r = await this.request(method, params, opts);
		assert.ok(r.result, `${method} failed: ${JSON.stringify(r.error)}`);
		return r.result;
	}

	call(name, args = {}, opts = {}) {
		return this.result('tools/call', { name, arguments: args }, opts);
	}

	// Opens subscriptions/listen with id and the notifications asked;
	// resolves once the answer's head is in (HTTP 200, SSE) with {msgs
	// (each message as it comes), next(pred, ms, what) (the first that
	// pred accepts, from the start), close()}.
	async listen(notifications, { id = this.nextId++ } = {}) {
		const ctl = new AbortController();
		const msg = this.message('subscriptions/listen', { notifications }, { id });
		const res = await this.post(msg, { signal: ctl.signal });
		assert.equal(res.status, 200, `listen: HTTP ${res.status} ${res.status === 200 ? '' : await res.text()}`);
		assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/, 'listen answers with SSE');
		const msgs = [];
		(async () => {
			try {
				for await (const m of sseStream(res.body))
					msgs.push(m);
			} catch {
				// closed by the test
			}
		})();
		return {
			id,
			msgs,
			next: (pred, ms, what) => waitFor(() => msgs.find(pred), ms, what),
			close: () => ctl.abort(),
		};
	}
}
