// Generated from schema/ by scripts/generate.mjs: do not edit.
"use strict";

/** The protocol's methods of a Client: [JavaScript name, wire name, whether it takes params]. */
const methods = [
  ["create", "create", true],
  ["resume", "resume", true],
  ["state", "state", false],
  ["submit", "submit", true],
  ["enqueue", "enqueue", true],
  ["interrupt", "interrupt", false],
  ["interruptAndSubmit", "interrupt_and_submit", true],
  ["approve", "approve", true],
  ["configure", "configure", true],
  ["detach", "detach", false],
];

/** The error codes: [code, the class of its errors, their `name`]. */
const errors = [
  ["remote", "RemoteFailure", "KomaError"],
  ["delivery_unknown", "DeliveryUnknown", "KomaError"],
  ["transport_failure", "TransportFailure", "KomaError"],
  ["spawn_failed", "SpawnFailed", "KomaError"],
  ["protocol_error", "ProtocolError", "KomaError"],
  ["protocol_mismatch", "ProtocolMismatch", "KomaError"],
  ["frame_too_large", "FrameTooLarge", "KomaError"],
  ["too_many_pending", "TooManyPending", "KomaError"],
  ["lifecycle", "LifecycleError", "KomaError"],
  ["unsupported", "Unsupported", "KomaError"],
  ["invalid_params", "InvalidParams", "KomaError"],
  ["closed", "ClientClosed", "KomaError"],
  ["aborted", "Aborted", "AbortError"],
  ["timeout", "TimedOut", "TimeoutError"],
];

/**
 * The options of `new Client`: [name, the JSON types it takes, its minimum,
 * the method an object of it must have] (lib/fake-options.js checks a fake's
 * client's by them).
 * @type {Array<[string, string[], number | null, string | null]>}
 */
const clientOptions = [
  ["executable", ["string"], null, null],
  ["cwd", ["string"], null, null],
  ["env", ["object"], null, null],
  ["trace", ["boolean"], null, null],
  ["helloTimeout", ["number", "null"], 0, null],
  ["telemetry", ["boolean"], null, null],
  ["tracerProvider", ["object"], null, "getTracer"],
  ["meterProvider", ["object"], null, "getMeter"],
  ["captureContent", ["boolean"], null, null],
];

module.exports = { methods, errors, clientOptions };
