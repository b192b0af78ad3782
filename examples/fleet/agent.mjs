// One task as one turn of a koma of its own: the client is started for the
// task, in the task's folder, and closed when the task ends, however it
// ends. What a worker of the fleet runs for each job (worker.mjs), and what
// crosses the queue of it: a task's outcome as plain JSON.
import { Client } from "@koma/sdk";

/**
 * @typedef {{ id: string, text: string, cwd?: string, timeout?: number }} Task
 *   `cwd`: the folder on the worker where the agent works; `timeout`: the
 *   turn's deadline in milliseconds.
 * @typedef {{ name: string, code: string, message: string, remote?: unknown, result?: unknown }} ErrorRecord
 *   A KomaError as JSON: its class's name ("KomaError", "TimeoutError",
 *   "AbortError"), code, message, the server's error for code `remote`, and
 *   what the turn had done.
 * @typedef {{ result: import("@koma/sdk").TurnResult } | { error: ErrorRecord }} Outcome
 */

/** The codes a new attempt may fix: koma died, or its pipe broke, in the middle of the task. */
export const RETRY = new Set(["transport_failure"]);

/**
 * Runs `task`; its TurnResult, or throws its KomaError. `executable` is koma
 * on this worker (a name on its PATH, a path, or a wrapper script); `env` is
 * added to koma's environment; `onApproval` answers every approval (nobody
 * watches a fleet); `timeout` bounds a turn unless the task says; `signal`
 * interrupts the turn; `onStarted(pid)` is told once the turn has started,
 * with koma's process id.
 * @param {Task} task
 * @param {{ executable: string, env?: Record<string, string>, onApproval?: "allow" | "deny",
 *   timeout?: number, signal?: AbortSignal, onStarted?: (pid: number | null) => unknown }} options
 */
export async function runTask(task, { executable, env, onApproval = "deny", timeout, signal, onStarted }) {
  const client = new Client({ executable, env, cwd: task.cwd });
  try {
    await client.create(task.cwd ? { cwd: task.cwd } : {});
    const turn = client.turn({ text: task.text }, { onApproval, timeout: task.timeout ?? timeout, signal });
    await turn.id;
    Promise.resolve(onStarted?.(client.pid)).catch(() => {}); // a report, not part of the task
    return await turn.result;
  } finally {
    await client.close();
  }
}

/**
 * A KomaError as JSON, whole.
 * @param {any} err
 * @returns {ErrorRecord}
 */
export function errorRecord(err) {
  /** @type {ErrorRecord} */
  const record = { name: err.name, code: err.code, message: err.message };
  if (err.remote !== undefined) record.remote = err.remote;
  if (err.result !== undefined) record.result = err.result;
  return record;
}
