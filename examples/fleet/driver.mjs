// The driver of the fleet: adds tasks to the queue, and gathers every task's
// outcome as the workers (worker.mjs) finish them: `{result}` (a TurnResult)
// or `{error}` (a KomaError as JSON: name, code, message, result so far).
//
//   node examples/fleet/driver.mjs                  20 demo tasks for koma-sim's keyword agent
//   node examples/fleet/driver.mjs --tasks 200
//   node examples/fleet/driver.mjs --timeout-ms 60000   each task's turn bounded (milliseconds; the worker's
//                                                       --timeout-ms, 10 minutes, unless given)
//
// REDIS_URL says where the queue is (redis://127.0.0.1:6379 unless set).
// See docs/scale.md, "Beyond one machine".
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Queue, QueueEvents } from "bullmq";
import { QUEUE, connect } from "./queue.mjs";

/** A job's options: 3 attempts (for a koma that died in the middle), 1 s apart. */
export const JOB_OPTIONS = { attempts: 3, backoff: { type: "fixed", delay: 1000 } };

/**
 * Adds the tasks; their jobs, in order.
 * @param {Queue} queue
 * @param {import("./agent.mjs").Task[]} tasks
 * @param {import("bullmq").JobsOptions} [options]
 */
export function addTasks(queue, tasks, options = JOB_OPTIONS) {
  return queue.addBulk(tasks.map((task) => ({ name: task.id, data: task, opts: options })));
}

/**
 * Every task's outcome, by task id, as each finishes (`onOutcome(id,
 * outcome)`). A job that failed (a bug of the worker, not a KomaError) gives
 * `{failed: reason}`.
 * @param {QueueEvents} events
 * @param {import("bullmq").Job[]} jobs
 * @param {(id: string, outcome: any) => void} [onOutcome]
 */
export async function gather(events, jobs, onOutcome = () => {}) {
  /** @type {Map<string, any>} */
  const outcomes = new Map();
  // Each job's waitUntilFinished() listens to its queue's "closing" while it waits.
  const queues = new Set(jobs.map((job) => /** @type {Queue} */ (job.queue)));
  for (const queue of queues) queue.setMaxListeners(queue.getMaxListeners() + jobs.length);
  try {
    await Promise.all(
      jobs.map(async (job) => {
        let outcome;
        try {
          outcome = await job.waitUntilFinished(events);
        } catch (err) {
          outcome = { failed: /** @type {Error} */ (err).message };
        }
        outcomes.set(job.data.id, outcome);
        onOutcome(job.data.id, outcome);
      }),
    );
  } finally {
    for (const queue of queues) queue.setMaxListeners(queue.getMaxListeners() - jobs.length);
  }
  return outcomes;
}

/**
 * Tasks for koma-sim's keyword agent: reads, and fixes that ask for
 * approval; each with its turn's deadline, `timeout` (milliseconds), if given.
 * @param {number} n
 * @param {number} [timeout]
 * @returns {import("./agent.mjs").Task[]}
 */
export function demoTasks(n, timeout) {
  const verbs = ["read", "fix", "look at", "show"];
  return Array.from({ length: n }, (_, i) => ({
    id: `task-${String(i).padStart(3, "0")}`,
    text: `${verbs[i % 4]} src/module_${i}.js`,
    ...(timeout === undefined ? {} : { timeout }),
  }));
}

/** @param {any} outcome */
export function describe(outcome) {
  if (outcome.result) return `${outcome.result.status}: ${outcome.result.output.slice(0, 100)}`;
  if (outcome.error) return `${outcome.error.name} ${outcome.error.code}: ${outcome.error.message.slice(0, 100)}`;
  return `failed: ${outcome.failed}`;
}

async function main() {
  const { values: args } = parseArgs({ options: { tasks: { type: "string", default: "20" }, "timeout-ms": { type: "string" } } });
  const n = Number(args.tasks);
  const timeout = args["timeout-ms"] === undefined ? undefined : Number(args["timeout-ms"]);
  if (timeout !== undefined && !(timeout > 0)) throw new Error(`--timeout-ms must be a number of milliseconds, not ${args["timeout-ms"]}`);
  const connection = connect();
  const listening = connect(); // QueueEvents blocks on its connection
  const queue = new Queue(QUEUE, { connection });
  const events = new QueueEvents(QUEUE, { connection: listening });
  try {
    await events.waitUntilReady(); // listening before the first job can finish
    const started = performance.now();
    const jobs = await addTasks(queue, demoTasks(n, timeout));
    /** @type {Map<string, number>} */
    const ends = new Map();
    await gather(events, jobs, (id, outcome) => {
      const end = outcome.result?.status ?? outcome.error?.code ?? "failed";
      ends.set(end, (ends.get(end) ?? 0) + 1);
      console.log(`${id}  ${describe(outcome)}`);
    });
    const seconds = (performance.now() - started) / 1000;
    const summary = [...ends]
      .sort()
      .map(([end, count]) => `${count} ${end}`)
      .join(", ");
    console.log(`${n} tasks in ${seconds.toFixed(1)} s (${(n / seconds).toFixed(1)}/s): ${summary}`);
  } finally {
    await events.close();
    await queue.close();
    await Promise.all([connection.quit(), listening.quit()]);
  }
}

if (realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
