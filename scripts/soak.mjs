// Endurance: `npm run soak` (the full run) or `node scripts/soak.mjs --short`
// (the slice `npm test` runs).
//   soak:  2,000,000 events and 10,000 requests through one client; RSS must
//          stay flat between 20% and 100% of the run.
//   strings: long strings streamed as event texts (64 KiB ones, copied into
//          V8's heap, and 1.5 MiB ones, handed over as external strings)
//          keep RSS bounded: peak growth at most 256 MiB while 3 GiB pass
//          (640 MiB in the short run), whatever the stream's length.
//   churn: 300 clients opened and closed in a row leave no process, zombie or
//          file descriptor behind; then 32 clients at once, 500 requests each.
//   state machine (full run only): the core's state-machine tests
//          (crates/koma-transport/tests/state_machine/) in their long mode:
//          1,000,000 interleavings of the connection (KOMA_SM_CASES; `npm
//          test` runs 10,000) and 20,000 of the turn layer
//          (KOMA_SM_TURN_CASES; `npm test` runs 1,000).
// python3 python/dev.py soak is the twin for koma_sdk (python/bench/soak.py).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { childProcesses, fdCount, peakRss, resetPeak } from "./lib/proc.mjs";
import { root, run, rustHost } from "./lib/repo.mjs";

const { Client } = createRequire(import.meta.url)(join(root, "index.js"));
const SIM = join(root, "bin", "koma-sim");
const short = process.argv.includes("--short");
// `npm run soak -- --no-state-machine`: the package's runs alone (the state machines take the most time).
const noStateMachine = process.argv.includes("--no-state-machine");
const home = mkdtempSync(join(tmpdir(), "koma-soak-"));
const env = { KOMA_SIM_HOME: home, KOMA_SIM_DELAY_MS: "0", KOMA_SIM_BENCH: "1" };
const cfg = short
  ? { events: 100_000, requests: 1_000, churn: 30, parallel: 8, each: 100, stringBytes: 640 * 2 ** 20 }
  : { events: 2_000_000, requests: 10_000, churn: 300, parallel: 32, each: 500, stringBytes: 3 * 2 ** 30 };
const mib = (b) => (b / 2 ** 20).toFixed(1);
const fail = (msg) => {
  console.error(`soak: FAILED: ${msg}`);
  process.exitCode = 1;
};

async function soak() {
  const client = new Client({ executable: SIM, env });
  await client.create({});
  const perWindow = 200;
  const windows = cfg.events / perWindow;
  const requestsPerWindow = Math.max(1, Math.round(cfg.requests / windows));
  const samples = [];
  let events = 0;
  let requests = 0;
  const it = client.events();
  for (let w = 0; w < windows; w++) {
    const answered = client.request("bench_events", { count: perWindow, bytes: 200 });
    let got = 0;
    while (got < perWindow) {
      const { value, done } = await it.next();
      if (done) throw new Error("events ended");
      if (value.type === "overflow") throw new Error("overflow during soak");
      if (value.name === "output") got++;
    }
    events += got;
    await answered;
    requests++;
    for (let i = 1; i < requestsPerWindow; i++, requests++) await client.state();
    if (w % (windows / 50) === windows / 50 - 1) {
      globalThis.gc?.();
      samples.push({ at: (w + 1) / windows, rss: process.memoryUsage.rss() });
    }
  }
  await client.close();
  const window = samples.filter((s) => s.at >= 0.2);
  const start = window[0].rss;
  const max = Math.max(...window.map((s) => s.rss));
  const growth = max - start;
  console.log(
    `soak: ${events} events, ${requests} requests; RSS at 20%: ${mib(start)} MiB, max after: ${mib(max)} MiB, growth ${mib(growth)} MiB`,
  );
  console.log(`soak: RSS samples (MiB): ${samples.map((s) => mib(s.rss)).join(" ")}`);
  if (growth > Math.max(16 * 2 ** 20, start * 0.15)) fail(`RSS grew by ${mib(growth)} MiB after 20% of the run`);
}

async function strings() {
  const client = new Client({ executable: SIM, env });
  await client.create({});
  const it = client.events();
  globalThis.gc?.();
  const before = process.memoryUsage.rss();
  if (!resetPeak()) throw new Error("the peak RSS cannot be reset here (/proc/self/clear_refs)");
  let passed = 0;
  let count = 0;
  for (const [bytes, perWindow] of [
    [64 * 1024, 64],
    [1_500_000, 16],
  ]) {
    const windows = Math.ceil(cfg.stringBytes / 2 / (bytes * perWindow));
    for (let w = 0; w < windows; w++) {
      const answered = client.request("bench_events", { count: perWindow, bytes });
      let got = 0;
      while (got < perWindow) {
        const { value, done } = await it.next();
        if (done) throw new Error("events ended");
        if (value.type === "overflow") throw new Error("overflow during the strings soak");
        if (value.name !== "output") continue;
        if (value.data.text.length !== bytes) throw new Error(`a text of ${value.data.text.length} bytes, not ${bytes}`);
        got++;
      }
      await answered;
      passed += bytes * perWindow;
      count += perWindow;
    }
  }
  await client.close();
  const growth = peakRss() - before;
  console.log(`strings: ${count} texts, ${mib(passed)} MiB in all; peak RSS growth ${mib(growth)} MiB`);
  if (growth > 256 * 2 ** 20) fail(`RSS grew by ${mib(growth)} MiB while long strings streamed`);
}

async function churn() {
  const warm = new Client({ executable: SIM, env });
  await warm.state();
  await warm.close();
  const fdsBefore = fdCount();
  for (let i = 0; i < cfg.churn; i++) {
    const c = new Client({ executable: SIM, env });
    await c.create({});
    await c.state();
    await c.close();
  }
  const left = childProcesses();
  const fdsAfter = fdCount();
  console.log(
    `churn: ${cfg.churn} clients opened and closed; processes left: ${left.length} (zombies: ${left.filter((c) => c.state === "Z").length}); fds before ${fdsBefore}, after ${fdsAfter}`,
  );
  if (left.length) fail(`processes left behind: ${JSON.stringify(left)}`);
  if (fdsAfter > fdsBefore) fail(`file descriptors leaked: ${fdsBefore} -> ${fdsAfter}`);

  const clients = Array.from({ length: cfg.parallel }, () => new Client({ executable: SIM, env }));
  const counts = await Promise.all(
    clients.map(async (c) => {
      await c.create({});
      let ok = 0;
      const inflight = [];
      for (let i = 0; i < cfg.each; i++) {
        inflight.push(c.state().then((s) => s.status === "idle" && ok++));
        if (inflight.length === 16) await Promise.all(inflight.splice(0));
      }
      await Promise.all(inflight);
      await c.close();
      return ok;
    }),
  );
  const answered = counts.reduce((a, b) => a + b, 0);
  console.log(`churn: ${cfg.parallel} clients at once, ${cfg.each} requests each: ${answered} of ${cfg.parallel * cfg.each} answered`);
  if (answered !== cfg.parallel * cfg.each) fail("not every request was answered");
  if (childProcesses().length) fail("processes left after the parallel clients");
}

/** The Rust state-machine test of the core, in its long mode (full run only). */
function stateMachine() {
  const cases = Number(process.env.KOMA_SM_CASES || 1_000_000);
  const turnCases = Number(process.env.KOMA_SM_TURN_CASES || 20_000);
  console.log(
    `state machine: ${cases} interleavings (KOMA_SM_CASES=${cases}), ${turnCases} of the turn layer (KOMA_SM_TURN_CASES=${turnCases})`,
  );
  const start = Date.now();
  const args = ["test", "--release", "--target", rustHost(), "-p", "koma-transport", "--test", "state_machine", "--", "--nocapture"];
  const secs = () => ((Date.now() - start) / 1000).toFixed(0);
  try {
    run("cargo", args, { env: { ...process.env, KOMA_SM_CASES: String(cases), KOMA_SM_TURN_CASES: String(turnCases) } });
    console.log(`state machine: ${cases} + ${turnCases} interleavings passed in ${secs()} s`);
  } catch (e) {
    fail(`the state-machine test failed after ${secs()} s (${e.message}); the seeds are in its output`);
  }
}

try {
  await soak();
  await strings();
  await churn();
  if (!short && !noStateMachine) stateMachine();
} finally {
  rmSync(home, { recursive: true, force: true });
}
if (!process.exitCode) console.log("soak: ok");
