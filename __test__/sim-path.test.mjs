// `@koma/sdk/sim` gives the same answer however it is loaded: a string path
// where koma-sim is found, and the ERR_KOMA_SIM_NOT_FOUND error where it is
// not (never an `undefined` path). Each case runs in a child Node process
// inside this package, so that `@koma/sdk/sim` resolves by name through the
// package's own `exports`, as it does in a user's project.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { root, SIM } from "./helpers.mjs";

const nowhere = join(root, "no-such-dir", "koma-sim");

/** Run `code` in a child Node (ESM with `module`), with KOMA_SIM_PATH set or unset. */
function node(code, { module = true, simPath } = {}) {
  const env = { ...process.env };
  delete env.KOMA_SIM_PATH;
  if (simPath !== undefined) env.KOMA_SIM_PATH = simPath;
  const args = module ? ["--input-type=module", "-e", code] : ["-e", code];
  return spawnSync(process.execPath, args, { cwd: root, env, encoding: "utf8" });
}

/** The child's one JSON line of output, after checking it exited 0. */
function report(r) {
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

// What a child prints for a load that may throw: {value} or {code, message}.
const settle = `
  const settle = async (load) => {
    try { return { value: await load() }; } catch (e) { return { code: e.code, message: e.message }; }
  };`;

test("koma-sim missing: the named and the default ES import both throw ERR_KOMA_SIM_NOT_FOUND, as the CommonJS read does", () => {
  const expected = `KOMA_SIM_PATH is ${JSON.stringify(nowhere)}, and there is no such file`;

  // Static imports: the import itself fails, so the program never starts.
  for (const code of [
    `import { simPath } from "@koma/sdk/sim"; console.log("ran with", simPath);`,
    `import sim from "@koma/sdk/sim"; console.log("ran with", sim.simPath);`,
  ]) {
    const r = node(code, { simPath: nowhere });
    assert.equal(r.status, 1, `${code}: ${r.stdout}${r.stderr}`);
    assert.equal(r.stdout, "", code);
    assert.match(r.stderr, /code: 'ERR_KOMA_SIM_NOT_FOUND'/, code);
    assert.ok(r.stderr.includes(expected), `${code}: ${r.stderr}`);
  }

  // The same error, caught: a dynamic import rejects with it, and in
  // CommonJS `require` loads while reading `simPath` throws it.
  const esm = report(
    node(
      `${settle}
    console.log(JSON.stringify(await settle(() => import("@koma/sdk/sim"))));`,
      { simPath: nowhere },
    ),
  );
  const cjs = report(
    node(
      `${settle}
    const sim = require("@koma/sdk/sim");
    settle(() => sim.simPath).then((r) => console.log(JSON.stringify(r)));`,
      { module: false, simPath: nowhere },
    ),
  );
  for (const got of [esm, cjs]) {
    assert.equal(got.code, "ERR_KOMA_SIM_NOT_FOUND", JSON.stringify(got));
    assert.ok(got.message.includes(expected), got.message);
    assert.match(got.message, /cargo build --release -p koma-sim/, "says how to get koma-sim");
  }
  assert.equal(esm.message, cjs.message, "one error, whichever way the module is loaded");
});

test("koma-sim found: the named import, the default import and require give the same path", () => {
  for (const [simPath, want] of [
    [SIM, SIM],
    [undefined, SIM],
  ]) {
    const esm = report(
      node(
        `
      import { simPath } from "@koma/sdk/sim";
      import sim from "@koma/sdk/sim";
      console.log(JSON.stringify({ named: simPath, byDefault: sim.simPath }));`,
        { simPath },
      ),
    );
    const cjs = report(node(`console.log(JSON.stringify(require("@koma/sdk/sim").simPath));`, { module: false, simPath }));
    assert.deepEqual(esm, { named: want, byDefault: want }, `KOMA_SIM_PATH ${simPath ?? "unset"}`);
    assert.equal(cjs, want, `KOMA_SIM_PATH ${simPath ?? "unset"}`);
  }
});
