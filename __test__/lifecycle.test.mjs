// Every moment of a client's life: close, abort and failure at any point
// leave nothing behind. One test (or more) per item of the lifecycle issue,
// each through a real child.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Client,
  SIM,
  notOnWindows,
  peer,
  root,
  tempHome,
  simClient,
  rejection,
  childPids,
  openFds,
  groupAlive,
  runScript,
  testingEnv,
} from "./helpers.mjs";

const INDEX = JSON.stringify(join(root, "index.js"));
const simEnv = (more = {}) => ({ KOMA_SIM_DELAY_MS: "0", KOMA_SIM_HOME: tempHome(), ...more });
const LONG_PEER = peer("long-strings.mjs");
const PROC_CHILDREN = notOnWindows("counts this process's children in Linux's /proc");

test("1: close() while the child is being spawned stops it before close() resolves", { skip: PROC_CHILDREN }, async () => {
  const before = childPids();
  for (let i = 0; i < 10; i++) {
    const c = new Client({ executable: SIM, env: simEnv() });
    const call = c.state().then(
      () => "answered",
      (e) => e.code,
    );
    await c.close();
    // Settled either way: by close (hello had not come), or answered (on a
    // busy machine hello can come, and the call be written, before close runs).
    assert.ok(["closed", "answered"].includes(await call), await call);
    assert.deepEqual(childPids(), before, `round ${i}: no child left (not even unreaped) when close() resolves`);
  }
});

test("1: close() at each early moment (before the call, while spawning, before hello) leaves no child", {
  skip: PROC_CHILDREN,
}, async () => {
  const before = childPids();
  const settled = (p) =>
    p.then(
      () => "answered",
      (e) => e.code,
    );
  const moments = [
    async (c) => c.close(),
    async (c) => {
      const p = settled(c.probe());
      await c.close();
      assert.ok(["closed", "answered"].includes(await p));
    },
    async (c) => {
      const p = settled(c.probe());
      await Promise.resolve();
      await c.close();
      assert.ok(["closed", "answered"].includes(await p));
    },
  ];
  for (const [i, at] of moments.entries()) {
    const c = new Client({ executable: SIM, env: simEnv({ KOMA_SIM_FAULT: "late_hello" }) });
    await at(c);
    assert.deepEqual(childPids(), before, `moment ${i}`);
    assert.equal((await rejection(c.state())).code, "closed");
  }
});

test("2: clients that streamed events and were closed can be collected, with their iterators", { timeout: 300000 }, () => {
  const r = runScript(
    `
    const { Client } = require(${INDEX});
    const env = ${JSON.stringify(simEnv())};
    async function one(refs) {
      const c = new Client({ executable: ${JSON.stringify(SIM)}, env });
      await c.create({});
      const { turn } = await c.submit({ text: "hello" });
      const it = c.events();
      if (refs) refs.push(new WeakRef(it));
      for await (const e of it) if (e.type === "event" && e.name === "turn_finished" && e.data.turn === turn) break;
      await c.close();
    }
    async function many(n, refs) {
      for (let i = 0; i < n; i += 25) await Promise.all(Array.from({ length: Math.min(25, n - i) }, () => one(refs)));
    }
    async function collect() {
      for (let i = 0; i < 20; i++) { gc(); await new Promise((r) => setImmediate(r)); }
    }
    (async () => {
      await many(100);
      await collect();
      const before = process.memoryUsage().heapUsed;
      const refs = [];
      await many(2000, refs);
      await collect();
      const after = process.memoryUsage().heapUsed;
      console.log(JSON.stringify({ before, after, live: refs.filter((r) => r.deref() !== undefined).length, made: refs.length }));
    })();
  `,
    { flags: ["--expose-gc"], timeout: 280000 },
  );
  assert.equal(r.code, 0, r.err);
  const { before, after, live, made } = JSON.parse(r.out);
  assert.equal(made, 2000);
  assert.equal(live, 0, "every iterator was collected");
  assert.ok(after - before < 1 << 20, `the heap grew by ${after - before} bytes over 2,000 clients (allowed: under 1 MiB)`);
});

test("3: missing params are rejected locally, naming the field, and nothing is written", async (t) => {
  const c = simClient(t);
  const cases = [
    [() => c.submit(), "text"],
    [() => c.submit(null), "text"],
    [() => c.submit({}), "text"],
    [() => c.approve(), "approval"],
    [() => c.approve({ approval: "a-1" }), "decision"],
    [() => c.enqueue(), "text"],
    [() => c.interruptAndSubmit(), "text"],
    [() => c.resume(), "session"],
  ];
  for (const [call, field] of cases) {
    const e = await rejection(call());
    assert.equal(e.code, "invalid_params", e.message);
    assert.ok(e.message.includes(`missing field \`${field}\``), e.message);
  }
  // Nothing was written: `create` is still allowed as the first request.
  assert.equal(typeof (await c.create({})).session, "string");
});

test("3: bad constructor options throw an Error with code invalid_params", () => {
  const bad = [
    [undefined, /options must be an object/],
    [null, /options must be an object/],
    [{}, /`executable` must be a string/],
    [{ executable: "" }, /`executable` must be a non-empty string/],
    [{ executable: 5 }, /`executable` must be a string/],
    [{ executable: SIM, cwd: 3 }, /`cwd` must be a string/],
    [{ executable: SIM, env: { A: 1 } }, /`env.A` must be a string/],
    [{ executable: SIM, env: "A=1" }, /`env` must be an object/],
    [{ executable: SIM, env: { "A=B": "x" } }, /`A=B`/],
    [{ executable: SIM, trace: "yes" }, /`trace` must be a boolean/],
  ];
  for (const [options, message] of bad) {
    assert.throws(
      () => new Client(options),
      (e) => {
        assert.ok(e instanceof Error);
        assert.equal(e.code, "invalid_params", `${JSON.stringify(options)}: ${e.code} ${e.message}`);
        assert.match(e.message, message);
        return true;
      },
    );
  }
});

test("4: when converting an answer fails, that call is rejected and every other settles; the process exits", { timeout: 60000 }, () => {
  // The second JSON.parse of the process (the first is hello's) fails as a
  // failed Node-API call would: the first batch of the eight answers.
  const r = runScript(
    `
    const { Client } = require(${INDEX});
    (async () => {
      const c = new Client({ executable: ${JSON.stringify(SIM)}, env: ${JSON.stringify(simEnv())} });
      await c.probe();
      const calls = Array.from({ length: 8 }, () => c.state().then(() => "resolved", (e) => e.code + (/could not be converted/.test(e.message) ? " (conversion)" : "")));
      const outcomes = await Promise.all(calls);
      const later = await c.state().then(() => "resolved", (e) => e.code);
      await c.close();
      console.log(JSON.stringify({ outcomes, later }));
    })();
  `,
    { env: { ...testingEnv(), KOMA_SDK_TEST_NAPI_FAIL: "parse:2" }, timeout: 50000 },
  );
  assert.equal(r.code, 0, `the process exits by itself: ${r.err}`);
  const { outcomes, later } = JSON.parse(r.out);
  assert.equal(outcomes.length, 8, "all eight settled");
  assert.equal(outcomes[0], "transport_failure (conversion)", JSON.stringify(outcomes));
  assert.ok(
    outcomes.every((o) => o === "resolved" || o === "transport_failure (conversion)"),
    JSON.stringify(outcomes),
  );
  assert.equal(later, "resolved", "the client goes on");
});

test("5: a signal whose listener cannot be attached rejects the call, and nothing is written", async (t) => {
  const c = simClient(t);
  const signal = {
    aborted: false,
    addEventListener() {
      throw new Error("no listeners here");
    },
    removeEventListener() {},
  };
  const e = await rejection(c.create({}, { signal }));
  assert.equal(e.code, "invalid_params");
  assert.match(e.message, /could not listen to `signal` .*no listeners here/);
  // Nothing was written: `create` is still allowed as the first request.
  assert.equal(typeof (await c.create({})).session, "string");
});

test("6: a short long string does not keep the long line it came in alive", { timeout: 60000 }, () => {
  const r = runScript(
    `
    const { Client } = require(${INDEX});
    const rss = () => process.memoryUsage().rss;
    (async () => {
      const c = new Client({ executable: ${JSON.stringify(LONG_PEER)} });
      await c.probe();
      await c.request("blobpad", { blob: 1 << 20, pad: 1 << 20 });
      for (let i = 0; i < 5; i++) { gc(); await new Promise((r) => setImmediate(r)); }
      const before = rss();
      const kept = [];
      for (let i = 0; i < 8; i++) kept.push((await c.request("blobpad", { blob: 2 << 20, pad: 30 << 20 })).blob);
      for (let i = 0; i < 10; i++) { gc(); await new Promise((r) => setImmediate(r)); }
      const grew = rss() - before;
      await c.close();
      console.log(JSON.stringify({ grew, ok: kept.every((s) => s.length === 2 << 20 && s === "b".repeat(2 << 20)) }));
    })();
  `,
    { flags: ["--expose-gc"] },
  );
  assert.equal(r.code, 0, r.err);
  const { grew, ok } = JSON.parse(r.out);
  assert.equal(ok, true);
  // Kept: 8 × 2 MiB. Had each string kept its 32 MiB line: 256 MiB.
  assert.ok(grew < 96 * 2 ** 20, `RSS grew by ${(grew / 2 ** 20).toFixed(1)} MiB keeping eight 2 MiB strings`);
});

test("7: a call's deadline is cancelled when the call settles, and keeps nothing of the client", { timeout: 60000 }, () => {
  const r = runScript(
    `
    const { Client, __census } = require(${INDEX});
    (async () => {
      const base = __census();
      const afterEach = [];
      // In a function of its own, so no frame keeps the last client.
      async function one() {
        const c = new Client({ executable: ${JSON.stringify(SIM)}, env: ${JSON.stringify(simEnv())} });
        await c.state({ timeout: 3600000 });
        afterEach.push(__census().timers - base.timers);
        await c.close();
      }
      for (let i = 0; i < 50; i++) await one();
      let left;
      for (let i = 0; i < 50; i++) {
        gc();
        await new Promise((r) => setImmediate(r));
        left = __census();
        if (left.connections === base.connections) break;
      }
      console.log(JSON.stringify({ afterEach, base, left }));
    })();
  `,
    { flags: ["--expose-gc"], env: testingEnv() },
  );
  assert.equal(r.code, 0, r.err);
  const { afterEach, base, left } = JSON.parse(r.out);
  assert.ok(
    afterEach.every((n) => n === 0),
    `deadlines still running right after their calls settled: ${afterEach}`,
  );
  assert.equal(left.timers, base.timers);
  assert.equal(left.connections, base.connections, "no connection's memory is kept by a deadline");
});

test("8: koma's process group is never signalled after koma was reaped", {
  timeout: 120000,
  skip: notOnWindows(
    "Windows has no process groups or signals (koma's tree is a Job Object), and the test logs kill(2) with an LD_PRELOAD shim",
  ),
}, (t) => {
  // An LD_PRELOAD shim logs every kill(2), waitid(2) and waitpid(2) in order.
  const dir = mkdtempSync(join(tmpdir(), "koma-signal-log-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const shim = join(dir, "signal-log.so");
  execFileSync(process.env.CC || "cc", ["-shared", "-fPIC", "-O1", "-o", shim, join(root, "__test__", "peers", "signal-log.c"), "-ldl"]);
  const scenarios = [
    ["exits by itself", "spawn_tool,exit_mid_request", "await c.state().catch(() => {}); await c.close();"],
    ["detached by close()", "spawn_tool", "await c.state(); await c.close();"],
    [
      "stopped with SIGKILL after ignoring everything",
      "spawn_tool,ignore_detach,ignore_eof,ignore_sigterm",
      "await c.state(); await c.close();",
    ],
  ];
  for (const pidfd of [true, false]) {
    for (const [what, faults, body] of scenarios) {
      const log = join(dir, `log-${pidfd}-${faults}`);
      const r = runScript(
        `
        const { Client } = require(${INDEX});
        (async () => {
          const c = new Client({ executable: ${JSON.stringify(SIM)}, env: ${JSON.stringify(simEnv({ KOMA_SIM_FAULT: faults }))} });
          const hello = await c.probe();
          console.log(JSON.stringify({ node: process.pid, pid: c.pid }));
          ${body}
        })();
      `,
        { env: { LD_PRELOAD: shim, SIGNAL_LOG: log, KOMA_SDK_SPAWN: pidfd ? "auto" : "no-pidfd" } },
      );
      const label = `${what} (pidfd ${pidfd ? "on" : "off"})`;
      assert.equal(r.code, 0, `${label}: ${r.err}`);
      const { node, pid } = JSON.parse(r.out);
      // The Node process's calls only (the sim's are logged with its own pid).
      const calls = readFileSync(log, "utf8")
        .trim()
        .split("\n")
        .map((l) => l.split(" "))
        .filter((f) => Number(f[0]) === node);
      const shown = calls.map((f) => f.join(" ")).join("\n");
      const WNOWAIT = 0x01000000;
      const reapAt = calls.findIndex(
        (f) =>
          (f[1] === "waitid" && f[2] === "1" && Number(f[3]) === pid && (Number(f[4]) & WNOWAIT) === 0 && f[5] === "0") ||
          (f[1] === "waitpid" && Number(f[2]) === pid && Number(f[4]) === pid),
      );
      assert.ok(reapAt >= 0, `${label}: koma was reaped\n${shown}`);
      const signals = calls.map((f, i) => [f, i]).filter(([f]) => f[1] === "kill" && Math.abs(Number(f[2])) === pid && f[3] !== "0");
      assert.ok(
        signals.some(([f, i]) => Number(f[2]) === -pid && i < reapAt),
        `${label}: the group was stopped while koma was unreaped\n${shown}`,
      );
      assert.deepEqual(
        signals.filter(([, i]) => i > reapAt).map(([f]) => f.join(" ")),
        [],
        `${label}: signals after the reap\n${shown}`,
      );
      assert.equal(groupAlive(pid), false, `${label}: nothing of koma's group runs`);
    }
  }
});

test("9: when close() resolves, every descriptor of the client is closed", { timeout: 120000 }, async () => {
  const warm = new Client({ executable: SIM, env: simEnv() });
  await warm.state();
  await warm.close();
  const before = openFds();
  for (let i = 0; i < 60; i++) {
    const c = new Client({ executable: SIM, env: simEnv() });
    await c.state();
    if (i % 3 === 1) c.events();
    await c.close();
    assert.deepEqual(openFds(), before, `round ${i}: a descriptor is still open right after close() resolved`);
  }
});

test("10: a cwd that does not exist is named as the cause", async () => {
  const missing = join(tmpdir(), `koma-no-such-dir-${process.pid}`);
  assert.equal(existsSync(missing), false);
  const c = new Client({ executable: SIM, cwd: missing, env: simEnv() });
  const e = await rejection(c.probe());
  assert.equal(e.code, "spawn_failed");
  assert.ok(e.message.includes(`working directory \`${missing}\``), e.message);
  // The system's words for a missing folder (ENOENT; on Windows ERROR_FILE_NOT_FOUND, ERROR_PATH_NOT_FOUND or ERROR_DIRECTORY).
  assert.match(e.message, process.platform === "win32" ? /\(os error (2|3|267)\)/ : /No such file or directory/);
  assert.doesNotMatch(e.message, /could not start `[^`]*koma-sim sdk serve`/, "the executable is not blamed");
  await c.close();
});

test("10: a text with a lone surrogate is refused naming the field, and the client goes on", async (t) => {
  const c = simClient(t);
  await c.create({});
  for (const text of ["a\uD800b", "end \uD83D", "\uDE00 start"]) {
    const e = await rejection(c.submit({ text }));
    assert.equal(e.code, "invalid_params");
    assert.match(e.message, /field `text`/);
    assert.match(e.message, /lone surrogate/);
    assert.match(e.message, /serde_json/);
  }
  const { turn } = await c.submit({ text: "a 😀 b" });
  assert.equal(typeof turn, "string");
});

test("10: an env value with a NUL byte is invalid_params, before anything starts", () => {
  // Linux's /proc lists the children; elsewhere the synchronous throw is what shows that nothing started.
  const children = () => (process.platform === "linux" ? childPids() : []);
  const before = children();
  assert.throws(
    () => new Client({ executable: SIM, env: { KOMA_X: "a\0b" } }),
    (e) => e.code === "invalid_params" && /env\.KOMA_X/.test(e.message) && /NUL/.test(e.message),
  );
  assert.throws(
    () => new Client({ executable: `${SIM}\0`, env: {} }),
    (e) => e.code === "invalid_params" && /NUL/.test(e.message),
  );
  assert.deepEqual(children(), before);
});

test("11: a Turn dropped unread is forgotten by the core once it is collected (Node-API's finalizer)", { timeout: 120000 }, () => {
  // Each turn's events (its 1 MiB text and the reply that repeats it) stay
  // in the core for a loop that may still come, until its Turn is collected.
  // Held for all 40 turns, they would take over 80 MiB.
  const r = runScript(
    `
    const { Client } = require(${INDEX});
    const rss = () => process.memoryUsage().rss;
    const collect = async () => { for (let i = 0; i < 5; i++) { gc(); await new Promise((r) => setImmediate(r)); } };
    (async () => {
      const c = new Client({ executable: ${JSON.stringify(SIM)}, env: ${JSON.stringify(simEnv())} });
      await c.create({});
      const text = "x".repeat(1 << 20);
      // In a function of its own, so no frame keeps the Turn; its events are never read.
      const dropOne = async () => (await c.turn({ text }).result).status;
      await dropOne();
      await collect();
      const before = rss();
      const statuses = [];
      for (let i = 0; i < 40; i++) {
        statuses.push(await dropOne());
        if (i % 5 === 4) await collect();
      }
      await collect();
      const grew = rss() - before;
      await c.close();
      console.log(JSON.stringify({ grew, statuses: [...new Set(statuses)] }));
    })();
  `,
    { flags: ["--expose-gc"] },
  );
  assert.equal(r.code, 0, r.err);
  const { grew, statuses } = JSON.parse(r.out);
  assert.deepEqual(statuses, ["completed"]);
  assert.ok(grew < 40 * 2 ** 20, `RSS grew by ${(grew / 2 ** 20).toFixed(1)} MiB over 40 dropped turns of 2 MiB of events each`);
});
