// `fake-koma`: the small package whose `npm install -g` writes the .cmd shims
// the Windows tests run (windows.test.mjs): `fake-koma`, a Node script that
// records how it was started and then runs koma-sim on the same stdio, and
// `koma-native`, a copy of koma-sim.exe. Written into `dir`; npm packs it.
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const CLI = `#!/usr/bin/env node
const { writeFileSync } = require("node:fs");
const { spawn } = require("node:child_process");
const keep = /^(path|koma_danger)$/i;
writeFileSync(process.env.FAKE_KOMA_RECORD, JSON.stringify({
  argv: process.argv, pid: process.pid, ppid: process.ppid, execPath: process.execPath,
  env: Object.fromEntries(Object.keys(process.env).filter((k) => keep.test(k)).map((k) => [k, process.env[k]])),
}));
const child = spawn(process.env.FAKE_KOMA_SIM, process.argv.slice(2), { stdio: "inherit" });
child.on("exit", (code) => process.exit(code ?? 1));
`;

/** Write the package into `dir`, with `sim` (koma-sim.exe) as its native command. */
export function writeFakeKoma(dir, sim) {
  mkdirSync(join(dir, "bin"), { recursive: true });
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ name: "fake-koma", version: "1.0.0", bin: { "fake-koma": "cli.js", "koma-native": "bin/koma-native.exe" } }),
  );
  writeFileSync(join(dir, "cli.js"), CLI);
  copyFileSync(sim, join(dir, "bin", "koma-native.exe"));
}
