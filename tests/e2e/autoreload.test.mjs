// The config that reloads itself: the config file is watched through its
// folder, so an edit (in place, or by rename as vim, VS Code and `mv` do)
// applies as `mcpvisor reload` does without any command; a burst of writes
// is one reload; an invalid edit keeps the running servers and status says
// why until a good one; a space's .mcp.json is watched under the trust
// rules (an edit needs allowing again, and `allow` applies at once).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import {
	DEMO,
	RawClient,
	connect,
	demo,
	makeHome,
	runInHome,
	waitFor,
	withRuntime,
} from './lib.mjs';

const WATCH = { watch: true };
const APPLY_MS = 5000;

const cfgText = (servers) => JSON.stringify({ mcpServers: servers }, null, 2);
const count = (text, re) => (text.match(re) || []).length;

async function toolNames(c) {
	return (await c.listAll()).map((x) => x.name);
}

// Resolves once the tools c lists satisfy cond.
function toolsSoon(c, cond, what) {
	return waitFor(async () => cond(await toolNames(c)), APPLY_MS, what);
}

test('autoreload: an edit applies without a command, in place or by rename; unchanged servers keep their pid', {
	timeout: 60_000,
}, async (t) => {
	const a = demo(['--name', 'a']);
	await withRuntime(t, { a }, WATCH, async (rt) => {
		const c = await connect(rt);
		const a1 = await rt.demoPids(c, 'a__pid');

		// In place: the file written over.
		await fsp.writeFile(rt.configPath, cfgText({ a, b: demo(['--name', 'b']) }));
		await toolsSoon(c, (n) => n.includes('b__echo'), 'b in tools/list after an in-place edit');

		// Replaced by rename, as an editor's atomic save or `mv tmp FILE`.
		const tmp = path.join(path.dirname(rt.configPath), '.mcp.json.tmp');
		await fsp.writeFile(tmp, cfgText({ a, b: demo(['--name', 'b']), c: demo(['--name', 'c']) }));
		await fsp.rename(tmp, rt.configPath);
		await toolsSoon(c, (n) => n.includes('c__echo'), 'c after a replacement by rename');

		// vim's save: the file renamed to a backup, a new one written, the
		// backup removed. The watch is on the folder, so it is still seen.
		const backup = `${rt.configPath}~`;
		await fsp.rename(rt.configPath, backup);
		await fsp.writeFile(rt.configPath, cfgText({ a, c: demo(['--name', 'c']) }));
		await fsp.rm(backup);
		await toolsSoon(c, (n) => !n.includes('b__echo') && n.includes('c__echo'), 'b removed by a vim-style save');

		assert.equal((await rt.demoPids(c, 'a__pid')).pid, a1.pid, 'a kept its process through three reloads');
		assert.equal(count(rt.stderr(), /config reloaded from /g), 3, rt.stderr());
		await rt.status();
		await c.close();
	});
});

test('autoreload: a burst of 20 writes is one reload, and a write without change is none', {
	timeout: 60_000,
}, async (t) => {
	const a = demo(['--name', 'a']);
	await withRuntime(t, { a }, WATCH, async (rt) => {
		const c = await connect(rt);
		const a1 = await rt.demoPids(c, 'a__pid');
		// Each write a different valid config: any reload in the middle
		// of the burst would be a reload of its own. Written without
		// yielding to the loop, so that the burst is a few ms long
		// however busy the machine: twenty awaited writes took longer
		// than the watch's 200 ms of quiet, and were two reloads.
		const texts = Array.from({ length: 20 }, (_, i) =>
			cfgText({ a, [`x${i}`]: demo(['--name', `x${i}`]) }),
		);
		for (const text of texts)
			fs.writeFileSync(rt.configPath, text);
		await toolsSoon(c, (n) => n.includes('x19__echo') && !n.some((x) => /^x\d+__/.test(x) && !x.startsWith('x19__')),
			'the last config of the burst');
		// The same bytes written again: seen, and nothing to do. It comes
		// after the burst's events, so a late second reload would be
		// logged before it.
		const before = rt.stderr().length;
		await fsp.writeFile(rt.configPath, cfgText({ a, x19: demo(['--name', 'x19']) }));
		await waitFor(() => /written, content unchanged: nothing to do/.test(rt.stderr().slice(before)),
			APPLY_MS, 'the unchanged write in the log');
		const log = rt.stderr();
		assert.equal(count(log, /config reloaded from /g), 1, log);
		const m = log.match(/mcp\.json: (\d+) change event\(s\) in \d+ ms: loading it/);
		assert.ok(m, log);
		assert.ok(Number(m[1]) >= 2, `the burst's events were counted: ${m[0]}`);
		assert.equal((await rt.demoPids(c, 'a__pid')).pid, a1.pid, 'a untouched');
		await rt.status();
		await c.close();
	});
});

test('autoreload: an invalid edit keeps the running servers and shows in status until fixed', {
	timeout: 60_000,
}, async (t) => {
	const a = demo(['--name', 'a']);
	await withRuntime(t, { a }, WATCH, async (rt) => {
		const c = await connect(rt);
		const a1 = await rt.demoPids(c, 'a__pid');

		await fsp.writeFile(rt.configPath, '{ "mcpServers": { "a": ');
		const st = await waitFor(async () => {
			const s = await rt.status();
			return s.reloadError ? s : null;
		}, APPLY_MS, 'reloadError in status');
		assert.match(st.reloadError.message, /not valid JSON/);
		assert.ok(st.reloadError.at > 0);
		const text = await rt.cli(['status']);
		assert.equal(text.code, 0, text.stderr);
		assert.match(text.stdout, /config not reloaded \(the previous config runs\): .*not valid JSON/, text.stdout);
		assert.match(rt.stderr(), /config not reloaded: .*not valid JSON.*the previous config keeps running/);
		// The old config serves on, with the same process.
		assert.equal((await rt.demoPids(c, 'a__pid')).pid, a1.pid, 'a still serving');
		assert.ok((await toolNames(c)).includes('a__echo'));

		// A manual reload of the broken file says so too, and changes
		// nothing.
		const r = await rt.cli(['reload']);
		assert.notEqual(r.code, 0);
		assert.match(r.stdout + r.stderr, /not valid JSON/);

		// Fixed: applied, and the error is gone.
		await fsp.writeFile(rt.configPath, cfgText({ a, b: demo(['--name', 'b']) }));
		await toolsSoon(c, (n) => n.includes('b__echo'), 'b after the fix');
		const fixed = await rt.status();
		assert.equal(fixed.reloadError, undefined, JSON.stringify(fixed.reloadError));
		const text2 = await rt.cli(['status']);
		assert.doesNotMatch(text2.stdout, /config not reloaded/);
		assert.equal((await rt.demoPids(c, 'a__pid')).pid, a1.pid, 'a untouched by the fix');

		// Removed, then put back as it was: the error comes and goes.
		const good = await fsp.readFile(rt.configPath);
		await fsp.rm(rt.configPath);
		await waitFor(async () => /cannot read/.test((await rt.status()).reloadError?.message ?? ''),
			APPLY_MS, 'a removed config in status');
		await fsp.writeFile(rt.configPath, good);
		await waitFor(async () => (await rt.status()).reloadError === undefined,
			APPLY_MS, 'the error cleared by the same file back');
		assert.equal((await rt.demoPids(c, 'a__pid')).pid, a1.pid, 'a untouched throughout');
		await c.close();
	});
});

test('autoreload: a space\'s .mcp.json is watched; an edit needs allowing again, and `allow` applies at once', {
	timeout: 60_000,
}, async (t) => {
	const space = await makeHome('mcpvisor-space-watch-');
	t.after(() => fsp.rm(space, { recursive: true, force: true }));
	const file = path.join(space, '.mcp.json');
	const spc = { command: DEMO, args: ['--name', 'spc'] };
	await fsp.writeFile(file, cfgText({ spc }));
	await withRuntime(t, { a: demo(['--name', 'a']) }, WATCH, async (rt) => {
		assert.equal((await rt.cli(['allow', space])).code, 0);
		const c = new RawClient(`${rt.url}?space=${space}`);
		await c.initialize();
		assert.ok((await toolNames(c)).includes('spc__echo'), 'the allowed space serves');

		// An edit: the file is no longer the one allowed, so its servers
		// stop being offered (the trust rule), without any reload.
		await fsp.writeFile(file, cfgText({ spc, spc2: { command: DEMO, args: ['--name', 'spc2'] } }));
		await toolsSoon(c, (n) => !n.includes('spc__echo') && n.includes('a__echo'), 'the edited space untrusted');
		const st = await rt.cli(['status']);
		assert.match(st.stdout, /spc2?\s+untrusted/, st.stdout);
		assert.match(rt.stderr(), /changed since it was allowed/);

		// `mcpvisor allow` writes the trust store, which is watched too.
		assert.equal((await rt.cli(['allow', space])).code, 0);
		await toolsSoon(c, (n) => n.includes('spc__echo') && n.includes('spc2__echo'), 'the space allowed again');
		assert.equal(count(rt.stderr(), /config reloaded from /g), 0, 'no reload of the global config');
		await rt.status();
		await c.close();
	});
});

test('autoreload: a config that is a symlink is seen when its target is edited', {
	timeout: 60_000,
}, async (t) => {
	const home = await makeHome('mcpvisor-autoreload-');
	t.after(() => fsp.rm(home, { recursive: true, force: true }));
	const dotfiles = path.join(home, 'dotfiles');
	await fsp.mkdir(dotfiles);
	const target = path.join(dotfiles, 'mcp.json');
	const a = demo(['--name', 'a']);
	await fsp.writeFile(target, cfgText({ a }));
	const link = path.join(home, 'mcp.json');
	await fsp.symlink(target, link);
	await runInHome(t, home, link, WATCH, async (rt) => {
		const c = await connect(rt);
		await fsp.writeFile(target, cfgText({ a, b: demo(['--name', 'b']) }));
		await toolsSoon(c, (n) => n.includes('b__echo'), 'b after an edit of the link\'s target');
		await rt.status();
		await c.close();
	});
});
