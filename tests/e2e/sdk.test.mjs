// The official TypeScript SDK client against `mcpvisor serve` over
// Streamable HTTP: the demo fixture servers, then the reference servers
// from the npm registry (server-everything, server-filesystem) behind it.
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ListToolsResultSchema } from '@modelcontextprotocol/sdk/types.js';

import { DEMO_TOOLS, demo, nodeServer, withRuntime } from './lib.mjs';

async function sdkConnect(rt) {
	const client = new Client({ name: 'mcpvisor-e2e-sdk', version: '0.0.0' });
	const transport = new StreamableHTTPClientTransport(new URL(rt.url));
	await client.connect(transport);
	return { client, transport };
}

// Ends the session with DELETE (the SDK's close() sends none) and closes.
async function sdkClose({ client, transport }) {
	await transport.terminateSession();
	await client.close();
}

test('SDK client: demo tools, prompt, resources, structured content', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(
		t,
		{ demo: demo(['--name', 'demo']), demo2: demo(['--name', 'demo2']) },
		async (rt) => {
			const c = await sdkConnect(rt);
			const { client } = c;
			assert.ok(client.getServerCapabilities()?.tools, 'tools capability');

			const { tools } = await client.listTools();
			const names = tools.map((t) => t.name);
			assert.deepEqual(names, [
				...DEMO_TOOLS.map((n) => `demo__${n}`),
				...DEMO_TOOLS.map((n) => `demo2__${n}`),
			]);
			const add = tools.find((t) => t.name === 'demo__add');
			assert.deepEqual(add.outputSchema.required, ['sum']);

			const echo = await client.callTool({
				name: 'demo__echo',
				arguments: { text: 'hello through mcpvisor' },
			});
			assert.deepEqual(echo.content, [
				{ type: 'text', text: 'hello through mcpvisor' },
			]);
			assert.ok(!echo.isError);

			// The SDK validates structuredContent against outputSchema.
			const sum = await client.callTool({
				name: 'demo2__add',
				arguments: { a: 2, b: 40 },
			});
			assert.deepEqual(sum.structuredContent, { sum: 42 });
			assert.equal(sum.content[0].text, '42');

			// Calls route by prefix: each reports its own server name.
			const p1 = JSON.parse(
				(await client.callTool({ name: 'demo__pid', arguments: {} }))
					.content[0].text,
			);
			const p2 = JSON.parse(
				(await client.callTool({ name: 'demo2__pid', arguments: {} }))
					.content[0].text,
			);
			rt.track(p1.pid);
			rt.track(p2.pid);
			assert.equal(p1.name, 'demo');
			assert.equal(p2.name, 'demo2');
			assert.notEqual(p1.pid, p2.pid);

			const fail = await client.callTool({
				name: 'demo__fail',
				arguments: {},
			});
			assert.equal(fail.isError, true);

			const { prompts } = await client.listPrompts();
			assert.deepEqual(
				prompts.map((p) => p.name),
				['demo__greeting', 'demo2__greeting'],
			);
			const g = await client.getPrompt({
				name: 'demo2__greeting',
				arguments: { name: 'Ada' },
			});
			assert.equal(g.messages[0].content.text, 'Hello, Ada!');

			const { resources } = await client.listResources();
			assert.ok(
				resources.some((r) => r.uri === 'demo://readme'),
				JSON.stringify(resources),
			);
			const readme = await client.readResource({ uri: 'demo://readme' });
			assert.match(readme.contents[0].text, /"demo" demo server/);

			const { resourceTemplates } = await client.listResourceTemplates();
			assert.ok(resourceTemplates.length >= 1);
			const item = await client.readResource({ uri: 'demo://item/42' });
			assert.equal(item.contents[0].text, 'item 42');

			await assert.rejects(
				client.getPrompt({ name: 'nope__greeting', arguments: {} }),
				/nope__greeting|Unknown|not found/i,
			);

			// The terminal client reaches the same runtime and instances
			// while the SDK session is open.
			const hi = await rt.cli(['call', 'demo__echo', '{"text":"hi"}']);
			assert.equal(hi.code, 0, hi.stderr);
			assert.equal(hi.stdout, 'hi\n');
			const cliPid = await rt.cli(['call', 'demo2__pid']);
			assert.equal(JSON.parse(cliPid.stdout).pid, p2.pid, 'shared instance');
			const st = await rt.status();
			assert.ok(st.sessions >= 1, 'the SDK session is counted');
			await sdkClose(c);
		},
	);
});

test('SDK client: pagination with MCPVISOR_PAGE_SIZE=5 returns every tool once in config order', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(
		t,
		{
			demo: demo(),
			// Pages of its own upstream, and three extra tools.
			paged: demo(['--name', 'paged', '--page-size', '4', '--tools', '3']),
		},
		{ env: { MCPVISOR_PAGE_SIZE: '5' } },
		async (rt) => {
			const c = await sdkConnect(rt);
			const { client } = c;
			const expected = [
				...DEMO_TOOLS.map((n) => `demo__${n}`),
				...DEMO_TOOLS.map((n) => `paged__${n}`),
				'paged__tool_1',
				'paged__tool_2',
				'paged__tool_3',
			];
			const first = await client.listTools();
			assert.equal(first.tools.length, 5, 'first page size');
			assert.ok(first.nextCursor, 'first page has a nextCursor');

			const names = first.tools.map((t) => t.name);
			let cursor = first.nextCursor;
			let pages = 1;
			while (cursor) {
				assert.ok(pages < 50, 'cursor loop does not end');
				// Raw request, so the cursor loop is ours, not the SDK's.
				const page = await client.request(
					{ method: 'tools/list', params: { cursor } },
					ListToolsResultSchema,
				);
				assert.ok(page.tools.length <= 5, 'page over the size');
				names.push(...page.tools.map((t) => t.name));
				cursor = page.nextCursor;
				pages++;
			}
			assert.equal(pages, Math.ceil(expected.length / 5));
			assert.deepEqual(names, expected);
			assert.equal(new Set(names).size, names.length, 'duplicates');

			await assert.rejects(
				client.listTools({ cursor: 'not-a-cursor-we-made' }),
				/-32602|cursor|invalid/i,
			);

			const r = await client.callTool({
				name: 'paged__tool_3',
				arguments: { text: 'x' },
			});
			assert.deepEqual(JSON.parse(r.content[0].text), { text: 'x' });
			await sdkClose(c);
		},
	);
});

test('SDK client: server-everything and server-filesystem from npm behind mcpvisor', {
	timeout: 120_000,
}, async (t) => {
	const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mcpvisor-fs-'));
	const file = path.join(dir, 'hello.txt');
	await fsp.writeFile(file, 'hello from the filesystem server\n');
	try {
		await withRuntime(
			t,
			{
				everything: nodeServer(
					'@modelcontextprotocol/server-everything/dist/index.js',
					['stdio'],
				),
				fs: nodeServer(
					'@modelcontextprotocol/server-filesystem/dist/index.js',
					[dir],
				),
				demo: demo(),
			},
			async (rt) => {
				const c = await sdkConnect(rt);
				const { client } = c;
				const names = [];
				let cursor;
				do {
					const page = await client.listTools(
						cursor ? { cursor } : undefined,
					);
					names.push(...page.tools.map((t) => t.name));
					cursor = page.nextCursor;
				} while (cursor);
				for (const n of [
					'everything__echo',
					'everything__get-sum',
					'fs__list_directory',
					'fs__read_text_file',
					'demo__echo',
				])
					assert.ok(names.includes(n), `${n} missing from ${names}`);
				// Config order: everything's tools, then fs's, then demo's.
				const firstFs = names.findIndex((n) => n.startsWith('fs__'));
				const lastEv = names.findLastIndex((n) =>
					n.startsWith('everything__'),
				);
				const firstDemo = names.indexOf('demo__echo');
				assert.ok(lastEv < firstFs && firstFs < firstDemo, 'order');

				const echo = await client.callTool({
					name: 'everything__echo',
					arguments: { message: 'hi everything' },
				});
				assert.equal(echo.content[0].text, 'Echo: hi everything');

				const ls = await client.callTool({
					name: 'fs__list_directory',
					arguments: { path: dir },
				});
				assert.ok(!ls.isError, JSON.stringify(ls));
				assert.match(ls.content[0].text, /\[FILE\] hello\.txt/);

				const read = await client.callTool({
					name: 'fs__read_text_file',
					arguments: { path: file },
				});
				assert.ok(!read.isError, JSON.stringify(read));
				assert.equal(
					read.content[0].text,
					'hello from the filesystem server\n',
				);

				// A path outside the allowed folder is the server's error,
				// passed through as a tool error.
				const denied = await client.callTool({
					name: 'fs__read_text_file',
					arguments: { path: '/etc/hostname' },
				});
				assert.equal(denied.isError, true);

				const st = await rt.status();
				for (const srv of st.servers) {
					assert.equal(
						srv.instances[0]?.state,
						'running',
						`${srv.name}: ${JSON.stringify(srv.instances)}`,
					);
				}
				await sdkClose(c);
			},
		);
	} finally {
		await fsp.rm(dir, { recursive: true, force: true });
	}
});
