// `npm run platforms`: every target of both packages built on this Linux x64
// machine, and run wherever an emulator can run it (docs/platforms.md).
//
// For each target of package.json's napi.targets (the wheels have the same):
//   build   the addon and koma-sim (the npm platform package's two binaries)
//           and the wheel, as scripts/platforms/targets.mjs says per target;
//           for macOS also every test binary of the core and koma-sim
//           (`cargo test --no-run`), and for linux-arm64-gnu the testing addon
//   run     linux-arm64-gnu: the Node and Python suites under qemu;
//           linux-*-musl: the portable suite under Bun's musl build, with
//           the musl addon and koma-sim; the addon's symbols resolved by
//           musl's loader; macOS: nothing can run it here (the Mach-O
//           files are checked by release:dry --all)
//           x86_64-pc-windows-msvc (`windows`): under wine, in Windows' Node,
//           the Node suite, examples/run.mjs, the Windows-only tests and the
//           hard kill (scripts/platforms/wine.mjs)
// then `release:dry --all` on those builds (every tarball and wheel, checked;
// npm's pick per --os/--cpu/--libc). Last, a table: target, what was built,
// what ran, result, time, disk.
//
//   node scripts/platforms.mjs [--target T[,T...]] [--no-run] [--list]
//       --target   only these targets (Rust triples; `windows` for x86_64-pc-windows-msvc)
//       --no-run   build (and for the release workflows, pack) only
//       --out DIR  keep the packages: DIR/main/, DIR/platform/ (tarballs), and
//                  DIR/wheels/ (the release workflows upload these)
//   node scripts/platforms.mjs --windows-smoke
//       CI's smoke of Windows (.ci/run, `npm run test:windows`): the addon and
//       koma-sim.exe built, then under wine a turn, the hard kill, npm's .cmd shims
//   node scripts/platforms.mjs --check-targets
//       the check that CI runs (.ci/run, `npm run check:targets`): the whole
//       workspace, every target (tests, benches, examples) with the testing
//       features, type-checked for aarch64-apple-darwin and
//       x86_64-unknown-linux-musl, so that a call only glibc Linux has,
//       outside a cfg, fails the build
//
// It installs what it needs itself (scripts/platforms/tools.mjs): Debian's
// packages with apt, and into a cache outside the clone
// (KOMA_SDK_PLATFORMS_DIR, by default ~/.cache/koma-sdk-platforms) zig,
// cargo-zigbuild, maturin and auditwheel, an arm64 and a Windows Node from
// the npm registry, and Debian's arm64 Python. Linux x64 only, as root (apt).
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { root, rustHost } from "./lib/repo.mjs";
import * as runs from "./platforms/runs.mjs";
import * as t from "./platforms/targets.mjs";
import * as tools from "./platforms/tools.mjs";
import * as wine from "./platforms/wine.mjs";

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const value = (name) => (flag(name) ? argv[argv.indexOf(name) + 1] : undefined);
const step = (text) => console.log(`\n=== ${text} (${new Date().toISOString().slice(11, 19)})`);
// Each row as soon as it is known, so that a run cut short still says what it found.
const show = (r) => console.log(`row: | ${r.target} | ${r.built} | ${r.ran} | ${r.result} | ${r.time} | ${r.disk} |`);
const secs = (ms) => `${Math.round(ms / 1000)} s`;

/** What each target builds and runs here, for --list and the table. */
const PLAN = {
  "x86_64-unknown-linux-gnu": {
    builds: "addon, koma-sim, wheel",
    runs: "the packages installed and a turn (release:dry); the full suites are npm test's and dev.py test's",
  },
  "aarch64-unknown-linux-gnu": {
    builds: "addon, testing addon, koma-sim, wheel",
    runs: "Node suite under arm64 Node, Python suite under arm64 Python (qemu)",
  },
  "x86_64-unknown-linux-musl": {
    builds: "addon, koma-sim, wheel",
    runs: "the portable suite under Bun's musl build with the musl addon and koma-sim (natively); the addon's symbols under ld-musl",
  },
  "aarch64-unknown-linux-musl": {
    builds: "addon, koma-sim, wheel",
    runs: "the portable suite under Bun's musl build with the musl addon and koma-sim (qemu); the addon's symbols under ld-musl (qemu)",
  },
  "x86_64-apple-darwin": { builds: "addon, koma-sim, wheel, test binaries", runs: "nothing (no emulator): Mach-O checks" },
  "aarch64-apple-darwin": { builds: "addon, koma-sim, wheel, test binaries", runs: "nothing (no emulator): Mach-O checks" },
  "x86_64-pc-windows-msvc": {
    builds: "addon, testing addon, koma-sim.exe, win_amd64 wheel (as x86_64-pc-windows-gnu, mingw-w64)",
    runs: "under wine in Windows Node 22: the Node suite, examples/run.mjs, the Windows-only tests, the hard kill; in Windows Node 20.10: a turn, the Windows-only tests, the hard kill; in Windows CPython 3.12: the Python suite on asyncio (scripts/platforms/wine.mjs)",
  },
  "aarch64-pc-windows-msvc": {
    builds: "addon, koma-sim.exe (as aarch64-pc-windows-gnullvm, zig); no wheel",
    runs: "nothing (wine runs x64 only): PE checks",
  },
};

function du(paths) {
  const existing = paths.filter((p) => existsSync(p));
  if (!existing.length) return 0;
  const r = spawnSync("du", ["-sbc", ...existing], { encoding: "utf8" });
  return Number(r.stdout.trim().split("\n").pop().split("\t")[0]);
}
const mib = (b) => `${(b / 2 ** 20).toFixed(0)} MiB`;

/**
 * The whole workspace, every target of it (tests, benches, examples) with the
 * testing features, type-checked for macOS and for musl: a call that only
 * glibc Linux has, outside a cfg, fails here (CI runs it: .ci/run). The dev
 * profile: its std builds take a fraction of the release one's time.
 */
async function checkTargets() {
  const triples = ["aarch64-apple-darwin", "x86_64-unknown-linux-musl"];
  const started = Date.now();
  const targets = triples.map((x) => t.TARGETS.find((y) => y.triple === x));
  tools.apt([...new Set(targets.flatMap((x) => t.aptFor(x)))]);
  const env = Object.assign({}, ...targets.map((x) => t.buildEnv(x, tools.cacheDir())));
  const args = ["check", "--workspace", "--all-targets", "--locked", "--features", "koma-transport/testing,koma-sdk-node/testing"];
  const targetArgs = triples.flatMap((x) => ["--target", x]);
  console.log(`cargo ${[...args, ...targetArgs].join(" ")} (Debian's Rust, std built from rust-web-src)`);
  tools.sh("/usr/bin/cargo", [...args, ...targetArgs], { cwd: root, env });
  console.log(
    `check:targets: the workspace type-checks for ${triples.join(" and ")} (${secs(Date.now() - started)}, std's builds included)`,
  );
}

/**
 * CI's smoke of Windows (.ci/run, `npm run test:windows`): the Windows addon
 * and koma-sim.exe built (the dev profile, std and the dependencies kept in
 * the cache), then, in Windows' Node under wine, a turn, the hard kill and
 * npm's .cmd shims (scripts/platforms/wine.mjs). The full Windows row is
 * `--target windows`.
 */
async function windowsSmoke() {
  const started = Date.now();
  const target = t.TARGETS.find((x) => x.windows);
  tools.apt([...t.aptFor(target), "wine64", "wine"]);
  // No venv: this build needs none of its tools (zig, maturin).
  const bin = t.buildWindowsSmoke(target, join(tools.cacheDir(), "venv", "bin"));
  const built = Date.now() - started;
  const out = join(t.outDir(target), "smoke");
  for (const line of await wine.windowsSmoke(bin, out)) console.log(`ok ${line}`);
  console.log(`test:windows: passed (build ${secs(built)}, total ${secs(Date.now() - started)})`);
}

async function main() {
  if (flag("--check-targets")) return checkTargets();
  if (flag("--windows-smoke")) return windowsSmoke();
  const known = t.TARGETS.map((x) => x.triple);
  // `windows` names the Windows x64 target (its row runs under wine), `windows-arm64` the arm64 one.
  const only = value("--target")
    ?.split(",")
    .map((x) => ({ windows: "x86_64-pc-windows-msvc", "windows-arm64": "aarch64-pc-windows-msvc" })[x] ?? x);
  for (const x of only ?? []) if (!known.includes(x)) throw new Error(`unknown target ${x}; known: ${known.join(", ")}`);
  const selected = known.filter((x) => !only || only.includes(x));
  if (flag("--list")) {
    for (const x of selected) console.log(`${x.padEnd(28)} builds ${PLAN[x].builds}; runs ${PLAN[x].runs}`);
    return;
  }
  if (process.platform !== "linux" || process.arch !== "x64")
    throw new Error(`runs on Linux x64 (this is ${process.platform} ${process.arch})`);
  const noRun = flag("--no-run");
  const runStarted = Date.now();
  const cacheBefore = du([tools.cacheDir()]);
  step(`tools (cache ${tools.cacheDir()})`);
  const venvBin = tools.pipTools();
  const rows = [];
  const built = [];
  // The targets whose builds are done soonest first; then this machine's own
  // (its cargo cache is the one `npm test` and `dev.py test` use, and may be
  // busy); last linux-arm64-gnu, whose suites run longest (under qemu).
  const first = [
    "x86_64-unknown-linux-musl",
    "aarch64-apple-darwin",
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-musl",
    "x86_64-apple-darwin",
    "x86_64-pc-windows-msvc",
    "aarch64-pc-windows-msvc",
    "aarch64-unknown-linux-gnu",
  ];
  const order = selected.sort((a, b) => first.indexOf(a) - first.indexOf(b));
  for (const triple of order) {
    const target = t.TARGETS.find((x) => x.triple === triple);
    step(`${triple}`);
    const started = Date.now();
    const row = { target: triple, built: PLAN[triple].builds, ran: "", result: "", ok: true };
    try {
      tools.apt(t.aptFor(target));
      if (triple === "aarch64-unknown-linux-gnu" || triple === "aarch64-unknown-linux-musl") {
        tools.apt(["qemu-user-static", "binfmt-support"]);
        tools.binfmt();
      }
      const underWine = target.windows && triple.startsWith("x86_64");
      if (underWine) tools.apt(["wine64", "wine"]);
      const bin = t.buildNode(target, venvBin);
      const wheel = target.noWheel ? null : t.buildWheel(target, venvBin);
      console.log(`  built ${bin.addon}, ${bin.sim}${wheel ? `, ${wheel}` : ""}`);
      if (target.macos) {
        const tests = t.buildTests(target, venvBin);
        row.built += ` (${tests.length} test binaries linked)`;
      }
      built.push(target);
      const buildTime = Date.now() - started;
      if (noRun) {
        row.ran = "(--no-run)";
      } else if (triple === "aarch64-unknown-linux-gnu") {
        const testing = t.buildTestingAddon(target, venvBin);
        const node = await runs.nodeSuiteArm64(target, { ...bin, testing });
        const py = await runs.pythonSuiteArm64(target, wheel, node.spawn);
        row.ran = `${node.ran}; ${py.ran}`;
        row.result = `node: ${node.result}; python: ${py.result}`;
        row.ok = node.ok && py.ok;
        row.failed = [...node.failed, ...py.failed];
      } else if (underWine) {
        const testing = t.buildTestingAddon(target, venvBin);
        const r = await wine.windowsSuite({ ...bin, testing }, t.outDir(target), wheel);
        Object.assign(row, { ran: r.ran, result: r.result, ok: r.ok, failed: r.failed });
      } else if (triple.endsWith("-musl")) {
        const r = await runs.muslTurn(target, bin);
        row.ran = r.ran;
        row.result = r.result;
        row.ok = r.ok;
        row.failed = r.failed;
      } else if (target.macos) {
        row.ran = "no emulator: the Mach-O files checked by release:dry --all";
        row.result = "built";
      } else if (target.windows) {
        row.ran = "nothing here runs arm64 Windows code (wine runs x64 programs): the PE files checked by release:dry --all";
        row.result = "built";
      } else {
        row.ran = "(after release:dry --all)";
        row.result = "built";
      }
      row.time = `${secs(Date.now() - started)} (build ${secs(buildTime)})`;
    } catch (e) {
      row.ok = false;
      row.result = `FAILED: ${e.message.split("\n")[0].slice(0, 300)}`;
      row.time = secs(Date.now() - started);
      console.error(e.message);
    }
    row.disk = mib(
      du([
        join(t.targetDir(target), t.cargoTriple(target)),
        t.outDir(target),
        ...(target.triple === "aarch64-unknown-linux-gnu" || target.windows
          ? [join(`${t.targetDir(target)}-testing`, t.cargoTriple(target))]
          : []),
      ]),
    );
    rows.push(row);
    show(row);
  }

  // The packages: every tarball and wheel from these builds, checked.
  const out = value("--out") ? join(process.cwd(), value("--out")) : join(root, "target", "platforms", "dist");
  if (built.length) {
    step(`release:dry --all (${built.map((x) => x.abi).join(", ")})`);
    const started = Date.now();
    const r = spawnSync(
      process.execPath,
      [join(root, "scripts", "release-dry.mjs"), "--all", "--targets", built.map((x) => x.triple).join(","), "--out", out],
      { cwd: root, stdio: "inherit" },
    );
    const ok = r.status === 0;
    rows.push({
      target: "(all built)",
      built: "npm tarballs, wheels",
      ran: "release:dry --all: contents, Mach-O, ELF and PE headers, npm's pick per --os/--cpu/--libc, wheel tags",
      result: ok ? "passed" : "FAILED",
      ok,
      time: secs(Date.now() - started),
      disk: mib(du([out])),
    });
    show(rows.at(-1));
    if (ok) {
      mkdirSync(join(out, "wheels"), { recursive: true });
      for (const x of built.filter((b) => !b.noWheel)) {
        const dir = join(t.outDir(x), "wheel");
        for (const f of readdirSync(dir)) copyFileSync(join(dir, f), join(out, "wheels", f));
      }
    }
    // This machine's own packages, installed with no network, and a turn (npm and pip).
    const host = built.find((x) => x.triple === rustHost());
    const hostRow = rows.find((r) => r.target === rustHost());
    if (ok && host && !noRun) {
      step(`${host.triple}: the packages installed, and a turn`);
      const startedHost = Date.now();
      const npmRun = spawnSync(process.execPath, [join(root, "scripts", "release-dry.mjs"), "--install", out], {
        cwd: root,
        stdio: "inherit",
      });
      const wheel = join(t.outDir(host), "wheel", readdirSync(join(t.outDir(host), "wheel"))[0]);
      const pipRun = spawnSync("python3", [join(root, "python", "dev.py"), "check-wheel", wheel, "--install-only"], {
        cwd: root,
        stdio: "inherit",
      });
      hostRow.ran =
        "the npm tarballs installed offline: a turn, the testing example (release:dry --install); the wheel installed offline: a turn, its testing example (dev.py check-wheel); the full suites are npm test's and dev.py test's";
      hostRow.result = `npm: ${npmRun.status === 0 ? "passed" : "FAILED"}; wheel: ${pipRun.status === 0 ? "passed" : "FAILED"}`;
      hostRow.ok = hostRow.ok && npmRun.status === 0 && pipRun.status === 0;
      hostRow.time += ` + ${secs(Date.now() - startedHost)}`;
      show(hostRow);
    }
  }
  const rank = (r) => (known.includes(r.target) ? known.indexOf(r.target) : known.length);
  rows.sort((a, b) => rank(a) - rank(b));
  step("platforms");
  const date = new Date().toISOString().slice(0, 10);
  const commit = spawnSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).stdout.trim();
  console.log(
    `commit ${commit}, ${date}, rustup ${spawnSync("rustc", ["-V"], { encoding: "utf8" }).stdout.trim()} for ${rustHost()}, Debian's ${spawnSync("/usr/bin/rustc", ["-V"], { encoding: "utf8" }).stdout.trim()} for the others\n`,
  );
  console.log("| target | built | ran | result | time | disk |");
  console.log("|---|---|---|---|---|---|");
  for (const r of rows) console.log(`| ${r.target} | ${r.built} | ${r.ran} | ${r.result} | ${r.time} | ${r.disk} |`);
  for (const r of rows.filter((x) => x.failed?.length)) console.log(`\n${r.target}: failed: ${r.failed.join("; ")}`);
  const cacheAfter = du([tools.cacheDir()]);
  console.log(
    `\ntotal ${secs(Date.now() - runStarted)}; the cache ${tools.cacheDir()}: ${mib(cacheAfter)} (${mib(cacheAfter - cacheBefore)} added by this run)`,
  );
  const bad = rows.filter((r) => !r.ok);
  if (bad.length) {
    console.error(`platforms: ${bad.length} row(s) failed: ${bad.map((r) => r.target).join(", ")}`);
    process.exitCode = 1;
  } else {
    console.log("platforms: every row passed");
  }
}

main().catch((e) => {
  console.error(`platforms FAILED: ${e.message}`);
  process.exitCode = 1;
});
