// Run the Node test files (`__test__/*.test.mjs`) with Node's test runner and
// check the TAP counts (a count of zero fails: Node 20's `--test` with a
// directory argument finds nothing and exits 0). Used by `npm test` and
// `npm run test:stress`.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The test files, as paths relative to the root. */
export function testFiles() {
  return readdirSync(join(root, "__test__")).filter((f) => f.endsWith(".test.mjs")).sort().map((f) => join("__test__", f));
}

/**
 * Run them once with `node` (default: this Node). Returns {ok, tests, pass,
 * fail, skipped, todo, output}; `quiet` keeps the TAP output to the returned
 * string.
 */
export function runNodeTests({ node = process.execPath, files = testFiles(), quiet = false, env = process.env } = {}) {
  const r = spawnSync(node, ["--test", "--test-reporter=tap", "--test-concurrency=2", ...files], {
    cwd: root, encoding: "utf8", maxBuffer: 256 << 20, env,
  });
  if (!quiet) {
    process.stdout.write(r.stdout);
    process.stderr.write(r.stderr);
  }
  const count = (k) => Number((r.stdout.match(new RegExp(`^# ${k} (\\d+)$`, "m")) || [])[1] ?? NaN);
  const [tests, pass, fail, skipped, todo] = [count("tests"), count("pass"), count("fail"), count("skipped"), count("todo")];
  // A skipped test says why (a guarantee this platform's spawn path does not give).
  const ok = r.status === 0 && files.length > 0 && tests > 0 && fail === 0 && pass + skipped + todo === tests;
  return { ok, tests, pass, fail, skipped, todo, status: r.status, output: r.stdout + r.stderr };
}
