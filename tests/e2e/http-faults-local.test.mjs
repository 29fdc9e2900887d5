// Local HTTP servers (command + url with {port}) on real processes: a
// squatter that takes the port before the server binds it, a runtime
// killed with SIGKILL and the next one reconciling from the journal, and
// server messages of an HTTP server reaching exactly the session whose call
// caused them.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fsp from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';

import { DEMO, connect, runCli, scratchDir, waitFor, withRuntime } from './lib.mjs';
import { instanceOf, openGetStream, startPids, timed } from './failures-lib.mjs';
import { alive, awaitGone, watchGone, withConfig } from './lifetime-lib.mjs';
import { FIX_PATH, argAfter, streamRequest } from './http-faults-lib.mjs';

// A local server: the demo fixture over HTTP on the port mcpvisor gives it.
function local(args = [], extra = {}) {
	return {
		command: DEMO,
		args: ['--http', '{port}', ...args],
		url: `http://127.0.0.1:{port}${FIX_PATH}`,
		scope: 'app',
		...extra,
	};
}

test('a squatter takes the port before the server binds it: another port, not a failed start, the squatter untouched', {
	timeout: 60_000,
}, async (t) => {
	const dir = await scratchDir(t);
	const cf = path.join(dir, 'count');
	await withRuntime(t, { web: local(['--slow-start', '700', '--count-file', cf]) }, async (rt) => {
		const c = await connect(rt);
		const list = timed(c.listAll());
		// The server is started and has not bound its port yet. Awaited
		// by its own start line, not its command line: under load a
		// process found by its command line could be stopped before it
		// wrote that line, and the count below would miss a start.
		const first = await waitFor(() => startPids(cf)[0], 5000, 'the local server to start');
		rt.track(first);
		const port = Number(argAfter(first, '--http'));
		assert.ok(port > 0, `its port: ${argAfter(first, '--http')}`);
		// mcpvisor may connect to see that something listens (then
		// proves from /proc who holds the socket), but never sends it
		// a byte: no request reaches a program that is not its server.
		let connections = 0;
		let received = 0;
		const squatter = net.createServer((s) => {
			connections++;
			s.on('data', (d) => {
				received += d.length;
			});
			s.on('error', () => {});
		});
		await new Promise((resolve, reject) => {
			squatter.once('error', reject);
			squatter.listen(port, '127.0.0.1', resolve);
		});
		t.after(() => new Promise((r) => squatter.close(r)));

		const { value: tools, ms } = await list;
		assert.ok(tools.some((x) => x.name === 'web__echo'), `tools: ${tools.map((x) => x.name)}`);
		const pids = startPids(cf);
		for (const p of pids)
			rt.track(p);
		assert.equal(pids.length, 2, 'one more start after the squatter');
		const second = pids[1];
		const port2 = Number(argAfter(second, '--http'));
		assert.ok(port2 > 0 && port2 !== port, `the second port ${port2} (squatted ${port})`);
		const r = await c.call('web__echo', { text: 'on another port' });
		assert.equal(r.content[0].text, 'on another port');
		const { server, inst } = instanceOf(await rt.status(), 'web');
		assert.equal(inst.state, 'running', JSON.stringify(inst));
		assert.equal(inst.lastFailure, undefined, `counted as a failure: ${JSON.stringify(inst)}`);
		assert.equal(server.lastFailure, undefined, `counted as a failure: ${JSON.stringify(server)}`);
		assert.equal(inst.nextAttemptInMs, undefined, 'a backoff');
		assert.match(JSON.stringify(inst), new RegExp(`\\b${port2}\\b`), 'status -v shows the actual port');
		// No backoff between the two starts: a backoff follows only a
		// failed state, which the instance never entered (the list's
		// time, two slow starts and a busy machine's share, is printed).
		assert.doesNotMatch(rt.stderr(), /instance web: \S+ -> failed/, 'a failed start');
		assert.equal(received, 0, 'mcpvisor sent the squatter a request');
		assert.ok(squatter.listening, 'the squatter is still there');
		t.diagnostic(
			`squatted port ${port}: served on ${port2}; first list ${ms.toFixed(0)} ms ` +
				`(slow start 700 ms twice); ${connections} probe connection(s), 0 bytes`,
		);
		await c.close();
	});
});

test('SIGKILL of the runtime with a local HTTP server: the next serve stops what the journal names; nothing left', {
	timeout: 80_000,
}, async (t) => {
	const config = {
		idleTimeout: '60s',
		mcpServers: { web: local(['--grandchild']) },
	};
	await withConfig(t, config, async (rt, ctx) => {
		const c = await connect(rt);
		const info = await rt.demoPids(c, 'web__pid');
		assert.ok(info.grandchild > 1, 'grandchild pid');
		const port = Number(argAfter(info.pid, '--http'));
		assert.ok(port > 0, 'the server got a port');
		const journal = path.join(ctx.home, 'state', 'journal.json');
		const j = JSON.parse(await fsp.readFile(journal, 'utf8'));
		const entry = j.entries.find((e) => e.pid === info.pid);
		assert.ok(entry, `journal: ${JSON.stringify(j)}`);
		assert.match(JSON.stringify(entry), new RegExp(`\\b${port}\\b`), 'the journal holds its port');

		ctx.expectExit(rt, 'SIGKILL');
		rt.terminate('SIGKILL');
		await rt.exitPromise;
		const gone = await watchGone([info.pid], 3000);
		assert.ok(gone.has(info.pid), 'the server outlived the runtime');
		assert.ok(alive(info.grandchild), 'the grandchild survives (not a direct child)');

		const t1 = Date.now();
		const rt2 = await ctx.launch();
		rt2.track(info.grandchild);
		const gcGone = await awaitGone(info.grandchild, 10_000, 'the orphaned grandchild');
		const after = JSON.parse(await fsp.readFile(journal, 'utf8'));
		assert.deepEqual(after.entries, [], 'journal emptied after reconcile');
		t.diagnostic(`reconcile: the local server's grandchild gone ${gcGone - t1} ms after the second start`);

		// The server starts again on the new runtime.
		const c2 = await connect(rt2);
		const again = await rt2.demoPids(c2, 'web__pid');
		assert.notEqual(again.pid, info.pid);
		await c2.close();
	});
});

test('progress, sampling and elicitation through an HTTP server reach exactly the session whose call caused them', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { web: local() }, async (rt) => {
		const caps = { capabilities: { sampling: {}, elicitation: {} } };
		const a = await connect(rt, { ...caps, name: 'a' });
		const b = await connect(rt, { ...caps, name: 'b' });
		const getA = await openGetStream(rt, a);
		const getB = await openGetStream(rt, b);
		await a.listAll();
		await rt.demoPids(a, 'web__pid');
		const tag = crypto.randomBytes(4).toString('hex');
		const answer = (who) => (m) =>
			m.method === 'sampling/createMessage'
				? { role: 'assistant', content: { type: 'text', text: `${who}-${tag}` }, model: 'm' }
				: { action: 'accept', content: { answer: `${who}-${tag}` } };
		const call = (c, who, name, args, token) =>
			streamRequest(
				c,
				'tools/call',
				{ name, arguments: args, ...(token ? { _meta: { progressToken: token } } : {}) },
				answer(who),
			);
		const [sa, eb, pa, pb] = await Promise.all([
			call(a, 'a', 'web__sample', { prompt: `a asks ${tag}` }),
			call(b, 'b', 'web__elicit', { message: `b asks ${tag}` }),
			call(a, 'a', 'web__sleep', { ms: 700 }, `pa-${tag}`),
			call(b, 'b', 'web__sleep', { ms: 700 }, `pb-${tag}`),
		]);
		// a's sampling reached a, on its call's stream; b's elicitation b.
		assert.deepEqual(sa.asked.map((m) => m.method), ['sampling/createMessage'], JSON.stringify(sa.asked));
		assert.match(JSON.stringify(sa.asked[0].params), new RegExp(`a asks ${tag}`));
		assert.match(JSON.stringify(sa.reply.result), new RegExp(`a-${tag}`));
		assert.deepEqual(eb.asked.map((m) => m.method), ['elicitation/create'], JSON.stringify(eb.asked));
		assert.match(JSON.stringify(eb.asked[0].params), new RegExp(`b asks ${tag}`));
		assert.match(JSON.stringify(eb.reply.result), new RegExp(`b-${tag}`));
		// Each sleep's progress on its own stream, with its own token.
		const progress = (r) => r.notes.filter((m) => m.method === 'notifications/progress');
		assert.ok(progress(pa).length >= 1, `a's progress: ${JSON.stringify(pa.notes)}`);
		assert.ok(progress(pb).length >= 1, `b's progress: ${JSON.stringify(pb.notes)}`);
		assert.ok(progress(pa).every((m) => m.params.progressToken === `pa-${tag}`), JSON.stringify(pa.notes));
		assert.ok(progress(pb).every((m) => m.params.progressToken === `pb-${tag}`), JSON.stringify(pb.notes));
		for (const r of [pa, pb])
			assert.deepEqual(r.asked, [], 'a server request on a sleep');
		// Nothing of it strayed onto either GET stream.
		await getA.close();
		await getB.close();
		const stray = [...getA.messages, ...getB.messages].filter(
			(m) => m.method === 'notifications/progress' || m.method === 'sampling/createMessage' || m.method === 'elicitation/create',
		);
		assert.deepEqual(stray, [], 'messages on a GET stream');
		await a.close();
		await b.close();
	});
});

test('config: a local url that is not loopback, or {port} in a remote url, is refused naming the field; serve runs the others', {
	timeout: 60_000,
}, async (t) => {
	const servers = {
		lan: local([], { url: 'http://192.168.1.20:{port}/mcp' }),
		far: { url: 'https://example.invalid:{port}/mcp', scope: 'app' },
		web: local(),
	};
	const dir = await scratchDir(t);
	const file = path.join(dir, 'mcp.json');
	await fsp.writeFile(file, JSON.stringify({ mcpServers: servers }));
	const chk = await runCli(['check', file]);
	assert.equal(chk.code, 2, chk.stdout + chk.stderr);
	assert.match(chk.stderr, /server "lan": field "url": with "command" the url's host must be loopback/);
	assert.match(chk.stderr, /server "far": field "url": \{port\} is only for a local server/);
	assert.match(chk.stdout, /^web\s+http-local\s+scope app\s+transport auto\s+http:\/\/127\.0\.0\.1:\{port\}\/mcp$/m);
	await withRuntime(t, servers, async (rt) => {
		assert.match(rt.stdoutText, /serving 1 of 3 servers/);
		const c = await connect(rt);
		const tools = (await c.listAll()).map((x) => x.name);
		assert.ok(tools.includes('web__echo'), `tools: ${tools}`);
		assert.ok(!tools.some((n) => n.startsWith('lan__') || n.startsWith('far__')), `tools: ${tools}`);
		await rt.demoPids(c, 'web__pid');
		await c.close();
	});
});
