// `mcpvisor setup HOST` on copies of each host's config file in its
// documented shape and place (tests/e2e/fixtures/hosts/), under a test
// HOME: the dry run's diff (of the bytes on disk) changes nothing, setup
// moves the servers and writes backups, a name clash is kept (the same
// server but for "type": "stdio" is none), secrets never printed, the
// config is 0600, a JSONC file (comments, trailing commas) and a plain one
// laid out by hand keep every byte outside the moved entries, an unset
// ${env:X} stays empty rather than an error, --undo restores
// byte-identical files, a second run is a no-op, and the relay entry setup
// writes really serves the moved servers to a host (the official SDK's
// stdio client).
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { DEMO, MCPVISOR, REPO, demo, makeHome, runCli, scratchDir, withRuntime } from './lib.mjs';
import { SAN_ENV, assert, demoPid, echo, withRelayHome } from './relay-lib.mjs';

const FIXTURES = path.join(REPO, 'tests/e2e/fixtures/hosts');

// Where each host keeps its file under HOME (Linux), as documented.
const PLACES = {
	'claude-desktop': '.config/Claude/claude_desktop_config.json',
	'claude-code': '.claude.json',
	cursor: '.cursor/mcp.json',
	vscode: '.config/Code/User/mcp.json',
};

// Every secret value the fixtures hold: none may ever be printed.
const SECRET = /FIXTURESECRET|me@example\.com/;

const sha = (file) =>
	fs.existsSync(file)
		? crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex')
		: null;

// A test HOME with host's fixture at its documented place (the demo
// server's path filled in), and a mcpvisor home. Returns {home, mh, file,
// env, run(args)}.
async function hostHome(t, host, { place = PLACES[host] } = {}) {
	const home = await scratchDir(t, 'mcpvisor-setup-home-');
	const mh = await scratchDir(t, 'mcpvisor-setup-mh-');
	const file = path.join(home, place);
	await fsp.mkdir(path.dirname(file), { recursive: true });
	const text = fs
		.readFileSync(path.join(FIXTURES, `${host}.json`), 'utf8')
		.replaceAll('@DEMO@', DEMO);
	await fsp.writeFile(file, text, { mode: 0o644 });
	const env = { HOME: home, XDG_CONFIG_HOME: '', MCPVISOR_HOME: '' };
	const run = (args) => runCli(['setup', host, ...args], { home: mh, env });
	return { home, mh, file, env, run, config: path.join(mh, 'mcp.json') };
}

const readJson = (f) => JSON.parse(fs.readFileSync(f, 'utf8'));

function noSecrets(r) {
	assert.doesNotMatch(r.stdout, SECRET, `a secret in stdout:\n${r.stdout}`);
	assert.doesNotMatch(r.stderr, SECRET, `a secret in stderr:\n${r.stderr}`);
}

for (const host of Object.keys(PLACES)) {
	test(`setup ${host} --dry-run: both diffs, secrets masked, nothing changed`, async (t) => {
		const h = await hostHome(t, host);
		const before = sha(h.file);
		const r = await h.run(['--dry-run']);
		assert.equal(r.code, 0, r.stderr);
		noSecrets(r);
		assert.match(r.stdout, new RegExp(`--- a${h.config}\\n\\+\\+\\+ b${h.config}`));
		assert.match(r.stdout, new RegExp(`--- a${h.file}\\n\\+\\+\\+ b${h.file}`));
		assert.match(r.stdout, /^\+\s+"mcpvisor": \{$/m, 'the relay entry is added');
		assert.match(r.stdout, /\(dry run: nothing changed\)/);
		assert.equal(sha(h.file), before, 'the host file is untouched');
		assert.equal(fs.existsSync(h.config), false, 'no mcpvisor config written');
		assert.equal(fs.existsSync(path.join(h.mh, 'state')), false, 'no backup written');
	});
}

test('setup: the macOS place of VS Code found under HOME; the servers key and inputs kept', async (t) => {
	const h = await hostHome(t, 'vscode', {
		place: 'Library/Application Support/Code/User/mcp.json',
	});
	const orig = readJson(h.file);
	const r = await h.run([]);
	assert.equal(r.code, 0, r.stderr);
	noSecrets(r);
	const after = readJson(h.file);
	assert.deepEqual(after.inputs, orig.inputs);
	assert.deepEqual(Object.keys(after.servers), ['perplexity', 'mcpvisor']);
	assert.equal(after.servers.mcpvisor.type, 'stdio');
	assert.deepEqual(after.servers.mcpvisor.args, ['relay', '--home', h.mh]);
	assert.match(r.stdout, /perplexity.*kept.*\$\{input:perplexity-key\}/);
	const mine = readJson(h.config).mcpServers;
	assert.deepEqual(Object.keys(mine), ['github', 'fetch', 'legacy']);
	assert.deepEqual(mine.legacy, orig.servers.legacy, 'the header moves as it is');
	// Tabs, as VS Code writes the file.
	assert.match(fs.readFileSync(h.file, 'utf8'), /^\t"inputs"/m);
});

test('setup claude-code: moves, keeps a clash and what it cannot represent, backups, 0600', async (t) => {
	const h = await hostHome(t, 'claude-code');
	// mcpvisor's config already has another "asana", and a server of its own.
	const mineBefore = JSON.stringify(
		{
			idleTimeout: '5m',
			mcpServers: {
				asana: { url: 'https://example.invalid/other' },
				own: { command: DEMO },
			},
		},
		null,
		2,
	);
	await fsp.writeFile(h.config, mineBefore, { mode: 0o644 });
	const hostBefore = fs.readFileSync(h.file);
	const orig = readJson(h.file);
	const r = await h.run([]);
	assert.equal(r.code, 0, r.stderr);
	noSecrets(r);
	assert.match(r.stdout, /asana\s+kept in .*name clash/);
	assert.match(r.stdout, /\/home\/me\/app: playwright kept/);
	assert.match(r.stdout, /restart Claude Code/);

	const mine = readJson(h.config);
	assert.equal(mine.idleTimeout, '5m');
	assert.deepEqual(Object.keys(mine.mcpServers), ['asana', 'own', 'sentry', 'airtable']);
	assert.deepEqual(mine.mcpServers.asana, { url: 'https://example.invalid/other' }, 'never overwritten');
	assert.deepEqual(mine.mcpServers.sentry, orig.mcpServers.sentry, 'headers move as they are');
	assert.deepEqual(mine.mcpServers.airtable, orig.mcpServers.airtable, 'env moves as it is');
	assert.equal(fs.statSync(h.config).mode & 0o777, 0o600);

	const after = readJson(h.file);
	assert.deepEqual(Object.keys(after), Object.keys(orig), 'every key kept, in order');
	for (const k of ['numStartups', 'theme', 'projects', 'oauthAccount'])
		assert.deepEqual(after[k], orig[k], k);
	assert.deepEqual(Object.keys(after.mcpServers), ['mcpvisor', 'asana']);
	assert.equal(after.mcpServers.mcpvisor.type, 'stdio');
	assert.equal(fs.statSync(h.file).mode & 0o777, 0o644, 'the host file keeps its mode');

	// The backup: both files' bytes as they were, private.
	const root = path.join(h.mh, 'state', 'setup-backups');
	const runs = fs.readdirSync(root);
	assert.equal(runs.length, 1);
	assert.match(runs[0], /^claude-code-\d{8}T\d{6}Z$/);
	const dir = path.join(root, runs[0]);
	assert.equal(fs.statSync(dir).mode & 0o777, 0o700);
	const man = readJson(path.join(dir, 'manifest.json'));
	const byPath = Object.fromEntries(man.files.map((f) => [f.path, f]));
	assert.deepEqual(fs.readFileSync(path.join(dir, byPath[h.file].backup)), hostBefore);
	assert.equal(fs.readFileSync(path.join(dir, byPath[h.config].backup), 'utf8'), mineBefore);
	for (const f of fs.readdirSync(dir))
		assert.equal(fs.statSync(path.join(dir, f)).mode & 0o777, 0o600, f);
});

test('setup cursor: twice is a no-op; --undo restores byte-identical files, refuses over later edits', async (t) => {
	const h = await hostHome(t, 'cursor');
	const hostBefore = fs.readFileSync(h.file);
	const r1 = await h.run([]);
	assert.equal(r1.code, 0, r1.stderr);
	noSecrets(r1);
	assert.match(r1.stdout, /local-script\s+kept.*relative path/);
	assert.match(r1.stdout, /with-env-file\s+kept.*envFile/);
	// Cursor's ${env:X} is empty when X is not set: so is mcpvisor's
	// ${X:-}, and setup says so.
	assert.equal(readJson(h.config).mcpServers['web-search'].env.SEARCH_API_KEY, '${SEARCH_API_KEY:-}');
	assert.match(r1.stdout, /\$\{env:SEARCH_API_KEY\} is written \$\{SEARCH_API_KEY:-\}: empty when not set, as Cursor has it/);
	const mid = [sha(h.file), sha(h.config)];

	const r2 = await h.run([]);
	assert.equal(r2.code, 0, r2.stderr);
	assert.match(r2.stdout, /nothing to do: Cursor already goes through mcpvisor/);
	assert.deepEqual([sha(h.file), sha(h.config)], mid, 'the second run wrote nothing');
	assert.equal(fs.readdirSync(path.join(h.mh, 'state', 'setup-backups')).length, 1);

	// An edit after setup: undo refuses unless --force.
	const edited = fs.readFileSync(h.file, 'utf8').replace('"mcpServers"', '"mcpServers" ');
	fs.writeFileSync(h.file, edited);
	const r3 = await h.run(['--undo']);
	assert.equal(r3.code, 1);
	assert.match(r3.stderr, /changed since setup wrote it/);
	assert.equal(fs.readFileSync(h.file, 'utf8'), edited, 'nothing restored');

	const r4 = await h.run(['--undo', '--force']);
	assert.equal(r4.code, 0, r4.stderr);
	noSecrets(r4);
	assert.deepEqual(fs.readFileSync(h.file), hostBefore, 'byte-identical');
	assert.equal(fs.existsSync(h.config), false, 'the config setup created is gone');
	assert.match(r4.stdout, new RegExp(`restored ${h.file} from `));
	assert.match(r4.stdout, new RegExp(`removed ${h.config}`));
	const r5 = await h.run(['--undo']);
	assert.equal(r5.code, 1);
	assert.match(r5.stderr, /no setup of cursor to undo/);
});

test('setup of two hosts, then --undo of the first: only its servers leave mcpvisor\'s config', async (t) => {
	const c = await hostHome(t, 'cursor');
	// VS Code in the same HOME and mcpvisor home.
	const vfile = path.join(c.home, PLACES.vscode);
	await fsp.mkdir(path.dirname(vfile), { recursive: true });
	await fsp.copyFile(path.join(FIXTURES, 'vscode.json'), vfile);
	const cursorBefore = fs.readFileSync(c.file);
	const vs = (args) => runCli(['setup', 'vscode', ...args], { home: c.mh, env: c.env });
	assert.equal((await c.run([])).code, 0);
	assert.equal((await vs([])).code, 0);
	assert.deepEqual(Object.keys(readJson(c.config).mcpServers), ['web-search', 'remote', 'github', 'fetch', 'legacy']);
	const vscodeAfter = sha(vfile);

	const u = await c.run(['--undo']);
	assert.equal(u.code, 0, u.stderr);
	noSecrets(u);
	assert.match(u.stdout, /removed server web-search from /);
	assert.deepEqual(fs.readFileSync(c.file), cursorBefore, 'Cursor\'s file byte-identical');
	assert.deepEqual(Object.keys(readJson(c.config).mcpServers), ['github', 'fetch', 'legacy'], 'VS Code\'s servers stay');
	assert.equal(fs.statSync(c.config).mode & 0o777, 0o600);
	assert.equal(sha(vfile), vscodeAfter, 'VS Code\'s file untouched');
});

test('setup --undo after mcpvisor\'s config was edited: the moved servers are cut from its text, every other byte kept', async (t) => {
	const h = await hostHome(t, 'cursor');
	const mine = `{"mcpServers": {"own":  {"command": "${DEMO}"}},   "idleTimeout": "5m"}`;
	fs.writeFileSync(h.config, mine, { mode: 0o600 });
	assert.equal((await h.run([])).code, 0);
	const added = fs.readFileSync(h.config, 'utf8');
	assert.ok(added.startsWith(`{"mcpServers": {"own":  {"command": "${DEMO}"}, "web-search": {`), added);
	// An edit since: undo takes back only what setup added.
	fs.writeFileSync(h.config, added.replace('"5m"', '"10m"'));
	const u = await h.run(['--undo']);
	assert.equal(u.code, 0, u.stderr);
	assert.match(u.stdout, /removed server web-search from /);
	assert.equal(fs.readFileSync(h.config, 'utf8'), mine.replace('"5m"', '"10m"'));
});

test('setup: bad input changes nothing: unknown host, a file that is not JSON', async (t) => {
	const h = await hostHome(t, 'claude-desktop');
	const r = await runCli(['setup', 'notepad'], { home: h.mh, env: h.env });
	assert.equal(r.code, 2);
	assert.match(r.stderr, /unknown host "notepad" \(known: claude-desktop, claude-code, cursor, vscode\)/);
	fs.writeFileSync(h.file, '{"mcpServers": {"x": {"env": {"K": "FIXTURESECRET9"}}},,}');
	const before = sha(h.file);
	const r2 = await h.run([]);
	assert.equal(r2.code, 2);
	noSecrets(r2);
	assert.match(r2.stderr, /: line 1, column 56: expected a name in quotes or \}; nothing changed/);
	assert.equal(sha(h.file), before);
	assert.equal(fs.existsSync(h.config), false, 'no config written');
	// mcpvisor reads its own config as plain JSON: a comment there is
	// refused, before anything is written.
	fs.writeFileSync(h.file, '{"mcpServers": {"a": {"command": "/bin/true"}}}');
	fs.writeFileSync(h.config, '{\n  // mine\n  "mcpServers": {}\n}\n');
	const r4 = await h.run([]);
	assert.equal(r4.code, 2);
	assert.match(r4.stderr, new RegExp(`${h.config}: line 2, column 3: a comment, which plain JSON does not allow; nothing changed`));
	fs.rmSync(h.config);
	// mcpvisor's own config named as the host's file.
	fs.writeFileSync(h.config, '{"mcpServers": {"a": {"command": "/bin/true"}}}');
	const mineBefore = sha(h.config);
	const r3 = await h.run(['--file', h.config]);
	assert.equal(r3.code, 2);
	assert.match(r3.stderr, /is mcpvisor's own config/);
	assert.equal(sha(h.config), mineBefore);
});

// mcpvisor's config with a server VS Code also has, but without the
// "type": "stdio" VS Code requires: the same server.
const FETCH_MINE = '{\n  "mcpServers": {\n    "fetch": {\n      "command": "uvx",\n      "args": ["mcp-server-fetch"]\n    }\n  }\n}\n';

// vscode-jsonc.setup.json: the JSONC fixture after setup, the relay's
// command and home filled in.
function jsoncAfter(mh) {
	return fs
		.readFileSync(path.join(FIXTURES, 'vscode-jsonc.setup.json'), 'utf8')
		.replaceAll('@MCPVISOR@', fs.realpathSync(MCPVISOR))
		.replaceAll('@MH@', mh);
}

test('setup vscode on a JSONC file (comments, trailing commas): every byte outside the moved entries kept; undo restores both byte for byte', async (t) => {
	const h = await hostHome(t, 'vscode');
	const text = fs
		.readFileSync(path.join(FIXTURES, 'vscode-jsonc.json'), 'utf8')
		.replaceAll('@DEMO@', DEMO);
	fs.writeFileSync(h.file, text);
	fs.writeFileSync(h.config, FETCH_MINE, { mode: 0o600 });
	const r = await runCli(['setup', 'vscode'], { home: h.mh, env: { ...h.env, DEBUG: undefined } });
	assert.equal(r.code, 0, r.stderr);
	noSecrets(r);
	assert.match(r.stdout, /perplexity\s+kept .*\$\{input:perplexity-key\}/);
	assert.match(r.stdout, /debug\s+moves to/);
	assert.match(r.stdout, /\$\{env:DEBUG\} is written \$\{DEBUG:-\}: empty when not set, as VS Code has it/);
	assert.match(r.stdout, /fetch\s+already in .* \(the same server\): removed from VS Code/);
	assert.doesNotMatch(r.stdout, /clash/);
	assert.equal(fs.readFileSync(h.file, 'utf8'), jsoncAfter(h.mh), 'the host file: the moved entries out, the relay in, nothing else');

	// mcpvisor's config: its own bytes, then the moved servers.
	const mine = fs.readFileSync(h.config, 'utf8');
	assert.ok(mine.startsWith(FETCH_MINE.slice(0, FETCH_MINE.indexOf(']') + 2)), mine);
	const servers = readJson(h.config).mcpServers;
	assert.deepEqual(Object.keys(servers), ['fetch', 'memory', 'debug', 'github']);
	assert.deepEqual(servers.fetch, { command: 'uvx', args: ['mcp-server-fetch'] }, 'never overwritten');
	assert.equal(servers.debug.env.DEBUG, '${DEBUG:-}');

	// Where VS Code gives an unset DEBUG as empty, so does mcpvisor now:
	// the server passes check and starts.
	const c = await runCli(['check'], { home: h.mh, env: { DEBUG: undefined } });
	assert.equal(c.code, 0, c.stdout + c.stderr);
	assert.doesNotMatch(c.stdout + c.stderr, /is not set/);
	// And a host that runs the relay entry gets both servers' tools.
	await withRelayHome(t, async () => h.mh, async (ctx) => {
		const host = await hostFromEntry({ ...jsoncRelay(h.file), env: { DEBUG: undefined } }, h.home);
		ctx.hosts.push(host);
		const { tools } = await host.client.listTools();
		const names = tools.map((x) => x.name);
		assert.ok(names.includes('debug__echo') && names.includes('memory__echo'), `tools: ${names}`);

		const u = await h.run(['--undo']);
		assert.equal(u.code, 0, u.stderr);
		assert.equal(fs.readFileSync(h.file, 'utf8'), text, 'the host file byte for byte');
		assert.equal(fs.readFileSync(h.config, 'utf8'), FETCH_MINE, "mcpvisor's config byte for byte");
	});
});

test('setup vscode: a server mcpvisor\'s config has but for "type": "stdio" is the same server, not a name clash', async (t) => {
	const h = await hostHome(t, 'vscode');
	fs.writeFileSync(h.config, FETCH_MINE, { mode: 0o600 });
	const r = await h.run([]);
	assert.equal(r.code, 0, r.stderr);
	assert.match(r.stdout, /fetch\s+already in .* \(the same server\): removed from VS Code/);
	assert.doesNotMatch(r.stdout, /clash/);
	assert.deepEqual(Object.keys(readJson(h.file).servers), ['perplexity', 'mcpvisor']);
	assert.deepEqual(readJson(h.config).mcpServers.fetch, { command: 'uvx', args: ['mcp-server-fetch'] });
});

test('setup vscode: ${env:DEBUG} that is not set stays empty, as in VS Code: the server passes check and starts', async (t) => {
	const h = await hostHome(t, 'vscode');
	fs.writeFileSync(
		h.file,
		JSON.stringify(
			{ servers: { debug: { type: 'stdio', command: DEMO, args: ['--name', 'debug'], env: { DEBUG: '${env:DEBUG}' } } } },
			null,
			'\t',
		),
	);
	const r = await runCli(['setup', 'vscode'], { home: h.mh, env: { ...h.env, DEBUG: undefined } });
	assert.equal(r.code, 0, r.stderr);
	assert.match(r.stdout, /\$\{env:DEBUG\} is written \$\{DEBUG:-\}: empty when not set, as VS Code has it/);
	const c = await runCli(['check'], { home: h.mh, env: { DEBUG: undefined } });
	assert.equal(c.code, 0, c.stdout + c.stderr);
	assert.doesNotMatch(c.stdout + c.stderr, /is not set/);
	await withRelayHome(t, async () => h.mh, async (ctx) => {
		const host = await hostFromEntry({ ...readJson(h.file).servers.mcpvisor, env: { DEBUG: undefined } }, h.home);
		ctx.hosts.push(host);
		const { tools } = await host.client.listTools();
		assert.ok(tools.some((x) => x.name === 'debug__echo'), `tools: ${tools.map((x) => x.name)}`);
	});
});

// The relay entry in a JSONC host file, read by dropping its comments
// and trailing commas as VS Code does.
function jsoncRelay(file) {
	const text = fs.readFileSync(file, 'utf8');
	const m = text.match(/"mcpvisor": (\{[^}]*\})/);
	assert.ok(m, text);
	return JSON.parse(m[1]);
}

test('setup vscode --dry-run on a JSONC file: the diff is of the bytes on disk', async (t) => {
	const h = await hostHome(t, 'vscode');
	const text = fs
		.readFileSync(path.join(FIXTURES, 'vscode-jsonc.json'), 'utf8')
		.replaceAll('@DEMO@', DEMO);
	fs.writeFileSync(h.file, text);
	fs.writeFileSync(h.config, FETCH_MINE);
	const r = await h.run(['--dry-run']);
	assert.equal(r.code, 0, r.stderr);
	noSecrets(r);
	assert.doesNotMatch(r.stdout, /layout is rewritten/);
	const diff = r.stdout.slice(r.stdout.indexOf(`--- a${h.file}`));
	const removed = diff.split('\n').filter((l) => /^-[^-]/.test(l)).map((l) => l.slice(1));
	const added = diff.split('\n').filter((l) => /^\+[^+]/.test(l)).map((l) => l.slice(1));
	// Removed: the moved entries' lines exactly as the file has them
	// (trailing commas and all), secrets masked: a header's value is;
	// a reference to a variable named DEBUG is not a secret.
	assert.deepEqual(removed, [
		'\t\t"memory": {',
		`\t\t\t"command": "${DEMO}",`,
		'\t\t\t"args": ["--name", "memory",],',
		'\t\t"debug": {',
		'\t\t\t"type": "stdio",',
		`\t\t\t"command": "${DEMO}",`,
		'\t\t\t"args": ["--name", "debug"],',
		'\t\t\t"env": {"DEBUG": "${env:DEBUG}"},',
		'\t\t}, // DEBUG is set only while I chase a bug',
		'\t\t"github": {',
		'\t\t\t"type": "http",',
		'\t\t\t"url": "https://api.githubcopilot.com/mcp/",',
		'\t\t\t"headers": {"Authorization": "***"},',
		'\t\t},',
		'\t\t"fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]},',
	]);
	// Added: the relay where memory was, and the comment that stood on
	// a moved entry's line, on its own.
	assert.deepEqual(added, [
		'\t\t"mcpvisor": {',
		`\t\t\t"command": "${fs.realpathSync(MCPVISOR)}",`,
		`\t\t\t"args": ["relay", "--home", "${h.mh}"]`,
		'\t\t// DEBUG is set only while I chase a bug',
	]);
	// The other comments are context, untouched.
	assert.match(diff, /^ \t\t\/\/ Notes kept across chats\.$/m);
	assert.equal(fs.readFileSync(h.file, 'utf8'), text, 'nothing changed');
});

test('setup claude-desktop on plain JSON laid out by hand: its spacing, escapes and missing final newline kept', async (t) => {
	const h = await hostHome(t, 'claude-desktop');
	const head = '{"globalShortcut":"Ctrl+Space",   "note": "caf\\u00e9 \\/ tea",\n    "mcpServers": {\n';
	const kept = '        "my notes":  { "command": "npx", "args": [ "-y",  "notes-mcp" ] }';
	const tail = '\n    }}';
	const text = `${head}        "demo":  { "command": "${DEMO}",  "args": [ "--name",  "demo" ] },\n${kept}${tail}`;
	fs.writeFileSync(h.file, text);
	const r = await h.run([]);
	assert.equal(r.code, 0, r.stderr);
	const relay = `        "mcpvisor": {\n            "command": "${fs.realpathSync(MCPVISOR)}",\n            "args": ["relay", "--home", "${h.mh}"]\n        },\n`;
	assert.equal(fs.readFileSync(h.file, 'utf8'), head + relay + kept + tail);
	const u = await h.run(['--undo']);
	assert.equal(u.code, 0, u.stderr);
	assert.equal(fs.readFileSync(h.file, 'utf8'), text);
});

test('setup with the runtime running: it reloads, and serves the moved server at once', { timeout: 20_000 }, async (t) => {
	const home = await scratchDir(t, 'mcpvisor-setup-home-');
	const file = path.join(home, PLACES.cursor);
	await fsp.mkdir(path.dirname(file), { recursive: true });
	await fsp.writeFile(
		file,
		JSON.stringify({ mcpServers: { moved: { command: DEMO, args: ['--name', 'moved'] } } }, null, 2),
	);
	await withRuntime(t, { own: demo(['--name', 'own']) }, async (rt) => {
		const env = { HOME: home, XDG_CONFIG_HOME: '', MCPVISOR_HOME: '' };
		const r = await runCli(['setup', 'cursor'], { home: rt.home, env });
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stdout, /the runtime of this home runs \(pid \d+\): reloading its config/);
		const tools = await runCli(['tools', '--json'], { home: rt.home });
		assert.equal(tools.code, 0, tools.stderr);
		assert.match(tools.stdout, /"moved__echo"/);
		assert.match(tools.stdout, /"own__echo"/);
		// Undo reloads too: the moved server is gone again.
		const u = await runCli(['setup', 'cursor', '--undo'], { home: rt.home, env });
		assert.equal(u.code, 0, u.stderr);
		const after = await runCli(['tools', '--json'], { home: rt.home });
		assert.doesNotMatch(after.stdout, /"moved__echo"/);
		assert.match(after.stdout, /"own__echo"/);
	});
});

test('setup --file: another path in the host shape; a missing file is created with the relay', async (t) => {
	const h = await hostHome(t, 'cursor');
	const other = path.join(h.home, 'project', '.cursor', 'mcp.json');
	const r = await h.run(['--file', other]);
	assert.equal(r.code, 0, r.stderr);
	assert.deepEqual(Object.keys(readJson(other).mcpServers), ['mcpvisor']);
	assert.equal(fs.statSync(other).mode & 0o777, 0o600);
	const u = await h.run(['--undo']);
	assert.equal(u.code, 0, u.stderr);
	assert.equal(fs.existsSync(other), false, 'undo removes the file setup created');
});

test('setup: a host file that is a symlink (dotfiles) is written at its target; a dangling one is refused', async (t) => {
	const h = await hostHome(t, 'cursor');
	const target = path.join(h.home, 'dotfiles', 'cursor-mcp.json');
	await fsp.mkdir(path.dirname(target), { recursive: true });
	await fsp.rename(h.file, target);
	await fsp.symlink('../dotfiles/cursor-mcp.json', h.file);
	const r = await h.run([]);
	assert.equal(r.code, 0, r.stderr);
	assert.ok(fs.lstatSync(h.file).isSymbolicLink(), 'the link stays');
	assert.ok(readJson(target).mcpServers.mcpvisor, 'the target holds the relay');
	await fsp.rm(target);
	const r2 = await h.run([]);
	assert.equal(r2.code, 2);
	assert.match(r2.stderr, /is a symlink to a file that is not there/);
	assert.ok(fs.lstatSync(h.file).isSymbolicLink());
});

test('setup: a symlinked mcpvisor config is written at its target, and so is its undo', async (t) => {
	const h = await hostHome(t, 'cursor');
	const target = path.join(h.home, 'dotfiles', 'mcpvisor.json');
	await fsp.mkdir(path.dirname(target), { recursive: true });
	const mine = JSON.stringify({ mcpServers: { own: { command: DEMO } } }, null, 2);
	await fsp.writeFile(target, mine, { mode: 0o600 });
	await fsp.symlink(target, h.config);
	const r = await h.run([]);
	assert.equal(r.code, 0, r.stderr);
	assert.ok(fs.lstatSync(h.config).isSymbolicLink(), 'the link stays');
	const servers = Object.keys(readJson(target).mcpServers);
	assert.ok(servers.includes('own') && servers.includes('web-search'),
		`the target holds its own and the moved servers: ${servers}`);
	const u = await h.run(['--undo']);
	assert.equal(u.code, 0, u.stderr);
	assert.ok(fs.lstatSync(h.config).isSymbolicLink(), 'the link stays after undo');
	assert.equal(fs.readFileSync(target, 'utf8'), mine, 'the target restored');
});

test('setup --undo --file: undoes the latest setup of that file, not of another', async (t) => {
	const h = await hostHome(t, 'cursor');
	const one = path.join(h.home, 'one', '.cursor', 'mcp.json');
	const two = path.join(h.home, 'two', '.cursor', 'mcp.json');
	for (const f of [one, two]) {
		await fsp.mkdir(path.dirname(f), { recursive: true });
		await fsp.writeFile(f, JSON.stringify({
			mcpServers: { [path.basename(path.dirname(path.dirname(f)))]: { command: DEMO } },
		}, null, 2));
	}
	const oneBefore = fs.readFileSync(one);
	assert.equal((await h.run(['--file', one])).code, 0);
	assert.equal((await h.run(['--file', two])).code, 0);
	const twoAfter = sha(two);
	// Named by another spelling of the same path.
	const u = await h.run(['--undo', '--file', path.join(h.home, 'two', '..', 'one', '.cursor', 'mcp.json')]);
	assert.equal(u.code, 0, u.stderr);
	assert.deepEqual(fs.readFileSync(one), oneBefore, 'that file restored');
	assert.equal(sha(two), twoAfter, 'the later setup of another file untouched');
	assert.deepEqual(Object.keys(readJson(h.config).mcpServers), ['two'], 'only its servers left');
	const again = await h.run(['--undo', '--file', one]);
	assert.equal(again.code, 1);
	assert.match(again.stderr, /no setup of cursor with .*one\/\.cursor\/mcp\.json to undo/);
	assert.equal((await h.run(['--undo', '--dry-run'])).code, 2, '--dry-run is still refused');
});

// The relay entry as setup wrote it, run the way a host runs it.
async function hostFromEntry(entry, cwd) {
	const transport = new StdioClientTransport({
		command: entry.command,
		args: entry.args,
		env: { ...process.env, ...SAN_ENV, ...(entry.env ?? {}) },
		cwd,
		stderr: 'pipe',
	});
	let err = '';
	transport.stderr.setEncoding('utf8');
	transport.stderr.on('data', (d) => (err = (err + d).slice(-32 * 1024)));
	const client = new Client({ name: 'setup-e2e-host', version: '0.0.0' });
	const host = { client, transport, stderr: () => err, pid: null, proc: null };
	try {
		await client.connect(transport);
	} finally {
		host.proc = transport._process;
		host.pid = transport.pid;
	}
	return host;
}

test('setup claude-desktop: the relay entry it writes serves the moved server', { timeout: 20_000 }, async (t) => {
	const home = await scratchDir(t, 'mcpvisor-setup-home-');
	await withRelayHome(t, () => makeHome('mcpvisor-setup-mh-'), async (ctx) => {
		const file = path.join(home, PLACES['claude-desktop']);
		await fsp.mkdir(path.dirname(file), { recursive: true });
		await fsp.writeFile(
			file,
			fs
				.readFileSync(path.join(FIXTURES, 'claude-desktop.json'), 'utf8')
				.replaceAll('@DEMO@', DEMO),
		);
		const r = await runCli(['setup', 'claude-desktop'], {
			home: ctx.home,
			env: { HOME: home, XDG_CONFIG_HOME: '', MCPVISOR_HOME: '' },
		});
		assert.equal(r.code, 0, r.stderr);
		noSecrets(r);
		const entry = readJson(file).mcpServers.mcpvisor;
		// Claude Desktop does not start commands with the shell's PATH.
		assert.equal(entry.command, MCPVISOR);
		assert.deepEqual(entry.args, ['relay', '--home', ctx.home]);
		const mine = readJson(path.join(ctx.home, 'mcp.json')).mcpServers;
		assert.equal(mine.filesystem.disabled, true, 'disabled moves as disabled');

		const h = await hostFromEntry(entry, home);
		ctx.hosts.push(h);
		const { tools } = await h.client.listTools();
		const names = tools.map((x) => x.name);
		assert.ok(names.includes('demo__echo'), `tools: ${names}`);
		assert.ok(!names.some((n) => n.startsWith('filesystem__')), 'the disabled server never starts');
		await echo(h.client);
		ctx.pids.push(await demoPid(h.client));
	});
});
