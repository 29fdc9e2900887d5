// A hostile server cannot stall, swell or forge (issue 17): against the
// hostile server of fixtures/hostile-server.mjs (one misbehaviour per URL
// path), a burst of list_changed costs two list fetches, a list that never
// ends fails alone and stays bounded, one silent or broken server does not
// hold a session's list for the others, and what servers write reaches the
// terminal and the log only escaped, with their warnings capped.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';

import { connect, waitFor, withRuntime } from './lib.mjs';
import {
	assertNoEscapes,
	getStream,
	hostileStdio,
	logPath,
	rssBytes,
	startHostile,
	withBackground,
} from './fixtures/hostile-fixture.mjs';

const MiB = 1024 * 1024;
// ASan keeps freed memory in quarantine (256 MB by default), which would
// hide what the runtime itself holds: a small one for the memory tests.
const LEAN = {
	ASAN_OPTIONS:
		'detect_leaks=1:abort_on_error=0:exitcode=23:quarantine_size_mb=8',
};

// The one instance of server name in a status.
function inst(status, name) {
	const sv = status.servers.find((s) => s.name === name);
	assert.ok(sv, `no server ${name} in ${JSON.stringify(status)}`);
	assert.equal(sv.instances?.length, 1, `${name}: ${JSON.stringify(sv)}`);
	return sv.instances[0];
}

test('hostile: a burst of 20000 tools/list_changed costs a few fetches and little memory', {
	timeout: 90_000,
}, async (t) => {
	const fx = await startHostile(t);
	await withRuntime(t, { flood: { url: fx.url('flood') } }, { env: LEAN }, async (rt) => {
		const c = await connect(rt);
		assert.deepEqual((await c.listAll()).map((x) => x.name), ['flood__flood']);
		assert.equal((await fx.stats()).methods['tools/list'], 1);
		const before = rssBytes(rt.child.pid);
		// The notices come on the call's answer stream, before its answer.
		const r = await c.call('flood__flood', { count: 20000 });
		assert.equal(r.content[0].text, 'sent 20000');
		// One fetch at the first notice, at most one more pending for
		// all that come while it runs. The runtime reads a stream 256 KiB
		// a turn of its loop (about 1.4 MB of notices here: 6 turns), so a
		// fetch may end between turns and the next start: at most two a
		// turn, never one a notice.
		await waitLists(fx, 3);
		// Nothing more comes of them: a call that sends none, then the
		// count again.
		await c.call('flood__flood', { count: 0 });
		const lists = (await fx.stats()).methods['tools/list'];
		assert.ok(lists >= 3 && lists <= 1 + 12, `tools/list asked ${lists} times for 20000 list_changed`);
		const grew = rssBytes(rt.child.pid) - before;
		console.log(`# 20000 list_changed: tools/list x${lists - 1}, RSS +${(grew / MiB).toFixed(1)} MiB`);
		assert.ok(grew < 48 * MiB, `the runtime grew ${(grew / MiB).toFixed(1)} MiB`);
		await c.close();
	});
});

async function waitLists(fx, n) {
	await waitFor(async () => (await fx.stats()).methods['tools/list'] >= n, 20_000,
		`${n} tools/list at the server`);
}

test('hostile: a list past its total bound fails alone, with its reason in status', {
	timeout: 90_000,
}, async (t) => {
	const fx = await startHostile(t);
	const servers = {
		ok: { url: fx.url('ok') },
		// Pages of just under 1 MiB, never ending: the 17th passes
		// 16 MiB.
		pages: { url: fx.url(`pages?bytes=${MiB - 512}`) },
		many: { url: fx.url('many') },
	};
	await withRuntime(t, servers, { env: LEAN }, async (rt) => {
		const before = rssBytes(rt.child.pid);
		const c = await connect(rt);
		const tools = await c.listAll();
		// The session's list stands: the others' tools, none of theirs.
		assert.deepEqual(tools.map((x) => x.name), ['ok__hello']);
		// The list answers within its patience; the bounded lists may
		// still be coming in (17 MiB under the sanitizers on a busy
		// machine): their failure is awaited, not assumed.
		await waitFor(async () => {
			const s2 = await rt.status();
			return inst(s2, 'pages').listErrors?.tools && inst(s2, 'many').listErrors?.tools;
		}, 60_000, 'both bounded lists to fail');
		const st = await rt.status();
		const pages = inst(st, 'pages');
		assert.equal(pages.state, 'running', JSON.stringify(pages));
		assert.match(pages.listErrors?.tools ?? '', /tools\/list came to more than 16 MiB over 17 page/,
			JSON.stringify(pages));
		assert.equal((await fx.stats()).pages, 17, 'no page asked for past the bound');
		const many = inst(st, 'many');
		assert.match(many.listErrors?.tools ?? '', /more than 10000 items/, JSON.stringify(many));
		assert.equal(inst(st, 'ok').listErrors, undefined);
		const grew = rssBytes(rt.child.pid) - before;
		console.log(`# 17 pages of 1 MiB refused: RSS +${(grew / MiB).toFixed(1)} MiB`);
		assert.ok(grew < 96 * MiB, `the runtime grew ${(grew / MiB).toFixed(1)} MiB`);
		// status says so as text too.
		const text = await rt.cli(['status']);
		assert.match(text.stdout, /list failed: tools\/list came to more than 16 MiB/, text.stdout);
		// And `tools`, whose list is short of that server's.
		const cli = await rt.cli(['tools']);
		assert.equal(cli.code, 1, cli.stderr);
		assert.match(cli.stdout, /^ok__hello /m, cli.stderr);
		assert.match(cli.stderr, /server "pages": tools\/list came to more than 16 MiB/, cli.stderr);
		assert.match(cli.stderr, /server "many": tools\/list listed more than 10000 items/, cli.stderr);
		await c.close();
	});
});

test('hostile: a silent server and unreadable answers do not hold a session\'s list; late tools come with list_changed', {
	timeout: 120_000,
}, async (t) => {
	const fx = await startHostile(t);
	const servers = {
		ok: { url: fx.url('ok') },
		// Never answers initialize: today every new session's list
		// waited for its startup timeout.
		silent: { url: fx.url('silent'), startupTimeout: '45s' },
		badnum: { url: fx.url('badnum') },
		badutf8: { url: fx.url('badutf8') },
		slow: { url: fx.url('slow'), startupTimeout: '45s' },
	};
	await withRuntime(t, servers, async (rt) => {
		const c = await connect(rt);
		const t0 = performance.now();
		const first = await c.result('tools/list');
		const ms = performance.now() - t0;
		console.log(`# tools/list with a silent and a held server answered in ${ms.toFixed(0)} ms`);
		assert.deepEqual(first.tools.map((x) => x.name), ['ok__hello']);
		// It did not wait for them: they are still starting.
		let st = await rt.status();
		assert.equal(inst(st, 'silent').state, 'starting', JSON.stringify(inst(st, 'silent')));
		assert.equal(inst(st, 'slow').state, 'starting');
		// An answer no parser takes failed its list at once: the server
		// runs, its list says why.
		for (const name of ['badnum', 'badutf8']) {
			const i = inst(st, name);
			assert.equal(i.state, 'running', `${name}: ${JSON.stringify(i)}`);
			assert.match(i.listErrors?.tools ?? '', /its answer is not JSON that can be read/,
				`${name}: ${JSON.stringify(i)}`);
		}
		// The held server answers now: its tools reach the session as
		// list_changed, and the next list has them.
		const stream = await getStream(c);
		await fx.release();
		await stream.next((m) => m.method === 'notifications/tools/list_changed', 20_000,
			'tools/list_changed after the late server started');
		stream.close();
		const again = (await c.listAll()).map((x) => x.name);
		assert.deepEqual(again, ['ok__hello', 'slow__late']);
		st = await rt.status();
		assert.equal(inst(st, 'silent').state, 'starting');
		// The terminal's list waits the same patience for the silent
		// server (its own session, its own instance): a body that
		// takes that long is not a frozen runtime (the CLI gave up on
		// silence at 5 s, the list's own patience, and printed none).
		const cli = await rt.cli(['tools']);
		assert.match(cli.stdout, /^ok__hello /m, cli.stderr);
		assert.doesNotMatch(cli.stderr, /did not answer/, cli.stderr);
		await c.close();
	});
});

test('hostile: what servers write reaches the terminal and the log escaped', {
	timeout: 90_000,
}, async (t) => {
	const fx = await startHostile(t);
	const servers = {
		esc: { url: fx.url('escapes') },
		badinit: { url: fx.url('badinit') },
		badversion: { url: fx.url('badversion') },
		noisy: hostileStdio('noisy', { scope: 'app' }),
	};
	await withBackground(t, servers, [], async (bg) => {
		const outputs = [];
		// A call's result is shown as lines (its own newlines pass); the
		// rest is one line per item.
		const run = async (args) => {
			const r = await bg.cli(args);
			outputs.push([args.join(' '), r.stdout + r.stderr, args[0] === 'call']);
			return r;
		};
		const tools = await run(['tools']);
		// The failures are reported, their text shown, not sent.
		assert.equal(tools.code, 1, tools.stderr);
		assert.match(tools.stdout, /esc__esc +describes \\x1b\]0;pwned-title\\x07/, tools.stdout);
		assert.match(tools.stdout, /esc__name\\x1b\]0;t\\x07x/);
		assert.match(tools.stderr, /server "badinit" failed: initialize failed: init failed \\x1b\]0;pwned-title/,
			tools.stderr);
		assert.match(tools.stderr, /server "badversion" failed: .*protocol version "2025-11-25\\x1b/,
			tools.stderr);
		const call = await run(['call', 'esc__esc']);
		assert.equal(call.code, 0, call.stderr);
		assert.match(call.stdout, /^result \\x1b\]0;pwned-title\\x07.*\\u009b31m$/m, call.stdout);
		const fail = await run(['call', 'esc__fail']);
		assert.equal(fail.code, 1);
		assert.match(fail.stderr, /it failed \\x1b\]0;pwned-title/, fail.stderr);
		await run(['call', 'noisy__noise', '{"count":0}']);
		await bg.track();
		await run(['status']);
		await run(['status', '-v']);
		await run(['logs', '-n', '1000']);
		await run(['logs', 'noisy']);
		await run(['logs', 'badinit']);
		for (const [what, out, lines] of outputs)
			assertNoEscapes(out, what, { lines });
		// The log file itself holds no escape and no forged line.
		const log = fs.readFileSync(logPath(bg.home), 'utf8');
		assertNoEscapes(log, 'runtime.log');
		assert.match(log, /server noisy: starting \\x1b\]0;pwned-title/);
		assert.match(log, /server noisy: 12:00:00.000 mcpvisor info: instance forged: ok/);
	});
});

test('hostile: a flood of invalid messages is capped in the log and keeps its lifecycle lines', {
	timeout: 90_000,
}, async (t) => {
	const fx = await startHostile(t);
	// A small log: today 30000 warnings rotated every earlier line away.
	await withBackground(t, { noisy: { url: fx.url('noisy'), scope: 'app' } }, ['--log-max', '65536'], async (bg) => {
		const r = await bg.cli(['call', 'noisy__noise', '{"count":30000}']);
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stdout, /sent 30000/);
		// A lifecycle line (an explicit stop) first says what was held.
		const stop = await bg.cli(['stop', 'noisy']);
		assert.equal(stop.code, 0, stop.stderr);
		const logs = await bg.cli(['logs', '-n', '100000', 'noisy']);
		assert.equal(logs.code, 0, logs.stderr);
		const lines = logs.stdout.split('\n');
		const warned = lines.filter((l) => l.includes('skipped an invalid message')).length;
		assert.equal(warned, 10, `warnings logged: ${warned}`);
		assert.ok(lines.some((l) => /instance noisy: 29990 more like this suppressed/.test(l)),
			logs.stdout.slice(-2000));
		assert.ok(lines.some((l) => /instance noisy: starting -> running/.test(l)),
			`the start was rotated away:\n${logs.stdout.slice(0, 2000)}`);
		assert.ok(lines.some((l) => /instance noisy: running -> stopping/.test(l)));
	});
});
