// A turn in one call.
//   node run.mjs "summarize the README"
// Runs koma-sim, the stand-in that comes with @koma/sdk, unless KOMA_EXECUTABLE
// names a real koma (`KOMA_EXECUTABLE=koma node run.mjs ...`).
import { Client } from "@koma/sdk";

const executable = process.env.KOMA_EXECUTABLE ?? (await import("@koma/sdk/sim")).simPath;
const client = new Client({ executable });
try {
  await client.create({ cwd: process.cwd() });
  const result = await client.run({ text: process.argv[2] ?? "summarize the README" }, { onApproval: "deny" });
  console.log(result.output);
  console.log(`[${result.status}; ${result.toolCalls.length} tool call(s); ${result.events} events]`);
} finally {
  await client.close(); // (or `await using client = ...`, where the runtime has it)
}
