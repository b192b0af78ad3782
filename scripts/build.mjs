// Build the addon (and regenerate index.js / index.d.ts) and the koma-sim binary.
//   node scripts/build.mjs                  build both for this machine (release);
//                                           koma-sim is copied to bin/koma-sim
//   node scripts/build.mjs --if-needed      skip when the outputs exist (for `npm run demo`)
//   node scripts/build.mjs --target TRIPLE  build for another Rust target (the release
//                                           workflow's musl rows); koma-sim stays in
//                                           target/TRIPLE/release/, bin/ is left alone
//   node scripts/build.mjs --target TRIPLE --cross-compile
//                                           the addon through `napi build -x`
//                                           (cargo-zigbuild, needs zig): a musl addon
//                                           from a glibc machine
import { copyFileSync, chmodSync, existsSync, mkdirSync, readdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import { root, run, rustHost } from "./lib/repo.mjs";

const exe = process.platform === "win32" ? "koma-sim.exe" : "koma-sim";
const simOut = join(root, "bin", exe);
const hasAddon = () => readdirSync(root).some((f) => f.endsWith(".node"));
const argv = process.argv.slice(2);

if (argv.includes("--if-needed") && hasAddon() && existsSync(simOut)) {
  process.exit(0);
}

const host = rustHost();
const target = argv.includes("--target") ? argv[argv.indexOf("--target") + 1] : host;
if (!target || target.startsWith("--")) throw new Error("--target needs a Rust target triple");

run(process.execPath, [
  join(root, "node_modules", "@napi-rs", "cli", "dist", "cli.js"),
  "build",
  "--platform",
  "--release",
  "--target",
  target,
  ...(argv.includes("--cross-compile") ? ["--cross-compile"] : []),
]);
run("cargo", ["build", "--release", "-p", "koma-sim", "--target", target]);
if (target === host) {
  mkdirSync(join(root, "bin"), { recursive: true });
  // Copy then rename: replacing a binary that is running (ETXTBSY) must not fail.
  copyFileSync(join(root, "target", target, "release", exe), `${simOut}.tmp`);
  chmodSync(`${simOut}.tmp`, 0o755);
  renameSync(`${simOut}.tmp`, simOut);
}
