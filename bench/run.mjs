// The benchmark of @koma/sdk: the native addon against two pure-JavaScript
// clients of the same protocol, all driving koma-sim in bench mode, in this
// one process, alternating addon, pure JS, readline, addon, pure JS, ... for
// every workload:
//   - pure JS (bench/pure-js-client.mjs): the careful client, Buffer line
//     splitting, one JSON.parse per line;
//   - readline (bench/readline-client.mjs): the same protocol logic reading
//     stdout the way the anchor SDKs (Codex, Claude Agent) do, through
//     `for await (const line of readline.createInterface(...))`.
// Event workloads also get their floor (bench/floor.mjs): the same events
// already in memory, turned into the iterator's objects by the cheapest
// JavaScript. Round-trip workloads get theirs from bench/rt-floor.mjs: the
// same state() round trips by one thread blocking in read and write on
// koma-sim's pipes. The peer alone (koma-sim answering every request written
// at once) is the ceiling of every client here. The scale workload
// (bench/scale.mjs) runs many clients at once, addon and pure JS alternating.
//
//   node bench/run.mjs            the real run (w1–w6 a few minutes; scale
//                                 longer: 2,000 clients at once)
//   node bench/run.mjs --smoke    every workload with tiny counts; exits 0 when
//                                 all completed correctly (no timing asserted)
//   options: --pairs N (rounds of each workload; a round runs every side once),
//            --only w1,w3,scale (a subset), --scale-n 100,1000,2000 (the N of
//            the scale workload), --scale-pairs N (its rounds; default --pairs)
//
// Throughput ratios are addon / peer: above 1 the addon is faster.
//
// This file is the command line and the order of the runs; the workloads and
// their sizes are in bench/workloads.mjs, the medians, ratios and goals in
// bench/stats.mjs, and what is printed in bench/tables.mjs.
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { root } from "../scripts/lib/repo.mjs";
import { SIDES, SIDE_NAME, gc } from "./common.mjs";
import { captureEvents, runFloor } from "./floor.mjs";
import { fmtScaleRun, scaleCapacity, scaleInChild } from "./scale.mjs";
import { median, summarize, summarizeScale } from "./stats.mjs";
import { fmtN, fmtRate, fmtRun, fmtS, fmtUs, peerText, printScaleTable, printTable } from "./tables.mjs";
import { WORKLOADS, peerRate, peerStateRate, runRtFloor, sizes } from "./workloads.mjs";

const argv = process.argv.slice(2);
const SMOKE = argv.includes("--smoke");
const argOf = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const PAIRS = Number(argOf("--pairs") ?? (SMOKE ? 1 : 5));
const ONLY = argOf("--only")?.split(",");
const SCALE_N = (argOf("--scale-n") ?? (SMOKE ? "10,50" : "100,1000,2000")).split(",").map(Number);
const SCALE_PAIRS = Number(argOf("--scale-pairs") ?? PAIRS);
const SCALE_SIDES = ["addon", "js"];
const KEYS = ["w1", "w2", "w3", "w4", "w5", "w6", "scale"];
const count = (n) => Number.isSafeInteger(n) && n >= 1;
for (const [what, ok] of [
  ["--pairs", count(PAIRS)],
  ["--scale-pairs", count(SCALE_PAIRS)],
  ["--scale-n", SCALE_N.every(count)],
  ["--only", !ONLY || ONLY.every((k) => KEYS.includes(k))],
]) {
  if (!ok) {
    console.error(`bad ${what} (workloads: ${KEYS.join(", ")}; counts are integers of at least 1)`);
    process.exit(2);
  }
}
const selected = (key) => !ONLY || ONLY.includes(key);
const P = sizes(SMOKE);
const MIB = 1 << 20;

const failures = [];
const fail = (what) => {
  failures.push(what);
  console.error(`FAIL: ${what}`);
};

/** What one scale run may take before it is killed (the build of 2ad1b33 took up to 175 s to start 2,000 clients on a busy 2-core machine). */
const scaleTimeout = (n) => (60 + n * 0.3) * 1000;

async function scaleSection() {
  const sp = P.scale;
  const perClientText = SCALE_N.map((n) => `${sp.perClient(n)} at N = ${fmtN(n)}`).join(", ");
  console.log(
    `\nscale: N = ${SCALE_N.map(fmtN).join(", ")}, ${SCALE_PAIRS} round(s) of ${SCALE_SIDES.map((s) => SIDE_NAME[s]).join(", ")}; state() calls per client: ${perClientText}, ${sp.depth} in flight per client`,
  );
  // A first small run of each side: what one client costs (descriptors,
  // threads, koma-sim's threads and memory), for the capacity check.
  const per = { fds: 0, baseFds: 0, threads: 0, simThreads: 0, simRss: 0 };
  for (const side of SCALE_SIDES) {
    const r = await scaleInChild(side, sp.warmClients, { perClient: 2, depth: 1 }, 60_000);
    console.log(`  sizing  ${fmtScaleRun(r)}`);
    if (!r.ok) {
      fail(`scale sizing run ${side}: ${r.detail}`);
      continue;
    }
    per.fds = Math.max(per.fds, Math.ceil(r.fdsOpen / r.n));
    per.baseFds = Math.max(per.baseFds, r.before?.fds ?? 0);
    per.threads = Math.max(per.threads, Math.ceil(r.threadsOverWarm / r.n));
    per.simThreads = Math.max(per.simThreads, r.simThreads ?? 0);
    per.simRss = Math.max(per.simRss, r.simRss ?? 0);
  }
  const cap = scaleCapacity(per);
  const lim = cap.limits;
  const limitsText =
    `open files ${lim.nofile.soft} (soft; hard ${lim.nofile.hard}; Node raises the soft limit to the hard one at startup), ` +
    `max user processes ${lim.nproc.soft}, pid_max ${lim.pidMax}, threads-max ${lim.threadsMax}, ${lim.tasksNow} tasks on the system now, ` +
    `${(lim.memAvailable / 2 ** 30).toFixed(1)} GiB available`;
  console.log(`  limits: ${limitsText}`);
  console.log(
    `  per client (sizing runs): ${per.fds} descriptors, ${per.threads} thread(s) of this process; koma-sim ${per.simThreads} threads, ${(per.simRss / MIB).toFixed(1)} MiB`,
  );
  console.log(`  at most ${fmtN(cap.max)} clients at once here, bound by ${cap.binding}`);
  const notes = [`Limits: ${limitsText}; at most ${fmtN(cap.max)} clients at once, bound by ${cap.binding}.`];
  const rows = [];
  for (const want of SCALE_N) {
    let n = want;
    if (cap.max < 1) {
      const msg = `N = ${fmtN(want)} skipped: this machine allows no client at once (${cap.binding}).`;
      console.log(`  ${msg}`);
      notes.push(msg);
      continue;
    }
    if (n > cap.max) {
      n = cap.max;
      const msg = `N = ${fmtN(want)} capped to ${fmtN(n)}: ${cap.binding}. Raise that limit (for descriptors: the hard \`ulimit -Hn\`, as root or in /etc/security/limits.conf) to run N = ${fmtN(want)}.`;
      console.log(`  ${msg}`);
      notes.push(msg);
    }
    console.log(`\nscale N = ${fmtN(n)}: ${SCALE_PAIRS} round(s)`);
    const runs = { addon: [], js: [] };
    const all = { addon: [], js: [] };
    for (let i = 0; i < SCALE_PAIRS; i++) {
      for (const side of SCALE_SIDES) {
        const r = await scaleInChild(side, n, { perClient: sp.perClient(n), depth: sp.depth }, scaleTimeout(n));
        console.log(`  ${r.ok ? "" : "FAILED "}#${i + 1} ${fmtScaleRun(r)}${r.detail ? ` (${r.detail})` : ""}`);
        all[side].push(r);
        if (!r.ok) fail(`scale N=${n} ${side} #${i + 1}: ${r.detail}`);
        else runs[side].push(r);
      }
    }
    rows.push(...summarizeScale(want, n, runs, all, sp.depth));
  }
  printScaleTable(rows, notes);
}

/** Which build is measured: the commit, whether src/ or crates/ differ from it, the artifacts' mtimes. */
function buildInfo() {
  const node = readdirSync(root).find((f) => f.endsWith(".node"));
  const mt = (f) => {
    try {
      return statSync(join(root, f)).mtime.toISOString();
    } catch {
      return "missing";
    }
  };
  let commit = "unknown";
  let dirty = "";
  try {
    commit = execFileSync("git", ["-C", root, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const status = ["status", "--porcelain", "--untracked-files=no", "--", "src", "crates", "Cargo.toml", "Cargo.lock"];
    const changed = execFileSync("git", ["-C", root, ...status], { encoding: "utf8" });
    dirty = changed.trim() ? " (src/crates modified)" : "";
  } catch {
    // not a checkout
  }
  const mtime = `${mt(node ?? "none")} ${mt(join("bin", "koma-sim"))}`;
  return {
    mtime,
    text: `commit ${commit}${dirty}, ${node} built ${mt(node ?? "none")}, bin/koma-sim built ${mt(join("bin", "koma-sim"))}`,
  };
}

/**
 * The peer alone: what koma-sim does with no client in the way, the ceiling
 * of every client in this harness (only for the workloads selected).
 */
async function peerSection() {
  const peer = {};
  const peerReps = SMOKE ? 1 : 3;
  const peerMedian = async (measure) => {
    const xs = [];
    for (let i = 0; i < peerReps; i++) xs.push(await measure());
    return { rate: median(xs.map((x) => x.rate)), mbps: median(xs.map((x) => x.mbps)) };
  };
  try {
    if (selected("w1") || selected("w2")) {
      peer.small = await peerMedian(() => peerRate(P.small));
      peer.big = await peerMedian(() => peerRate(P.big));
    }
    if (selected("w3") || selected("w4")) peer.state = await peerMedian(() => peerStateRate(P.inflight.n));
    if (Object.keys(peer).length) console.log(`peer alone (koma-sim | cat > /dev/null, median of ${peerReps}): ${peerText(peer)}`);
  } catch (e) {
    fail(`peer check: ${e.message}`);
  }
  return peer;
}

/**
 * The rounds of one workload: every round runs the three sides, then every
 * way of its floor. Its row of the table, or null when a side has no run that
 * completed.
 */
async function workloadSection(w, peer) {
  console.log(`\n${w.key} ${w.name}: ${w.size(P)}, ${PAIRS} round(s)`);
  // The floor's bytes are captured once (not timed) and held through the rounds.
  const floorRuns = [];
  let capture = null;
  let captureText = 0;
  if (w.floor) {
    const fp = w.floor(P);
    try {
      capture = await captureEvents(fp);
      captureText = capture.events * fp.bytes;
      if (!SMOKE) runFloor(capture, captureText); // warm-up
    } catch (e) {
      capture = null;
      fail(`${w.key} floor: ${e.message}`);
    }
  }
  if (!SMOKE && w.warm) {
    for (const side of SIDES) {
      const r = await w.warm(side);
      if (!r.ok) fail(`${w.key} warm-up ${side}: ${r.detail}`);
    }
  }
  let rtFloorOn = Boolean(w.rtFloor);
  const runs = { addon: [], js: [], readline: [] };
  for (let i = 0; i < PAIRS; i++) {
    for (const side of SIDES) {
      const r = await w.run(side, P);
      console.log(fmtRun(w, side, i, r));
      if (!r.ok) fail(`${w.key} ${side} #${i + 1}: ${r.detail}`);
      else runs[side].push(r);
    }
    if (capture) {
      gc();
      try {
        const rs = runFloor(capture, captureText, i);
        floorRuns.push(...rs);
        console.log(
          `  ${"floor".padEnd(8)} #${i + 1}: ${rs.map((r) => `${r.way} ${fmtRate(r.rate)} (${fmtUs(r.cpuSelf / r.events)} µs/${w.unit})`).join(", ")}`,
        );
      } catch (e) {
        capture = null;
        fail(`${w.key} floor: ${e.message}`);
      }
    }
    if (rtFloorOn) {
      const r = await runRtFloor(w.rtFloor(P), P.runMs);
      if (r.ok) {
        floorRuns.push(r);
        console.log(
          `  ${"floor".padEnd(8)} #${i + 1}: ${r.way} ${fmtRate(r.rate)} in ${fmtS(r.seconds)}, ${fmtUs(r.cpuSelf / r.events)} µs/${w.unit} + sim ${fmtUs(r.cpuChild / r.events)} µs/${w.unit}`,
        );
      } else {
        rtFloorOn = false;
        fail(`${w.key} floor: ${r.detail}`);
      }
    }
  }
  return SIDES.every((s) => runs[s].length) ? summarize(w, runs, floorRuns, peer, P) : null;
}

// ------------------------------------------------------------------ main

await main();

async function main() {
  const scaleBudget = selected("scale")
    ? 120 + SCALE_SIDES.length * SCALE_PAIRS * SCALE_N.reduce((s, n) => s + scaleTimeout(n) / 1000, 0)
    : 0;
  const budgetMs = ((SMOKE ? 120 : 900) + scaleBudget) * 1000;
  const watchdog = setTimeout(() => {
    console.error(`FAIL: the ${SMOKE ? "smoke run" : "benchmark"} did not finish in time`);
    process.exit(1);
  }, budgetMs);
  watchdog.unref();

  const t0 = performance.now();
  const build = buildInfo();
  console.log(`addon: ${build.text}`);
  console.log(
    `koma-sdk benchmark${SMOKE ? " (smoke: tiny counts, no timing asserted)" : ""}: node ${process.version}, ${cpus().length} CPU(s), load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}, rounds ${PAIRS} (${SIDES.map((s) => SIDE_NAME[s]).join(", ")})`,
  );

  const peer = await peerSection();
  const rows = [];
  for (const w of WORKLOADS) {
    if (!selected(w.key)) continue;
    const row = await workloadSection(w, peer);
    if (row) rows.push(row);
  }
  if (rows.length) printTable(rows, peer);

  if (selected("scale")) await scaleSection();

  const after = buildInfo();
  if (after.mtime !== build.mtime) {
    console.log(`WARNING: the addon or the sim was rebuilt during this run (${build.text} -> ${after.text}); the numbers mix builds`);
  }
  console.log(`\ntotal ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  if (failures.length) {
    console.error(`\n${failures.length} failure(s):\n  ${failures.join("\n  ")}`);
    process.exit(1);
  }
  console.log(SMOKE ? "smoke run: every workload completed correctly" : "all runs completed correctly");
  process.exit(0);
}
