// The benchmark of @koma/sdk: the native addon against a pure-JavaScript
// client of the same protocol (bench/pure-js-client.mjs), both driving
// koma-sim in bench mode, in this one process, alternating addon, pure JS,
// addon, pure JS, ... for every workload.
//
//   node bench/run.mjs            the real run (a few minutes at most)
//   node bench/run.mjs --smoke    every workload with tiny counts; exits 0 when
//                                 all completed correctly (no timing asserted)
//   options: --pairs N (pairs per workload), --only w1,w3 (a subset)
//
// Throughput ratios are addon / pure JS: above 1 the addon is faster.
import { execFileSync, spawn } from "node:child_process";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { SIDES, SIDE_NAME, SIM, childCpu, gc, makeClient, root, simEnv, threadCpu, threadDelta } from "./common.mjs";

const argv = process.argv.slice(2);
const SMOKE = argv.includes("--smoke");
const argOf = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const PAIRS = Number(argOf("--pairs") ?? (SMOKE ? 1 : 5));
const ONLY = argOf("--only")?.split(",");

const MIB = 1 << 20;
const FRAME_LIMIT = 41_943_040;
const BLOB_OVERHEAD = 30 + 2; // {"id":"N","result":{"blob":"…"}}: 30 bytes plus an id of at most 2 digits
const EVENT_BOUND = 256; // the client's event buffer bound (A.12)

// Sizes of the real run and of the smoke run.
const P = SMOKE
  ? {
    small: { count: 200, bytes: 200, total: 2_000 },
    big: { count: 16, bytes: 64 * 1024, total: 64 },
    seq: { n: 200 },
    inflight: { n: 2_000, depth: 64 },
    blob: { bytes: 1 * MIB },
    steady: { rate: 20_000, seconds: 0.25, bytes: 200, perRequest: 32, maxBurst: 64 },
  }
  : {
    small: { count: 200, bytes: 200, total: 400_000 },
    big: { count: 16, bytes: 64 * 1024, total: 4_000 },
    seq: { n: 20_000 },
    inflight: { n: 100_000, depth: 64 },
    blob: { bytes: FRAME_LIMIT - BLOB_OVERHEAD },
    steady: { rate: 60_000, seconds: 3, bytes: 200, perRequest: 64, maxBurst: 128 },
  };
const WARM = {
  small: { count: 200, bytes: 200, total: 20_000 },
  big: { count: 16, bytes: 64 * 1024, total: 256 },
  seq: { n: 2_000 },
  inflight: { n: 10_000, depth: 64 },
  steady: { rate: 60_000, seconds: 0.3, bytes: 200, perRequest: 64, maxBurst: 128 },
};

const failures = [];
const fail = (what) => {
  failures.push(what);
  console.error(`FAIL: ${what}`);
};

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, rej) => {
      timer = setTimeout(() => rej(new Error(`${what}: no end within ${ms / 1000} s`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

// ------------------------------------------------------------------ workloads

/**
 * Events through `for await`: bench_events windows of `count`, pipelined so
 * that events requested and not yet taken never exceed the 256-frame bound
 * (no overflow by construction, and the sim never idles waiting for a request).
 */
async function eventsWorkload(c, { count, bytes, total }) {
  const windows = Math.ceil(total / count);
  let requested = 0;
  let reqs = 0;
  let taken = 0;
  let answered = 0;
  let textBytes = 0;
  let lastSeq = -1;
  let seqErrors = 0;
  let overflows = 0;
  const answers = [];
  const issue = () => {
    while (reqs < windows && requested - taken + count <= EVENT_BOUND) {
      answers.push(c.request("bench_events", { count, bytes }).then((r) => {
        if (r.count !== count) throw new Error(`bench_events answered ${JSON.stringify(r)}`);
        answered++;
      }));
      reqs++;
      requested += count;
    }
  };
  issue();
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  for await (const e of c.events()) {
    if (e.type === "event") {
      textBytes += e.data.text.length;
      if (lastSeq !== -1 && e.seq !== lastSeq + 1) seqErrors++;
      lastSeq = e.seq;
      taken++;
    } else {
      overflows++;
      taken += e.dropped;
    }
    if (taken >= requested && reqs === windows) break;
    issue();
  }
  await Promise.all(answers);
  const seconds = (performance.now() - t0) / 1000;
  const elu = performance.eventLoopUtilization(elu0).utilization;
  const n = windows * count;
  const ok = overflows === 0 && seqErrors === 0 && answered === windows && textBytes === n * bytes;
  return {
    ok, seconds, units: n, rate: n / seconds, mbps: (n * bytes) / seconds / 1e6, elu,
    detail: ok ? "" : `overflows ${overflows}, seq errors ${seqErrors}, answered ${answered}/${windows}, text ${textBytes}/${n * bytes}`,
  };
}

async function sequentialWorkload(c, { n }) {
  let idle = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const s = await c.state();
    if (s.status === "idle") idle++;
  }
  const seconds = (performance.now() - t0) / 1000;
  return { ok: idle === n, seconds, units: n, rate: n / seconds, detail: idle === n ? "" : `${idle}/${n} idle` };
}

async function inflightWorkload(c, { n, depth }) {
  let started = 0;
  let idle = 0;
  const worker = async () => {
    while (started < n) {
      started++;
      const s = await c.state();
      if (s.status === "idle") idle++;
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: depth }, worker));
  const seconds = (performance.now() - t0) / 1000;
  return { ok: idle === n, seconds, units: n, rate: n / seconds, detail: idle === n ? "" : `${idle}/${n} idle` };
}

/**
 * A steady stream: every ~1 ms timer tick requests the events due by now at
 * `rate` (at most `maxBurst` per tick, in requests of at most `perRequest`),
 * and the events are consumed as they come. Busy share of the main thread =
 * performance.eventLoopUtilization() over the stream.
 */
async function steadyWorkload(c, { rate, seconds: duration, bytes, perRequest, maxBurst }) {
  const total = Math.round(rate * duration);
  let requested = 0;
  let answered = 0;
  let received = 0;
  let dropped = 0;
  let overflows = 0;
  let textBytes = 0;
  let outstanding = 0;
  let timer;
  const answers = [];
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  const tick = () => {
    const due = Math.min(total, Math.floor((rate * (performance.now() - t0)) / 1000));
    let burst = Math.min(due - requested, maxBurst);
    // Never more requests in flight than the protocol's 64 (A.11): a tick
    // that finds them all pending requests the rest on a later tick.
    while (burst > 0 && outstanding < 60) {
      const n = Math.min(burst, perRequest);
      outstanding++;
      answers.push(c.request("bench_events", { count: n, bytes }).then((r) => {
        outstanding--;
        answered += r.count;
      }));
      requested += n;
      burst -= n;
    }
    if (requested < total) timer = setTimeout(tick, 1);
  };
  tick();
  try {
    for await (const e of c.events()) {
      if (e.type === "event") {
        textBytes += e.data.text.length;
        received++;
      } else {
        overflows++;
        dropped += e.dropped;
      }
      if (received + dropped >= total) break;
    }
  } finally {
    clearTimeout(timer);
  }
  await Promise.all(answers);
  const seconds = (performance.now() - t0) / 1000;
  const elu = performance.eventLoopUtilization(elu0);
  const accounted = received + dropped === total && answered === total && textBytes === received * bytes;
  return {
    // An overflow is a result (the goal says none), not a broken run: the
    // run counts as long as every event is accounted for.
    ok: accounted,
    seconds, units: received, rate: received / seconds, elu: elu.utilization, overflows, dropped,
    detail: `${overflows} overflow(s), ${dropped} dropped${accounted ? "" : `; accounting off: received ${received} + dropped ${dropped} of ${total}, answered ${answered}`}`,
  };
}

// ------------------------------------------------------------------ runners

/** One measured run of one side in this process: fresh client, probe, warm state(), workload, close. */
async function runInProcess(side, fn, params) {
  gc();
  const c = makeClient(side);
  try {
    await c.probe();
    await c.state();
    const pid = c.pid;
    const cpu0 = process.cpuUsage();
    const th0 = threadCpu();
    const ch0 = childCpu(pid);
    const r = await withTimeout(fn(c, params), SMOKE ? 30_000 : 120_000, `${side} run`);
    const cpu = process.cpuUsage(cpu0);
    const th = threadDelta(th0, threadCpu());
    const ch1 = childCpu(pid);
    return {
      ...r,
      cpuSelf: (cpu.user + cpu.system) / 1e6,
      cpuMain: th.main,
      cpuIo: th.io,
      cpuOther: th.other,
      cpuChild: ch0 !== null && ch1 !== null ? ch1 - ch0 : NaN,
    };
  } catch (e) {
    return { ok: false, detail: `${e.code ?? "error"}: ${e.message}` };
  } finally {
    await c.close();
  }
}

/** One 40 MiB response in a fresh Node process (bench/rss-one.mjs). */
function runBlobChild(side, { bytes }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, "bench", "rss-one.mjs"), side, String(bytes)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      let r;
      try {
        r = JSON.parse(out.trim().split("\n").pop());
      } catch {
        r = { ok: false, error: `rss-one exited ${code}: ${err.slice(-500)}` };
      }
      const frame = bytes + BLOB_OVERHEAD - 1; // the ids there are one digit
      resolve({
        ok: !!r.ok && code === 0,
        seconds: r.seconds,
        units: 1,
        rate: 1 / r.seconds,
        growth: r.growth,
        frame,
        cpuSelf: r.cpu,
        jsBusy: r.jsBusy,
        detail: r.ok ? "" : r.error ?? "wrong blob",
      });
    });
  });
}

/** The peer alone: koma-sim writing the workload into `cat > /dev/null`. */
function peerRate({ count, bytes, total }) {
  const windows = Math.ceil(total / count);
  let input = "";
  for (let i = 1; i <= windows; i++) {
    input += `{"id":"${i}","method":"bench_events","params":{"count":${count},"bytes":${bytes}}}\n`;
  }
  input += `{"id":"${windows + 1}","method":"detach","params":{}}\n`;
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const sh = spawn("sh", ["-c", '"$0" sdk serve | cat > /dev/null', SIM], {
      env: { ...process.env, ...simEnv() },
      stdio: ["pipe", "ignore", "ignore"],
    });
    sh.on("error", reject);
    sh.on("close", (code) => {
      const seconds = (performance.now() - t0) / 1000;
      if (code !== 0) reject(new Error(`the peer pipeline exited ${code}`));
      else resolve({ seconds, rate: (windows * count) / seconds, mbps: (windows * count * bytes) / seconds / 1e6 });
    });
    sh.stdin.end(input);
  });
}

// ------------------------------------------------------------------ statistics and output

const median = (xs) => {
  const a = xs.filter((x) => Number.isFinite(x)).sort((x, y) => x - y);
  if (a.length === 0) return NaN;
  const m = a.length >> 1;
  return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2;
};

const fmtRate = (r) => {
  if (!Number.isFinite(r)) return "n/a";
  if (r >= 1e6) return `${(r / 1e6).toFixed(2)} M/s`;
  if (r >= 1e3) return `${(r / 1e3).toFixed(1)} k/s`;
  return `${r.toFixed(1)} /s`;
};
const fmtS = (s) => (Number.isFinite(s) ? `${s.toFixed(3)} s` : "n/a");
const fmtMiB = (b) => (Number.isFinite(b) ? `${(b / MIB).toFixed(1)} MiB` : "n/a");
const fmtX = (x) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : "n/a");
const fmtCpu = (r) => {
  const parts = [`${r.cpuSelf.toFixed(2)}`];
  if (Number.isFinite(r.cpuMain)) {
    parts.push(`(JS ${r.cpuMain.toFixed(2)}`, `io ${r.cpuIo.toFixed(2)}`, `other ${r.cpuOther.toFixed(2)})`);
  }
  if (Number.isFinite(r.cpuChild)) parts.push(`+ sim ${r.cpuChild.toFixed(2)}`);
  return parts.join(" ");
};
const medianCpu = (runs) => ({
  cpuSelf: median(runs.map((r) => r.cpuSelf)),
  cpuMain: median(runs.map((r) => r.cpuMain)),
  cpuIo: median(runs.map((r) => r.cpuIo)),
  cpuOther: median(runs.map((r) => r.cpuOther)),
  cpuChild: median(runs.map((r) => r.cpuChild)),
});

const WORKLOADS = [
  {
    key: "w1", name: "small events (200 B text, 200/window)",
    size: (p) => `${p.small.total.toLocaleString("en")} events`,
    run: (side, p) => runInProcess(side, eventsWorkload, p.small), warm: (side) => runInProcess(side, eventsWorkload, WARM.small),
    kind: "rate", goal: 1.5,
  },
  {
    key: "w2", name: "64 KiB events (16/window)",
    size: (p) => `${p.big.total.toLocaleString("en")} events`,
    run: (side, p) => runInProcess(side, eventsWorkload, p.big), warm: (side) => runInProcess(side, eventsWorkload, WARM.big),
    kind: "rate", goal: 1.8,
  },
  {
    key: "w3", name: "sequential state()",
    size: (p) => `${p.seq.n.toLocaleString("en")} round trips`,
    run: (side, p) => runInProcess(side, sequentialWorkload, p.seq), warm: (side) => runInProcess(side, sequentialWorkload, WARM.seq),
    kind: "rate", goal: 1.0,
  },
  {
    key: "w4", name: "state(), 64 in flight",
    size: (p) => `${p.inflight.n.toLocaleString("en")} round trips`,
    run: (side, p) => runInProcess(side, inflightWorkload, p.inflight), warm: (side) => runInProcess(side, inflightWorkload, WARM.inflight),
    kind: "rate", goal: 1.0,
  },
  {
    key: "w5", name: "one big response (fresh process each)",
    size: (p) => `frame ${(p.blob.bytes + BLOB_OVERHEAD - 1).toLocaleString("en")} B`,
    run: (side, p) => runBlobChild(side, p.blob), warm: null,
    kind: "blob", goal: 1.2, rssGoal: 2.5,
  },
  {
    key: "w6", name: "steady stream, main-thread busy",
    size: (p) => `${(p.steady.rate / 1000).toFixed(0)}k events/s × ${p.steady.seconds} s`,
    run: (side, p) => runInProcess(side, steadyWorkload, p.steady), warm: (side) => runInProcess(side, steadyWorkload, WARM.steady),
    kind: "elu", goal: 0.6, pairs: SMOKE ? 1 : Math.max(3, Math.min(PAIRS, 3)),
  },
];

function summarize(w, runs) {
  const a = runs.addon;
  const j = runs.js;
  const row = { key: w.key, name: w.name, size: w.size(P) };
  if (w.kind === "rate") {
    row.addon = median(a.map((r) => r.rate));
    row.js = median(j.map((r) => r.rate));
    row.ratio = row.addon / row.js;
    row.cells = [fmtRate(row.addon), fmtRate(row.js)];
    row.goalText = `≥ ${w.goal.toFixed(1)}×`;
    row.met = row.ratio >= w.goal;
    const mb = median(a.map((r) => r.mbps));
    if (Number.isFinite(mb) && w.key === "w2") {
      row.cells = [`${fmtRate(row.addon)} (${mb.toFixed(0)} MB/s)`, `${fmtRate(row.js)} (${median(j.map((r) => r.mbps)).toFixed(0)} MB/s)`];
    }
  } else if (w.kind === "blob") {
    const ta = median(a.map((r) => r.seconds));
    const tj = median(j.map((r) => r.seconds));
    const ga = median(a.map((r) => r.growth));
    const gj = median(j.map((r) => r.growth));
    const frame = a[0]?.frame ?? NaN;
    row.ratio = tj / ta;
    row.cells = [
      `${fmtS(ta)}, RSS +${fmtMiB(ga)} (${fmtX(ga / frame)} frame)`,
      `${fmtS(tj)}, RSS +${fmtMiB(gj)} (${fmtX(gj / frame)} frame)`,
    ];
    row.goalText = `≥ ${w.goal.toFixed(1)}×, RSS ≤ ${w.rssGoal}× frame`;
    row.met = row.ratio >= w.goal && ga / frame <= w.rssGoal;
    row.metText = `time ${row.ratio >= w.goal ? "met" : "NOT met"}, RSS ${ga / frame <= w.rssGoal ? "met" : "NOT met"}`;
  } else {
    const ea = median(a.map((r) => r.elu));
    const ej = median(j.map((r) => r.elu));
    const oa = a.reduce((s, r) => s + (r.overflows ?? 0), 0);
    const oj = j.reduce((s, r) => s + (r.overflows ?? 0), 0);
    row.ratio = ea / ej;
    row.cells = [
      `busy ${(ea * 100).toFixed(1)}% at ${fmtRate(median(a.map((r) => r.rate)))}, ${oa} overflow(s)`,
      `busy ${(ej * 100).toFixed(1)}% at ${fmtRate(median(j.map((r) => r.rate)))}, ${oj} overflow(s)`,
    ];
    row.goalText = `≤ ${w.goal.toFixed(1)}× of pure JS, no overflow`;
    row.met = row.ratio <= w.goal && oa === 0;
    row.ratioText = `${fmtX(row.ratio)} busy`;
  }
  row.cpuA = fmtCpu(medianCpu(a));
  row.cpuJ = fmtCpu(medianCpu(j));
  row.ratioText ??= fmtX(row.ratio);
  row.metText ??= row.met ? "met" : "NOT met";
  return row;
}

function printTable(rows, peer) {
  const head = ["workload", "size", "addon (median)", "pure JS (median)", "addon/pure JS", "goal", "", "CPU s addon", "CPU s pure JS"];
  const body = rows.map((r) => [r.name, r.size, ...r.cells, r.ratioText, r.goalText, r.metText, r.cpuA, r.cpuJ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => String(b[i]).length)));
  const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join("  ");
  console.log("\n" + line(head));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const b of body) console.log(line(b));
  console.log("\nCPU s: this process's user+sys during the timed part (JS = main thread, io = the addon's koma-io");
  console.log("threads, other = the rest: V8 GC helpers, libuv), + sim = the koma-sim child; medians of the runs.");
  if (peer) {
    console.log(`\nThe peer alone (koma-sim sdk serve | cat > /dev/null): small events ${fmtRate(peer.small.rate)} (${peer.small.mbps.toFixed(0)} MB/s), 64 KiB events ${fmtRate(peer.big.rate)} (${peer.big.mbps.toFixed(0)} MB/s).`);
  }
  console.log("\n### Markdown\n");
  const mdHead = ["Workload", "Size", "Addon (median)", "Pure JS (median)", "Addon / pure JS", "Goal", "Met", "CPU s addon", "CPU s pure JS"];
  console.log(`| ${mdHead.join(" | ")} |`);
  console.log(`|${mdHead.map((h, i) => (i >= 2 && i <= 4 ? "---:" : "---")).join("|")}|`);
  for (const b of body) console.log(`| ${b.map((c) => String(c).replace(/\|/g, "\\|")).join(" | ")} |`);
  if (peer) {
    console.log(`\nPeer alone (\`koma-sim sdk serve | cat > /dev/null\`): small events ${fmtRate(peer.small.rate)}, 64 KiB events ${fmtRate(peer.big.rate)}.`);
  }
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
    dirty = execFileSync("git", ["-C", root, "status", "--porcelain", "--untracked-files=no", "--", "src", "crates", "Cargo.toml", "Cargo.lock"], { encoding: "utf8" }).trim() ? " (src/crates modified)" : "";
  } catch { /* not a checkout */ }
  const mtime = `${mt(node ?? "none")} ${mt(join("bin", "koma-sim"))}`;
  return { mtime, text: `commit ${commit}${dirty}, ${node} built ${mt(node ?? "none")}, bin/koma-sim built ${mt(join("bin", "koma-sim"))}` };
}

/** One run of one workload on one side (for bench/profile-one.mjs). */
export async function runOne(key, side) {
  const w = WORKLOADS.find((x) => x.key === key);
  const { detail, ...r } = await w.run(side, P);
  return { key, side, ...r, detail };
}

// ------------------------------------------------------------------ main

if (!process.env.KOMA_BENCH_PROFILE) await main();

async function main() {
  const watchdog = setTimeout(() => {
    console.error(`FAIL: the ${SMOKE ? "smoke run" : "benchmark"} did not finish in time`);
    process.exit(1);
  }, SMOKE ? 120_000 : 900_000);
  watchdog.unref();

  const t0 = performance.now();
  const build = buildInfo();
  console.log(`addon: ${build.text}`);
  console.log(`koma-sdk benchmark${SMOKE ? " (smoke: tiny counts, no timing asserted)" : ""}: node ${process.version}, ${(await import("node:os")).cpus().length} CPU(s), load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}, pairs ${PAIRS}`);

  let peer = null;
  if (!ONLY || ONLY.includes("w1") || ONLY.includes("w2")) {
    try {
      const reps = SMOKE ? 1 : 3;
      const small = [];
      const big = [];
      for (let i = 0; i < reps; i++) {
        small.push(await peerRate(P.small));
        big.push(await peerRate(P.big));
      }
      const best = (xs) => ({ rate: median(xs.map((x) => x.rate)), mbps: median(xs.map((x) => x.mbps)) });
      peer = { small: best(small), big: best(big) };
      console.log(`peer alone (koma-sim | cat > /dev/null, median of ${reps}): small events ${fmtRate(peer.small.rate)}, 64 KiB events ${fmtRate(peer.big.rate)} (${peer.big.mbps.toFixed(0)} MB/s)`);
    } catch (e) {
      fail(`peer check: ${e.message}`);
    }
  }

  const rows = [];
  for (const w of WORKLOADS) {
    if (ONLY && !ONLY.includes(w.key)) continue;
    const pairs = w.pairs ?? PAIRS;
    console.log(`\n${w.key} ${w.name}: ${w.size(P)}, ${pairs} pair(s)`);
    if (!SMOKE && w.warm) {
      for (const side of SIDES) {
        const r = await w.warm(side);
        if (!r.ok) fail(`${w.key} warm-up ${side}: ${r.detail}`);
      }
    }
    const runs = { addon: [], js: [] };
    for (let i = 0; i < pairs; i++) {
      for (const side of SIDES) {
        const r = await w.run(side, P);
        const shown = w.kind === "elu" ? `busy ${(r.elu * 100).toFixed(1)}% ${fmtRate(r.rate)}${r.overflows ? " OVERFLOWED" : ""}`
          : w.kind === "blob" ? `${fmtS(r.seconds)} (JS thread busy ${fmtS(r.jsBusy)}) RSS +${fmtMiB(r.growth)}`
            : `${fmtRate(r.rate)} in ${fmtS(r.seconds)}${Number.isFinite(r.elu) ? `, JS thread busy ${(r.elu * 100).toFixed(0)}%` : ""}`;
        console.log(`  ${SIDE_NAME[side].padEnd(7)} #${i + 1}: ${r.ok ? shown : "FAILED"}${r.detail ? ` (${r.detail})` : ""}${Number.isFinite(r.cpuSelf) ? `; cpu ${fmtCpu(r)}` : ""}`);
        if (!r.ok) fail(`${w.key} ${side} #${i + 1}: ${r.detail}`);
        else runs[side].push(r);
      }
    }
    if (runs.addon.length && runs.js.length) rows.push(summarize(w, runs));
  }

  printTable(rows, peer);
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
