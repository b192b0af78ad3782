// Stream a reply to the terminal, as it comes: iterate the Turn.
//   node examples/stream.mjs "explain the build"
// Uses koma-sim unless KOMA_EXECUTABLE names a real koma.
import { Client } from "@koma/sdk";
import { simPath } from "@koma/sdk/sim";

const client = new Client({ executable: process.env.KOMA_EXECUTABLE ?? simPath });
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
