// One runtime per home, a home no one else controls, and what the terminal
// commands say when the runtime is busy, frozen, dead or its servers fail
// (review 2026-12-01: R6/11, 3, 12, R9, x5, P1 and the CLI warts).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';

import {
	DEMO,
	DEMO_TOOLS,
	MCPVISOR,
	RawClient,
	demo,
	makeHome,
	procStat,
	runCli,
	waitFor,
	withRuntime,
	writeConfig,
} from './lib.mjs';

const SAN_ENV = {
	ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=0:exitcode=23',
	UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1',
};

// A `serve` we start by hand (no --port 0 when port is null): its exit,
// its output, and the endpoint line when it prints one.
function startServe(home, config, { port = 0, env = {}, cwd } = {}) {
	const args = ['serve', '--config', config];
	if (home !== null)
		args.push('--home', home);
	if (port !== null)
		args.push('--port', String(port));
	const child = spawn(MCPVISOR, args, {
		env: { ...process.env, ...SAN_ENV, ...env },
		stdio: ['ignore', 'pipe', 'pipe'],
		cwd,
	});
	const s = { child, pid: child.pid, out: '', err: '', exited: null };
	child.stdout.setEncoding('utf8');
	child.stderr.setEncoding('utf8');
	child.stdout.on('data', (d) => (s.out += d));
	child.stderr.on('data', (d) => (s.err += d));
	s.exit = new Promise((resolve) =>
		child.on('exit', (code, signal) => {
			s.exited = { code, signal };
			resolve(s.exited);
		}),
	);
	s.url = () => s.out.match(/endpoint (http:\/\/127\.0\.0\.1:\d+\/mcp)/)?.[1];
	return s;
}

// Stops a hand-started serve by its pid and returns its exit.
async function stopServe(s) {
	if (!s.exited)
		s.child.kill('SIGTERM');
	const timer = setTimeout(() => s.child.kill('SIGKILL'), 15_000);
	const ex = await s.exit;
	clearTimeout(timer);
	return ex;
}

async function withHome(fn) {
	const home = await makeHome();
	try {
		return await fn(home);
	} finally {
		await fsp.rm(home, { recursive: true, force: true });
	}
}

test('home: two serve started at once, 10 times: exactly one runs', {
	timeout: 240_000,
}, async () => {
	await withHome(async (home) => {
		const config = await writeConfig(home, { demo: demo() });
		for (let round = 0; round < 10; round++) {
			const pair = [startServe(home, config), startServe(home, config)];
			let winner, loser;
			try {
				// One exits (2), the other serves.
				const first = await Promise.race(
					pair.map((s) => s.exit.then(() => s)),
				);
				loser = first;
				winner = pair.find((s) => s !== loser);
				assert.equal(loser.exited.code, 2, `round ${round}: ${loser.err}`);
				await waitFor(() => winner.url(), 10_000, 'the winner endpoint');
				assert.equal(winner.exited, null, `round ${round}: winner runs`);
				const m = loser.err.match(
					/a runtime already runs on this home \(pid (\d+), (\S+)\)/,
				);
				assert.ok(m, `round ${round}: ${loser.err}`);
				assert.equal(Number(m[1]), winner.pid, 'names the running pid');
				assert.equal(m[2], winner.url(), 'names its endpoint');
				const info = JSON.parse(
					await fsp.readFile(path.join(home, 'run/runtime.json'), 'utf8'),
				);
				assert.equal(info.pid, winner.pid, 'runtime.json names the winner');
				const st = await runCli(['status', '--json'], { home });
				assert.equal(st.code, 0, st.stderr);
				assert.equal(JSON.parse(st.stdout).pid, winner.pid, 'the socket is the winner\'s');
			} finally {
				for (const s of pair) {
					const ex = await stopServe(s);
					if (s === winner)
						assert.equal(ex.code, 0, `winner exit: ${s.err}`);
				}
			}
		}
	});
});

// A runtime killed with SIGKILL leaves its runtime file; its pid may be
// unreaped (a zombie) or belong to another program by now. Neither may
// look like a running runtime, and `stop` clears what it left.
test('home: a stale runtime file (dead, zombie or reused pid) is no runtime', {
	timeout: 60_000,
}, async () => {
	await withHome(async (home) => {
		const config = await writeConfig(home, { demo: demo() });
		// A parent that does not reap: node blocked in Atomics.wait.
		const holder = spawn(
			process.execPath,
			[
				'-e',
				`const {spawn} = require('child_process');
				 const c = spawn(process.argv[1], ['serve', '--config', process.argv[2],
					'--home', process.argv[3], '--port', '0'], {stdio: ['ignore', 'pipe', 'inherit']});
				 c.stdout.on('data', (d) => { if (/endpoint/.test(d)) {
					process.stdout.write(c.pid + '\\n');
					Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20000); } });`,
				MCPVISOR,
				config,
				home,
			],
			{ env: { ...process.env, ...SAN_ENV }, stdio: ['ignore', 'pipe', 'inherit'] },
		);
		let out = '';
		holder.stdout.on('data', (d) => (out += d));
		const holderExit = new Promise((r) => holder.on('exit', r));
		try {
			const pid = Number(await waitFor(() => out.match(/^(\d+)\n/)?.[1], 10_000, 'serve pid'));
			process.kill(pid, 'SIGKILL');
			await waitFor(() => fs.readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z '),
				5000, 'the killed runtime a zombie');
			// Its main thread is a zombie before its last thread has
			// closed its files (the lock among them; an inotify watch
			// makes that close take a few ms): wait for the kernel to
			// drop the lock, as it does for every dead runtime.
			const ino = fs.statSync(path.join(home, 'state', 'runtime.lock')).ino;
			await waitFor(() => !fs.readFileSync('/proc/locks', 'utf8').split('\n')
				.some((l) => l.split(/\s+/)[5]?.endsWith(`:${ino}`)), 5000, 'the dead runtime\'s lock dropped');
			let r = await runCli(['status'], { home });
			assert.equal(r.code, 3, `unreaped: ${r.stderr}`);
			assert.match(r.stderr, /no runtime is running/);
			holder.kill('SIGKILL');
			await holderExit;
			await waitFor(() => procStat(pid) === null, 5000, 'the zombie reaped');
			r = await runCli(['status'], { home });
			assert.equal(r.code, 3, `reaped: ${r.stderr}`);
			assert.match(r.stderr, /no runtime is running/);
		} finally {
			holder.kill('SIGKILL');
		}

		// The file now names a live process that is not a runtime.
		const other = spawn('sleep', ['30'], { stdio: 'ignore' });
		try {
			const file = path.join(home, 'run/runtime.json');
			const info = JSON.parse(await fsp.readFile(file, 'utf8'));
			await fsp.writeFile(file, JSON.stringify({ ...info, pid: other.pid }));
			let r = await runCli(['status'], { home });
			assert.equal(r.code, 3, r.stderr);
			r = await runCli(['stop'], { home });
			assert.equal(r.code, 3, r.stderr);
			assert.match(r.stderr, /removed the runtime file/);
			await assert.rejects(fsp.access(file), 'stop removed the stale file');
			// serve is not blocked by a stale file either.
			await fsp.writeFile(file, JSON.stringify({ ...info, pid: other.pid }));
			const s = startServe(home, config);
			await waitFor(() => s.url() || s.exited, 10_000, 'serve despite a stale file');
			assert.ok(s.url(), s.err);
			r = await runCli(['stop'], { home });
			assert.equal(r.code, 0, r.stderr);
			assert.equal((await s.exit).code, 0, s.err);
			assert.equal(procStat(other.pid)?.state !== undefined, true, 'the other program untouched');
		} finally {
			other.kill('SIGKILL');
		}
	});
});

test('home: a runtime folder of another user is refused, naming owner and mode', {
	timeout: 60_000,
	skip: process.getuid() !== 0 && 'needs root to chown to nobody',
}, async () => {
	await withHome(async (home) => {
		const config = await writeConfig(home, { demo: demo() });
		const run = path.join(home, 'run');
		await fsp.mkdir(run, { mode: 0o777 });
		await fsp.chmod(run, 0o777);
		await fsp.chown(run, 65534, 65534);
		const s = startServe(home, config);
		const ex = await s.exit;
		assert.equal(ex.code, 1, s.err);
		assert.ok(s.err.includes(run), s.err);
		assert.match(s.err, /owner uid 65534.*mode 0777/);
		const r = await runCli(['status'], { home });
		assert.equal(r.code, 1, r.stderr);
		assert.match(r.stderr, /owner uid 65534/);
		assert.deepEqual(await fsp.readdir(run), [], 'nothing written there');
	});
});

test('home: the CLI gives up on a frozen runtime, and the runtime lives on', {
	timeout: 60_000,
}, async (t) => {
	// Stopped below: in a process group of its own (Runtime.start).
	await withRuntime(t, { demo: demo() }, { ownGroup: true }, async (rt) => {
		const env = { MCPVISOR_TIMEOUT: '1s' };
		// A call longer than the timeout still works: the runtime answers.
		const slow = await rt.cli(['call', 'demo__sleep', '{"ms":2500}'], { env });
		assert.equal(slow.code, 0, slow.stderr);

		const pid = rt.info.pid;
		process.kill(pid, 'SIGSTOP');
		let r;
		try {
			const t0 = Date.now();
			r = await rt.cli(['status'], { env, timeout: 8000 });
			assert.ok(Date.now() - t0 < 6000, 'gave up in time');
		} finally {
			process.kill(pid, 'SIGCONT');
		}
		assert.equal(r.signal, null, 'the CLI was not killed by the test');
		assert.equal(r.code, 1, r.stderr);
		assert.match(r.stderr, new RegExp(`runtime at pid ${pid} did not answer within 1 s; it may be frozen`));
		// Alive and answering after the CLI gave up.
		const st = await rt.status();
		assert.equal(st.pid, pid);
		assert.equal(rt.exited, null, 'the runtime is alive');
	});
});

test('home: tools reports failed servers; tools NOSUCH, check, status, help', {
	timeout: 120_000,
}, async (t) => {
	const crashy = {
		command: 'sh',
		args: ['-c', "echo 'boom: missing API_KEY' >&2; exit 7"],
		scope: 'app',
	};
	const broken = { command: 42, scope: 'app' };
	await withRuntime(t, { demo: demo(), crashy, broken }, async (rt) => {
		assert.match(rt.stdoutText, /serving 2 of 3 servers .*\(1 with config errors/);
		let r = await rt.cli(['status']);
		assert.equal(r.code, 0, r.stderr);
		assert.ok(r.stdout.includes(`endpoint ${rt.url}`), r.stdout);
		assert.doesNotMatch(r.stdout, /stopped|\(not started\)/);
		assert.match(r.stdout, /^demo\s+not running\s+scope app$/m);

		r = await rt.cli(['tools']);
		assert.equal(r.code, 1, `a failed server exits 1: ${r.stderr}`);
		assert.deepEqual(
			r.stdout.trim().split('\n').map((l) => l.split(/\s+/)[0]),
			DEMO_TOOLS.map((n) => `demo__${n}`),
		);
		assert.match(r.stderr, /server "crashy" failed: .*exited with code 7/);
		assert.match(r.stderr, /boom: missing API_KEY/);
		assert.match(r.stderr, /server "broken" has a config error/);

		r = await rt.cli(['call', 'crashy__any', '{}']);
		assert.equal(r.code, 1, r.stderr);
		assert.match(r.stderr, /crashy.*exited with code 7[^]*stderr: boom: missing API_KEY/);

		r = await rt.cli(['tools', 'demo']);
		assert.equal(r.code, 0, r.stderr);
		r = await rt.cli(['tools', 'nosuch']);
		assert.equal(r.code, 2, r.stderr);
		assert.match(r.stderr, /no server named "nosuch" \(servers: demo, crashy, broken\)/);
		assert.equal(r.stdout, '');
		r = await rt.cli(['tools', 'demo', 'extra']);
		assert.equal(r.code, 2, r.stderr);
		assert.match(r.stderr, /unexpected argument "extra"/);

		r = await runCli(['check', rt.configPath]);
		assert.equal(r.code, 2, r.stderr);
		assert.doesNotMatch(r.stdout, /^\s*[[{]/, 'text, not JSON');
		assert.match(r.stdout, /^crashy\s+stdio\s+scope app\s+transport stdio\s+sh -c 'echo/m);
		assert.match(r.stdout, /^broken\s+invalid/m);
		assert.match(r.stderr, /server "broken": field "command"/);
		r = await runCli(['check', rt.configPath, '--json']);
		assert.equal(r.code, 2, r.stderr);
		assert.equal(JSON.parse(r.stdout).servers.length, 3);
		// A command that is not there is named before anything starts.
		const missing = path.join(rt.home, 'missing.json');
		await fsp.writeFile(missing, JSON.stringify({ mcpServers: {
			a: { command: 'mcpv-no-such-command' },
			b: { command: '/nonexistent/bin/x' },
		} }));
		r = await runCli(['check', missing]);
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stderr, /"a": command "mcpv-no-such-command" is not in PATH/);
		assert.match(r.stderr, /"b": command "\/nonexistent\/bin\/x" is not an executable file/);
		assert.equal((await runCli(['version'])).stdout, 'mcpvisor 0.1.0\n');

		r = await runCli(['serve', '--help']);
		assert.equal(r.code, 0);
		for (const opt of ['--grace', '--session-timeout', '--sse-close-after', '--log-level'])
			assert.ok(r.stdout.split('\n\n')[0].includes(opt), `synopsis has ${opt}`);
	});
});

test('home: status says when port 7345 was taken', { timeout: 20_000 }, async () => {
	// Hold 7345 (when something else holds it already, it is taken too).
	const squat = net.createServer();
	await new Promise((resolve) => {
		squat.once('error', resolve);
		squat.listen(7345, '127.0.0.1', resolve);
	});
	try {
		await withHome(async (home) => {
			const config = await writeConfig(home, { demo: demo() });
			const s = startServe(home, config, { port: null });
			try {
				await waitFor(() => s.url() || s.exited, 10_000, 'endpoint');
				assert.ok(s.url(), s.err);
				assert.notEqual(s.url(), 'http://127.0.0.1:7345/mcp');
				assert.match(s.out, /port 7345 was taken/);
				const r = await runCli(['status'], { home });
				assert.equal(r.code, 0, r.stderr);
				assert.ok(r.stdout.includes(`endpoint ${s.url()}`), r.stdout);
				assert.match(r.stdout, /port 7345 was taken/);
			} finally {
				assert.equal((await stopServe(s)).code, 0, s.err);
			}
		});
	} finally {
		squat.close();
	}
});

// Own files are read without following symlinks, but a space's .mcp.json
// may be a link (dotfiles): it is read through it and still needs allowing.
test('home: a symlinked .mcp.json in a space is untrusted until allowed', {
	timeout: 60_000,
}, async (t) => {
	const space = await makeHome('mcpvisor-space-link-');
	const ran = path.join(space, 'ran.txt');
	await fsp.writeFile(path.join(space, 'real.json'), JSON.stringify({
		mcpServers: {
			lnk: { command: '/bin/sh', args: ['-c', `echo x > ${ran}; exec ${DEMO} --name lnk`] },
		},
	}));
	await fsp.symlink(path.join(space, 'real.json'), path.join(space, '.mcp.json'));
	try {
		await withRuntime(t, { demo: demo() }, async (rt) => {
			const c = new RawClient(`${rt.url}?space=${space}`);
			await c.initialize();
			const tools = (await c.listAll()).map((x) => x.name);
			assert.ok(!tools.some((n) => n.startsWith('lnk__')), tools.join(' '));
			assert.ok(!fs.existsSync(ran), 'the linked space command never ran');
			const st = await rt.cli(['status']);
			assert.match(st.stdout, /lnk\s+untrusted/, st.stdout);
			assert.equal((await rt.cli(['allow', space])).code, 0);
			await c.close();
			const c2 = new RawClient(`${rt.url}?space=${space}`);
			await c2.initialize();
			assert.ok((await c2.listAll()).some((x) => x.name === 'lnk__echo'), 'allowed');
			await c2.close();
		});
	} finally {
		await fsp.rm(space, { recursive: true, force: true });
	}
});

// A home named relative to the folder serve started in is that folder's:
// the runtime file holds absolute paths, so the CLI reaches the runtime
// by the home's absolute path from any other folder (issue 17: "cannot
// reach the runtime ... at h/run/mcpvisor.sock"). MCPVISOR_HOME too.
for (const how of ['--home', 'MCPVISOR_HOME']) {
	test(`home: a relative ${how} is made absolute; stop reaches it from another folder`, {
		timeout: 30_000,
	}, async () => {
		await withHome(async (parent) => {
			const home = path.join(parent, 'h');
			await fsp.mkdir(home, { mode: 0o700 });
			const config = await writeConfig(home, { demo: demo() });
			const s = how === '--home'
				? startServe('h', config, { cwd: parent })
				: startServe(null, config, { cwd: parent, env: { MCPVISOR_HOME: './h' } });
			try {
				await waitFor(() => s.url() || s.exited, 10_000, 'serve on a relative home');
				assert.ok(s.url(), s.err);
				const info = JSON.parse(
					await fsp.readFile(path.join(home, 'run/runtime.json'), 'utf8'),
				);
				assert.equal(info.socket, path.join(home, 'run/mcpvisor.sock'));
				// The CLI runs in the repository's folder, not parent.
				const st = await runCli(['status', '--json'], { home });
				assert.equal(st.code, 0, st.stderr);
				assert.equal(JSON.parse(st.stdout).pid, s.pid);
				const r = await runCli(['stop'], { home });
				assert.equal(r.code, 0, r.stderr);
				assert.equal((await s.exit).code, 0, s.err);
			} finally {
				await stopServe(s);
			}
		});
	});
}
