// The files made from schema/, listed once: scripts/generate.mjs writes and
// checks them, .gitattributes marks them (linguist-generated), and
// CONTRIBUTING.md's table of generated files is made from this list. A file
// of `region` holds tables between `<!-- generated:NAME -->` and
// `<!-- /generated -->`; the rest of it is written by hand.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { esmEntry, scenarioStepsJs, tablesJs } from "./javascript.mjs";
import {
  mdErrors,
  mdEvents,
  mdFiles,
  mdMatchers,
  mdMethods,
  mdResults,
  mdScenarioClasses,
  mdScenarioFields,
  mdScenarioFieldsNode,
  mdStepClasses,
  mdStepFunctions,
  mdSteps,
} from "./markdown.mjs";
import { pyCodes, pyExceptions, pyModule, pyScenario } from "./python.mjs";
import { rust } from "./rust.mjs";
import { rustSim } from "./rust-sim.mjs";
import { rustfmt, ruffFormat } from "./format.mjs";
import { testingTypings, typings } from "./typescript.mjs";

/** `text` with its region `name` replaced by `body`. */
export function region(text, name, body, file) {
  const open = `<!-- generated:${name} -->`;
  const close = "<!-- /generated -->";
  const start = text.indexOf(open);
  const end = start < 0 ? -1 : text.indexOf(close, start);
  if (start < 0 || end < 0) throw new Error(`${file}: no region ${open} ... ${close}`);
  return `${text.slice(0, start + open.length)}\n${body}\n${text.slice(end)}`;
}

const regions = (file, tables) => (m, old) => Object.entries(tables).reduce((text, [name, make]) => region(text, name, make(m), file), old);

/** Each generated file: `make(model, old text, root)` gives its new text (`null`: another tool writes it). */
export const OUTPUTS = [
  {
    file: "crates/koma-transport/src/surface.rs",
    by: "`npm run generate`",
    from: "the methods, events and error codes; the values with `x-rust-name`",
    make: (m, _old, root) => rustfmt(root, rust(m)),
  },
  {
    file: "index.d.ts",
    by: "`npm run generate`, then `npm run build` (napi writes the `Client` class after the generated part)",
    from: "every type Node has, a class per error code, the protocol's methods; `src/header.d.ts` first",
    make: (m, old, root) => typings(m, readFileSync(join(root, "src", "header.d.ts"), "utf8"), old),
  },
  {
    file: "lib/surface.js",
    by: "`npm run generate`",
    from: "the methods, error codes and the options of `Client`",
    make: (m) => tablesJs(m),
  },
  { file: "index.mjs", by: "`npm run generate`", from: "the error codes (the entry's names for ES modules)", make: (m) => esmEntry(m) },
  {
    file: "python/koma_sdk/_surface.py",
    by: "`npm run generate`",
    from: "protocol.schema.json: results, event data, events, the protocol's methods",
    make: (m, _old, root) =>
      ruffFormat(
        root,
        pyModule(
          m,
          "schema/protocol.schema.json",
          "The protocol's results, events and methods, as koma_sdk hands them out:\nresults are frozen, slotted dataclasses with the wire's field names, events\none class per name (so a type checker narrows `data` by `name`), and the\nclient's protocol methods one coroutine each.",
        ),
      ),
  },
  {
    file: "python/koma_sdk/_types.py",
    by: "`npm run generate`",
    from: "sdk.schema.json: hello, the overflow report, a turn's result",
    make: (m, _old, root) =>
      ruffFormat(
        root,
        pyModule(
          m,
          "schema/sdk.schema.json",
          "The package's own values: the checked hello, the one overflow report, and\nwhat a turn came to. Unknown fields are dropped, as they are for results and\nevents; a value that is not an object is `protocol_error` for that call.",
        ),
      ),
  },
  {
    file: "python/koma_sdk/_codes.py",
    by: "`npm run generate`",
    from: "the error codes",
    make: (m, _old, root) => ruffFormat(root, pyCodes(m)),
  },
  {
    file: "python/koma_sdk/_exceptions.py",
    by: "`npm run generate`",
    from: "the error codes: a class each",
    make: (m, _old, root) => ruffFormat(root, pyExceptions(m)),
  },
  {
    file: "crates/koma-sim/src/scenario/format.rs",
    by: "`npm run generate`",
    from: "scenario.schema.json: koma-sim's scenario types (serde) and the table its messages are worded from",
    make: (m, _old, root) => rustfmt(root, rustSim(m)),
  },
  {
    file: "testing.d.ts",
    by: "`npm run generate`",
    from: "scenario.schema.json: the scenario format's types and `step`'s functions; `lib/testing-header.d.ts` first",
    make: (m, _old, root) => testingTypings(m, readFileSync(join(root, "lib", "testing-header.d.ts"), "utf8")),
  },
  {
    file: "lib/scenario-steps.js",
    by: "`npm run generate`",
    from: "scenario.schema.json: the table `step`'s functions are made from",
    make: (m) => scenarioStepsJs(m),
  },
  {
    file: "python/koma_sdk/_scenario_types.py",
    by: "`npm run generate`",
    from: "scenario.schema.json: the dataclasses and types of `koma_sdk.testing`'s scenarios",
    make: (m, _old, root) => ruffFormat(root, pyScenario(m, "schema/scenario.schema.json")),
  },
  {
    file: "docs/protocol.md",
    region: true,
    by: "`npm run generate`",
    from: "the tables of methods, results, events, error codes",
    make: regions("docs/protocol.md", { methods: mdMethods, results: mdResults, events: mdEvents, errors: mdErrors }),
  },
  {
    file: "docs/koma-sim.md",
    region: true,
    by: "`npm run generate`",
    from: "scenario.schema.json: the tables of the file's fields, the matchers and a scenario's steps",
    make: regions("docs/koma-sim.md", { fields: mdScenarioFields, matchers: mdMatchers, steps: mdSteps }),
  },
  {
    file: "docs/testing.md",
    region: true,
    by: "`npm run generate`",
    from: "scenario.schema.json: the tables of a scenario's fields and of `step`'s functions",
    make: regions("docs/testing.md", { fields: mdScenarioFieldsNode, steps: mdStepFunctions }),
  },
  {
    file: "docs/testing-python.md",
    region: true,
    by: "`npm run generate`",
    from: "scenario.schema.json: the tables of the scenario's classes and of the steps' classes",
    make: regions("docs/testing-python.md", { classes: mdScenarioClasses, steps: mdStepClasses }),
  },
  {
    file: "docs/client.md",
    region: true,
    by: "`npm run generate`",
    from: "the table of error codes",
    make: regions("docs/client.md", { errors: mdErrors }),
  },
  {
    file: "CONTRIBUTING.md",
    region: true,
    by: "`npm run generate`",
    from: "this table (scripts/schema/outputs.mjs)",
    make: regions("CONTRIBUTING.md", { files: () => mdFiles(OUTPUTS) }),
  },
  { file: ".gitattributes", by: "`npm run generate`", from: "this table", make: () => gitattributes() },
  { file: "binding.js", by: "`npm run build` (napi)", from: "the addon's exports", make: null },
];

function gitattributes() {
  const whole = OUTPUTS.filter((o) => !o.region && o.file !== ".gitattributes");
  return [
    "# Generated by scripts/generate.mjs from scripts/schema/outputs.mjs: do not edit.",
    "# The files made by a tool: review tools fold them (edit schema/ instead).",
    ...whole.map((o) => `${o.file} linguist-generated=true`),
    "",
  ].join("\n");
}
