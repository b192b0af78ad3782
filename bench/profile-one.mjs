// One side, one workload, repeated: a target for profilers.
//   node [--perf-basic-prof | --cpu-prof] bench/profile-one.mjs addon|js w1|w2|w3|w4|w5|w6 [repeats]
//   perf record -F 1999 -g -o /tmp/koma.perf -- node --perf-basic-prof bench/profile-one.mjs addon w1 3
// Prints what run.mjs prints for each run (rate, CPU per thread group).
process.env.KOMA_BENCH_PROFILE = "1";
const [side, key, repeats = "3"] = process.argv.slice(2);
if (!["addon", "js"].includes(side) || !/^w[1-6]$/.test(key ?? "")) {
  console.error("usage: node bench/profile-one.mjs addon|js w1..w6 [repeats]");
  process.exit(2);
}
const { runOne } = await import("./run.mjs");
for (let i = 0; i < Number(repeats); i++) {
  const r = await runOne(key, side);
  console.log(JSON.stringify(r));
}
process.exit(0);
