// The client's one event queue, in JavaScript: the iterator of `events()`,
// the routing of Turns' events (see turn.js), and the one reader loop both
// use. Per event it is an array index, a check of the overflow epoch, a
// count and the event object, with no call into the addon. The addon is
// called once per batch (`pull`, which parses the whole batch with one
// JSON.parse: a flat array of seq, name, data and the frame's size for each
// event) and calls `settle` when events become ready.
//
// `counters` is memory shared with the addon's reader, as 32-bit slots whose
// numbers `layout` gives (their one definition is `EventCounters` in the Rust
// core): EPOCH (the reader's: an overflow bumps it, revoking what was handed
// over), TAKEN and TAKEN_BYTES (ours: the running counts of events, and of
// their frames' bytes, that the application has taken) and BATCH_EPOCH (the
// epoch of the batch pull gave). An event counts against the bound of 256
// events and 64 MiB until it is taken: yielded by `events()` or by a Turn.
//
// Routing, while Turns are open: an event whose `data.turn` is an open Turn's
// id goes to that Turn; a `state` or `diagnostic` event goes to the Turn
// whose turn has started and not finished, if there is one; everything else
// stays, in order, for `events()`. While a Turn waits for its id (its submit
// is not answered yet) nothing is routed, so no event is placed before it is
// known whose it is. A Turn is anything with what `ownerOf` reads (`id`,
// `started`, `finished`) and `accept`, `overflow` and `end`: this file does
// not know turn.js, which opens its Turns here.
(function makeEventQueue(pull, stop, counters, layout) {
  "use strict";
  const shared = new Int32Array(counters);
  const { EPOCH, TAKEN, TAKEN_BYTES, BATCH_EPOCH, STRIDE } = layout;
  const DONE = Object.freeze({ value: undefined, done: true });

  /**
   * The one pull/serve loop of an async iterator. `take()` gives the next
   * iterator result, DONE at the end, or undefined (nothing now: `serve()`
   * is called when something comes); it throws the source's failure.
   * `onReturn()` runs when the reader leaves early.
   */
  function makeReader(take, onReturn) {
    const waiting = [];
    function serve() {
      while (waiting.length > 0) {
        let result;
        try {
          result = take();
        } catch (error) {
          for (const w of waiting.splice(0)) w.reject(error);
          return;
        }
        if (result === undefined) return;
        if (result.done) {
          for (const w of waiting.splice(0)) w.resolve(result);
          return;
        }
        waiting.shift().resolve(result);
      }
    }
    const iterator = {
      next() {
        if (waiting.length === 0) {
          let result;
          try {
            result = take();
          } catch (error) {
            return Promise.reject(error);
          }
          if (result !== undefined) return Promise.resolve(result);
        }
        return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
      },
      return() {
        for (const w of waiting.splice(0)) w.resolve(DONE);
        onReturn();
        return Promise.resolve(DONE);
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
    return { iterator, serve, waiting: () => waiting.length > 0 };
  }

  // The batch being taken from.
  let batch = [];
  let index = 0;
  let epoch = 0;
  // Once the stream has ended: DONE, or { error } to throw.
  let end = null;
  // Items routed past events() while Turns were open, waiting for it:
  // { value, size, epoch } (size < 0: not an event, e.g. the overflow report).
  let held = [];
  let heldAt = 0;
  // The open Turns.
  const turns = [];

  function count(size) {
    shared[TAKEN] = (shared[TAKEN] + 1) | 0;
    shared[TAKEN_BYTES] = (shared[TAKEN_BYTES] + size) | 0;
  }

  /** The event at `i` of the batch, as the application gets it. */
  function eventAt(i) {
    return { type: "event", seq: batch[i], name: batch[i + 1], data: batch[i + 2] };
  }

  function fail(error) {
    end = { error };
    for (const t of turns.splice(0)) t.end(error);
  }

  /** Refill from the addon: "batch", "report" (the overflow report), or undefined (nothing now, or the end). */
  function refill() {
    const got = pull();
    if (got === undefined) return undefined;
    if (got === null) {
      end = DONE;
      for (const t of turns.splice(0)) t.end(undefined);
      return undefined;
    }
    if (Array.isArray(got)) {
      batch = got;
      index = 0;
      epoch = shared[BATCH_EPOCH];
      return "batch";
    }
    // The overflow report: it ended the pause. events() gets it in order;
    // open Turns learn of it at once.
    held.push({ value: got, size: -1, epoch: shared[EPOCH] });
    for (const t of turns.slice()) t.overflow(got);
    return "report";
  }

  // Whose is the event at `index`: a Turn, null (events()'s), or undefined
  // (not known yet: a Turn waits for its id).
  function ownerOf(name, data) {
    for (let i = 0; i < turns.length; i++) if (turns[i].id === null) return undefined;
    if (name === "state" || name === "diagnostic") {
      for (let i = 0; i < turns.length; i++) if (turns[i].started && !turns[i].finished) return turns[i];
      return null;
    }
    const id = data !== null && typeof data === "object" ? data.turn : undefined;
    if (typeof id === "string") for (let i = 0; i < turns.length; i++) if (turns[i].id === id) return turns[i];
    return null;
  }

  const MINE = 1; // the event at `index` is events()'
  const WAIT = 2; // nothing more is known now (or the end)
  const HELD = 3; // the overflow report was held for events()

  /** Route the Turns' events to them, up to the first that is events()'. Throws the source's failure. */
  function route() {
    for (;;) {
      if (index < batch.length) {
        if (shared[EPOCH] !== epoch) {
          batch = []; // an overflow revoked this batch
          index = 0;
          continue;
        }
        if (turns.length === 0) return MINE;
        const owner = ownerOf(batch[index + 1], batch[index + 2]);
        if (owner === undefined) return WAIT;
        if (owner === null) return MINE;
        owner.accept(eventAt(index), batch[index + 3], epoch);
        index += STRIDE;
        continue;
      }
      if (end !== null) return WAIT;
      const got = refill();
      if (got === undefined) return WAIT;
      if (got === "report") return HELD;
    }
  }

  // The next item for events(): { value, done: false }, DONE, or undefined
  // (nothing now; the addon calls settle when something comes). Throws the
  // client's fatal error once everything before it has been taken.
  function take() {
    for (;;) {
      while (heldAt < held.length) {
        const h = held[heldAt++];
        if (h.size < 0) return { value: h.value, done: false };
        if (h.epoch !== shared[EPOCH]) continue; // revoked by an overflow
        count(h.size);
        return { value: h.value, done: false };
      }
      if (heldAt > 0) {
        held = [];
        heldAt = 0;
      }
      if (end !== null && index >= batch.length) {
        if (end === DONE) return DONE;
        throw end.error;
      }
      let where;
      try {
        where = route();
      } catch (error) {
        fail(error);
        throw error;
      }
      if (where === MINE) {
        count(batch[index + 3]);
        const value = eventAt(index);
        index += STRIDE;
        return { value, done: false };
      }
      if (where === HELD) continue;
      if (end === null || index < batch.length) return undefined;
    }
  }

  // While Turns are open, route everything that has come: a Turn's events to
  // it, the rest into `held` for events() (still counted until taken).
  function pump() {
    while (turns.length !== 0) {
      let where;
      try {
        where = route();
      } catch (error) {
        fail(error);
        return;
      }
      if (where === WAIT) return;
      if (where === MINE) {
        held.push({ value: eventAt(index), size: batch[index + 3], epoch });
        index += STRIDE;
      }
    }
  }

  const reader = makeReader(take, () => {
    if (turns.length === 0) stop(); // nobody wants more
  });

  // Events are ready (or the end): the addon calls this.
  function settle() {
    pump();
    reader.serve();
    if (!reader.waiting() && turns.length === 0) stop(); // nobody wants more
  }

  // What turn.js uses.
  let kicked = false;
  const router = {
    DONE,
    /** A reader over `take` (see makeReader), for a Turn's own events. */
    reader: makeReader,
    /** Route `turn`'s events to it from now on (it has `id` null until known). */
    open(turn) {
      if (end !== null) {
        turn.end(end === DONE ? undefined : end.error);
        return;
      }
      turns.push(turn);
    },
    /** Stop routing to `turn` (its turn finished, or it failed). */
    close(turn) {
      const i = turns.indexOf(turn);
      if (i >= 0) turns.splice(i, 1);
      this.kick();
    },
    /**
     * Something changed (a Turn learned its id, or closed): route and serve
     * again, in a microtask of its own (this may be called while routing).
     */
    kick() {
      if (kicked) return;
      kicked = true;
      queueMicrotask(() => {
        kicked = false;
        settle();
      });
    },
    /** A routed event of `size` bytes was taken (by a Turn's reader, or as the turn ended). */
    taken(size) {
      count(size);
    },
    /** The epoch a routed event must still have to be taken (an overflow revokes the rest). */
    epoch() {
      return shared[EPOCH];
    },
  };

  return { stream: reader.iterator, settle, router };
});
