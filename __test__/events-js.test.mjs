// The event queue's JavaScript (src/events.js) and the turn layer
// (src/turn.js) against a fake `pull` and a fake client: one pull per batch,
// the shared counters, overflow revoking a batch, waiting, errors, return(),
// and what a Turn takes from the queue and when it counts as taken. The same
// sources the binding compiles, run here with vm; the turn layer gets a fake
// `send` (the call layer's) and the queue's router, as the addon gives it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import vm from "node:vm";
import { root, simClient } from "./helpers.mjs";

const makeStream = vm.runInThisContext(readFileSync(join(root, "src", "events.js"), "utf8"), { filename: "events.js" });
const turnLayer = vm.runInThisContext(readFileSync(join(root, "src", "turn.js"), "utf8"), { filename: "turn.js" });

/** A stream over a queue of what `pull` returns, with shared counters in a permuted layout. */
function harness() {
  const layout = { EPOCH: 2, TAKEN: 0, BATCH_EPOCH: 1, TAKEN_BYTES: 3, STRIDE: 4 };
  const buffer = new ArrayBuffer(16);
  const shared = new Int32Array(buffer);
  const queue = [];
  const log = { pulls: 0, stops: 0 };
  const pull = () => {
    log.pulls++;
    const next = queue.shift();
    if (next instanceof Error) throw next;
    return next;
  };
  const { stream, settle, router } = makeStream(pull, () => log.stops++, buffer, layout);
  return { stream, settle, router, queue, shared, layout, log };
}

const ev = (seq, turn = "t", name = "output", size = 100) => [seq, name, name === "state" ? { turn } : { turn, text: `#${seq}` }, size];

test("a batch is pulled once and yielded event by event, each counted as taken", async () => {
  const h = harness();
  h.queue.push([...ev(1), ...ev(2), ...ev(3)]);
  const got = [];
  for (let i = 0; i < 3; i++) got.push((await h.stream.next()).value);
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
  const pulls = h.log.pulls;
  await assert.rejects(h.stream.next(), { message: "fatal" }, "every later call: the same fatal error");
  assert.equal(h.log.pulls, pulls, "without asking the addon again");
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

/** The call layer as the turn layer sees it (`send`): submit answers `t-1` when told to. */
function fakeSend() {
  const calls = [];
  let answerSubmit;
  const answers = {
    submit: () => new Promise((r) => (answerSubmit = r)),
    interrupt_and_submit: () => new Promise((r) => (answerSubmit = r)),
    approve: () => Promise.resolve({}),
    interrupt: () => Promise.resolve({ turn: "t-1" }),
    state: () => Promise.resolve({ turn: "t-1", status: "running" }),
  };
  const send = (method, params) => {
    calls.push(params === undefined ? [method] : [method, params]);
    return answers[method]();
  };
  return { calls, send, answer: (turn) => answerSubmit({ turn }) };
}

const tick = () => new Promise((r) => setImmediate(r));

test("a Turn's events count against the bound until its reader takes them; the rest stay for events()", async () => {
  const h = harness();
  const client = fakeSend();
  const turn = turnLayer.makeTurn(client.send, h.router, { text: "hi" }, { mode: "submit" });
  const reader = turn[Symbol.asyncIterator]();
  // Before submit answers, nothing is routed (whose would they be?).
  h.queue.push([...ev(1, "t-1", "turn_started"), ...ev(2, "t-1", "state"), ...ev(3, "t-1"), ...ev(4, "t-0", "output", 40)]);
  h.settle();
  assert.equal(h.shared[h.layout.TAKEN], 0);
  client.answer("t-1");
  await tick();
  assert.equal(h.shared[h.layout.TAKEN], 0, "routed to the Turn, held there, not yet taken");
  assert.equal((await reader.next()).value.seq, 1);
  assert.equal(h.shared[h.layout.TAKEN], 1);
  assert.equal(h.shared[h.layout.TAKEN_BYTES], 100);
  // t-0's output is not the Turn's: events() gets it, and counts it then.
  const mine = await h.stream.next();
  assert.equal(mine.value.seq, 4);
  assert.equal(h.shared[h.layout.TAKEN], 2);
  assert.equal(h.shared[h.layout.TAKEN_BYTES], 140);
  h.queue.push([...ev(5, "t-1", "turn_finished"), ...ev(6, null, "state")]);
  h.settle();
  await tick();
  const rest = [];
  for await (const item of { [Symbol.asyncIterator]: () => reader }) rest.push(item.seq);
  assert.deepEqual(rest, [2, 3, 5]);
  assert.equal(h.shared[h.layout.TAKEN], 5);
  const r = await turn.result;
  assert.equal(r.events, 4);
  assert.equal(r.turn, "t-1");
  assert.equal((await h.stream.next()).value.seq, 6, "the idle state after the turn is events()'s");
  assert.deepEqual(client.calls, [["submit", { text: "hi" }]]);
});

test("a Turn nobody reads stops counting its events once its turn has finished", async () => {
  const h = harness();
  const client = fakeSend();
  const turn = turnLayer.makeTurn(client.send, h.router, { text: "hi" }, { mode: "submit" });
  client.answer("t-1");
  await tick();
  h.queue.push([...ev(1, "t-1", "turn_started"), ...ev(2, "t-1")]);
  h.settle();
  await tick();
  assert.equal(h.shared[h.layout.TAKEN], 0, "held for a reader that may come");
  h.queue.push([...ev(3, "t-1", "turn_finished")]);
  h.settle();
  await tick();
  assert.equal(h.shared[h.layout.TAKEN], 3, "finished and unread: no longer counted");
  assert.equal((await turn.result).events, 3);
  const late = [];
  for await (const item of turn) late.push(item.seq);
  assert.deepEqual(late, [1, 2, 3], "a late reader still gets them");
  assert.equal(h.shared[h.layout.TAKEN], 3, "and they are not counted twice");
});
