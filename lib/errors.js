// @ts-check
// The package's errors. Every error of @koma/sdk, the ones the addon makes
// (it calls `makeError`, which `index.js` registers with the rest of
// `lib/`) and the ones made here, is a `KomaError`: `err instanceof
// KomaError` and `isKomaError(err)` are true for exactly those. Its `name`
// is "AbortError" for code `aborted` and "TimeoutError" for code `timeout`,
// as `fetch` and `timers/promises` name theirs, and "KomaError" otherwise.
//
// The class has no public constructor: `instanceof` asks for a private
// brand that only this module's constructor gives, so an `Error` with a
// `code` of the table, or an object made from `KomaError.prototype`, is not
// one of the package's errors.
"use strict";

const INTERNAL = Symbol("@koma/sdk: an error of the package");

/** The `name` of an error of `code`. */
function nameOf(/** @type {string} */ code) {
  return code === "aborted" ? "AbortError" : code === "timeout" ? "TimeoutError" : "KomaError";
}

class KomaError extends Error {
  /** The brand that `instanceof` checks. */
  #koma = true;

  /**
   * Only the package makes its errors (with `makeError`).
   * @param {symbol} internal
   * @param {string} code
   * @param {string} message
   */
  constructor(internal, code, message) {
    if (internal !== INTERNAL) {
      throw new TypeError("KomaError has no public constructor: @koma/sdk makes its errors; test them with instanceof");
    }
    super(message);
    /** @type {string} */
    this.code = code;
    if (code === "aborted" || code === "timeout") {
      Object.defineProperty(this, "name", { value: nameOf(code), writable: true, configurable: true });
    }
  }

  /**
   * True for the package's own errors only.
   * @param {unknown} value
   * @returns {boolean}
   */
  static [Symbol.hasInstance](value) {
    return typeof value === "object" && value !== null && #koma in value;
  }
}
Object.defineProperty(KomaError.prototype, "name", { value: "KomaError", writable: true, configurable: true });

/**
 * An error of the package, with the protocol's `code`; its stack starts at
 * the caller of `makeError` (none when the addon makes it from the event
 * loop: the public methods then give it the stack where the caller awaited).
 * @param {string} code
 * @param {string} message
 * @returns {KomaError}
 */
function makeError(code, message) {
  const error = new KomaError(INTERNAL, code, message);
  if (typeof Error.captureStackTrace === "function") Error.captureStackTrace(error, makeError);
  return error;
}

/**
 * Whether `value` is an error of this package.
 * @param {unknown} value
 * @returns {boolean}
 */
function isKomaError(value) {
  return value instanceof KomaError;
}

/** Whether an error's stack names no frame (it was made from the event loop, not in a call). */
function frameless(/** @type {unknown} */ stack) {
  return typeof stack === "string" && !stack.includes("\n    at ");
}

/**
 * An error settled from the event loop (no frame of its own) gets the stack
 * where it is caught: called in an `async` function right after its `await`
 * rejected, V8's async stack trace there names the functions that await
 * that one (`at async yourFunction`). An error that has frames keeps them.
 * @template T
 * @param {T} error
 * @returns {T}
 */
function traced(error) {
  if (error instanceof KomaError && frameless(error.stack) && typeof Error.captureStackTrace === "function") {
    Error.captureStackTrace(error, traced);
  }
  return error;
}

/**
 * `promise`, awaited in an `async` function of the package's own, so that
 * its rejection gets the stack of whoever awaits what this returns.
 * @template T
 * @param {Promise<T>} promise
 * @returns {Promise<T>}
 */
async function awaited(promise) {
  try {
    return await promise;
  } catch (error) {
    throw traced(error);
  }
}

module.exports = { KomaError, makeError, isKomaError, frameless, nameOf, traced, awaited };
