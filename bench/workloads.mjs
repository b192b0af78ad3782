// The benchmark's workloads: their sizes, what each does with a client, and
// how one run of one side is made (in this process, or in a fresh one), and
// the peer alone (koma-sim with no client in the way).
import { spawn } from "node:child_process";
import {
  SIM,
  benchEventsInput,
  childCpu,
  gc,
  makeClient,
  runForResult,
  simEnv,
  stateCalls,
  threadCpu,
  threadDelta,
  withTimeout,
} from "./common.mjs";

const MIB = 1 << 20;
const FRAME_LIMIT = 41_943_040;
const BLOB_OVERHEAD = 30 + 2; // {"id":"N","result":{"blob":"…"}}: 30 bytes plus an id of at most 2 digits
const EVENT_BOUND = 256; // the client's event buffer bound (docs/protocol.md, Bounds)

/** The sizes of the smoke run; `runMs` is what one run in this process, or of the round-trip floor, may take. */
const SMOKE_SIZES = {
  small: { count: 200, bytes: 200, total: 2_000 },
  big: { count: 16, bytes: 64 * 1024, total: 64 },
  seq: { n: 200 },
  inflight: { n: 2_000, depth: 64 },
  blob: { bytes: 1 * MIB },
  steady: { rate: 20_000, seconds: 0.25, bytes: 200, perRequest: 32, maxBurst: 64 },
  scale: { perClient: () => 5, depth: 2, warmClients: 2 },
  runMs: 30_000,
};
/** The sizes of the real run. */
const REAL_SIZES = {
  small: { count: 200, bytes: 200, total: 400_000 },
  big: { count: 16, bytes: 64 * 1024, total: 4_000 },
  seq: { n: 20_000 },
  inflight: { n: 100_000, depth: 64 },
  blob: { bytes: FRAME_LIMIT - BLOB_OVERHEAD },
  steady: { rate: 60_000, seconds: 3, bytes: 200, perRequest: 64, maxBurst: 128 },
  // every client makes max(20, 20,000 / N) state() calls, 2 at a time
  scale: { perClient: (n) => Math.max(20, Math.ceil(20_000 / n)), depth: 2, warmClients: 20 },
  runMs: 120_000,
};
/** The sizes of the warm-up runs (real runs only). */
const WARM = {
  small: { count: 200, bytes: 200, total: 20_000 },
  big: { count: 16, bytes: 64 * 1024, total: 256 },
  seq: { n: 2_000 },
  inflight: { n: 10_000, depth: 64 },
  steady: { rate: 60_000, seconds: 0.3, bytes: 200, perRequest: 64, maxBurst: 128 },
  runMs: 120_000,
};

/** The sizes of the smoke run, or of the real run. */
export const sizes = (smoke) => (smoke ? SMOKE_SIZES : REAL_SIZES);

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
      answers.push(
        c.request("bench_events", { count, bytes }).then((r) => {
          if (r.count !== count) throw new Error(`bench_events answered ${JSON.stringify(r)}`);
          answered++;
        }),
      );
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
    ok,
    seconds,
    units: n,
    rate: n / seconds,
    mbps: (n * bytes) / seconds / 1e6,
    elu,
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
  const t0 = performance.now();
  const idle = await stateCalls(c, n, depth);
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
    // Never more requests in flight than the protocol's 64 (docs/protocol.md, Bounds): a tick
    // that finds them all pending requests the rest on a later tick.
    while (burst > 0 && outstanding < 60) {
      const n = Math.min(burst, perRequest);
      outstanding++;
      answers.push(
        c.request("bench_events", { count: n, bytes }).then((r) => {
          outstanding--;
          answered += r.count;
        }),
      );
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
    seconds,
    units: received,
    rate: received / seconds,
    elu: elu.utilization,
    overflows,
    dropped,
    detail: `${overflows} overflow(s), ${dropped} dropped${accounted ? "" : `; accounting off: received ${received} + dropped ${dropped} of ${total}, answered ${answered}`}`,
  };
}

// ------------------------------------------------------------------ runners

/** One measured run of one side in this process: fresh client, probe, warm state(), workload, close. */
async function runInProcess(side, fn, params, runMs) {
  gc();
  const c = makeClient(side);
  try {
    await c.probe();
    await c.state();
    const pid = c.pid;
    const cpu0 = process.cpuUsage();
    const th0 = threadCpu();
    const ch0 = childCpu(pid);
    const r = await withTimeout(fn(c, params), runMs, `${side} run`);
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
  const { result, code, ended } = await runForResult("rss-one.mjs", [side, bytes], 60_000);
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
    detail: r.ok ? "" : (r.error ?? "wrong blob"),
  };
}

/** The peer alone: koma-sim writing the workload into `cat > /dev/null`. */
export async function peerRate({ count, bytes, total }) {
  const { windows, input } = benchEventsInput({ count, bytes, total });
  const seconds = await peerSeconds(input);
  return { seconds, rate: (windows * count) / seconds, mbps: (windows * count * bytes) / seconds / 1e6 };
}

/** The peer alone answering `n` state() requests written all at once: no client answers faster. */
export async function peerStateRate(n) {
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
export async function runRtFloor(args, runMs) {
  const { result, code, ended } = await runForResult("rt-floor.mjs", args, runMs);
  const r = result ?? { ok: false, detail: ended };
  return { ...r, ok: !!r.ok && code === 0, way: "blocking, one thread", events: r.units };
}

/** A workload run in this process: `run` at the sizes given, `warm` at the warm-up's. */
const inProcess = (fn, key) => ({
  run: (side, p) => runInProcess(side, fn, p[key], p.runMs),
  warm: (side) => runInProcess(side, fn, WARM[key], WARM.runMs),
});

/**
 * The workloads, in the order they run: `run(side, sizes)` makes one run of
 * one side; `floor` and `rtFloor` give the sizes of their floor; `kind` says
 * which figure is compared (a rate, a response's time and RSS, or the main
 * thread's busy share), and the goals are addon / peer ratios.
 */
export const WORKLOADS = [
  {
    key: "w1",
    name: "small events (200 B text, 200/window)",
    unit: "event",
    size: (p) => `${p.small.total.toLocaleString("en")} events`,
    ...inProcess(eventsWorkload, "small"),
    floor: (p) => p.small,
    kind: "rate",
    goal: 2.5,
    cpuGoal: 0.4,
  },
  {
    key: "w2",
    name: "64 KiB events (16/window)",
    unit: "event",
    size: (p) => `${p.big.total.toLocaleString("en")} events`,
    ...inProcess(eventsWorkload, "big"),
    floor: (p) => p.big,
    kind: "rate",
    goal: 2.5,
  },
  {
    key: "w3",
    name: "sequential state()",
    unit: "round trip",
    size: (p) => `${p.seq.n.toLocaleString("en")} round trips`,
    ...inProcess(sequentialWorkload, "seq"),
    rtFloor: (p) => ["seq", p.seq.n],
    kind: "rate",
    goal: 1.3,
  },
  {
    key: "w4",
    name: "state(), 64 in flight",
    unit: "round trip",
    size: (p) => `${p.inflight.n.toLocaleString("en")} round trips`,
    ...inProcess(inflightWorkload, "inflight"),
    rtFloor: (p) => ["inflight", p.inflight.n, p.inflight.depth],
    // A client with a second thread can pass the blocking floor; none passes koma-sim answering alone.
    ceiling: (peer) => peer.state,
    kind: "rate",
    goal: 2.0,
  },
  {
    key: "w5",
    name: "one big response (fresh process each)",
    size: (p) => `frame ${(p.blob.bytes + BLOB_OVERHEAD - 1).toLocaleString("en")} B`,
    run: (side, p) => runBlobChild(side, p.blob),
    warm: null,
    kind: "blob",
    goal: 2.0,
    rssGoal: 1.1,
  },
  {
    key: "w6",
    name: "steady stream, main-thread busy",
    unit: "event",
    size: (p) => `${(p.steady.rate / 1000).toFixed(0)}k events/s × ${p.steady.seconds} s`,
    ...inProcess(steadyWorkload, "steady"),
    // The floor of a stream: its events in windows of one request's size; its busy share = floor time / the stream's duration.
    floor: (p) => ({ count: p.steady.perRequest, bytes: p.steady.bytes, total: Math.round(p.steady.rate * p.steady.seconds) }),
    kind: "elu",
    goal: 0.35,
  },
];

/** One run of one workload on one side at the real run's sizes (for bench/profile-one.mjs). */
export async function runOne(key, side) {
  const w = WORKLOADS.find((x) => x.key === key);
  const { detail, ...r } = await w.run(side, sizes(false));
  return { key, side, ...r, detail };
}
