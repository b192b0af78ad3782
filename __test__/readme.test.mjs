// The README's promises to a newcomer: its first program runs exactly as
// written and prints what the README says it prints; and nothing in the
// README, docs/, the typings or koma-sim's help points where an installed
// package cannot follow.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, posix, sep } from "node:path";
import { root, SIM, tempHome } from "./helpers.mjs";

const read = (file) => readFileSync(join(root, file), "utf8");
const manifest = JSON.parse(read("package.json"));

/** The fenced blocks of a Markdown text, in order: [{lang, body}]. */
function blocks(markdown) {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map(([, lang, body]) => ({ lang, body }));
}

test("the README's first program runs as written and prints what the README shows", { timeout: 60000 }, (t) => {
  const all = blocks(read("README.md"));
  const first = all.findIndex((b) => b.lang === "js");
  assert.ok(first >= 0, "the README has a js block");
  const program = all[first].body;
  const shown = all.slice(first + 1).find((b) => b.lang === "text");
  assert.ok(shown, "the README shows what it prints");
  // Nothing a Node 20 .mjs file cannot parse, and no helper it does not define.
  assert.doesNotMatch(program, /await using/);

  // A project with @koma/sdk in its node_modules (this checkout: its addon and
  // its bin/koma-sim are found beside it, as in an installed package).
  const app = mkdtempSync(join(tmpdir(), "koma-readme-"));
  t.after(() => rmSync(app, { recursive: true, force: true }));
  mkdirSync(join(app, "node_modules", "@koma"), { recursive: true });
  // A junction on Windows (a directory link that needs no privilege); the type is ignored elsewhere.
  symlinkSync(root, join(app, "node_modules", "@koma", "sdk"), "junction");
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "first", private: true }));
  writeFileSync(join(app, "first.mjs"), program);

  const env = { ...process.env, KOMA_SIM_HOME: tempHome() };
  delete env.KOMA_SIM_PATH;
  delete env.KOMA_SIM_DELAY_MS;
  const r = spawnSync(process.execPath, ["first.mjs"], { cwd: app, env, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, shown.body);
  assert.ok(existsSync(SIM), "koma-sim was there to be found");
});

// Markdown that ships in the package, and the links it may hold.
const shipped = manifest.files.filter((f) => f.endsWith(".md"));
// The one link into the repository that is not in the npm package: the
// Python package's README, which the README names as the other package.
const REPOSITORY_ONLY = new Set(["python/README.md"]);

/** GitHub's anchor of a heading. */
const slug = (heading) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");

/** The anchors of a Markdown file (headings outside code blocks). */
function anchors(markdown) {
  const out = new Set();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    else if (!fenced && /^#{1,6} /.test(line)) out.add(slug(line.replace(/^#+ /, "")));
  }
  return out;
}

test("the README and docs/ link only to files the package carries, and every anchor exists", () => {
  assert.ok(shipped.includes("README.md") && shipped.some((f) => f.startsWith("docs/")));
  for (const file of readdirSync(join(root, "docs")))
    assert.ok(shipped.includes(`docs/${file}`), `docs/${file} is in package.json's files`);
  for (const file of shipped) {
    const text = read(file);
    for (const [, target] of text.matchAll(/\]\(([^)\s]*)\)/g)) {
      const where = `${file}: (${target})`;
      assert.doesNotMatch(target, /^[a-z]+:/i, `${where}: no URL`);
      assert.notEqual(target, "#", `${where}: a link to nowhere`);
      const [path, anchor] = target.split("#");
      const resolved = path ? posix.normalize(posix.join(posix.dirname(file), path)) : file;
      assert.ok(!resolved.startsWith(".."), `${where}: outside the package`);
      if (REPOSITORY_ONLY.has(resolved)) continue;
      assert.ok(manifest.files.includes(resolved), `${where}: ${resolved} is not in the package`);
      if (anchor) assert.ok(anchors(read(resolved)).has(anchor), `${where}: no heading #${anchor} in ${resolved}`);
    }
  }
});

test("no URL, issue number or path outside the package in the README, docs/, the typings and koma-sim's help", () => {
  const help = spawnSync(SIM, ["--help"], { encoding: "utf8" });
  assert.equal(help.status, 0);
  const texts = [
    ...shipped.map((f) => [f, read(f)]),
    ["sim.d.ts", read("sim.d.ts")],
    ["index.d.ts", read("index.d.ts")],
    ["testing.d.ts", read("testing.d.ts")],
    ["koma-sim --help", help.stdout],
  ];
  for (const [name, text] of texts) {
    assert.doesNotMatch(text, /\bhttps?:\/\//, `${name}: a URL`);
    assert.doesNotMatch(text, /\b[Ii]ssues? #?\d+|(?<![\w&])#\d+\b/, `${name}: an issue number`);
    assert.doesNotMatch(text, /\.\.\/shared|koma-protocol\.md/, `${name}: a file outside the repository`); // citation-check: the pattern
  }
  assert.doesNotMatch(help.stdout, /README/, "koma-sim's help stands alone");
});

test("no comment or doc cites the protocol by a file outside the repository: they cite docs/protocol.md's sections", () => {
  const files = spawnSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" }).stdout.split("\0").filter(Boolean);
  assert.ok(files.length > 100, "git ls-files lists the repository");
  // Section numbers and parts of an outside file, or the file itself (citation-check: the pattern).
  const outside = /\b[A-D]\.\d{1,2}\b(?!\.\d)|\bparts? [A-D]\b|\bthe protocol file\b|koma-protocol|\.\.\/shared\//; // citation-check: the pattern
  const text = /\.(rs|js|mjs|cjs|ts|mts|py|pyi|md|toml|json|sh)$|(^|\/)run$/;
  const cited = [];
  for (const file of files) {
    if (!text.test(file) || file.endsWith("package-lock.json") || !existsSync(join(root, file))) continue;
    readFileSync(join(root, file), "utf8")
      .split("\n")
      .forEach((line, i) => {
        if (outside.test(line) && !line.includes("citation-check: the pattern")) cited.push(`${file}:${i + 1}: ${line.trim()}`);
      });
  }
  assert.deepEqual(cited, [], "cite docs/protocol.md by its section names instead");
  // The sections cited exist.
  const sections = new Set([...read("docs/protocol.md").matchAll(/^## (.+)$/gm)].map((m) => m[1]));
  for (const name of [
    "The child",
    "Lines",
    "stderr",
    "Hello",
    "Requests and responses",
    "Events",
    "Methods",
    "Lifecycle",
    "Failure",
    "Bounds",
    "Error codes",
  ])
    assert.ok(sections.has(name), `docs/protocol.md has a section "${name}"`);
});

test("docs/koma-sim.md describes every fault switch koma-sim --help lists", () => {
  const help = spawnSync(SIM, ["--help"], { encoding: "utf8" }).stdout;
  const switches = help
    .split("\nfault switches")[1]
    .split("\n")
    .filter((l) => l.startsWith("    "))
    .map((l) => l.trim().split(/\s+/)[0]);
  assert.ok(switches.length > 30, help);
  const doc = read("docs/koma-sim.md");
  for (const name of switches) assert.match(doc, new RegExp(`^\\| \`${name}\` \\| \\S`, "m"), `docs/koma-sim.md has a row for ${name}`);
});

test("the examples import the package by name, so that each can be copied into a project", () => {
  const examples = manifest.files.filter((f) => f.startsWith("examples/"));
  const all = readdirSync(join(root, "examples"), { recursive: true })
    .map((f) => `examples/${f.replaceAll(sep, "/")}`)
    .filter((f) => f.endsWith(".mjs"))
    .sort();
  // examples/fleet/ needs Redis, bullmq and ioredis: it stays in the repository (docs/scale.md says where).
  const fleet = all.filter((f) => f.startsWith("examples/fleet/"));
  assert.deepEqual(
    examples.sort(),
    all.filter((f) => !fleet.includes(f)),
    "every other example ships",
  );
  // examples/testing/ is one program and its tests, examples/fleet/ one fleet: their files import each other, and nothing else of the repository.
  const folders = ["examples/testing/", "examples/fleet/"];
  for (const file of [...examples, ...fleet]) {
    const text = read(file);
    const folder = folders.find((f) => file.startsWith(f));
    for (const [, spec] of text.matchAll(/(?:from|import\(|require\()\s*["'](\.{1,2}\/[^"']*)["']/g)) {
      assert.ok(folder, `${file}: a relative import (${spec})`);
      const target = posix.normalize(posix.join(posix.dirname(file), spec));
      assert.ok(target.startsWith(folder) && all.includes(target), `${file}: ${spec} is not a file of the example`);
    }
    if (folder !== "examples/fleet/") assert.match(text, /from "@koma\/sdk(\/testing)?"/, `${file} imports @koma/sdk`);
  }
  assert.ok(
    fleet.some((f) => /from "@koma\/sdk"/.test(read(f))),
    "examples/fleet imports @koma/sdk",
  );
});
