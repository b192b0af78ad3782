// @koma/sdk's typings (index.d.ts): every value type of schema/ that Node
// has, a class per error code, and the protocol's methods of `Client`; then,
// as napi writes it, the `Client` class of src/client.rs. The declarations
// of what index.js adds by hand (the errors' base, `isKomaError`, the Turn,
// the approval function's type) are src/header.d.ts, put first as written.
// `@koma/sdk/testing`'s typings (testing.d.ts) are made the same way: its
// hand-written part (lib/testing-header.d.ts), then the scenario format's
// types and the declaration of its step builders.
import { inputs, kindOf, langsOf, nullable, propertiesOf, SchemaError, scalarOf } from "./load.mjs";
import { builderArgs, SCENARIO } from "./scenario.mjs";
import { camel, doc, NOTE } from "./names.mjs";

/** The line after which index.d.ts is napi's (the `Client` class). */
export const NAPI_MARK = "// ---- The Client class: written by napi build from src/client.rs";

const jsdoc = (text, indent = "") => (text ? [`${indent}/**`, ...doc(text, `${indent} * `), `${indent} */`] : []);
const lit = (v) => (v === null ? "null" : typeof v === "string" ? `'${v}'` : String(v));

/** The TypeScript type of a schema; `any` is the type of any JSON value. */
function tsType(s, where, any = "unknown") {
  if (s["x-node-type"]) return s["x-node-type"];
  if (s["x-method-name"]) return "MethodName";
  const t = (() => {
    switch (kindOf(s)) {
      case "ref":
        return s.$def.name;
      case "const":
        return lit(s.const);
      case "enum":
        return s.enum.map(lit).join(" | ");
      case "scalar":
        return { string: "string", integer: "number", number: "number", boolean: "boolean" }[scalarOf(s)];
      case "scalars":
        return s.oneOf.map((m) => ("const" in m ? lit(m.const) : tsType(m, where, any))).join(" | ");
      case "array": {
        const item = tsType(s.items, where, any);
        return /[ |]/.test(item) ? `Array<${item}>` : `${item}[]`;
      }
      case "map":
        return `Record<string, ${tsType(s.additionalProperties, where, any)}>`;
      case "any":
        return any;
    }
    throw new SchemaError(where.file, where.path, "Node has no type for this schema");
  })();
  return nullable(s) ? `${t} | null` : t;
}

/** A member's JSDoc: its description, and its default. */
const memberDoc = (p) =>
  jsdoc([p.description, "default" in p ? `\`${JSON.stringify(p.default)}\` if absent.` : ""].filter(Boolean).join(" "), "  ");

/** The lines of an object's members (`[name, schema, required]`); `never`: names it must not have. */
function members(def, entries, isInput, any, never = []) {
  const out = [];
  for (const [name, p, req] of entries) {
    if (!langsOf(p).includes("node")) continue;
    const type = tsType(p, { file: def.file, path: `${def.path}/properties/${name}` }, any);
    out.push(...memberDoc(p), `  ${name}${req ? "" : "?"}: ${type}${!req && isInput ? " | undefined" : ""}`);
  }
  for (const name of never) out.push(`  ${name}?: never`);
  return out;
}

/**
 * An object with alternatives (exactly one of its `oneOf` holds): the
 * members no alternative names, and a union of the alternatives, each with
 * the members it needs, those it may have, and `never` for those it cannot
 * have (it forbids them, or another alternative would hold as well).
 */
function alternatives(def, isInput, any) {
  const all = propertiesOf(def);
  const alts = def.schema.oneOf;
  const named = new Set(alts.flatMap((a) => [...a.required, ...Object.keys(a.properties ?? {})]));
  const holds = (alt, keys) => alt.required.every((k) => keys.has(k)) && !Object.keys(alt.properties ?? {}).some((k) => keys.has(k));
  const lines = [
    `export type ${def.name} = {`,
    ...members(
      def,
      all.filter(([n]) => !named.has(n)),
      isInput,
      any,
    ),
    "} & (",
  ];
  for (const alt of alts) {
    const needs = all.filter(([n]) => alt.required.includes(n)).map(([n, p]) => [n, p, true]);
    const may = [];
    const never = [];
    for (const [n, p] of all.filter(([n]) => named.has(n) && !alt.required.includes(n))) {
      const keys = new Set([...alt.required, n]);
      if (!holds(alt, keys) || alts.some((other) => other !== alt && holds(other, keys))) never.push(n);
      else may.push([n, p, false]);
    }
    lines.push("  | {", ...members(def, [...needs, ...may], isInput, any, never).map((l) => `  ${l}`), "  }");
  }
  return [...lines, ")"];
}

function declaration(def, isInput, any) {
  const s = def.schema;
  const out = jsdoc(s.description);
  const kind = kindOf(s) === "object" && s.oneOf ? "alternatives" : kindOf(s);
  switch (kind) {
    case "alternatives":
      out.push(...alternatives(def, isInput, any));
      break;
    case "object":
    case "extension": {
      const base = s.allOf?.[0].$def;
      if (base) {
        const required = new Set(s.required ?? []);
        const own = Object.entries(s.properties ?? {}).map(([name, p]) => [
          name,
          p,
          required.has(name) || propertiesOf(base).some(([b, , r]) => b === name && r),
        ]);
        out.push(`export interface ${def.name} extends ${base.name} {`, ...members(def, own, isInput, any), "}");
        break;
      }
      // A member of a union told apart by one key each has none of the others'.
      const keyed = def.member && def.member.of.tag === null;
      const never = keyed ? def.member.of.schema.oneOf.map((r) => r.$def.member.key).filter((k) => k !== def.member.key) : [];
      out.push(`export interface ${def.name} {`, ...members(def, propertiesOf(def), isInput, any, never), "}");
      break;
    }
    case "enum":
      out.push(`export type ${def.name} = ${s.enum.map(lit).join(" | ")}`);
      break;
    case "union":
      out.push(`export type ${def.name} = ${s.oneOf.map((r) => r.$def.name).join(" | ")}`);
      break;
    case "open":
      out.push(`export type ${def.name} = ${[...s.anyOf[0].enum.map(lit), "(string & {})"].join(" | ")}`);
      break;
    case "codes":
      out.push(`export type ${def.name} = ${s.oneOf.map((c) => lit(c.const)).join(" | ")}`);
      break;
  }
  return [...out, ""];
}

/** The classes of the error codes, and `KomaError`, the union of their instances. */
function errorClasses(m) {
  const out = [];
  for (const e of m.errors) {
    out.push(...jsdoc(`\`${e.code}\`: ${e.description}. Its \`name\` is \`"${e.nodeName}"\`.`));
    out.push(`export interface ${e.className} extends KomaErrorBase<'${e.code}'> {`, `  name: '${e.nodeName}'`);
    if (e.remote) out.push(...jsdoc("koma's error.", "  "), "  remote: RemoteError");
    out.push("}");
    const options = e.remote ? ", KomaErrorOptions & { remote: RemoteError }" : "";
    out.push(`export declare const ${e.className}: KomaErrorClass<${e.className}${options}>`, "");
  }
  out.push(
    ...jsdoc(
      'Every error of the package: an instance of `KomaError` and of the class of its code, narrowed by `code` (`err.remote` is there when it is `"remote"`). `isKomaError(e)` and `e instanceof KomaError` tell one apart in a `catch`.',
    ),
  );
  out.push(`export type KomaError =\n  | ${m.errors.map((e) => e.className).join("\n  | ")}`, "");
  return out;
}

function clientMethods(m) {
  const out = [...jsdoc("The protocol's methods of a client (the rest of `Client` is the addon's)."), "export interface Client {"];
  for (const method of m.methods) {
    const p = method.params;
    const optional = p && propertiesOf(p).every(([, , req]) => !req);
    const params = p ? `params${optional ? "?" : ""}: ${p.name}, ` : "";
    out.push(
      ...jsdoc(`\`${method.name}\`: ${method.description}`, "  "),
      `  ${camel(method.name)}(${params}options?: CallOptions): Promise<${method.result?.name ?? "EmptyResult"}>`,
    );
  }
  return [...out, "}", ""];
}

/** index.d.ts up to napi's part: the hand-written header, then what schema/ declares. */
export function typingsHead(m, header) {
  const isInput = inputs(m);
  const out = [`/* ${NOTE} */`, "/* eslint-disable */", "", header.trimEnd(), ""];
  out.push("// ---- The values of schema/ (protocol.schema.json, sdk.schema.json)", "");
  for (const def of m.defs.values()) {
    if (def.file === SCENARIO || !langsOf(def.schema).includes("node")) continue;
    out.push(...declaration(def, isInput.has(def.name)));
  }
  out.push(...jsdoc("The name of one of the protocol's methods (on the wire)."));
  out.push(`export type MethodName = ${m.methods.map((x) => lit(x.name)).join(" | ")}`, "");
  out.push("// ---- A class per error code (schema/protocol.schema.json, ErrorCode)", "", ...errorClasses(m));
  out.push(...clientMethods(m));
  out.push(NAPI_MARK, "");
  return out.join("\n");
}

/** index.d.ts: its head, then napi's part (`napi`, or what follows the mark in `old`). */
export function typings(m, header, old, napi) {
  const head = typingsHead(m, header);
  if (napi === undefined) {
    const at = old.indexOf(NAPI_MARK);
    napi = at < 0 ? "" : old.slice(at + NAPI_MARK.length);
  }
  return `${head}\n${napi.replace(/^\n+/, "")}`;
}

/** The declaration of `step`: a function per step of the format (scenario.mjs says how it takes each member). */
function stepBuilders(m) {
  const out = [
    ...jsdoc("The steps as functions that return their objects (a step may be written as its object as well: it is the file's JSON)."),
    "export declare const step: {",
  ];
  for (const b of builderArgs(m)) {
    const where = (n) => ({ file: b.def.file, path: `${b.def.path}/properties/${n}` });
    const type = (n, p) => tsType(p, where(n), "Json");
    const params = b.args.map(({ name, schema, optional }) => `${name}${optional ? "?" : ""}: ${type(name, schema)}`);
    if (b.options.length) {
      const fields = b.options.map(({ name, schema }) => `${name}?: ${type(name, schema)} | undefined`);
      params.push(`options?: { ${fields.join("; ")} }`);
    }
    const defaults = b.args
      .filter((a) => a.fallback !== undefined)
      .map((a) => `\`${a.name}\` is \`${JSON.stringify(a.fallback)}\` unless given.`);
    const title = b.def.schema.title.replace(/^./, (c) => c.toUpperCase());
    out.push(...jsdoc([`${title}.`, ...defaults].join(" "), "  "), `  ${b.name}(${params.join(", ")}): ${b.def.name}`);
  }
  return [...out, "}", ""];
}

/** testing.d.ts: its hand-written part, then the scenario format's types and `step`. */
export function testingTypings(m, header) {
  const out = [`/* ${NOTE} */`, "", header.trimEnd(), "", "// ---- The scenario format (schema/scenario.schema.json)", ""];
  for (const def of m.defsOf(SCENARIO)) if (langsOf(def.schema).includes("node")) out.push(...declaration(def, true, "Json"));
  out.push(...stepBuilders(m));
  return out.join("\n");
}
