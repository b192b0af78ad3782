// The package's loops over a stream of events (lib/stream.js) against a fake
// `pull`: one pull per batch, the shared counters, how each kind of batch
// counts (revocable, kept, uncounted), waiting, errors, several loops over
// one stream, leaving a loop, and the end. The core decides which stream an
// event goes to; this is only the JavaScript half that hands them out.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { simClient } from "./helpers.mjs";

const require = createRequire(import.meta.url);
const { Cursor, Loops, clientStream } = require("../lib/stream.js");
// How a batch counts: the core's numbers (its `Counting::KINDS`), as the addon gives them.
const { UNCOUNTED, REVOCABLE, KEPT } = require("../binding.js").__counterLayout();

/** A stream over a queue of what `pull` returns, with shared counters in a permuted layout. */
function harness({ end } = {}) {
  const layout = { EPOCH: 2, TAKEN: 0, BATCH_EPOCH: 1, TAKEN_BYTES: 3, BATCH_COUNTING: 4, STRIDE: 4, UNCOUNTED, REVOCABLE, KEPT };
  const buffer = new ArrayBuffer(20);
  const shared = new Int32Array(buffer);
  shared[layout.BATCH_COUNTING] = REVOCABLE;
  const queue = [];
  const log = { pulls: 0, stops: 0, leaves: 0 };
  const pull = () => {
    log.pulls++;
    const next = queue.shift();
    if (next instanceof Error) throw next;
    return next;
  };
  if (end) {
    const loops = new Loops(new Cursor(pull, buffer, layout), { end, leave: () => log.leaves++, idle: () => {} });
    return { loops, events: () => loops.iterator(), settle: () => loops.serve(), queue, shared, layout, log };
  }
  const stopped = (how, value) =>
    Object.assign(new Error(`stopped: ${how}`), { code: how === "deadline" ? "timeout" : "aborted", cause: value });
  const { events, settle } = clientStream(pull, () => log.stops++, stopped, buffer, layout);
  return { events, settle, queue, shared, layout, log };
}

const ev = (seq, size = 100) => [seq, "output", { turn: "t", text: `#${seq}` }, size];

test("a batch is pulled once and yielded event by event, each counted as taken", async () => {
  const h = harness();
  h.queue.push([...ev(1), ...ev(2), ...ev(3)]);
  const it = h.events();
  const got = [];
  for (let i = 0; i < 3; i++) got.push((await it.next()).value);
  assert.deepEqual(
    got,
    [1, 2, 3].map((seq) => ({ type: "event", seq, name: "output", data: { turn: "t", text: `#${seq}` } })),
  );
  assert.equal(h.log.pulls, 1);
  assert.equal(h.shared[h.layout.TAKEN], 3, "TAKEN is the running count, in its slot of the layout");
  assert.equal(h.shared[h.layout.TAKEN_BYTES], 300, "TAKEN_BYTES adds each event's frame size");
});

test("nothing buffered: next() waits, and settle() hands over what arrived", async () => {
  const h = harness();
  const it = h.events();
  const pending = it.next();
  const second = it.next();
  h.queue.push([...ev(7), ...ev(8)]);
  h.settle();
  assert.equal((await pending).value.seq, 7);
  assert.equal((await second).value.seq, 8);
});

test("the overflow report passes through; null ends the stream for good", async () => {
  const h = harness();
  h.queue.push({ type: "overflow", dropped: 12 }, null);
  const it = h.events();
  assert.deepEqual(await it.next(), { value: { type: "overflow", dropped: 12 }, done: false });
  assert.deepEqual(await it.next(), { value: undefined, done: true });
  assert.equal((await it.next()).done, true);
  assert.equal((await h.events().next()).done, true, "a new loop over an ended stream ends at once");
});

test("an overflow revokes the rest of a revocable batch", async () => {
  const h = harness();
  h.shared[h.layout.BATCH_EPOCH] = 4;
  h.shared[h.layout.EPOCH] = 4;
  h.queue.push([...ev(1), ...ev(2), ...ev(3)]);
  const it = h.events();
  assert.equal((await it.next()).value.seq, 1);
  h.shared[h.layout.EPOCH] = 5; // the core overflowed: the rest of the batch is void
  h.queue.push({ type: "overflow", dropped: 300 });
  assert.deepEqual((await it.next()).value, { type: "overflow", dropped: 300 });
  assert.equal(h.shared[h.layout.TAKEN], 1, "revoked events are not counted as taken");
});

test("a kept batch is handed out whole across an overflow, uncounted after it; an uncounted one never counts", async () => {
  const h = harness({ end: () => Promise.resolve({ value: undefined, done: true }) });
  h.shared[h.layout.BATCH_COUNTING] = KEPT;
  h.queue.push([...ev(1), ...ev(2), ...ev(3)]);
  const it = h.events();
  assert.equal((await it.next()).value.seq, 1);
  h.shared[h.layout.EPOCH] = 1; // an overflow
  assert.equal((await it.next()).value.seq, 2, "kept: still handed out");
  assert.equal((await it.next()).value.seq, 3);
  assert.equal(h.shared[h.layout.TAKEN], 1, "only the event taken before the overflow counted");
  h.shared[h.layout.BATCH_COUNTING] = UNCOUNTED;
  h.shared[h.layout.BATCH_EPOCH] = 1;
  h.queue.push([...ev(4), ...ev(5)]);
  assert.equal((await it.next()).value.seq, 4);
  assert.equal(h.shared[h.layout.TAKEN], 1, "uncounted");
});

test("a loop that leaves counts the rest of its batch as taken, and they stay for the next loop", async () => {
  const h = harness({ end: () => Promise.resolve({ value: undefined, done: true }) });
  h.shared[h.layout.BATCH_COUNTING] = KEPT;
  h.queue.push([...ev(1), ...ev(2), ...ev(3)], null);
  const first = h.events();
  assert.equal((await first.next()).value.seq, 1);
  await first.return();
  h.loops.cursor.release();
  assert.equal(h.log.leaves, 1);
  assert.equal(h.shared[h.layout.TAKEN], 3, "the rest no longer count");
  const rest = [];
  for await (const item of { [Symbol.asyncIterator]: () => h.events() }) rest.push(item.seq);
  assert.deepEqual(rest, [2, 3]);
  assert.equal(h.shared[h.layout.TAKEN], 3, "and are not counted twice");
});

test("a throwing pull rejects the call and every waiter", async () => {
  const h = harness();
  const it = h.events();
  const a = it.next();
  const b = it.next();
  h.queue.push(Object.assign(new Error("fatal"), { code: "protocol_error" }));
  h.settle();
  for (const p of [a, b]) await assert.rejects(p, { code: "protocol_error" });
});

test("two loops over events(): leaving one ends that one only; the next event stays for the other", async () => {
  const h = harness();
  const a = h.events();
  const b = h.events();
  const waitingA = a.next();
  const waitingB = b.next();
  assert.deepEqual(await a.return(), { value: undefined, done: true });
  assert.deepEqual(await waitingA, { value: undefined, done: true });
  assert.equal(h.log.stops, 0, "a loop still waits: the addon keeps waiting");
  h.queue.push([...ev(1), ...ev(2)]);
  h.settle();
  assert.equal((await waitingB).value.seq, 1);
  assert.equal((await b.next()).value.seq, 2);
  await b.return();
  assert.equal(h.log.stops > 0, true, "no loop waits: the addon is told");
});

test("a stream's end can settle as something else: a Turn's loop ends as its result does", async () => {
  const failure = Object.assign(new Error("aborted"), { code: "aborted" });
  const h = harness({ end: () => Promise.reject(failure) });
  h.queue.push([...ev(1)], null);
  const it = h.events();
  assert.equal((await it.next()).value.seq, 1, "the events first");
  await assert.rejects(it.next(), failure);
});

test("stack traces through the iterator name its source", async (t) => {
  const c = simClient(t, { faults: "log_line" });
  const e = await c.state().catch((err) => err);
  assert.equal(e.code, "delivery_unknown");
  let fatal;
  try {
    for await (const _ of c.events());
  } catch (err) {
    fatal = err;
  }
  assert.equal(fatal.code, "protocol_error");
  assert.match(fatal.stack, /lib[\\/]stream\.js/);
});
