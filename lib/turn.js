// @ts-check
// A Turn, as JavaScript holds it: what `client.turn()` returns and what
// `client.run()` awaits. The core runs the turn (its submit, which events
// are its own, its approvals, its result and how it ends: see the core's
// `turns` module); this file only speaks JavaScript's idioms around it:
// promises for its id and result, the async iterator of its events, the
// AbortSignal, and calling `onApproval` (plain or async) and handing its
// answer to the core. The addon calls `makeTurn` with `ops`, its functions
// for this client, and hands each of the core's updates of the turn (a
// `TurnUpdate`, one shape per kind) to the `update` it returns.
"use strict";

const { Cursor, Loops, DONE } = require("./stream.js");
const { awaited } = require("./errors.js");
const signals = require("./signals.js");

/**
 * @typedef {import("./stream.js").Item} Item
 * @typedef {{
 *   take: (key: number) => unknown,
 *   read: (key: number, reading: boolean) => void,
 *   stop: (key: number, reason: unknown) => void,
 *   interrupt: (key: number) => Promise<void>,
 *   answer: (key: number, approval: string, returned: unknown, shown: string) => void,
 *   failed: (key: number, approval: string, message: string) => void,
 *   telemetry?: import("./telemetry.js").Telemetry,
 *   counters: ArrayBuffer,
 *   layout: import("./stream.js").Layout,
 * }} Ops
 * @typedef {(request: any) => unknown} Handler
 *
 * What the core says of a turn, one shape per kind (the core's `TurnUpdate`):
 * its id came; an approval for `onApproval`; its loop may take events now;
 * it is over, with its result and, if it fails, why (`failsId`: it never got
 * an id, which fails with the result).
 * @typedef {{ kind: "id", id: string }} IdUpdate
 * @typedef {{ kind: "approval", approval: string, request: unknown }} ApprovalUpdate
 * @typedef {{ kind: "ready" }} ReadyUpdate
 * @typedef {{ error: Error, cause: "client" | "handler" | "stop", approval?: string, failsId: boolean }} Failure
 * @typedef {{ kind: "ended", result: unknown, failure?: Failure, record?: string }} EndedUpdate
 * @typedef {IdUpdate | ApprovalUpdate | ReadyUpdate | EndedUpdate} TurnUpdate
 */

/** What a value is, as a message names it. */
function describe(/** @type {unknown} */ v) {
  return typeof v === "string" ? JSON.stringify(v) : String(v);
}

/** @param {unknown} thrown */
function messageOf(thrown) {
  return thrown instanceof Error ? thrown.message : String(thrown);
}

/**
 * What a user gets: its state stays private, and it has no public
 * constructor. Its promises and its loops reject with errors that carry the
 * stack of the code that awaits them (`at async yourFunction`), as the
 * client's methods do. `util.inspect(turn)` shows its id and where it is:
 * `Turn { id: 't-1', state: 'running' }` (`starting` until its submit is
 * answered, `running`, `finished`, `failed`).
 */
class Turn {
  /** @type {TurnState} */
  #state;
  /** @param {TurnState} state */
  constructor(state) {
    this.#state = state;
  }
  /** @returns {Promise<string>} */
  get id() {
    const s = this.#state;
    s.touched = true;
    if (s.seenId === undefined) s.seenId = awaited(s.id);
    return s.seenId;
  }
  /** @returns {Promise<unknown>} */
  get result() {
    const s = this.#state;
    s.touched = true;
    if (s.seenResult === undefined) s.seenResult = awaited(s.result);
    return s.seenResult;
  }
  /** @returns {Promise<void>} */
  interrupt() {
    return this.#state.ops.interrupt(this.#state.key);
  }
  /** @returns {AsyncIterableIterator<Item>} */
  [Symbol.asyncIterator]() {
    this.#state.touched = true;
    return this.#state.iterator();
  }
  /**
   * @param {number} _depth
   * @param {object} options
   * @param {(value: unknown, options: object) => string} inspect
   */
  [Symbol.for("nodejs.util.inspect.custom")](_depth, options, inspect) {
    const shown = { id: this.#state.shownId, state: this.#state.phase };
    return typeof inspect === "function" ? `Turn ${inspect(shown, options)}` : `Turn { id: ${shown.id}, state: '${shown.state}' }`;
  }
}

class TurnState {
  /**
   * @param {Ops} ops
   * @param {number} key
   * @param {Handler | undefined} handler
   */
  constructor(ops, key, handler) {
    this.ops = ops;
    this.key = key;
    this.handler = handler;
    /** What each approval's handler threw, by approval id (the error's cause if it fails the turn). */
    /** @type {Map<string, unknown>} */
    this.thrown = new Map();
    /** Why the turn was stopped (the signal's reason). @type {unknown} */
    this.stopCause = undefined;
    /** Its id once known, for `util.inspect`. @type {string | null} */
    this.shownId = null;
    /** Where it is, for `util.inspect`. @type {"starting" | "running" | "finished" | "failed"} */
    this.phase = "starting";
    /** The program looked at it (its id, its result, a loop): its failure is not left unseen. */
    this.touched = false;
    /** What `turn.id` and `turn.result` give: made when first asked for. @type {Promise<string> | undefined} */
    this.seenId = undefined;
    /** @type {Promise<unknown> | undefined} */
    this.seenResult = undefined;
    /** Called when the turn fails and nobody looked at it (a Turn's; a run's promise is the caller's). @type {(() => void) | undefined} */
    this.unread = undefined;
    /** @type {(id: string) => void} */
    this.resolveId = () => {};
    /** @type {(e: unknown) => void} */
    this.rejectId = () => {};
    /** @type {(r: unknown) => void} */
    this.resolveResult = () => {};
    /** @type {(e: unknown) => void} */
    this.rejectResult = () => {};
    /** @type {Promise<string>} */
    this.id = new Promise((resolve, reject) => ((this.resolveId = resolve), (this.rejectId = reject)));
    /** @type {Promise<unknown>} */
    this.result = new Promise((resolve, reject) => ((this.resolveResult = resolve), (this.rejectResult = reject)));
    // Neither promise may crash a program that only awaits the other, or neither.
    this.id.catch(() => {});
    this.result.catch(() => {});
    /** @type {() => void} */
    this.cleanup = () => {};
    /** Its spans, when the client is traced (`lib/telemetry.js`). */
    this.traced = ops.telemetry?.turn();
    this.loops = new Loops(new Cursor(() => ops.take(key), ops.counters, ops.layout), {
      // A loop ends the way the result settles.
      end: () => this.result.then(() => DONE),
      leave: () => {
        this.loops.cursor.release();
        ops.read(key, false);
      },
      idle: () => {},
    });
  }

  iterator() {
    this.ops.read(this.key, true);
    return this.loops.iterator();
  }

  /**
   * What the core says of this turn (the addon calls this).
   * @param {TurnUpdate} u
   */
  update(u) {
    switch (u.kind) {
      case "id":
        this.shownId = u.id;
        this.phase = "running";
        this.resolveId(u.id);
        break;
      case "approval":
        this.ask(u.approval, u.request);
        break;
      case "ready":
        this.loops.serve();
        break;
      case "ended":
        this.traced?.end(u.record); // telemetry: the core's record
        this.ended(u.result, u.failure);
        break;
    }
  }

  /** Ask the handler about `approval` and hand its answer to the core. */
  ask(/** @type {string} */ approval, /** @type {unknown} */ request) {
    const { ops, key } = this;
    const failed = (/** @type {unknown} */ e) => {
      this.thrown.set(approval, e);
      ops.failed(key, approval, messageOf(e));
    };
    let answer;
    try {
      const handler = /** @type {Handler} */ (this.handler);
      // Traced: in the turn span's context (its own spans are the turn's).
      answer = this.traced === undefined ? handler(request) : this.traced.run(handler, request);
    } catch (e) {
      failed(e);
      return;
    }
    // The core judges what it returned (whether it is a decision).
    Promise.resolve(answer).then((a) => ops.answer(key, approval, a, describe(a)), failed);
  }

  /**
   * The turn is over: its result, and why it fails if it does (the cause
   * is what the handler threw for that approval, or the signal's reason).
   * @param {unknown} result
   * @param {Failure | undefined} failure
   */
  ended(result, failure) {
    this.cleanup();
    if (failure === undefined) {
      this.phase = "finished";
      this.resolveResult(result);
    } else {
      const { error } = failure;
      this.phase = "failed";
      const why =
        failure.cause === "handler"
          ? this.thrown.get(/** @type {string} */ (failure.approval))
          : failure.cause === "stop"
            ? this.stopCause
            : undefined;
      if (why !== undefined) Object.defineProperty(error, "cause", { value: why, writable: true, configurable: true });
      Object.defineProperty(error, "result", { value: result, writable: true, configurable: true, enumerable: true });
      if (failure.failsId) this.rejectId(error);
      this.rejectResult(error);
      // A Turn the program never looked at fails as an unawaited promise
      // does: `turn.result` rejects with nobody to handle it, and Node
      // reports an unhandled rejection.
      if (!this.touched && this.unread !== undefined) this.unread();
    }
    this.thrown.clear();
    this.loops.serve();
  }

  /**
   * Stop the turn when `signal` aborts (the core interrupts the agent, and
   * gives the error: `aborted`, or `timeout` for a TimeoutError reason).
   * @param {AbortSignal} signal
   */
  listen(signal) {
    const onAbort = () => {
      this.stopCause = signal.reason;
      this.ops.stop(this.key, signal.reason); // the core says what that means
    };
    signals.onAbort(signal, onAbort);
    this.cleanup = () => signals.offAbort(signal, onAbort);
  }
}

/**
 * A Turn for the core's turn `key` (the addon opens it in the core once this
 * returns). `stopped`: the signal had aborted already (its reason).
 * @param {Ops} ops
 * @param {number} key
 * @param {"turn" | "run"} what
 * @param {Handler | undefined} handler
 * @param {AbortSignal | undefined} signal
 * @param {{ reason: unknown } | undefined} stopped
 */
function makeTurn(ops, key, what, handler, signal, stopped) {
  const state = new TurnState(ops, key, handler);
  if (stopped !== undefined) state.stopCause = stopped.reason;
  else if (signal !== undefined) state.listen(signal);
  const turn = new Turn(state);
  if (what === "turn") {
    // Reported by Node as an unhandled rejection when nobody looked at the Turn.
    state.unread = () => {
      if (state.seenResult === undefined) state.seenResult = awaited(state.result);
    };
  }
  return { turn, result: state.result, update: state.update.bind(state) };
}

module.exports = { makeTurn, Turn };
