// The stale check of schema/ and the files generated from it: it passes on
// the repository as committed; it fails naming the file and the JSON path
// when a schema breaks JSON Schema 2020-12 or the project's subset, and
// naming the file when a generated file is edited by hand or a schema
// changes without them. Each case runs on a copy of the repository's
// generator, schemas and generated files.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OUTPUTS } from "../scripts/schema/outputs.mjs";
import { root } from "./helpers.mjs";

const GENERATED = OUTPUTS.filter((o) => o.make).map((o) => o.file);

/** A copy of what the generator reads and writes, in a folder of its own. */
function copy(t) {
  const dir = mkdtempSync(join(tmpdir(), "koma-generate-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const file of [
    "scripts/generate.mjs",
    "scripts/schema",
    "scripts/lib/repo.mjs",
    "schema",
    "rustfmt.toml",
    "src/header.d.ts",
    "lib/testing-header.d.ts",
    "python/dev.py",
    "python/pyproject.toml",
    ...GENERATED,
  ])
    cpSync(join(root, file), join(dir, file), { recursive: true });
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"), "junction"); // a junction on Windows: no privilege needed
  return dir;
}

const check = (dir) => spawnSync(process.execPath, [join(dir, "scripts/generate.mjs"), "--check"], { encoding: "utf8" });

const generate = (dir) => spawnSync(process.execPath, [join(dir, "scripts/generate.mjs")], { encoding: "utf8" });

/** After `npm run generate` in `dir`: the text of each of `files`. */
function regenerated(dir, files) {
  const run = generate(dir);
  assert.equal(run.status, 0, run.stderr);
  return Object.fromEntries(files.map((f) => [f, readFileSync(join(dir, f), "utf8")]));
}

/** The files the check in `dir` names stale (it must fail), sorted. */
function staleIn(dir) {
  const run = check(dir);
  assert.equal(run.status, 1, run.stdout);
  return run.stderr
    .match(/stale \(schema\/ says otherwise\): (.*); run/)[1]
    .split(", ")
    .sort();
}

/** What a change of the scenario format's types makes stale, besides the files a new step adds to it. */
const SCENARIO_TYPES = [
  "crates/koma-sim/src/scenario/format.rs",
  "docs/koma-sim.md",
  "docs/testing-python.md",
  "docs/testing.md",
  "python/koma_sdk/_scenario_types.py",
  "testing.d.ts",
];

/** The scenario docs, regenerated in `dir`. */
const SCENARIO_DOCS = ["docs/koma-sim.md", "docs/testing.md", "docs/testing-python.md"];

/** Edit the JSON of `file` in `dir` with `change`. */
function editJson(dir, file, change) {
  const path = join(dir, file);
  const doc = JSON.parse(readFileSync(path, "utf8"));
  change(doc);
  writeFileSync(path, JSON.stringify(doc, null, 2));
}

test("the generated files are up to date on this checkout, and each is listed in .gitattributes", (t) => {
  const run = check(copy(t));
  assert.equal(run.status, 0, run.stderr);
  const attributes = readFileSync(join(root, ".gitattributes"), "utf8");
  for (const o of OUTPUTS.filter((o) => !o.region && o.file !== ".gitattributes")) {
    assert.match(attributes, new RegExp(`^${o.file.replace(/[.]/g, "\\.")} linguist-generated=true$`, "m"), o.file);
    assert.ok(existsSync(join(root, o.file)), o.file);
  }
});

test("a generated file edited by hand fails the check, which names it", (t) => {
  const dir = copy(t);
  for (const file of GENERATED) {
    const before = readFileSync(join(dir, file), "utf8");
    // Inside the generated part: a file's region, or after its first line
    // (index.d.ts's end is napi's, which the build's check covers).
    // A file whose only generated parts are numbers (`<!-- value:NAME -->`): one of them.
    const edited = /generated:\w+/.test(before)
      ? before.replace(/(generated:\w+.*\n)/, "$1edited by hand\n")
      : /<!-- value:/.test(before)
        ? before.replace(/(<!-- value:[\w:]+ -->)[^<]*/, "$1edited by hand")
        : before.replace(/\n/, "\nedited by hand\n");
    writeFileSync(join(dir, file), edited);
    const run = check(dir);
    assert.equal(run.status, 1, `${file}: ${run.stdout}`);
    assert.match(run.stderr, new RegExp(`stale .*${file.replace(/[.]/g, "\\.")}`), file);
    writeFileSync(join(dir, file), before);
  }
  assert.equal(check(dir).status, 0, "each file restored, the check passes again");
});

test("a schema that breaks JSON Schema 2020-12 fails the check, naming the file and the path", (t) => {
  const dir = copy(t);
  editJson(dir, "schema/protocol.schema.json", (doc) => {
    doc.$defs.State.properties.queued.type = "intger";
  });
  const run = check(dir);
  assert.equal(run.status, 1, run.stdout);
  assert.match(run.stderr, /schema\/protocol\.schema\.json: at \/\$defs\/State\/properties\/queued\/type: not JSON Schema 2020-12/);
});

test("a schema outside the project's subset, or whose $ref names no type, fails the check with the file and the path", (t) => {
  const dir = copy(t);
  const cases = [
    // A keyword misspelt: 2020-12 allows unknown keywords; the subset does not.
    [
      (doc) => (doc.$defs.Hello.properties.binary.descripton = "x"),
      /at \/\$defs\/Hello\/properties\/binary: outside the subset.*descripton/,
    ],
    // A $ref to a type that does not exist.
    [
      (doc) => (doc.$defs.Hello.properties.binary.$ref = "#/$defs/BinaryInfos"),
      /at \/\$defs\/Hello\/properties\/binary\/\$ref: \$ref "#\/\$defs\/BinaryInfos" names no type/,
    ],
    // `required` naming no property.
    [(doc) => doc.$defs.Hello.required.push("binaries"), /at \/\$defs\/Hello\/required: "binaries" is not a property/],
    // A type defined twice (here and in protocol.schema.json).
    [
      (doc) => (doc.$defs.ErrorCode = { description: "x", oneOf: [{ const: "a", description: "x", "x-written": "no", "x-class": "A" }] }),
      /ErrorCode is defined in/,
    ],
  ];
  for (const [change, message] of cases) {
    const before = readFileSync(join(dir, "schema/sdk.schema.json"), "utf8");
    editJson(dir, "schema/sdk.schema.json", change);
    const run = check(dir);
    assert.equal(run.status, 1, run.stdout);
    assert.match(run.stderr, /schema\/sdk\.schema\.json: /);
    assert.match(run.stderr, message);
    writeFileSync(join(dir, "schema/sdk.schema.json"), before);
  }
  assert.equal(check(dir).status, 0, "the schema restored, the check passes again");
});

test("a method added to the schema makes every file that lists methods stale", (t) => {
  const dir = copy(t);
  editJson(dir, "schema/protocol.schema.json", (doc) => {
    doc["x-methods"].ping = { description: "Check that koma answers." };
  });
  const run = check(dir);
  assert.equal(run.status, 1);
  for (const file of [
    "crates/koma-transport/src/surface.rs",
    "lib/surface.js",
    "python/koma_sdk/_surface.py",
    "index.d.ts",
    "docs/protocol.md",
  ])
    assert.ok(run.stderr.includes(file), `${file} is stale: ${run.stderr}`);
});

test("a field added to the turn result makes the core's struct, both packages' types and nothing else stale", (t) => {
  const dir = copy(t);
  editJson(dir, "schema/sdk.schema.json", (doc) => {
    doc.$defs.PartialTurnResult.properties.model = { type: ["string", "null"], description: "The model that ran it." };
    doc.$defs.PartialTurnResult.required.push("model");
  });
  assert.deepEqual(staleIn(dir), ["crates/koma-transport/src/surface.rs", "index.d.ts", "python/koma_sdk/_types.py"]);
});

test("a scenario schema outside the subset fails the check with the file and the path", (t) => {
  const dir = copy(t);
  editJson(dir, "schema/scenario.schema.json", (doc) => {
    doc.$defs.OutputStep.properties.text.tpye = "string";
  });
  const run = check(dir);
  assert.equal(run.status, 1, run.stdout);
  assert.match(run.stderr, /schema\/scenario\.schema\.json: .*at \/\$defs\/OutputStep\/properties\/text: outside the subset.*tpye/);
});

test("a step added to the scenario schema makes koma-sim's types, both builders' types, the docs' tables of steps and nothing else stale", (t) => {
  const dir = copy(t);
  editJson(dir, "schema/scenario.schema.json", (doc) => {
    doc.$defs.BeepStep = {
      title: "a beep",
      description: "An `output` of `beep`.",
      type: "object",
      properties: { do: { const: "beep" }, times: { type: "integer", minimum: 1 } },
      required: ["do"],
      additionalProperties: false,
      "x-python-name": "Beep",
    };
    doc.$defs.Step.oneOf.push({ $ref: "#/$defs/BeepStep" });
  });
  assert.deepEqual(staleIn(dir), [...SCENARIO_TYPES, "lib/scenario-steps.js"].sort());
});

test("a matcher added to the scenario schema makes koma-sim's types, both builders' types, the docs' tables of matchers and nothing else stale", (t) => {
  const dir = copy(t);
  editJson(dir, "schema/scenario.schema.json", (doc) => {
    doc.$defs.MatchPrefix = {
      title: "a matcher",
      description: "A text that starts with this.",
      type: "object",
      properties: { prefix: { type: "string" } },
      required: ["prefix"],
      additionalProperties: false,
      "x-python-name": "Prefix",
    };
    doc.$defs.Match.oneOf.push({ $ref: "#/$defs/MatchPrefix" });
  });
  assert.deepEqual(staleIn(dir), SCENARIO_TYPES);
  const docs = regenerated(dir, SCENARIO_DOCS);
  assert.match(docs["docs/koma-sim.md"], /^\| `\{"prefix": P\}` \| a text that starts with this \|$/m);
  assert.match(docs["docs/testing.md"], /^\| `turns\[\]\.match` \|.*`\{regex\}`, `\{prefix\}` \|$/m);
  assert.match(docs["docs/testing-python.md"], /^\| `Prefix\(prefix\)` \| a text that starts with this \|$/m);
  assert.equal(check(dir).status, 0, "regenerated, the check passes");
});

test("a field added to the scenario file makes koma-sim's types, both builders' types, the docs' tables of fields and nothing else stale", (t) => {
  const dir = copy(t);
  editJson(dir, "schema/scenario.schema.json", (doc) => {
    doc.$defs.Scenario.properties.seed = { type: "integer", minimum: 0, description: "The seed of the agent's choices." };
  });
  assert.deepEqual(staleIn(dir), SCENARIO_TYPES);
  const docs = regenerated(dir, SCENARIO_DOCS);
  assert.match(docs["docs/koma-sim.md"], /^\| `seed` \| the seed of the agent's choices \| {2}\|$/m);
  assert.match(docs["docs/testing.md"], /^\| `seed` \| the seed of the agent's choices \|$/m);
  assert.match(docs["docs/testing-python.md"], /^\| `Scenario\(.*seed=None\)` \|.*; `seed`: the seed of the agent's choices \|$/m);
  assert.equal(check(dir).status, 0, "regenerated, the check passes");
});
