// `npm pack` makes a tarball that installs in a fresh folder and works there:
// require, import, a strict TypeScript program (nodenext, await using), and
// the examples; it carries the linux-x64 binary and no build leftovers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root, tempHome } from "./helpers.mjs";

const npm = (args, cwd) => execFileSync("npm", args, { cwd, encoding: "utf8", env: { ...process.env, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" } });

test("the packed tarball installs in a fresh folder and works there", { timeout: 180000 }, async (t) => {
  const work = mkdtempSync(join(tmpdir(), "koma-pack-"));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const packed = JSON.parse(npm(["pack", "--json", "--pack-destination", work], root));
  const files = packed[0].files.map((f) => f.path).sort();
  assert.ok(files.includes("koma-sdk.linux-x64-gnu.node"), "carries the linux-x64 binary");
  assert.ok(files.includes("bin/koma-sim"));
  assert.ok(files.includes("index.d.ts") && files.includes("index.js"));
  for (const f of files) assert.doesNotMatch(f, /^(target|src|crates|__test__|bench|fuzz|node_modules|scripts)\//, `no build leftovers: ${f}`);

  const app = join(work, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", private: true, type: "module" }));
  npm(["install", "--offline", "--no-package-lock", join(work, packed[0].filename)], app);
  const env = { ...process.env, KOMA_SIM_DELAY_MS: "0", KOMA_SIM_HOME: tempHome() };
  const run = (args, input) => {
    const r = spawnSync(process.execPath, args, { cwd: app, env, encoding: "utf8", input });
    assert.equal(r.status, 0, `${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };

  writeFileSync(join(app, "cjs.cjs"), `
    const { Client } = require("@koma/sdk");
    const { simPath } = require("@koma/sdk/sim");
    const c = new Client({ executable: simPath });
    c.probe().then((h) => { console.log(h.protocol); return c.close(); });`);
  assert.equal(run(["cjs.cjs"]).trim(), "1");

  writeFileSync(join(app, "esm.mjs"), `
    import { Client } from "@koma/sdk";
    import { simPath } from "@koma/sdk/sim";
    const c = new Client({ executable: simPath });
    console.log((await c.create({})).state.status);
    await c.close();`);
  assert.equal(run(["esm.mjs"]).trim(), "idle");

  // A strict TypeScript program, module nodenext, await using.
  writeFileSync(join(app, "main.ts"), `
    import { Client, type EventItem } from "@koma/sdk";
    import { simPath } from "@koma/sdk/sim";
    await using client = new Client({ executable: simPath });
    await client.create({});
    const { turn } = await client.submit({ text: "read it" });
    let pieces = 0;
    for await (const item of client.events() as AsyncIterable<EventItem>) {
      if (item.type === "event" && item.name === "output") pieces += item.data.text.length > 0 ? 1 : 0;
      if (item.type === "event" && item.name === "turn_finished" && item.data.turn === turn) break;
    }
    // @ts-expect-error misspelt param
    void client.submit({ txt: "x" }).catch(() => {});
    console.log(pieces > 0 ? "streamed" : "nothing");
  `);
  writeFileSync(join(app, "tsconfig.json"), JSON.stringify({
    compilerOptions: { strict: true, module: "nodenext", moduleResolution: "nodenext", target: "ES2022", lib: ["ES2022", "ESNext.Disposable"], outDir: "out", typeRoots: [join(root, "node_modules", "@types")], types: ["node"] },
    files: ["main.ts"],
  }));
  const tsc = spawnSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", app], { encoding: "utf8" });
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
  assert.equal(run(["out/main.js"]).trim(), "streamed");

  // The examples, copied in as a user would.
  cpSync(join(root, "examples"), join(app, "examples"), { recursive: true });
  assert.match(run(["examples/stream.mjs", "hello"]), /\[completed\]/);
  assert.match(run(["examples/approve.mjs"], "y\n"), /\(allow\)[\s\S]*\[completed\]/);
  const session = run(["examples/resume.mjs"]).trim();
  assert.match(run(["examples/resume.mjs", session]), /resumed .*: idle[\s\S]*turn_finished/);
  assert.ok(readdirSync(join(app, "node_modules", "@koma", "sdk")).includes("index.js"));
});
