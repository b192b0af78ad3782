// A turn in one call.
//   node examples/run.mjs "summarize the README"
// Uses koma-sim unless KOMA_EXECUTABLE names a real koma.
import { Client } from "@koma/sdk";
import { simPath } from "@koma/sdk/sim";

const client = new Client({ executable: process.env.KOMA_EXECUTABLE ?? simPath });
try {
  await client.create({ cwd: process.cwd() });
  const result = await client.run({ text: process.argv[2] ?? "summarize the README" }, { onApproval: "deny" });
  console.log(result.output);
  console.log(`[${result.status}; ${result.toolCalls.length} tool call(s); ${result.events} events]`);
} finally {
  await client.close(); // (or `await using client = ...`, where the runtime has it)
}
