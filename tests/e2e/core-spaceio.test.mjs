// A space's .mcp.json is read off the loop (review 2026-12-01, R15): a FIFO
// planted as a space's .mcp.json blocked open() on the loop, so one
// initialize froze every session and the terminal commands. Now the read
// runs in libuv's thread pool with an O_NONBLOCK open, a non-regular file
// is refused with a clear reason, and the runtime answers others meanwhile.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import { DEMO, RawClient, demo, makeHome, waitFor, withRuntime } from './lib.mjs';

const BOUND_MS = 3000;

function within(p, ms, what) {
	let timer;
	return Promise.race([
		p.finally(() => clearTimeout(timer)),
		new Promise((_, reject) => {
			timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
		}),
	]);
}

// Lets a reader blocked in open() on the FIFO go (the old code), so the
// runtime can be stopped whatever happened.
function unblockFifo(fifo) {
	try {
		const fd = fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
		fs.closeSync(fd);
	} catch {
		// No reader waits: nothing to unblock.
	}
}

test('spaceio: a FIFO as .mcp.json stalls nobody and is refused clearly', {
	timeout: 60_000,
}, async (t) => {
	const space = await makeHome('mcpvisor-space-fifo-');
	const fifo = path.join(space, '.mcp.json');
	execFileSync('mkfifo', [fifo]);
	try {
		await withRuntime(t, { demo: demo() }, async (rt) => {
			const a = new RawClient(rt.url);
			await a.initialize();
			const b = new RawClient(`${rt.url}?space=${space}`);
			const binit = b.initialize();
			binit.catch(() => {});
			try {
				// Others keep being answered while b's space is read.
				const ping = await within(a.request('ping'), BOUND_MS, 'ping of another session');
				assert.deepEqual(ping.result, {});
				const st = await within(rt.cli(['status']), BOUND_MS, 'mcpvisor status');
				assert.equal(st.code, 0, st.stderr);
				// b's initialize finishes: the FIFO is refused, not waited on.
				await within(binit, BOUND_MS, 'initialize with a FIFO space');
			} finally {
				unblockFifo(fifo);
			}
			await waitFor(() => /\.mcp\.json: cannot read: not a regular file/.test(rt.stderr()),
				BOUND_MS, 'the refusal in the log');
			const tools = (await b.listAll()).map((x) => x.name);
			assert.ok(tools.includes('demo__echo'), tools.join(' '));
			await a.close();
			await b.close();

			// The FIFO replaced by a real file: seen at the next initialize,
			// untrusted until allowed, then its server runs; a session open
			// before the allow picks it up at reload (read off the loop too).
			await fsp.rm(fifo);
			await fsp.writeFile(fifo, JSON.stringify({
				mcpServers: { spc: { command: DEMO, args: ['--name', 'spc'] } },
			}));
			const c = new RawClient(`${rt.url}?space=${space}`);
			await c.initialize();
			assert.ok(!(await c.listAll()).some((x) => x.name.startsWith('spc__')), 'untrusted');
			const st = await rt.cli(['status']);
			assert.match(st.stdout, /spc\s+untrusted/, st.stdout);
			assert.equal((await rt.cli(['allow', space])).code, 0);
			const d = new RawClient(`${rt.url}?space=${space}`);
			await d.initialize();
			assert.ok((await d.listAll()).some((x) => x.name === 'spc__echo'), 'allowed');
			assert.equal((await rt.cli(['reload'])).code, 0);
			let names = [];
			await waitFor(async () => {
				names = (await c.listAll()).map((x) => x.name);
				return names.includes('spc__echo');
			}, 5000, 'the allowed space in the older session after reload');
			await c.close();
			await d.close();
		});
	} finally {
		unblockFifo(fifo);
		await fsp.rm(space, { recursive: true, force: true });
	}
});
