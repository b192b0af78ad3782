// The turn workloads, base against new: one turn of N `output` events of B
// bytes (koma-sim's `bench_turn N B`, sent as fast as koma-sim can), taken
// three ways by the package built from a base commit and by this checkout's
// build, both loaded in this one process, and this checkout's build traced
// with OpenTelemetry (`traced`: a tracer provider whose span processor
// exports to a no-op exporter, and a meter provider: every span and metric
// point is made), the three alternated (base, new, traced, then new, traced,
// base, ...), against the same koma-sim (bin/koma-sim):
//   run     `await client.run(...)`: host CPU per event;
//   turn    `for await (const item of client.turn(...))`, then `turn.result`:
//           events/s and CPU per event;
//   events  `client.submit(...)`, then `for await (const item of
//           client.events())` up to its turn_finished: events/s and CPU per event.
// CPU is read per thread from /proc/self/task/*/schedstat (nanoseconds): the
// main thread (JavaScript's; Node 20 has no process.threadCpuUsage()), the
// core's koma-io threads, and the rest (V8's helpers, libuv, the spawner);
// koma-sim's apart. Events/s is N over the wall time of the turn, from the
// call to its result.
//
//   node bench/turns.mjs                  base = the merge-base of HEAD with main
//   node bench/turns.mjs --base <commit>  base = that commit (exported and built
//                                         once into target/bench-base/: bench/base-build.mjs)
//   node bench/turns.mjs --smoke          every workload tiny, base = new (nothing is
//                                         built); exits 0 when every turn came out whole
//                                         (no timing asserted)
//   options: --rounds N (5), --turns K (measured turns per side and round, 5; each
//            client also runs one turn first that is not measured), --n N (outputs
//            per turn, 10000), --bytes B (200)
//
// The goals (the core turn layer's): run()'s main-thread CPU per event new/base
// <= 0.2; turn()'s and events()'s events/s new/base >= 1.0. Telemetry's: off
// (new) as fast as the base within the rounds' spread; on (traced) costs per
// turn, not per event (the row "CPU per turn, over new's" says how much).
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { root } from "../scripts/lib/repo.mjs";
import { buildBaseAddon, describeNew, resolveBase } from "./base-build.mjs";
import { SIM, gc, processCpuFine, simEnv, threadCpuFine, threadDelta, withTimeout } from "./common.mjs";
import { median } from "./stats.mjs";
import { fmtRate, fmtUs, fmtX } from "./tables.mjs";

const require = createRequire(import.meta.url);
const argv = process.argv.slice(2);
const SMOKE = argv.includes("--smoke");
const argOf = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const P = {
  rounds: Number(argOf("--rounds") ?? (SMOKE ? 1 : 5)),
  turns: Number(argOf("--turns") ?? (SMOKE ? 2 : 5)),
  warm: SMOKE ? 0 : 1,
  // The smoke's turn (200 outputs and its 4 other events) fits the 256-event
  // buffer whole, so no stall of a busy machine can overflow it.
  n: Number(argOf("--n") ?? (SMOKE ? 200 : 10_000)),
  bytes: Number(argOf("--bytes") ?? 200),
  turnMs: 60_000,
};
const count = (n, min = 1) => Number.isSafeInteger(n) && n >= min;
if (!count(P.rounds) || !count(P.turns) || !count(P.n) || !count(P.bytes, 0) || (SMOKE && argv.includes("--base"))) {
  console.error("bad arguments: --rounds, --turns and --n are integers of at least 1, --bytes of at least 0; --smoke takes no --base");
  process.exit(2);
}

const failures = [];
const fail = (what) => {
  failures.push(what);
  console.error(`FAIL: ${what}`);
};

// ------------------------------------------------------------------ the sides

// The loader would load that one file for both sides.
delete process.env.NAPI_RS_NATIVE_LIBRARY_PATH;
const NEW = require(join(root, "index.js")).Client;
let BASE = NEW;
let baseText = "this checkout (smoke: base = new)";
if (!SMOKE) {
  const b = resolveBase(argOf("--base"));
  BASE = require(buildBaseAddon(b.sha)).Client;
  if (BASE === NEW) throw new Error("the base and the new addon are one module");
  baseText = `${b.short} (${argOf("--base") ? "--base" : "the merge-base with main"}), from target/bench-base/${b.sha}`;
}
/** The traced side's options: spans made and exported to nothing, metrics recorded. */
function tracedOptions() {
  const { BasicTracerProvider, SimpleSpanProcessor } = require("@opentelemetry/sdk-trace-base");
  const { MeterProvider, MetricReader } = require("@opentelemetry/sdk-metrics");
  const noop = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };
  class Reader extends MetricReader {
    async onForceFlush() {}
    async onShutdown() {}
  }
  return {
    tracerProvider: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(noop)] }),
    meterProvider: new MeterProvider({ readers: [new Reader()] }),
  };
}
const SIDES = { base: [BASE, {}], new: [NEW, {}], traced: [NEW, tracedOptions()] };
const ORDER = ["base", "new", "traced"];

// ------------------------------------------------------------------ the workloads

const text = (p) => `bench_turn ${p.n} ${p.bytes}`;

/** `run()`: the result, checked whole. */
async function runWorkload(c, p) {
  const r = await c.run({ text: text(p) }, { onApproval: "deny" });
  const check = () => {
    const want = p.n * p.bytes;
    const whole = r.output.length === want && r.output === "x".repeat(want);
    const ok = r.status === "completed" && whole && !r.overflowed && r.events >= p.n + 2;
    return ok
      ? ""
      : `status ${r.status}, output ${r.output.length}/${want} (${whole ? "" : "not "}all x), events ${r.events}, overflowed ${r.overflowed}`;
  };
  return { check, overflowed: r.overflowed };
}

/** `for await` over a Turn, then its result. */
async function turnWorkload(c, p) {
  const t = c.turn({ text: text(p) }, { onApproval: "deny" });
  let outputs = 0;
  let textBytes = 0;
  let overflows = 0;
  const turns = new Set();
  for await (const item of t) {
    if (item.type !== "event") overflows++;
    else if (item.name === "output") {
      outputs++;
      textBytes += item.data.text.length;
      turns.add(item.data.turn);
    }
  }
  const r = await t.result;
  const id = await t.id;
  const check = () => {
    const ok =
      r.status === "completed" && outputs === p.n && textBytes === p.n * p.bytes && overflows === 0 && turns.size === 1 && turns.has(id);
    return ok
      ? ""
      : `status ${r.status}, outputs ${outputs}/${p.n}, text ${textBytes}, overflows ${overflows}, turn ids ${[...turns]} (turn ${id})`;
  };
  return { check, overflowed: overflows > 0 };
}

/** `submit()`, then `events()` up to the turn's turn_finished. */
async function eventsWorkload(c, p) {
  const { turn } = await c.submit({ text: text(p) });
  let outputs = 0;
  let textBytes = 0;
  let overflows = 0;
  let status = null;
  for await (const item of c.events()) {
    if (item.type !== "event") {
      // Its turn_finished may be among the dropped: the turn has failed.
      overflows++;
      break;
    }
    const d = item.data;
    if (item.name === "output" && d.turn === turn) {
      outputs++;
      textBytes += d.text.length;
    } else if (item.name === "turn_finished" && d.turn === turn) {
      status = d.status;
      break;
    }
  }
  const check = () => {
    const ok = status === "completed" && outputs === p.n && textBytes === p.n * p.bytes && overflows === 0;
    return ok ? "" : `status ${status}, outputs ${outputs}/${p.n}, text ${textBytes}, overflows ${overflows}`;
  };
  return { check, overflowed: overflows > 0 };
}

const WORKLOADS = [
  { key: "run", name: "run()", fn: runWorkload },
  { key: "turn", name: "turn(), for await", fn: turnWorkload },
  { key: "events", name: "events() after submit()", fn: eventsWorkload },
];

/** Take events() up to the idle `state` that follows a turn, so that no event waits in the buffer when the next turn starts. */
async function drainToIdle(c) {
  for await (const item of c.events()) {
    if (item.type === "event" && item.name === "state" && item.data.status === "idle") return;
  }
}

/** One turn of workload `w`, timed (wall time, CPU per thread group, koma-sim's CPU), then checked. */
async function oneTurn(c, w, p) {
  const pid = c.pid;
  const sim0 = processCpuFine(pid);
  const all0 = process.cpuUsage();
  const th0 = threadCpuFine();
  const t0 = performance.now();
  const { check, overflowed } = await withTimeout(w.fn(c, p), p.turnMs, `${w.name} turn`);
  const seconds = (performance.now() - t0) / 1000;
  const th = threadDelta(th0, threadCpuFine());
  const all = process.cpuUsage(all0);
  const sim = processCpuFine(pid) - sim0;
  const detail = check();
  // The idle state that follows every turn (after a failed one it may be lost).
  if (detail === "") await withTimeout(drainToIdle(c), p.turnMs, "the idle state after the turn");
  return {
    ok: detail === "",
    overflowed,
    detail,
    seconds,
    main: th.main,
    io: th.io,
    other: th.other,
    all: (all.user + all.system) / 1e6,
    sim,
  };
}

/**
 * One side's part of a round: a fresh client, `warm` turns not measured, then
 * `turns` measured ones. The heap is collected once, before: a gc() before
 * every turn left V8's helper threads sweeping through the next one (about
 * 3 µs per event on "other", and more on the main thread).
 */
async function sideRound([Client, options], w, p) {
  gc();
  const c = new Client({ executable: SIM, env: simEnv(), ...options });
  const runs = [];
  try {
    await c.probe();
    await c.create();
    await drainToCreated(c);
    for (let i = 0; i < p.warm + p.turns; i++) {
      const r = await oneTurn(c, w, p);
      if (i >= p.warm || !r.ok) runs.push(r);
      if (!r.ok) break; // a failed turn (an overflow, as a rule) may leave its events behind: a fresh client next round
    }
  } catch (e) {
    runs.push({ ok: false, detail: `${e.code ?? "error"}: ${e.message}` });
  } finally {
    await c.close();
  }
  return runs;
}

/** The diagnostic that follows create, taken so the first turn starts with an empty buffer too. */
async function drainToCreated(c) {
  for await (const item of c.events()) {
    if (item.type === "event" && item.name === "diagnostic") return;
  }
}

// ------------------------------------------------------------------ figures

const per = (runs, f) => median(runs.map(f));
const figures = (runs, n) => ({
  rate: per(runs, (r) => n / r.seconds),
  main: per(runs, (r) => r.main / n),
  io: per(runs, (r) => r.io / n),
  other: per(runs, (r) => r.other / n),
  all: per(runs, (r) => r.all / n),
  sim: per(runs, (r) => r.sim / n),
});
const us = (s) => `${fmtUs(s)} µs`;
const figuresText = (f) =>
  `${fmtRate(f.rate)}, CPU µs/event: main ${fmtUs(f.main)}, koma-io ${fmtUs(f.io)}, other ${fmtUs(f.other)}, all ${fmtUs(f.all)}; sim ${fmtUs(f.sim)}`;

/**
 * The rows of one workload, from the medians of each side (`fb`, `fn`, `ft`:
 * base, new, traced) and of each round (`pairs`: [base, new, traced] of the
 * rounds where all had whole turns): [workload, measure, base, new, new/base,
 * rounds' new/base, traced, traced/new, rounds' traced/new, goal, met].
 */
function rowsOf(w, fb, fn, ft, pairs) {
  // The spread of the rounds' own ratios: how far apart two runs of one build land here.
  const spread = (rs) => (rs.length > 1 ? `${Math.min(...rs).toFixed(2)}–${Math.max(...rs).toFixed(2)}×` : "–");
  const row = (measure, key, fmt, goal) => {
    const ratio = fn[key] / fb[key];
    const met = goal ? (goal.test(ratio) ? "met" : "NOT met") : "";
    const rs = pairs.map(([b, n]) => n[key] / b[key]).filter(Number.isFinite);
    const ts = pairs.map(([, n, t]) => t[key] / n[key]).filter(Number.isFinite);
    const traced = [fmt(ft[key]), fmtX(ft[key] / fn[key]), spread(ts)];
    return [w.name, measure, fmt(fb[key]), fmt(fn[key]), fmtX(ratio), spread(rs), ...traced, goal ? goal.text : "–", met];
  };
  const atMost = (x) => ({ text: `≤ ${x.toFixed(2)}×`, test: (r) => r <= x });
  const atLeast = (x) => ({ text: `≥ ${x.toFixed(2)}×`, test: (r) => r >= x });
  const rows = [];
  if (w.key === "run") {
    rows.push(row("main-thread CPU per event", "main", us, atMost(0.2)));
    rows.push(row("events/s", "rate", fmtRate));
  } else {
    rows.push(row("events/s", "rate", fmtRate, atLeast(1.0)));
    rows.push(row("main-thread CPU per event", "main", us));
  }
  rows.push(row("koma-io threads' CPU per event", "io", us));
  rows.push(row("all threads' CPU per event", "all", us));
  // What tracing costs a turn: the traced side's CPU per turn over new's.
  const perTurn = (f) => f.all * P.n;
  const extra = pairs.map(([, n, t]) => perTurn(t) - perTurn(n));
  const µs = (s) => `${Math.round(s * 1e6)} µs`;
  const lo = extra.length > 1 ? `${µs(Math.min(...extra))} to ${µs(Math.max(...extra))}` : "–";
  rows.push([w.name, "all threads' CPU per turn, over new's", "–", "–", "–", "–", µs(perTurn(ft) - perTurn(fn)), "–", lo, "–", ""]);
  return rows;
}

function printTable(rows) {
  const head = [
    "workload",
    "measure",
    "base (median)",
    "new (median)",
    "new/base",
    "rounds' new/base",
    "traced (median)",
    "traced/new",
    "rounds' traced/new",
    "goal",
    "",
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join("  ");
  console.log(`\n${line(head)}`);
  console.log(widths.map((x) => "-".repeat(x)).join("  "));
  for (const r of rows) console.log(line(r));
  console.log("\n### Markdown\n");
  const md = [
    "Workload",
    "Measure",
    "Base (median)",
    "New (median)",
    "New / base",
    "Rounds' new / base",
    "Traced (median)",
    "Traced / new",
    "Rounds' traced / new",
    "Goal",
    "Met",
  ];
  console.log(`| ${md.join(" | ")} |`);
  console.log(`|${md.map((_, i) => (i >= 2 && i <= 8 ? "---:" : "---")).join("|")}|`);
  for (const r of rows) console.log(`| ${r.join(" | ")} |`);
  console.log(
    "\nMedians over every measured turn of every round. CPU per event: the thread group's CPU time over the turn (schedstat), over N;",
  );
  console.log("main = the JavaScript thread, koma-io = the core's I/O threads, all = process.cpuUsage() (every thread of this process).");
  console.log("Events/s: N over the turn's wall time, from the call to its result. Rounds' new/base: the lowest and highest");
  console.log("of the rounds' own ratios (each round's medians), the spread to read a ratio against. Traced: new, with a");
  console.log("tracer provider exporting to a no-op exporter and a meter provider; its CPU per turn over new's is what tracing");
  console.log("costs a turn (the lowest and highest of the rounds').");
}

// ------------------------------------------------------------------ main

const watchdog = setTimeout(
  () => {
    console.error(`FAIL: the ${SMOKE ? "smoke run" : "benchmark"} did not finish in time`);
    process.exit(1);
  },
  (SMOKE ? 120 : 1800) * 1000,
);
watchdog.unref();

const t0 = performance.now();
console.log(
  `koma-sdk turn workloads${SMOKE ? " (smoke: tiny counts, base = new, no timing asserted)" : ""}: node ${process.version}, ${cpus().length} CPU(s), load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`,
);
console.log(`base: ${baseText}`);
console.log(`new:  this checkout, ${describeNew()}`);
console.log(
  `koma-sim: ${SIM}; a turn: \`${text(P)}\` (${P.n.toLocaleString("en")} outputs of ${P.bytes} B); ${P.rounds} round(s) of ${P.turns} measured turn(s) per side${P.warm ? `, after ${P.warm} not measured` : ""}`,
);
const rows = [];
for (const w of WORKLOADS) {
  console.log(`\n${w.name}`);
  const runs = { base: [], new: [], traced: [] };
  const tally = Object.fromEntries(ORDER.map((s) => [s, { turns: 0, overflowed: 0 }]));
  const byRound = [];
  for (let i = 0; i < P.rounds; i++) {
    byRound.push({ base: [], new: [], traced: [] });
    // Each round starts with another side: a drift of the machine weighs on all.
    for (const side of [...ORDER.slice(i % 3), ...ORDER.slice(0, i % 3)]) {
      const rs = await sideRound(SIDES[side], w, P);
      const good = rs.filter((r) => r.ok);
      // A turn that overflowed is a result of the real run (counted, and left out of the medians); any other failure is the harness's.
      const over = rs.filter((r) => !r.ok && r.overflowed).length;
      for (const r of rs) if (!r.ok && (SMOKE || !r.overflowed)) fail(`${w.key} ${side} #${i + 1}: ${r.detail}`);
      runs[side].push(...good);
      byRound[i][side] = good;
      tally[side].turns += rs.length;
      tally[side].overflowed += over;
      console.log(
        `  ${side.padEnd(6)} #${i + 1}: ${good.length}/${rs.length} turns whole${over ? ` (${over} overflowed)` : ""}${good.length ? `: ${figuresText(figures(good, P.n))}` : ""}`,
      );
    }
  }
  if (runs.base.length && runs.new.length && runs.traced.length) {
    const pairs = byRound
      .filter((r) => r.base.length && r.new.length && r.traced.length)
      .map((r) => [figures(r.base, P.n), figures(r.new, P.n), figures(r.traced, P.n)]);
    rows.push(...rowsOf(w, figures(runs.base, P.n), figures(runs.new, P.n), figures(runs.traced, P.n), pairs));
  }
  const overText = (t) => `${t.overflowed} of ${t.turns}`;
  const over = [overText(tally.base), overText(tally.new), "–", "–", overText(tally.traced), "–", "–", "–", ""];
  rows.push([w.name, "turns that overflowed (left out above)", ...over]);
}
if (rows.length) printTable(rows);
console.log(`\ntotal ${((performance.now() - t0) / 1000).toFixed(1)} s`);
if (failures.length) {
  console.error(`\n${failures.length} failure(s):\n  ${failures.join("\n  ")}`);
  process.exit(1);
}
console.log(SMOKE ? "smoke run: every turn came out whole" : "all turns came out whole");
process.exit(0);
