// The turn scenarios of testdata/scenarios, one test() each: the same files
// python/tests/test_scenarios.py runs, so that a difference between the two
// packages fails a test. The step vocabulary is testdata/scenarios/README.md;
// this file only says each step in JavaScript.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { SIM, root, simClient } from "./helpers.mjs";
import { tracing } from "./spans.mjs";

const { FakeKoma } = createRequire(import.meta.url)(join(root, "testing.js"));

const DIR = join(root, "testdata", "scenarios");
/** A bound on every wait: it stops a hang (the scenario fails); it is no measure of speed. */
const HANG = 20_000;

const scenarios = readdirSync(DIR)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => ({ name: f.slice(0, -".json".length), ...JSON.parse(readFileSync(join(DIR, f), "utf8")) }));

/** An item's name in a scenario: its event name, or "overflow". */
const nameOf = (item) => (item.type === "event" ? item.name : item.type);

/** ["output*3"] -> ["output", "output", "output"] */
function expand(names) {
  return names.flatMap((n) => {
    const m = /^(.*)\*(\d+)$/.exec(n);
    return m ? Array.from({ length: Number(m[2]) }, () => m[1]) : [n];
  });
}

/** A short list of names for a message: runs of one name as name*N. */
function squeeze(names) {
  const out = [];
  for (const n of names) {
    const last = out.at(-1);
    if (last && last.name === n) last.count++;
    else out.push({ name: n, count: 1 });
  }
  return out.map((r) => (r.count > 1 ? `${r.name}*${r.count}` : r.name)).join(", ");
}

class Hang extends Error {}

/** Await `promise`, at most HANG ms. */
async function within(promise, what) {
  let timer;
  const bound = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Hang(`gave up after ${HANG} ms waiting for ${what}`)), HANG);
  });
  try {
    return await Promise.race([promise, bound]);
  } finally {
    clearTimeout(timer);
  }
}

/** Wakes whoever waits for something to change (an item taken, a handler called, a loop ended). */
class Changes {
  constructor() {
    this.waiters = new Set();
  }
  notify() {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const w of waiters) w();
  }
  async until(cond, what) {
    const deadline = Date.now() + HANG;
    while (!cond()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Hang(`gave up after ${HANG} ms waiting for ${typeof what === "function" ? what() : what}`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.add(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}

/** `expect` of a loop (or an events() loop): the names and data of what it took. */
function checkItems(items, expect, what) {
  const names = items.map(nameOf);
  const seen = `${what} took [${squeeze(names)}]`;
  if (expect.names) assert.deepEqual(squeeze(names), squeeze(expand(expect.names)), seen);
  if (expect.starts_with) assert.deepEqual(names.slice(0, expand(expect.starts_with).length), expand(expect.starts_with), seen);
  if (expect.ends_with) {
    const tail = expand(expect.ends_with);
    assert.deepEqual(names.slice(Math.max(0, names.length - tail.length)), tail, seen);
  }
  for (const n of expect.contains ?? []) assert.ok(names.includes(n), `${seen}: no ${n}`);
  for (const n of expect.excludes ?? []) assert.ok(!names.includes(n), `${seen}: a ${n}`);
  for (const [name, subset] of Object.entries(expect.data ?? {})) {
    const events = items.filter((i) => nameOf(i) === name);
    assert.ok(events.length > 0, `${seen}: no ${name} to check the data of`);
    for (const e of events) {
      for (const [k, v] of Object.entries(subset))
        assert.deepEqual(e.data[k], v, `${what}: ${name} (seq ${e.seq}) data.${k}: ${JSON.stringify(e.data)}`);
    }
  }
}

/** A subset of a plain result (State, submit's answer, ...). */
function checkSubset(actual, expect, what) {
  for (const [k, v] of Object.entries(expect)) assert.deepEqual(actual?.[k], v, `${what}.${k} in ${JSON.stringify(actual)}`);
}

/** A subset of a TurnResult, in the scenarios' names (tool_calls is toolCalls here). */
function checkTurnResult(actual, expect, what) {
  assert.ok(actual && typeof actual === "object", `${what}: no result (${actual})`);
  const shown = JSON.stringify(actual);
  for (const [k, v] of Object.entries(expect)) {
    if (k === "output_contains") assert.ok(actual.output.includes(v), `${what}.output has ${JSON.stringify(v)}: ${shown}`);
    else if (k === "tool_calls") {
      assert.equal(actual.toolCalls.length, v.length, `${what}.toolCalls: ${shown}`);
      v.forEach((call, i) => {
        const got = actual.toolCalls[i];
        for (const [ck, cv] of Object.entries(call)) {
          if (ck === "output_contains") assert.ok(String(got.output).includes(cv), `${what}.toolCalls[${i}].output: ${shown}`);
          else if (ck === "approval") assert.equal(got.approval ?? null, cv, `${what}.toolCalls[${i}].approval: ${shown}`);
          else assert.deepEqual(got[ck], cv, `${what}.toolCalls[${i}].${ck}: ${shown}`);
        }
      });
    } else assert.deepEqual(actual[k], v, `${what}.${k}: ${shown}`);
  }
}

/**
 * A client span's attributes as this system says them: Windows has no
 * signals, and koma-sim.exe's crash step of SIGKILL exits with code 1
 * (docs/koma-sim.md, "On Windows"), which the span then carries instead.
 */
function onThisSystem(span) {
  const signal = span?.attributes?.["koma.exit.signal"];
  if (process.platform !== "win32" || signal === undefined) return span;
  assert.equal(signal, 9, "a scenario's crash on Windows: only SIGKILL's exit code is written here");
  const { "koma.exit.signal": _, ...attributes } = span.attributes;
  return { ...span, attributes: { ...attributes, "process.exit.code": 1 } };
}

/**
 * `spans`: the spans under the scenario's own, in the order they started:
 * each its name, a subset of its attributes, its `error` (error.type; none
 * unless given) and its `children` (none unless given).
 */
function checkSpans(nodes, expected, path) {
  const names = nodes.map((n) => n.name);
  assert.deepEqual(
    names,
    expected.map((e) => e.name),
    `${path}: the spans under it`,
  );
  expected.forEach((e, i) => {
    const n = nodes[i];
    const here = `${path} > ${e.name}`;
    for (const [k, v] of Object.entries(e.attributes ?? {}))
      assert.deepEqual(n.attributes[k], v, `${here}: ${k} in ${JSON.stringify(n.attributes)}`);
    assert.equal(n.error, e.error ?? null, `${here}: error.type`);
    checkSpans(n.children, e.children ?? [], here);
  });
}

class Runner {
  constructor(t, scenario) {
    const sim = scenario.sim ?? {};
    this.scenario = scenario;
    // A scenario that says its spans is traced, with an in-memory exporter.
    this.tracing = scenario.spans ? tracing() : undefined;
    const traced = this.tracing ? { tracerProvider: this.tracing.tracerProvider, meterProvider: this.tracing.meterProvider } : {};
    if (sim.scenario) {
      // koma-sim plays a script (@koma/sdk/testing: checked, written, recorded).
      const faults = (sim.faults ?? []).join(",");
      const koma = new FakeKoma(sim.scenario, {
        executable: SIM,
        delayMs: sim.delay_ms ?? 0,
        env: { ...(faults ? { KOMA_SIM_FAULT: faults } : {}), ...(sim.env ?? {}) },
        client: traced,
      });
      t.after(() => koma.close());
      this.client = koma.client;
    } else {
      this.client = simClient(t, { faults: sim.faults ?? [], delayMs: sim.delay_ms ?? 0, env: sim.env ?? {}, ...traced });
    }
    /** Turns and background runs, by name: { turn?, promise?, calls, thrown, seqs, controller? } */
    this.turns = new Map();
    /** events() loops, by name. */
    this.loops = new Map();
    /** approval_requested data kept by a loop's `save`. */
    this.saved = new Map();
    this.changes = new Changes();
    this.runs = 0;
  }

  async run() {
    if (!this.tracing) return this.steps(this.scenario.steps);
    // The steps in a span of the scenario's own, then close() (the client's span ends).
    await this.tracing.tracer.startActiveSpan("scenario", async (span) => {
      await this.steps(this.scenario.steps);
      await within(this.client.close(), "close()");
      span.end();
    });
    // Every span is under the scenario's, but the client's life: a trace of
    // its own, linked to the scenario's span (its caller when it started).
    // (The roots by name: the application's span starts at the SDK's whole millisecond.)
    const roots = this.tracing.tree().sort((a, b) => (a.name === "scenario" ? -1 : b.name === "scenario" ? 1 : 0));
    assert.deepEqual(
      roots.map((n) => n.name),
      ["scenario", "koma.client"],
      "every span is under the scenario's, and the client's span a root linked to it",
    );
    assert.deepEqual(roots[1].links, ["scenario"], "the client's span links to the scenario's");
    checkSpans([roots[1]], [{ name: "koma.client", ...onThisSystem(this.scenario.client_span) }], "client");
    checkSpans(roots[0].children, this.scenario.spans, "scenario");
  }

  async steps(steps) {
    for (const [i, step] of steps.entries()) {
      try {
        await this.step(step);
      } catch (e) {
        if (e && typeof e === "object" && !e.scenarioStep) {
          e.scenarioStep = true;
          e.message = `step ${i + 1} ${JSON.stringify(step)}: ${e.message}`;
        }
        throw e;
      }
    }
  }

  turnRec(name) {
    const rec = this.turns.get(name);
    assert.ok(rec, `no turn or run named ${name}`);
    return rec;
  }

  /** What `approvals` says, as the option's value; `undefined`: no option. */
  approvals(spec, rec) {
    const called = (request) => {
      rec.requests.push(request);
      rec.calls++;
      rec.onCall?.();
      this.changes.notify();
    };
    const fail = () => {
      const e = new Error("the approval function failed (the scenario's own error)");
      rec.thrown.push(e);
      return e;
    };
    if (spec === undefined) return undefined;
    if (spec !== null && typeof spec === "object") return spec.raw;
    switch (spec) {
      case "allow":
      case "deny":
        return spec;
      case "fn_allow":
        return (request) => (called(request), "allow");
      case "fn_deny":
        return (request) => (called(request), "deny");
      case "async_allow":
        return async (request) => {
          called(request);
          await new Promise((r) => setImmediate(r));
          return "allow";
        };
      case "throw":
        return (request) => {
          called(request);
          throw fail();
        };
      case "reject":
        return (request) => {
          called(request);
          return Promise.reject(fail());
        };
      case "bad":
        return (request) => (called(request), "yes");
      case "never":
        return (request) => {
          called(request);
          return new Promise(() => {});
        };
      default:
        throw new Error(`unknown approvals ${JSON.stringify(spec)}`);
    }
  }

  /** The options of turn() and run() that a step gives. */
  options(step, rec) {
    const options = {};
    const onApproval = this.approvals(step.approvals, rec);
    if (step.approvals !== undefined) options.onApproval = onApproval;
    if (step.mode !== undefined) options.mode = step.mode;
    if (step.timeout_ms !== undefined) options.timeout = step.timeout_ms;
    if (step.signal || step.cancel_on_approval) {
      rec.controller = new AbortController();
      options.signal = rec.controller.signal;
    }
    if (step.cancel_on_approval) rec.onCall = () => rec.controller.abort();
    if (step.cancel_before) options.signal = AbortSignal.abort();
    return options;
  }

  /** How a call settled, checked against the step's `expect` or `rejects`. */
  async settle(promise, step, what, check = (v) => checkSubset(v, step.expect, what), rec = undefined) {
    let value;
    let error;
    let failed = false;
    const started = performance.now();
    try {
      value = await within(promise, what);
    } catch (e) {
      if (e instanceof Hang) throw e;
      failed = true;
      error = e;
    }
    this.checkWithin(step, started, what);
    if (step.rejects === undefined) {
      if (failed) throw Object.assign(new Error(`${what} failed: ${error?.code} ${error?.message}`), { cause: error });
      if (step.expect !== undefined) check(value);
      return value;
    }
    assert.ok(failed, `${what}: expected a rejection with ${step.rejects}, got ${JSON.stringify(value)}`);
    this.checkError(error, step, what, rec);
    return error;
  }

  /** `within_ms`: the step's wait ended within that many milliseconds (a deadline's bound, with slack). */
  checkWithin(step, started, what) {
    if (step.within_ms === undefined) return;
    const took = performance.now() - started;
    assert.ok(took <= step.within_ms, `${what} took ${Math.round(took)} ms, more than ${step.within_ms}`);
  }

  checkError(error, step, what, rec) {
    const code = step.rejects ?? step.throws;
    assert.equal(error?.code, code, `${what}: ${error?.stack ?? error}`);
    if (step.remote !== undefined) assert.equal(error.remote?.code, step.remote, `${what}: the remote error`);
    if (step.cause === "handler") assert.equal(error.cause, rec?.thrown.at(-1), `${what}: its cause is what the approval function threw`);
    if (step.cause === null) assert.equal(error.cause, undefined, `${what}: no cause`);
    if (step.error_result) checkTurnResult(error.result, step.error_result, `${what}: err.result`);
  }

  kill() {
    const pid = this.client.pid;
    assert.ok(pid, "the child runs");
    process.kill(pid, "SIGKILL");
  }

  async step(step) {
    const c = this.client;
    switch (step.do) {
      case "create":
        return this.settle(c.create({}), step, "create()");
      case "submit":
        return this.settle(c.submit({ text: step.text }), step, "submit()");
      case "enqueue":
        return this.settle(c.enqueue({ text: step.text }), step, "enqueue()");
      case "configure":
        return this.settle(c.configure(step.model === undefined ? {} : { model: step.model }), step, "configure()");
      case "request":
        return this.settle(c.request(step.method, step.params), step, `request(${step.method})`);
      case "state":
        return this.settle(c.state(), step, "state()");
      case "wait_state": {
        const deadline = Date.now() + HANG;
        for (;;) {
          const st = await within(c.state(), "state()");
          if (st.status === step.status) return;
          if (Date.now() > deadline) throw new Hang(`the state never became ${step.status}: ${JSON.stringify(st)}`);
        }
      }
      case "approve": {
        const data = this.saved.get(step.approval);
        assert.ok(data, `no approval saved as ${step.approval}`);
        return this.settle(c.approve({ approval: data.approval, decision: step.decision }), step, "approve()");
      }
      case "interrupt":
        if (step.turn === undefined) return this.settle(c.interrupt(), step, "interrupt()");
        return this.settle(this.turnRec(step.turn).turn.interrupt(), step, `${step.turn}.interrupt()`);
      case "close":
        return within(c.close(), "close()");
      case "kill":
        return this.kill();
      case "repeat":
        for (let i = 0; i < step.times; i++) await this.steps(step.steps);
        return;
      case "turn": {
        const rec = { kind: "turn", calls: 0, requests: [], thrown: [], seqs: [] };
        rec.turn = c.turn({ text: step.text }, this.options(step, rec));
        this.turns.set(step.as, rec);
        return;
      }
      case "run": {
        this.runs++;
        const rec = { kind: "run", calls: 0, requests: [], thrown: [], seqs: [] };
        const what = `run ${step.as ?? this.runs}`;
        const promise = c.run({ text: step.text }, this.options(step, rec));
        if (step.as !== undefined) {
          promise.catch(() => {});
          rec.promise = promise;
          this.turns.set(step.as, rec);
          return;
        }
        return this.settle(promise, step, what, (v) => checkTurnResult(v, step.expect, what), rec);
      }
      case "await_handler": {
        const rec = this.turnRec(step.of);
        const calls = step.calls ?? 1;
        await this.changes.until(() => rec.calls >= calls, `the approval function of ${step.of} to be called`);
        if (step.request) checkSubset(rec.requests[0], step.request, `what the approval function of ${step.of} was given`);
        return;
      }
      case "result": {
        const rec = this.turnRec(step.turn);
        const what = `${step.turn}.result`;
        return this.settle(rec.promise ?? rec.turn.result, step, what, (v) => checkTurnResult(v, step.expect, what), rec);
      }
      case "id": {
        const rec = this.turnRec(step.turn);
        return this.settle(rec.turn.id, step, `${step.turn}.id`, (v) => assert.equal(v, step.expect, `${step.turn}.id`), rec);
      }
      case "loop":
        return this.loop(step);
      case "seqs_cover": {
        const seqs = step.of
          .flatMap((name) =>
            this.turns.has(name)
              ? this.turns.get(name).seqs
              : this.loops
                  .get(name)
                  .items.filter((i) => i.type === "event")
                  .map((i) => i.seq),
          )
          .sort((a, b) => a - b);
        assert.ok(seqs.length > 0, "no event taken");
        for (let i = 1; i < seqs.length; i++) {
          assert.notEqual(seqs[i], seqs[i - 1], `seq ${seqs[i]} was taken twice`);
          assert.equal(seqs[i], seqs[i - 1] + 1, `seq ${seqs[i - 1] + 1} was taken by none of ${step.of.join(", ")}`);
        }
        return;
      }
      case "events_loop":
        return this.eventsLoop(step);
      case "events_resume":
        return this.loops.get(step.as).resume();
      case "events_break": {
        const rec = this.loops.get(step.as);
        await within(rec.it.return(), `${step.as} to be left`);
        return this.changes.until(() => rec.ended, `${step.as} to end`);
      }
      case "events_expect": {
        const rec = this.loops.get(step.as);
        const need = Math.max(expand(step.names ?? []).length, expand(step.starts_with ?? []).length);
        // Waits for that many items, or for the first one that differs.
        const wanted = expand(step.names ?? step.starts_with ?? []);
        const differs = () => rec.items.some((item, i) => i < wanted.length && nameOf(item) !== wanted[i]);
        await this.changes.until(
          () => rec.ended || (!step.ended && rec.items.length >= need) || differs(),
          () => `${step.as} to take ${need} items${step.ended ? " and end" : ""} (it took [${squeeze(rec.items.map(nameOf))}])`,
        );
        checkItems(rec.items, step, step.as);
        if (step.ended) {
          if (step.throws) this.checkError(rec.error, step, `${step.as}'s error`);
          else assert.equal(rec.error, undefined, `${step.as} ended with ${rec.error?.stack}`);
        }
        return;
      }
      case "held_in_package":
        // The events this package took from the core and has not handed out
        // live in lib/stream.js's cursor, out of reach; events() shows them.
        return;
      default:
        throw new Error(`unknown step ${JSON.stringify(step)}`);
    }
  }

  /** A loop over a Turn, to its end (or its break), then what it saw. */
  async loop(step) {
    const c = this.client;
    const rec = this.turnRec(step.turn);
    const expect = step.expect ?? {};
    const what = `the loop over ${step.turn}`;
    const items = [];
    const done = new Set();
    const once = (field, name) => step[field] === name && !done.has(field) && done.add(field);
    const bodyError = new Error("the loop's body failed (the scenario's own error)");
    let thrown;
    let raised = false;
    /** The loop's body: "break" when it breaks, "return" when it leaves by return(). */
    const body = async (item) => {
      items.push(item);
      if (item.type === "event") rec.seqs.push(item.seq);
      const name = nameOf(item);
      const keep = step.save?.[name];
      if (keep !== undefined && !this.saved.has(keep)) this.saved.set(keep, item.data);
      if (step.answer_approvals && name === "approval_requested")
        await c.approve({ approval: item.data.approval, decision: step.answer_approvals });
      if (once("interrupt_after", name)) await rec.turn.interrupt();
      if (once("close_after", name)) await c.close();
      if (once("kill_after", name)) this.kill();
      if (once("abort_after", name)) rec.controller.abort();
      if (once("raise_after", name)) throw bodyError;
      if (once("break_after", name)) return "break";
      if (once("return_after", name)) return "return";
      if (once("leave_waiting_after", name)) return "leave_waiting";
    };
    const loop = async () => {
      if (step.leave_waiting_after) {
        // Driven by hand: after that event the loop waits for its next item,
        // and is left (its iterator's return()) while it waits.
        const it = rec.turn[Symbol.asyncIterator]();
        for (;;) {
          const { value, done } = await it.next();
          if (done) return;
          if ((await body(value)) === "leave_waiting") {
            const waiting = it.next();
            await new Promise((r) => setImmediate(r));
            await it.return();
            assert.deepEqual(await waiting, { value: undefined, done: true }, "the waiting next() ends the loop");
            return;
          }
        }
      }
      if (step.return_after) {
        // Driven by hand, and left by the iterator's return().
        const it = rec.turn[Symbol.asyncIterator]();
        for (;;) {
          const { value, done } = await it.next();
          if (done) return;
          if ((await body(value)) === "return") return void (await it.return());
        }
      }
      // kept_iterator: the program keeps the iterator it loops over.
      const source = step.kept_iterator ? (rec.kept = rec.turn[Symbol.asyncIterator]()) : rec.turn;
      for await (const item of source) if ((await body(item)) === "break") break;
    };
    const started = performance.now();
    try {
      await within(loop(), what);
    } catch (e) {
      if (e instanceof Hang) throw new Hang(`${e.message}; it took [${squeeze(items.map(nameOf))}]`);
      if (e === bodyError) raised = true;
      else thrown = e;
    }
    this.checkWithin(step, started, what);
    checkItems(items, expect, what);
    if (expect.raised === "body") {
      assert.ok(raised, `${what} did not let its body's error through (${thrown?.stack ?? "it ended"})`);
    } else if (expect.throws) {
      assert.ok(thrown, `${what} ended normally; expected it to throw ${expect.throws}`);
      this.checkError(thrown, expect, what, rec);
      const e = await within(
        rec.turn.result.then(
          () => undefined,
          (err) => err,
        ),
        `${step.turn}.result`,
      );
      assert.equal(e, thrown, `${what} throws the very error ${step.turn}.result rejects with`);
    } else {
      assert.equal(thrown, undefined, `${what} threw ${thrown?.code} ${thrown?.stack}`);
      assert.ok(!raised);
    }
  }

  /** A loop over client.events() in the background. */
  eventsLoop(step) {
    const rec = { items: [], ended: false, error: undefined, it: this.client.events(), resume: () => {} };
    this.loops.set(step.as, rec);
    rec.done = (async () => {
      try {
        for await (const item of rec.it) {
          rec.items.push(item);
          const name = nameOf(item);
          const keep = step.save?.[name];
          if (keep !== undefined && !this.saved.has(keep)) this.saved.set(keep, item.data);
          this.changes.notify();
          if (name === step.pause_after && !rec.paused) {
            rec.paused = true;
            await new Promise((r) => (rec.resume = r));
          }
          if (name === step.break_after) break;
        }
      } catch (e) {
        rec.error = e;
      } finally {
        rec.ended = true;
        this.changes.notify();
      }
    })();
  }
}

for (const scenario of scenarios) {
  const options = { timeout: 90_000 };
  if (scenario.only && scenario.only !== "node") options.skip = `${scenario.only} only: ${scenario.why}`;
  if (scenario.known?.node) options.todo = scenario.known.node;
  test(scenario.name, options, (t) => new Runner(t, scenario).run());
}
