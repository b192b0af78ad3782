// koma-sim's session file under a long session: N `run()`s one after the
// other in one session of one koma-sim (KOMA_SIM_DELAY_MS=0, saving on, the
// keyword agent's plain reply), as a test suite or a benchmark with many
// turns drives it. It reports the total time, the time of the first and the
// last turns (the median of each 100), what koma-sim wrote (from its
// /proc/<pid>/io `wchar`: every write, stdout included) per turn at the start
// and at the end, koma-sim's peak memory (VmHWM) and the session file's size.
// A turn's cost must not grow with the session's length: the last turns
// take what the first ones do.
//
//   node bench/sim-session.mjs                 10,000 turns with bin/koma-sim
//   node bench/sim-session.mjs --turns 2000    another number of turns
//   node bench/sim-session.mjs --sim PATH      another koma-sim (one built from an older commit)
//   node bench/sim-session.mjs --smoke         200 turns; exits 1 when a turn fails (no timing asserted)
import { readFileSync, readdirSync, rmSync, mkdtempSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root } from "../scripts/lib/repo.mjs";
import { SIM, procStatus } from "./common.mjs";
import { median } from "./stats.mjs";

const require = createRequire(import.meta.url);
const { Client } = require(join(root, "index.js"));
const argv = process.argv.slice(2);
const argOf = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const SMOKE = argv.includes("--smoke");
const TURNS = Number(argOf("--turns") ?? (SMOKE ? 200 : 10_000));
const sim = argOf("--sim") ?? SIM;
const WINDOW = Math.min(100, Math.floor(TURNS / 2));
if (!Number.isSafeInteger(TURNS) || TURNS < 2) {
  console.error("--turns takes an integer of at least 2");
  process.exit(2);
}

/** Bytes koma-sim has written so far (every write(2): stdout, stderr and files). */
const written = (pid) => Number(/^wchar: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, "utf8"))[1]);

const home = mkdtempSync(join(tmpdir(), "koma-bench-session-"));
process.on("exit", () => rmSync(home, { recursive: true, force: true }));
const client = new Client({ executable: sim, env: { KOMA_SIM_HOME: home, KOMA_SIM_DELAY_MS: "0" } });
const { session } = await client.create({});
const pid = client.pid;
const ms = [];
const bytes = [];
const started = process.hrtime.bigint();
for (let i = 0; i < TURNS; i++) {
  const w = written(pid);
  const t = process.hrtime.bigint();
  const r = await client.run({ text: `hello ${i}` }, { onApproval: "deny" });
  ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  bytes.push(written(pid) - w);
  if (r.status !== "completed") {
    console.error(`turn ${i + 1}: ${r.status}`);
    process.exit(1);
  }
}
const totalS = Number(process.hrtime.bigint() - started) / 1e9;
const hwm = procStatus(pid, "VmHWM");
await client.close();
const file = readdirSync(home).find((f) => f.startsWith(session));
const size = file ? statSync(join(home, file)).size : 0;

const first = ms.slice(0, WINDOW);
const last = ms.slice(-WINDOW);
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
console.log(`koma-sim ${sim}: ${TURNS} run()s in one session (saving on), ${new Date().toISOString()}`);
console.log(`  total:                     ${totalS.toFixed(1)} s (${((totalS * 1000) / TURNS).toFixed(2)} ms per turn)`);
console.log(`  a turn, first ${WINDOW} (median): ${median(first).toFixed(2)} ms, written ${kib(median(bytes.slice(0, WINDOW)))}`);
console.log(`  a turn, last ${WINDOW} (median):  ${median(last).toFixed(2)} ms, written ${kib(median(bytes.slice(-WINDOW)))}`);
console.log(`  the last turn:             ${ms.at(-1).toFixed(2)} ms`);
console.log(`  koma-sim's peak memory:    ${(hwm / 1048576).toFixed(1)} MiB (VmHWM)`);
console.log(`  the session file:          ${kib(size)}`);
