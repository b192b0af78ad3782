// The client against every fault switch of koma-sim (crates/koma-sim/README.md),
// checked against docs/protocol.md (Lines, Hello, Events, Failure, Error codes).
import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";

import { Client, SIM, alive, eventsUntil, notOnWindows, peer, rejection, simClient } from "./helpers.mjs";

const T = { timeout: 30000 };
const MAX_FRAME = 41943040;
const QUOTE_BYTES = 200;

const CATALOG = new Set([
  "state",
  "turn_started",
  "output",
  "tool_call",
  "tool_result",
  "approval_requested",
  "turn_finished",
  "diagnostic",
]);

/** Codes of the error table whose "anything written?" column says "no". */
const NOT_WRITTEN = new Set([
  "transport_failure",
  "spawn_failed",
  "protocol_error",
  "protocol_mismatch",
  "frame_too_large",
  "too_many_pending",
  "lifecycle",
  "unsupported",
  "invalid_params",
  "closed",
]);

/** A process that is gone: no such pid, or a zombie nobody reaped yet (its parent may be a non-reaping init). */
function gone(pid) {
  if (!alive(pid)) return true;
  // Windows has no zombies: an ended process is not alive (libuv's kill(pid, 0) reads its exit code).
  if (process.platform === "win32") return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

/**
 * Poll an external condition (another process's state, the child's stderr)
 * that no client event announces; bounded, fails with `what`.
 */
async function until(cond, what, { ms = 5000, step = 20 } = {}) {
  const end = Date.now() + ms;
  for (;;) {
    if (cond()) return;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await delay(step);
  }
}

/** Iterate `events()` until it throws; returns [error, items taken before it]. Fails if it ends normally. */
async function eventsError(client) {
  const items = [];
  try {
    for await (const item of client.events()) items.push(item);
  } catch (e) {
    return [e, items];
  }
  throw new Error(`events() ended normally after ${items.length} items; expected it to throw`);
}

function assertCode(err, code, context = "") {
  assert.ok(err instanceof Error, `${context} expected an Error, got ${String(err)}`);
  assert.equal(err.code, code, `${context} code (message: ${err.message})`);
}

/** The part of a transport message before the stderr tail the client appends. */
function head(message) {
  return message.split(/; (?:last lines of stderr|stderr was empty)/)[0];
}

/** After a failure: a new call fails at once with transport_failure; close reaps the child. */
async function assertFailedAndReaped(client, pid) {
  assertCode(await rejection(client.state()), "transport_failure", "a call after the failure:");
  await client.close();
  assert.equal(client.pid, null, "pid after close");
  assert.ok(gone(pid), `the child ${pid} is gone after close`);
}

function assertCatalogEvent(item) {
  assert.equal(item.type, "event", `not an event: ${JSON.stringify(item)}`);
  assert.ok(CATALOG.has(item.name), `an event outside the catalog was yielded: ${JSON.stringify(item)}`);
  assert.ok(Number.isInteger(item.seq) && item.seq > 0, `bad seq: ${JSON.stringify(item)}`);
}

function assertContiguous(events) {
  for (let i = 1; i < events.length; i++) {
    assert.equal(events[i].seq, events[i - 1].seq + 1, `seq not contiguous at ${i}: ${events[i - 1].seq} then ${events[i].seq}`);
  }
}

function countOf(haystack, needle) {
  return haystack.split(needle).length - 1;
}

// ---------------------------------------------------------------- hello faults

test("no_hello: probe times out, nothing is written, close stops the child", T, async (t) => {
  const client = simClient(t, { faults: "no_hello" });
  const queued = rejection(client.state()); // handled now, checked below
  const err = await rejection(client.probe({ timeout: 300 }));
  assertCode(err, "timeout", "probe:");
  const pid = client.pid;
  assert.ok(pid, "the child runs while hello is awaited");
  await client.close();
  // A request that waited for a hello that never came was never written.
  const qerr = await queued;
  assert.ok(NOT_WRITTEN.has(qerr.code), `the queued state() got a code meaning "written": ${qerr.code} (${qerr.message})`);
  assert.equal(client.pid, null);
  assert.ok(gone(pid), "the child is gone after close");
  assert.ok(client.stderr.includes("koma-sim: bytes read: 0"), `stderr: ${client.stderr}`);
  assert.ok(!client.stderr.includes("wrote"), `stderr: ${client.stderr}`);
});

test("helloTimeout: a child that reads stdin and never writes fails the client with transport_failure naming it", {
  timeout: 10000,
}, async (t) => {
  // Reads stdin and never writes; its stdout stays open meanwhile.
  const file = peer("mute.mjs");
  const client = new Client({ executable: file, helloTimeout: 200 });
  t.after(() => client.close());
  const err = await rejection(client.probe());
  assertCode(err, "transport_failure", "probe:");
  assert.ok(err.message.includes(file), `the message names the executable: ${err.message}`);
  assert.match(err.message, /hello/, "the message says no hello came");
  assertCode(await rejection(client.state()), "transport_failure", "a later call:");
});

test("helloTimeout is milliseconds or null; anything else is invalid_params at new Client", () => {
  for (const bad of [-1, "5000", Infinity, NaN, {}]) {
    assert.throws(
      () => new Client({ executable: SIM, helloTimeout: bad }),
      (e) => e.code === "invalid_params" && /`helloTimeout`/.test(e.message),
      String(bad),
    );
  }
  for (const ok of [null, undefined, 0, 250]) new Client({ executable: SIM, helloTimeout: ok });
});

for (const fault of ["protocol_2", "protocol_string", "protocol_missing", "protocol_float", "protocol_true"]) {
  test(`${fault}: protocol_mismatch, queued calls fail, nothing written, child stopped`, T, async (t) => {
    const client = simClient(t, { faults: fault });
    const probe = rejection(client.probe());
    const queued = rejection(client.state());
    assertCode(await probe, "protocol_mismatch", "probe:");
    const qerr = await queued;
    assert.ok(NOT_WRITTEN.has(qerr.code), `the queued state() got a code meaning "written": ${qerr.code} (${qerr.message})`);
    // Later calls fail at once without writing.
    const later = await rejection(client.state());
    assert.ok(NOT_WRITTEN.has(later.code), `a later call: ${later.code} (${later.message})`);
    await client.close();
    assert.equal(client.pid, null, "the child is stopped");
    assert.ok(client.stderr.includes("koma-sim: bytes read: 0"), `stderr: ${client.stderr}`);
    assert.ok(!client.stderr.includes("wrote"), `stderr: ${client.stderr}`);
  });
}

test("late_hello: a call made before hello waits for it; nothing written early", T, async (t) => {
  const client = simClient(t, { faults: "late_hello" });
  const state = client.state(); // before hello: must be queued, not written
  const hello = await client.probe();
  assert.equal(hello.protocol, 1);
  const st = await state;
  assert.equal(st.status, "idle");
  assert.equal(st.session, null);
  await client.close();
  assert.ok(!client.stderr.includes("client wrote"), `stderr: ${client.stderr}`);
  assert.ok(client.stderr.includes("koma-sim: detach"), `closed by detach; stderr: ${client.stderr}`);
});

test("bom: hello starting with a BOM is a protocol_error", T, async (t) => {
  const client = simClient(t, { faults: "bom" });
  const queued = rejection(client.state());
  assertCode(await rejection(client.probe()), "protocol_error", "probe:");
  const qerr = await queued;
  assert.ok(NOT_WRITTEN.has(qerr.code), `the queued state(): ${qerr.code} (${qerr.message})`);
  await client.close();
  assert.equal(client.pid, null);
  assert.ok(!client.stderr.includes("client wrote"), `stderr: ${client.stderr}`);
});

// ---------------------------------------------------------------- frame faults

/** Per frame fault: a snippet of the offending line its message should quote (if any). */
// seq_gap / seq_repeat: the first of the two events is valid and is yielded before the error.
const FRAME_FAULTS = {
  blank_line: null,
  pretty: null,
  log_line: "INFO starting worker",
  invalid_utf8: "bad ",
  json_array: "[1,2,3]",
  json_scalar: "42",
  unknown_type: "bogus",
  second_hello: "hello",
  both_result_error: "both",
  neither: "foo",
  seq_gap: null,
  seq_repeat: null,
  frame_over_40mib: "result",
};

for (const [fault, snippet] of Object.entries(FRAME_FAULTS)) {
  test(`${fault}: fatal protocol error; request delivery_unknown, events throw, client failed`, T, async (t) => {
    const client = simClient(t, { faults: fault });
    await client.probe();
    const pid = client.pid;
    assert.ok(pid);

    const reqErr = await rejection(client.state());
    assertCode(reqErr, "delivery_unknown", "the first request:");

    const [evErr, items] = await eventsError(client);
    if (fault === "seq_gap" || fault === "seq_repeat") {
      assert.equal(items.length, 1, `only the first, valid event is yielded: ${JSON.stringify(items)}`);
      assert.equal(items[0].name, "diagnostic");
    } else {
      assert.deepEqual(items, [], "no events before the fault");
    }
    assertCode(evErr, "protocol_error", "events():");
    const quoted = head(evErr.message);
    assert.ok(
      quoted.length <= QUOTE_BYTES + 200,
      `the message quotes more than ${QUOTE_BYTES} bytes of the line: ${quoted.length} chars before the stderr tail`,
    );
    const xRun = Math.max(0, ...(evErr.message.match(/x+/g) ?? []).map((s) => s.length));
    assert.ok(xRun <= QUOTE_BYTES, `a run of ${xRun} bytes of the line is quoted`);
    if (snippet) assert.ok(evErr.message.includes(snippet), `the message quotes the line (${snippet}): ${evErr.message}`);

    await assertFailedAndReaped(client, pid);
  });
}

test("frame_40mib: a frame of exactly 40 MiB is accepted and the client goes on", T, async (t) => {
  const client = simClient(t, { faults: "frame_40mib" });
  const result = await client.state();
  assert.equal(typeof result, "string");
  // The sim names the id it answered on stderr; the frame is {"id":ID,"result":"x…"}.
  await until(() => /in place of the answer to id (\S+)/.test(client.stderr), "the sim's fault line on stderr");
  const id = client.stderr.match(/in place of the answer to id (\S+)/)[1];
  const overhead = `{"id":${JSON.stringify(id)},"result":""}`.length;
  assert.equal(result.length, MAX_FRAME - overhead);
  assert.ok(/^x+$/.test(result), "the result is all x");
  const st = await client.state();
  assert.equal(st.status, "idle");
  assert.equal((await client.state()).session, null);
});

test("a request over 40 MiB is rejected locally with frame_too_large; the client goes on", T, async (t) => {
  const client = simClient(t);
  const { session } = await client.create({});
  const err = await rejection(client.submit({ text: "x".repeat(MAX_FRAME) }));
  assertCode(err, "frame_too_large", "submit:");
  const st = await client.state();
  assert.equal(st.session, session);
  assert.equal(st.status, "idle", "the oversized submit was not written (no turn runs)");
  // Nothing was written: the next turn is still the session's first.
  const { turn } = await client.submit({ text: "hello" });
  assert.equal(turn, "t-1");
});

// ---------------------------------------------------------------- process faults

test("stderr_flood: the child is drained; only the newest 64 KiB kept", T, async (t) => {
  const client = simClient(t, { faults: "stderr_flood" });
  const hello = await client.probe();
  assert.equal(hello.protocol, 1);
  assert.equal((await client.state()).status, "idle");
  await client.close();
  const tail = client.stderr;
  assert.ok(Buffer.byteLength(tail) <= 65536, `kept ${Buffer.byteLength(tail)} bytes`);
  assert.ok(Buffer.byteLength(tail) > 32768, `kept only ${Buffer.byteLength(tail)} bytes of a 1 MiB flood`);
  assert.ok(tail.includes("koma-sim: flood end"), `stderr ends: ${tail.slice(-300)}`);
});

test("exit_mid_request: delivery_unknown with the stderr tail; later calls transport_failure", T, async (t) => {
  const client = simClient(t, { faults: "exit_mid_request" });
  await client.probe();
  const pid = client.pid;
  const err = await rejection(client.state());
  assertCode(err, "delivery_unknown", "the request:");
  assert.ok(err.message.includes("exiting on purpose"), `message: ${err.message}`);
  const [evErr] = await eventsError(client);
  assertCode(evErr, "transport_failure", "events():");
  await assertFailedAndReaped(client, pid);
});

test("kill_mid_request: delivery_unknown naming the kill; later calls transport_failure", T, async (t) => {
  const client = simClient(t, { faults: "kill_mid_request" });
  await client.probe();
  const pid = client.pid;
  const err = await rejection(client.state());
  assertCode(err, "delivery_unknown", "the request:");
  assert.ok(/signal|killed|SIGKILL|killing myself/i.test(err.message), `message: ${err.message}`);
  const [evErr] = await eventsError(client);
  assertCode(evErr, "transport_failure", "events():");
  await assertFailedAndReaped(client, pid);
});

test("orphan_tool: the request fails although a tool holds stdout; close kills the tool", { timeout: 20000 }, async (t) => {
  const client = simClient(t, { faults: "orphan_tool" });
  await client.probe();
  const pid = client.pid;
  const err = await rejection(client.state());
  assertCode(err, "delivery_unknown", "the request:");
  assertCode(await rejection(client.state()), "transport_failure", "a later call:");
  await client.close();
  assert.equal(client.pid, null);
  assert.ok(gone(pid));
  const m = client.stderr.match(/koma-sim: tool pid (\d+)/);
  assert.ok(m, `the tool pid is on stderr: ${client.stderr}`);
  const tool = Number(m[1]);
  t.after(() => {
    if (!gone(tool)) process.kill(tool, "SIGKILL");
  });
  assert.ok(gone(tool), `the orphan tool ${tool} is gone when close() resolves`);
});

test("spawn_tool: the tool lives while the client runs and is gone after close", T, async (t) => {
  const client = simClient(t, { faults: "spawn_tool" });
  const hello = await client.probe();
  const d = hello.diagnostics.find((x) => x && typeof x === "object" && "tool_pid" in x);
  assert.ok(d, `hello's diagnostics carry the tool pid: ${JSON.stringify(hello.diagnostics)}`);
  const tool = d.tool_pid;
  t.after(() => {
    if (!gone(tool)) process.kill(tool, "SIGKILL");
  });
  await client.create({});
  assert.ok(alive(tool) && !gone(tool), "the tool runs");
  await client.close();
  assert.ok(gone(tool), `the tool ${tool} is gone when close() resolves`);
});

test("spawn_tool + exit_mid_request: a crashed child's tool is killed with its process group", T, async (t) => {
  const client = simClient(t, { faults: "spawn_tool,exit_mid_request" });
  const hello = await client.probe();
  const tool = hello.diagnostics.find((x) => x && typeof x === "object" && "tool_pid" in x)?.tool_pid;
  assert.ok(tool, `tool pid in ${JSON.stringify(hello.diagnostics)}`);
  t.after(() => {
    if (!gone(tool)) process.kill(tool, "SIGKILL");
  });
  assertCode(await rejection(client.state()), "delivery_unknown");
  await client.close();
  assert.ok(gone(tool), `the tool ${tool} is gone when close() resolves`);
});

test("ignore_detach,ignore_eof,ignore_sigterm: close escalates to SIGKILL and resolves", T, async (t) => {
  const client = simClient(t, { faults: "ignore_detach,ignore_eof,ignore_sigterm" });
  await client.create({});
  const pid = client.pid;
  await client.close();
  assert.equal(client.pid, null);
  assert.ok(gone(pid), `pid ${pid} is dead after close`);
  assert.ok(client.stderr.includes("ignoring detach"), `detach was tried first; stderr: ${client.stderr}`);
  await client.close(); // idempotent
});

test("ignore_detach: close resolves (via end of stdin) and the child is gone", T, async (t) => {
  const client = simClient(t, { faults: "ignore_detach" });
  await client.create({});
  const pid = client.pid;
  await client.close();
  assert.equal(client.pid, null);
  assert.ok(gone(pid));
  assert.ok(client.stderr.includes("ignoring detach"), `stderr: ${client.stderr}`);
});

// ---------------------------------------------------------------- answer faults

test("never_answer: timeout, abort after writing, abort before calling; close still detaches", T, async (t) => {
  const client = simClient(t, { faults: "never_answer" });
  await client.probe();
  const pid = client.pid;

  // Abort after the request was written and carried out (its diagnostic event proves it).
  const ac = new AbortController();
  const create = client.create({}, { signal: ac.signal });
  const seen = await eventsUntil(client, (e) => e.type === "event" && e.name === "diagnostic");
  assert.ok(seen.length >= 1);
  ac.abort();
  assertCode(await rejection(create), "aborted", "create:");

  assertCode(await rejection(client.state({ timeout: 200 })), "timeout", "state with timeout:");

  // Already aborted: rejected at once, and never written.
  const pre = new AbortController();
  pre.abort();
  assertCode(await rejection(client.submit({ text: "never sent" }, { signal: pre.signal })), "aborted", "pre-aborted submit:");

  // Timed out and aborted calls freed their slots; the client still works (events flow).
  const ac2 = new AbortController();
  const sub = client.submit({ text: "hello" }, { signal: ac2.signal });
  const turn = await eventsUntil(client, (e) => e.type === "event" && e.name === "turn_started");
  assert.equal(turn.at(-1).data.turn, "t-1", "the pre-aborted submit was never written (this is the first turn)");
  assert.equal(turn.at(-1).data.text, "hello");
  ac2.abort();
  assertCode(await rejection(sub), "aborted");

  await client.close();
  assert.equal(client.pid, null);
  assert.ok(gone(pid));
  assert.ok(client.stderr.includes("koma-sim: detach"), `closed by detach; stderr: ${client.stderr}`);
  assert.ok(!client.stderr.includes("stdin closed without detach"), `stderr: ${client.stderr}`);
});

test("hold: 64 pending, the 65th too_many_pending; reversed answers matched by id", {
  ...T,
  skip: notOnWindows("koma-sim's `hold` releases its answers on SIGUSR1, and Windows has no signals: koma-sim.exe refuses it"),
}, async (t) => {
  const client = simClient(t, { faults: "hold" });
  await client.probe();
  const release = () => process.kill(client.pid, "SIGUSR1");

  const create = client.create({});
  await until(() => client.stderr.includes("(1 held)"), "the create to be held");
  release();
  const { session } = await create;

  const calls = [];
  for (let i = 0; i < 64; i++) calls.push(client.configure({ model: `m${i}` }));
  await until(() => client.stderr.includes("(64 held)"), "64 answers to be held");

  assertCode(await rejection(client.state()), "too_many_pending", "the 65th call:");

  release();
  const results = await Promise.all(calls);
  results.forEach((st, i) => {
    assert.equal(typeof st, "object");
    assert.equal(st.session, session);
    assert.equal(st.model, `m${i}`, `answer ${i} matched to its own request by id`);
  });
  assert.ok(!client.stderr.includes("(65 held)"), "the 65th was never written");

  // The slots are free again.
  const heldBefore = countOf(client.stderr, "(1 held)");
  const next = client.state();
  await until(() => countOf(client.stderr, "(1 held)") > heldBefore, "the next call to be held");
  release();
  const st = await next;
  assert.equal(st.session, session);
  assert.equal(st.model, "m63");
});

test("unknown_ids: responses with ids not pending are ignored", T, async (t) => {
  const client = simClient(t, { faults: "unknown_ids" });
  const created = await client.create({});
  assert.equal(typeof created.session, "string");
  assert.equal(created.state.status, "idle");
  const st = await client.state();
  assert.equal(st.session, created.session);
  const { turn } = await client.submit({ text: "hello" });
  assert.equal(turn, "t-1");
  const events = await eventsUntil(client, (e) => e.type === "event" && e.name === "turn_finished");
  events.forEach(assertCatalogEvent);
  assertContiguous(events);
  assert.equal((await client.state()).session, created.session);
});

test("unknown_event: the mystery event is not yielded; unknown fields are dropped", T, async (t) => {
  const client = simClient(t, { faults: "unknown_event" });
  const hello = await client.probe();
  assert.ok(!("extra" in hello), `hello passed an unknown field through: ${JSON.stringify(hello)}`);
  const created = await client.create({});
  assert.equal(typeof created.session, "string");
  const { turn } = await client.submit({ text: "hello" });
  assert.equal(turn, "t-1");
  assert.equal((await client.state()).session, created.session);
  const events = await eventsUntil(client, (e) => e.type === "event" && e.name === "turn_finished");
  for (const e of events) {
    assertCatalogEvent(e);
    assert.notEqual(e.name, "mystery");
    assert.deepEqual(Object.keys(e).sort(), ["data", "name", "seq", "type"], `yielded ${JSON.stringify(e)}`);
  }
  for (let i = 1; i < events.length; i++) assert.ok(events[i].seq > events[i - 1].seq, "seq increases");
  // The sim put a mystery event before each answer: the yielded seqs skip those numbers.
  assert.ok(
    events.some((e, i) => i > 0 && e.seq > events[i - 1].seq + 1),
    "the mystery events were seq-checked and skipped",
  );
  assert.deepEqual(
    events.filter((e) => e.name === "output").map((e) => e.data.turn),
    Array(6).fill("t-1"),
  );
});

test("event_flood: one overflow report, requests keep resolving, events flow again after it", T, async (t) => {
  const client = simClient(t, { faults: "event_flood" });
  await client.create({});
  const { turn } = await client.submit({ text: "hello" }); // 2000 events come before this answer
  assert.equal(turn, "t-1");
  assert.equal(typeof (await client.state()).status, "string", "responses flow while events overflow");

  const it = client.events();
  const first = await it.next();
  assert.equal(first.done, false);
  assert.equal(first.value.type, "overflow", `the first item after an overflow is the report: ${JSON.stringify(first.value)}`);
  assert.ok(Number.isInteger(first.value.dropped) && first.value.dropped > 0, `dropped: ${first.value.dropped}`);

  // After the report the pause ends: a new turn's events arrive.
  const { position } = await client.enqueue({ text: "again" });
  assert.ok(Number.isInteger(position));
  const after = await eventsUntil(client, (e) => e.type === "event" && e.name === "turn_finished" && e.data.turn === "t-2");
  assert.ok(!after.some((e) => e.type === "overflow"), "the overflow is reported once");
  after.forEach(assertCatalogEvent);
  assertContiguous(after);
  const t2 = after.filter((e) => e.name !== "state" && e.data?.turn === "t-2").map((e) => e.name);
  assert.deepEqual(t2, ["turn_started", "output", "output", "output", "output", "output", "output", "turn_finished"]);
});

// ---------------------------------------------------------------- framing variants

for (const fault of ["crlf", "split_writes"]) {
  test(`${fault}: a full create + submit turn works, events in order`, T, async (t) => {
    const client = simClient(t, { faults: fault });
    const created = await client.create({});
    assert.equal(created.state.status, "idle");
    const text = "read docs/ünï.md ✓ 🎉 please";
    const { turn } = await client.submit({ text });
    assert.equal(turn, "t-1");
    const events = await eventsUntil(client, (e) => e.type === "event" && e.name === "turn_finished");
    events.forEach(assertCatalogEvent);
    assertContiguous(events);
    const mine = events.filter((e) => e.data?.turn === "t-1" || e.name === "state");
    const names = mine.map((e) => e.name);
    const start = names.indexOf("turn_started");
    assert.deepEqual(names.slice(start), [
      "turn_started",
      "state",
      "tool_call",
      "tool_result",
      "output",
      "output",
      "output",
      "output",
      "output",
      "output",
      "turn_finished",
    ]);
    assert.equal(mine[start].data.text, text);
    const reply = events
      .filter((e) => e.name === "output")
      .map((e) => e.data.text)
      .join("");
    assert.ok(reply.includes(`you said "${text}"`), `reply: ${reply}`);
    assert.equal(events.at(-1).data.status, "completed");
    assert.equal((await client.state()).session, created.session);
  });
}

// ---------------------------------------------------------------- spawning

test("a missing executable: spawn_failed", T, async () => {
  const client = new Client({ executable: "/nonexistent/koma" });
  try {
    assertCode(await rejection(client.probe()), "spawn_failed", "probe:");
    const later = await rejection(client.state());
    assert.ok(NOT_WRITTEN.has(later.code), `a later call: ${later.code}`);
  } finally {
    await client.close();
  }
  assert.equal(client.pid, null);
});

test("a file that is not executable: spawn_failed", T, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "koma-noexec-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "koma");
  writeFileSync(file, "#!/bin/sh\necho hi\n");
  chmodSync(file, 0o644);
  const client = new Client({ executable: file });
  try {
    assertCode(await rejection(client.state()), "spawn_failed", "state:");
  } finally {
    await client.close();
  }
  assert.equal(client.pid, null);
});

test("a directory as the executable: spawn_failed that says it is a directory", T, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "koma-dir-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const client = new Client({ executable: dir });
  t.after(() => client.close());
  const err = await rejection(client.probe());
  assertCode(err, "spawn_failed", "probe:");
  assert.match(err.message, /is a directory/, err.message);
  assert.doesNotMatch(err.message, /permission denied/, err.message);
});

test("an executable with arguments in it: spawn_failed that says arguments are not split", T, async (t) => {
  const client = new Client({ executable: `${SIM} --verbose` });
  t.after(() => client.close());
  const err = await rejection(client.probe());
  assertCode(err, "spawn_failed", "probe:");
  assert.match(err.message, /not split/, err.message);
  assert.match(err.message, /sdk serve/, err.message);
});

// ---------------------------------------------------------------- lifecycle

test("a create after another request: lifecycle, naming the first request; a session needs a new client", T, async (t) => {
  const client = simClient(t);
  await client.state();
  const err = await rejection(client.create({}));
  assertCode(err, "lifecycle", "create:");
  assert.match(err.message, /`state` was written first/, err.message);
  assert.match(err.message, /new client/, err.message);
  // The rule stands and the client goes on: other requests still work.
  assert.equal((await client.state()).status, "idle");
});
