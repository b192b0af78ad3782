// What Linux's /proc says about this process, for the checks of the soak
// (scripts/soak.mjs) and the benchmark (bench/): its open descriptors, its
// child processes, and its peak RSS.
import { readFileSync, readdirSync, writeFileSync } from "node:fs";

/** Open descriptors of this process (the one that lists them included, every time alike). */
export const fdCount = () => readdirSync("/proc/self/fd").length;

/** The processes whose parent is this one (zombies included: a zombie is a child not yet reaped), from /proc/<pid>/stat. */
export function childProcesses() {
  const me = process.pid;
  const out = [];
  for (const d of readdirSync("/proc")) {
    const c = d.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    let s;
    try {
      s = readFileSync(`/proc/${d}/stat`, "latin1");
    } catch {
      continue; // gone meanwhile
    }
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    if (Number(f[1]) === me) out.push({ pid: Number(d), state: f[0] });
  }
  return out;
}

/** Peak RSS in bytes since the last reset (VmHWM), or null where /proc has none. */
export function peakRss() {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Reset the peak to the current RSS; false where that is not possible. */
export function resetPeak() {
  try {
    writeFileSync("/proc/self/clear_refs", "5");
    return true;
  } catch {
    return false;
  }
}
