// The TypeScript usage file runs (through tsx), `await using` included.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SIM, root, tempHome } from "./helpers.mjs";

test("the typed usage file runs: typed methods, event narrowing, await using", { timeout: 60000 }, () => {
  const r = spawnSync(
    process.execPath,
    [join(root, "node_modules", "tsx", "dist", "cli.mjs"), join(root, "__test__", "types", "usage.ts")],
    {
      env: { ...process.env, KOMA_SIM: SIM, KOMA_SIM_HOME: tempHome() },
      encoding: "utf8",
    },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout.trim().split("\n").at(-1)), {
    ok: true,
    caps: 10,
    status: "idle",
    finished: "completed",
    approvals: ["allow"],
    pieces: 6,
    same: true,
  });
});

test("the typings declare the public API only: no test hook, no loader metadata", () => {
  const dts = readFileSync(join(root, "index.d.ts"), "utf8");
  for (const name of ["__census", "Census", "__napiBindingTarget", "__traceContext", "__telemetryTable"]) {
    assert.doesNotMatch(dts, new RegExp(`\\b${name}\\b`), `index.d.ts names ${name}`);
  }
  assert.match(dts, /export interface Turn extends AsyncIterable<EventItem> \{/, "Turn is a type with no constructor");
  assert.doesNotMatch(dts, /declare class Turn\b/);
});

test("RunOptions documents each option, as TurnOptions does", () => {
  const dts = readFileSync(join(root, "index.d.ts"), "utf8");
  for (const name of ["RunOptions", "TurnOptions"]) {
    const body = dts.match(new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`))[1];
    for (const field of ["mode?", "onApproval", "signal?", "timeout?"]) {
      assert.match(body, new RegExp(`\\*/\\n\\s*${field.replace("?", "\\?")}\\??:`), `${name}.${field} has a doc comment`);
    }
  }
});

test("the typings compile under tsc --strict: an async onApproval, errors narrowed by code, env: process.env", { timeout: 120000 }, () => {
  // __test__/types/errors-approvals.ts (and usage.ts): what a TypeScript user writes, and what must not compile.
  const r = spawnSync(
    process.execPath,
    [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(root, "__test__", "types", "tsconfig.json")],
    {
      encoding: "utf8",
    },
  );
  assert.equal(r.status, 0, r.stdout + r.stderr);
});
