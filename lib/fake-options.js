// @ts-check
// The options of a `@koma/sdk/testing` fake and of its clients, checked
// before anything starts: an unknown or mistyped one is a TypeError naming
// it (with a hint when it is another option's near name, or belongs to the
// client, or to the fake), as `new Client` refuses an unknown option.
"use strict";

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
  ["telemetry", (v) => typeof v === "boolean", "a boolean"],
  ["tracerProvider", (v) => hasMethod(v, "getTracer"), "an OpenTelemetry TracerProvider (an object with getTracer())"],
  ["meterProvider", (v) => hasMethod(v, "getMeter"), "an OpenTelemetry MeterProvider (an object with getMeter())"],
  ["captureContent", (v) => typeof v === "boolean", "a boolean"],
];
/** @type {Option[]} */
const FAKE_OPTIONS = [
  ["executable", (v) => typeof v === "string" && v !== "", "a non-empty string"],
  ["env", (v) => isRecord(v) && Object.values(v).every((x) => x === undefined || typeof x === "string"), "an object of strings"],
  ["delayMs", (v) => Number.isSafeInteger(v) && /** @type {number} */ (v) >= 0, "an integer of milliseconds >= 0"],
  [
    "client",
    isRecord,
    "an object (the client's options: cwd, trace, helloTimeout, telemetry, tracerProvider, meterProvider, captureContent)",
  ],
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
