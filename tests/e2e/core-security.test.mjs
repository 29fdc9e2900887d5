// The endpoint serves only its user, and a space runs only what its user
// allowed: another uid on TCP gets 403 (or 401 when API keys are set and it
// has none), status shows session labels and never ids, verbose status and
// control stay on the Unix socket, server stderr is shown with secrets
// masked, and a space's .mcp.json runs nothing until `mcpvisor allow`.
// The other user is `nobody`, reached with setpriv (tests run as root).
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import {
	DEMO,
	PROTOCOL,
	RawClient,
	connect,
	demo,
	readMessages,
	runCli,
	scratchDir,
	sessionLabel,
	waitFor,
	withRuntime,
} from './lib.mjs';

const JSON_CT = 'application/json';
const ACCEPT = 'application/json, text/event-stream';

function initBody(name = 'mcpvisor-e2e-security') {
	return JSON.stringify({
		jsonrpc: '2.0',
		id: 1,
		method: 'initialize',
		params: {
			protocolVersion: PROTOCOL,
			capabilities: {},
			clientInfo: { name, version: '0.0.0' },
		},
	});
}

const label = sessionLabel;

// Why another user cannot be tried here, or null when it can.
function otherUserSkip() {
	if (process.getuid() !== 0)
		return 'needs root to act as user nobody';
	try {
		execFileSync('setpriv', ['--version'], { stdio: 'ignore' });
	} catch {
		return 'setpriv (util-linux) is missing: cannot act as user nobody';
	}
	try {
		execFileSync('id', ['nobody'], { stdio: 'ignore' });
	} catch {
		return 'no user nobody';
	}
	return null;
}

// One HTTP request made by user nobody (a node child under setpriv):
// {status, headers, body}.
const AS_NOBODY_SCRIPT = `
const [url, method, headers, body] = JSON.parse(process.argv[1]);
const r = await fetch(url, { method, headers, body: body ?? undefined });
const text = await r.text();
process.stdout.write(JSON.stringify({ status: r.status,
  headers: Object.fromEntries(r.headers), body: text, uid: process.getuid() }));
`;

function asNobody(url, { method = 'GET', headers = {}, body = null } = {}) {
	const gid = execFileSync('id', ['-g', 'nobody']).toString().trim();
	return new Promise((resolve, reject) => {
		execFile(
			'setpriv',
			[
				'--reuid=nobody',
				`--regid=${gid}`,
				'--clear-groups',
				process.execPath,
				'--input-type=module',
				'-e',
				AS_NOBODY_SCRIPT,
				JSON.stringify([url, method, headers, body]),
			],
			{ timeout: 10_000, cwd: '/' },
			(err, stdout, stderr) => {
				if (err)
					return reject(new Error(`as nobody: ${err.message} ${stderr}`));
				const r = JSON.parse(stdout);
				assert.equal(r.uid, 65534, 'the request really ran as nobody');
				resolve(r);
			},
		);
	});
}

const postHeaders = (extra = {}) => ({
	'content-type': JSON_CT,
	accept: ACCEPT,
	...extra,
});

// GET on the Unix socket.
function unixGet(socketPath, p) {
	return new Promise((resolve, reject) => {
		const req = http.request({ socketPath, path: p, method: 'GET' }, (res) => {
			let body = '';
			res.setEncoding('utf8');
			res.on('data', (d) => (body += d));
			res.on('end', () => resolve({ status: res.statusCode, body }));
		});
		req.on('error', reject);
		req.end();
	});
}

test('TCP serves only the runtime\'s user: nobody gets 403 everywhere, the owner 200', {
	timeout: 60_000,
	skip: otherUserSkip() ?? false,
}, async (t) => {
	await withRuntime(t, { demo: demo() }, async (rt) => {
		const victim = await connect(rt);
		const r = await victim.call('demo__echo', { text: 'victim-private-answer' });
		assert.equal(r.content[0].text, 'victim-private-answer');
		const own = await fetch(rt.url.replace('/mcp', '/status'));
		assert.equal(own.status, 200, 'the runtime\'s own user reads status');
		await own.arrayBuffer();

		const st = await asNobody(rt.url.replace('/mcp', '/status'));
		assert.equal(st.status, 403, `nobody: /status ${st.status} ${st.body}`);
		assert.match(JSON.parse(st.body).error.message, /serves only its own user/);
		const init = await asNobody(rt.url, {
			method: 'POST',
			headers: postHeaders(),
			body: initBody(),
		});
		assert.equal(init.status, 403, 'nobody cannot initialize');
		assert.equal(init.headers['mcp-session-id'], undefined);
		// Even with the victim's id (finding 2: replay, call, DELETE).
		const replay = await asNobody(rt.url, {
			headers: {
				accept: 'text/event-stream',
				'mcp-session-id': victim.sid,
				'last-event-id': '1',
			},
		});
		assert.equal(replay.status, 403, 'replay refused');
		assert.ok(!replay.body.includes('victim-private-answer'));
		const del = await asNobody(rt.url, {
			method: 'DELETE',
			headers: { 'mcp-session-id': victim.sid },
		});
		assert.equal(del.status, 403, 'DELETE refused');
		const again = await victim.call('demo__echo', { text: 'still mine' });
		assert.equal(again.content[0].text, 'still mine', 'the victim session lives');
		await victim.close();
	});
});

test('API keys: another uid with a valid bearer key is served, without one 401 + WWW-Authenticate', {
	timeout: 60_000,
	skip: otherUserSkip() ?? false,
}, async (t) => {
	const home = await scratchDir(t);
	const keyFile = path.join(home, 'keys');
	await fsp.writeFile(keyFile, '# keys\nfile-key-0123456789\n', { mode: 0o644 });
	await fsp.chmod(keyFile, 0o644);
	const cfgFile = path.join(home, 'cfg.json');
	await fsp.writeFile(cfgFile, JSON.stringify({
		apiKeys: ['${E2E_CFG_KEY}'],
		mcpServers: { demo: demo() },
	}));
	// A key file other users can read is refused.
	const loose = await runCli(
		['serve', '--config', cfgFile, '--port', '0', '--api-key-file', keyFile],
		{ home: path.join(home, 'h0'), env: { E2E_CFG_KEY: 'cfg-key-abcdefghij' } },
	);
	assert.equal(loose.code, 2, `loose key file: ${loose.stderr}`);
	assert.match(loose.stderr, /chmod 600/);
	await fsp.chmod(keyFile, 0o600);
	await withRuntime(t, { demo: demo() }, {
		args: ['--api-key-file', keyFile, '--config', cfgFile],
		env: { E2E_CFG_KEY: 'cfg-key-abcdefghij' },
	}, async (rt) => {
		const none = await asNobody(rt.url, {
			method: 'POST', headers: postHeaders(), body: initBody(),
		});
		assert.equal(none.status, 401, `no key: ${none.status} ${none.body}`);
		assert.match(none.headers['www-authenticate'] ?? '', /^Bearer/);
		const wrong = await asNobody(rt.url, {
			method: 'POST',
			headers: postHeaders({ authorization: 'Bearer file-key-0123456788' }),
			body: initBody(),
		});
		assert.equal(wrong.status, 401, 'a wrong key');
		for (const key of ['file-key-0123456789', 'cfg-key-abcdefghij']) {
			const ok = await asNobody(rt.url, {
				method: 'POST',
				headers: postHeaders({ authorization: `Bearer ${key}` }),
				body: initBody(),
			});
			assert.equal(ok.status, 200, `key ${key.slice(0, 4)}: ${ok.body}`);
			assert.ok(ok.headers['mcp-session-id']);
		}
		// The config's key is a secret: never in the log.
		assert.ok(!rt.stderr().includes('cfg-key-abcdefghij'));
		assert.ok(!rt.stderr().includes('file-key-0123456789'));
	});
});

test('status shows session labels, never ids; verbose status and control only on the Unix socket', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { demo: demo() }, async (rt) => {
		const victim = await connect(rt);
		await victim.call('demo__echo', { text: 'victim-private-answer' });
		const res = await fetch(rt.url.replace('/mcp', '/status'));
		const text = await res.text();
		assert.equal(res.status, 200);
		assert.ok(!text.includes(victim.sid), 'no session id on TCP /status');
		const st = JSON.parse(text);
		const entry = st.sessionList.find((s) => s.label === label(victim.sid));
		assert.ok(entry, `label ${label(victim.sid)} in ${text}`);
		assert.equal(entry.client, 'mcpvisor-e2e');
		const inst = st.servers.find((s) => s.name === 'demo').instances[0];
		assert.deepEqual(inst.sessions, [label(victim.sid)]);
		assert.equal(inst.pid, undefined, 'no pid on TCP');

		const v = await fetch(rt.url.replace('/mcp', '/status?verbose=1'));
		assert.equal(v.status, 403, 'verbose status over TCP');
		await v.arrayBuffer();
		const ctl = await fetch(rt.url.replace('/mcp', '/control/stop'), {
			method: 'POST',
		});
		assert.equal(ctl.status, 403, 'control over TCP');
		await ctl.arrayBuffer();

		const full = await unixGet(rt.socket, '/status?verbose=1');
		assert.equal(full.status, 200);
		assert.ok(!full.body.includes(victim.sid), 'no session id on the socket either');
		assert.ok(JSON.parse(full.body).servers[0].instances[0].pid > 0, 'pids on the socket');
		// The hijack of the review: ids read from /status, then replayed.
		const ids = text.match(/[0-9a-f]{32}/g) ?? [];
		assert.deepEqual(ids, [], 'nothing that looks like a session id');
		await victim.close();
	});
});

test('server stderr in status is shown with every configured secret masked', {
	timeout: 60_000,
}, async (t) => {
	const servers = {
		leaky: {
			command: '/bin/sh',
			args: ['-c', 'echo "starting with token=$TOKEN and $FROMVAR" >&2; exit 3'],
			env: { TOKEN: 's3cr3t-XYZ', FROMVAR: '${E2E_SECRET}' },
			scope: 'app',
		},
	};
	await withRuntime(t, servers, { env: { E2E_SECRET: 'envS3CRET-999' } }, async (rt) => {
		const c = await connect(rt);
		const r = await c.request('tools/call', { name: 'leaky__x', arguments: {} });
		assert.ok(r.error || r.result?.isError, 'the leaky server fails');
		assert.ok(!JSON.stringify(r).includes('s3cr3t-XYZ'), `call error: ${JSON.stringify(r)}`);
		const st = await waitFor(async () => {
			const s = await rt.status();
			const i = s.servers.find((x) => x.name === 'leaky').instances[0];
			return i?.stderr ? s : null;
		}, 5000, 'the stderr tail in status');
		const text = JSON.stringify(st);
		assert.ok(text.includes('token=***'), `masked: ${text}`);
		assert.ok(!text.includes('s3cr3t-XYZ'), 'literal secret');
		assert.ok(!text.includes('envS3CRET-999'), '${VAR} secret');
		const cli = await rt.cli(['status', '-v']);
		assert.ok(!cli.stdout.includes('s3cr3t-XYZ'), cli.stdout);
		const tcp = await (await fetch(rt.url.replace('/mcp', '/status'))).text();
		assert.ok(!tcp.includes('s3cr3t-XYZ') && !tcp.includes('"stderr"'), tcp);
		await c.close();
	});
});

test('a space\'s .mcp.json runs nothing until `mcpvisor allow`; a changed file needs it again', {
	timeout: 80_000,
}, async (t) => {
	const space = await fsp.mkdtemp(path.join(os.tmpdir(), 'mcpvisor-space-'));
	const pwned = path.join(space, 'pwned.txt');
	const write = (extra = '') =>
		fsp.writeFile(path.join(space, '.mcp.json'), JSON.stringify({
			mcpServers: {
				pwn: {
					command: '/bin/sh',
					args: ['-c', `id > ${pwned}; exec ${DEMO} --name pwn`],
				},
			},
		}) + extra);
	await write();
	try {
		await withRuntime(t, { demo: demo() }, async (rt) => {
			const open = async () => {
				const c = new RawClient(`${rt.url}?space=${space}`);
				await c.initialize();
				return c;
			};
			let c = await open();
			const tools = (await c.listAll()).map((x) => x.name);
			assert.ok(tools.includes('demo__echo'), 'global servers keep working');
			assert.ok(!tools.some((n) => n.startsWith('pwn__')), tools.join(' '));
			const r = await c.request('tools/call', { name: 'pwn__echo', arguments: {} });
			assert.match(r.error?.message ?? '', /untrusted.*mcpvisor allow/, JSON.stringify(r));
			assert.ok(!fs.existsSync(pwned), 'the space\'s command never ran');
			const st = await rt.cli(['status']);
			assert.match(st.stdout, /pwn\s+untrusted.*mcpvisor allow/, st.stdout);
			const tl = await rt.cli(['tools']);
			assert.match(tl.stderr, /pwn\s+untrusted.*mcpvisor allow/, tl.stderr);
			const ck = await runCli(['check', path.join(space, '.mcp.json')], { home: rt.home });
			assert.equal(ck.code, 2);
			assert.match(ck.stdout + ck.stderr, /untrusted/);
			await c.close();

			const allow = await rt.cli(['allow', space]);
			assert.equal(allow.code, 0, allow.stderr);
			const store = path.join(rt.home, 'state', 'trust.json');
			assert.equal(fs.statSync(store).mode & 0o777, 0o600, 'store mode');
			c = await open();
			const ok = await c.call('pwn__echo', { text: 'allowed' });
			assert.equal(ok.content[0].text, 'allowed');
			assert.ok(fs.existsSync(pwned), 'allowed: it runs');
			await c.close();

			await write(' ');
			c = await open();
			const changed = await c.request('tools/call', { name: 'pwn__echo', arguments: {} });
			assert.match(changed.error?.message ?? '', /changed since it was allowed/);
			await c.close();

			assert.equal((await rt.cli(['allow', space])).code, 0);
			const rev = await rt.cli(['allow', '--revoke', space]);
			assert.equal(rev.code, 0, rev.stderr);
			c = await open();
			const revoked = await c.request('tools/call', { name: 'pwn__echo', arguments: {} });
			assert.match(revoked.error?.message ?? '', /untrusted/);
			await c.close();
		});
	} finally {
		await fsp.rm(space, { recursive: true, force: true });
	}
});

test('a ?space= folder that does not exist is refused at initialize', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { demo: demo() }, async (rt) => {
		const res = await fetch(`${rt.url}?space=/nonexistent/dir`, {
			method: 'POST',
			headers: postHeaders(),
			body: initBody(),
		});
		assert.equal(res.status, 400);
		const [msg] = await readMessages(res);
		assert.match(msg.error.message, /\/nonexistent\/dir does not exist/);
		assert.equal(res.headers.get('mcp-session-id'), null);
	});
});
