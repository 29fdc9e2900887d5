// The relay's writes to a host that reads slowly: stdout shares stdin's
// socket (one file description, made non-blocking for stdin), and the
// host stops reading while many large answers come. The relay neither
// blocks (its watch goes on: the runtime is not taken for lost) nor cuts
// a line (every answer arrives whole, in JSON lines, once the host reads).
import { spawn } from 'node:child_process';
import fsp from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { MCPVISOR, PROTOCOL, procStat, waitFor } from './lib.mjs';
import { DEMO, SAN_ENV, assert, homeWith, runtimesOf, stopRuntimes } from './relay-lib.mjs';

const CALLS = 40;
const TEXT = 'x'.repeat(100 * 1024); // 4 MB of answers in all

test('a host that stops reading gets every answer whole, and the relay keeps watching', {
	timeout: 60_000,
}, async (t) => {
	const home = await homeWith(DEMO());
	const sockPath = path.join(os.tmpdir(), `mcpv-relay-slow-${process.pid}.sock`);
	await fsp.rm(sockPath, { force: true });
	const server = net.createServer();
	await new Promise((r) => server.listen(sockPath, r));
	const accepted = new Promise((r) => server.once('connection', r));
	const child = net.connect(sockPath);
	await new Promise((r) => child.once('connect', r));
	const relay = spawn(MCPVISOR, ['relay', '--home', home], {
		stdio: [child, child, 'pipe'],
		env: { ...process.env, ...SAN_ENV },
		cwd: home,
	});
	let err = '';
	relay.stderr.setEncoding('utf8');
	relay.stderr.on('data', (d) => {
		err = (err + d).slice(-16 * 1024);
	});
	const exited = new Promise((r) => relay.on('exit', (code, signal) => r({ code, signal })));
	child.destroy(); // the relay holds its own copies
	const host = await accepted;
	let buf = '';
	const lines = [];
	host.setEncoding('utf8');
	host.on('data', (d) => {
		buf += d;
		let i;
		while ((i = buf.indexOf('\n')) >= 0) {
			lines.push(buf.slice(0, i));
			buf = buf.slice(i + 1);
		}
	});
	const send = (m) => host.write(JSON.stringify(m) + '\n');
	try {
		send({
			jsonrpc: '2.0',
			id: 0,
			method: 'initialize',
			params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'slow', version: '1' } },
		});
		await waitFor(() => lines.length >= 1, 15_000, 'the initialize answer');
		send({ jsonrpc: '2.0', method: 'notifications/initialized' });
		const runtimes = runtimesOf(home);
		assert.equal(runtimes.length, 1);
		host.pause(); // reads nothing
		for (let i = 1; i <= CALLS; i++)
			send({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'demo__echo', arguments: { text: TEXT } } });
		// Longer than the relay's silence and ping windows: a blocked
		// relay would take the runtime for lost meanwhile.
		await new Promise((r) => setTimeout(r, 4000));
		host.resume();
		await waitFor(() => lines.length >= 1 + CALLS, 30_000, `${CALLS} answers`);
		const ids = new Set();
		for (const l of lines.slice(1)) {
			const m = JSON.parse(l); // a cut line would not parse
			assert.equal(m.result?.content?.[0]?.text?.length, TEXT.length, `answer ${m.id}`);
			ids.add(m.id);
		}
		assert.equal(ids.size, CALLS);
		assert.deepEqual(runtimesOf(home), runtimes, 'the same runtime: never taken for lost');
		assert.doesNotMatch(err, /lost|restart/i, err);
	} finally {
		host.end();
		const ex = await exited;
		assert.equal(ex.code, 0, `relay exit ${JSON.stringify(ex)}: ${err}`);
		assert.equal(procStat(relay.pid), null);
		server.close();
		await fsp.rm(sockPath, { force: true });
		const problems = await stopRuntimes(home, []);
		assert.deepEqual(problems, []);
		await fsp.rm(home, { recursive: true, force: true });
	}
});
