// The turn layer, above the protocol: what `client.turn()` and `client.run()`
// return. A Turn submits its text (or interrupts and submits), takes its own
// events from the client's one event queue (events.js routes them to it),
// answers its approvals with `onApproval` if it has one, and collects its
// result. It writes nothing but what the protocol methods write: submit or
// interrupt_and_submit, approve, interrupt, and state after an overflow.
//
// Run once per Node environment; its value is the layer. The addon calls
// `makeTurn`, `run` and `failedTurn` with what the layer works with:
// `send(method, params)`, the call layer's (a promise, as a client method
// gives), and the event queue's router; never the client object. The options
// come checked (options.rs): `{ mode, onApproval?, signal?, timeout? }`.
(function makeTurnLayer() {
  "use strict";

  function coded(code, message, cause) {
    const error = cause === undefined ? new Error(message) : new Error(message, { cause });
    error.code = code;
    return error;
  }

  /** How an aborted signal fails a turn: `timeout` for a TimeoutError reason (AbortSignal.timeout()), else `aborted`. */
  function abortCode(signal) {
    const reason = signal.reason;
    return reason !== null && typeof reason === "object" && reason.name === "TimeoutError" ? "timeout" : "aborted";
  }

  class TurnState {
    constructor(send, router, params, options) {
      this.send = send;
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
      this.error = undefined; // onApproval's failure: the result rejects with it, the reader throws it
      this.abort = undefined; // { code, message, cause }: the turn was aborted or timed out
      this.interruptWanted = false; // interrupt as soon as the submit answers
      this.interrupting = undefined;
      this.lastApprovalOpen = false;
      // The reader's queue: { value, size, epoch, taken }.
      this.held = [];
      this.reading = false;
      this.readerDone = false;
      this.reader = router.reader(
        () => this.takeOne(),
        () => this.stopReading(),
      );
      this.onApproval = options.onApproval;
      this.idPromise = new Promise((resolve, reject) => ((this.resolveId = resolve), (this.rejectId = reject)));
      this.resultPromise = new Promise((resolve, reject) => ((this.resolveResult = resolve), (this.rejectResult = reject)));
      // Neither promise may crash a program that only awaits the other.
      this.idPromise.catch(() => {});
      this.resultPromise.catch(() => {});
      this.cleanup = [];
      this.start(params, options);
    }

    /** A protocol call through the call layer; a promise even if `send` throws. */
    call(method, params) {
      try {
        return this.send(method, params);
      } catch (error) {
        return Promise.reject(error);
      }
    }

    start(params, { mode, signal, timeout }) {
      if (signal?.aborted) {
        this.fail(coded(abortCode(signal), "`turn` was aborted by its signal before anything was sent", signal.reason), true);
        return;
      }
      const submitted = this.call(mode === "interrupt" ? "interrupt_and_submit" : "submit", params);
      this.router.open(this);
      submitted.then(
        (r) => {
          this.id = r.turn;
          this.resolveId(r.turn);
          this.router.kick();
          if (this.abort !== undefined || this.interruptWanted) this.interruptNow();
        },
        (e) => {
          this.id = "";
          this.fail(e, true);
        },
      );
      if (signal) {
        const onAbort = () => {
          const how =
            abortCode(signal) === "timeout" ? "timed out (its signal was aborted with a TimeoutError)" : "was aborted by its signal";
          this.stop(abortCode(signal), `\`turn\` ${how}; the agent was interrupted`, signal.reason);
        };
        signal.addEventListener("abort", onAbort, { once: true });
        this.cleanup.push(() => signal.removeEventListener("abort", onAbort));
      }
      if (timeout !== undefined) {
        const timer = setTimeout(
          () => this.stop("timeout", `the turn did not finish within ${timeout} ms; the agent was interrupted`),
          timeout,
        );
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
        this.call("approve", { approval: request.approval, decision }).catch(() => {
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
      // A handler that gives no valid answer fails the turn as one that
      // returns something else does: invalid_params, what it threw as cause.
      const threw = (e) =>
        failClosed(
          coded("invalid_params", `onApproval threw, so the approval was denied: ${e instanceof Error ? e.message : String(e)}`, e),
        );
      let answer;
      try {
        answer = policy(request);
      } catch (e) {
        threw(e);
        return;
      }
      Promise.resolve(answer).then((a) => {
        if (a === "allow" || a === "deny") decide(a);
        else
          failClosed(
            coded(
              "invalid_params",
              `onApproval returned ${typeof a === "string" ? JSON.stringify(a) : String(a)}; it must return "allow" or "deny" (the approval was denied)`,
            ),
          );
      }, threw);
    }

    // ---- abort, deadline, interrupt, overflow recovery

    /** The turn is aborted or timed out: interrupt the agent; the result rejects once it has finished. */
    stop(code, message, cause) {
      if (this.finished || this.abort !== undefined) return;
      this.abort = { code, message, cause };
      if (this.id !== null) this.interruptNow();
      // else: interrupted as soon as the submit answers
    }

    /** Interrupt the agent if this turn still runs (once its id is known). */
    requestInterrupt() {
      if (this.id === null) this.interruptWanted = true;
      else this.interruptNow();
    }

    interruptNow() {
      if (this.finished || this.id === "" || this.interrupting) return this.interrupting;
      this.interrupting = this.call("interrupt").catch(() => {});
      return this.interrupting;
    }

    /** `turn.interrupt()`: wait for the turn's id, then interrupt it if it still runs. */
    async interruptByUser() {
      if (this.id === null) {
        try {
          await this.idPromise;
        } catch {
          return;
        }
      }
      await this.interruptNow();
    }

    /** After an overflow, learn from state() whether this turn still runs. */
    recover() {
      this.call("state").then(
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

    /** What the turn came to, so far. */
    result() {
      return {
        turn: this.id,
        status: this.status,
        output: this.output.join(""),
        toolCalls: this.toolCalls,
        events: this.events,
        overflowed: this.overflowed,
      };
    }

    finish() {
      if (this.finished) return;
      this.finished = true;
      this.router.close(this);
      for (const c of this.cleanup.splice(0)) c();
      if (!this.reading || this.readerDone) this.releaseHeld();
      const settle = () => {
        // A failure of the turn's own keeps what the turn got so far.
        const result = this.result();
        let error = this.error;
        if (error === undefined && this.abort !== undefined) error = coded(this.abort.code, this.abort.message, this.abort.cause);
        if (error === undefined) this.resolveResult(result);
        else this.rejectResult(Object.assign(error, { result }));
        this.reader.serve();
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
      if (beforeId || this.id === null) this.rejectId(error);
      this.releaseHeld();
      this.rejectResult(error);
      this.reader.serve();
    }

    // ---- the reader

    hold(item) {
      this.held.push(item);
      if (this.readerDone) this.releaseHeld();
      this.reader.serve();
    }

    /** Held events stop counting against the bound (they stay for a later reader). */
    releaseHeld() {
      for (const h of this.held) {
        if (!h.taken) {
          h.taken = true;
          if (h.epoch === this.router.epoch()) this.router.taken(h.size);
        }
      }
    }

    /** The next of the Turn's items; at its end, the error that failed it (the client's, or onApproval's). */
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
      if (!this.finished) return undefined;
      if (this.failure !== undefined) throw this.failure;
      if (this.error !== undefined) throw this.error;
      return this.router.DONE;
    }

    iterator() {
      this.reading = true;
      this.readerDone = false;
      return this.reader.iterator;
    }

    /**
     * The reader left its loop early (break, return, a throw): the turn is
     * interrupted if it still runs, as leaving a streamed response cancels
     * it; what was not read stops counting, and stays for a later loop.
     */
    stopReading() {
      this.readerDone = true;
      this.releaseHeld();
      if (!this.finished) this.requestInterrupt();
    }
  }

  /** What a user gets: its state stays private, and it has no public constructor. */
  class Turn {
    #state;
    constructor(state) {
      this.#state = state;
    }
    get id() {
      return this.#state.idPromise;
    }
    get result() {
      return this.#state.resultPromise;
    }
    interrupt() {
      return this.#state.interruptByUser();
    }
    [Symbol.asyncIterator]() {
      return this.#state.iterator();
    }
  }

  function makeTurn(send, router, params, options) {
    return new Turn(new TurnState(send, router, params, options));
  }

  /** A Turn whose options were refused: its promises reject with `error`, and so does its iterator. */
  function failedTurn(router, error) {
    const failed = Promise.reject(error);
    failed.catch(() => {});
    const reader = router.reader(
      () => {
        throw error;
      },
      () => {},
    );
    return new Turn({ idPromise: failed, resultPromise: failed, interruptByUser: async () => {}, iterator: () => reader.iterator });
  }

  /** `run()`: a Turn drained; its result. */
  async function run(send, router, params, options) {
    const turn = makeTurn(send, router, params, options);
    const it = turn[Symbol.asyncIterator]();
    for (;;) {
      const r = await it.next().catch(() => router.DONE);
      if (r.done) break;
    }
    return turn.result;
  }

  return { makeTurn, failedTurn, run };
})();
