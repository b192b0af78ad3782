// A pure-JavaScript client of the Koma SDK protocol, version 1: the baseline
// the native addon is measured against. It is not the product; it implements
// the same checks as the addon (hello check, frame classification, sequence
// check, pending table of at most 64, event buffer of at most 256 frames and
// 64 MiB with the one overflow report, 40 MiB frame bound, 64 KiB stderr
// tail) for the API subset the benchmark uses: probe(), state(),
// request(method, params), events(), close(), pid, stderr.
//
// It is meant to be a good baseline, not a straw man:
// - stdout is split linearly: Buffer.indexOf(10) from the last newline, no
//   rescans; a line that spans reads is assembled once with Buffer.concat.
// - UTF-8 validity is checked once per read (buffer.isUtf8, simdutf); only
//   lines that span reads, or reads that are not valid as a whole, are
//   checked line by line.
// - one JSON.parse per line, classification on the parsed object.
// - requests written in one tick are coalesced (cork, uncork on nextTick:
//   one writev).
// - the event queue is a head-indexed array; next() settles from it at once.
// - close() resolves once the child is reaped and its pipes are closed (no
//   descriptor left behind).
// bench/readline-client.mjs extends it, reading stdout through readline
// instead (the anchor SDKs' way) with the same protocol logic (`_frame`).
import { spawn } from "node:child_process";
import { isUtf8 } from "node:buffer";

export const MAX_FRAME_BYTES = 41_943_040;
export const MAX_PENDING = 64;
export const MAX_BUFFERED_EVENTS = 256;
export const MAX_BUFFERED_EVENT_BYTES = 67_108_864;
export const STDERR_KEEP_BYTES = 65_536;
const PARTIAL_LIMIT = MAX_FRAME_BYTES + 1; // a `\r` may still be followed by `\n`
const DETACH_GRACE_MS = 2000;
const STOP_GRACE_MS = 1000;

const CATALOG = new Set([
  "state",
  "turn_started",
  "output",
  "tool_call",
  "tool_result",
  "approval_requested",
  "turn_finished",
  "diagnostic",
]);

// Part B's method table: field -> [type, required].
const METHODS = {
  create: { cwd: ["string", false], model: ["string", false] },
  resume: { session: ["string", true], after: ["integer", false] },
  state: {},
  submit: { text: ["string", true] },
  enqueue: { text: ["string", true] },
  interrupt: {},
  interrupt_and_submit: { text: ["string", true] },
  approve: { approval: ["string", true], decision: ["decision", true] },
  configure: { model: ["string", false] },
  detach: {},
};

const OVERFLOW = Symbol("overflow");

function komaError(code, message, extra) {
  const e = new Error(message);
  e.code = code;
  if (extra) Object.assign(e, extra);
  return e;
}

/** At most 200 bytes (or, for a line already decoded, 200 characters) of a line, as a JSON string. */
export function quote(buf, start, end) {
  const n = Math.min(end - start, 200);
  return JSON.stringify(typeof buf === "string" ? buf.slice(start, start + n) : buf.toString("utf8", start, start + n));
}

function checkParams(method, params) {
  if (params === undefined) return "{}";
  if (params === null || typeof params !== "object" || Array.isArray(params)) {
    throw komaError("invalid_params", `${method}: params must be an object`);
  }
  const table = Object.hasOwn(METHODS, method) ? METHODS[method] : null;
  if (table) {
    for (const k of Object.keys(params)) {
      const spec = table[k];
      if (!spec) throw komaError("invalid_params", `${method}: unknown field \`${k}\``);
      const v = params[k];
      if (v === undefined || v === null) continue;
      const ok =
        spec[0] === "string"
          ? typeof v === "string"
          : spec[0] === "integer"
            ? Number.isSafeInteger(v) && v >= 0
            : v === "allow" || v === "deny";
      if (!ok) throw komaError("invalid_params", `${method}: field \`${k}\` has the wrong type`);
    }
    for (const k of Object.keys(table)) {
      if (table[k][1] && (params[k] === undefined || params[k] === null)) {
        throw komaError("invalid_params", `${method}: field \`${k}\` is required`);
      }
    }
  }
  let text;
  try {
    text = JSON.stringify(params);
  } catch {
    throw komaError("invalid_params", `${method}: params cannot be sent as JSON`);
  }
  return text;
}

/** The iterator of `client.events()`; one per client. */
class EventStream {
  constructor(client) {
    this.c = client;
  }
  next() {
    return this.c._next();
  }
  return() {
    return Promise.resolve({ value: undefined, done: true });
  }
  [Symbol.asyncIterator]() {
    return this;
  }
}

export class PureClient {
  constructor({ executable, env, cwd } = {}) {
    if (typeof executable !== "string" || executable === "") {
      throw komaError("invalid_params", "`executable` must be a non-empty string");
    }
    this.executable = executable;
    this.env = env;
    this.cwd = cwd;
    this.child = null;
    this.phase = "new"; // new | starting | ready | failed | ended | closing | closed
    this.failure = null;
    this.hello = null;
    this.capabilities = null;
    this.helloPromise = null;
    this.lifecycle = "fresh"; // fresh | open | detached
    this.nextId = 0;
    this.pending = new Map();
    this.detachId = null;
    // stdout splitting
    this.partial = [];
    this.partialLen = 0;
    this.frames = 0;
    this.lastSeq = -1;
    // events
    this.q = [];
    this.qSizes = [];
    this.qHead = 0;
    this.evFrames = 0;
    this.evBytes = 0;
    this.paused = false;
    this.dropped = 0;
    this.evEnd = null; // null | { error?: Error }
    this.waiters = [];
    this.stream = new EventStream(this);
    // stderr tail
    this.errChunks = [];
    this.errLen = 0;
    // writes
    this.corked = false;
    this._uncork = () => {
      this.corked = false;
      if (this.child) this.child.stdin.uncork();
    };
    this.exited = null;
    this.exitPromise = null;
    this.closePromise = null;
  }

  get pid() {
    return this.child && this.exited === null ? this.child.pid : null;
  }

  get stderr() {
    const b = Buffer.concat(this.errChunks, this.errLen);
    return b.subarray(Math.max(0, b.length - STDERR_KEEP_BYTES)).toString("utf8");
  }

  events() {
    return this.stream;
  }

  probe() {
    if (this.phase === "closing" || this.phase === "closed") return Promise.reject(komaError("closed", "the client was closed"));
    if (this.phase === "failed") return Promise.reject(this.failure);
    if (!this.helloPromise) this._start();
    return this.helloPromise;
  }

  state() {
    return this.request("state");
  }

  request(method, params) {
    if (typeof method !== "string") return Promise.reject(komaError("invalid_params", "request: `method` must be a string"));
    if (this.phase === "ready") return this._send(method, params);
    return this.probe().then(() => this._send(method, params));
  }

  // ---------------------------------------------------------------- child

  _start() {
    this.phase = "starting";
    let resolveHello, rejectHello;
    this.helloPromise = new Promise((res, rej) => {
      resolveHello = res;
      rejectHello = rej;
    });
    this.helloPromise.catch(() => {});
    this._resolveHello = resolveHello;
    this._rejectHello = rejectHello;
    const child = spawn(this.executable, ["sdk", "serve"], {
      stdio: ["pipe", "pipe", "pipe"],
      env: this.env ? { ...process.env, ...this.env } : process.env,
      cwd: this.cwd,
    });
    this.child = child;
    this.exitPromise = new Promise((res) => {
      child.on("exit", (code, signal) => {
        this.exited = { code, signal };
        res(this.exited);
      });
    });
    child.on("error", (e) => {
      if (this.exited === null && child.pid === undefined) {
        this.exited = { code: null, signal: null };
        this._fail(komaError("spawn_failed", `could not start \`${this.executable} sdk serve\`: ${e.message}`));
      }
    });
    if (!child.stdin || !child.stdout || !child.stderr) {
      // No pipes (EMFILE, ENFILE: Node gives up before setting them up): the
      // "error" event above fails the client.
      this.stdioClosed = Promise.resolve();
      return;
    }
    child.stdin.on("error", (e) => {
      // EPIPE: the reader's end of stream usually says more; give it a moment.
      setTimeout(
        () => this._fail(komaError("transport_failure", this._withStderr(`writing to koma's stdin failed: ${e.message}`))),
        500,
      ).unref();
    });
    // Every stdio stream closed (after the exit): close() waits for it, so
    // that no descriptor is left behind when it resolves.
    this.stdioClosed = new Promise((res) => child.on("close", res));
    this._readStdout(child);
    child.stderr.on("data", (chunk) => {
      this.errChunks.push(chunk);
      this.errLen += chunk.length;
      while (this.errChunks.length > 1 && this.errLen - this.errChunks[0].length >= STDERR_KEEP_BYTES) {
        this.errLen -= this.errChunks.shift().length;
      }
    });
  }

  _withStderr(what) {
    const lines = this.stderr.split("\n").filter(Boolean).slice(-12).join("\n");
    return lines ? `${what}; last lines of stderr:\n${lines}` : `${what}; stderr was empty`;
  }

  _write(line) {
    const stdin = this.child.stdin;
    if (!this.corked) {
      this.corked = true;
      stdin.cork();
      process.nextTick(this._uncork);
    }
    stdin.write(line);
  }

  _send(method, params) {
    if (this.phase !== "ready") {
      if (this.phase === "closing" || this.phase === "closed") return Promise.reject(komaError("closed", "the client was closed"));
      if (this.phase === "ended")
        return Promise.reject(komaError("lifecycle", "the session was detached: nothing is written after detach"));
      return Promise.reject(komaError("transport_failure", `the client failed earlier: ${this.failure?.message}`));
    }
    let paramsText;
    try {
      paramsText = checkParams(method, params);
    } catch (e) {
      return Promise.reject(e);
    }
    if (!this.capabilities.has(method)) {
      return Promise.reject(komaError("unsupported", `\`${method}\` is not in this koma's capabilities`));
    }
    if (this.lifecycle === "detached") {
      return Promise.reject(komaError("lifecycle", `\`${method}\` after detach: nothing is written after detach`));
    }
    if (this.lifecycle === "open" && (method === "create" || method === "resume")) {
      return Promise.reject(komaError("lifecycle", `\`${method}\` is allowed only as the first request, and only once`));
    }
    if (this.pending.size >= MAX_PENDING) {
      return Promise.reject(komaError("too_many_pending", `${MAX_PENDING} requests are already pending; \`${method}\` was not written`));
    }
    const id = String(++this.nextId);
    const line = `{"id":"${id}","method":${JSON.stringify(method)},"params":${paramsText}}`;
    if (line.length > MAX_FRAME_BYTES / 3 && Buffer.byteLength(line) > MAX_FRAME_BYTES) {
      return Promise.reject(
        komaError("frame_too_large", `the \`${method}\` request would be over the 40 MiB frame bound; nothing was written`),
      );
    }
    this.lifecycle = method === "detach" ? "detached" : "open";
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      if (method === "detach") this.detachId = id;
      this._write(line + "\n");
    });
  }

  // ---------------------------------------------------------------- stdout

  /** How stdout is read: Buffers split here (bench/readline-client.mjs overrides it). */
  _readStdout(child) {
    child.stdout.on("data", (chunk) => this._onData(chunk));
    child.stdout.on("end", () => this._onEnd());
  }

  _onData(chunk) {
    if (this.phase === "failed" || this.phase === "closed") return;
    const n = chunk.length;
    let start = 0;
    if (this.partialLen > 0) {
      const nl = chunk.indexOf(10);
      if (nl === -1) {
        if (this.partialLen + n > PARTIAL_LIMIT) return this._oversize();
        this.partial.push(chunk);
        this.partialLen += n;
        return;
      }
      if (this.partialLen + nl > PARTIAL_LIMIT) return this._oversize();
      this.partial.push(chunk.subarray(0, nl));
      const line = Buffer.concat(this.partial, this.partialLen + nl);
      this.partial = [];
      this.partialLen = 0;
      if (!this._line(line, 0, line.length, false)) return;
      start = nl + 1;
    }
    // A read that is valid UTF-8 as a whole has valid lines: check once.
    const valid = start < n && isUtf8(start === 0 ? chunk : chunk.subarray(start));
    while (start < n) {
      const nl = chunk.indexOf(10, start);
      if (nl === -1) {
        if (n - start > PARTIAL_LIMIT) return this._oversize();
        this.partial.push(start === 0 ? chunk : chunk.subarray(start));
        this.partialLen = n - start;
        break;
      }
      if (!this._line(chunk, start, nl, valid)) return;
      start = nl + 1;
    }
    if (this.waiters.length !== 0) this._pump();
  }

  _oversize() {
    this.partial = [];
    this.partialLen = 0;
    this._protocolError(`a stdout frame is over ${MAX_FRAME_BYTES} bytes (40 MiB)`);
  }

  /** One line, buf[start, end) without its `\n`. False: stop (fatal). */
  _line(buf, start, end, knownValid) {
    if (end > start && buf[end - 1] === 13) end--;
    const len = end - start;
    if (len === 0) return this._protocolError("a blank line on stdout");
    if (len > MAX_FRAME_BYTES) return this._protocolError(`a stdout frame is over ${MAX_FRAME_BYTES} bytes (40 MiB)`);
    if (buf[start] === 0xef && buf[start + 1] === 0xbb && buf[start + 2] === 0xbf) {
      return this._protocolError("a stdout line starts with a byte-order mark", buf, start, end);
    }
    if (!knownValid && !isUtf8(start === 0 && end === buf.length ? buf : buf.subarray(start, end))) {
      return this._protocolError("a stdout line is not valid UTF-8", buf, start, end);
    }
    let f;
    try {
      f = JSON.parse(buf.toString("utf8", start, end));
    } catch (e) {
      return this._protocolError(`a stdout line is not one complete JSON object (${e.message})`, buf, start, end);
    }
    return this._frame(f, len, buf, start, end);
  }

  /**
   * One parsed line: classification, sequence check, routing. `len` is the
   * line's size for the event buffer's byte bound; buf[start, end) is the
   * line (a Buffer, or the decoded string), quoted in errors. False: stop (fatal).
   */
  _frame(f, len, buf, start, end) {
    if (typeof f !== "object" || f === null || Array.isArray(f)) {
      return this._protocolError("a stdout line is not a JSON object", buf, start, end);
    }
    const first = ++this.frames === 1;
    const type = f.type;
    if (type === "event") {
      if (first) return this._protocolError("the first frame is not hello", buf, start, end);
      const seq = f.seq;
      if (!Number.isSafeInteger(seq) || seq <= 0) return this._protocolError("an event without a positive integer seq", buf, start, end);
      const name = f.name;
      if (typeof name !== "string") return this._protocolError("an event whose name is not a string", buf, start, end);
      if (this.lastSeq !== -1 && seq !== this.lastSeq + 1) {
        const what =
          seq === this.lastSeq
            ? `event seq ${seq} repeated`
            : seq < this.lastSeq
              ? `event seq ${seq} after ${this.lastSeq} (a step back)`
              : `event seq ${seq} after ${this.lastSeq} (a gap)`;
        return this._protocolError(what);
      }
      this.lastSeq = seq;
      if (CATALOG.has(name)) {
        if (f.data === undefined) return this._protocolError("an event without data", buf, start, end);
        this._pushEvent({ type: "event", seq, name, data: f.data }, len);
      }
      return true;
    }
    if (type === undefined) {
      if (first) return this._protocolError("the first frame is not hello", buf, start, end);
      const id = f.id;
      if (typeof id !== "string") return this._protocolError("a frame with neither type nor a string id", buf, start, end);
      const hasResult = f.result !== undefined;
      const error = f.error;
      if (hasResult === (error !== undefined)) {
        return this._protocolError("a response must hold exactly one of result and error", buf, start, end);
      }
      if (
        !hasResult &&
        (typeof error !== "object" || error === null || typeof error.code !== "string" || typeof error.message !== "string")
      ) {
        return this._protocolError("a response error without string code and message", buf, start, end);
      }
      const p = this.pending.get(id);
      if (p === undefined) return true; // not pending: ignored
      this.pending.delete(id);
      if (id === this.detachId) {
        // Settled after the child's exit.
        const result = f.result;
        this.exitPromise.then(() =>
          hasResult
            ? p.resolve(result)
            : p.reject(komaError("remote", `koma answered detach with ${error.code}: ${error.message}`, { remote: error })),
        );
        return true;
      }
      if (hasResult) p.resolve(f.result);
      else
        p.reject(
          komaError("remote", `koma answered \`${p.method}\` with ${error.code}: ${error.message}`, {
            remote: { code: error.code, message: error.message, data: error.data },
          }),
        );
      return true;
    }
    if (type === "hello") {
      if (!first) return this._protocolError("a second hello frame", buf, start, end);
      return this._hello(f, buf, start, end);
    }
    return this._protocolError("a frame of unknown type", buf, start, end);
  }

  _hello(f, buf, start, end) {
    if (f.protocol !== 1) {
      const e = komaError(
        "protocol_mismatch",
        f.protocol === undefined
          ? "koma's hello has no protocol field; this SDK speaks protocol 1 only"
          : `koma's hello says protocol ${JSON.stringify(f.protocol)}; this SDK speaks protocol 1 only`,
      );
      this._fail(e);
      return false;
    }
    const b = f.binary;
    const caps = f.capabilities;
    if (
      typeof b !== "object" ||
      b === null ||
      typeof b.path !== "string" ||
      typeof b.version !== "string" ||
      !Array.isArray(f.diagnostics) ||
      !Array.isArray(caps) ||
      !caps.every((c) => typeof c === "string")
    ) {
      return this._protocolError("a malformed hello", buf, start, end);
    }
    this.hello = {
      type: "hello",
      protocol: 1,
      binary: { path: b.path, version: b.version },
      diagnostics: f.diagnostics,
      capabilities: caps,
    };
    this.capabilities = new Set(caps);
    if (this.phase === "starting") this.phase = "ready";
    this._resolveHello(this.hello);
    return true;
  }

  _pushEvent(ev, bytes) {
    if (this.evEnd !== null) return;
    if (this.paused) {
      this.dropped++;
      return;
    }
    if (this.evFrames + 1 > MAX_BUFFERED_EVENTS || this.evBytes + bytes > MAX_BUFFERED_EVENT_BYTES) {
      this.dropped += this.evFrames + 1;
      this.q = [OVERFLOW];
      this.qSizes = [0];
      this.qHead = 0;
      this.evFrames = 0;
      this.evBytes = 0;
      this.paused = true;
      return;
    }
    this.evFrames++;
    this.evBytes += bytes;
    this.q.push(ev);
    this.qSizes.push(bytes);
  }

  /** One iterator result, or null when nothing is there yet. Throws the fatal error. */
  _take() {
    const h = this.qHead;
    if (h < this.q.length) {
      const item = this.q[h];
      const size = this.qSizes[h];
      this.q[h] = undefined;
      if (h + 1 === this.q.length) {
        this.q.length = 0;
        this.qSizes.length = 0;
        this.qHead = 0;
      } else if (h >= 1024 && h * 2 >= this.q.length) {
        this.q = this.q.slice(h + 1);
        this.qSizes = this.qSizes.slice(h + 1);
        this.qHead = 0;
      } else {
        this.qHead = h + 1;
      }
      if (item === OVERFLOW) {
        this.paused = false;
        const dropped = this.dropped;
        this.dropped = 0;
        return { value: { type: "overflow", dropped }, done: false };
      }
      this.evFrames--;
      this.evBytes -= size;
      return { value: item, done: false };
    }
    if (this.evEnd !== null) {
      if (this.evEnd.error) throw this.evEnd.error;
      return { value: undefined, done: true };
    }
    return null;
  }

  _next() {
    if (this.waiters.length === 0) {
      try {
        const r = this._take();
        if (r !== null) return Promise.resolve(r);
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  _pump() {
    while (this.waiters.length !== 0) {
      let r;
      try {
        r = this._take();
      } catch (e) {
        for (const w of this.waiters.splice(0)) w.reject(e);
        return;
      }
      if (r === null) return;
      this.waiters.shift().resolve(r);
    }
  }

  _endEvents(error) {
    if (this.evEnd === null) this.evEnd = error ? { error } : {};
    this._pump();
  }

  _onEnd() {
    if (this.partialLen > 0 && this.lifecycle !== "detached" && this.phase !== "failed") {
      this.partial = [];
      this.partialLen = 0;
      this._protocolError("stdout ended inside a line (no terminating newline)");
      return;
    }
    if (this.phase === "failed" || this.phase === "closed" || this.phase === "closing") return;
    if (this.lifecycle === "detached") {
      this.phase = "ended";
      this._settleAfterDetach();
      return;
    }
    // A transport failure: give the child's last words a moment.
    void Promise.race([this.exitPromise, new Promise((r) => setTimeout(r, 500).unref())]).then(() => {
      const what = this.exited
        ? `koma exited (${this.exited.code ?? this.exited.signal}) without detach (stdout ended)`
        : "koma closed its stdout without detach";
      this._fail(komaError("transport_failure", this._withStderr(what)));
    });
  }

  _settleAfterDetach() {
    this.exitPromise.then(() => {
      for (const [, p] of this.pending) {
        p.reject(komaError("delivery_unknown", `\`${p.method}\` was written, then koma's stdout ended after detach without its answer`));
      }
      this.pending.clear();
      this._endEvents(null);
    });
  }

  _protocolError(what, buf, start, end) {
    const msg = buf ? `protocol error: ${what}: ${quote(buf, start, end)}` : `protocol error: ${what}`;
    this._fail(komaError("protocol_error", this._withStderr(msg)));
    return false;
  }

  _fail(err) {
    if (this.phase === "failed" || this.phase === "closed" || this.phase === "ended" || this.phase === "closing") return;
    this.phase = "failed";
    this.failure = err;
    for (const [, p] of this.pending) {
      p.reject(komaError("delivery_unknown", `\`${p.method}\` was written, but no answer can come: ${err.message}`));
    }
    this.pending.clear();
    if (this._rejectHello) this._rejectHello(err);
    this._endEvents(err);
    void this._stopChild(); // it never rejects
  }

  async _stopChild() {
    const child = this.child;
    if (!child || this.exited !== null || child.pid === undefined) return;
    const waitExit = (ms) => Promise.race([this.exitPromise.then(() => true), new Promise((r) => setTimeout(() => r(false), ms).unref())]);
    try {
      child.stdin.end();
    } catch {
      /* gone */
    }
    if (await waitExit(STOP_GRACE_MS)) return;
    try {
      child.kill("SIGTERM");
    } catch {
      /* gone */
    }
    if (await waitExit(STOP_GRACE_MS)) return;
    try {
      child.kill("SIGKILL");
    } catch {
      /* gone */
    }
    await this.exitPromise;
  }

  /** After the exit: wait for stdout and stderr to close (at most 300 ms), then destroy what is left. */
  async _releaseStdio() {
    const child = this.child;
    if (!child || child.pid === undefined || this.exited === null) return;
    const closed = await Promise.race([this.stdioClosed.then(() => true), new Promise((r) => setTimeout(() => r(false), 300).unref())]);
    if (closed) return;
    for (const s of [child.stdin, child.stdout, child.stderr]) {
      try {
        s?.destroy();
      } catch {
        /* gone */
      }
    }
  }

  close() {
    if (this.closePromise) return this.closePromise;
    this.closePromise = this._close();
    return this.closePromise;
  }

  async _close() {
    const phase = this.phase;
    if (phase === "new") {
      this.phase = "closed";
      this._endEvents(null);
      return;
    }
    if (phase === "starting") await this.helloPromise.catch(() => {});
    if (this.phase === "ready" && this.lifecycle !== "detached" && this.capabilities.has("detach")) {
      const detached = this._send("detach").catch(() => {});
      this.phase = "closing";
      await Promise.race([Promise.all([detached, this.exitPromise]), new Promise((r) => setTimeout(r, DETACH_GRACE_MS).unref())]);
    }
    this.phase = "closing";
    await this._stopChild();
    await this._releaseStdio();
    for (const [, p] of this.pending) {
      p.reject(komaError("delivery_unknown", `\`${p.method}\` was written, then the client was closed before its answer`));
    }
    this.pending.clear();
    this.phase = "closed";
    this._endEvents(null);
  }
}
