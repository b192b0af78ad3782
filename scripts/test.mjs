// `npm test`: `npm run lint` (formatting and lints of the Rust code and of
// the JavaScript, the stale check of the files generated from
// schema/, the arrows between source files (no cycles), the
// type check of lib/), clippy, cargo tests, the build, a check that the
// committed binding.js and index.d.ts are what the build generates, `npm run
// release:dry` (the platform package built as released, linked by zig
// against the glibc floor; its tarballs kept), the addon with the
// `testing` feature (for the tests that inject faults), the Node tests (a
// count of zero fails), the same again on the portable spawn path
// (KOMA_SDK_SPAWN=portable, what macOS uses), the docs' code blocks run as
// pasted in a project that installs those tarballs, the testing example under vitest (docs/testing.md), the typings
// under `tsc --strict`, and smoke runs of the benchmark, of the turn
// workloads and of koma-sim's session file.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as repo from "./lib/repo.mjs";
import { runNodeTests } from "./node-tests.mjs";

const { root } = repo;
const host = repo.rustHost();
const step = (name) => console.log(`\n=== ${name}`);
const run = (cmd, args, opts) => {
  try {
    return repo.run(cmd, args, opts);
  } catch (e) {
    console.error(e.message);
    process.exit(1);
  }
};

step("npm run lint (scripts/lint.mjs: Biome, cargo fmt --check, schema/'s checks, check-deps, tsc on lib/)");
run(process.execPath, [join(root, "scripts", "lint.mjs")]);

step("cargo clippy (every crate and target, warnings denied)");
run("cargo", ["clippy", "--release", "--target", host, "--workspace", "--all-targets", "--", "-D", "warnings"]);
run("cargo", ["clippy", "--release", "--target", host, "-p", "koma-sdk-node", "--features", "testing", "--", "-D", "warnings"]);

step("cargo test (core, simulator)");
run("cargo", ["test", "--release", "--target", host, "-p", "koma-transport", "-p", "koma-sim", "--features", "koma-transport/testing"]);

step("build");
const generated = ["binding.js", "index.d.ts"];
const before = Object.fromEntries(generated.map((f) => [f, readFileSync(join(root, f), "utf8")]));
run(process.execPath, [join(root, "scripts", "build.mjs")]);
for (const f of generated) {
  if (readFileSync(join(root, f), "utf8") !== before[f]) {
    console.error(`${f} is stale: the build generated something else. Run \`npm run build\` and commit ${f}.`);
    process.exit(1);
  }
}
console.log(`${generated.join(" and ")} match the build`);

// The tarballs are kept, as the README's Install keeps them: the docs'
// blocks install them into a project of their own (__test__/docs/).
const tarballs = join(root, "target", "docs-test", "koma-tarballs");
step("release:dry (the packages as published: layout, pack, contents, offline install, a turn)");
// It builds the platform package's binaries as the release does (linked against the glibc floor).
run(process.execPath, [join(root, "scripts", "release-dry.mjs"), "--out", tarballs]);

step("the addon with the testing feature (koma-sdk.testing.node)");
run(process.execPath, [join(root, "scripts", "build.mjs"), "--testing"]);

let pass = 0;
let fail = 0;
for (const spawn of ["auto", "portable"]) {
  step(`node tests (KOMA_SDK_SPAWN=${spawn})`);
  const node = runNodeTests({ env: { ...process.env, KOMA_SDK_SPAWN: spawn } });
  if (!node.ok) {
    console.error(`node tests (${spawn}): ${node.tests} tests, ${node.pass} passed, ${node.fail} failed (exit ${node.status})`);
    process.exit(1);
  }
  pass += node.pass;
  fail += node.fail;
}

// Every code block of the user docs, run as pasted in a project of its own
// (the Python ones: python/tests/test_docs.py, in python3 python/dev.py test).
step("the docs' code blocks (__test__/docs/blocks.test.mjs: README.md, docs/)");
{
  const started = Date.now();
  const docs = runNodeTests({
    files: [join("__test__", "docs", "blocks.test.mjs")],
    env: { ...process.env, KOMA_DOCS_TARBALLS: tarballs },
  });
  if (!docs.ok) {
    console.error(`the docs' code blocks: ${docs.tests} tests, ${docs.pass} passed, ${docs.fail} failed (exit ${docs.status})`);
    process.exit(1);
  }
  console.log(`the docs' code blocks: ${docs.pass} passed in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

// docs/testing.md's example under vitest (its node:test form is a test of
// __test__/testing.test.mjs): the package imported by name, through koma-sim.
step("the testing example under vitest (examples/testing/vitest)");
// `--dir`: that folder alone (a filter would also match the copy of a base
// commit that `bench/turns.mjs` exports under target/bench-base/).
const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
run(process.execPath, [vitest, "run", "--root", root, "--dir", join("examples", "testing", "vitest")]);

step("typings (tsc --strict)");
run(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join("__test__", "types", "tsconfig.json")]);

step("benchmark smoke run");
run(process.execPath, [join(root, "bench", "run.mjs"), "--smoke"]);
step("turn workloads smoke run (base = new)");
run(process.execPath, [join(root, "bench", "turns.mjs"), "--smoke"]);
step("koma-sim's session file smoke run (200 turns in one session)");
run(process.execPath, [join(root, "bench", "sim-session.mjs"), "--smoke"]);
console.log(`\n${pass} passed, ${fail} failed`);
