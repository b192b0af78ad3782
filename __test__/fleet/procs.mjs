// The processes this test started, and theirs, read from /proc: never
// machine-wide (other programs run koma-sim at the same time).
import { readdirSync, readFileSync } from "node:fs";

/** @returns {{pid: number, ppid: number, state: string, comm: string} | null} */
export function proc(/** @type {number} */ pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { pid, ppid: Number(ppid), state, comm: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) };
  } catch {
    return null;
  }
}

/** Every process under `root` (this process by default), zombies included. */
export function descendants(root = process.pid) {
  /** @type {Map<number, ReturnType<typeof proc>[]>} */
  const children = new Map();
  for (const name of readdirSync("/proc")) {
    const p = /^\d+$/.test(name) ? proc(Number(name)) : null;
    if (p) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  }
  const out = [];
  const todo = [root];
  while (todo.length) {
    for (const child of children.get(/** @type {number} */ (todo.pop())) ?? []) {
      out.push(child);
      todo.push(/** @type {any} */ (child).pid);
    }
  }
  return /** @type {NonNullable<ReturnType<typeof proc>>[]} */ (out);
}

/** The koma-sims under this process that still run. */
export function komas() {
  return descendants()
    .filter((p) => p.comm === "koma-sim" && p.state !== "Z")
    .map((p) => p.pid);
}

/** Whether `pid` runs (a zombie does not). */
export function running(/** @type {number} */ pid) {
  const p = proc(pid);
  return p !== null && p.state !== "Z";
}

/**
 * Waits up to `within` ms for the processes to stop running (a killed
 * worker's koma-sim is handed to init, out of this test's tree, and dies of
 * its parent-death signal on the kernel's time); the pids still running then.
 * Node cannot watch a process that is not its child, so this looks every 20 ms.
 */
export async function gone(/** @type {number[]} */ pids, within = 30_000) {
  const deadline = Date.now() + within;
  for (;;) {
    const left = pids.filter(running);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
