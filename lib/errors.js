// @ts-check
// The package's errors. Every error of @koma/sdk, the ones the addon makes
// (it calls `makeError`, which `index.js` registers with the rest of
// `lib/`) and the ones made here, is a `KomaError` and an instance of the
// class of its code (`TransportFailure`, `TimedOut`, ...: the table of
// lib/surface.js, generated from schema/). Its `name` is "AbortError" for
// code `aborted` and "TimeoutError" for code `timeout`, as `fetch` and
// `timers/promises` name theirs, and "KomaError" otherwise.
//
// Anyone may make one (`new KomaError(code, message)` makes one of the class
// of `code`; `new TransportFailure(message)` the same), so that a program's
// tests can throw what the package would. `instanceof` asks for a private
// brand that only these constructors give: an `Error` with a `code` of the
// table, or an object made from `KomaError.prototype`, is not one.
"use strict";

const { errors } = require("./surface.js");

/**
 * @typedef {{ cause?: unknown, result?: unknown, remote?: unknown }} Options
 * @typedef {new (message: string, options?: Options) => KomaError} OfCode the class of a code
 */

/** @type {Map<string, OfCode>} */
const classes = new Map();

class KomaError extends Error {
  /** The brand that `instanceof` checks. */
  #koma = true;

  /**
   * An error of the class of `code`.
   * @param {string} code
   * @param {string} message
   * @param {Options} [options]
   */
  // biome-ignore lint/correctness/noUnreachableSuper: `new KomaError(code, ...)` returns an error of the class of its code
  constructor(code, message, options) {
    const Class = classes.get(code);
    if (Class === undefined) {
      throw new TypeError(`KomaError: ${JSON.stringify(code)} is not an error code of @koma/sdk (see the README's table)`);
    }
    if (new.target === KomaError) {
      // biome-ignore lint/correctness/noConstructorReturn: the same call makes the class of its code
      return new Class(message, options);
    }
    super(message, options !== undefined && "cause" in options ? { cause: options.cause } : undefined);
    /** @type {string} */
    this.code = code;
    if (options?.remote !== undefined) this.remote = options.remote;
    if (options?.result !== undefined) this.result = options.result;
  }

  /**
   * True for the package's errors only; for the class of a code, for its errors only.
   * @param {unknown} value
   * @returns {boolean}
   */
  static [Symbol.hasInstance](value) {
    if (typeof value !== "object" || value === null || !(#koma in value)) return false;
    return this === KomaError || Function.prototype[Symbol.hasInstance].call(this, value);
  }
}
Object.defineProperty(KomaError.prototype, "name", { value: "KomaError", writable: true, configurable: true });

/** The classes of the codes, by their names (`{ TransportFailure, ... }`). */
const byName = /** @type {Record<string, OfCode>} */ ({});
for (const [code, className, name] of errors) {
  const Class = {
    [className]: class extends KomaError {
      /**
       * @param {string} message
       * @param {Options} [options]
       */
      constructor(message, options) {
        super(code, message, options);
      }
    },
  }[className];
  Object.defineProperty(Class.prototype, "name", { value: name, writable: true, configurable: true });
  classes.set(code, Class);
  byName[className] = Class;
}

/**
 * An error of the package, with the protocol's `code`; its stack starts at
 * the caller of `makeError` (none when the addon makes it from the event
 * loop: the public methods then give it the stack where the caller awaited).
 * @param {string} code
 * @param {string} message
 * @returns {KomaError}
 */
function makeError(code, message) {
  const error = new KomaError(code, message);
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

module.exports = { KomaError, classes: byName, makeError, isKomaError, frameless, traced, awaited };
