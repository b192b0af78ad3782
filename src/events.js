// The client's one event queue, in JavaScript: the iterator of `events()`,
// and the routing of a Turn's events to it (see turn.js). Per event it is an
// array index, a check of the overflow epoch, a count and the event object,
// with no call into the addon. The addon is called once per batch (`pull`,
// which parses the whole batch with one JSON.parse: a flat array of seq, name,
// data and the frame's size for each event) and calls `settle` when events
// become ready.
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
// known whose it is.
(function makeEventQueue(pull, stop, counters, layout) {
  "use strict";
  const shared = new Int32Array(counters);
  const EPOCH = layout.EPOCH;
  const TAKEN = layout.TAKEN;
  const TAKEN_BYTES = layout.TAKEN_BYTES;
  const BATCH_EPOCH = layout.BATCH_EPOCH;
  const STRIDE = layout.STRIDE;
  const DONE = Object.freeze({ value: undefined, done: true });

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
  // events() calls waiting for an item.
  const waiting = [];
  // The open Turns (see turn.js for what they expose).
  const turns = [];

  function count(size) {
    shared[TAKEN] = (shared[TAKEN] + 1) | 0;
    shared[TAKEN_BYTES] = (shared[TAKEN_BYTES] + size) | 0;
  }

  // Refill the batch from the addon: true if there is more to take now.
  function refill() {
    const got = pull();
    if (got === undefined) return false;
    if (got === null) {
      end = DONE;
      endTurns(undefined);
      return false;
    }
    if (Array.isArray(got)) {
      batch = got;
      index = 0;
      epoch = shared[BATCH_EPOCH];
      return true;
    }
    // The overflow report: it ended the pause. events() gets it in order;
    // open Turns learn of it at once.
    held.push({ value: got, size: -1, epoch: shared[EPOCH] });
    for (const t of turns.slice()) t.overflow(got);
    return true;
  }

  function endTurns(error) {
    for (const t of turns.splice(0)) t.end(error);
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

  // The next item for events(): { value, done: false }, DONE, or undefined
  // (nothing now; the addon calls settle when something comes). While Turns
  // are open, their events are routed to them on the way. Throws the
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
      if (index < batch.length) {
        if (shared[EPOCH] !== epoch) {
          batch = []; // an overflow revoked this batch
          index = 0;
          continue;
        }
        if (turns.length !== 0) {
          const owner = ownerOf(batch[index + 1], batch[index + 2]);
          if (owner === undefined) return undefined;
          if (owner !== null) {
            routeTo(owner);
            continue;
          }
        }
        count(batch[index + 3]);
        const value = { type: "event", seq: batch[index], name: batch[index + 1], data: batch[index + 2] };
        index += STRIDE;
        return { value, done: false };
      }
      if (end !== null) {
        if (end === DONE) return DONE;
        throw end.error;
      }
      try {
        if (!refill()) return end === null ? undefined : end === DONE ? DONE : undefined;
      } catch (error) {
        end = { error };
        endTurns(error);
        throw error;
      }
    }
  }

  function routeTo(owner) {
    const value = { type: "event", seq: batch[index], name: batch[index + 1], data: batch[index + 2] };
    const size = batch[index + 3];
    index += STRIDE;
    owner.accept(value, size, epoch);
  }

  // While Turns are open, route everything that has come: a Turn's events to
  // it, the rest into `held` for events() (still counted until taken).
  function pump() {
    while (turns.length !== 0) {
      if (index < batch.length) {
        if (shared[EPOCH] !== epoch) {
          batch = [];
          index = 0;
          continue;
        }
        const owner = ownerOf(batch[index + 1], batch[index + 2]);
        if (owner === undefined) return;
        if (owner !== null) {
          routeTo(owner);
          continue;
        }
        const value = { type: "event", seq: batch[index], name: batch[index + 1], data: batch[index + 2] };
        held.push({ value, size: batch[index + 3], epoch });
        index += STRIDE;
        continue;
      }
      if (end !== null) return;
      try {
        if (!refill()) return;
      } catch (error) {
        end = { error };
        endTurns(error);
        return;
      }
    }
  }

  // Serve the events() calls that wait.
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
        for (const w of waiting.splice(0)) w.resolve(DONE);
        return;
      }
      waiting.shift().resolve(result);
    }
  }

  // Events are ready (or the end): the addon calls this.
  function settle() {
    pump();
    serve();
    if (waiting.length === 0 && turns.length === 0) stop(); // nobody wants more
  }

  const stream = {
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
      if (turns.length === 0) stop();
      return Promise.resolve(DONE);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };

  // What turn.js uses.
  let kicked = false;
  const router = {
    /** Route `turn`'s events to it from now on (it has `id` null until known). */
    open(turn) {
      turns.push(turn);
      if (end !== null) {
        turns.splice(turns.indexOf(turn), 1);
        turn.end(end === DONE ? undefined : end.error);
      }
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

  return { stream, settle, router };
})
