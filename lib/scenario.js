// @ts-check
// koma-sim's scenario format (docs/koma-sim.md, "Scenarios";
// crates/koma-sim/scenario.schema.json), as `@koma/sdk/testing` builds it:
// the steps as small functions, and the check of a whole scenario before
// koma-sim starts. The check reads the scenario as koma-sim reads its file
// (the same fields, defaults and order of checks; crates/koma-sim/src/
// scenario/parse.rs), and its first mistake is one line in koma-sim's
// words: `bad scenario: <entry>: <field>: <problem>`, where the entry is a
// turn by its index and its match, or a method entry by its index, method
// and call. A regular expression is compiled with JavaScript's RegExp, which
// reads most of Rust's syntax; what only Rust reads (inline flags, `(?P<`,
// `\A`, `\z`) is put in JavaScript's words first, and look-around and
// backreferences, which JavaScript has and Rust has not, are refused.
"use strict";

/** @typedef {[string, boolean]} Field */

/** @type {Field[]} */
const TOP = [
  ["$schema", false],
  ["format", false],
  ["about", false],
  ["unscripted", false],
  ["turns", false],
  ["methods", false],
];
/** @type {Field[]} */
const TURN = [
  ["about", false],
  ["match", false],
  ["times", false],
  ["steps", true],
];
const MATCHERS = ["turn", "text", "contains", "regex"];
/** @type {Field[]} */
const BRANCH = [
  ["output", false],
  ["error", false],
  ["steps", false],
];
/** @type {Field[]} */
const METHOD = [
  ["about", false],
  ["method", true],
  ["nth", false],
  ["result", false],
  ["error", false],
  ["delay_ms", false],
];
/** @type {Field[]} */
const ERROR = [
  ["code", true],
  ["message", false],
  ["data", false],
];
/** Every step, with its fields besides `do`. @type {[string, Field[]][]} */
const STEPS = [
  ["output", [["text", true]]],
  [
    "tool",
    [
      ["tool", true],
      ["input", false],
      ["output", true],
      ["error", false],
    ],
  ],
  [
    "approval",
    [
      ["tool", true],
      ["input", false],
      ["allow", false],
      ["deny", false],
    ],
  ],
  ["pause", [["ms", false]]],
  [
    "event",
    [
      ["name", true],
      ["data", false],
    ],
  ],
  [
    "finish",
    [
      ["status", false],
      ["error", false],
    ],
  ],
  ["exit", [["code", true]]],
  ["crash", [["signal", true]]],
  ["stop_answering", []],
  ["broken_frame", [["line", false]]],
];
/** The signals a `crash` step may die of. */
const SIGNALS = [
  "SIGABRT",
  "SIGALRM",
  "SIGBUS",
  "SIGFPE",
  "SIGHUP",
  "SIGILL",
  "SIGINT",
  "SIGKILL",
  "SIGPIPE",
  "SIGQUIT",
  "SIGSEGV",
  "SIGTERM",
  "SIGUSR1",
  "SIGUSR2",
];

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

/** A mistake inside an entry: the field's path and the problem. */
class Mistake {
  /**
   * @param {string} field
   * @param {string} problem
   */
  constructor(field, problem) {
    this.field = field;
    this.problem = problem;
  }
}

/** @param {string} field @param {string} problem @returns {never} */
function fail(field, problem) {
  throw new Mistake(field, problem);
}

/** A string as JSON writes it: quoted, on one line. */
const quote = (/** @type {string} */ s) => JSON.stringify(s);

/** What a value that does not fit is, for a message. */
function not(/** @type {unknown} */ v) {
  if (v === null) return "null";
  if (typeof v === "boolean") return "a boolean";
  if (typeof v === "number") return String(v);
  if (typeof v === "string") return "a string";
  if (Array.isArray(v)) return "an array";
  return "an object";
}

/** @param {unknown} v @returns {v is Record<string, unknown>} */
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const isUint = (/** @type {unknown} */ v) => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const join = (/** @type {string} */ at, /** @type {string} */ k) => (at ? `${at}.${k}` : k);

/** An object of the format, checked for unknown and missing fields. */
class Obj {
  /**
   * @param {unknown} v
   * @param {string} at its path from the entry ("" for the entry itself)
   * @param {string} what
   * @param {Field[]} fields
   */
  constructor(v, at, what, fields) {
    if (!isObject(v)) fail(at, `must be an object (${what}), not ${not(v)}`);
    this.map = v;
    this.at = at;
    const names = fields.map((f) => f[0]).join(", ");
    // koma-sim reads objects with their keys in sorted order.
    const unknown = Object.keys(v)
      .sort()
      .find((k) => !fields.some((f) => f[0] === k));
    if (unknown !== undefined) fail(this.path(unknown), `unknown field (${what} has: ${names})`);
    const missing = fields.find(([k, required]) => required && !(k in v));
    if (missing) fail(this.path(missing[0]), `missing (${what} needs \`${missing[0]}\`)`);
  }
  path(/** @type {string} */ k) {
    return join(this.at, k);
  }
  has(/** @type {string} */ k) {
    return Object.hasOwn(this.map, k);
  }
  get(/** @type {string} */ k) {
    return this.map[k];
  }
  /**
   * @param {string} k
   * @param {string} want
   * @param {(v: unknown) => boolean} ok
   */
  typed(k, want, ok) {
    if (!this.has(k)) return undefined;
    const v = this.map[k];
    if (!ok(v)) fail(this.path(k), `must be ${want}, not ${not(v)}`);
    return v;
  }
  /** @returns {string | undefined} */
  string(/** @type {string} */ k) {
    return /** @type {string | undefined} */ (this.typed(k, "a string", (v) => typeof v === "string"));
  }
  /** @returns {number | undefined} */
  uint(/** @type {string} */ k) {
    return /** @type {number | undefined} */ (this.typed(k, "a non-negative integer", isUint));
  }
  boolean(/** @type {string} */ k) {
    return this.typed(k, "a boolean", (v) => typeof v === "boolean");
  }
  /** @returns {unknown[] | undefined} */
  array(/** @type {string} */ k) {
    return /** @type {unknown[] | undefined} */ (this.typed(k, "an array", Array.isArray));
  }
}

/** ` (contains "fix")`: how a turn is named in a message, from its `match` as written. */
function describeTurn(/** @type {unknown} */ v) {
  if (!isObject(v)) return "";
  if (!("match" in v)) return " (any text)";
  const m = v.match;
  if (!isObject(m)) return "";
  const entries = Object.entries(m);
  if (entries.length !== 1) return "";
  const [k, value] = entries[0];
  if (k === "turn" && typeof value === "number") return ` (turn ${value})`;
  if (MATCHERS.includes(k) && typeof value === "string") return ` (${k} ${quote(value)})`;
  return "";
}

/** ` (submit, call 2)`: how a method entry is named in a message. */
function describeMethod(/** @type {unknown} */ v) {
  if (!isObject(v) || typeof v.method !== "string") return "";
  if (!("nth" in v)) return ` (${v.method}, every call)`;
  return typeof v.nth === "number" ? ` (${v.method}, call ${v.nth})` : "";
}

/**
 * Check a scenario as koma-sim checks its file. Returns the scenario's JSON
 * text (what koma-sim is given); throws a ScenarioError naming its first
 * mistake. Fields whose value is `undefined` are absent, as in JSON.
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
  const v = JSON.parse(text);
  /** @param {string} entry @param {() => void} body */
  const within = (entry, body) => {
    try {
      body();
    } catch (e) {
      if (e instanceof Mistake) throw new ScenarioError(entry, e.field, e.problem);
      throw e;
    }
  };
  within("", () => {
    const top = new Obj(v, "", "the scenario", TOP);
    const format = top.uint("format");
    if (format !== undefined && format !== 1) fail("format", `must be 1 (the only format there is), not ${format}`);
    top.string("about");
    top.string("$schema");
    const unscripted = top.string("unscripted");
    if (unscripted !== undefined && unscripted !== "error" && unscripted !== "agent")
      fail("unscripted", `must be "agent" or "error", not ${quote(unscripted)}`);
    top.array("turns");
    top.array("methods");
  });
  for (const [i, t] of (v.turns ?? []).entries()) within(`turns[${i}]${describeTurn(t)}`, () => checkTurn(t));
  for (const [i, m] of (v.methods ?? []).entries()) within(`methods[${i}]${describeMethod(m)}`, () => checkMethod(m));
  return `${text}\n`;
}

function checkTurn(/** @type {unknown} */ v) {
  const o = new Obj(v, "", "a turn", TURN);
  o.string("about");
  if (o.has("match")) checkMatch(o.get("match"));
  if (o.has("times")) {
    const t = o.get("times");
    if (t !== "always" && !(isUint(t) && Number(t) > 0)) fail("times", `must be a positive integer or "always", not ${not(t)}`);
  }
  checkSteps(o.get("steps"), "steps");
}

function checkMatch(/** @type {unknown} */ v) {
  if (!isObject(v)) fail("match", `must be an object, not ${not(v)}`);
  const keys = Object.keys(v).sort();
  const unknown = keys.find((k) => !MATCHERS.includes(k));
  if (unknown !== undefined) fail(`match.${unknown}`, `unknown matcher (a match has one of: ${MATCHERS.join(", ")})`);
  if (keys.length === 0) fail("match", `has no matcher (give one of: ${MATCHERS.join(", ")})`);
  if (keys.length > 1) fail("match", `has ${keys.length} matchers (${keys.join(", ")}); give one`);
  const k = keys[0];
  const value = v[k];
  if (k === "turn") {
    if (!(isUint(value) && Number(value) > 0)) fail("match.turn", `must be a positive integer (1 is the first turn), not ${not(value)}`);
    return;
  }
  if (typeof value !== "string") fail(`match.${k}`, `must be a string, not ${not(value)}`);
  if (k === "regex") {
    const problem = regexProblem(value);
    if (problem) fail("match.regex", `not a valid regular expression: ${problem}`);
  }
}

/** A list of steps at `at` (`steps`, `steps[1].allow.steps`). */
function checkSteps(/** @type {unknown} */ v, /** @type {string} */ at) {
  if (!Array.isArray(v)) fail(at, `must be an array of steps, not ${not(v)}`);
  let finished = false;
  for (const [i, s] of v.entries()) {
    const here = `${at}[${i}]`;
    if (finished) fail(here, "comes after a `finish` step, which ends the turn");
    finished = checkStep(s, here) === "finish";
  }
}

/** @returns {string} the step's kind */
function checkStep(/** @type {unknown} */ v, /** @type {string} */ at) {
  if (!isObject(v)) fail(at, `must be an object (a step), not ${not(v)}`);
  const kinds = STEPS.map((s) => s[0]).join(", ");
  if (!("do" in v)) fail(`${at}.do`, `missing (every step has \`do\`, one of: ${kinds})`);
  const kind = v.do;
  if (typeof kind !== "string") fail(`${at}.do`, `must be a string, not ${not(kind)}`);
  const found = STEPS.find((s) => s[0] === kind);
  if (!found) fail(`${at}.do`, `unknown step ${quote(kind)} (the steps are: ${kinds})`);
  const [name, fields] = found;
  /** @type {Field[]} */
  const all = [["do", true], ...fields];
  const o = new Obj(v, at, `the step \`${name}\``, all);
  switch (name) {
    case "output":
      o.string("text");
      break;
    case "tool":
      o.string("tool");
      o.boolean("error");
      break;
    case "approval":
      o.string("tool");
      checkBranch(o, "allow");
      checkBranch(o, "deny");
      break;
    case "pause":
      o.uint("ms");
      break;
    case "event":
      if (o.string("name") === "") fail(o.path("name"), "must not be empty");
      break;
    case "finish":
      o.string("status");
      o.string("error");
      break;
    case "exit": {
      const code = o.get("code");
      if (!(isUint(code) && Number(code) <= 255)) fail(o.path("code"), `must be an exit code, 0 to 255, not ${not(code)}`);
      break;
    }
    case "crash": {
      const signal = o.string("signal");
      if (signal !== undefined && !SIGNALS.includes(signal))
        fail(o.path("signal"), `unknown signal ${quote(signal)} (the signals are: ${SIGNALS.join(", ")})`);
      break;
    }
    case "broken_frame": {
      const line = o.string("line");
      if (line !== undefined && /[\r\n]/.test(line)) fail(o.path("line"), "must be one line (no line break)");
      break;
    }
  }
  return name;
}

/** An approval's `allow` or `deny`. */
function checkBranch(/** @type {Obj} */ step, /** @type {string} */ k) {
  if (!step.has(k)) return;
  const o = new Obj(step.get(k), step.path(k), "an approval's branch", BRANCH);
  if (o.has("steps")) checkSteps(o.get("steps"), o.path("steps"));
  o.boolean("error");
}

function checkMethod(/** @type {unknown} */ v) {
  const o = new Obj(v, "", "a method entry", METHOD);
  o.string("about");
  if (o.string("method") === "") fail("method", "must not be empty");
  if (o.has("nth")) {
    const n = o.get("nth");
    if (!(isUint(n) && Number(n) > 0)) fail("nth", `must be a positive integer (1 is the first call), not ${not(n)}`);
  }
  const delay = o.uint("delay_ms");
  if (o.has("result") && o.has("error")) fail("", "has both `result` and `error`; give one");
  if (o.has("error")) {
    const e = new Obj(o.get("error"), "error", "an error", ERROR);
    if (e.string("code") === "") fail("error.code", "must not be empty");
    e.string("message");
  } else if (!o.has("result") && delay === undefined) {
    fail("", "scripts nothing: give `result`, `error` or `delay_ms`");
  }
}

// ---------------------------------------------------------------- regular expressions

const RUST_ONLY = "koma-sim compiles it with Rust's regex crate, whose syntax differs from JavaScript's in places";

/**
 * What is wrong with a pattern for koma-sim, as far as JavaScript can tell;
 * `undefined` when nothing is. Rust's spellings that JavaScript lacks are
 * put in JavaScript's words first: inline flags (`(?i)`, `(?i:...)`), named
 * groups `(?P<name>...)`, `\A` and `\z`. Look-around and backreferences,
 * which only JavaScript has, are refused.
 * @param {string} source
 * @returns {string | undefined}
 */
function regexProblem(source) {
  // One pass over the pattern: outside a class, note what Rust has not.
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "\\") {
      const next = source[i + 1] ?? "";
      if (!inClass && (/[1-9]/.test(next) || next === "k"))
        return `a backreference (\\${next}) at offset ${i}: ${RUST_ONLY} (it has no backreferences)`;
      i++;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      continue;
    }
    if (c === "[") {
      inClass = true;
      if (source[i + 1] === "^") i++;
      if (source[i + 1] === "]") i++; // a leading ] is a literal
      continue;
    }
    if (c === "(" && source[i + 1] === "?") {
      const rest = source.slice(i + 2, i + 4);
      if (rest.startsWith("=") || rest.startsWith("!") || rest === "<=" || rest === "<!")
        return `a look-around group at offset ${i}: ${RUST_ONLY} (it has no look-around)`;
    }
  }
  let flags = "";
  let js = source;
  // Inline flags at the start become the RegExp's; elsewhere they are left out (only the syntax is checked).
  js = js.replace(/^\(\?([a-zA-Z]+)\)/, (_, f) => {
    for (const ch of f) if ("ims".includes(ch) && !flags.includes(ch)) flags += ch;
    return "";
  });
  js = js
    .replace(/\(\?[a-zA-Z-]+\)/g, "")
    .replace(/\(\?[a-zA-Z-]+:/g, "(?:")
    .replace(/\(\?P</g, "(?<")
    .replace(/\\A/g, "^")
    .replace(/\\z/g, "$");
  try {
    new RegExp(js, flags);
    return undefined;
  } catch (e) {
    const message = e instanceof Error ? e.message.replace(/^Invalid regular expression: /, "") : String(e);
    return `${message} (checked with JavaScript's RegExp; ${RUST_ONLY})`;
  }
}

// ---------------------------------------------------------------- the steps, as functions

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

module.exports = { checkScenario, ScenarioError, step, STEPS: STEPS.map((s) => s[0]), SIGNALS };
