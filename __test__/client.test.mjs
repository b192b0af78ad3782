// The client against koma-sim: methods, lifecycle, local checks, detach,
// resume, close. Fault switches are in faults*.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { Client, SIM, sdk, simClient, tempHome, rejection, eventsUntil, alive, root, runNode } from "./helpers.mjs";

const finished = (turn) => (e) => e.type === "event" && e.name === "turn_finished" && e.data.turn === turn;
const names = (items) => items.filter((e) => e.type === "event").map((e) => e.name);

test("probe starts the child and resolves with the checked hello", async (t) => {
  const client = simClient(t);
  assert.equal(client.pid, null, "nothing starts before the first call");
  const hello = await client.probe();
  assert.equal(hello.type, "hello");
  assert.equal(hello.protocol, 1);
  assert.match(hello.binary.path, /koma-sim(\.exe)?$/);
  assert.ok(hello.capabilities.includes("interrupt_and_submit"));
  assert.ok(Array.isArray(hello.diagnostics));
  assert.equal(typeof client.pid, "number");
  assert.deepEqual(await client.probe(), hello, "probe again: the same hello, no new child");
});

test("a plain turn: submit, streamed output, turn_finished; events in seq order", async (t) => {
  const client = simClient(t);
  const created = await client.create({ cwd: process.cwd() });
  assert.match(created.session, /\S/);
  assert.equal(created.state.status, "idle");
  const { turn } = await client.submit({ text: "hello there" });
  const items = await eventsUntil(client, finished(turn));
  const evs = items.filter((e) => e.type === "event");
  for (let i = 1; i < evs.length; i++) assert.equal(evs[i].seq, evs[i - 1].seq + 1);
  const outputs = evs.filter((e) => e.name === "output" && e.data.turn === turn);
  assert.ok(outputs.length >= 2, "the reply streams in pieces");
  assert.ok(names(items).includes("turn_started"));
  assert.equal(items.at(-1).data.status, "completed");
  assert.deepEqual(Object.keys(evs[0]).sort(), ["data", "name", "seq", "type"]);
});

test("a read turn: tool_call read_file then tool_result, no approval", async (t) => {
  const client = simClient(t);
  await client.create({});
  const { turn } = await client.submit({ text: "show me the README" });
  const items = await eventsUntil(client, finished(turn));
  const call = items.find((e) => e.name === "tool_call");
  assert.equal(call.data.tool, "read_file");
  const result = items.find((e) => e.name === "tool_result");
  assert.equal(result.data.call, call.data.call);
  assert.equal(result.data.error, false);
  assert.ok(!names(items).includes("approval_requested"));
});

for (const decision of ["allow", "deny"]) {
  test(`an approval turn answered ${decision}`, async (t) => {
    const client = simClient(t);
    await client.create({});
    const { turn } = await client.submit({ text: "fix the typo" });
    const asked = await eventsUntil(client, (e) => e.name === "approval_requested");
    const req = asked.at(-1);
    assert.equal(req.data.tool, "write_file");
    assert.equal((await client.state()).status, "waiting");
    const busy = await rejection(client.submit({ text: "another" }));
    assert.equal(busy.code, "remote");
    assert.equal(busy.remote.code, "busy");
    assert.equal(typeof busy.remote.message, "string");
    assert.deepEqual(await client.approve({ approval: req.data.approval, decision }), {});
    const rest = await eventsUntil(client, finished(turn));
    const result = rest.find((e) => e.name === "tool_result");
    assert.equal(result.data.error, decision === "deny");
    assert.equal(rest.at(-1).data.status, "completed");
    const wrong = await rejection(client.approve({ approval: "a-nope", decision: "allow" }));
    assert.equal(wrong.remote.code, "unknown_approval");
  });
}

test("enqueue, interrupt, interrupt_and_submit, configure", async (t) => {
  const client = simClient(t, { delayMs: 20 });
  await client.create({});
  const first = await client.submit({ text: "a long answer" });
  const { position } = await client.enqueue({ text: "the queued one" });
  assert.ok(position >= 1);
  assert.equal((await client.state()).queued, 1);
  const stopped = await client.interrupt();
  assert.equal(stopped.turn, first.turn);
  const items = await eventsUntil(client, (e) => e.name === "turn_started" && e.data.text === "the queued one");
  const fin = items.find(finished(first.turn));
  assert.equal(fin.data.status, "interrupted");
  const both = await client.interruptAndSubmit({ text: "instead" });
  assert.equal(typeof both.turn, "string");
  assert.notEqual(both.interrupted, null);
  const state = await client.configure({ model: "sim-2" });
  assert.equal(state.model, "sim-2");
  assert.deepEqual((await client.interrupt()).turn !== undefined, true);
});

test("detach resolves after the answer and the exit; events end; resume replays in a new process", async (t) => {
  const home = tempHome(t);
  const a = simClient(t, { home });
  const { session } = await a.create({});
  const { turn } = await a.submit({ text: "hello" });
  const items = await eventsUntil(a, finished(turn));
  const pid = a.pid;
  assert.deepEqual(await a.detach(), {});
  assert.equal(alive(pid), false, "the child has exited (reaped) when detach resolves");
  const after = [];
  for await (const e of a.events()) after.push(e);
  assert.ok(
    after.every((e) => e.type === "event"),
    "the iterator ends after detach",
  );
  assert.equal((await rejection(a.state())).code, "lifecycle");
  const last = items.filter((e) => e.type === "event").at(-1);
  const mid = items.filter((e) => e.type === "event")[1].seq;

  const b = simClient(t, { home });
  const resumed = await b.resume({ session, after: mid });
  assert.equal(resumed.session, session);
  const replay = await eventsUntil(b, (e) => e.type === "event" && e.seq === last.seq);
  assert.equal(replay[0].seq, mid + 1, "replay starts after `after`");
  const { turn: t2 } = await b.submit({ text: "again" });
  const more = await eventsUntil(b, finished(t2));
  assert.ok(
    more.filter((e) => e.type === "event").every((e) => e.seq > last.seq),
    "new events continue the sequence",
  );
});

test("lifecycle is enforced locally: create/resume first and once, nothing after detach", async (t) => {
  const client = simClient(t);
  await client.create({});
  assert.equal((await rejection(client.create({}))).code, "lifecycle");
  assert.equal((await rejection(client.resume({ session: "s" }))).code, "lifecycle");
  const other = simClient(t);
  await other.state();
  assert.equal((await rejection(other.create({}))).code, "lifecycle", "create only as the first request");
  const d = simClient(t);
  const detached = d.detach();
  const afterDetach = await rejection(d.state());
  assert.equal(afterDetach.code, "lifecycle");
  await detached;
});

test("params are checked locally, naming the field; unknown methods are unsupported", async (t) => {
  const client = simClient(t);
  await client.create({});
  const cases = [
    [() => client.submit({ txt: "x" }), /`txt`/],
    [() => client.submit({}), /`text`/],
    [() => client.submit({ text: 5 }), /`text`/],
    [() => client.approve({ approval: "a", decision: "maybe" }), /`decision`/],
    [() => client.resume({ session: "s", after: 1.5 }), /`after`|lifecycle/],
    [() => client.configure({ model: null }), /`model`/],
    [() => client.request("state", { extra: true }), /`extra`/],
    [() => client.submit("text"), /object/],
    [() => client.submit({ text: 1n }), /JSON/],
  ];
  for (const [call, pattern] of cases) {
    const e = await rejection(call());
    assert.ok(e instanceof Error);
    assert.ok(["invalid_params", "lifecycle"].includes(e.code), `${e.code}: ${e.message}`);
    assert.match(e.message, pattern);
  }
  assert.equal((await rejection(client.submit({ txt: "x" }))).code, "invalid_params");
  const u = await rejection(client.request("no_such_method", {}));
  assert.equal(u.code, "unsupported");
  assert.equal((await rejection(client.state({ timeout: "soon" }))).code, "invalid_params");
  assert.equal((await client.state()).status, "idle", "the client goes on");
});

test("request() sends methods of the table with their checks", async (t) => {
  const client = simClient(t);
  await client.request("create", {});
  const state = await client.request("state");
  assert.equal(state.status, "idle");
});

test("stderr is drained and kept", async (t) => {
  const client = simClient(t);
  await client.create({});
  await client.detach();
  assert.match(client.stderr, /koma-sim: /);
});

test("close() is idempotent, reaps the child; later calls are `closed`", async (t) => {
  const client = simClient(t);
  await client.create({});
  const pid = client.pid;
  await Promise.all([client.close(), client.close()]);
  await client.close();
  assert.equal(alive(pid), false);
  assert.equal(client.pid, null);
  assert.equal((await rejection(client.state())).code, "closed");
  assert.equal((await rejection(client.probe())).code, "closed");
  const never = new Client({ executable: SIM });
  await never.close();
  assert.equal((await rejection(never.state())).code, "closed");
});

test("close() with requests in flight: a well-behaved child answers them before detach", async (t) => {
  const client = simClient(t);
  await client.create({});
  const pending = [client.state(), client.state(), client.state()];
  await client.close();
  for (const p of pending) assert.equal((await p).status, "idle");
});

test("events(): one queue per client; a second iterator goes on where the first stopped", async (t) => {
  const client = simClient(t);
  await client.create({});
  const { turn } = await client.submit({ text: "hi" });
  const first = [];
  for await (const e of client.events()) {
    first.push(e);
    if (first.length === 2) break;
  }
  const rest = await eventsUntil(client, finished(turn));
  assert.equal(rest[0].seq, first[1].seq + 1);
});

test("Symbol.asyncDispose closes the client", async (t) => {
  // (`await using` itself is exercised by the TypeScript usage file.)
  assert.equal(typeof Symbol.asyncDispose, "symbol");
  const client = new Client({ executable: SIM, env: { KOMA_SIM_HOME: tempHome(t), KOMA_SIM_DELAY_MS: "0" } });
  await client.create({});
  const pid = client.pid;
  await client[Symbol.asyncDispose]();
  assert.equal(alive(pid), false);
  assert.equal((await rejection(client.state())).code, "closed");
});

test("a script that uses a client and closes it exits by itself", { timeout: 30000 }, async () => {
  const script = `
    const { Client } = require(${JSON.stringify(root + "/index.js")});
    (async () => {
      const c = new Client({ executable: ${JSON.stringify(SIM)}, env: { KOMA_SIM_DELAY_MS: "0", KOMA_SIM_HOME: ${JSON.stringify(tempHome())} } });
      await c.create({});
      const { turn } = await c.submit({ text: "hi" });
      for await (const e of c.events()) if (e.name === "turn_finished" && e.data.turn === turn) break;
      await c.close();
      console.log("done");
    })();`;
  const { code, out } = await runNode(script);
  assert.equal(code, 0);
  assert.equal(out, "done");
});

test("a script that forgets close() still exits once nothing is pending, and the child dies with it", { timeout: 30000 }, async () => {
  const script = `
    const { Client } = require(${JSON.stringify(root + "/index.js")});
    (async () => {
      const c = new Client({ executable: ${JSON.stringify(SIM)}, env: { KOMA_SIM_DELAY_MS: "0", KOMA_SIM_HOME: ${JSON.stringify(tempHome())} } });
      await c.create({});
      console.log(c.pid);
    })();`;
  const { code, out } = await runNode(script);
  assert.equal(code, 0);
  const pid = Number(out);
  assert.ok(pid > 0);
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(alive(pid), false, "PR_SET_PDEATHSIG or the finalizer stopped koma");
});

test("KOMA_SDK_SPAWN picks the spawn path once per process; an unknown value fails new Client with invalid_params", {
  timeout: 60000,
}, () => {
  const script = `
    const { Client } = require(${JSON.stringify(root + "/index.js")});
    (async () => {
      let c;
      try {
        c = new Client({ executable: ${JSON.stringify(SIM)}, env: { KOMA_SIM_DELAY_MS: "0", KOMA_SIM_HOME: ${JSON.stringify(tempHome())} } });
      } catch (e) {
        console.log(JSON.stringify({ code: e.code, message: e.message }));
        return;
      }
      const st = await c.state();
      await c.close();
      console.log(JSON.stringify({ status: st.status }));
    })();`;
  for (const mode of ["auto", "no-pidfd", "portable", ""]) {
    const r = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", env: { ...process.env, KOMA_SDK_SPAWN: mode } });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { status: "idle" }, `KOMA_SDK_SPAWN=${mode}`);
  }
  const r = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", env: { ...process.env, KOMA_SDK_SPAWN: "pidfd-please" } });
  const out = JSON.parse(r.stdout);
  assert.equal(out.code, "invalid_params");
  // The core's message, word for word the one koma_sdk gives (python/tests/test_client.py).
  assert.equal(out.message, 'KOMA_SDK_SPAWN="pidfd-please" names no spawn path: it must be `auto`, `no-pidfd`, `portable`, or unset');
});

test("unknown option keys are invalid_params naming the key, and nothing is written", async (t) => {
  const client = simClient(t);
  await client.create({});
  const misplaced = await rejection(client.submit({ text: "hi" }, { onApproval: "allow" }));
  assert.equal(misplaced.code, "invalid_params");
  assert.match(misplaced.message, /`onApproval` is an option of turn\(\) and run\(\)/);
  const unknown = await rejection(client.state({ foo: 1 }));
  assert.equal(unknown.code, "invalid_params");
  assert.match(unknown.message, /unknown option `foo`/);
  const misspelt = await rejection(client.run({ text: "hi" }, { onApproval: "allow", signl: AbortSignal.timeout(1000) }));
  assert.equal(misspelt.code, "invalid_params");
  assert.match(misspelt.message, /unknown option `signl`/);
  const turn = client.turn({ text: "hi" }, { onApproval: "allow", deadline: 5 });
  const bad = await rejection(turn.result);
  assert.equal(bad.code, "invalid_params");
  assert.match(bad.message, /unknown option `deadline`/);
  assert.equal((await rejection(turn.id)).code, "invalid_params");
  assert.throws(
    () => new Client({ executable: SIM, tarce: true }),
    (e) => e.code === "invalid_params" && /unknown option `tarce`/.test(e.message),
  );
  // Nothing was written: no turn ran, and the next one is the session's first.
  assert.equal((await client.state()).turn, null);
  assert.equal((await client.submit({ text: "now" })).turn, "t-1");
});

test("a method called without its client rejects with invalid_params (turn() and events() throw it), not a TypeError", async (t) => {
  const client = simClient(t);
  const { state, submit, close } = client;
  let pending;
  assert.doesNotThrow(() => (pending = state()), "no synchronous throw");
  const e = await rejection(pending);
  assert.equal(e.code, "invalid_params");
  assert.match(e.message, /Client\.state\(\) was called without its client: call it on the client/);
  assert.equal((await rejection(submit({ text: "never sent" }))).code, "invalid_params");
  assert.equal((await rejection(close.call({}))).code, "invalid_params");
  const { turn, events } = client;
  assert.throws(
    () => turn({ text: "never sent" }),
    (err) => err.code === "invalid_params" && /Client\.turn\(\)/.test(err.message),
  );
  assert.throws(
    () => events(),
    (err) => err.code === "invalid_params",
  );
  assert.equal(client.pid, null, "nothing started");
  // On its client, the same function works; create is still allowed as the
  // first request, so nothing was written before.
  const { create } = client;
  assert.equal(typeof (await create.call(client, {})).session, "string");
  assert.equal((await state.call(client)).status, "idle");
});

test("isKomaError tells the package's errors from others", async (t) => {
  const { isKomaError } = sdk;
  const client = simClient(t);
  const e = await rejection(client.state({ timeout: "soon" }));
  assert.equal(isKomaError(e), true);
  const remote = await rejection(client.submit({ text: "no session yet" }));
  assert.equal(remote.code, "remote");
  assert.equal(isKomaError(remote), true);
  assert.equal(isKomaError(new Error("plain")), false);
  assert.equal(isKomaError(Object.assign(new Error("a system error"), { code: "ENOENT" })), false);
  assert.equal(isKomaError({ code: "timeout", message: "not an Error" }), false);
  assert.equal(isKomaError(undefined), false);
  assert.equal(isKomaError("timeout"), false);
});
