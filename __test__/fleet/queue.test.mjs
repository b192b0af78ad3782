// The BullMQ example (examples/fleet) on a Redis the test starts on a port
// of the loopback address: worker processes (worker.mjs) run tasks against
// koma-sim scenarios (some crash in the middle of the turn, some time out,
// some crash or hang on their first attempt only); the queue's retries, a
// worker killed in the middle of a turn, a graceful shutdown, and the
// example run as documented. The koma-sims are counted in this test's own
// process tree (procs.mjs), never machine-wide. `npm run test:fleet` runs it.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { simPath } from "@koma/sdk/sim";
import { FakeKoma, step } from "@koma/sdk/testing";
import { Queue, QueueEvents } from "bullmq";
import { addTasks, gather } from "../../examples/fleet/driver.mjs";
import { connect, QUEUE } from "../../examples/fleet/queue.mjs";
import { root } from "../helpers.mjs";
import { descendants, gone, komas, running } from "./procs.mjs";
import { startRedis } from "../../scripts/lib/redis.mjs";

// What every koma-sim plays: a text with "crash" dies of SIGKILL after one
// output, one with "hang" pauses until it is interrupted, any other is the
// keyword agent's.
const SCENARIO = {
  turns: [
    { match: { contains: "crash" }, times: "always", steps: [step.output("Reading the code..."), step.crash("SIGKILL")] },
    { match: { contains: "hang" }, times: "always", steps: [step.output("Thinking..."), step.pause()] },
  ],
  unscripted: "agent",
};
// What a task's first attempt plays instead, when its folder says so
// (testdata/fleet/first-attempt-koma, the workers' koma).
const FIRST = {
  crashes: { turns: [{ times: "always", steps: [step.output("Reading the code..."), step.crash("SIGKILL")] }] },
  hangs: { turns: [{ times: "always", steps: [step.output("Thinking..."), step.pause()] }] },
};
const WRAPPER = join(root, "testdata", "fleet", "first-attempt-koma");
const WORKER = join(root, "examples", "fleet", "worker.mjs");
const ATTEMPTS = 3;
const JOB = { attempts: ATTEMPTS }; // retried at once: no backoff in a test

/** @type {Awaited<ReturnType<typeof startRedis>>} */
let redis;
/** @type {FakeKoma} */
let koma;
/** @type {Record<string, FakeKoma>} */
const first = {};
let dir = "";
/** @type {import("ioredis").Redis[]} */
const connections = [];
/** @type {Queue} */
let queue;
/** @type {QueueEvents} */
let events;
/** What each job's worker reported when its turn started: `{worker, koma}`, by job id. */
const started = new Map();
/** @type {Set<ReturnType<typeof spawn> & {exited: Promise<unknown[]>}>} */
const workers = new Set();

/**
 * A worker process of the example, once it is ready: its koma is koma-sim
 * playing the scenarios, through the wrapper; `args`: more of worker.mjs's
 * flags (with `--sim`, the worker finds koma-sim itself and plays no scenario).
 */
async function startWorker(args = []) {
  const env = args.includes("--sim") ? {} : { KOMA_EXECUTABLE: WRAPPER, KOMA_SIM: simPath, ...koma.env };
  const child = spawn(process.execPath, [WORKER, "--agents", "4", "--lock-ms", "8000", ...args], {
    env: { ...process.env, REDIS_URL: redis.url, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  // Its end is listened to from the start: a worker may end while the test awaits another.
  const worker = Object.assign(child, { exited: once(child, "exit"), output: () => out });
  workers.add(worker);
  worker.exited.finally(() => workers.delete(worker));
  child.stdout.on("data", (d) => (out += d));
  await new Promise((resolve, reject) => {
    child.stdout.on("data", () => out.includes(": ready") && resolve(undefined));
    child.once("exit", (code) => reject(new Error(`worker exited (${code}) before it was ready:\n${out}`)));
  });
  return worker;
}

/** A task's folder; `attempt`: what its first attempt plays ("crashes", "hangs"). */
function folder(/** @type {string} */ name, /** @type {string | undefined} */ attempt) {
  const d = join(dir, "tasks", name);
  mkdirSync(d, { recursive: true });
  if (attempt) writeFileSync(join(d, "first-attempt"), first[attempt].scenarioPath);
  return d;
}

/** How many times each text was submitted, over every koma-sim. */
function submits() {
  const counts = new Map();
  for (const r of koma.calls("submit")) counts.set(r.params.text, (counts.get(r.params.text) ?? 0) + 1);
  return counts;
}

const methodsOf = (/** @type {number} */ pid) =>
  koma
    .requests()
    .filter((r) => r.pid === pid)
    .map((r) => r.method);

/** Resolves once every job has reported the start of its turn; their reports. */
async function whenStarted(/** @type {import("bullmq").Job[]} */ jobs) {
  const all = () => jobs.every((job) => started.has(job.id));
  while (!all()) await once(events, "progress");
  return jobs.map((job) => started.get(job.id));
}

before(async () => {
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), "koma-fleet-"));
  koma = new FakeKoma(SCENARIO);
  for (const [name, scenario] of Object.entries(FIRST)) first[name] = new FakeKoma(scenario);
  connections.push(connect(redis.url), connect(redis.url));
  queue = new Queue(QUEUE, { connection: connections[0] });
  events = new QueueEvents(QUEUE, { connection: connections[1] });
  events.on("progress", ({ jobId, data }) => started.set(jobId, data));
  await events.waitUntilReady();
});

after(async () => {
  const left = [...workers];
  for (const child of left) child.kill("SIGKILL"); // a failed test's workers: nothing may leak
  await Promise.all(left.map((child) => child.exited));
  await events?.close();
  await queue?.close();
  await Promise.all(connections.map((c) => c.quit()));
  await redis?.stop();
  await Promise.all([koma, ...Object.values(first)].map((k) => k?.close()));
  rmSync(dir, { recursive: true, force: true });
  assert.deepEqual(
    descendants().filter((p) => p.state !== "Z"),
    [],
    "nothing left after the workers and redis are stopped",
  );
});

test("every task is accounted for: results, crashes retried by the queue, timeouts", async () => {
  const pair = await Promise.all([startWorker(), startWorker()]);
  const tasks = {
    done: Array.from({ length: 10 }, (_, i) => ({ id: `done-${i}`, text: `${i % 2 ? "read" : "fix"} src/m${i}.js` })),
    crash: Array.from({ length: 3 }, (_, i) => ({ id: `crash-${i}`, text: `crash while refactoring m${i}` })),
    flaky: Array.from({ length: 3 }, (_, i) => ({ id: `flaky-${i}`, text: `read flaky/f${i}.js`, cwd: folder(`flaky-${i}`, "crashes") })),
    timeout: Array.from({ length: 4 }, (_, i) => ({ id: `timeout-${i}`, text: `hang on m${i}`, timeout: 1000 })),
  };
  const every = Object.values(tasks).flat();
  assert.equal(every.length, 20);
  const jobs = await addTasks(queue, every, JOB);
  const outcomes = await gather(events, jobs);

  assert.deepEqual([...outcomes.keys()].sort(), every.map((t) => t.id).sort(), "every task accounted for, once");
  assert.deepEqual(komas(), [], "every task's koma-sim is closed and gone");
  const counts = submits();
  for (const task of tasks.done) {
    const { result } = outcomes.get(task.id);
    assert.equal(result?.status, "completed", task.id);
    assert.ok(result.output.includes(`you said "${task.text}"`));
    if (task.text.startsWith("fix")) assert.equal(result.toolCalls[0].approval, "deny", "the fleet's approval policy");
    assert.equal(counts.get(task.text), 1);
  }
  for (const task of tasks.crash) {
    const { error } = outcomes.get(task.id);
    assert.equal(error?.code, "transport_failure", task.id);
    assert.equal(error.name, "KomaError");
    assert.match(error.message, /signal|SIGKILL/);
    assert.equal(error.result.output, "Reading the code...", "the turn so far crossed too");
    assert.equal(counts.get(task.text), ATTEMPTS, "the queue tried it again, then gave up");
  }
  for (const task of tasks.flaky) {
    const { result } = outcomes.get(task.id);
    assert.equal(result?.status, "completed", task.id);
    assert.equal(counts.get(task.text), 2, "the first attempt crashed, the queue's retry went well");
    const pids = new Set(
      koma
        .calls("submit")
        .filter((r) => r.params.text === task.text)
        .map((r) => r.pid),
    );
    assert.equal(pids.size, 2, "each attempt had a koma of its own");
  }
  for (const task of tasks.timeout) {
    const { error } = outcomes.get(task.id);
    assert.equal(error?.code, "timeout", task.id);
    assert.equal(error.name, "TimeoutError");
    assert.equal(error.result.output, "Thinking...");
    assert.equal(counts.get(task.text), 1, "a timeout is the task's outcome, not retried");
  }
  for (const worker of pair) worker.kill("SIGTERM");
  assert.deepEqual(await Promise.all(pair.map((w) => w.exited)), [
    [0, null],
    [0, null],
  ]);
});

test("a worker killed in the middle of a turn leaves no koma-sim, and the queue runs its task again", async () => {
  const [a, b] = await Promise.all([startWorker(), startWorker()]);
  const task = { id: "killed", text: "read killed/k.js", cwd: folder("killed", "hangs") };
  const [job] = await addTasks(queue, [task], JOB);
  const [report] = await whenStarted([job]);
  const victim = report.worker === a.pid ? a : b;
  assert.ok(
    descendants(victim.pid).some((p) => p.pid === report.koma),
    "its koma-sim is the worker's child",
  );
  victim.kill("SIGKILL");
  await victim.exited;
  assert.deepEqual(await gone([report.koma]), [], "the worker's koma-sim died with it (parent-death signal)");
  assert.ok(!methodsOf(report.koma).includes("detach"), "killed, not closed");
  const outcomes = await gather(events, [job]); // the other worker's stalled check hands it back; it runs there
  assert.equal(outcomes.get(task.id).result?.status, "completed");
  assert.equal(submits().get(task.text), 2);
  const survivor = victim === a ? b : a;
  survivor.kill("SIGTERM");
  assert.deepEqual(await survivor.exited, [0, null]);
  assert.deepEqual(komas(), []);
});

test("a graceful shutdown closes every client and hands its jobs back to the queue", async () => {
  const [a, b] = await Promise.all([startWorker(), startWorker()]);
  const tasks = Array.from({ length: 4 }, (_, i) => ({ id: `long-${i}`, text: `read long/l${i}.js`, cwd: folder(`long-${i}`, "hangs") }));
  const jobs = await addTasks(queue, tasks, JOB);
  const reports = await whenStarted(jobs);
  const komaPids = reports.map((r) => r.koma);
  assert.deepEqual(komas().sort(), [...komaPids].sort());
  for (const worker of [a, b]) worker.kill("SIGTERM");
  for (const worker of [a, b]) {
    const [code, signal] = await worker.exited;
    assert.deepEqual([code, signal], [0, null], worker.output());
    const its = reports.filter((r) => r.worker === worker.pid).map((r) => r.koma);
    assert.deepEqual(its.filter(running), [], "every client of the worker closed before it exited");
  }
  for (const pid of komaPids) assert.deepEqual(methodsOf(pid).slice(-2), ["interrupt", "detach"], "interrupted, then closed");
  const c = await startWorker(); // takes the jobs that were handed back
  const outcomes = await gather(events, jobs);
  for (const task of tasks) assert.equal(outcomes.get(task.id).result?.status, "completed", task.id);
  for (const job of jobs) assert.equal((await queue.getJob(job.id))?.attemptsMade, 1, "a shutdown costs no attempt");
  c.kill("SIGTERM");
  assert.deepEqual(await c.exited, [0, null]);
  assert.deepEqual(komas(), []);
});

test("the example runs as documented: two workers with koma-sim, and the driver", async () => {
  const pair = await Promise.all([startWorker(["--sim", "--pace-ms", "0"]), startWorker(["--sim", "--pace-ms", "0"])]);
  const driver = spawn(process.execPath, [join(root, "examples", "fleet", "driver.mjs"), "--tasks", "8", "--timeout-ms", "60000"], {
    env: { ...process.env, REDIS_URL: redis.url },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  driver.stdout.on("data", (d) => (out += d));
  assert.deepEqual(await once(driver, "exit"), [0, null], out);
  const lines = out.trim().split("\n");
  const done = lines.filter((l) => l.startsWith("task-"));
  assert.deepEqual(
    done.map((l) => l.split(" ")[0]).sort(),
    Array.from({ length: 8 }, (_, i) => `task-00${i}`),
  );
  assert.ok(
    done.every((l) => l.includes("completed: Sim reply")),
    out,
  );
  assert.match(lines.at(-1) ?? "", /^8 tasks in [\d.]+ s \([\d.]+\/s\): 8 completed$/);
  for (const worker of pair) worker.kill("SIGTERM");
  for (const worker of pair) assert.deepEqual(await worker.exited, [0, null]);
  assert.deepEqual(komas(), []);
});

test("the driver's --timeout-ms bounds each task's turn: a task slower than it ends with timeout, and no koma is left", async () => {
  const pair = await Promise.all([startWorker(["--sim", "--pace-ms", "400"]), startWorker(["--sim", "--pace-ms", "400"])]);
  const driver = spawn(process.execPath, [join(root, "examples", "fleet", "driver.mjs"), "--tasks", "2", "--timeout-ms", "100"], {
    env: { ...process.env, REDIS_URL: redis.url },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  driver.stdout.on("data", (d) => (out += d));
  assert.deepEqual(await once(driver, "exit"), [0, null], out);
  const done = out
    .trim()
    .split("\n")
    .filter((l) => l.startsWith("task-"));
  assert.equal(done.length, 2, out);
  for (const line of done) assert.match(line, /^task-00\d {2}TimeoutError timeout: /, out);
  for (const worker of pair) worker.kill("SIGTERM");
  for (const worker of pair) assert.deepEqual(await worker.exited, [0, null]);
  assert.deepEqual(komas(), []);
});
