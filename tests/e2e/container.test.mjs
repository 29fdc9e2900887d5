// Container servers on the real engine (rootful podman with runc, the test
// CONTAINERS_CONF), with real runtimes and the official SDK client: the
// `docker run -i --rm IMAGE` stdio form through podman and through a docker
// that is podman, an HTTP container on an owned loopback port (with a
// squatter on the port it used last time), an app container shared by two
// sessions, idle expiry, a call in flight kept from idle close, the tool
// cache starting nothing, and failures that show the engine's own line.
// Every container is checked with podman itself; every one this file's
// runtimes started is removed by id when its test ends.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { before, test } from 'node:test';

import { demo, procStat, waitFor } from './lib.mjs';
import { withConfig } from './lifetime-lib.mjs';
import {
	CENV,
	PODMAN,
	RUN,
	SKIP,
	TEST_LABEL,
	awaitNone,
	awaitRunning,
	dockerIsPodman,
	echo,
	httpContainer,
	inspect,
	listening,
	ofServer,
	podmanOk,
	removeOwn,
	sdkClose,
	sdkConnect,
	serverOf,
	sleep,
	srv,
	stateOf,
	stdioContainer,
	testImage,
} from './container-lib.mjs';

let IMAGE;
before(async () => {
	if (!SKIP)
		IMAGE = await testImage();
});

const RT = { env: CENV };

// The command line of a process ('' when gone).
function cmdline(pid) {
	try {
		return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
	} catch {
		return '';
	}
}

// pid and every live process below it.
function commandPids(root) {
	const kids = new Map();
	for (const d of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(d))
			continue;
		const st = procStat(Number(d));
		if (st)
			kids.set(st.ppid, [...(kids.get(st.ppid) ?? []), Number(d)]);
	}
	const out = [];
	const walk = (p) => {
		out.push(p);
		for (const k of kids.get(p) ?? [])
			walk(k);
	};
	walk(root);
	return out;
}

// The published ports of a container: [{host_ip, host_port, container_port}].
const published = (c) => c.ports ?? [];

test('podman run -i --rm: a stdio container server, owned (labels, a --name), its limits kept; stop removes it', {
	skip: SKIP,
	timeout: 120_000,
}, async (t) => {
	const name = srv('pod');
	await removeOwn(t, [name]);
	const config = {
		idleTimeout: '60s',
		mcpServers: {
			[name]: stdioContainer(PODMAN, IMAGE, {
				opts: ['--memory', '64m', '--cpus', '0.5', '--pids-limit', '64'],
				// The fixture's own --name, after the image: an
				// argument of the server, not the engine's --name.
				args: ['--name', 'inner'],
			}),
		},
	};
	await withConfig(t, config, RT, async (rt) => {
		const c = await sdkConnect(rt);
		const t0 = performance.now();
		await echo(c.client, `${name}__echo`, 'from a container');
		const startMs = Math.round(performance.now() - t0);
		const [box] = await awaitRunning(name);

		// What mcpvisor adds: its labels and a name of its own.
		assert.match(box.labels['mcpvisor.owner'] ?? '', /^\S{16,}$/, 'owner token label');
		assert.equal(box.labels['mcpvisor.server'], name);
		assert.ok(box.labels['mcpvisor.key'], `instance key label: ${JSON.stringify(box.labels)}`);
		assert.ok(box.name && box.name !== 'inner', `container name ${box.name}`);
		assert.notEqual(box.name, 'inner', 'the server argument after the image was taken as --name');
		// What the user wrote is kept: limits, --rm, the server's args.
		const ins = await inspect(box.id);
		assert.equal(ins.HostConfig.Memory, 64 * 1024 * 1024, '--memory kept');
		assert.equal(ins.HostConfig.PidsLimit, 64, '--pids-limit kept');
		assert.equal(ins.HostConfig.NanoCpus, 500_000_000, '--cpus kept');
		assert.equal(ins.HostConfig.AutoRemove, true, '--rm kept');
		const info = await c.client.callTool({ name: `${name}__pid`, arguments: {} });
		assert.equal(JSON.parse(info.content[0].text).name, 'inner', 'the server got its own --name');

		// Status shows the container (its id with -v) and the image.
		const st = await rt.status();
		const { inst } = serverOf(st, name);
		const shown = JSON.stringify(inst);
		assert.ok(shown.includes(box.id.slice(0, 12)), `container id in status -v: ${shown}`);
		assert.ok(shown.includes(box.name), `container name in status: ${shown}`);
		assert.ok(shown.includes(IMAGE), `image in status: ${shown}`);
		const text = await rt.cli(['status', '-v']);
		assert.equal(text.code, 0, text.stderr);
		assert.ok(text.stdout.includes(box.name) && text.stdout.includes(IMAGE), text.stdout);

		// Stopping the server removes its container through the engine.
		const t1 = Date.now();
		const stop = await rt.cli(['stop', name]);
		assert.equal(stop.code, 0, stop.stderr);
		const stopMs = await awaitNone(name, 10_000, t1);
		console.log(`# container (stdio, podman): cold first call ${startMs} ms ` +
			`(engine run + initialize); gone from podman ps -a ${stopMs} ms after \`mcpvisor stop\``);
		await sdkClose(c);
	});
	assert.deepEqual(await ofServer(name), [], 'a container left behind');
});

test('docker that is podman (as podman-docker gives): recognised by its name, served, removed at quit', {
	skip: SKIP,
	timeout: 60_000,
}, async (t) => {
	const name = srv('dock');
	await removeOwn(t, [name]);
	const docker = await dockerIsPodman(t);
	const config = {
		idleTimeout: '60s',
		mcpServers: { [name]: stdioContainer(docker, IMAGE, { args: ['--name', 'dock'] }) },
	};
	let box;
	await withConfig(t, config, RT, async (rt) => {
		const c = await sdkConnect(rt);
		await echo(c.client, `${name}__echo`, 'through docker');
		[box] = await awaitRunning(name);
		assert.ok(box.labels['mcpvisor.owner'], 'owned');
		const st = await rt.status();
		assert.ok(JSON.stringify(serverOf(st, name).inst).includes(box.id.slice(0, 12)),
			'container id in status -v');
		await sdkClose(c);
	});
	// withConfig stopped the runtime with SIGTERM (exit 0 checked there).
	assert.equal(await stateOf(box.id), null, 'the container outlived the runtime');
	assert.deepEqual(await ofServer(name), []);
});

test('HTTP container: published only on 127.0.0.1 on an owned port; a squatter on the port it used last time is left alone', {
	skip: SKIP,
	timeout: 160_000,
}, async (t) => {
	const name = srv('web');
	await removeOwn(t, [name]);
	// An env value of the explicit form reaches the server as `-e KEY`:
	// never on a command line, in status or in the log.
	const secret = `s3cr3t-${RUN}-${process.pid}`;
	const config = {
		idleTimeout: '60s',
		mcpServers: { [name]: httpContainer(IMAGE, { container: { env: { MCPV_E2E_SECRET: secret } } }) },
	};
	await withConfig(t, config, RT, async (rt, ctx) => {
		const c = await sdkConnect(rt);
		const t0 = performance.now();
		await echo(c.client, `${name}__echo`, 'over http');
		const startMs = Math.round(performance.now() - t0);
		const [box] = await awaitRunning(name);
		const pub = published(box);
		assert.equal(pub.length, 1, `published: ${JSON.stringify(pub)}`);
		assert.equal(pub[0].host_ip, '127.0.0.1', 'published beyond loopback');
		assert.equal(pub[0].container_port, 8080);
		const port = pub[0].host_port;
		assert.ok(await listening(port), 'the published port answers');
		const st = await rt.status();
		const shown = JSON.stringify(serverOf(st, name).inst);
		assert.match(shown, new RegExp(`\\b${port}\\b`), `the published port in status: ${shown}`);
		assert.ok(shown.includes(box.id.slice(0, 12)), `container id in status -v: ${shown}`);
		const env = await c.client.callTool({ name: `${name}__env`, arguments: { name: 'MCPV_E2E_SECRET' } });
		assert.ok(JSON.stringify(env.content).includes(secret), `env in the container: ${JSON.stringify(env)}`);
		for (const pid of commandPids(rt.child.pid))
			assert.ok(!cmdline(pid).includes(secret), `the env value on a command line: ${cmdline(pid)}`);
		assert.ok(!JSON.stringify(st).includes(secret), 'the env value in status');
		assert.ok(!(await rt.cli(['status', '-v'])).stdout.includes(secret), 'the env value in status -v');
		await sdkClose(c);

		// Quit: the container goes, and with it the port.
		const t1 = Date.now();
		rt.terminate();
		const ex = await rt.waitExit();
		assert.equal(ex.code, 0, 'drain exit code');
		const stopMs = await awaitNone(name, 10_000, t1);
		assert.ok(!(await listening(port)), 'the published port still answers');
		console.log(`# container (http): cold first call ${startMs} ms; gone ${stopMs} ms after SIGTERM`);

		// Another program takes the port the last run used.
		let spoken = 0;
		const squatter = net.createServer((s) => {
			s.on('data', () => spoken++);
			s.on('error', () => {});
		});
		await new Promise((resolve, reject) => {
			squatter.once('error', reject);
			squatter.listen(port, '127.0.0.1', resolve);
		});
		t.after(() => new Promise((r) => squatter.close(r)));

		const rt2 = await ctx.launch(RT);
		const c2 = await sdkConnect(rt2);
		await echo(c2.client, `${name}__echo`, 'second run');
		const [box2] = await awaitRunning(name);
		const port2 = published(box2)[0]?.host_port;
		assert.ok(port2 > 0 && port2 !== port, `published on ${port2}, squatted ${port}`);
		assert.equal(published(box2)[0].host_ip, '127.0.0.1');
		assert.ok(squatter.listening, 'the squatter lost its port');
		assert.ok(!rt.stderr().includes(secret) && !rt2.stderr().includes(secret), 'the env value in the log');
		assert.equal(spoken, 0, 'mcpvisor sent the squatter a request');
		await sdkClose(c2);
	});
	assert.deepEqual(await ofServer(name), [], 'a container left behind');
});

test('two sessions share one app container; one detaching leaves it serving the other', {
	skip: SKIP,
	timeout: 60_000,
}, async (t) => {
	const name = srv('shared');
	await removeOwn(t, [name]);
	const config = {
		idleTimeout: '60s',
		mcpServers: { [name]: stdioContainer(PODMAN, IMAGE, { args: ['--name', 'shared'] }) },
	};
	await withConfig(t, config, RT, async (rt) => {
		const a = await sdkConnect(rt, 'host-a');
		const b = await sdkConnect(rt, 'host-b');
		await Promise.all([
			echo(a.client, `${name}__echo`, 'a'),
			echo(b.client, `${name}__echo`, 'b'),
		]);
		const [box] = await awaitRunning(name);
		const pa = await a.client.callTool({ name: `${name}__pid`, arguments: {} });
		const pb = await b.client.callTool({ name: `${name}__pid`, arguments: {} });
		assert.equal(pa.content[0].text, pb.content[0].text, 'two server processes');
		let st = await rt.status();
		assert.equal(serverOf(st, name).server.instances.length, 1, 'one instance');

		// A detaches (DELETE): the container stays, B goes on.
		await sdkClose(a);
		await echo(b.client, `${name}__echo`, 'b alone');
		const [still] = await awaitRunning(name);
		assert.equal(still.id, box.id, 'another container after a detach');
		st = await rt.status();
		assert.equal(serverOf(st, name).server.instances.length, 1);
		await sdkClose(b);
		assert.equal(await stateOf(box.id), 'running', 'the app container closed with its sessions (idle is 60 s)');
	});
	assert.deepEqual(await ofServer(name), [], 'a container left behind');
});

test('idle expiry: the container is stopped and removed about the idle timeout after the last call; the next call starts another', {
	skip: SKIP,
	timeout: 90_000,
}, async (t) => {
	const name = srv('idle');
	await removeOwn(t, [name]);
	const config = {
		mcpServers: {
			[name]: stdioContainer(PODMAN, IMAGE, { extra: { idleTimeout: '1500ms' } }),
		},
	};
	await withConfig(t, config, RT, async (rt) => {
		const c = await sdkConnect(rt);
		// The engine is asked for the container while a call holds it:
		// asked after a quick call, a busy machine's engine answered
		// after the idle close.
		const hold = c.client.callTool({ name: `${name}__sleep`, arguments: { ms: 4000 } });
		const [box] = await awaitRunning(name);
		assert.ok(!(await hold).isError);
		const last = Date.now();
		await echo(c.client, `${name}__echo`, 'last');
		const goneMs = await awaitNone(name, 10_000, last);
		// Gone at all is the outcome (awaitNone bounds the wait); how
		// long the engine then takes on a busy machine is not.
		assert.ok(goneMs >= 1400, `gone ${goneMs} ms after the last call, before the idle timeout`);
		console.log(`# container idle expiry (1500 ms): gone from podman ps -a ${goneMs} ms after the last call`);
		// The session stays; the next call starts a new container (held
		// by that call while the engine is asked).
		const again = c.client.callTool({ name: `${name}__sleep`, arguments: { ms: 4000 } });
		const [box2] = await awaitRunning(name);
		assert.ok(!(await again).isError);
		assert.notEqual(box2.id, box.id);
		await sdkClose(c);
	});
	assert.deepEqual(await ofServer(name), [], 'a container left behind');
});

test('a call in flight keeps its container past the idle timeout; it closes after the call', {
	skip: SKIP,
	timeout: 90_000,
}, async (t) => {
	const name = srv('busy');
	await removeOwn(t, [name]);
	const config = {
		mcpServers: {
			[name]: stdioContainer(PODMAN, IMAGE, { extra: { idleTimeout: '1s' } }),
		},
	};
	await withConfig(t, config, RT, async (rt) => {
		const c = await sdkConnect(rt);
		// The call starts the container and holds it from the start: a
		// warm-up call first left the container idle while the engine
		// was asked for its id, which a busy machine made longer than
		// the idle timeout. Long enough for the engine's slow answers.
		const call = c.client.callTool({ name: `${name}__sleep`, arguments: { ms: 8000 } });
		const [box] = await awaitRunning(name);
		// Well past the idle timeout, the call still runs in its container.
		await sleep(1500);
		assert.equal(await stateOf(box.id), 'running', 'closed for idle during a call');
		const r = await call;
		assert.ok(!r.isError, JSON.stringify(r));
		const end = Date.now();
		const goneMs = await awaitNone(name, 10_000, end);
		assert.ok(goneMs >= 900, `closed ${goneMs} ms after the call ended`);
		console.log(`# container with an 8 s call and a 1 s idle timeout: gone ${goneMs} ms after the call`);
		await sdkClose(c);
	});
});

test('listing the catalogue and reading status start no container (the tool cache answers)', {
	skip: SKIP,
	timeout: 160_000,
}, async (t) => {
	const name = srv('lazy');
	await removeOwn(t, [name]);
	const config = {
		idleTimeout: '60s',
		mcpServers: { [name]: stdioContainer(PODMAN, IMAGE, { args: ['--name', 'lazy'] }) },
	};
	await withConfig(t, config, RT, async (rt, ctx) => {
		// A first run learns the lists (and starts the container).
		const c = await sdkConnect(rt);
		const { tools } = await c.client.listTools();
		assert.ok(tools.some((x) => x.name === `${name}__echo`));
		await awaitRunning(name);
		await sdkClose(c);
		rt.terminate();
		assert.equal((await rt.waitExit()).code, 0);
		await awaitNone(name);

		// The next run lists from the cache and starts nothing.
		const rt2 = await ctx.launch(RT);
		const c2 = await sdkConnect(rt2);
		const again = await c2.client.listTools();
		assert.deepEqual(again.tools.map((x) => x.name), tools.map((x) => x.name));
		const st = await rt2.status();
		const text = await rt2.cli(['status']);
		assert.equal(text.code, 0, text.stderr);
		assert.deepEqual(await ofServer(name), [], 'a container started by a list or status');
		for (const i of serverOf(st, name).server.instances ?? [])
			assert.ok(!['running', 'starting'].includes(i.state), JSON.stringify(i));
		// A call is what starts one.
		await echo(c2.client, `${name}__echo`, 'now');
		await awaitRunning(name);
		await sdkClose(c2);
	});
	assert.deepEqual(await ofServer(name), [], 'a container left behind');
});

// The first two bytes of a file ('' when unreadable).
function magic(p) {
	try {
		const fd = fs.openSync(p, 'r');
		const b = Buffer.alloc(2);
		fs.readSync(fd, b, 0, 2, 0);
		fs.closeSync(fd);
		return b.toString('latin1');
	} catch {
		return '';
	}
}

// A real docker CLI (not podman, nor podman-docker's script): on this
// machine it has no daemon behind it, which is the engine-down case.
const DOCKER_CLI = ['/usr/local/bin/docker', '/usr/bin/docker'].find((p) => {
	try {
		return fs.realpathSync(p) !== fs.realpathSync(PODMAN ?? '/') && magic(p) !== '#!';
	} catch {
		return false;
	}
});
const DOCKER_DOWN = DOCKER_CLI && !fs.existsSync('/var/run/docker.sock');

test('image not found, engine not running, engine missing: the reason in status; the other servers keep serving', {
	skip: SKIP,
	timeout: 60_000,
}, async (t) => {
	const missing = srv('missing');
	const down = srv('down');
	const ok = srv('ok');
	const absent = srv('absent');
	await removeOwn(t, [missing, down]);
	const servers = {
		[ok]: demo(['--name', 'ok']),
		// --pull=never: no registry is reachable; the engine says at
		// once that the image is not there.
		[missing]: stdioContainer(PODMAN, `localhost/mcpvisor-no-such-image:${RUN}`, {
			opts: ['--pull=never'],
		}),
		// An engine that is not installed (a path that does not exist).
		[absent]: stdioContainer(`/nonexistent-${RUN}/podman`, IMAGE),
	};
	if (DOCKER_DOWN)
		servers[down] = stdioContainer(DOCKER_CLI, IMAGE);
	else
		t.diagnostic(`no docker CLI without a daemon here: the engine-down case is not run`);
	await withConfig(t, { idleTimeout: '60s', mcpServers: servers }, RT, async (rt) => {
		const c = await sdkConnect(rt);
		// The list starts every server; the failed ones have no tools.
		const { tools } = await c.client.listTools();
		assert.ok(tools.some((x) => x.name === `${ok}__echo`), 'the good server is listed');
		await echo(c.client, `${ok}__echo`, 'still serving');

		const st = await rt.status();
		const text = await rt.cli(['status']);
		assert.equal(text.code, 0, text.stderr);
		// The failure's reason itself names the engine's line (not only
		// the stderr lines kept beside it).
		const reason = (name) => {
			const { inst } = serverOf(st, name);
			return `${inst?.error ?? ''} | ${inst?.lastFailure?.reason ?? ''}`;
		};
		assert.match(reason(missing), /Error: .*image not known.*\|.*image not known/,
			`status of ${missing}: ${JSON.stringify(serverOf(st, missing))}`);
		assert.match(text.stdout, /image not known/, text.stdout);
		assert.match(reason(absent), /not installed|no such file|not found/i,
			`status of ${absent}: ${JSON.stringify(serverOf(st, absent))}`);
		if (DOCKER_DOWN) {
			assert.match(reason(down), /Cannot connect to the Docker daemon.*\|.*Cannot connect to the Docker daemon/,
				`status of ${down}: ${JSON.stringify(serverOf(st, down))}`);
			assert.match(text.stdout, /Cannot connect to the Docker daemon/, text.stdout);
		}
		await echo(c.client, `${ok}__echo`, 'after the failures');
		await sdkClose(c);
	});
	assert.deepEqual(await ofServer(missing), []);
});

test('the user\'s --name is used as given; a foreign container holding that name is never removed', {
	skip: SKIP,
	timeout: 60_000,
}, async (t) => {
	const name = srv('named');
	const cname = `mcpvisor-e2e-named-${RUN}`;
	// A container of that name that is not mcpvisor's (started here).
	const foreign = (await podmanOk([
		'run', '-d', '--rm', '--name', cname, '--label', `${TEST_LABEL}=${RUN}`,
		IMAGE, '--http', '8080', '--listen-all',
	])).trim();
	await removeOwn(t, [name], [foreign]);
	const config = {
		idleTimeout: '60s',
		mcpServers: { [name]: stdioContainer(PODMAN, IMAGE, { opts: ['--name', cname] }) },
	};
	await withConfig(t, config, RT, async (rt) => {
		const c = await sdkConnect(rt);
		await c.client.listTools();
		const st = await rt.status();
		const { inst } = serverOf(st, name);
		assert.equal(inst?.state, 'failed', JSON.stringify(inst));
		assert.match(inst.error ?? '', /already in use/, `the engine's line: ${JSON.stringify(inst)}`);
		assert.equal(await stateOf(foreign), 'running', 'the foreign container of that name was touched');
		assert.equal((await inspect(foreign)).Name, cname);

		// Once the name is free, the server runs under it, owned.
		await podmanOk(['rm', '-f', '-t', '0', foreign]);
		await waitFor(async () => {
			const r = await c.client.callTool({ name: `${name}__echo`, arguments: { text: 'named' } });
			return !r.isError && r.content[0].text === 'named';
		}, 10_000, 'the server after its backoff');
		const [box] = await awaitRunning(name);
		assert.equal(box.name, cname);
		assert.ok(box.labels['mcpvisor.owner']);
		await sdkClose(c);
	});
	assert.deepEqual(await ofServer(name), [], 'a container left behind');
});

test('session scope: a container per session, removed when its session ends', {
	skip: SKIP,
	timeout: 60_000,
}, async (t) => {
	const name = srv('sess');
	await removeOwn(t, [name]);
	const config = {
		idleTimeout: '60s',
		mcpServers: { [name]: stdioContainer(PODMAN, IMAGE, { extra: { scope: 'session' } }) },
	};
	await withConfig(t, config, RT, async (rt) => {
		const a = await sdkConnect(rt, 'host-a');
		const b = await sdkConnect(rt, 'host-b');
		await Promise.all([
			echo(a.client, `${name}__echo`, 'a'),
			echo(b.client, `${name}__echo`, 'b'),
		]);
		const both = await awaitRunning(name, 2);
		assert.notEqual(both[0].name, both[1].name);
		const pidA = JSON.parse((await a.client.callTool({ name: `${name}__pid`, arguments: {} })).content[0].text).pid;
		const pidB = JSON.parse((await b.client.callTool({ name: `${name}__pid`, arguments: {} })).content[0].text).pid;
		// Each server is pid 1 of its own container: the ids tell them apart.
		assert.equal(pidA, 1);
		assert.equal(pidB, 1);
		// A's session ends (DELETE): its container goes, B's stays.
		const t0 = Date.now();
		await sdkClose(a);
		const [left] = await awaitRunning(name, 1);
		assert.ok(both.some((x) => x.id === left.id));
		console.log(`# session-scoped container removed ${Date.now() - t0} ms after its session's DELETE`);
		await echo(b.client, `${name}__echo`, 'b still');
		assert.deepEqual((await awaitRunning(name, 1)).map((x) => x.id), [left.id]);
		await sdkClose(b);
		await awaitNone(name);
	});
	assert.deepEqual(await ofServer(name), [], 'a container left behind');
});
