// `mcpvisor top` on a real terminal: tmux runs it in a 160x40 pane; the
// pane shows the servers and their figures, a call shows in the next
// refresh, a runtime that stops is said to be gone, `q` gives the shell
// back (main screen, echo on), and so do SIGTERM, ^\ and ^Z (until `fg`).
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';

import { MCPVISOR, connect, demo, procStat, waitFor, withRuntime } from './lib.mjs';

const PROMPT = 'top-e2e$ ';

function tmux(sock, ...args) {
	return new Promise((resolve, reject) => {
		execFile('tmux', ['-L', sock, ...args], { env: { ...process.env, TERM: 'xterm-256color' } },
			(err, stdout, stderr) => (err ? reject(new Error(`tmux ${args[0]}: ${stderr || err.message}`)) : resolve(stdout)));
	});
}

// A private tmux server with one 160x40 pane running sh; removed when t
// ends.
async function pane(t) {
	try {
		execFileSync('tmux', ['-V']);
	} catch {
		assert.fail('tmux is needed for this test (scripts/deps.sh installs it)');
	}
	const sock = `mcpvisor-top-${process.pid}-${Date.now()}`;
	await tmux(sock, 'new-session', '-d', '-x', '160', '-y', '40',
		'env', `PS1=${PROMPT}`, 'ASAN_OPTIONS=detect_leaks=1:exitcode=23', 'sh');
	t.after(() => tmux(sock, 'kill-server').catch(() => {}));
	const p = {
		sock,
		keys: (...k) => tmux(sock, 'send-keys', ...k),
		capture: () => tmux(sock, 'capture-pane', '-p'),
		show: (fmt) => tmux(sock, 'display-message', '-p', fmt).then((s) => s.trim()),
		// Polls the pane until re matches; returns the screen.
		until: async (re, what, ms = 8000) => {
			let last = '';
			try {
				return await waitFor(async () => {
					last = await p.capture();
					return re.test(last) ? last : null;
				}, ms, what);
			} catch (e) {
				throw new Error(`${e.message}; the pane:\n${last}`);
			}
		},
	};
	// (capture-pane drops trailing blanks: the prompt shows as top-e2e$)
	await p.until(/^top-e2e\$/m, 'the shell prompt');
	return p;
}

// The top process: the pane's shell's child.
function topPid(shellPid) {
	const kids = fs.readFileSync(`/proc/${shellPid}/task/${shellPid}/children`, 'utf8').trim();
	return kids ? Number(kids.split(/\s+/)[0]) : null;
}

test('top in tmux: servers and figures, a call on the next refresh, a runtime that stops, q restores the shell', {
	timeout: 60_000,
}, async (t) => {
	const p = await pane(t);
	await withRuntime(t, { demo: demo(), notes: demo([], { scope: 'session' }) }, async (rt) => {
		await p.keys(`${MCPVISOR} top --home ${rt.home}`, 'Enter');
		let screen = await p.until(/^demo\s+not running\s+app\s+0\s+0\s+0\s+0\s/m, 'the demo row');
		assert.match(screen, /^mcpvisor top  \d\d:\d\d:\d\d /m);
		assert.match(screen, new RegExp(`^runtime pid ${rt.info.pid}  rss \\d+\\.\\dM  connections \\d+  sessions 0  servers 2`, 'm'));
		assert.match(screen, /^SERVER\s+STATE\s+SCOPE\s+INST\s+SESS\s+INFL\s+CALLS\s+CALLS\/S\s+P50 ms\s+P99 ms\s+ERRORS\s+RESTARTS\s+MEM\s*$/m);
		assert.match(screen, /^notes\s+not running\s+session\s/m);
		assert.equal(await p.show('#{alternate_on}'), '1', 'on the alternate screen');
		const shell = Number(await p.show('#{pane_pid}'));
		const top = topPid(shell);
		assert.ok(top, 'top runs in the pane');
		rt.track(top);

		const c = await connect(rt);
		await c.call('demo__echo', { text: 'hi' });
		// The next refresh shows the call: one call, its latency, the
		// server running with its memory.
		screen = await p.until(/^demo\s+idle\s+app\s+1\s+1\s+0\s+1\s+\d+\.\d\s+\d+\.\d+\s+\d+\.\d+\s+0\s+0\s+\d+\.\dM\s*$/m, 'one call on demo');
		assert.match(screen, /sessions 1 /);
		if (process.env.TOP_SCREEN_FILE)
			fs.writeFileSync(process.env.TOP_SCREEN_FILE, screen);
		t.diagnostic(`top screen:\n${screen}`);
		await c.close();

		// The runtime stops under it: top says so and keeps looking.
		const stop = await rt.cli(['stop']);
		assert.equal(stop.code, 0, stop.stderr);
		await rt.waitExit();
		screen = await p.until(/^runtime not reachable: no runtime is running/m, 'the runtime is gone');
		assert.match(screen, /looking for it again every second \(q quits\)/);
		assert.doesNotMatch(screen, /^demo /m, 'no stale figures');

		await p.keys('q');
		await waitFor(async () => (await p.show('#{alternate_on}')) === '0', 5000, 'the main screen back');
		await waitFor(() => topPid(shell) === null, 5000, 'top exited');
		// Echo is back on: the typed command shows, and so does its output.
		await p.keys('echo "top-exit:$?" restored-$((40+2))', 'Enter');
		screen = await p.until(/^top-exit:0 restored-42$/m, 'the shell answers');
		assert.ok(screen.includes(`${PROMPT}echo "top-exit:$?" restored-$((40+2))`), screen);
	});
});

test('top in tmux: SIGTERM restores the terminal', { timeout: 20_000 }, async (t) => {
	const p = await pane(t);
	await withRuntime(t, { demo: demo() }, async (rt) => {
		await p.keys(`${MCPVISOR} top --home ${rt.home}`, 'Enter');
		await p.until(/^demo\s+not running\s+app\s/m, 'the demo row');
		const shell = Number(await p.show('#{pane_pid}'));
		const top = topPid(shell);
		assert.ok(top);
		process.kill(top, 'SIGTERM');
		await waitFor(async () => (await p.show('#{alternate_on}')) === '0', 5000, 'the main screen back');
		await waitFor(() => topPid(shell) === null, 5000, 'top exited');
		await p.keys('echo "top-exit:$?" back', 'Enter');
		const screen = await p.until(/^top-exit:0 back$/m, 'the shell answers');
		assert.ok(screen.includes(`${PROMPT}echo "top-exit:$?" back`), 'echo is on');
	});
});

// ^Z stops top with the terminal given back (main screen, echo on); `fg`
// takes it again (the view, keys unechoed); ^\ quits and gives it back.
test('top in tmux: ^Z gives the terminal back until fg; ^\\ quits restoring it', { timeout: 30_000 }, async (t) => {
	const p = await pane(t);
	await withRuntime(t, { demo: demo() }, async (rt) => {
		await p.keys(`${MCPVISOR} top --home ${rt.home}`, 'Enter');
		await p.until(/^demo\s+not running\s+app\s/m, 'the demo row');
		const shell = Number(await p.show('#{pane_pid}'));
		const top = topPid(shell);
		assert.ok(top);
		rt.track(top);

		await p.keys('C-z');
		await waitFor(() => procStat(top)?.state === 'T', 5000, 'top stopped');
		await waitFor(async () => (await p.show('#{alternate_on}')) === '0', 5000, 'the main screen back on ^Z');
		await p.keys('echo "while-stopped" $((40+2))', 'Enter');
		let screen = await p.until(/^while-stopped 42$/m, 'the shell answers while top is stopped');
		assert.ok(screen.includes(`${PROMPT}echo "while-stopped" $((40+2))`), `echo is on:\n${screen}`);

		await p.keys('fg', 'Enter');
		await waitFor(async () => (await p.show('#{alternate_on}')) === '1', 5000, 'the view again after fg');
		screen = await p.until(/^demo\s+not running\s+app\s/m, 'the demo row after fg');
		assert.notEqual(procStat(top)?.state, 'T');
		// Raw again: a typed key is not echoed onto the view.
		await p.keys('x');
		await p.until(/^demo\s+not running\s+app\s/m, 'the view after a key');
		assert.doesNotMatch(await p.capture(), /^x/m, 'no echo while top runs');

		await p.keys('C-\\');
		await waitFor(async () => (await p.show('#{alternate_on}')) === '0', 5000, 'the main screen back on ^\\');
		await waitFor(() => topPid(shell) === null, 5000, 'top exited');
		await p.keys('echo "top-exit:$?" quit', 'Enter');
		screen = await p.until(/^top-exit:0 quit$/m, 'the shell answers');
		assert.ok(screen.includes(`${PROMPT}echo "top-exit:$?" quit`), 'echo is on');
	});
});
