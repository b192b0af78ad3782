// The docs' tables: docs/protocol.md's methods, results, events and error
// codes, docs/client.md's error codes, and CONTRIBUTING.md's list of the
// generated files; the scenario format's tables in docs/koma-sim.md (the
// file's fields, the matchers, the steps), docs/testing.md (the fields, the
// steps' functions) and docs/testing-python.md (the parts' classes, the
// steps' classes).
import { kindOf, langsOf, nullable, propertiesOf, scalarOf } from "./load.mjs";
import { camel, snake } from "./names.mjs";
import { pySignature } from "./python.mjs";
import { builderArgs, SCENARIO, stepUnion, want } from "./scenario.mjs";

const lit = (v) => (v === null ? "null" : typeof v === "string" ? `'${v}'` : String(v));
const cell = (s) => s.replace(/\|/g, "\\|");

/** A type as the tables show it: enums spelled out, objects by name. */
function shown(s) {
  const t = (() => {
    switch (kindOf(s)) {
      case "ref":
        return s.$def.schema.enum ? s.$def.schema.enum.map(lit).join(" | ") : s.$def.name;
      case "const":
        return lit(s.const);
      case "enum":
        return s.enum.map(lit).join(" | ");
      case "scalar":
        return { string: "string", integer: "number", number: "number", boolean: "boolean" }[scalarOf(s)];
      case "array":
        return `${shown(s.items)}[]`;
      default:
        return "unknown";
    }
  })();
  return nullable(s) ? `${t} | null` : t;
}

const shape = (def) =>
  `{${propertiesOf(def)
    .map(([n, s, req]) => `${n}${req ? "" : "?"}: ${shown(s)}`)
    .join(", ")}}`;

export function mdMethods(m) {
  const lines = ["| method (JavaScript name) | params | result | what it does |", "|---|---|---|---|"];
  for (const method of m.methods) {
    const name = camel(method.name) === method.name ? `\`${method.name}\`` : `\`${method.name}\` (\`${camel(method.name)}\`)`;
    const params = method.params ? `\`${shape(method.params)}\`` : "`{}`";
    const result = method.result ? `\`${method.result.name}\`` : "`{}`";
    lines.push(`| ${name} | ${cell(params)} | ${result} | ${method.description} |`);
  }
  return lines.join("\n");
}

/** The results with fields, each once. */
const results = (m) => [...new Set(m.methods.map((x) => x.result).filter((d) => d && propertiesOf(d).length))];

export function mdResults(m) {
  const lines = ["| result | shape | what it says |", "|---|---|---|"];
  for (const def of results(m)) lines.push(`| \`${def.name}\` | ${cell(`\`${shape(def)}\``)} | ${def.schema.description} |`);
  return lines.join("\n");
}

export function mdEvents(m) {
  const named = new Set(results(m));
  const lines = ["| name | data | what it says |", "|---|---|---|"];
  for (const e of m.events) {
    const data = named.has(e.data) ? `\`${e.data.name}\`` : `\`${shape(e.data)}\``;
    lines.push(`| \`${e.name}\` | ${cell(data)} | ${e.description} |`);
  }
  return lines.join("\n");
}

export function mdErrors(m) {
  const lines = ["| code | class | when | written? |", "|---|---|---|---|"];
  for (const e of m.errors) lines.push(`| \`${e.code}\` | \`${e.className}\` | ${e.description} | ${e.written} |`);
  return lines.join("\n");
}

export function mdFiles(outputs) {
  const lines = ["| file | made by | from |", "|---|---|---|"];
  for (const o of outputs) lines.push(`| \`${o.file}\`${o.region ? " (its tables)" : ""} | ${o.by} | ${o.from} |`);
  return lines.join("\n");
}

/** What a step's member is, in the table: a scalar's own description, a type by its title, a set's values. */
function fieldWords(p) {
  const values = p.$def?.schema.enum;
  if (values) return values.map((v) => `\`${v}\``).join(", ");
  if (kindOf(p) === "ref" && p.$def.schema.title) return p.$def.schema.title;
  if (kindOf(p) === "scalar" && p.description) return p.description.replace(/^./, (c) => c.toLowerCase()).replace(/\.$/, "");
  if (kindOf(p) === "scalar" && scalarOf(p) === "string" && p.minLength) return "a non-empty string";
  return want(p);
}

/** docs/koma-sim.md's table of a scenario's steps: each step's `do`, its members (`?` if it may be left out), and what it does. */
export function mdSteps(m) {
  const union = stepUnion(m);
  const lines = ["| step | fields | what the agent does |", "|---|---|---|"];
  for (const { $def: def } of union.schema.oneOf) {
    const required = new Set(def.schema.required ?? []);
    const fields = Object.entries(def.schema.properties)
      .filter(([n]) => n !== union.tag)
      .map(([n, p]) => {
        const notes = [fieldWords(p)];
        if ("default" in p) notes.push(`\`${JSON.stringify(p.default)}\` if absent`);
        return `\`${n}\`${required.has(n) ? "" : "?"} (${notes.join("; ")})`;
      });
    lines.push(`| \`${def.member.key}\` | ${cell(fields.join(", "))} | ${cell(def.schema.description)} |`);
  }
  return lines.join("\n");
}

/** A step's title as a table's cell: `a tool call and its result`. */
const stepTitle = (def) => cell(def.schema.title);

/** docs/testing.md's table of `step`'s functions: how each is called, and what the agent does. */
export function mdStepFunctions(m) {
  const lines = ["| function | what the agent does |", "|---|---|"];
  for (const b of builderArgs(m)) {
    const params = b.args.map((a) => `${a.name}${a.optional ? "?" : ""}`);
    if (b.options.length) params.push(`{${b.options.map((o) => `${o.name}?`).join(", ")}}`);
    const given = b.args.filter((a) => a.fallback !== undefined).map((a) => `\`${a.fallback}\` unless given`);
    const what = given.length ? `${stepTitle(b.def)} (${given.join(", ")})` : stepTitle(b.def);
    lines.push(`| \`step.${b.name}(${params.join(", ")})\` | ${what} |`);
  }
  return lines.join("\n");
}

/** docs/testing-python.md's table of the steps' classes: how each is made, and what the agent does. */
export function mdStepClasses(m) {
  const union = stepUnion(m);
  const lines = ["| class | what the agent does |", "|---|---|"];
  for (const { $def: def } of union.schema.oneOf) lines.push(`| \`${pySignature(def, union.tag)}\` | ${stepTitle(def)} |`);
  return lines.join("\n");
}

// ---- The scenario file's parts: its fields, the matchers, the Python classes

/** The def of a member of the scenario's top-level object or of a turn entry, by name. */
const scenarioDef = (m, name) => m.defsOf(SCENARIO).find((d) => d.name === name);

/** A member's description as a cell: its first letter lower-case, no final period. */
const phrase = (text) => cell(text.replace(/^./, (c) => c.toLowerCase()).replace(/\.$/, ""));

/** An object's members as the docs write it: `{match?, times?, steps, about?}`. */
function members(def, langs = "node") {
  const required = new Set(def.schema.required ?? []);
  const names = Object.entries(def.schema.properties)
    .filter(([, p]) => langsOf(p).includes(langs))
    .map(([n]) => `${n}${required.has(n) ? "" : "?"}`);
  return `{${names.join(", ")}}`;
}

/** The matchers: each the one member of its object, with a stand-in for its value (`N`, or the key's initial). */
const matchers = (m) =>
  scenarioDef(m, "Match").schema.oneOf.map(({ $def: def }) => {
    const [[key, p]] = Object.entries(def.schema.properties);
    return { def, key, value: scalarOf(p) === "integer" ? "N" : key[0].toUpperCase() };
  });

/** The def a member names, itself or as its list's entry. */
const named = (p) => (kindOf(p) === "array" ? p.items.$def : p.$def);

/** Whether a member is a list of steps (which have a table of their own). */
const isSteps = (m, p) => kindOf(p) === "array" && p.items.$def === stepUnion(m);

/** What the docs show of a member's object: its matchers, or the members of a part (`{code, message?, data?}`). */
function inside(m, p) {
  const def = named(p);
  if (def?.name === "Match")
    return matchers(m)
      .map((x) => `\`{${x.key}}\``)
      .join(", ");
  return def?.schema.properties && !def.member ? `\`${members(def)}\`` : "";
}

/**
 * What a member of the file is: its description (a set's own, which names its
 * values, if it has one), then what is inside it (`shapes`), and, unless the
 * table has a column of defaults, its default.
 */
function memberWords(m, p, { withDefault = false, shapes = true } = {}) {
  const set = p.$def?.schema.enum && p.$def;
  let words = phrase(set?.schema.description ?? p.description);
  if (set && !set.schema.description) words = `${set.schema.enum.map((v) => `\`${JSON.stringify(v)}\``).join(" or ")}: ${words}`;
  const within = shapes ? inside(m, p) : "";
  if (within) words += `: ${within}`;
  if (!withDefault && "default" in p && !Array.isArray(p.default)) words += ` (\`${JSON.stringify(p.default)}\` if absent)`;
  return words;
}

/** The fields of an object of the file but its steps: `| field | meaning | default |`, a row each (`x-langs` as `langs`), each name after `prefix`. */
function fieldRows(m, def, langs, withDefault, prefix = "") {
  return Object.entries(def.schema.properties)
    .filter(([, p]) => langsOf(p).includes(langs) && !isSteps(m, p))
    .map(([n, p]) => {
      const row = [`\`${prefix}${n}\``, memberWords(m, p, { withDefault })];
      if (withDefault) row.push("default" in p ? `\`${JSON.stringify(p.default)}\`` : "");
      return `| ${row.join(" | ")} |`;
    });
}

/** The parts a scenario is made of but the steps and what they hold: the scenario, its entries, the matchers, a scripted error. */
function parts(m) {
  const seen = new Set();
  const visit = (def) => {
    if (!def || seen.has(def) || def === stepUnion(m)) return;
    seen.add(def);
    for (const member of def.schema.oneOf ?? []) visit(member.$def);
    for (const p of Object.values(def.schema.properties ?? {})) visit(named(p));
  };
  visit(scenarioDef(m, "Scenario"));
  return m.defsOf(SCENARIO).filter((d) => seen.has(d) && kindOf(d.schema) === "object");
}

/** docs/koma-sim.md's table of the file's top-level fields. */
export function mdScenarioFields(m) {
  return ["| field | meaning | default |", "|---|---|---|", ...fieldRows(m, scenarioDef(m, "Scenario"), "node", true)].join("\n");
}

/** docs/koma-sim.md's table of the matchers of a turn entry's `match`. */
export function mdMatchers(m) {
  const lines = ["| `match` | matches |", "|---|---|"];
  if (!(scenarioDef(m, "ScriptedTurn").schema.required ?? []).includes("match")) lines.push("| absent | any text |");
  for (const x of matchers(m)) lines.push(`| \`{"${x.key}": ${x.value}}\` | ${phrase(x.def.schema.description)} |`);
  return lines.join("\n");
}

/** docs/testing.md's table of the fields of a scenario, and of the entries of its lists (a turn entry, a method entry). */
export function mdScenarioFieldsNode(m) {
  const scenario = scenarioDef(m, "Scenario");
  const rows = fieldRows(m, scenario, "node", false);
  // Then each list's entry, and its fields.
  for (const [n, p] of Object.entries(scenario.schema.properties)) {
    const entry = kindOf(p) === "array" && p.items.$def;
    if (!entry) continue;
    rows.push(`| \`${n}[]\` | ${phrase(entry.schema.description)} |`, ...fieldRows(m, entry, "node", false, `${n}[].`));
  }
  return ["| field | what it says |", "|---|---|", ...rows].join("\n");
}

/** docs/testing-python.md's table of the classes of a scenario's parts other than the steps (which have their own): how each is made, and what it says. */
export function mdScenarioClasses(m) {
  const lines = ["| class | what it says |", "|---|---|"];
  const defs = parts(m).filter((d) => langsOf(d.schema).includes("python"));
  for (const def of defs) {
    const notes = Object.entries(def.schema.properties)
      // Not a comment, nor a list of parts that have their own row.
      .filter(([, p]) => langsOf(p).includes("python") && p.description && !/^A comment/.test(p.description))
      .filter(([, p]) => !(kindOf(p) === "array" && defs.includes(p.items.$def)))
      .map(([n, p]) => `\`${p["x-python-name"] ?? snake(n)}\`: ${memberWords(m, p, { shapes: false })}`);
    lines.push(`| \`${pySignature(def)}\` | ${[phrase(def.schema.description), ...notes].join("; ")} |`);
  }
  return lines.join("\n");
}
