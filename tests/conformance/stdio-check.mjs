// Drives build/conformance-server over stdio, without any gateway, through
// what each conformance scenario expects of it plus the extras (cancellation,
// pagination, list_changed, subscriptions, roots, bounded input). Usage:
//   node tests/conformance/stdio-check.mjs [path/to/conformance-server]
// Prints one line per check and closes with "N passed, M failed"; exits 1 on
// any failure. Every server it starts is waited for, or killed by pid.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const BIN = process.argv[2] ??
  path.join(here, "..", "..", "build", "conformance-server");
// A bound against a hang, not a measure: a busy machine takes its time.
const WAIT_MS = 10_000;
const stdoutErrors = [];

const SUITE_TOOLS = [
  "test_simple_text", "test_image_content", "test_audio_content",
  "test_embedded_resource", "test_multiple_content_types",
  "test_tool_with_logging", "test_tool_with_progress", "test_error_handling",
  "test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults",
  "test_elicitation_sep1330_enums", "json_schema_2020_12_tool",
  "test_reconnection",
];
const SUITE_PROMPTS = [
  "test_simple_prompt", "test_prompt_with_arguments",
  "test_prompt_with_embedded_resource", "test_prompt_with_image",
];
// What the 0.2.0-alpha.12 suite's 2026-07-28 set calls by name.
const SUITE26_TOOLS = [
  "test_input_required_result_elicitation",
  "test_input_required_result_sampling",
  "test_input_required_result_list_roots",
  "test_input_required_result_request_state",
  "test_input_required_result_multiple_inputs",
  "test_input_required_result_multi_round",
  "test_input_required_result_tampered_state",
  "test_input_required_result_capabilities", "test_missing_capability",
  "test_streaming_elicitation", "test_logging_tool",
  "test_trigger_tool_change", "test_trigger_prompt_change",
];
const CAPS_KEY = "io.modelcontextprotocol/clientCapabilities";

class Peer {
  constructor(args = []) {
    this.proc = spawn(BIN, args, { stdio: ["pipe", "pipe", "pipe"] });
    this.queue = [];
    this.waiters = [];
    this.nextId = 1;
    this.stderr = "";
    this.exited = new Promise((resolve) =>
      this.proc.on("exit", (code, signal) => resolve({ code, signal })));
    let buf = "";
    this.proc.stdout.setEncoding("utf8");
    this.proc.stdout.on("data", (chunk) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let msg;
        try {
          msg = JSON.parse(line);
        } catch {
          stdoutErrors.push(`not JSON on stdout: ${line.slice(0, 200)}`);
          continue;
        }
        this.push(msg);
      }
    });
    this.proc.stderr.setEncoding("utf8");
    this.proc.stderr.on("data", (c) => { this.stderr += c; });
    this.proc.stdin.on("error", () => {});
  }

  push(msg) {
    const i = this.waiters.findIndex((w) => w.pred(msg));
    if (i < 0) {
      this.queue.push(msg);
      return;
    }
    const [w] = this.waiters.splice(i, 1);
    clearTimeout(w.timer);
    w.resolve(msg);
  }

  send(msg) {
    this.proc.stdin.write(JSON.stringify(msg) + "\n");
  }

  sendRaw(text) {
    this.proc.stdin.write(text);
  }

  // The first message matching pred, or null after ms.
  next(pred, ms = WAIT_MS) {
    const i = this.queue.findIndex(pred);
    if (i >= 0) return Promise.resolve(this.queue.splice(i, 1)[0]);
    return new Promise((resolve) => {
      const w = { pred, resolve };
      w.timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        resolve(null);
      }, ms);
      this.waiters.push(w);
    });
  }

  request(method, params) {
    const id = this.nextId++;
    this.send({ jsonrpc: "2.0", id, method, ...(params && { params }) });
    return id;
  }

  async call(method, params, ms) {
    const id = this.request(method, params);
    const r = await this.next((m) => m.id === id && !m.method, ms);
    if (r === null) throw new Error(`no answer to ${method}`);
    return r;
  }

  notify(method, params) {
    this.send({ jsonrpc: "2.0", method, ...(params && { params }) });
  }

  async init(version = "2025-11-25",
    caps = { sampling: {}, elicitation: {}, roots: {} }) {
    const r = await this.call("initialize", {
      protocolVersion: version,
      capabilities: caps,
      clientInfo: { name: "stdio-check", version: "1.0.0" },
    });
    this.notify("notifications/initialized");
    return r;
  }

  async tool(name, args = {}, meta) {
    const r = await this.call("tools/call",
      { name, arguments: args, ...(meta && { _meta: meta }) });
    if (!r.result) throw new Error(`${name}: ${JSON.stringify(r.error)}`);
    return r.result;
  }

  notifications(method) {
    const out = this.queue.filter((m) => m.method === method && m.id === undefined);
    this.queue = this.queue.filter((m) => !out.includes(m));
    return out;
  }

  async close() {
    this.proc.stdin.end();
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), WAIT_MS);
    const r = await this.exited;
    clearTimeout(timer);
    return r;
  }
}

function check(cond, what) {
  if (!cond) throw new Error(what);
}

function textOf(result) {
  return result.content.filter((c) => c.type === "text").map((c) => c.text)
    .join("");
}

const isRequest = (method) => (m) => m.method === method && m.id !== undefined;

const checks = [];
function test(name, fn, args) {
  checks.push({ name, fn, args });
}

test("initialize echoes each supported version", async () => {
  for (const v of ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]) {
    const p = new Peer();
    const r = await p.init(v);
    await p.close();
    check(r.result.protocolVersion === v, `${v} -> ${r.result.protocolVersion}`);
    check(r.result.serverInfo.name && r.result.serverInfo.version, "serverInfo");
  }
});

test("initialize answers an unknown version with 2025-11-25", async (p) => {
  const r = await p.init("1999-01-01");
  check(r.result.protocolVersion === "2025-11-25", r.result.protocolVersion);
  const c = r.result.capabilities;
  check(c.tools && c.prompts && c.resources.subscribe && c.logging &&
    c.completions, "capabilities");
});

test("initialize without capabilities is -32602", async (p) => {
  const r = await p.call("initialize", { protocolVersion: "2025-11-25" });
  check(r.error?.code === -32602, JSON.stringify(r));
});

test("requests before initialize: ping answered, others -32600", async (p) => {
  const ping = await p.call("ping");
  check(ping.result && Object.keys(ping.result).length === 0, "ping");
  const r = await p.call("tools/list");
  check(r.error?.code === -32600, JSON.stringify(r));
  await p.init();
  const again = await p.call("initialize", {
    protocolVersion: "2025-11-25", capabilities: {}, clientInfo: {},
  });
  check(again.error?.code === -32600, "second initialize accepted");
});

test("malformed input: -32700, -32600, -32601", async (p) => {
  await p.init();
  p.sendRaw("this is not json\n");
  const parse = await p.next((m) => m.error?.code === -32700);
  check(parse && parse.id === null, "parse error");
  p.sendRaw("[]\n");
  check(await p.next((m) => m.error?.code === -32600), "batch");
  p.send({ jsonrpc: "2.0", id: 77 });
  check(await p.next((m) => m.id === 77 && m.error?.code === -32600), "no method");
  const r = await p.call("no/such/method");
  check(r.error?.code === -32601, JSON.stringify(r));
});

test("a line over 4 MiB is skipped, the next one answered", async (p) => {
  await p.init();
  const id = p.request("ping");
  const big = JSON.stringify({ jsonrpc: "2.0", id: 999, method: "ping",
    params: { pad: "x".repeat(4 * 1024 * 1024 + 16) } });
  p.sendRaw(big + "\n");
  const after = p.request("ping");
  check(await p.next((m) => m.id === id), "ping before");
  check(await p.next((m) => m.id === after), "ping after");
  check(!p.queue.some((m) => m.id === 999), "over-long line was answered");
});

test("tools-list: every suite tool, with description and schema", async (p) => {
  await p.init();
  const { result } = await p.call("tools/list");
  const names = result.tools.map((t) => t.name);
  for (const n of SUITE_TOOLS) check(names.includes(n), `missing ${n}`);
  for (const t of result.tools)
    check(t.description && t.inputSchema?.type === "object", t.name);
  const js = result.tools.find((t) => t.name === "json_schema_2020_12_tool");
  check(js.inputSchema.$schema ===
    "https://json-schema.org/draft/2020-12/schema", "$schema");
  check(js.inputSchema.$defs.address && js.inputSchema.additionalProperties ===
    false, "$defs/additionalProperties");
});

test("content tools: text, image, audio, resource, mixed, error", async (p) => {
  await p.init();
  check(textOf(await p.tool("test_simple_text")) ===
    "This is a simple text response for testing.", "simple text");
  const img = (await p.tool("test_image_content")).content[0];
  check(img.type === "image" && img.mimeType === "image/png" &&
    Buffer.from(img.data, "base64").subarray(1, 4).toString() === "PNG", "image");
  const au = (await p.tool("test_audio_content")).content[0];
  check(au.type === "audio" && au.mimeType === "audio/wav" &&
    Buffer.from(au.data, "base64").subarray(0, 4).toString() === "RIFF", "audio");
  const em = (await p.tool("test_embedded_resource")).content[0];
  check(em.type === "resource" && em.resource.uri === "test://embedded-resource" &&
    em.resource.mimeType === "text/plain" && em.resource.text, "embedded");
  const mixed = (await p.tool("test_multiple_content_types")).content;
  check(mixed.map((c) => c.type).join() === "text,image,resource", "mixed");
  check(JSON.parse(mixed[2].resource.text).value === 123, "mixed json");
  const err = await p.tool("test_error_handling");
  check(err.isError === true && err.content[0].text, "isError");
  const link = (await p.tool("test_resource_link")).content[1];
  check(link.type === "resource_link" && link.uri === "test://static-text" &&
    link.name, "resource_link");
});

test("audio and resource_link tools hidden from 2024-11-05", async (p) => {
  await p.init("2024-11-05");
  const { result } = await p.call("tools/list");
  const names = result.tools.map((t) => t.name);
  check(!names.includes("test_audio_content") &&
    !names.includes("test_resource_link") &&
    !names.includes("test_elicitation"), names.join());
  const r = await p.call("tools/call", { name: "test_audio_content" });
  check(r.error?.code === -32602, "call of hidden tool");
});

test("tools/call: unknown tool -32602, bad arguments isError", async (p) => {
  await p.init();
  const r = await p.call("tools/call", { name: "nope" });
  check(r.error?.code === -32602, "unknown tool");
  const bad = await p.call("tools/call", { name: "test_simple_text", arguments: [] });
  check(bad.error?.code === -32602, "arguments array");
  const noPrompt = await p.tool("test_sampling", {});
  check(noPrompt.isError === true, "missing prompt");
  const extra = await p.tool("json_schema_2020_12_tool", { nope: 1 });
  check(extra.isError === true, "additionalProperties");
  const ok = await p.tool("json_schema_2020_12_tool",
    { name: "n", address: { city: "c" } });
  check(!ok.isError && textOf(ok).includes('"city":"c"'), textOf(ok));
});

test("tools-call-with-logging: 3 info logs ~50 ms apart, filtered by level",
  async (p) => {
    await p.init();
    const lvl = await p.call("logging/setLevel", { level: "debug" });
    check(Object.keys(lvl.result).length === 0, "setLevel result");
    const t0 = Date.now();
    await p.tool("test_tool_with_logging");
    const took = Date.now() - t0;
    const logs = p.notifications("notifications/message");
    check(logs.length === 3, `got ${logs.length} logs`);
    check(logs.every((l) => l.params.level === "info"), "level");
    check(logs[0].params.data === "Tool execution started", "first log");
    check(took >= 90, `took ${took} ms`);
    await p.call("logging/setLevel", { level: "error" });
    await p.tool("test_tool_with_logging");
    check(p.notifications("notifications/message").length === 0,
      "info logs sent at level error");
    const bad = await p.call("logging/setLevel", { level: "loud" });
    check(bad.error?.code === -32602, "bad level");
  });

test("tools-call-with-progress: 0, 50, 100 of 100 before the result",
  async (p) => {
    await p.init();
    await p.tool("test_tool_with_progress", {}, { progressToken: "tok-1" });
    const prog = p.notifications("notifications/progress");
    check(prog.length === 3, `got ${prog.length}`);
    check(prog.map((n) => n.params.progress).join() === "0,50,100", "values");
    check(prog.every((n) => n.params.progressToken === "tok-1" &&
      n.params.total === 100), "token/total");
    await p.tool("test_tool_with_progress", {});
    check(p.notifications("notifications/progress").length === 0,
      "progress without a token");
  });

test("tools-call-sampling: server asks, other requests go on meanwhile",
  async (p) => {
    await p.init();
    const id = p.request("tools/call",
      { name: "test_sampling", arguments: { prompt: "Say hi" } });
    const ask = await p.next(isRequest("sampling/createMessage"));
    check(ask, "no sampling/createMessage");
    check(ask.params.messages[0].role === "user" &&
      ask.params.messages[0].content.text === "Say hi" &&
      ask.params.maxTokens === 100, JSON.stringify(ask.params));
    check(textOf(await p.tool("test_simple_text")).length > 0,
      "blocked while sampling");
    p.send({ jsonrpc: "2.0", id: ask.id, result: { role: "assistant",
      content: { type: "text", text: "hi" }, model: "m", stopReason: "endTurn" } });
    const r = await p.next((m) => m.id === id && !m.method);
    check(r && textOf(r.result) === "LLM response: hi", JSON.stringify(r));
  });

test("sampling: client error and missing capability give isError",
  async (p) => {
    await p.init();
    const id = p.request("tools/call",
      { name: "test_sampling", arguments: { prompt: "x" } });
    const ask = await p.next(isRequest("sampling/createMessage"));
    p.send({ jsonrpc: "2.0", id: ask.id,
      error: { code: -1, message: "User rejected sampling request" } });
    const r = await p.next((m) => m.id === id && !m.method);
    check(r.result.isError === true &&
      textOf(r.result).includes("User rejected"), JSON.stringify(r));
    const q = new Peer();
    await q.init("2025-11-25", {});
    const nocap = await q.tool("test_sampling", { prompt: "x" });
    const noel = await q.tool("test_elicitation", { message: "x" });
    const noroots = await q.tool("test_roots");
    await q.close();
    check(nocap.isError && noel.isError && noroots.isError, "no capability");
    check(!q.queue.some((m) => m.method), "asked a client without capability");
  });

test("no server request before notifications/initialized", async (p) => {
  await p.call("initialize", { protocolVersion: "2025-11-25",
    capabilities: { sampling: {} }, clientInfo: { name: "c", version: "1" } });
  const id = p.request("tools/call",
    { name: "test_sampling", arguments: { prompt: "x" } });
  check(await p.next(isRequest("sampling/createMessage"), 300) === null,
    "asked before initialized");
  p.notify("notifications/initialized");
  const ask = await p.next(isRequest("sampling/createMessage"));
  check(ask, "never asked");
  p.send({ jsonrpc: "2.0", id: ask.id, result: { role: "assistant",
    content: { type: "text", text: "ok" }, model: "m" } });
  check(await p.next((m) => m.id === id && m.result), "no result");
});

test("tools-call-elicitation: form schema, mode by version", async (p) => {
  await p.init();
  const id = p.request("tools/call",
    { name: "test_elicitation", arguments: { message: "Who are you?" } });
  const ask = await p.next(isRequest("elicitation/create"));
  check(ask.params.mode === "form" && ask.params.message === "Who are you?",
    JSON.stringify(ask.params));
  const s = ask.params.requestedSchema;
  check(s.type === "object" && s.properties.username.type === "string" &&
    s.properties.email && s.required.join() === "username,email", "schema");
  p.send({ jsonrpc: "2.0", id: ask.id, result: { action: "accept",
    content: { username: "u", email: "e@x" } } });
  const r = await p.next((m) => m.id === id && !m.method);
  check(textOf(r.result) ===
    'User response: action=accept, content={"username":"u","email":"e@x"}',
    textOf(r.result));
  const q = new Peer();
  await q.init("2025-06-18");
  const qid = q.request("tools/call",
    { name: "test_elicitation", arguments: { message: "m" } });
  const qask = await q.next(isRequest("elicitation/create"));
  q.send({ jsonrpc: "2.0", id: qask.id, result: { action: "decline" } });
  const qr = await q.next((m) => m.id === qid && !m.method);
  await q.close();
  check(!("mode" in qask.params), "mode sent to 2025-06-18");
  check(textOf(qr.result).includes("action=decline") && !qr.result.isError,
    "decline");
});

test("elicitation-sep1034-defaults and sep1330-enums schemas", async (p) => {
  await p.init();
  let id = p.request("tools/call", { name: "test_elicitation_sep1034_defaults" });
  let ask = await p.next(isRequest("elicitation/create"));
  const d = ask.params.requestedSchema.properties;
  check(d.name.default === "John Doe" && d.age.type === "integer" &&
    d.age.default === 30 && d.score.default === 95.5 &&
    d.status.enum.includes(d.status.default) && d.verified.default === true,
  JSON.stringify(d));
  p.send({ jsonrpc: "2.0", id: ask.id, result: { action: "cancel" } });
  check((await p.next((m) => m.id === id)).result, "sep1034 result");
  id = p.request("tools/call", { name: "test_elicitation_sep1330_enums" });
  ask = await p.next(isRequest("elicitation/create"));
  const e = ask.params.requestedSchema.properties;
  check(e.untitledSingle.enum && !e.untitledSingle.oneOf, "untitledSingle");
  check(e.titledSingle.oneOf.every((o) => o.const && o.title) &&
    !e.titledSingle.enum, "titledSingle");
  check(e.legacyEnum.enumNames.length === e.legacyEnum.enum.length, "legacy");
  check(e.untitledMulti.type === "array" && e.untitledMulti.items.enum,
    "untitledMulti");
  check(e.titledMulti.items.anyOf.every((o) => o.const && o.title),
    "titledMulti");
  p.send({ jsonrpc: "2.0", id: ask.id, result: { action: "accept",
    content: { untitledMulti: ["option1"] } } });
  const r = await p.next((m) => m.id === id);
  check(textOf(r.result).startsWith("Elicitation completed: action=accept"),
    textOf(r.result));
});

test("roots: server asks roots/list and reports the answer", async (p) => {
  await p.init();
  const id = p.request("tools/call", { name: "test_roots" });
  const ask = await p.next(isRequest("roots/list"));
  p.send({ jsonrpc: "2.0", id: ask.id,
    result: { roots: [{ uri: "file:///a" }, { uri: "file:///b" }] } });
  const r = await p.next((m) => m.id === id);
  check(textOf(r.result) === "Roots (2): file:///a file:///b", textOf(r.result));
});

test("cancellation: no answer, server request cancelled too", async (p) => {
  await p.init();
  const slow = p.request("tools/call",
    { name: "test_slow", arguments: { ms: 2000 } });
  p.notify("notifications/cancelled", { requestId: slow, reason: "test" });
  const ask = p.request("tools/call",
    { name: "test_sampling", arguments: { prompt: "x" } });
  const req = await p.next(isRequest("sampling/createMessage"));
  p.notify("notifications/cancelled", { requestId: ask });
  const back = await p.next((m) => m.method === "notifications/cancelled");
  check(back && back.params.requestId === req.id, "our request not cancelled");
  p.send({ jsonrpc: "2.0", id: req.id, result: { role: "assistant",
    content: { type: "text", text: "late" }, model: "m" } });
  check((await p.call("ping")).result, "ping after cancel");
  check(await p.next((m) => m.id === slow || m.id === ask, 2300) === null,
    "a cancelled call answered");
});

test("test_slow: progress while it runs, many in parallel", async (p) => {
  await p.init();
  const ids = [];
  for (let i = 0; i < 20; i++)
    ids.push(p.request("tools/call", { name: "test_slow",
      arguments: { ms: 300 }, _meta: { progressToken: i } }));
  const t0 = Date.now();
  for (const id of ids) check(await p.next((m) => m.id === id), `call ${id}`);
  const took = Date.now() - t0;
  // In parallel: one after the other would take 6 s. Half that is a
  // bound a busy machine keeps, where 1.5 s was not.
  check(took < 3000, `20 parallel 300 ms calls took ${took} ms`);
  const prog = p.notifications("notifications/progress");
  check(prog.length >= 40, `only ${prog.length} progress notifications`);
  const bad = await p.tool("test_slow", { ms: -1 });
  check(bad.isError, "negative ms");
});

test("resources: list, templates, read text/binary/template, -32002",
  async (p) => {
    await p.init();
    const { result } = await p.call("resources/list");
    for (const r of result.resources) check(r.uri && r.name && r.description, r.uri);
    const uris = result.resources.map((r) => r.uri);
    for (const u of ["test://static-text", "test://static-binary",
      "test://watched-resource"]) check(uris.includes(u), u);
    const t = (await p.call("resources/templates/list")).result.resourceTemplates;
    check(t[0].uriTemplate === "test://template/{id}/data", "template");
    const txt = (await p.call("resources/read", { uri: "test://static-text" }))
      .result.contents[0];
    check(txt.text === "This is the content of the static text resource." &&
      txt.mimeType === "text/plain", "text");
    const bin = (await p.call("resources/read", { uri: "test://static-binary" }))
      .result.contents[0];
    check(bin.blob && bin.mimeType === "image/png", "binary");
    const tm = (await p.call("resources/read",
      { uri: "test://template/123/data" })).result.contents[0];
    check(tm.uri === "test://template/123/data" &&
      JSON.parse(tm.text).data === "Data for ID: 123", "template read");
    const nf = await p.call("resources/read", { uri: "test://nope" });
    check(nf.error?.code === -32002 && nf.error.data?.uri === "test://nope",
      JSON.stringify(nf));
  });

test("subscriptions: updated only while subscribed", async (p) => {
  await p.init();
  const sub = await p.call("resources/subscribe", { uri: "test://watched-resource" });
  check(Object.keys(sub.result).length === 0, "subscribe result");
  await p.tool("test_update_watched");
  const up = p.notifications("notifications/resources/updated");
  check(up.length === 1 && up[0].params.uri === "test://watched-resource",
    "no updated notification");
  const rd = await p.call("resources/read", { uri: "test://watched-resource" });
  check(rd.result.contents[0].text.endsWith("revision 1"), "revision");
  const un = await p.call("resources/unsubscribe", { uri: "test://watched-resource" });
  check(Object.keys(un.result).length === 0, "unsubscribe result");
  await p.tool("test_update_watched");
  check(p.notifications("notifications/resources/updated").length === 0,
    "updated after unsubscribe");
  const bad = await p.call("resources/subscribe", { uri: "test://nope" });
  check(bad.error?.code === -32002, "subscribe unknown");
});

test("prompts: list, simple, args, embedded resource, image, errors",
  async (p) => {
    await p.init();
    const { result } = await p.call("prompts/list");
    const names = result.prompts.map((x) => x.name);
    for (const n of SUITE_PROMPTS) check(names.includes(n), n);
    for (const x of result.prompts) check(x.description, x.name);
    const simple = (await p.call("prompts/get", { name: "test_simple_prompt" }))
      .result.messages;
    check(simple[0].role === "user" && simple[0].content.text ===
      "This is a simple prompt for testing.", "simple");
    const args = (await p.call("prompts/get", { name: "test_prompt_with_arguments",
      arguments: { arg1: "hello", arg2: "world" } })).result.messages;
    check(args[0].content.text ===
      "Prompt with arguments: arg1='hello', arg2='world'", args[0].content.text);
    const emb = (await p.call("prompts/get", {
      name: "test_prompt_with_embedded_resource",
      arguments: { resourceUri: "test://example-resource" } })).result.messages;
    check(emb[0].content.type === "resource" &&
      emb[0].content.resource.uri === "test://example-resource", "embedded");
    const img = (await p.call("prompts/get", { name: "test_prompt_with_image" }))
      .result.messages;
    check(img[0].content.type === "image" && img[0].content.data, "image");
    const miss = await p.call("prompts/get",
      { name: "test_prompt_with_arguments", arguments: { arg1: "a" } });
    check(miss.error?.code === -32602, "missing arg2");
    const unk = await p.call("prompts/get", { name: "nope" });
    check(unk.error?.code === -32602, "unknown prompt");
  });

test("completion-complete: prompt and template arguments", async (p) => {
  await p.init();
  const c = (await p.call("completion/complete", {
    ref: { type: "ref/prompt", name: "test_prompt_with_arguments" },
    argument: { name: "arg1", value: "par" } })).result.completion;
  check(c.values.join() === "paris,park,party" && c.total === 3 &&
    c.hasMore === false, JSON.stringify(c));
  const t = (await p.call("completion/complete", {
    ref: { type: "ref/resource", uri: "test://template/{id}/data" },
    argument: { name: "id", value: "12" } })).result.completion;
  check(t.values.join() === "123", JSON.stringify(t));
  const e = await p.call("completion/complete", {
    ref: { type: "ref/prompt", name: "nope" }, argument: { name: "a", value: "" } });
  check(e.error?.code === -32602, "unknown prompt");
});

test("list_changed: toggling the dynamic items", async (p) => {
  await p.init();
  await p.tool("test_toggle_dynamic");
  const methods = p.queue.filter((m) => m.method?.endsWith("list_changed"))
    .map((m) => m.method).sort();
  check(methods.join() === ["notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/tools/list_changed"].join(), methods.join());
  const tools = (await p.call("tools/list")).result.tools.map((t) => t.name);
  check(tools.includes("test_dynamic_tool"), "dynamic tool not listed");
  check(!(await p.tool("test_dynamic_tool")).isError, "dynamic tool call");
  const prompts = (await p.call("prompts/list")).result.prompts.map((x) => x.name);
  check(prompts.includes("test_dynamic_prompt"), "dynamic prompt");
  const res = (await p.call("resources/list")).result.resources.map((r) => r.uri);
  check(res.includes("test://dynamic"), "dynamic resource");
  await p.tool("test_toggle_dynamic");
  const r = await p.call("tools/call", { name: "test_dynamic_tool" });
  check(r.error?.code === -32602, "dynamic tool still callable");
});

// The 2026-07-28 suite's tools, done the 2025 way: requests to the client
// in the middle of the call, whose ids are the input names that suite
// expects (a gateway makes them the inputRequests keys).
const answerTo = (p, req, result) =>
  p.send({ jsonrpc: "2.0", id: req.id, result });
const sampled = (text) => ({ role: "assistant",
  content: { type: "text", text }, model: "m", stopReason: "endTurn" });
const ROOTS = { roots: [{ uri: "file:///test/root", name: "Test Root" }] };

test("2026 inputs: listed, each asked under its input's name", async (p) => {
  await p.init();
  const names = (await p.call("tools/list")).result.tools.map((t) => t.name);
  for (const n of SUITE26_TOOLS) check(names.includes(n), `missing ${n}`);
  const prompts = (await p.call("prompts/list")).result.prompts
    .map((x) => x.name);
  check(prompts.includes("test_input_required_result_prompt"), "prompt");
  const cases = [
    ["test_input_required_result_elicitation", "elicitation/create",
      "user_name", { action: "accept", content: { name: "Alice" } },
      "Hello, Alice!"],
    ["test_input_required_result_sampling", "sampling/createMessage",
      "capital_question", sampled("Paris."), "LLM response: Paris."],
    ["test_input_required_result_list_roots", "roots/list", "client_roots",
      ROOTS, "Roots (1): file:///test/root"],
    ["test_input_required_result_request_state", "elicitation/create",
      "confirm", { action: "accept", content: { ok: true } },
      'state-ok: action=accept, content={"ok":true}'],
    ["test_input_required_result_tampered_state", "elicitation/create",
      "confirm", { action: "accept", content: { ok: true } },
      'state-ok: action=accept, content={"ok":true}'],
    ["test_streaming_elicitation", "elicitation/create", "streaming_name",
      { action: "decline" }, 'No name given: action=decline, content={}'],
  ];
  for (const [tool, method, key, answer, text] of cases) {
    const id = p.request("tools/call", { name: tool, arguments: {} });
    const req = await p.next(isRequest(method));
    check(req?.id === key, `${tool}: asked ${JSON.stringify(req)}`);
    if (method === "elicitation/create")
      check(req.params.mode === "form" &&
        req.params.requestedSchema.type === "object", `${tool}: form`);
    if (method === "sampling/createMessage")
      check(req.params.messages[0].content.text ===
        "What is the capital of France?", `${tool}: question`);
    answerTo(p, req, answer);
    const r = await p.next((m) => m.id === id && !m.method);
    check(r?.result && textOf(r.result) === text && !r.result.isError,
      `${tool}: ${JSON.stringify(r)}`);
  }
});

test("2026 multiple inputs: three asked before any answer", async (p) => {
  await p.init();
  const id = p.request("tools/call",
    { name: "test_input_required_result_multiple_inputs", arguments: {} });
  const el = await p.next(isRequest("elicitation/create"));
  const sa = await p.next(isRequest("sampling/createMessage"));
  const ro = await p.next(isRequest("roots/list"));
  check(el?.id === "user_name" && sa?.id === "greeting" &&
    ro?.id === "client_roots", JSON.stringify([el, sa, ro]));
  check(sa.params.maxTokens === 50, "greeting maxTokens");
  answerTo(p, ro, ROOTS);
  answerTo(p, sa, sampled("Hello there!"));
  check(await p.next((m) => m.id === id, 300) === null,
    "answered before the last input");
  answerTo(p, el, { action: "accept", content: { name: "Alice" } });
  const r = await p.next((m) => m.id === id && !m.method);
  check(r.result.content.map((c) => c.text).join("|") ===
    "Hello, Alice!|LLM response: Hello there!|Roots (1): file:///test/root",
  JSON.stringify(r.result));
});

test("2026 multi-round: asks step2 only once step1 is answered",
  async (p) => {
    await p.init();
    const id = p.request("tools/call",
      { name: "test_input_required_result_multi_round", arguments: {} });
    const s1 = await p.next(isRequest("elicitation/create"));
    check(s1?.id === "step1", JSON.stringify(s1));
    check(await p.next(isRequest("elicitation/create"), 300) === null,
      "step2 asked before step1's answer");
    answerTo(p, s1, { action: "accept", content: { name: "Alice" } });
    const s2 = await p.next(isRequest("elicitation/create"));
    check(s2?.id === "step2" &&
      s2.params.requestedSchema.properties.color, JSON.stringify(s2));
    answerTo(p, s2, { action: "accept", content: { color: "blue" } });
    const r = await p.next((m) => m.id === id && !m.method);
    check(textOf(r.result) === "Alice likes blue.", JSON.stringify(r));
  });

test("2026 inputs: two calls at once keep their ids and answers apart",
  async (p) => {
    await p.init();
    const a = p.request("tools/call",
      { name: "test_input_required_result_elicitation", arguments: {} });
    const ra = await p.next(isRequest("elicitation/create"));
    const b = p.request("tools/call",
      { name: "test_input_required_result_elicitation", arguments: {} });
    const rb = await p.next(isRequest("elicitation/create"));
    check(ra.id === "user_name" && typeof rb.id === "string" &&
      rb.id.startsWith("user_name-"), `${ra.id} ${rb.id}`);
    answerTo(p, rb, { action: "accept", content: { name: "Bob" } });
    const r2 = await p.next((m) => m.id === b && !m.method);
    answerTo(p, ra, { action: "accept", content: { name: "Alice" } });
    const r1 = await p.next((m) => m.id === a && !m.method);
    check(textOf(r1.result) === "Hello, Alice!" &&
      textOf(r2.result) === "Hello, Bob!", `${textOf(r1.result)} ${textOf(r2.result)}`);
    // Once answered, the name is free again.
    p.request("tools/call",
      { name: "test_input_required_result_elicitation", arguments: {} });
    check((await p.next(isRequest("elicitation/create")))?.id === "user_name",
      "name not reused");
  });

test("2026 capabilities: the request's _meta decides what is asked",
  async (p) => {
    await p.init();
    const call = (caps) => p.request("tools/call", {
      name: "test_input_required_result_capabilities", arguments: {},
      ...(caps && { _meta: { [CAPS_KEY]: caps } }) });
    const only = call({ sampling: {} });
    const sa = await p.next(isRequest("sampling/createMessage"));
    check(sa?.id === "capital_question", JSON.stringify(sa));
    answerTo(p, sa, sampled("Paris."));
    const r = await p.next((m) => m.id === only && !m.method);
    check(textOf(r.result) === "LLM response: Paris.", JSON.stringify(r));
    check(!p.queue.some((m) => m.method), "asked more than sampling");
    const none = call({});
    const rn = await p.next((m) => m.id === none && !m.method);
    check(textOf(rn.result).includes("nothing to ask") &&
      !p.queue.some((m) => m.method), JSON.stringify(rn));
    // Without _meta: what initialize declared (all three).
    const all = call(null);
    const asked = [await p.next(isRequest("elicitation/create")),
      await p.next(isRequest("sampling/createMessage")),
      await p.next(isRequest("roots/list"))];
    check(asked.every((m) => m), "not all three asked");
    answerTo(p, asked[0], { action: "cancel" });
    answerTo(p, asked[1], sampled("x"));
    answerTo(p, asked[2], ROOTS);
    check((await p.next((m) => m.id === all && !m.method)).result.content
      .length === 3, "three answers");
  });

test("2026 capabilities: per-request ones over initialize's; missing_capability asks anyway",
  async (p) => {
    await p.init("2025-11-25", {});
    const no = await p.tool("test_input_required_result_elicitation");
    check(no.isError && !p.queue.some((m) => m.method),
      "asked without the capability");
    const id = p.request("tools/call", {
      name: "test_input_required_result_elicitation", arguments: {},
      _meta: { [CAPS_KEY]: { elicitation: {} } } });
    const el = await p.next(isRequest("elicitation/create"));
    check(el?.id === "user_name", "per-request elicitation not asked");
    answerTo(p, el, { action: "accept", content: { name: "Al" } });
    check(textOf((await p.next((m) => m.id === id)).result) === "Hello, Al!",
      "answer");
    const mc = p.request("tools/call",
      { name: "test_missing_capability", arguments: {} });
    const sa = await p.next(isRequest("sampling/createMessage"));
    check(sa?.id === "capital_question", JSON.stringify(sa));
    p.send({ jsonrpc: "2.0", id: sa.id,
      error: { code: -32021, message: "sampling not declared" } });
    const r = await p.next((m) => m.id === mc && !m.method);
    check(r.result.isError &&
      textOf(r.result) === "Sampling failed: sampling not declared",
    JSON.stringify(r));
  });

test("2026 prompt: elicits a context, then the messages; error -32603",
  async (p) => {
    await p.init();
    const id = p.request("prompts/get",
      { name: "test_input_required_result_prompt" });
    const el = await p.next(isRequest("elicitation/create"));
    check(el?.id === "user_context", JSON.stringify(el));
    answerTo(p, el, { action: "accept", content: { context: "tea" } });
    const r = await p.next((m) => m.id === id && !m.method);
    check(r.result?.messages?.[0]?.content?.text ===
      "Write with this context: tea" && r.result.description,
    JSON.stringify(r));
    const id2 = p.request("prompts/get",
      { name: "test_input_required_result_prompt" });
    const el2 = await p.next(isRequest("elicitation/create"));
    p.send({ jsonrpc: "2.0", id: el2.id,
      error: { code: -1, message: "no user" } });
    const e = await p.next((m) => m.id === id2 && !m.method);
    check(e.error?.code === -32603 && e.error.message.includes("no user"),
      JSON.stringify(e));
  });

test("2026 inputs: cancel or a bad answer ends every request of the round",
  async (p) => {
    await p.init();
    const multi = () => p.request("tools/call",
      { name: "test_input_required_result_multiple_inputs", arguments: {} });
    const three = async () => [
      await p.next(isRequest("elicitation/create")),
      await p.next(isRequest("sampling/createMessage")),
      await p.next(isRequest("roots/list"))];
    const a = multi();
    const ra = await three();
    p.notify("notifications/cancelled", { requestId: a, reason: "test" });
    const gone = [];
    for (let i = 0; i < 3; i++)
      gone.push((await p.next((m) =>
        m.method === "notifications/cancelled"))?.params.requestId);
    check(gone.sort().join() === ra.map((m) => m.id).sort().join(),
      gone.join());
    const b = multi();
    const rb = await three();
    answerTo(p, rb[0], "not an object");
    const r = await p.next((m) => m.id === b && !m.method);
    check(r.result.isError &&
      textOf(r.result).includes("neither result nor error"), JSON.stringify(r));
    const back = [];
    for (let i = 0; i < 2; i++)
      back.push((await p.next((m) =>
        m.method === "notifications/cancelled"))?.params.requestId);
    check(back.sort().join() === [rb[1].id, rb[2].id].sort().join(),
      back.join());
    answerTo(p, rb[1], sampled("late"));
    check((await p.call("ping")).result, "ping after");
    check(await p.next((m) => m.id === a, 200) === null, "cancelled answered");
  });

test("test_logging_tool: four levels, the session's level filters",
  async (p) => {
    await p.init();
    await p.tool("test_logging_tool");
    const info = p.notifications("notifications/message");
    check(info.map((m) => m.params.level).join() === "info,warning,error",
      info.map((m) => m.params.level).join());
    await p.call("logging/setLevel", { level: "debug" });
    const r = await p.tool("test_logging_tool");
    const all = p.notifications("notifications/message");
    check(all.map((m) => m.params.level).join() ===
      "debug,info,warning,error", all.map((m) => m.params.level).join());
    check(textOf(r) === "Logged at debug, info, warning and error", textOf(r));
  });

test("test_trigger_*_change: one list changes, one notification",
  async (p) => {
    await p.init();
    const tools = async () =>
      (await p.call("tools/list")).result.tools.map((t) => t.name);
    const prompts = async () =>
      (await p.call("prompts/list")).result.prompts.map((x) => x.name);
    const changed = () => p.queue.filter((m) =>
      m.method?.endsWith("list_changed")).map((m) => m.method);
    check(!(await tools()).includes("test_triggered_tool"), "listed early");
    await p.tool("test_trigger_tool_change");
    check(changed().join() === "notifications/tools/list_changed",
      changed().join());
    p.notifications("notifications/tools/list_changed");
    check((await tools()).includes("test_triggered_tool"), "not added");
    check(!(await p.tool("test_triggered_tool")).isError, "call");
    check(!(await prompts()).includes("test_triggered_prompt"),
      "prompt changed by the tool trigger");
    await p.tool("test_trigger_prompt_change");
    check(changed().join() === "notifications/prompts/list_changed",
      changed().join());
    p.notifications("notifications/prompts/list_changed");
    check((await prompts()).includes("test_triggered_prompt"), "no prompt");
    const g = await p.call("prompts/get", { name: "test_triggered_prompt" });
    check(g.result?.messages?.[0]?.content?.text ===
      "This is the triggered prompt.", JSON.stringify(g));
    await p.tool("test_trigger_tool_change");
    check(!(await tools()).includes("test_triggered_tool"), "not removed");
    const gone = await p.call("tools/call", { name: "test_triggered_tool" });
    check(gone.error?.code === -32602, "removed tool still callable");
  });

test("test_custom_headers: an x-mcp-header argument, echoed", async (p) => {
  await p.init();
  const t = (await p.call("tools/list")).result.tools
    .find((x) => x.name === "test_custom_headers");
  check(t?.inputSchema.properties.region["x-mcp-header"] === "Region",
    JSON.stringify(t));
  check(textOf(await p.tool("test_custom_headers", { region: "us-west1" })) ===
    "Region: us-west1", "echo");
  check((await p.tool("test_custom_headers", {})).isError, "no region");
});

test("pagination with --page-size 4", async (p) => {
  await p.init();
  const names = [];
  let cursor;
  let pages = 0;
  do {
    const r = await p.call("tools/list", cursor ? { cursor } : {});
    check(r.result.tools.length <= 4, "page too long");
    names.push(...r.result.tools.map((t) => t.name));
    cursor = r.result.nextCursor;
    pages++;
  } while (cursor !== undefined && pages < 50);
  check(pages > 1 && new Set(names).size === names.length, `pages ${pages}`);
  for (const n of SUITE_TOOLS) check(names.includes(n), n);
  const bad = await p.call("tools/list", { cursor: "bogus" });
  check(bad.error?.code === -32602, "bad cursor");
}, ["--page-size", "4"]);

test("exits when stdin closes, even with a call in flight", async () => {
  const p = new Peer();
  await p.init();
  p.request("tools/call", { name: "test_slow", arguments: { ms: 10000 } });
  const t0 = Date.now();
  const r = await p.close();
  // Without waiting for the 10 s call (half of it: a busy machine's
  // margin).
  check(r.code === 0 && Date.now() - t0 < 5000, JSON.stringify(r));
});

let passed = 0;
let failed = 0;
for (const c of checks) {
  const p = c.fn.length > 0 ? new Peer(c.args) : null;
  try {
    await c.fn(p);
    passed++;
    console.log(`PASS ${c.name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${c.name}: ${e.message}`);
    if (p?.stderr) console.log(p.stderr.trimEnd());
  } finally {
    if (p) {
      const r = await p.close();
      if (r.code !== 0) {
        failed++;
        console.log(`FAIL ${c.name}: server exited ${JSON.stringify(r)}`);
        console.log(p.stderr.trimEnd());
      }
    }
  }
}
for (const e of stdoutErrors) {
  failed++;
  console.log(`FAIL ${e}`);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
