// The protocol's surface, described once (surface/protocol.json), made into
// what each part of the project needs of it:
//
//   crates/koma-transport/src/surface.rs   the core's method table, event catalog and error codes
//   src/header.d.ts (a region)             the typings of params, results, events, codes and the Client's methods
//   lib/methods.js                         the Client's protocol methods (each one request())
//   python/koma_sdk/_codes.py              the error codes
//   python/koma_sdk/_surface.py            results, events and the Client's protocol methods
//   docs/protocol.md, README.md (regions)  the tables of methods, events and error codes
//
//   node scripts/surface.mjs           write them
//   node scripts/surface.mjs --check   fail (exit 1) if one differs from what it would write
//
// A region is the text between `<!-- surface:NAME -->` and `<!-- /surface -->`
// (`// surface:NAME` and `// /surface` in a .d.ts); the rest of its file is
// written by hand. koma-sim is not generated: it is the protocol's second,
// independent implementation (see CONTRIBUTING.md, "Adding a method").
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root } from "./lib/repo.mjs";

const spec = JSON.parse(readFileSync(join(root, "surface", "protocol.json"), "utf8"));
const NOTE = "Generated from surface/protocol.json by scripts/surface.mjs: do not edit.";

// ---- names and types

const camel = (s) => s.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
const pascal = (s) => camel(s).replace(/^[a-z]/, (c) => c.toUpperCase());
const paramsName = (m) => m.params_name ?? `${pascal(m.name)}Params`;
const allOptional = (m) => Object.values(m.params).every((f) => f.optional);
const quote = (s) => JSON.stringify(s);

function tsType(t) {
  if (typeof t === "string") return { string: "string", path: "string", integer: "number", boolean: "boolean", any: "unknown" }[t];
  if (t.enum) return t.enum.map((v) => `'${v}'`).join(" | ");
  if (t.ref) return t.ref;
  throw new Error(`unknown type ${JSON.stringify(t)}`);
}

function pyType(t) {
  if (typeof t === "string") return { string: "str", path: "str", integer: "int", boolean: "bool", any: "Any" }[t];
  if (t.enum) return t.py_name ?? `Literal[${t.enum.map(quote).join(", ")}]`;
  if (t.ref) return t.ref;
  throw new Error(`unknown type ${JSON.stringify(t)}`);
}

/** A doc string wrapped to `width`, each line starting with `prefix`. */
function wrap(text, prefix, width = 100) {
  const lines = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (line && prefix.length + line.length + 1 + word.length > width) {
      lines.push(prefix + line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(prefix + line);
  return lines;
}

/** A Python docstring of `text`, its lines indented by `indent`. */
function pyDoc(text, indent) {
  const lines = wrap(text, "", 116 - indent.length);
  lines[0] = `"""${lines[0]}`;
  lines[lines.length - 1] += '"""';
  return lines.map((l) => indent + l);
}

const jsdoc = (text, indent = "") => (text ? [`${indent}/**`, ...wrap(text, `${indent} * `), `${indent} */`] : []);

// ---- the core

function rust() {
  const field = ([name, f]) => {
    const ty =
      typeof f.type === "string"
        ? { string: "String", path: "String", integer: "Integer", boolean: "Boolean", any: "Any" }[f.type]
        : `Enum(&[${f.type.enum.map(quote).join(", ")}])`;
    return `Field { name: ${quote(name)}, ty: FieldType::${ty}, required: ${!f.optional} }`;
  };
  const variant = (code) => pascal(code);
  return [
    `//! ${NOTE}`,
    "//! The protocol's methods (with their params), events and error codes, as",
    "//! the core checks and reports them (see `docs/protocol.md`).",
    "",
    "/// The type a param field must have.",
    "#[derive(Clone, Copy, Debug, PartialEq, Eq)]",
    "pub enum FieldType {",
    "    String,",
    "    /// A non-negative integer.",
    "    Integer,",
    "    Boolean,",
    "    /// Any JSON value.",
    "    Any,",
    "    /// One of these strings.",
    "    Enum(&'static [&'static str]),",
    "}",
    "",
    "/// One field of a method's params.",
    "#[derive(Clone, Copy, Debug)]",
    "pub struct Field {",
    "    pub name: &'static str,",
    "    pub ty: FieldType,",
    "    pub required: bool,",
    "}",
    "",
    "/// One method of the protocol.",
    "#[derive(Clone, Copy, Debug)]",
    "pub struct Method {",
    "    /// The wire name.",
    "    pub name: &'static str,",
    "    pub fields: &'static [Field],",
    "}",
    "",
    "/// The methods of the protocol.",
    "pub const METHODS: &[Method] = &[",
    ...spec.methods.map((m) => `    Method { name: ${quote(m.name)}, fields: &[${Object.entries(m.params).map(field).join(", ")}] },`),
    "];",
    "",
    "/// The names of the event catalog: events with another name are sequence-checked, then ignored.",
    `pub const EVENT_CATALOG: &[&str] = &[${spec.events.map((e) => quote(e.name)).join(", ")}];`,
    "",
    "/// The `code` of every error the SDK reports.",
    "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]",
    "pub enum ErrorCode {",
    ...spec.errors.flatMap((e) => [...wrap(e.doc, "    /// "), `    ${variant(e.code)},`]),
    "}",
    "",
    "impl ErrorCode {",
    "    /// Every code, in the order of the protocol's table.",
    `    pub const ALL: &'static [ErrorCode] = &[${spec.errors.map((e) => `ErrorCode::${variant(e.code)}`).join(", ")}];`,
    "",
    "    pub fn as_str(self) -> &'static str {",
    "        match self {",
    ...spec.errors.map((e) => `            ErrorCode::${variant(e.code)} => ${quote(e.code)},`),
    "        }",
    "    }",
    "",
    "    /// The code named `name`, if there is one.",
    "    pub fn from_name(name: &str) -> Option<ErrorCode> {",
    "        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == name)",
    "    }",
    "}",
    "",
    "impl std::fmt::Display for ErrorCode {",
    "    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {",
    "        f.write_str(self.as_str())",
    "    }",
    "}",
    "",
  ].join("\n");
}

/** `text` as rustfmt writes it, with the project's settings. */
function rustfmt(text) {
  const dir = mkdtempSync(join(tmpdir(), "koma-surface-"));
  try {
    const file = join(dir, "surface.rs");
    writeFileSync(file, text);
    execFileSync("rustfmt", ["--edition", "2021", "--config-path", join(root, "rustfmt.toml"), file]);
    return readFileSync(file, "utf8");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- TypeScript

function typings() {
  const out = [];
  const iface = (name, doc, fields) => {
    out.push(...jsdoc(doc), `export interface ${name} {`);
    for (const [fname, f] of Object.entries(fields)) {
      out.push(...jsdoc(f.doc, "  "), `  ${fname}${f.optional ? "?" : ""}: ${tsType(f.type)}${f.nullable ? " | null" : ""}`);
    }
    out.push("}", "");
  };
  for (const [name, t] of Object.entries(spec.types)) iface(name, t.doc, t.fields);
  const seen = new Set();
  for (const m of spec.methods) {
    const name = paramsName(m);
    if (Object.keys(m.params).length === 0 || seen.has(name)) continue;
    seen.add(name);
    const users = spec.methods.filter((o) => paramsName(o) === name).map((o) => `\`${camel(o.name)}\``);
    iface(name, `The params of ${users.join(", ")}.`, m.params);
  }
  out.push(...jsdoc("The result of a method that answers `{}`."), "export interface EmptyResult {}", "");
  for (const e of spec.events) {
    out.push(...jsdoc(`\`${e.name}\`: ${e.doc}`), `export interface ${pascal(e.name)}Event {`);
    out.push("  type: 'event'", ...jsdoc("The event's sequence number (contiguous; checked by the client).", "  "), "  seq: number");
    out.push(`  name: '${e.name}'`, `  data: ${e.data}`, "}", "");
  }
  out.push(...jsdoc("An event of the catalog. Narrow on `name`."));
  out.push(`export type KomaEvent = ${spec.events.map((e) => `${pascal(e.name)}Event`).join(" | ")}`, "");
  out.push(...jsdoc("What `client.events()` yields. Narrow on `type`, then on `name`."));
  out.push("export type EventItem = KomaEvent | OverflowReport", "");
  out.push(...jsdoc("The `code` of every error of the package (see the README's table)."));
  out.push(`export type ErrorCode = ${spec.errors.map((e) => `'${e.code}'`).join(" | ")}`, "");
  out.push(...jsdoc("The protocol's methods of a client (the rest of `Client` is the addon's)."), "export interface Client {");
  for (const m of spec.methods) {
    const params = Object.keys(m.params).length ? `params${allOptional(m) ? "?" : ""}: ${paramsName(m)}, ` : "";
    const result = m.result ? tsType(m.result) : "EmptyResult";
    out.push(...jsdoc(`\`${m.name}\`: ${m.doc}`, "  "), `  ${camel(m.name)}(${params}options?: CallOptions): Promise<${result}>`);
  }
  out.push("}", "");
  return out.join("\n");
}

function methodsJs() {
  return [
    `// ${NOTE}`,
    "// The protocol's methods of a Client: [JavaScript name, wire name, whether it takes params].",
    '"use strict";',
    "",
    "module.exports = [",
    ...spec.methods.map((m) => `  [${quote(camel(m.name))}, ${quote(m.name)}, ${Object.keys(m.params).length > 0}],`),
    "];",
    "",
  ].join("\n");
}

// ---- Python

function pyCodes() {
  return [
    `"""${NOTE}`,
    "",
    'The `code` of every error the package raises (see the README\'s table)."""',
    "",
    "from typing import Literal",
    "",
    "ErrorCode = Literal[",
    ...spec.errors.map((e) => `    ${quote(e.code)},`),
    "]",
    "",
  ].join("\n");
}

function pySurface() {
  const out = [
    `"""${NOTE}`,
    "",
    "The protocol's results, events and methods, as koma_sdk hands them out:",
    "results are frozen, slotted dataclasses with the wire's field names, events",
    "one class per name (so a type checker narrows `data` by `name`), and the",
    'client\'s protocol methods one coroutine each."""',
    "",
    "from __future__ import annotations",
    "",
    "import os",
    "from dataclasses import dataclass",
    "from typing import Any, ClassVar, Literal, TypedDict",
    "",
    "from ._values import EventBase, obj",
    "",
  ];
  const named = new Map();
  const collect = (t) => {
    if (t?.enum && t.py_name) named.set(t.py_name, t.enum);
  };
  for (const t of Object.values(spec.types)) for (const f of Object.values(t.fields)) collect(f.type);
  for (const m of spec.methods) for (const f of Object.values(m.params)) collect(f.type);
  for (const [name, values] of named) out.push(...pyFit("", `${name} = Literal[`, values.map(quote), "]"));
  out.push("");
  const results = new Set(spec.methods.filter((m) => m.result?.ref).map((m) => m.result.ref));
  const nested = new Set();
  for (const name of results) for (const f of Object.values(spec.types[name].fields)) if (f.type.ref) nested.add(f.type.ref);
  const dataTypes = new Set(spec.events.map((e) => e.data));
  /** The name of the TypedDict of an event's data (a result type's gets `Data` after it). */
  const dataName = (name) => (name.endsWith("Data") ? name : `${name}Data`);
  const pyField = (f) => `${pyType(f.type)}${f.nullable || f.optional ? " | None" : ""}`;
  for (const [name, t] of Object.entries(spec.types)) {
    if (!results.has(name) && !nested.has(name)) continue;
    out.push("", "@dataclass(frozen=True, slots=True)", `class ${name}:`, ...pyDoc(t.doc, "    "));
    out.push("");
    for (const [fname, f] of Object.entries(t.fields)) out.push(`    ${fname}: ${pyField(f)}`);
    out.push("", "    @classmethod", `    def _wire(cls, v: Any) -> ${name}:`, "        d = obj(v)");
    const args = Object.entries(t.fields).map(([fname, f]) =>
      f.type.ref ? `${f.type.ref}._wire(d.get(${quote(fname)}))` : `d.get(${quote(fname)})`,
    );
    out.push(...pyFit("        ", "return cls(", args, ")"), "");
  }
  for (const type of dataTypes) {
    const t = spec.types[type];
    const name = dataName(type);
    const required = Object.entries(t.fields).filter(([, f]) => !f.optional);
    const optional = Object.entries(t.fields).filter(([, f]) => f.optional);
    if (optional.length) {
      out.push("", `class _${name}Fields(TypedDict):`);
      for (const [fname, f] of required) out.push(`    ${fname}: ${pyField(f)}`);
      out.push("", "", `class ${name}(_${name}Fields, total=False):`, ...pyDoc(t.doc, "    "), "");
      for (const [fname, f] of optional) out.push(`    ${fname}: ${pyType(f.type)}`);
    } else {
      out.push("", `class ${name}(TypedDict):`, ...pyDoc(t.doc, "    "), "");
      for (const [fname, f] of required) out.push(`    ${fname}: ${pyField(f)}`);
    }
    out.push("");
  }
  for (const e of spec.events) {
    out.push("", `class ${pascal(e.name)}Event(EventBase):`, ...pyDoc(`\`${e.name}\`: ${e.doc}`, "    "), "");
    out.push(`    name: ClassVar[Literal[${quote(e.name)}]] = ${quote(e.name)}`, `    data: ${dataName(e.data)}`, "");
  }
  out.push("", `Event = (\n    ${spec.events.map((e) => `${pascal(e.name)}Event`).join("\n    | ")}\n)`);
  out.push("", "#: The class of each catalog name (the core hands over catalog names only).");
  const classes = spec.events.map((e) => `${quote(e.name)}: ${pascal(e.name)}Event`);
  out.push(...pyFit("", "EVENT_CLASSES: dict[str, Any] = {", classes, "}", { expand: true }), "");
  out.push(
    "",
    "class Methods:",
    '    """The protocol\'s methods of a client, each a coroutine named after the',
    "    wire's method: required params positional, optional ones by keyword, and",
    '    `timeout` (seconds) on each."""',
    "",
    "    async def _call(self, method: str, params: Any, timeout: Any) -> Any:",
    "        raise NotImplementedError",
  );
  for (const m of spec.methods) {
    const fields = Object.entries(m.params);
    const req = fields.filter(([, f]) => !f.optional);
    const opt = fields.filter(([, f]) => f.optional);
    const argType = (f) => (f.type === "path" ? "str | os.PathLike[str]" : pyType(f.type));
    const sig = [
      "self",
      ...req.map(([n, f]) => `${n}: ${argType(f)}`),
      "*",
      ...opt.map(([n, f]) => `${n}: ${argType(f)} | None = None`),
      "timeout: float | None = None",
    ];
    const result = m.result ? pyType(m.result) : "None";
    out.push("", ...pyFit("    ", `async def ${m.name}(`, sig, `) -> ${result}:`), ...pyDoc(m.doc, "        "));
    // A path is the str koma gets; anything else goes as it is, for the core to refuse.
    const value = (n, f) => (f.type === "path" ? `os.fspath(${n}) if isinstance(${n}, os.PathLike) else ${n}` : n);
    if (fields.length === 0) {
      out.push(`        result = await self._call(${quote(m.name)}, None, timeout)`);
    } else {
      out.push(
        ...pyFit(
          "        ",
          "params: dict[str, Any] = {",
          req.map(([n, f]) => `${quote(n)}: ${value(n, f)}`),
          "}",
        ),
      );
      for (const [n, f] of opt) out.push(`        if ${n} is not None:`, `            params[${quote(n)}] = ${value(n, f)}`);
      out.push(`        result = await self._call(${quote(m.name)}, params, timeout)`);
    }
    out.push(m.result ? `        return ${pyType(m.result)}._wire(result)` : "        del result  # `{}`");
  }
  const exported = [
    ...named.keys(),
    ...Object.keys(spec.types).filter((n) => results.has(n) || nested.has(n)),
    ...[...dataTypes].map(dataName),
    ...spec.events.map((e) => `${pascal(e.name)}Event`),
    "Event",
  ].sort();
  out.push("", "", ...pyFit("", "__all__ = [", exported.map(quote), "]", { expand: true }), "");
  return out.join("\n");
}

/**
 * `prefix items suffix` laid out as ruff formats it (line length 120): on one
 * line if it fits, else the items on one line of their own, else one item a
 * line with a trailing comma. So the generated Python needs no formatter,
 * and `ruff format --check` (python/dev.py test) confirms it.
 */
function pyFit(indent, prefix, items, suffix, { expand = false } = {}) {
  const one = `${indent}${prefix}${items.join(", ")}${suffix}`;
  if (!expand && one.length <= 120) return [one];
  const inner = `${indent}    ${items.join(", ")}`;
  if (!expand && inner.length <= 120) return [`${indent}${prefix}`, inner, `${indent}${suffix}`];
  return [`${indent}${prefix}`, ...items.map((i) => `${indent}    ${i},`), `${indent}${suffix}`];
}

// ---- docs

function mdMethods() {
  const param = ([n, f]) => `${n}${f.optional ? "?" : ""}: ${tsType(f.type)}`;
  const lines = ["| method (JavaScript name) | params | result | what it does |", "|---|---|---|---|"];
  for (const m of spec.methods) {
    const name = camel(m.name) === m.name ? `\`${m.name}\`` : `\`${m.name}\` (\`${camel(m.name)}\`)`;
    const params = Object.keys(m.params).length ? `\`{${Object.entries(m.params).map(param).join(", ")}}\`` : "`{}`";
    const result = m.result ? `\`${tsType(m.result)}\`` : "`{}`";
    lines.push(`| ${name} | ${params.replace(/\|/g, "\\|")} | ${result} | ${m.doc} |`);
  }
  return lines.join("\n");
}

function mdResults() {
  const lines = ["| result | shape | what it says |", "|---|---|---|"];
  const names = [...new Set(spec.methods.map((m) => m.result?.ref).filter((r) => r && spec.types[r]))];
  for (const name of names) {
    const t = spec.types[name];
    const fields = Object.entries(t.fields)
      .map(([n, f]) => `${n}${f.optional ? "?" : ""}: ${tsType(f.type)}${f.nullable ? " | null" : ""}`)
      .join(", ");
    lines.push(`| \`${name}\` | \`{${fields}}\``.replace(/\|(?! \`)/g, "\\|") + ` | ${t.doc ?? ""} |`);
  }
  return lines.join("\n");
}

function mdEvents() {
  const lines = ["| name | data | what it says |", "|---|---|---|"];
  for (const e of spec.events) {
    const t = spec.types[e.data];
    const shape =
      e.data === "State"
        ? "`State`"
        : `\`{${Object.entries(t.fields)
            .map(([n, f]) => `${n}${f.optional ? "?" : ""}: ${tsType(f.type)}`)
            .join(", ")}}\``;
    lines.push(`| \`${e.name}\` | ${shape.replace(/\|/g, "\\|")} | ${e.doc} |`);
  }
  return lines.join("\n");
}

function mdErrors() {
  const lines = ["| code | when | written? |", "|---|---|---|"];
  for (const e of spec.errors) lines.push(`| \`${e.code}\` | ${e.doc} | ${e.written} |`);
  return lines.join("\n");
}

// ---- writing, or checking

/** `text` with its region `name` replaced by `body`. */
function region(text, name, body, file, { open = `<!-- surface:${name} -->`, close = "<!-- /surface -->" } = {}) {
  const start = text.indexOf(open);
  const end = start < 0 ? -1 : text.indexOf(close, start);
  if (start < 0 || end < 0) throw new Error(`${file}: no region ${open} ... ${close}`);
  return `${text.slice(0, start + open.length)}\n${body}\n${text.slice(end)}`;
}

const files = [
  { file: "crates/koma-transport/src/surface.rs", make: () => rustfmt(rust()) },
  { file: "lib/methods.js", make: methodsJs },
  { file: "python/koma_sdk/_codes.py", make: () => pyCodes() },
  { file: "python/koma_sdk/_surface.py", make: () => pySurface() },
  {
    file: "src/header.d.ts",
    make: (old) => region(old, "types", typings(), "src/header.d.ts", { open: "// surface:types", close: "// /surface" }),
  },
  {
    file: "docs/protocol.md",
    make: (old) =>
      [
        ["methods", mdMethods],
        ["results", mdResults],
        ["events", mdEvents],
        ["errors", mdErrors],
      ].reduce((text, [name, make]) => region(text, name, make(), "docs/protocol.md"), old),
  },
  { file: "README.md", make: (old) => region(old, "errors", mdErrors(), "README.md") },
];

const check = process.argv.includes("--check");
const stale = [];
for (const { file, make } of files) {
  const path = join(root, file);
  let old = "";
  try {
    old = readFileSync(path, "utf8");
  } catch {}
  const text = make(old);
  if (text === old) continue;
  if (check) stale.push(file);
  else {
    writeFileSync(path, text);
    console.log(`wrote ${file}`);
  }
}
if (check && stale.length) {
  console.error(`stale (surface/protocol.json says otherwise): ${stale.join(", ")}; run \`node scripts/surface.mjs\``);
  process.exit(1);
}
if (check) console.log("the files generated from surface/protocol.json are up to date");
