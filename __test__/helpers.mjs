// Shared helpers of the Node tests: every test drives a real koma-sim child.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

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

/**
 * Set when the suite runs on the portable Unix spawn path (what macOS uses):
 * a guarantee only Linux gives is skipped there, with this reason.
 */
export const linuxOnly = (what) =>
  process.env.KOMA_SDK_SPAWN === "portable" ? `${what} is Linux's (PR_SET_PDEATHSIG); the portable spawn path does not give it` : false;

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

/** This process's open descriptors, as "fd -> target" lines. */
export function openFds() {
  const { readdirSync, readlinkSync } = require("node:fs");
  const out = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      out.push(`${fd} -> ${readlinkSync(`/proc/self/fd/${fd}`)}`);
    } catch {
      // the descriptor of the readdir itself, closed meanwhile
    }
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
