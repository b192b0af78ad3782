// The iterator's JavaScript (src/events.js) against a fake `pull`: one pull
// per batch, the shared counters, overflow revoking a batch, waiting, errors
// and return(). The same source the binding compiles, run here with vm.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import vm from "node:vm";
import { root, simClient } from "./helpers.mjs";

const makeStream = vm.runInThisContext(readFileSync(join(root, "src", "events.js"), "utf8"), { filename: "events.js" });

/** A stream over a queue of what `pull` returns, with shared counters in a permuted layout. */
function harness() {
  const layout = { EPOCH: 2, TAKEN: 0, BATCH_EPOCH: 1 };
  const buffer = new ArrayBuffer(12);
  const shared = new Int32Array(buffer);
  const queue = [];
  const log = { pulls: 0, stops: 0 };
  const pull = () => {
    log.pulls++;
    const next = queue.shift();
    if (next instanceof Error) throw next;
    return next;
  };
  const { stream, settle } = makeStream(pull, () => log.stops++, buffer, layout);
  return { stream, settle, queue, shared, layout, log };
}

const ev = (seq) => [seq, "output", { turn: "t", text: `#${seq}` }];

test("a batch is pulled once and yielded event by event, each counted as taken", async () => {
  const h = harness();
  h.queue.push([...ev(1), ...ev(2), ...ev(3)]);
  const got = [];
  for (let i = 0; i < 3; i++) got.push((await h.stream.next()).value);
  assert.deepEqual(got, [1, 2, 3].map((seq) => ({ type: "event", seq, name: "output", data: { turn: "t", text: `#${seq}` } })));
  assert.equal(h.log.pulls, 1);
  assert.equal(h.shared[h.layout.TAKEN], 3, "TAKEN is the running count, in its slot of the layout");
});

test("nothing buffered: next() waits, and settle() hands over what arrived", async () => {
  const h = harness();
  const pending = h.stream.next();
  const second = h.stream.next();
  h.queue.push([...ev(7), ...ev(8)]);
  h.settle();
  assert.deepEqual((await pending).value.seq, 7);
  assert.deepEqual((await second).value.seq, 8);
});

test("the overflow report passes through; null ends the stream for good", async () => {
  const h = harness();
  h.queue.push({ type: "overflow", dropped: 12 }, null);
  assert.deepEqual(await h.stream.next(), { value: { type: "overflow", dropped: 12 }, done: false });
  assert.deepEqual(await h.stream.next(), { value: undefined, done: true });
  h.queue.push(null);
  assert.equal((await h.stream.next()).done, true);
});

test("an overflow revokes the rest of the batch being yielded", async () => {
  const h = harness();
  h.shared[h.layout.BATCH_EPOCH] = 4;
  h.shared[h.layout.EPOCH] = 4;
  h.queue.push([...ev(1), ...ev(2), ...ev(3)]);
  assert.equal((await h.stream.next()).value.seq, 1);
  h.shared[h.layout.EPOCH] = 5; // the reader overflowed: the batch is void
  h.queue.push({ type: "overflow", dropped: 300 });
  assert.deepEqual((await h.stream.next()).value, { type: "overflow", dropped: 300 });
  assert.equal(h.shared[h.layout.TAKEN], 1, "revoked events are not counted as taken");
});

test("a throwing pull rejects the call and every waiter", async () => {
  const h = harness();
  const a = h.stream.next();
  const b = h.stream.next();
  h.queue.push(Object.assign(new Error("fatal"), { code: "protocol_error" }));
  h.settle();
  for (const p of [a, b]) await assert.rejects(p, { code: "protocol_error" });
  h.queue.push(Object.assign(new Error("again"), { code: "protocol_error" }));
  await assert.rejects(h.stream.next(), { message: "again" });
});

test("return() ends the waiting calls and tells the addon to stop waiting", async () => {
  const h = harness();
  const waiting = h.stream.next();
  assert.deepEqual(await h.stream.return(), { value: undefined, done: true });
  assert.deepEqual(await waiting, { value: undefined, done: true });
  assert.equal(h.log.stops, 1);
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
  assert.match(fatal.stack, /@koma\/sdk\/events\.js/);
});
