// Staying up when servers fail, on real processes: a dropped server keeps
// its tools and reconnects on the next use, a server that cannot start backs
// off, auth failures are not retried, the warm tool cache answers at once,
// a lost call is never re-sent, and explicit stop/restart win.
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import {
	DEMO,
	DEMO_TOOLS,
	connect,
	demo,
	makeHome,
	runInHome,
	waitFor,
	withRuntime,
	writeConfig,
} from './lib.mjs';
import {
	StartWatcher,
	callCount,
	filesUnder,
	instanceOf,
	openGetStream,
	sleep,
	startCount,
	startPids,
	timed,
	trackStarts,
	waitInflight,
	waitState,
} from './failures-lib.mjs';

const NOTE = '(tools kept; reconnects when next used)';
const demoNames = (p) => DEMO_TOOLS.map((n) => `${p}__${n}`);
const isToolsChanged = (m) => m.method === 'notifications/tools/list_changed';

function median(xs) {
	const s = [...xs].sort((a, b) => a - b);
	return s[Math.floor(s.length / 2)];
}

function callReq(c, name, args = {}) {
	return c.request('tools/call', { name, arguments: args });
}

test('a dropped server keeps its tools, shows why, and reconnects on the next call', {
	timeout: 80_000,
}, async (t) => {
	const home = await makeHome('mcpvisor-e2e-drop-');
	const cf = path.join(home, 'count');
	try {
		await withRuntime(
			t,
			{
				demo: demo([
					'--exit-after-init', '800',
					'--stderr-lines', '2',
					'--count-file', cf,
				]),
			},
			async (rt) => {
				const c = await connect(rt);
				const get = await openGetStream(rt, c);
				try {
					const before = await c.listAll();
					assert.deepEqual(
						before.map((x) => x.name),
						demoNames('demo'),
					);
					assert.equal(startCount(cf), 1, 'the list started it');
					trackStarts(rt, cf);

					// It exits 800 ms after initialize, on its own.
					const inst = await waitState(rt, 'demo', 'failed');
					assert.match(inst.error, /\bexit/i, inst.error);
					assert.match(inst.error, /\b3\b/, 'exit code in the reason');
					assert.match(inst.stderr, /stderr line 1 of 2/);
					assert.match(inst.stderr, /stderr line 2 of 2/);
					assert.match(inst.stderr, /exiting with code 3/);
					assert.equal(inst.note, NOTE);

					const after = await c.listAll();
					assert.deepEqual(after, before, 'the same tools, unchanged');

					// Nothing respawns in the background.
					await sleep(3000);
					assert.equal(startCount(cf), 1, 'respawned with no request');
					const still = instanceOf(await rt.status(), 'demo').inst;
					assert.equal(still.state, 'failed', JSON.stringify(still));

					// The next call reconnects and is answered.
					const { value: r, ms } = await timed(
						callReq(c, 'demo__echo', { text: 'back' }),
					);
					assert.ok(r.result, `call after the drop: ${JSON.stringify(r)}`);
					assert.equal(r.result.content[0].text, 'back');
					assert.equal(startCount(cf), 2, 'one reconnect');
					trackStarts(rt, cf);
					console.log(
						`drop -> reconnect -> answered call: ${ms.toFixed(1)} ms`,
					);
					assert.ok(ms < 5000, `reconnecting call took ${ms} ms`);

					// Two concurrent calls after the next drop share one spawn.
					await waitState(rt, 'demo', 'failed');
					assert.equal(startCount(cf), 2);
					const [a, b] = await Promise.all([
						timed(callReq(c, 'demo__echo', { text: 'one' })),
						timed(callReq(c, 'demo__add', { a: 2, b: 3 })),
					]);
					assert.equal(a.value.result?.content[0].text, 'one', JSON.stringify(a.value));
					assert.deepEqual(
						b.value.result?.structuredContent,
						{ sum: 5 },
						JSON.stringify(b.value),
					);
					console.log(
						`two concurrent calls after a drop: ${a.ms.toFixed(1)} ms, ` +
							`${b.ms.toFixed(1)} ms`,
					);
					assert.equal(startCount(cf), 3, 'exactly one shared spawn');
					trackStarts(rt, cf);
					// The lists never changed: no list_changed anywhere.
					assert.ok(!get.closed, 'GET stream still open');
				} finally {
					await get.close();
				}
				const changed = [...get.messages, ...c.notes].filter(isToolsChanged);
				assert.deepEqual(changed, [], 'list_changed sent for a drop');
				await c.close();
			},
		);
	} finally {
		await fsp.rm(home, { recursive: true, force: true });
	}
});

test('a server that dies at every start: the real error, then backoff 1, 2, 4 s', {
	timeout: 80_000,
}, async (t) => {
	const home = await makeHome('mcpvisor-e2e-backoff-');
	const cf = path.join(home, 'count');
	try {
		await withRuntime(
			t,
			{
				bad: demo([
					'--exit-at-start', '9',
					'--stderr-lines', '2',
					'--count-file', cf,
				]),
			},
			async (rt) => {
				const c = await connect(rt);
				const watch = new StartWatcher(cf);
				try {
					const first = await callReq(c, 'bad__echo', { text: 'x' });
					assert.ok(first.error, `first call: ${JSON.stringify(first)}`);
					assert.match(first.error.message, /\b9\b/, 'exit code');
					const data = first.error.data;
					assert.ok(data, 'error data');
					assert.match(data.stderr, /stderr line 2 of 2/);
					assert.match(data.stderr, /exiting at start with code 9/);
					assert.equal(startCount(cf), 1);

					// Within the backoff: at once, nothing spawned.
					const fastMs = [];
					for (let i = 0; i < 3; i++) {
						const { value: r, ms } = await timed(
							callReq(c, 'bad__echo', { text: 'x' }),
						);
						assert.ok(r.error, JSON.stringify(r));
						fastMs.push(ms);
						assert.match(r.error.message, /next attempt can run in/);
						assert.match(r.error.message, /\b9\b/, 'the last error');
					}
					assert.equal(startCount(cf), 1, 'spawned during the backoff');

					// Keep asking; spawns come 1, 2, then 4 s apart.
					watch.poll();
					const t0 = watch.times[0];
					while (watch.times.length < 4 && Date.now() - t0 < 12_000) {
						const n = startCount(cf);
						const { value: r, ms } = await timed(
							callReq(c, 'bad__echo', { text: 'x' }),
						);
						assert.ok(r.error, JSON.stringify(r));
						if (startCount(cf) === n) {
							fastMs.push(ms);
							assert.match(
								r.error.message,
								/next attempt can run in/,
								r.error.message,
							);
						}
						await sleep(100);
					}
					const times = watch.stop();
					const gaps = times.slice(1).map((x, i) => x - times[i]);
					const med = median(fastMs);
					console.log(
						`spawn gaps under backoff: ${gaps.join(', ')} ms; ` +
							`${fastMs.length} calls failed at once, median ` +
							`${med.toFixed(1)} ms, max ` +
							`${Math.max(...fastMs).toFixed(1)} ms`,
					);
					assert.equal(times.length, 4, `spawns seen: ${times.length}`);
					const bounds = [
						[800, 2500],
						[1600, 3700],
						[3200, 6500],
					];
					bounds.forEach(([lo, hi], i) =>
						assert.ok(
							gaps[i] >= lo && gaps[i] <= hi,
							`gap ${i + 1} is ${gaps[i]} ms, not in [${lo}, ${hi}]`,
						),
					);
					assert.ok(fastMs.length >= 30, `only ${fastMs.length} calls in backoff`);
					// At once: no wait for a start (bounds for a loaded machine).
					assert.ok(med < 200, `median call in backoff: ${med} ms`);
					assert.ok(
						Math.max(...fastMs) < 1000,
						`slowest call in backoff: ${Math.max(...fastMs)} ms`,
					);
					const inst = instanceOf(await rt.status(), 'bad').inst;
					assert.equal(inst.state, 'failed');
					assert.ok(inst.nextAttemptInMs > 0, JSON.stringify(inst));
				} finally {
					watch.stop();
				}
				await c.close();
			},
		);
	} finally {
		await fsp.rm(home, { recursive: true, force: true });
	}
});

test('an auth failure: needs_auth, tools dropped, never retried', {
	timeout: 60_000,
}, async (t) => {
	const home = await makeHome('mcpvisor-e2e-auth-');
	const cf = path.join(home, 'count');
	try {
		await withRuntime(
			t,
			{
				good: demo(['--name', 'good']),
				auth: demo(['--auth-fail', '--count-file', cf]),
			},
			async (rt) => {
				const c = await connect(rt);
				const tools = await c.listAll();
				assert.deepEqual(tools.map((x) => x.name), demoNames('good'));
				assert.equal(startCount(cf), 1, 'the list tried it once');
				const inst = await waitState(rt, 'auth', 'needs_auth');
				assert.match(inst.error, /unauthori[sz]ed|auth/i, inst.error);
				assert.deepEqual(inst.lists ?? {}, {}, 'its lists dropped');

				const fastMs = [];
				for (let i = 0; i < 5; i++) {
					const { value: r, ms } = await timed(
						callReq(c, 'auth__echo', { text: 'x' }),
					);
					assert.ok(r.error, JSON.stringify(r));
					fastMs.push(ms);
					assert.match(r.error.message, /authori[sz]/i, r.error.message);
					const again = await c.listAll();
					assert.deepEqual(again.map((x) => x.name), demoNames('good'));
				}
				assert.equal(startCount(cf), 1, 'a needs_auth server was spawned again');
				assert.ok(median(fastMs) < 200, `calls took ${fastMs} ms`);
				assert.ok(Math.max(...fastMs) < 1000, `calls took ${fastMs} ms`);
				const st = instanceOf(await rt.status(), 'auth').inst;
				assert.equal(st.state, 'needs_auth');
				await rt.demoPids(c, 'good__pid');
				await c.close();
			},
		);
	} finally {
		await fsp.rm(home, { recursive: true, force: true });
	}
});

test('warm tool cache: a slow server lists at once, no secret on disk; config change and corrupt cache', {
	timeout: 160_000,
}, async (t) => {
	const SECRET = 'sekret-value-123';
	const home = await makeHome('mcpvisor-e2e-cache-');
	const cf = path.join(home, 'count');
	const toolsDir = path.join(home, 'cache', 'tools');
	const server = (extra = []) =>
		demo(['--slow-start', '5000', '--count-file', cf, ...extra], {
			env: { API_TOKEN: SECRET },
		});
	const configA = await writeConfig(home, { demo: server() });
	const cacheFiles = async () =>
		(await filesUnder(toolsDir)).filter((f) => f.endsWith('.json'));
	try {
		// Run 1: a cold start waits for the slow server.
		let cold;
		await runInHome(t, home, configA, {}, async (rt) => {
			const c = await connect(rt);
			const { value: tools, ms } = await timed(c.listAll());
			cold = tools;
			assert.deepEqual(tools.map((x) => x.name), demoNames('demo'));
			assert.ok(ms >= 4000, `a 5 s start listed in ${ms} ms`);
			trackStarts(rt, cf);
			const env = await c.call('demo__env', { name: 'API_TOKEN' });
			assert.equal(env.content[0].text, SECRET, 'the env reached it');
			await c.close();
		});
		const filesA = await cacheFiles();
		assert.equal(filesA.length, 1, `cache files: ${filesA}`);
		const fileA = filesA[0];
		assert.match(path.basename(fileA), /^[0-9a-f]{64}\.json$/);
		for (const f of await filesUnder(path.join(home, 'cache'))) {
			assert.ok(!f.includes(SECRET), `secret in the name ${f}`);
			const bytes = await fsp.readFile(f);
			assert.ok(
				!bytes.includes(SECRET),
				`secret in the cache file ${f}`,
			);
		}

		// Run 2: the same home and config answer from the cache.
		await runInHome(t, home, configA, {}, async (rt) => {
			const c = await connect(rt);
			const { value: tools, ms } = await timed(c.listAll());
			console.log(`tools/list from a warm cache: ${ms.toFixed(1)} ms`);
			assert.deepEqual(tools, cold, 'the cached tools');
			// Without waiting for the 5 s start (that start is below).
			assert.ok(ms < 2500, `the cached list took ${ms} ms`);
			assert.equal(startCount(cf), 1, 'the cached list started it');
			let inst = instanceOf(await rt.status(), 'demo').inst;
			assert.equal(inst.listsFromCache, true, JSON.stringify(inst));
			assert.ok(
				inst.state !== 'starting' && inst.state !== 'running',
				`listing from the cache started it: ${inst.state}`,
			);
			// A call waits for the real (slow) start.
			const { value: r, ms: callMs } = await timed(
				callReq(c, 'demo__echo', { text: 'warm' }),
			);
			trackStarts(rt, cf);
			assert.equal(r.result?.content[0].text, 'warm', JSON.stringify(r));
			assert.ok(
				callMs >= 4000 && callMs < 20_000,
				`the first call took ${callMs} ms`,
			);
			assert.equal(startCount(cf), 2);
			inst = instanceOf(await rt.status(), 'demo').inst;
			assert.equal(inst.state, 'running');
			await c.close();
		});
		assert.deepEqual(await cacheFiles(), filesA, 'same config, same file');

		// Run 3: another argument is another instance key, another file.
		const configB = await writeConfig(home, {
			demo: server(['--stderr-lines', '1']),
		});
		await runInHome(t, home, configB, {}, async (rt) => {
			const c = await connect(rt);
			const { value: tools, ms } = await timed(c.listAll());
			assert.deepEqual(tools.map((x) => x.name), demoNames('demo'));
			assert.ok(ms >= 4000, `a changed config listed in ${ms} ms`);
			trackStarts(rt, cf);
			await c.close();
		});
		const filesB = await cacheFiles();
		assert.equal(filesB.length, 2, `cache files: ${filesB}`);
		assert.ok(filesB.includes(fileA), 'the first file kept');

		// Run 4: a corrupt cache file is ignored with a warning.
		await fsp.writeFile(fileA, '\u0000garbage{{{ not json');
		await writeConfig(home, { demo: server() });
		const logs = await runInHome(t, home, configA, {}, async (rt) => {
			const c = await connect(rt);
			const { value: tools, ms } = await timed(c.listAll());
			assert.deepEqual(tools, cold, 'the live tools');
			assert.ok(ms >= 4000, `listed in ${ms} ms over a corrupt cache`);
			trackStarts(rt, cf);
			const inst = instanceOf(await rt.status(), 'demo').inst;
			assert.notEqual(inst.listsFromCache, true, JSON.stringify(inst));
			// The live list replaces the garbage.
			await waitFor(
				async () => JSON.parse(await fsp.readFile(fileA, 'utf8')),
				5000,
				'the cache file rewritten',
			);
			await c.close();
		});
		assert.match(logs, /warn.*cache|cache.*warn/i, 'a warning about the cache');
	} finally {
		await fsp.rm(home, { recursive: true, force: true });
	}
});

test('an env secret never reaches status, the files under the home, or the log (debug level)', {
	timeout: 60_000,
}, async (t) => {
	const SECRET = 'sekret-value-123';
	await withRuntime(
		t,
		{ demo: demo([], { env: { API_TOKEN: SECRET } }) },
		{ args: ['--log-level', 'debug'] },
		async (rt) => {
			const c = await connect(rt);
			const env = await c.call('demo__env', { name: 'API_TOKEN' });
			assert.equal(env.content[0].text, SECRET, 'the env reached it');
			await rt.demoPids(c);
			const leaks = [];
			const views = [
				['status', '--json', '-v'],
				['status', '-v'],
				['status'],
			];
			for (const args of views) {
				const r = await rt.cli(args);
				assert.equal(r.code, 0, r.stderr);
				if (r.stdout.includes(SECRET))
					leaks.push(`\`mcpvisor ${args.join(' ')}\``);
			}
			// On disk: the journal, runtime file and cache (not the
			// config, which is where the secret comes from).
			for (const f of await filesUnder(rt.home)) {
				if (f === rt.configPath)
					continue;
				if ((await fsp.readFile(f)).includes(SECRET))
					leaks.push(path.relative(rt.home, f));
			}
			const logs = rt.stderr();
			if (logs.includes(SECRET))
				leaks.push(
					'the runtime log: ' +
						logs.split('\n').find((l) => l.includes(SECRET)),
				);
			assert.deepEqual(leaks, [], 'the env secret appears in');
			await c.close();
		},
	);
});

test('at most once: a call lost in a crash is not re-sent; a lost read is', {
	timeout: 60_000,
}, async (t) => {
	const home = await makeHome('mcpvisor-e2e-once-');
	const cf = path.join(home, 'count');
	try {
		await withRuntime(
			t,
			{ demo: demo(['--die-in-call', 'sleep', '--count-file', cf]) },
			async (rt) => {
				const c = await connect(rt);
				await c.listAll();
				trackStarts(rt, cf);
				const r = await callReq(c, 'demo__sleep', { ms: 50 });
				assert.ok(r.error, `the lost call: ${JSON.stringify(r)}`);
				assert.match(r.error.message, /may or may not have taken effect/);
				assert.equal(r.error.data?.mayHaveRun, true, JSON.stringify(r.error));
				assert.equal(callCount(cf, 'sleep'), 1);

				// Another tool reconnects; the lost call is never re-sent.
				const echo = await c.call('demo__echo', { text: 'after' });
				assert.equal(echo.content[0].text, 'after');
				const sum = await c.call('demo__add', { a: 1, b: 1 });
				assert.deepEqual(sum.structuredContent, { sum: 2 });
				assert.equal(startCount(cf), 2, 'one reconnect');
				trackStarts(rt, cf);
				assert.equal(callCount(cf, 'sleep'), 1, 'the call was sent twice');

				// A read in flight when the server dies is sent again.
				const { inst } = instanceOf(await rt.status(), 'demo');
				assert.equal(inst.pid, startPids(cf)[1], 'status -v pid');
				process.kill(inst.pid, 'SIGSTOP');
				const read = c.request('resources/read', { uri: 'demo://readme' });
				try {
					await waitInflight(rt, 'demo');
				} finally {
					process.kill(inst.pid, 'SIGKILL');
				}
				const got = await read;
				assert.ok(got.result, `the lost read: ${JSON.stringify(got)}`);
				assert.equal(got.result.contents[0].uri, 'demo://readme');
				assert.match(got.result.contents[0].text, /demo server/);
				assert.equal(startCount(cf), 3, 'a reconnect for the read');
				trackStarts(rt, cf);
				assert.equal(callCount(cf, 'sleep'), 1);
				await c.close();
			},
		);
	} finally {
		await fsp.rm(home, { recursive: true, force: true });
	}
});

test('explicit stop drops the tools at once; stop/restart refuse during a call without --force', {
	timeout: 80_000,
}, async (t) => {
	const home = await makeHome('mcpvisor-e2e-stop-');
	const cf = path.join(home, 'count');
	try {
		await withRuntime(
			t,
			{
				demo: demo(['--count-file', cf]),
				other: demo(['--name', 'other']),
			},
			async (rt) => {
				const c = await connect(rt);
				const all = [...demoNames('demo'), ...demoNames('other')];
				assert.deepEqual((await c.listAll()).map((x) => x.name), all);
				trackStarts(rt, cf);
				await rt.demoPids(c, 'other__pid');

				const stop = await rt.cli(['stop', 'demo']);
				assert.equal(stop.code, 0, stop.stderr);
				assert.deepEqual(
					(await c.listAll()).map((x) => x.name),
					demoNames('other'),
					'the stopped server still listed',
				);
				const st = instanceOf(await rt.status(), 'demo');
				assert.equal(st.server.stoppedByUser, true, JSON.stringify(st));
				const r = await callReq(c, 'demo__echo', { text: 'x' });
				assert.ok(r.error, JSON.stringify(r));
				assert.match(r.error.message, /stopped/);
				const starts = startCount(cf);

				const re = await rt.cli(['restart', 'demo']);
				assert.equal(re.code, 0, re.stderr);
				assert.deepEqual((await c.listAll()).map((x) => x.name), all);
				const echo = await c.call('demo__echo', { text: 'again' });
				assert.equal(echo.content[0].text, 'again');
				assert.equal(startCount(cf), starts + 1, 'started again');
				trackStarts(rt, cf);
				assert.notEqual(
					instanceOf(await rt.status(), 'demo').server.stoppedByUser,
					true,
				);

				// A call running at the server: refused without --force,
				// naming it (one still waiting for a start: next test).
				// Longer than the test: only --force ends it.
				const sleeps0 = callCount(cf, 'sleep');
				const running = callReq(c, 'demo__sleep', { ms: 60_000 });
				await waitFor(
					() => callCount(cf, 'sleep') > sleeps0,
					5000,
					'the sleep call at the server',
				);
				for (const verb of ['stop', 'restart']) {
					const no = await rt.cli([verb, 'demo']);
					assert.notEqual(no.code, 0, `${verb} during a call: ${no.stdout}`);
					assert.match(no.stderr, /tools\/call sleep/, no.stderr);
				}
				const stillRunning = instanceOf(await rt.status(), 'demo').inst;
				assert.equal(stillRunning.inflight, 1, 'a refused stop ended the call');
				const forced = await rt.cli(['stop', 'demo', '--force']);
				assert.equal(forced.code, 0, forced.stderr);
				const lost = await running;
				assert.ok(lost.error, `the forced-out call: ${JSON.stringify(lost)}`);
				assert.deepEqual(
					(await c.listAll()).map((x) => x.name),
					demoNames('other'),
				);

				// restart --force ends a running call and serves again.
				assert.equal((await rt.cli(['restart', 'demo'])).code, 0);
				const sleeps = callCount(cf, 'sleep');
				const running2 = callReq(c, 'demo__sleep', { ms: 60_000 });
				// At the server, not only leased: a call still waiting for
				// the restarted process is not lost by the next restart.
				await waitFor(
					() => callCount(cf, 'sleep') > sleeps,
					5000,
					'the sleep call at the server',
				);
				trackStarts(rt, cf);
				const rf = await rt.cli(['restart', 'demo', '--force']);
				assert.equal(rf.code, 0, rf.stderr);
				const lost2 = await running2;
				assert.ok(lost2.error, `restart --force: ${JSON.stringify(lost2)}`);
				// (A request that lands while the restart is still stopping
				// the old process is the next test's subject.)
				await waitFor(
					async () =>
						instanceOf(await rt.status(), 'demo').inst.state !==
						'stopping',
					8000,
					'the restart past stopping',
				);
				const back = await c.call('demo__echo', { text: 'restarted' });
				assert.equal(back.content[0].text, 'restarted');
				trackStarts(rt, cf);
				assert.deepEqual((await c.listAll()).map((x) => x.name), all);
				await c.close();
			},
		);
	} finally {
		await fsp.rm(home, { recursive: true, force: true });
	}
});

test('stop/restart refuse while a call waits for its server to start', {
	timeout: 60_000,
}, async (t) => {
	const home = await makeHome('mcpvisor-e2e-waitstart-');
	const cf = path.join(home, 'count');
	// Each start reads nothing until the test opens its gate (a file the
	// start takes away): a call sent meanwhile waits for the start however
	// long a busy machine takes to refuse the stops.
	const gate = path.join(home, 'gate');
	const open = () => fsp.writeFile(gate, '');
	const gated = {
		command: 'sh',
		args: [
			'-c',
			'while [ ! -e "$1" ]; do sleep 0.02; done; rm -f "$1"; shift; exec "$@"',
			'sh',
			gate,
			DEMO,
			'--count-file',
			cf,
		],
		scope: 'app',
	};
	try {
		await withRuntime(
			t,
			{ demo: gated },
			async (rt) => {
				const c = await connect(rt);
				const refused = async (what, echoes) => {
					await waitInflight(rt, 'demo');
					const inst = instanceOf(await rt.status(), 'demo').inst;
					assert.equal(inst.state, 'starting', `${what}: ${JSON.stringify(inst)}`);
					for (const verb of ['stop', 'restart']) {
						const no = await rt.cli([verb, 'demo']);
						assert.notEqual(no.code, 0, `${verb} ${what}: ${no.stdout}`);
						assert.match(no.stderr, /a call is in flight \(tools\/call echo/, no.stderr);
					}
					trackStarts(rt, cf);
					assert.equal(callCount(cf, 'echo'), echoes, `${what}: not yet at the server`);
				};

				// Its tools not known yet: the call first waits for the
				// start that lists them.
				const first = c.call('demo__echo', { text: 'one' });
				await refused('while the start learns its tools', 0);
				await open();
				assert.equal((await first).content[0].text, 'one');

				// Its tools known: the call waits for a restart's start.
				const re = await rt.cli(['restart', 'demo']);
				assert.equal(re.code, 0, re.stderr);
				const second = c.call('demo__echo', { text: 'two' });
				await refused('while a restart starts it', 1);
				await open();
				assert.equal((await second).content[0].text, 'two');
				trackStarts(rt, cf);
				assert.equal(startCount(cf), 2, 'no start lost or added by a refusal');
				await c.close();
			},
		);
	} finally {
		await fsp.rm(home, { recursive: true, force: true });
	}
});

test('a request that arrives while a restart is stopping the old process waits for the new one', {
	timeout: 80_000,
}, async (t) => {
	const home = await makeHome('mcpvisor-e2e-restart-');
	const cf = path.join(home, 'count');
	try {
		await withRuntime(
			t,
			// Ignores stdin EOF and SIGTERM: its stop takes the whole
			// ladder (seconds), so the next request surely lands in it.
			{ slow: demo(['--ignore-sigterm', '--count-file', cf]) },
			async (rt) => {
				const c = await connect(rt);
				await c.listAll();
				trackStarts(rt, cf);
				const re = await rt.cli(['restart', 'slow']);
				assert.equal(re.code, 0, re.stderr);
				const inst = instanceOf(await rt.status(), 'slow').inst;
				assert.equal(inst.state, 'stopping', 'the old process still stopping');
				const { value: r, ms } = await timed(
					callReq(c, 'slow__echo', { text: 'after restart' }),
				);
				trackStarts(rt, cf);
				assert.ok(
					r.result,
					`a call during the restart, answered after ${ms.toFixed(0)} ms: ` +
						JSON.stringify(r),
				);
				assert.equal(r.result.content[0].text, 'after restart');
				assert.equal(startCount(cf), 2, 'one new process');
				await c.close();
			},
		);
	} finally {
		await fsp.rm(home, { recursive: true, force: true });
	}
});
