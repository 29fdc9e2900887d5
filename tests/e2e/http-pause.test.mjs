// Backpressure from clients to an HTTP server, as for stdio
// (core-pause.test.mjs): six clients that never read 7 MB answers make the
// runtime stop reading the server's HTTP answers, so they wait in the
// server's sockets, not in the runtime's memory; the growth is measured
// beside the same load on a stdio server. Then the clients go and the
// server is read again.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';

import { connect, demo, dial, rawPost, waitFor, withRuntime } from './lib.mjs';
import { startFixture } from './http-faults-lib.mjs';

// Memory figures need ASan to give freed memory back (see core-endpoint).
const LEAN = {
	env: {
		ASAN_OPTIONS:
			'detect_leaks=1:abort_on_error=0:exitcode=23:' +
			'quarantine_size_mb=1:allocator_release_to_os_interval_ms=0',
	},
};
const REPEAT = 3500; // 2 KiB in, about 7 MB out
const SLOW = 6;

function rssMB(pid) {
	const m = fs
		.readFileSync(`/proc/${pid}/status`, 'utf8')
		.match(/VmRSS:\s+(\d+) kB/);
	return Number(m[1]) / 1024;
}

async function bigInstance(rt) {
	const st = await rt.status();
	return st.servers.find((x) => x.name === 'big').instances[0] ?? {};
}

async function slowClients(rt, c) {
	const out = [];
	for (let i = 0; i < SLOW; i++) {
		const s = await dial(rt.port);
		s.on('error', () => {});
		s.pause(); // reads nothing
		s.write(
			rawPost(
				c.sid,
				{
					jsonrpc: '2.0',
					id: `slow-${i}`,
					method: 'tools/call',
					params: { name: 'big__echo', arguments: { text: 'z'.repeat(2048) } },
				},
				`Mcp-Protocol-Version: ${c.protocol}\r\n`,
			),
		);
		out.push(s);
	}
	return out;
}

// The RSS the runtime grows by while SLOW clients hold big's answers.
async function growth(t, big) {
	let grew = null;
	await withRuntime(t, { big, other: demo() }, LEAN, async (rt) => {
		const c = await connect(rt);
		await c.call('big__echo', { text: 'w' });
		await c.call('other__echo', { text: 'w' });
		const before = rssMB(rt.child.pid);
		const slow = await slowClients(rt, c);
		await waitFor(
			async () => (await bigInstance(rt)).outputPaused === true,
			15_000,
			'the runtime to pause reading big',
		);
		// Whatever the server could write has come by now.
		await new Promise((r) => setTimeout(r, 500));
		grew = rssMB(rt.child.pid) - before;
		// Another server is served as usual.
		const r = await c.call('other__echo', { text: 'o' });
		assert.equal(r.content[0].text, 'o');
		for (const s of slow)
			s.destroy();
		// The server is read again: a new call is answered whole.
		const late = await c.call('big__echo', { text: 'late' });
		assert.equal(late.content[0].text, 'late'.repeat(REPEAT));
		await waitFor(
			async () => (await bigInstance(rt)).outputPaused === undefined,
			10_000,
			'reading big again',
		);
	});
	return grew;
}

test('six clients that never read 7 MB answers grow the runtime no more for an HTTP server than for a stdio one', {
	timeout: 90_000,
}, async (t) => {
	const stdio = await growth(t, demo(['--echo-repeat', String(REPEAT)]));
	const fx = await startFixture(t, ['--echo-repeat', String(REPEAT)]);
	const http = await growth(t, { url: fx.url, type: 'http', scope: 'app' });
	t.diagnostic(
		`RSS growth with ${SLOW} stalled readers of ${(7 * SLOW).toFixed(0)} MB: ` +
			`stdio +${stdio.toFixed(1)} MB, HTTP +${http.toFixed(1)} MB`,
	);
	assert.ok(http < 20, `HTTP: RSS grew ${http.toFixed(1)} MB`);
	assert.ok(http <= stdio + 8, `HTTP +${http.toFixed(1)} MB against stdio +${stdio.toFixed(1)} MB`);
});
