// Runs one of the conformance suite's TypeScript reference servers from a
// copy of its source, for reference.sh. The source is never kept in this
// tree: reference.sh takes it from a checkout of the suite's repository.
//
//   node serve.mjs stdio FILE.ts   the server's MCP server over stdio: its
//                                  own HTTP front (everything after the
//                                  "===== EXPRESS APP =====" line) is left
//                                  out, createMcpServer() is connected to
//                                  the SDK's stdio transport, and whatever
//                                  the server logs goes to stderr so that
//                                  stdout carries only protocol
//   node serve.mjs stdio --with-2026-tools FILE.ts
//                                  the same, plus the tools the 2026-07-28
//                                  requirement set calls that the 0.1.x
//                                  server predates (tools-2026.mjs)
//   node serve.mjs http FILE.ts    the server as its authors run it, over
//                                  HTTP on $PORT
//
// FILE.ts must sit in a folder whose node_modules holds what the server
// imports (reference.sh links tests/node_modules there). The transpiled
// module is written beside it.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const mode = args.shift();
const with2026 = mode === 'stdio' && args[0] === '--with-2026-tools';
if (with2026) args.shift();
const file = args[0];
if ((mode !== 'stdio' && mode !== 'http') || !file || !file.endsWith('.ts')) {
  console.error('usage: node serve.mjs stdio [--with-2026-tools]|http FILE.ts');
  process.exit(2);
}
const ts = createRequire(import.meta.url)('typescript');
let src = readFileSync(file, 'utf8');
if (mode === 'stdio') {
  const front = src.indexOf('// ===== EXPRESS APP =====');
  if (front < 0 || !/\nfunction createMcpServer\(/.test(src)) {
    console.error(`serve: ${file} has no createMcpServer() before an ` +
      '"===== EXPRESS APP =====" line; this harness knows the 0.1.x server');
    process.exit(2);
  }
  src = src.slice(0, front) + '\nexport { createMcpServer };\n';
}
const out = ts.transpileModule(src, {
  compilerOptions: {
    module: ts.ModuleKind.ESNext,
    target: ts.ScriptTarget.ES2022,
    verbatimModuleSyntax: false
  },
  fileName: file
});
const js = file.replace(/\.ts$/, `.${mode}.mjs`);
writeFileSync(js, out.outputText);

if (mode === 'stdio') {
  // The server logs with console.log; on stdio that would be protocol.
  console.log = (...args) => console.error(...args);
  const { StdioServerTransport } = await import(
    pathToFileURL(`${file.replace(/[^/]*$/, '')}node_modules/` +
      '@modelcontextprotocol/sdk/dist/esm/server/stdio.js').href);
  const { createMcpServer } = await import(pathToFileURL(js).href);
  const server = createMcpServer();
  if (with2026) (await import('./tools-2026.mjs')).addTools2026(server);
  await server.connect(new StdioServerTransport());
} else {
  await import(pathToFileURL(js).href);
}
