// koma_sdk's types: each file of schema/ becomes a module (protocol ->
// _surface.py, sdk -> _types.py), the error codes _codes.py and their
// classes _exceptions.py, and the scenario format _scenario_types.py (whose
// dataclasses build a scenario's file). A type a program receives as a value is a frozen,
// slotted dataclass made from the wire by `_values.Wire`; the data of an
// event stays the wire's dict (no conversion per event), typed by a
// TypedDict named `<Type>Data`; an enum is a `Literal`. Options are keyword
// arguments of the client's methods, not types. The text is laid out by
// ruff itself (format.mjs); the hand-written halves are _values.py and
// _errors.py.
import { inputs, kindOf, langsOf, nullable, propertiesOf, SchemaError, scalarOf, showConstant } from "./load.mjs";
import { doc, NOTE, quote, snake } from "./names.mjs";
import { SCENARIO } from "./scenario.mjs";

export const pyName = (def) => def.schema["x-python-name"] ?? def.name;
const tdName = (def) => (def.name.endsWith("Data") ? def.name : `${def.name}Data`);
/** A docstring of `text`, wrapped, its lines indented by `indent`. */
function docstring(text, indent) {
  if (!text) return [];
  const lines = doc(text.replace(/\\/g, "\\\\").replace(/"""/g, '\\"\\"\\"'), indent, 116);
  lines[0] = `${indent}"""${lines[0].slice(indent.length)}`;
  lines[lines.length - 1] += '"""';
  return lines;
}
/** A constant as Python writes it. */
const pyLit = (v) => (v === true ? "True" : v === false ? "False" : v === null ? "None" : quote(v));
const comment = (text) => (text ? doc(text, "#: ", 116) : []);

/** Which object defs are TypedDicts (event data, and what it holds) and which dataclasses. */
function roles(m) {
  const isInput = inputs(m);
  const typed = new Set();
  const classes = new Set();
  const close = (set, s) => {
    if (!s || typeof s !== "object") return;
    const def = s.$def;
    if (def && def.schema.type === "object" && !def.schema["x-python-class"] && !set.has(def)) {
      set.add(def);
      for (const [, p] of propertiesOf(def)) close(set, p);
    }
    if (s.items) close(set, s.items);
    if (s.additionalProperties) close(set, s.additionalProperties);
  };
  for (const e of m.events) close(typed, { $def: e.data });
  for (const method of m.methods) if (method.result) close(classes, { $def: method.result });
  for (const def of m.defs.values()) {
    if (def.file === "schema/protocol.schema.json" || isInput.has(def.name) || !langsOf(def.schema).includes("python")) continue;
    if (def.schema.type === "object") close(classes, { $def: def });
  }
  return { typed, classes };
}

/** The Python type of a schema; `td`: inside a TypedDict (objects are their TypedDicts). */
function pyType(s, where, td) {
  if (s["x-python-type"]) return s["x-python-type"];
  const t = (() => {
    switch (kindOf(s)) {
      case "ref": {
        const def = s.$def;
        return td && def.schema.type === "object" ? tdName(def) : pyName(def);
      }
      case "const":
        return `Literal[${pyLit(s.const)}]`;
      case "enum": {
        const values = s.enum.filter((v) => v !== null);
        return `Literal[${values.map(quote).join(", ")}]${s.enum.includes(null) ? " | None" : ""}`;
      }
      case "scalar":
        return { string: "str", integer: "int", number: "float", boolean: "bool" }[scalarOf(s)];
      case "array":
        return `list[${pyType(s.items, where, td)}]`;
      case "map":
        return `dict[str, ${pyType(s.additionalProperties, where, td)}]`;
      case "any":
        return "Any";
    }
    throw new SchemaError(where.file, where.path, "Python has no type for this schema");
  })();
  return nullable(s) ? `${t} | None` : t;
}

/** How `_values.Wire` converts a member: as it is, a dataclass, or a list of one. */
function converter(s, classes) {
  if (s.$def && classes.has(s.$def)) return pyName(s.$def);
  if (s.items?.$def && classes.has(s.items.$def)) return `[${pyName(s.items.$def)}]`;
  return "None";
}

function dataclass(def, classes) {
  const where = (n) => ({ file: def.file, path: `${def.path}/properties/${n}` });
  const members = propertiesOf(def).filter(([, p]) => langsOf(p).includes("python"));
  const fields = [...members.filter(([, p, r]) => r && !("const" in p)), ...members.filter(([, p, r]) => !r && !("const" in p))];
  const out = [
    "",
    "",
    "@dataclass(frozen=True, slots=True)",
    `class ${pyName(def)}(Wire):`,
    ...docstring(def.schema.description, "    "),
    "",
  ];
  for (const [n, p, req] of fields) {
    const name = p["x-python-name"] ?? snake(n);
    const type = pyType(p, where(n), false);
    out.push(`    ${name}: ${type}${req ? "" : type === "Any" ? " = None" : " | None = None"}`);
  }
  for (const [n, p] of members.filter(([, p]) => "const" in p))
    out.push(`    ${n}: ClassVar[Literal[${pyLit(p.const)}]] = ${pyLit(p.const)}`);
  const table = fields.map(([n, p]) => `(${quote(n)}, ${converter(p, classes)})`);
  out.push(`    _fields: ClassVar[Fields] = (${table.join(", ")}${table.length === 1 ? "," : ""})`);
  return out;
}

function typedDict(def) {
  const where = (n) => ({ file: def.file, path: `${def.path}/properties/${n}` });
  const members = propertiesOf(def);
  const required = members.filter(([, , r]) => r);
  const optional = members.filter(([, , r]) => !r);
  const name = tdName(def);
  const out = [];
  if (optional.length) {
    out.push("", "", `class _${name}Fields(TypedDict):`);
    for (const [n, p] of required) out.push(`    ${n}: ${pyType(p, where(n), true)}`);
    out.push("", "", `class ${name}(_${name}Fields, total=False):`, ...docstring(def.schema.description, "    "), "");
    for (const [n, p] of optional) out.push(`    ${n}: ${pyType(p, where(n), true)}`);
  } else {
    out.push("", "", `class ${name}(TypedDict):`, ...docstring(def.schema.description, "    "), "");
    for (const [n, p] of required) out.push(`    ${n}: ${pyType(p, where(n), true)}`);
  }
  return out;
}

/** An event: a class of the hand-written base, its name a class constant, its data the wire's dict. */
function extension(def, base, typed) {
  const out = ["", "", `class ${pyName(def)}(${base}):`, ...docstring(def.schema.description, "    "), ""];
  for (const [n, p] of Object.entries(def.schema.properties ?? {})) {
    if ("const" in p) out.push(`    ${n}: ClassVar[Literal[${pyLit(p.const)}]] = ${pyLit(p.const)}`);
    else out.push(`    ${n}: ${p.$def && typed.has(p.$def) ? tdName(p.$def) : pyType(p, { file: def.file, path: def.path }, true)}`);
  }
  return out;
}

function alias(def) {
  const s = def.schema;
  const where = { file: def.file, path: def.path };
  const value = (() => {
    switch (kindOf(s)) {
      case "enum":
        return pyType(s, where, false);
      case "open":
        return `Literal[${s.anyOf[0].enum.map(quote).join(", ")}] | str`;
      case "union":
        return s.oneOf.map((r) => pyName(r.$def)).join(" | ");
    }
  })();
  return ["", ...comment(s.description), `${pyName(def)} = ${value}`];
}

/** The client's protocol methods: required params positional, optional ones by keyword, and `timeout`. */
function methods(m) {
  const out = [
    "",
    "",
    "class Methods(Requests):",
    '    """The protocol\'s methods of a client, each a coroutine named after the',
    "    wire's method: required params positional, optional ones by keyword, and",
    '    `timeout` (seconds) on each."""',
  ];
  for (const method of m.methods) {
    const props = method.params ? propertiesOf(method.params) : [];
    const where = (n) => ({ file: method.params.file, path: `${method.params.path}/properties/${n}` });
    const req = props.filter(([, , r]) => r);
    const opt = props.filter(([, , r]) => !r);
    const sig = [
      "self",
      ...req.map(([n, p]) => `${n}: ${pyType(p, where(n), false)}`),
      "*",
      ...opt.map(([n, p]) => `${n}: ${pyType(p, where(n), false)} | None = None`),
      "timeout: float | None = None",
    ];
    const result = method.result ? pyName(method.result) : "None";
    const params = method.params ? `{${req.map(([n]) => `${quote(n)}: ${n}`).join(", ")}}` : "None";
    const args = [quote(method.name), ...(method.result ? [result] : []), params, "timeout", ...opt.map(([n]) => `${n}=${n}`)];
    out.push("", `    async def ${method.name}(${sig.join(", ")}) -> ${result}:`, ...docstring(method.description, "        "));
    out.push(`        return await self.${method.result ? "_ask" : "_tell"}(${args.join(", ")})`);
  }
  return out;
}

function moduleText(doc, imports, body, exported) {
  return [
    `"""${NOTE}`,
    "",
    `${doc}"""`,
    "",
    "from __future__ import annotations",
    "",
    ...imports,
    ...body,
    "",
    "",
    `__all__ = [${[...exported].sort().map(quote).join(", ")}]`,
    "",
  ].join("\n");
}

/** `from X import a, b` lines for the names `body` uses of each module. */
/** Ruff's order of imported names (isort's `order-by-type`): constants, then classes, then the rest. */
function byType(a, b) {
  const type = (n) => (/^[A-Z0-9_]+$/.test(n) && n.length > 1 ? 0 : /^[A-Z]/.test(n) ? 1 : 2);
  return type(a) - type(b) || (a < b ? -1 : a > b ? 1 : 0);
}

function importsFor(body, modules) {
  // Code only: a word of a docstring or a comment is not a use.
  const text = body
    .join("\n")
    .replace(/"""[\s\S]*?"""/g, "")
    .replace(/#.*$/gm, "");
  const lines = [];
  for (const [module, names] of modules) {
    const used = names.filter((n) => new RegExp(`\\b${n}\\b`).test(text)).sort(byType);
    if (used.length) lines.push(module.startsWith("import ") ? module : `from ${module} import ${used.join(", ")}`);
  }
  return lines;
}

/** The module of the defs of `file` (`schema/protocol.schema.json` or `schema/sdk.schema.json`). */
export function pyModule(m, file, doc) {
  const { typed, classes } = roles(m);
  const isInput = inputs(m);
  const body = [];
  const exported = new Set();
  const events = new Set(m.events.map((e) => e.def));
  for (const def of m.defs.values()) {
    const s = def.schema;
    if (def.file !== file || !langsOf(s).includes("python") || isInput.has(def.name) || s["x-python-class"]) continue;
    const kind = kindOf(s);
    if (kind === "codes") continue; // _codes.py
    if (kind === "enum" || kind === "open" || kind === "union") {
      body.push(...alias(def));
      exported.add(pyName(def));
    }
    if (classes.has(def)) {
      body.push(...dataclass(def, classes));
      exported.add(pyName(def));
    }
    if (typed.has(def)) {
      body.push(...typedDict(def));
      exported.add(tdName(def));
    }
    if (kind === "extension") {
      const base = s.allOf[0].$def.schema["x-python-class"];
      if (!base) throw new SchemaError(def.file, `${def.path}/allOf`, "Python extends only a class it has by hand (`x-python-class`)");
      body.push(...extension(def, base.split(".")[1], typed));
      if (!events.has(def))
        throw new SchemaError(def.file, def.path, "an extension of a hand-written Python class must be an event of the catalog");
      exported.add(pyName(def));
    }
  }
  if (file === "schema/protocol.schema.json") {
    body.push("", "#: The name of one of the protocol's methods (on the wire).");
    body.push(`MethodName = Literal[${m.methods.map((x) => quote(x.name)).join(", ")}]`);
    exported.add("MethodName");
    body.push("", "", "#: The class of each catalog name (the core hands over catalog names only).");
    body.push(`EVENT_CLASSES: dict[str, Any] = {${m.events.map((e) => `${quote(e.name)}: ${pyName(e.def)}`).join(", ")},}`);
    body.push(...methods(m));
  }
  // Names of the other modules' types that this one uses.
  const elsewhere = new Map();
  for (const def of m.defs.values()) {
    if (def.file === file || def.file === SCENARIO || !langsOf(def.schema).includes("python")) continue;
    const module = def.file === "schema/protocol.schema.json" ? "._surface" : "._types";
    const names = elsewhere.get(module) ?? [];
    names.push(pyName(def), tdName(def));
    elsewhere.set(module, names);
  }
  const own = [...m.defs.values()].filter((d) => d.file !== file && d.schema["x-python-class"]).map((d) => d.schema["x-python-class"]);
  const handWritten = new Map();
  for (const path of [
    ...own,
    ...[...m.defs.values()].filter((d) => d.file === file && d.schema["x-python-class"]).map((d) => d.schema["x-python-class"]),
  ]) {
    const [module, name] = path.split(".");
    handWritten.set(`.${module}`, [...(handWritten.get(`.${module}`) ?? []), name]);
  }
  const values = handWritten.get("._values") ?? [];
  handWritten.set("._values", [...values, "Fields", "Requests", "Wire"]);
  const imports = [
    ...importsFor(body, [["import os", ["os"]]]),
    ...importsFor(body, [
      ["dataclasses", ["dataclass"]],
      ["typing", ["Any", "ClassVar", "Literal", "TypedDict"]],
    ]),
    "",
    ...importsFor(body, [...[...elsewhere, ...handWritten].sort(([a], [b]) => a.localeCompare(b))]),
  ];
  return moduleText(doc, imports, body, exported);
}

export function pyCodes(m) {
  const body = ["", `ErrorCode = Literal[${m.errors.map((e) => quote(e.code)).join(", ")},]`];
  return [
    `"""${NOTE}`,
    "",
    'The `code` of every error the package raises (see the README\'s table)."""',
    "",
    "from typing import Literal",
    ...body,
    "",
  ].join("\n");
}

export function pyExceptions(m) {
  const body = [];
  for (const e of m.errors) {
    const bases = ["ErrorOfCode", ...(e.pythonAlso ? [e.pythonAlso] : [])];
    body.push(
      "",
      "",
      `class ${e.className}(${bases.join(", ")}, code=${quote(e.code)}):`,
      ...docstring(`\`${e.code}\`: ${e.description}.`, "    "),
      "",
    );
    body.push(`    code: Literal[${quote(e.code)}]`);
    if (e.remote) body.push("    remote: RemoteError");
  }
  const doc =
    "One class per error code of the README's table, each a `KomaError` with its `code`:\n`except koma_sdk.TransportFailure:`. `KomaError(code, message)` makes the class of `code`.";
  const imports = [
    "from typing import Literal",
    "",
    `from ._errors import ErrorOfCode${m.errors.some((e) => e.remote) ? ", RemoteError" : ""}`,
  ];
  return moduleText(
    doc,
    imports,
    body,
    m.errors.map((e) => e.className),
  );
}

// ---- koma_sdk.testing's scenario parts (_scenario_types.py)

/** The Python type of a member of the scenario format: a part may also be given as a dict in the file's form. */
function scenarioType(s, where) {
  if (s["x-method-name"]) return "MethodName";
  switch (kindOf(s)) {
    case "ref": {
      const def = s.$def;
      return kindOf(def.schema) === "enum" ? pyName(def) : `${pyName(def)} | Mapping[str, Any]`;
    }
    case "array":
      return `Sequence[${scenarioType(s.items, where)}]`;
    case "scalars":
      return s.oneOf.map((m) => ("const" in m ? `Literal[${pyLit(m.const)}]` : pyType(m, where, false))).join(" | ");
    case "any":
      return "JSON";
    default:
      return pyType(s, where, false);
  }
}

/**
 * The fields of a dataclass of the format, in the schema's order: each
 * member's Python name, its name in the file, its type, its default (`ABSENT`,
 * `()`, `None`, a builder's default; none if required) and how `Part.json()`
 * leaves it out (`mode`).
 */
function scenarioFields(def, tag) {
  const required = new Set(def.schema.required ?? []);
  const members = Object.entries(def.schema.properties).filter(([n, p]) => n !== tag && langsOf(p).includes("python"));
  return members.map(([n, p]) => {
    const name = p["x-python-name"] ?? snake(n);
    const type = scenarioType(p, { file: def.file, path: `${def.path}/properties/${n}` });
    if (p["x-builder-default"] !== undefined) return { n, name, type, fallback: quote(p["x-builder-default"]), mode: "required" };
    if (required.has(n)) return { n, name, type, mode: "required" };
    if (kindOf(p) === "any") return { n, name, type: `${type} | Absent`, fallback: "ABSENT", mode: "any" };
    if (kindOf(p) === "array") return { n, name, type, fallback: "()", mode: "list" };
    return { n, name, type: `${type} | None`, fallback: "None", mode: "optional" };
  });
}

/** The fields as the dataclass orders them: those without a default first. */
const inClassOrder = (fields) => [...fields.filter((f) => f.fallback === undefined), ...fields.filter((f) => f.fallback !== undefined)];

/** How a part is made, as the docs show it: `Tool(tool, output, input=..., error=None)`. */
export function pySignature(def, tag) {
  const shown = { ABSENT: "...", "()": "[...]" };
  const params = inClassOrder(scenarioFields(def, tag)).map((f) =>
    f.fallback === undefined ? f.name : `${f.name}=${shown[f.fallback] ?? f.fallback}`,
  );
  return `${pyName(def)}(${params.join(", ")})`;
}

/** A dataclass of the format: its fields (required first) and the table `Part.json()` writes the file's object from. */
function scenarioClass(def, tag) {
  const fields = scenarioFields(def, tag).map((f) => ({
    ...f,
    line: f.fallback === undefined ? `${f.name}: ${f.type}` : `${f.name}: ${f.type} = ${f.fallback}`,
  }));
  const ordered = inClassOrder(fields);
  const out = ["", "", "@dataclass(frozen=True)", `class ${pyName(def)}(Part):`, ...docstring(def.schema.description, "    "), ""];
  for (const f of ordered) out.push(`    ${f.line}`);
  if (tag) out.push(`    _tag: ClassVar[Tag] = (${quote(tag)}, ${quote(def.member.key)})`);
  const table = fields.map((f) => `(${quote(f.name)}, ${quote(f.n)}, ${quote(f.mode)})`);
  out.push(`    _members: ClassVar[Members] = (${table.join(", ")}${table.length === 1 ? "," : ""})`);
  return out;
}

/** _scenario_types.py: the scenario format's parts, which koma_sdk.testing exports. */
export function pyScenario(m, file) {
  const defs = m.defsOf(file).filter((d) => langsOf(d.schema).includes("python"));
  const enums = [];
  const classes = [];
  const unions = [];
  const exported = new Set();
  for (const def of defs) {
    const kind = kindOf(def.schema);
    exported.add(pyName(def));
    if (kind === "enum") enums.push(...alias(def));
    else if (kind === "union") {
      unions.push("", ...comment(def.schema.description), `${pyName(def)} = ${def.schema.oneOf.map((r) => pyName(r.$def)).join(" | ")}`);
    } else classes.push(...scenarioClass(def, def.member?.of.tag));
  }
  const body = [...enums, ...classes, ...unions];
  const imports = [
    ...importsFor(body, [
      ["collections.abc", ["Mapping", "Sequence"]],
      ["dataclasses", ["dataclass"]],
      ["typing", ["Any", "ClassVar", "Literal"]],
    ]),
    "",
    ...importsFor(body, [
      ["._scenario", ["ABSENT", "JSON", "Absent", "Members", "Part", "Tag"]],
      ["._surface", ["MethodName"]],
    ]),
  ];
  const doc =
    "The scenario format's parts (schema/scenario.schema.json) as koma_sdk.testing\nexports them: frozen dataclasses whose `json()` is their object in koma-sim's\nfile (`_scenario.Part`), and the unions and enums of the format. A field left\nout is left out of the file: None where the format takes no null, ABSENT where\nit takes any JSON value (None is JSON's null there), and an empty list.";
  return moduleText(doc, imports, body, exported);
}

/**
 * `Client`'s keyword arguments, from the schema's `ClientOptions`: the
 * defaults of its options (in seconds), `ClientSettings` (every option but
 * `executable` and `env`: what a fake's client takes) and `ClientOptions`
 * (all of them: `Client(**options)`).
 */
function clientOptions(m, def) {
  const where = (n) => ({ file: def.file, path: `${def.path}/properties/${n}` });
  const required = new Set(def.schema.required ?? []);
  const typeOf = (n, p) => {
    const t = pyType(p, where(n), false);
    return required.has(n) || t.endsWith("| None") || p.type === "boolean" ? t : `${t} | None`;
  };
  const members = Object.entries(def.schema.properties).map(([n, p]) => ({ n, p, name: p["x-python-name"] ?? snake(n) }));
  const own = ["executable", "env"];
  const out = [];
  for (const c of m.constants.values()) {
    if (c.unit !== "ms" || !members.some(({ n }) => n === c.option)) continue;
    out.push(
      "",
      `#: The default of \`${snake(c.option)}\`, in seconds (${showConstant(c)}).`,
      `${c.name}: Final = ${showConstant(c, "s")}`,
    );
  }
  out.push("", "", "class ClientSettings(TypedDict, total=False):");
  out.push('    """The options of `Client` beside `executable` and `env`: what a fake\'s client takes."""', "");
  for (const { n, p, name } of members.filter(({ n }) => !own.includes(n))) out.push(`    ${name}: ${typeOf(n, p)}`);
  out.push("", "", "class _ClientOptionsFields(TypedDict):");
  for (const { n, p, name } of members.filter(({ n }) => required.has(n))) out.push(`    ${name}: ${typeOf(n, p)}`);
  out.push("", "", "class ClientOptions(_ClientOptionsFields, ClientSettings, total=False):");
  out.push(
    `    """${def.schema.description.replace("`new Client(...)`", "`Client(...)`")} As keyword arguments: \`Client(**options)\`."""`,
    "",
  );
  for (const { n, p, name } of members.filter(({ n }) => own.includes(n) && !required.has(n))) out.push(`    ${name}: ${typeOf(n, p)}`);
  return out;
}

/**
 * python/koma_sdk/_options.py: `Client`'s keyword arguments, from the
 * schema's `ClientOptions` (the def whose `x-python-function` is `Client`):
 * the defaults, `ClientSettings` and `ClientOptions`. Not exported by the
 * package: `Client` takes the defaults, koma_sdk.testing exports the options.
 */
export function pyOptions(m) {
  const def = [...m.defs.values()].find((d) => d.schema["x-python-function"] === "Client");
  const body = clientOptions(m, def);
  const imports = [
    ...importsFor(body, [["import os", ["os"]]]),
    ...importsFor(body, [
      ["collections.abc", ["Mapping"]],
      ["typing", ["Final", "TypedDict"]],
    ]),
    "",
    ...importsFor(body, [["._telemetry", ["MeterProviderLike", "TracerProviderLike"]]]),
  ];
  const doc =
    "The options of `Client` (schema/sdk.schema.json's `ClientOptions`): their\ndefaults, which `Client` takes, and their names and types, which\nkoma_sdk.testing's fakes take (`ClientSettings`) and hand out (`ClientOptions`).";
  return moduleText(doc, imports, body, [
    "ClientOptions",
    "ClientSettings",
    ...[...m.constants.values()].filter((c) => c.unit === "ms").map((c) => c.name),
  ]);
}
