// Ask a person to approve each tool call at a terminal prompt.
//   node examples/approve.mjs "fix the typo in the README"
// Uses koma-sim unless KOMA_EXECUTABLE names a real koma.
import { createInterface } from "node:readline";
import { Client } from "@koma/sdk";
import { simPath } from "@koma/sdk/sim";

const prompt = createInterface({ input: process.stdin });
const answers = prompt[Symbol.asyncIterator](); // lines typed (or piped) in, kept until asked for
const ask = async (question) => {
  process.stdout.write(question);
  const { value, done } = await answers.next();
  return done ? "" : value;
};
const client = new Client({ executable: process.env.KOMA_EXECUTABLE ?? simPath });
try {
  await client.create({ cwd: process.cwd() });
  const { turn } = await client.submit({ text: process.argv[2] ?? "fix the typo in the README" });
  for await (const item of client.events()) {
    if (item.type !== "event") continue;
    switch (item.name) {
      case "output":
        process.stdout.write(item.data.text);
        break;
      case "approval_requested": {
        const answer = await ask(`\nkoma wants to run ${item.data.tool} ${JSON.stringify(item.data.input)}. Allow? [y/N] `);
        const decision = /^y(es)?$/i.test(answer.trim()) ? "allow" : "deny";
        await client.approve({ approval: item.data.approval, decision });
        console.log(`(${decision})`);
        break;
      }
      case "tool_result":
        console.log(`[${item.data.error ? "tool failed" : "tool ok"}]`);
        break;
    }
    if (item.name === "turn_finished" && item.data.turn === turn) {
      console.log(`\n[${item.data.status}]`);
      break;
    }
  }
} finally {
  prompt.close();
  await client.close();
}
