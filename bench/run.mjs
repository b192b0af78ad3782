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
// at once) is the ceiling of every client here. The scale workload (bench/scale.mjs) runs many clients at once,
// addon and pure JS alternating.
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
import { execFileSync, spawn } from "node:child_process";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { SIDES, SIDE_NAME, SIM, childCpu, gc, makeClient, root, runScript, simEnv, threadCpu, threadDelta } from "./common.mjs";
import { captureEvents, runFloor } from "./floor.mjs";
import { fmtScaleRun, scaleCapacity, scaleInChild } from "./scale.mjs";

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
    scale: { perClient: () => 5, depth: 2, warmClients: 2 },
  }
  : {
    small: { count: 200, bytes: 200, total: 400_000 },
    big: { count: 16, bytes: 64 * 1024, total: 4_000 },
    seq: { n: 20_000 },
    inflight: { n: 100_000, depth: 64 },
    blob: { bytes: FRAME_LIMIT - BLOB_OVERHEAD },
    steady: { rate: 60_000, seconds: 3, bytes: 200, perRequest: 64, maxBurst: 128 },
    // every client makes max(20, 20,000 / N) state() calls, 2 at a time
    scale: { perClient: (n) => Math.max(20, Math.ceil(20_000 / n)), depth: 2, warmClients: 20 },
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
async function runBlobChild(side, { bytes }) {
  const { result, code, ended } = await runScript("rss-one.mjs", [side, bytes], 60_000);
  const r = result ?? { ok: false, error: ended };
  const frame = bytes + BLOB_OVERHEAD - 1; // the ids there are one digit
  return {
    ok: !!r.ok && code === 0,
    seconds: r.seconds,
    units: 1,
    rate: 1 / r.seconds,
    growth: r.growth,
    frame,
    cpuSelf: r.cpu,
    jsBusy: r.jsBusy,
    detail: r.ok ? "" : r.error ?? "wrong blob",
  };
}

/** The peer alone: koma-sim writing the workload into `cat > /dev/null`. */
async function peerRate({ count, bytes, total }) {
  const windows = Math.ceil(total / count);
  let input = "";
  for (let i = 1; i <= windows; i++) {
    input += `{"id":"${i}","method":"bench_events","params":{"count":${count},"bytes":${bytes}}}\n`;
  }
  input += `{"id":"${windows + 1}","method":"detach","params":{}}\n`;
  const seconds = await peerSeconds(input);
  return { seconds, rate: (windows * count) / seconds, mbps: (windows * count * bytes) / seconds / 1e6 };
}

/** The peer alone answering `n` state() requests written all at once: no client answers faster. */
async function peerStateRate(n) {
  let input = "";
  for (let i = 1; i <= n; i++) input += `{"id":"${i}","method":"state","params":{}}\n`;
  input += `{"id":"${n + 1}","method":"detach","params":{}}\n`;
  const seconds = await peerSeconds(input);
  return { seconds, rate: n / seconds };
}

/** How long koma-sim takes to answer `input` (all of it written at once) into `cat > /dev/null`. */
function peerSeconds(input) {
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
      else resolve(seconds);
    });
    sh.stdin.end(input);
  });
}

/**
 * The floor of a round-trip workload (bench/rt-floor.mjs, in a fresh process,
 * killed if koma-sim stops answering), as a floor run: `events` are its round trips.
 */
async function runRtFloor(args) {
  const { result, code, ended } = await runScript("rt-floor.mjs", args, SMOKE ? 30_000 : 120_000);
  const r = result ?? { ok: false, detail: ended };
  return { ...r, ok: !!r.ok && code === 0, way: "blocking, one thread", events: r.units };
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
    key: "w1", name: "small events (200 B text, 200/window)", unit: "event",
    size: (p) => `${p.small.total.toLocaleString("en")} events`,
    run: (side, p) => runInProcess(side, eventsWorkload, p.small), warm: (side) => runInProcess(side, eventsWorkload, WARM.small),
    floor: (p) => p.small,
    kind: "rate", goal: 2.5, cpuGoal: 0.4,
  },
  {
    key: "w2", name: "64 KiB events (16/window)", unit: "event",
    size: (p) => `${p.big.total.toLocaleString("en")} events`,
    run: (side, p) => runInProcess(side, eventsWorkload, p.big), warm: (side) => runInProcess(side, eventsWorkload, WARM.big),
    floor: (p) => p.big,
    kind: "rate", goal: 2.5,
  },
  {
    key: "w3", name: "sequential state()", unit: "round trip",
    size: (p) => `${p.seq.n.toLocaleString("en")} round trips`,
    run: (side, p) => runInProcess(side, sequentialWorkload, p.seq), warm: (side) => runInProcess(side, sequentialWorkload, WARM.seq),
    rtFloor: (p) => ["seq", p.seq.n],
    kind: "rate", goal: 1.3,
  },
  {
    key: "w4", name: "state(), 64 in flight", unit: "round trip",
    size: (p) => `${p.inflight.n.toLocaleString("en")} round trips`,
    run: (side, p) => runInProcess(side, inflightWorkload, p.inflight), warm: (side) => runInProcess(side, inflightWorkload, WARM.inflight),
    rtFloor: (p) => ["inflight", p.inflight.n, p.inflight.depth],
    // A client with a second thread can pass the blocking floor; none passes koma-sim answering alone.
    ceiling: (peer) => peer.state,
    kind: "rate", goal: 2.0,
  },
  {
    key: "w5", name: "one big response (fresh process each)",
    size: (p) => `frame ${(p.blob.bytes + BLOB_OVERHEAD - 1).toLocaleString("en")} B`,
    run: (side, p) => runBlobChild(side, p.blob), warm: null,
    kind: "blob", goal: 2.0, rssGoal: 1.1,
  },
  {
    key: "w6", name: "steady stream, main-thread busy", unit: "event",
    size: (p) => `${(p.steady.rate / 1000).toFixed(0)}k events/s × ${p.steady.seconds} s`,
    run: (side, p) => runInProcess(side, steadyWorkload, p.steady), warm: (side) => runInProcess(side, steadyWorkload, WARM.steady),
    // The floor of a stream: its events in windows of one request's size; its busy share = floor time / the stream's duration.
    floor: (p) => ({ count: p.steady.perRequest, bytes: p.steady.bytes, total: Math.round(p.steady.rate * p.steady.seconds) }),
    kind: "elu", goal: 0.35,
  },
];

const fmtUs = (s) => (Number.isFinite(s) ? (s * 1e6 >= 100 ? (s * 1e6).toFixed(0) : (s * 1e6).toFixed(2)) : "n/a");

/** The floor of one workload: every way's median, the fastest way. */
function floorOf(floorRuns) {
  if (!floorRuns.length) return null;
  let best = null;
  for (const way of new Set(floorRuns.map((r) => r.way))) {
    const rs = floorRuns.filter((r) => r.way === way);
    const m = { way, seconds: median(rs.map((r) => r.seconds)), rate: median(rs.map((r) => r.rate)), cpuPerUnit: median(rs.map((r) => r.cpuSelf / r.events)) };
    if (!best || m.seconds < best.seconds) best = m;
  }
  return best;
}

function summarize(w, runs, floorRuns, peer) {
  const a = runs.addon;
  const j = runs.js;
  const l = runs.readline;
  const med = (xs, f) => median(xs.map(f));
  const row = { key: w.key, name: w.name, size: w.size(P) };
  const floor = floorOf(floorRuns);
  const met = [];
  if (w.kind === "rate") {
    const [ra, rj, rl] = [a, j, l].map((xs) => med(xs, (r) => r.rate));
    row.ratio = ra / rj;
    row.ratioRl = ra / rl;
    row.cells = [fmtRate(ra), fmtRate(rj), fmtRate(rl)];
    if (w.key === "w2") {
      row.cells = [a, j, l].map((xs, i) => `${fmtRate([ra, rj, rl][i])} (${med(xs, (r) => r.mbps).toFixed(0)} MB/s)`);
    }
    row.goalText = `≥ ${w.goal.toFixed(1)}× both peers`;
    met.push(["rate", Math.min(row.ratio, row.ratioRl) >= w.goal]);
    if (floor) {
      row.floorCell = `${fmtRate(floor.rate)} (${fmtX(floor.rate / rj)} pure JS), ${fmtUs(floor.cpuPerUnit)} µs/${w.unit} (${floor.way})`;
      row.ofFloor = ra / floor.rate;
    }
    const ceiling = w.ceiling?.(peer);
    if (ceiling) row.floorCell = `${row.floorCell ?? "–"}; peer alone ${fmtRate(ceiling.rate)} (${fmtX(ceiling.rate / rj)} pure JS)`;
  } else if (w.kind === "blob") {
    const [ta, tj, tl] = [a, j, l].map((xs) => med(xs, (r) => r.seconds));
    const [ga, gj, gl] = [a, j, l].map((xs) => med(xs, (r) => r.growth));
    const frame = a[0]?.frame ?? NaN;
    row.ratio = tj / ta;
    row.ratioRl = tl / ta;
    row.cells = [[ta, ga], [tj, gj], [tl, gl]].map(([t, g]) => `${fmtS(t)}, RSS +${fmtMiB(g)} (${fmtX(g / frame)} frame)`);
    row.goalText = `≥ ${w.goal.toFixed(1)}× both peers, RSS ≤ ${w.rssGoal}× frame`;
    met.push(["time", Math.min(row.ratio, row.ratioRl) >= w.goal], ["RSS", ga / frame <= w.rssGoal]);
  } else {
    const [ea, ej, el] = [a, j, l].map((xs) => med(xs, (r) => r.elu));
    const over = (xs) => xs.reduce((s, r) => s + (r.overflows ?? 0), 0);
    row.ratio = ea / ej;
    row.ratioRl = ea / el;
    row.cells = [[a, ea], [j, ej], [l, el]].map(([xs, e]) => `busy ${(e * 100).toFixed(1)}% at ${fmtRate(med(xs, (r) => r.rate))}, ${over(xs)} overflow(s)`);
    row.goalText = `≤ ${w.goal.toFixed(2)}× of both peers, no overflow`;
    met.push(["busy", Math.max(row.ratio, row.ratioRl) <= w.goal && over(a) === 0]);
    row.ratioText = `${fmtX(row.ratio)} busy`;
    row.ratioRlText = `${fmtX(row.ratioRl)} busy`;
    if (floor) {
      const busy = floor.seconds / P.steady.seconds;
      row.floorCell = `busy ${(busy * 100).toFixed(1)}% (${fmtX(busy / ej)} pure JS), ${fmtUs(floor.cpuPerUnit)} µs/${w.unit} (${floor.way})`;
      row.ofFloor = busy / ea; // the floor's cost over the addon's: 1 = at the floor
    }
  }
  // CPU per unit: all threads of this process (process.cpuUsage), koma-sim's apart.
  if (w.unit) {
    const per = (xs) => med(xs, (r) => r.cpuSelf / r.units);
    const sim = (xs) => med(xs, (r) => r.cpuChild / r.units);
    row.cpuUnitCell = `${[a, j, l].map((xs) => fmtUs(per(xs))).join(" · ")} µs/${w.unit} (sim ${[a, j, l].map((xs) => fmtUs(sim(xs))).join(" · ")})`;
    row.cpuRatio = per(a) / per(j);
    if (w.cpuGoal) {
      row.goalText += `; CPU/${w.unit} ≤ ${w.cpuGoal}× pure JS`;
      met.push([`CPU/${w.unit}`, row.cpuRatio <= w.cpuGoal]);
    }
  }
  row.cpuA = fmtCpu(medianCpu(a));
  row.cpuJ = fmtCpu(medianCpu(j));
  row.cpuL = fmtCpu(medianCpu(l));
  row.ratioText ??= fmtX(row.ratio);
  row.ratioRlText ??= fmtX(row.ratioRl);
  row.met = met.every(([, ok]) => ok);
  row.metText = met.length === 1 ? (met[0][1] ? "met" : "NOT met") : met.map(([k, ok]) => `${k} ${ok ? "met" : "NOT met"}`).join(", ");
  return row;
}

/** The peer-alone figures that were measured. */
function peerText(peer) {
  const parts = [];
  if (peer.small) parts.push(`small events ${fmtRate(peer.small.rate)} (${peer.small.mbps.toFixed(0)} MB/s)`);
  if (peer.big) parts.push(`64 KiB events ${fmtRate(peer.big.rate)} (${peer.big.mbps.toFixed(0)} MB/s)`);
  if (peer.state) parts.push(`state() answers ${fmtRate(peer.state.rate)}`);
  return parts.join(", ");
}

function printTable(rows, peer) {
  const head = ["workload", "size", "addon (median)", "pure JS (median)", "readline (median)", "addon/pure JS", "addon/readline",
    "floor", "addon/floor", "CPU µs per unit, all threads: addon · pure JS · readline (koma-sim)", "CPU/unit addon/pure JS", "goal", "",
    "CPU s addon", "CPU s pure JS", "CPU s readline"];
  const body = rows.map((r) => [r.name, r.size, ...r.cells, r.ratioText, r.ratioRlText, r.floorCell ?? "–",
    Number.isFinite(r.ofFloor) ? fmtX(r.ofFloor) : "–", r.cpuUnitCell ?? "–", Number.isFinite(r.cpuRatio) ? fmtX(r.cpuRatio) : "–",
    r.goalText, r.metText, r.cpuA, r.cpuJ, r.cpuL]);
  // On the console, two tables (the results, then the CPU), each narrower.
  const console2 = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12], [0, 9, 10, 13, 14, 15]];
  for (const cols of console2) {
    const h = cols.map((c) => head[c]);
    const b = body.map((row) => cols.map((c) => row[c]));
    const widths = h.map((x, i) => Math.max(x.length, ...b.map((row) => String(row[i]).length)));
    const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join("  ");
    console.log("\n" + line(h));
    console.log(widths.map((x) => "-".repeat(x)).join("  "));
    for (const row of b) console.log(line(row));
  }
  console.log("\nThroughput ratios are addon / peer (above 1: the addon is faster); busy and CPU ratios are addon / peer (below 1: the addon is less busy).");
  console.log("floor of the events: the same events already in memory, turned into {type, seq, name, data} by the fastest of a few plain");
  console.log("JavaScript ways (bench/floor.mjs; no pipe, no checks, no iterator, one thread). Floor of the round trips: the same round trips");
  console.log("by one thread blocking in read and write on koma-sim's pipes (bench/rt-floor.mjs; no event loop, no thread hop, no promise).");
  console.log("addon/floor: the addon's rate over the floor's (for the stream, the floor's busy share over the addon's): 1 = at the floor,");
  console.log("above 1 = past what one JavaScript thread alone can do.");
  console.log("CPU µs per unit: this process's user+sys, all threads, per event or round trip; koma-sim's apart (sim).");
  console.log("CPU s: this process's user+sys during the timed part (JS = main thread, io = the addon's koma-io");
  console.log("threads, other = the rest: V8 GC helpers, libuv), + sim = the koma-sim child; medians of the runs.");
  const peerLine = peerText(peer);
  if (peerLine) console.log(`\nThe peer alone (koma-sim sdk serve | cat > /dev/null, every request written at once): ${peerLine}.`);
  console.log("\n### Markdown\n");
  const mdHead = ["Workload", "Size", "Addon (median)", "Pure JS (median)", "Readline (median)", "Addon / pure JS", "Addon / readline",
    "Floor", "Addon / floor", "CPU µs per unit: addon · pure JS · readline (koma-sim)", "CPU per unit, addon / pure JS", "Goal", "Met",
    "CPU s addon", "CPU s pure JS", "CPU s readline"];
  const right = new Set([2, 3, 4, 5, 6, 8, 10]);
  console.log(`| ${mdHead.join(" | ")} |`);
  console.log(`|${mdHead.map((h, i) => (right.has(i) ? "---:" : "---")).join("|")}|`);
  for (const b of body) console.log(`| ${b.map((c) => String(c).replace(/\|/g, "\\|")).join(" | ")} |`);
  if (peerLine) console.log(`\nPeer alone (\`koma-sim sdk serve | cat > /dev/null\`, every request written at once): ${peerLine}.`);
}

// ------------------------------------------------------------------ scale

const SCALE_START_GOAL_N = [100, 1000];
const SCALE_RPS_GOAL_N = [1000];
const fmtN = (n) => n.toLocaleString("en");
const fmtKiB = (b) => (Number.isFinite(b) ? `${(b / 1024).toFixed(1)} KiB` : "n/a");
const fmtMs = (ms) => (Number.isFinite(ms) ? `${fmtN(Math.round(ms))} ms` : "n/a");

function summarizeScale(want, n, runs, all) {
  const a = runs.addon;
  const j = runs.js;
  const med = (xs, f) => median(xs.map(f));
  const max = (xs, f) => xs.reduce((m, r) => Math.max(m, f(r)), -Infinity);
  const nCell = n === want ? fmtN(n) : `${fmtN(n)} (capped from ${fmtN(want)})`;
  const rows = [];
  const yes = (ok) => (ok ? "met" : "NOT met");
  // start all
  {
    const [ta, tj] = [a, j].map((xs) => med(xs, (r) => r.startMs));
    const ratio = ta / tj;
    const goal = SCALE_START_GOAL_N.includes(n);
    rows.push([nCell, "start all (every probe() resolved)", fmtMs(ta), fmtMs(tj), fmtX(ratio), goal ? "≤ 1.0× (stretch 0.7×)" : "–",
      goal ? (ratio <= 0.7 ? "met (stretch too)" : yes(ratio <= 1.0)) : ""]);
  }
  // threads
  {
    const cell = (xs) => {
      const m = med(xs, (r) => r.threadsAdded);
      const x = max(xs, (r) => r.threadsAdded);
      return Number.isFinite(m) ? `${m}${x !== m ? ` (max ${x})` : ""}` : "n/a";
    };
    const which = a.map((r) => r.threadsWhich).filter(Boolean)[0];
    rows.push([nCell, "threads added", `${cell(a)}${which ? ` (${which})` : ""}`, cell(j), "–", "≤ 8", yes(max(a, (r) => r.threadsAdded) <= 8)]);
  }
  // RSS
  {
    const [ra, rj] = [a, j].map((xs) => med(xs, (r) => r.rssPerClient));
    rows.push([nCell, "RSS per idle client (this process; koma-sim not counted)", fmtKiB(ra), fmtKiB(rj), fmtX(ra / rj), "≤ 1.0×", yes(ra / rj <= 1.0)]);
  }
  // requests
  {
    const [qa, qj] = [a, j].map((xs) => med(xs, (r) => r.reqRate));
    const per = a[0]?.requests ?? j[0]?.requests;
    const goal = SCALE_RPS_GOAL_N.includes(n);
    rows.push([nCell, `requests/s across all clients (${per ? fmtN(per) : "?"} state() calls, ${P.scale.depth} in flight per client)`, fmtRate(qa), fmtRate(qj), fmtX(qa / qj),
      goal ? "≥ 1.2×" : "–", goal ? yes(qa / qj >= 1.2) : ""]);
    const [ca, cj] = [a, j].map((xs) => med(xs, (r) => r.reqCpuSelf));
    const [sa, sj] = [a, j].map((xs) => med(xs, (r) => r.reqCpuSims));
    const us = (x) => (Number.isFinite(x) ? `${(x * 1e6).toFixed(1)} µs` : "n/a");
    rows.push([nCell, "CPU per request in that phase: this process (the koma-sims)", `${us(ca)} (${us(sa)})`, `${us(cj)} (${us(sj)})`, fmtX(ca / cj), "–", ""]);
  }
  // after close: every run, the failed ones too
  {
    const cell = (xs) => `${max(xs, (r) => r.childrenLeft)} children, fds ${fmtSigned(max(xs, (r) => r.fdsOver))}`;
    const ok = (xs) => xs.every((r) => r.childrenLeft === 0 && r.fdsOver <= 0);
    rows.push([nCell, "after close(): children left, descriptors vs before (worst run)", cell(all.addon), cell(all.js), "–", "0 children, fds +0",
      ok(all.addon) && ok(all.js) ? "met" : "NOT met"]);
  }
  return rows;
}

const fmtSigned = (x) => (Number.isFinite(x) ? `${x >= 0 ? "+" : ""}${x}` : "n/a");

function printScaleTable(rows, notes) {
  const head = ["N", "measure", "addon (median)", "pure JS (median)", "addon/pure JS", "goal", ""];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join("  ");
  console.log("\n" + line(head));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of rows) console.log(line(r));
  console.log("\n### Markdown (scale)\n");
  const mdHead = ["N", "Measure", "Addon (median)", "Pure JS (median)", "Addon / pure JS", "Goal", "Met"];
  console.log(`| ${mdHead.join(" | ")} |`);
  console.log(`|${mdHead.map((h, i) => (i >= 2 && i <= 4 ? "---:" : "---")).join("|")}|`);
  for (const r of rows) console.log(`| ${r.map((c) => String(c).replace(/\|/g, "\\|")).join(" | ")} |`);
  for (const n of notes) console.log(`\n${n}`);
}

/** What one scale run may take before it is killed (the build of 2ad1b33 took up to 175 s to start 2,000 clients on a busy 2-core machine). */
const scaleTimeout = (n) => (60 + n * 0.3) * 1000;

async function scaleSection() {
  const sp = P.scale;
  const perClientText = SCALE_N.map((n) => `${sp.perClient(n)} at N = ${fmtN(n)}`).join(", ");
  console.log(`\nscale: N = ${SCALE_N.map(fmtN).join(", ")}, ${SCALE_PAIRS} round(s) of ${SCALE_SIDES.map((s) => SIDE_NAME[s]).join(", ")}; state() calls per client: ${perClientText}, ${sp.depth} in flight per client`);
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
  const limitsText = `open files ${lim.nofile.soft} (soft; hard ${lim.nofile.hard}; Node raises the soft limit to the hard one at startup), `
    + `max user processes ${lim.nproc.soft}, pid_max ${lim.pidMax}, threads-max ${lim.threadsMax}, ${lim.tasksNow} tasks on the system now, `
    + `${(lim.memAvailable / 2 ** 30).toFixed(1)} GiB available`;
  console.log(`  limits: ${limitsText}`);
  console.log(`  per client (sizing runs): ${per.fds} descriptors, ${per.threads} thread(s) of this process; koma-sim ${per.simThreads} threads, ${(per.simRss / MIB).toFixed(1)} MiB`);
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
    rows.push(...summarizeScale(want, n, runs, all));
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
  const scaleBudget = selected("scale") ? 120 + SCALE_SIDES.length * SCALE_PAIRS * SCALE_N.reduce((s, n) => s + scaleTimeout(n) / 1000, 0) : 0;
  const watchdog = setTimeout(() => {
    console.error(`FAIL: the ${SMOKE ? "smoke run" : "benchmark"} did not finish in time`);
    process.exit(1);
  }, ((SMOKE ? 120 : 900) + scaleBudget) * 1000);
  watchdog.unref();

  const t0 = performance.now();
  const build = buildInfo();
  console.log(`addon: ${build.text}`);
  console.log(`koma-sdk benchmark${SMOKE ? " (smoke: tiny counts, no timing asserted)" : ""}: node ${process.version}, ${cpus().length} CPU(s), load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}, rounds ${PAIRS} (${SIDES.map((s) => SIDE_NAME[s]).join(", ")})`);

  // The peer alone: what koma-sim does with no client in the way, the
  // ceiling of every client in this harness.
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

  const rows = [];
  for (const w of WORKLOADS) {
    if (!selected(w.key)) continue;
    const pairs = w.pairs ?? PAIRS;
    console.log(`\n${w.key} ${w.name}: ${w.size(P)}, ${pairs} round(s)`);
    // The floor's bytes are captured once (not timed) and held through the
    // rounds: every round runs the three sides, then every way of the floor.
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
    let rtFloorOn = !!w.rtFloor;
    const runs = { addon: [], js: [], readline: [] };
    for (let i = 0; i < pairs; i++) {
      for (const side of SIDES) {
        const r = await w.run(side, P);
        const shown = w.kind === "elu" ? `busy ${(r.elu * 100).toFixed(1)}% ${fmtRate(r.rate)}${r.overflows ? " OVERFLOWED" : ""}`
          : w.kind === "blob" ? `${fmtS(r.seconds)} (JS thread busy ${fmtS(r.jsBusy)}) RSS +${fmtMiB(r.growth)}`
            : `${fmtRate(r.rate)} in ${fmtS(r.seconds)}${Number.isFinite(r.elu) ? `, JS thread busy ${(r.elu * 100).toFixed(0)}%` : ""}`;
        const perUnit = w.unit && r.ok ? `, ${fmtUs(r.cpuSelf / r.units)} µs/${w.unit}` : "";
        console.log(`  ${SIDE_NAME[side].padEnd(8)} #${i + 1}: ${r.ok ? shown : "FAILED"}${r.detail ? ` (${r.detail})` : ""}${Number.isFinite(r.cpuSelf) ? `; cpu ${fmtCpu(r)}${perUnit}` : ""}`);
        if (!r.ok) fail(`${w.key} ${side} #${i + 1}: ${r.detail}`);
        else runs[side].push(r);
      }
      if (capture) {
        gc();
        try {
          const rs = runFloor(capture, captureText, i);
          floorRuns.push(...rs);
          console.log(`  ${"floor".padEnd(8)} #${i + 1}: ${rs.map((r) => `${r.way} ${fmtRate(r.rate)} (${fmtUs(r.cpuSelf / r.events)} µs/${w.unit})`).join(", ")}`);
        } catch (e) {
          capture = null;
          fail(`${w.key} floor: ${e.message}`);
        }
      }
      if (rtFloorOn) {
        const r = await runRtFloor(w.rtFloor(P));
        if (r.ok) {
          floorRuns.push(r);
          console.log(`  ${"floor".padEnd(8)} #${i + 1}: ${r.way} ${fmtRate(r.rate)} in ${fmtS(r.seconds)}, ${fmtUs(r.cpuSelf / r.events)} µs/${w.unit} + sim ${fmtUs(r.cpuChild / r.events)} µs/${w.unit}`);
        } else {
          rtFloorOn = false;
          fail(`${w.key} floor: ${r.detail}`);
        }
      }
    }
    capture = null;
    if (SIDES.every((s) => runs[s].length)) rows.push(summarize(w, runs, floorRuns, peer));
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
