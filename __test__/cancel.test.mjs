// Cancellation and deadlines free the pending slot at once; the late answer is ignored.
import { test } from "node:test";
import assert from "node:assert/strict";
import { notOnWindows, simClient, rejection } from "./helpers.mjs";

test("an aborted or timed-out call frees its pending slot at once", { timeout: 30000 }, async (t) => {
  const client = simClient(t, { faults: "never_answer" });
  await client.probe();
  const controllers = Array.from({ length: 64 }, () => new AbortController());
  const pending = controllers.map((ac) => client.state({ signal: ac.signal }));
  assert.equal((await rejection(client.state())).code, "too_many_pending");
  controllers[0].abort();
  assert.equal((await rejection(pending[0])).code, "aborted");
  // The slot is free: this call is written (and then times out), not refused.
  assert.equal((await rejection(client.state({ timeout: 50 }))).code, "timeout");
  // And the timeout freed it again.
  const again = new AbortController();
  const last = client.state({ signal: again.signal });
  assert.equal((await rejection(client.state())).code, "too_many_pending");
  again.abort();
  assert.equal((await rejection(last)).code, "aborted");
  for (const ac of controllers) ac.abort();
  for (const p of pending.slice(1)) assert.equal((await rejection(p)).code, "aborted");
});

test("a late answer to an aborted call is ignored; the next call gets its own answer", {
  timeout: 30000,
  skip: notOnWindows("koma-sim's `hold` releases its answers on SIGUSR1, and Windows has no signals: koma-sim.exe refuses it"),
}, async (t) => {
  const client = simClient(t, { faults: "hold" });
  const held = async (n) => {
    // The sim says on stderr how many answers it holds (an outside process: polled, bounded).
    for (let i = 0; i < 400 && !client.stderr.includes(`(${n} held)`); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(client.stderr.includes(`(${n} held)`), client.stderr);
  };
  const created = client.create({});
  await held(1);
  process.kill(client.pid, "SIGUSR1");
  await created;
  const ac = new AbortController();
  const first = client.configure({ model: "first" }, { signal: ac.signal });
  ac.abort();
  assert.equal((await rejection(first)).code, "aborted");
  const second = client.configure({ model: "second" });
  await held(2);
  process.kill(client.pid, "SIGUSR1"); // the sim sends every held answer, the aborted one too
  assert.equal((await second).model, "second");
});

test("an aborted call keeps its signal's reason as cause; AbortSignal.timeout() is reported as timeout", { timeout: 30000 }, async (t) => {
  const client = simClient(t, { faults: "never_answer" });
  await client.probe();
  const why = new Error("the user left");
  const ac = new AbortController();
  const written = client.state({ signal: ac.signal });
  ac.abort(why);
  const aborted = await rejection(written);
  assert.equal(aborted.code, "aborted");
  assert.equal(aborted.cause, why);
  const timedOut = await rejection(client.state({ signal: AbortSignal.timeout(20) }));
  assert.equal(timedOut.code, "timeout", timedOut.message);
  assert.equal(timedOut.cause?.name, "TimeoutError");
  // Already aborted: rejected at once, nothing written, the reason kept.
  const before = await rejection(client.submit({ text: "never sent" }, { signal: AbortSignal.abort(why) }));
  assert.equal(before.code, "aborted");
  assert.equal(before.cause, why);
  const defaultReason = new AbortController();
  defaultReason.abort();
  const plain = await rejection(client.state({ signal: defaultReason.signal }));
  assert.equal(plain.code, "aborted", "abort() without a reason gives an AbortError reason");
  assert.equal(plain.cause?.name, "AbortError");
});
