// `npm run test:fleet`: the BullMQ example (examples/fleet) tested on a Redis
// of its own (__test__/fleet/*.test.mjs). Installs Debian's redis-server
// through apt where it is missing (bullmq and ioredis are devDependencies,
// which never reach the package), builds if needed, runs the tests with
// Node's test runner, and checks the TAP counts. Each test file starts
// redis-server on a free port of the loopback address and stops it, and
// stops every worker process it started, also when a test fails.
//
//   node scripts/test-fleet.mjs            the tests
//   node scripts/test-fleet.mjs --bench    then the example's throughput (bench/fleet.mjs)
//
// Not part of `npm test` (it needs Redis); see CONTRIBUTING.md.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { root, run } from "./lib/repo.mjs";
import { tapCounts, testArgs } from "./node-tests.mjs";

const step = (name) => console.log(`\n=== ${name}`);
const args = process.argv.slice(2);
if (args.some((a) => a !== "--bench")) {
  console.error("usage: node scripts/test-fleet.mjs [--bench]");
  process.exit(64);
}
const started = performance.now();

function found(command) {
  return spawnSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" }).status === 0;
}

/** `apt-get ARGS` (through sudo unless root), non-interactive; its exit status. */
function aptGet(...a) {
  const [cmd, args] = process.getuid?.() === 0 ? ["apt-get", a] : ["sudo", ["apt-get", ...a]];
  return spawnSync(cmd, args, { stdio: "inherit", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } }).status;
}

/** Debian's redis-server, through apt where it is missing (after `apt-get update` if the first try fails). */
function ensureRedis() {
  if (found("redis-server")) return;
  step("redis-server: apt-get install redis-server");
  if (!found("apt-get"))
    throw new Error("redis-server is missing and there is no apt-get: install Redis (7 or later) and put redis-server on PATH");
  const install = () => aptGet("install", "-y", "--no-install-recommends", "redis-server") === 0;
  if (!install() && (aptGet("update") !== 0 || !install())) throw new Error("apt-get install redis-server failed");
  if (!found("redis-server")) throw new Error("redis-server is still not on PATH after apt-get install redis-server");
}

try {
  ensureRedis();
  step("build (if needed)");
  run(process.execPath, [join(root, "scripts", "build.mjs"), "--if-needed"]);
  step("the fleet tests (__test__/fleet)");
  const files = readdirSync(join(root, "__test__", "fleet"))
    .filter((f) => f.endsWith(".test.mjs"))
    .sort()
    .map((f) => join("__test__", "fleet", f));
  const r = spawnSync(process.execPath, testArgs(files, { concurrency: false }), { cwd: root, encoding: "utf8", maxBuffer: 64 << 20 });
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  const { tests, pass, fail } = tapCounts(r.stdout);
  if (r.status !== 0 || !(tests > 0) || pass !== tests) {
    throw new Error(`the fleet tests: ${tests} tests, ${pass} passed, ${fail} failed (exit ${r.status ?? r.signal})`);
  }
  console.log(`\nthe fleet tests: ${pass} of ${tests} passed`);
  if (args.includes("--bench")) {
    step("the example's throughput (bench/fleet.mjs)");
    run(process.execPath, [join(root, "bench", "fleet.mjs")]);
  }
} catch (e) {
  console.error(`test:fleet: ${e.message}`);
  process.exit(1);
}
console.log(`test:fleet: done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
