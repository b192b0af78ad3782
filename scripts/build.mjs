// Build the addon (and regenerate its loader binding.js and the typings
// index.d.ts: napi writes the declarations of the `Client` class, which
// scripts/generate.mjs puts after the types it makes from schema/; index.js,
// the entry, is written by hand) and the koma-sim binary.
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
//   node scripts/build.mjs --testing        only the addon with the `testing` feature
//                                           (fault injection, `__census`), as
//                                           koma-sdk.testing.node beside the real one;
//                                           the tests that inject faults load it. Its
//                                           own target dir, so the two builds never
//                                           overwrite each other's artifacts.
import { copyFileSync, chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
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
/** Where napi writes its typings (the `Client` class), for scripts/generate.mjs to put in index.d.ts. */
const napiTypings = join("target", "napi", "client.d.ts");
const target = argv.includes("--target") ? argv[argv.indexOf("--target") + 1] : host;
if (!target || target.startsWith("--")) throw new Error("--target needs a Rust target triple");

if (argv.includes("--testing")) {
  const dir = join(root, "target", "testing");
  run("cargo", ["build", "--release", "-p", "koma-sdk-node", "--features", "testing", "--target", target, "--target-dir", dir]);
  const lib = process.platform === "darwin" ? "libkoma_sdk_node.dylib" : "libkoma_sdk_node.so";
  const out = join(root, "koma-sdk.testing.node");
  copyFileSync(join(dir, target, "release", lib), `${out}.tmp`);
  renameSync(`${out}.tmp`, out);
  process.exit(0);
}

mkdirSync(join(root, "target", "napi"), { recursive: true });
run(process.execPath, [
  join(root, "node_modules", "@napi-rs", "cli", "dist", "cli.js"),
  "build",
  "--platform",
  "--release",
  "--target",
  target,
  "--js",
  "binding.js",
  "--dts",
  napiTypings,
  "--no-dts-header",
  ...(argv.includes("--cross-compile") ? ["--cross-compile"] : []),
]);
stripLoaderTypings(join(root, napiTypings));
run(process.execPath, [join(root, "scripts", "generate.mjs"), "--typings", join(root, napiTypings)]);
run("cargo", ["build", "--release", "-p", "koma-sim", "--target", target]);
if (target === host) {
  mkdirSync(join(root, "bin"), { recursive: true });
  // Copy then rename: replacing a binary that is running (ETXTBSY) must not fail.
  copyFileSync(join(root, "target", target, "release", exe), `${simOut}.tmp`);
  chmodSync(`${simOut}.tmp`, 0o755);
  renameSync(`${simOut}.tmp`, simOut);
}

/**
 * The napi CLI declares the generated loader's `__napiBindingTarget` in the
 * typings (there is no option against it); it is the loader's metadata, not
 * this package's API, so it leaves the public typings here. `npm test`'s
 * check that the committed typings are what the build makes covers this step.
 */
function stripLoaderTypings(file) {
  const text = readFileSync(file, "utf8");
  const stripped = text.replace(/\/\*\*(?:(?!\*\/)[\s\S])*\*\/\nexport declare const __napiBindingTarget:[^\n]*\n\n?/, "");
  if (stripped.includes("__napiBindingTarget")) throw new Error(`${file}: could not remove the declaration of __napiBindingTarget`);
  if (stripped !== text) writeFileSync(file, stripped);
}
