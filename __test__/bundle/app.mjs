// A small program that uses @koma/sdk the way an application would. The
// bundler tests build it (esbuild, `bun build --compile`), move the result,
// and run it: it runs one turn with an approval and prints a JSON line.
// The koma executable comes from KOMA_EXECUTABLE: a bundle has no package
// folder to find koma-sim in. What `@koma/sdk/sim` says inside the bundle is
// reported too (`sim`), for information.
import { Client } from "@koma/sdk";

async function simInfo() {
  try {
    const { simPath } = await import("@koma/sdk/sim");
    return { simPath };
  } catch (err) {
    return { error: String(err && err.message) };
  }
}

async function main() {
  const executable = process.env.KOMA_EXECUTABLE;
  if (!executable) throw new Error("set KOMA_EXECUTABLE to the koma (or koma-sim) binary");
  const client = new Client({ executable, env: { KOMA_SIM_DELAY_MS: "0" } });
  try {
    await client.create({});
    const { turn } = await client.submit({ text: "fix notes.txt" });
    let output = "";
    let status = null;
    for await (const item of client.events()) {
      if (item.type !== "event") continue;
      if (item.name === "approval_requested") await client.approve({ approval: item.data.approval, decision: "allow" });
      if (item.name === "output") output += item.data.text;
      if (item.name === "turn_finished" && item.data.turn === turn) {
        status = item.data.status;
        break;
      }
    }
    console.log(JSON.stringify({ status, output, sim: await simInfo() }));
  } finally {
    await client.close();
  }
}

main().catch((err) => {
  console.error(`app failed: ${err && err.code ? `${err.code}: ` : ""}${err && err.message}`);
  process.exitCode = 1;
});
