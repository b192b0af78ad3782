// The event iterator's hot loop, in JavaScript: per event it is an array
// index, a check of the overflow epoch, a count and the event object, with no
// call into the addon. The addon is called once per batch (`pull`, which
// parses the whole batch with one JSON.parse: a flat array of seq, name and
// data for each event) and calls `settle` when events become ready.
// shared: Int32Array [epoch (the reader's), taken (ours), batch epoch (pull's)].
(function makeEventStream(pull, stop, counters) {
  "use strict";
  const shared = new Int32Array(counters);
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
        if (shared[0] === epoch) {
          shared[1] = (shared[1] + 1) | 0;
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
        epoch = shared[2];
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
