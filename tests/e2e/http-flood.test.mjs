// A remote server whose GET stream writes notifications as fast as the
// socket takes them must not freeze the runtime: curl's reads yield to the
// loop every turn, so status and calls of other servers go on.
import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';

import { connect, demo, runCli, withRuntime } from './lib.mjs';

// A minimal Streamable HTTP server (JSON answers) whose GET stream floods.
async function floodServer(t) {
	let flooding = 0;
	const server = http.createServer(async (req, res) => {
		if (req.method === 'GET') {
			res.writeHead(200, { 'content-type': 'text/event-stream' });
			flooding++;
			const note = `data: ${JSON.stringify({
				jsonrpc: '2.0',
				method: 'notifications/message',
				params: { level: 'debug', data: 'x'.repeat(200) },
			})}\n\n`.repeat(64);
			const pump = () => {
				while (!res.destroyed && res.write(note));
				if (!res.destroyed)
					res.once('drain', pump);
			};
			pump();
			return;
		}
		if (req.method === 'DELETE') {
			res.writeHead(200).end();
			return;
		}
		let body = '';
		for await (const c of req)
			body += c;
		const m = JSON.parse(body);
		if (m.id === undefined) {
			res.writeHead(202).end();
			return;
		}
		const result =
			m.method === 'initialize'
				? { protocolVersion: '2025-06-18', capabilities: { tools: {}, logging: {} }, serverInfo: { name: 'flood', version: '1' } }
				: m.method === 'tools/list'
					? { tools: [{ name: 'noop', inputSchema: { type: 'object' } }] }
					: {};
		res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'flood-1' });
		res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }));
	});
	await new Promise((r) => server.listen(0, '127.0.0.1', r));
	t.after(() => {
		server.closeAllConnections();
		return new Promise((r) => server.close(r));
	});
	return { url: `http://127.0.0.1:${server.address().port}/mcp`, flooding: () => flooding };
}

test('a server flooding its GET stream does not freeze status or other servers', {
	timeout: 60_000,
}, async (t) => {
	const fx = await floodServer(t);
	await withRuntime(t, { flood: { url: fx.url, type: 'http', scope: 'app' }, other: demo() }, async (rt) => {
		const c = await connect(rt);
		await c.listAll();
		assert.equal(fx.flooding(), 1, 'the GET stream is open');
		// Let the flood run, then measure what others wait.
		await new Promise((r) => setTimeout(r, 1000));
		let worst = 0;
		for (let i = 0; i < 3; i++) {
			const t0 = performance.now();
			const st = await runCli(['status', '--json'], { home: rt.home });
			worst = Math.max(worst, performance.now() - t0);
			assert.equal(st.code, 0, st.stderr);
			const t1 = performance.now();
			const r = await c.call('other__echo', { text: `o${i}` });
			worst = Math.max(worst, performance.now() - t1);
			assert.equal(r.content[0].text, `o${i}`);
		}
		t.diagnostic(`slowest status or call beside the flood: ${worst.toFixed(0)} ms`);
		assert.ok(worst < 5000, `${worst.toFixed(0)} ms`);
		await c.close();
	});
});
