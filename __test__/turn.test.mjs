// The turn layer (client.turn(), client.run()) through koma-sim: plain, read
// and approval turns, handlers, abort and deadline, mode "interrupt", an
// overflow during a turn, and the one event queue shared with events().
import { test } from "node:test";
import assert from "node:assert/strict";
import { simClient, rejection } from "./helpers.mjs";

const names = (items) => items.map((i) => (i.type === "event" ? i.name : i.type));

async function drain(iterable) {
  const items = [];
  for await (const item of iterable) items.push(item);
  return items;
}

test("run(): a plain turn in one call", async (t) => {
  const c = simClient(t);
  await c.create({});
  const r = await c.run({ text: "hello" }, { onApproval: "deny" });
  assert.equal(r.status, "completed");
  assert.match(r.turn, /^t-\d+$/);
  assert.equal(r.output, `Sim reply (sim-1, ${r.turn}): you said "hello". No tools were needed. Done.`);
  assert.deepEqual(r.toolCalls, []);
  assert.equal(r.events, 9, "turn_started, state, six outputs, turn_finished");
  assert.equal(r.overflowed, false);
  assert.equal((await c.state()).status, "idle");
});

test("run(): a read turn records its tool call and result", async (t) => {
  const c = simClient(t);
  await c.create({});
  const r = await c.run({ text: "read src/lib.rs" }, { onApproval: "deny" });
  assert.equal(r.status, "completed");
  assert.equal(r.toolCalls.length, 1);
  const [call] = r.toolCalls;
  assert.equal(call.tool, "read_file");
  assert.deepEqual(call.input, { path: "src/lib.rs" });
  assert.match(call.output, /simulated contents of src\/lib\.rs/);
  assert.equal(call.error, false);
  assert.equal(call.approval, undefined, "no approval was asked");
});

for (const [policy, decision, output] of [
  ["allow", "allow", /^wrote \d+ bytes to notes\.txt$/],
  ["deny", "deny", /^the user denied writing notes\.txt$/],
]) {
  test(`run(): approvals by the string policy "${policy}"`, async (t) => {
    const c = simClient(t);
    await c.create({});
    const r = await c.run({ text: "fix notes.txt" }, { onApproval: policy });
    assert.equal(r.status, "completed");
    const [call] = r.toolCalls;
    assert.equal(call.tool, "write_file");
    assert.equal(call.approval, decision);
    assert.match(call.output, output);
    assert.equal(call.error, decision === "deny");
  });
}

test("run(): an async handler may take its time; the turn waits for it", async (t) => {
  const c = simClient(t);
  await c.create({});
  let release;
  const asked = [];
  const person = new Promise((r) => (release = r));
  const running = c.run(
    { text: "edit notes.txt" },
    {
      onApproval: async (request) => {
        asked.push(request);
        await person; // a person at a prompt
        return "allow";
      },
    },
  );
  while (asked.length === 0) await new Promise((r) => setImmediate(r));
  const st = await c.state();
  assert.equal(st.status, "waiting", "the agent waits for the answer");
  assert.equal(st.turn, asked[0].turn);
  assert.deepEqual(Object.keys(asked[0]).sort(), ["approval", "input", "tool", "turn"]);
  release();
  const r = await running;
  assert.equal(r.toolCalls[0].approval, "allow");
  assert.equal(r.status, "completed");
});

test("a handler that throws denies; the loop over the Turn throws invalid_params (cause: its error) after the turn's events", async (t) => {
  const c = simClient(t);
  await c.create({});
  const boom = new Error("the prompt crashed");
  const turn = c.turn(
    { text: "write notes.txt" },
    {
      onApproval: () => {
        throw boom;
      },
    },
  );
  const items = [];
  let thrown;
  try {
    for await (const item of turn) items.push(item);
  } catch (e) {
    thrown = e;
  }
  assert.ok(thrown, "a user who only loops over the Turn sees the failure");
  assert.equal(thrown.code, "invalid_params");
  assert.equal(thrown.cause, boom);
  assert.match(thrown.message, /`onApproval` failed, so the approval was denied: the prompt crashed/);
  assert.equal(names(items).at(-1), "turn_finished", "after the turn ran to its end");
  const denied = items.find((i) => i.name === "tool_result");
  assert.equal(denied.data.error, true, "the approval was denied");
  assert.equal(await rejection(turn.result), thrown, "the result rejects with the same error");
  assert.equal((await c.state()).status, "idle");
});

test("a handler that answers something else denies, and the loop and the result fail with invalid_params", async (t) => {
  const c = simClient(t);
  await c.create({});
  const e = await rejection(c.run({ text: "fix notes.txt" }, { onApproval: async () => "yes" }));
  assert.equal(e.code, "invalid_params");
  assert.match(e.message, /`onApproval` returned "yes"; it must return "allow" or "deny"/);
  const rejecting = c.turn({ text: "fix notes.txt" }, { onApproval: () => Promise.reject(new Error("no prompt")) });
  const thrown = await rejection(
    (async () => {
      for await (const _ of rejecting);
    })(),
  );
  assert.equal(thrown.code, "invalid_params");
  assert.equal(thrown.cause.message, "no prompt");
});

test('a handler\'s answer is judged as it was returned: a String object or "Allow" is no decision', async (t) => {
  const c = simClient(t);
  await c.create({});
  const cased = await rejection(c.run({ text: "fix notes.txt" }, { onApproval: () => "Allow" }));
  assert.equal(cased.code, "invalid_params");
  assert.match(cased.message, /`onApproval` returned "Allow"; it must return "allow" or "deny"/);
  assert.equal(cased.cause, undefined, "it returned: nothing was thrown");
  const boxed = await rejection(c.run({ text: "fix notes.txt" }, { onApproval: () => new String("allow") }));
  assert.equal(boxed.code, "invalid_params");
  const allowed = await c.run({ text: "fix notes.txt" }, { onApproval: async () => "allow" });
  assert.equal(allowed.status, "completed");
});

test("a turn the client refuses at once fails its id and its result with the error, and the result is empty", async (t) => {
  const c = simClient(t);
  await c.create({});
  await c.close();
  const turn = c.turn({ text: "hello" });
  const e = await rejection(turn.id);
  assert.equal(e.code, "closed");
  assert.equal(await rejection(turn.result), e);
  assert.deepEqual(e.result, { turn: null, status: "unknown", output: "", toolCalls: [], events: 0, overflowed: false });
});

test("turn() without onApproval yields approval_requested and the application answers", async (t) => {
  const c = simClient(t);
  await c.create({});
  const turn = c.turn({ text: "fix notes.txt" });
  const seen = [];
  for await (const item of turn) {
    seen.push(item);
    if (item.name === "approval_requested") await c.approve({ approval: item.data.approval, decision: "allow" });
  }
  assert.ok(names(seen).includes("approval_requested"));
  const r = await turn.result;
  assert.equal(r.status, "completed");
  assert.match(r.toolCalls[0].output, /^wrote /);
});

test("a Turn nobody reads, without onApproval, does not wait forever: its approval is denied", async (t) => {
  const c = simClient(t);
  await c.create({});
  const turn = c.turn({ text: "fix notes.txt" });
  const r = await turn.result;
  assert.equal(r.status, "completed");
  assert.equal(r.toolCalls[0].approval, "deny");
  assert.equal(r.toolCalls[0].error, true);
});

for (const how of ["abort", "timeout"]) {
  test(`${how}: the agent is really interrupted; the loop and the result fail with ${how === "abort" ? "aborted" : "timeout"} after turn_finished`, async (t) => {
    const c = simClient(t);
    await c.create({});
    const ac = new AbortController();
    const options = how === "abort" ? { signal: ac.signal } : { timeout: 50 };
    const turn = c.turn({ text: "fix notes.txt" }, options); // waits on an approval nobody answers
    const seen = [];
    const thrown = await rejection(
      (async () => {
        for await (const item of turn) {
          seen.push(item);
          if (item.name === "approval_requested" && how === "abort") ac.abort();
        }
      })(),
    );
    const e = await rejection(turn.result);
    assert.equal(e.code, how === "abort" ? "aborted" : "timeout");
    assert.equal(thrown, e, "a loop ends the way the result settles: it throws the same error");
    const finished = seen.find((i) => i.name === "turn_finished");
    assert.equal(finished.data.status, "interrupted", "turn_finished came first");
    assert.equal(e.result.status, "interrupted");
    const st = await c.state();
    assert.equal(st.status, "idle");
    assert.equal(st.turn, null, "the agent stopped");
  });
}

test("an aborted signal before the call writes nothing", async (t) => {
  const c = simClient(t);
  await c.create({});
  const e = await rejection(c.run({ text: "hello" }, { onApproval: "allow", signal: AbortSignal.abort() }));
  assert.equal(e.code, "aborted");
  const { turn } = await c.submit({ text: "next" });
  assert.equal(turn, "t-1", "no turn was started before");
});

test("run() without onApproval is invalid_params, and nothing is written", async (t) => {
  const c = simClient(t);
  await c.create({});
  for (const options of [undefined, {}, { onApproval: "maybe" }, { onApproval: "allow", mode: "later" }]) {
    const e = await rejection(c.run({ text: "hello" }, options));
    assert.equal(e.code, "invalid_params", JSON.stringify(options));
  }
  const e = await rejection(c.run({ txt: "hello" }, { onApproval: "allow" }));
  assert.equal(e.code, "invalid_params");
  assert.equal((await c.state()).turn, null, "no turn started");
  assert.equal((await c.submit({ text: "next" })).turn, "t-1");
});

test('mode "interrupt" while a turn runs: the first is interrupted, the second runs', async (t) => {
  const c = simClient(t);
  await c.create({});
  const first = c.turn({ text: "fix notes.txt" }); // waits on its approval
  const firstItems = [];
  const reading = (async () => {
    for await (const item of first) {
      firstItems.push(item);
      if (item.name === "approval_requested") {
        const busy = await rejection(c.run({ text: "second" }, { onApproval: "allow" }));
        assert.equal(busy.code, "remote");
        assert.equal(busy.remote.code, "busy");
        const second = await c.run({ text: "second" }, { onApproval: "allow", mode: "interrupt" });
        assert.equal(second.status, "completed");
        assert.match(second.output, /you said "second"/);
      }
    }
  })();
  await reading;
  const r = await first.result;
  assert.equal(r.status, "interrupted");
  assert.equal(names(firstItems).at(-1), "turn_finished");
});

test("turn.interrupt() stops this turn if it still runs", async (t) => {
  const c = simClient(t);
  await c.create({});
  const turn = c.turn({ text: "fix notes.txt" });
  for await (const item of turn) if (item.name === "approval_requested") await turn.interrupt();
  assert.equal((await turn.result).status, "interrupted");
  await turn.interrupt(); // finished: nothing is written
  assert.equal((await c.state()).status, "idle");
});

test("an overflow during a turn: the Turn reports it, and its result says so", async (t) => {
  const c = simClient(t, { faults: "event_flood" }); // 2,000 outputs before submit's answer
  await c.create({});
  const turn = c.turn({ text: "hello" });
  const items = await drain(turn);
  const report = items.find((i) => i.type === "overflow");
  assert.ok(report && report.dropped > 0, "the Turn yields the overflow report");
  const r = await turn.result;
  assert.equal(r.overflowed, true);
  assert.ok(["completed", "unknown"].includes(r.status), r.status);
  // The client goes on, and the queue is not paused any more.
  assert.equal((await c.run({ text: "again" }, { onApproval: "allow" })).status, "completed");
});

test("a failing client fails the turn with its error", async (t) => {
  const c = simClient(t, { faults: "kill_mid_request" });
  await c.create({}).catch(() => {});
  const e = await rejection(c.run({ text: "hello" }, { onApproval: "allow" }));
  assert.equal(e.code, "transport_failure");
});

/** A small PRNG, so a failing seed can be replayed. */
function rng(seed) {
  let s = seed >>> 0;
  return () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
}

test("events() beside Turns: over random sessions, every event reaches exactly one of them", { timeout: 120000 }, async (t) => {
  for (let session = 0; session < 12; session++) {
    const seed = 1000 + session;
    const rand = rng(seed);
    const c = simClient(t);
    const seenByEvents = [];
    const seenByTurns = [];
    const reader = (async () => {
      for await (const item of c.events()) {
        if (item.type === "event") seenByEvents.push(item.seq);
        // a slow reader, sometimes
        if (rand() < 0.1) await new Promise((r) => setImmediate(r));
      }
    })();
    await c.create({});
    // The agent's own pace (queued turns run on their own): ask it.
    const idle = async () => {
      while ((await c.state()).status !== "idle") await new Promise((r) => setImmediate(r));
    };
    for (let step = 0; step < 8; step++) {
      await idle();
      const pick = rand();
      if (pick < 0.35) {
        const r = c.turn({ text: rand() < 0.5 ? "fix notes.txt" : "read a.md" }, { onApproval: rand() < 0.5 ? "allow" : "deny" });
        for await (const item of r) if (item.type === "event") seenByTurns.push(item.seq);
        await r.result;
      } else if (pick < 0.55) {
        const r = c.turn({ text: "hello" }, { onApproval: "allow" });
        await r.result; // nobody iterates: its events still are its own
        for await (const item of r) if (item.type === "event") seenByTurns.push(item.seq);
      } else if (pick < 0.7) {
        await c.enqueue({ text: "queued read a.md" }); // a turn nobody opened: its events go to events()
        await c.configure({ model: `m-${step}` });
      } else if (pick < 0.85) {
        await c.configure({});
      } else {
        await c.submit({ text: "plain" }); // by hand: events() gets it
      }
    }
    await idle();
    await c.detach();
    await reader;
    const all = [...seenByEvents, ...seenByTurns].sort((a, b) => a - b);
    const first = all[0];
    for (let i = 0; i < all.length; i++) {
      assert.equal(all[i], first + i, `seed ${seed}: seq ${first + i} ${all[i] < first + i ? "delivered twice" : "lost"}`);
    }
    assert.ok(seenByTurns.length > 0 || seenByEvents.length > 0);
  }
});

test("an aborted run() keeps the signal's reason as cause and what the turn got so far as err.result", async (t) => {
  const c = simClient(t);
  await c.create({});
  const why = new Error("the user pressed Escape");
  const ac = new AbortController();
  const e = await rejection(
    c.run(
      { text: "fix notes.txt" },
      {
        signal: ac.signal,
        onApproval: () => {
          ac.abort(why); // while the agent waits for this answer
          return new Promise(() => {});
        },
      },
    ),
  );
  assert.equal(e.code, "aborted");
  assert.equal(e.cause, why);
  assert.equal(e.result.status, "interrupted", "the agent was interrupted and its turn_finished came");
  assert.match(e.result.turn, /^t-\d+$/);
  assert.equal(e.result.toolCalls.length, 1);
  assert.equal(e.result.toolCalls[0].tool, "write_file");
  assert.equal(typeof e.result.output, "string");
  assert.ok(e.result.events >= 3);
  assert.equal((await c.state()).status, "idle");
});

test("a turn whose signal is AbortSignal.timeout() fails with timeout, the TimeoutError as cause", async (t) => {
  const c = simClient(t);
  await c.create({});
  const turn = c.turn({ text: "fix notes.txt" }, { signal: AbortSignal.timeout(50), onApproval: () => new Promise(() => {}) });
  const e = await rejection(turn.result);
  assert.equal(e.code, "timeout", e.message);
  assert.equal(e.cause?.name, "TimeoutError");
  assert.equal(e.result.status, "interrupted");
  const timed = await rejection(c.run({ text: "fix notes.txt" }, { timeout: 50, onApproval: () => new Promise(() => {}) }));
  assert.equal(timed.code, "timeout");
  assert.equal(timed.result.toolCalls[0].tool, "write_file", "the `timeout` option keeps the result so far too");
});

test("break out of a Turn's loop interrupts the turn; its result settles with koma's status", { timeout: 30000 }, async (t) => {
  const c = simClient(t);
  await c.create({});
  const turn = c.turn({ text: "fix notes.txt" }); // waits on an approval the loop does not answer
  let asked;
  for await (const item of turn) {
    if (item.name === "approval_requested") {
      asked = item;
      break;
    }
  }
  assert.ok(asked, "the loop saw the approval request");
  const r = await turn.result;
  assert.equal(r.status, "interrupted", "koma's turn_finished says it was interrupted");
  const st = await c.state();
  assert.equal(st.status, "idle");
  assert.equal(st.turn, null, "the agent really stopped");
  // A loop that runs to the end interrupts nothing.
  const whole = c.turn({ text: "hello" }, { onApproval: "deny" });
  for await (const _ of whole);
  assert.equal((await whole.result).status, "completed");
});
