// The BullMQ example's throughput (examples/fleet): tasks per second through
// a queue on a Redis of its own and W worker processes (worker.mjs --sim)
// running A tasks at once each, every task a turn of a koma-sim of its own
// (the driver's demo tasks for koma-sim's keyword agent: reads, and fixes
// whose approval is denied), in three runs:
//
//   paced     KOMA_SIM_DELAY_MS=120 (koma-sim's default): 120 ms before each
//             streamed step, about 1 s a turn, a stand-in for an agent that
//             streams as it works; A = 4, then A = 32 (a real agent's turn is
//             longer: the rate is then about W x A / its turn time)
//   unpaced   KOMA_SIM_DELAY_MS=0, A = 4: what the fleet itself costs per task
//
// and, for each, the same tasks in this one process (W x A at once through
// agent.mjs, no queue). A figure is the median of R rounds of N tasks, after
// one warm-up round, from the first job added to the last outcome.
//
//   node bench/fleet.mjs [--workers W (2)] [--rounds R (3)] [--quick (one round of fewer tasks)]
//
// `npm run test:fleet -- --bench` runs it after the tests (Redis installed).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { simPath } from "@koma/sdk/sim";
import { Queue, QueueEvents } from "bullmq";
import { runTask } from "../examples/fleet/agent.mjs";
import { addTasks, demoTasks, gather } from "../examples/fleet/driver.mjs";
import { connect, QUEUE } from "../examples/fleet/queue.mjs";
import { root } from "../scripts/lib/repo.mjs";
import { startRedis } from "../scripts/lib/redis.mjs";
import { median } from "./stats.mjs";

const { values } = parseArgs({
  options: {
    workers: { type: "string", default: "2" },
    rounds: { type: "string", default: "3" },
    quick: { type: "boolean", default: false },
  },
});
const W = Number(values.workers);
const ROUNDS = values.quick ? 1 : Number(values.rounds);
/** [name, KOMA_SIM_DELAY_MS, tasks at once per worker, tasks per round] */
const RUNS = [
  ["paced", 120, 4, 48],
  ["paced", 120, 32, 256],
  ["unpaced", 0, 4, 200],
];
const JOB = { attempts: 1 };

/** Every outcome must be a completed turn: a benchmark of failures measures nothing. */
function check(/** @type {Map<string, any>} */ outcomes, /** @type {{id: string}[]} */ tasks) {
  const bad = tasks.filter((t) => outcomes.get(t.id)?.result?.status !== "completed");
  if (bad.length) throw new Error(`${bad.length} tasks did not complete, as ${JSON.stringify(outcomes.get(bad[0].id))}`);
}

async function startWorker(/** @type {string} */ url, /** @type {number} */ pace, /** @type {number} */ agents) {
  const args = [join(root, "examples", "fleet", "worker.mjs"), "--sim", "--pace-ms", String(pace), "--agents", String(agents)];
  const child = spawn(process.execPath, args, { env: { ...process.env, REDIS_URL: url }, stdio: ["ignore", "pipe", "inherit"] });
  const exited = once(child, "exit");
  let out = "";
  await new Promise((resolve, reject) => {
    child.stdout.on("data", (d) => {
      out += d;
      if (out.includes(": ready")) resolve(undefined);
    });
    exited.then(([code]) => reject(new Error(`worker exited (${code}) before it was ready: ${out}`)));
  });
  return { child, exited };
}

async function onQueue(/** @type {Queue} */ queue, /** @type {QueueEvents} */ events, /** @type {any[]} */ tasks) {
  const started = performance.now();
  const outcomes = await gather(events, await addTasks(queue, tasks, JOB));
  const seconds = (performance.now() - started) / 1000;
  check(outcomes, tasks);
  return seconds;
}

async function inOneProcess(/** @type {any[]} */ tasks, /** @type {number} */ pace, /** @type {number} */ atOnce) {
  const env = { KOMA_SIM_DELAY_MS: String(pace), KOMA_SIM_SAVE: "0" };
  const started = performance.now();
  const outcomes = new Map();
  let next = 0;
  await Promise.all(
    Array.from({ length: atOnce }, async () => {
      while (next < tasks.length) {
        const task = tasks[next++];
        outcomes.set(task.id, { result: await runTask(task, { executable: simPath, env }) });
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  check(outcomes, tasks);
  return seconds;
}

const redis = await startRedis();
const connections = [connect(redis.url), connect(redis.url)];
const queue = new Queue(QUEUE, { connection: connections[0] });
const events = new QueueEvents(QUEUE, { connection: connections[1] });
const rows = [];
/** @type {{child: import("node:child_process").ChildProcess, exited: Promise<unknown>}[]} */
let workers = [];
try {
  await events.waitUntilReady();
  for (const [name, pace, agents, count] of RUNS) {
    const atOnce = W * agents;
    const n = values.quick ? Math.max(atOnce, count / 4) : count;
    const tasks = demoTasks(n);
    workers = await Promise.all(Array.from({ length: W }, () => startWorker(redis.url, pace, agents)));
    await onQueue(queue, events, tasks.slice(0, atOnce)); // warm-up: the workers' first jobs and spawns
    await inOneProcess(tasks.slice(0, atOnce), pace, atOnce);
    const onQ = [];
    const local = [];
    for (let r = 0; r < ROUNDS; r++) {
      // alternated, so that both see the machine's same moments
      onQ.push(await onQueue(queue, events, tasks));
      local.push(await inOneProcess(tasks, pace, atOnce));
    }
    for (const w of workers) w.child.kill("SIGTERM");
    await Promise.all(workers.map((w) => w.exited));
    workers = [];
    rows.push({ name, pace, agents, n, onQ, local });
  }
} finally {
  for (const w of workers) w.child.kill("SIGKILL");
  await Promise.all(workers.map((w) => w.exited));
  await events.close();
  await queue.close();
  await Promise.all(connections.map((c) => c.quit()));
  await redis.stop();
}

const rate = (/** @type {number} */ n, /** @type {number} */ s) => (n / s).toFixed(1);
console.log(`\nBullMQ, ${W} worker processes; one process: as many tasks at once as the workers together`);
console.log(
  "| koma-sim | at once per worker | tasks per round | queue: tasks/s (median) | one process, no queue: tasks/s | rounds (queue; one process) |",
);
console.log("|---|---:|---:|---:|---:|---|");
for (const { name, pace, agents, n, onQ, local } of rows) {
  const each = `${onQ.map((s) => rate(n, s)).join(", ")}; ${local.map((s) => rate(n, s)).join(", ")}`;
  console.log(`| ${name} (${pace} ms a step) | ${agents} | ${n} | ${rate(n, median(onQ))} | ${rate(n, median(local))} | ${each} |`);
}
