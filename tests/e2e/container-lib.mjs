// Helpers of the container tests (container*.test.mjs), on the real engine:
// rootful podman with runc and the test CONTAINERS_CONF, the image built from
// the statically linked demo fixture (tests/containers/image.sh), the
// official SDK client, and the views that prove what a test leaves behind:
// the containers of this run (every server name carries the run's id, and
// mcpvisor labels what it starts with mcpvisor.server=NAME) and the loopback
// listeners. Only containers this run started are ever removed, by id.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fsp from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { REPO, makeHome, waitFor } from './lib.mjs';

// podman by absolute path (the runtime is given that path), or null.
function which(cmd) {
	const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
	const p = r.status === 0 ? r.stdout.trim() : '';
	return p.startsWith('/') ? p : null;
}

export const PODMAN = which('podman');
// A test's skip option: the tests run wherever podman is (CI installs it).
export const SKIP = PODMAN
	? false
	: 'podman is not installed (`make test` installs it; CI runs these tests)';

// What the runtime and every podman command of the tests run with: runc and
// explicit ulimits (tests/containers/containers.conf says why).
export const CONF = path.join(REPO, 'tests/containers/containers.conf');
export const CENV = { CONTAINERS_CONF: CONF };

// This run's id: in every server name (so in mcpvisor's mcpvisor.server
// label) and in the e2e label of the containers the tests start themselves.
export const RUN = crypto.randomBytes(3).toString('hex');
export const TEST_LABEL = 'mcpvisor-e2e.run';
export const srv = (base) => `${base}${RUN}`;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Runs podman; resolves {code, stdout, stderr}, never rejects.
export function podman(args, { timeout = 30_000 } = {}) {
	return new Promise((resolve) => {
		execFile(
			PODMAN,
			args,
			{ env: { ...process.env, ...CENV }, timeout, maxBuffer: 8 << 20 },
			(err, stdout, stderr) =>
				resolve({ code: err ? (err.code ?? -1) : 0, stdout, stderr }),
		);
	});
}

export async function podmanOk(args, opts) {
	const r = await podman(args, opts);
	assert.equal(r.code, 0, `podman ${args.join(' ')}: ${r.stderr}`);
	return r.stdout;
}

// The test image (imported when missing or stale); once per process.
let imagePromise = null;
export function testImage() {
	imagePromise ??= new Promise((resolve, reject) => {
		execFile(
			'sh',
			[path.join(REPO, 'tests/containers/image.sh')],
			{ env: { ...process.env, ...CENV }, timeout: 120_000 },
			(err, stdout, stderr) =>
				err
					? reject(new Error(`image.sh: ${err.message}\n${stderr}`))
					: resolve(stdout.trim()),
		);
	});
	return imagePromise;
}

// Every container (running or not) carrying label (K or K=V): [{id, name,
// state, image, labels}].
export async function containers(label) {
	const out = await podmanOk([
		'ps', '-a', '--no-trunc', '--filter', `label=${label}`, '--format', 'json',
	]);
	const list = out.trim() ? JSON.parse(out) : [];
	return list.map((c) => ({
		id: c.Id,
		name: (c.Names ?? [])[0],
		state: c.State,
		image: c.Image,
		labels: c.Labels ?? {},
		ports: c.Ports ?? [],
	}));
}

// The containers mcpvisor started for server name.
export const ofServer = (name) => containers(`mcpvisor.server=${name}`);

// One container's state ("running", "exited", ...), or null when gone.
export async function stateOf(id) {
	const r = await podman(['inspect', '--format', '{{.State.Status}}', id]);
	return r.code === 0 ? r.stdout.trim() : null;
}

export async function inspect(id) {
	return JSON.parse(await podmanOk(['inspect', id]))[0];
}

// Waits for server name to have exactly n containers, all running;
// returns them.
export async function awaitRunning(name, n = 1, ms = 10_000) {
	return waitFor(async () => {
		const l = await ofServer(name);
		return l.length === n && l.every((c) => c.state === 'running') && l;
	}, ms, `${n} running container(s) of ${name}`);
}

// Resolves with the ms it took until server name has no container left at
// all (not even a stopped one); throws after ms.
export async function awaitNone(name, ms = 10_000, t0 = Date.now()) {
	await waitFor(async () => (await ofServer(name)).length === 0, ms,
		`no container left of ${name}`);
	return Date.now() - t0;
}

// Removes, by id, every container of the given servers and the given ids:
// all started by this test (by its runtime or by itself). For after hooks.
export async function removeOwn(t, names, ids = []) {
	t.after(async () => {
		const all = new Set(ids);
		for (const n of names)
			for (const c of await ofServer(n).catch(() => []))
				all.add(c.id);
		// One at a time: podman 4.3.1's `rm -f A B` removes neither
		// when A is already gone.
		for (const id of all)
			await podman(['rm', '-f', '-t', '0', id]);
	});
}

// A line per container for the test log.
export function describe(list) {
	if (!list.length)
		return '  (none)';
	return list
		.map((c) => `  ${c.id.slice(0, 12)} ${c.name} ${c.state} ${c.image} ` +
			Object.entries(c.labels)
				.filter(([k]) => k.startsWith('mcpvisor'))
				.map(([k, v]) => `${k}=${v.length > 16 ? v.slice(0, 8) + '…' : v}`)
				.join(' '))
		.join('\n');
}

// The TCP listeners on 127.0.0.1 (ss -ltnH): [{port, who}].
export function listeners() {
	const r = spawnSync('ss', ['-ltnpH'], { encoding: 'utf8' });
	if (r.status !== 0)
		return [];
	const out = [];
	for (const line of r.stdout.split('\n')) {
		const f = line.trim().split(/\s+/);
		if (f.length < 4)
			continue;
		const m = f[3].match(/^(.*):(\d+)$/);
		if (!m)
			continue;
		out.push({ addr: m[1], port: Number(m[2]), who: f.slice(5).join(' ') });
	}
	return out;
}

// Whether something accepts connections on 127.0.0.1:port.
export function listening(port) {
	return new Promise((resolve) => {
		const s = net.connect({ host: '127.0.0.1', port });
		s.once('connect', () => {
			s.destroy();
			resolve(true);
		});
		s.once('error', () => resolve(false));
	});
}

// A stdio container server in the `docker run -i --rm IMAGE` form, through
// engine (a path), with extra engine options before the image and the
// demo fixture's own arguments after it.
export function stdioContainer(engine, image, { opts = [], args = [], extra = {} } = {}) {
	return {
		command: engine,
		args: ['run', '-i', '--rm', ...opts, image, ...args],
		scope: 'app',
		...extra,
	};
}

// An HTTP container in the explicit form: the fixture on port 8080 in the
// container, published on 127.0.0.1:{port}.
export function httpContainer(image, { args = [], container = {}, extra = {} } = {}) {
	return {
		container: {
			image,
			port: 8080,
			args: ['--http', '8080', '--listen-all', ...args],
			engine: PODMAN,
			...container,
		},
		url: 'http://127.0.0.1:{port}/mcp',
		scope: 'app',
		...extra,
	};
}

// A folder with a `docker` that is podman (what podman-docker provides),
// removed when t ends. Returns the path of that docker.
export async function dockerIsPodman(t) {
	const dir = await makeHome('mcpvisor-e2e-docker-');
	t.after(() => fsp.rm(dir, { recursive: true, force: true }));
	const docker = path.join(dir, 'docker');
	await fsp.symlink(PODMAN, docker);
	return docker;
}

// The official SDK client on the runtime's endpoint.
export async function sdkConnect(rt, name = 'mcpvisor-e2e-containers') {
	const client = new Client({ name, version: '0.0.0' });
	const transport = new StreamableHTTPClientTransport(new URL(rt.url));
	await client.connect(transport);
	return { client, transport };
}

// Ends the session with DELETE (the SDK's close() sends none) and closes.
export async function sdkClose({ client, transport }) {
	await transport.terminateSession();
	await client.close();
}

export async function echo(client, tool, text) {
	const r = await client.callTool({ name: tool, arguments: { text } });
	assert.ok(!r.isError, `${tool}: ${JSON.stringify(r)}`);
	assert.equal(r.content[0].text, text);
	return r;
}

// The status entry of server name, and its first instance.
export function serverOf(st, name) {
	const s = (st.servers ?? []).find((x) => x.name === name);
	assert.ok(s, `server ${name} in status: ${JSON.stringify(st)}`);
	return { server: s, inst: s.instances?.[0] };
}
