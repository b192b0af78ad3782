// One side, one workload, repeated: a target for profilers. From the repository's root:
//   node [--perf-basic-prof | --cpu-prof] bench/profile-one.mjs addon|js|readline w1|w2|w3|w4|w5|w6 [repeats]
// With perf, from a folder of its own (--perf-basic-prof leaves an isolate-*-v8.log
// in the working directory):
//   repo=$PWD; cd "$(mktemp -d)"
//   perf record -F 999 --call-graph dwarf,16384 -o koma.perf -- node --perf-basic-prof "$repo/bench/profile-one.mjs" addon w1 1
//   perf script -i koma.perf | node "$repo/bench/perf-buckets.mjs" --hz 999 --per 400000
// Prints what run.mjs measures for each run (rate, CPU per thread group), as JSON.
import { runOne } from "./workloads.mjs";

const [side, key, repeats = "3"] = process.argv.slice(2);
if (!["addon", "js", "readline"].includes(side) || !/^w[1-6]$/.test(key ?? "") || !(Number(repeats) >= 1)) {
  console.error("usage: node bench/profile-one.mjs addon|js|readline w1..w6 [repeats]");
  process.exit(2);
}
for (let i = 0; i < Number(repeats); i++) {
  const r = await runOne(key, side);
  console.log(JSON.stringify(r));
}
process.exit(0);
