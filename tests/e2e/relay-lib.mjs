// Helpers of the relay's end-to-end tests: `mcpvisor relay --home DIR`
// launched by the official SDK's stdio client (the host), the runtimes of a
// home found through /proc, and the teardown that proves every process
// gone by pid: the relay (it exits when the host closes stdin), the runtime
// it started (shared by hosts, so it outlives the relay: the test stops it
// by the pid in its runtime file) and their servers.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { MCPVISOR, demo, makeHome, procStat, runCli, waitFor, writeConfig } from './lib.mjs';

export const SAN_ENV = {
	ASAN_OPTIONS:
		process.env.ASAN_OPTIONS ||
		'detect_leaks=1:abort_on_error=0:exitcode=23',
	UBSAN_OPTIONS:
		process.env.UBSAN_OPTIONS || 'print_stacktrace=1:halt_on_error=1',
};

// One of the SPEC's relay timings, measured by a test: printed, and added
// as a JSON line to the file MCPVISOR_FIGURES names, which `make bench`
// reports beside the target (the SPEC's column for mcpvisor) and the
// reference (another host's relay, which ours must beat). A sanitized
// build on a busy machine does not keep the target; the tests hold the
// outcome and a bound that tells it from the failure.
export function figure(name, ms, { target, reference }) {
	console.log(`${name}: ${ms.toFixed(0)} ms (target ${target} ms, reference ${reference} ms)`);
	if (process.env.MCPVISOR_FIGURES)
		fs.appendFileSync(
			process.env.MCPVISOR_FIGURES,
			`${JSON.stringify({ name, ms, target, reference })}\n`,
		);
}

// Resolves once the runtime of home has a call in flight (its status), so
// that what comes next meets it running: a fixed pause before was a bet a
// busy machine lost.
export async function awaitInflight(home, ms = 10_000) {
	await waitFor(
		async () => {
			const r = await runCli(['status', '--json'], { home });
			if (r.code !== 0)
				return false;
			const st = JSON.parse(r.stdout);
			return (st.servers ?? []).some((s) => (s.instances ?? []).some((i) => i.inflight > 0));
		},
		ms,
		'a call in flight',
	);
}

// The runtime file of a home, or null.
export function runtimeFile(home) {
	try {
		return JSON.parse(
			fs.readFileSync(path.join(home, 'run', 'runtime.json'), 'utf8'),
		);
	} catch {
		return null;
	}
}

export const markPath = (home) => path.join(home, 'state', 'restart.mark');

function readArgs(pid) {
	try {
		return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
	} catch {
		return null;
	}
}

function readEnv(pid, name) {
	try {
		const env = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
		const e = env.split('\0').find((x) => x.startsWith(name + '='));
		return e ? e.slice(name.length + 1) : null;
	} catch {
		return null;
	}
}

// Every live `mcpvisor serve` whose home is home (by --home in its
// command line, or MCPVISOR_HOME in its environment).
export function runtimesOf(home) {
	const out = [];
	for (const d of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(d))
			continue;
		const pid = Number(d);
		const args = readArgs(pid);
		if (!args || args[1] !== 'serve' || !procStat(pid))
			continue;
		const i = args.findIndex((a) => a === '--home' || a === '-H');
		const h =
			i >= 0
				? args[i + 1]
				: args.find((a) => a.startsWith('--home='))?.slice(7) ??
					readEnv(pid, 'MCPVISOR_HOME');
		if (h && path.resolve(h) === path.resolve(home))
			out.push(pid);
	}
	// A runtime's child between fork and exec (a server starting) still
	// shows the runtime's command line: not a runtime.
	return out.filter((pid) => !out.includes(procStat(pid)?.ppid));
}

// Pending signals of pid (/proc/PID/status SigPnd and ShdPnd): a stopped
// process keeps whatever was sent to it there.
export function pendingSignals(pid) {
	const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
	const get = (k) => BigInt('0x' + s.match(new RegExp(`^${k}:\\s*(\\w+)`, 'm'))[1]);
	return get('SigPnd') | get('ShdPnd');
}

// A host: the SDK's Client on a StdioClientTransport running the relay.
// Returns {client, transport, pid, stderr(), ms} (ms: the time connect took,
// from spawning the relay to the answer to initialize).
export async function hostConnect(home, { args = [], env = {}, name = 'relay-e2e-host' } = {}) {
	const transport = new StdioClientTransport({
		command: MCPVISOR,
		args: ['relay', '--home', home, ...args],
		env: { ...process.env, ...SAN_ENV, ...env },
		cwd: home,
		stderr: 'pipe',
	});
	let err = '';
	transport.stderr.setEncoding('utf8');
	transport.stderr.on('data', (d) => {
		err = (err + d).slice(-32 * 1024);
	});
	const client = new Client({ name, version: '0.0.0' });
	const host = { client, transport, stderr: () => err, pid: null, proc: null };
	const t0 = performance.now();
	try {
		await client.connect(transport);
	} finally {
		host.proc = transport._process;
		host.pid = transport.pid;
	}
	host.ms = performance.now() - t0;
	return host;
}

// Like hostConnect, but initialize is expected to fail: returns {host,
// error, ms} (the relay is still to be closed).
export async function hostConnectFails(home, opts = {}) {
	const t0 = performance.now();
	try {
		const host = await hostConnect(home, opts);
		return { host, error: null, ms: host.ms };
	} catch (error) {
		return { host: null, error, ms: performance.now() - t0 };
	}
}

// A tool call's outcome either way: {result} or {error} (a JSON-RPC error
// the SDK throws), and how long it took.
export async function callTool(client, name, args = {}, opts = {}) {
	const t0 = performance.now();
	try {
		const result = await client.callTool({ name, arguments: args }, undefined, {
			timeout: 60_000,
			...opts,
		});
		return { result, ms: performance.now() - t0 };
	} catch (error) {
		return { error, ms: performance.now() - t0 };
	}
}

// The text the host was told: an error's message or an isError result's.
export function told(r) {
	if (r.error)
		return r.error.message;
	if (r.result?.isError)
		return r.result.content.map((c) => c.text ?? '').join(' ');
	return null;
}

// How long a relay may take to exit after its stdin ends before it is
// taken for stuck: a bound against a hang, not a measure of speed.
const HOST_EXIT_MS = 10_000;

// Closes the host the way a host quits: stdin ends. The relay must exit 0
// on its own: no signal is sent unless it is still there HOST_EXIT_MS
// later (then SIGKILL, and `stuck`). Not the SDK's close, which sends
// SIGTERM after 2 s, a time a busy machine does not keep. Returns its
// exit and how long it took.
export async function hostClose(host) {
	const proc = host.proc;
	const closed = new Promise((r) => {
		if (!proc || proc.exitCode !== null || proc.signalCode)
			r({ code: proc?.exitCode, signal: proc?.signalCode });
		else
			proc.once('close', (code, signal) => r({ code, signal }));
	});
	const t0 = performance.now();
	try {
		proc?.stdin?.end();
	} catch {}
	let timer;
	const late = new Promise((r) => {
		timer = setTimeout(() => r(null), HOST_EXIT_MS);
	});
	let ex = await Promise.race([closed, late]);
	clearTimeout(timer);
	const ms = performance.now() - t0;
	if (!ex) {
		proc.kill('SIGKILL');
		ex = { ...(await closed), stuck: true };
	}
	// The process is gone: the SDK's close has nothing left to wait for.
	await host.client.close();
	return { ...ex, ms };
}

// Stops every runtime of home by pid (SIGTERM, then SIGKILL after 10 s)
// and waits for each to be gone, then for pids (servers) to be gone.
// Returns the problems found (sanitizer reports in the state directory's
// logs among them).
export async function stopRuntimes(home, pids = []) {
	const problems = [];
	for (const pid of runtimesOf(home)) {
		const st = procStat(pid);
		if (st?.state === 'T')
			process.kill(pid, 'SIGCONT');
		try {
			process.kill(pid, 'SIGTERM');
		} catch {}
		try {
			await waitFor(() => !procStat(pid), 10_000, `runtime ${pid} gone`);
		} catch (e) {
			problems.push(e.message);
			try {
				process.kill(pid, 'SIGKILL');
			} catch {}
		}
	}
	try {
		await waitFor(
			() => pids.every((p) => !procStat(p)),
			3000,
			`pids ${pids} gone`,
		);
	} catch (e) {
		problems.push(e.message);
		for (const p of pids)
			try {
				process.kill(p, 'SIGKILL');
			} catch {}
	}
	problems.push(...sanitizerReports(home));
	return problems;
}

// Sanitizer reports in the state directory's logs (the background
// runtimes' output goes there).
export function sanitizerReports(home) {
	const dir = path.join(home, 'state');
	const out = [];
	let names = [];
	try {
		names = fs.readdirSync(dir).filter((n) => n.endsWith('.log'));
	} catch {}
	for (const n of names) {
		const text = fs.readFileSync(path.join(dir, n), 'utf8');
		if (/ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:/.test(text))
			out.push(`sanitizer report in ${n}:\n${text.slice(-4000)}`);
	}
	return out;
}

// The pid the demo server reports (its `pid` tool), through a host.
export async function demoPid(client, tool = 'demo__pid') {
	const r = await client.callTool({ name: tool, arguments: {} });
	return JSON.parse(r.content[0].text).pid;
}

// Runs body(ctx) with ctx = {home, hosts: [], pids: []}; afterwards closes
// every host (each relay must exit 0 on stdin's end), stops the home's
// runtimes by pid and checks that every pid is gone. t: the test context.
export async function withRelayHome(t, makeHomeFn, body) {
	const home = await makeHomeFn();
	const ctx = { home, hosts: [], pids: [] };
	let failure = null;
	try {
		await body(ctx);
	} catch (e) {
		failure = e;
	}
	const problems = [];
	// What the relays said, to read with a failure.
	const said = failure
		? ctx.hosts.map((h) => `--- relay ${h.pid} stderr (tail) ---\n${h.stderr().slice(-2000)}`)
		: [];
	for (const h of ctx.hosts) {
		if (!h.proc)
			continue;
		const ex = await hostClose(h);
		if (ex.stuck)
			problems.push(`relay ${h.pid} still running ${Math.round(ex.ms)} ms after stdin closed`);
		else if (ex.code !== 0)
			problems.push(
				`relay ${h.pid} exited with ${ex.code ?? ex.signal}; stderr:\n${h.stderr().slice(-3000)}`,
			);
		if (h.pid && procStat(h.pid))
			problems.push(`relay ${h.pid} still running`);
	}
	problems.push(...(await stopRuntimes(home, ctx.pids)));
	if (!(process.env.MCPVISOR_E2E_KEEP && (failure || problems.length)))
		await fsp.rm(home, { recursive: true, force: true });
	if (failure || problems.length) {
		const msg = [failure?.message, ...problems, ...said].filter(Boolean).join('\n');
		throw new Error(msg, { cause: failure ?? undefined });
	}
}

export { assert };

// A home whose config holds servers.
export async function homeWith(servers) {
	const home = await makeHome('mcpvisor-relay-');
	await writeConfig(home, servers);
	return home;
}

export const DEMO = () => ({ demo: demo(['--name', 'demo']) });

// demo__echo through the relay answered without an error.
export async function echoOk(client, text = 'hi') {
	const r = await callTool(client, 'demo__echo', { text });
	assert.ok(r.result && !r.result.isError, `echo: ${r.error?.message ?? JSON.stringify(r.result)}`);
	return r;
}

// The same, and the answer is the text sent.
export async function echo(client, text = 'hi') {
	const r = await echoOk(client, text);
	assert.deepEqual(r.result.content, [{ type: 'text', text }]);
	return r;
}

// Starts tests/e2e/relay-fixture.mjs in mode; resolves {child, port,
// out()} once it listens.
export async function startFixture(mode) {
	const { spawn } = await import('node:child_process');
	const child = spawn(
		process.execPath,
		[path.join(path.dirname(new URL(import.meta.url).pathname), 'relay-fixture.mjs'), mode],
		{ stdio: ['ignore', 'pipe', 'inherit'] },
	);
	let out = '';
	child.stdout.setEncoding('utf8');
	child.stdout.on('data', (d) => (out += d));
	const port = await waitFor(
		() => Number(out.match(/listening (\d+)/)?.[1]),
		5000,
		`relay-fixture ${mode} listening`,
	);
	const exited = new Promise((r) => child.once('exit', r));
	return {
		child,
		port,
		out: () => out,
		async stop() {
			child.kill('SIGKILL');
			await exited;
		},
	};
}
