// `npm run lint`: the checks that need no build, in seconds, for a
// contributor before each commit (.pre-commit-config.yaml runs it) and as
// `npm test`'s first step: Biome (the JavaScript's formatting and lints),
// `cargo fmt --check`, schema/'s check and the stale check of the files
// generated from it, the arrows between source files (no cycles), and
// the type check of lib/ (the package's JavaScript half). Each is run, and
// the command fails at the end if any failed, naming them.
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import * as repo from "./lib/repo.mjs";

const { root } = repo;
const node = process.execPath;
const CHECKS = [
  [
    "biome check (the JavaScript's formatting and lints; `npm run format` fixes the formatting)",
    node,
    [join(root, "node_modules", "@biomejs", "biome", "bin", "biome"), "check", "--error-on-warnings"],
  ],
  ["cargo fmt --check (`cargo fmt --all` fixes it)", "cargo", ["fmt", "--all", "--check"]],
  [
    "schema/ is valid, and the files generated from it are up to date (`npm run generate` writes them)",
    node,
    [join(root, "scripts", "generate.mjs"), "--check"],
  ],
  ["the arrows between source files (scripts/check-deps.mjs)", node, [join(root, "scripts", "check-deps.mjs")]],
  [
    "the type check of lib/ (tsc, // @ts-check)",
    node,
    [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join("lib", "tsconfig.json")],
  ],
];

const failed = [];
const started = performance.now();
for (const [name, cmd, args] of CHECKS) {
  console.log(`\n=== ${name}`);
  try {
    repo.run(cmd, args);
  } catch (e) {
    console.error(e.message);
    failed.push(name);
  }
}
const took = `${((performance.now() - started) / 1000).toFixed(1)} s`;
if (failed.length) {
  console.error(`\nlint: ${failed.length} of ${CHECKS.length} checks failed (${took}):\n${failed.map((f) => `  - ${f}`).join("\n")}`);
  process.exit(1);
}
console.log(`\nlint: ${CHECKS.length} checks passed (${took})`);
