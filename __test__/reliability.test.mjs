// Processes and failures: panics, Workers, the death of the Node process,
// tracing. Everything through real koma-sim children.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { Worker } from "node:worker_threads";
import { join } from "node:path";
import {
  SIM,
  notOnWindows,
  peer,
  root,
  tempHome,
  alive,
  simClient,
  rejection,
  eventsError,
  lacksParentDeath,
  killedWithSigkill,
  stubbornHost,
  testingEnv,
} from "./helpers.mjs";

const INDEX = JSON.stringify(join(root, "index.js"));
const simEnv = () => ({ KOMA_SIM_DELAY_MS: "0", KOMA_SIM_HOME: tempHome() });

async function waitDead(pid) {
  // Polls an outside process (no event to await for that); bounded.
  for (let i = 0; i < 200 && alive(pid); i++) await new Promise((r) => setTimeout(r, 25));
  return !alive(pid);
}

function runScript(script, env = {}) {
  return spawnSync(process.execPath, ["-e", script], { encoding: "utf8", env: { ...process.env, ...env }, timeout: 60000 });
}

// Through the addon built with the `testing` feature (the published one has no such hook).
for (const [where, call, what] of [
  ["reader", "probe", "a panic in the reader task becomes a rejected promise, not a crash"],
  ["wake", "state", "a panic while delivering results rejects what is outstanding, not a crash"],
]) {
  test(what, { timeout: 30000 }, () => {
    const r = runScript(
      `
      const { Client } = require(${INDEX});
      const c = new Client({ executable: ${JSON.stringify(SIM)}, env: ${JSON.stringify(simEnv())} });
      c.${call}().then(() => console.log("resolved"), (e) => console.log("rejected", e.code)).then(() => c.close()).then(() => console.log("closed"));
    `,
      { ...testingEnv(), KOMA_SDK_TEST_PANIC: where },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split("\n"), ["rejected transport_failure", "closed"]);
  });
}

test("the published addon has no test hooks: with every test variable set, a round trip works", { timeout: 60000 }, () => {
  const script = `
    const { Client, __census } = require(${INDEX});
    const c = new Client({ executable: ${JSON.stringify(SIM)}, env: ${JSON.stringify(simEnv())} });
    (async () => {
      const hello = await c.probe();
      const created = await c.create({});
      const states = await Promise.all([c.state(), c.state(), c.state()]);
      await c.close();
      console.log(JSON.stringify({ protocol: hello.protocol, session: typeof created.session, states: states.map((s) => s.status), census: typeof __census }));
    })().catch((e) => { console.log("failed", e.code, e.message); process.exitCode = 1; });
  `;
  for (const vars of [
    { KOMA_SDK_TEST_PANIC: "wake" },
    { KOMA_SDK_TEST_PANIC: "reader" },
    { KOMA_SDK_TEST_NAPI_FAIL: "parse:1" },
    { KOMA_SDK_TEST_NAPI_FAIL: "parse:2" },
  ]) {
    const r = runScript(script, { ...vars, NAPI_RS_NATIVE_LIBRARY_PATH: "" });
    assert.equal(r.status, 0, `${JSON.stringify(vars)}: exit ${r.status ?? r.signal}; ${r.stdout} ${r.stderr}`);
    assert.deepEqual(
      JSON.parse(r.stdout),
      { protocol: 1, session: "string", states: ["idle", "idle", "idle"], census: "undefined" },
      JSON.stringify(vars),
    );
  }
});

const workerSource = `
  const { parentPort, workerData } = require("node:worker_threads");
  const { Client } = require(${INDEX});
  (async () => {
    const c = new Client({ executable: workerData.sim, env: workerData.env });
    await c.probe();
    parentPort.postMessage({ pid: c.pid });
    if (workerData.hang) {
      // Requests in flight that are never answered, then wait to be terminated.
      for (let i = 0; i < 10; i++) c.state().catch(() => {});
      parentPort.postMessage({ inflight: true });
      return;
    }
    let ok = 0;
    for (let i = 0; i < workerData.requests; i++) if ((await c.state()).status === "idle") ok++;
    await c.close();
    parentPort.postMessage({ ok });
  })().catch((e) => parentPort.postMessage({ error: String(e) }));
`;

test("several Workers use clients at once", { timeout: 60000 }, async () => {
  const workers = Array.from(
    { length: 4 },
    () => new Worker(workerSource, { eval: true, workerData: { sim: SIM, env: simEnv(), requests: 200 } }),
  );
  const results = await Promise.all(
    workers.map(async (w) => {
      const msgs = [];
      w.on("message", (m) => msgs.push(m));
      const [code] = await once(w, "exit");
      return { code, msgs };
    }),
  );
  for (const { code, msgs } of results) {
    assert.equal(code, 0);
    assert.deepEqual(msgs.at(-1), { ok: 200 });
    assert.equal(await waitDead(msgs[0].pid), true);
  }
});

test("terminating a Worker with requests in flight neither crashes Node nor leaves koma running", { timeout: 60000 }, async () => {
  const w = new Worker(workerSource, {
    eval: true,
    workerData: { sim: SIM, env: { ...simEnv(), KOMA_SIM_FAULT: "never_answer" }, hang: true },
  });
  const msgs = [];
  w.on("message", (m) => msgs.push(m));
  while (!msgs.some((m) => m.inflight)) await once(w, "message");
  const pid = msgs[0].pid;
  assert.equal(alive(pid), true);
  await w.terminate();
  assert.equal(await waitDead(pid), true, "koma was stopped with the Worker");
  // This process is fine and can still use a client.
  const c = new (await import("./helpers.mjs")).Client({ executable: SIM, env: simEnv() });
  assert.equal((await c.state()).status, "idle");
  await c.close();
});

for (const path of ["auto", "no-pidfd", "portable"]) {
  test(`koma that ignores the end of its stdin, and the tool in its group, die when the Node process is killed with SIGKILL (${path})`, {
    timeout: 60000,
    skip: lacksParentDeath("koma's group dying with its SIGKILLed parent"),
  }, async () => {
    await killedWithSigkill(stubbornHost(1), {
      spawn: path,
      check: ({ komas, tools }) => {
        assert.equal(komas.length, 1);
        assert.ok(alive(komas[0]) && alive(tools[0]), "koma and its tool run while Node does");
      },
      pids: ({ komas, tools }) => [...komas, ...tools],
    });
  });
}

test("tracing prints every frame both ways and every stderr line, only when on", { timeout: 30000 }, () => {
  const script = `
    const { Client } = require(${INDEX});
    const c = new Client({ executable: ${JSON.stringify(SIM)}, env: ${JSON.stringify(simEnv())} });
    c.create({}).then(() => c.state()).then(() => c.close());
  `;
  const on = runScript(script, { KOMA_SDK_TRACE: "1" });
  assert.equal(on.status, 0);
  // Each line names the client: koma's pid once it started.
  const pid = /\[koma-sdk pid (\d+)\] koma started, pid \1\n/.exec(on.stderr)?.[1];
  assert.ok(pid, on.stderr);
  const who = `\\[koma-sdk pid ${pid}\\]`;
  assert.match(on.stderr, new RegExp(`${who} <- \\{"type":"hello"`));
  assert.match(on.stderr, new RegExp(`${who} -> \\{"id":"\\d+","method":"create","params":\\{\\}\\}`));
  assert.match(on.stderr, new RegExp(`${who} -> \\{"id":"\\d+","method":"state","params":\\{\\}\\}`));
  assert.match(on.stderr, new RegExp(`${who} stderr koma-sim: `));
  assert.match(on.stderr, new RegExp(`${who} koma exited with code 0\\n`));
  assert.ok(on.stderr.endsWith(`[koma-sdk pid ${pid}] closed\n`), "close done is the last line");
  const off = runScript(script, { KOMA_SDK_TRACE: "" });
  assert.equal(off.status, 0);
  assert.doesNotMatch(off.stderr, /\[koma-sdk/);
  const option = runScript(script.replace("env: {", "trace: true, env: {"));
  assert.match(option.stderr, /\[koma-sdk pid \d+\] -> /);
});

test("the trace prints whole stderr lines, even one written in two pieces", {
  timeout: 30000,
}, () => {
  // Half a line, a pause the drain reads in, the rest: two writes, then koma-sim.
  const r = runScript(`
    const { Client } = require(${INDEX});
    const c = new Client({ executable: ${JSON.stringify(peer("split-stderr.mjs"))}, trace: true, env: ${JSON.stringify({ ...simEnv(), KOMA_SIM_PATH: SIM })} });
    c.probe().then(() => c.close());
  `);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stderr.split("\n").flatMap((l) => /^\[koma-sdk pid \d+\] stderr (.*)$/.exec(l)?.[1] ?? []);
  assert.ok(lines.includes("one line in two writes"), `trace lines: ${JSON.stringify(lines)}`);
  assert.ok(!lines.includes("one line in "), "no half line");
});

test("the child's environment is the parent's plus `env`, and arguments are exactly sdk serve", {
  timeout: 30000,
  skip: notOnWindows("reads the child's environment and arguments in Linux's /proc (__test__/windows/ checks them on Windows)"),
}, async (t) => {
  process.env.KOMA_SDK_TEST_PARENT_VAR = "from-parent";
  t.after(() => delete process.env.KOMA_SDK_TEST_PARENT_VAR);
  const client = simClient(t, { env: { KOMA_SDK_TEST_ADDED: "added $(echo no-shell)" } });
  await client.probe();
  const environ = (await import("node:fs")).readFileSync(`/proc/${client.pid}/environ`, "utf8").split("\0");
  const cmdline = (await import("node:fs")).readFileSync(`/proc/${client.pid}/cmdline`, "utf8").split("\0");
  assert.ok(environ.includes("KOMA_SDK_TEST_PARENT_VAR=from-parent"));
  assert.ok(environ.includes("KOMA_SDK_TEST_ADDED=added $(echo no-shell)"));
  assert.deepEqual(cmdline.slice(1, 3), ["sdk", "serve"]);
  const shell = await rejection(new (await import("./helpers.mjs")).Client({ executable: "echo hi; true" }).probe());
  assert.equal(shell.code, "spawn_failed", "the executable is a path, never a shell command");
});

test("a hostile child cannot make the client use more memory than the protocol's bounds add up to", { timeout: 60000 }, () => {
  // 40 MiB frame + 64 MiB events + 64 KiB stderr (+ 64 pending, nothing here);
  // slack for the read buffer, the allocator and the runtime.
  const bounds = 40 * 2 ** 20 + 64 * 2 ** 20 + 64 * 1024;
  const slack = 32 * 2 ** 20;
  for (const eventsMiB of ["63", "400"]) {
    const r = spawnSync(process.execPath, [join(root, "__test__", "peers", "hostile-client.cjs")], {
      encoding: "utf8",
      env: { ...process.env, HOSTILE_EVENTS_MIB: eventsMiB },
      timeout: 60000,
    });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.error, "delivery_unknown,protocol_error", "the endless line is fatal at 40 MiB");
    assert.equal(out.stderr, 65536, "only the newest 64 KiB of the stderr flood is kept");
    assert.equal(out.first, eventsMiB === "400" ? "overflow" : "event");
    assert.ok(out.peak < bounds + slack, `peak RSS growth ${out.peak} bytes with ${eventsMiB} MiB of events`);
  }
});

test("messages that quote the child's bytes escape control characters and quote at most 200 bytes", { timeout: 30000 }, async (t) => {
  const { Client } = await import("./helpers.mjs");
  const client = new Client({ executable: peer("escapes.mjs") });
  t.after(() => client.close());
  await client.probe();
  const e = await rejection(client.state());
  assert.equal(e.code, "delivery_unknown");
  const fatal = await eventsError(client);
  assert.equal(fatal.code, "protocol_error");
  for (const message of [e.message, fatal.message]) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for raw control characters
    assert.doesNotMatch(message, /[\x00-\x08\x0b-\x1f\x7f]/, "no raw control character reaches the terminal");
  }
  assert.match(fatal.message, /\\u\{1b\}\[31mINFO/);
  const quoted = fatal.message.match(/`([^`]*)`/)[1];
  assert.ok(Buffer.byteLength(quoted.replace(/…$/, "")) <= 200, `quote of ${Buffer.byteLength(quoted)} bytes`);
  assert.doesNotMatch(fatal.message, /z{201}/);
});
