// Drives the fixtures over HTTP (--http), without any gateway: the
// Streamable HTTP transport of demo/fixture-http.c (JSON or SSE answers,
// sessions, the GET stream and Last-Event-ID replay, a server request on
// the POST stream of its call) and each fault mode (--auth, --expire-after,
// --drop-sse-once, --drop-sse-unresumable, --hang-after, --legacy-sse,
// --listen-all, a taken port). Usage:
//   node tests/conformance/http-check.mjs [BUILD_DIR]   (default build/san)
// One line per check, then "N passed, M failed"; exits 1 on a failure. Each
// server is stopped by pid with SIGTERM and must exit 0 (a sanitizer report
// would change that).
import { spawn } from "node:child_process";
import net from "node:net";
import os from "node:os";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const DIR = path.resolve(process.argv[2] ??
  path.join(here, "..", "..", "build", "san"));
const DEMO = path.join(DIR, "demo-server");
const CONF = path.join(DIR, "conformance-server");
// A bound against a hang, not a measure: a busy machine takes its time.
const WAIT_MS = 15_000;
const ACCEPT = "application/json, text/event-stream";
const INIT = {
  protocolVersion: "2025-11-25",
  capabilities: { sampling: {}, elicitation: {} },
  clientInfo: { name: "http-check", version: "1" },
};

function deadline(ms, what) {
  let t;
  const p = new Promise((_, reject) => {
    t = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms);
  });
  p.clear = () => clearTimeout(t);
  return p;
}

async function within(ms, what, promise) {
  const d = deadline(ms, what);
  try {
    return await Promise.race([promise, d]);
  } finally {
    d.clear();
  }
}

class Server {
  constructor(bin, args, env = {}) {
    this.proc = spawn(bin, args, {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, ...env },
    });
    this.stderr = "";
    this.exited = new Promise((resolve) =>
      this.proc.on("exit", (code, signal) => resolve({ code, signal })));
    this.proc.stderr.setEncoding("utf8");
    this.listening = new Promise((resolve) => {
      this.proc.stderr.on("data", (c) => {
        this.stderr += c;
        const m = /listening on (\d+)/.exec(this.stderr);
        if (m) resolve(Number(m[1]));
      });
    });
  }

  async start() {
    this.port = await within(WAIT_MS, "listening", this.listening);
    this.url = `http://127.0.0.1:${this.port}/mcp`;
    return this;
  }

  async stop() {
    this.proc.kill("SIGTERM");
    const r = await within(WAIT_MS, "exit after SIGTERM", this.exited);
    if (r.code !== 0)
      throw new Error(`exit ${r.code} ${r.signal ?? ""}: ${this.stderr.slice(-800)}`);
  }
}

// A POST; returns { res, json } for JSON answers, { res, events } reader
// for SSE ones.
async function post(url, msg, headers = {}) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: ACCEPT, ...headers },
    body: JSON.stringify(msg),
  });
  const ct = res.headers.get("content-type") ?? "";
  if (ct.includes("text/event-stream")) return { res, sse: sseReader(res) };
  const text = await res.text();
  return { res, json: ct.includes("json") && text ? JSON.parse(text) : null };
}

// Parses an SSE body into events { id, event, data, retry }; next() gives
// the next one, or null at the end; ended says whether it ended properly.
function sseReader(res) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  const events = [];
  return {
    events,
    cut: false,
    async next() {
      for (;;) {
        const sep = buf.indexOf("\n\n");
        if (sep >= 0) {
          const block = buf.slice(0, sep);
          buf = buf.slice(sep + 2);
          const ev = { data: "" };
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) continue;
            const i = line.indexOf(":");
            const k = i < 0 ? line : line.slice(0, i);
            const v = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
            if (k === "data") ev.data += v;
            else ev[k] = v;
          }
          events.push(ev);
          return ev;
        }
        let r;
        try {
          r = await reader.read();
        } catch {
          this.cut = true;
          return null;
        }
        if (r.done) return null;
        buf += r.value;
      }
    },
    // The next event carrying a JSON-RPC message.
    async message() {
      for (;;) {
        const ev = await this.next();
        if (!ev) return null;
        if (ev.data) return { ...JSON.parse(ev.data), _id: ev.id };
      }
    },
    cancel() { return reader.cancel().catch(() => {}); },
  };
}

async function initialize(url, headers = {}) {
  const { res, json } = await post(url,
    { jsonrpc: "2.0", id: 0, method: "initialize", params: INIT }, headers);
  const sid = res.headers.get("mcp-session-id");
  if (res.status !== 200 || !sid || !json?.result)
    throw new Error(`initialize: ${res.status} ${JSON.stringify(json)}`);
  const h = { "mcp-session-id": sid, ...headers };
  const n = await post(url,
    { jsonrpc: "2.0", method: "notifications/initialized" }, h);
  if (n.res.status !== 202) throw new Error(`initialized: ${n.res.status}`);
  return h;
}

function call(id, name, args = {}, meta) {
  const params = { name, arguments: args };
  if (meta) params._meta = meta;
  return { jsonrpc: "2.0", id, method: "tools/call", params };
}

function eq(a, b, what) {
  if (a !== b) throw new Error(`${what}: got ${JSON.stringify(a)}, want ${JSON.stringify(b)}`);
}

function ok(v, what) {
  if (!v) throw new Error(what);
}

const checks = [];
function check(name, fn) { checks.push({ name, fn }); }

async function withServer(bin, args, fn, env) {
  const s = await new Server(bin, args, env).start();
  try {
    await fn(s);
  } catch (e) {
    s.proc.kill("SIGKILL");
    throw e;
  }
  await s.stop();
}

check("JSON answer, session id required after initialize, DELETE ends it", () =>
  withServer(DEMO, ["--http", "0"], async (s) => {
    const h = await initialize(s.url);
    const r = await post(s.url, call(1, "echo", { text: "hi" }), h);
    eq(r.res.status, 200, "status");
    eq(r.json.result.content[0].text, "hi", "echo");
    eq((await post(s.url, call(2, "echo", { text: "x" }))).res.status, 400, "no session");
    eq((await post(s.url, call(3, "echo", { text: "x" }),
      { "mcp-session-id": "0".repeat(32) })).res.status, 404, "unknown session");
    const d = await fetch(s.url, { method: "DELETE", headers: h });
    eq(d.status, 200, "DELETE");
    eq((await post(s.url, call(4, "echo", { text: "x" }), h)).res.status, 404, "after DELETE");
  }));

check("progress on the POST stream before the answer, with event ids", () =>
  withServer(DEMO, ["--http", "0"], async (s) => {
    const h = await initialize(s.url);
    const r = await post(s.url, call(1, "sleep", { ms: 250 }, { progressToken: "p" }), h);
    ok(r.sse, "an SSE answer");
    const seen = [];
    let m;
    while ((m = await within(WAIT_MS, "answer", r.sse.message()))) {
      seen.push(m);
      if (m.id === 1) break;
    }
    ok(seen.some((x) => x.method === "notifications/progress"), "progress first");
    eq(seen.at(-1).result.content[0].text, "slept 250 ms", "answer");
    ok(r.sse.events.filter((e) => e.data).every((e) => /^\d+-\d+$/.test(e.id)), "event ids");
    ok(r.sse.events[0].data === "" && r.sse.events[0].retry, "priming event first");
  }));

check("a server request goes on its call's stream; its answer is a POST", () =>
  withServer(CONF, ["--http", "0"], async (s) => {
    const h = await initialize(s.url);
    const r = await post(s.url, call(1, "test_sampling", { prompt: "2+2?" }), h);
    const req = await within(WAIT_MS, "sampling request", r.sse.message());
    eq(req.method, "sampling/createMessage", "request on the POST stream");
    const a = await post(s.url, { jsonrpc: "2.0", id: req.id, result: {
      role: "assistant", model: "m", content: { type: "text", text: "4" } } }, h);
    eq(a.res.status, 202, "response POST");
    const res = await within(WAIT_MS, "tool result", r.sse.message());
    eq(res.id, 1, "result on the same stream");
    ok(res.result.content[0].text.includes("4"), "result uses the answer");
  }));

check("sessions are independent (conformance-server state per session)", () =>
  withServer(CONF, ["--http", "0"], async (s) => {
    const a = await initialize(s.url);
    const b = await initialize(s.url);
    ok(a["mcp-session-id"] !== b["mcp-session-id"], "two ids");
    for (const h of [a, b]) {
      const r = await post(s.url, call(7, "test_simple_text"), h);
      eq(r.json.id, 7, "each session answers its id 7");
    }
  }));

check("test_reconnection: the POST stream ends after priming; GET resumes it", () =>
  withServer(CONF, ["--http", "0"], async (s) => {
    const h = await initialize(s.url);
    const r = await post(s.url, call(1, "test_reconnection"), h);
    const first = await within(WAIT_MS, "priming", r.sse.next());
    ok(first.id && first.data === "", "priming");
    eq(await within(WAIT_MS, "end", r.sse.next()), null, "ended");
    ok(!r.sse.cut, "ended properly, not cut");
    const g = sseReader(await fetch(s.url, { headers: { ...h,
      accept: "text/event-stream", "last-event-id": first.id } }));
    const m = await within(WAIT_MS, "answer", g.message());
    eq(m.id, 1, "the answer on the resumed stream");
    // A session that ends with a call in flight frees it.
    const slow = await post(s.url, call(2, "test_slow", { ms: 5000 }), h);
    ok(slow.sse, "a slow call streams");
    eq((await fetch(s.url, { method: "DELETE", headers: h })).status, 200, "DELETE");
    eq(await within(WAIT_MS, "cut by DELETE", slow.sse.message()), null, "no answer");
  }));

check("demo-server: each session has its own log level", () =>
  withServer(DEMO, ["--http", "0"], async (s) => {
    const a = await initialize(s.url);
    const b = await initialize(s.url);
    const set = await post(s.url, { jsonrpc: "2.0", id: 1, method: "logging/setLevel",
      params: { level: "error" } }, a);
    ok(set.json?.result, `setLevel: ${JSON.stringify(set.json)}`);
    const text = async (h) => {
      const r = await post(s.url, call(2, "log", { message: "m" }), h);
      if (r.json) return r.json.result.content[0].text;
      let m;
      while ((m = await within(WAIT_MS, "log answer", r.sse.message())) && m.id !== 2);
      return m.result.content[0].text;
    };
    ok((await text(a)).startsWith("not sent"), "A: above info");
    eq(await text(b), "logged", "B: still info");
  }));

check("list_changed on the GET stream; Last-Event-ID replays", () =>
  withServer(DEMO, ["--http", "0"], async (s) => {
    const h = await initialize(s.url);
    const g = await fetch(s.url, { headers: { ...h, accept: "text/event-stream" } });
    eq(g.status, 200, "GET");
    const gs = sseReader(g);
    eq((await fetch(s.url, { headers: { ...h, accept: "text/event-stream" } })).status,
      409, "second GET stream");
    const r = await post(s.url, call(1, "notify_changed"), h);
    const m = await within(WAIT_MS, "list_changed", gs.message());
    eq(m.method, "notifications/tools/list_changed", "on the GET stream");
    ok(!r.sse || !(r.sse.events.some((e) => e.data.includes("list_changed"))), "not on POST");
    await gs.cancel();
    // Missed while no GET stream was open: delivered on the next one.
    await post(s.url, call(2, "notify_changed"), h);
    const g2 = sseReader(await fetch(s.url, { headers: { ...h, accept: "text/event-stream",
      "last-event-id": m._id } }));
    const m2 = await within(WAIT_MS, "replayed", g2.message());
    eq(m2.method, "notifications/tools/list_changed", "replayed after Last-Event-ID");
    ok(m2._id !== m._id, "the newer one");
    await g2.cancel();
  }));

check("--auth: 401 with resource_metadata unless the bearer token", () =>
  withServer(DEMO, ["--http", "0", "--auth", "s3cret"], async (s) => {
    const r = await post(s.url, { jsonrpc: "2.0", id: 0, method: "initialize", params: INIT });
    eq(r.res.status, 401, "no token");
    eq(r.res.headers.get("www-authenticate"), `Bearer resource_metadata="http://127.0.0.1:${s.port}/.well-known/oauth-protected-resource"`, "challenge");
    eq((await post(s.url, { jsonrpc: "2.0", id: 0, method: "initialize", params: INIT },
      { authorization: "Bearer wrong" })).res.status, 401, "wrong token");
    const md = await fetch(`http://127.0.0.1:${s.port}/.well-known/oauth-protected-resource`);
    eq((await md.json()).resource, s.url, "resource metadata");
    const h = await initialize(s.url, { authorization: "Bearer s3cret" });
    eq((await post(s.url, call(1, "echo", { text: "in" }), h)).json.result.content[0].text, "in", "with token");
  }));

check("--expire-after 3: the 4th POST of a session gets 404, a new one works", () =>
  withServer(DEMO, ["--http", "0", "--expire-after", "3"], async (s) => {
    const h = await initialize(s.url); // 2 POSTs
    eq((await post(s.url, call(1, "echo", { text: "a" }), h)).res.status, 200, "3rd");
    eq((await post(s.url, call(2, "echo", { text: "b" }), h)).res.status, 404, "4th");
    eq((await post(s.url, call(3, "echo", { text: "c" }), h)).res.status, 404, "stays gone");
    const h2 = await initialize(s.url);
    eq((await post(s.url, call(1, "echo", { text: "d" }), h2)).res.status, 200, "new session");
  }));

check("--drop-sse-once: cut after the priming event, resumed by GET", () =>
  withServer(DEMO, ["--http", "0", "--drop-sse-once"], async (s) => {
    const h = await initialize(s.url);
    const r = await post(s.url, call(1, "echo", { text: "late" }), h);
    const first = await within(WAIT_MS, "priming", r.sse.next());
    ok(first?.id && first.data === "", "priming event with an id");
    eq(await within(WAIT_MS, "cut", r.sse.next()), null, "then nothing");
    ok(r.sse.cut, "cut, not ended");
    const g = sseReader(await fetch(s.url, { headers: { ...h,
      accept: "text/event-stream", "last-event-id": first.id } }));
    const m = await within(WAIT_MS, "resumed answer", g.message());
    eq(m.result.content[0].text, "late", "answer on the resumed stream");
    eq(await within(WAIT_MS, "end", g.next()), null, "resumed stream ends");
    const r2 = await post(s.url, call(2, "echo", { text: "once" }), h);
    eq(r2.json?.result.content[0].text, "once", "only once");
  }));

check("--drop-sse-unresumable: resuming ends without the answer", () =>
  withServer(DEMO, ["--http", "0", "--drop-sse-unresumable"], async (s) => {
    const h = await initialize(s.url);
    const r = await post(s.url, call(1, "echo", { text: "lost" }), h);
    const first = await within(WAIT_MS, "priming", r.sse.next());
    eq(await within(WAIT_MS, "cut", r.sse.next()), null, "cut");
    const g = await fetch(s.url, { headers: { ...h, accept: "text/event-stream",
      "last-event-id": first.id } });
    eq(g.status, 200, "resumption");
    eq(await within(WAIT_MS, "empty", sseReader(g).message()), null, "no answer");
  }));

check("--hang-after 3: the 4th POST gets nothing", () =>
  withServer(DEMO, ["--http", "0", "--hang-after", "3"], async (s) => {
    const h = await initialize(s.url);
    eq((await post(s.url, call(1, "echo", { text: "a" }), h)).res.status, 200, "3rd");
    const ac = new AbortController();
    const t = setTimeout(() => ac.abort(), 400);
    const got = await fetch(s.url, { method: "POST", signal: ac.signal,
      headers: { "content-type": "application/json", accept: ACCEPT, ...h },
      body: JSON.stringify(call(2, "echo", { text: "b" })) })
      .then(() => "answered", (e) => e.name);
    clearTimeout(t);
    eq(got, "AbortError", "no answer in 400 ms");
  }));

check("--legacy-sse: endpoint event, POST to it, answers on the stream", () =>
  withServer(DEMO, ["--http", "0", "--legacy-sse"], async (s) => {
    const base = `http://127.0.0.1:${s.port}`;
    eq((await post(`${base}/mcp`, { jsonrpc: "2.0", id: 0, method: "initialize",
      params: INIT })).res.status, 405, "POST to the main URL");
    const g = sseReader(await fetch(`${base}/sse`, { headers: { accept: "text/event-stream" } }));
    const ep = await within(WAIT_MS, "endpoint", g.next());
    eq(ep.event, "endpoint", "first event");
    const target = new URL(ep.data, base).href;
    const p = await post(target, { jsonrpc: "2.0", id: 5, method: "initialize",
      params: { ...INIT, protocolVersion: "2024-11-05" } });
    eq(p.res.status, 202, "POST accepted");
    const m = await within(WAIT_MS, "answer", g.message());
    eq(m.id, 5, "answer on the stream");
    eq(m.result.protocolVersion, "2024-11-05", "legacy revision");
    await g.cancel();
  }));

check("Host or Origin not loopback: 403", () =>
  withServer(CONF, ["--http", "0"], async (s) => {
    const r = await new Promise((resolve, reject) => {
      const sock = net.connect(s.port, "127.0.0.1", () => {
        sock.end("POST /mcp HTTP/1.1\r\nHost: evil.example.com\r\n" +
          "Content-Type: application/json\r\nContent-Length: 2\r\n" +
          "Connection: close\r\n\r\n{}");
      });
      let out = "";
      sock.on("data", (d) => { out += d; });
      sock.on("end", () => resolve(out));
      sock.on("error", reject);
    });
    ok(r.startsWith("HTTP/1.1 403"), `got ${r.slice(0, 40)}`);
    const o = await post(s.url, { jsonrpc: "2.0", id: 0, method: "initialize", params: INIT },
      { origin: "http://evil.example.com" });
    eq(o.res.status, 403, "Origin");
  }));

// A raw POST of an initialize to host:port with the given Host header;
// resolves with the status line.
function rawInit(host, port, hostHeader) {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: INIT });
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, host, () => {
      sock.end(`POST /mcp HTTP/1.1\r\nHost: ${hostHeader}\r\n` +
        `Content-Type: application/json\r\nAccept: ${ACCEPT}\r\n` +
        `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    });
    let out = "";
    sock.on("data", (d) => { out += d; });
    sock.on("end", () => resolve(out.split("\r\n")[0]));
    sock.on("error", reject);
  });
}

// This host's first non-loopback IPv4 address, or null.
function outerAddress() {
  for (const list of Object.values(os.networkInterfaces()))
    for (const a of list ?? [])
      if (a.family === "IPv4" && !a.internal) return a.address;
  return null;
}

// In a container the published port arrives on eth0: --listen-all binds
// every address, and the Host the client names (127.0.0.1:HOSTPORT) passes.
check("--listen-all: reached on a non-loopback address with Host 127.0.0.1:PORT; other Hosts 403; needs --http", async () => {
  const outer = outerAddress();
  if (outer) {
    await withServer(DEMO, ["--http", "0"], async (s) => {
      const r = await rawInit(outer, s.port, `127.0.0.1:${s.port}`).catch((e) => e.code);
      eq(r, "ECONNREFUSED", "without --listen-all, a non-loopback address");
    });
  }
  await withServer(DEMO, ["--http", "0", "--listen-all"], async (s) => {
    const at = outer ?? "127.0.0.1";
    eq(await rawInit(at, s.port, "127.0.0.1:31999"), "HTTP/1.1 200 OK", `initialize on ${at}`);
    ok((await rawInit(at, s.port, "evil.example.com")).startsWith("HTTP/1.1 403"), "a foreign Host");
  });
  const bad = new Server(DEMO, ["--listen-all"]);
  const r = await within(WAIT_MS, "exit", bad.exited);
  ok(r.code !== 0 && bad.stderr.includes("need --http"), `without --http: ${r.code} ${bad.stderr}`);
});

check("a taken port: exit 98 and EADDRINUSE on stderr; --http-env", async () => {
  const squat = net.createServer();
  await new Promise((r) => squat.listen(0, "127.0.0.1", r));
  const port = squat.address().port;
  try {
    for (const [bin, args, env] of [[DEMO, ["--http", String(port)]],
      [CONF, ["--http-env", "FIX_PORT"], { FIX_PORT: String(port) }]]) {
      const s = new Server(bin, args, env);
      const r = await within(WAIT_MS, "exit", s.exited);
      eq(r.code, 98, `${path.basename(bin)} exit code`);
      ok(s.stderr.includes("EADDRINUSE"), `says EADDRINUSE: ${s.stderr}`);
    }
  } finally {
    squat.close();
  }
});

check("--heartbeat 50: comments on an open GET stream", () =>
  withServer(CONF, ["--http", "0", "--heartbeat", "50"], async (s) => {
    const h = await initialize(s.url);
    const g = await fetch(s.url, { headers: { ...h, accept: "text/event-stream" } });
    const reader = g.body.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes(": heartbeat\n\n"))
      text += (await within(WAIT_MS, "heartbeat", reader.read())).value;
    await reader.cancel();
  }));

check("SIGTERM while a client does not read a large answer: exits 0 at once", () =>
  withServer(DEMO, ["--http", "0", "--echo-repeat", "100000"], async (s) => {
    const h = await initialize(s.url);
    const body = JSON.stringify(call(1, "echo", { text: "x".repeat(200) }));
    const sock = net.connect(s.port, "127.0.0.1");
    await new Promise((r) => sock.on("connect", r));
    sock.pause(); // 20 MB of answer, never read
    sock.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
      `Content-Type: application/json\r\nAccept: ${ACCEPT}\r\n` +
      `Mcp-Session-Id: ${h["mcp-session-id"]}\r\nConnection: close\r\n` +
      `Content-Length: ${body.length}\r\n\r\n${body}`);
    await new Promise((r) => setTimeout(r, 300));
    // stop() holds it to a clean exit within WAIT_MS of SIGTERM,
    // blocked writing or not.
    await s.stop();
    sock.destroy();
    s.stop = async () => {};
  }));

check("--slow-start: nothing listens before the delay", async () => {
  const t0 = Date.now();
  await withServer(DEMO, ["--http", "0", "--slow-start", "300"], async (s) => {
    ok(Date.now() - t0 >= 300, "listening after 300 ms");
    await initialize(s.url);
  });
});

let passed = 0;
let failed = 0;
for (const c of checks) {
  try {
    await within(20000, c.name, c.fn());
    passed++;
    console.log(`PASS ${c.name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${c.name}: ${e.message}${e.cause ? ` (${e.cause.message ?? e.cause})` : ""}`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
