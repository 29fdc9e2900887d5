// Scores one scenario's checks.json by its checks alone, for a revision
// whose MCP requests mcpvisor cannot make yet (2026-07-28: its servers
// refuse the 2025-11-25 initialize after the login), so that the client's
// exit code says nothing:
//   node auth-checks.mjs CHECKS_JSON SCENARIO EXPECTED_FILE
// A SUCCESS counts as passed; a FAILURE or WARNING as failed, unless
// EXPECTED_FILE names it for the scenario (a check that needs such a
// request): then it counts as neither, and such a check that passes counts
// as failed, so that the list is cut once the requests can be made. Prints
// the failing checks, then "N passed, M failed"; exit 1 when M > 0.
import { readFileSync } from "node:fs";

const [file, scenario, expectedFile] = process.argv.slice(2);
const expected = new Set();
for (const line of readFileSync(expectedFile, "utf8").split("\n")) {
  const [s, id] = line.replace(/#.*/, "").trim().split(/\s+/);
  if (s === scenario && id) expected.add(id);
}
let pass = 0;
let fail = 0;
for (const c of JSON.parse(readFileSync(file, "utf8"))) {
  const bad = c.status === "FAILURE" || c.status === "WARNING";
  if (expected.has(c.id)) {
    expected.delete(c.id);
    if (!bad) {
      console.log(`${c.id}: passes now; take it off ${expectedFile}`);
      fail++;
    }
    continue;
  }
  if (bad) {
    console.log(`${c.id}: ${c.status}: ${c.description}`);
    fail++;
  } else if (c.status === "SUCCESS") {
    pass++;
  }
}
for (const id of expected) {
  console.log(`${id}: expected to fail, but not reported`);
  fail++;
}
console.log(`${pass} passed, ${fail} failed`);
process.exit(fail > 0 ? 1 : 0);
