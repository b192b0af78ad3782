// The portable smoke suite: the behaviour a user relies on, through a real
// koma-sim child, written to run unchanged under Node, Bun and Deno
// (`node smoke.mjs`, `bun smoke.mjs`, `deno run -A smoke.mjs`).
// scripts/test-runtimes.mjs runs it under every runtime it fetches.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { chmodSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { Client, SIM, root, check, run, simClient, rejection, eventsUntil, gone, until, tempDir, selfCommand } from "./harness.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const CAPABILITIES = [
  "create",
  "resume",
  "state",
  "submit",
  "enqueue",
  "interrupt",
  "interrupt_and_submit",
  "approve",
  "detach",
  "configure",
];
const finished = (turn) => (item) => item.type === "event" && item.name === "turn_finished" && item.data.turn === turn;

/** Each event's seq is the previous one plus 1. */
function assertContiguous(items) {
  const seqs = items.filter((i) => i.type === "event").map((i) => i.seq);
  for (let i = 1; i < seqs.length; i++) assert.equal(seqs[i], seqs[i - 1] + 1, `seq after ${seqs[i - 1]}`);
}

check("probe: starts koma-sim and resolves with its checked hello", async ({ after }) => {
  const client = simClient(after);
  assert.equal(client.pid, null, "nothing starts before the first call");
  const hello = await client.probe();
  assert.equal(hello.type, "hello");
  assert.equal(hello.protocol, 1);
  assert.equal(typeof hello.binary.path, "string");
  assert.equal(typeof hello.binary.version, "string");
  assert.ok(Array.isArray(hello.diagnostics));
  assert.deepEqual([...hello.capabilities].sort(), [...CAPABILITIES].sort());
  assert.deepEqual(Object.keys(hello).sort(), ["binary", "capabilities", "diagnostics", "protocol", "type"]);
  assert.ok(Number.isInteger(client.pid) && client.pid > 0, `pid: ${client.pid}`);
  assert.ok(!gone(client.pid), "koma runs");
});

check("create: a session, idle, and state() agrees", async ({ after }) => {
  const client = simClient(after);
  const cwd = tempDir();
  const created = await client.create({ cwd, model: "sim-2" });
  assert.match(created.session, /^s-/);
  assert.deepEqual(created.state, { session: created.session, status: "idle", turn: null, queued: 0, model: "sim-2" });
  assert.deepEqual(await client.state(), created.state);
  const [first] = await eventsUntil(client, (i) => i.type === "event" && i.name === "diagnostic");
  assert.deepEqual(Object.keys(first).sort(), ["data", "name", "seq", "type"]);
});

check("a turn with an approval: events in order, approve(allow), completed", async ({ after }) => {
  const client = simClient(after);
  await client.create({});
  const { turn } = await client.submit({ text: "fix notes.txt" });
  assert.equal(turn, "t-1");
  const items = [];
  for await (const item of client.events()) {
    items.push(item);
    if (item.type === "event" && item.name === "approval_requested") {
      assert.equal(item.data.tool, "write_file");
      assert.equal((await client.state()).status, "waiting");
      assert.deepEqual(await client.approve({ approval: item.data.approval, decision: "allow" }), {});
    }
    if (finished(turn)(item)) break;
  }
  assert.ok(
    items.every((i) => i.type === "event"),
    "no overflow",
  );
  assertContiguous(items);
  const names = items.filter((i) => i.name !== "state" && i.name !== "diagnostic").map((i) => i.name);
  assert.deepEqual(names, [
    "turn_started",
    "tool_call",
    "approval_requested",
    "tool_result",
    "output",
    "output",
    "output",
    "output",
    "output",
    "output",
    "turn_finished",
  ]);
  const result = items.find((i) => i.name === "tool_result");
  assert.equal(result.data.error, false);
  assert.match(result.data.output, /^wrote \d+ bytes to notes\.txt$/);
  const text = items
    .filter((i) => i.name === "output")
    .map((i) => i.data.text)
    .join("");
  assert.equal(text, `Sim reply (sim-1, t-1): you said "fix notes.txt". I asked to write notes.txt. Done.`);
  assert.equal(items.at(-1).data.status, "completed");
  assert.equal((await client.state()).status, "idle");
  const busy = simClient(after);
  await busy.create({});
  await busy.submit({ text: "edit a.txt" });
  const err = await rejection(busy.submit({ text: "again" }));
  assert.equal(err.code, "remote");
  assert.equal(err.remote.code, "busy");
});

check("events: a flood overflows the buffer once; requests keep resolving; events flow after the report", async ({ after }) => {
  const client = simClient(after, { faults: "event_flood" });
  await client.create({});
  const { turn } = await client.submit({ text: "hello" }); // 2000 events arrive before this answer
  assert.equal(typeof (await client.state()).status, "string", "responses flow while events overflow");
  const it = client.events();
  const first = await it.next();
  assert.equal(first.done, false);
  assert.equal(first.value.type, "overflow", `the first item is the report: ${JSON.stringify(first.value)}`);
  assert.deepEqual(Object.keys(first.value).sort(), ["dropped", "type"]);
  assert.ok(Number.isInteger(first.value.dropped) && first.value.dropped > 0, `dropped: ${first.value.dropped}`);
  await client.enqueue({ text: "again" });
  const rest = await eventsUntil(client, finished("t-2"));
  assert.ok(!rest.some((i) => i.type === "overflow"), "the overflow is reported once");
  assertContiguous(rest);
  assert.equal(turn, "t-1");
});

check("detach, then resume in a new client: the replay starts after `after`, new events continue", async ({ after }) => {
  const home = tempDir("koma-sim-home-");
  const a = simClient(after, { home });
  const { session } = await a.create({});
  const { turn } = await a.submit({ text: "read src/lib.rs" });
  const first = (await eventsUntil(a, finished(turn))).filter((i) => i.type === "event");
  const pid = a.pid;
  assert.deepEqual(await a.detach(), {});
  assert.equal(a.pid, null);
  assert.ok(gone(pid), "koma exited and was reaped when detach resolved");
  for await (const _ of a.events()); // ends after detach
  assert.equal((await rejection(a.state())).code, "lifecycle");

  const b = simClient(after, { home });
  const mid = first[2].seq;
  const resumed = await b.resume({ session, after: mid });
  assert.equal(resumed.session, session);
  assert.equal(resumed.state.status, "idle");
  const last = first.at(-1).seq;
  const replay = await eventsUntil(b, (i) => i.type === "event" && i.seq === last);
  assert.equal(replay[0].seq, mid + 1, "the replay starts after `after`");
  assert.deepEqual(
    replay.map((i) => i.name),
    first.filter((i) => i.seq > mid).map((i) => i.name),
  );
  const { turn: t2 } = await b.submit({ text: "again" });
  assert.equal(t2, "t-2", "turn numbering continues");
  const more = await eventsUntil(b, finished(t2));
  assert.ok(
    more.every((i) => i.seq > last),
    "new events continue the sequence",
  );
});

check("close stops koma and the tool it started in its group (koma ignores detach, EOF and SIGTERM)", async ({ after }) => {
  const client = simClient(after, { faults: "spawn_tool,ignore_detach,ignore_eof,ignore_sigterm" });
  const hello = await client.probe();
  const tool = hello.diagnostics.find((d) => d && typeof d === "object" && "tool_pid" in d)?.tool_pid;
  assert.ok(Number.isInteger(tool), `hello's diagnostics carry the tool's pid: ${JSON.stringify(hello.diagnostics)}`);
  after(() => {
    if (!gone(tool)) process.kill(tool, "SIGKILL");
  });
  await client.create({});
  const pid = client.pid;
  assert.ok(!gone(pid) && !gone(tool), "koma and its tool run");
  await client.close();
  assert.equal(client.pid, null);
  assert.ok(gone(pid), `koma (${pid}) is gone when close() resolves`);
  assert.match(client.stderr, /ignoring detach/, "detach was tried first");
  // The tool is not the client's child: it was killed with koma's group, and
  // its parent (init or a subreaper) reaps it; poll for that.
  await until(() => gone(tool), `the tool ${tool} to be gone`);
  await client.close(); // idempotent
  assert.equal((await rejection(client.state())).code, "closed");
});

check("spawn_failed: a missing executable, a name not on PATH, a file that is not executable", async ({ after }) => {
  const plain = join(tempDir(), "koma");
  writeFileSync(plain, "#!/bin/sh\nexit 0\n");
  chmodSync(plain, 0o644);
  for (const executable of ["/nonexistent/koma", "koma-sdk-no-such-binary", plain]) {
    const client = new Client({ executable });
    after(() => client.close());
    const err = await rejection(client.probe());
    assert.ok(err instanceof Error);
    assert.equal(err.code, "spawn_failed", `${executable}: ${err.code} ${err.message}`);
    assert.ok(err.message.includes(executable), `the message names the executable: ${err.message}`);
    assert.equal(client.pid, null);
    const later = await rejection(client.state());
    assert.equal(later.code, "transport_failure", "later calls fail at once");
    assert.match(later.message, /spawn_failed/, "and say what failed first");
  }
});

check("protocol_error from a fault switch: a log line and a BOM fail the client", async ({ after }) => {
  const client = simClient(after, { faults: "log_line" });
  const created = await rejection(client.create({}));
  assert.equal(created.code, "delivery_unknown", `${created.code}: ${created.message}`);
  let thrown;
  try {
    for await (const _ of client.events());
  } catch (err) {
    thrown = err;
  }
  assert.equal(thrown?.code, "protocol_error", `events() throws the fatal error: ${thrown?.code} ${thrown?.message}`);
  assert.match(thrown.message, /INFO starting worker/, "the message quotes the line");
  assert.equal((await rejection(client.state())).code, "transport_failure", "later calls fail at once");
  await client.close();
  assert.equal(client.pid, null);

  const bom = simClient(after, { faults: "bom" });
  const err = await rejection(bom.probe());
  assert.equal(err.code, "protocol_error", `${err.code}: ${err.message}`);
});

check("long strings: results of 64 KiB (copied) and 2 MiB (external string) arrive whole", async ({ after }) => {
  const client = simClient(after, { env: { KOMA_SIM_BENCH: "1" } });
  for (const bytes of [65536, 2 << 20]) {
    const { blob } = await client.request("bench_blob", { bytes });
    assert.equal(typeof blob, "string");
    assert.equal(blob.length, bytes);
    assert.equal(blob, "x".repeat(bytes));
  }
});

check("cancellation: an aborted call rejects with aborted, a deadline with timeout", async ({ after }) => {
  const client = simClient(after, { faults: "never_answer" });
  await client.probe();
  const controller = new AbortController();
  const pending = client.state({ signal: controller.signal });
  controller.abort();
  assert.equal((await rejection(pending)).code, "aborted");
  assert.equal((await rejection(client.state({ timeout: 1 }))).code, "timeout");
  assert.equal((await rejection(client.state({ signal: AbortSignal.abort() }))).code, "aborted");
  assert.equal((await rejection(client.submit({ txt: "x" }))).code, "invalid_params");
});

check("a client in a worker_threads Worker", async () => {
  const source = `
    const { parentPort, workerData } = require("node:worker_threads");
    const { Client } = require(workerData.index);
    (async () => {
      const c = new Client({ executable: workerData.sim, env: workerData.env });
      const { state } = await c.create({});
      const pid = c.pid;
      await c.close();
      parentPort.postMessage({ status: state.status, pid });
    })().catch((e) => parentPort.postMessage({ error: String(e) }));`;
  const worker = new Worker(source, {
    eval: true,
    workerData: { index: join(root, "index.js"), sim: SIM, env: { KOMA_SIM_DELAY_MS: "0", KOMA_SIM_HOME: tempDir("koma-sim-home-") } },
  });
  // Listen for everything first: a Worker that ends quickly can deliver its
  // last message and its exit in one turn of the event loop.
  const messages = [];
  worker.on("message", (m) => messages.push(m));
  worker.on("error", (e) => messages.push({ error: String(e) }));
  const [code] = await once(worker, "exit");
  assert.equal(code, 0, JSON.stringify(messages));
  assert.equal(messages.length, 1, JSON.stringify(messages));
  assert.equal(messages[0].status, "idle", JSON.stringify(messages));
  assert.ok(gone(messages[0].pid), "koma is gone after close() in the Worker");
});

/** Run a script of this folder with this runtime; resolves when it exits, with its code and output. */
async function runSelf(script, env, onLine, boundMs) {
  const [cmd, args] = selfCommand(join(here, script));
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  let out = "";
  let err = "";
  let timedOut = false;
  child.stderr.on("data", (d) => (err += d));
  child.stdout.on("data", (d) => {
    out += d;
    if (onLine && out.includes("\n")) onLine(out.split("\n")[0], child);
  });
  // `boundMs`: killed after it (a hang made a failure that says so), never a measure of speed.
  const timer = boundMs
    ? setTimeout(() => {
        timedOut = true;
        child.kill("SIGKILL");
      }, boundMs)
    : undefined;
  const [code, signal] = await once(child, "close"); // "close": its output is all read
  clearTimeout(timer);
  return { code, signal, out: out.trim(), err, timedOut };
}

check("a program that forgets close() exits by itself, and koma dies with it", async () => {
  const env = { KOMA_PORTABLE_SIM: SIM, KOMA_SIM_HOME: tempDir("koma-sim-home-"), KOMA_PORTABLE_MODE: "forget" };
  const r = await runSelf("no-close.mjs", env);
  assert.equal(r.code, 0, `exit ${r.code} ${r.signal ?? ""}: ${r.err}`);
  const pid = Number(r.out);
  assert.ok(pid > 0, `the script printed koma's pid: ${r.out}`);
  await until(() => gone(pid), `koma (${pid}) to die with the program`);
});

check("a program killed with SIGKILL takes koma with it (PR_SET_PDEATHSIG)", async () => {
  const env = { KOMA_PORTABLE_SIM: SIM, KOMA_SIM_HOME: tempDir("koma-sim-home-"), KOMA_PORTABLE_MODE: "hang" };
  let pid = 0;
  let ranBefore = false;
  const r = await runSelf("no-close.mjs", env, (line, child) => {
    if (pid) return;
    pid = Number(line);
    ranBefore = pid > 0 && !gone(pid);
    child.kill("SIGKILL");
  });
  assert.equal(r.signal, "SIGKILL", `the program was killed: ${r.code} ${r.signal} ${r.err}`);
  assert.ok(pid > 0, `koma's pid: ${r.out}`);
  assert.ok(ranBefore, "koma ran while the program did");
  await until(() => gone(pid), `koma (${pid}) to die with the program`);
});

check("a program that drops Turns without reading them exits by itself", async () => {
  const env = { KOMA_PORTABLE_SIM: SIM, KOMA_SIM_HOME: tempDir("koma-sim-home-") };
  // A bound that only names a hang (the script takes a second or two), under the harness's own.
  const r = await runSelf("drop-turns.mjs", env, undefined, 45000);
  assert.equal(r.timedOut, false, `it printed ${JSON.stringify(r.out)}, then did not exit in 45 s: ${r.err}`);
  assert.equal(r.code, 0, `exit ${r.code} ${r.signal ?? ""}: ${r.err}`);
  assert.equal(r.out, "done");
});

await run();
