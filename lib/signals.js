// @ts-check
// One `abort` listener per AbortSignal for the whole package, however many
// calls, loops and turns wait on that signal: Node warns
// (MaxListenersExceededWarning) when a signal has more than ten listeners,
// and one signal shared by many concurrent calls is ordinary. Each waiter
// registers a callback here; the signal gets a listener when its first
// waiter comes and loses it when its last one goes. The callbacks run in
// the order they were registered.
"use strict";

/** @typedef {() => void} OnAbort */

/** Each signal listened to: its callbacks, and its one listener. @type {WeakMap<AbortSignal, { callbacks: Set<OnAbort>, listener: () => void }>} */
const listening = new WeakMap();

/**
 * Call `callback` once when `signal` aborts (until `offAbort`). Throws what
 * the signal's `addEventListener` throws (nothing is registered then).
 * @param {AbortSignal} signal
 * @param {OnAbort} callback
 */
function onAbort(signal, callback) {
  const entry = listening.get(signal);
  if (entry !== undefined) {
    entry.callbacks.add(callback);
    return;
  }
  /** @type {Set<OnAbort>} */
  const callbacks = new Set([callback]);
  const listener = () => {
    listening.delete(signal);
    for (const cb of callbacks) {
      try {
        cb();
      } catch (error) {
        // A callback's failure must not keep the others from running.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
    callbacks.clear();
  };
  signal.addEventListener("abort", listener, { once: true });
  listening.set(signal, { callbacks, listener });
}

/**
 * Forget `callback` (its call has settled). The signal's listener goes with its last callback.
 * @param {AbortSignal} signal
 * @param {OnAbort} callback
 */
function offAbort(signal, callback) {
  const entry = listening.get(signal);
  if (entry === undefined || !entry.callbacks.delete(callback) || entry.callbacks.size > 0) return;
  listening.delete(signal);
  try {
    signal.removeEventListener("abort", entry.listener);
  } catch {
    // A signal that refuses to let go cannot keep anything: its callbacks are gone.
  }
}

module.exports = { onAbort, offAbort };
