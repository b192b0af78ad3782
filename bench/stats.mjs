// The benchmark's statistics: medians of the runs, the floor of a workload,
// the ratios between the sides and whether each goal is met, as the rows that
// bench/tables.mjs prints.
import { fmtCpu, fmtKiB, fmtMiB, fmtMs, fmtN, fmtRate, fmtS, fmtSigned, fmtUs, fmtX } from "./tables.mjs";

export const median = (xs) => {
  const a = xs.filter((x) => Number.isFinite(x)).sort((x, y) => x - y);
  if (a.length === 0) return NaN;
  const m = a.length >> 1;
  return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2;
};

const medianCpu = (runs) => ({
  cpuSelf: median(runs.map((r) => r.cpuSelf)),
  cpuMain: median(runs.map((r) => r.cpuMain)),
  cpuIo: median(runs.map((r) => r.cpuIo)),
  cpuOther: median(runs.map((r) => r.cpuOther)),
  cpuChild: median(runs.map((r) => r.cpuChild)),
});

/** The floor of one workload: every way's median, the fastest way. */
function floorOf(floorRuns) {
  if (!floorRuns.length) return null;
  let best = null;
  for (const way of new Set(floorRuns.map((r) => r.way))) {
    const rs = floorRuns.filter((r) => r.way === way);
    const m = {
      way,
      seconds: median(rs.map((r) => r.seconds)),
      rate: median(rs.map((r) => r.rate)),
      cpuPerUnit: median(rs.map((r) => r.cpuSelf / r.events)),
    };
    if (!best || m.seconds < best.seconds) best = m;
  }
  return best;
}

/**
 * The row of one workload from its runs (`runs`: each side's runs that
 * completed), its floor runs, the peer alone, and the sizes `p` it ran at.
 */
export function summarize(w, runs, floorRuns, peer, p) {
  const a = runs.addon;
  const j = runs.js;
  const l = runs.readline;
  const med = (xs, f) => median(xs.map(f));
  const row = { key: w.key, name: w.name, size: w.size(p) };
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
    const times = [a, j, l].map((xs) => med(xs, (r) => r.seconds));
    const growths = [a, j, l].map((xs) => med(xs, (r) => r.growth));
    const [ta, tj, tl] = times;
    const ga = growths[0];
    const frame = a[0]?.frame ?? NaN;
    row.ratio = tj / ta;
    row.ratioRl = tl / ta;
    row.cells = times.map((t, i) => `${fmtS(t)}, RSS +${fmtMiB(growths[i])} (${fmtX(growths[i] / frame)} frame)`);
    row.goalText = `≥ ${w.goal.toFixed(1)}× both peers, RSS ≤ ${w.rssGoal}× frame`;
    met.push(["time", Math.min(row.ratio, row.ratioRl) >= w.goal], ["RSS", ga / frame <= w.rssGoal]);
  } else {
    const elus = [a, j, l].map((xs) => med(xs, (r) => r.elu));
    const [ea, ej, el] = elus;
    const over = (xs) => xs.reduce((s, r) => s + (r.overflows ?? 0), 0);
    row.ratio = ea / ej;
    row.ratioRl = ea / el;
    row.cells = [a, j, l].map(
      (xs, i) => `busy ${(elus[i] * 100).toFixed(1)}% at ${fmtRate(med(xs, (r) => r.rate))}, ${over(xs)} overflow(s)`,
    );
    row.goalText = `≤ ${w.goal.toFixed(2)}× of both peers, no overflow`;
    met.push(["busy", Math.max(row.ratio, row.ratioRl) <= w.goal && over(a) === 0]);
    row.ratioText = `${fmtX(row.ratio)} busy`;
    row.ratioRlText = `${fmtX(row.ratioRl)} busy`;
    if (floor) {
      const busy = floor.seconds / p.steady.seconds;
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

const SCALE_START_GOAL_N = [100, 1000];
const SCALE_RPS_GOAL_N = [1000];

/**
 * The rows of one N of the scale workload (`want`, capped to `n`): `runs` are
 * each side's runs that completed, `all` every run; `depth` the calls in
 * flight per client.
 */
export function summarizeScale(want, n, runs, all, depth) {
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
    rows.push([
      nCell,
      "start all (every probe() resolved)",
      fmtMs(ta),
      fmtMs(tj),
      fmtX(ratio),
      goal ? "≤ 1.0× (stretch 0.7×)" : "–",
      goal ? (ratio <= 0.7 ? "met (stretch too)" : yes(ratio <= 1.0)) : "",
    ]);
  }
  // threads
  {
    const cell = (xs) => {
      const m = med(xs, (r) => r.threadsAdded);
      const x = max(xs, (r) => r.threadsAdded);
      return Number.isFinite(m) ? `${m}${x !== m ? ` (max ${x})` : ""}` : "n/a";
    };
    const which = a.map((r) => r.threadsWhich).filter(Boolean)[0];
    rows.push([
      nCell,
      "threads added",
      `${cell(a)}${which ? ` (${which})` : ""}`,
      cell(j),
      "–",
      "≤ 8",
      yes(max(a, (r) => r.threadsAdded) <= 8),
    ]);
  }
  // RSS
  {
    const [ra, rj] = [a, j].map((xs) => med(xs, (r) => r.rssPerClient));
    rows.push([
      nCell,
      "RSS per idle client (this process; koma-sim not counted)",
      fmtKiB(ra),
      fmtKiB(rj),
      fmtX(ra / rj),
      "≤ 1.0×",
      yes(ra / rj <= 1.0),
    ]);
  }
  // requests
  {
    const [qa, qj] = [a, j].map((xs) => med(xs, (r) => r.reqRate));
    const per = a[0]?.requests ?? j[0]?.requests;
    const goal = SCALE_RPS_GOAL_N.includes(n);
    rows.push([
      nCell,
      `requests/s across all clients (${per ? fmtN(per) : "?"} state() calls, ${depth} in flight per client)`,
      fmtRate(qa),
      fmtRate(qj),
      fmtX(qa / qj),
      goal ? "≥ 1.2×" : "–",
      goal ? yes(qa / qj >= 1.2) : "",
    ]);
    const [ca, cj] = [a, j].map((xs) => med(xs, (r) => r.reqCpuSelf));
    const [sa, sj] = [a, j].map((xs) => med(xs, (r) => r.reqCpuSims));
    const us = (x) => (Number.isFinite(x) ? `${(x * 1e6).toFixed(1)} µs` : "n/a");
    rows.push([
      nCell,
      "CPU per request in that phase: this process (the koma-sims)",
      `${us(ca)} (${us(sa)})`,
      `${us(cj)} (${us(sj)})`,
      fmtX(ca / cj),
      "–",
      "",
    ]);
  }
  // after close: every run, the failed ones too
  {
    const cell = (xs) => `${max(xs, (r) => r.childrenLeft)} children, fds ${fmtSigned(max(xs, (r) => r.fdsOver))}`;
    const ok = (xs) => xs.every((r) => r.childrenLeft === 0 && r.fdsOver <= 0);
    rows.push([
      nCell,
      "after close(): children left, descriptors vs before (worst run)",
      cell(all.addon),
      cell(all.js),
      "–",
      "0 children, fds +0",
      ok(all.addon) && ok(all.js) ? "met" : "NOT met",
    ]);
  }
  return rows;
}
