// Stream a reply to the terminal, as it comes: iterate the Turn.
//   node stream.mjs "explain the build"
// Runs koma-sim, the stand-in that comes with @koma/sdk, unless KOMA_EXECUTABLE
// names a real koma.
import { Client } from "@koma/sdk";

const executable = process.env.KOMA_EXECUTABLE ?? (await import("@koma/sdk/sim")).simPath;
const client = new Client({ executable });
try {
  await client.create({ cwd: process.cwd() });
  const turn = client.turn({ text: process.argv[2] ?? "explain the build" }, { onApproval: "deny" });
  for await (const item of turn) {
    if (item.type === "event" && item.name === "output") process.stdout.write(item.data.text);
  }
  const { status } = await turn.result;
  process.stdout.write(`\n[${status}]\n`);
} finally {
  await client.close();
}
