// Run the Node test files (`__test__/*.test.mjs`) with Node's test runner and
// check the TAP counts (a count of zero fails: Node 20's `--test` with a
// directory argument finds nothing and exits 0). Used by `npm test`,
// `npm run test:stress` and `npm run test:runtimes`.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { root } from "./lib/repo.mjs";

/** The test files, as paths relative to the root. */
export function testFiles() {
  return readdirSync(join(root, "__test__"))
    .filter((f) => f.endsWith(".test.mjs"))
    .sort()
    .map((f) => join("__test__", f));
}

/**
 * Node's arguments that run `files` with the TAP reporter, two files at a
 * time unless `concurrency` is false (Node 20.4 has no --test-concurrency).
 */
export function testArgs(files = testFiles(), { concurrency = true } = {}) {
  return ["--test", "--test-reporter=tap", ...(concurrency ? ["--test-concurrency=2"] : []), ...files];
}

/** The counts at the end of a TAP stream: {tests, pass, fail, skipped, todo}; NaN for a count that is missing (skipped, todo: 0). */
export function tapCounts(out) {
  const n = (k) => Number((out.match(new RegExp(`^# ${k} (\\d+)$`, "m")) || [])[1] ?? NaN);
  return { tests: n("tests"), pass: n("pass"), fail: n("fail"), skipped: n("skipped") || 0, todo: n("todo") || 0 };
}

/**
 * Run them once with `node` (default: this Node). Returns {ok, tests, pass,
 * fail, skipped, todo, output}; `quiet` keeps the TAP output to the returned
 * string.
 */
export function runNodeTests({ node = process.execPath, files = testFiles(), quiet = false, env = process.env } = {}) {
  const r = spawnSync(node, testArgs(files), {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 256 << 20,
    env,
  });
  if (!quiet) {
    process.stdout.write(r.stdout);
    process.stderr.write(r.stderr);
  }
  const { tests, pass, fail, skipped, todo } = tapCounts(r.stdout);
  // A skipped test says why (a guarantee this platform's spawn path does not give); a todo cannot fail, so none is allowed.
  const ok = r.status === 0 && files.length > 0 && tests > 0 && fail === 0 && todo === 0 && pass + skipped === tests;
  return { ok, tests, pass, fail, skipped, todo, status: r.status, output: r.stdout + r.stderr };
}
