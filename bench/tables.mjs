// The benchmark's output: numbers as text, the line of each run, and the
// tables of results (aligned text on the console, then Markdown for the README).
import { SIDE_NAME } from "./common.mjs";

const MIB = 1 << 20;

export const fmtRate = (r) => {
  if (!Number.isFinite(r)) return "n/a";
  if (r >= 1e6) return `${(r / 1e6).toFixed(2)} M/s`;
  if (r >= 1e3) return `${(r / 1e3).toFixed(1)} k/s`;
  return `${r.toFixed(1)} /s`;
};
export const fmtS = (s) => (Number.isFinite(s) ? `${s.toFixed(3)} s` : "n/a");
export const fmtMiB = (b) => (Number.isFinite(b) ? `${(b / MIB).toFixed(1)} MiB` : "n/a");
export const fmtX = (x) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : "n/a");
export const fmtCpu = (r) => {
  const parts = [`${r.cpuSelf.toFixed(2)}`];
  if (Number.isFinite(r.cpuMain)) {
    parts.push(`(JS ${r.cpuMain.toFixed(2)}`, `io ${r.cpuIo.toFixed(2)}`, `other ${r.cpuOther.toFixed(2)})`);
  }
  if (Number.isFinite(r.cpuChild)) parts.push(`+ sim ${r.cpuChild.toFixed(2)}`);
  return parts.join(" ");
};
export const fmtUs = (s) => (Number.isFinite(s) ? (s * 1e6 >= 100 ? (s * 1e6).toFixed(0) : (s * 1e6).toFixed(2)) : "n/a");
export const fmtN = (n) => n.toLocaleString("en");
export const fmtKiB = (b) => (Number.isFinite(b) ? `${(b / 1024).toFixed(1)} KiB` : "n/a");
export const fmtMs = (ms) => (Number.isFinite(ms) ? `${fmtN(Math.round(ms))} ms` : "n/a");
export const fmtSigned = (x) => (Number.isFinite(x) ? `${x >= 0 ? "+" : ""}${x}` : "n/a");

/** One run of one side, as the line the benchmark prints for it (`round` counts from 0). */
export function fmtRun(w, side, round, r) {
  const shown =
    w.kind === "elu"
      ? `busy ${(r.elu * 100).toFixed(1)}% ${fmtRate(r.rate)}${r.overflows ? " OVERFLOWED" : ""}`
      : w.kind === "blob"
        ? `${fmtS(r.seconds)} (JS thread busy ${fmtS(r.jsBusy)}) RSS +${fmtMiB(r.growth)}`
        : `${fmtRate(r.rate)} in ${fmtS(r.seconds)}${Number.isFinite(r.elu) ? `, JS thread busy ${(r.elu * 100).toFixed(0)}%` : ""}`;
  const perUnit = w.unit && r.ok ? `, ${fmtUs(r.cpuSelf / r.units)} µs/${w.unit}` : "";
  return `  ${SIDE_NAME[side].padEnd(8)} #${round + 1}: ${r.ok ? shown : "FAILED"}${r.detail ? ` (${r.detail})` : ""}${Number.isFinite(r.cpuSelf) ? `; cpu ${fmtCpu(r)}${perUnit}` : ""}`;
}

/** The peer-alone figures that were measured. */
export function peerText(peer) {
  const parts = [];
  if (peer.small) parts.push(`small events ${fmtRate(peer.small.rate)} (${peer.small.mbps.toFixed(0)} MB/s)`);
  if (peer.big) parts.push(`64 KiB events ${fmtRate(peer.big.rate)} (${peer.big.mbps.toFixed(0)} MB/s)`);
  if (peer.state) parts.push(`state() answers ${fmtRate(peer.state.rate)}`);
  return parts.join(", ");
}

export function printTable(rows, peer) {
  const head = [
    "workload",
    "size",
    "addon (median)",
    "pure JS (median)",
    "readline (median)",
    "addon/pure JS",
    "addon/readline",
    "floor",
    "addon/floor",
    "CPU µs per unit, all threads: addon · pure JS · readline (koma-sim)",
    "CPU/unit addon/pure JS",
    "goal",
    "",
    "CPU s addon",
    "CPU s pure JS",
    "CPU s readline",
  ];
  const body = rows.map((r) => [
    r.name,
    r.size,
    ...r.cells,
    r.ratioText,
    r.ratioRlText,
    r.floorCell ?? "–",
    Number.isFinite(r.ofFloor) ? fmtX(r.ofFloor) : "–",
    r.cpuUnitCell ?? "–",
    Number.isFinite(r.cpuRatio) ? fmtX(r.cpuRatio) : "–",
    r.goalText,
    r.metText,
    r.cpuA,
    r.cpuJ,
    r.cpuL,
  ]);
  // On the console, two tables (the results, then the CPU), each narrower.
  const console2 = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12],
    [0, 9, 10, 13, 14, 15],
  ];
  for (const cols of console2) {
    const h = cols.map((c) => head[c]);
    const b = body.map((row) => cols.map((c) => row[c]));
    const widths = h.map((x, i) => Math.max(x.length, ...b.map((row) => String(row[i]).length)));
    const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join("  ");
    console.log("\n" + line(h));
    console.log(widths.map((x) => "-".repeat(x)).join("  "));
    for (const row of b) console.log(line(row));
  }
  console.log(
    "\nThroughput ratios are addon / peer (above 1: the addon is faster); busy and CPU ratios are addon / peer (below 1: the addon is less busy).",
  );
  console.log("floor of the events: the same events already in memory, turned into {type, seq, name, data} by the fastest of a few plain");
  console.log(
    "JavaScript ways (bench/floor.mjs; no pipe, no checks, no iterator, one thread). Floor of the round trips: the same round trips",
  );
  console.log(
    "by one thread blocking in read and write on koma-sim's pipes (bench/rt-floor.mjs; no event loop, no thread hop, no promise).",
  );
  console.log(
    "addon/floor: the addon's rate over the floor's (for the stream, the floor's busy share over the addon's): 1 = at the floor,",
  );
  console.log("above 1 = past what one JavaScript thread alone can do.");
  console.log("CPU µs per unit: this process's user+sys, all threads, per event or round trip; koma-sim's apart (sim).");
  console.log("CPU s: this process's user+sys during the timed part (JS = main thread, io = the addon's koma-io");
  console.log("threads, other = the rest: V8 GC helpers, libuv), + sim = the koma-sim child; medians of the runs.");
  const peerLine = peerText(peer);
  if (peerLine) console.log(`\nThe peer alone (koma-sim sdk serve | cat > /dev/null, every request written at once): ${peerLine}.`);
  console.log("\n### Markdown\n");
  const mdHead = [
    "Workload",
    "Size",
    "Addon (median)",
    "Pure JS (median)",
    "Readline (median)",
    "Addon / pure JS",
    "Addon / readline",
    "Floor",
    "Addon / floor",
    "CPU µs per unit: addon · pure JS · readline (koma-sim)",
    "CPU per unit, addon / pure JS",
    "Goal",
    "Met",
    "CPU s addon",
    "CPU s pure JS",
    "CPU s readline",
  ];
  const right = new Set([2, 3, 4, 5, 6, 8, 10]);
  console.log(`| ${mdHead.join(" | ")} |`);
  console.log(`|${mdHead.map((_, i) => (right.has(i) ? "---:" : "---")).join("|")}|`);
  for (const b of body) console.log(`| ${b.map((c) => String(c).replace(/\|/g, "\\|")).join(" | ")} |`);
  if (peerLine) console.log(`\nPeer alone (\`koma-sim sdk serve | cat > /dev/null\`, every request written at once): ${peerLine}.`);
}

export function printScaleTable(rows, notes) {
  const head = ["N", "measure", "addon (median)", "pure JS (median)", "addon/pure JS", "goal", ""];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join("  ");
  console.log("\n" + line(head));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of rows) console.log(line(r));
  console.log("\n### Markdown (scale)\n");
  const mdHead = ["N", "Measure", "Addon (median)", "Pure JS (median)", "Addon / pure JS", "Goal", "Met"];
  console.log(`| ${mdHead.join(" | ")} |`);
  console.log(`|${mdHead.map((_, i) => (i >= 2 && i <= 4 ? "---:" : "---")).join("|")}|`);
  for (const r of rows) console.log(`| ${r.map((c) => String(c).replace(/\|/g, "\\|")).join(" | ")} |`);
  for (const n of notes) console.log(`\n${n}`);
}
