// What CONTRIBUTING.md says a contributor runs is what runs: the lint
// command of each language (and `npm test` through it), the pre-commit
// hooks, and the CI workflow, which runs `.ci/run` itself. And the docs and
// the test data describe what is, not its history.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { root } from "./helpers.mjs";

const read = (file) => readFileSync(join(root, file), "utf8");

test("npm run lint is scripts/lint.mjs, which npm test runs first; CONTRIBUTING.md names both lint commands", () => {
  const manifest = JSON.parse(read("package.json"));
  assert.equal(manifest.scripts.lint, "node scripts/lint.mjs");
  const lint = read("scripts/lint.mjs");
  for (const check of ["biome", '"fmt", "--all", "--check"', "generate.mjs", "check-deps.mjs", 'join("lib", "tsconfig.json")'])
    assert.ok(lint.includes(check), `lint runs ${check}`);
  assert.match(read("scripts/test.mjs"), /run\(process\.execPath, \[join\(root, "scripts", "lint\.mjs"\)\]\);/);
  const dev = read("python/dev.py");
  assert.match(dev, /"lint": lint,/, "python/dev.py lint");
  const contributing = read("CONTRIBUTING.md");
  for (const command of ["npm run lint", "python3 python/dev.py lint", ".pre-commit-config.yaml", ".github/workflows/ci.yml"])
    assert.ok(contributing.includes(command), `CONTRIBUTING.md names ${command}`);
});

test("the pre-commit hooks are local and run the two lint commands", () => {
  const config = read(".pre-commit-config.yaml");
  assert.deepEqual(
    [...config.matchAll(/^\s+- repo: (\S+)$/gm)].map((m) => m[1]),
    ["local"],
  );
  assert.deepEqual(
    [...config.matchAll(/^\s+entry: (.+)$/gm)].map((m) => m[1]),
    ["npm run lint", "python3 python/dev.py lint"],
  );
});

test("the CI workflow runs .ci/run on every push and pull request, with the runtimes the quick start asks for", () => {
  const ci = read(".github/workflows/ci.yml");
  assert.match(ci, /^on:\n {2}push:\n {2}pull_request:\n/m);
  assert.deepEqual(
    [...ci.matchAll(/^\s+- run: (.+)$/gm)].map((m) => m[1]),
    [".ci/run"],
  );
  assert.match(ci, /setup-node@v\d+\n\s+with: \{ node-version: 20 \}/);
  assert.match(ci, /setup-python@v\d+\n\s+with: \{ python-version: "3\.11" \}/);
  assert.match(ci, /rust-toolchain@stable/);
  // .ci/run is the README's test commands.
  const run = read(".ci/run");
  for (const command of ["npm ci", "npm test", "npm run test:runtimes", "python3 python/dev.py test"])
    assert.match(run, new RegExp(`^${command.replace(/[.:]/g, "\\$&")}$`, "m"), command);
});

test("the docs and the test data say what is, not its history", () => {
  const docs = [
    "README.md",
    "CONTRIBUTING.md",
    "python/README.md",
    "crates/koma-sim/README.md",
    "testdata/scenarios/README.md",
    ...readdirSync(join(root, "docs")).map((f) => `docs/${f}`),
  ];
  const history =
    /\bused to (?:hang|be|fail|print|take|make)\b|\bbefore (?:this version|the surface was|issue\b)|\bno longer (?:hangs|fails)\b/i;
  for (const file of docs) {
    const text = read(file);
    const m = history.exec(text);
    assert.equal(m, null, `${file}: "${m?.[0]}"`);
  }
  for (const file of readdirSync(join(root, "testdata", "scenarios")).filter((f) => f.endsWith(".json"))) {
    const { covers } = JSON.parse(read(`testdata/scenarios/${file}`));
    assert.doesNotMatch(covers ?? "", /\bissue\b/i, `${file}: covers names what it checks, not an issue`);
  }
});
