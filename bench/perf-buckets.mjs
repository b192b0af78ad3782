// Buckets a `perf script` dump by thread and by what the stack is doing.
//   perf script -i koma.perf | node "$repo/bench/perf-buckets.mjs" --hz 999 --per 400000 [--other]
// bench/profile-one.mjs says how to record koma.perf. The frequency given to --hz
// must be the one recorded with; --call-graph dwarf is needed for the addon's
// frames (the release build has no frame pointers).
// --per N: also print microseconds per unit (N units in the whole recording, e.g. events).
// Each sample goes to the first rule (in order) that matches any frame of its stack.
import { createInterface } from "node:readline";

const argv = process.argv.slice(2);
const opt = (k, d) => (argv.includes(k) ? Number(argv[argv.indexOf(k) + 1]) : d);
const PER = opt("--per", 0);
const HZ = opt("--hz", 1999);

const RULES = [
  ["GC", /Heap::CollectGarbage|ScavengerCollector|MinorGCJob|MarkCompact|Heap::Scavenge|ConcurrentMarking|ScavengeJob|MinorMarkSweep/],
  ["JSON.parse", /Builtin_JsonParse|JsonParser/],
  ["JSON.stringify", /Builtin_JsonStringify|JsonStringifier/],
  ["addon: iterator result {value, done}", /Js::iter_result/],
  ["addon: promise create/settle (napi)", /napi_create_promise|napi_resolve_deferred|napi_reject_deferred/],
  ["addon: V8 string from Rust bytes", /Js::string|napi_create_string/],
  ["addon: batch assembly (take_events)", /Connection::take_events|EventBuffer::take/],
  ["addon: per-event lock (event_taken)", /Connection::event_taken/],
  ["addon: wake handling (drain/settle)", /Ctx::settle|Connection::drain|Ctx::resolve_results|Ctx::update_hold/],
  ["addon: request path (send/track)", /Client::send|Ctx::track|Connection::request|Ctx::stringify|params::check/],
  [
    "addon: napi call overhead",
    /napi_unwrap|check_object_type_tag|native_borrow|NativeBorrow|FunctionCallbackWrapper|_c_callback|EventStream::next|Client::state|Client::request/,
  ],
  ["addon: other napi", /napi_/],
  ["io: route/classify (serde)", /frame::classify|connection::route|serde_json/],
  ["io: apply (lock, seq, push)", /Connection::apply/],
  ["io: line splitting", /LineSplitter|memchr/],
  ["io: tsfn wake", /napi_call_threadsafe_function|JsWaker/],
  ["io: writer", /write_stdin/],
  ["addon: other Rust", /koma_sdk|koma_transport|tokio::/],
  ["js client: UTF-8 check", /isUtf8|simdutf.*validate/],
  ["js client: UTF-8 decode", /StringBytes|Utf8Decoder|NewFromUtf8|utf8Slice|Utf8Value|String::WriteUtf8/],
  ["js client: stream machinery (Readable/emit)", /node:internal\/streams|onStreamRead|node:events/],
  ["js client: write path", /Writable|writev|WriteWrap|LibuvStreamWrap::DoWrite|uv_try_write/],
  ["JS: promises / microtasks", /RunMicrotasks|PromiseFulfillReactionJob|AsyncFunctionAwait|PerformPromiseThen/],
  ["JS code (benchmark, client)", /^JS:|Builtins_|\[JIT\]/],
  ["syscalls: read", /sys_read|ksys_read|__x64_sys_read|pipe_read/],
  ["syscalls: write", /sys_write|ksys_write|pipe_write|writev/],
  ["event loop wait (epoll)", /epoll_wait|do_epoll_wait|uv__io_poll/],
  ["futex / scheduling", /futex|schedule|finish_task_switch/],
];

const SHOW_OTHER = argv.includes("--other");
const otherLeaves = new Map(); // thread -> Map(leaf frame -> count)
const samples = new Map(); // thread -> Map(bucket -> count)
let thread = null;
let frames = [];
const flush = () => {
  if (thread === null) return;
  let bucket = "other";
  for (const [name, re] of RULES) {
    if (frames.some((f) => re.test(f))) {
      bucket = name;
      break;
    }
  }
  if (bucket === "other" && SHOW_OTHER) {
    let o = otherLeaves.get(thread);
    if (!o) otherLeaves.set(thread, (o = new Map()));
    const leaf = frames
      .slice(0, 3)
      .map((f) => f.replace(/\+0x[0-9a-f]+/, "").slice(0, 60))
      .join(" < ");
    o.set(leaf, (o.get(leaf) ?? 0) + 1);
  }
  let t = samples.get(thread);
  if (!t) samples.set(thread, (t = new Map()));
  t.set(bucket, (t.get(bucket) ?? 0) + 1);
  thread = null;
  frames = [];
};

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (line === "") {
    flush();
    continue;
  }
  if (!line.startsWith("\t") && !line.startsWith(" ")) {
    flush();
    // "comm  pid/tid  time: ..." or "comm tid ..."
    thread = line.trim().split(/\s+/)[0];
    continue;
  }
  const m = line.trim().match(/^[0-9a-f]+\s+(.*?)(?:\s+\((.*)\))?$/);
  if (m) frames.push(m[1] + (m[2] ? ` ${m[2]}` : ""));
}
flush();

const all = [...samples.values()].reduce((s, t) => s + [...t.values()].reduce((a, b) => a + b, 0), 0);
for (const [th, t] of [...samples.entries()].sort((a, b) => sum(b[1]) - sum(a[1]))) {
  const n = sum(t);
  if (n / all < 0.01) continue;
  console.log(`\n${th}: ${n} samples (${((100 * n) / all).toFixed(1)}% of all), ${(n / HZ).toFixed(2)} s`);
  for (const [b, c] of [...t.entries()].sort((x, y) => y[1] - x[1])) {
    if (c / n < 0.005) continue;
    const per = PER ? `  ${((c / HZ / PER) * 1e6).toFixed(3)} µs/unit` : "";
    console.log(`  ${((100 * c) / n).toFixed(1).padStart(5)}%  ${(c / HZ).toFixed(3)} s  ${b}${per}`);
  }
  const o = otherLeaves.get(th);
  if (o) {
    console.log("  top stacks in other:");
    for (const [leaf, c] of [...o.entries()].sort((x, y) => y[1] - x[1]).slice(0, 12)) console.log(`    ${c}  ${leaf}`);
  }
}

function sum(t) {
  return [...t.values()].reduce((a, b) => a + b, 0);
}
