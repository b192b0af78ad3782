// One large response in a fresh Node process, for a clean peak RSS:
//   node bench/rss-one.mjs addon|js|readline [blobBytes]
// Prints one JSON line: the response's time, the frame's size, and the peak
// RSS growth while it passed (the peak after, minus the RSS just before the
// request, after a gc).
//
// The peak is this process's VmHWM, reset just before the request (Linux:
// /proc/self/clear_refs). Not resourceUsage().maxRSS: Linux carries that
// across fork and exec, so it starts at the RSS of the process that spawned
// this one (the benchmark runner, hundreds of MiB after the event workloads).
import { peakRss, resetPeak } from "../scripts/lib/proc.mjs";
import { gc, makeClient } from "./common.mjs";

const side = process.argv[2];
if (!["addon", "js", "readline"].includes(side)) {
  console.error("usage: node bench/rss-one.mjs addon|js|readline [blobBytes]");
  process.exit(2);
}
// The frame is {"id":"N","result":{"blob":"xxx…"}}: 30 bytes plus the id.
const FRAME_OVERHEAD = 30;
const blobBytes = Number(process.argv[3] ?? 41_943_040 - FRAME_OVERHEAD - 2);

const client = makeClient(side);
let out;
try {
  await client.probe();
  await client.state();
  // Warm the response path with a small blob, then settle the heap.
  const warm = await client.request("bench_blob", { bytes: 4096 });
  if (warm.blob.length !== 4096) throw new Error("warm-up blob has the wrong length");
  gc();
  gc();
  const rssBefore = process.memoryUsage().rss;
  const resettable = resetPeak() && peakRss() !== null;
  const maxRssBefore = resettable ? peakRss() : process.resourceUsage().maxRSS * 1024;
  const cpu0 = process.cpuUsage();
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  const r = await client.request("bench_blob", { bytes: blobBytes });
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const jsBusy = performance.eventLoopUtilization(elu0).active / 1000;
  const maxRssAfter = resettable ? peakRss() : process.resourceUsage().maxRSS * 1024;
  const ok = typeof r?.blob === "string" && r.blob.length === blobBytes;
  out = {
    side,
    ok,
    seconds,
    cpu: (cpu.user + cpu.system) / 1e6,
    jsBusy,
    blobBytes,
    rssBefore,
    maxRssBefore,
    maxRssAfter,
    peakFrom: resettable ? "VmHWM reset before the request" : "resourceUsage().maxRSS (may include the parent's RSS)",
    growth: maxRssAfter - Math.max(rssBefore, 0),
  };
} catch (e) {
  out = { side, ok: false, error: `${e.code ?? ""} ${e.message}` };
}
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(out.ok ? 0 : 1);
