// What the scripts (scripts/) and the benchmark (bench/) share: where the
// repository is, which Rust target this machine builds for, and how a
// command or a script runs in a process of its own.
//
// Node's built-ins only: scripts/release-dry.mjs --install imports this in a
// bare Node container, with no node_modules.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root folder. */
export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

let host = null;
/** The Rust host triple (what `cargo build` builds for by default), from `rustc -vV`. */
export function rustHost() {
  host ??= execFileSync("rustc", ["-vV"], { encoding: "utf8" }).match(/^host: (.+)$/m)[1];
  return host;
}

/**
 * Run `cmd args` to its end, from the root with stdio inherited unless
 * `options` say otherwise. Throws an Error naming the command unless it
 * exits 0; returns spawnSync's result.
 */
export function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit", ...options });
  if (r.status !== 0) {
    const how = r.error ? r.error.message : `exit ${r.status ?? r.signal}`;
    throw new Error(`${[cmd, ...args].join(" ")} failed (${how})`);
  }
  return r;
}

/**
 * Run `cmd args` with its output captured, killed with SIGKILL after
 * `timeoutMs` (with `group`: in a process group of its own, killed whole, so
 * that what it started goes too). Resolves, never rejects, once its pipes have
 * closed: {code, signal, out, err, timedOut}; a command that could not start
 * has code and signal null and the reason at the end of `err`.
 */
export function capture(cmd, args, { timeoutMs, group = false, ...options }) {
  if (!(timeoutMs > 0)) throw new Error(`capture(${cmd}): timeoutMs must be a number of milliseconds`);
  return new Promise((done) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], ...options, detached: group });
    let out = "";
    let err = "";
    let timedOut = false;
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (group) process.kill(-child.pid, "SIGKILL");
        else child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }, timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      done({ code: null, signal: null, out, err: `${err}${e.message}`, timedOut });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, out, err, timedOut });
    });
  });
}

/** Run a script (a path from the root) under this Node in a fresh process: capture() with `args` as strings. */
export function runScript(script, args, options) {
  return capture(process.execPath, [resolve(root, script), ...args.map(String)], options);
}
