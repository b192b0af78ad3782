// Where koma-sim is: a deterministic stand-in for `koma` that speaks the same
// protocol. `new Client({ executable: require("@koma/sdk/sim").simPath })`.
//
// koma-sim is a native program, so it travels with the native addon: each
// per-platform package (@koma/sdk-linux-x64-gnu, @koma/sdk-darwin-arm64, ...)
// carries its own copy beside its `.node` file, and the main package carries
// none. `simPath` is looked up each time it is read, in this order:
//   1. KOMA_SIM_PATH, when set: that file (a bundle, a single-file executable,
//      a koma-sim built by hand);
//   2. bin/koma-sim beside this file: a checkout of the repository after
//      `npm run build`;
//   3. koma-sim in the installed package of this platform, found the way
//      index.js finds the addon.
// When none is there, reading `simPath` throws an Error (code
// ERR_KOMA_SIM_NOT_FOUND) that names the platform and says how to get
// koma-sim. Requiring this module never throws; importing it as an ES module
// goes through sim.mjs, which reads `simPath` at once and so throws there.
"use strict";

const { accessSync, constants, existsSync, readFileSync } = require("node:fs");
const { dirname, join, resolve } = require("node:path");

const exe = process.platform === "win32" ? "koma-sim.exe" : "koma-sim";
const buildHint =
  "Build it from the @koma/sdk repository (`cargo build --release -p koma-sim`, or `npm run build`) " +
  "and set KOMA_SIM_PATH to the binary (target/release/koma-sim, or bin/koma-sim after `npm run build`).";

function notFound(message) {
  return Object.assign(new Error(`${message} ${buildHint}`), { code: "ERR_KOMA_SIM_NOT_FOUND" });
}

/** Which C library Node runs on, on Linux: "musl" or "gnu". */
function linuxLibc() {
  try {
    return readFileSync("/usr/bin/ldd", "utf8").includes("musl") ? "musl" : "gnu";
  } catch {
    // No ldd to read (a slim image): ask Node which libc it was loaded with.
  }
  try {
    const report = process.report.getReport();
    if (report.header && report.header.glibcVersionRuntime) return "gnu";
    return (report.sharedObjects || []).some((f) => /libc\.musl-|ld-musl-/.test(f)) ? "musl" : "gnu";
  } catch {
    return "gnu";
  }
}

let platformCache;
/** The napi-rs name of this platform: the suffix of its package, e.g. "linux-x64-gnu". */
function platformName() {
  if (platformCache) return platformCache;
  const { platform, arch } = process;
  if (platform === "linux") {
    const libc = linuxLibc();
    platformCache = arch === "arm" ? `linux-arm-${libc}eabihf` : `linux-${arch}-${libc}`;
  } else if (platform === "win32") {
    platformCache = `win32-${arch}-msvc`;
  } else {
    platformCache = `${platform}-${arch}`;
  }
  return platformCache;
}

function executable(path, where) {
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw notFound(`koma-sim: ${path} (${where}) is there but cannot be executed (chmod +x it).`);
  }
  return path;
}

function lookUp() {
  const override = process.env.KOMA_SIM_PATH;
  if (override) {
    const path = resolve(override);
    if (!existsSync(path)) throw notFound(`koma-sim: KOMA_SIM_PATH is ${JSON.stringify(override)}, and there is no such file.`);
    return executable(path, "KOMA_SIM_PATH");
  }
  // The repository's own layout (the built binary beside the package). In a
  // bundle __dirname is the bundle's folder, or is not defined at all.
  if (typeof __dirname === "string") {
    const local = join(__dirname, "bin", exe);
    if (existsSync(local)) return executable(local, "beside @koma/sdk");
  }
  const platform = platformName();
  const name = `@koma/sdk-${platform}`;
  let manifest = null;
  try {
    manifest = require.resolve(`${name}/package.json`);
  } catch {
    // Not installed, or no module resolution here (a bundle).
  }
  if (manifest) {
    const path = join(dirname(manifest), exe);
    if (existsSync(path)) return executable(path, name);
    throw notFound(`koma-sim: the package ${name} is installed but has no koma-sim (looked for ${path}).`);
  }
  throw notFound(
    `koma-sim: there is no koma-sim for this platform (${platform}). It comes in the package ${name}, ` +
      "an optional dependency of @koma/sdk, which could not be found: it is not installed " +
      "(optional dependencies omitted, or no prebuilt package for this platform: see the package's docs/platforms.md), " +
      "or this code runs from a bundle or a single-file executable that left node_modules behind.",
  );
}

// A getter, so that the look-up happens when `simPath` is read, not when this
// module is loaded. It is written in the one form Node's CommonJS lexer
// accepts (a getter that returns a property), so that a runtime or bundler
// that imports this file as an ES module still finds the name.
const lazy = {
  get simPath() {
    return lookUp();
  },
};
Object.defineProperty(exports, "simPath", {
  enumerable: true,
  get: function () {
    return lazy.simPath;
  },
});
