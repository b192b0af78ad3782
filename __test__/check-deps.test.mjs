// scripts/check-deps.mjs over a Python package: the project's passes, and a
// package with a cycle fails, whether the arrow back is a plain import, one
// under `if TYPE_CHECKING:` or one inside a function.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root } from "./helpers.mjs";

const checkDeps = (...dirs) => spawnSync(process.execPath, [join(root, "scripts", "check-deps.mjs"), ...dirs], { encoding: "utf8" });

/** A package `pkg` of these modules, in a folder removed after the test. */
function pkg(t, modules) {
  const dir = mkdtempSync(join(tmpdir(), "koma-check-deps-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const at = join(dir, "pkg");
  mkdirSync(at);
  for (const [name, text] of Object.entries({ __init__: "", ...modules })) writeFileSync(join(at, `${name}.py`), text);
  return at;
}

test("python/koma_sdk has no cycle", () => {
  const r = checkDeps(join(root, "python", "koma_sdk"));
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test("a package whose modules import each other fails, however the arrow back is written", (t) => {
  const backs = {
    plain: "from ._a import A\n",
    typeChecking: "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from ._a import A\n",
    late: "def f():\n    from . import _a\n    return _a\n",
  };
  for (const [how, back] of Object.entries(backs)) {
    const dir = pkg(t, { _a: "from ._b import B\n\nclass A: ...\n", _b: `${back}\nclass B: ...\n` });
    const r = checkDeps(dir);
    assert.equal(r.status, 1, `${how}: ${r.stdout}${r.stderr}`);
    assert.match(r.stdout + r.stderr, /cycle/, how);
  }
  const ok = checkDeps(pkg(t, { _a: "from ._b import B\n", _b: "class B: ...\n" }));
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
});
