// The package as a user of this runtime gets it: `npm pack` of this
// repository installed in a fresh app folder, imported by name
// (`import { Client } from "@koma/sdk"`, `import { simPath } from
// "@koma/sdk/sim"`), and run with this same runtime: a turn with an approval
// against the bundled koma-sim. scripts/test-runtimes.mjs runs it under Bun
// and Deno (under Node, __test__/package.test.mjs does the same and more).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { check, run, selfCommand, tempDir } from "./harness.mjs";
import { packedApp } from "../bundle/packed-app.mjs";

const MAIN = `
import { Client } from "@koma/sdk";
import { simPath } from "@koma/sdk/sim";
const client = new Client({ executable: simPath, env: { KOMA_SIM_DELAY_MS: "0" } });
await client.create({});
const { turn } = await client.submit({ text: "fix notes.txt" });
let output = "";
for await (const item of client.events()) {
  if (item.type !== "event") continue;
  if (item.name === "approval_requested") await client.approve({ approval: item.data.approval, decision: "allow" });
  if (item.name === "output") output += item.data.text;
  if (item.name === "turn_finished" && item.data.turn === turn) {
    console.log(item.data.status + ": " + output);
    break;
  }
}
await client.close();
`;

check("the packed package, installed and imported by name, runs a turn against @koma/sdk/sim", async ({ after }) => {
  const { work, app } = packedApp();
  after(() => rmSync(work, { recursive: true, force: true }));
  writeFileSync(join(app, "main.mjs"), MAIN);
  const [cmd, args] = selfCommand(join(app, "main.mjs"));
  const r = spawnSync(cmd, args, { cwd: app, encoding: "utf8", env: { ...process.env, KOMA_SIM_HOME: tempDir("koma-sim-home-") } });
  assert.equal(r.status, 0, `exit ${r.status}: ${r.stderr}`);
  assert.equal(r.stdout.trim(), `completed: Sim reply (sim-1, t-1): you said "fix notes.txt". I asked to write notes.txt. Done.`);
});

await run("installed package");
