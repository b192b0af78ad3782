// @ts-check
// The folder of a `@koma/sdk/testing` fake (its scenario, session home,
// record and progress), made in the temporary directory, and the sweep of
// the folders that a process left when it was killed before it could remove
// them. koma_sdk.testing names and sweeps its folders the same way, so
// either package removes the other's.
"use strict";

const { mkdtempSync, readdirSync, readlinkSync, rmSync } = require("node:fs");
const { tmpdir } = require("node:os");
const { join } = require("node:path");

/**
 * A fake's folder is `koma-fake-<pid namespace>-<pid>-XXXXXX` in the
 * temporary directory: its owner, so that a folder whose owner is gone (a
 * test process killed without a chance to clean up) is removed by the next
 * fake made on the machine, in either package. The pid namespace (Linux's;
 * 0 elsewhere) keeps a process from taking for gone the owner of a folder
 * in a temporary directory shared with another namespace (a container).
 */
const FOLDER = "koma-fake-";

/** This process, as a fake's folder names its owner: `<pid namespace>-<pid>`. */
function owner() {
  return `${pidNamespace()}-${process.pid}`;
}

/** The inode of this process's pid namespace, or 0 where there is none to read. */
function pidNamespace() {
  try {
    return /^pid:\[(\d+)\]$/.exec(readlinkSync("/proc/self/ns/pid"))?.[1] ?? "0";
  } catch {
    return "0";
  }
}

/** Remove the folders of fakes whose owner has exited (of this pid namespace). */
function sweep() {
  const ns = pidNamespace();
  let names;
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^koma-fake-(\d+)-(\d+)-/.exec(name);
    if (!m || m[1] !== ns || Number(m[2]) === process.pid || running(Number(m[2]))) continue;
    rmSync(join(tmpdir(), name), { recursive: true, force: true });
  }
}

/** @param {number} pid whether a process has this pid (one of another user's counts) */
function running(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return /** @type {NodeJS.ErrnoException} */ (e).code !== "ESRCH";
  }
}

/** A new folder for a fake of this process, once the folders of gone owners are swept. */
function makeFolder() {
  sweep();
  return mkdtempSync(join(tmpdir(), `${FOLDER}${owner()}-`));
}

module.exports = { makeFolder };
