// The runtime's log file and `mcpvisor logs`: a runtime in the background
// (its output is STATE/runtime.log, as the launcher of `restart` and of
// relays makes it) writes its lines and every server's stderr line under
// the server's name, secrets masked, and rotates the file itself at a
// bounded size; `logs` reads the files (no runtime needed), keeps one
// server's lines, refuses an unknown name, and -f follows across rotation.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import {
	DEMO,
	MCPVISOR,
	Runtime,
	SAN_ENV,
	START_MS,
	STOP_MS,
	demo,
	makeHome,
	procStat,
	runCli,
	waitFor,
	withRuntime,
	writeConfig,
} from './lib.mjs';
import { runtimeFile, stopRuntimes } from './relay-lib.mjs';

const SECRET = 'tok-5f3a9c1e77d2b8a4';

const logPath = (home) => path.join(home, 'state', 'runtime.log');

// `mcpvisor serve` with its output appended to the home's log file, as a
// background runtime has it. stop() sends SIGTERM and expects exit 0.
class BgRuntime {
	constructor(home, configPath) {
		this.home = home;
		this.configPath = configPath;
		this.pids = [];
	}

	async start(args = []) {
		await fsp.mkdir(path.join(this.home, 'state'), { recursive: true, mode: 0o700 });
		const fh = await fsp.open(logPath(this.home), 'a', 0o600);
		this.child = spawn(
			MCPVISOR,
			['serve', '--config', this.configPath, '--port', '0', '--home', this.home, ...args],
			{ env: { ...process.env, ...SAN_ENV }, stdio: ['ignore', fh.fd, fh.fd] },
		);
		await fh.close();
		this.exited = new Promise((resolve) =>
			this.child.on('exit', (code, signal) => resolve({ code, signal })));
		this.info = await waitFor(() => {
			const info = runtimeFile(this.home);
			return info?.pid === this.child.pid ? info : null;
		}, START_MS, 'runtime.json of the background runtime');
		return this;
	}

	cli(args) {
		return runCli(args, { home: this.home });
	}

	// Every server pid, to prove them gone after the stop.
	async track() {
		const r = await this.cli(['status', '--json', '-v']);
		for (const s of JSON.parse(r.stdout).servers ?? [])
			for (const i of s.instances ?? [])
				if (i.pid)
					this.pids.push(i.pid);
	}

	async stop() {
		if (!this.child)
			return;
		this.child.kill('SIGTERM');
		let timer;
		const ex = await Promise.race([
			this.exited,
			new Promise((r) => { timer = setTimeout(() => r(null), STOP_MS); }),
		]);
		clearTimeout(timer);
		if (!ex) {
			this.child.kill('SIGKILL');
			assert.fail('the background runtime did not stop');
		}
		assert.equal(ex.code, 0, `exit ${ex.code ?? ex.signal}`);
		await waitFor(() => this.pids.every((p) => !procStat(p)), 3000, 'server pids gone');
	}
}

// A home with a config, a background runtime on it, and cleanup whatever
// happens.
async function withBackground(t, servers, args, body) {
	const home = await makeHome('mcpvisor-logs-');
	const bg = new BgRuntime(home, await writeConfig(home, servers));
	try {
		await bg.start(args);
		await body(bg);
		await bg.stop();
	} catch (e) {
		const log = fs.existsSync(logPath(home)) ? fs.readFileSync(logPath(home), 'utf8') : '';
		throw new Error(`${e.message}\n--- runtime.log (tail) ---\n${log.slice(-3000)}`, { cause: e });
	} finally {
		if (bg.child && bg.child.exitCode === null && bg.child.signalCode === null)
			bg.child.kill('SIGKILL');
		await fsp.rm(home, { recursive: true, force: true });
	}
}

// `mcpvisor logs -f ARGS` running; out() is what it printed so far.
function follow(t, home, args) {
	const child = spawn(MCPVISOR, ['logs', '-f', ...args, '--home', home], {
		env: { ...process.env, ...SAN_ENV },
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	let out = '', err = '';
	child.stdout.setEncoding('utf8').on('data', (d) => { out += d; });
	child.stderr.setEncoding('utf8').on('data', (d) => { err += d; });
	const exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })));
	const stop = async () => {
		if (child.exitCode === null && child.signalCode === null)
			child.kill('SIGINT');
		return exited;
	};
	t.after(stop);
	return { out: () => out, err: () => err, stop, pid: child.pid };
}

test('logs: servers\' stderr under their names, secrets masked; SERVER keeps one server; an unknown name is refused', {
	timeout: 60_000,
}, async (t) => {
	const servers = {
		tok: {
			command: 'sh',
			args: ['-c', `echo "token is $TOKEN" >&2; exec '${DEMO}' --name tok --stderr-lines 3`],
			env: { TOKEN: SECRET },
			scope: 'app',
		},
		plain: demo(['--name', 'plain', '--stderr-lines', '2']),
	};
	await withBackground(t, servers, [], async (bg) => {
		assert.equal(bg.info.log, logPath(bg.home), 'runtime.json names the log it writes');
		for (const tool of ['tok__echo', 'plain__echo']) {
			const r = await bg.cli(['call', tool, '{"text":"x"}']);
			assert.equal(r.code, 0, r.stderr);
		}
		await bg.track();
		const all = await waitFor(async () => {
			const r = await bg.cli(['logs', '-n', '500']);
			return /server tok: token is \*\*\*/.test(r.stdout) &&
				/server plain: .*stderr line 2 of 2/.test(r.stdout) ? r.stdout : null;
		}, 5000, 'both servers\' stderr in `mcpvisor logs`');
		assert.match(all, /mcpvisor: serving 2 servers from/, 'the runtime\'s own lines too');

		const tok = await bg.cli(['logs', 'tok']);
		assert.equal(tok.code, 0, tok.stderr);
		const lines = tok.stdout.trim().split('\n');
		assert.ok(lines.length >= 5, tok.stdout);
		for (const l of lines)
			assert.match(l, / (server|instance) tok: /, `a line of another: ${l}`);
		assert.match(tok.stdout, /stderr line 3 of 3/);
		assert.match(tok.stdout, /instance tok: starting -> running/);

		const two = await bg.cli(['logs', '-n', '2', 'tok']);
		assert.equal(two.stdout.trim().split('\n').length, 2);
		assert.deepEqual(two.stdout.trim().split('\n'), lines.slice(-2));

		const bad = await bg.cli(['logs', 'nosuch']);
		assert.equal(bad.code, 2);
		assert.match(bad.stderr, /no server "nosuch".*known: .*plain/);
		assert.match(bad.stderr, /tok/);
	});
});

test('logs: the file stays readable with no runtime, and holds no secret', {
	timeout: 60_000,
}, async (t) => {
	const servers = {
		tok: {
			command: 'sh',
			args: ['-c', `echo "token is $TOKEN" >&2; exec '${DEMO}' --name tok`],
			env: { TOKEN: SECRET },
			scope: 'app',
		},
	};
	const home = await makeHome('mcpvisor-logs-');
	t.after(() => fsp.rm(home, { recursive: true, force: true }));
	const bg = new BgRuntime(home, await writeConfig(home, servers));
	try {
		await bg.start();
		assert.equal((await bg.cli(['call', 'tok__echo', '{"text":"x"}'])).code, 0);
		await bg.track();
		await waitFor(() => /server tok: token is \*\*\*/.test(fs.readFileSync(logPath(home), 'utf8')),
			5000, 'the masked line in the file');
	} finally {
		await bg.stop();
	}
	const raw = fs.readFileSync(logPath(home), 'utf8');
	assert.ok(!raw.includes(SECRET), 'the token is in the log file');
	assert.match(raw, /stopped/);
	// No runtime: still read.
	const r = await runCli(['logs', '-n', '3', 'tok'], { home });
	assert.equal(r.code, 0, r.stderr);
	assert.equal(r.stdout.trim().split('\n').length, 3, r.stdout);
	assert.ok(!r.stdout.includes(SECRET));
	const none = await runCli(['logs', 'ghost'], { home });
	assert.equal(none.code, 2);
	assert.match(none.stderr, /known: tok/);
});

test('logs -f: sees new lines, follows across the runtime\'s own rotation, and SERVER filters it', {
	timeout: 80_000,
}, async (t) => {
	const MAX = 4096;
	const servers = { a: demo(['--name', 'a']) };
	await withBackground(t, servers, ['--log-max', String(MAX)], async (bg) => {
		const f = follow(t, bg.home, ['-n', '0']);
		// A new line reaches the follower (reloads until one is seen:
		// one made before its watch began is not "new").
		await waitFor(async () => {
			if (/config reloaded from/.test(f.out()))
				return true;
			await bg.cli(['reload']);
			return false;
		}, 10_000, 'a reload line in `logs -f`');

		// Enough stderr for one rotation and not two: a server that
		// prints N lines (about 64 bytes each) when it starts.
		const size = fs.statSync(logPath(bg.home)).size;
		const n = Math.ceil((MAX - size + 1200) / 64);
		// This one from the start of the file: whatever it did not see
		// happen it reads first, then follows from exactly there.
		const big = follow(t, bg.home, ['-n', '1000', 'big']);
		await writeConfig(bg.home, { a: demo(['--name', 'a']), big: demo(['--name', 'big', '--stderr-lines', String(n)]) });
		assert.equal((await bg.cli(['reload'])).code, 0);
		const r = await bg.cli(['call', 'big__echo', '{"text":"x"}']);
		assert.equal(r.code, 0, r.stderr);
		await bg.track();
		await waitFor(() => f.out().includes(`stderr line ${n} of ${n}`), 10_000, 'the last stderr line in `logs -f`');
		assert.ok(fs.existsSync(`${logPath(bg.home)}.1`), 'the runtime rotated its log');
		assert.ok(fs.statSync(logPath(bg.home)).size < MAX, 'rotated once, the new file under the limit');
		// Every line once, in order, across the rotation.
		const seen = [...f.out().matchAll(/stderr line (\d+) of \d+/g)].map((m) => Number(m[1]));
		assert.deepEqual(seen, Array.from({ length: n }, (_, i) => i + 1));

		// After the rotation, a new line still reaches the follower.
		const before = f.out().length;
		assert.equal((await bg.cli(['reload'])).code, 0);
		await waitFor(() => /config reloaded from/.test(f.out().slice(before)), 5000,
			'a line after the rotation');

		// The filtered follower has big's lines and only those.
		await waitFor(() => big.out().includes(`stderr line ${n} of ${n}`), 5000, 'big\'s lines in `logs -f big`');
		for (const l of big.out().trim().split('\n'))
			assert.match(l, / (server|instance) big: /, `not big's: ${l}`);
		const bigSeen = [...big.out().matchAll(/stderr line (\d+) of \d+/g)].map((m) => Number(m[1]));
		assert.deepEqual(bigSeen, Array.from({ length: n }, (_, i) => i + 1));
		await f.stop();
		await big.stop();
	});
});

test('logs: a runtime started by `mcpvisor restart` runs in the background and writes the log', {
	timeout: 80_000,
}, async (t) => {
	const home = await makeHome('mcpvisor-logs-');
	const rt = new Runtime(home, await writeConfig(home, { a: demo(['--name', 'a', '--stderr-lines', '1']) }));
	const problems = [];
	try {
		await rt.start();
		const r = await rt.cli(['restart']);
		assert.equal(r.code, 0, r.stdout + r.stderr);
		assert.equal((await rt.waitExit()).code, 0, 'the first runtime drained');
		const info = runtimeFile(home);
		assert.notEqual(info.pid, rt.child.pid);
		assert.equal(info.log, logPath(home), 'the restarted runtime owns the log file');
		assert.equal((await runCli(['call', 'a__echo', '{"text":"x"}'], { home })).code, 0);
		const logs = await waitFor(async () => {
			const l = await runCli(['logs', '-n', '100'], { home });
			return /server a: .*stderr line 1 of 1/.test(l.stdout) ? l.stdout : null;
		}, 5000, 'the restarted runtime\'s server in the log');
		assert.match(logs, /mcpvisor: serving 1 server from/);
		assert.match(logs, /mcpvisor: endpoint http:\/\/127\.0\.0\.1:\d+\/mcp/);
		const st = await runCli(['stop'], { home });
		assert.equal(st.code, 0, st.stderr);
		await waitFor(() => !procStat(info.pid), STOP_MS, 'the restarted runtime gone');
		assert.match(fs.readFileSync(logPath(home), 'utf8'), /mcpvisor info: stopped/);
	} catch (e) {
		problems.push(e.stack);
	} finally {
		if (rt.child && !rt.exited)
			problems.push(...(await rt.stop()));
		problems.push(...(await stopRuntimes(home)));
		await fsp.rm(home, { recursive: true, force: true });
	}
	assert.deepEqual(problems, []);
});

test('logs: a runtime in the foreground logs to its terminal, and `logs` says so', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { a: demo(['--name', 'a']) }, async (rt) => {
		assert.equal(rt.info.log, undefined, 'runtime.json names no log file');
		const r = await rt.cli(['logs']);
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stderr, new RegExp(`running runtime \\(pid ${rt.info.pid}\\) was started in the foreground`));
		assert.ok(!fs.existsSync(logPath(rt.home)), 'nothing written to the log file');
	});
});
