// A stdio MCP server for core-outbox.test.mjs: misbehaves in the ways the
// outbox must survive. Flags: --die-on-read (every process exits on
// resources/read), --die-on-read-once (only the first, then answers after
// --late MS), --say TEXT (one stderr line at start), --exit-at-start CODE.
// FX_MARKER names the file that marks "a process already died"; FX_COUNT
// gets one line per start. Tools: echo, big (an answer over 16 MiB, the id
// last or, with {"idFirst":true}, first), garble (an error with id null).
import fs from 'node:fs';
import readline from 'node:readline';

const argv = process.argv.slice(2);
const flag = (f) => argv.includes(f);
const value = (f, d) => {
	const i = argv.indexOf(f);
	return i >= 0 ? argv[i + 1] : d;
};

if (process.env.FX_COUNT)
	fs.appendFileSync(process.env.FX_COUNT, `start ${process.pid}\n`);
if (value('--say'))
	process.stderr.write(value('--say') + '\n');
if (value('--exit-at-start'))
	process.exit(Number(value('--exit-at-start')));

const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const late = Number(value('--late', '1000'));
const tools = ['echo', 'big', 'garble'].map((name) => ({
	name,
	inputSchema: { type: 'object' },
}));

function call(id, name, args) {
	if (name === 'garble') {
		// What a server says to a line it cannot parse.
		send({
			jsonrpc: '2.0',
			id: null,
			error: { code: -32700, message: 'Parse error' },
		});
		return;
	}
	if (name === 'big') {
		const text = 'x'.repeat(17 * 1024 * 1024);
		const result = { content: [{ type: 'text', text }] };
		// The TypeScript SDK writes the envelope last; Python's
		// json.dumps of a dict built in order writes it first.
		const line = args?.idFirst
			? `{"jsonrpc":"2.0","id":${id},"result":${JSON.stringify(result)}}`
			: `{"result":${JSON.stringify(result)},"jsonrpc":"2.0","id":${id}}`;
		process.stdout.write(line + '\n');
		return;
	}
	send({
		jsonrpc: '2.0',
		id,
		result: { content: [{ type: 'text', text: JSON.stringify(args ?? {}) }] },
	});
}

function read(id) {
	const marker = process.env.FX_MARKER;
	if (flag('--die-on-read'))
		process.exit(1);
	if (flag('--die-on-read-once') && marker && !fs.existsSync(marker)) {
		fs.writeFileSync(marker, 'died');
		process.exit(1);
	}
	setTimeout(
		() =>
			send({
				jsonrpc: '2.0',
				id,
				result: { contents: [{ uri: 'fx://a', text: 'late' }] },
			}),
		late,
	);
}

readline.createInterface({ input: process.stdin }).on('line', (line) => {
	const m = JSON.parse(line);
	const { id, method, params } = m;
	if (method === 'initialize')
		send({
			jsonrpc: '2.0',
			id,
			result: {
				protocolVersion: params.protocolVersion,
				capabilities: { tools: {}, resources: {} },
				serverInfo: { name: 'fx', version: '1' },
			},
		});
	else if (method === 'tools/list')
		send({ jsonrpc: '2.0', id, result: { tools } });
	else if (method === 'resources/list')
		send({
			jsonrpc: '2.0',
			id,
			result: { resources: [{ uri: 'fx://a', name: 'a' }] },
		});
	else if (method === 'resources/templates/list')
		send({ jsonrpc: '2.0', id, result: { resourceTemplates: [] } });
	else if (method === 'resources/read')
		read(id);
	else if (method === 'tools/call')
		call(id, params.name, params.arguments);
	else if (id !== undefined)
		send({ jsonrpc: '2.0', id, result: {} });
});
