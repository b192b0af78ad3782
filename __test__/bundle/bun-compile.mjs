// `bun build --compile`: a single-file executable of an app that uses
// @koma/sdk (app.mjs, with the package installed from `npm pack`), moved to
// another folder after its build folder is deleted, runs a turn against
// koma-sim. Run with Bun (`bun __test__/bundle/bun-compile.mjs`); the Bun that
// runs it is the one that compiles. scripts/test-runtimes.mjs runs it.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { check, run, tempDir } from "../portable/harness.mjs";
import { packedApp, elsewhere, SIM } from "./packed-app.mjs";

check("bun build --compile: the executable, moved away from its build folder, runs a turn", async ({ after }) => {
  assert.ok(globalThis.Bun, "run this file with Bun");
  const { work, app } = packedApp();
  after(() => rmSync(work, { recursive: true, force: true }));
  const built = join(app, "app-bin");
  const b = spawnSync(process.execPath, ["build", "--compile", join(app, "app.mjs"), "--outfile", built], { cwd: app, encoding: "utf8" });
  assert.equal(b.status, 0, `bun build --compile: ${b.stdout}${b.stderr}`);

  const moved = join(elsewhere(work, "elsewhere"), "app-bin");
  renameSync(built, moved);
  rmSync(app, { recursive: true, force: true }); // nothing left of the package on disk
  assert.ok(!existsSync(app));

  const r = spawnSync(moved, [], {
    cwd: join(work, "elsewhere"),
    encoding: "utf8",
    env: { ...process.env, KOMA_EXECUTABLE: SIM, KOMA_SIM_HOME: tempDir("koma-sim-home-") },
  });
  assert.equal(r.status, 0, `the executable: exit ${r.status}; ${r.stderr}`);
  const result = JSON.parse(r.stdout.trim().split("\n").at(-1));
  assert.equal(result.status, "completed", r.stdout);
  assert.equal(result.output, `Sim reply (sim-1, t-1): you said "fix notes.txt". I asked to write notes.txt. Done.`);
  // For the record: what `@koma/sdk/sim` says inside the executable.
  const simPath = result.sim.simPath;
  console.log(`# @koma/sdk/sim inside the executable: ${JSON.stringify(result.sim)}${simPath ? ` (exists: ${existsSync(simPath)})` : ""}`);
});

await run("bun build --compile");
