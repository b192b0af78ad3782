// The turn layer, above the protocol: `client.turn()` and `client.run()`.
// A Turn submits its text (or interrupts and submits), takes its own events
// from the client's one event queue (events.js routes them to it), answers
// its approvals with `onApproval` if it has one, and collects its result.
// It writes nothing but what the protocol methods write: submit or
// interrupt_and_submit, approve, interrupt.
//
// Compiled once per Node environment; `makeTurn` is called by the addon with
// the client object, the queue's router, and the call's arguments.
(function makeTurnLayer() {
  "use strict";
  const DONE = Object.freeze({ value: undefined, done: true });
  const coded = (code, message) => Object.assign(new Error(message), { code });
  const invalid = (what) => coded("invalid_params", `${what}`);

  /** Read and check `options`; throws invalid_params. */
  function readOptions(kind, options) {
    if (options === undefined || options === null) options = {};
    if (typeof options !== "object") throw invalid(`${kind}: options must be an object { mode?, onApproval?, signal?, timeout? }`);
    const { mode = "submit", onApproval, signal, timeout } = options;
    if (mode !== "submit" && mode !== "interrupt") throw invalid(`${kind}: options.mode must be "submit" or "interrupt"`);
    if (onApproval !== undefined && onApproval !== "allow" && onApproval !== "deny" && typeof onApproval !== "function") {
      throw invalid(`${kind}: options.onApproval must be a function, "allow" or "deny"`);
    }
    if (kind === "run" && onApproval === undefined) {
      throw invalid(`run: options.onApproval is required (a function, "allow" or "deny"): nobody else sees the turn's approvals`);
    }
    if (signal !== undefined && signal !== null && (typeof signal !== "object" || typeof signal.addEventListener !== "function")) {
      throw invalid(`${kind}: options.signal must be an AbortSignal`);
    }
    if (timeout !== undefined && timeout !== null && !(typeof timeout === "number" && timeout >= 0 && Number.isFinite(timeout))) {
      throw invalid(`${kind}: options.timeout must be a finite number of milliseconds >= 0`);
    }
    return { mode, onApproval, signal: signal ?? undefined, timeout: timeout ?? undefined };
  }

  class TurnState {
    constructor(client, router, params, options) {
      this.client = client;
      this.router = router;
      // What the router reads.
      this.id = null; // null: not known yet (routing waits); then the turn id, or "" if there is none
      this.started = false;
      this.finished = false;
      // The result being collected.
      this.status = undefined;
      this.output = [];
      this.toolCalls = [];
      this.events = 0;
      this.overflowed = false;
      this.error = undefined; // the first error result rejects with
      this.abortCode = undefined;
      this.interrupting = undefined;
      this.lastApprovalOpen = false;
      // The reader's queue: { value, size, epoch, taken }.
      this.held = [];
      this.waiting = [];
      this.reading = false;
      this.readerDone = false;
      this.onApproval = options.onApproval;
      this.idPromise = new Promise((resolve, reject) => ((this.resolveId = resolve), (this.rejectId = reject)));
      this.resultPromise = new Promise((resolve, reject) => ((this.resolveResult = resolve), (this.rejectResult = reject)));
      // Neither promise may crash a program that only awaits the other.
      this.idPromise.catch(() => {});
      this.resultPromise.catch(() => {});
      this.cleanup = [];
      this.start(params, options);
    }

    start(params, options) {
      const { signal, timeout, mode } = options;
      if (signal?.aborted) {
        this.fail(coded("aborted", "`turn` was aborted by its signal before anything was sent"), true);
        return;
      }
      let submitted;
      try {
        submitted = mode === "interrupt" ? this.client.interruptAndSubmit(params) : this.client.submit(params);
      } catch (e) {
        submitted = Promise.reject(e);
      }
      this.router.open(this);
      submitted.then(
        (r) => {
          this.id = r.turn;
          this.resolveId(r.turn);
          this.router.kick();
          if (this.abortCode !== undefined) this.interruptNow();
        },
        (e) => {
          this.id = "";
          this.fail(e, true);
        },
      );
      if (signal) {
        const onAbort = () => this.abort("aborted", "`turn` was aborted by its signal; the agent was interrupted");
        signal.addEventListener("abort", onAbort, { once: true });
        this.cleanup.push(() => signal.removeEventListener("abort", onAbort));
      }
      if (timeout !== undefined) {
        const timer = setTimeout(() => this.abort("timeout", `the turn did not finish within ${timeout} ms; the agent was interrupted`), timeout);
        this.cleanup.push(() => clearTimeout(timer));
      }
    }

    // ---- what the router calls

    accept(value, size, epoch) {
      this.events++;
      this.collect(value);
      this.hold({ value, size, epoch, taken: false });
      if (value.name === "turn_finished") this.finish();
    }

    overflow(report) {
      this.overflowed = true;
      this.hold({ value: report, size: -1, epoch: 0, taken: true });
      if (!this.finished && this.id !== null && this.id !== "") this.recover();
    }

    end(error) {
      if (this.finished) return;
      this.fail(error ?? coded("closed", "the client was closed before the turn finished"), false);
    }

    // ---- collecting

    collect(e) {
      const d = e.data;
      switch (e.name) {
        case "turn_started":
          this.started = true;
          break;
        case "output":
          if (typeof d.text === "string") this.output.push(d.text);
          break;
        case "tool_call":
          this.toolCalls.push({ call: d.call, tool: d.tool, input: d.input });
          break;
        case "tool_result": {
          const rec = this.toolCalls.find((c) => c.call === d.call);
          if (rec) {
            rec.output = d.output;
            rec.error = d.error;
          }
          this.lastApprovalOpen = false;
          break;
        }
        case "approval_requested":
          this.lastApprovalOpen = true;
          this.approval(d);
          break;
        case "turn_finished":
          this.status = d.status;
          break;
      }
    }

    /** Answer an approval with onApproval (fail closed), or leave it to the reader. */
    approval(request) {
      const rec = [...this.toolCalls].reverse().find((c) => c.tool === request.tool && c.approval === undefined && !("output" in c));
      const decide = (decision) => {
        if (rec) rec.approval = decision;
        this.client.approve({ approval: request.approval, decision }).catch(() => {
          // The turn was interrupted meanwhile, or the client failed (which ends the turn).
        });
      };
      const failClosed = (error) => {
        if (this.error === undefined) this.error = error;
        decide("deny");
      };
      const policy = this.onApproval;
      if (policy === undefined) {
        // The application answers with client.approve() as it reads the Turn.
        // Nobody reads it: nobody would ever answer, so deny.
        if (!this.reading || this.readerDone) decide("deny");
        return;
      }
      if (typeof policy === "string") {
        decide(policy);
        return;
      }
      let answer;
      try {
        answer = policy(request);
      } catch (e) {
        failClosed(e);
        return;
      }
      Promise.resolve(answer).then(
        (a) => {
          if (a === "allow" || a === "deny") decide(a);
          else failClosed(invalid(`onApproval returned ${typeof a === "string" ? JSON.stringify(a) : String(a)}; it must return "allow" or "deny" (the approval was denied)`));
        },
        failClosed,
      );
    }

    // ---- abort, deadline, interrupt, overflow recovery

    abort(code, message) {
      if (this.finished || this.abortCode !== undefined) return;
      this.abortCode = code;
      this.abortMessage = message;
      if (this.id !== null) this.interruptNow();
      // else: interrupted as soon as the submit answers
    }

    interruptNow() {
      if (this.finished || this.id === "" || this.interrupting) return this.interrupting;
      this.interrupting = this.client.interrupt().catch(() => {});
      return this.interrupting;
    }

    /** After an overflow, learn from state() whether this turn still runs. */
    recover() {
      this.client.state().then(
        (st) => {
          if (this.finished) return;
          if (st.turn !== this.id) {
            // Its turn_finished was lost in the overflow: it is over, how is unknown.
            this.status = "unknown";
            this.finish();
          } else if (st.status === "waiting" && !this.lastApprovalOpen) {
            // Its approval request was lost: nobody can answer it. Fail closed.
            this.interruptNow();
          }
        },
        () => {
          // The client failed: the turn ends with its error.
        },
      );
    }

    // ---- the end

    finish() {
      if (this.finished) return;
      this.finished = true;
      this.router.close(this);
      for (const c of this.cleanup.splice(0)) c();
      if (!this.reading || this.readerDone) this.releaseHeld();
      const result = {
        turn: this.id,
        status: this.status,
        output: this.output.join(""),
        toolCalls: this.toolCalls,
        events: this.events,
        overflowed: this.overflowed,
      };
      const settle = () => {
        if (this.error !== undefined) this.rejectResult(this.error);
        else if (this.abortCode !== undefined) this.rejectResult(coded(this.abortCode, this.abortMessage));
        else this.resolveResult(result);
        this.serve();
      };
      if (this.interrupting) this.interrupting.then(settle);
      else settle();
    }

    /** The turn cannot go on (the submit failed, the client failed or closed). */
    fail(error, beforeId) {
      if (this.finished) return;
      this.finished = true;
      this.failure = error;
      this.router.close(this);
      for (const c of this.cleanup.splice(0)) c();
      if (beforeId) this.rejectId(error);
      else if (this.id === null) this.rejectId(error);
      this.releaseHeld();
      this.rejectResult(error);
      this.serve();
    }

    // ---- the reader

    hold(item) {
      this.held.push(item);
      this.serve();
    }

    /** Held events stop counting against the bound (they stay for a late reader). */
    releaseHeld() {
      for (const h of this.held) {
        if (!h.taken) {
          h.taken = true;
          if (h.epoch === this.router.epoch()) this.router.taken(h.size);
        }
      }
    }

    takeOne() {
      while (this.held.length > 0) {
        const h = this.held.shift();
        if (!h.taken) {
          if (h.epoch !== this.router.epoch()) continue; // revoked by an overflow
          h.taken = true;
          this.router.taken(h.size);
        }
        return { value: h.value, done: false };
      }
      if (this.finished) {
        if (this.failure !== undefined) throw this.failure;
        return DONE;
      }
      return undefined;
    }

    serve() {
      while (this.waiting.length > 0) {
        let r;
        try {
          r = this.takeOne();
        } catch (e) {
          for (const w of this.waiting.splice(0)) w.reject(e);
          return;
        }
        if (r === undefined) return;
        this.waiting.shift().resolve(r);
      }
    }

    next() {
      if (this.waiting.length === 0) {
        let r;
        try {
          r = this.takeOne();
        } catch (e) {
          return Promise.reject(e);
        }
        if (r !== undefined) return Promise.resolve(r);
      }
      return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
    }

    stopReading() {
      this.readerDone = true;
      for (const w of this.waiting.splice(0)) w.resolve(DONE);
      this.releaseHeld();
      this.held = [];
      return Promise.resolve(DONE);
    }
  }

  /** What the addon's `Turn` object wraps. */
  function makeTurn(client, router, params, options) {
    let opts;
    try {
      opts = readOptions("turn", options);
    } catch (e) {
      opts = { invalid: e };
    }
    if (opts.invalid) {
      const failed = Promise.reject(opts.invalid);
      failed.catch(() => {});
      const iterator = { next: () => Promise.reject(opts.invalid), return: () => Promise.resolve(DONE), [Symbol.asyncIterator]() { return this; } };
      return { id: failed, result: failed, interrupt: () => Promise.resolve(), iterator: () => iterator };
    }
    const t = new TurnState(client, router, params, opts);
    const iterator = {
      next: () => t.next(),
      return: () => t.stopReading(),
      [Symbol.asyncIterator]() {
        return this;
      },
    };
    return {
      id: t.idPromise,
      result: t.resultPromise,
      async interrupt() {
        if (t.id === null) {
          try {
            await t.idPromise;
          } catch {
            return;
          }
        }
        await t.interruptNow();
      },
      iterator() {
        t.reading = true;
        return iterator;
      },
    };
  }

  /** `run()`: a Turn drained; its result. */
  async function run(client, router, params, options) {
    readOptions("run", options);
    const turn = makeTurn(client, router, params, options);
    const it = turn.iterator();
    for (;;) {
      const r = await it.next().catch(() => DONE);
      if (r.done) break;
    }
    return turn.result;
  }

  return { makeTurn, run };
})
