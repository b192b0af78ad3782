// The scale workload (many agents in one process): N clients at once against
// koma-sim's bench mode. Every run is a fresh Node process (bench/scale-one.mjs
// runs scaleRun below), so that no run inherits another's heap, threads or
// descriptors, and the sides alternate: every client of one side is closed,
// and its process gone, before the other side starts. One run measures:
//   - start all: from the first `new Client` to every `probe()` resolved
//     (all N created, then all probed at once);
//   - threads added: this process's threads (/proc/self/task) with all N
//     started, minus at its start, before the SDK was loaded (so the addon's
//     runtime threads count; the pure-JS client loads nothing);
//   - RSS per idle client: (this process's RSS with all N started and idle,
//     after a gc, minus the RSS before, after a gc) / N. koma-sim's RSS is
//     not in it (another process; the same sim for every side);
//   - requests per second across all clients: every client makes `perClient`
//     state() calls, `depth` at a time, all clients at once; answered / wall
//     time; and the CPU of that phase per request, this process's and all the
//     koma-sims' (on a saturated machine the rate goes with their sum);
//   - after close() of all N (at once): the child processes of this process
//     (zombies included) and its open descriptors, against the same counts
//     taken before the run. A child or a descriptor over the baseline is a
//     failure of the run.
// "Before" is after one warm-up client (created, probed, closed): what a
// process sets up once for its first child (libuv's child-signal pipe, the
// addon's runtime) is in the baseline of RSS, descriptors and threads left.
import { childProcesses, fdCount } from "../scripts/lib/proc.mjs";
import {
  SIDE_NAME,
  gc,
  makeClient,
  procStatus,
  processCpuFine,
  runForResult,
  stateCalls,
  systemLimits,
  threadCount,
  threadNames,
  threadNamesDelta,
  withTimeout,
} from "./common.mjs";

const rss = () => process.memoryUsage.rss();

/**
 * One run of one side with N clients, in a process of its own. `cold`: the
 * threads of this process before the SDK was loaded. Never throws: a broken
 * run comes back with ok false and a detail.
 */
export async function scaleRun(side, n, { perClient, depth, cold }) {
  const r = { side, n, ok: true, detail: [] };
  const problem = (what) => {
    r.ok = false;
    r.detail.push(what);
  };
  const clients = [];
  let before = null;
  try {
    // ---- warm-up: one client, then the baseline
    const w = makeClient(side);
    try {
      await withTimeout(
        w.probe().then(() => w.state()),
        20_000,
        "the warm-up client",
      );
    } finally {
      await w.close();
    }
    gc();
    before = { threads: threadCount(), names: threadNames(), fds: fdCount(), children: childProcesses().length, rss: rss() };
    r.before = { threads: before.threads, fds: before.fds, children: before.children, rss: before.rss, coldThreads: cold.threads };
    // ---- start all
    const t0 = performance.now();
    for (let i = 0; i < n; i++) clients.push(makeClient(side));
    const hellos = await withTimeout(Promise.all(clients.map((c) => c.probe())), 20_000 + n * 150, `starting ${n} clients`);
    r.startMs = performance.now() - t0;
    if (!hellos.every((h) => h && h.protocol === 1)) problem("a probe() resolved with something other than a hello");
    const names = threadNames();
    r.threadsAdded = threadCount() - cold.threads;
    r.threadsWhich = threadNamesDelta(cold.names, names);
    r.threadsOverWarm = threadCount() - before.threads;
    r.fdsOpen = fdCount() - before.fds;
    // ---- RSS of N idle clients
    gc();
    r.rssPerClient = (rss() - before.rss) / n;
    const pid = clients[0].pid;
    r.simRss = pid ? procStatus(pid, "VmRSS") : null;
    r.simThreads = pid ? procStatus(pid, "Threads") : null;
    // ---- requests across all clients
    let answered = 0;
    let wrong = 0;
    const one = async (c) => {
      const idle = await stateCalls(c, perClient, depth);
      answered += idle;
      wrong += perClient - idle;
    };
    const pids = clients.map((c) => c.pid);
    const sims = () => pids.reduce((sum, p) => sum + processCpuFine(p), 0);
    // This process's reading is the innermost, so reading the sims' is not counted in it.
    const c1 = { sims: sims(), self: processCpuFine(process.pid) };
    const t1 = performance.now();
    await withTimeout(Promise.all(clients.map(one)), 30_000 + n * 100, `${n * perClient} requests`);
    r.reqSeconds = (performance.now() - t1) / 1000;
    const c2 = { self: processCpuFine(process.pid), sims: sims() };
    r.requests = answered;
    r.reqRate = answered / r.reqSeconds;
    r.reqCpuSelf = (c2.self - c1.self) / answered;
    r.reqCpuSims = (c2.sims - c1.sims) / answered;
    if (answered !== n * perClient || wrong !== 0) problem(`${answered} of ${n * perClient} state() answered idle, ${wrong} otherwise`);
  } catch (e) {
    problem(`${e.code ?? "error"}: ${e.message}`);
  } finally {
    if (before) await closeAndCount(r, clients, before, problem);
  }
  r.detail = r.detail.join("; ");
  return r;
}

async function closeAndCount(r, clients, before, problem) {
  const n = clients.length;
  {
    // ---- close all, then what is left
    const t2 = performance.now();
    try {
      await withTimeout(Promise.all(clients.map((c) => c.close())), 30_000 + n * 50, `closing ${n} clients`);
    } catch (e) {
      problem(`${e.code ?? "error"}: ${e.message}`);
    }
    r.closeMs = performance.now() - t2;
    const kids = childProcesses();
    r.childrenLeft = kids.length;
    r.zombiesLeft = kids.filter((k) => k.state === "Z").length;
    r.fdsOver = fdCount() - before.fds;
    r.threadsOver = threadCount() - before.threads;
    if (r.childrenLeft > before.children || r.fdsOver > 0) {
      // A failure already. Say whether what is left goes later (late) or
      // stays (leaked): a gc, then a look every 100 ms for up to 3 s (there
      // is nothing to await for a leak; this only describes the failure).
      gc();
      let waited = 0;
      while (waited < 3000 && (childProcesses().length > before.children || fdCount() > before.fds)) {
        await new Promise((res) => setTimeout(res, 100));
        waited += 100;
      }
      const kids = childProcesses().length - before.children;
      const fds = fdCount() - before.fds;
      const later =
        kids <= 0 && fds <= 0
          ? `all gone ${waited} ms later (after a gc)`
          : `${waited} ms later (after a gc): ${kids} children, ${fds} descriptors still there`;
      if (r.childrenLeft > before.children) {
        problem(`${r.childrenLeft} child process(es) left after close() (${r.zombiesLeft} zombie(s); ${before.children} before)`);
      }
      if (r.fdsOver > 0) problem(`${r.fdsOver} descriptor(s) over the baseline after close()`);
      problem(later);
    }
  }
}

export function fmtScaleRun(r) {
  const kib = (b) => `${(b / 1024).toFixed(1)} KiB`;
  const parts = [];
  if (Number.isFinite(r.startMs)) parts.push(`start ${r.startMs.toFixed(0)} ms`);
  if (Number.isFinite(r.threadsAdded))
    parts.push(`threads +${r.threadsAdded}${r.threadsWhich ? ` (${r.threadsWhich})` : ""}, +${r.threadsOverWarm} over the warm-up`);
  if (Number.isFinite(r.fdsOpen)) parts.push(`fds +${r.fdsOpen}`);
  if (Number.isFinite(r.rssPerClient))
    parts.push(
      `RSS ${kib(r.rssPerClient)}/idle client${r.simRss ? ` (not counted: koma-sim ${(r.simRss / 1048576).toFixed(1)} MiB, ${r.simThreads} threads each)` : ""}`,
    );
  if (Number.isFinite(r.reqRate))
    parts.push(
      `${(r.reqRate / 1000).toFixed(1)} k req/s (${r.requests} in ${r.reqSeconds.toFixed(2)} s; CPU per request ${(r.reqCpuSelf * 1e6).toFixed(1)} µs here, ${(r.reqCpuSims * 1e6).toFixed(1)} µs koma-sims)`,
    );
  if (!Number.isFinite(r.closeMs)) return `${SIDE_NAME[r.side].padEnd(7)} N=${r.n}: ${parts.join(", ")}`;
  parts.push(
    `close ${r.closeMs.toFixed(0)} ms: ${r.childrenLeft} children left, fds ${r.fdsOver >= 0 ? "+" : ""}${r.fdsOver} and threads ${r.threadsOver >= 0 ? "+" : ""}${r.threadsOver} vs before`,
  );
  return `${SIDE_NAME[r.side].padEnd(7)} N=${r.n}: ${parts.join(", ")}`;
}

/**
 * How many clients this machine allows at once, from the per-client cost
 * measured in the warm-up (`perClient`: {fds, threads} of this process, and
 * the sim's threads and RSS). Returns {max, why[]} and the limits.
 */
export function scaleCapacity(perClient) {
  const lim = systemLimits();
  const fdsNow = fdCount();
  const caps = [];
  // Descriptors: Node raises the soft limit to the hard one at startup, so the soft one is what there is.
  // A run's process opens `baseFds` before its clients, and every spawn holds
  // a few more for a moment (the pipes' other ends, the exec-status pipe): a
  // quarter more per client, and 128 spare.
  const fdPer = Math.max(3, perClient.fds);
  const base = Math.max(fdsNow, perClient.baseFds ?? 0);
  const fdMax = Math.floor((lim.nofile.soft - base - 128) / (fdPer * 1.25));
  caps.push({
    max: fdMax,
    why: `open files: soft limit ${lim.nofile.soft}, hard ${lim.nofile.hard}, ${base} open before the clients, ${fdPer} per client (and a quarter more while they start)`,
  });
  // Tasks: every koma-sim's threads plus the threads the client side adds, against the whole system's room.
  const taskPer = Math.max(1, perClient.simThreads) + Math.max(0, perClient.threads);
  const room = Math.min(lim.pidMax, lim.threadsMax, lim.nproc.soft) - lim.tasksNow - 256;
  caps.push({
    max: Math.floor(room / taskPer),
    why: `tasks: pid_max ${lim.pidMax}, threads-max ${lim.threadsMax}, max user processes ${lim.nproc.soft}, ${lim.tasksNow} tasks running now, ${taskPer} per client (koma-sim's threads and the client's)`,
  });
  // Memory: every koma-sim (its RSS, shared pages counted as its own), plus
  // 512 KiB for this process's share (a few times what a client measures).
  const memPer = (perClient.simRss || 4 << 20) + (512 << 10);
  caps.push({
    max: Math.floor((lim.memAvailable * 0.7) / (memPer * 1.5)),
    why: `memory: ${(lim.memAvailable / 1073741824).toFixed(1)} GiB available, about ${(memPer / 1048576).toFixed(1)} MiB per client and its koma-sim`,
  });
  const valid = caps.filter((c) => Number.isFinite(c.max));
  const binding = valid.reduce((a, b) => (b.max < a.max ? b : a), { max: Infinity, why: "no limit known" });
  return { max: binding.max, binding: binding.why, all: caps, limits: lim };
}

/** One run in a fresh Node process (bench/scale-one.mjs); resolves with its result, never rejects. */
export async function scaleInChild(side, n, { perClient, depth }, timeoutMs) {
  const { result, code, ended } = await runForResult("scale-one.mjs", [side, n, perClient, depth], timeoutMs);
  const r = result ?? { side, n, ok: false, detail: ended };
  if (r.ok && code !== 0) {
    r.ok = false;
    r.detail = `${ended}; ${r.detail}`;
  }
  return r;
}
