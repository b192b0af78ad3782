// koma behind a wrapper executable, as in docs/remote.md: the client runs
// `<wrapper> sdk serve`, and the wrapper ends in `exec docker exec -i ...`
// (or kubectl exec -i, ssh -T). Here a local script stands in for the remote
// hop: it starts koma-sim in a session of its own (setsid), so that the
// client's signals, which go to the wrapper's process group, cannot reach it,
// and gives it its own stdin, stdout and stderr. What close() reaches there
// is the end of stdin.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, SIM, alive, groupAlive, tempHome } from "./helpers.mjs";

const hasSetsid = spawnSync("setsid", ["--version"]).status === 0;

/** A wrapper script that runs koma-sim in a new session, with the wrapper's own stdio. */
function wrapper(t) {
  const dir = mkdtempSync(join(tmpdir(), "koma-wrapper-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "koma-remote");
  writeFileSync(path, `#!/bin/sh\n# Stands in for: exec docker exec -i CONTAINER koma "$@"\nexec setsid -w ${JSON.stringify(SIM)} "$@"\n`);
  chmodSync(path, 0o755);
  return path;
}

/** Process group and session of a running process, from /proc. */
function groupAndSession(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { pgrp: Number(fields[2]), session: Number(fields[3]) };
}

/** A client of koma-sim behind the wrapper; resolves with it and koma-sim's own pid (from hello). */
async function remoteClient(t, faults) {
  const client = new Client({
    executable: wrapper(t),
    env: { KOMA_SIM_HOME: tempHome(), KOMA_SIM_DELAY_MS: "0", KOMA_SIM_FAULT: faults },
  });
  t.after(() => client.close());
  const hello = await client.probe();
  const simPid = hello.diagnostics[0].pid;
  // koma-sim is not the client's child, and the client's group signals cannot reach it.
  assert.notEqual(simPid, client.pid);
  assert.deepEqual(groupAndSession(simPid), { pgrp: simPid, session: simPid }, "koma-sim leads a session of its own");
  assert.equal(groupAndSession(client.pid).pgrp, client.pid, "the wrapper leads the group the client signals");
  return { client, simPid };
}

test("through a wrapper, close() ends koma through the end of its stdin", { skip: !hasSetsid && "no setsid here" }, async (t) => {
  // ignore_detach: close()'s detach goes unanswered, so what ends koma-sim is stdin's end.
  const { client, simPid } = await remoteClient(t, "ignore_detach");
  await client.create({});
  const result = await client.run({ text: "read notes.txt" }, { onApproval: "deny" });
  assert.equal(result.status, "completed", "the protocol goes through the wrapper unchanged");

  await client.close();
  assert.equal(alive(simPid), false, "koma-sim is gone when close() resolves");
  assert.match(client.stderr, /koma-sim: ignoring detach \(ignore_detach\)/);
  assert.match(client.stderr, /koma-sim: stdin closed without detach; saving and exiting/);
});

test("through a wrapper, a koma that ignores the end of stdin outlives close(): the signals reach only the wrapper", {
  skip: !hasSetsid && "no setsid here",
}, async (t) => {
  const { client, simPid } = await remoteClient(t, "ignore_detach,ignore_eof");
  t.after(() => {
    if (groupAlive(simPid)) process.kill(simPid, "SIGKILL");
  });
  const wrapperPid = client.pid;

  // close(): detach (ignored), stdin's end (ignored), SIGTERM and SIGKILL to
  // the wrapper and its group. The wrapper dies; koma-sim is never signalled.
  await client.close();
  assert.equal(alive(wrapperPid), false, "the wrapper was stopped and reaped");
  assert.equal(groupAlive(simPid), true, "koma-sim still runs after close() resolved");
  assert.match(client.stderr, /koma-sim: stdin closed; staying alive \(ignore_eof\)/, "the end of stdin reached it");

  // Clean up by hand, as an operator would on the remote side.
  process.kill(simPid, "SIGKILL");
  for (let i = 0; groupAlive(simPid); i++) {
    assert.ok(i < 10000, "koma-sim is gone after SIGKILL");
    await new Promise((resolve) => setImmediate(resolve));
  }
});
