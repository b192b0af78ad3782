// `npm run release:dry`: what the release workflow does on one runner, short of
// publishing, for this machine (or --target):
//   build (incremental: cargo reuses target/), lay out the main package and
//   this target's platform package, pack both, check every tarball (the main
//   one has no binary; the platform one has its addon and koma-sim for its own
//   os/cpu/libc, and os/cpu/libc fields that say so), check npm/ against
//   napi.targets, then install the two tarballs into an empty folder with no
//   network and run a turn against that install's simPath.
//
//   node scripts/release-dry.mjs [--target TRIPLE] [--cross-compile] [--no-build] [--out DIR]
//       --target         a Rust target (default: this machine's); when Node here
//                        cannot load it (musl on a glibc runner), the install
//                        step is left to `--install` on a machine that can.
//                        A Linux glibc target is built as the release builds
//                        it (scripts/platforms/targets.mjs: zig links it
//                        against glibc 2.28, into target/floor/; zig and
//                        cargo-zigbuild come from PyPI into the platforms
//                        cache, once), the others by scripts/build.mjs
//       --cross-compile  passed to scripts/build.mjs (napi build -x)
//       --no-build       use what is built (`npm run build`'s, which a glibc
//                        target's floor check refuses: it is linked against
//                        this machine's glibc)
//       --out DIR        keep the tarballs: DIR/main/*.tgz, DIR/platform/*.tgz
//                        (default: a temporary folder, removed at the end)
//   node scripts/release-dry.mjs --all [--from DIR] [--out DIR] [--targets T,T]
//       every target from the builds of `npm run platforms` (DIR, by default
//       target/platforms/, holds <triple>/ with the addon, koma-sim and
//       wheel/): the main package and every platform package laid out, packed
//       and checked; then the main package installed by name from a registry
//       on 127.0.0.1 for each platform (npm install --os --cpu --libc), where
//       npm must pick that platform's package and no other; then every wheel
//       checked (`python3 python/dev.py check-wheel --contents-only`: its
//       binaries for its own platform, and its tag: `auditwheel show` on
//       Linux, no newer than manylinux_2_28 for glibc (the floor), the
//       minimum macOS of its Mach-O files on macOS; on Windows its PE
//       files' machine and imports: Windows' own DLLs and python3.dll)
//   node scripts/release-dry.mjs --install DIR
//       the install-and-turn step alone, with the main tarball and this
//       machine's platform tarball found under DIR (the workflow runs it in an
//       Alpine container for the musl targets); needs no node_modules
//   node scripts/release-dry.mjs --check DIR
//       the publish job: check every tarball under DIR, require the main
//       package and one package per napi target, and write DIR/publish-order.txt
//       (the platform packages, then the main package)
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { run } from "./lib/repo.mjs";
import * as lib from "./release-lib.mjs";

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const value = (name) => (flag(name) ? argv[argv.indexOf(name) + 1] : undefined);
const say = (what, text) => console.log(`${what.padEnd(8)} ${text}`);

function main() {
  if (flag("--all")) return allPlatforms();
  if (flag("--install")) return installOnly(resolve(value("--install")));
  if (flag("--check")) return checkAll(resolve(value("--check")));
  return dryRun();
}

async function dryRun() {
  const targets = await lib.readTargets();
  const triple = value("--target") ?? lib.rustHost();
  const target = targets.find((t) => t.triple === triple);
  if (!target) throw new Error(`${triple} is not in package.json's napi.targets (${targets.map((t) => t.triple).join(", ")})`);
  const keep = value("--out");
  const out = keep ? resolve(keep) : mkdtempSync(join(tmpdir(), "koma-release-dry-"));
  console.log(`release:dry for ${target.triple} (@koma/sdk-${target.abi}) in ${out}`);
  try {
    let from = null; // where the platform package's binaries are: by default the root's build
    if (flag("--no-build")) {
      say("build", "skipped (--no-build)");
    } else if (target.platform === "linux" && target.libc === "glibc" && !flag("--cross-compile")) {
      const { TARGETS, buildNode, outDir } = await import("./platforms/targets.mjs");
      const { pipTools } = await import("./platforms/tools.mjs");
      const release = TARGETS.find((t) => t.triple === triple);
      buildNode(release, pipTools());
      from = outDir(release);
      say("build", `as released (zig, against glibc ${release.glibc}): ${relative(lib.root, from)}/`);
    } else {
      run(process.execPath, [
        join(lib.root, "scripts", "build.mjs"),
        "--target",
        triple,
        ...(flag("--cross-compile") ? ["--cross-compile"] : []),
      ]);
      say("build", `node scripts/build.mjs --target ${triple}: done`);
    }
    say("ok", lib.checkNpmDirs(targets));

    const stage = join(out, "stage");
    for (const d of [stage, join(out, "main"), join(out, "platform")]) rmSync(d, { recursive: true, force: true });
    const mainDir = await lib.layoutMain(join(stage, "main"));
    const platformDir = lib.layoutPlatform(target, join(stage, target.abi), from);
    say("layout", `${relative(out, mainDir)}/, ${relative(out, platformDir)}/`);

    const mainTgz = lib.pack(mainDir, join(out, "main"));
    const platformTgz = lib.pack(platformDir, join(out, "platform"));
    say("pack", `${relative(out, mainTgz)}, ${relative(out, platformTgz)}`);

    say("ok", lib.checkMain(mainTgz, { targets }));
    say("ok", lib.checkPlatform(platformTgz, target));

    if (lib.hostPlatform() === target.abi) {
      for (const line of lib.installAndRun([mainTgz, platformTgz], target.abi)) say("ok", line);
    } else {
      say(
        "skipped",
        `install and turn: this Node loads @koma/sdk-${lib.hostPlatform()}, not ${target.abi}; run \`node scripts/release-dry.mjs --install ${keep ?? "DIR"}\` where it loads ${target.abi}`,
      );
    }
    rmSync(stage, { recursive: true, force: true });
    console.log("release:dry: every check passed");
  } finally {
    if (!keep) rmSync(out, { recursive: true, force: true });
  }
}

function installOnly(dir) {
  const { name } = lib.rootManifest();
  const platform = lib.hostPlatform();
  const found = lib.findTarballs(dir);
  const pick = (pkg) => {
    const hits = found.filter((t) => t.name === pkg);
    if (hits.length !== 1) throw new Error(`${dir}: ${hits.length} tarballs of ${pkg}, expected 1`);
    return hits[0].file;
  };
  const tarballs = [pick(name), pick(`${name}-${platform}`)];
  console.log(`release:dry --install for ${platform} (Node ${process.version})`);
  for (const line of lib.installAndRun(tarballs, platform)) say("ok", line);
  console.log("release:dry --install: every check passed");
}

async function checkAll(dir) {
  const targets = await lib.readTargets();
  const { name } = lib.rootManifest();
  const found = lib.findTarballs(dir);
  const order = [];
  for (const target of targets) {
    const hits = found.filter((t) => t.name === `${name}-${target.abi}`);
    if (hits.length !== 1) throw new Error(`${dir}: ${hits.length} tarballs of ${name}-${target.abi}, expected 1`);
    say("ok", lib.checkPlatform(hits[0].file, target));
    order.push(hits[0].file);
  }
  const mains = found.filter((t) => t.name === name);
  if (mains.length !== 1) throw new Error(`${dir}: ${mains.length} tarballs of ${name}, expected 1`);
  say("ok", lib.checkMain(mains[0].file, { targets }));
  order.push(mains[0].file);
  const stray = found.filter((t) => !order.includes(t.file));
  if (stray.length) throw new Error(`${dir}: tarballs of no target: ${stray.map((t) => t.file).join(", ")}`);
  writeFileSync(join(dir, "publish-order.txt"), `${order.join("\n")}\n`);
  console.log(`release:dry --check: every check passed; publish order in ${join(dir, "publish-order.txt")}`);
}

async function allPlatforms() {
  const all = await lib.readTargets();
  const only = value("--targets")?.split(",");
  const targets = only ? all.filter((t) => only.includes(t.triple)) : all;
  const from = resolve(value("--from") ?? join(lib.root, "target", "platforms"));
  const keep = value("--out");
  const out = keep ? resolve(keep) : mkdtempSync(join(tmpdir(), "koma-release-all-"));
  console.log(`release:dry --all: ${targets.length} targets from ${from}, packages in ${out}`);
  try {
    say("ok", lib.checkNpmDirs(all));
    const stage = join(out, "stage");
    for (const d of [stage, join(out, "main"), join(out, "platform")]) rmSync(d, { recursive: true, force: true });
    const mainTgz = lib.pack(await lib.layoutMain(join(stage, "main")), join(out, "main"));
    say("ok", lib.checkMain(mainTgz, { targets: all }));
    const platformTgzs = [];
    for (const t of targets) {
      const tgz = lib.pack(lib.layoutPlatform(t, join(stage, t.abi), join(from, t.triple)), join(out, "platform"));
      say("ok", lib.checkPlatform(tgz, t));
      platformTgzs.push(tgz);
    }
    rmSync(stage, { recursive: true, force: true });
    for (const line of await lib.checkPicks(mainTgz, platformTgzs, targets)) say("ok", line);
    for (const t of targets.filter((x) => !lib.NO_WHEEL.has(x.triple))) {
      const dir = join(from, t.triple, "wheel");
      const wheels = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".whl")) : [];
      if (wheels.length !== 1)
        throw new Error(`${dir}: ${wheels.length} wheels, expected 1 (node scripts/platforms.mjs --target ${t.triple})`);
      run("python3", [
        join(lib.root, "python", "dev.py"),
        "check-wheel",
        join(dir, wheels[0]),
        "--contents-only",
        "--glibc-floor",
        lib.GLIBC_FLOOR,
      ]);
      say("ok", `${wheels[0]}: contents and tag`);
      // The Windows wheel's PE files: the module imports Windows' own DLLs and python3.dll (the stable ABI's) only.
      if (t.platform === "win32") say("ok", `${wheels[0]}: ${lib.checkWheelPE(join(dir, wheels[0]), t)}`);
    }
    console.log(`release:dry --all: every check passed for ${targets.map((t) => t.abi).join(", ")}`);
  } finally {
    if (!keep) rmSync(out, { recursive: true, force: true });
  }
}

Promise.resolve()
  .then(main)
  .catch((err) => {
    console.error(`release:dry FAILED: ${err.message}`);
    process.exitCode = 1;
  });
