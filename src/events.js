// The event iterator's hot loop, in JavaScript: per event it is an array
// index, a check of the overflow epoch, a count and the event object, with no
// call into the addon. The addon is called once per batch (`pull`, which
// parses the whole batch with one JSON.parse: a flat array of seq, name and
// data for each event) and calls `settle` when events become ready.
// `counters` is memory shared with the addon's reader, as 32-bit slots whose
// numbers `layout` gives (their one definition is `EventCounters` in the Rust
// core): EPOCH (the reader's: an overflow bumps it), TAKEN (ours: the running
// count of events taken) and BATCH_EPOCH (the epoch of the batch pull gave).
(function makeEventStream(pull, stop, counters, layout) {
  "use strict";
  const shared = new Int32Array(counters);
  const EPOCH = layout.EPOCH;
  const TAKEN = layout.TAKEN;
  const BATCH_EPOCH = layout.BATCH_EPOCH;
  let batch = [];
  let index = 0;
  let epoch = 0;
  const waiting = [];
  const DONE = Object.freeze({ value: undefined, done: true });

  // The next item, or undefined when nothing is buffered (the addon then
  // calls settle when something is). Throws the client's fatal error.
  function take() {
    for (;;) {
      if (index < batch.length) {
        if (shared[EPOCH] === epoch) {
          shared[TAKEN] = (shared[TAKEN] + 1) | 0;
          const value = { type: "event", seq: batch[index], name: batch[index + 1], data: batch[index + 2] };
          index += 3;
          return { value, done: false };
        }
        batch = []; // an overflow revoked this batch
        index = 0;
      }
      const got = pull();
      if (got === undefined) return undefined;
      if (got === null) return DONE;
      if (Array.isArray(got)) {
        batch = got;
        index = 0;
        epoch = shared[BATCH_EPOCH];
        continue;
      }
      return { value: got, done: false }; // the overflow report
    }
  }

  function settle() {
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
      stop();
      return Promise.resolve(DONE);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  return { stream, settle };
})
