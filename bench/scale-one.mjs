// One run of the scale workload in a fresh Node process (bench/run.mjs starts
// one per run):
//   node bench/scale-one.mjs addon|js|readline N perClient depth
// Prints one JSON line (bench/scale.mjs says what is measured); exits 1 when
// the run broke or left a child process or a descriptor behind.
import { addonClient, threadCount, threadNames } from "./common.mjs";
import { scaleRun } from "./scale.mjs";

const [side, n, perClient, depth] = process.argv.slice(2);
if (!["addon", "js", "readline"].includes(side) || !(Number(n) >= 1) || !(Number(perClient) >= 1) || !(Number(depth) >= 1)) {
  console.error("usage: node bench/scale-one.mjs addon|js|readline N perClient depth");
  process.exit(2);
}
// This process's threads before the SDK is loaded: loading it is part of what it adds.
const cold = { threads: threadCount(), names: threadNames() };
if (side === "addon") addonClient();
const r = await scaleRun(side, Number(n), { perClient: Number(perClient), depth: Number(depth), cold });
process.stdout.write(JSON.stringify(r) + "\n");
process.exit(r.ok ? 0 : 1);
