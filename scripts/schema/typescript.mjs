// @koma/sdk's typings (index.d.ts): every value type of schema/ that Node
// has, a class per error code, and the protocol's methods of `Client`; then,
// as napi writes it, the `Client` class of src/client.rs. The declarations
// of what index.js adds by hand (the errors' base, `isKomaError`, the Turn,
// the approval function's type) are src/header.d.ts, put first as written.
import { inputs, kindOf, langsOf, nullable, propertiesOf, SchemaError, scalarOf } from "./load.mjs";
import { camel, doc, NOTE } from "./names.mjs";

/** The line after which index.d.ts is napi's (the `Client` class). */
export const NAPI_MARK = "// ---- The Client class: written by napi build from src/client.rs";

const jsdoc = (text, indent = "") => (text ? [`${indent}/**`, ...doc(text, `${indent} * `), `${indent} */`] : []);
const lit = (v) => (v === null ? "null" : typeof v === "string" ? `'${v}'` : String(v));

/** The TypeScript type of a schema. */
function tsType(s, where) {
  if (s["x-node-type"]) return s["x-node-type"];
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
      case "array": {
        const item = tsType(s.items, where);
        return /[ |]/.test(item) ? `Array<${item}>` : `${item}[]`;
      }
      case "map":
        return `Record<string, ${tsType(s.additionalProperties, where)}>`;
      case "any":
        return "unknown";
    }
    throw new SchemaError(where.file, where.path, "Node has no type for this schema");
  })();
  return nullable(s) ? `${t} | null` : t;
}

function declaration(def, isInput) {
  const s = def.schema;
  const out = jsdoc(s.description);
  switch (kindOf(s)) {
    case "object":
    case "extension": {
      const base = s.allOf?.[0].$def;
      const own = base ? Object.entries(s.properties ?? {}) : propertiesOf(def);
      const required = new Set(s.required ?? []);
      out.push(`export interface ${def.name}${base ? ` extends ${base.name}` : ""} {`);
      for (const entry of own) {
        const [name, p] = entry;
        if (!langsOf(p).includes("node")) continue;
        const req = base ? required.has(name) || propertiesOf(base).some(([b, , r]) => b === name && r) : entry[2];
        const type = tsType(p, { file: def.file, path: `${def.path}/properties/${name}` });
        out.push(...jsdoc(p.description, "  "), `  ${name}${req ? "" : "?"}: ${type}${!req && isInput ? " | undefined" : ""}`);
      }
      out.push("}");
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
    if (!langsOf(def.schema).includes("node")) continue;
    out.push(...declaration(def, isInput.has(def.name)));
  }
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
