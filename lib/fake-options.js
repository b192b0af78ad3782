// @ts-check
// The options of a `@koma/sdk/testing` fake and of its clients, checked
// before anything starts: an unknown or mistyped one is a TypeError naming
// it (with a hint when it is another option's near name, or belongs to the
// client, or to the fake), as `new Client` refuses an unknown option.
"use strict";

const { clientOptions } = require("./surface.js");

/**
 * The options of a fake and of its clients, each with what it must be: a
 * mistake is a TypeError naming the option, as `new Client` refuses an
 * unknown option, before anything starts.
 * @typedef {[string, (v: unknown) => boolean, string]} Option
 */

/**
 * A client option of the schema's `ClientOptions` (lib/surface.js), as a
 * check and its words: its JSON types, its minimum, or the method an object
 * of it must have (a provider's `getTracer`).
 * @param {[string, string[], number | null, string | null]} row
 * @returns {Option}
 */
function clientOption([name, types, minimum, getter]) {
  if (getter) return [name, (v) => hasMethod(v, getter), `an object with ${getter}()`];
  const nullable = types.includes("null");
  const type = types.find((t) => t !== "null") ?? "null";
  const above = minimum === null ? "" : ` >= ${minimum}`;
  /** @param {unknown} v */
  const fits = (v) => {
    if (v === null) return nullable;
    if (type === "number" || type === "integer") {
      const n = /** @type {number} */ (v);
      return (
        typeof v === "number" && Number.isFinite(n) && (type === "number" || Number.isSafeInteger(n)) && (minimum === null || n >= minimum)
      );
    }
    return type === "object" ? isRecord(v) : typeof v === type;
  };
  const article = /^[aeiou]/.test(type) ? "an" : "a";
  return [name, fits, `${article} ${type}${above}${nullable ? ", or null" : ""}`];
}

/** A fake's client's options: all of `new Client`'s but those the fake gives (`executable`, `env`). */
const CLIENT_OPTIONS = clientOptions.filter(([name]) => name !== "executable" && name !== "env").map(clientOption);

/** @type {Option[]} */
const FAKE_OPTIONS = [
  ["executable", (v) => typeof v === "string" && v !== "", "a non-empty string"],
  ["env", (v) => isRecord(v) && Object.values(v).every((x) => x === undefined || typeof x === "string"), "an object of strings"],
  ["delayMs", (v) => Number.isSafeInteger(v) && /** @type {number} */ (v) >= 0, "an integer of milliseconds >= 0"],
  ["client", isRecord, `an object (the client's options: ${CLIENT_OPTIONS.map(([k]) => k).join(", ")})`],
];

/**
 * @param {unknown} v
 * @param {string} name
 */
function hasMethod(v, name) {
  return v !== null && typeof v === "object" && typeof (/** @type {Record<string, unknown>} */ (v)[name]) === "function";
}

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
 * @param {string} what how the caller is named in a message
 * @param {unknown} options a client's options (`newClient(options)`), checked
 */
function checkClientOptions(what, options) {
  checkFields(what, options, CLIENT_OPTIONS);
}

module.exports = { checkOptions, checkClientOptions };
