// Module resolve hook registered by globsync-shim.mjs: "fs" and "node:fs"
// resolve to the facade in globsync-fs.mjs, except from the facade itself.
const facade = new URL("./globsync-fs.mjs", import.meta.url).href;

export async function resolve(specifier, context, next) {
  if ((specifier === "fs" || specifier === "node:fs") &&
      context.parentURL !== facade)
    return { url: facade, shortCircuit: true };
  return next(specifier, context);
}
