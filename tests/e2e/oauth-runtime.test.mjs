// OAuth inside the runtime (issue 18), against the in-repo authorization
// server and protected MCP server (fixtures/oauth-server.mjs), with the
// real `mcpvisor login` and a browser that follows redirects
// (fixtures/browser.sh): a login picked up at once with list_changed, the
// messages of a server that needs one, an access token that expires
// mid-session, a slow token endpoint (calls wait), a revoked refresh
// token, a refresh racing a login, the refresh ahead of expiry, the
// sign-in through a client's URL-mode elicitation, and what setup says of
// a host's OAuth entries. Tokens never reach logs, status or the cache.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import {
	MCPVISOR,
	REPO,
	SAN_ENV,
	connect,
	makeHome,
	procStat,
	runCli,
	scratchDir,
	sseStream,
	WAIT_SCALE,
	waitFor,
	withRuntime,
} from './lib.mjs';
import { getStream } from './fixtures/hostile-fixture.mjs';
import { BROWSER, startOAuth } from './fixtures/oauth-fixture.mjs';

// A hang guard on the login process, stretched like every wait.
const LOGIN_MS = 20_000 * WAIT_SCALE;

// `mcpvisor login NAME` against rt's home, the browser following the
// authorization server's redirect to login's loopback listener.
async function login(rt, name = 'fx', env = {}) {
	const r = await rt.cli(['login', name], {
		env: { BROWSER, ...env },
		timeout: LOGIN_MS,
	});
	assert.equal(r.code, 0, `login failed (${r.code}): ${r.stderr}\n${r.stdout}`);
	return r;
}

// The one instance of server name in status, or null.
async function instanceOf(rt, name = 'fx') {
	const st = await rt.status();
	const sv = st.servers.find((s) => s.name === name);
	return sv?.instances?.[0] ?? null;
}

async function stateOf(rt, name = 'fx') {
	return (await instanceOf(rt, name))?.state ?? null;
}

// Every file under dir, read as text.
async function filesUnder(dir) {
	const out = [];
	let entries;
	try {
		entries = await fsp.readdir(dir, { withFileTypes: true, recursive: true });
	} catch {
		return out;
	}
	for (const e of entries) {
		if (!e.isFile())
			continue;
		const p = path.join(e.parentPath ?? e.path, e.name);
		out.push({ path: p, text: await fsp.readFile(p, 'utf8').catch(() => '') });
	}
	return out;
}

// No token the fixture issued is in the runtime's stderr and log, in
// status (-v, --json), or in the tool cache.
async function assertNoTokens(rt, fx) {
	const { access, refresh } = await fx.tokens();
	const secrets = [...access, ...refresh];
	assert.ok(secrets.length > 0, 'the fixture issued tokens');
	const places = [
		{ path: 'stderr', text: rt.stderr() },
		{ path: 'status', text: JSON.stringify(await rt.status()) },
		{ path: 'status text', text: (await rt.cli(['status', '-v'])).stdout },
		...(await filesUnder(path.join(rt.home, 'cache'))),
		...(await filesUnder(path.join(rt.home, 'state'))).filter(
			(f) => !f.path.includes(`${path.sep}auth${path.sep}`),
		),
	];
	for (const p of places)
		for (const s of secrets)
			assert.ok(!p.text.includes(s), `a token is in ${p.path}`);
}

// A POST whose answer is read as it comes (SSE, or one JSON body).
async function postStream(c, body) {
	const res = await c.post(body);
	assert.equal(res.status, 200, `HTTP ${res.status}`);
	const msgs = [];
	let ended = false;
	const ct = res.headers.get('content-type') || '';
	const done = (async () => {
		if (!ct.startsWith('text/event-stream')) {
			msgs.push(JSON.parse(await res.text()));
			ended = true;
			return;
		}
		for await (const m of sseStream(res.body))
			msgs.push(m);
		ended = true;
	})();
	done.catch(() => {});
	return {
		msgs,
		ended: () => ended,
		next: (pred, ms, what) => waitFor(() => msgs.find(pred), ms, what),
	};
}

// How many echo calls the fixture's MCP server ran (none yet: 0).
function echoes(s) {
	return s.calls.echo ?? 0;
}

function callBody(id, name, args = {}) {
	return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } };
}

// An app-scoped server on the fixture (one instance across sessions, as
// `mcpvisor call` and a host share it).
function fxServer(fx, extra = {}) {
	return { fx: { url: fx.url(), scope: 'app', ...extra } };
}

// Logs in and waits until fx serves.
async function loginAndServe(rt) {
	await login(rt);
	const r = await rt.cli(['call', 'fx__whoami']);
	assert.equal(r.code, 0, `call after login: ${r.stderr}`);
	assert.match(r.stdout, /^client client-/);
}

test('oauth: a server that needs a login says `mcpvisor login`; a login is picked up at once, with list_changed', {
	timeout: 180_000,
}, async (t) => {
	const fx = await startOAuth(t);
	await withRuntime(t, fxServer(fx), async (rt) => {
		const c = await connect(rt);
		const stream = await getStream(c);
		t.after(() => stream.close());
		// Listing starts it: the server answers 401, nothing is listed.
		const before = await c.listAll();
		assert.deepEqual(before.filter((x) => x.name.startsWith('fx__')), []);
		await waitFor(async () => (await stateOf(rt)) === 'needs_auth', 10_000, 'needs_auth');
		const st = await rt.cli(['status']);
		assert.match(st.stdout, /fx\s+needs_auth/);
		assert.match(st.stdout, /mcpvisor login fx/, st.stdout);
		const tools = await rt.cli(['tools']);
		assert.equal(tools.code, 1);
		assert.match(tools.stderr, /server "fx" needs authorization: .*`mcpvisor login fx`/, tools.stderr);
		const call = await rt.cli(['call', 'fx__whoami']);
		assert.equal(call.code, 1);
		assert.match(call.stderr, /needs a sign-in: run `mcpvisor login fx`/, call.stderr);
		const pid = rt.child.pid;

		await login(rt);
		// needs_auth -> running by itself: its tools appear, and the
		// session that listed before hears list_changed.
		await stream.next((m) => m.method === 'notifications/tools/list_changed', 15_000,
			'tools/list_changed after the login');
		const after = (await c.listAll()).map((x) => x.name);
		assert.ok(after.includes('fx__whoami') && after.includes('fx__echo'), after.join(' '));
		const r = await c.call('fx__echo', { text: 'signed in' });
		assert.equal(r.content[0].text, 'signed in');
		assert.equal(await stateOf(rt), 'running');
		assert.equal(rt.child.pid, pid, 'no restart');
		assert.equal(rt.exited, null, 'no restart');
		await assertNoTokens(rt, fx);
		await c.close();
	});
});

test('oauth: an access token that expires mid-session is refreshed once, and the call goes on', {
	timeout: 180_000,
}, async (t) => {
	const fx = await startOAuth(t);
	await withRuntime(t, fxServer(fx), async (rt) => {
		await rt.cli(['tools']);
		await loginAndServe(rt);
		const c = await connect(rt);
		assert.equal((await c.call('fx__echo', { text: 'one' })).content[0].text, 'one');
		const s0 = await fx.stats();
		await fx.expire();
		// The 401's call was not processed: it goes once, after the
		// refresh, on a new connection; the client sees an answer.
		assert.equal((await c.call('fx__echo', { text: 'two' })).content[0].text, 'two');
		const s1 = await fx.stats();
		assert.equal(s1.tokenRefresh - s0.tokenRefresh, 1, 'one refresh');
		assert.equal(s1.refreshOk - s0.refreshOk, 1);
		assert.equal(echoes(s1) - echoes(s0), 1, 'the call ran once');
		assert.ok(s1.mcp401 > s0.mcp401, 'the server refused the old token');
		assert.equal(s1.reuse, 0, 'no rotated refresh token was sent twice');
		assert.equal(await stateOf(rt), 'running');
		await assertNoTokens(rt, fx);
		await c.close();
	});
});

test('oauth: while a slow token endpoint answers, calls wait (one refresh for all) and then go on', {
	timeout: 180_000,
}, async (t) => {
	const fx = await startOAuth(t);
	await withRuntime(t, fxServer(fx), async (rt) => {
		await rt.cli(['tools']);
		await loginAndServe(rt);
		const c1 = await connect(rt);
		const c2 = await connect(rt);
		const s0 = await fx.stats();
		await fx.set({ holdRefresh: true });
		await fx.expire();
		const first = c1.call('fx__echo', { text: 'first' });
		await fx.held(1);
		// A second call while the refresh is held: it waits too.
		const second = c2.call('fx__echo', { text: 'second' });
		await waitFor(async () => (await rt.status()).servers
			.find((s) => s.name === 'fx').instances[0].state === 'starting', 10_000,
		'fx starting while its token is refreshed');
		const st = await fx.stats();
		assert.equal(st.pendingHeld, 1, 'one refresh for both');
		await fx.release();
		assert.equal((await first).content[0].text, 'first');
		assert.equal((await second).content[0].text, 'second');
		const s1 = await fx.stats();
		assert.equal(s1.tokenRefresh - s0.tokenRefresh, 1, 'single flight');
		assert.equal(echoes(s1) - echoes(s0), 2);
		await c1.close();
		await c2.close();
	});
});

test('oauth: a revoked refresh token puts the server back to needs_auth with the reason; a new login brings it back', {
	timeout: 180_000,
}, async (t) => {
	const fx = await startOAuth(t);
	await withRuntime(t, fxServer(fx), async (rt) => {
		await rt.cli(['tools']);
		await loginAndServe(rt);
		await fx.revoke({ access: true });
		const r = await rt.cli(['call', 'fx__whoami']);
		assert.equal(r.code, 1);
		assert.match(r.stderr, /mcpvisor login fx/, r.stderr);
		const inst = await instanceOf(rt);
		assert.equal(inst.state, 'needs_auth');
		assert.match(inst.error, /its sign-in ended: .*; run `mcpvisor login fx`/, inst.error);
		assert.match(inst.error, /invalid_grant|refused|revoked/i, inst.error);
		assert.equal(inst.error.split('mcpvisor login').length - 1, 1, `the command once: ${inst.error}`);
		const st = await rt.cli(['status']);
		assert.match(st.stdout, /mcpvisor login fx/);
		await login(rt);
		await waitFor(async () => (await stateOf(rt)) === 'running', 15_000, 'running after the new login');
		const again = await rt.cli(['call', 'fx__whoami']);
		assert.equal(again.code, 0, again.stderr);
		await assertNoTokens(rt, fx);
	});
});

test('oauth: login --no-browser prints the ssh -L line and takes the address the browser ended on from stdin', {
	timeout: 180_000,
}, async (t) => {
	const fx = await startOAuth(t);
	await withRuntime(t, fxServer(fx), async (rt) => {
		await rt.cli(['tools']);
		const child = spawn(MCPVISOR, ['login', 'fx', '--no-browser', '--home', rt.home], {
			// No $BROWSER: --no-browser must not need one.
			env: { ...process.env, ...SAN_ENV, BROWSER: '/bin/false' },
			stdio: ['pipe', 'pipe', 'pipe'],
		});
		const exit = new Promise((r) => child.on('exit', (code) => r(code)));
		t.after(async () => {
			if (procStat(child.pid) !== null) {
				child.kill('SIGKILL');
				await exit;
			}
		});
		let err = '';
		child.stderr.setEncoding('utf8').on('data', (d) => {
			err += d;
		});
		child.stdout.resume();
		const authUrl = await waitFor(
			() => /^ {2}(http:\/\/127\.0\.0\.1:\d+\/authorize\S+)$/m.exec(err)?.[1],
			10_000, 'the authorization URL');
		const port = new URL(new URL(authUrl).searchParams.get('redirect_uri')).port;
		await waitFor(() => err.includes('paste here'), 10_000, 'the paste prompt');
		assert.match(err, new RegExp(`ssh -L ${port}:127\\.0\\.0\\.1:${port} \\S+`), err);
		// The browser elsewhere: its redirect, not followed, pasted back.
		const r = await fetch(authUrl, { redirect: 'manual' });
		assert.equal(r.status, 302);
		const back = r.headers.get('location');
		assert.ok(back.startsWith(`http://127.0.0.1:${port}/callback?`), back);
		child.stdin.write('not the address\n');
		child.stdin.write(`${back}\n`);
		assert.equal(await exit, 0, err);
		assert.match(err, /paste the whole address/, 'a wrong line is refused, and it waits on');
		assert.match(err, /signed in to server "fx"; its tokens are stored/);
		const c = await rt.cli(['call', 'fx__whoami']);
		assert.equal(c.code, 0, c.stderr);
	});
});

test('oauth: a logout in the terminal puts a running server back to needs_auth at once', {
	timeout: 180_000,
}, async (t) => {
	const fx = await startOAuth(t);
	await withRuntime(t, fxServer(fx), async (rt) => {
		await rt.cli(['tools']);
		await loginAndServe(rt);
		const tokensDir = path.join(rt.home, 'state', 'auth', 'tokens');
		assert.ok(fs.readdirSync(tokensDir).some((f) => f.endsWith('.json')), 'tokens stored');
		const out = await rt.cli(['logout', 'fx']);
		assert.equal(out.code, 0, out.stderr);
		assert.ok(!fs.readdirSync(tokensDir).some((f) => f.endsWith('.json')), 'tokens forgotten');
		await waitFor(async () => (await stateOf(rt)) === 'needs_auth', 15_000,
			'needs_auth after the logout');
		assert.match((await instanceOf(rt)).error, /signed out; run `mcpvisor login fx`/);
		const r = await rt.cli(['call', 'fx__whoami']);
		assert.equal(r.code, 1);
		assert.match(r.stderr, /mcpvisor login fx/, r.stderr);
	});
});

test('oauth: a refresh racing a login loses no token: the runtime serves, and what is stored still refreshes', {
	timeout: 240_000,
}, async (t) => {
	const fx = await startOAuth(t);
	await withRuntime(t, fxServer(fx), async (rt) => {
		await rt.cli(['tools']);
		await loginAndServe(rt);
		const c = await connect(rt);
		const s0 = await fx.stats();
		// The runtime's refresh is held at the token endpoint while a
		// login runs in the terminal.
		await fx.set({ holdRefresh: true });
		await fx.expire();
		const pending = c.call('fx__echo', { text: 'raced' });
		await fx.held(1);
		const lp = login(rt);
		// The login's code exchange is not held; its tokens may wait
		// for the runtime's lock. Let the held refresh go either way.
		await waitFor(async () => (await fx.stats()).tokenCode > s0.tokenCode, 20_000,
			'the login at the token endpoint');
		await fx.release();
		const lr = await lp;
		assert.equal((await pending).content[0].text, 'raced');
		const s1 = await fx.stats();
		const raced = s1.refreshes.slice(s0.refreshes.length);
		const loginSaid = lr.stderr.split('\n').filter((l) => l.startsWith('mcpvisor:')).at(-1) ?? '';
		assert.equal(s1.reuse, 0, 'no rotated refresh token was sent twice');
		// What is stored now is good: another expiry refreshes with it.
		await fx.set({ holdRefresh: false });
		await fx.expire();
		assert.equal((await c.call('fx__echo', { text: 'after' })).content[0].text, 'after');
		const s2 = await fx.stats();
		assert.equal(s2.refreshes.at(-1).outcome, 'ok', JSON.stringify(s2.refreshes.at(-1)));
		// What the race left: the refreshes (refresh tokens by digest) and
		// which refresh token the next one presented.
		const next = s2.refreshes.at(-1).presented;
		const whose = next === s1.codeRefresh.at(-1) ? "the login's"
			: raced.some((r) => r.next === next) ? "the held refresh's" : 'another';
		console.log(`# refresh race: held refresh ${JSON.stringify(raced)}; login: ${loginSaid}; ` +
			`the next refresh presented ${whose} refresh token ${next} (${s2.refreshes.at(-1).outcome})`);
		assert.equal(s2.reuse, 0);
		assert.equal(await stateOf(rt), 'running');
		await c.close();
	});
});

test('oauth: a token that expires within a minute is refreshed ahead, without a 401', {
	timeout: 180_000,
}, async (t) => {
	// 62 s: the refresh is due 2 s after the token came.
	const fx = await startOAuth(t, ['--access-ttl', '62']);
	await withRuntime(t, fxServer(fx), async (rt) => {
		await rt.cli(['tools']);
		await loginAndServe(rt);
		const s0 = await fx.stats();
		await waitFor(async () => (await fx.stats()).refreshOk > s0.refreshOk, 30_000,
			'a refresh ahead of expiry');
		const s1 = await fx.stats();
		assert.equal(s1.mcp401, s0.mcp401, 'no request was refused on the way');
		const r = await rt.cli(['call', 'fx__whoami']);
		assert.equal(r.code, 0, r.stderr);
		assert.equal((await fx.stats()).mcp401, s0.mcp401);
	});
});

test('oauth: a client that declared URL-mode elicitation is asked to sign in, and its call goes on', {
	timeout: 180_000,
}, async (t) => {
	const fx = await startOAuth(t);
	await withRuntime(t, fxServer(fx), async (rt) => {
		const c = await connect(rt, { capabilities: { elicitation: { url: {} } } });
		const s = await postStream(c, callBody(7, 'fx__whoami'));
		const ask = await s.next((m) => m.method === 'elicitation/create', 20_000,
			'elicitation/create');
		assert.equal(ask.params.mode, 'url');
		assert.match(ask.params.message, /Sign in to "fx"/);
		assert.ok(ask.params.elicitationId);
		const url = new URL(ask.params.url);
		assert.equal(url.origin, fx.base, 'the authorization server');
		assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
		// The host says the user accepted to open it...
		const ans = await c.post({ jsonrpc: '2.0', id: ask.id, result: { action: 'accept' } });
		assert.equal(ans.status, 202);
		await ans.arrayBuffer();
		// ... and its browser follows the redirect to the runtime's
		// loopback listener.
		const b = await fetch(url, { redirect: 'follow' });
		await b.arrayBuffer();
		const reply = await s.next((m) => m.id === 7, 20_000, 'the call answered');
		assert.ok(reply.result, JSON.stringify(reply));
		assert.match(reply.result.content[0].text, /^client client-/);
		assert.ok(s.msgs.some((m) => m.method === 'notifications/elicitation/complete' &&
			m.params.elicitationId === ask.params.elicitationId), 'elicitation/complete');
		assert.equal(await stateOf(rt), 'running');
		// Signed in for everyone: the terminal's call needs no login.
		const r = await rt.cli(['call', 'fx__echo', '{"text":"too"}']);
		assert.equal(r.code, 0, r.stderr);
		await assertNoTokens(rt, fx);
		await c.close();
	});
});

test('oauth: a declined sign-in ends the call with `mcpvisor login`; a client without URL elicitation is told the same', {
	timeout: 120_000,
}, async (t) => {
	const fx = await startOAuth(t);
	await withRuntime(t, fxServer(fx), async (rt) => {
		const c = await connect(rt, { capabilities: { elicitation: { url: {} } } });
		const s = await postStream(c, callBody(3, 'fx__whoami'));
		const ask = await s.next((m) => m.method === 'elicitation/create', 20_000,
			'elicitation/create');
		const ans = await c.post({ jsonrpc: '2.0', id: ask.id, result: { action: 'decline' } });
		await ans.arrayBuffer();
		const reply = await s.next((m) => m.id === 3, 10_000, 'the call answered');
		assert.ok(reply.error, JSON.stringify(reply));
		assert.match(reply.error.message, /declined.*`mcpvisor login fx`/);
		// Form-only elicitation ({}) is no URL mode: no question.
		const plain = await connect(rt, { capabilities: { elicitation: {} } });
		const p = await postStream(plain, callBody(4, 'fx__whoami'));
		const r2 = await p.next((m) => m.id === 4, 10_000, 'the call answered');
		assert.ok(r2.error);
		assert.match(r2.error.message, /needs a sign-in: run `mcpvisor login fx`/);
		assert.ok(!p.msgs.some((m) => m.method === 'elicitation/create'));
		await c.close();
		await plain.close();
	});
});

test('oauth: setup says `mcpvisor login NAME` for each host entry that signed in with OAuth, in the dry run first', {
	timeout: 120_000,
}, async (t) => {
	const home = await scratchDir(t);
	const mh = path.join(home, 'mh');
	await fsp.copyFile(path.join(REPO, 'tests/e2e/fixtures/hosts/claude-code.json'),
		path.join(home, '.claude.json'));
	const env = { HOME: home, XDG_CONFIG_HOME: path.join(home, '.config') };
	const dry = await runCli(['setup', 'claude-code', '--dry-run'], { home: mh, env });
	assert.equal(dry.code, 0, dry.stderr);
	const hint = `run \`mcpvisor login asana --home ${mh}\` once`;
	const lines = dry.stdout.split('\n');
	const at = lines.findIndex((l) => /^ {2}asana\s+moves to/.test(l));
	assert.ok(at >= 0, dry.stdout);
	assert.ok(lines[at + 1].includes('signs in with OAuth') && lines[at + 1].includes(hint),
		dry.stdout);
	// Before the files' diffs; only asana (sentry has its header,
	// airtable is stdio).
	assert.ok(dry.stdout.indexOf(hint) < dry.stdout.indexOf('---'), dry.stdout);
	assert.equal(dry.stdout.split('mcpvisor login').length - 1, 1, dry.stdout);
	const real = await runCli(['setup', 'claude-code'], { home: mh, env });
	assert.equal(real.code, 0, real.stderr);
	assert.ok(real.stdout.includes(hint), real.stdout);
	assert.ok(real.stdout.includes(
		`sign in to what Claude Code had signed in to:\n  mcpvisor login asana --home ${mh}\n`),
	real.stdout);
	// Every command it names acts on this home.
	assert.ok(real.stdout.includes(`(undo: mcpvisor setup claude-code --undo --home ${mh})`),
		real.stdout);
	console.log(`setup claude-code prints:\n${real.stdout}`);
});
