// `mcpvisor restart` without a server name: the runtime itself is drained,
// stopped and started again on the same home with the same options, under
// a restart mark in the state directory that relays wait on.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { test } from 'node:test';

import {
	Runtime,
	connect,
	demo,
	makeHome,
	procStat,
	runCli,
	waitFor,
	writeConfig,
} from './lib.mjs';
import {
	awaitInflight,
	markPath,
	runtimeFile,
	runtimesOf,
	sanitizerReports,
	stopRuntimes,
} from './relay-lib.mjs';

function cmdline(pid) {
	return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
}

async function serverNames(home) {
	const r = await runCli(['status', '--json'], { home });
	assert.equal(r.code, 0, `status: ${r.stderr}`);
	return (JSON.parse(r.stdout).servers ?? []).map((s) => s.name).sort();
}

// One restart while a call is in flight: the call finishes (drained), the
// mark is there while it runs and gone after; the new runtime answers.
async function restartOnce(home, url, oldPid) {
	const c = await connect({ url });
	const call = c.call('demo__sleep', { ms: 3000 });
	// The call has reached the server before the restart begins.
	await awaitInflight(home);
	const t0 = performance.now();
	const restart = runCli(['restart'], { home });
	let sawMark = null;
	await waitFor(
		() => {
			if (fs.existsSync(markPath(home))) {
				// The old pid alone on the first line (what the relay
				// reads), the rest as JSON on the second.
				const [pid, json] = fs.readFileSync(markPath(home), 'utf8').split('\n');
				sawMark = { pid: Number(pid), ...JSON.parse(json) };
			}
			return sawMark;
		},
		5000,
		'the restart mark',
	);
	const r = await restart;
	const ms = performance.now() - t0;
	assert.equal(r.code, 0, `restart: ${r.stdout}${r.stderr}`);
	assert.equal(sawMark.pid, oldPid, 'the mark names the old runtime');
	assert.equal(sawMark.oldPid, oldPid);
	assert.ok(!fs.existsSync(markPath(home)), 'mark gone after the restart');
	const res = await call;
	assert.ok(!res.isError, 'the call in flight was drained, not cut');
	assert.ok(!procStat(oldPid), 'the old runtime is gone');
	const info = runtimeFile(home);
	assert.ok(info && info.pid !== oldPid, 'a new runtime file');
	assert.match(r.stdout, new RegExp(`restarted as pid ${info.pid}`));
	assert.deepEqual(runtimesOf(home), [info.pid], 'one runtime after');
	return { info, ms };
}

test('restart without a server: drained, same home, servers and options; mark during, gone after; twice', {
	timeout: 120_000,
}, async (t) => {
	const home = await makeHome();
	const servers = { demo: demo(['--name', 'demo']), other: demo(['--name', 'other']) };
	const config = await writeConfig(home, servers);
	// The config elsewhere than the default, so "same options" shows.
	const moved = `${home}/elsewhere.json`;
	await fsp.rename(config, moved);
	const rt = new Runtime(home, moved);
	const problems = [];
	try {
		await rt.start({ env: { MCPVISOR_LOG: 'debug' }, args: ['--grace', '5s'] });
		const before = await serverNames(home);
		assert.deepEqual(before, ['demo', 'other']);
		const first = await restartOnce(home, rt.url, rt.child.pid);
		const ex = await rt.waitExit();
		assert.equal(ex.code, 0, 'the first runtime drained and exited 0');
		const args = cmdline(first.info.pid);
		assert.equal(args[1], 'serve');
		assert.ok(args.includes(moved), `same --config: ${args.join(' ')}`);
		assert.ok(args.includes('--grace') && args.includes('5s'), 'same --grace');
		const env = fs.readFileSync(`/proc/${first.info.pid}/environ`, 'utf8');
		assert.ok(env.split('\0').includes('MCPVISOR_LOG=debug'), 'same log level');
		assert.deepEqual(await serverNames(home), before, 'same servers');

		const second = await restartOnce(home, first.info.url, first.info.pid);
		assert.deepEqual(await serverNames(home), before, 'same servers again');
		console.log(`restart: ${Math.round(first.ms)} ms, then ${Math.round(second.ms)} ms (each with a 3 s call draining)`);
	} catch (e) {
		problems.push(e.message);
	} finally {
		if (rt.child && !rt.exited)
			problems.push(...(await rt.stop()));
		problems.push(...(await stopRuntimes(home)));
		problems.push(...sanitizerReports(home));
		await fsp.rm(home, { recursive: true, force: true });
	}
	assert.deepEqual(problems, []);
});

test('restart without a runtime: exit 3, no mark; restart NAME still restarts one server', {
	timeout: 60_000,
}, async (t) => {
	const home = await makeHome();
	await writeConfig(home, { demo: demo(['--name', 'demo']) });
	try {
		const r = await runCli(['restart'], { home });
		assert.equal(r.code, 3, r.stderr);
		assert.match(r.stderr, /no runtime is running/);
		assert.ok(!fs.existsSync(markPath(home)));
		const rt = new Runtime(home, `${home}/mcp.json`);
		await rt.start();
		try {
			const c = await connect(rt);
			await c.call('demo__echo', { text: 'x' });
			const r2 = await rt.cli(['restart', 'demo']);
			assert.equal(r2.code, 0, r2.stderr);
			assert.ok(!fs.existsSync(markPath(home)), 'no mark for one server');
			assert.deepEqual(runtimesOf(home), [rt.child.pid], 'the runtime stays');
		} finally {
			assert.deepEqual(await rt.stop(), []);
		}
	} finally {
		await fsp.rm(home, { recursive: true, force: true });
	}
});
