// lib/surface.js: the tables the package's JavaScript half reads: the
// protocol's methods of `Client` (index.js defines each as a `request()` of
// its wire name) and the error codes with their classes (lib/errors.js
// makes a class of each).
import { camel, NOTE, quote } from "./names.mjs";

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
    "module.exports = { methods, errors };",
    "",
  ].join("\n");
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
