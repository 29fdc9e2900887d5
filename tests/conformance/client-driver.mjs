// The client under test for the conformance suite's client scenarios, with
// mcpvisor as the client: the suite runs
//   node tests/conformance/client-driver.mjs SERVER_URL
// with MCP_CONFORMANCE_SCENARIO set. This writes a config whose one server
// is a `url` server pointing at SERVER_URL, starts mcpvisor on it (its own
// home, port 0), connects the official SDK client to mcpvisor and does what
// the scenario expects: initialize, list the tools, call the scenario's
// tool, answer an elicitation with the schema's defaults. Then it stops
// mcpvisor by pid and waits for it, leaving no process. Exit 0 when every
// step worked.
//
// MCPVISOR_BIN: the runtime (default build/san/mcpvisor).
// CLIENT_DRIVER_DIRECT=1: the SDK client talks to SERVER_URL itself, no
// mcpvisor (to check the driver against the suite).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, "..", "..");
const require = createRequire(path.join(root, "tests", "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require(
  "@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ElicitRequestSchema, CreateMessageRequestSchema } = require(
  "@modelcontextprotocol/sdk/types.js");

const serverUrl = process.argv[2];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
const BIN = path.resolve(root, process.env.MCPVISOR_BIN ?? "build/san/mcpvisor");
const START_MS = 10000;

// What each scenario's server wants called, with which arguments.
const CALLS = {
  tools_call: [["add_numbers", { a: 5, b: 3 }]],
  "elicitation-sep1034-client-defaults": [["test_client_elicitation_defaults", {}]],
  "sse-retry": [["test_reconnection", {}]],
};

function log(...a) {
  console.error("client-driver:", ...a);
}

// Starts mcpvisor in a new home on a config with one url server; resolves
// with { proc, endpoint, home, stop }.
async function startRuntime(url) {
  const home = mkdtempSync(path.join(os.tmpdir(), "mcpvisor-client-"));
  const config = path.join(home, "mcp.json");
  writeFileSync(config, JSON.stringify({
    mcpServers: { scenario: { url, scope: "app", prefix: "" } },
  }));
  const proc = spawn(BIN, ["serve", "--config", config, "--port", "0",
    "--home", home], { stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise((resolve) =>
    proc.on("exit", (code, signal) => resolve({ code, signal })));
  let out = "";
  proc.stderr.setEncoding("utf8");
  proc.stderr.on("data", (c) => process.stderr.write(c));
  proc.stdout.setEncoding("utf8");
  const endpoint = await new Promise((resolve, reject) => {
    const fail = (e) => {
      proc.kill("SIGKILL"); // no process left behind, even when it hangs
      exited.then(() => rmSync(home, { recursive: true, force: true }));
      reject(e);
    };
    const t = setTimeout(() => fail(new Error("mcpvisor did not start")),
      START_MS);
    proc.stdout.on("data", (c) => {
      out += c;
      const m = /^mcpvisor: endpoint (\S+)/m.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(m[1]);
      }
    });
    exited.then((r) => {
      clearTimeout(t);
      fail(new Error(`mcpvisor exited ${r.code ?? r.signal} at start`));
    });
  });
  const stop = async () => {
    proc.kill("SIGTERM");
    const r = await Promise.race([exited, new Promise((resolve) =>
      setTimeout(() => resolve(null), START_MS))]);
    if (!r) {
      proc.kill("SIGKILL");
      await exited;
      throw new Error("mcpvisor did not stop on SIGTERM");
    }
    rmSync(home, { recursive: true, force: true });
    if (r.code !== 0) throw new Error(`mcpvisor exited ${r.code ?? r.signal}`);
  };
  return { proc, endpoint, home, stop };
}

// The form's defaults, as a user who accepts without typing would send.
function defaultsOf(schema) {
  const content = {};
  for (const [k, v] of Object.entries(schema?.properties ?? {}))
    if (v && "default" in v) content[k] = v.default;
  return content;
}

async function drive(url) {
  const client = new Client({ name: "mcpvisor-conformance-driver", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} }, sampling: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => ({
    action: "accept",
    content: defaultsOf(req.params.requestedSchema),
  }));
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: "assistant", model: "driver",
    content: { type: "text", text: "driver answer" },
  }));
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const { tools } = await client.listTools();
    log(`tools: ${tools.map((t) => t.name).join(", ") || "(none)"}`);
    for (const [name, args] of CALLS[scenario] ?? []) {
      const r = await client.callTool({ name, arguments: args });
      log(`${name}: ${JSON.stringify(r.content).slice(0, 200)}`);
      if (r.isError) throw new Error(`${name} answered isError`);
    }
  } finally {
    await client.close();
  }
}

async function main() {
  if (!serverUrl) {
    log("usage: client-driver.mjs SERVER_URL");
    return 2;
  }
  if (process.env.CLIENT_DRIVER_DIRECT === "1") {
    await drive(serverUrl);
    return 0;
  }
  const rt = await startRuntime(serverUrl);
  // The suite kills a client that overruns its timeout: take mcpvisor
  // along, so that no process is left.
  for (const sig of ["SIGTERM", "SIGINT"])
    process.on(sig, () => {
      rt.proc.kill("SIGKILL");
      rmSync(rt.home, { recursive: true, force: true });
      process.exit(1);
    });
  let failure = null;
  try {
    await drive(rt.endpoint);
  } catch (e) {
    failure = e;
  }
  try {
    await rt.stop();
  } catch (e) {
    failure ??= e;
  }
  if (failure) throw failure;
  return 0;
}

main().then((code) => process.exit(code), (e) => {
  log(`failed: ${e.message}`);
  process.exit(1);
});
