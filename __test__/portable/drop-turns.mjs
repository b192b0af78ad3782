// Helper of smoke.mjs, run as its own process by the runtime under test: a
// program that drops Turns without reading their events, collects garbage
// (when the runtime lets it) while it runs and again as it exits, closes its
// client and prints "done". It never calls process.exit: the check is that
// the runtime then exits by itself (Node 20 before 20.12 could spin forever
// here when the package used a FinalizationRegistry: docs/platforms.md).
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import v8 from "node:v8";
import vm from "node:vm";

const require = createRequire(import.meta.url);
const { Client } = require(join(dirname(fileURLToPath(import.meta.url)), "..", "..", "index.js"));

/** A full collection where the runtime has one to call (Bun, Node; Deno's node:v8 ignores the flag). */
function gcFunction() {
  if (globalThis.Bun) return () => globalThis.Bun.gc(true);
  if (typeof globalThis.gc === "function") return globalThis.gc;
  try {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc");
    if (typeof gc === "function") return gc;
  } catch {
    // none: garbage is collected when the runtime decides
  }
  return () => {};
}
const collect = gcFunction();

const client = new Client({
  executable: process.env.KOMA_PORTABLE_SIM,
  env: { KOMA_SIM_DELAY_MS: "0" },
});
await client.create({});
// In a function of its own, so no frame keeps the Turn; its events are never read.
const dropOne = async (i) => (await client.turn({ text: `turn ${i}` }, { onApproval: "allow" }).result).status;
for (let i = 0; i < 20; i++) {
  const status = await dropOne(i);
  if (status !== "completed") throw new Error(`turn ${i}: ${status}`);
  if (i % 5 === 4) {
    collect();
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}
// The last Turns are garbage when the process exits: a collection then finds them.
await dropOne(20);
await dropOne(21);
process.on("exit", () => collect());
await client.close();
console.log("done");
