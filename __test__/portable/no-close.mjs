// Helper of smoke.mjs, run as its own process by the runtime under test:
// starts a client, prints koma's pid, then either ends without close()
// (KOMA_PORTABLE_MODE=forget) or waits with a request in flight until it is
// killed (KOMA_PORTABLE_MODE=hang).
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const { Client } = require(join(dirname(fileURLToPath(import.meta.url)), "..", "..", "index.js"));
const mode = process.env.KOMA_PORTABLE_MODE;
const client = new Client({
  executable: process.env.KOMA_PORTABLE_SIM,
  env: { KOMA_SIM_DELAY_MS: "0", ...(mode === "hang" ? { KOMA_SIM_FAULT: "never_answer" } : {}) },
});
if (mode === "hang") {
  await client.probe();
  client.create({}).catch(() => {}); // never answered: a request in flight
  setInterval(() => {}, 1000);
} else {
  await client.create({});
}
console.log(client.pid);
