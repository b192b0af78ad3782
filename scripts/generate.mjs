// Everything made from the schemas of schema/ (see scripts/schema/outputs.mjs
// for the list, and CONTRIBUTING.md for what each keyword becomes):
//
//   node scripts/generate.mjs           write them (`npm run generate`)
//   node scripts/generate.mjs --check   fail (exit 1) when a schema breaks JSON Schema 2020-12 or the
//                                       project's subset (naming the file and the JSON path), or when a
//                                       generated file differs from what would be written (naming it)
//   node scripts/generate.mjs --typings FILE
//                                       index.d.ts with napi's part from FILE (what `npm run build` does)
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { root } from "./lib/repo.mjs";
import { loadSchemas, SchemaError } from "./schema/load.mjs";
import { OUTPUTS } from "./schema/outputs.mjs";
import { typings } from "./schema/typescript.mjs";

const argv = process.argv.slice(2);
const check = argv.includes("--check");

let model;
try {
  model = loadSchemas(root);
} catch (e) {
  if (!(e instanceof SchemaError)) throw e;
  console.error(`schema mistake: ${e.message}`);
  process.exit(1);
}

const read = (file) => {
  try {
    return readFileSync(join(root, file), "utf8");
  } catch {
    return "";
  }
};

if (argv.includes("--typings")) {
  const napi = readFileSync(argv[argv.indexOf("--typings") + 1], "utf8");
  writeFileSync(join(root, "index.d.ts"), typings(model, read("src/header.d.ts"), "", napi));
  process.exit(0);
}

const stale = [];
for (const { file, make } of OUTPUTS) {
  if (!make) continue;
  const old = read(file);
  let text;
  try {
    text = make(model, old, root);
  } catch (e) {
    if (!(e instanceof SchemaError)) throw e;
    console.error(`schema mistake: ${e.message}`);
    process.exit(1);
  }
  if (text === old) continue;
  if (check) stale.push(file);
  else {
    writeFileSync(join(root, file), text);
    console.log(`wrote ${file}`);
  }
}
if (check && stale.length) {
  console.error(`stale (schema/ says otherwise): ${stale.join(", ")}; run \`npm run generate\``);
  process.exit(1);
}
if (check) console.log("schema/ is valid, and the files generated from it are up to date");
