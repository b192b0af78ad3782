// `npm run test:stress`: the Node tests 20 times in a row (`--rounds N`) with
// a busy loop on every core, as a shared CI machine may be loaded. Tests that
// count descriptors, threads or processes must hold right after the call
// they check returns, busy machine or not.
import { spawn } from "node:child_process";
import { availableParallelism } from "node:os";
import { runNodeTests } from "./node-tests.mjs";

const argv = process.argv.slice(2);
const at = argv.indexOf("--rounds");
const rounds = at >= 0 ? Number(argv[at + 1]) : 20;
// A bad count would run no round, and so pass.
if (!(Number.isSafeInteger(rounds) && rounds >= 1)) {
  console.error("usage: node scripts/stress.mjs [--rounds N] (N at least 1)");
  process.exit(2);
}

const loops = Array.from({ length: availableParallelism() }, () => spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
const stopLoops = () => {
  for (const l of loops) l.kill("SIGKILL");
};
process.on("exit", stopLoops);
console.log(`test:stress: ${rounds} rounds of the Node tests, ${loops.length} busy loop(s) running`);

let failed = 0;
const started = Date.now();
for (let i = 1; i <= rounds; i++) {
  const t0 = Date.now();
  const r = runNodeTests({ quiet: true });
  const secs = ((Date.now() - t0) / 1000).toFixed(0);
  console.log(`round ${i}/${rounds}: ${r.pass}/${r.tests} passed, ${r.fail} failed (${secs} s)`);
  if (!r.ok) {
    failed++;
    // Each failing test's report: from its "not ok" line to the end of its block.
    const lines = r.output.split("\n");
    const shown = [];
    for (let i = 0; i < lines.length; i++) {
      if (!/^\s*not ok /.test(lines[i])) continue;
      for (let j = i; j < lines.length && j < i + 60; j++) {
        shown.push(lines[j]);
        if (j > i && /^\s*\.\.\.$/.test(lines[j])) break;
      }
    }
    console.log(shown.slice(0, 200).join("\n"));
  }
}
stopLoops();
console.log(`test:stress: ${rounds - failed} of ${rounds} rounds passed in ${((Date.now() - started) / 60000).toFixed(1)} min`);
process.exit(failed === 0 ? 0 : 1);
