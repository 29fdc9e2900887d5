// A runtime that has served nothing keeps its idle footprint small: it has
// not loaded libcrypto (loaded on the first SHA-256: 1.4 MB resident once
// mapped, 3.4 MB once a digest is fetched), even with the config watched,
// whose unchanged-content check once hashed the file at start.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { Runtime, demo, makeHome, writeConfig } from './lib.mjs';

// Resident KB of the mappings of pid whose path contains name.
function residentKb(pid, name) {
	let kb = 0;
	let cur = '';
	for (const line of fs.readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
		const m = line.match(/^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/);
		if (m) cur = m[1];
		else if (line.startsWith('Rss:') && cur.includes(name)) kb += Number(line.split(/\s+/)[1]);
	}
	return kb;
}

test('idle: a runtime that served nothing has not loaded OpenSSL', { timeout: 20_000 }, async () => {
	const home = await makeHome();
	await writeConfig(home, { demo: demo(['--name', 'demo']) });
	const rt = new Runtime(home, path.join(home, 'mcp.json'));
	await rt.start({ watch: true });
	try {
		const kb = residentKb(rt.child.pid, 'libcrypto');
		console.log(`libcrypto resident at idle: ${kb} KB`);
		assert.equal(kb, 0, `libcrypto resident: ${kb} KB`);
	} finally {
		assert.deepEqual(await rt.stop(), []);
	}
});
