// A worker of the fleet: takes tasks from the queue (driver.mjs adds them)
// and runs each as one turn of a koma of its own (agent.mjs), up to
// `--agents` at once. A job's return value is the task's outcome: `{result}`
// (the TurnResult) or `{error}` (the KomaError as JSON, with its code). A
// task whose koma died in the middle of the turn is thrown instead, so that
// the queue tries it again (the job's `attempts`), until its last attempt.
//
// SIGTERM or SIGINT shuts it down gracefully: it takes no more jobs,
// interrupts every running turn, closes every client, hands those jobs back
// to the queue (another worker takes them), and exits 0.
//
//   node examples/fleet/worker.mjs --sim                  koma-sim (from @koma/sdk/sim) in place of koma
//   KOMA_EXECUTABLE=/usr/local/bin/koma node examples/fleet/worker.mjs --agents 8
//
// REDIS_URL says where the queue is (redis://127.0.0.1:6379 unless set).
// See docs/scale.md, "Beyond one machine".
import { hostname } from "node:os";
import { parseArgs } from "node:util";
import { isKomaError } from "@koma/sdk";
import { WaitingError, Worker } from "bullmq";
import { RETRY, errorRecord, runTask } from "./agent.mjs";
import { QUEUE, connect } from "./queue.mjs";

const { values: args } = parseArgs({
  options: {
    sim: { type: "boolean", default: false },
    "pace-ms": { type: "string", default: "120" },
    agents: { type: "string", default: "4" },
    "timeout-ms": { type: "string", default: String(10 * 60_000) },
    "lock-ms": { type: "string", default: "30000" },
  },
});

let executable = process.env.KOMA_EXECUTABLE ?? "koma";
/** @type {Record<string, string>} */
const env = {};
if (args.sim) {
  executable = (await import("@koma/sdk/sim")).simPath;
  // koma-sim keeps its sessions in memory: nothing is written on the worker.
  Object.assign(env, { KOMA_SIM_DELAY_MS: args["pace-ms"], KOMA_SIM_SAVE: "0" });
}
const timeout = Number(args["timeout-ms"]);
let stopping = false;

/** @param {import("bullmq").Job} job @param {string | undefined} token @param {AbortSignal | undefined} signal */
async function processJob(job, token, signal) {
  const report = (/** @type {number | null} */ koma) => job.updateProgress({ started: true, host: hostname(), worker: process.pid, koma });
  try {
    return { result: await runTask(job.data, { executable, env, timeout, signal, onStarted: report }) };
  } catch (err) {
    if (!isKomaError(err)) throw err; // a bug: the job fails (and is tried again while attempts remain)
    if (stopping && err.code === "aborted") {
      await job.moveToWait(token); // shut down in the middle: the job goes back, with no attempt counted
      throw new WaitingError();
    }
    const attemptsLeft = job.attemptsMade + 1 < (job.opts.attempts ?? 1);
    if (RETRY.has(err.code) && attemptsLeft) throw err; // the queue tries it again
    return { error: errorRecord(err) };
  }
}

const connection = connect();
const lockDuration = Number(args["lock-ms"]);
const worker = new Worker(QUEUE, processJob, {
  connection,
  concurrency: Number(args.agents),
  // A job whose worker died stays active until its lock expires; the other workers' stalled check then hands it back.
  lockDuration,
  stalledInterval: lockDuration,
});
worker.on("error", (err) => console.error(`worker ${process.pid}: ${err.message}`));

async function shutdown() {
  if (stopping) return;
  stopping = true;
  worker.cancelAllJobs("the worker is shutting down"); // every running turn is interrupted
  await worker.close(); // once every job has settled: every client is closed
  await connection.quit();
  console.log(`worker ${process.pid}: closed`);
}
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);

await worker.waitUntilReady();
console.log(`worker ${process.pid}: ready, ${args.agents} agents, ${executable}`);
