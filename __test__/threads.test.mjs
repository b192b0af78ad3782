// The addon's threads (the core's two `koma-io` workers and `koma-spawner`,
// and, where a child's exit cannot be watched by the reactor, a
// `koma-exit-watch` per child) run only while a client needs them. Counted
// by name from /proc/self/task of this process, right after the call checked
// resolves: none before the first call, none once the last client's close()
// has resolved, and back with the next client. A file of its own, so that no
// other test's client runs in this process (Node's own threads have other names).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { Client, SIM, root, tempHome, exitWatchedByThread } from "./helpers.mjs";

const skip = process.platform === "linux" ? false : "counts threads in /proc/self/task";
const NONE = [];

/** The names of this process's threads that are the core's, sorted. */
function komaThreads() {
  const names = [];
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      names.push(readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim());
    } catch {
      // the thread ended meanwhile
    }
  }
  return names.filter((n) => n.startsWith("koma-")).sort();
}

/** The threads while `clients` clients run (each child's exit watched by a thread of its own where the reactor cannot watch it). */
function running(clients = 1) {
  const watched = exitWatchedByThread();
  const names = ["koma-io", "koma-io", "koma-spawner"];
  if (watched) for (let i = 0; i < clients; i++) names.push("koma-exit-watch");
  return names.sort();
}

const client = () => new Client({ executable: SIM, env: { KOMA_SIM_HOME: tempHome(), KOMA_SIM_DELAY_MS: "0" } });

test("no thread of the addon's before the first call, its threads while a client runs, none once close() resolves, and again with the next client", {
  skip,
  timeout: 60000,
}, async () => {
  assert.deepEqual(komaThreads(), NONE, "before any client");
  for (let round = 0; round < 3; round++) {
    const c = client();
    assert.deepEqual(komaThreads(), NONE, `round ${round}: made, and nothing starts before the first call`);
    try {
      assert.equal((await c.state()).status, "idle");
      assert.deepEqual(komaThreads(), running(), `round ${round}: while it runs`);
    } finally {
      await c.close();
    }
    assert.deepEqual(komaThreads(), NONE, `round ${round}: right after close() resolved`);
    // Closed and kept: it holds no thread, and closes again at once.
    await c.close();
    assert.deepEqual(komaThreads(), NONE, `round ${round}: a second close()`);
  }
});

test("closing one of two clients keeps the threads for the other; closing both ends them", { skip, timeout: 60000 }, async () => {
  const a = client();
  const b = client();
  try {
    await Promise.all([a.state(), b.state()]);
    assert.deepEqual(komaThreads(), running(2));
    await a.close();
    assert.deepEqual(komaThreads(), running(1), "b still runs");
    assert.equal((await b.state()).status, "idle");
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
  assert.deepEqual(komaThreads(), NONE);
});

test("the last client's close() and a new client at once, many times: each works, and no thread is left after the last close", {
  skip,
  timeout: 120000,
}, async () => {
  let a = client();
  try {
    await a.state();
    for (let round = 0; round < 40; round++) {
      const closing = a.close();
      // Made and started while `a` closes: it takes the threads before `a`
      // lets go of them, or new ones after.
      const b = client();
      a = b;
      assert.equal((await b.state()).status, "idle", `round ${round}`);
      await closing;
      assert.deepEqual(komaThreads(), running(), `round ${round}: b's threads, and no other`);
    }
  } finally {
    await a.close();
  }
  assert.deepEqual(komaThreads(), NONE, "right after the last close() resolved");
});

test("a client in a Worker: once its close() has resolved there, this process has no thread of the addon's", {
  skip,
  timeout: 60000,
}, async () => {
  const source = `
    const { parentPort, workerData } = require("node:worker_threads");
    const { Client } = require(workerData.index);
    (async () => {
      const c = new Client({ executable: workerData.sim, env: workerData.env });
      await c.state();
      await c.close();
      parentPort.postMessage("closed");
      parentPort.once("message", () => process.exit(0));
    })().catch((e) => parentPort.postMessage(String(e)));
  `;
  const env = { KOMA_SIM_HOME: tempHome(), KOMA_SIM_DELAY_MS: "0" };
  const w = new Worker(source, { eval: true, workerData: { index: `${root}/index.js`, sim: SIM, env } });
  const exited = new Promise((resolve) => w.once("exit", resolve));
  try {
    const said = await new Promise((resolve) => w.once("message", resolve));
    assert.equal(said, "closed");
    assert.deepEqual(komaThreads(), NONE, "the Worker's client was the last");
    w.postMessage("end");
    assert.equal(await exited, 0);
  } finally {
    await w.terminate();
  }
});
