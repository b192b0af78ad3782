// lib/surface.js: the tables the package's JavaScript half reads: the
// protocol's methods of `Client` (index.js defines each as a `request()` of
// its wire name), the error codes with their classes (lib/errors.js makes a
// class of each) and the client's options (lib/fake-options.js checks a
// fake's by them). lib/scenario-steps.js: the table of the scenario
// builders (lib/scenario.js).
import { camel, NOTE, quote } from "./names.mjs";
import { builderArgs, stepUnion } from "./scenario.mjs";

export function tablesJs(m) {
  return [
    `// ${NOTE}`,
    '"use strict";',
    "",
    "/** The protocol's methods of a Client: [JavaScript name, wire name, whether it takes params]. */",
    "const methods = [",
    ...m.methods.map((x) => `  [${quote(camel(x.name))}, ${quote(x.name)}, ${x.params !== undefined}],`),
    "];",
    "",
    "/** The error codes: [code, the class of its errors, their `name`]. */",
    "const errors = [",
    ...m.errors.map((e) => `  [${quote(e.code)}, ${quote(e.className)}, ${quote(e.nodeName)}],`),
    "];",
    "",
    "/**",
    " * The options of `new Client`: [name, the JSON types it takes, its minimum,",
    " * the method an object of it must have] (lib/fake-options.js checks a fake's",
    " * client's by them).",
    " * @type {Array<[string, string[], number | null, string | null]>}",
    " */",
    "const clientOptions = [",
    ...clientOptionRows(m),
    "];",
    "",
    "module.exports = { methods, errors, clientOptions };",
    "",
  ].join("\n");
}

/** A row of each of `ClientOptions`'s members: its types (`type`), `minimum`, and the getter an object of an `x-node-type` must have (`getTracer`). */
function clientOptionRows(m) {
  const def = m.defs.get("ClientOptions");
  return Object.entries(def.schema.properties).map(([name, s]) => {
    const types = s.type === undefined ? ["object"] : [s.type].flat();
    const getter = /^\{ (\w+)\(/.exec(s["x-node-type"] ?? "")?.[1];
    const row = [quote(name), `[${types.map(quote).join(", ")}]`, String(s.minimum ?? null), getter ? quote(getter) : "null"];
    return `  [${row.join(", ")}],`;
  });
}

/**
 * index.mjs, the entry for ES modules: the CommonJS entry's names, listed
 * (Node finds a CommonJS module's names by reading its text, and index.js
 * exports the classes of the codes from a table).
 */
export function esmEntry(m) {
  const names = ["Client", "KomaError", "isKomaError", ...m.errors.map((e) => e.className)];
  return [
    `// ${NOTE}`,
    "// `@koma/sdk` for ES modules: the names of the CommonJS entry (index.js).",
    'import sdk from "./index.js";',
    "",
    "export const {",
    ...names.map((n) => `  ${n},`),
    "} = sdk;",
    "export default sdk;",
    "",
  ].join("\n");
}

/**
 * lib/scenario-steps.js: the table `step`'s functions are made from
 * (lib/scenario.js): each step's function, its `do`, and its members in the
 * file's order, each with where the function takes it (its argument's index,
 * or `"options"`) and the default the function gives it, if any.
 */
export function scenarioStepsJs(m) {
  const union = stepUnion(m);
  const rows = builderArgs(m).map((b) => {
    const member = (x) => {
      const at = x.inOptions ? quote("options") : String(b.args.indexOf(x));
      return `[${[quote(x.name), at, ...(x.fallback === undefined ? [] : [quote(x.fallback)])].join(", ")}]`;
    };
    return `  [${quote(b.name)}, ${quote(b.tag)}, [${b.members.map(member).join(", ")}]],`;
  });
  return [
    `// ${NOTE}`,
    '"use strict";',
    "",
    "/** The member that says which step a step is. */",
    `const tag = ${quote(union.tag)};`,
    "",
    "/**",
    " * The steps, as `step`'s functions build them: [function, the tag's value,",
    ' * [member, its argument\'s index or "options", the default the function gives]].',
    ' * @type {Array<[string, string, Array<[string, number | "options", string?]>]>}',
    " */",
    "const steps = [",
    ...rows,
    "];",
    "",
    "module.exports = { tag, steps };",
    "",
  ].join("\n");
}
