// Ask a person to approve each tool call at a terminal prompt: onApproval may
// take as long as the person needs.
//   node approve.mjs "fix the typo in the README"
// Runs koma-sim, the stand-in that comes with @koma/sdk, unless KOMA_EXECUTABLE
// names a real koma.
import { createInterface } from "node:readline";
import { Client } from "@koma/sdk";

const executable = process.env.KOMA_EXECUTABLE ?? (await import("@koma/sdk/sim")).simPath;

const prompt = createInterface({ input: process.stdin });
const answers = prompt[Symbol.asyncIterator](); // lines typed (or piped) in, kept until asked for
const ask = async (question) => {
  process.stdout.write(question);
  const { value, done } = await answers.next();
  return done ? "" : value;
};

const client = new Client({ executable });
try {
  await client.create({ cwd: process.cwd() });
  const turn = client.turn(
    { text: process.argv[2] ?? "fix the typo in the README" },
    {
      onApproval: async ({ tool, input }) => {
        const answer = await ask(`\nkoma wants to run ${tool} ${JSON.stringify(input)}. Allow? [y/N] `);
        const decision = /^y(es)?$/i.test(answer.trim()) ? "allow" : "deny";
        console.log(`(${decision})`);
        return decision;
      },
    },
  );
  for await (const item of turn) {
    if (item.type !== "event") continue;
    if (item.name === "output") process.stdout.write(item.data.text);
    if (item.name === "tool_result") console.log(`[${item.data.error ? "tool failed" : "tool ok"}]`);
  }
  console.log(`\n[${(await turn.result).status}]`);
} finally {
  prompt.close();
  await client.close();
}
