// Shared by bench/run.mjs and bench/rss-one.mjs: the two clients, the sim's
// environment, CPU accounting from /proc, and a gc() for settling between runs.
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import v8 from "node:v8";
import vm from "node:vm";
import { PureClient } from "./pure-js-client.mjs";

const require = createRequire(import.meta.url);
export const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const SIM = join(root, "bin", "koma-sim");
export const { Client } = require(join(root, "index.js"));

export const SIDES = ["addon", "js"];
export const SIDE_NAME = { addon: "addon", js: "pure JS" };

let home = null;
/** One KOMA_SIM_HOME for the whole run (bench methods need no session; state never touches disk). */
export function simEnv() {
  if (!home) {
    home = mkdtempSync(join(tmpdir(), "koma-bench-home-"));
    process.on("exit", () => rmSync(home, { recursive: true, force: true }));
  }
  return { KOMA_SIM_BENCH: "1", KOMA_SIM_DELAY_MS: "0", KOMA_SIM_HOME: home };
}

export function makeClient(side) {
  const opts = { executable: SIM, env: simEnv() };
  return side === "addon" ? new Client(opts) : new PureClient(opts);
}

/** A real gc() without --expose-gc on the command line. */
export const gc = (() => {
  v8.setFlagsFromString("--expose-gc");
  return vm.runInNewContext("gc");
})();

let ticks = 100;
try {
  ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
} catch { /* keep 100 */ }

function statTimes(path) {
  try {
    const s = readFileSync(path, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / ticks; // utime + stime (fields 14, 15)
  } catch {
    return null;
  }
}

/** CPU seconds of this process's threads, grouped: the JS main thread, koma-io (tokio), the rest. */
export function threadCpu() {
  const out = { main: 0, io: 0, other: 0, byTid: new Map() };
  for (const tid of readdirSync("/proc/self/task")) {
    const t = statTimes(`/proc/self/task/${tid}/stat`);
    if (t === null) continue;
    let comm = "";
    try {
      comm = readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim();
    } catch { /* gone */ }
    out.byTid.set(tid, { t, comm });
  }
  return out;
}

/** The delta of two threadCpu() samples, grouped. */
export function threadDelta(a, b) {
  const d = { main: 0, io: 0, other: 0 };
  for (const [tid, { t, comm }] of b.byTid) {
    const dt = t - (a.byTid.get(tid)?.t ?? 0);
    if (Number(tid) === process.pid) d.main += dt;
    else if (comm.startsWith("koma-io")) d.io += dt;
    else d.other += dt;
  }
  return d;
}

/** CPU seconds of a child process (all its threads, live and exited). */
export function childCpu(pid) {
  return pid ? statTimes(`/proc/${pid}/stat`) : null;
}
