// Two servers whose names collide as clients see them (prefix "a__b" with
// tool "c", prefix "a" with tool "b__c": both "a__b__c"): the runtime lists
// the name for neither and refuses a call of it with an error that names
// both servers, calling neither; every other name of theirs works; `check`
// with the runtime running names the collision (issue 17).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import { connect, runCli, scratchDir, withRuntime } from './lib.mjs';

// A stdio MCP server offering the tools named in argv[3] (comma-separated)
// that answers a call with "LABEL:NAME" and appends that line to argv[4].
const SERVER = `
const fs = require('node:fs');
const [label, names, log] = process.argv.slice(2);
const rl = require('node:readline').createInterface({ input: process.stdin });
rl.on('close', () => process.exit(0));
rl.on('line', (line) => {
	const m = JSON.parse(line);
	if (m.id === undefined)
		return;
	let result;
	if (m.method === 'initialize')
		result = { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
			serverInfo: { name: label, version: '1' } };
	else if (m.method === 'tools/list')
		result = { tools: names.split(',').map((name) => ({ name, inputSchema: { type: 'object' } })) };
	else if (m.method === 'tools/call') {
		fs.appendFileSync(log, label + ':' + m.params.name + '\\n');
		result = { content: [{ type: 'text', text: label + ':' + m.params.name }] };
	} else if (m.method === 'ping')
		result = {};
	const reply = result ? { jsonrpc: '2.0', id: m.id, result }
		: { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no ' + m.method } };
	process.stdout.write(JSON.stringify(reply) + '\\n');
});
`;

async function servers(t) {
	const dir = await scratchDir(t);
	const script = path.join(dir, 'server.cjs');
	await fsp.writeFile(script, SERVER);
	const log = path.join(dir, 'calls.log');
	const entry = (label, names, prefix) => ({
		command: process.execPath,
		args: [script, label, names, log],
		prefix,
		scope: 'app',
	});
	return {
		log,
		calls: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean) : []),
		config: { one: entry('one', 'c,d', 'a__b'), two: entry('two', 'b__c,e', 'a') },
	};
}

test('names: a name two servers give is listed for neither and its call is refused, naming both', {
	timeout: 30_000,
}, async (t) => {
	const s = await servers(t);
	await withRuntime(t, s.config, async (rt) => {
		const c = await connect(rt);
		const names = (await c.listAll()).map((x) => x.name).sort();
		assert.deepEqual(names, ['a__b__d', 'a__e'], 'the colliding name is in no list');
		for (let round = 0; round < 2; round++) {
			// Twice: the second call finds both servers' lists known
			// (the quick path of a call by name).
			const r = await c.request('tools/call', { name: 'a__b__c', arguments: {} });
			assert.ok(r.error, `refused: ${JSON.stringify(r)}`);
			assert.match(r.error.message,
				/^The tool name "a__b__c" is given by server "one" \(its tool "c", prefix "a__b"\) and server "two" \(its tool "b__c", prefix "a"\): mcpvisor lists and calls neither; give one of them another "prefix"$/,
				r.error.message);
		}
		assert.deepEqual((await c.call('a__b__d')).content[0].text, 'one:d');
		assert.deepEqual((await c.call('a__e')).content[0].text, 'two:e');
		// A new session, both lists known from the start.
		const c2 = await connect(rt);
		const r = await c2.request('tools/call', { name: 'a__b__c', arguments: {} });
		assert.match(r.error?.message ?? '', /is given by server "one"/, JSON.stringify(r));
		assert.deepEqual(s.calls(), ['one:d', 'two:e'], 'the colliding name reached no server');
		await c.close();
		await c2.close();

		// check, with the runtime of this config running, names it.
		const text = await runCli(['check', rt.configPath], { home: rt.home });
		assert.equal(text.code, 0, text.stderr);
		assert.match(text.stderr,
			/^warning: the tool name "a__b__c" is given by server "one" .* and server "two" .*another "prefix"$/m,
			text.stderr);
		const json = await runCli(['check', rt.configPath, '--json'], { home: rt.home });
		assert.equal(json.code, 0, json.stderr);
		const out = JSON.parse(json.stdout);
		assert.deepEqual(out.collisions.map((x) => [x.name, x.list, x.servers]),
			[['a__b__c', 'tools', ['one', 'two']]]);
	});
});

// Session-scoped servers, the one with prefix "a" first: a second session
// lists both from the tool cache without starting them, then starts only
// the other by a call; its name that "a" gives too (known only from the
// cache) is refused all the same.
test('names: a collision with a server known only from the tool cache is refused too', {
	timeout: 30_000,
}, async (t) => {
	const s = await servers(t);
	const config = {
		two: { ...s.config.two, scope: 'session' },
		one: { ...s.config.one, scope: 'session' },
	};
	await withRuntime(t, config, async (rt) => {
		const first = await connect(rt);
		assert.deepEqual((await first.listAll()).map((x) => x.name).sort(), ['a__b__d', 'a__e']);
		await first.close();
		const c = await connect(rt);
		assert.deepEqual((await c.listAll()).map((x) => x.name).sort(), ['a__b__d', 'a__e']);
		assert.equal((await c.call('a__b__d')).content[0].text, 'one:d');
		const r = await c.request('tools/call', { name: 'a__b__c', arguments: {} });
		assert.match(r.error?.message ?? '', /is given by server "two" .* and server "one"/, JSON.stringify(r));
		assert.deepEqual(s.calls(), ['one:d'], 'the colliding name reached no server');
		await c.close();
	});
});
