// Where the CPU of the scale workload's request phase goes: N clients of one
// side started, then every client makes `perClient` state() calls, `depth` at
// a time (as bench/scale.mjs does); CPU seconds of this process (main thread,
// koma-io, the rest) and of all the koma-sim children over that phase, per
// request.
//   node bench/scale-cpu.mjs addon|js N [perClient] [depth]
import { readFileSync, readdirSync } from "node:fs";
import { makeClient, threadCpu, threadDelta } from "./common.mjs";

// A process's CPU time in ns, all its threads (schedstat: a tick-free count;
// a koma-sim spends well under a tick on 20 requests).
function processNs(pid) {
  let ns = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      } catch { /* gone */ }
    }
  } catch { /* gone */ }
  return ns;
}

const [side, nArg, perArg = "20", depthArg = "2"] = process.argv.slice(2);
const n = Number(nArg);
const perClient = Number(perArg);
const depth = Number(depthArg);
if (!["addon", "js", "readline"].includes(side) || !(n >= 1)) {
  console.error("usage: node bench/scale-cpu.mjs addon|js|readline N [perClient] [depth]");
  process.exit(2);
}
const clients = Array.from({ length: n }, () => makeClient(side));
await Promise.all(clients.map((c) => c.probe()));
const pids = clients.map((c) => c.pid);
const simCpu = () => pids.reduce((s, p) => s + processNs(p), 0) / 1e9;
const selfNs = () => processNs(process.pid) / 1e9;
const t0 = threadCpu();
const p0 = selfNs();
const s0 = simCpu();
const w0 = performance.now();
let answered = 0;
await Promise.all(clients.map(async (c) => {
  let started = 0;
  const worker = async () => {
    while (started < perClient) {
      started++;
      await c.state();
      answered++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(depth, perClient) }, worker));
}));
const wall = (performance.now() - w0) / 1000;
const d = threadDelta(t0, threadCpu());
const sim = simCpu() - s0;
const self = selfNs() - p0;
const us = (s) => ((s * 1e6) / answered).toFixed(1);
console.log(`${side} N=${n}: ${answered} requests in ${wall.toFixed(2)} s (${(answered / wall / 1000).toFixed(1)} k/s); CPU µs per request: main ${us(d.main)}, koma-io ${us(d.io)}, other ${us(d.other)}, (this process ${us(self)}), koma-sims ${us(sim)}`);
await Promise.all(clients.map((c) => c.close()));
process.exit(0);
