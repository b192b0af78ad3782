// The package's errors (a KomaError class and a class per code, names, the
// caller's stack, a program's own), the
// options every method takes (events' signal and timeout, close's), one
// abort listener per signal, and what a refused create says.
import { test } from "node:test";
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { createRequire } from "node:module";
import { Client, alive, root, sdk, simClient, rejection } from "./helpers.mjs";

const { KomaError, isKomaError } = sdk;
/** [code, class name, name] of each code (generated from schema/protocol.schema.json). */
const { errors: CODES } = createRequire(import.meta.url)(`${root}/lib/surface.js`);

/** The error's class, the classes of codes it is an instance of, name and code, as one value to compare. */
const shape = (e) => ({
  instance: e instanceof KomaError,
  guard: isKomaError(e),
  isError: e instanceof Error,
  of: CODES.filter(([, cls]) => e instanceof sdk[cls]).map(([, cls]) => cls),
  name: e.name,
  code: e.code,
});

/** What an error of the package of `code` is: of its code's class (and no other's), named `name`. */
const koma = (name, code) => ({
  instance: true,
  guard: true,
  isError: true,
  of: CODES.filter(([c]) => c === code).map(([, cls]) => cls),
  name,
  code,
});

test("every error of the package is a KomaError, of the class of its code, named by what it is", { timeout: 30000 }, async (t) => {
  // Thrown by the constructor.
  let thrown;
  try {
    new Client({ executable: "" });
  } catch (e) {
    thrown = e;
  }
  assert.deepEqual(shape(thrown), koma("KomaError", "invalid_params"));
  const client = simClient(t, { faults: "never_answer" });
  // Refused at once, during the call.
  assert.deepEqual(shape(await rejection(client.state({ bogus: 1 }))), koma("KomaError", "invalid_params"));
  // A method called without its client.
  const { state } = client;
  assert.deepEqual(shape(await rejection(state())), koma("KomaError", "invalid_params"));
  // Settled later, from the event loop: a deadline, an abort.
  const late = await rejection(client.state({ timeout: 20 }));
  assert.deepEqual(shape(late), koma("TimeoutError", "timeout"));
  assert.match(String(late), /^TimeoutError: /);
  const ac = new AbortController();
  const written = client.state({ signal: ac.signal });
  const why = new Error("the user left");
  ac.abort(why);
  const aborted = await rejection(written);
  assert.deepEqual(shape(aborted), koma("AbortError", "aborted"));
  assert.equal(aborted.cause, why, "the cause is kept");
  const signalTimeout = await rejection(client.state({ signal: AbortSignal.timeout(10) }));
  assert.deepEqual(shape(signalTimeout), koma("TimeoutError", "timeout"));
  assert.equal(signalTimeout.cause?.name, "TimeoutError");
  // A turn's: a failing onApproval rejects with invalid_params, its cause what it threw.
  const answered = simClient(t);
  await answered.create({});
  const boom = new Error("no person to ask");
  const failed = await rejection(
    answered.run(
      { text: "fix the typo" },
      {
        onApproval: () => {
          throw boom;
        },
      },
    ),
  );
  assert.deepEqual(shape(failed), koma("KomaError", "invalid_params"));
  assert.equal(failed.cause, boom);
  assert.equal(failed.result.status, "completed");
  // koma's own error.
  const remote = await rejection(answered.approve({ approval: "a-nope", decision: "allow" }));
  assert.deepEqual(shape(remote), koma("KomaError", "remote"));
  assert.equal(remote.remote.code, "unknown_approval");
});

test("isKomaError and instanceof are true for the errors the package's constructors make only", () => {
  const lookalike = Object.assign(new Error("not ours"), { code: "timeout" });
  assert.equal(isKomaError(lookalike), false);
  assert.equal(lookalike instanceof KomaError, false);
  assert.equal(lookalike instanceof sdk.TimedOut, false);
  const fromPrototype = Object.create(sdk.TimedOut.prototype);
  assert.equal(isKomaError(fromPrototype), false);
  assert.equal(fromPrototype instanceof KomaError, false);
  assert.equal(fromPrototype instanceof sdk.TimedOut, false);
  for (const v of [null, undefined, "timeout", { code: "remote" }]) assert.equal(isKomaError(v), false);
  assert.equal(KomaError.prototype.name, "KomaError");
});

test("a program's tests make the package's errors: new KomaError(code, ...) is of the class of its code, as the package's are", () => {
  for (const [code, cls, name] of CODES) {
    const byCode = new KomaError(code, "made by a test");
    const byClass = new sdk[cls]("made by a test");
    for (const e of [byCode, byClass]) {
      assert.deepEqual(shape(e), koma(name, code), `${code}: ${cls}`);
      assert.equal(e.message, "made by a test");
      assert.equal(Object.getPrototypeOf(e), sdk[cls].prototype);
      assert.match(e.stack, new RegExp(`^${name}: made by a test\n    at `), "its stack starts where it was made");
    }
  }
  const remote = { code: "busy", message: "a turn is running", data: { turn: "t-1" } };
  const busy = new sdk.RemoteFailure("koma said busy", { remote, cause: "why" });
  assert.equal(busy.remote, remote);
  assert.equal(busy.cause, "why");
  const result = { turn: null, status: "unknown", output: "", toolCalls: [], events: 0, overflowed: false };
  assert.equal(new KomaError("closed", "x", { result }).result, result);
  assert.equal("result" in new KomaError("closed", "x"), false, "no option, no member");
  assert.throws(() => new KomaError("bogus", "x"), { name: "TypeError", message: /"bogus" is not an error code/ });
});

test("an error settled later carries its caller's stack: a timed-out state() names the function that awaited it", {
  timeout: 30000,
}, async (t) => {
  const client = simClient(t, { faults: "never_answer" });
  await client.probe();
  async function askForTheStateOfASilentKoma() {
    await client.state({ timeout: 20 });
  }
  const e = await rejection(askForTheStateOfASilentKoma());
  assert.equal(e.code, "timeout");
  assert.notEqual(e.stack, `${e.name}: ${e.message}`, "more than its message");
  assert.match(e.stack, /^TimeoutError: `state` was not answered within 20 ms\n/);
  assert.match(e.stack, /askForTheStateOfASilentKoma/, e.stack);
  // An error made during the call itself keeps the frames it was made in.
  function refuseOptions() {
    return client.state({ bogus: 1 });
  }
  const sync = await rejection(refuseOptions());
  assert.match(sync.stack, /refuseOptions/, sync.stack);
});

test("events({ signal }) ends its loop with `aborted` when the signal aborts; other loops go on", { timeout: 30000 }, async (t) => {
  const client = simClient(t);
  await client.create({});
  const ac = new AbortController();
  const bounded = client.events({ signal: ac.signal });
  const other = client.events();
  // The diagnostic after create is there: the loop reads.
  assert.equal((await bounded.next()).done, false);
  const waiting = bounded.next(); // nothing more comes until a turn
  const why = new Error("leaving");
  ac.abort(why);
  const e = await rejection(waiting);
  assert.equal(e.code, "aborted");
  assert.equal(e.name, "AbortError");
  assert.ok(e instanceof KomaError);
  assert.equal(e.cause, why);
  assert.match(e.message, /`events` was aborted by its signal/);
  assert.equal((await rejection(bounded.next())).code, "aborted", "the loop stays ended");
  assert.equal(getEventListeners(ac.signal, "abort").length, 0, "the listener is gone");
  // The next event still reaches the other loop.
  const { turn } = await client.submit({ text: "hello" });
  for await (const item of other) if (item.type === "event" && item.name === "turn_finished" && item.data.turn === turn) break;
  // Already aborted: the first next() rejects; a `for await` throws it.
  await assert.rejects(
    async () => {
      for await (const _ of client.events({ signal: AbortSignal.abort(why) }));
    },
    (err) => err.code === "aborted" && err.cause === why,
  );
});

test("events({ timeout }) ends its loop with `timeout`; bad options make it throw invalid_params", { timeout: 30000 }, async (t) => {
  const client = simClient(t);
  await client.create({});
  const err = await rejection(
    (async () => {
      for await (const _ of client.events({ timeout: 50 }));
    })(),
  );
  assert.equal(err.code, "timeout");
  assert.equal(err.name, "TimeoutError");
  assert.match(err.message, /`events` ended: its timeout of 50 ms passed/);
  const bad = client.events({ deadline: 5 });
  const refused = await rejection(bad.next());
  assert.equal(refused.code, "invalid_params");
  assert.match(refused.message, /events: unknown option `deadline`/);
  assert.equal((await rejection(client.events({ signal: "no" }).next())).code, "invalid_params");
  // A loop that ends normally lets go of its signal.
  const ac = new AbortController();
  const ending = client.events({ signal: ac.signal });
  await client.detach();
  for await (const _ of ending);
  assert.equal(getEventListeners(ac.signal, "abort").length, 0);
});

test("close({ timeout }) bounds the wait, not the close: it rejects with `timeout`, and koma is still stopped", {
  timeout: 30000,
}, async (t) => {
  const client = simClient(t, { faults: "ignore_detach" }); // close waits for a detach answer that never comes
  await client.create({});
  const pid = client.pid;
  const e = await rejection(client.close({ timeout: 20 }));
  assert.equal(e.code, "timeout");
  assert.equal(e.name, "TimeoutError");
  assert.match(e.message, /`close` did not finish within 20 ms; the close goes on/);
  await client.close(); // the same close, waited for
  assert.equal(client.pid, null);
  assert.equal(alive(pid), false);
  // A signal bounds it the same way; bad options are refused before anything.
  const other = simClient(t, { faults: "ignore_detach" });
  await other.create({});
  assert.equal((await rejection(other.close({ bogus: true }))).code, "invalid_params");
  assert.equal(typeof other.pid, "number", "a refused close closes nothing");
  const ac = new AbortController();
  const closing = other.close({ signal: ac.signal });
  ac.abort();
  assert.equal((await rejection(closing)).code, "aborted");
  await other.close();
  assert.equal(other.pid, null);
});

test("one signal shared by many concurrent calls has one abort listener; no MaxListenersExceededWarning", { timeout: 30000 }, async (t) => {
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on("warning", onWarning);
  t.after(() => process.off("warning", onWarning));
  const client = simClient(t, { faults: "never_answer" });
  await client.probe();
  const ac = new AbortController();
  const calls = Array.from({ length: 20 }, () => client.state({ signal: ac.signal }));
  const turn = client.turn({ text: "x" }, { signal: ac.signal, onApproval: "deny" });
  const loop = client.events({ signal: ac.signal }).next();
  assert.equal(getEventListeners(ac.signal, "abort").length, 1);
  ac.abort();
  for (const c of calls) assert.equal((await rejection(c)).code, "aborted");
  assert.equal((await rejection(loop)).code, "aborted");
  // Its submit is never answered: the turn ends with the close (a Turn nobody
  // looks at would report its failure as an unhandled rejection).
  turn.result.catch(() => {});
  assert.equal(getEventListeners(ac.signal, "abort").length, 0);
  // Calls that settle let go of it too.
  const shared = new AbortController();
  const answered = simClient(t);
  await Promise.all(Array.from({ length: 20 }, () => answered.probe({ signal: shared.signal })));
  assert.equal(getEventListeners(shared.signal, "abort").length, 0);
  await new Promise((r) => setImmediate(r)); // process.emitWarning reports on the next tick
  assert.deepEqual(warnings.filter((w) => w.name === "MaxListenersExceededWarning").map(String), []);
});

test("create after a failed resume says that the client has no session, not that it has one", { timeout: 30000 }, async (t) => {
  const client = simClient(t);
  const failed = await rejection(client.resume({ session: "no-such-session" }));
  assert.equal(failed.code, "remote");
  assert.equal(failed.remote.code, "unknown_session");
  const refused = await rejection(client.create({}));
  assert.equal(refused.code, "lifecycle");
  assert.doesNotMatch(refused.message, /has its session/);
  assert.match(refused.message, /`resume` was written first: it failed, so this client has no session/);
  // After a create that succeeded, it says the client has its session.
  const made = simClient(t);
  await made.create({});
  const twice = await rejection(made.create({}));
  assert.equal(twice.code, "lifecycle");
  assert.match(twice.message, /`create` was written first: this client has its session already/);
});

test("the classes of the codes are the package's names, for require() and for import", async () => {
  const esm = await import("@koma/sdk");
  for (const [, cls] of CODES) {
    assert.equal(typeof sdk[cls], "function", `require("@koma/sdk").${cls}`);
    assert.equal(esm[cls], sdk[cls], `import { ${cls} } from "@koma/sdk"`);
  }
  for (const name of ["Client", "KomaError", "isKomaError"]) assert.equal(esm[name], sdk[name], name);
});

test("an option given as undefined is as if it were left out (as the typings say, under exactOptionalPropertyTypes)", {
  timeout: 30000,
}, async (t) => {
  const opts = { signal: undefined, timeout: undefined };
  const client = simClient(t, { cwd: undefined, trace: undefined, helloTimeout: undefined });
  await client.create({ cwd: undefined, model: undefined }, opts);
  assert.equal((await client.state(opts)).status, "idle");
  const result = await client.run({ text: "hello" }, { onApproval: "allow", mode: undefined, signal: undefined, timeout: undefined });
  assert.equal(result.status, "completed");
  const turn = client.turn({ text: "again" }, { onApproval: undefined, mode: undefined, signal: undefined, timeout: undefined });
  for await (const _ of turn);
  assert.equal((await turn.result).status, "completed");
  const loop = client.events(opts); // bad options would throw here
  await loop.return?.();
  await client.close(opts);
});
