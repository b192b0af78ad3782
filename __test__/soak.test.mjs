// The short slice of `npm run soak`: RSS flat, no process/zombie/fd left, all answered.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { notOnWindows, root } from "./helpers.mjs";

test("soak and churn, short version", {
  timeout: 120000,
  // Under wine /proc/self is the wine process's: its descriptors are wine's cache of Windows handles.
  skip: notOnWindows("counts this process's descriptors and children, and resets its peak RSS, in Linux's /proc"),
}, () => {
  const r = spawnSync(process.execPath, ["--expose-gc", join(root, "scripts", "soak.mjs"), "--short"], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /processes left: 0 \(zombies: 0\)/);
  assert.match(r.stdout, /soak: ok/);
});
