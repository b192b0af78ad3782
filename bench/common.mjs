// Shared by the benchmark's modules: the three clients, the sim's
// environment and its bench_events requests, runs in a fresh process or with a
// time limit, CPU, thread, descriptor and child-process accounting from /proc,
// and a gc() for settling between runs.
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import v8 from "node:v8";
import vm from "node:vm";
import { root, runScript } from "../scripts/lib/repo.mjs";
import { PureClient } from "./pure-js-client.mjs";
import { ReadlineClient } from "./readline-client.mjs";

const require = createRequire(import.meta.url);
export const SIM = join(root, "bin", "koma-sim");
let addon = null;
/**
 * The addon's Client class, loaded on first use (so that a process that never
 * uses the addon, or that measures what loading it adds, loads it only then).
 */
export function addonClient() {
  addon ??= require(join(root, "index.js"));
  return addon.Client;
}

/** addon: the native addon; js: the careful pure-JS client; readline: the anchors' way of reading. */
export const SIDES = ["addon", "js", "readline"];
export const SIDE_NAME = { addon: "addon", js: "pure JS", readline: "readline" };

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
  if (side === "addon") return new (addonClient())(opts);
  if (side === "js") return new PureClient(opts);
  if (side === "readline") return new ReadlineClient(opts);
  throw new Error(`unknown side ${side}`);
}

/**
 * The requests for `total` events in bench_events windows of `count` (of
 * `bytes` text each), then a detach: the input that has koma-sim send those
 * events and exit. `windows` is the number of bench_events requests.
 */
export function benchEventsInput({ count, bytes, total }) {
  const windows = Math.ceil(total / count);
  let input = "";
  for (let i = 1; i <= windows; i++) {
    input += `{"id":"${i}","method":"bench_events","params":{"count":${count},"bytes":${bytes}}}\n`;
  }
  input += `{"id":"${windows + 1}","method":"detach","params":{}}\n`;
  return { windows, input };
}

/**
 * Run `bench/<script> ...args` in a fresh Node process, killed after
 * `timeoutMs`. Resolves (never rejects) with the JSON of its last stdout line
 * (`result`, null if there is none) and how it ended: `ended` says so in
 * words, with the end of its stderr, for a run without a result.
 */
export async function runForResult(script, args, timeoutMs) {
  const { code, signal, out, err, timedOut } = await runScript(join("bench", script), args, { timeoutMs });
  let result = null;
  try {
    result = JSON.parse(out.trim().split("\n").pop());
  } catch {
    // no result
  }
  const how = timedOut ? `killed after ${(timeoutMs / 1000).toFixed(0)} s` : `exited ${code ?? signal}`;
  return { result, code, ended: `${script} ${how}${result ? "" : ` without a result: ${err.slice(-500)}`}` };
}

/** `n` state() calls on client `c`, `depth` at a time; resolves with how many answered "idle". */
export async function stateCalls(c, n, depth) {
  let started = 0;
  let idle = 0;
  const worker = async () => {
    while (started < n) {
      started++;
      const s = await c.state();
      if (s.status === "idle") idle++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(depth, n) }, worker));
  return idle;
}

/** `promise`, or a rejection naming `what` if it has not settled after `ms`. */
export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, rej) => {
      timer = setTimeout(() => rej(new Error(`${what}: not done within ${(ms / 1000).toFixed(0)} s`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** A real gc() without --expose-gc on the command line. */
export const gc = (() => {
  v8.setFlagsFromString("--expose-gc");
  return vm.runInNewContext("gc");
})();

let ticks = 100;
try {
  ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
} catch {
  /* keep 100 */
}

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
    } catch {
      /* gone */
    }
    out.byTid.set(tid, { t, comm });
  }
  return out;
}

/**
 * threadCpu() from schedstat: nanoseconds, not ticks (a turn of 10,000
 * events costs the main thread a few ticks at most), same shape.
 */
export function threadCpuFine() {
  const out = { main: 0, io: 0, other: 0, byTid: new Map() };
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      const t = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, "utf8").split(" ")[0]) / 1e9;
      const comm = readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim();
      out.byTid.set(tid, { t, comm });
    } catch {
      /* gone */
    }
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

/**
 * CPU seconds of a live process's threads now, from schedstat (nanoseconds,
 * not ticks: a koma-sim spends well under a tick on a few requests).
 */
export function processCpuFine(pid) {
  let ns = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      } catch {
        /* gone */
      }
    }
  } catch {
    /* gone */
  }
  return ns / 1e9;
}

/** CPU seconds of a child process (all its threads, live and exited). */
export function childCpu(pid) {
  return pid ? statTimes(`/proc/${pid}/stat`) : null;
}

// ------------------------------------------------------------------ process accounting (Linux /proc)
// (descriptors, child processes and peak RSS: scripts/lib/proc.mjs)

/** Threads of this process. */
export const threadCount = () => readdirSync("/proc/self/task").length;

/** This process's threads by name (comm), e.g. {node: 11, "koma-io": 2}. */
export function threadNames() {
  const out = {};
  for (const tid of readdirSync("/proc/self/task")) {
    let comm;
    try {
      comm = readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim();
    } catch {
      continue; // gone meanwhile
    }
    out[comm] = (out[comm] ?? 0) + 1;
  }
  return out;
}

/** `b - a` of two threadNames() samples, the names whose count changed: "koma-supervisor +100". */
export function threadNamesDelta(a, b) {
  const parts = [];
  for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
    const d = (b[k] ?? 0) - (a[k] ?? 0);
    if (d !== 0) parts.push(`${k} ${d > 0 ? "+" : ""}${d}`);
  }
  return parts.join(", ");
}

/** A number from /proc/<pid>/status (kB fields in bytes), or null. */
export function procStatus(pid, field) {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+)( kB)?`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * (m[2] ? 1024 : 1) : null;
  } catch {
    return null;
  }
}

/** The limits that bound how many clients can run at once, and what the system has now. */
export function systemLimits() {
  const num = (path) => {
    try {
      return Number(readFileSync(path, "utf8").trim());
    } catch {
      return NaN;
    }
  };
  const lim = {};
  try {
    for (const line of readFileSync("/proc/self/limits", "utf8").split("\n")) {
      const m = /^Max (open files|processes)\s+(\S+)\s+(\S+)/.exec(line);
      if (m) lim[m[1]] = { soft: m[2] === "unlimited" ? Infinity : Number(m[2]), hard: m[3] === "unlimited" ? Infinity : Number(m[3]) };
    }
  } catch {
    /* not Linux */
  }
  let tasksNow = NaN;
  try {
    tasksNow = Number(readFileSync("/proc/loadavg", "utf8").split(" ")[3].split("/")[1]);
  } catch {
    /* keep NaN */
  }
  const memAvailable = (() => {
    try {
      return Number(/^MemAvailable:\s+(\d+) kB/m.exec(readFileSync("/proc/meminfo", "utf8"))[1]) * 1024;
    } catch {
      return NaN;
    }
  })();
  return {
    nofile: lim["open files"] ?? { soft: NaN, hard: NaN },
    nproc: lim.processes ?? { soft: NaN, hard: NaN },
    pidMax: num("/proc/sys/kernel/pid_max"),
    threadsMax: num("/proc/sys/kernel/threads-max"),
    tasksNow,
    memAvailable,
  };
}
