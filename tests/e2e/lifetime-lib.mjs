// Helpers of the sharing and lifetime tests: a runtime on a full config
// (top-level idleTimeout, shutdownGrace), several runtimes on one home,
// expected non-zero exits, sessions in a space, and /proc views of the
// processes (liveness, children, the moment a pid went).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';

import { RawClient, Runtime, makeHome, procStat } from './lib.mjs';

export { procStat };

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// How often the gone-watchers look at /proc: fine enough to quote an
// idle-close precision in milliseconds.
const WATCH_MS = 5;

export function alive(pid) {
	return procStat(pid) !== null;
}

// Live (non-zombie) processes whose parent is pid.
export function childrenOf(pid) {
	const out = [];
	for (const name of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(name))
			continue;
		const st = procStat(Number(name));
		if (st && st.ppid === pid)
			out.push(Number(name));
	}
	return out.sort((a, b) => a - b);
}

// Watches pids closely until every one is gone or ms pass; returns a
// Map pid -> Date.now() when it was first seen gone (missing: still alive).
export async function watchGone(pids, ms) {
	const goneAt = new Map();
	const end = Date.now() + ms;
	for (;;) {
		const now = Date.now();
		for (const p of pids)
			if (!goneAt.has(p) && !alive(p))
				goneAt.set(p, now);
		if (goneAt.size === pids.length || now > end)
			return goneAt;
		await sleep(WATCH_MS);
	}
}

// Resolves with the time pid went; throws when it is still alive after ms.
export async function awaitGone(pid, ms, what = `pid ${pid}`) {
	const g = await watchGone([pid], ms);
	if (!g.has(pid))
		throw new Error(`${what} still alive after ${ms} ms`);
	return g.get(pid);
}

// A raw client initialized against rt in the given space (or none).
export async function openSession(rt, space) {
	const c = new RawClient(space ? `${rt.url}?space=${space}` : rt.url);
	await c.initialize();
	return c;
}

// The instances of server name in a status object (empty when none).
export function instancesOf(st, name) {
	const s = (st.servers ?? []).find((x) => x.name === name);
	assert.ok(s, `server ${name} missing from status`);
	return s.instances ?? [];
}

// Every instance pid in a status object.
export function statusPids(st) {
	const out = [];
	for (const s of st.servers ?? [])
		for (const i of s.instances ?? [])
			if (i.pid)
				out.push(i.pid);
	return out.sort((a, b) => a - b);
}

// The epoch ms of a log line's HH:MM:SS.mmm stamp (the runtime logs local
// time), taken on the day that puts it closest to now.
function logStampMs(stamp) {
	const [h, m, rest] = stamp.split(':');
	const [s, ms] = rest.split('.');
	const d = new Date();
	d.setHours(Number(h), Number(m), Number(s), Number(ms));
	let t = d.getTime();
	const day = 24 * 3600 * 1000;
	if (t - Date.now() > day / 2)
		t -= day;
	else if (Date.now() - t > day / 2)
		t += day;
	return t;
}

// For each pid the runtime stopped (debug log): when its stop ladder began
// (stdin closed) and when the runtime saw it exit.
export function stopTimes(stderr) {
	const out = new Map();
	const re =
		/^(\d\d:\d\d:\d\d\.\d{3}) .*?pid (\d+): (running -> stop-stdin|exited)/gm;
	for (const m of stderr.matchAll(re)) {
		const pid = Number(m[2]);
		const e = out.get(pid) ?? {};
		if (m[3] === 'exited')
			e.exited = logStampMs(m[1]);
		else
			e.stopStart = logStampMs(m[1]);
		out.set(pid, e);
	}
	return out;
}

export async function writeFullConfig(file, config) {
	await fsp.writeFile(file, JSON.stringify(config, null, 2));
	return file;
}

// Runs body(rt, ctx) against a runtime serving the full config object,
// then stops every runtime it started and fails when one did not exit as
// expected (0 unless ctx.expectExit said otherwise) or left a learned
// process behind. ctx.launch(opts) starts another runtime on the same home
// and config; ctx.expectExit(rt, code|'SIGKILL'); ctx.defer(fn) runs fn at
// the end (cleanup of processes the test started itself).
export async function withConfig(t, config, opts, body) {
	if (typeof opts === 'function') {
		body = opts;
		opts = {};
	}
	const home = await makeHome('mcpvisor-e2e-life-');
	const file = await writeFullConfig(path.join(home, 'mcp.json'), config);
	const runtimes = [];
	const deferred = [];
	const abandoned = new Promise((_, reject) => {
		const why = () =>
			reject(new Error('test timed out or was cancelled'));
		if (t.signal.aborted)
			why();
		t.signal.addEventListener('abort', why, { once: true });
	});
	abandoned.catch(() => {});
	const ctx = {
		home,
		configPath: file,
		async launch(o = {}) {
			const rt = new Runtime(home, file);
			rt.expected = 0;
			runtimes.push(rt);
			await rt.start(o);
			return rt;
		},
		expectExit(rt, what) {
			rt.expected = what;
		},
		defer(fn) {
			deferred.push(fn);
		},
		writeConfig(cfg) {
			return writeFullConfig(file, cfg);
		},
	};
	let failure = null;
	try {
		const rt = await Promise.race([ctx.launch(opts), abandoned]);
		await Promise.race([body(rt, ctx), abandoned]);
	} catch (e) {
		failure = e;
	}
	const problems = [];
	// The newest first: a later runtime may be what stops the leftovers
	// of an earlier one.
	for (const rt of [...runtimes].reverse()) {
		let p;
		try {
			p = await rt.stop();
		} catch (e) {
			p = [`stop: ${e.message}`];
		}
		const want =
			typeof rt.expected === 'string'
				? `runtime exited with signal ${rt.expected}`
				: `runtime exited with ${rt.expected}`;
		if (rt.expected !== 0) {
			const ex = rt.exited;
			const got =
				typeof rt.expected === 'string'
					? ex?.signal === rt.expected
					: ex?.code === rt.expected;
			if (!got)
				p.push(
					`runtime exited with ${ex?.code ?? 'signal ' + ex?.signal}, ` +
						`expected ${rt.expected}`,
				);
			p = p.filter((x) => x !== want);
		}
		problems.push(...p);
	}
	for (const fn of deferred) {
		try {
			await fn();
		} catch (e) {
			problems.push(`cleanup: ${e.message}`);
		}
	}
	if (!failure && problems.length === 0) {
		await fsp.rm(home, { recursive: true, force: true });
		return;
	}
	const tails = runtimes
		.map(
			(rt, i) =>
				`--- runtime ${i + 1} stderr (tail) ---\n` +
				rt.stderr().split('\n').slice(-40).join('\n'),
		)
		.join('\n');
	let msg = failure ? failure.message : problems.join('; ');
	if (failure && problems.length)
		msg += `\n(also at stop: ${problems.join('; ')})`;
	throw new Error(`${msg}\n${tails}`, { cause: failure ?? undefined });
}
