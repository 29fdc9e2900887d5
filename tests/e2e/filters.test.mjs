// Filters ("tools", "prompts", "resources": {"allow", "deny"}) on real
// clients and a real demo server: what is listed, that a filtered tool,
// prompt or resource answers byte for byte like one that does not exist
// (by name, through deferred search and call, for prompts/get, reads and
// completions), that a reload changing only a filter keeps the server's
// process, and what `mcpvisor check` and status say of filters and of tool
// names over 64 characters.
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import {
	RawClient,
	connect,
	demo,
	makeHome,
	runCli,
	runInHome,
	waitFor,
	withRuntime,
} from './lib.mjs';
import {
	countFile,
	countLines,
	sdkClient,
	sdkClose,
	text,
	waitGetStream,
} from './protocol-lib.mjs';

// The JSON-RPC message a request got, as the bytes the runtime sent (the
// data of its SSE event, or the JSON body).
async function rawReply(c, id, method, params) {
	const res = await c.post({ jsonrpc: '2.0', id, method, params });
	assert.equal(res.status, 200, `${method}: HTTP ${res.status}`);
	const body = await res.text();
	if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream'))
		return body.trim();
	const events = body
		.split(/\r?\n\r?\n/)
		.map((b) =>
			b
				.split(/\r?\n/)
				.filter((l) => l.startsWith('data:'))
				.map((l) => l.slice(5).replace(/^ /, ''))
				.join('\n'),
		)
		.filter((d) => d && JSON.parse(d).id === id);
	assert.equal(events.length, 1, body);
	return events[0];
}

// Asks for `filtered` and for `missing` (which does not exist) the same
// way, with the same id, and asserts the answers are the same bytes once
// the name is swapped; returns the answer to `filtered`.
async function assertSameAsMissing(c, method, params, filtered, missing) {
	const subst = (p, name) =>
		JSON.parse(JSON.stringify(p).replaceAll('@NAME@', name));
	const a = await rawReply(c, 7, method, subst(params, filtered));
	const b = await rawReply(c, 7, method, subst(params, missing));
	assert.ok(JSON.parse(a).error, `${method} ${filtered} succeeded: ${a}`);
	assert.equal(a, b.replaceAll(missing, filtered),
		`${method}: ${filtered} (filtered) vs ${missing} (missing)`);
	return JSON.parse(a);
}

const FILTERED = {
	tools: { allow: ['echo', 'pid', 'notify_*', 'add'], deny: ['add'] },
	prompts: { deny: ['greet*'] },
	resources: { deny: ['demo://item/*'] },
};

test('filters: lists keep only what passes; filtered tools, prompts and resources answer like missing ones', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { demo: demo(['--name', 'demo'], FILTERED) }, async (rt) => {
		const sdk = await sdkClient(rt);
		try {
			const { tools } = await sdk.client.listTools();
			assert.deepEqual(tools.map((x) => x.name),
				['demo__echo', 'demo__pid', 'demo__notify_changed']);
			assert.deepEqual((await sdk.client.listPrompts()).prompts, []);
			const { resources } = await sdk.client.listResources();
			assert.deepEqual(resources.map((r) => r.uri), ['demo://readme']);
			const { resourceTemplates } =
				await sdk.client.listResourceTemplates();
			assert.deepEqual(resourceTemplates, []);
			// What is kept works as before.
			const echo = await sdk.client.callTool({
				name: 'demo__echo',
				arguments: { text: 'kept' },
			});
			assert.equal(text(echo), 'kept');
			const readme = await sdk.client.readResource({ uri: 'demo://readme' });
			assert.equal(readme.contents[0].uri, 'demo://readme');
			// The SDK sees the same refusal as for a missing tool.
			await assert.rejects(
				sdk.client.callTool({ name: 'demo__add', arguments: { a: 1, b: 2 } }),
				/Unknown tool "demo__add"\. Available: demo__echo, demo__pid, demo__notify_changed$/,
			);
		} finally {
			await sdkClose(sdk);
		}

		const c = await connect(rt);
		// Denied, and not allowed: both exactly like a missing tool.
		for (const name of ['demo__add', 'demo__sleep']) {
			const e = await assertSameAsMissing(c, 'tools/call',
				{ name: '@NAME@', arguments: { a: 1, b: 2, ms: 1 } },
				name, 'demo__nope');
			assert.match(e.error.message, /^Unknown tool /);
		}
		await assertSameAsMissing(c, 'prompts/get',
			{ name: '@NAME@', arguments: { name: 'x' } },
			'demo__greeting', 'demo__nope');
		// A uri a template would serve, held back by the filter.
		const r = await assertSameAsMissing(c, 'resources/read',
			{ uri: '@NAME@' }, 'demo://item/1', 'demo://nope/1');
		assert.match(r.error.message, /^Resource not found: demo:\/\/item\/1$/);
		await assertSameAsMissing(c, 'completion/complete',
			{ ref: { type: 'ref/prompt', name: '@NAME@' },
				argument: { name: 'name', value: 'a' } },
			'demo__greeting', 'demo__nope');
		await assertSameAsMissing(c, 'resources/subscribe',
			{ uri: '@NAME@' }, 'demo://item/2', 'demo://nope/2');
		await c.close();
	});
});

test('filters: deferred search never finds a filtered tool, and mcpvisor__call_tool refuses it like a missing one', {
	timeout: 60_000,
}, async (t) => {
	const servers = {
		demo: demo(['--name', 'demo'], {
			exposure: 'deferred',
			tools: { deny: ['add', 'sl*'] },
		}),
	};
	await withRuntime(t, servers, async (rt) => {
		const c = await connect(rt);
		const listed = (await c.listAll()).map((x) => x.name);
		assert.deepEqual(listed, ['mcpvisor__find_tools', 'mcpvisor__call_tool']);
		const find = async (query) =>
			(await c.call('mcpvisor__find_tools', { query, limit: 50 }))
				.structuredContent.tools.map((x) => x.name);
		assert.deepEqual(await find('add'), []);
		assert.deepEqual(await find('sleep wait milliseconds'), []);
		assert.ok((await find('numbers')).every((n) => n !== 'demo__add'));
		assert.deepEqual(await find('echo'), ['demo__echo']);
		// Every tool the search can find is one that is not filtered.
		const all = await find('a e i o u');
		assert.ok(all.length >= 8, JSON.stringify(all));
		assert.ok(!all.includes('demo__add') && !all.includes('demo__sleep'));

		await assertSameAsMissing(c, 'tools/call',
			{ name: 'mcpvisor__call_tool',
				arguments: { name: '@NAME@', arguments: { a: 1, b: 2 } } },
			'demo__add', 'demo__nope');
		const ok = await c.call('mcpvisor__call_tool',
			{ name: 'demo__echo', arguments: { text: 'deferred' } });
		assert.equal(ok.content[0].text, 'deferred');
		await c.close();
	});
});

test('filters: a reload that changes only a filter applies at once, tells the client, and keeps the server process', {
	timeout: 60_000,
}, async (t) => {
	const { dir, file } = await countFile();
	t.after(() => fsp.rm(dir, { recursive: true, force: true }));
	const server = (tools) =>
		demo(['--name', 'demo', '--count-file', file], { tools });
	await withRuntime(t, { demo: server({ deny: ['echo'] }) }, async (rt) => {
		const sdk = await sdkClient(rt);
		const notes = [];
		sdk.client.setNotificationHandler(ToolListChangedNotificationSchema,
			(n) => notes.push(n));
		await waitGetStream(sdk);
		const names = async () =>
			(await sdk.client.listTools()).tools.map((x) => x.name);
		const pid = async () => {
			const info = JSON.parse(text(await sdk.client.callTool({
				name: 'demo__pid', arguments: {},
			})));
			rt.track(info.pid);
			return info.pid;
		};
		try {
			assert.ok(!(await names()).includes('demo__echo'));
			const before = await pid();

			await fsp.writeFile(rt.configPath, JSON.stringify({
				mcpServers: { demo: server({ allow: ['echo', 'pid'] }) },
			}));
			const r = await rt.cli(['reload']);
			assert.equal(r.code, 0, r.stderr);
			await waitFor(() => notes.length >= 1, 5000,
				'tools/list_changed after the reload');
			assert.deepEqual(await names(), ['demo__echo', 'demo__pid']);
			const echo = await sdk.client.callTool({
				name: 'demo__echo', arguments: { text: 'now allowed' },
			});
			assert.equal(text(echo), 'now allowed');
			// The same process: the filter is not part of the connection.
			assert.equal(await pid(), before, 'the server was restarted');
			const st = await rt.status();
			const inst = st.servers.find((s) => s.name === 'demo').instances;
			assert.deepEqual(inst.map((i) => i.pid), [before]);
			const starts = (await countLines(file)).filter((l) =>
				l.startsWith('start '));
			assert.equal(starts.length, 1, 'one start in the count file');
			assert.match(rt.stderr(), /config reloaded from .*: 1 server\(s\), 0 instance\(s\) closed/);
		} finally {
			await sdkClose(sdk);
		}
	});
});

test('filters: check shows patterns, then what each keeps by name; names over 64 characters are reported with the prefix that fits', {
	timeout: 60_000,
}, async (t) => {
	const long = 'p'.repeat(50);
	const servers = {
		demo: demo(['--name', 'demo'], {
			tools: { allow: ['e*', 'p*'], deny: ['env', 'get_isue'] },
			resources: { deny: ['demo://item/*'] },
		}),
		long: demo(['--name', 'long'], { prefix: long }),
	};
	await withRuntime(t, servers, async (rt) => {
		// A home where no runtime runs: the patterns only.
		const other = await makeHome();
		t.after(() => fsp.rm(other, { recursive: true, force: true }));
		const alone = await runCli(['check', rt.configPath], { home: other });
		assert.equal(alone.code, 0, alone.stderr);
		assert.match(alone.stdout, /^ +tools: allow e\*, p\*; deny env, get_isue$/m);
		assert.match(alone.stdout, /^ +resources: deny demo:\/\/item\/\*$/m);
		assert.match(alone.stdout, /what the filters keep shows by name once a running runtime/);
		assert.doesNotMatch(alone.stderr, /longer than 64/);

		// Once the runtime has listed the servers, by name.
		const tools = await rt.cli(['tools']);
		assert.equal(tools.code, 0, tools.stderr);
		const chk = await rt.cli(['check', rt.configPath]);
		assert.equal(chk.code, 0, chk.stderr);
		assert.match(chk.stdout, /^ +tools kept 3: echo, pid, elicit$/m);
		assert.match(chk.stdout, /^ +tools dropped 9: add, sleep, count, fail, env, sample, roots, notify_changed, log$/m);
		// A pattern that matches nothing: most often a typo.
		assert.match(chk.stdout, /^ +patterns matching nothing offered 1: get_isue$/m);
		assert.match(chk.stdout, /^ +resources kept 1: demo:\/\/readme$/m);
		assert.match(chk.stdout, /^ +templates dropped 1: demo:\/\/item\/\{id\}$/m);
		const advice = `server "long": 1 tool name(s) longer than 64 characters as clients see them, which several hosts refuse (longest: ${long}__notify_changed, 66); set its "prefix" to at most 48 characters (now "${long}")`;
		assert.ok(chk.stderr.includes(`warning: ${advice}\n`), chk.stderr);

		const js = JSON.parse((await rt.cli(['check', rt.configPath, '--json'])).stdout);
		const d = js.servers.find((s) => s.name === 'demo');
		assert.deepEqual(d.filters.tools, { allow: ['e*', 'p*'], deny: ['env', 'get_isue'] });
		assert.deepEqual(d.unmatched, { tools: ['get_isue'] });
		assert.deepEqual(d.filtered.tools.kept, ['echo', 'pid', 'elicit']);
		const l = js.servers.find((s) => s.name === 'long');
		assert.deepEqual(l.longToolNames, [`${long}__notify_changed`]);

		// The runtime says it too: in status and in its log.
		const st = await rt.status();
		const ls = st.servers.find((s) => s.name === 'long');
		assert.deepEqual(ls.longToolNames, [`${long}__notify_changed`]);
		assert.equal(ls.longToolNamesAdvice, advice);
		const text2 = await rt.cli(['status']);
		assert.ok(text2.stdout.includes(`warning: ${advice}\n`), text2.stdout);
		assert.equal(rt.stderr().split(advice).length - 1, 1,
			'logged once for one change');
		// What the server offers before filters is for the Unix socket
		// only; over TCP status shows no filtered name.
		assert.ok(st.servers.find((s) => s.name === 'demo').offered.tools.includes('add'));
		const pub = await (await fetch(rt.url.replace('/mcp', '/status'))).json();
		assert.equal(pub.servers.find((s) => s.name === 'demo').offered, undefined);
	});
});

test('filters: a space whose server differs only in filters shares the instance and sees only what its filter keeps', {
	timeout: 60_000,
}, async (t) => {
	const space = await makeHome('mcpvisor-space-filter-');
	t.after(() => fsp.rm(space, { recursive: true, force: true }));
	const base = demo(['--name', 'demo']);
	await fsp.writeFile(path.join(space, '.mcp.json'), JSON.stringify({
		mcpServers: { demo: { ...base, tools: { allow: ['pid'] } } },
	}));
	await withRuntime(t, { demo: base }, async (rt) => {
		assert.equal((await rt.cli(['allow', space])).code, 0);
		const plain = await connect(rt);
		const inSpace = new RawClient(`${rt.url}?space=${space}`);
		await inSpace.initialize();
		const names = async (c) => (await c.listAll()).map((x) => x.name);
		assert.ok((await names(plain)).length > 5);
		assert.deepEqual(await names(inSpace), ['demo__pid']);
		const a = await rt.demoPids(plain);
		const b = await rt.demoPids(inSpace);
		assert.equal(a.pid, b.pid, 'one process for both');
		const st = await rt.status();
		const demoSt = st.servers.find((s) => s.name === 'demo');
		assert.equal(demoSt.instances.length, 1, JSON.stringify(demoSt));
		// The space's session is refused what its filter drops, the
		// other is not.
		const echo = await plain.call('demo__echo', { text: 'x' });
		assert.equal(echo.content[0].text, 'x');
		const r = await inSpace.request('tools/call',
			{ name: 'demo__echo', arguments: { text: 'x' } });
		assert.match(r.error.message, /^Unknown tool "demo__echo"\. Available: demo__pid$/);

		// The space's filter changes (the edited file is allowed again):
		// its session sees it, on the same process, and is told.
		const sdk = await sdkClient({ url: `${rt.url}?space=${space}` });
		const notes = [];
		sdk.client.setNotificationHandler(ToolListChangedNotificationSchema,
			(n) => notes.push(n));
		await waitGetStream(sdk);
		assert.deepEqual((await sdk.client.listTools()).tools.map((x) => x.name),
			['demo__pid']);
		await fsp.writeFile(path.join(space, '.mcp.json'), JSON.stringify({
			mcpServers: { demo: { ...base, tools: { allow: ['pid', 'echo'] } } },
		}));
		assert.equal((await rt.cli(['allow', space])).code, 0);
		assert.equal((await rt.cli(['reload'])).code, 0);
		await waitFor(async () => (await names(inSpace)).length === 2, 5000,
			'the space session to see the new filter');
		assert.deepEqual(await names(inSpace), ['demo__echo', 'demo__pid']);
		await waitFor(() => notes.length >= 1, 5000,
			'tools/list_changed in the space session');
		assert.equal((await rt.demoPids(inSpace)).pid, a.pid, 'not restarted');
		await sdkClose(sdk);
		await plain.close();
		await inSpace.close();
	});
});

test('filters: check names what a filter keeps from the runtime\'s tool cache, with nothing started', {
	timeout: 60_000,
}, async (t) => {
	const home = await makeHome();
	t.after(() => fsp.rm(home, { recursive: true, force: true }));
	const configPath = path.join(home, 'mcp.json');
	await fsp.writeFile(configPath, JSON.stringify({
		mcpServers: { demo: demo(['--name', 'demo'], { tools: { allow: ['echo'] } }) },
	}));
	// A first run lists the server: its lists go to the tool cache.
	await runInHome(t, home, configPath, {}, async (rt) => {
		assert.equal((await rt.cli(['tools'])).code, 0);
	});
	await runInHome(t, home, configPath, {}, async (rt) => {
		const st = await rt.status();
		assert.deepEqual(st.servers[0].instances, [], 'nothing started');
		const chk = await rt.cli(['check', configPath]);
		assert.equal(chk.code, 0, chk.stderr);
		assert.match(chk.stdout, /^ +tools kept 1: echo$/m);
		assert.match(chk.stdout, /^ +tools dropped 11: add, pid, /m);
		assert.equal((await rt.status()).servers[0].instances.length, 0,
			'check started nothing');
	});
});
