// Sharing and lifetime on real processes: which sessions share an instance
// per scope (and where it runs), idle close and its precision, long calls
// that outlive the idle timeout, reload, drain on SIGTERM, SIGKILL of the
// runtime and the journal's cleanup, session end and expiry, and starting
// only what is used.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { connect, demo, sessionLabel, waitFor } from './lib.mjs';
import { waitCountLine } from './protocol-lib.mjs';
import {
	alive,
	awaitGone,
	childrenOf,
	instancesOf,
	openSession,
	procStat,
	sleep,
	statusPids,
	stopTimes,
	watchGone,
	withConfig,
} from './lifetime-lib.mjs';

// The demo's stop ladder steps (stdin closed, then SIGTERM, then SIGKILL)
// wait 2 s each; a server that ignores both takes about 4 s to stop.
const LADDER_MS = 4000;

const scoped = (extra = {}) => ({
	sess: demo(['--name', 'sess'], { scope: 'session', ...extra }),
	spc: demo(['--name', 'spc'], { scope: 'space', ...extra }),
	app: demo(['--name', 'app'], { scope: 'app', ...extra }),
});

async function makeSpaces(home) {
	const s1 = path.join(home, 's1');
	const s2 = path.join(home, 's2');
	await fsp.mkdir(s1);
	await fsp.mkdir(s2);
	return [fs.realpathSync(s1), fs.realpathSync(s2)];
}

// Polls the status through the CLI (each poll spawns it, so not too often).
async function statusUntil(rt, cond, ms, what) {
	const end = Date.now() + ms;
	for (;;) {
		const st = await rt.status();
		if (cond(st))
			return st;
		if (Date.now() > end)
			throw new Error(
				`timed out after ${ms} ms waiting for ${what}; status: ` +
					JSON.stringify(st),
			);
		await sleep(100);
	}
}

function pidResult(r) {
	return JSON.parse(r.content[0].text);
}

test('scopes: session, space and app instances are shared as configured and run in the right folder', {
	timeout: 60_000,
}, async (t) => {
	// A long idle timeout per server, so nothing closes while we look.
	const config = { idleTimeout: '1500ms', mcpServers: scoped({ idleTimeout: '60s' }) };
	await withConfig(t, config, async (rt, ctx) => {
		const [s1, s2] = await makeSpaces(ctx.home);
		const a = await openSession(rt, s1);
		const b = await openSession(rt, s1);
		const c = await openSession(rt, s2);
		const clients = { a, b, c };
		const info = {};
		for (const srv of ['sess', 'spc', 'app']) {
			info[srv] = {};
			for (const [k, cl] of Object.entries(clients))
				info[srv][k] = await rt.demoPids(cl, `${srv}__pid`);
		}
		const pid = (srv, k) => info[srv][k].pid;
		const cwd = (srv, k) => info[srv][k].cwd;

		// session: one each, in the session's space.
		assert.equal(
			new Set(['a', 'b', 'c'].map((k) => pid('sess', k))).size,
			3,
			`session scope pids ${JSON.stringify(info.sess)}`,
		);
		assert.deepEqual(
			['a', 'b', 'c'].map((k) => cwd('sess', k)),
			[s1, s1, s2],
			'session instances run in their space',
		);
		// space: A and B share, C has its own.
		assert.equal(pid('spc', 'a'), pid('spc', 'b'), 'A and B share the space instance');
		assert.notEqual(pid('spc', 'a'), pid('spc', 'c'), 'C has its own space instance');
		assert.deepEqual(
			['a', 'b', 'c'].map((k) => cwd('spc', k)),
			[s1, s1, s2],
			'space instances run in the space',
		);
		// app: one for all, where the runtime started.
		assert.equal(pid('app', 'a'), pid('app', 'b'));
		assert.equal(pid('app', 'a'), pid('app', 'c'));
		for (const k of ['a', 'b', 'c'])
			assert.equal(cwd('app', k), process.cwd(), 'app instance cwd');

		const expected = [
			...new Set(
				Object.values(info).flatMap((m) =>
					Object.values(m).map((i) => i.pid),
				),
			),
		].sort((x, y) => x - y);
		assert.equal(expected.length, 6, '3 + 2 + 1 instances');
		for (const p of expected)
			assert.equal(procStat(p)?.ppid, rt.child.pid, `pid ${p} is the runtime's child`);

		// Sessions held open: status shows exactly those six, and the
		// runtime has exactly those six live children.
		const st = await rt.status();
		assert.equal(st.sessions, 3, 'three sessions');
		assert.deepEqual(statusPids(st), expected, 'status pids');
		assert.equal(instancesOf(st, 'sess').length, 3);
		assert.equal(instancesOf(st, 'spc').length, 2);
		assert.equal(instancesOf(st, 'app').length, 1);
		assert.deepEqual(childrenOf(rt.child.pid), expected, 'live children');

		// Members: the shared instances list every session using them.
		const spcA = instancesOf(st, 'spc').find((i) => i.pid === pid('spc', 'a'));
		assert.deepEqual([...spcA.sessions].sort(), [a.sid, b.sid].map(sessionLabel).sort());
		assert.deepEqual(
			[...instancesOf(st, 'app')[0].sessions].sort(),
			[a.sid, b.sid, c.sid].map(sessionLabel).sort(),
		);
		for (const i of instancesOf(st, 'sess'))
			assert.equal(i.sessions.length, 1, 'session instance has one member');
		console.log(
			`# scopes: ${expected.length} instances (3 session + 2 space + 1 app), ` +
				`${childrenOf(rt.child.pid).length} live children of the runtime`,
		);
	});
});

test('idle close: every instance closes about the idle timeout after its last call; the next call starts fresh', {
	timeout: 80_000,
}, async (t) => {
	const IDLE = 1500;
	const config = { idleTimeout: '1500ms', mcpServers: scoped() };
	await withConfig(t, config, { args: ['--log-level', 'debug'] }, async (rt, ctx) => {
		const [s1, s2] = await makeSpaces(ctx.home);
		const clients = {
			a: await openSession(rt, s1),
			b: await openSession(rt, s1),
			c: await openSession(rt, s2),
		};
		// The calls to one shared instance back to back, so that it does
		// not idle out between them.
		const lastAnswer = new Map();
		const server = new Map();
		const info = {};
		for (const srv of ['sess', 'spc', 'app']) {
			info[srv] = {};
			for (const [k, cl] of Object.entries(clients)) {
				const i = await rt.demoPids(cl, `${srv}__pid`);
				lastAnswer.set(i.pid, Date.now());
				server.set(i.pid, srv);
				info[srv][k] = i;
			}
		}
		assert.equal(info.spc.a.pid, info.spc.b.pid, 'space instance shared');
		assert.equal(info.app.a.pid, info.app.c.pid, 'app instance shared');
		const pids = [...lastAnswer.keys()];
		assert.equal(pids.length, 6, `instances: ${JSON.stringify(info)}`);

		const last = Math.max(...lastAnswer.values());
		const goneAt = await watchGone(pids, last + IDLE + 5000 - Date.now());
		const still = pids.filter((p) => !goneAt.has(p));
		assert.deepEqual(still, [], 'instances still alive after idle timeout + 5 s');

		// The runtime's log lines of the last stop may reach us a moment
		// after the process is seen gone.
		const stops = await waitFor(() => {
			const m = stopTimes(rt.stderr());
			return pids.every((p) => m.get(p)?.exited) ? m : null;
		}, 3000, 'the stop of every pid in the log').catch(() => stopTimes(rt.stderr()));
		const rows = [];
		for (const p of pids) {
			const after = goneAt.get(p) - lastAnswer.get(p);
			const s = stops.get(p) ?? {};
			rows.push({
				pid: p,
				server: server.get(p),
				goneLateMs: after - IDLE,
				timerLateMs: s.stopStart ? s.stopStart - lastAnswer.get(p) - IDLE : null,
				ladderMs: s.stopStart && s.exited ? s.exited - s.stopStart : null,
			});
			// Never before the idle timeout (the answer reaches us a
			// moment after the lease ends), at most 5 s after it.
			assert.ok(after >= IDLE - 300, `pid ${p} gone ${after} ms after its last call`);
			assert.ok(after <= IDLE + 5000, `pid ${p} gone ${after} ms after its last call`);
			assert.ok(s.stopStart && s.exited, `no stop logged for pid ${p}`);
			// The demo exits on stdin EOF: the ladder's first step.
			assert.ok(s.exited - s.stopStart < 2000, `ladder of pid ${p}`);
		}
		const late = rows.map((r) => r.goneLateMs);
		const ladder = rows.map((r) => r.ladderMs);
		console.log(
			`# idle close (idleTimeout ${IDLE} ms, 6 instances): pid gone ` +
				`${Math.min(...late)}..${Math.max(...late)} ms after idle timeout ` +
				`(from the last call's answer); stop ladder ` +
				`${Math.min(...ladder)}..${Math.max(...ladder)} ms`,
		);
		for (const r of rows)
			console.log(`#   ${JSON.stringify(r)}`);

		// Closed, not forgotten: no pid, no child, tools still offered.
		const st = await rt.status();
		assert.deepEqual(statusPids(st), [], 'no instance pid after idle close');
		for (const srv of ['sess', 'spc', 'app'])
			for (const i of instancesOf(st, srv))
				assert.notEqual(i.state, 'running', `${srv}: ${JSON.stringify(i)}`);
		assert.deepEqual(childrenOf(rt.child.pid), [], 'no live child');
		const tools = await clients.a.listAll();
		assert.ok(tools.some((x) => x.name === 'sess__pid'), 'tools kept');

		// The next use starts fresh instances.
		for (const srv of ['sess', 'spc', 'app']) {
			const i = await rt.demoPids(clients.a, `${srv}__pid`);
			assert.ok(!pids.includes(i.pid), `${srv}: new pid ${i.pid}`);
			assert.equal(i.cwd, srv === 'app' ? process.cwd() : s1, `${srv} cwd`);
		}
	});
});

test('a call longer than the idle timeout finishes; the instance stays up until it ends', {
	timeout: 60_000,
}, async (t) => {
	const config = { idleTimeout: '1s', mcpServers: { demo: demo(['--name', 'demo']) } };
	await withConfig(t, config, async (rt) => {
		const c = await connect(rt);
		const { pid } = await rt.demoPids(c);
		const t0 = Date.now();
		// Long enough that a busy machine's status still finds it
		// running past the idle timeout.
		const call = c.call('demo__sleep', { ms: 6000 });
		// Past the idle timeout: same process, still serving.
		await sleep(Math.max(0, t0 + 1700 - Date.now()));
		process.kill(pid, 0);
		assert.ok(alive(pid), 'instance alive past the idle timeout');
		const st = await rt.status();
		const inst = instancesOf(st, 'demo')[0];
		assert.equal(inst.pid, pid, 'same instance');
		assert.equal(inst.state, 'running');
		assert.equal(inst.inflight, 1, 'call in flight');
		const r = await call;
		const took = Date.now() - t0;
		assert.match(r.content[0].text, /slept 6000 ms/);
		assert.ok(took >= 5900, `call took ${took} ms`);
		assert.ok(alive(pid), 'instance alive when the call ends');
		// And then it idles out, about the idle timeout after the call.
		const gone = await awaitGone(pid, 1000 + 5000, 'the instance after the call');
		assert.ok(gone - t0 - took >= 800, `idled out ${gone - t0 - took} ms after the call`);
	});
});

for (const how of ['SIGHUP', 'mcpvisor reload']) {
	test(`reload (${how}): only the changed server restarts; a removed server closes`, {
		timeout: 60_000,
	}, async (t) => {
		const base = { idleTimeout: '60s', mcpServers: {} };
		const cfg = (servers) => ({ ...base, mcpServers: servers });
		const a = demo(['--name', 'a']);
		await withConfig(t, cfg({ a, b: demo(['--name', 'b']) }), async (rt, ctx) => {
			const reload = async (closed) => {
				if (how === 'SIGHUP') {
					const before = rt.stderr().length;
					rt.child.kill('SIGHUP');
					await waitFor(
						() => /config reloaded from /.test(rt.stderr().slice(before)),
						5000,
						'the reload log line',
					);
					assert.match(
						rt.stderr().slice(before),
						new RegExp(`${closed} instance\\(s\\) closed`),
					);
				} else {
					const r = await rt.cli(['reload']);
					assert.equal(r.code, 0, `reload: ${r.stderr}`);
					assert.match(
						r.stdout + r.stderr,
						new RegExp(`${closed} instance\\(s\\) closed`),
					);
				}
			};
			const c = await connect(rt);
			const a1 = await rt.demoPids(c, 'a__pid');
			const b1 = await rt.demoPids(c, 'b__pid');

			await ctx.writeConfig(
				cfg({ a, b: demo(['--name', 'b', '--stderr-lines', '1']) }),
			);
			await reload(1);
			await awaitGone(b1.pid, 5000, "b's old instance");
			assert.ok(alive(a1.pid), 'a untouched');
			let st = await rt.status();
			assert.equal(instancesOf(st, 'a')[0].pid, a1.pid, "a's pid in status");
			assert.equal(instancesOf(st, 'a')[0].state, 'running');
			assert.equal((await rt.demoPids(c, 'a__pid')).pid, a1.pid, 'a same pid');
			const b2 = await rt.demoPids(c, 'b__pid');
			assert.notEqual(b2.pid, b1.pid, 'b restarted with the new args');
			st = await rt.status();
			const bi = instancesOf(st, 'b').find((i) => i.pid === b2.pid);
			assert.ok(bi, `b's new instance in status: ${JSON.stringify(st)}`);
			assert.match(bi.stderr, /stderr line 1 of 1/, 'new args in effect');

			// Removing b closes it; a still untouched.
			await ctx.writeConfig(cfg({ a }));
			await reload(1);
			await awaitGone(b2.pid, 5000, 'the removed server');
			assert.ok(alive(a1.pid), 'a untouched by the removal');
			st = await rt.status();
			assert.ok(!st.servers.some((s) => s.name === 'b'), 'b gone from status');
			assert.deepEqual(statusPids(st), [a1.pid]);
			const tools = await c.listAll();
			assert.ok(!tools.some((x) => x.name.startsWith('b__')), 'b tools dropped');
			assert.ok(tools.some((x) => x.name === 'a__pid'));
			const r = await c.request('tools/call', { name: 'b__pid', arguments: {} });
			assert.ok(r.error || r.result?.isError, `b__pid: ${JSON.stringify(r)}`);
			assert.deepEqual(childrenOf(rt.child.pid), [a1.pid]);
		});
	});
}

test('SIGTERM during a call: the call completes, every child (grandchild, SIGTERM-ignoring) goes, exit 0', {
	timeout: 90_000,
}, async (t) => {
	// The demo writes "call sleep" as the call reaches it: the call is
	// in flight from then, however slowly a loaded machine answers status.
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpvisor-e2e-drain-'));
	t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
	const count = path.join(dir, 'count');
	const config = {
		shutdownGrace: '8s',
		idleTimeout: '60s',
		mcpServers: {
			plain: demo(['--name', 'plain', '--count-file', count]),
			gc: demo(['--name', 'gc', '--grandchild']),
			stubborn: demo(['--name', 'stubborn', '--ignore-sigterm']),
		},
	};
	await withConfig(t, config, async (rt) => {
		const c = await connect(rt);
		const plain = await rt.demoPids(c, 'plain__pid');
		const gc = await rt.demoPids(c, 'gc__pid');
		const stubborn = await rt.demoPids(c, 'stubborn__pid');
		assert.ok(gc.grandchild > 1, 'grandchild pid');
		assert.ok(alive(gc.grandchild));
		const all = [plain.pid, gc.pid, gc.grandchild, stubborn.pid];

		const callAt = Date.now();
		const inflight = c
			.request('tools/call', { name: 'plain__sleep', arguments: { ms: 2000 } })
			.catch((e) => ({ lost: `${e.message} ${e.cause?.message ?? ''}` }));
		await waitCountLine(count, 'call sleep', 1, 5000);
		const t0 = Date.now();
		rt.terminate();
		const reply = await inflight;
		const answered = Date.now() - callAt;
		assert.ok(reply.result, `in-flight call: ${JSON.stringify(reply)}`);
		assert.match(reply.result.content[0].text, /slept 2000 ms/);
		// Grace, then the stop ladder, with a margin.
		const bound = 8000 + LADDER_MS + 2000;
		const ex = await Promise.race([rt.exitPromise, sleep(bound)]);
		const took = Date.now() - t0;
		if (!ex) {
			// Say how it hangs, then end it so the teardown is quick.
			const st = procStat(rt.child.pid);
			rt.child.kill('SIGKILL');
			await rt.exitPromise;
			assert.fail(
				`runtime did not exit within ${bound} ms of SIGTERM ` +
					`(call answered after ${answered} ms; runtime state ` +
					`${st?.state}; log: ${rt.stderr().split('\n').slice(-3).join(' | ')})`,
			);
		}
		assert.equal(ex.code, 0, 'exit code');
		assert.match(rt.stderr(), /stopping \(SIGTERM\); 1 call\(s\) in flight, grace 8000 ms/);
		await waitFor(() => all.every((p) => !alive(p)), 3000, 'every child gone');
		console.log(
			`# drain: call answered ${answered} ms after it was sent; ` +
				`runtime exited ${took} ms after SIGTERM`,
		);
	});
});

test('SIGTERM with a call longer than the grace: cancelled at the grace, exit 1, said in the log', {
	timeout: 60_000,
}, async (t) => {
	const config = { idleTimeout: '60s', mcpServers: { plain: demo(['--name', 'plain']) } };
	await withConfig(t, config, { args: ['--grace', '1s'] }, async (rt, ctx) => {
		ctx.expectExit(rt, 1);
		const c = await connect(rt);
		const { pid } = await rt.demoPids(c, 'plain__pid');
		const inflight = c
			.request('tools/call', { name: 'plain__sleep', arguments: { ms: 10000 } })
			.catch((e) => ({ lost: `${e.message} ${e.cause?.message ?? ''}` }));
		await waitFor(
			async () => instancesOf(await rt.status(), 'plain')[0]?.inflight > 0,
			5000,
			'the call in flight',
		);
		const t0 = Date.now();
		rt.terminate();
		const ex = await rt.exitPromise;
		const took = Date.now() - t0;
		assert.equal(ex.code, 1, 'exit code when calls were cancelled');
		assert.match(rt.stderr(), /1 call\(s\) still running after the 1000 ms grace period were cancelled/);
		assert.ok(took >= 800, `exit ${took} ms after SIGTERM: before the grace`);
		assert.ok(took < 1000 + LADDER_MS + 2000, `exit ${took} ms after SIGTERM`);
		const reply = await inflight;
		assert.ok(!reply.result, `the call was not cut short: ${JSON.stringify(reply)}`);
		await awaitGone(pid, 3000, 'the server');
		console.log(`# grace exceeded: exit 1 after ${took} ms; client got ${JSON.stringify(reply).slice(0, 200)}`);
	});
});

test('SIGKILL of the runtime: direct children die at once; the next start stops the grandchild and nothing else', {
	timeout: 80_000,
}, async (t) => {
	const config = {
		idleTimeout: '60s',
		mcpServers: {
			stubborn: demo(['--name', 'stubborn', '--ignore-sigterm']),
			gc: demo(['--name', 'gc', '--grandchild']),
		},
	};
	await withConfig(t, config, async (rt, ctx) => {
		const c = await connect(rt);
		const stubborn = await rt.demoPids(c, 'stubborn__pid');
		const gc = await rt.demoPids(c, 'gc__pid');
		assert.ok(gc.grandchild > 1, 'grandchild pid');
		// Entries naming a server are written a loop turn after its
		// spawn, off the loop: the reconcile checked below needs them.
		const jpath = path.join(ctx.home, 'state', 'journal.json');
		await waitFor(async () => {
			const pids = JSON.parse(await fsp.readFile(jpath, 'utf8')).entries.map((e) => e.pid);
			return pids.includes(stubborn.pid) && pids.includes(gc.pid);
		}, 5000, 'both servers in the journal');

		ctx.expectExit(rt, 'SIGKILL');
		const t0 = Date.now();
		rt.terminate('SIGKILL');
		await rt.exitPromise;
		const gone = await watchGone([stubborn.pid, gc.pid], 3000);
		const times = [stubborn.pid, gc.pid].map((p) => gone.get(p) - t0);
		assert.ok(gone.has(stubborn.pid), 'SIGTERM-ignoring child outlived the runtime');
		assert.ok(gone.has(gc.pid), 'child outlived the runtime');
		for (const ms of times)
			assert.ok(ms <= 1500, `direct child gone ${ms} ms after SIGKILL`);
		assert.ok(alive(gc.grandchild), 'the grandchild survives (not a direct child)');
		console.log(`# SIGKILL: direct children gone after ${times.join(', ')} ms`);

		// A stranger in the journal: alive, but with another start time.
		const journal = path.join(ctx.home, 'state', 'journal.json');
		const j = JSON.parse(await fsp.readFile(journal, 'utf8'));
		const listed = j.entries.map((e) => e.pid);
		assert.ok(listed.includes(stubborn.pid) && listed.includes(gc.pid), `journal: ${JSON.stringify(j)}`);
		const stranger = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
		const sStart = await waitFor(() => procStat(stranger.pid)?.start, 5000, 'sleep started');
		ctx.defer(() => {
			if (procStat(stranger.pid)?.start === sStart)
				process.kill(stranger.pid, 'SIGKILL');
		});
		j.entries.push({
			pid: stranger.pid,
			pgid: stranger.pid,
			startTime: Number(sStart) + 12345,
			token: crypto.randomBytes(16).toString('hex'),
			key: 'unrelated',
		});
		await fsp.writeFile(journal, JSON.stringify(j));

		const t1 = Date.now();
		const rt2 = await ctx.launch();
		const gcGone = await awaitGone(gc.grandchild, 10_000, 'the orphaned grandchild');
		assert.ok(alive(stranger.pid), 'the unrelated process was signalled');
		assert.equal(procStat(stranger.pid).start, sStart, 'same unrelated process');
		assert.match(rt2.stderr(), new RegExp(`pid ${stranger.pid} now belongs to another process; left alone`));
		assert.match(rt2.stderr(), /journal reconciled: 3 entries, 1 stopped, 1 left alone/);
		const after = JSON.parse(await fsp.readFile(journal, 'utf8'));
		assert.deepEqual(after.entries, [], 'journal emptied after reconcile');
		console.log(`# reconcile: grandchild gone ${gcGone - t1} ms after the second start`);

		process.kill(stranger.pid, 'SIGKILL');
		await awaitGone(stranger.pid, 3000, 'the unrelated sleep');
	});
});

test('DELETE of a session drops its record and closes what only it used at once; app instances stay warm', {
	timeout: 60_000,
}, async (t) => {
	const config = {
		idleTimeout: '60s',
		mcpServers: {
			sess: demo(['--name', 'sess'], { scope: 'session' }),
			app: demo(['--name', 'app'], { scope: 'app' }),
		},
	};
	await withConfig(t, config, async (rt) => {
		const a = await connect(rt);
		const b = await connect(rt);
		const ia = await rt.demoPids(a, 'sess__pid');
		const ib = await rt.demoPids(b, 'sess__pid');
		const app = await rt.demoPids(a, 'app__pid');
		assert.equal((await rt.demoPids(b, 'app__pid')).pid, app.pid);
		assert.notEqual(ia.pid, ib.pid);
		let st = await rt.status();
		assert.equal(st.sessions, 2);

		const bSid = b.sid;
		const t0 = Date.now();
		await a.close();
		const goneA = await awaitGone(ia.pid, 5000, "A's session instance");
		st = await statusUntil(rt, (s) => s.sessions === 1, 3000, 'sessions 1');
		console.log(`# DELETE: A's session instance gone ${goneA - t0} ms after DELETE (idle timeout 60 s)`);
		assert.ok(goneA - t0 < 3000, `closed ${goneA - t0} ms after DELETE`);
		assert.ok(alive(ib.pid) && alive(app.pid), "B's instances untouched");
		assert.deepEqual(statusPids(st), [ib.pid, app.pid].sort((x, y) => x - y));
		assert.deepEqual(instancesOf(st, 'app')[0].sessions, [sessionLabel(bSid)]);

		// The last session using the app instance goes: its own instance
		// closes, the app instance stays warm for its idle time (seed 003).
		const t1 = Date.now();
		await b.close();
		const g = await watchGone([ib.pid], 5000);
		assert.ok(g.has(ib.pid), "the last session's own instance closed");
		st = await statusUntil(rt, (s) => s.sessions === 0, 3000, 'sessions 0');
		assert.deepEqual(statusPids(st), [app.pid]);
		assert.ok(alive(app.pid), 'the app instance is kept');
		assert.deepEqual(instancesOf(st, 'app')[0].sessions, []);
		console.log(`# DELETE of the last session: its own instance gone ${g.get(ib.pid) - t1} ms after; app kept`);
	});
});

test('session expiry: an idle session is dropped after --session-timeout and its instance closes', {
	timeout: 60_000,
}, async (t) => {
	const config = {
		idleTimeout: '60s',
		mcpServers: { sess: demo(['--name', 'sess'], { scope: 'session' }) },
	};
	await withConfig(t, config, { args: ['--session-timeout', '2s'] }, async (rt) => {
		const c = await connect(rt);
		const { pid } = await rt.demoPids(c, 'sess__pid');
		const t0 = Date.now();
		assert.equal((await rt.status()).sessions, 1);
		await statusUntil(rt, (s) => s.sessions === 0, 10_000, 'the session dropped');
		const dropped = Date.now() - t0;
		assert.ok(dropped >= 1500, `dropped ${dropped} ms after its last request`);
		const gone = await awaitGone(pid, 3000, 'the expired session instance');
		console.log(`# expiry (2 s + 5 s sweep): session dropped within ${dropped} ms, instance gone ${gone - t0} ms after the last request`);
		// The session is gone for the client too.
		const res = await c.post({ jsonrpc: '2.0', id: 99, method: 'ping' });
		await res.arrayBuffer();
		assert.equal(res.status, 404, 'expired session id');
		c.sid = null;
	});
});

test('start only what is used: connecting and status start nothing; a call starts only its server', {
	timeout: 60_000,
}, async (t) => {
	const config = {
		idleTimeout: '60s',
		mcpServers: {
			a: demo(['--name', 'a']),
			b: demo(['--name', 'b'], { scope: 'space' }),
			c: demo(['--name', 'c'], { scope: 'session' }),
		},
	};
	await withConfig(t, config, async (rt, ctx) => {
		const [s1] = await makeSpaces(ctx.home);
		const cl = await openSession(rt, s1);
		await cl.result('ping');
		let st = await rt.status();
		assert.equal(st.sessions, 1);
		assert.deepEqual(statusPids(st), [], 'no instance pid after connect');
		for (const s of st.servers)
			for (const i of s.instances ?? [])
				assert.ok(!['running', 'starting'].includes(i.state), `${s.name}: ${JSON.stringify(i)}`);
		assert.deepEqual(childrenOf(rt.child.pid), [], 'no process after connect + status');

		const r = await cl.call('a__echo', { text: 'only a' });
		assert.equal(r.content[0].text, 'only a');
		st = await rt.status();
		const pids = statusPids(st);
		assert.equal(pids.length, 1, `one instance: ${JSON.stringify(st)}`);
		assert.equal(instancesOf(st, 'a')[0].pid, pids[0]);
		for (const n of ['b', 'c'])
			assert.ok(instancesOf(st, n).every((i) => !i.pid), `${n} not started`);
		assert.deepEqual(childrenOf(rt.child.pid), pids, 'exactly one process');
	});
});
