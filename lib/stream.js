// @ts-check
// A loop's side of one of the core's streams of events: the client's own
// (what `events()` reads) or a Turn's. The core decides which stream each
// event goes to and how it counts; this file only hands a batch's events
// out one by one and counts each in the memory it shares with the core,
// with no call into the addon per event. The addon is called once per batch
// (`pull`, which parses the whole batch with one JSON.parse: a flat array of
// seq, name, data and the frame's size for each event).
//
// `counters` is that shared memory: 32-bit slots whose numbers `layout`
// gives (their one definition is the core's `EventCounters`). The core
// writes EPOCH (an overflow bumps it), BATCH_EPOCH and BATCH_COUNTING (of
// the batch `pull` gave); this file adds to TAKEN and TAKEN_BYTES as events
// are handed out. BATCH_COUNTING says how a batch's events count: not at all
// (UNCOUNTED), or each until taken while the epoch matches, the rest dropped
// (REVOCABLE) or handed out uncounted (KEPT) once an overflow has come; their
// numbers are the core's too (`Counting::KINDS`), in `layout`.
"use strict";

const { awaited, traced } = require("./errors.js");
const signals = require("./signals.js");

/** @type {IteratorReturnResult<undefined>} */
const DONE = Object.freeze({ value: undefined, done: true });

/**
 * @typedef {{ EPOCH: number, TAKEN: number, BATCH_EPOCH: number, TAKEN_BYTES: number, BATCH_COUNTING: number, STRIDE: number, UNCOUNTED: number, REVOCABLE: number, KEPT: number }} Layout
 * @typedef {{ type: "event", seq: number, name: string, data: unknown } | { type: "overflow", dropped: number }} Item
 * @typedef {{ resolve: (r: IteratorResult<Item>) => void, reject: (e: unknown) => void, owner: object }} Waiter
 * @typedef {(how: "signal" | "deadline", value: unknown) => unknown} Stopped the core's error that ends a bounded loop
 * @typedef {{ signal: AbortSignal | undefined, timeout: number | undefined, refused: unknown, stopped: Stopped }} Bound
 */

/** The cursor over a stream's batches. */
class Cursor {
  /**
   * @param {() => unknown} pull a batch (flat array), the overflow report, `undefined` (nothing now) or `null` (the end); throws the stream's failure
   * @param {ArrayBuffer} counters
   * @param {Layout} layout
   */
  constructor(pull, counters, layout) {
    this.pull = pull;
    this.shared = new Int32Array(counters);
    this.layout = layout;
    this.uncounted = layout.UNCOUNTED;
    this.revocable = layout.REVOCABLE;
    /** @type {unknown[]} */
    this.batch = [];
    this.index = 0;
    this.epoch = 0;
    this.counting = this.uncounted;
    this.ended = false;
  }

  /** @param {number} size */
  count(size) {
    const { shared, layout } = this;
    shared[layout.TAKEN] = (shared[layout.TAKEN] + 1) | 0;
    shared[layout.TAKEN_BYTES] = (shared[layout.TAKEN_BYTES] + size) | 0;
  }

  /**
   * The next item, `null` at the end, `undefined` when nothing is there now.
   * Throws the stream's failure.
   * @returns {Item | null | undefined}
   */
  next() {
    const stride = this.layout.STRIDE;
    for (;;) {
      const batch = this.batch;
      const i = this.index;
      if (i < batch.length) {
        this.index = i + stride;
        if (this.counting !== this.uncounted) {
          if (this.shared[this.layout.EPOCH] === this.epoch) this.count(/** @type {number} */ (batch[i + 3]));
          else if (this.counting === this.revocable) {
            this.batch = []; // an overflow revoked the rest
            this.index = 0;
            continue;
          }
        }
        return { type: "event", seq: /** @type {number} */ (batch[i]), name: /** @type {string} */ (batch[i + 1]), data: batch[i + 2] };
      }
      if (this.ended) return null;
      const got = this.pull();
      if (got === undefined) return undefined;
      if (got === null) {
        this.ended = true;
        return null;
      }
      if (Array.isArray(got)) {
        this.batch = got;
        this.index = 0;
        this.epoch = this.shared[this.layout.BATCH_EPOCH];
        this.counting = this.shared[this.layout.BATCH_COUNTING];
        continue;
      }
      return /** @type {Item} */ (got); // the overflow report
    }
  }

  /** A loop left with events of this batch not handed out: they count as taken (they stay, uncounted). */
  release() {
    const { batch, layout } = this;
    if (this.counting !== this.uncounted && this.shared[layout.EPOCH] === this.epoch) {
      for (let i = this.index; i < batch.length; i += layout.STRIDE) this.count(/** @type {number} */ (batch[i + 3]));
    }
    this.counting = this.uncounted;
  }
}

/**
 * A stream's loops: any number of iterators over one cursor, each waiting in
 * line. `end()` says how a loop ends once the stream has ended (DONE, or a
 * rejection); `leave(iterator)` runs when a loop leaves before the end;
 * `idle()` when no loop waits any more.
 */
class Loops {
  /**
   * @param {Cursor} cursor
   * @param {{ end: () => Promise<IteratorResult<Item>>, leave: () => void, idle: () => void }} hooks
   */
  constructor(cursor, hooks) {
    this.cursor = cursor;
    this.hooks = hooks;
    /** @type {Waiter[]} */
    this.waiting = [];
  }

  /** Hand what has come to the loops that wait, in order. */
  serve() {
    const waiting = this.waiting;
    while (waiting.length > 0) {
      let item;
      try {
        item = this.cursor.next();
      } catch (error) {
        for (const w of waiting.splice(0)) w.reject(error);
        break;
      }
      if (item === undefined) return;
      if (item === null) {
        const ending = this.hooks.end();
        for (const w of waiting.splice(0)) ending.then(w.resolve, w.reject);
        break;
      }
      /** @type {Waiter} */ (waiting.shift()).resolve({ value: item, done: false });
    }
    if (waiting.length === 0) this.hooks.idle();
  }

  /**
   * A new loop over the stream; one with a `bound` ends, throwing, when its
   * signal aborts or its timeout passes.
   * @param {Bound} [bound]
   * @returns {AsyncIterableIterator<Item>}
   */
  iterator(bound) {
    const loops = this;
    /** @type {AsyncIterableIterator<Item>} */
    const it = {
      // A rejection carries the stack of the loop's caller (see `traced`):
      // made here, when it comes at once, or awaited in the package's own
      // async function, when the loop waits. An event handed out at once
      // costs nothing more.
      next() {
        if (loops.waiting.length === 0) {
          let item;
          try {
            item = loops.cursor.next();
          } catch (error) {
            return Promise.reject(traced(error));
          }
          if (item === null) return awaited(loops.hooks.end());
          if (item !== undefined) return Promise.resolve({ value: item, done: false });
        }
        return awaited(new Promise((resolve, reject) => loops.waiting.push({ resolve, reject, owner: it })));
      },
      return() {
        const mine = loops.waiting.filter((w) => w.owner === it);
        loops.waiting = loops.waiting.filter((w) => w.owner !== it);
        for (const w of mine) w.resolve(DONE);
        loops.hooks.leave();
        if (loops.waiting.length === 0) loops.hooks.idle();
        return Promise.resolve(DONE);
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
    return bound === undefined ? it : bounded(loops, it, bound);
  }

  /**
   * End the loop `it` with `error`: its waiting `next()`s reject with it,
   * and it waits no more.
   * @param {object} it
   * @param {unknown} error
   */
  fail(it, error) {
    const mine = this.waiting.filter((w) => w.owner === it);
    this.waiting = this.waiting.filter((w) => w.owner !== it);
    for (const w of mine) w.reject(error);
    this.hooks.leave();
    if (this.waiting.length === 0) this.hooks.idle();
  }
}

/**
 * The loop `it` of `loops`, ended by its bound: once its signal aborts or
 * its timeout passes, every `next()` rejects with the error the core gives
 * (`stopped`: `aborted`, or `timeout` for a TimeoutError reason, which is
 * the `cause`; `timeout` for the deadline). The deadline is a timer of this
 * loop's own, which nothing koma does can hold up. A loop without a bound
 * never comes here: nothing is added to each event's way.
 * @param {Loops} loops
 * @param {AsyncIterableIterator<Item>} it
 * @param {Bound} bound
 * @returns {AsyncIterableIterator<Item>}
 */
function bounded(loops, it, bound) {
  const { signal, timeout, stopped } = bound;
  /** @type {{ error: unknown } | undefined} */
  let failure = bound.refused === undefined ? undefined : { error: bound.refused };
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  const stop = () => {
    if (signal !== undefined) signals.offAbort(signal, onAbort);
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  const fail = (/** @type {unknown} */ error) => {
    if (failure !== undefined) return;
    failure = { error };
    stop();
    loops.fail(it, error);
  };
  const onAbort = () => fail(stopped("signal", /** @type {AbortSignal} */ (signal).reason));
  if (failure === undefined && signal !== undefined) {
    if (signal.aborted) onAbort();
    else signals.onAbort(signal, onAbort);
  }
  if (failure === undefined && timeout !== undefined) {
    timer = setTimeout(() => fail(stopped("deadline", timeout)), timeout);
    // The loop holds the process while it waits; its deadline alone does not.
    timer.unref?.();
  }
  /** @param {IteratorResult<Item>} r */
  const settled = (r) => {
    if (r.done) stop();
    return r;
  };
  const failed = (/** @type {unknown} */ error) => {
    stop();
    throw error;
  };
  return {
    next() {
      if (failure !== undefined) return Promise.reject(failure.error);
      return it.next().then(settled, failed);
    },
    return() {
      stop();
      if (failure !== undefined) return Promise.resolve(DONE);
      return /** @type {Promise<IteratorResult<Item>>} */ (/** @type {NonNullable<typeof it.return>} */ (it.return)());
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/**
 * The client's own stream, what `events()` reads: `pull`, `stop` (no loop
 * waits any more) and `stopped` (the error that ends a bounded loop) are
 * the addon's. Each `events()` is a loop of its own over the one stream:
 * leaving one ends that loop only. `events(signal, timeout, refused)` takes
 * the checked options of `events()` (or the error that refused them, which
 * every `next()` then rejects with).
 * @param {() => unknown} pull
 * @param {() => void} stop
 * @param {Stopped} stopped
 * @param {ArrayBuffer} counters
 * @param {Layout} layout
 */
function clientStream(pull, stop, stopped, counters, layout) {
  const loops = new Loops(new Cursor(pull, counters, layout), {
    end: () => Promise.resolve(DONE),
    leave: () => {},
    idle: stop,
  });
  /**
   * @param {AbortSignal | undefined} signal
   * @param {number | undefined} timeout
   * @param {unknown} refused
   */
  const events = (signal, timeout, refused) =>
    signal === undefined && timeout === undefined && refused === undefined
      ? loops.iterator()
      : loops.iterator({ signal, timeout, refused, stopped });
  return { events, settle: () => loops.serve() };
}

module.exports = { Cursor, Loops, clientStream, DONE };
