// What the emitters ask of the scenario format (schema/scenario.schema.json):
// its file, its steps, and how the builders of both testing modules take a
// step's members (Node's `step.tool(tool, output, {input, error})`,
// Python's `Tool(tool, output, input=..., error=...)`).
import { kindOf, scalarOf } from "./load.mjs";
import { camel } from "./names.mjs";

export const SCENARIO = "schema/scenario.schema.json";

/** The union of the steps: the scenario's union told apart by a tag (`do`). */
export function stepUnion(m) {
  return m.defsOf(SCENARIO).find((d) => d.tag);
}

/**
 * Each step's builder: its name (`stopAnswering`), its def, its tag's value,
 * `args` (the members it takes as arguments, in the schema's order: those
 * that `x-node-options` does not name) and `options` (those it takes in an
 * options object); each member with `optional` and the builders' `fallback`
 * (`x-builder-default`).
 */
export function builderArgs(m) {
  const union = stepUnion(m);
  return union.schema.oneOf.map(({ $def: def }) => {
    const required = new Set(def.schema.required ?? []);
    const inOptions = new Set(def.schema["x-node-options"] ?? []);
    const members = Object.entries(def.schema.properties)
      .filter(([name]) => name !== union.tag)
      .map(([name, schema]) => ({
        name,
        schema,
        fallback: schema["x-builder-default"],
        optional: !required.has(name) || schema["x-builder-default"] !== undefined,
        inOptions: inOptions.has(name),
      }));
    return {
      name: camel(def.member.key),
      def,
      tag: def.member.key,
      members,
      args: members.filter((x) => !x.inOptions),
      options: members.filter((x) => x.inOptions),
    };
  });
}

/** `a turn` -> `turn`; `an approval's branch` -> `approval's branch`. */
export const noun = (title) => title.replace(/^(a|an|the) /, "");

/** A noun's plural: `step` -> `steps`, `method entry` -> `method entries`. */
export const plural = (word) => (/[^aeiou]y$/.test(word) ? `${word.slice(0, -1)}ies` : `${word}s`);

/** What a member must be, as a message says it (`must be <want>, not 42`). */
export function want(s) {
  if (s["x-method-name"]) return "a string";
  switch (kindOf(s)) {
    case "scalar": {
      if (scalarOf(s) !== "integer") return { string: "a string", boolean: "a boolean", number: "a number" }[scalarOf(s)];
      if (s.maximum !== undefined) return `an integer from ${s.minimum ?? 0} to ${s.maximum}`;
      return s.minimum === 1 ? "a positive integer" : s.minimum === 0 ? "a non-negative integer" : "an integer";
    }
    case "const":
      return JSON.stringify(s.const);
    case "scalars":
      return s.oneOf.map((m) => ("const" in m ? JSON.stringify(m.const) : want(m))).join(" or ");
    case "array": {
      const title = s.items.$def?.schema.title;
      return title ? `an array of ${plural(noun(title))}` : "an array";
    }
    case "ref": {
      const t = s.$def.schema;
      if (t.enum) return t.title ? `a string (${t.title})` : t.enum.map((v) => JSON.stringify(v)).join(" or ");
      return t.title ? `an object (${t.title})` : "an object";
    }
  }
  return "any JSON value";
}
