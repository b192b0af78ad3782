// @ts-check
// `@koma/sdk/testing`: a fake Koma for a program's own tests. A scenario
// (lib/scenario.js checks it) is written into a folder of its own with the
// session home and the record of requests, and koma-sim plays it as a real
// child through the real transport: `koma.client` is a Client of it, and
// `koma.requests()` what the program sent. `fakeKoma(t, scenario)` ties one
// to a test of node:test (`t.after`) or vitest (`onTestFinished`).
"use strict";

const { mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } = require("node:fs");
const { tmpdir } = require("node:os");
const { join } = require("node:path");
const { Client } = require("../index.js");
const { checkScenario, ScenarioError, step } = require("./scenario.js");

/**
 * @typedef {{n: number, pid: number, id: string, method: string | null, params: Record<string, any>}} RecordedRequest
 * @typedef {{
 *   executable?: string,
 *   env?: Record<string, string | undefined>,
 *   delayMs?: number,
 *   client?: {cwd?: string, trace?: boolean, helloTimeout?: number | null},
 * }} FakeKomaOptions
 */

/**
 * The requests koma-sim recorded in `file` (KOMA_SIM_RECORD), in the order
 * it read them; none when the file is not there yet.
 * @param {string} file
 * @returns {RecordedRequest[]}
 */
function readRecord(file) {
  let text;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if (/** @type {NodeJS.ErrnoException} */ (e).code === "ENOENT") return [];
    throw e;
  }
  // Each line is written whole; a line without its terminator is not there yet.
  const lines = text.split("\n");
  lines.pop();
  return lines.filter((line) => line.trim() !== "").map((line) => JSON.parse(line));
}

/**
 * The options of a fake and of its clients, each with what it must be: a
 * mistake is a TypeError naming the option, as `new Client` refuses an
 * unknown option, before anything starts.
 * @typedef {[string, (v: unknown) => boolean, string]} Option
 * @type {Option[]}
 */
const CLIENT_OPTIONS = [
  ["cwd", (v) => typeof v === "string", "a string"],
  ["trace", (v) => typeof v === "boolean", "a boolean"],
  ["helloTimeout", (v) => v === null || (typeof v === "number" && Number.isFinite(v) && v >= 0), "a number of milliseconds >= 0, or null"],
];
/** @type {Option[]} */
const FAKE_OPTIONS = [
  ["executable", (v) => typeof v === "string" && v !== "", "a non-empty string"],
  ["env", (v) => isRecord(v) && Object.values(v).every((x) => x === undefined || typeof x === "string"), "an object of strings"],
  ["delayMs", (v) => Number.isSafeInteger(v) && /** @type {number} */ (v) >= 0, "an integer of milliseconds >= 0"],
  ["client", isRecord, "an object (the client's options: cwd, trace, helloTimeout)"],
];

/**
 * @param {unknown} v
 * @returns {v is Record<string, unknown>}
 */
function isRecord(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/**
 * @param {string} what
 * @param {unknown} options
 * @param {Option[]} known
 */
function checkFields(what, options, known) {
  if (options === undefined) return;
  if (!isRecord(options)) throw new TypeError(`${what} must be an object, not ${options === null ? "null" : typeof options}`);
  const names = known.map(([k]) => k);
  for (const [key, value] of Object.entries(/** @type {Record<string, unknown>} */ (options))) {
    const option = known.find(([k]) => k === key);
    if (!option) {
      const lower = key.toLowerCase();
      const like = [...FAKE_OPTIONS, ...CLIENT_OPTIONS]
        .map(([k]) => k)
        .find((k) => k.toLowerCase().startsWith(lower) || lower.startsWith(k.toLowerCase()));
      const hint = !like
        ? ""
        : names.includes(like)
          ? ` (did you mean \`${like}\`?)`
          : CLIENT_OPTIONS.some(([k]) => k === like)
            ? ` (\`${like}\` is a client option: \`{ client: { ${like} } }\`)`
            : ` (\`${like}\` is an option of the fake, beside \`client\`)`;
      throw new TypeError(`${what}: unknown option \`${key}\`${hint}; the options are: ${names.join(", ")}`);
    }
    if (value !== undefined && !option[1](value)) throw new TypeError(`${what}: \`${key}\` must be ${option[2]}, not ${describe(value)}`);
  }
}

/** @param {unknown} v how a value that does not fit is named */
function describe(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

/** @param {unknown} options a fake's options, checked */
function checkOptions(options) {
  checkFields("FakeKoma options", options, FAKE_OPTIONS);
  if (isRecord(options)) checkFields("FakeKoma options: client", options.client, CLIENT_OPTIONS);
}

/**
 * A fake's folder is `koma-fake-<pid namespace>-<pid>-XXXXXX` in the
 * temporary directory: its owner, so that a folder whose owner is gone (a
 * test process killed without a chance to clean up) is removed by the next
 * fake made on the machine, in either package. The pid namespace (Linux's;
 * 0 elsewhere) keeps a process from taking for gone the owner of a folder
 * in a temporary directory shared with another namespace (a container).
 */
const FOLDER = "koma-fake-";

/** This process, as a fake's folder names its owner: `<pid namespace>-<pid>`. */
function owner() {
  return `${pidNamespace()}-${process.pid}`;
}

/** The inode of this process's pid namespace, or 0 where there is none to read. */
function pidNamespace() {
  try {
    return /^pid:\[(\d+)\]$/.exec(readlinkSync("/proc/self/ns/pid"))?.[1] ?? "0";
  } catch {
    return "0";
  }
}

/** Remove the folders of fakes whose owner has exited (of this pid namespace). */
function sweep() {
  const ns = pidNamespace();
  let names;
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^koma-fake-(\d+)-(\d+)-/.exec(name);
    if (!m || m[1] !== ns || Number(m[2]) === process.pid || running(Number(m[2]))) continue;
    rmSync(join(tmpdir(), name), { recursive: true, force: true });
  }
}

/** @param {number} pid whether a process has this pid (one of another user's counts) */
function running(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return /** @type {NodeJS.ErrnoException} */ (e).code !== "ESRCH";
  }
}

/** A fake Koma: koma-sim playing a scenario. */
class FakeKoma {
  /** @type {Client[]} */
  #clients = [];
  /** @type {Promise<void> | undefined} */
  #closing;

  /**
   * @param {unknown} scenario
   * @param {FakeKomaOptions} [options]
   */
  constructor(scenario, options = {}) {
    checkOptions(options);
    const text = checkScenario(scenario);
    const { executable, env = {}, delayMs = 0, client = {} } = options;
    // Looked up after the scenario is checked: a mistake is told first.
    const exe = executable ?? require("../sim.js").simPath;
    sweep();
    this.dir = mkdtempSync(join(tmpdir(), `${FOLDER}${owner()}-`));
    this.scenarioPath = join(this.dir, "scenario.json");
    this.recordPath = join(this.dir, "requests.jsonl");
    this.home = join(this.dir, "home");
    mkdirSync(this.home);
    writeFileSync(this.scenarioPath, text);
    /** @type {Record<string, string>} */
    this.env = {
      KOMA_SIM_SCENARIO: this.scenarioPath,
      KOMA_SIM_RECORD: this.recordPath,
      KOMA_SIM_HOME: this.home,
      // Every koma-sim of this fake plays the scenario as one: a second one
      // goes on where the others are (docs/testing.md, "The fake").
      KOMA_SIM_PROGRESS: join(this.dir, "progress.json"),
      KOMA_SIM_DELAY_MS: String(delayMs),
    };
    for (const [k, v] of Object.entries(env)) if (v !== undefined) this.env[k] = v;
    this.clientOptions = { ...client, executable: exe, env: { ...this.env } };
    /** A client of this fake, made with it (nothing starts until its first call). */
    this.client = this.newClient();
  }

  /**
   * Another client of the same koma-sim scenario, record and home (a second
   * process that resumes the session, say), whose koma-sim goes on with the
   * scenario where the others are; `close()` closes it too.
   * @param {{cwd?: string, trace?: boolean, helloTimeout?: number | null}} [options]
   */
  newClient(options = {}) {
    if (this.#closing) throw new Error("FakeKoma: closed");
    checkFields("newClient(options)", options, CLIENT_OPTIONS);
    const client = new Client({ ...this.clientOptions, ...options, env: { ...this.env } });
    this.#clients.push(client);
    return client;
  }

  /** Every request koma-sim read so far, in order, from every client of this fake. */
  requests() {
    return readRecord(this.recordPath);
  }

  /** The requests of one method, in order. */
  calls(/** @type {string} */ method) {
    return this.requests().filter((r) => r.method === method);
  }

  /** Whether the program sent this method at all. */
  called(/** @type {string} */ method) {
    return this.calls(method).length > 0;
  }

  /** The methods sent, in order. */
  methods() {
    return this.requests().map((r) => r.method);
  }

  /** The answers to approvals, in order: `[{approval, decision}]`. */
  approvals() {
    return this.calls("approve").map((r) => ({ approval: r.params.approval, decision: r.params.decision }));
  }

  /** The texts sent to start or queue turns (`submit`, `enqueue`, `interrupt_and_submit`), in order. */
  texts() {
    return this.requests()
      .filter((r) => r.method === "submit" || r.method === "enqueue" || r.method === "interrupt_and_submit")
      .map((r) => r.params.text);
  }

  /**
   * Close every client of this fake (koma-sim stops and is reaped), then
   * remove its folder. Idempotent.
   * @returns {Promise<void>}
   */
  close() {
    this.#closing ??= (async () => {
      try {
        await Promise.all(this.#clients.map((c) => c.close()));
      } finally {
        rmSync(this.dir, { recursive: true, force: true });
      }
    })();
    return this.#closing;
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }
}

/**
 * A FakeKoma closed when the test ends: `t` is node:test's test context
 * (`t.after`) or vitest's (`onTestFinished`).
 * @param {any} t
 * @param {unknown} scenario
 * @param {FakeKomaOptions} [options]
 */
function fakeKoma(t, scenario, options) {
  const register =
    t && typeof t.after === "function"
      ? (/** @type {() => Promise<void>} */ fn) => t.after(fn)
      : t && typeof t.onTestFinished === "function"
        ? (/** @type {() => Promise<void>} */ fn) => t.onTestFinished(fn)
        : undefined;
  if (!register)
    throw new TypeError(
      "fakeKoma(t, scenario): t must be a test's context, node:test's (with after()) or vitest's (with onTestFinished()); " +
        "elsewhere, make a `new FakeKoma(scenario)` and close it",
    );
  const koma = new FakeKoma(scenario, options);
  register(() => koma.close());
  return koma;
}

module.exports = { FakeKoma, fakeKoma, readRecord, checkScenario, ScenarioError, step };
