#!/usr/bin/env node
// Half a stderr line, a pause that the client's drain reads it in, the rest
// of the line, then koma-sim (KOMA_SIM_PATH) on the same stdio.
import { spawn } from "node:child_process";

process.stderr.write("one line in ");
setTimeout(() => {
  process.stderr.write("two writes\n", () => {
    const sim = spawn(process.env.KOMA_SIM_PATH, process.argv.slice(2), { stdio: "inherit" });
    sim.on("exit", (code) => process.exit(code ?? 1));
  });
}, 200);
