// The docs' tables: docs/protocol.md's methods, results, events and error
// codes, the README's error codes, and CONTRIBUTING.md's list of the
// generated files; the tables of a scenario's steps in docs/koma-sim.md,
// docs/testing.md and docs/testing-python.md.
import { kindOf, nullable, propertiesOf, scalarOf } from "./load.mjs";
import { camel } from "./names.mjs";
import { pySignature } from "./python.mjs";
import { builderArgs, stepUnion, want } from "./scenario.mjs";

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
