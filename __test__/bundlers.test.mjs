// Bundlers: what works with esbuild, proved on an app (bundle/app.mjs) that
// uses @koma/sdk installed from `npm pack`. Each bundle is run and must run a
// turn with an approval against koma-sim, whose path it is given explicitly
// (KOMA_EXECUTABLE): a bundle has no package folder to find it in.
// `bun build --compile` is proved by bundle/bun-compile.mjs, under Bun
// (`npm run test:runtimes`).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { tempHome } from "./helpers.mjs";
import { packedApp, elsewhere, SIM, NODE_FILE } from "./bundle/packed-app.mjs";

const T = { timeout: 120000 };
let work;
let app;
let addonDir;
before(() => ({ work, app, addonDir } = packedApp()));
after(() => work && rmSync(work, { recursive: true, force: true }));

const bundle = (options) => build({ entryPoints: [join(app, "app.mjs")], bundle: true, platform: "node", logLevel: "silent", ...options });

/** Run a bundle with this Node from `cwd`; returns { status, stdout, stderr, result (the app's JSON line) }. */
function runBundle(file, cwd, env = {}) {
  const r = spawnSync(process.execPath, [file], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, KOMA_EXECUTABLE: SIM, KOMA_SIM_HOME: tempHome(), ...env },
  });
  let result = null;
  try {
    result = JSON.parse(r.stdout.trim().split("\n").at(-1));
  } catch {}
  return { ...r, result };
}

function assertTurn(r, what) {
  assert.equal(r.status, 0, `${what}: exit ${r.status}; stderr: ${r.stderr}`);
  assert.equal(r.result?.status, "completed", `${what}: ${r.stdout}`);
  assert.equal(r.result.output, `Sim reply (sim-1, t-1): you said "fix notes.txt". I asked to write notes.txt. Done.`);
}

test("esbuild cannot bundle @koma/sdk itself: no loader for its .node file (why the recipes below exist)", T, async () => {
  const err = await bundle({ outfile: join(work, "whole.cjs") }).then(
    () => null,
    (e) => e,
  );
  assert.ok(err, "the build fails");
  const texts = err.errors.map((e) => `${e.text} (${e.location?.file})`).join("\n");
  assert.match(texts, /No loader is configured for "\.node" files/);
  assert.match(texts, new RegExp(NODE_FILE.replace(/\./g, "\\.")));
});

for (const format of ["cjs", "esm"]) {
  test(`esbuild, @koma/sdk external (${format}): the bundle runs a turn`, T, async (t) => {
    const outfile = join(app, "dist", `app.${format === "cjs" ? "cjs" : "mjs"}`);
    await bundle({ outfile, format, external: ["@koma/sdk"] });
    const text = readFileSync(outfile, "utf8");
    assert.doesNotMatch(text, /NAPI_RS|koma-sdk\.linux/, "the package's loader is not in the bundle");
    assert.match(text, /["']@koma\/sdk["']/, "the bundle loads the package at run time");
    const r = runBundle(outfile, app);
    assertTurn(r, format);
    t.diagnostic(`@koma/sdk/sim in this bundle (external): ${JSON.stringify(r.result.sim)}`);
  });
}

test("esbuild, .node files with the copy loader: the bundle and the addon, moved together, run a turn", T, async (t) => {
  const outdir = join(work, "copy-out");
  await bundle({ outdir, format: "cjs", outExtension: { ".js": ".cjs" }, loader: { ".node": "copy" } });
  const files = readdirSync(outdir).sort();
  assert.equal(files.length, 2, `app.cjs and the addon: ${files}`);
  const addon = files.find((f) => f.endsWith(".node"));
  assert.ok(addon, files.join(", "));
  const moved = elsewhere(work, "copy-moved");
  for (const f of files) copyFileSync(join(outdir, f), join(moved, f));
  const r = runBundle(join(moved, "app.cjs"), moved);
  assertTurn(r, "copy loader");
  t.diagnostic(`@koma/sdk/sim bundled, then moved: ${JSON.stringify(r.result.sim)}`);
});

test("NAPI_RS_NATIVE_LIBRARY_PATH: a bundle without the .node file loads the addon from that path", T, async () => {
  const outfile = join(work, "ext-node", "app.cjs");
  await bundle({ outfile, format: "cjs", external: ["*.node", "@koma/sdk-*"] }); // the addon and its platform package stay out
  const moved = elsewhere(work, "ext-node-moved");
  copyFileSync(outfile, join(moved, "app.cjs"));
  const without = runBundle(join(moved, "app.cjs"), moved);
  assert.notEqual(without.status, 0, "without the variable there is no addon to load");
  assert.match(without.stderr, /ERR_KOMA_SDK_NO_ADDON/);
  assert.match(without.stderr, /install @koma\/sdk-/, "the error names the platform package to install");
  const r = runBundle(join(moved, "app.cjs"), moved, { NAPI_RS_NATIVE_LIBRARY_PATH: join(addonDir, NODE_FILE) });
  assertTurn(r, "NAPI_RS_NATIVE_LIBRARY_PATH");
});
