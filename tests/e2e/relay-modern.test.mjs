// `mcpvisor relay` with a host speaking MCP 2026-07-28 on stdio (JSON
// lines, as the revision's stdio transport has them: no initialize, every
// request with params._meta, server/discover as the probe,
// notifications/cancelled to cancel, a subscriptions/listen kept open),
// in front of the C demo server (a 2025 server): the runtime bridges its
// mid-call requests to input_required and the relay carries that through
// untouched; a 2025 host on another relay at the same time; a runtime
// restart and a runtime killed with a listen open (the listen resumes, no
// call runs twice); and the official TypeScript SDK 2.x client pinned to
// 2026-07-28 with its stdio transport.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { MCPVISOR, demo, makeHome, procStat, runCli, waitFor, writeConfig } from './lib.mjs';
import {
	SAN_ENV,
	assert,
	echo,
	hostConnect,
	runtimeFile,
	runtimesOf,
	withRelayHome,
} from './relay-lib.mjs';

const V = '2026-07-28';
const SUB = 'io.modelcontextprotocol/subscriptionId';

// A host of the revision on a relay's stdio. Shaped for withRelayHome's
// teardown (proc, pid, stderr(), client.close()): it closes stdin and the
// relay must exit 0 by itself.
class ModernHost {
	constructor(home) {
		this.proc = spawn(MCPVISOR, ['relay', '--home', home], {
			stdio: ['pipe', 'pipe', 'pipe'],
			env: { ...process.env, ...SAN_ENV },
			cwd: home,
		});
		this.pid = this.proc.pid;
		this.messages = [];
		this.waiting = new Map();
		this.n = 0;
		this.err = '';
		this.client = { close: async () => {} };
		this.proc.stderr.setEncoding('utf8');
		this.proc.stderr.on('data', (d) => {
			this.err = (this.err + d).slice(-32 * 1024);
		});
		let buf = '';
		this.proc.stdout.setEncoding('utf8');
		this.proc.stdout.on('data', (d) => {
			buf += d;
			let i;
			while ((i = buf.indexOf('\n')) >= 0) {
				const line = buf.slice(0, i);
				buf = buf.slice(i + 1);
				const m = JSON.parse(line);
				this.messages.push(m);
				if (m.method === undefined && this.waiting.has(m.id)) {
					this.waiting.get(m.id)(m);
					this.waiting.delete(m.id);
				}
			}
		});
	}

	stderr() {
		return this.err;
	}

	meta(caps = {}) {
		return {
			'io.modelcontextprotocol/protocolVersion': V,
			'io.modelcontextprotocol/clientCapabilities': caps,
			'io.modelcontextprotocol/clientInfo': { name: 'relay-modern-e2e', version: '0' },
		};
	}

	send(msg) {
		this.proc.stdin.write(`${JSON.stringify(msg)}\n`);
	}

	// Sends a request; resolves with its answer (the whole message).
	request(method, params = {}, { caps = {}, id = `r${++this.n}` } = {}) {
		const answer = new Promise((r) => this.waiting.set(id, r));
		this.send({ jsonrpc: '2.0', id, method, params: { ...params, _meta: this.meta(caps) } });
		return { id, answer };
	}

	async call(method, params = {}, opts = {}) {
		return this.request(method, params, opts).answer;
	}

	// The notifications that came with method (and, when given, tagged
	// with the subscription id sub).
	notes(method, sub) {
		return this.messages.filter(
			(m) => m.method === method && (sub === undefined || m.params?._meta?.[SUB] === sub),
		);
	}

	answersTo(id) {
		return this.messages.filter((m) => m.method === undefined && m.id === id);
	}
}

// The lines of the demo server's count file.
function counted(file) {
	return (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '').split('\n');
}

const runsOf = (file, tool) => counted(file).filter((l) => l === `call ${tool}`).length;

const text = (res) => res.result?.content?.map((c) => c.text ?? '').join('');

async function withCountedHome(t, body) {
	const dir = await makeHome('mcpvisor-relay-modern-');
	const count = path.join(dir, 'count');
	t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
	const servers = { demo: demo(['--name', 'demo', '--count-file', count]) };
	await withRelayHome(
		t,
		async () => {
			const home = await makeHome('mcpvisor-relay-');
			await writeConfig(home, servers);
			return home;
		},
		(ctx) => body(ctx, count),
	);
}

test('relay modern: discover, lists, calls, input_required and its retry, cancel; a 2025 host beside it', {
	timeout: 90_000,
}, async (t) => {
	await withCountedHome(t, async (ctx, count) => {
		const m = new ModernHost(ctx.home);
		ctx.hosts.push(m);

		// The probe: answered, no initialize ever sent.
		const d = await m.call('server/discover');
		assert.ok(d.result, JSON.stringify(d));
		assert.ok(d.result.supportedVersions.includes(V));
		assert.equal(d.result.resultType, 'complete');

		const l = await m.call('tools/list');
		const names = l.result.tools.map((x) => x.name);
		assert.ok(names.includes('demo__echo') && names.includes('demo__elicit'), `tools: ${names}`);
		assert.equal(l.result.resultType, 'complete');

		const e = await m.call('tools/call', { name: 'demo__echo', arguments: { text: 'modern' } });
		assert.equal(e.result?.resultType, 'complete', JSON.stringify(e));
		assert.equal(text(e), 'modern');

		// No elicitation capability in this request: the revision's
		// -32021 (an HTTP 400 with its body) is the host's answer.
		const no = await m.call('tools/call', { name: 'demo__elicit', arguments: { message: 'colour?' } });
		assert.equal(no.error?.code, -32021, JSON.stringify(no));
		assert.deepEqual(no.error.data.requiredCapabilities, { elicitation: {} });

		// With it: input_required with the server's question and a state;
		// the retry with the answer and the state as it came completes
		// the same call.
		const caps = { elicitation: {} };
		const params = { name: 'demo__elicit', arguments: { message: 'colour?' } };
		const ask = await m.call('tools/call', params, { caps });
		assert.equal(ask.result?.resultType, 'input_required', JSON.stringify(ask));
		const keys = Object.keys(ask.result.inputRequests);
		assert.equal(keys.length, 1);
		assert.equal(ask.result.inputRequests[keys[0]].method, 'elicitation/create');
		assert.equal(typeof ask.result.requestState, 'string');
		const done = await m.call(
			'tools/call',
			{
				...params,
				inputResponses: { [keys[0]]: { action: 'accept', content: { answer: 'blue' } } },
				requestState: ask.result.requestState,
			},
			{ caps },
		);
		assert.equal(done.result?.resultType, 'complete', JSON.stringify(done));
		assert.match(text(done), /blue/);
		assert.equal(runsOf(count, 'elicit'), 2, 'the refused call and the bridged one; the retry continued it');

		// Cancelled: its stream is dropped, the server hears the cancel,
		// the host gets no answer.
		const sleep = m.request('tools/call', { name: 'demo__sleep', arguments: { ms: 60_000 } });
		await waitFor(() => runsOf(count, 'sleep') === 1, 10_000, 'the sleep running');
		m.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: sleep.id } });
		await waitFor(
			() => counted(count).includes('cancelled sleep'),
			10_000,
			'the server told of the cancel',
		);
		const after = await m.call('tools/call', { name: 'demo__echo', arguments: { text: 'after' } });
		assert.equal(text(after), 'after');
		assert.deepEqual(m.answersTo(sleep.id), [], 'no answer for a cancelled request');

		// A 2025 host on another relay, on the same runtime.
		const old = await hostConnect(ctx.home);
		ctx.hosts.push(old);
		await echo(old.client, 'legacy');
		assert.equal(runtimesOf(ctx.home).length, 1, 'one runtime for both');
		assert.equal(m.answersTo(sleep.id).length, 0);
	});
});

test('relay modern: a listen through a killed runtime and a restart; no call runs twice', {
	timeout: 120_000,
}, async (t) => {
	await withCountedHome(t, async (ctx, count) => {
		const m = new ModernHost(ctx.home);
		ctx.hosts.push(m);
		// The demo server running first, so the listen does not see its
		// tools arrive; its pid, for the teardown to prove it gone.
		const p0 = await m.call('tools/call', { name: 'demo__pid', arguments: {} });
		ctx.pids.push(JSON.parse(text(p0)).pid);
		const listen = m.request('subscriptions/listen', {
			notifications: { toolsListChanged: true },
		});
		const acks = () => m.notes('notifications/subscriptions/acknowledged', listen.id);
		// list_changed for the listen among the messages from index i on.
		const changedSince = (i) =>
			m.messages
				.slice(i)
				.filter((x) => x.method === 'notifications/tools/list_changed' && x.params?._meta?.[SUB] === listen.id);
		await waitFor(() => acks().length === 1, 15_000, 'the listen acknowledged');
		assert.deepEqual(acks()[0].params.notifications, { toolsListChanged: true });
		const first = runtimeFile(ctx.home).pid;

		// The runtime (the relay's own) killed during a call: the call
		// may have run and is answered so, never sent again; the listen
		// resumes on the runtime the relay starts, which tells the host
		// of the gap once it acknowledged it.
		const atKill = m.messages.length;
		const killed = m.call('tools/call', { name: 'demo__sleep', arguments: { ms: 3000 } });
		await waitFor(() => runsOf(count, 'sleep') === 1, 10_000, 'the sleep running');
		process.kill(first, 'SIGKILL');
		const k = await killed;
		assert.match(k.error?.message ?? '', /may or may not have taken effect/, JSON.stringify(k));
		await waitFor(() => changedSince(atKill).length >= 1, 15_000, 'the listen resumed');
		const e = await m.call('tools/call', { name: 'demo__echo', arguments: { text: 'again' } });
		assert.equal(text(e), 'again');
		assert.equal(runsOf(count, 'sleep'), 1, 'the sleep ran once');
		const second = runtimeFile(ctx.home).pid;
		assert.notEqual(second, first);

		// A restart while a call runs: the call is drained (answered by
		// the old runtime), and the listen goes on with the new one...
		const atRestart = m.messages.length;
		const call = m.call('tools/call', { name: 'demo__sleep', arguments: { ms: 2000 } });
		await waitFor(() => runsOf(count, 'sleep') === 2, 10_000, 'the second sleep running');
		const r = await runCli(['restart'], { home: ctx.home });
		assert.equal(r.code, 0, `restart: ${r.stdout}${r.stderr}`);
		const res = await call;
		assert.equal(res.result?.resultType, 'complete', JSON.stringify(res));
		const third = runtimeFile(ctx.home).pid;
		assert.ok(third !== second && third !== first);
		await waitFor(() => changedSince(atRestart).length >= 1, 15_000, 'list_changed for the gap');
		// ...where what the new runtime sends on it reaches the host: a
		// server more in the config, reloaded (once the new runtime's
		// demo server runs, so its own start is told before).
		const e1 = await m.call('tools/call', { name: 'demo__echo', arguments: { text: 'new' } });
		assert.equal(text(e1), 'new');
		const atReload = m.messages.length;
		await writeConfig(ctx.home, {
			demo: demo(['--name', 'demo', '--count-file', count]),
			other: demo(['--name', 'other']),
		});
		const rl = await runCli(['reload'], { home: ctx.home });
		assert.equal(rl.code, 0, rl.stderr);
		await waitFor(() => changedSince(atReload).length >= 1, 15_000, 'list_changed from the new runtime');
		const l = await m.call('tools/list');
		assert.ok(l.result.tools.some((x) => x.name.startsWith('other__')));

		assert.equal(runsOf(count, 'sleep'), 2, 'each sleep ran once');
		assert.equal(acks().length, 1, 'one acknowledgement for one listen');
		assert.deepEqual(m.answersTo(listen.id), [], 'the listen never ended for the host');
		assert.deepEqual(runtimesOf(ctx.home), [third]);
	});
});

// Every `mcpvisor relay` process of home (by its command line).
function relaysOf(home) {
	const out = [];
	for (const d of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(d))
			continue;
		let args;
		try {
			args = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
		} catch {
			continue;
		}
		if (args[1] === 'relay' && args.includes(home) && procStat(Number(d)))
			out.push(Number(d));
	}
	return out;
}

test('relay modern: the SDK 2.x client pinned to 2026-07-28 over stdio; elicit and sample reach its handlers', {
	timeout: 90_000,
}, async (t) => {
	await withCountedHome(t, async (ctx, count) => {
		const transport = new StdioClientTransport({
			command: MCPVISOR,
			args: ['relay', '--home', ctx.home],
			env: { ...process.env, ...SAN_ENV },
			cwd: ctx.home,
			stderr: 'pipe',
		});
		let err = '';
		transport.stderr.setEncoding('utf8');
		transport.stderr.on('data', (d) => {
			err = (err + d).slice(-32 * 1024);
		});
		const asked = { elicit: 0, sample: 0 };
		const client = new Client(
			{ name: 'relay-modern-sdk2', version: '0.0.0' },
			{
				capabilities: { elicitation: {}, sampling: {} },
				versionNegotiation: { mode: { pin: V } },
			},
		);
		client.setRequestHandler('elicitation/create', async (req) => {
			asked.elicit++;
			return { action: 'accept', content: { answer: `said ${req.params.message}` } };
		});
		client.setRequestHandler('sampling/createMessage', async () => {
			asked.sample++;
			return {
				role: 'assistant',
				content: { type: 'text', text: 'Paris' },
				model: 'e2e-model',
				stopReason: 'endTurn',
			};
		});
		const errors = [];
		client.onerror = (e) => errors.push(e);
		const host = { client, stderr: () => err, proc: null, pid: null };
		ctx.hosts.push(host);
		try {
			await client.connect(transport);
		} finally {
			host.proc = transport._process;
			host.pid = transport.pid;
		}
		assert.equal(client.getProtocolEra(), 'modern');
		assert.equal(client.getNegotiatedProtocolVersion(), V);
		assert.equal(client.getServerVersion()?.name, 'mcpvisor');

		const { tools } = await client.listTools();
		assert.ok(tools.some((x) => x.name === 'demo__elicit'));
		const echoed = await client.callTool({ name: 'demo__echo', arguments: { text: 'sdk2' } });
		assert.deepEqual(echoed.content, [{ type: 'text', text: 'sdk2' }]);

		const el = await client.callTool({ name: 'demo__elicit', arguments: { message: 'name?' } });
		assert.ok(!el.isError, JSON.stringify(el));
		assert.deepEqual(JSON.parse(el.content[0].text), {
			action: 'accept',
			content: { answer: 'said name?' },
		});
		const sm = await client.callTool({ name: 'demo__sample', arguments: { prompt: 'Capital of France?' } });
		assert.ok(!sm.isError, JSON.stringify(sm));
		assert.equal(sm.content[0].text, 'Paris');
		assert.deepEqual(asked, { elicit: 1, sample: 1 });
		// Each upstream call ran once: the client's retries continued them.
		assert.equal(runsOf(count, 'elicit'), 1);
		assert.equal(runsOf(count, 'sample'), 1);
		assert.deepEqual(errors, []);
		// The SDK probed on a sibling relay and let it go: one relay left.
		await waitFor(() => relaysOf(ctx.home).length === 1, 10_000, 'the probe relay gone');
		assert.deepEqual(relaysOf(ctx.home), [host.pid]);
	});
});
