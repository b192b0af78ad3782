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
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { root } from "../lib/repo.mjs";
import { GLIBC_FLOOR, MACOS_MIN } from "../release-lib.mjs";
import { sh } from "./tools.mjs";

export const TARGETS = [
  { triple: "x86_64-unknown-linux-gnu", abi: "linux-x64-gnu", toolchain: "rustup", zig: true, glibc: GLIBC_FLOOR },
  { triple: "aarch64-unknown-linux-gnu", abi: "linux-arm64-gnu", toolchain: "rustc-web", zig: true, glibc: GLIBC_FLOOR },
  { triple: "x86_64-unknown-linux-musl", abi: "linux-x64-musl", toolchain: "rustc-web", buildStd: true, zig: true },
  { triple: "aarch64-unknown-linux-musl", abi: "linux-arm64-musl", toolchain: "rustc-web", buildStd: true, zig: true },
  { triple: "x86_64-apple-darwin", abi: "darwin-x64", toolchain: "rustc-web", buildStd: true, zig: true, macos: true },
  { triple: "aarch64-apple-darwin", abi: "darwin-arm64", toolchain: "rustc-web", buildStd: true, zig: true, macos: true },
];

/** Debian's packages a target's build needs. */
export function aptFor(target) {
  if (target.toolchain === "rustup") return [];
  const pkgs = ["rustc-web", "cargo-web"];
  if (target.buildStd) pkgs.push("rust-web-src");
  if (target.triple === "aarch64-unknown-linux-gnu") pkgs.push("libstd-rust-web-dev:arm64");
  return pkgs;
}

export const targetDir = (target) => join(root, "target", target.toolchain === "rustup" ? "floor" : "rustc-web");
/** The target as cargo-zigbuild takes it: a glibc target with the glibc it is linked against. */
const buildTriple = (target) => (target.glibc ? `${target.triple}.${target.glibc}` : target.triple);
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
  if (target.triple.endsWith("-musl")) {
    // A musl cdylib needs the C library dynamically (the addon is loaded into a
    // musl Node); zig brings the C runtime's start files, not rustc.
    env[`CARGO_TARGET_${envKey(target.triple)}_RUSTFLAGS`] = "-C target-feature=-crt-static -C link-self-contained=no";
  }
  // Without it zig stamps the Mach-O files with its own SDK's version as their minimum.
  if (target.macos) env.MACOSX_DEPLOYMENT_TARGET = MACOS_MIN;
  return env;
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

/** The npm package's two binaries for `target` (release): the addon and koma-sim, copied into outDir(target). */
export function buildNode(target, venvBin) {
  const env = buildEnv(target, venvBin);
  const rel = join(targetDir(target), target.triple, "release");
  cargo(target, venvBin, "build", ["--release", "--locked", "-p", "koma-sdk-node", "-p", "koma-sim", "--target", buildTriple(target)], env);
  const lib = target.macos ? "libkoma_sdk_node.dylib" : "libkoma_sdk_node.so";
  place(join(rel, lib), join(outDir(target), addonName(target)));
  place(join(rel, "koma-sim"), join(outDir(target), "koma-sim"), 0o755);
  return { addon: join(outDir(target), addonName(target)), sim: join(outDir(target), "koma-sim") };
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
  place(join(env.CARGO_TARGET_DIR, target.triple, "release", target.macos ? "libkoma_sdk_node.dylib" : "libkoma_sdk_node.so"), out);
  return out;
}

/**
 * The wheel for `target` (release, abi3): koma-sim built stripped and copied
 * into python/koma_sdk/bin/ (as the package's backend does for the machine's
 * own target), then maturin, which puts it in the wheel. In outDir(target)/wheel/.
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
  place(join(targetDir(target), target.triple, "release", "koma-sim"), join(root, "python", "koma_sdk", "bin", "koma-sim"), 0o755);
  const dir = join(outDir(target), "wheel");
  rmSync(dir, { recursive: true, force: true });
  // maturin has zig link a manylinux wheel against the tag's glibc.
  const compatibility = target.triple.endsWith("-musl") ? "musllinux_1_2" : `manylinux_${target.glibc.replace(".", "_")}`;
  sh(
    join(venvBin, "maturin"),
    [
      "build",
      "--release",
      "--locked",
      "--target",
      target.triple,
      "--out",
      dir,
      ...(target.macos ? [] : ["--compatibility", compatibility]),
      ...(target.zig ? ["--zig"] : []),
    ],
    { cwd: join(root, "python"), env },
  );
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
