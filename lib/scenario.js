// @ts-check
// koma-sim's scenario format (docs/koma-sim.md, "Scenarios";
// schema/scenario.schema.json), as `@koma/sdk/testing` builds it:
// the steps as small functions, and the check of a whole scenario before a
// fake starts. koma-sim is the one reader of the format: the check hands
// the scenario to `koma-sim check-scenario`, which reads it as it reads its
// file and says its first mistake (the entry: a turn by its index and its
// match, or a method entry by its index, method and call; the field's path
// from it; the problem), so the builder's words and koma-sim's are the same
// and a regular expression is compiled by the regex crate koma-sim uses.
"use strict";

const { spawnSync } = require("node:child_process");
const { steps, tag } = require("./scenario-steps.js");

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
 * The scenario as the JSON koma-sim reads, and the first value in it that
 * JSON cannot hold, which `JSON.stringify` would drop, turn into `null` or
 * `{}`, or throw on (a function, such as a step's builder left uncalled; a
 * symbol; a BigInt; NaN or an infinity; `undefined` in a list; a Map, a Set
 * or a RegExp; a cycle): its place as a JSON pointer and what it is. Such a
 * value becomes `null`, so that koma-sim can name its entry and field.
 * Fields whose value is `undefined` are absent, as in JSON; `toJSON()` is
 * honoured (a Date is its string).
 * @param {unknown} scenario
 * @returns {{json: unknown, mistake: {at: string, problem: string} | undefined}}
 */
function plain(scenario) {
  /** @type {{at: string, problem: string} | undefined} */
  let mistake;
  /** @type {Set<object>} */
  const open = new Set();
  /**
   * @param {unknown} v
   * @param {string} at
   * @param {boolean} inList
   * @returns {unknown}
   */
  const walk = (v, at, inList) => {
    if (v !== null && typeof v === "object" && typeof (/** @type {any} */ (v).toJSON) === "function") v = /** @type {any} */ (v).toJSON();
    const problem =
      hostOnly(v, inList) ?? (v !== null && typeof v === "object" && open.has(v) ? "a cycle: this value contains itself" : undefined);
    if (problem !== undefined) {
      mistake ??= { at, problem };
      return null;
    }
    if (v === null || typeof v !== "object") return v;
    open.add(v);
    try {
      if (Array.isArray(v)) return v.map((x, i) => walk(x, `${at}/${i}`, true));
      /** @type {Record<string, unknown>} */
      const out = {};
      for (const [k, x] of Object.entries(v))
        if (x !== undefined) out[k] = walk(x, `${at}/${k.replaceAll("~", "~0").replaceAll("/", "~1")}`, false);
      return out;
    } finally {
      open.delete(v);
    }
  };
  const json = walk(scenario, "", false);
  return { json, mistake };
}

/**
 * What a value is, if JSON cannot hold it.
 * @param {unknown} v
 * @param {boolean} inList
 * @returns {string | undefined}
 */
function hostOnly(v, inList) {
  switch (typeof v) {
    case "function": {
      const name = Object.entries(step).find(([, f]) => f === v)?.[0];
      return name
        ? `step.${name} is a function, not a step: call it, as \`step.${name}(...)\``
        : `a function (${v.name || "anonymous"}), which JSON cannot hold`;
    }
    case "symbol":
      return `a symbol (${String(v)}), which JSON cannot hold`;
    case "bigint":
      return `a BigInt (${v}n), which JSON cannot hold: give a number`;
    case "number":
      return Number.isFinite(v) ? undefined : `${v}, which JSON cannot hold`;
    case "undefined":
      return inList ? "undefined, which a JSON list cannot hold" : undefined;
    case "object":
      if (v instanceof Map) return "a Map, which JSON cannot hold: give an object";
      if (v instanceof Set) return "a Set, which JSON cannot hold: give an array";
      if (v instanceof RegExp) return `a RegExp, which JSON cannot hold: give its source as a string, ${JSON.stringify(v.source)}`;
      return undefined;
    default:
      return undefined;
  }
}

/**
 * Check a scenario as koma-sim checks its file (koma-sim `check-scenario`,
 * a process that exits at once: koma-sim is the format's one reader).
 * Returns the scenario's JSON text (what koma-sim is given); throws a
 * ScenarioError naming its first mistake. A value JSON cannot hold is a
 * mistake too, named by koma-sim's words for its place (see `plain`).
 * @param {unknown} scenario
 * @returns {string}
 */
function checkScenario(scenario) {
  const { json, mistake } = plain(scenario);
  if (mistake && mistake.at === "") throw new ScenarioError("", "", `not JSON: ${mistake.problem}`);
  const text = JSON.stringify(json, null, 2);
  if (text === undefined) throw new ScenarioError("", "", `not JSON: ${typeof scenario}`);
  // The package's koma-sim, whatever a fake then runs: the format is its.
  const sim = require("../sim.js").simPath;
  const args = mistake ? ["check-scenario", "--mistake", mistake.at, mistake.problem] : ["check-scenario"];
  const r = spawnSync(sim, args, { input: text, encoding: "utf8", maxBuffer: CHECK_OUTPUT, env: {} });
  if (r.status === 0 && !mistake) return `${text}\n`;
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

/**
 * The steps of a turn, as functions that return the step's object (the
 * objects may be written by hand as well: they are the file's JSON). Each
 * function is made from the format's table (lib/scenario-steps.js,
 * generated from the schema): it takes some members as its arguments, in
 * order, and the others in an options object after them
 * (`step.tool(tool, output, {input, error})`); a member left `undefined`
 * is left out, unless the function has a default for it.
 * @type {Record<string, (...args: any[]) => Record<string, unknown>>}
 */
const step = Object.fromEntries(
  steps.map(([name, kind, members]) => {
    const positional = members.filter(([, at]) => at !== "options").length;
    /** @param {any[]} args */
    const make = (...args) => {
      const options = args[positional] ?? {};
      /** @type {Record<string, unknown>} */
      const out = { [tag]: kind };
      for (const [member, at, fallback] of members) {
        const given = at === "options" ? options[member] : args[at];
        if (given !== undefined) out[member] = given;
        else if (fallback !== undefined) out[member] = fallback;
      }
      return out;
    };
    return [name, make];
  }),
);

module.exports = { checkScenario, ScenarioError, step };
