// Processes that escape the process group: a server's child that calls
// setsid() is found by the owner token in its environment and stopped by
// `mcpvisor stop`, and by the next start's reconciliation after a SIGKILL
// of the runtime; processes without our token (or with another) are never
// touched. (Review finding 10, repro p5.py parts A and B.)
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import { connect, demo, waitFor } from './lib.mjs';
import { alive, awaitGone, procStat, withConfig } from './lifetime-lib.mjs';

const OWNER = 'MCPVISOR_OWNER';

const config = {
	idleTimeout: '60s',
	mcpServers: {
		daemonizer: demo(['--name', 'daemonizer', '--spawn-setsid-child']),
	},
};

// The value of name in /proc/PID/environ, or null.
function environValue(pid, name) {
	let env;
	try {
		env = fs.readFileSync(`/proc/${pid}/environ`, 'latin1');
	} catch {
		return null;
	}
	const e = env.split('\0').find((x) => x.startsWith(`${name}=`));
	return e === undefined ? null : e.slice(name.length + 1);
}

// A `sleep` that is none of mcpvisor's: no owner token, or a wrong one.
// Killed by pid at the end of the test.
async function stranger(ctx, token) {
	const env = { ...process.env };
	delete env[OWNER];
	if (token)
		env[OWNER] = token;
	const p = spawn('sleep', ['60'], { detached: true, stdio: 'ignore', env });
	const start = await waitFor(() => procStat(p.pid)?.start, 5000, 'sleep started');
	ctx.defer(async () => {
		if (procStat(p.pid)?.start === start)
			process.kill(p.pid, 'SIGKILL');
	});
	return { pid: p.pid, start };
}

// The daemon the server started in a session of its own, and the checks
// that make this test mean something: it left the group, and it carries
// the server's owner token.
async function setsidChild(rt) {
	const c = await connect(rt);
	const info = await rt.demoPids(c, 'daemonizer__pid');
	const child = info.setsidChild;
	assert.ok(child > 1, `no setsid child: ${JSON.stringify(info)}`);
	rt.track(child);
	const st = await waitFor(() => {
		const s = procStat(child);
		// sleep has exec'd once its comm is no longer the demo's.
		return s && environValue(child, OWNER) ? s : null;
	}, 5000, 'the setsid child running');
	assert.notEqual(st.pgrp, info.pgid, 'the child left the process group');
	const token = environValue(info.pid, OWNER);
	assert.match(token, /^[0-9a-f]{32}$/, 'the server has an owner token');
	assert.equal(environValue(child, OWNER), token, 'the child inherited it');
	return { child, start: st.start, server: info.pid, token };
}

function assertUntouched(s, what) {
	assert.ok(alive(s.pid), `${what} was signalled`);
	assert.equal(procStat(s.pid).start, s.start, `${what} is the same process`);
}

// Two sleeps the runtime must never touch (one without a token, one with
// another's) beside rt's server and the child it moved out with setsid.
async function arrangeOursAndStrangers(rt, ctx) {
	const strangers = {
		plain: await stranger(ctx),
		other: await stranger(ctx, crypto.randomBytes(16).toString('hex')),
	};
	return { strangers, d: await setsidChild(rt) };
}

function assertStrangersUntouched({ plain, other }) {
	assertUntouched(plain, 'a sleep without a token');
	assertUntouched(other, 'a sleep with another token');
}

test('mcpvisor stop: a child that called setsid() is stopped; strangers are not', {
	timeout: 60_000,
}, async (t) => {
	await withConfig(t, config, async (rt, ctx) => {
		const { strangers, d } = await arrangeOursAndStrangers(rt, ctx);

		const r = await rt.cli(['stop']);
		assert.equal(r.code, 0, `stop: ${r.stderr}`);
		const ex = await rt.waitExit();
		assert.equal(ex.code, 0, 'runtime exit code');
		// The runtime waited for it: gone when the runtime is.
		await awaitGone(d.child, 10_000, 'the setsid child after stop');
		assertStrangersUntouched(strangers);
		// A clean end leaves nothing for the next start to look for.
		const j = JSON.parse(
			await fsp.readFile(path.join(ctx.home, 'state', 'journal.json'), 'utf8'),
		);
		assert.deepEqual([j.entries, j.reserved], [[], []], 'journal after a clean stop');
	});
});

test('SIGKILL of the runtime: the next start stops the setsid child and nothing else', {
	timeout: 60_000,
}, async (t) => {
	await withConfig(t, config, async (rt, ctx) => {
		const { strangers, d } = await arrangeOursAndStrangers(rt, ctx);
		ctx.defer(() => {
			if (procStat(d.child)?.start === d.start)
				process.kill(d.child, 'SIGKILL');
		});

		// The token is on disk before the server could start anything.
		const journal = path.join(ctx.home, 'state', 'journal.json');
		const j = JSON.parse(await fsp.readFile(journal, 'utf8'));
		const tokens = [...j.entries.map((e) => e.token), ...(j.reserved ?? [])];
		assert.ok(tokens.includes(d.token), `token not in the journal: ${JSON.stringify(j)}`);
		// The entry naming the server is written a loop turn after its
		// spawn, off the loop: wait until it is on disk, so the reconcile
		// below has it to report (before it, the token alone finds the
		// child; that case is the test above's).
		await waitFor(async () => {
			const k = JSON.parse(await fsp.readFile(journal, 'utf8'));
			return k.entries.some((e) => e.token === d.token);
		}, 5000, 'the server entry in the journal');

		ctx.expectExit(rt, 'SIGKILL');
		rt.terminate('SIGKILL');
		await rt.exitPromise;
		await awaitGone(d.server, 3000, 'the server after SIGKILL');
		assert.ok(alive(d.child), 'the setsid child survives the runtime (precondition)');

		const rt2 = await ctx.launch();
		await awaitGone(d.child, 5000, 'the setsid child after reconcile');
		assert.match(rt2.stderr(), /journal reconciled: 1 entries, 1 stopped, 0 left alone/);
		assertStrangersUntouched(strangers);
	});
});
