// The core's tables and value types (crates/koma-transport/src/surface.rs):
// the methods with their params' fields, the event catalog, the error codes
// (declared by `tables::error_codes!`), and the values the core builds as
// JSON (the defs with `x-rust-name` and what they hold), each a struct that
// `raw_json::JsonWriter` writes. The shapes are hand-written in
// `tables.rs` and `raw_json.rs`; this writes tables and types only.
import { kindOf, nullable, propertiesOf, SchemaError, scalarOf, showConstant } from "./load.mjs";
import { doc, NOTE, pascal, quote, snake } from "./names.mjs";

const rustDoc = (text, indent) => (text ? doc(text, `${indent}/// `, 100) : []);

/** The FieldType of a param field. */
function fieldType(s, def, name) {
  const at = `${def.path}/properties/${name}`;
  switch (kindOf(s)) {
    case "scalar":
      if (nullable(s)) break;
      return { string: "String", integer: "Integer", boolean: "Boolean" }[scalarOf(s)] ?? fail();
    case "any":
      return "Any";
    case "enum":
      return `Enum(&[${s.enum.map(quote).join(", ")}])`;
    case "ref":
      if (s.$def.schema.enum) return `Enum(&[${s.$def.schema.enum.map(quote).join(", ")}])`;
  }
  return fail();
  function fail() {
    throw new SchemaError(def.file, at, "a param of the protocol is a string, an integer, a boolean, an enum or any JSON value");
  }
}

/** The Rust type of a member of a value the core builds. */
function valueType(s, def, name) {
  if (s["x-rust-type"]) return s["x-rust-type"];
  const at = `${def.path}/properties/${name}`;
  const inner = () => {
    switch (kindOf(s)) {
      case "scalar":
        return { string: "String", integer: "u64", boolean: "bool" }[scalarOf(s)];
      case "any":
        return "JsonValue";
      case "enum":
        return "&'static str";
      case "array": {
        const item = valueType(s.items, def, `${name}/items`);
        return item && `Vec<${item}>`;
      }
      case "ref": {
        const t = s.$def.schema;
        if (t.enum) return "&'static str";
        if (t.anyOf) return "String";
        if (t.type === "object") return rustName(s.$def);
      }
    }
    return undefined;
  };
  const t = inner();
  if (!t)
    throw new SchemaError(
      def.file,
      at,
      "the core cannot build this member (a string, integer, boolean, enum, array, object or any JSON value)",
    );
  return nullable(s) ? `Option<${t}>` : t;
}

const rustName = (def) => def.schema["x-rust-name"] ?? def.name;

/** The defs the core builds: those with `x-rust-name`, and the objects they hold. */
function builtDefs(m) {
  const out = new Set();
  const visit = (s) => {
    if (!s || typeof s !== "object") return;
    if (s.$def && s.$def.schema.type === "object" && !out.has(s.$def)) {
      out.add(s.$def);
      for (const [, p] of propertiesOf(s.$def)) visit(p);
    }
    if (s.items) visit(s.items);
  };
  for (const def of m.defs.values()) if (def.schema["x-rust-name"]) visit({ $def: def });
  return [...out];
}

export function rust(m) {
  const out = [
    `//! ${NOTE}`,
    "//! The protocol's methods (with their params), events and error codes, and",
    "//! the values the core builds, as the core checks and reports them (see",
    "//! `docs/protocol.md`).",
    "",
  ];
  const built = builtDefs(m);
  if (built.length) out.push("use crate::raw_json::{JsonValue, JsonWriter, LiftedText, WriteJson};");
  out.push("use crate::tables::{error_codes, Field, FieldType, Method};", "");
  out.push("/// The methods of the protocol.", "pub const METHODS: &[Method] = &[");
  for (const method of m.methods) {
    const fields = method.params
      ? propertiesOf(method.params).map(
          ([n, s, req]) => `Field { name: ${quote(n)}, ty: FieldType::${fieldType(s, method.params, n)}, required: ${req} }`,
        )
      : [];
    out.push(`    Method { name: ${quote(method.name)}, fields: &[${fields.join(", ")}] },`);
  }
  out.push("];", "");
  out.push("/// The names of the event catalog: events with another name are sequence-checked, then ignored.");
  out.push(`pub const EVENT_CATALOG: &[&str] = &[${m.events.map((e) => quote(e.name)).join(", ")}];`, "");
  out.push("error_codes! {");
  for (const e of m.errors) out.push(...rustDoc(e.description, "    "), `    ${pascal(e.code)} = ${quote(e.code)},`);
  out.push("}", "");
  for (const def of built) {
    out.push(...rustDoc(def.schema.description, ""), "#[derive(Debug)]", `pub struct ${rustName(def)} {`);
    const members = propertiesOf(def).map(([n, s, req]) => ({ n, s, req, field: snake(n), ty: valueType(s, def, n) }));
    for (const { s, req, field, ty } of members)
      out.push(...rustDoc(s.description, "    "), `    pub ${field}: ${req ? ty : `Option<${ty}>`},`);
    out.push(
      "}",
      "",
      `impl WriteJson for ${rustName(def)} {`,
      "    fn write_json(self, w: &mut JsonWriter) {",
      "        w.begin_object();",
    );
    for (const { n, s, req, field } of members) {
      if ("const" in s) out.push(`        w.member(${quote(n)}, ${JSON.stringify(s.const)});`);
      else out.push(`        w.${req ? "member" : "optional_member"}(${quote(n)}, self.${field});`);
    }
    out.push("        w.end_object();", "    }", "}", "");
  }
  // The options' defaults, the core's own (a host passes `None` for "not given").
  for (const c of m.constants.values()) {
    if (c.unit !== "ms") continue;
    out.push(
      `/// The default of \`${c.option}\` (${showConstant(c)}), which a host passes on when it is not given.`,
      `pub const ${c.name}: std::time::Duration = std::time::Duration::from_millis(${c.value});`,
      "",
    );
  }
  // LiftedText and JsonValue are named only where a member is one.
  let text = out.join("\n");
  for (const name of ["JsonValue", "LiftedText"]) {
    if (!new RegExp(`: (Option<)?(Vec<)?${name}`).test(text)) text = text.replace(`${name}, `, "");
  }
  return text;
}

/** crates/koma-transport/src/limits.rs: the protocol's version (hello's `protocol`) and its bounds (`x-bounds`). */
export function rustLimits(m) {
  const version = m.defs.get("Hello").schema.properties.protocol.const;
  const out = [`//! ${NOTE}`, "//! The protocol's numbers: its version and its bounds (docs/protocol.md, Bounds).", ""];
  for (const c of m.constants.values()) {
    if (c.unit === "ms") continue;
    out.push(...rustDoc(`${c.description.replace(/\.$/, "")} (${showConstant(c)}; docs/protocol.md, Bounds).`, ""));
    out.push(`pub const ${c.name}: usize = ${c.value};`);
  }
  out.push("/// The only protocol version this client speaks.", `pub const PROTOCOL_VERSION: u64 = ${version};`, "");
  return out.join("\n");
}

/**
 * src/surface.rs (the Node binding): the names of the options each call of
 * `Client` takes, from their types in sdk.schema.json (Node's names, the
 * members Node has), for `src/options.rs`'s check of an options object.
 */
export function rustNodeOptions(m) {
  const table = (defName) =>
    Object.entries(m.defs.get(defName).schema.properties)
      .filter(([, p]) => (p["x-langs"] ?? ["node", "python"]).includes("node"))
      .map(([n]) => `(${quote(n)}, ${(m.defs.get(defName).schema.required ?? []).includes(n)})`)
      .join(", ");
  return [
    `//! ${NOTE}`,
    "//! The options of each call of `Client`, by name, from their types in",
    "//! schema/sdk.schema.json: each name and whether it is required. `options.rs`",
    "//! refuses any other key with this list.",
    "",
    "/// `new Client(options)`'s (`ClientOptions`).",
    `pub const CLIENT_OPTIONS: &[(&str, bool)] = &[${table("ClientOptions")}];`,
    "/// Every protocol method's last argument (`CallOptions`).",
    `pub const CALL_OPTIONS: &[(&str, bool)] = &[${table("CallOptions")}];`,
    "/// `turn()`'s (`TurnOptions`); `run()`'s are the same names (`RunOptions`).",
    `pub const TURN_OPTIONS: &[(&str, bool)] = &[${table("TurnOptions")}];`,
    "",
  ].join("\n");
}
