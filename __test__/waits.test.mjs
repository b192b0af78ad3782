// Every wait a user bounds ends, whatever koma does: a turn stopped by its
// deadline or its signal settles once koma has finished it and answered the
// interrupt, or the core's grace after the stop (docs/semantics.md,
// "Stopping a turn"); a loop over events(), close() and a method's own
// timeout end by their deadline. Each against a hung koma (koma-sim's
// stop_answering). How long the grace is, to the millisecond, is the core's
// test (crates/koma-transport/src/connection/timers.rs, under a paused
// clock); here the wiring: the interrupt was written (koma-sim's record), and
// the error, with its words and the partial result, came through.
// Also: a Turn's errors carry the caller's stack, util.inspect(turn), and a
// Turn whose failure nobody looked at.
import { test } from "node:test";
import assert from "node:assert/strict";
import { inspect } from "node:util";
import { join } from "node:path";
import { createRequire } from "node:module";
import { SIM, root, rejection } from "./helpers.mjs";

const { fakeKoma, step } = createRequire(import.meta.url)(join(root, "testing.js"));

const BOUND = { timeout: 60_000 };
/** Slack on a busy machine for a call's own deadline: asserted as an upper bound only (a hang guard). */
const SLACK = 5000;

/** A koma that sends one output of its turn, then answers and sends nothing more. */
const HUNG = { turns: [{ times: "always", steps: [step.output("a"), step.stopAnswering()] }] };

const fake = (t, scenario = HUNG) => fakeKoma(t, scenario, { executable: SIM });

/** How long `promise` takes to settle, and how: [ms, error or undefined]. */
async function timed(promise) {
  const started = performance.now();
  const error = await promise.then(
    () => undefined,
    (e) => e,
  );
  return [performance.now() - started, error];
}

/** Started once its submit is answered: koma then plays the turn's steps. */
async function hungTurnOf(client) {
  await client.create({});
}

test(
  "run({ timeout }) against a hung koma: the interrupt is written, and it rejects with timeout once the grace passed, with the partial result",
  BOUND,
  async (t) => {
    const koma = fake(t);
    await hungTurnOf(koma.client);
    // A deadline long enough for koma's one output to come first on a busy machine.
    const err = await rejection(koma.client.run({ text: "go" }, { onApproval: "deny", timeout: 1000 }));
    assert.equal(err?.code, "timeout", err?.stack);
    assert.match(err.message, /did not finish within 1000 ms; the agent was interrupted/);
    assert.match(err.message, /koma did not end the turn within 1000 ms of the stop: the turn was given up/);
    assert.equal(err.result.turn, "t-1");
    assert.equal(err.result.status, "unknown", "no turn_finished came");
    assert.equal(err.result.output, "a", "what it collected before");
    assert.deepEqual(
      koma.calls("interrupt").map((r) => r.params),
      [{}],
      "the interrupt was written once, before the grace gave the turn up",
    );
  },
);

test(
  "run({ signal }) against a hung koma: AbortSignal.timeout() gives timeout, abort() gives aborted, each bounded, the reason as cause",
  BOUND,
  async (t) => {
    const koma = fake(t);
    await hungTurnOf(koma.client);
    const err = await rejection(koma.client.run({ text: "one" }, { onApproval: "deny", signal: AbortSignal.timeout(300) }));
    assert.equal(err?.code, "timeout", err?.stack);
    assert.equal(err.cause?.name, "TimeoutError");
    assert.match(err.message, /the turn was given up/);
    assert.equal(err.result.output, "a", "the partial result came through");
    assert.equal(koma.calls("interrupt").length, 1, "the interrupt was written");
    // koma answers nothing now: a second run's submit is never answered either.
    const ac = new AbortController();
    const why = new Error("the user left");
    const running = timed(koma.client.run({ text: "two" }, { onApproval: "deny", signal: ac.signal }));
    setTimeout(() => ac.abort(why), 100);
    const [, err2] = await running;
    assert.equal(err2?.code, "aborted", err2?.stack);
    assert.equal(err2.cause, why);
    assert.equal(err2.result.turn, null, "its submit was never answered");
    assert.match(err2.message, /the turn was given up/);
  },
);

test("a turn() loop with a timeout against a hung koma throws timeout after the events it took, within the bound", BOUND, async (t) => {
  const koma = fake(t);
  await hungTurnOf(koma.client);
  const turn = koma.client.turn({ text: "go" }, { onApproval: "deny", timeout: 1000 });
  const items = [];
  const [, err] = await timed(
    (async () => {
      for await (const item of turn) items.push(item.name);
    })(),
  );
  assert.equal(err?.code, "timeout", err?.stack);
  assert.match(err.message, /the turn was given up/);
  assert.equal(err.result.output, "a");
  assert.equal(koma.calls("interrupt").length, 1, "the interrupt was written");
  assert.deepEqual(items, ["turn_started", "state", "output"]);
  assert.equal(await rejection(turn.result), err, "the loop throws the very error the result rejects with");
  assert.match(inspect(turn), /^Turn \{ id: 't-1', state: 'failed' \}$/);
});

test("events({ timeout }) and events({ signal }) against a hung koma end their loops within the bound", BOUND, async (t) => {
  const koma = fake(t);
  const c = koma.client;
  await c.create({});
  await c.submit({ text: "go" }); // its events go to events()
  const items = [];
  const [ms, err] = await timed(
    (async () => {
      for await (const item of c.events({ timeout: 300 })) items.push(item.name);
    })(),
  );
  assert.equal(err?.code, "timeout", err?.stack);
  assert.ok(ms < 300 + SLACK, `ended after ${ms} ms`);
  assert.match(err.message, /`events` ended: its timeout of 300 ms passed/);
  assert.deepEqual(items.slice(-3), ["turn_started", "state", "output"], "then nothing came");
  const [ms2, err2] = await timed(c.events({ signal: AbortSignal.timeout(300) }).next());
  assert.equal(err2?.code, "timeout", err2?.stack);
  assert.equal(err2.cause?.name, "TimeoutError");
  assert.ok(ms2 < 300 + SLACK, `ended after ${ms2} ms`);
});

test(
  "approve({ timeout }) and close({ timeout }) against a hung koma reject with timeout within their bound; the close goes on",
  BOUND,
  async (t) => {
    const koma = fake(t);
    const c = koma.client;
    await c.create({});
    await c.submit({ text: "go" });
    // The steps play after submit's answer: koma stops answering right after
    // its output, and an approve it reads before that is answered
    // (unknown_approval); then none is.
    for await (const item of c.events()) if (item.name === "output") break;
    let ms;
    let err;
    const giveUp = performance.now() + 10_000;
    do [ms, err] = await timed(c.approve({ approval: "a-1", decision: "allow" }, { timeout: 300 }));
    while (err?.code === "remote" && performance.now() < giveUp);
    assert.equal(err?.code, "timeout", err?.stack);
    assert.ok(ms < 300 + SLACK, `settled after ${ms} ms`);
    const [ms2, err2] = await timed(c.close({ timeout: 300 }));
    assert.equal(err2?.code, "timeout", err2?.stack);
    assert.ok(ms2 < 300 + SLACK, `settled after ${ms2} ms`);
    await c.close(); // bounded on its own: detach is ignored, the end of stdin ends koma-sim
    assert.equal(c.pid, null);
  },
);

test(
  "a turn given up by its grace: its later events go to events(), in order, once each; a late answer changes nothing",
  BOUND,
  async (t) => {
    // koma does not carry the interrupt out nor answer it (for a minute), and
    // its turn goes on once the application answers the approval by hand.
    const koma = fake(t, {
      turns: [{ steps: [step.output("a"), step.approval("write_file", { allow: { steps: [step.output("b")] } })] }],
      methods: [{ method: "interrupt", result: { turn: null }, delay_ms: 60_000 }],
    });
    const c = koma.client;
    await c.create({});
    const turn = c.turn({ text: "go" }, { timeout: 1000 });
    const items = [];
    let approval;
    const [, err] = await timed(
      (async () => {
        for await (const item of turn) {
          items.push(item.name);
          if (item.name === "approval_requested") approval = item.data.approval;
        }
      })(),
    );
    assert.equal(err?.code, "timeout", err?.stack);
    assert.match(err.message, /koma did not end the turn within 1000 ms of the stop: the turn was given up/);
    assert.equal(err.result.output, "a");
    assert.equal(koma.calls("interrupt").length, 1, "the interrupt was written");
    assert.deepEqual(items, ["turn_started", "state", "output", "tool_call", "approval_requested", "state"]);
    // The turn goes on in koma: its events are events()'s now.
    const later = [];
    const loop = (async () => {
      for await (const item of c.events()) {
        later.push(`${item.name}:${item.data.turn ?? ""}`);
        if (item.name === "turn_finished") break;
      }
    })();
    await c.approve({ approval, decision: "allow" });
    await loop;
    assert.deepEqual(
      later.filter((e) => !e.startsWith("diagnostic")),
      ["tool_result:t-1", "state:t-1", "output:t-1", "turn_finished:t-1"],
    );
    assert.equal((await c.state()).status, "idle", "the client goes on");
  },
);

test("a Turn's errors carry the stack of the code that awaits them: its result, its id, its loop", BOUND, async (t) => {
  const koma = fake(t, { turns: [], methods: [{ method: "submit", error: { code: "busy" } }] });
  await koma.client.create({});
  async function awaitTheResultOfABusyTurn() {
    return await rejection(koma.client.turn({ text: "x" }, { onApproval: "deny" }).result);
  }
  async function awaitTheIdOfABusyTurn() {
    return await rejection(koma.client.turn({ text: "x" }, { onApproval: "deny" }).id);
  }
  async function loopOverABusyTurn() {
    try {
      for await (const _ of koma.client.turn({ text: "x" }, { onApproval: "deny" }));
    } catch (e) {
      return e;
    }
  }
  for (const [f, name] of [
    [awaitTheResultOfABusyTurn, "awaitTheResultOfABusyTurn"],
    [awaitTheIdOfABusyTurn, "awaitTheIdOfABusyTurn"],
    [loopOverABusyTurn, "loopOverABusyTurn"],
  ]) {
    const e = await f();
    assert.equal(e?.code, "remote", String(e));
    assert.match(e.stack, /^KomaError: koma answered with error busy/);
    assert.match(e.stack, new RegExp(`at async ${name}`), e.stack);
  }
});

test("util.inspect(turn) shows its id and where it is, and nothing internal", BOUND, async (t) => {
  const koma = fake(t, { turns: [{ steps: [step.output("a"), step.pause()] }] });
  await koma.client.create({});
  const turn = koma.client.turn({ text: "go" }, { onApproval: "deny" });
  assert.equal(inspect(turn), "Turn { id: null, state: 'starting' }");
  await turn.id;
  assert.equal(inspect(turn), "Turn { id: 't-1', state: 'running' }");
  await turn.interrupt();
  await turn.result;
  assert.equal(inspect(turn), "Turn { id: 't-1', state: 'finished' }");
});

test(
  "a Turn whose failure nobody looked at is reported as an unhandled rejection of turn.result; one looked at is not",
  BOUND,
  async (t) => {
    const koma = fake(t, { turns: [], methods: [{ method: "submit", error: { code: "busy" } }] });
    await koma.client.create({});
    const reported = [];
    const onUnhandled = (reason, promise) => reported.push({ reason, promise });
    // node:test reports unhandled rejections as failures; this test takes them itself.
    const listeners = process.listeners("unhandledRejection");
    process.removeAllListeners("unhandledRejection");
    process.on("unhandledRejection", onUnhandled);
    t.after(() => {
      process.off("unhandledRejection", onUnhandled);
      for (const l of listeners) process.on("unhandledRejection", l);
    });
    const unread = koma.client.turn({ text: "nobody reads this" }, { onApproval: "deny" });
    const read = koma.client.turn({ text: "this one is read" }, { onApproval: "deny" });
    const loop = (async () => {
      for await (const _ of read);
    })().catch((e) => e);
    assert.equal((await loop)?.code, "remote");
    await koma.client.state(); // a turn of the event loop after both failed
    await new Promise((r) => setImmediate(r));
    assert.equal(reported.length, 1, reported.map((r) => String(r.reason)).join("; "));
    assert.equal(reported[0].reason.code, "remote");
    assert.equal(reported[0].promise, unread.result, "the rejection is turn.result's");
    assert.equal(await rejection(unread.result), reported[0].reason);
  },
);

test("turn() and run() after close() reject with closed at once; nothing starts again", BOUND, async (t) => {
  const koma = fake(t);
  const c = koma.client;
  await c.create({});
  await c.close();
  const [ms, err] = await timed(c.run({ text: "after close" }, { onApproval: "deny" }));
  assert.equal(err?.code, "closed", err?.stack);
  assert.ok(ms < SLACK, `settled after ${ms} ms`);
  const turn = c.turn({ text: "after close" }, { onApproval: "deny" });
  assert.equal((await rejection(turn.result)).code, "closed");
  assert.equal(inspect(turn), "Turn { id: null, state: 'failed' }");
  assert.equal(c.pid, null);
});
