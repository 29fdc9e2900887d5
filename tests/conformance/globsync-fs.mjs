// Node's fs plus a small globSync for node < 22, enough for the conformance
// suite, which calls globSync("**/checks.json", { cwd }) to gather results.
// Supports "**", "*", "?" and [...] classes in "/"-separated patterns;
// returns paths relative to cwd; entries starting with "." match only a
// pattern segment that starts with "." too.
import fs from "node:fs";
import path from "node:path";

export * from "node:fs";
export default fs;

function segmentRegExp(seg) {
  let re = "";
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i];
    if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else if (c === "[") {
      const end = seg.indexOf("]", i + 2);
      if (end < 0) { re += "\\["; continue; }
      let body = seg.slice(i + 1, end).replace(/\\/g, "\\\\");
      if (body[0] === "!") body = "^" + body.slice(1);
      re += "[" + body + "]";
      i = end;
    } else re += c.replace(/[.+^${}()|\\\]]/g, "\\$&");
  }
  return new RegExp("^" + re + "$");
}

function readDir(dir) {
  try {
    return fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

function walk(root, rel, segs, out) {
  if (segs.length === 0) {
    if (rel !== "") out.add(rel);
    return;
  }
  const [seg, ...rest] = segs;
  const here = path.join(root, rel);
  if (seg === "**") {
    walk(root, rel, rest, out); // "**" may match no directory at all
    for (const e of readDir(here))
      if (e.isDirectory() && !e.name.startsWith("."))
        walk(root, path.join(rel, e.name), segs, out);
    return;
  }
  if (!/[*?[]/.test(seg)) {
    const next = path.join(rel, seg);
    if (fs.existsSync(path.join(root, next))) walk(root, next, rest, out);
    return;
  }
  const re = segmentRegExp(seg);
  for (const e of readDir(here)) {
    if (e.name.startsWith(".") && !seg.startsWith(".")) continue;
    if (!re.test(e.name)) continue;
    if (rest.length > 0 && !e.isDirectory()) continue;
    walk(root, path.join(rel, e.name), rest, out);
  }
}

export function globSync(pattern, options = {}) {
  const cwd = options.cwd ? String(options.cwd) : process.cwd();
  const out = new Set();
  for (const p of Array.isArray(pattern) ? pattern : [pattern]) {
    const abs = path.isAbsolute(p);
    const segs = p.split("/").filter((s) => s !== "" && s !== ".");
    walk(abs ? "/" : cwd, "", segs, out);
  }
  const found = [...out].map((p) => (p === "" ? "." : p));
  const exclude = options.exclude;
  return typeof exclude === "function"
    ? found.filter((p) => !exclude(p))
    : found;
}
