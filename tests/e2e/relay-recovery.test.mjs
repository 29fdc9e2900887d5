// The relay's recovery on real processes, the four scenarios with
// their bounds (answered within 1 s after the runtime is stopped; within
// 6 s when the runtime it started freezes; told within 3 s of a runtime it
// did not start, or a program on the port, that never answers, and never
// signals it; told within 0.5 s of a credential), and at most once when
// the runtime dies in the middle of a tool call.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { Runtime, demo, makeHome, procStat, waitFor } from './lib.mjs';
import {
	assert,
	callTool,
	demoPid,
	hostConnect,
	hostConnectFails,
	pendingSignals,
	runtimeFile,
	runtimesOf,
	startFixture,
	told,
	withRelayHome,
	DEMO,
	echoOk as echo,
	homeWith,
} from './relay-lib.mjs';

test('relay recovery: a runtime started in a terminal stops; the next call is answered within 1 s by one the relay starts', {
	timeout: 20_000,
}, async (t) => {
	await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
		const rt = new Runtime(ctx.home, path.join(ctx.home, 'mcp.json'));
		await rt.start();
		try {
			const h = await hostConnect(ctx.home);
			ctx.hosts.push(h);
			await echo(h.client);
			rt.terminate();
			assert.equal((await rt.waitExit()).code, 0);
			const r = await callTool(h.client, 'demo__echo', { text: 'again' });
			console.log(`scenario 1 (runtime stopped): answered in ${r.ms.toFixed(0)} ms`);
			assert.ok(r.result && !r.result.isError, `answer: ${told(r)}`);
			assert.ok(r.ms < 1000, `answered after ${r.ms} ms`);
			const info = runtimeFile(ctx.home);
			assert.notEqual(info.pid, rt.child.pid);
			assert.deepEqual(runtimesOf(ctx.home), [info.pid]);
		} finally {
			const p = await rt.stop();
			assert.deepEqual(p, []);
		}
	});
});

test('relay recovery: the runtime it started freezes (SIGSTOP): stopped, replaced, answered within 6 s', {
	timeout: 20_000,
}, async (t) => {
	await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
		const h = await hostConnect(ctx.home);
		ctx.hosts.push(h);
		ctx.pids.push(await demoPid(h.client));
		const old = runtimeFile(ctx.home).pid;
		const t0 = performance.now();
		process.kill(old, 'SIGSTOP');
		const r = await callTool(h.client, 'demo__echo', { text: 'frozen' });
		// A call that may have reached the frozen runtime is not sent
		// again: answered with the uncertainty, or with the result.
		if (!(r.result && !r.result.isError))
			assert.match(told(r), /effect/i);
		// The host's retry (at once) gets the new runtime's answer.
		const again = await echo(h.client, 'after');
		const total = performance.now() - t0;
		console.log(
			`scenario 2 (own runtime frozen): call answered in ${r.ms.toFixed(0)} ms (${told(r) ?? 'a result'}); ` +
				`retry answered by the new runtime ${total.toFixed(0)} ms after the freeze`,
		);
		assert.ok(r.ms < 6000, `answered after ${r.ms} ms`);
		assert.ok(total < 6000, `the new runtime answered ${total} ms after the freeze`);
		await waitFor(() => !procStat(old), 2000, `frozen runtime ${old} gone`);
		const info = runtimeFile(ctx.home);
		assert.ok(info && info.pid !== old, 'a new runtime');
		assert.deepEqual(runtimesOf(ctx.home), [info.pid]);
	});
});

test('relay recovery: a runtime it did not start freezes: told within 3 s, never signalled', {
	timeout: 20_000,
}, async (t) => {
	await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
		const rt = new Runtime(ctx.home, path.join(ctx.home, 'mcp.json'));
		await rt.start();
		const pid = rt.child.pid;
		try {
			const h = await hostConnect(ctx.home);
			ctx.hosts.push(h);
			await echo(h.client);
			process.kill(pid, 'SIGSTOP');
			const t0 = performance.now();
			const r = await callTool(h.client, 'demo__echo', { text: 'x' });
			let text = told(r);
			assert.ok(text, 'the host is told');
			// The call in flight may be told that it may or may not
			// have run; then the host's next call hears what to stop.
			if (!new RegExp(`\\b${pid}\\b`).test(text))
				text = told(await callTool(h.client, 'demo__echo', { text: 'y' }));
			const ms = performance.now() - t0;
			console.log(`scenario 3a (foreign runtime frozen): told in ${r.ms.toFixed(0)} ms, what to stop after ${ms.toFixed(0)} ms: ${text}`);
			assert.ok(r.ms < 3000, `told after ${r.ms} ms`);
			assert.ok(ms < 3000, `told what to stop after ${ms} ms`);
			assert.match(text ?? '', new RegExp(`\\b${pid}\\b`), 'names the pid to stop');
			assert.equal(procStat(pid)?.state, 'T', 'still there, still stopped');
			assert.equal(pendingSignals(pid), 0n, 'no signal sent to it');
			assert.deepEqual(runtimesOf(ctx.home), [pid], 'no second runtime');
		} finally {
			if (procStat(pid))
				process.kill(pid, 'SIGCONT');
			assert.deepEqual(await rt.stop(), []);
		}
	});
});

test('relay recovery: a program on the port that never answers: told within 3 s, the program untouched', {
	timeout: 20_000,
}, async (t) => {
	const fx = await startFixture('silent');
	try {
		await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
			const url = `http://127.0.0.1:${fx.port}/mcp`;
			let { host, error, ms } = await hostConnectFails(ctx.home, { args: ['--url', url] });
			let text = error?.message;
			if (host) {
				ctx.hosts.push(host);
				const r = await callTool(host.client, 'demo__echo', { text: 'x' });
				text = told(r);
				ms = r.ms;
			}
			console.log(`scenario 3b (program on the port): told in ${ms.toFixed(0)} ms: ${text}`);
			assert.ok(text, 'the host is told');
			assert.ok(ms < 3000, `told after ${ms} ms`);
			assert.match(text, new RegExp(`${fx.port}|port`), 'names the port');
			assert.ok(procStat(fx.child.pid), 'the program still runs');
			assert.doesNotMatch(fx.out(), /signalled/, 'never signalled');
			assert.deepEqual(runtimesOf(ctx.home), [], 'no runtime started for --url');
		});
	} finally {
		await fx.stop();
	}
});

test('relay recovery: the runtime asks for a credential (401): told within 0.5 s, never restarted', {
	timeout: 20_000,
}, async (t) => {
	const fx = await startFixture('auth');
	try {
		await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
			const url = `http://127.0.0.1:${fx.port}/mcp`;
			let { host, error, ms } = await hostConnectFails(ctx.home, { args: ['--url', url] });
			let text = error?.message;
			if (host) {
				ctx.hosts.push(host);
				const r = await callTool(host.client, 'demo__echo', { text: 'x' });
				text = told(r);
				ms = r.ms;
			}
			console.log(`scenario 4 (credential): told in ${ms.toFixed(0)} ms: ${text}`);
			assert.ok(text, 'the host is told');
			assert.ok(ms < 500, `told after ${ms} ms`);
			assert.match(text, /MCPVISOR_API_KEY/, 'says what to set');
			assert.ok(procStat(fx.child.pid), 'the program still runs');
			assert.doesNotMatch(fx.out(), /signalled/, 'never signalled');
			assert.deepEqual(runtimesOf(ctx.home), [], 'nothing restarted or started');
		});
	} finally {
		await fx.stop();
	}
});

test('relay recovery: at most once: the runtime dies in the middle of a tool call; the call is not sent again', {
	timeout: 20_000,
}, async (t) => {
	const dir = await makeHome('mcpvisor-relay-count-');
	const count = path.join(dir, 'count');
	const runs = () =>
		(fs.existsSync(count) ? fs.readFileSync(count, 'utf8') : '')
			.split('\n')
			.filter((l) => l === 'call sleep').length;
	try {
		await withRelayHome(
			t,
			() => homeWith({ demo: demo(['--name', 'demo', '--count-file', count]) }),
			async (ctx) => {
				const h = await hostConnect(ctx.home);
				ctx.hosts.push(h);
				ctx.pids.push(await demoPid(h.client));
				const old = runtimeFile(ctx.home).pid;
				const call = callTool(h.client, 'demo__sleep', { ms: 3000 });
				await waitFor(() => runs() === 1, 5000, 'the call running');
				process.kill(old, 'SIGKILL');
				const r = await call;
				const text = told(r);
				console.log(`at most once: told in ${r.ms.toFixed(0)} ms: ${text}`);
				assert.ok(text, 'answered with an error, not a result');
				assert.match(text, /effect/i, 'says it may or may not have taken effect');
				// A call after it goes to the new runtime; a re-sent
				// sleep would have been there first.
				await echo(h.client, 'after');
				assert.equal(runs(), 1, 'the tool ran once');
				const info = runtimeFile(ctx.home);
				assert.notEqual(info.pid, old);
				assert.deepEqual(runtimesOf(ctx.home), [info.pid]);
			},
		);
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
});
