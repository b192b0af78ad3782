// The entry of @koma/sdk. `binding.js` is the loader napi-rs generates (it
// finds this platform's addon: the local build, or the platform package),
// and `index.d.ts` the typings it generates from the Rust source; this file
// adds what a generated loader cannot:
//
// - the package's JavaScript half (`lib/`: the loops over streams of
//   events, the Turn object, and the trace's diagnostics channel) is handed
//   to the addon, once per environment (the main thread's, each Worker's);
// - `util.inspect(client)` shows its pid and phase;
// - a missing addon fails with code `ERR_KOMA_SDK_NO_ADDON`, naming the
//   platform package to install, with that package's load error as `cause`;
// - a method called without its client (`const { state } = client;
//   state()`) rejects with `invalid_params` instead of throwing V8's
//   "Illegal invocation" (`turn()` and `events()`, which return no promise,
//   throw that error).
"use strict";

let binding;
try {
  binding = require("./binding.js");
} catch (error) {
  throw noAddon(error);
}

/** The loader's error, as one that says which package is missing. */
function noAddon(error) {
  // The loader chains the errors of every place it looked; this platform's
  // package is the one named that is not a WASI build.
  let platform;
  for (let e = error; e && !platform; e = e.cause) {
    const m = typeof e.message === "string" ? /@koma\/sdk-(?!wasm32)[\w-]+/.exec(e.message) : null;
    if (m) platform = { name: m[0], error: e };
  }
  const why = platform
    ? `its native addon for this platform could not be loaded: install ${platform.name} (an optional dependency of ` +
      `@koma/sdk that npm installs on ${process.platform}-${process.arch}; an install with --omit=optional or ` +
      `--no-optional, or a lockfile made on another platform, leaves it out)`
    : `it has no native addon for ${process.platform}-${process.arch}`;
  const e = new Error(`@koma/sdk: ${why}`, { cause: platform ? platform.error : error });
  e.code = "ERR_KOMA_SDK_NO_ADDON";
  return e;
}

const { Client } = binding;
const { traceSubscribed, publishTrace } = require("./lib/trace.js");
binding.__setGlue({
  clientStream: require("./lib/stream.js").clientStream,
  makeTurn: require("./lib/turn.js").makeTurn,
  traceSubscribed,
  publishTrace,
});

// `util.inspect(client)` (and console.log) shows koma's pid and where the
// client is in its life: `Client { pid: 1234, phase: 'ready' }`. The phase
// comes from the addon's `__phase` getter, taken off the prototype: it is
// not part of the API.
const phaseOf = Object.getOwnPropertyDescriptor(Client.prototype, "__phase").get;
delete Client.prototype.__phase;
Object.defineProperty(Client.prototype, Symbol.for("nodejs.util.inspect.custom"), {
  value: function inspectClient(_depth, options, inspect) {
    if (!(this instanceof Client)) return this; // Client.prototype itself: inspected as usual
    const shown = { pid: this.pid, phase: phaseOf.call(this) };
    return typeof inspect === "function" ? `Client ${inspect(shown, options)}` : `Client { pid: ${shown.pid}, phase: '${shown.phase}' }`;
  },
  writable: true,
  configurable: true,
});

/** The error of a method called without its client. */
function detached(name) {
  const e = new Error(`Client.${name}() was called without its client: call it on the client (client.${name}(...)), or bind it`);
  e.code = "invalid_params";
  return e;
}

/** Wrap `Client.prototype[key]` so that a call without its client fails with `onDetached`. */
function guard(key, name, onDetached) {
  const method = Client.prototype[key];
  const wrapped = {
    [name](a, b, c) {
      return this instanceof Client ? method.call(this, a, b, c) : onDetached(detached(name));
    },
  }[name];
  Object.defineProperty(Client.prototype, key, { value: wrapped, writable: true, configurable: true });
}
const reject = (error) => Promise.reject(error);
const raise = (error) => {
  throw error;
};
for (const name of [
  "probe",
  "create",
  "resume",
  "state",
  "submit",
  "enqueue",
  "interrupt",
  "interruptAndSubmit",
  "approve",
  "configure",
  "detach",
  "request",
  "close",
  "run",
]) {
  guard(name, name, reject);
}
for (const name of ["turn", "events"]) guard(name, name, raise);
guard(Symbol.asyncDispose, "[Symbol.asyncDispose]", reject);

module.exports = { Client, isKomaError: binding.isKomaError };
// The addon built for the package's own tests has a census of its live objects.
if (typeof binding.__census === "function") module.exports.__census = binding.__census;
