// One side, one workload, repeated: a target for profilers.
//   node [--perf-basic-prof | --cpu-prof] bench/profile-one.mjs addon|js|readline w1|w2|w3|w4|w5|w6 [repeats]
//   cd /tmp && perf record -F 999 --call-graph dwarf,16384 -o /tmp/koma.perf -- \
//     node --perf-basic-prof /work/main/bench/profile-one.mjs addon w1 1
//   perf script -i /tmp/koma.perf | node /work/main/bench/perf-buckets.mjs --hz 999 --per 400000
// (run it from /tmp: --perf-basic-prof leaves an isolate-*-v8.log in the working directory)
// Prints what run.mjs prints for each run (rate, CPU per thread group).
process.env.KOMA_BENCH_PROFILE = "1";
const [side, key, repeats = "3"] = process.argv.slice(2);
if (!["addon", "js", "readline"].includes(side) || !/^w[1-6]$/.test(key ?? "")) {
  console.error("usage: node bench/profile-one.mjs addon|js|readline w1..w6 [repeats]");
  process.exit(2);
}
const { runOne } = await import("./run.mjs");
for (let i = 0; i < Number(repeats); i++) {
  const r = await runOne(key, side);
  console.log(JSON.stringify(r));
}
process.exit(0);
