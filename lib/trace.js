// @ts-check
// The trace's route into JavaScript: the `koma-sdk:trace` diagnostics
// channel. A client made while the channel has subscribers has its
// connection keep trace records (frames both ways, whole lines of koma's
// stderr, notes of its life); each wake of the client hands them over as
// one JSON text, and each becomes one message:
//
//   { client, pid, kind, direction, text }
//
// `client` is the Client (undefined if it was collected), `pid` koma's
// process id (null before it started), `kind` one of "frame", "stderr",
// "spawned", "hello", "detach", "exit", "failed", "closed", "dropped",
// `direction` "written" or "read" for a frame (else null), and `text` the
// frame's text (escaped, cut at 4 KiB), the stderr line (escaped), or the
// note's sentence. A client made with no subscriber keeps nothing until one
// comes: from then on (its next call, or its next wake), it keeps its trace
// too. Nothing is done here per frame when nobody listens.
"use strict";

/** The channel's name. */
const CHANNEL = "koma-sdk:trace";

/** @type {import("node:diagnostics_channel").Channel | null} */
let channel = null;
try {
  channel = require("node:diagnostics_channel").channel(CHANNEL);
} catch {
  // A runtime without diagnostics_channel: no route, and nothing is kept.
}

/** Whether anyone listens now (asked once, when a client is made). */
function traceSubscribed() {
  return channel !== null && channel.hasSubscribers;
}

/** The clients that keep their trace since a subscriber came after they were made. */
const following = new WeakSet();

/**
 * Before a call of `client`: if the channel has a subscriber now, the
 * client keeps its trace from now on (`keep` is its `__keepTrace`). One
 * property read when nobody listens.
 * @param {object} client
 * @param {() => void} keep
 */
function followTrace(client, keep) {
  if (channel === null || !channel.hasSubscribers || following.has(client)) return;
  following.add(client);
  keep.call(client);
}

/**
 * Publish one wake's records of a client.
 * @param {object | undefined} client
 * @param {string} json `[[pid, kind, direction, text], ...]`
 */
function publishTrace(client, json) {
  if (channel === null || !channel.hasSubscribers) return;
  /** @type {[number | null, string, string | null, string][]} */
  const records = JSON.parse(json);
  for (const [pid, kind, direction, text] of records) channel.publish({ client, pid, kind, direction, text });
}

module.exports = { CHANNEL, traceSubscribed, publishTrace, followTrace };
