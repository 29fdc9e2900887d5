// Not a test: initialize latency with a space (MCPVISOR_BIN chooses the
// binary). node bench/spaceio-init.mjs N
import fsp from 'node:fs/promises';
import path from 'node:path';
import { RawClient, Runtime, makeHome, writeConfig, demo } from '../tests/e2e/lib.mjs';

const n = Number(process.argv[2] ?? 300);
const home = await makeHome('mcpvisor-bench-');
const space = path.join(home, 'space');
await fsp.mkdir(space);
await fsp.writeFile(path.join(space, '.mcp.json'), JSON.stringify({
	mcpServers: { s1: { command: '/bin/true' }, s2: { command: '/bin/true' } },
}));
const rt = new Runtime(home, await writeConfig(home, { demo: demo() }));
await rt.start({ env: { MCPVISOR_LOG: 'warn' } });
const ms = [];
try {
	for (let i = 0; i < n + 20; i++) {
		const c = new RawClient(`${rt.url}?space=${space}`);
		const t0 = process.hrtime.bigint();
		await c.initialize();
		const dt = Number(process.hrtime.bigint() - t0) / 1e6;
		if (i >= 20)
			ms.push(dt);
		await c.close();
	}
} finally {
	await rt.stop();
	await fsp.rm(home, { recursive: true, force: true });
}
ms.sort((a, b) => a - b);
const q = (p) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))].toFixed(3);
console.log(`n=${ms.length} median=${q(0.5)} ms p90=${q(0.9)} ms p99=${q(0.99)} ms`);
