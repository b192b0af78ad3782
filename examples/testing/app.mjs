// The program under test: it runs one turn of a task, lets the agent use
// only the tools it trusts, and tells the user how it went.
import { isKomaError } from "@koma/sdk";

/** The tools the agent may use without asking anyone. */
export const SAFE_TOOLS = new Set(["read_file", "run_tests"]);

/** Allow the safe tools, deny every other. */
export const approve = ({ tool }) => (SAFE_TOOLS.has(tool) ? "allow" : "deny");

/** Run `text` as a turn of `client`'s session; a line for the user. */
export async function runTask(client, text) {
  try {
    const result = await client.run({ text }, { onApproval: approve });
    return `${result.status}: ${result.output}`;
  } catch (err) {
    if (isKomaError(err) && err.code === "remote" && err.remote.code === "busy") return "Koma is busy with another task: try again later.";
    // Koma ended during the turn, or before it answered the request (which
    // it may or may not have carried out): either way, the task stopped.
    if (isKomaError(err) && (err.code === "transport_failure" || err.code === "delivery_unknown"))
      return "Koma stopped in the middle of the task.";
    throw err;
  }
}
