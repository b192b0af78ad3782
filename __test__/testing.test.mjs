// @koma/sdk/testing: scenarios built in code, checked before koma-sim
// starts (the same first mistake, in the same words, as koma-sim finds in
// the file), and played by a real koma-sim child: one test for each
// feature of the format, the record of requests, the helpers that tie a
// fake to a test, and the docs' example as written.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Client, SIM, alive, childPids, rejection, root } from "./helpers.mjs";

const require = createRequire(import.meta.url);
const testing = require(join(root, "testing.js"));
const { FakeKoma, ScenarioError, checkScenario, fakeKoma, readRecord, step } = testing;
const ESM = await import(pathToFileURL(join(root, "testing.mjs")).href);

/** The fakes' folders this process made (other processes make and remove theirs meanwhile). */
const ownFolders = () => readdirSync(tmpdir()).filter((f) => new RegExp(`^koma-fake-\\d+-${process.pid}-`).test(f)).length;

/** Each test is bounded: a hang fails it (it is no measure of speed). */
const BOUND = { timeout: 30_000 };
const names = (items) => items.map((i) => (i.type === "event" ? i.name : i.type));

/** A fake closed when the test ends, with koma-sim from this checkout. */
const fake = (t, scenario, options = {}) => fakeKoma(t, scenario, { executable: SIM, ...options });

/** The events of a turn, through its loop. */
async function loop(turn) {
  const items = [];
  for await (const item of turn) items.push(item);
  return items;
}

// ---------------------------------------------------------------- the module

test("the module loads as CommonJS and as an ES module, with the same names", () => {
  for (const name of ["FakeKoma", "fakeKoma", "readRecord", "checkScenario", "ScenarioError", "step"]) {
    assert.equal(typeof testing[name], name === "step" ? "object" : "function", name);
    assert.equal(ESM[name], testing[name], `${name} from testing.mjs`);
  }
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  assert.deepEqual(manifest.exports["./testing"], { types: "./testing.d.ts", import: "./testing.mjs", default: "./testing.js" });
  for (const f of [
    "testing.js",
    "testing.mjs",
    "testing.d.ts",
    "lib/testing.js",
    "lib/scenario.js",
    "lib/fake-options.js",
    "lib/fake-folder.js",
  ])
    assert.ok(manifest.files.includes(f), f);
});

test("step's functions make the objects of the file's format", () => {
  assert.deepEqual(step.output("hi"), { do: "output", text: "hi" });
  assert.deepEqual(step.tool("run", "ok"), { do: "tool", tool: "run", output: "ok" });
  assert.deepEqual(step.tool("run", null, { input: { a: 1 }, error: true }), {
    do: "tool",
    tool: "run",
    input: { a: 1 },
    output: null,
    error: true,
  });
  assert.deepEqual(step.approval("push", { deny: { output: "no" } }), { do: "approval", tool: "push", deny: { output: "no" } });
  assert.deepEqual(step.pause(), { do: "pause" });
  assert.deepEqual(step.pause(5), { do: "pause", ms: 5 });
  assert.deepEqual(step.event("x"), { do: "event", name: "x" });
  assert.deepEqual(step.finish(), { do: "finish" });
  assert.deepEqual(step.finish("failed", "why"), { do: "finish", status: "failed", error: "why" });
  assert.deepEqual(step.exit(3), { do: "exit", code: 3 });
  assert.deepEqual(step.crash(), { do: "crash", signal: "SIGKILL" });
  assert.deepEqual(step.stopAnswering(), { do: "stop_answering" });
  assert.deepEqual(step.brokenFrame(), { do: "broken_frame" });
  // A checked scenario is the JSON koma-sim is given.
  const text = checkScenario({ turns: [{ match: { contains: "x" }, steps: [step.output("hi")] }], methods: undefined });
  assert.deepEqual(JSON.parse(text), { turns: [{ match: { contains: "x" }, steps: [{ do: "output", text: "hi" }] }] });
});

// ---------------------------------------------------------------- mistakes

/** The line koma-sim writes for `scenario` as a file: `bad scenario <file>: X` -> X. */
function simSays(scenario) {
  const dir = mkdtempSync(join(tmpdir(), "koma-bad-scenario-"));
  try {
    const file = join(dir, "s.json");
    writeFileSync(file, JSON.stringify(scenario));
    const r = spawnSync(SIM, ["sdk", "serve"], {
      env: { ...process.env, KOMA_SIM_SCENARIO: file, KOMA_SIM_HOME: dir },
      input: "",
      encoding: "utf8",
      timeout: 20_000,
    });
    assert.equal(r.status, 64, r.stderr);
    assert.equal(r.stdout, "", "nothing on stdout: no hello");
    const lines = r.stderr.split("\n").filter(Boolean);
    assert.equal(lines.length, 1, r.stderr);
    const prefix = `koma-sim: bad scenario ${file}: `;
    assert.ok(lines[0].startsWith(prefix), lines[0]);
    return lines[0].slice(prefix.length);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The builder's error for `scenario` (it must throw one). */
function builderSays(scenario) {
  try {
    checkScenario(scenario);
  } catch (e) {
    assert.ok(e instanceof ScenarioError, e);
    assert.equal(e.code, "ERR_KOMA_BAD_SCENARIO");
    assert.equal(e.name, "ScenarioError");
    return e;
  }
  assert.fail(`the builder took ${JSON.stringify(scenario)}`);
}

const deploy = { contains: "deploy" };
// Each kind of mistake: the scenario, and the entry and field its message names.
const MISTAKES = [
  [
    "an unknown step",
    { turns: [{ match: deploy, steps: [step.output("a"), { do: "explode" }] }] },
    'turns[0] (contains "deploy")',
    "steps[1].do",
  ],
  ["a missing field", { turns: [{ steps: [] }, { match: { turn: 2 }, steps: [{ do: "exit" }] }] }, "turns[1] (turn 2)", "steps[0].code"],
  ["a step without do", { turns: [{ steps: [{ text: "hi" }] }] }, "turns[0] (any text)", "steps[0].do"],
  [
    "an unknown field",
    { turns: [{ match: { text: "hi" }, steps: [{ do: "output", text: "a", colour: "red" }] }] },
    'turns[0] (text "hi")',
    "steps[0].colour",
  ],
  ["a wrong type", { turns: [{ match: { text: "hi" }, steps: [{ do: "output", text: 42 }] }] }, 'turns[0] (text "hi")', "steps[0].text"],
  ["null where a string goes", { turns: [{ steps: [{ do: "finish", status: null }] }] }, "turns[0] (any text)", "steps[0].status"],
  [
    "an unknown signal",
    { turns: [{ steps: [step.approval("x", { deny: { steps: [{ do: "crash", signal: "SIGFOO" }] } })] }] },
    "turns[0] (any text)",
    "steps[0].deny.steps[0].signal",
  ],
  ["a step after finish", { turns: [{ steps: [step.finish(), step.output("late")] }] }, "turns[0] (any text)", "steps[1]"],
  ["two matchers", { turns: [{ match: { text: "a", contains: "b" }, steps: [] }] }, "turns[0]", "match"],
  ["an unknown matcher", { turns: [{ match: { starts: "a" }, steps: [] }] }, "turns[0]", "match.starts"],
  ["times of zero", { turns: [{ times: 0, steps: [] }] }, "turns[0] (any text)", "times"],
  ["an exit code out of range", { turns: [{ steps: [step.exit(256)] }] }, "turns[0] (any text)", "steps[0].code"],
  ["a broken line of two", { turns: [{ steps: [step.brokenFrame("a\nb")] }] }, "turns[0] (any text)", "steps[0].line"],
  ["an empty event name", { turns: [{ steps: [step.event("")] }] }, "turns[0] (any text)", "steps[0].name"],
  ["a method error without code", { methods: [{ method: "submit", nth: 2, error: {} }] }, "methods[0] (submit, call 2)", "error.code"],
  ["a method entry that scripts nothing", { methods: [{ method: "state" }] }, "methods[0] (state, every call)", ""],
  ["both result and error", { methods: [{ method: "state", result: {}, error: { code: "x" } }] }, "methods[0] (state, every call)", ""],
  ["nth of zero", { methods: [{ method: "state", nth: 0, result: {} }] }, "methods[0] (state, call 0)", "nth"],
  ["a method the protocol does not have", { methods: [{ method: "sumbit", result: {} }] }, "methods[0] (sumbit, every call)", "method"],
  ["a bad unscripted", { unscripted: "keyword" }, "", "unscripted"],
  ["a bad format", { format: 2 }, "", "format"],
  ["a field outside the format", { turn: [] }, "", "turn"],
  ["steps that are not a list", { turns: [{ steps: {} }] }, "turns[0] (any text)", "steps"],
];

for (const [what, scenario, entry, field] of MISTAKES) {
  test(`a scenario with ${what} is refused by the builder, naming the entry and the field, as koma-sim refuses it`, BOUND, () => {
    const e = builderSays(scenario);
    assert.equal(e.entry, entry, e.message);
    assert.equal(e.field, field, e.message);
    assert.ok(e.message.startsWith(`bad scenario: ${[entry, field].filter(Boolean).join(": ")}`), e.message);
    // koma-sim finds the same first mistake in the file, in the same words.
    assert.equal(`bad scenario: ${simSays(scenario)}`, e.message);
  });
}

test("a bad regular expression is refused by the builder and by koma-sim, in the words of the regex crate koma-sim uses", BOUND, () => {
  const scenario = { turns: [{ match: { regex: "fix (.*" }, steps: [] }] };
  const e = builderSays(scenario);
  assert.equal(e.entry, 'turns[0] (regex "fix (.*")');
  assert.equal(e.field, "match.regex");
  assert.equal(e.problem, "not a valid regular expression: unclosed group");
  assert.equal(simSays(scenario), 'turns[0] (regex "fix (.*"): match.regex: not a valid regular expression: unclosed group');
});

test("look-around and backreferences, which Rust's regex has not, are refused; Rust's own spellings are taken", BOUND, () => {
  for (const [regex, said] of [
    ["^fix(?=\\.rs)", /look-around/],
    ["(?<!un)safe", /look-around/],
    ["(a)\\1", /backreference/],
  ]) {
    const e = builderSays({ turns: [{ match: { regex }, steps: [] }] });
    assert.equal(e.field, "match.regex");
    assert.match(e.problem, said);
    assert.equal(`bad scenario: ${simSays({ turns: [{ match: { regex }, steps: [] }] })}`, e.message);
  }
  for (const regex of ["(?i)^fix", "(?P<file>\\w+)\\.rs\\z", "\\Adeploy (?i:now)$", "[[:alpha:]]+", "[(?=]x"])
    checkScenario({ turns: [{ match: { regex }, steps: [] }] });
});

test("a scenario that is not JSON at all is refused", () => {
  assert.equal(builderSays(() => {}).message, "bad scenario: not JSON: a function (anonymous), which JSON cannot hold");
  assert.throws(() => checkScenario([]), /bad scenario: must be an object \(the scenario\), not an array/);
});

const cycle = {};
cycle.self = cycle;
// What only JavaScript can see (JSON.stringify drops it, makes it null or
// {}, or throws): the scenario, the entry and field koma-sim names, the problem.
const HOST_ONLY = [
  [
    "a builder left uncalled",
    { turns: [{ steps: [step.output("a"), step.stopAnswering] }] },
    "turns[0] (any text)",
    "steps[1]",
    "step.stopAnswering is a function, not a step: call it, as `step.stopAnswering(...)`",
  ],
  [
    "a Set",
    { turns: [{ match: deploy, steps: [step.tool("t", new Set([1, 2]))] }] },
    'turns[0] (contains "deploy")',
    "steps[0].output",
    "a Set, which JSON cannot hold: give an array",
  ],
  [
    "a Map",
    { methods: [{ method: "state", result: new Map() }] },
    "methods[0] (state, every call)",
    "result",
    "a Map, which JSON cannot hold: give an object",
  ],
  [
    "a BigInt",
    { turns: [{ steps: [{ do: "output", text: 1n }] }] },
    "turns[0] (any text)",
    "steps[0].text",
    "a BigInt (1n), which JSON cannot hold: give a number",
  ],
  ["NaN", { turns: [{ steps: [step.pause(Number.NaN)] }] }, "turns[0] (any text)", "steps[0].ms", "NaN, which JSON cannot hold"],
  [
    "a RegExp",
    { turns: [{ match: { regex: /^deploy/ }, steps: [] }] },
    "turns[0]",
    "match.regex",
    'a RegExp, which JSON cannot hold: give its source as a string, "^deploy"',
  ],
  [
    "a function in data",
    { turns: [{ steps: [step.event("e", { "a b": [1, () => {}] })] }] },
    "turns[0] (any text)",
    'steps[0].data["a b"][1]',
    "a function (anonymous), which JSON cannot hold",
  ],
  [
    "undefined in a list",
    { turns: [{ steps: [step.output("a"), undefined] }] },
    "turns[0] (any text)",
    "steps[1]",
    "undefined, which a JSON list cannot hold",
  ],
  [
    "a cycle",
    { turns: [{ steps: [step.tool("t", cycle)] }] },
    "turns[0] (any text)",
    "steps[0].output.self",
    "a cycle: this value contains itself",
  ],
  ["a symbol", { about: Symbol("x") }, "", "about", "a symbol (Symbol(x)), which JSON cannot hold"],
];

for (const [what, scenario, entry, field, problem] of HOST_ONLY) {
  test(`a scenario with ${what}, which JSON cannot hold, is refused, naming the entry and the field in koma-sim's words`, BOUND, () => {
    const e = builderSays(scenario);
    assert.deepEqual([e.entry, e.field, e.problem], [entry, field, problem], e.message);
    assert.equal(e.message, `bad scenario: ${[entry, field, problem].filter(Boolean).join(": ")}`);
  });
}

test("a field that is undefined is absent, as in JSON; toJSON() is honoured", () => {
  const text = checkScenario({ about: undefined, turns: [{ steps: [step.tool("t", { at: new Date(0) })] }] });
  assert.deepEqual(JSON.parse(text).turns[0].steps[0].output, { at: "1970-01-01T00:00:00.000Z" });
  assert.equal("about" in JSON.parse(text), false);
});

test("FakeKoma's options are checked, as new Client's are: an unknown or mistyped one is a TypeError naming it", () => {
  const cases = [
    [{ delay: 5 }, "FakeKoma options: unknown option `delay` (did you mean `delayMs`?); the options are: executable, env, delayMs, client"],
    [{ delayMs: "5" }, 'FakeKoma options: `delayMs` must be an integer of milliseconds >= 0, not "5"'],
    [{ delayMs: -1 }, "FakeKoma options: `delayMs` must be an integer of milliseconds >= 0, not -1"],
    [{ env: { A: 1 } }, "FakeKoma options: `env` must be an object of strings, not an object"],
    [
      { cwd: "/" },
      "FakeKoma options: unknown option `cwd` (`cwd` is a client option: `{ client: { cwd } }`); the options are: executable, env, delayMs, client",
    ],
    [{ client: { helloTimeout: "1s" } }, 'FakeKoma options: client: `helloTimeout` must be a number >= 0, or null, not "1s"'],
    [{ client: { tracerProvider: {} } }, "FakeKoma options: client: `tracerProvider` must be an object with getTracer(), not an object"],
    [{ client: { helloTimeout: -1 } }, "FakeKoma options: client: `helloTimeout` must be a number >= 0, or null, not -1"],
    [
      { client: { executable: SIM } },
      "FakeKoma options: client: unknown option `executable` (`executable` is an option of the fake, beside `client`); the options are: cwd, trace, helloTimeout, telemetry, tracerProvider, meterProvider, captureContent",
    ],
    [null, "FakeKoma options must be an object, not null"],
  ];
  const before = ownFolders();
  for (const [options, message] of cases) {
    assert.throws(() => new FakeKoma({}, options), { name: "TypeError", message });
    assert.throws(() => fakeKoma({ after() {} }, {}, options), { name: "TypeError", message });
  }
  assert.equal(ownFolders(), before, "nothing was made");
  const koma = new FakeKoma({}, { executable: SIM, env: { A: undefined }, delayMs: 0, client: { trace: false, helloTimeout: null } });
  assert.throws(() => koma.newClient({ timeout: 5 }), /newClient\(options\): unknown option `timeout`/);
  return koma.close();
});

test("the builder refuses before anything starts: no folder, no fake, no client", BOUND, () => {
  const before = ownFolders();
  assert.throws(() => new FakeKoma({ turns: [{ steps: [{ do: "explode" }] }] }, { executable: "/nonexistent/koma-sim" }), ScenarioError);
  assert.throws(() => fakeKoma({ after() {} }, { turns: [{ steps: [{ do: "explode" }] }] }), ScenarioError);
  // The executable is looked up only once the scenario is good (it is not
  // there); the check is @koma/sdk/sim's koma-sim, which has exited.
  assert.equal(ownFolders(), before);
});

test(
  "a hand-written bad file is refused by koma-sim: the client fails with transport_failure, and shows koma-sim's line",
  BOUND,
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "koma-bad-file-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "s.json");
    writeFileSync(file, '{"turns": [{"match": {"contains": "deploy"}, "steps": [{"do": "explode"}]}]}');
    const client = new Client({ executable: SIM, env: { KOMA_SIM_SCENARIO: file, KOMA_SIM_HOME: dir } });
    t.after(() => client.close());
    const err = await rejection(client.create({}));
    assert.equal(err.code, "transport_failure", err.message);
    const line = `koma-sim: bad scenario ${file}: turns[0] (contains "deploy"): steps[0].do: unknown step "explode"`;
    assert.match(err.message, /exited with code 64/);
    // The message quotes koma's stderr escaped: a backslash (a Windows path's) doubled.
    assert.ok(err.message.includes(line.replaceAll("\\", "\\\\")), err.message);
    assert.ok(client.stderr.startsWith(line), client.stderr);
  },
);

// ---------------------------------------------------------------- turns

test("matchers: by turn number, exact text, substring and regular expression; times; the first entry that matches", BOUND, async (t) => {
  const koma = fake(t, {
    turns: [
      { match: { turn: 2 }, steps: [step.output("second")] },
      { match: { text: "exact words" }, steps: [step.output("exact")] },
      { match: { contains: "deploy" }, times: 2, steps: [step.output("contains")] },
      { match: { regex: "(?i)^fix (\\w+)\\.rs$" }, times: "always", steps: [step.output("regex")] },
    ],
  });
  const c = koma.client;
  await c.create({});
  const out = async (text) => (await c.run({ text }, { onApproval: "deny" })).output;
  assert.equal(await out("exact words"), "exact");
  assert.equal(await out("exact words"), "second", "turn 2 comes first in the list");
  assert.equal(await out("please deploy"), "contains");
  assert.equal(await out("deploy now"), "contains");
  const used = await rejection(out("deploy again"));
  assert.equal(used.code, "remote");
  assert.equal(used.remote.code, "unscripted", "the entry's two turns are used up");
  for (const text of ["fix main.rs", "FIX lib.rs", "fix a.rs"]) assert.equal(await out(text), "regex", text);
  assert.equal((await rejection(out("fix main.rs now"))).remote.code, "unscripted", "anchored where it says");
});

test("output and tool steps: the turn's events in order, and its result", BOUND, async (t) => {
  const koma = fake(t, {
    turns: [
      {
        steps: [
          step.output("Running the tests. "),
          step.tool("run_tests", { passed: 42 }, { input: { suite: "all" } }),
          step.tool("lint", "3 warnings", { error: true }),
          step.output("Done."),
        ],
      },
    ],
  });
  await koma.client.create({});
  const turn = koma.client.turn({ text: "check" });
  const items = await loop(turn);
  assert.deepEqual(names(items), [
    "turn_started",
    "state",
    "output",
    "tool_call",
    "tool_result",
    "tool_call",
    "tool_result",
    "output",
    "turn_finished",
  ]);
  const r = await turn.result;
  assert.equal(r.status, "completed");
  assert.equal(r.output, "Running the tests. Done.");
  assert.deepEqual(
    r.toolCalls.map(({ call, tool, input, output, error }) => ({ call, tool, input, output, error })),
    [
      { call: "c-1", tool: "run_tests", input: { suite: "all" }, output: { passed: 42 }, error: false },
      { call: "c-2", tool: "lint", input: {}, output: "3 warnings", error: true },
    ],
  );
});

for (const decision of ["allow", "deny"]) {
  test(`an approval plays what follows ${decision === "allow" ? "an allow" : "a deny"}`, BOUND, async (t) => {
    const koma = fake(t, {
      turns: [
        {
          steps: [
            step.approval("git_push", {
              input: { remote: "origin" },
              allow: { output: "pushed", steps: [step.output("Deployed.")] },
              deny: { output: "not pushed", steps: [step.output("Not deployed."), step.finish("failed", "the push was denied")] },
            }),
            step.output(" Bye."),
          ],
        },
      ],
    });
    await koma.client.create({});
    const asked = [];
    const r = await koma.client.run({ text: "deploy" }, { onApproval: (req) => (asked.push(req), decision) });
    assert.deepEqual(asked, [{ turn: "t-1", approval: "a-1", tool: "git_push", input: { remote: "origin" } }]);
    const [call] = r.toolCalls;
    assert.equal(call.approval, decision);
    if (decision === "allow") {
      assert.equal(r.status, "completed");
      assert.equal(r.output, "Deployed. Bye.", "the branch's steps, then the rest of the turn");
      assert.deepEqual([call.output, call.error], ["pushed", false]);
    } else {
      assert.equal(r.status, "failed");
      assert.equal(r.output, "Not deployed.", "the branch's finish ended the turn");
      assert.deepEqual([call.output, call.error], ["not pushed", true]);
    }
    assert.deepEqual(koma.approvals(), [{ approval: "a-1", decision }]);
  });
}

test("an approval without branches: allowed and denied, with the format's defaults", BOUND, async (t) => {
  const koma = fake(t, { turns: [{ times: 2, steps: [step.approval("rm")] }] });
  await koma.client.create({});
  const allowed = await koma.client.run({ text: "one" }, { onApproval: "allow" });
  const denied = await koma.client.run({ text: "two" }, { onApproval: "deny" });
  assert.deepEqual([allowed.toolCalls[0].output, allowed.toolCalls[0].error], ["allowed", false]);
  assert.deepEqual([denied.toolCalls[0].output, denied.toolCalls[0].error], ["denied", true]);
});

test("pause: for a while, or until the turn is interrupted", BOUND, async (t) => {
  const koma = fake(t, {
    turns: [
      { match: { text: "short" }, steps: [step.output("a"), step.pause(20), step.output("b")] },
      { match: { text: "long" }, steps: [step.output("waiting"), step.pause(), step.output("never")] },
    ],
  });
  await koma.client.create({});
  assert.equal((await koma.client.run({ text: "short" }, { onApproval: "deny" })).output, "ab");
  const turn = koma.client.turn({ text: "long" });
  const items = [];
  for await (const item of turn) {
    items.push(item);
    if (item.type === "event" && item.name === "output") await turn.interrupt();
  }
  const r = await turn.result;
  assert.equal(r.status, "interrupted");
  assert.equal(r.output, "waiting");
  assert.equal(items.at(-1).data.status, "interrupted");
});

test("event: any name and data; one outside the catalog is skipped by the client, a catalog one is delivered", BOUND, async (t) => {
  const koma = fake(t, {
    turns: [
      {
        steps: [
          step.output("a"),
          step.event("mystery", { x: 1 }),
          step.event("diagnostic", { level: "warning", message: "disk almost full" }),
          step.output("b"),
        ],
      },
    ],
  });
  await koma.client.create({});
  const turn = koma.client.turn({ text: "go" });
  const items = await loop(turn);
  assert.deepEqual(names(items), ["turn_started", "state", "output", "diagnostic", "output", "turn_finished"]);
  assert.deepEqual(items[3].data, { level: "warning", message: "disk almost full" });
  assert.equal(items[3].seq, items[2].seq + 2, "the unknown event between them had its seq");
  assert.equal((await turn.result).output, "ab");
});

test("finish: any status, outside the catalog too, with an error", BOUND, async (t) => {
  const koma = fake(t, {
    turns: [
      { match: { text: "odd" }, steps: [step.output("x"), step.finish("escalated")] },
      { match: { text: "failed" }, steps: [step.finish("failed", "the build broke")] },
    ],
  });
  await koma.client.create({});
  const odd = await koma.client.run({ text: "odd" }, { onApproval: "deny" });
  assert.deepEqual([odd.status, odd.output], ["escalated", "x"]);
  const turn = koma.client.turn({ text: "failed" });
  const items = await loop(turn);
  assert.deepEqual(items.at(-1).data, { turn: "t-2", status: "failed", error: "the build broke" });
  assert.equal((await turn.result).status, "failed");
});

test("exit: koma exits with a code mid-turn; the run fails with transport_failure and keeps what the turn got", BOUND, async (t) => {
  const koma = fake(t, { turns: [{ steps: [step.output("half"), step.exit(3)] }] });
  await koma.client.create({});
  const err = await rejection(koma.client.run({ text: "go" }, { onApproval: "deny" }));
  assert.equal(err.code, "transport_failure");
  assert.match(err.message, /exited with code 3/);
  assert.equal(err.result.turn, "t-1");
  assert.equal(err.result.status, "unknown");
  assert.equal(err.result.output, "half");
});

test("crash: koma dies of a signal mid-turn; the run fails with transport_failure and keeps the tool calls so far", BOUND, async (t) => {
  const koma = fake(t, { turns: [{ steps: [step.tool("read_file", "contents"), step.output("Reading..."), step.crash("SIGSEGV")] }] });
  await koma.client.create({});
  const err = await rejection(koma.client.run({ text: "go" }, { onApproval: "deny" }));
  assert.equal(err.code, "transport_failure");
  // Windows has no signals: koma-sim.exe's SIGSEGV crash is STATUS_ACCESS_VIOLATION (docs/koma-sim.md, "On Windows").
  assert.match(
    err.message,
    process.platform === "win32" ? /exited with code 0xC0000005 \(STATUS_ACCESS_VIOLATION\)/ : /killed by signal 11/,
  );
  assert.deepEqual(
    err.result.toolCalls.map((c) => c.tool),
    ["read_file"],
  );
  assert.equal(err.result.output, "Reading...");
  assert.equal((await rejection(koma.client.state())).code, "transport_failure", "the client has failed");
});

test("stop_answering: a hung koma; a call's deadline ends the wait, and close() still returns", BOUND, async (t) => {
  const koma = fake(t, { turns: [{ steps: [step.output("a"), step.stopAnswering()] }] });
  await koma.client.create({});
  assert.equal((await koma.client.submit({ text: "go" })).turn, "t-1");
  // The steps play after submit's answer: a state may still be answered
  // before the worker comes to stop_answering; then none is.
  for (;;) {
    const err = await koma.client.state({ timeout: 300 }).then(
      () => undefined,
      (e) => e,
    );
    if (err === undefined) continue;
    assert.equal(err.code, "timeout");
    break;
  }
  assert.deepEqual(koma.methods().slice(0, 2), ["create", "submit"]);
  await koma.close();
  assert.equal(koma.client.pid, null);
});

test("broken_frame: a line that is not JSON is a protocol_error", BOUND, async (t) => {
  const koma = fake(t, { turns: [{ steps: [step.output("a"), step.brokenFrame("INFO something happened")] }] });
  await koma.client.create({});
  const err = await rejection(koma.client.run({ text: "go" }, { onApproval: "deny" }));
  assert.equal(err.code, "protocol_error");
  assert.match(err.message, /INFO something happened|not JSON|JSON/);
});

// ---------------------------------------------------------------- methods and the default

test("methods: a scripted result, a scripted error on the Nth call, and an answer sent late", BOUND, async (t) => {
  const koma = fake(t, {
    turns: [{ times: "always", steps: [step.output("ok")] }],
    methods: [
      { method: "configure", result: { session: "s-x", status: "idle", turn: null, queued: 0, model: "scripted" } },
      { method: "submit", nth: 2, error: { code: "busy", message: "turn t-1 is running", data: { turn: "t-1" } } },
      { method: "submit", nth: 3, error: { code: "rate_limited" } },
      { method: "state", nth: 1, delay_ms: 1000 },
    ],
  });
  const c = koma.client;
  await c.create({});
  assert.equal((await c.configure({ model: "other" })).model, "scripted", "answered as scripted, not carried out");
  assert.equal((await c.run({ text: "one" }, { onApproval: "deny" })).status, "completed");
  const busy = await rejection(c.submit({ text: "two" }));
  assert.deepEqual([busy.code, busy.remote], ["remote", { code: "busy", message: "turn t-1 is running", data: { turn: "t-1" } }]);
  const limited = await rejection(c.submit({ text: "three" }));
  assert.deepEqual([limited.remote.code, limited.remote.message], ["rate_limited", "rate_limited (scripted by the scenario)"]);
  // The first state is answered a second late; the request after it is answered first.
  const order = [];
  const late = c.state().then((s) => (order.push("state"), s));
  const { turn } = await c.submit({ text: "four" });
  order.push("submit");
  assert.equal((await late).model, "sim-1", "carried out: the real state, unconfigured");
  assert.deepEqual(order, ["submit", "state"]);
  assert.equal(turn, "t-2");
});

test("unscripted turns: refused with the remote error unscripted by default, or played by the keyword agent", BOUND, async (t) => {
  const refusing = fake(t, { turns: [{ match: { text: "known" }, steps: [] }] });
  await refusing.client.create({});
  const err = await rejection(refusing.client.submit({ text: "something else" }));
  assert.equal(err.code, "remote");
  assert.equal(err.remote.code, "unscripted");
  assert.match(err.remote.message, /no turn of the scenario matches the text "something else"/);
  assert.deepEqual(err.remote.data, { text: "something else" });
  assert.equal((await refusing.client.state()).turn, null, "nothing started");

  const agent = fake(t, { unscripted: "agent", turns: [{ match: { text: "known" }, steps: [step.output("scripted")] }] });
  await agent.client.create({});
  assert.equal((await agent.client.run({ text: "known" }, { onApproval: "deny" })).output, "scripted");
  const r = await agent.client.run({ text: "read notes.md" }, { onApproval: "deny" });
  assert.equal(r.toolCalls[0].tool, "read_file", "the keyword agent read");
  assert.match(r.output, /^Sim reply/);
});

// ---------------------------------------------------------------- the record

test("the record: every request in order, with its params; the helpers read it", BOUND, async (t) => {
  const koma = fake(t, { turns: [{ times: "always", steps: [step.approval("write_file"), step.output("ok")] }] });
  const c = koma.client;
  assert.deepEqual(koma.requests(), [], "nothing yet (no file)");
  await c.create({ model: "m-1" });
  await c.run({ text: "one" }, { onApproval: "allow" });
  await c.run({ text: "two" }, { onApproval: "deny", mode: "interrupt" });
  await c.detach();
  const reqs = koma.requests();
  assert.deepEqual(
    reqs.map((r) => r.n),
    reqs.map((_, i) => i + 1),
  );
  assert.ok(reqs.every((r) => typeof r.pid === "number" && typeof r.id === "string"));
  assert.deepEqual(reqs[0].params, { model: "m-1" });
  assert.deepEqual(koma.methods(), ["create", "submit", "approve", "interrupt_and_submit", "approve", "detach"]);
  assert.deepEqual(koma.texts(), ["one", "two"]);
  assert.deepEqual(koma.approvals(), [
    { approval: "a-1", decision: "allow" },
    { approval: "a-2", decision: "deny" },
  ]);
  assert.deepEqual(
    koma.calls("approve").map((r) => r.n),
    [3, 5],
  );
  assert.ok(koma.called("detach"));
  assert.equal(koma.called("configure"), false);
  assert.deepEqual(readRecord(koma.recordPath), reqs);
  assert.deepEqual(readRecord(join(koma.dir, "nothing.jsonl")), []);
});

// ---------------------------------------------------------------- the fake itself

test("nothing hangs: a turn that waits on an approval nobody answers ends when the client closes", BOUND, async (t) => {
  const koma = fake(t, { turns: [{ steps: [step.approval("deploy")] }] });
  await koma.client.create({});
  const { turn } = await koma.client.submit({ text: "go" });
  for await (const item of koma.client.events()) if (item.type === "event" && item.name === "approval_requested") break;
  assert.equal((await koma.client.state()).status, "waiting");
  const pid = koma.client.pid;
  await koma.client.close();
  assert.equal(koma.client.pid, null);
  assert.throws(() => process.kill(pid, 0), /ESRCH/, "koma-sim is gone and reaped");
  assert.equal(turn, "t-1");
});

test("nothing hangs: a pause without end, then close()", BOUND, async (t) => {
  const koma = fake(t, { turns: [{ steps: [step.pause()] }] });
  await koma.client.create({});
  await koma.client.submit({ text: "go" });
  await koma.close();
  assert.equal(existsSync(koma.dir), false, "the folder is removed");
});

test("fakeKoma(t, ...) closes the fake when node:test's test ends; FakeKoma options reach koma-sim and the client", BOUND, async (t) => {
  let inner;
  await t.test("a test that uses it", async (t2) => {
    inner = fakeKoma(t2, { turns: [{ steps: [step.output("x")] }] }, { executable: SIM, env: { KOMA_SIM_FAULT: "odd_status" } });
    await inner.client.create({});
    assert.equal((await inner.client.run({ text: "go" }, { onApproval: "deny" })).status, "escalated", "the fault switch acted");
    assert.ok(existsSync(inner.scenarioPath));
  });
  assert.equal(inner.client.pid, null, "closed after the test");
  assert.equal(existsSync(inner.dir), false);
  assert.equal((await rejection(inner.client.state())).code, "closed");
  assert.throws(() => inner.newClient(), /closed/);
});

test("fakeKoma's end of a test returns after every koma-sim of its fakes is reaped", BOUND, async (t) => {
  const pids = [];
  // Linux's /proc lists this process's children, zombies included; Windows has no zombies, and kill(pid, 0) says whether one runs.
  const running = () => (process.platform === "linux" ? childPids().filter((p) => pids.includes(p)) : pids.filter(alive));
  await t.test("a test with fakes in the middle of their turns, two clients each", async (t2) => {
    for (let i = 0; i < 6; i++) {
      const koma = fake(t2, { turns: [{ times: "always", steps: [step.output("x"), step.pause()] }] });
      const other = koma.newClient();
      for (const c of [koma.client, other]) {
        await c.create({});
        await c.submit({ text: "go" });
        pids.push(c.pid);
      }
    }
    assert.equal(running().length, 12);
  });
  // Right after the test's end: none of them runs, none is a zombie.
  assert.deepEqual(running(), []);
});

test("a fake's folder left by a test process killed without a handler is removed by the next fake made", BOUND, async (t) => {
  const { spawn } = await import("node:child_process");
  const { once } = await import("node:events");
  /** A Node process that makes a fake, prints its folder, and waits to be killed. */
  const owner = async () => {
    const script = `const { FakeKoma } = require(${JSON.stringify(join(root, "testing.js"))});
      const koma = new FakeKoma({}, { executable: ${JSON.stringify(SIM)} });
      console.log(koma.dir);
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    t.after(() => child.kill("SIGKILL"));
    const [line] = await once(child.stdout, "data");
    return { child, dir: String(line).trim() };
  };
  const killed = await owner();
  const live = await owner();
  killed.child.kill("SIGKILL");
  await once(killed.child, "exit");
  assert.ok(existsSync(killed.dir) && existsSync(live.dir), "no handler ran: the folder is there");
  const koma = new FakeKoma({}, { executable: SIM });
  t.after(() => koma.close());
  assert.equal(existsSync(killed.dir), false, "its owner is gone: removed");
  assert.ok(existsSync(live.dir), "its owner runs: kept");
  assert.match(koma.dir, new RegExp(`koma-fake-\\d+-${process.pid}-`), "the folder names its owner");
  live.child.kill("SIGKILL");
  await once(live.child, "exit");
  await new FakeKoma({}, { executable: SIM }).close();
  assert.equal(existsSync(live.dir), false);
});

test("newClient(): its koma-sim goes on with the scenario where the first stopped, as after a crash and a resume", BOUND, async (t) => {
  const koma = fake(t, {
    turns: [{ steps: [step.output("Working..."), step.crash()] }, { match: { turn: 2 }, steps: [step.output("Done.")] }],
  });
  const { session } = await koma.client.create({});
  assert.equal((await rejection(koma.client.run({ text: "task" }, { onApproval: "deny" }))).code, "transport_failure");
  const again = koma.newClient();
  await again.resume({ session });
  const r = await again.run({ text: "task" }, { onApproval: "deny" });
  assert.deepEqual([r.turn, r.status, r.output], ["t-2", "completed", "Done."], "turns[1], the second turn of the story");
  assert.deepEqual(koma.texts(), ["task", "task"]);
});

test("fakeKoma with vitest's context (onTestFinished); a bad context is refused; newClient and clientOptions", BOUND, async (t) => {
  const finished = [];
  const koma = fakeKoma({ onTestFinished: (fn) => finished.push(fn) }, { turns: [{ steps: [] }] }, { executable: SIM });
  assert.equal(finished.length, 1);
  assert.equal(koma.clientOptions.executable, SIM);
  assert.deepEqual(Object.keys(koma.clientOptions.env).sort(), [
    "KOMA_SIM_DELAY_MS",
    "KOMA_SIM_HOME",
    "KOMA_SIM_PROGRESS",
    "KOMA_SIM_RECORD",
    "KOMA_SIM_SCENARIO",
  ]);
  const mine = new Client(koma.clientOptions);
  t.after(() => mine.close());
  await mine.create({});
  const other = koma.newClient();
  await other.create({});
  assert.deepEqual(koma.methods(), ["create", "create"]);
  assert.notEqual(koma.requests()[0].pid, koma.requests()[1].pid, "two koma-sims, one record");
  // The client made here is this test's to close, before the fake's folder goes (Windows removes no folder a process still uses).
  await mine.close();
  await finished[0]();
  assert.equal(other.pid, null);
  assert.throws(() => fakeKoma(undefined, {}), TypeError);
  assert.throws(() => fakeKoma({}, {}), /node:test's \(with after\(\)\) or vitest's/);
});

test("the default executable is @koma/sdk/sim's koma-sim; Symbol.asyncDispose closes", BOUND, async () => {
  const koma = new FakeKoma({ turns: [{ steps: [step.output("hi")] }] });
  try {
    assert.equal(koma.clientOptions.executable, require(join(root, "sim.js")).simPath);
    await koma.client.create({});
    assert.equal((await koma.client.run({ text: "x" }, { onApproval: "deny" })).output, "hi");
  } finally {
    await koma[Symbol.asyncDispose]();
  }
  assert.equal(koma.client.pid, null);
  assert.equal(existsSync(koma.dir), false);
});

// ---------------------------------------------------------------- the docs' example

/** The blocks of a Markdown text that name their file: [{lang, file, body}]. */
const fileBlocks = (markdown) =>
  [...markdown.matchAll(/^```(\w+) title="([^"]+)"\n([\s\S]*?)^```$/gm)].map(([, lang, file, body]) => ({ lang, file, body }));

test("docs/testing.md shows the example's files as they are", () => {
  const blocks = fileBlocks(readFileSync(join(root, "docs", "testing.md"), "utf8"));
  const files = ["examples/testing/app.mjs", "examples/testing/app.test.mjs", "examples/testing/vitest/app.test.mjs"];
  assert.deepEqual(
    blocks.map((b) => b.file),
    files,
  );
  for (const b of blocks) assert.equal(b.body, readFileSync(join(root, b.file), "utf8"), `${b.file} in docs/testing.md`);
});

test("docs/testing.md's snippet of one story across processes runs as written, in a test", BOUND, async (t) => {
  const doc = readFileSync(join(root, "docs", "testing.md"), "utf8");
  const [, body] = /\*\*One story across processes\.\*\*[\s\S]*?```js\n([\s\S]*?)```/.exec(doc);
  const AsyncFunction = (async () => {}).constructor;
  await new AsyncFunction("t", "assert", "fakeKoma", "step", body)(t, assert, fake, step);
});

test("the example's node:test tests pass as written, through koma-sim", { timeout: 120_000 }, () => {
  const env = { ...process.env };
  delete env.KOMA_SIM_PATH;
  delete env.NODE_TEST_CONTEXT;
  const r = spawnSync(process.execPath, ["--test", "--test-reporter=tap", "examples/testing/app.test.mjs"], {
    cwd: root,
    env,
    encoding: "utf8",
    timeout: 110_000,
  });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^# pass 5$/m);
  assert.match(r.stdout, /^# fail 0$/m);
});
