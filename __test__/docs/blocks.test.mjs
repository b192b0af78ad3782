// Every code block of the user docs runs as a user would paste it (README.md,
// python/README.md, docs/*.md): each block carries a marker, `<!-- test:
// WHAT -->` on the line before its fence (scripts/lib/doc-blocks.mjs reads
// them; CONTRIBUTING.md, "The docs' code blocks", lists them), and this file
// runs the Node ones, in order, in one scratch project that installs the
// packages as the pages say: the README's clone form, the tarballs of
// `npm run release:dry -- --out DIR` (npm test keeps them in
// target/docs-test/koma-tarballs), and what each page adds (OpenTelemetry's
// packages). python/tests/test_docs.py runs the Python ones. A block without
// a marker, or with one neither suite knows, fails here.
//
//   node --test __test__/docs/blocks.test.mjs     (after npm run build; npm test runs it)
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { allBlocks, ownerOf, parseMarker } from "../../scripts/lib/doc-blocks.mjs";
import { root, SIM } from "../helpers.mjs";

const WORK = join(root, "target", "docs-test");
/** The tarballs, beside the project as the README lays them out (`../koma-tarballs`). */
const TARBALLS = process.env.KOMA_DOCS_TARBALLS ?? join(WORK, "koma-tarballs");
const NODE = join(WORK, "node");
/** The user's project: `your-project`, beside the tarballs. */
const PROJECT = join(NODE, "your-project");
const TSX = join(root, "node_modules", "tsx", "dist", "cli.mjs");
const TSC = join(root, "node_modules", "typescript", "bin", "tsc");
const BOUND = { timeout: 180_000 };

const all = allBlocks(root);
const home = mkdtempSync(join(tmpdir(), "koma-docs-home-"));
process.on("exit", () => rmSync(home, { recursive: true, force: true }));

/** The environment a user's shell has: none of this repository's switches; koma-sim unpaced and at home in a folder of the test's. */
function userEnv() {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(KOMA_|NODE_TEST_CONTEXT$|NODE_OPTIONS$|npm_)/.test(k)) env[k] = v;
  return { ...env, KOMA_SIM_HOME: home, KOMA_SIM_DELAY_MS: "0" };
}

function sh(command, cwd, { env = userEnv(), timeout = 170_000 } = {}) {
  const r = spawnSync("bash", ["-eo", "pipefail", "-c", command], { cwd, env, encoding: "utf8", timeout, maxBuffer: 64 << 20 });
  return { ...r, out: `${r.stdout}${r.stderr}` };
}

/** Run a program of the project: node, node --test, or tsx for TypeScript. */
function runProgram(name, { testRunner = false } = {}) {
  const args = /\.m?ts$/.test(name) ? [TSX, name] : testRunner ? ["--test", "--test-reporter=spec", name] : [name];
  return spawnSync(process.execPath, args, { cwd: PROJECT, env: userEnv(), encoding: "utf8", timeout: 120_000, maxBuffer: 64 << 20 });
}

// ------------------------------------------------------------------ the wholes

/** The lines of a fragment that import, and the rest. */
function split(body) {
  const lines = body.split("\n");
  const imports = lines.filter((l) => /^import\b/.test(l));
  return { imports, rest: lines.filter((l) => !/^import\b/.test(l)).join("\n") };
}

/** Definitions a fragment may lean on, named in its marker (`part of client, logger`). */
const GIVEN = {
  logger: "const logger = { debug: console.log, info: console.log, warn: console.log };",
  restart: "const restart = () => console.log('restart');",
};

/**
 * The wholes a fragment is part of: a program around it. `client`: a
 * client of koma-sim with a session, closed at the end; `module`: the
 * fragment's module with `Client` and `simPath` imported; `node:test`: a
 * test of node:test, with `t`, `assert`, `fakeKoma` and `step`.
 */
const WHOLES = {
  client(body, given) {
    const { imports, rest } = split(body);
    const has = (name) => imports.some((l) => new RegExp(`\\b${name}\\b`).test(l));
    return [
      ...(has("Client") ? [] : ['import { Client } from "@koma/sdk";']),
      'import { simPath } from "@koma/sdk/sim";',
      ...imports,
      ...given,
      "const client = new Client({ executable: simPath });",
      "await client.create({ cwd: process.cwd() });",
      "try {",
      rest,
      "} finally {",
      "  await client.close();",
      "}",
      "",
    ].join("\n");
  },
  module(body, given) {
    const { imports, rest } = split(body);
    return ['import { Client } from "@koma/sdk";', 'import { simPath } from "@koma/sdk/sim";', ...imports, ...given, rest, ""].join("\n");
  },
  "node:test"(body, given) {
    const { imports, rest } = split(body);
    return [
      'import { test } from "node:test";',
      'import assert from "node:assert/strict";',
      'import { fakeKoma, step } from "@koma/sdk/testing";',
      ...imports,
      ...given,
      'test("the snippet", async (t) => {',
      rest,
      "});",
      "",
    ].join("\n");
  },
};

// ------------------------------------------------------------------ spans

/**
 * The tree a page draws, as rows `[depth, name, links]`: a waterfall's rows
 * (`name |bar| ms attrs link: X`) or a plain indented list (`name  link: X`).
 */
function drawnRows(text) {
  return text
    .trimEnd()
    .split("\n")
    .map((row) => {
      const [label, ...more] = row.split("|");
      const depth = (label.length - label.trimStart().length) / 2;
      const tail = more.length ? more.slice(2).join("|") : label;
      const links = [...tail.matchAll(/link: (.+?)(?=\s+link: |$)/g)].map((m) => m[1].trim());
      const name = label.replace(/\s+link: .*$/, "").trim();
      return [depth, name, links];
    });
}

/** The rows of exported spans (`[{name, id, parent, links}]`), roots in the order of `firstRoots`. */
function treeRows(spans, order) {
  const byId = new Map(spans.map((s) => [s.id, s]));
  const children = (id) => spans.filter((s) => s.parent === id).sort((a, b) => a.start - b.start);
  const roots = spans.filter((s) => !byId.has(s.parent));
  const rank = (s) => (order.indexOf(s.name) < 0 ? order.length : order.indexOf(s.name));
  roots.sort((a, b) => rank(a) - rank(b) || a.start - b.start);
  const rows = [];
  const walk = (s, depth) => {
    const links = s.links.map((l) => byId.get(l)?.name).filter(Boolean);
    rows.push([depth, s.name, depth === 0 ? links : []]);
    for (const c of children(s.id)) walk(c, depth + 1);
  };
  for (const r of roots) walk(r, 0);
  return rows;
}

/**
 * A preload for a program of the project: whatever its
 * ConsoleSpanExporter exports is also written as JSON lines to
 * KOMA_DOCS_SPANS. The program is unchanged; its exporter is observed.
 */
const CAPTURE = `import { appendFileSync } from "node:fs";
import { ConsoleSpanExporter } from "@opentelemetry/sdk-trace-base";
const original = ConsoleSpanExporter.prototype.export;
ConsoleSpanExporter.prototype.export = function (spans, done) {
  for (const s of spans) {
    const c = s.spanContext();
    const parent = s.parentSpanContext?.spanId ?? s.parentSpanId ?? null;
    const start = s.startTime[0] * 1e9 + s.startTime[1];
    appendFileSync(process.env.KOMA_DOCS_SPANS, JSON.stringify({ name: s.name, id: c.spanId, trace: c.traceId, parent, start, links: s.links.map((l) => l.context.spanId) }) + "\\n");
  }
  return original.call(this, spans, done);
};
`;

// ------------------------------------------------------------------ messages

/** A shown message as a pattern: `...` stands for what the page leaves out. */
const pattern = (message) =>
  new RegExp(
    `^${message
      .split("...")
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`,
    "s",
  );

/** The message each input makes, made the way the marker says. */
function messages(header, inputs) {
  const ways = ["koma-sim sdk serve, KOMA_SIM_SCENARIO=s.json", "checkScenario", "a client's first call, KOMA_SIM_SCENARIO=/tmp/s.json"];
  const how = ways.find((w) => header.startsWith(w));
  const dir = mkdtempSync(join(tmpdir(), "koma-docs-messages-"));
  try {
    if (how === "koma-sim sdk serve, KOMA_SIM_SCENARIO=s.json") {
      return inputs.map((scenario) => {
        writeFileSync(join(dir, "s.json"), scenario);
        const r = spawnSync(SIM, ["sdk", "serve"], {
          cwd: dir,
          env: { ...userEnv(), KOMA_SIM_SCENARIO: "s.json" },
          input: "",
          encoding: "utf8",
        });
        assert.equal(r.status, 64, r.stderr);
        return r.stderr.trimEnd();
      });
    }
    // In the project: through the installed package, as a program of the user's.
    const program = {
      checkScenario: () => `import { checkScenario, step } from "@koma/sdk/testing";
const out = [];
for (const make of [${inputs.map((i) => `() => (${i})`).join(", ")}]) {
  try { checkScenario(make()); out.push("no mistake"); } catch (e) { out.push(e.message); }
}
console.log(JSON.stringify(out));
`,
      "a client's first call, KOMA_SIM_SCENARIO=/tmp/s.json": () => `import { writeFileSync } from "node:fs";
import { Client } from "@koma/sdk";
import { simPath } from "@koma/sdk/sim";
const out = [];
for (const scenario of [${inputs.join(", ")}]) {
  writeFileSync(${JSON.stringify(join(dir, "s.json"))}, JSON.stringify(scenario));
  const client = new Client({ executable: simPath, env: { KOMA_SIM_SCENARIO: ${JSON.stringify(join(dir, "s.json"))} } });
  try { await client.create({}); out.push("no error"); } catch (e) { out.push(e.message.replaceAll(${JSON.stringify(join(dir, "s.json"))}, "/tmp/s.json")); }
  await client.close();
}
console.log(JSON.stringify(out));
`,
    }[how];
    assert.ok(program, `no way to make messages "${how}"`);
    const name = `messages-${Date.now()}.mjs`;
    writeFileSync(join(PROJECT, name), program());
    const r = spawnSync(process.execPath, [name], { cwd: PROJECT, env: userEnv(), encoding: "utf8" });
    ran(name, r);
    return JSON.parse(r.stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------ the run

/** What the last program left: its name, its output, its spans. */
let last = { name: null, lang: null, stdout: "", spans: null };
let installed = false;

function setUp() {
  rmSync(NODE, { recursive: true, force: true });
  mkdirSync(PROJECT, { recursive: true });
  if (!existsSync(join(TARBALLS, "main"))) {
    const r = spawnSync(process.execPath, [join(root, "scripts", "release-dry.mjs"), "--no-build", "--out", TARBALLS], {
      cwd: root,
      encoding: "utf8",
    });
    assert.equal(r.status, 0, `release:dry --out ${TARBALLS}: ${r.stdout}${r.stderr}`);
  }
  symlinkSync(TARBALLS, join(NODE, "koma-tarballs"), "dir");
  writeFileSync(join(PROJECT, "package.json"), `${JSON.stringify({ name: "your-project", private: true }, null, 2)}\n`);
  writeFileSync(join(PROJECT, "capture-spans.mjs"), CAPTURE);
}

/** The program's result, checked: exit 0, and (for a test file) its tests passed. */
function ran(name, r) {
  assert.equal(r.status, 0, `${name} exited ${r.status ?? r.signal}:\n${r.stdout}${r.stderr}`);
}

function runBlock(block) {
  const { kind, rest } = parseMarker(block.marker);
  const [what, ...opts] = rest.split(/\s*,\s*/);
  switch (kind) {
    case "shell": {
      // Line by line, as a user pastes them into a shell in their project.
      const r = sh(block.body, PROJECT);
      assert.equal(r.status, 0, `the block failed:\n${block.body}\n${r.out}`);
      if (/npm (i|install)\b/.test(block.body)) installed = true;
      return;
    }
    case "run":
    case "part of": {
      assert.ok(installed, "the package is installed by a block before this one (the README's Install)");
      let name =
        kind === "run"
          ? what
          : (opts.find((o) => o.startsWith("as "))?.slice(3) ?? `snippet-${block.line}.${block.lang === "ts" ? "ts" : "mjs"}`);
      let source = block.body;
      if (kind === "part of") {
        const whole = WHOLES[what];
        assert.ok(whole, `no whole named ${what} (${Object.keys(WHOLES).join(", ")})`);
        const given = opts.filter((o) => !o.startsWith("as ")).map((o) => GIVEN[o] ?? assert.fail(`nothing given as ${o}`));
        source = whole(block.body, given);
        if (what === "node:test" && !/\.test\.mjs$/.test(name)) name = name.replace(/\.mjs$/, ".test.mjs");
      }
      mkdirSync(dirname(join(PROJECT, name)), { recursive: true });
      writeFileSync(join(PROJECT, name), source);
      if (/\.m?ts$/.test(name)) {
        const r = spawnSync(
          process.execPath,
          [
            TSC,
            "--strict",
            "--noEmit",
            "--target",
            "es2022",
            "--module",
            "nodenext",
            "--lib",
            "es2022,esnext.disposable",
            "--types",
            "node",
            "--typeRoots",
            join(root, "node_modules", "@types"),
            name,
          ],
          { cwd: PROJECT, encoding: "utf8" },
        );
        assert.equal(r.status, 0, `tsc --strict ${name}:\n${r.stdout}${r.stderr}`);
      }
      const spans = join(PROJECT, `${name}.spans.jsonl`);
      rmSync(spans, { force: true });
      const otel = existsSync(join(PROJECT, "node_modules", "@opentelemetry", "sdk-trace-base"));
      const env = { ...userEnv(), KOMA_DOCS_SPANS: spans, ...(otel ? { NODE_OPTIONS: "--import=./capture-spans.mjs" } : {}) };
      const args = /\.m?ts$/.test(name) ? [TSX, name] : name.endsWith(".test.mjs") ? ["--test", "--test-reporter=spec", name] : [name];
      const r = spawnSync(process.execPath, args, { cwd: PROJECT, env, encoding: "utf8", timeout: 120_000, maxBuffer: 64 << 20 });
      ran(name, r);
      const exported = existsSync(spans)
        ? readFileSync(spans, "utf8")
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l))
        : null;
      last = { name, lang: block.lang, stdout: r.stdout, spans: exported };
      return;
    }
    case "save": {
      // A module of the project that a later program imports.
      mkdirSync(dirname(join(PROJECT, what)), { recursive: true });
      writeFileSync(join(PROJECT, what), block.body);
      return;
    }
    case "printed": {
      assert.ok(last.name, "a printed block follows the program that prints it");
      for (const line of block.body.trimEnd().split("\n"))
        assert.ok(last.stdout.includes(line.trim()), `${last.name} printed ${line}:\n${last.stdout}`);
      return;
    }
    case "output": {
      assert.ok(last.name, "an output follows the program that prints it");
      const normal = (s) => s.replace(/\bs-[0-9a-f]+-[0-9a-f]+\b/g, "s-<session>");
      assert.equal(normal(last.stdout), normal(block.body), `what ${last.name} printed`);
      return;
    }
    case "spans": {
      assert.ok(last.spans, `${last.name} exported spans through its ConsoleSpanExporter`);
      const drawn = drawnRows(block.body);
      const roots = drawn.filter(([d]) => d === 0).map(([, n]) => n);
      assert.deepEqual(treeRows(last.spans, roots), drawn, `the spans ${last.name} exported form the tree the page draws`);
      return;
    }
    case "picture": {
      const r = spawnSync(process.execPath, [join(root, what)], { cwd: root, encoding: "utf8", timeout: 120_000 });
      ran(what, r);
      const rows = (text) => drawnRows(text).map(([d, n, l]) => [d, n, l]);
      assert.deepEqual(rows(r.stdout), rows(block.body), `the rows ${what} draws`);
      // The attributes shown on each row are the ones it shows.
      const attrs = (text) =>
        text
          .trimEnd()
          .split("\n")
          .map((row) => row.split("|")[2]?.replace(/^\s*[\d.]+ ms\s*/, ""));
      assert.deepEqual(attrs(r.stdout), attrs(block.body), `the attributes ${what} shows`);
      return;
    }
    case "file": {
      assert.equal(block.body, readFileSync(join(root, what), "utf8"), `the block is ${what} as it is`);
      // Copied into the project as the page says, a test file runs there.
      const name = what
        .split("/")
        .slice(-opts.includes("with its folder") ? 2 : 1)
        .join("/");
      mkdirSync(dirname(join(PROJECT, name)), { recursive: true });
      writeFileSync(join(PROJECT, name), block.body);
      if (opts.includes("run by node --test")) ran(name, runProgram(name, { testRunner: true }));
      return;
    }
    case "scenario": {
      const r = spawnSync(SIM, ["check-scenario"], { input: block.body, encoding: "utf8" });
      ran(`koma-sim check-scenario < ${block.file}:${block.line}`, r);
      return;
    }
    case "messages of":
    case "message of": {
      // The marker's first line says what makes them, the next lines are its inputs: each gives one message.
      const [how, ...inputs] = rest.split("\n");
      const shown = kind === "message of" ? [block.body.trimEnd()] : block.body.trimEnd().split("\n");
      assert.equal(inputs.length, shown.length, "an input for each message");
      const got = messages(how, inputs);
      for (const [i, message] of shown.entries()) assert.match(got[i], pattern(message), `the message of ${inputs[i]}`);
      return;
    }
    case "json": {
      for (const [i, line] of block.body.trimEnd().split("\n").entries())
        assert.doesNotThrow(() => JSON.parse(line), `line ${i + 1} is JSON: ${line}`);
      return;
    }
    default:
      assert.fail(`unknown marker "${block.marker}"`);
  }
}

test("every block of the user docs says what it is, and not run stays an exception with its reason", () => {
  const counts = { node: 0, python: 0, "not run": 0 };
  const missing = [];
  let previous = null;
  for (const b of all) {
    const { kind, rest } = parseMarker(b.marker);
    if (kind === null || kind === "unknown")
      missing.push(`${b.file}:${b.line} (${b.lang || "no language"})${b.marker ? `: "${b.marker}"` : ""}`);
    else if (kind === "not run") {
      assert.ok(rest.length > 10, `${b.file}:${b.line}: not run says why`);
      counts["not run"]++;
    } else counts[ownerOf(b, previous)]++;
    if (kind === "run" || kind === "part of") previous = b;
  }
  assert.deepEqual(missing, [], 'a marker before each of these blocks (CONTRIBUTING.md, "The docs\' code blocks")');
  console.log(`${all.length} blocks: ${counts.node} run here, ${counts.python} by python/tests/test_docs.py, ${counts["not run"]} not run`);
  assert.ok(counts["not run"] <= 12, "not run is an exception");
});

test("set up: a scratch project beside the tarballs", BOUND, () => {
  setUp();
});

let previous = null;
for (const block of all) {
  const { kind } = parseMarker(block.marker);
  const owner = ownerOf(block, previous);
  if (kind === "run" || kind === "part of") previous = block;
  if (kind === null || kind === "unknown" || kind === "not run" || owner !== "node") continue;
  test(`${block.file}:${block.line} ${block.lang} (${block.marker.split("\n")[0]})`, BOUND, () => runBlock(block));
}

test("no project file is left behind in the repository", () => {
  assert.ok(!readdirSync(root).some((f) => f.endsWith(".spans.jsonl")));
});
