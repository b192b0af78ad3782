// The floor of the round-trip workloads: state() round trips made by the
// cheapest JavaScript client we could write, in a fresh process:
//   node bench/rt-floor.mjs seq N              N round trips, one at a time
//   node bench/rt-floor.mjs inflight N DEPTH   N round trips, DEPTH in flight
// Prints one JSON line: {ok, seconds, units, rate, cpuSelf, cpuChild, detail}.
//
// The client is one thread that blocks in read(2) and write(2) on koma-sim's
// pipes (two FIFOs opened in blocking mode): no event loop, no thread hop, no
// promise, no check but the id, one JSON.parse per answer. It wakes exactly
// when koma-sim's answer is in the pipe. A client of the protocol has an event
// loop to serve and a caller to answer, so it does at least this much work per
// round trip: for one round trip at a time, no client can beat this on the
// JavaScript thread. With many in flight, a client with a second thread can
// (it reads while the first parses), so there the benchmark also shows the
// peer alone: koma-sim answering requests written all at once.
//
// It runs in its own process because a blocked read cannot be timed out from
// the same thread: the benchmark kills this process if koma-sim stops answering.
import { spawn, execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SIM, childCpu, simEnv } from "./common.mjs";

/**
 * koma-sim on two FIFOs. Each end this process keeps is in blocking mode, and
 * koma-sim holds the only other end of each: a read sees the end of stdout when
 * koma-sim exits, and a write fails when it has.
 */
function startSim() {
  const dir = mkdtempSync(join(tmpdir(), "koma-rt-floor-"));
  const inPath = join(dir, "stdin");
  const outPath = join(dir, "stdout");
  try {
    execFileSync("mkfifo", [inPath, outPath]);
    // Opening one end of a FIFO blocks until the other end is open, unless
    // the FIFO is open read-write somewhere: a read-write descriptor held
    // for the moment of opening both ends, then closed.
    const holdIn = openSync(inPath, "r+");
    const holdOut = openSync(outPath, "r+");
    const toSim = openSync(inPath, "w");
    const simStdin = openSync(inPath, "r");
    const fromSim = openSync(outPath, "r");
    const simStdout = openSync(outPath, "w");
    closeSync(holdIn);
    closeSync(holdOut);
    const child = spawn(SIM, ["sdk", "serve"], { env: { ...process.env, ...simEnv() }, stdio: [simStdin, simStdout, "ignore"] });
    closeSync(simStdin);
    closeSync(simStdout);
    return { child, toSim, fromSim };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Lines of one blocking descriptor. */
function lineReader(fd) {
  let buf = Buffer.allocUnsafe(64 * 1024);
  let start = 0;
  let end = 0;
  const fill = () => {
    if (start > 0) {
      buf.copy(buf, 0, start, end);
      end -= start;
      start = 0;
    }
    if (end === buf.length) {
      const bigger = Buffer.allocUnsafe(buf.length * 2);
      buf.copy(bigger, 0, 0, end);
      buf = bigger;
    }
    const n = readSync(fd, buf, end, buf.length - end);
    if (n === 0) throw new Error("koma-sim closed stdout");
    end += n;
  };
  /** Every complete line there is, read as far as it takes to have one. */
  return () => {
    const out = [];
    for (;;) {
      let nl;
      while ((nl = buf.indexOf(10, start)) !== -1 && nl < end) {
        out.push(buf.toString("utf8", start, nl));
        start = nl + 1;
      }
      if (out.length) return out;
      fill();
    }
  };
}

const request = (id) => `{"id":"${id}","method":"state","params":{}}\n`;

function run(mode, n, depth) {
  const { child, toSim, fromSim } = startSim();
  const lines = lineReader(fromSim);
  // koma-sim writes nothing unasked after hello, so one request has one line to answer it.
  const line = () => {
    const ls = lines();
    if (ls.length !== 1) throw new Error(`${ls.length} lines where one was due`);
    return ls[0];
  };
  const hello = JSON.parse(line());
  if (hello.type !== "hello" || hello.protocol !== 1) throw new Error("no hello");
  let id = 0;
  let idle = 0;
  let wrongId = 0;
  // One round trip before timing, as the benchmark's clients have.
  writeSync(toSim, request(++id));
  JSON.parse(line());
  const answer = (line) => {
    const r = JSON.parse(line);
    if (r.result?.status === "idle") idle++;
    return r.id;
  };
  const cpu0 = process.cpuUsage();
  const ch0 = childCpu(child.pid);
  const t0 = performance.now();
  if (mode === "seq") {
    for (let i = 0; i < n; i++) {
      const want = String(++id);
      writeSync(toSim, request(want));
      if (answer(line()) !== want) wrongId++;
    }
  } else {
    // Answers come in order from koma-sim, but a client matches by id: the
    // set of ids in flight stands for the pending table.
    const inFlight = new Set();
    let out = "";
    let sent = 0;
    let done = 0;
    for (; sent < Math.min(depth, n); sent++) {
      inFlight.add(String(++id));
      out += request(id);
    }
    writeSync(toSim, out);
    while (done < n) {
      out = "";
      for (const l of lines()) {
        if (!inFlight.delete(answer(l))) wrongId++;
        done++;
        if (sent < n) {
          inFlight.add(String(++id));
          out += request(id);
          sent++;
        }
      }
      if (out) writeSync(toSim, out);
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const ch1 = childCpu(child.pid);
  writeSync(toSim, `{"id":"${id + 1}","method":"detach","params":{}}\n`);
  line();
  closeSync(toSim);
  closeSync(fromSim);
  const ok = idle === n && wrongId === 0;
  return {
    child,
    ok,
    seconds,
    units: n,
    rate: n / seconds,
    cpuSelf: (cpu.user + cpu.system) / 1e6,
    cpuChild: ch0 !== null && ch1 !== null ? ch1 - ch0 : NaN,
    detail: ok ? "" : `${idle}/${n} idle, ${wrongId} answers with an id not in flight`,
  };
}

const [mode, nArg, depthArg] = process.argv.slice(2);
const n = Number(nArg);
const depth = Number(depthArg ?? 1);
if (!["seq", "inflight"].includes(mode) || !Number.isSafeInteger(n) || n < 1 || !Number.isSafeInteger(depth) || depth < 1) {
  console.error("usage: node bench/rt-floor.mjs seq N | inflight N DEPTH");
  process.exit(2);
}
let r;
try {
  const { child, ...result } = run(mode, n, depth);
  r = result;
  // Detached: koma-sim exits by itself; wait for it, so that it is reaped here.
  if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once("exit", resolve));
} catch (e) {
  r = { ok: false, detail: e.message };
}
console.log(JSON.stringify(r));
process.exit(r.ok ? 0 : 1);
