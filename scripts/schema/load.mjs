// The schemas of schema/, read and checked: each file against JSON Schema
// 2020-12's meta-schema (the one ajv ships) and against the project's subset
// (schema/meta/subset.schema.json), then the rules a schema cannot say. A
// mistake is a SchemaError naming the file and the JSON path (a JSON
// pointer) of the mistake. The result is the model the emitters read.
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(import.meta.url);
const Ajv2020 = require("ajv/dist/2020.js").default;

export class SchemaError extends Error {
  /** @param {string} file @param {string} path @param {string} message */
  constructor(file, path, message) {
    super(`${file}: at ${path || "/"}: ${message}`);
    this.file = file;
    this.path = path || "/";
  }
}

const pointer = (parts) => parts.map((p) => `/${String(p).replace(/~/g, "~0").replace(/\//g, "~1")}`).join("");

/** The most telling of ajv's errors: the deepest path, then the first. */
function firstError(errors) {
  const depth = (e) => e.instancePath.split("/").length;
  const best = errors.reduce((a, e) => (depth(e) > depth(a) ? e : a), errors[0]);
  const allowed = best.params?.allowedValues ? ` (${best.params.allowedValues.map((v) => JSON.stringify(v)).join(", ")})` : "";
  const extra = best.params?.additionalProperty ? ` (\`${best.params.additionalProperty}\`)` : "";
  return { path: best.instancePath, message: `${best.message}${allowed}${extra}` };
}

/**
 * The schema files of `root`/schema, checked, as a model:
 * `{ files, defs, methods, events, errors }` (see the end of this file).
 */
export function loadSchemas(root) {
  const dir = join(root, "schema");
  const names = readdirSync(dir)
    .filter((f) => f.endsWith(".schema.json"))
    .sort((a, b) => (a === "protocol.schema.json" ? -1 : b === "protocol.schema.json" ? 1 : a.localeCompare(b)));
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  const subset = ajv.compile(JSON.parse(readFileSync(join(dir, "meta", "subset.schema.json"), "utf8")));
  const files = [];
  for (const name of names) {
    const file = `schema/${name}`;
    const text = readFileSync(join(dir, name), "utf8");
    let doc;
    try {
      doc = JSON.parse(text);
    } catch (e) {
      throw new SchemaError(file, "", `not JSON: ${e.message}`);
    }
    if (!ajv.validateSchema(doc)) {
      const { path, message } = firstError(ajv.errors);
      throw new SchemaError(file, path, `not JSON Schema 2020-12: ${message}`);
    }
    if (!subset(doc)) {
      const { path, message } = firstError(subset.errors);
      throw new SchemaError(file, path, `outside the subset of schema/meta/subset.schema.json: ${message}`);
    }
    if (doc.$id !== name) throw new SchemaError(file, "/$id", `must be the file's name, ${JSON.stringify(name)}`);
    files.push({ file, name, doc });
  }
  const values = constants(files);
  for (const f of files) f.doc = substitute(f.doc, values, f.file, []);
  const m = model(files);
  m.constants = values;
  m.bounds = files.find((f) => f.name === "protocol.schema.json")?.doc["x-bounds"];
  return m;
}

// ---- the numbers said once: the protocol's bounds (`x-bounds`) and the
// options' defaults (`default` with `x-const`), and how a text shows each.

/** Each named number: `{ name, value, unit, file, path }` by name. */
function constants(files) {
  const out = new Map();
  const add = (c) => {
    if (out.has(c.name)) throw new SchemaError(c.file, c.path, `${c.name} is named twice (also ${out.get(c.name).file})`);
    out.set(c.name, c);
  };
  for (const { file, doc } of files) {
    for (const [name, b] of Object.entries(doc["x-bounds"]?.limits ?? {}))
      add({ name, value: b.value, unit: b.unit, description: b.description, file, path: pointer(["x-bounds", "limits", name]) });
    for (const [def, schema] of Object.entries(doc.$defs ?? {})) {
      for (const [prop, p] of Object.entries(schema.properties ?? {})) {
        if (!p["x-const"]) continue;
        const path = pointer(["$defs", def, "properties", prop]);
        if (typeof p.default !== "number" || p["x-unit"] !== "ms")
          throw new SchemaError(file, path, "`x-const` names a `default` duration (a number with `x-unit`: ms)");
        add({ name: p["x-const"], value: p.default, unit: "ms", description: p.description, option: prop, file, path });
      }
    }
  }
  return out;
}

/** 41943040 -> "41,943,040"; 15.5 -> "15.5". */
const grouped = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");

/** How a text shows constant `c`: `:exact` (bytes: the exact count), `:ms`, `:s` (a duration in Node's or Python's unit), or plainly. */
export function showConstant(c, format) {
  if (c.unit === "bytes") {
    const short =
      c.value % 1048576 === 0 ? `${c.value / 1048576} MiB` : c.value % 1024 === 0 ? `${c.value / 1024} KiB` : `${grouped(c.value)} bytes`;
    if (format === "exact") return `${grouped(c.value)} bytes (${short})`;
    if (format === undefined) return short;
  } else if (c.unit === "ms") {
    if (format === "ms") return String(c.value);
    if (format === "s") return Number.isInteger(c.value / 1000) ? `${c.value / 1000}.0` : String(c.value / 1000);
    if (format === undefined) return c.value % 1000 === 0 ? `${c.value / 1000} s` : `${c.value} ms`;
  } else if (format === undefined) return grouped(c.value);
  return undefined;
}

const PLACEHOLDER = /\{\{([A-Z][A-Z_]*)(?::(\w+))?\}\}/g;

/** `node` with every `{{NAME}}` of its strings replaced by the constant's text (a SchemaError for an unknown one). */
function substitute(node, values, file, parts) {
  if (typeof node === "string") {
    return node.replace(PLACEHOLDER, (all, name, format) => {
      const c = values.get(name);
      const shown = c && showConstant(c, format);
      if (shown === undefined) throw new SchemaError(file, pointer(parts), `${all} names no constant (or no such form of it)`);
      return shown;
    });
  }
  if (Array.isArray(node)) return node.map((n, i) => substitute(n, values, file, [...parts, i]));
  if (node && typeof node === "object")
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, substitute(v, values, file, [...parts, k])]));
  return node;
}

/** The rules a schema cannot say, and the model. */
function model(files) {
  /** @type {Map<string, {name: string, file: string, path: string, schema: any}>} */
  const defs = new Map();
  for (const { file, doc } of files) {
    for (const [name, schema] of Object.entries(doc.$defs)) {
      const path = pointer(["$defs", name]);
      if (defs.has(name)) throw new SchemaError(file, path, `${name} is defined in ${defs.get(name).file} too: a type has one name`);
      defs.set(name, { name, file, path, schema });
    }
  }
  const byFile = new Map(files.map((f) => [f.name, f]));
  /** The def a `$ref` names, or a SchemaError at `path`. */
  const resolve = (ref, file, path) => {
    const m = /^([a-z]+\.schema\.json)?#\/\$defs\/(\w+)$/.exec(ref);
    const target = m && (m[1] ?? file.slice("schema/".length));
    const def = m && byFile.has(target) ? defs.get(m[2]) : undefined;
    if (!def || def.file !== `schema/${target}`) throw new SchemaError(file, path, `$ref ${JSON.stringify(ref)} names no type`);
    return def;
  };
  // Every $ref resolves; every `required` names a property; objects with
  // members are named types.
  const walk = (node, file, parts, named) => {
    if (Array.isArray(node)) {
      for (const [i, n] of node.entries()) walk(n, file, [...parts, i], false);
      return;
    }
    if (node === null || typeof node !== "object") return;
    const path = pointer(parts);
    if (typeof node.$ref === "string") node.$def = resolve(node.$ref, file, pointer([...parts, "$ref"]));
    if (node.properties && !named)
      throw new SchemaError(file, path, "an object with properties must be a type of $defs (so that every language can name it)");
    for (const r of node.required ?? []) {
      if (!node.properties || !(r in node.properties))
        throw new SchemaError(file, pointer([...parts, "required"]), `${JSON.stringify(r)} is not a property`);
    }
    // An object's alternatives name its own properties.
    const alternatives = named && node.type === "object" ? (node.oneOf ?? []) : [];
    for (const [i, alt] of alternatives.entries()) {
      for (const [key, names] of [
        ["required", alt.required],
        ["properties", Object.keys(alt.properties ?? {})],
      ]) {
        const stray = names.find((n) => !(n in node.properties));
        if (stray !== undefined)
          throw new SchemaError(file, pointer([...parts, "oneOf", i, key]), `${JSON.stringify(stray)} is not a property`);
      }
    }
    for (const n of node["x-node-options"] ?? []) {
      if (!(n in (node.properties ?? {})))
        throw new SchemaError(file, pointer([...parts, "x-node-options"]), `${JSON.stringify(n)} is not a property`);
    }
    for (const [k, v] of Object.entries(node)) {
      if (k === "$def" || k === "properties" || (k === "oneOf" && alternatives.length)) continue;
      walk(v, file, [...parts, k], false);
    }
    for (const [k, v] of Object.entries(node.properties ?? {})) walk(v, file, [...parts, "properties", k], false);
  };
  for (const { file, doc } of files) {
    for (const [k, v] of Object.entries(doc)) {
      if (k === "$defs") for (const [name, s] of Object.entries(v)) walk(s, file, ["$defs", name], true);
      else if (k === "$ref") doc.$def = resolve(v, file, "/$ref");
      else walk(v, file, [k], false);
    }
  }
  // A union's members: objects told apart by a constant member they share
  // (a step's `do`: `tagged`) or by one member each (a matcher: `keyed`).
  for (const def of defs.values()) {
    if (kindOf(def.schema) !== "union") continue;
    const members = def.schema.oneOf.map((r) => r.$def);
    if (!members.every((d) => d.schema.type === "object")) continue; // a union of unions (EventItem)
    const tag = Object.keys(members[0].schema.properties ?? {}).find((k) =>
      members.every((d) => typeof d.schema.properties?.[k]?.const === "string" && d.schema.required?.includes(k)),
    );
    const seen = new Set();
    for (const [i, d] of members.entries()) {
      const props = Object.keys(d.schema.properties ?? {});
      const key = tag ? d.schema.properties[tag].const : props.length === 1 && d.schema.required?.[0] === props[0] ? props[0] : undefined;
      if (key === undefined)
        throw new SchemaError(
          def.file,
          `${def.path}/oneOf/${i}`,
          `${d.name}: the members of a union of objects share a constant member (a tag) or have one required member each`,
        );
      if (seen.has(key)) throw new SchemaError(def.file, `${def.path}/oneOf/${i}`, `${d.name}: another member has ${JSON.stringify(key)}`);
      seen.add(key);
      d.member = { of: def, key };
    }
    def.tag = tag ?? null;
  }
  // Objects: an extension extends an object; methods take and answer objects.
  const isObject = (def) => def.schema.type === "object" || def.schema.allOf !== undefined;
  for (const def of defs.values()) {
    const base = def.schema.allOf?.[0].$def;
    if (base && !isObject(base))
      throw new SchemaError(def.file, `${def.path}/allOf/0/$ref`, `${base.name} is not an object: only an object can be extended`);
  }
  const protocol = files.find((f) => f.name === "protocol.schema.json");
  if (!protocol) throw new SchemaError("schema/protocol.schema.json", "", "missing");
  const methods = Object.entries(protocol.doc["x-methods"] ?? {}).map(([name, m]) => {
    for (const part of ["params", "result"]) {
      const def = m[part]?.$def;
      if (def && !isObject(def))
        throw new SchemaError(protocol.file, pointer(["x-methods", name, part, "$ref"]), `${def.name} is not an object`);
    }
    return { name, description: m.description, params: m.params?.$def, result: m.result?.$def };
  });
  // The event catalog: KomaEvent's members, each an extension with a constant `name`.
  const catalog = defs.get("KomaEvent");
  if (!catalog?.schema.oneOf) throw new SchemaError(protocol.file, "/$defs/KomaEvent", "the event catalog must be a oneOf of events");
  const events = catalog.schema.oneOf.map((member, i) => {
    const def = member.$def;
    const name = def?.schema.properties?.name?.const;
    if (typeof name !== "string")
      throw new SchemaError(catalog.file, `${catalog.path}/oneOf/${i}`, "an event of the catalog has a constant `name`");
    const data = def.schema.properties.data?.$def;
    if (!data) throw new SchemaError(def.file, `${def.path}/properties/data`, "an event's data is a type of $defs");
    return { name, def, data, description: def.schema.description };
  });
  // The error codes: one class each, no two alike.
  const codes = defs.get("ErrorCode");
  if (!codes?.schema.oneOf?.every((c) => "const" in c))
    throw new SchemaError(protocol.file, "/$defs/ErrorCode", "the error codes must be a oneOf of consts");
  const classes = new Set();
  const errors = codes.schema.oneOf.map((c, i) => {
    if (classes.has(c["x-class"]))
      throw new SchemaError(codes.file, `${codes.path}/oneOf/${i}/x-class`, `${c["x-class"]} is the class of another code`);
    classes.add(c["x-class"]);
    return {
      code: c.const,
      description: c.description,
      written: c["x-written"],
      className: c["x-class"],
      remote: c["x-remote"] === true,
      nodeName: c["x-node-error-name"] ?? "KomaError",
      pythonAlso: c["x-python-also"],
    };
  });
  if (errors.filter((e) => e.remote).length !== 1) throw new SchemaError(codes.file, codes.path, "exactly one code carries `x-remote`");
  return { files, defs, methods, events, errors, defsOf: (file) => [...defs.values()].filter((d) => d.file === file) };
}

// ---- what the emitters ask of a schema

/** The packages that have a def or a property: `x-langs`, or both. */
export const langsOf = (s) => s["x-langs"] ?? ["node", "python"];

/**
 * A schema's kind, for the emitters: `ref`, `const`, `enum`, `union` (a
 * oneOf of refs; its def's `tag` is the member they are told apart by, or
 * null when each has one key), `codes` (a oneOf of consts), `scalars` (a
 * oneOf of scalar types and constants), `open` (an open enum), `object`
 * (whose `oneOf`, if any, are its alternatives), `extension`, `array`,
 * `map`, `scalar` (with `.name` and `.nullable`), or `any`.
 */
export function kindOf(s) {
  if (s.$def) return "ref";
  if ("const" in s) return "const";
  if (s.enum) return "enum";
  if (s.oneOf && s.type !== "object") {
    if (s.oneOf.every((m) => m.$ref)) return "union";
    return s.oneOf.every((m) => "const" in m && m.description) ? "codes" : "scalars";
  }
  if (s.anyOf) return "open";
  if (s.allOf) return "extension";
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== "null") : s.type;
  if (type === "object") return s.additionalProperties && typeof s.additionalProperties === "object" ? "map" : "object";
  if (type === "array") return "array";
  if (type) return "scalar";
  return "any";
}

export const scalarOf = (s) => (Array.isArray(s.type) ? s.type.find((t) => t !== "null") : s.type);
export const nullable = (s) => Array.isArray(s.type) && s.type.includes("null");

/** The properties of an object def, its base's first for an extension: `[name, schema, required]`. */
export function propertiesOf(def) {
  const own = Object.entries(def.schema.properties ?? {});
  const required = new Set(def.schema.required ?? []);
  const base = def.schema.allOf?.[0].$def;
  const inherited = base ? propertiesOf(base).filter(([n]) => !(n in (def.schema.properties ?? {}))) : [];
  return [
    ...inherited,
    ...own.map(([n, s]) => [n, s, required.has(n) || (base !== undefined && propertiesOf(base).some(([b, , r]) => b === n && r))]),
  ];
}

/** Whether a program passes this def (params, options): its optional members take an explicit `undefined`. */
export function inputs(m) {
  const set = new Set();
  for (const method of m.methods) if (method.params) set.add(method.params.name);
  for (const def of m.defs.values()) if (def.schema["x-input"]) set.add(def.name);
  return set;
}
