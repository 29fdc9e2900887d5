// The relay's recovery on real processes, the SPEC's four scenarios: the
// next call answered by a runtime the relay starts after the runtime is
// stopped; stopped, replaced and answered when the runtime it started
// freezes; told, and never signalling it, of a runtime it did not start,
// or a program on the port, that never answers; told of a credential; and
// at most once when the runtime dies in the middle of a tool call. Each
// time is a figure (relay-lib's figure(): `make bench` holds the SPEC's
// targets); a test holds the outcome, and a bound that tells it from the
// failure (the reference time where a busy machine keeps it with room).
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { Runtime, demo, makeHome, procStat, waitFor } from './lib.mjs';
import {
	assert,
	callTool,
	demoPid,
	figure,
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

test('relay recovery: a runtime started in a terminal stops; the next call is answered by one the relay starts', {
	timeout: 60_000,
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
			figure('runtime stopped: the next call answered', r.ms, { target: 1000, reference: 4000 });
			assert.ok(r.result && !r.result.isError, `answer: ${told(r)}`);
			assert.ok(r.ms < 4000, `answered after ${r.ms} ms`);
			const info = runtimeFile(ctx.home);
			assert.notEqual(info.pid, rt.child.pid);
			assert.deepEqual(runtimesOf(ctx.home), [info.pid]);
		} finally {
			const p = await rt.stop();
			assert.deepEqual(p, []);
		}
	});
});

test('relay recovery: the runtime it started freezes (SIGSTOP): stopped, replaced, answered', {
	timeout: 60_000,
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
		console.log(`scenario 2 (own runtime frozen): the call told ${told(r) ?? 'a result'}`);
		figure('own runtime frozen: the call answered', r.ms, { target: 6000, reference: 22_000 });
		figure('own runtime frozen: the retry answered by the new one', total, {
			target: 6000,
			reference: 22_000,
		});
		// The reference (22 s) is past the test's own timeout.
		await waitFor(() => !procStat(old), 10_000, `frozen runtime ${old} gone`);
		const info = runtimeFile(ctx.home);
		assert.ok(info && info.pid !== old, 'a new runtime');
		assert.deepEqual(runtimesOf(ctx.home), [info.pid]);
	});
});

test('relay recovery: a runtime it did not start freezes: told what to stop, never signalled', {
	timeout: 60_000,
}, async (t) => {
	await withRelayHome(t, () => homeWith(DEMO()), async (ctx) => {
		const rt = new Runtime(ctx.home, path.join(ctx.home, 'mcp.json'));
		// Stopped below: in a process group of its own (Runtime.start).
		await rt.start({ ownGroup: true });
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
			console.log(`scenario 3a (foreign runtime frozen): ${text}`);
			figure('foreign runtime frozen: told', r.ms, { target: 3000, reference: 13_000 });
			figure('foreign runtime frozen: told what to stop', ms, { target: 3000, reference: 13_000 });
			assert.ok(ms < 13_000, `told what to stop after ${ms} ms`);
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

test('relay recovery: a program on the port that never answers: told, the program untouched', {
	timeout: 60_000,
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
			console.log(`scenario 3b (program on the port): ${text}`);
			figure('a program on the port never answers: told', ms, { target: 3000, reference: 13_000 });
			assert.ok(text, 'the host is told');
			assert.ok(ms < 13_000, `told after ${ms} ms`);
			assert.match(text, new RegExp(`${fx.port}|port`), 'names the port');
			assert.ok(procStat(fx.child.pid), 'the program still runs');
			assert.doesNotMatch(fx.out(), /signalled/, 'never signalled');
			assert.deepEqual(runtimesOf(ctx.home), [], 'no runtime started for --url');
		});
	} finally {
		await fx.stop();
	}
});

test('relay recovery: the runtime asks for a credential (401): told, never restarted', {
	timeout: 60_000,
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
			console.log(`scenario 4 (credential): ${text}`);
			figure('the runtime asks for a credential: told', ms, { target: 500, reference: 2000 });
			assert.ok(text, 'the host is told');
			// Told rather than left to the host's patience (45 s): the
			// 2 s reference is make bench's too, as a busy machine's
			// sanitized relay took 1.3 s to start and connect alone.
			assert.ok(ms < 10_000, `told after ${ms} ms`);
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
	timeout: 60_000,
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
