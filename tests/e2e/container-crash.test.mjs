// Owned containers at the runtime's end, on the real engine: drain on quit
// removes every one (stdio and HTTP), and a runtime killed with SIGKILL
// leaves its container running until the next start, which stops exactly
// that one: three decoys the test starts itself (a foreign mcpvisor.owner
// label, the same image, a name sharing mcpvisor's prefix) keep running.
// Before/after lists of containers and loopback listeners go to the log.
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { before, test } from 'node:test';

import { waitFor } from './lib.mjs';
import { withConfig } from './lifetime-lib.mjs';
import {
	CENV,
	PODMAN,
	RUN,
	SKIP,
	TEST_LABEL,
	awaitRunning,
	containers,
	describe,
	echo,
	httpContainer,
	listeners,
	listening,
	ofServer,
	podman,
	podmanOk,
	removeOwn,
	sdkClose,
	sdkConnect,
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

// The loopback listeners on the given ports, for the log.
function listenersOn(ports) {
	const l = listeners().filter((x) => ports.includes(x.port));
	return l.length ? l.map((x) => `  ${x.addr}:${x.port} ${x.who}`).join('\n') : '  (none)';
}

test('drain on quit: SIGTERM removes every owned container (stdio and HTTP) and their ports, never the image or a named volume; exit 0', {
	skip: SKIP,
	timeout: 120_000,
}, async (t) => {
	const pod = `drain${RUN}`;
	const web = `drainweb${RUN}`;
	await removeOwn(t, [pod, web]);
	// A named volume the server uses: created by the engine at run,
	// never removed by mcpvisor; the test removes it at the end.
	const volume = `mcpvisor-e2e-vol-${RUN}`;
	t.after(() => podman(['volume', 'rm', '-f', volume]));
	const config = {
		idleTimeout: '60s',
		mcpServers: {
			[pod]: stdioContainer(PODMAN, IMAGE),
			[web]: httpContainer(IMAGE, { container: { volumes: [`${volume}:/data`] } }),
		},
	};
	let boxes;
	let port;
	await withConfig(t, config, RT, async (rt) => {
		const c = await sdkConnect(rt);
		await Promise.all([echo(c.client, `${pod}__echo`, 'a'), echo(c.client, `${web}__echo`, 'b')]);
		boxes = [...(await awaitRunning(pod)), ...(await awaitRunning(web))];
		port = boxes[1].ports[0].host_port;
		console.log(`# drain: before SIGTERM\n${describe(boxes)}\n# listeners\n${listenersOn([port])}`);
		// A call in flight at quit is answered before the containers go:
		// seen in flight (a fixed 200 ms pause was a bet a busy machine
		// could lose), and long enough to still be then.
		const call = c.client.callTool({ name: `${pod}__sleep`, arguments: { ms: 3000 } });
		await waitFor(
			async () => (await rt.status()).servers.find((s) => s.name === pod)?.instances?.[0]?.inflight > 0,
			5000,
			'the call in flight',
		);
		const t0 = Date.now();
		rt.terminate();
		const r = await call;
		assert.ok(!r.isError, `the call in flight: ${JSON.stringify(r)}`);
		const ex = await rt.waitExit();
		const exitMs = Date.now() - t0;
		assert.equal(ex.code, 0, 'drain exit code');
		// Drain confirms each container gone before it exits.
		for (const b of boxes)
			assert.equal(await stateOf(b.id), null, `${b.name} still there when the runtime exited`);
		assert.ok(!(await listening(port)), 'the published port still answers');
		assert.equal((await podman(['volume', 'exists', volume])).code, 0, 'the named volume was removed');
		assert.equal((await podman(['image', 'exists', IMAGE])).code, 0, 'the image was removed');
		console.log(`# drain: runtime exited ${exitMs} ms after SIGTERM (a 3 s call in flight), ` +
			`both containers removed\n# after\n${describe([...(await ofServer(pod)), ...(await ofServer(web))])}` +
			`\n# listeners\n${listenersOn([port])}`);
	});
});

test('runtime SIGKILL, then restart: the owned container is stopped; three decoys stay running; nothing left', {
	skip: SKIP,
	timeout: 240_000,
}, async (t) => {
	const name = `crash${RUN}`;
	const decoyIds = [];
	await removeOwn(t, [name], decoyIds);
	const config = { idleTimeout: '60s', mcpServers: { [name]: httpContainer(IMAGE) } };
	const mine = async () => [
		...(await ofServer(name)),
		...(await containers(`${TEST_LABEL}=${RUN}`)).filter((c) => !c.labels['mcpvisor.server']),
	];
	await withConfig(t, config, RT, async (rt, ctx) => {
		const c = await sdkConnect(rt);
		await echo(c.client, `${name}__echo`, 'before the crash');
		const [box] = await awaitRunning(name);
		const port = box.ports[0].host_port;

		// Decoys, started by the test: a foreign owner token on our
		// labels, the same image without labels, and a name that shares
		// the owned container's prefix.
		const prefix = box.name.split(/[-_.]/)[0];
		const runMs = [];
		const decoy = async (opts) => {
			const t1 = performance.now();
			const id = (await podmanOk([
				'run', '-d', '--rm', '--label', `${TEST_LABEL}=${RUN}`, ...opts,
				IMAGE, '--http', '8080', '--listen-all',
			])).trim();
			runMs.push(Math.round(performance.now() - t1));
			decoyIds.push(id);
			return id;
		};
		await decoy(['--label', 'mcpvisor.owner=0123456789abcdef0123456789abcdef',
			'--label', `mcpvisor.server=${name}`]);
		await decoy([]);
		await decoy(['--name', `${prefix}-${name}-decoy`]);
		for (const id of decoyIds)
			assert.equal(await stateOf(id), 'running', `decoy ${id}`);

		// The journal names the container before the crash.
		const jpath = path.join(ctx.home, 'state', 'journal.json');
		await waitFor(async () => (await fsp.readFile(jpath, 'utf8')).includes(box.id.slice(0, 12)),
			5000, 'the container in the journal');

		const beforeList = await mine();
		const beforeL = listenersOn([port]);
		ctx.expectExit(rt, 'SIGKILL');
		rt.terminate('SIGKILL');
		await rt.exitPromise;
		// A killed host leaves its container running: that is what the
		// next start has to stop.
		await new Promise((r) => setTimeout(r, 500));
		assert.equal(await stateOf(box.id), 'running',
			'the owned container did not outlive the runtime: nothing left to reconcile');
		const crashedList = await mine();

		const t0 = Date.now();
		const rt2 = await ctx.launch(RT);
		// (The foreign-token decoy carries our server label: wait for
		// the owned container itself.)
		await waitFor(async () => (await stateOf(box.id)) === null,
			15_000, 'the owned container stopped by the reconcile');
		const reconcileMs = Date.now() - t0;
		for (const id of decoyIds)
			assert.equal(await stateOf(id), 'running', `decoy ${id.slice(0, 12)} was touched`);
		assert.ok(!(await listening(port)), 'the owned port still answers');
		const afterList = await mine();
		const afterL = listenersOn([port]);
		console.log(
			`# podman run -d of each decoy (the engine's own start time): ${runMs.join(', ')} ms\n` +
			`# crash test: containers of this run before SIGKILL\n${describe(beforeList)}\n` +
			`# listeners: \n${beforeL}\n` +
			`# after SIGKILL, before restart\n${describe(crashedList)}\n` +
			`# after restart (owned container stopped ${reconcileMs} ms after the new runtime was started)\n` +
			`${describe(afterList)}\n# listeners:\n${afterL}`,
		);
		assert.deepEqual(afterList.map((x) => x.id).sort(), [...decoyIds].sort(),
			'after the reconcile only the decoys are left');
		// The new runtime serves the server again, in a new container.
		const c2 = await sdkConnect(rt2);
		await echo(c2.client, `${name}__echo`, 'after the restart');
		const owned = (await ofServer(name)).filter((x) => x.labels['mcpvisor.owner'] !== '0123456789abcdef0123456789abcdef');
		assert.equal(owned.length, 1);
		assert.notEqual(owned[0].id, box.id);
		await sdkClose(c2);
	});
	// After the runtime's drain: only the decoys remain, and the after hook
	// removes them by id.
	const left = (await mine()).map((x) => x.id).sort();
	assert.deepEqual(left, [...decoyIds].sort(), 'a container left behind');
});
