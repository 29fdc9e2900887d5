// Remote HTTP servers when things go wrong, on real processes: the demo
// fixture served over HTTP by the test, behind a recording proxy that
// counts, times and injects faults. 401 (needs_auth, no retry storm), an
// expired session (404: re-initialized at once, reads re-sent, a call in
// flight answered "may or may not"), an SSE stream dropped mid-call
// (resumed, or lost-after-sent when it cannot be), a hang (toolTimeout,
// status still answers), the legacy HTTP+SSE transport (by type and by
// fallback), and header secrets that never leave the config.
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import { connect, runCli, scratchDir, waitFor, withRuntime, writeConfig } from './lib.mjs';
import {
	callCount,
	filesUnder,
	instanceOf,
	timed,
	waitState,
} from './failures-lib.mjs';
import {
	FaultProxy,
	readAnswers,
	resourceMetadata,
	startFixture,
} from './http-faults-lib.mjs';

function callReq(c, name, args = {}) {
	return c.request('tools/call', { name, arguments: args });
}

const names = (tools) => tools.map((x) => x.name).sort();

test('401: needs_auth with the resource metadata URL, tools dropped, no retry storm; header secrets stay in the config', {
	timeout: 60_000,
}, async (t) => {
	const GOOD = 'good-tok-81f2a9';
	const BAD = 'bad-tok-c07d15';
	const dir = await scratchDir(t);
	const cf = path.join(dir, 'count');
	const fx = await startFixture(t, ['--auth', GOOD, '--count-file', cf]);
	const px = await FaultProxy.start(t, fx.url);
	const bearer = (v) => ({ Authorization: `Bearer \${${v}}` });
	await withRuntime(
		t,
		{
			ok: { url: fx.url, headers: bearer('MCPV_E2E_GOOD'), scope: 'app' },
			locked: { url: px.url, headers: bearer('MCPV_E2E_BAD'), scope: 'app' },
		},
		{
			env: { MCPV_E2E_GOOD: GOOD, MCPV_E2E_BAD: BAD },
			args: ['--log-level', 'debug'],
		},
		async (rt) => {
			const c = await connect(rt);
			const t0 = performance.now();
			const tools = await c.listAll();
			assert.ok(tools.some((x) => x.name === 'ok__echo'), 'the token in headers reached the server');
			assert.ok(!tools.some((x) => x.name.startsWith('locked__')), `listed: ${names(tools)}`);
			const inst = await waitState(rt, 'locked', 'needs_auth');
			const toNeedsAuth = performance.now() - t0;
			const first401 = px.requests.find((r) => r.status === 401);
			assert.ok(first401, 'the fixture answered 401');
			assert.ok(first401.auth, 'the header was sent');
			const meta = resourceMetadata(first401.wwwAuthenticate);
			assert.ok(meta, `challenge: ${first401.wwwAuthenticate}`);
			const { server } = instanceOf(await rt.status(), 'locked');
			assert.ok(JSON.stringify(server).includes(meta), `status lacks ${meta}: ${JSON.stringify(server)}`);
			assert.deepEqual(inst.lists ?? {}, {}, 'its lists dropped');
			t.diagnostic(
				`time to needs_auth: 401 after ${(first401.doneAt - px.requests[0].at).toFixed(1)} ms ` +
					`at the proxy; status shows it ${toNeedsAuth.toFixed(0)} ms after the first list`,
			);

			// No retry storm: calls and lists answer at once and send
			// nothing more to the server.
			const sent = px.count();
			assert.ok(sent <= 3, `${sent} requests before needs_auth: ${JSON.stringify(px.requests)}`);
			for (let i = 0; i < 5; i++) {
				const { value: r, ms } = await timed(callReq(c, 'locked__echo', { text: 'x' }));
				assert.ok(r.error, JSON.stringify(r));
				// At once (sending nothing: the count below), with a
				// margin for a busy machine's runtime.
				assert.ok(ms < 3000, `a call to a needs_auth server took ${ms} ms`);
				await c.listAll();
			}
			// Nor does a new session try the refused credentials again.
			const c2 = await connect(rt);
			assert.ok(!(await c2.listAll()).some((x) => x.name.startsWith('locked__')));
			const r2 = await callReq(c2, 'locked__echo', { text: 'y' });
			assert.ok(r2.error, JSON.stringify(r2));
			await c2.close();
			const st = instanceOf(await rt.status(), 'locked').inst;
			assert.equal(st.state, 'needs_auth');
			assert.equal(px.count(), sent, 'needs_auth was retried');
			assert.equal(callCount(cf, 'echo'), 0);

			// Neither token reaches status, check, the files under the
			// home (names or contents) or the debug log.
			const ok = await c.call('ok__echo', { text: 'fine' });
			assert.equal(ok.content[0].text, 'fine');
			const leaks = [];
			const views = [['status', '--json', '-v'], ['status', '-v'], ['status']];
			for (const args of views) {
				const r = await rt.cli(args);
				assert.equal(r.code, 0, r.stderr);
				for (const s of [GOOD, BAD])
					if (r.stdout.includes(s))
						leaks.push(`mcpvisor ${args.join(' ')}`);
			}
			const chk = await runCli(['check', rt.configPath], {
				env: { MCPV_E2E_GOOD: GOOD, MCPV_E2E_BAD: BAD },
			});
			assert.match(chk.stdout, /transport auto/);
			for (const s of [GOOD, BAD])
				if ((chk.stdout + chk.stderr).includes(s))
					leaks.push('mcpvisor check');
			for (const f of await filesUnder(rt.home)) {
				if (f === rt.configPath)
					continue;
				const body = await fsp.readFile(f);
				for (const s of [GOOD, BAD])
					if (body.includes(s) || f.includes(s))
						leaks.push(path.relative(rt.home, f));
			}
			for (const s of [GOOD, BAD])
				if (rt.stderr().includes(s))
					leaks.push(`the log: ${rt.stderr().split('\n').find((l) => l.includes(s))}`);
			assert.deepEqual(leaks, [], 'a header secret appears in');
			await c.close();
		},
	);
});

test('404 on the session: re-initialized at once, a read re-sent, a call in flight answered "may or may not" and run once', {
	timeout: 60_000,
}, async (t) => {
	const dir = await scratchDir(t);
	const cf = path.join(dir, 'count');
	const fx = await startFixture(t, ['--count-file', cf]);
	const px = await FaultProxy.start(t, fx.url);
	await withRuntime(t, { x: { url: px.url, type: 'http', scope: 'app' } }, async (rt) => {
		const c = await connect(rt);
		await c.listAll();
		assert.equal(px.initializes().length, 1);
		const long = callReq(c, 'x__sleep', { ms: 4000 });
		await waitFor(() => callCount(cf, 'sleep') === 1, 5000, 'the call at the server');
		const at = px.expire();
		const read = await timed(c.request('resources/read', { uri: 'demo://readme' }));
		assert.ok(read.value.result, `the read: ${JSON.stringify(read.value)}`);
		assert.equal(read.value.result.contents[0].uri, 'demo://readme');
		const lost = await long;
		assert.ok(lost.error, `the call in flight: ${JSON.stringify(lost)}`);
		assert.match(lost.error.message, /may or may not have taken effect/);
		assert.equal(callCount(cf, 'sleep'), 1, 'the call was sent again');

		const notFound = px.requests.filter((r) => r.status === 404);
		assert.ok(notFound.length >= 1, 'mcpvisor never met the 404');
		const inits = px.initializes();
		assert.equal(inits.length, 2, `initializes: ${inits.length}`);
		const reinit = inits[1];
		assert.equal(reinit.status, 200);
		assert.ok(reinit.newSid && reinit.newSid !== inits[0].newSid, 'a new session');
		const reconnectMs = reinit.doneAt - notFound[0].doneAt;
		assert.ok(reconnectMs < 500, `re-initialized ${reconnectMs} ms after the 404 (backoff?)`);
		t.diagnostic(
			`reconnect after a 404: new session ${reconnectMs.toFixed(1)} ms after the first 404 ` +
				`(${(reinit.doneAt - at).toFixed(1)} ms after the fault); the re-sent read answered in ${read.ms.toFixed(0)} ms`,
		);
		// Only the read went again; nothing is sent on the dead session
		// after the new one exists.
		const late = px.requests.filter((r) => r.at > reinit.doneAt && r.sid && r.sid !== reinit.newSid);
		assert.deepEqual(late.map((r) => `${r.method} ${r.rpc}`), [], 'requests on the old session');
		const echo = await c.call('x__echo', { text: 'after' });
		assert.equal(echo.content[0].text, 'after');
		await c.close();
	});
});

test('an SSE stream dropped mid-call is resumed with Last-Event-ID and the call answered once', {
	timeout: 60_000,
}, async (t) => {
	const dir = await scratchDir(t);
	const cf = path.join(dir, 'count');
	const fx = await startFixture(t, ['--drop-sse-once', '--count-file', cf]);
	const px = await FaultProxy.start(t, fx.url);
	await withRuntime(t, { x: { url: px.url, scope: 'app' } }, async (rt) => {
		const c = await connect(rt);
		await c.listAll();
		const answers = await readAnswers(c, 'tools/call', {
			name: 'x__sleep',
			arguments: { ms: 600 },
		});
		assert.equal(answers.length, 1, `answers: ${JSON.stringify(answers)}`);
		assert.ok(answers[0].result, JSON.stringify(answers[0]));
		assert.ok(!answers[0].result.isError, JSON.stringify(answers[0]));
		assert.equal(callCount(cf, 'sleep'), 1, 'the call was sent again');
		const resumed = px.requests.filter((r) => r.method === 'GET' && r.lastEventId);
		assert.ok(resumed.length >= 1, `no GET with Last-Event-ID: ${JSON.stringify(px.requests)}`);
		assert.equal(resumed[0].status, 200);
		await c.close();
	});
});

test('an SSE stream dropped mid-call that cannot be resumed: lost-after-sent, never re-sent', {
	timeout: 60_000,
}, async (t) => {
	const dir = await scratchDir(t);
	const cf = path.join(dir, 'count');
	const fx = await startFixture(t, ['--drop-sse-unresumable', '--count-file', cf]);
	await withRuntime(t, { x: { url: fx.url, scope: 'app' } }, async (rt) => {
		const c = await connect(rt);
		await c.listAll();
		const r = await callReq(c, 'x__sleep', { ms: 600 });
		assert.ok(r.error, `the lost call: ${JSON.stringify(r)}`);
		assert.match(r.error.message, /may or may not have taken effect/);
		assert.equal(callCount(cf, 'sleep'), 1);
		// The server is still usable; the lost call is never sent again.
		const echo = await c.call('x__echo', { text: 'after' });
		assert.equal(echo.content[0].text, 'after');
		assert.equal(callCount(cf, 'sleep'), 1, 'the call was sent again');
		await c.close();
	});
});

test('a server that hangs: the call answers at its toolTimeout, status stays responsive', {
	timeout: 60_000,
}, async (t) => {
	const fx = await startFixture(t);
	const px = await FaultProxy.start(t, fx.url);
	await withRuntime(t, { x: { url: px.url, scope: 'app', toolTimeout: '1s' } }, async (rt) => {
		const c = await connect(rt);
		await c.listAll();
		const ok = await c.call('x__echo', { text: 'before' });
		assert.equal(ok.content[0].text, 'before');
		px.hang(true);
		const call = timed(callReq(c, 'x__echo', { text: 'hangs' }));
		const st = await timed(rt.cli(['status', '--json']));
		assert.equal(st.value.code, 0, st.value.stderr);
		// Not held by the hung server (the CLI would give up at 10 s);
		// a busy machine's share is the rest.
		assert.ok(st.ms < 5000, `status took ${st.ms} ms during the hang`);
		const { value: r, ms } = await call;
		assert.ok(r.error, JSON.stringify(r));
		assert.match(r.error.message, /time|timed out/i, r.error.message);
		assert.ok(ms >= 900 && ms < 8000, `the call answered after ${ms} ms`);
		const after = await timed(rt.cli(['status', '--json']));
		assert.equal(after.value.code, 0);
		assert.ok(after.ms < 5000, `status took ${after.ms} ms after the timeout`);
		px.hang(false);
		await c.close();
	});
});

test('legacy HTTP+SSE: type "sse" and a server with no type (fallback) both work', {
	timeout: 60_000,
}, async (t) => {
	const dir = await scratchDir(t);
	const cf = path.join(dir, 'count');
	const fx = await startFixture(t, ['--legacy-sse', '--count-file', cf]);
	const servers = {
		old: { url: fx.url, type: 'sse', scope: 'app' },
		guess: { url: fx.url, scope: 'app' },
	};
	const file = await writeConfig(dir, servers);
	const chk = await runCli(['check', file]);
	assert.equal(chk.code, 0, chk.stderr);
	assert.match(chk.stdout, /^old\s.*transport sse/m);
	assert.match(chk.stdout, /^guess\s.*transport auto/m);
	await withRuntime(t, servers, async (rt) => {
		const c = await connect(rt);
		const tools = names(await c.listAll());
		assert.ok(tools.includes('old__echo') && tools.includes('guess__echo'), `tools: ${tools}`);
		for (const p of ['old', 'guess']) {
			const r = await c.call(`${p}__echo`, { text: p });
			assert.equal(r.content[0].text, p);
		}
		const sum = await c.call('guess__add', { a: 2, b: 3 });
		assert.deepEqual(sum.structuredContent, { sum: 5 });
		assert.equal(callCount(cf, 'echo'), 2);
		const st = await rt.status();
		for (const p of ['old', 'guess'])
			assert.notEqual(instanceOf(st, p).inst?.state, 'failed', JSON.stringify(st));
		await c.close();
	});
});

test('a session the server itself expires (--expire-after): reads go on unbroken, one re-initialize, no backoff', {
	timeout: 60_000,
}, async (t) => {
	const dir = await scratchDir(t);
	const cf = path.join(dir, 'count');
	// Past the first session's start (initialize and the lists), well
	// before the reads below end.
	const fx = await startFixture(t, ['--expire-after', '12', '--count-file', cf]);
	const px = await FaultProxy.start(t, fx.url);
	await withRuntime(t, { x: { url: px.url, scope: 'app' } }, async (rt) => {
		const c = await connect(rt);
		await c.listAll();
		for (let i = 0; i < 12; i++) {
			const r = await c.request('resources/read', { uri: 'demo://readme' });
			assert.ok(r.result, `read ${i}: ${JSON.stringify(r)}`);
		}
		const notFound = px.requests.filter((r) => r.status === 404);
		assert.equal(notFound.length, 1, `404s: ${notFound.length}`);
		assert.match(fx.stderr(), /expired \(--expire-after 12\)/);
		const inits = px.initializes();
		assert.equal(inits.length, 2, 'one re-initialize');
		const ms = inits[1].doneAt - notFound[0].doneAt;
		assert.ok(ms < 500, `re-initialized ${ms} ms after the 404`);
		t.diagnostic(`the fixture's own expiry: new session ${ms.toFixed(1)} ms after its 404`);
		const { inst } = instanceOf(await rt.status(), 'x');
		assert.equal(inst.state, 'running');
		assert.equal(inst.lastFailure, undefined, JSON.stringify(inst));
		await c.close();
	});
});

test('a server that stops answering (--hang-after): calls fail at toolTimeout, status answers, the runtime still stops at once', {
	timeout: 60_000,
}, async (t) => {
	// Past the start (initialize and the lists): the hang comes within
	// the calls below.
	const fx = await startFixture(t, ['--hang-after', '9']);
	let stopAt;
	await withRuntime(t, { x: { url: fx.url, scope: 'app', toolTimeout: '1s' } }, async (rt) => {
		const c = await connect(rt);
		await c.listAll();
		let failed = null;
		for (let i = 0; i < 6 && !failed; i++) {
			const { value: r, ms } = await timed(callReq(c, 'x__echo', { text: `t${i}` }));
			if (r.error)
				failed = { r, ms, i };
			else
				assert.equal(r.result.content[0].text, `t${i}`);
		}
		assert.ok(failed, 'no call met the hang');
		assert.match(failed.r.error.message, /time|timed out/i, failed.r.error.message);
		assert.ok(failed.ms >= 900 && failed.ms < 8000, `answered after ${failed.ms} ms`);
		assert.match(fx.stderr(), /hanging: 9 POSTs answered/);
		const st = await timed(rt.cli(['status', '--json']));
		assert.equal(st.value.code, 0, st.value.stderr);
		assert.ok(st.ms < 5000, `status took ${st.ms} ms`);
		stopAt = performance.now();
		rt.terminate();
		await rt.waitExit();
		const stopMs = performance.now() - stopAt;
		// Without waiting its 10 s grace for the hung server.
		assert.ok(stopMs < 8000, `the runtime took ${stopMs} ms to stop`);
		t.diagnostic(`hung server: call failed ${failed.ms.toFixed(0)} ms after it was sent; runtime stopped in ${stopMs.toFixed(0)} ms`);
	});
});
