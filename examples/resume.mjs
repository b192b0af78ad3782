// Detach from a session, then resume it later in a new process.
//   node resume.mjs            start a session, run a turn, detach; prints the session id
//   node resume.mjs <session>  resume it and print the events it replays
// Runs koma-sim, the stand-in that comes with @koma/sdk, unless KOMA_EXECUTABLE
// names a real koma.
import { Client } from "@koma/sdk";

const executable = process.env.KOMA_EXECUTABLE ?? (await import("@koma/sdk/sim")).simPath;
const saved = process.argv[2];

if (!saved) {
  const client = new Client({ executable });
  const { session } = await client.create({ cwd: process.cwd() });
  const { turn } = await client.submit({ text: "look at the tests" });
  for await (const e of client.events()) if (e.type === "event" && e.name === "turn_finished" && e.data.turn === turn) break;
  await client.detach(); // koma saves the session and exits
  console.log(session);
} else {
  const client = new Client({ executable });
  const { state } = await client.resume({ session: saved, after: 0 });
  console.log(`resumed ${saved}: ${state.status}`);
  for await (const e of client.events()) {
    if (e.type !== "event") continue;
    console.log(`  #${e.seq} ${e.name}`);
    if (e.name === "turn_finished") break;
  }
  await client.close();
}
