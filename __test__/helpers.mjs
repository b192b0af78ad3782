// Shared helpers of the Node tests: every test drives a real koma-sim child.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import assert from "node:assert/strict";

const require = createRequire(import.meta.url);
export const root = join(dirname(fileURLToPath(import.meta.url)), "..");
/** The package, as `require("@koma/sdk")` gives it. */
export const sdk = require(join(root, "index.js"));
export const { Client } = sdk;
export const SIM = join(root, "bin", process.platform === "win32" ? "koma-sim.exe" : "koma-sim");
const { peerCommand } = require("./peers/command.cjs");
/** The executable of the JavaScript peer `name` of __test__/peers/ (on Windows, an npm shim of it). */
export const peer = (name) => peerCommand(join(root, "__test__", "peers", name));

/**
 * Set on Windows for a test of a mechanism Windows does not have (POSIX
 * signals, process groups, Linux's /proc): the test is skipped there, with
 * this reason. What it checks of the child, the Windows-only tests check on
 * Windows (__test__/windows/).
 */
export const notOnWindows = (why) => (process.platform === "win32" ? why : false);

/**
 * The addon built with the `testing` feature (`node scripts/build.mjs
 * --testing`): fault injection and `__census()`. A test loads it in a child
 * process, through the package's loader, with this environment.
 */
export const TESTING_ADDON = join(root, "koma-sdk.testing.node");
export function testingEnv() {
  if (!existsSync(TESTING_ADDON)) throw new Error(`${TESTING_ADDON} is missing: run \`node scripts/build.mjs --testing\``);
  return { NAPI_RS_NATIVE_LIBRARY_PATH: TESTING_ADDON };
}

/** The spawn path this process's clients take (`KOMA_SDK_SPAWN`, read once by the addon). */
export const SPAWN_PATH = process.env.KOMA_SDK_SPAWN || "auto";

/** Whether this kernel is Linux `major.minor` or later. */
function linuxAtLeast(major, minor) {
  const [a, b] = require("node:os").release().split(".").map(Number);
  return process.platform === "linux" && (a > major || (a === major && b >= minor));
}

/**
 * How each child's exit is watched on a spawn path (the one in use unless
 * given), from what the
 * platform gives: by the I/O runtime's reactor (a pidfd on Linux 5.3 and
 * later, a kqueue on macOS), or by a thread of its own (the `no-pidfd`
 * path, an older kernel, another system).
 */
export function exitWatchedByThread(path = SPAWN_PATH) {
  if (path === "no-pidfd") return true;
  if (process.platform === "darwin") return false;
  return !linuxAtLeast(5, 3);
}

/**
 * A skip's reason where this platform lacks what a check needs, else false.
 * The death of koma's whole group with its parent needs process groups and
 * the guard (`/bin/sh`): every Unix, on every spawn path.
 */
export function lacksParentDeath(what) {
  if (process.platform === "win32") return `${what}: Windows has no process groups or /bin/sh for the guard`;
  if (!existsSync("/bin/sh")) return `${what}: this system has no /bin/sh for the guard`;
  return false;
}

/**
 * Kill with SIGKILL a Node process that runs clients, and wait until every
 * koma it started, and every process of their groups, is gone.
 *
 * Each koma is a wrapper (`/bin/sh`, which then execs koma-sim with the
 * same pid) that first opens the write end of a FIFO of this test on fd 9
 * (no close-on-exec), which koma-sim and the tools it starts inherit. So a
 * read of the FIFO returns its end exactly when every koma and every tool
 * is gone: that end of file is the event awaited, with no polling. (Node sets
 * close-on-exec on the descriptors it inherits, so a pipe given to the Node
 * process itself would not reach koma.)
 *
 * `script({ executable, env })` is the Node program (on `KOMA_SDK_SPAWN=spawn`),
 * whose clients use that executable and environment; it prints one JSON
 * line; `check(info)` runs on it; then the process is killed. `bound` only
 * stops a hang, and then names what still runs of `pids(info)`.
 */
export async function killedWithSigkill(script, { spawn: path, check = () => {}, pids = () => [], bound = 30000 }) {
  const { spawn, spawnSync } = await import("node:child_process");
  const { once } = await import("node:events");
  const { openSync, closeSync, writeFileSync, constants } = await import("node:fs");
  const { open } = await import("node:fs/promises");
  const dir = mkdtempSync(join(tmpdir(), "koma-held-"));
  homes.push(dir);
  const fifo = join(dir, "held");
  assert(spawnSync("mkfifo", [fifo]).status === 0, "mkfifo");
  const executable = join(dir, "koma");
  writeFileSync(executable, '#!/bin/sh\nexec 9>"$KOMA_TEST_HELD"\nexec "$KOMA_TEST_SIM" "$@"\n', { mode: 0o755 });
  // A reader from the start, so that the wrappers' opens do not wait for one.
  const early = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const env = { KOMA_TEST_HELD: fifo, KOMA_TEST_SIM: SIM };
  const child = spawn(process.execPath, ["-e", script({ executable, env })], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, KOMA_SDK_SPAWN: path },
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  const exited = once(child, "exit");
  let info;
  let held;
  try {
    while (!out.includes("\n")) {
      const r = await Promise.race([once(child.stdout, "data"), exited.then(([code, signal]) => ({ code, signal }))]);
      if ("code" in r && !out.includes("\n")) {
        throw new Error(`the script ended (code ${r.code}, signal ${r.signal}) before its line: ${out}`);
      }
    }
    info = JSON.parse(out.slice(0, out.indexOf("\n")));
    // For a blocking read (on libuv's thread pool), opened while the komas
    // hold the FIFO: it returns 0 bytes once the last writer is gone.
    held = await open(fifo, "r");
    closeSync(early);
    check(info);
  } finally {
    child.kill("SIGKILL"); // also when a check failed: the file would never end
    if (!held) closeSync(early);
  }
  await exited;
  let timer;
  const hang = new Promise((_, reject) => {
    timer = setTimeout(() => {
      const left = pids(info).filter(alive);
      for (const pid of left) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {}
      }
      reject(new Error(`${bound} ms after the SIGKILL, still running: ${JSON.stringify(left)} of ${JSON.stringify(info)}`));
    }, bound);
  });
  try {
    await Promise.race([held.read(Buffer.alloc(1), 0, 1, null).then(({ bytesRead }) => assert.equal(bytesRead, 0)), hang]);
  } finally {
    clearTimeout(timer);
    await held.close();
  }
  return info;
}

/**
 * A host script for `killedWithSigkill`: `clients` clients, each of a koma-sim that ignores the end of its stdin
 * and starts a tool in its group; it prints the komas' and the tools' pids
 * (each tool's from its koma's stderr, through the trace channel) once all run.
 */
export const stubbornHost =
  (clients) =>
  ({ executable, env: extra }) =>
    `
  const dc = require("node:diagnostics_channel");
  const { Client } = require(${JSON.stringify(join(root, "index.js"))});
  const tools = new Map();
  const waiting = new Map();
  dc.subscribe("koma-sdk:trace", (m) => {
    const t = m.kind === "stderr" && /tool pid (\\d+)/.exec(m.text);
    if (!t) return;
    tools.set(m.pid, Number(t[1]));
    waiting.get(m.pid)?.(Number(t[1]));
  });
  const tool = (pid) => (tools.has(pid) ? Promise.resolve(tools.get(pid)) : new Promise((r) => waiting.set(pid, r)));
  // Alive until killed: a trace subscriber does not hold Node's loop, and
  // a tool's stderr line may come after its koma has answered create.
  setInterval(() => {}, 1000);
  (async () => {
    const env = ${JSON.stringify({ ...extra, KOMA_SIM_FAULT: "ignore_eof,spawn_tool", KOMA_SIM_DELAY_MS: "0", KOMA_SIM_HOME: tempHome() })};
    const clients = Array.from({ length: ${clients} }, () => new Client({ executable: ${JSON.stringify(executable)}, env }));
    globalThis.keep = clients; // referenced: a collected client stops its child
    await Promise.all(clients.map((c) => c.create({})));
    const komas = clients.map((c) => c.pid);
    const toolPids = await Promise.all(komas.map(tool));
    for (const c of clients) c.state();
    console.log(JSON.stringify({ komas, tools: toolPids }));
  })();
`;

const homes = [];
process.on("exit", () => {
  for (const dir of homes) rmSync(dir, { recursive: true, force: true });
});

/** A fresh KOMA_SIM_HOME, removed when the test process exits (after every client closed). */
export function tempHome() {
  const dir = mkdtempSync(join(tmpdir(), "koma-sim-home-"));
  homes.push(dir);
  return dir;
}

/**
 * A client of koma-sim with the given fault switches (a list or a comma string),
 * closed when the test ends.
 */
export function simClient(t, { faults = [], env = {}, delayMs = 0, home, ...rest } = {}) {
  const fault = Array.isArray(faults) ? faults.join(",") : faults;
  const client = new Client({
    executable: SIM,
    env: {
      KOMA_SIM_HOME: home ?? tempHome(),
      KOMA_SIM_DELAY_MS: String(delayMs),
      ...(fault ? { KOMA_SIM_FAULT: fault } : {}),
      ...env,
    },
    ...rest,
  });
  t?.after(() => client.close());
  return client;
}

/** Await a rejection and return the error (fails if it resolves). */
export async function rejection(promise) {
  try {
    const v = await promise;
    throw Object.assign(new Error(`expected a rejection, got ${JSON.stringify(v)}`), { code: "__resolved__" });
  } catch (e) {
    if (e && e.code === "__resolved__") throw e;
    return e;
  }
}

/** Take events until `until(item)` is true; returns all taken. */
export async function eventsUntil(client, until, { limit = 100000 } = {}) {
  const seen = [];
  for await (const item of client.events()) {
    seen.push(item);
    if (until(item)) return seen;
    if (seen.length >= limit) throw new Error(`no matching event in ${limit}`);
  }
  throw new Error(`events ended before a match; got ${JSON.stringify(seen.slice(-5))}`);
}

/** Iterate the events to their end: the error they end with (undefined if they just end). */
export async function eventsError(client) {
  try {
    for await (const _ of client.events());
  } catch (err) {
    return err;
  }
  return undefined;
}

/** Is a process alive? */
export function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Run a CommonJS script in a new Node process; resolves with its exit code and stdout. */
export async function runNode(script, env = {}) {
  const { spawn } = await import("node:child_process");
  const { once } = await import("node:events");
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  const [code] = await once(child, "exit");
  return { code, out: out.trim() };
}

/** The processes this process has started and not reaped (from every thread's `children`). */
export function childPids() {
  const { readdirSync, readFileSync } = require("node:fs");
  const pids = [];
  for (const tid of readdirSync(`/proc/${process.pid}/task`)) {
    try {
      pids.push(...readFileSync(`/proc/${process.pid}/task/${tid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number));
    } catch {
      // the thread ended meanwhile
    }
  }
  return pids.sort((a, b) => a - b);
}

/**
 * This process's open descriptors, as "fd -> target" lines, but for the one
 * glibc opens for a moment on a thread that is ending (it reads
 * /proc/sys/vm/overcommit_memory as it gives back the thread's heap): not a
 * client's, and gone by itself.
 */
export function openFds() {
  const { readdirSync, readlinkSync } = require("node:fs");
  const out = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    let target;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // the descriptor of the readdir itself, closed meanwhile
    }
    if (target !== "/proc/sys/vm/overcommit_memory") out.push(`${fd} -> ${target}`);
  }
  return out.sort();
}

/** Whether a process of group `pgid` is still running (a zombie counts as gone). */
export function groupAlive(pgid) {
  const { readdirSync, readFileSync } = require("node:fs");
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .some((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, "utf8");
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        return Number(f[2]) === pgid && f[0] !== "Z" && f[0] !== "X";
      } catch {
        return false;
      }
    });
}

/** Run a script (CommonJS source) in a new Node process with `flags`; its exit code, stdout and stderr. */
export function runScript(source, { env = {}, flags = [], timeout = 120000 } = {}) {
  const { spawnSync } = require("node:child_process");
  const r = spawnSync(process.execPath, [...flags, "-e", source], {
    encoding: "utf8",
    env: { ...process.env, ...env },
    timeout,
    maxBuffer: 64 << 20,
  });
  return { code: r.status, signal: r.signal, out: r.stdout, err: r.stderr };
}
