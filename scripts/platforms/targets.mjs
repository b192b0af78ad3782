// The targets of both packages (package.json's napi.targets, which are also
// the wheels' targets) and how each is built on a Linux x64 machine: which
// toolchain, which standard library, which linker. The release workflows
// build each target through the same functions (scripts/platforms.mjs
// --target T), and `npm run release:dry` builds this machine's target
// through them too, so what is tested here is what ships.
//
//   x86_64-unknown-linux-gnu    rustup's toolchain, linked by zig against glibc 2.28 (GLIBC_FLOOR)
//   aarch64-unknown-linux-gnu   Debian's Rust (rustc-web) and its arm64 std (libstd-rust-web-dev:arm64),
//                               linked by zig against glibc 2.28
//   *-linux-musl, *-apple-darwin Debian's Rust, std built from rust-web-src (-Zbuild-std), linked by
//                               zig
//   x86_64-pc-windows-msvc      built as x86_64-pc-windows-gnu: Debian's Rust, std built from
//                               rust-web-src, linked by gcc-mingw-w64; the addon against an import
//                               library of node.exe's Node-API (docs/windows.md says why the package
//                               is named -msvc)
//   aarch64-pc-windows-msvc     built as aarch64-pc-windows-gnullvm: Debian's Rust, std built from
//                               rust-web-src, linked by zig (its arm64 MinGW runtime); the addon
//                               against an arm64 import library of the same names (zig's dlltool),
//                               its exports given by a .def file (zig applies no other)
//
// zig links through cargo-zigbuild. A glibc target is given to it with the
// glibc it links against (`x86_64-unknown-linux-gnu.2.28`): the binaries then
// ask for no symbol version newer than that, which release:dry checks.
//
// Every build of Debian's Rust goes to target/rustc-web/, and rustup's zig
// builds to target/floor/, apart from `npm run build`'s target/<triple>/
// (two compilers, or two linkers, must not share one cache: cargo would
// rebuild everything at each switch), with /usr/bin first on PATH in the
// build's processes only.
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { root } from "../lib/repo.mjs";
import { GLIBC_FLOOR, MACOS_MIN } from "../release-lib.mjs";
import { cacheDir, out, runtime, sh } from "./tools.mjs";

export const TARGETS = [
  { triple: "x86_64-unknown-linux-gnu", abi: "linux-x64-gnu", toolchain: "rustup", zig: true, glibc: GLIBC_FLOOR },
  { triple: "aarch64-unknown-linux-gnu", abi: "linux-arm64-gnu", toolchain: "rustc-web", zig: true, glibc: GLIBC_FLOOR },
  { triple: "x86_64-unknown-linux-musl", abi: "linux-x64-musl", toolchain: "rustc-web", buildStd: true, zig: true },
  { triple: "aarch64-unknown-linux-musl", abi: "linux-arm64-musl", toolchain: "rustc-web", buildStd: true, zig: true },
  { triple: "x86_64-apple-darwin", abi: "darwin-x64", toolchain: "rustc-web", buildStd: true, zig: true, macos: true },
  { triple: "aarch64-apple-darwin", abi: "darwin-arm64", toolchain: "rustc-web", buildStd: true, zig: true, macos: true },
  {
    triple: "x86_64-pc-windows-msvc",
    cargoTriple: "x86_64-pc-windows-gnu",
    abi: "win32-x64-msvc",
    toolchain: "rustc-web",
    buildStd: true,
    linker: "x86_64-w64-mingw32-gcc",
    windows: true,
  },
  {
    // No wheel: pyo3's import library of python3.dll is not made for this target here, and nothing runs it.
    triple: "aarch64-pc-windows-msvc",
    cargoTriple: "aarch64-pc-windows-gnullvm",
    abi: "win32-arm64-msvc",
    toolchain: "rustc-web",
    buildStd: true,
    zig: true,
    windows: true,
    noWheel: true,
  },
];

/** The triple cargo builds for: the target's own, or (Windows) the GNU one that this machine's toolchain links. */
export const cargoTriple = (target) => target.cargoTriple ?? target.triple;
const libName = (target) => (target.windows ? "koma_sdk_node.dll" : target.macos ? "libkoma_sdk_node.dylib" : "libkoma_sdk_node.so");
export const simName = (target) => (target.windows ? "koma-sim.exe" : "koma-sim");

/** Debian's packages a target's build needs. */
export function aptFor(target) {
  if (target.toolchain === "rustup") return [];
  const pkgs = ["rustc-web", "cargo-web"];
  if (target.buildStd) pkgs.push("rust-web-src");
  if (target.triple === "aarch64-unknown-linux-gnu") pkgs.push("libstd-rust-web-dev:arm64");
  if (target.windows) pkgs.push("gcc-mingw-w64-x86-64", "mingw-w64-tools");
  return pkgs;
}

export const targetDir = (target) => join(root, "target", target.toolchain === "rustup" ? "floor" : "rustc-web");
/** The target as cargo-zigbuild takes it: a glibc target with the glibc it is linked against. */
const buildTriple = (target) => (target.glibc ? `${cargoTriple(target)}.${target.glibc}` : cargoTriple(target));
/** Where a target's outputs are collected: the addon as napi names it, koma-sim, and wheel/. */
export const outDir = (target) => join(root, "target", "platforms", target.triple);
export const addonName = (target) => `koma-sdk.${target.abi}.node`;

const envKey = (triple) => triple.toUpperCase().replace(/-/g, "_");

/** The environment of a target's build processes. */
export function buildEnv(target, venvBin) {
  const env = { ...process.env, CARGO_TARGET_DIR: targetDir(target), PATH: `${venvBin}:${process.env.PATH}` };
  delete env.RUSTFLAGS;
  if (target.toolchain === "rustc-web") {
    // Debian's rustc and cargo before rustup's proxies (which would pick
    // rustup's toolchain), for these processes only; the venv first still, for
    // cargo-zigbuild's `python3 -m ziglang`.
    env.PATH = `${venvBin}:/usr/bin:${process.env.PATH}`;
    env.RUSTC = "/usr/bin/rustc";
    env.CARGO = "/usr/bin/cargo";
    delete env.RUSTUP_TOOLCHAIN;
  }
  if (target.buildStd) {
    env.RUSTC_BOOTSTRAP = "1";
    env.CARGO_UNSTABLE_BUILD_STD = "std,panic_abort";
  }
  if (target.linker) env[`CARGO_TARGET_${envKey(cargoTriple(target))}_LINKER`] = target.linker;
  // The addon links against node.exe's Node-API through an import library (see `libnode`).
  if (target.windows) env.LIBNODE_PATH = libnode(target, venvBin);
  if (target.triple.endsWith("-musl")) {
    // A musl cdylib needs the C library dynamically (the addon is loaded into a
    // musl Node); zig brings the C runtime's start files, not rustc.
    env[`CARGO_TARGET_${envKey(target.triple)}_RUSTFLAGS`] = "-C target-feature=-crt-static -C link-self-contained=no";
  }
  // Without it zig stamps the Mach-O files with its own SDK's version as their minimum.
  if (target.macos) env.MACOSX_DEPLOYMENT_TARGET = MACOS_MIN;
  return env;
}

/**
 * The import library napi-build links the Windows addon with: node.exe's
 * `napi_*` and `node_api_*` exports (gendef), as `libnode.dll.a` (mingw's
 * dlltool; for arm64 `libnode.a`, zig's dlltool with `-m arm64`, the same
 * names), beside an empty `libnode.dll` (napi-build only checks that it
 * exists). With napi's default dyn-symbols the addon imports nothing from
 * it; it only lets the link succeed. Kept in the cache; its folder.
 */
export function libnode(target, venvBin) {
  const arm64 = cargoTriple(target).startsWith("aarch64");
  const dir = join(cacheDir(), arm64 ? "libnode-win-arm64" : "libnode-win-x64");
  const lib = arm64 ? "libnode.a" : "libnode.dll.a";
  if (existsSync(join(dir, lib))) return dir;
  const node = runtime("node-win");
  const tmp = `${dir}.partial-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const exports = out("gendef", ["-", node], { stdio: ["ignore", "pipe", "ignore"] })
    .split("\n")
    .filter((l) => /^(napi|node_api)_\w+$/.test(l.trim()))
    .map((l) => l.trim());
  if (exports.length < 100) throw new Error(`gendef found ${exports.length} Node-API exports in ${node}`);
  writeFileSync(join(tmp, "node.def"), `LIBRARY node.exe\nEXPORTS\n${exports.join("\n")}\n`);
  if (arm64)
    sh(join(venvBin, "python"), ["-m", "ziglang", "dlltool", "-m", "arm64", "-d", "node.def", "-l", lib, "-D", "node.exe"], { cwd: tmp });
  else sh("x86_64-w64-mingw32-dlltool", ["-d", "node.def", "-l", lib, "-D", "node.exe"], { cwd: tmp });
  writeFileSync(join(tmp, "libnode.dll"), "");
  renameSync(tmp, dir);
  return dir;
}

/** cargo for this target: `cargo-zigbuild <sub>` where zig links, else cargo. */
function cargo(target, venvBin, sub, args, env) {
  if (target.zig) sh(join(venvBin, "cargo-zigbuild"), [sub, ...args], { cwd: root, env });
  else sh(env.CARGO ?? "cargo", [sub, ...args], { cwd: root, env });
}

function place(from, to, mode) {
  mkdirSync(join(to, ".."), { recursive: true });
  copyFileSync(from, `${to}.tmp`);
  if (mode) chmodSync(`${to}.tmp`, mode);
  renameSync(`${to}.tmp`, to);
}

/**
 * The addon's exports as a .def file, for a Windows target linked by zig:
 * rustc hands the linker the cdylib's export list as a .def of its own
 * (`-Wl,…/list.def`), which zig does not apply, and lld then exports every
 * symbol (MinGW's default); a .def given as a link input zig applies.
 */
function exportsDef(target) {
  const file = join(targetDir(target), `${cargoTriple(target)}-koma_sdk_node.def`);
  mkdirSync(targetDir(target), { recursive: true });
  writeFileSync(file, "LIBRARY koma_sdk_node.dll\nEXPORTS\n    napi_register_module_v1\n");
  return file;
}

/** The npm package's two binaries for `target` (release): the addon and koma-sim, copied into outDir(target). */
export function buildNode(target, venvBin) {
  const env = buildEnv(target, venvBin);
  const rel = join(targetDir(target), cargoTriple(target), "release");
  if (target.windows && target.zig) {
    cargo(target, venvBin, "build", ["--release", "--locked", "-p", "koma-sim", "--target", buildTriple(target)], env);
    const args = ["--release", "--locked", "-p", "koma-sdk-node", "--lib", "--target", buildTriple(target)];
    cargo(target, venvBin, "rustc", [...args, "--", "-C", `link-arg=${exportsDef(target)}`], env);
  } else
    cargo(
      target,
      venvBin,
      "build",
      ["--release", "--locked", "-p", "koma-sdk-node", "-p", "koma-sim", "--target", buildTriple(target)],
      env,
    );
  place(join(rel, libName(target)), join(outDir(target), addonName(target)));
  place(join(rel, simName(target)), join(outDir(target), simName(target)), 0o755);
  return { addon: join(outDir(target), addonName(target)), sim: join(outDir(target), simName(target)) };
}

/**
 * The addon with the `testing` feature (fault injection, for the Node test
 * suite), in a target folder of its own as scripts/build.mjs --testing does.
 */
export function buildTestingAddon(target, venvBin) {
  const env = { ...buildEnv(target, venvBin), CARGO_TARGET_DIR: `${targetDir(target)}-testing` };
  cargo(
    target,
    venvBin,
    "build",
    ["--release", "--locked", "-p", "koma-sdk-node", "--features", "testing", "--target", buildTriple(target)],
    env,
  );
  const out = join(outDir(target), "koma-sdk.testing.node");
  place(join(env.CARGO_TARGET_DIR, cargoTriple(target), "release", libName(target)), out);
  return out;
}

/**
 * The wheel for `target` (release, abi3): koma-sim built stripped and copied
 * into python/koma_sdk/bin/ (as the package's backend does for the machine's
 * own target), then maturin, which puts it in the wheel. In outDir(target)/wheel/.
 * The Windows wheel (win_amd64) links its module against python3.dll, whose
 * import library pyo3 makes (its `generate-import-lib`, python/Cargo.toml).
 */
export function buildWheel(target, venvBin) {
  const env = buildEnv(target, venvBin);
  cargo(
    target,
    venvBin,
    "rustc",
    ["--release", "--locked", "-p", "koma-sim", "--bin", "koma-sim", "--target", buildTriple(target), "--", "-C", "strip=symbols"],
    env,
  );
  // One koma-sim in the package's bin/: this target's (`include` in python/pyproject.toml takes either name).
  const bin = join(root, "python", "koma_sdk", "bin");
  for (const name of ["koma-sim", "koma-sim.exe"]) rmSync(join(bin, name), { force: true });
  place(join(targetDir(target), cargoTriple(target), "release", simName(target)), join(bin, simName(target)), 0o755);
  const dir = join(outDir(target), "wheel");
  rmSync(dir, { recursive: true, force: true });
  // maturin has zig link a manylinux wheel against the tag's glibc.
  const compatibility = target.glibc ? `manylinux_${target.glibc.replace(".", "_")}` : "musllinux_1_2";
  try {
    sh(
      join(venvBin, "maturin"),
      [
        "build",
        "--release",
        "--locked",
        "--target",
        cargoTriple(target),
        "--out",
        dir,
        ...(target.macos || target.windows ? [] : ["--compatibility", compatibility]),
        ...(target.zig ? ["--zig"] : []),
      ],
      { cwd: join(root, "python"), env },
    );
  } finally {
    // A checkout's own builds (dev.py) put koma-sim there; a koma-sim.exe left behind would go into their wheels.
    if (target.windows) rmSync(join(bin, simName(target)), { force: true });
  }
  const wheels = readdirSync(dir).filter((f) => f.endsWith(".whl"));
  if (wheels.length !== 1) throw new Error(`${dir}: ${wheels.length} wheels, expected 1`);
  return join(dir, wheels[0]);
}

/** Every test binary of the core and koma-sim compiled and linked for `target` (`cargo test --no-run`). */
export function buildTests(target, venvBin) {
  const env = buildEnv(target, venvBin);
  const args = ["--release", "--locked", "--no-run", "-p", "koma-transport", "-p", "koma-sim", "--features", "koma-transport/testing"];
  cargo(target, venvBin, "test", [...args, "--target", buildTriple(target)], env);
  const deps = join(targetDir(target), target.triple, "release", "deps");
  return readdirSync(deps).filter((f) => /-[0-9a-f]{16}$/.test(f) && existsSync(join(deps, f)));
}

/**
 * The Windows addon and koma-sim.exe for CI's smoke (the dev profile, in a
 * target folder in the cache outside the clone, so that std and the
 * dependencies are built once per machine): {addon, sim}.
 */
export function buildWindowsSmoke(target, venvBin) {
  const env = { ...buildEnv(target, venvBin), CARGO_TARGET_DIR: join(cacheDir(), "target-windows-smoke") };
  cargo(target, venvBin, "build", ["--locked", "-p", "koma-sdk-node", "-p", "koma-sim", "--target", cargoTriple(target)], env);
  const dev = join(env.CARGO_TARGET_DIR, cargoTriple(target), "debug");
  return { addon: join(dev, libName(target)), sim: join(dev, simName(target)) };
}
