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
//   throw that error);
// - the package's errors (`KomaError`, a class per code, `isKomaError`: `lib/errors.js`);
// - OpenTelemetry's spans of a client's calls (`lib/telemetry.js`), when
//   the client is traced: each method hands its call to its telemetry;
// - each method that returns a promise is an `async` function around the
//   addon's, so that an error settled later, from the event loop (a
//   timeout, koma's answer), gets the stack where the caller awaited: V8's
//   async stack trace then names the caller's functions. An error made
//   during the call itself keeps the stack it was made with.
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
  // package is the one named that is not a WASI build, if this version
  // publishes one (the published package.json names each in its
  // optionalDependencies; a checkout's has none, and names every target's
  // package as a possible build). The loader names a package for platforms
  // that have none too (32-bit Windows: @koma/sdk-win32-ia32-msvc).
  const published = publishedPlatforms();
  let platform;
  for (let e = error; e && !platform; e = e.cause) {
    const m = typeof e.message === "string" ? /@koma\/sdk-(?!wasm32)[\w-]+/.exec(e.message) : null;
    if (m && (!published || published.includes(m[0]))) platform = { name: m[0], error: e };
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

/** The platform packages the published package.json names; null in a checkout, which names none. */
function publishedPlatforms() {
  try {
    const { optionalDependencies } = require("./package.json");
    return optionalDependencies ? Object.keys(optionalDependencies) : null;
  } catch {
    return null;
  }
}

const { Client } = binding;
// What follows changes the addon's `Client` once. A second evaluation of
// this file in one process (a test runner that runs the package's modules
// itself, beside Node's own loader: vitest does for a package it inlines)
// finds the same addon and takes the first evaluation's exports.
const SET_UP = Symbol.for("@koma/sdk: Client set up");
if (!Object.hasOwn(Client, SET_UP)) {
  Object.defineProperty(Client, SET_UP, { value: setUp() });
}

function setUp() {
  const { KomaError, classes, makeError, isKomaError, traced } = require("./lib/errors.js");
  const { onAbort, offAbort } = require("./lib/signals.js");
  const { traceSubscribed, publishTrace, followTrace } = require("./lib/trace.js");
  const telemetry = require("./lib/telemetry.js");
  binding.__setJsHalf({
    clientStream: require("./lib/stream.js").clientStream,
    makeTurn: require("./lib/turn.js").makeTurn,
    makeError,
    onAbort,
    offAbort,
    traceSubscribed,
    publishTrace,
    makeTelemetry: telemetry.makeTelemetry,
  });

  // `util.inspect(client)` (and console.log) shows koma's pid and where the
  // client is in its life: `Client { pid: 1234, phase: 'ready' }`. The phase
  // comes from the addon's `__phase` getter, taken off the prototype: it is
  // not part of the API.
  const phaseOf = Object.getOwnPropertyDescriptor(Client.prototype, "__phase").get;
  delete Client.prototype.__phase;
  // A `koma-sdk:trace` subscriber that came after a client was made gets its
  // trace from the client's next call (or wake) on: the native method that
  // turns it on is taken off the prototype, as `__phase` is.
  const keepTrace = Client.prototype.__keepTrace;
  delete Client.prototype.__keepTrace;
  // lib/telemetry.js's: the core's table, the phase, and the trace context
  // koma is started with (`__traceContext`, taken off the prototype too).
  const traceContext = Client.prototype.__traceContext;
  delete Client.prototype.__traceContext;
  telemetry.init({
    table: binding.__telemetryTable,
    phaseOf: (client) => phaseOf.call(client),
    traceContext: (client, ...context) => traceContext.apply(client, context),
  });
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
    return makeError(
      "invalid_params",
      `Client.${name}() was called without its client: call it on the client (client.${name}(...)), or bind it`,
    );
  }

  /** Define `Client.prototype[key]` as `wrapped`, with the name `name`. */
  function define(key, wrapped) {
    Object.defineProperty(Client.prototype, key, { value: wrapped, writable: true, configurable: true });
  }

  /**
   * Wrap the promise method `Client.prototype[key]`: async, refusing a call
   * without its client, and handed to the client's telemetry if it is traced
   * (`wire`: the method's wire name; `request`'s is its first argument).
   */
  function wrapAsync(key, name, wire = name) {
    const method = Client.prototype[key];
    define(
      key,
      {
        async [name](a, b, c) {
          if (!(this instanceof Client)) throw detached(name);
          followTrace(this, keepTrace);
          try {
            const spans = telemetry.of(this);
            if (spans !== undefined) {
              const called = wire === "request" ? (typeof a === "string" ? a : wire) : wire;
              return await spans.call(called, this, () => method.call(this, a, b, c));
            }
            return await method.call(this, a, b, c);
          } catch (error) {
            throw traced(error);
          }
        },
      }[name],
    );
  }

  /** Wrap `Client.prototype[key]`, which returns no promise, so that a call without its client throws. */
  function guard(key, name) {
    const method = Client.prototype[key];
    define(
      key,
      {
        [name](a, b) {
          if (!(this instanceof Client)) throw detached(name);
          followTrace(this, keepTrace);
          if (name === "turn") telemetry.of(this)?.starting(this); // a turn may start koma
          return method.call(this, a, b);
        },
      }[name],
    );
  }
  // The protocol's methods (lib/surface.js, generated from schema/): each is
  // the addon's request() of its wire name, its params checked by the core.
  const protocolMethods = require("./lib/surface.js").methods;
  const request = Client.prototype.request;
  for (const [name, wire, takesParams] of protocolMethods) {
    define(
      name,
      takesParams
        ? function (params, options) {
            return request.call(this, wire, params, options);
          }
        : function (options) {
            return request.call(this, wire, undefined, options);
          },
    );
  }
  for (const [name, wire] of protocolMethods) wrapAsync(name, name, wire);
  for (const name of ["probe", "request", "close", "run"]) wrapAsync(name, name);
  for (const name of ["turn", "events"]) guard(name, name);
  wrapAsync(Symbol.asyncDispose, "[Symbol.asyncDispose]", "close");

  return { KomaError, isKomaError, classes };
}

const { KomaError, isKomaError, classes } = Client[SET_UP];
module.exports = { Client, KomaError, isKomaError, ...classes };
// The addon built for the package's own tests has a census of its live objects.
if (typeof binding.__census === "function") module.exports.__census = binding.__census;
