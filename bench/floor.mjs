// The floor of an event workload: the same events, already in memory as the
// bytes koma-sim sends, turned into the iterator's `{type: "event", seq, name,
// data}` objects by the cheapest JavaScript we could write. No child, no pipe,
// no checks, no iterator, one thread: what no client reading these bytes into
// these objects on the JavaScript thread can beat.
//
// The bytes are captured once from koma-sim itself (not timed) and held as one
// Buffer per window (the events one bench_events request emits, the batch a
// client holds at most), then each way below turns every window into an array
// of objects, which a consumer then reads as the benchmark's loop does (text
// length, sequence): the objects escape, so none of the work is optimised away.
// Every way is timed; the floor is the fastest.
import { spawn } from "node:child_process";
import { SIM, benchEventsInput, simEnv } from "./common.mjs";

const EVENT_PREFIX = Buffer.from('{"type":"event"');

/**
 * Capture the events of `windows` requests of `count` events (of `bytes`
 * text each) from koma-sim: one Buffer per window, event lines only, each
 * ending with `\n`.
 */
export function captureEvents({ count, bytes, total }) {
  const { windows, input } = benchEventsInput({ count, bytes, total });
  return new Promise((resolve, reject) => {
    const child = spawn(SIM, ["sdk", "serve"], { env: { ...process.env, ...simEnv() }, stdio: ["pipe", "pipe", "ignore"] });
    const chunks = [];
    child.stdout.on("data", (c) => chunks.push(c));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`koma-sim exited ${code} while capturing events`));
      const all = Buffer.concat(chunks);
      const out = [];
      let cur = -1; // start of the current run of event lines
      let inRun = 0;
      let start = 0;
      let events = 0;
      while (start < all.length) {
        const nl = all.indexOf(10, start);
        if (nl === -1) break;
        const isEvent = all.compare(EVENT_PREFIX, 0, EVENT_PREFIX.length, start, start + EVENT_PREFIX.length) === 0;
        if (isEvent) {
          if (cur === -1) cur = start;
          inRun++;
          events++;
          if (inRun === count) {
            out.push(Buffer.from(all.subarray(cur, nl + 1))); // a copy: its own memory, as a read's
            cur = -1;
            inRun = 0;
          }
        } else if (cur !== -1) {
          reject(new Error("a window's events are not contiguous in koma-sim's output"));
          return;
        }
        start = nl + 1;
      }
      if (events !== windows * count || out.length !== windows) {
        return reject(new Error(`captured ${events} events in ${out.length} windows, expected ${windows * count} in ${windows}`));
      }
      resolve({ windows: out, events, bytes: out.reduce((s, b) => s + b.length, 0) });
    });
    child.stdin.end(input);
  });
}

/** Reads a window's objects as the benchmark's for-await loop does. */
function consume(objs, acc) {
  for (let i = 0; i < objs.length; i++) {
    const e = objs[i];
    acc.textChars += e.data.text.length;
    if (acc.lastSeq !== -1 && e.seq !== acc.lastSeq + 1) acc.seqErrors++;
    acc.lastSeq = e.seq;
    acc.events++;
  }
}

/** Each way turns one window (a Buffer of `\n`-terminated event lines) into an array of event objects. */
export const WAYS = {
  /** One toString and one JSON.parse per line, as a line reader does. */
  "per line": (w) => {
    const out = [];
    const n = w.length;
    let s = 0;
    while (s < n) {
      const nl = w.indexOf(10, s);
      const f = JSON.parse(w.toString("utf8", s, nl));
      out.push({ type: "event", seq: f.seq, name: f.name, data: f.data });
      s = nl + 1;
    }
    return out;
  },
  /** The window as one string, its newlines made commas, one JSON.parse of the array. */
  "joined string": (w) => {
    const text = w.toString("utf8");
    const frames = JSON.parse(`[${text.slice(0, -1).replaceAll("\n", ",")}]`);
    const out = new Array(frames.length);
    for (let i = 0; i < frames.length; i++) {
      const f = frames[i];
      out[i] = { type: "event", seq: f.seq, name: f.name, data: f.data };
    }
    return out;
  },
  /** The same array made in bytes (newlines to commas in a copy), one decode, one JSON.parse. */
  "joined bytes": (w) => {
    const n = w.length;
    const b = Buffer.allocUnsafe(n + 1);
    b[0] = 91; // [
    w.copy(b, 1);
    let nl = w.indexOf(10);
    while (nl !== -1) {
      b[nl + 1] = 44; // ,
      nl = w.indexOf(10, nl + 1);
    }
    b[n] = 93; // ] over the last comma
    const frames = JSON.parse(b.toString("utf8"));
    const out = new Array(frames.length);
    for (let i = 0; i < frames.length; i++) {
      const f = frames[i];
      out[i] = { type: "event", seq: f.seq, name: f.name, data: f.data };
    }
    return out;
  },
};

/** One timed pass of one way over all windows. */
export function runWay(name, capture) {
  const way = WAYS[name];
  const acc = { events: 0, textChars: 0, lastSeq: -1, seqErrors: 0 };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (const w of capture.windows) consume(way(w), acc);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { way: name, seconds, events: acc.events, rate: acc.events / seconds, cpuSelf: (cpu.user + cpu.system) / 1e6, acc };
}

/**
 * Every way once (in a rotating order); `textBytes` is what the events' texts
 * must add up to. Returns the runs, and throws if a way produced other events.
 */
export function runFloor(capture, textBytes, round = 0) {
  const names = Object.keys(WAYS);
  const runs = [];
  for (let i = 0; i < names.length; i++) {
    const r = runWay(names[(i + round) % names.length], capture);
    if (r.events !== capture.events || r.acc.textChars !== textBytes || r.acc.seqErrors !== 0) {
      throw new Error(`floor way "${r.way}": ${r.events} events, ${r.acc.textChars} text characters, ${r.acc.seqErrors} sequence errors`);
    }
    runs.push(r);
  }
  return runs;
}
