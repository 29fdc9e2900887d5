// GET /metrics: the runtime's figures as Prometheus text on the Unix socket
// after real calls (count, errors, latency summary, memory, sessions), no
// secret in it, refused over TCP; and `mcpvisor top` off a terminal: one
// table (or --json) and exit, exit 3 without a runtime.
import test from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';

import { connect, demo, makeHome, runCli, withRuntime } from './lib.mjs';

// GET path on the runtime's Unix socket: {status, type, body}.
function socketGet(socketPath, path, method = 'GET') {
	return new Promise((resolve, reject) => {
		const req = http.request({ socketPath, path, method }, (res) => {
			let body = '';
			res.setEncoding('utf8');
			res.on('data', (d) => (body += d));
			res.on('end', () =>
				resolve({ status: res.statusCode, type: res.headers['content-type'], body }),
			);
		});
		req.on('error', reject);
		req.end();
	});
}

// The value of the sample whose line starts with prefix (name{labels}).
function sample(text, prefix) {
	const line = text.split('\n').find((l) => l.startsWith(prefix + ' '));
	assert.ok(line, `no sample ${prefix} in:\n${text}`);
	return Number(line.slice(prefix.length + 1));
}

const SECRET = 'sekret-VALUE-42';

test('metrics: Prometheus text on the Unix socket after real calls; refused over TCP; no secrets', {
	timeout: 60_000,
}, async (t) => {
	const servers = {
		demo: demo(['--die-in-call', 'pid'], { env: { API_KEY: '${E2E_SECRET}' } }),
		notes: demo([], { scope: 'session' }),
		// A name the config refuses: skipped, listed with its error,
		// its label escaped.
		'odd"name': demo(),
		remote: {
			url: `https://127.0.0.1:1/mcp?token=${SECRET}`,
			headers: { Authorization: 'Bearer ${E2E_SECRET}' },
			scope: 'app',
		},
	};
	await withRuntime(t, servers, { env: { E2E_SECRET: SECRET } }, async (rt) => {
		const c = await connect(rt);
		for (let i = 0; i < 3; i++)
			await c.call('demo__echo', { text: `hi ${i}` });
		// The server dies in this call: an error, and the next call
		// starts it again (a restart).
		const lost = await c.request('tools/call', { name: 'demo__pid', arguments: {} });
		assert.ok(lost.error, JSON.stringify(lost));
		await c.call('demo__echo', { text: 'again' });
		await c.call('notes__echo', { text: 'x' });

		const r = await socketGet(rt.socket, '/metrics');
		assert.equal(r.status, 200, r.body);
		assert.equal(r.type, 'text/plain; version=0.0.4; charset=utf-8');
		const m = r.body;
		assert.match(m, /^# HELP mcpvisor_server_calls_total /m);
		assert.match(m, /^# TYPE mcpvisor_server_calls_total counter$/m);
		assert.match(m, /^# TYPE mcpvisor_server_call_duration_seconds summary$/m);
		assert.equal(sample(m, 'mcpvisor_server_calls_total{server="demo"}'), 5);
		assert.equal(sample(m, 'mcpvisor_server_call_errors_total{server="demo"}'), 1);
		assert.equal(sample(m, 'mcpvisor_server_restarts_total{server="demo"}'), 1);
		assert.equal(sample(m, 'mcpvisor_server_calls_total{server="notes"}'), 1);
		assert.match(m, /^mcpvisor_server_info\{server="odd\\"name",scope="app",state="error"\} 1$/m);
		assert.equal(sample(m, 'mcpvisor_server_calls_total{server="remote"}'), 0);
		assert.equal(sample(m, 'mcpvisor_server_call_duration_seconds_count{server="demo"}'), 5);
		const p50 = sample(m, 'mcpvisor_server_call_duration_seconds{server="demo",quantile="0.5"}');
		const p99 = sample(m, 'mcpvisor_server_call_duration_seconds{server="demo",quantile="0.99"}');
		const sum = sample(m, 'mcpvisor_server_call_duration_seconds_sum{server="demo"}');
		assert.ok(p50 > 0 && p50 < 5 && p99 >= p50 && sum >= p50, `p50 ${p50} p99 ${p99} sum ${sum}`);
		assert.ok(Number.isNaN(sample(m, 'mcpvisor_server_call_duration_seconds{server="remote",quantile="0.5"}')));
		assert.ok(sample(m, 'mcpvisor_server_resident_memory_bytes{server="demo"}') > 100_000, 'its process');
		assert.equal(sample(m, 'mcpvisor_server_resident_memory_bytes{server="remote"}'), 0);
		assert.ok(sample(m, 'mcpvisor_resident_memory_bytes') > 1_000_000);
		assert.equal(sample(m, 'mcpvisor_sessions'), 1);
		assert.ok(sample(m, 'mcpvisor_connections') >= 1);
		assert.match(m, /^mcpvisor_server_info\{server="demo",scope="app",state="idle"\} 1$/m);
		assert.match(m, /^mcpvisor_server_info\{server="notes",scope="session",state="idle"\} 1$/m);
		assert.ok(!m.includes(SECRET), 'no secret in the metrics');
		assert.ok(!m.includes('127.0.0.1:1'), 'no urls in the metrics');

		const j = await socketGet(rt.socket, '/metrics?format=json');
		assert.equal(j.status, 200);
		const fig = JSON.parse(j.body);
		const d = fig.servers.find((s) => s.name === 'demo');
		assert.equal(d.calls, 5);
		assert.equal(d.instances, 1);
		assert.equal(fig.runtime.pid, rt.info.pid);
		assert.ok(!j.body.includes(SECRET));

		const post = await socketGet(rt.socket, '/metrics', 'POST');
		assert.equal(post.status, 405);

		// TCP is the public side: no figures there.
		const tcp = await fetch(`http://127.0.0.1:${rt.port}/metrics`);
		assert.equal(tcp.status, 403);
		const body = await tcp.text();
		assert.match(body, /metrics need the Unix socket/);
		assert.ok(!body.includes('mcpvisor_'));
		await c.close();
	});
});

test('top off a terminal: one table and exit 0; --json; exit 3 without a runtime', {
	timeout: 60_000,
}, async (t) => {
	await withRuntime(t, { demo: demo(), notes: demo() }, async (rt) => {
		const c = await connect(rt);
		await c.call('demo__echo', { text: 'hi' });
		await c.close();
		const r = await rt.cli(['top']);
		assert.equal(r.code, 0, r.stderr);
		const lines = r.stdout.trimEnd().split('\n');
		assert.match(lines[0], new RegExp(`^runtime pid ${rt.info.pid}  rss \\d`));
		assert.match(lines[1], /^SERVER\s+STATE\s+SCOPE\s+INST\s+SESS\s+INFL\s+CALLS\s+CALLS\/S\s+P50 ms\s+P99 ms\s+ERRORS\s+RESTARTS\s+MEM$/);
		assert.match(lines[2], /^demo\s+idle\s+app\s+1\s+0\s+0\s+1\s+\d+\.\d\s+\d+\.\d+\s+\d+\.\d+\s+0\s+0\s+\d+\.\dM$/);
		assert.match(lines[3], /^notes\s+not running\s+app\s+0\s+0\s+0\s+0\s+0\.0\s+-\s+-\s+0\s+0\s+0B$/);
		assert.equal(lines.length, 4);
		assert.ok(!r.stdout.includes('\x1b'), 'no escape sequences off a terminal');
		const j = await rt.cli(['top', '--json']);
		assert.equal(j.code, 0, j.stderr);
		assert.equal(JSON.parse(j.stdout).servers[0].calls, 1);
	});
	const empty = await makeHome();
	const none = await runCli(['top'], { home: empty });
	assert.equal(none.code, 3, none.stderr);
	assert.match(none.stderr, /no runtime is running/);
});
