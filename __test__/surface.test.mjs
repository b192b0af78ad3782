// The stale check of the files generated from surface/protocol.json: it
// passes on the repository as committed, and fails, naming the file, when a
// generated file is edited by hand or the description changes without them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root } from "./helpers.mjs";

const GENERATED = [
  "crates/koma-transport/src/surface.rs",
  "lib/methods.js",
  "python/koma_sdk/_codes.py",
  "python/koma_sdk/_surface.py",
  "src/header.d.ts",
  "docs/protocol.md",
  "README.md",
];

/** A copy of what the generator reads and writes, in a folder of its own. */
function copy(t) {
  const dir = mkdtempSync(join(tmpdir(), "koma-surface-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const file of ["scripts/surface.mjs", "scripts/lib/repo.mjs", "surface/protocol.json", "rustfmt.toml", ...GENERATED])
    cpSync(join(root, file), join(dir, file), { recursive: true });
  return dir;
}

const check = (dir) => spawnSync(process.execPath, [join(dir, "scripts/surface.mjs"), "--check"], { encoding: "utf8" });

test("the generated files are up to date on this checkout", (t) => {
  const run = check(copy(t));
  assert.equal(run.status, 0, run.stderr);
});

test("a generated file edited by hand fails the check, which names it", (t) => {
  const dir = copy(t);
  for (const file of GENERATED) {
    const before = readFileSync(join(dir, file), "utf8");
    // Inside the generated part: a file's region, or the whole file.
    const at = before.search(/surface:\w+.*\n/);
    const edited = at < 0 ? `${before}\nedited by hand\n` : before.replace(/(surface:\w+.*\n)/, "$1edited by hand\n");
    assert.ok(at < 0 || ["src/header.d.ts", "docs/protocol.md", "README.md"].includes(file), file);
    writeFileSync(join(dir, file), edited);
    const run = check(dir);
    assert.equal(run.status, 1, `${file}: ${run.stdout}`);
    assert.match(run.stderr, new RegExp(`stale .*${file.replace(/[.]/g, "\\.")}`), file);
    writeFileSync(join(dir, file), before);
  }
  assert.equal(check(dir).status, 0, "each file restored, the check passes again");
});

test("a method added to the description makes every file that lists methods stale", (t) => {
  const dir = copy(t);
  const path = join(dir, "surface/protocol.json");
  const spec = JSON.parse(readFileSync(path, "utf8"));
  spec.methods.push({ name: "ping", doc: "Check that koma answers.", params: {}, result: null });
  writeFileSync(path, JSON.stringify(spec, null, 2));
  const run = check(dir);
  assert.equal(run.status, 1);
  for (const file of [
    "crates/koma-transport/src/surface.rs",
    "lib/methods.js",
    "python/koma_sdk/_surface.py",
    "src/header.d.ts",
    "docs/protocol.md",
  ])
    assert.ok(run.stderr.includes(file), `${file} is stale: ${run.stderr}`);
});
