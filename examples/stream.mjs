// Stream a reply to the terminal.
//   node examples/stream.mjs "explain the build"
// Uses koma-sim unless KOMA_EXECUTABLE names a real koma.
import { Client } from "@koma/sdk";
import { simPath } from "@koma/sdk/sim";

const client = new Client({ executable: process.env.KOMA_EXECUTABLE ?? simPath });
try {
  await client.create({ cwd: process.cwd() });
  const { turn } = await client.submit({ text: process.argv[2] ?? "explain the build" });
  for await (const item of client.events()) {
    if (item.type !== "event") continue;
    if (item.name === "output") process.stdout.write(item.data.text);
    if (item.name === "turn_finished" && item.data.turn === turn) {
      process.stdout.write(`\n[${item.data.status}]\n`);
      break;
    }
  }
} finally {
  await client.close();
}
