// @ts-check
// koma-sim's scenario format (docs/koma-sim.md, "Scenarios";
// crates/koma-sim/scenario.schema.json), as `@koma/sdk/testing` builds it:
// the steps as small functions, and the check of a whole scenario before a
// fake starts. koma-sim is the one reader of the format: the check hands
// the scenario to `koma-sim check-scenario`, which reads it as it reads its
// file and says its first mistake (the entry: a turn by its index and its
// match, or a method entry by its index, method and call; the field's path
// from it; the problem), so the builder's words and koma-sim's are the same
// and a regular expression is compiled by the regex crate koma-sim uses.
"use strict";

const { spawnSync } = require("node:child_process");

/**
 * A scenario with a mistake: `entry` is the turn or method entry (`turns[0]
 * (contains "deploy")`, empty for a field of the scenario itself), `field`
 * the path from it (`steps[1].do`), `problem` what is wrong.
 */
class ScenarioError extends Error {
  /**
   * @param {string} entry
   * @param {string} field
   * @param {string} problem
   */
  constructor(entry, field, problem) {
    const where = [entry, field].filter(Boolean).join(": ");
    super(`bad scenario: ${where ? `${where}: ` : ""}${problem}`);
    this.name = "ScenarioError";
    this.code = "ERR_KOMA_BAD_SCENARIO";
    this.entry = entry;
    this.field = field;
    this.problem = problem;
  }
}

/** The largest answer `koma-sim check-scenario` gives: one line. */
const CHECK_OUTPUT = 1 << 20;

/**
 * Check a scenario as koma-sim checks its file (koma-sim `check-scenario`,
 * a process that exits at once: koma-sim is the format's one reader).
 * Returns the scenario's JSON text (what koma-sim is given); throws a
 * ScenarioError naming its first mistake. Fields whose value is `undefined`
 * are absent, as in JSON.
 * @param {unknown} scenario
 * @returns {string}
 */
function checkScenario(scenario) {
  let text;
  try {
    text = JSON.stringify(scenario, null, 2);
  } catch (e) {
    throw new ScenarioError("", "", `not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (text === undefined) throw new ScenarioError("", "", `not JSON: ${typeof scenario}`);
  // The package's koma-sim, whatever a fake then runs: the format is its.
  const sim = require("../sim.js").simPath;
  const r = spawnSync(sim, ["check-scenario"], { input: text, encoding: "utf8", maxBuffer: CHECK_OUTPUT, env: {} });
  if (r.status === 0) return `${text}\n`;
  if (r.status === 64) {
    /** @type {{entry?: unknown, field?: unknown, problem?: unknown}} */
    let said = {};
    try {
      said = JSON.parse(r.stdout);
    } catch {}
    const { entry, field, problem } = said;
    if (typeof entry === "string" && typeof field === "string" && typeof problem === "string")
      throw new ScenarioError(entry, field, problem);
  }
  const how = r.error ? r.error.message : r.status === null ? `killed by ${r.signal}` : `exit ${r.status}`;
  throw new Error(`koma-sim check-scenario (${sim}) could not check the scenario (${how}): ${(r.stderr ?? "").trim()}`);
}

/** @param {Record<string, unknown>} o drop the fields that are undefined */
function defined(o) {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/**
 * The steps of a turn, as functions that return the step's object (the
 * objects may be written by hand as well: they are the file's JSON).
 */
const step = {
  /** @param {string} text */
  output: (text) => ({ do: "output", text }),
  /**
   * @param {string} tool
   * @param {unknown} output
   * @param {{input?: unknown, error?: boolean}} [options]
   */
  tool: (tool, output, options = {}) => defined({ do: "tool", tool, input: options.input, output, error: options.error }),
  /**
   * @param {string} tool
   * @param {{input?: unknown, allow?: object, deny?: object}} [options]
   */
  approval: (tool, options = {}) => defined({ do: "approval", tool, input: options.input, allow: options.allow, deny: options.deny }),
  /** @param {number} [ms] */
  pause: (ms) => defined({ do: "pause", ms }),
  /**
   * @param {string} name
   * @param {unknown} [data]
   */
  event: (name, data) => defined({ do: "event", name, data }),
  /**
   * @param {string} [status]
   * @param {string} [error]
   */
  finish: (status, error) => defined({ do: "finish", status, error }),
  /** @param {number} code */
  exit: (code) => ({ do: "exit", code }),
  /** @param {string} [signal] */
  crash: (signal = "SIGKILL") => ({ do: "crash", signal }),
  stopAnswering: () => ({ do: "stop_answering" }),
  /** @param {string} [line] */
  brokenFrame: (line) => defined({ do: "broken_frame", line }),
};

module.exports = { checkScenario, ScenarioError, step };
