// Status shows what each server is: its transport (stdio, http, sse,
// http-local), its url with every secret masked, in the JSON, the table
// (plain and -v) and the status served over TCP. No HTTP upstream is
// started: the url servers are configured and never used.
import test from 'node:test';
import assert from 'node:assert/strict';

import { connect, demo, withRuntime } from './lib.mjs';

const SECRETS = ['pw-SECRET1', 'KEYSECRET2', 'hdr-SECRET3'];

test('status: the transport and masked url of each server; a stdio instance says stdio', {
	timeout: 60_000,
}, async (t) => {
	const servers = {
		demo: demo(),
		remote: {
			url: 'https://user:pw-SECRET1@127.0.0.1:1/mcp?key=KEYSECRET2&v=2',
			headers: { Authorization: 'Bearer ${E2E_HDR}' },
			scope: 'app',
		},
		plain: { type: 'http', url: 'http://127.0.0.1:1/mcp', scope: 'app' },
		legacy: { type: 'sse', url: 'http://127.0.0.1:1/sse', scope: 'app' },
		local: {
			command: '/bin/false',
			args: ['--port', '{port}'],
			url: 'http://127.0.0.1:{port}/mcp',
			scope: 'app',
		},
	};
	const env = { E2E_HDR: 'hdr-SECRET3' };
	await withRuntime(t, servers, { env }, async (rt) => {
		const c = await connect(rt);
		const r = await c.request('tools/call', { name: 'demo__echo', arguments: { text: 'hi' } });
		assert.ok(r.result, JSON.stringify(r));
		await c.close();

		const st = await rt.status();
		const by = Object.fromEntries(st.servers.map((s) => [s.name, s]));
		assert.equal(by.demo.transport, 'stdio');
		assert.equal(by.demo.url, undefined);
		assert.equal(by.demo.instances[0].transport, 'stdio', 'the instance too');
		assert.equal(by.remote.transport, 'http');
		assert.equal(by.remote.url, 'https://***@127.0.0.1:1/mcp?key=***&v=***');
		assert.equal(by.plain.transport, 'http');
		assert.equal(by.plain.url, 'http://127.0.0.1:1/mcp');
		assert.equal(by.legacy.transport, 'sse');
		assert.equal(by.local.transport, 'http-local');
		assert.equal(by.local.url, 'http://127.0.0.1:{port}/mcp');

		const plain = await rt.cli(['status']);
		assert.equal(plain.code, 0, plain.stderr);
		assert.match(plain.stdout, /^demo\s+idle\s+scope app, \d+ tool\(s\)/m, 'stdio lines as before');
		assert.match(plain.stdout, /^remote\s+not running\s+scope app, http$/m);
		assert.match(plain.stdout, /^plain\s+not running\s+scope app, http$/m);
		assert.match(plain.stdout, /^legacy\s+not running\s+scope app, sse$/m);
		assert.match(plain.stdout, /^local\s+not running\s+scope app, http-local$/m);
		assert.ok(plain.stdout.includes('    url: https://***@127.0.0.1:1/mcp?key=***&v=***\n'), plain.stdout);

		const verbose = await rt.cli(['status', '-v']);
		const json = await rt.cli(['status', '--json']);
		assert.equal(JSON.parse(json.stdout).servers.find((s) => s.name === 'remote').transport, 'http');
		const tcp = await (await fetch(rt.url.replace('/mcp', '/status'))).text();
		for (const text of [JSON.stringify(st), plain.stdout, verbose.stdout, json.stdout, tcp])
			for (const secret of SECRETS)
				assert.ok(!text.includes(secret), `${secret} shown: ${text}`);
	});
});
