// @ts-check
// `@koma/sdk/testing`: a fake Koma for a program's own tests. A scenario
// (lib/scenario.js checks it) is written into a folder of its own with the
// session home and the record of requests, and koma-sim plays it as a real
// child through the real transport: `koma.client` is a Client of it, and
// `koma.requests()` what the program sent. `fakeKoma(t, scenario)` ties one
// to a test of node:test (`t.after`) or vitest (`onTestFinished`).
"use strict";

const { mkdirSync, readFileSync, rmSync, writeFileSync } = require("node:fs");
const { join } = require("node:path");
const { Client } = require("../index.js");
const { makeFolder } = require("./fake-folder.js");
const { checkClientOptions, checkOptions } = require("./fake-options.js");
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
    this.dir = makeFolder();
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
    checkClientOptions("newClient(options)", options);
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
