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
// An authorization scenario (auth/...) is driven as a user would: the
// config's server gets an "oauth" (the scenario's pre-registered client from
// MCP_CONFORMANCE_CONTEXT; the suite's Client ID Metadata Document URL),
// `mcpvisor login scenario` runs with $BROWSER a script that fetches the
// authorization URL and follows its redirect to login's loopback listener
// (the suite's authorization server approves at once), then mcpvisor serves
// with the stored tokens and the SDK client lists and calls the tools
// through it. A call refused for want of a sign-in (a 403 asking for more
// scopes) is answered as the message says: `mcpvisor login scenario` again,
// at most MAX_LOGINS sign-ins in all, then the call once more. A login that
// refuses (a resource or issuer that does not match) ends the run with 1.
//
// MCPVISOR_BIN: the runtime (default build/san/mcpvisor).
// CLIENT_DRIVER_DIRECT=1: the SDK client talks to SERVER_URL itself, no
// mcpvisor (to check the driver against the suite).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
// One `mcpvisor login`: discovery, registration, the browser, the token.
const LOGIN_MS = 20000;
// Sign-ins per scenario, the first included: a step-up gets one more, and
// the suite fails a client that makes over 3 authorization requests.
const MAX_LOGINS = 3;
// The suite's Client ID Metadata Document (auth/basic-cimd), which a user
// would host; the suite's authorization server only compares it.
const CIMD_URL = "https://conformance-test.local/client-metadata.json";
const BROWSER = path.join(here, "browser.sh");
// The suite kills a client at 30 s, but its kill reaches only the shell it
// ran us in: end before, taking every process we started along.
const DEADLINE_MS = 27000;

// The processes this driver started and that still run (killed by pid
// when the driver must stop early), and the home to remove then.
const live = new Set();
let liveHome = null;

function track(proc) {
  live.add(proc);
  proc.on("exit", () => live.delete(proc));
  return proc;
}

// login starts the browser detached, and browser.sh stays a second after
// the redirect: it writes its pid here, and the driver ends it by pid when
// it ends itself.
const browserPids = path.join(os.tmpdir(), `mcpvisor-browsers-${process.pid}`);

function endBrowsers() {
  let text = "";
  try {
    text = readFileSync(browserPids, "utf8");
  } catch {
    return;
  }
  for (const pid of text.split(/\s+/).filter(Boolean)) {
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      // already gone
    }
  }
  rmSync(browserPids, { force: true });
}
process.on("exit", endBrowsers);

function abandon(why) {
  log(`stopping: ${why}`);
  for (const proc of live) proc.kill("SIGKILL");
  if (liveHome) rmSync(liveHome, { recursive: true, force: true });
  process.exit(1);
}

// What each scenario's server wants called, with which arguments.
const CALLS = {
  tools_call: [["add_numbers", { a: 5, b: 3 }]],
  "elicitation-sep1034-client-defaults": [["test_client_elicitation_defaults", {}]],
  "sse-retry": [["test_reconnection", {}]],
  // 2026-07-28: the rounds of input_required (mcpvisor retries for the
  // SDK 1.x client, which speaks 2025), a call between them, none.
  "sep-2322-client-request-state": [["test_mrtr_echo_state", {}],
    ["test_mrtr_unrelated", {}], ["test_mrtr_no_state", {}],
    ["test_mrtr_no_result_type", {}]],
};
// 2026-07-28 scenarios whose servers look at every kind of request:
// every listed tool is called (with the context's arguments when it names
// them), every resource read, every prompt got.
const EXERCISE = new Set(["http-standard-headers", "http-custom-headers",
  "http-invalid-tool-headers"]);

function log(...a) {
  console.error("client-driver:", ...a);
}

// A new home with a config whose one server, "scenario", is a url server
// at url (with its "oauth" when given). Resolves with { home, config }.
function newHome(url, oauth) {
  const home = mkdtempSync(path.join(os.tmpdir(), "mcpvisor-client-"));
  const config = path.join(home, "mcp.json");
  const server = { url, scope: "app", prefix: "" };
  if (oauth) server.oauth = oauth;
  writeFileSync(config, JSON.stringify({ mcpServers: { scenario: server } }));
  return { home, config };
}

// Starts mcpvisor in home on config; resolves with { proc, endpoint, home,
// stop }.
async function startRuntime({ home, config }) {
  const proc = track(spawn(BIN, ["serve", "--config", config, "--port", "0",
    "--home", home], { stdio: ["ignore", "pipe", "pipe"] }));
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
    if (EXERCISE.has(scenario)) await exercise(client, tools);
  } finally {
    await client.close();
  }
}

// Every tool (the context's calls first, with their arguments), resource
// and prompt the server offers, through mcpvisor.
async function exercise(client, tools) {
  const ctx = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}");
  const calls = Array.isArray(ctx.toolCalls) ? ctx.toolCalls : [];
  for (const c of calls) {
    if (!tools.some((t) => t.name === c.name)) continue;
    const r = await client.callTool({ name: c.name, arguments: c.arguments ?? {} });
    log(`${c.name}: ${JSON.stringify(r.content).slice(0, 200)}`);
  }
  for (const t of tools) {
    if (calls.some((c) => c.name === t.name)) continue;
    const r = await client.callTool({ name: t.name, arguments: {} });
    log(`${t.name}: ${JSON.stringify(r.content).slice(0, 200)}`);
  }
  const caps = client.getServerCapabilities() ?? {};
  if (caps.resources) {
    const { resources } = await client.listResources();
    for (const r of resources) {
      await client.readResource({ uri: r.uri });
      log(`read ${r.uri}`);
    }
  }
  if (caps.prompts) {
    const { prompts } = await client.listPrompts();
    for (const p of prompts) {
      const args = {};
      for (const a of p.arguments ?? []) if (a.required) args[a.name] = "x";
      await client.getPrompt({ name: p.name, arguments: args });
      log(`prompt ${p.name}`);
    }
  }
}

// The "oauth" of the scenario's server: the suite's pre-registered client
// when the scenario gives one, the Client ID Metadata Document otherwise
// (used only where the authorization server says it supports one).
function oauthOf() {
  const oauth = { clientMetadataUrl: CIMD_URL };
  const ctx = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}");
  if (ctx.client_id) oauth.clientId = ctx.client_id;
  if (ctx.client_secret) oauth.clientSecret = ctx.client_secret;
  return oauth;
}

// Runs a mcpvisor command in the scenario's home to its end (bounded:
// killed by pid past ms); resolves with { code, stderr }.
function runCli(h, args, ms, env = {}) {
  return new Promise((resolve) => {
    const proc = track(spawn(BIN, [...args, "--config", h.config, "--home", h.home], {
      stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env },
    }));
    let stderr = "";
    proc.stdout.setEncoding("utf8");
    proc.stderr.setEncoding("utf8");
    proc.stdout.on("data", (c) => process.stderr.write(c));
    proc.stderr.on("data", (c) => {
      stderr += c;
      process.stderr.write(c);
    });
    const t = setTimeout(() => proc.kill("SIGKILL"), ms);
    proc.on("exit", (code, signal) => {
      clearTimeout(t);
      resolve({ code: code ?? signal, stderr });
    });
  });
}

let logins = 0;

// `mcpvisor login scenario` with the redirect-following browser; throws
// when it does not store tokens.
async function login(h) {
  logins++;
  log(`login ${logins}`);
  const r = await runCli(h, ["login", "scenario"], LOGIN_MS,
    { BROWSER, CONF_BROWSER_PIDS: browserPids });
  if (r.code !== 0) throw new Error(`mcpvisor login exited ${r.code}`);
}

// The scenario server's instance state in the runtime's status.
async function stateOf(h) {
  const r = await new Promise((resolve) => {
    const proc = track(spawn(BIN, ["status", "--json", "--home", h.home],
      { stdio: ["ignore", "pipe", "ignore"] }));
    let out = "";
    proc.stdout.setEncoding("utf8");
    proc.stdout.on("data", (c) => (out += c));
    const t = setTimeout(() => proc.kill("SIGKILL"), START_MS);
    proc.on("exit", () => {
      clearTimeout(t);
      resolve(out);
    });
  });
  try {
    const sv = JSON.parse(r).servers.find((s) => s.name === "scenario");
    return sv?.instances?.[0]?.state ?? sv?.state ?? null;
  } catch {
    return null;
  }
}

// Calls a tool through mcpvisor; a call refused with "run `mcpvisor login
// scenario`" gets a new sign-in and goes once more, while sign-ins are
// left. Throws when the call fails otherwise.
async function callSigningIn(client, h, name) {
  for (;;) {
    let text;
    try {
      const r = await client.callTool({ name, arguments: {} });
      if (!r.isError) {
        log(`${name}: ${JSON.stringify(r.content).slice(0, 200)}`);
        return;
      }
      text = JSON.stringify(r.content);
    } catch (e) {
      text = e.message;
    }
    log(`${name} refused: ${text.slice(0, 300)}`);
    if (!/mcpvisor login scenario/.test(text) || logins >= MAX_LOGINS)
      throw new Error(`${name}: ${text.slice(0, 300)}`);
    await login(h);
    await waitRunning(h);
  }
}

// The runtime takes up new tokens by itself (a watch on the token store):
// waits for it to serve the server again.
async function waitRunning(h) {
  const until = Date.now() + START_MS;
  while ((await stateOf(h)) !== "running") {
    if (Date.now() > until)
      throw new Error("the runtime did not take up the new sign-in");
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function driveAuth(url, h) {
  const client = new Client({ name: "mcpvisor-conformance-driver", version: "1.0.0" },
    { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    let { tools } = await client.listTools();
    log(`tools: ${tools.map((t) => t.name).join(", ") || "(none)"}`);
    // A server whose first requests after the sign-in already ask for
    // another (a 2026-07-28 server, whose discover is an authorized
    // request: auth/authorization-server-migration moves to a new
    // authorization server after it) leaves the server needing a sign-in
    // before any tool is listed: the user signs in again, as status says.
    if (tools.length === 0 && logins < MAX_LOGINS &&
        (await stateOf(h)) === "needs_auth") {
      await login(h);
      await waitRunning(h);
      ({ tools } = await client.listTools());
      log(`tools: ${tools.map((t) => t.name).join(", ") || "(none)"}`);
    }
    if (tools.length === 0) throw new Error("no tools after the sign-in");
    for (const t of tools) await callSigningIn(client, h, t.name);
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
  for (const sig of ["SIGTERM", "SIGINT"])
    process.on(sig, () => abandon(sig));
  // From the process's start: loading the SDK takes seconds on a busy
  // machine.
  setTimeout(() => abandon(`past ${DEADLINE_MS} ms`),
    Math.max(0, DEADLINE_MS - process.uptime() * 1000)).unref();
  const isAuth = scenario.startsWith("auth/");
  const h = newHome(serverUrl, isAuth ? oauthOf() : null);
  liveHome = h.home;
  if (isAuth) {
    try {
      await login(h);
    } catch (e) {
      rmSync(h.home, { recursive: true, force: true });
      throw e;
    }
  }
  const rt = await startRuntime(h);
  let failure = null;
  try {
    if (isAuth) await driveAuth(rt.endpoint, h);
    else await drive(rt.endpoint);
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
