#!/usr/bin/env node
// The `koma-sim` command of an installed @koma/sdk: runs this platform's
// koma-sim (see sim.js for where it is found) with the same arguments and
// standard streams, and ends the way it ends.
"use strict";

const { spawn } = require("node:child_process");

let path;
try {
  path = require("../sim.js").simPath;
} catch (err) {
  console.error(err.message);
  process.exit(1);
}

// The handlers first: a signal that comes as soon as koma-sim has started
// (before this script's next line, on a busy machine) must reach it too.
// They run on the event loop, after `child` is set.
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
let child;
for (const signal of forwarded) process.on(signal, () => child.kill(signal));
child = spawn(path, process.argv.slice(2), { stdio: "inherit" });
child.on("error", (err) => {
  console.error(`koma-sim: cannot run ${path}: ${err.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    // End by the same signal, so that a caller sees what the child saw.
    for (const s of forwarded) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code);
});
