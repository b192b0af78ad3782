// koma-sim's scenario types (crates/koma-sim/src/scenario/format.rs): the
// scenario format as serde types, which koma-sim's reader fills from a
// file's JSON, and the table of what its messages call each type and what
// each member must be. The reader (`read.rs`, a serde deserializer that
// keeps the path to each value) and the checks of meaning (`parse.rs`) are
// hand-written; koma-sim shares no code with the client core, so these are
// its own.
import { kindOf, SchemaError, scalarOf } from "./load.mjs";
import { doc, NOTE, pascal, quote, snake } from "./names.mjs";
import { noun, SCENARIO, want } from "./scenario.mjs";

const rustDoc = (text, indent) => (text ? doc(text, `${indent}/// `, 100) : []);
const FIELD_NAMES = { $schema: "schema", match: "r#match", type: "r#type" };
const fieldName = (n) => FIELD_NAMES[n] ?? n;

/** The Rust type of a member. */
function rustType(s, where) {
  if (s["x-method-name"]) return "String";
  switch (kindOf(s)) {
    case "scalar":
      return { string: "String", integer: s.minimum >= 0 ? "u64" : "i64", boolean: "bool" }[scalarOf(s)];
    case "const":
      return typeof s.const === "number" ? "u64" : typeof s.const === "boolean" ? "bool" : "String";
    case "any":
    case "scalars":
      return "Value"; // a union of scalars is told apart by the checks of meaning
    case "array":
      return `Vec<${rustType(s.items, where)}>`;
    case "ref":
      return s.$def.name;
  }
  throw new SchemaError(where.file, where.path, "koma-sim has no type for this member");
}

const fields = (def) =>
  `&[${Object.entries(def.schema.properties ?? {})
    .map(([n, p]) => `Field { name: ${quote(n)}, want: ${quote(want(p))} }`)
    .join(", ")}]`;

/** A Rust expression of a member's default (`default` in the schema), of type `type`. */
function defaultValue(p, type) {
  const v = p.default;
  if (type === "Value") return `serde_json::json!(${JSON.stringify(v)})`;
  if (type === "String") return `${quote(v)}.to_string()`;
  if (kindOf(p) === "ref") return `${type}::${pascal(String(v).toLowerCase())}`;
  return JSON.stringify(v);
}

/** A struct, and the functions that give its members' defaults (`#[serde(default = ...)]`). */
function struct(def, tag) {
  const out = [...rustDoc(def.schema.description, ""), "#[derive(Debug, Deserialize)]", "#[serde(deny_unknown_fields)]"];
  out.push(`pub struct ${def.name} {`);
  const required = new Set(def.schema.required ?? []);
  const defaults = [];
  for (const [n, p] of Object.entries(def.schema.properties ?? {})) {
    if (n === tag) continue;
    const where = { file: def.file, path: `${def.path}/properties/${n}` };
    const type = rustType(p, where);
    out.push(
      ...rustDoc([p.description, "default" in p ? `\`${JSON.stringify(p.default)}\` if absent.` : ""].filter(Boolean).join(" "), "    "),
    );
    if (fieldName(n).replace("r#", "") !== n) out.push(`    #[serde(rename = ${quote(n)})]`);
    if (required.has(n)) out.push(`    pub ${fieldName(n)}: ${type},`);
    else if (kindOf(p) === "array") out.push("    #[serde(default)]", `    pub ${fieldName(n)}: ${type},`);
    else if ("default" in p) {
      const fn = `default${snake(def.name)}_${n}`;
      out.push(`    #[serde(default = ${quote(fn)})]`, `    pub ${fieldName(n)}: ${type},`);
      defaults.push(`fn ${fn}() -> ${type} {`, `    ${defaultValue(p, type)}`, "}", "");
    } else out.push(`    pub ${fieldName(n)}: Option<${type}>,`);
  }
  out.push("}", "", ...defaults);
  return out;
}

function enumeration(def) {
  const out = [...rustDoc(def.schema.description, ""), "#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]"];
  const variant = (v) => pascal(v.toLowerCase());
  out.push(`pub enum ${def.name} {`);
  for (const v of def.schema.enum) out.push(`    #[serde(rename = ${quote(v)})]`, `    ${variant(v)},`);
  out.push(
    "}",
    "",
    `impl ${def.name} {`,
    "    /// Its name in the file.",
    "    pub const fn as_str(self) -> &'static str {",
    "        match self {",
  );
  for (const v of def.schema.enum) out.push(`            ${def.name}::${variant(v)} => ${quote(v)},`);
  out.push("        }", "    }", "}", "");
  return out;
}

/** A union: of tagged members, a variant per member's struct; of keyed ones, a variant per key with its value. */
function union(def) {
  const out = [...rustDoc(def.schema.description, ""), "#[derive(Debug, Deserialize)]", `pub enum ${def.name} {`];
  for (const { $def: member } of def.schema.oneOf) {
    const key = member.member.key;
    const [name, p] = Object.entries(member.schema.properties)[0];
    const type = def.tag ? member.name : rustType(p, { file: member.file, path: `${member.path}/properties/${name}` });
    out.push(...rustDoc(member.schema.description, "    "), `    #[serde(rename = ${quote(key)})]`, `    ${pascal(key)}(${type}),`);
  }
  out.push("}", "");
  return out;
}

function shape(def) {
  const s = def.schema;
  const kind = (() => {
    switch (kindOf(s)) {
      case "enum":
        return "Kind::Enum";
      case "union": {
        if (def.tag) return `Kind::Tagged(${quote(def.tag)})`;
        const members = s.oneOf.map((r) => r.$def);
        return `Kind::Keyed { member: ${quote(noun(members[0].schema.title))}, keys: &[${members
          .map((d) => {
            const [n, p] = Object.entries(d.schema.properties)[0];
            return `Field { name: ${quote(n)}, want: ${quote(want(p))} }`;
          })
          .join(", ")}] }`;
      }
      default:
        return `Kind::Object(${fields(def)})`;
    }
  })();
  return `    Shape { name: ${quote(def.name)}, title: ${quote(s.title ?? "")}, kind: ${kind} },`;
}

export function rustSim(m) {
  const defs = m.defsOf(SCENARIO);
  const out = [
    `//! ${NOTE}`,
    "//! The scenario format (schema/scenario.schema.json) as koma-sim reads it:",
    "//! its types, which serde fills from a file's JSON through `read` (which",
    "//! keeps the path to each mistake), and `SHAPES`, from which `read` words",
    "//! its messages. What a schema cannot say is checked by `parse`.",
    "",
    "// Members that koma-sim ignores (`about`) are read all the same.",
    "#![allow(dead_code)]",
    "",
    "use crate::scenario::read::{Field, Kind, Shape};",
    "use serde::Deserialize;",
    "use serde_json::Value;",
    "",
  ];
  for (const def of defs) {
    const kind = kindOf(def.schema);
    if (kind === "enum") out.push(...enumeration(def));
    else if (kind === "union") out.push(...union(def));
    else if (def.member && def.member.of.tag === null)
      continue; // a keyed member: its value is the variant's
    else out.push(...struct(def, def.member?.of.tag));
  }
  out.push("/// Each type of the format: what a message calls it, and what each member must be.");
  out.push("pub const SHAPES: &[Shape] = &[", ...defs.filter((d) => !(d.member && d.member.of.tag === null)).map(shape), "];", "");
  return out.join("\n");
}
