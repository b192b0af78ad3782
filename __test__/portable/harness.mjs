// A small test harness that runs the same way under Node, Bun and Deno
// (`deno run -A`): no `node:test`, only the `node:` built-ins all three have.
// Checks run one after another; each gets `after(fn)` for its cleanup. Output
// is TAP-like (`ok N - name`, `not ok N - name` with the error indented), then
// `# tests N`, `# pass N`, `# fail N`. The exit code is 1 when a check failed.
// The harness never calls process.exit: a runtime that does not exit once the
// checks are done (a client holding the event loop open) is a failure that
// scripts/test-runtimes.mjs reports.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const root = join(here, "..", "..");
const require = createRequire(import.meta.url);
export const { Client } = require(join(root, "index.js"));
/** koma-sim: KOMA_SIM_PATH when set (another target's build), else the repository's (a bundle or an installed package would pass its own path). */
export const SIM = process.env.KOMA_SIM_PATH || join(root, "bin", "koma-sim");

/** "node v22.23.5", "bun 1.4.5", "deno 2.9.6". */
export function runtimeName() {
  if (globalThis.Deno?.version?.deno) return `deno ${globalThis.Deno.version.deno}`;
  if (globalThis.Bun?.version) return `bun ${globalThis.Bun.version}`;
  return `node ${process.version}`;
}

/** The command that runs `script` (an absolute path) with this same runtime. */
export function selfCommand(script) {
  if (globalThis.Deno) return [globalThis.Deno.execPath(), ["run", "-A", "--no-lock", script]];
  return [process.execPath, [script]];
}

const homes = [];
/** A fresh KOMA_SIM_HOME, removed when the suite ends. */
export function tempDir(prefix = "koma-portable-") {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  homes.push(dir);
  return dir;
}

/** A client of koma-sim with the given fault switches (a comma string); closed after the check. */
export function simClient(after, { faults = "", env = {}, home } = {}) {
  const client = new Client({
    executable: SIM,
    env: {
      KOMA_SIM_HOME: home ?? tempDir("koma-sim-home-"),
      KOMA_SIM_DELAY_MS: "0",
      ...(faults ? { KOMA_SIM_FAULT: faults } : {}),
      ...env,
    },
  });
  after(() => client.close());
  return client;
}

/** Await a rejection and return the error (throws if the promise resolves). */
export async function rejection(promise) {
  let value;
  try {
    value = await promise;
  } catch (err) {
    return err;
  }
  throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
}

/** Take events until `until(item)` holds; returns every item taken. */
export async function eventsUntil(client, until) {
  const seen = [];
  for await (const item of client.events()) {
    seen.push(item);
    if (until(item)) return seen;
  }
  throw new Error(`events ended before a match; the last ones: ${JSON.stringify(seen.slice(-5))}`);
}

/** Is the process gone: no such process, or a zombie waiting for its parent (Linux /proc)? */
export function gone(pid) {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

/**
 * Poll a condition about another process (one the client did not reap, so no
 * call or event announces it); gives up after `ms` and fails with `what`.
 */
export async function until(cond, what, ms = 10000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const checks = [];
/** Register a check: `fn({ after })`, where `after(cleanup)` runs when it ends, pass or fail. */
export function check(name, fn) {
  checks.push({ name, fn });
}

// A check that never settles would hang the suite without saying which one;
// this bound only turns such a hang into a named failure.
const HANG_MS = 60000;

/** Run the registered checks in order; prints the report and sets process.exitCode. */
export async function run(title = "portable suite") {
  console.log(`# ${title} under ${runtimeName()} (${process.platform} ${process.arch})`);
  console.log(`1..${checks.length}`);
  let pass = 0;
  let fail = 0;
  for (const [i, { name, fn }] of checks.entries()) {
    const cleanups = [];
    let error;
    let timer;
    try {
      await Promise.race([
        fn({ after: (f) => cleanups.push(f) }),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`did not settle in ${HANG_MS / 1000} s`)), HANG_MS);
        }),
      ]);
    } catch (err) {
      error = err;
    } finally {
      clearTimeout(timer);
    }
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (err) {
        error ??= err;
      }
    }
    if (error === undefined) {
      pass++;
      console.log(`ok ${i + 1} - ${name}`);
    } else {
      fail++;
      console.log(`not ok ${i + 1} - ${name}`);
      const text = error && error.stack ? `${error.stack}${error.code ? `\ncode: ${error.code}` : ""}` : String(error);
      console.log(
        text
          .split("\n")
          .map((l) => `  # ${l}`)
          .join("\n"),
      );
    }
  }
  for (const dir of homes) rmSync(dir, { recursive: true, force: true });
  console.log(`# tests ${checks.length}`);
  console.log(`# pass ${pass}`);
  console.log(`# fail ${fail}`);
  process.exitCode = fail === 0 ? 0 : 1;
}
