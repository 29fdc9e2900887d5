// Lets the conformance suite (which imports `globSync` from "fs", new in
// node 22) load on node 20: load with `node --import ./globsync-shim.mjs`.
// A named ESM import of a builtin cannot be patched in place, so a resolve
// hook sends every import of "fs" to globsync-fs.mjs, which re-exports fs
// and adds globSync. On node 22 and later this does nothing.
import fs from "node:fs";
import { register } from "node:module";

if (typeof fs.globSync !== "function")
  register("./globsync-hooks.mjs", import.meta.url);
