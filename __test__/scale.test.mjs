// Many agents in one process: the addon's threads do not grow with the
// clients, and the guarantees hold at scale (the Node process killed with
// 200 clients open, a Worker terminated among others, a tool holding koma's
// pipes), on every spawn path.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { once } from "node:events";
import { Worker } from "node:worker_threads";
import { join } from "node:path";
import {
  SIM,
  root,
  tempHome,
  alive,
  runScript,
  lacksParentDeath,
  killedWithSigkill,
  stubbornHost,
  exitWatchedByThread,
} from "./helpers.mjs";

const INDEX = JSON.stringify(join(root, "index.js"));
const simEnv = (more = {}) => ({ KOMA_SIM_DELAY_MS: "0", KOMA_SIM_HOME: tempHome(), ...more });

/** Is `pid` running (a zombie, waiting for its reaper, counts as gone)? */
function running(pid) {
  if (!alive(pid)) return false;
  // Windows has no zombies: an ended process is not alive (libuv's kill(pid, 0) reads its exit code).
  if (process.platform === "win32") return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
}

/**
 * Wait until none of `pids` runs. The processes are another process's
 * children (or orphans), whose end this process cannot await: bounded polling.
 */
async function allGone(pids, what) {
  for (let i = 0; i < 400; i++) {
    const left = pids.filter(running);
    if (left.length === 0) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`${what}: still running: ${pids.filter(running).join(" ")}`);
}

for (const path of ["auto", "no-pidfd", "portable"]) {
  test(`the addon's threads stay few and constant from 1 to 200 clients (${path})`, {
    timeout: 120000,
    skip: process.platform === "linux" ? false : "counts threads in /proc/self/task",
  }, () => {
    const r = runScript(
      `
      const { readdirSync } = require("node:fs");
      const { Client } = require(${INDEX});
      const threads = () => readdirSync("/proc/self/task").length;
      (async () => {
        const base = threads();
        const start = async (n) => {
          const clients = Array.from({ length: n }, () => new Client({ executable: ${JSON.stringify(SIM)}, env: ${JSON.stringify(simEnv())} }));
          await Promise.all(clients.map((c) => c.probe()));
          return clients;
        };
        const one = await start(1);
        const withOne = threads() - base;
        const many = await start(200);
        const withMany = threads() - base;
        await Promise.all([...one, ...many].map((c) => c.state()));
        await Promise.all([...one, ...many].map((c) => c.close()));
        console.log(JSON.stringify({ withOne, withMany, after: threads() - base }));
      })();
    `,
      { env: { KOMA_SDK_SPAWN: path } },
    );
    assert.equal(r.code, 0, r.err);
    const { withOne, withMany, after } = JSON.parse(r.out);
    assert.ok(withOne <= 8, `threads added with 1 client: ${withOne}`);
    if (!exitWatchedByThread(path)) {
      // Every exit is watched by the reactor (a pidfd, or kqueue on macOS).
      assert.equal(withMany, withOne, `threads added with 201 clients: ${withMany} (with 1: ${withOne})`);
    } else {
      // Without pidfds each child's exit is watched by a thread of its own.
      assert.ok(withMany >= 200, `fallback: a watcher thread per child (${withMany})`);
    }
    assert.ok(after <= withOne, `after close, no thread of a client is left (${after} added, ${withOne} with one client)`);
  });
}

for (const path of ["auto", "portable"]) {
  test(`200 clients open, the Node process killed with SIGKILL: no koma is left, nor any tool of theirs (${path})`, {
    timeout: 180000,
    skip: lacksParentDeath("koma's group dying with its SIGKILLed parent"),
  }, async () => {
    // Each koma-sim ignores the end of its stdin and has a tool in its group.
    await killedWithSigkill(stubbornHost(200), {
      spawn: path,
      check: ({ komas, tools }) => {
        assert.equal(komas.length, 200);
        assert.ok([...komas, ...tools].every(running), "all 200 and their tools run");
      },
      pids: ({ komas, tools }) => [...komas, ...tools],
      bound: 120000,
    });
  });
}

const workerSource = `
  const { parentPort, workerData } = require("node:worker_threads");
  const { Client } = require(${INDEX});
  (async () => {
    const clients = Array.from({ length: workerData.clients }, () => new Client({ executable: workerData.sim, env: workerData.env }));
    globalThis.keep = clients; // referenced: a collected client stops its child
    await Promise.all(clients.map((c) => c.probe()));
    parentPort.postMessage({ pids: clients.map((c) => c.pid) });
    if (workerData.hang) {
      for (const c of clients) for (let i = 0; i < 5; i++) c.state().catch(() => {});
      parentPort.postMessage({ inflight: true });
      return;
    }
    await new Promise((r) => parentPort.once("message", r)); // go on once the other Worker is gone
    let ok = 0;
    for (const c of clients) for (let i = 0; i < 20; i++) if ((await c.state()).status === "idle") ok++;
    await Promise.all(clients.map((c) => c.close()));
    parentPort.postMessage({ ok });
  })().catch((e) => parentPort.postMessage({ error: String(e) }));
`;

test("clients in several Workers: one Worker terminated with requests in flight stops its children, the others go on", {
  timeout: 120000,
}, async (t) => {
  const workers = [];
  // A failed check must not leave a Worker running (this file would never end).
  t.after(() => Promise.all(workers.map((w) => w.terminate())));
  const start = (hang) => {
    const w = new Worker(workerSource, {
      eval: true,
      workerData: { sim: SIM, clients: 10, hang, env: simEnv(hang ? { KOMA_SIM_FAULT: "never_answer" } : {}) },
    });
    workers.push(w);
    const msgs = [];
    w.on("message", (m) => msgs.push(m));
    return { w, msgs, exited: once(w, "exit") };
  };
  const doomed = start(true);
  const others = [start(false), start(false)];
  const until = async ({ w, msgs }, key) => {
    while (!msgs.some((m) => key in m)) await once(w, "message");
    return msgs.find((m) => key in m)[key];
  };
  const doomedPids = await until(doomed, "pids");
  await until(doomed, "inflight");
  const otherPids = await Promise.all(others.map((o) => until(o, "pids")));
  await doomed.w.terminate();
  await doomed.exited;
  await allGone(doomedPids, "the terminated Worker's children");
  assert.ok(otherPids.flat().every(running), "the other Workers' children still run");
  for (const o of others) o.w.postMessage("go");
  for (const o of others) assert.equal(await until(o, "ok"), 200);
  for (const o of others) {
    const [code] = await o.exited;
    assert.equal(code, 0);
  }
  assert.ok(!otherPids.flat().some(running), "closed: gone");
});

for (const path of ["auto", "no-pidfd", "portable"]) {
  test(`a child whose tool holds its pipes: its exit is still seen (${path})`, { timeout: 30000 }, () => {
    const r = runScript(
      `
      const { Client } = require(${INDEX});
      (async () => {
        const c = new Client({ executable: ${JSON.stringify(SIM)}, env: ${JSON.stringify(simEnv({ KOMA_SIM_FAULT: "orphan_tool" }))} });
        await c.probe();
        const e = await c.state().catch((err) => err);
        const later = await c.state().catch((err) => err.code);
        await c.close();
        const tool = Number(c.stderr.match(/tool pid (\\d+)/)[1]);
        let toolGone = true;
        try { process.kill(tool, 0); toolGone = process.platform !== "win32" && require("fs").readFileSync("/proc/" + tool + "/stat", "utf8").includes(") Z"); } catch {}
        console.log(JSON.stringify({ code: e.code, message: e.message, later, toolGone }));
      })();
    `,
      { env: { KOMA_SDK_SPAWN: path } },
    );
    assert.equal(r.code, 0, r.err);
    const out = JSON.parse(r.out);
    assert.equal(out.code, "delivery_unknown");
    assert.match(out.message, /exited with code 1/);
    assert.equal(out.later, "transport_failure");
    assert.equal(out.toolGone, true, "the tool is gone when close() resolves");
  });
}

test("a client works in fallback mode (no pidfd) like with pidfds", { timeout: 30000 }, () => {
  const r = runScript(
    `
    const { Client } = require(${INDEX});
    (async () => {
      const c = new Client({ executable: ${JSON.stringify(SIM)}, env: ${JSON.stringify(simEnv())} });
      await c.create({});
      const { turn } = await c.submit({ text: "hello" });
      for await (const e of c.events()) if (e.name === "turn_finished" && e.data.turn === turn) break;
      const pid = c.pid;
      await c.detach();
      let gone = false;
      try { process.kill(pid, 0); } catch { gone = true; }
      await c.close();
      console.log(JSON.stringify({ gone }));
    })();
  `,
    { env: { KOMA_SDK_SPAWN: "no-pidfd" } },
  );
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(JSON.parse(r.out), { gone: true });
});
