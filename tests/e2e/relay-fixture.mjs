// A program on a port that is not a working mcpvisor runtime, for the
// relay's tests. `silent`: accepts connections, reads, never answers.
// `auth`: answers every request 401 with WWW-Authenticate: Bearer and the
// body mcpvisor's runtime sends to a client without its API key. Prints
// "listening PORT" once ready, and "signalled SIG" for any signal it
// catches (the relay must never signal a program it did not start);
// "request N" for each HTTP request (auth).
import http from 'node:http';
import net from 'node:net';

const mode = process.argv[2];
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGUSR1', 'SIGUSR2', 'SIGQUIT'])
	process.on(sig, () => {
		process.stdout.write(`signalled ${sig}\n`);
		if (sig === 'SIGTERM')
			process.exit(0);
	});

let server;
if (mode === 'silent') {
	const held = [];
	server = net.createServer((s) => {
		held.push(s);
		s.on('data', () => {});
		s.on('error', () => {});
	});
} else if (mode === 'auth') {
	let n = 0;
	server = http.createServer((req, res) => {
		req.resume();
		req.on('end', () => {
			process.stdout.write(`request ${++n}\n`);
			res.writeHead(401, {
				'Content-Type': 'application/json',
				'WWW-Authenticate': 'Bearer realm="mcpvisor"',
			});
			res.end(
				JSON.stringify({
					jsonrpc: '2.0',
					id: null,
					error: {
						code: -32600,
						message:
							'Unauthorized: this runtime serves other users only with an API key (Authorization: Bearer KEY)',
					},
				}),
			);
		});
	});
} else {
	process.stderr.write('usage: relay-fixture.mjs silent|auth\n');
	process.exit(2);
}
server.listen(0, '127.0.0.1', () =>
	process.stdout.write(`listening ${server.address().port}\n`),
);
