// @ts-check
// OpenTelemetry for @koma/sdk (docs/tracing.md): a client's spans and
// metrics, made with the application's own `@opentelemetry/api`, an
// optional peer dependency required here when the first client that may be
// traced is made. Without it, or with no provider registered or given,
// nothing is made and nothing is recorded.
//
// What the spans and metrics are (names, kinds, attributes, times, parents,
// metric points) is decided once, in the core (`koma_transport::telemetry`),
// for both packages: the addon hands over its table and its records, and
// this file makes the API calls. Spans of a client's life (from the call
// that starts koma to `close()`), of each call and of each turn are made
// live, where the table puts them (`parent`: the caller's context, the API's
// context manager, AsyncLocalStorage under the Node SDK; or a root of its
// own) and with the link it names (`link`). A turn's child spans (`execute_tool`, `approval`)
// are made when it ends, from the core's record, with the times the core
// measured: the turn costs its spans, and an output event nothing.
"use strict";

/**
 * @typedef {typeof import("@opentelemetry/api")} Api
 * @typedef {import("@opentelemetry/api").Span} Span
 * @typedef {import("@opentelemetry/api").Tracer} Tracer
 * @typedef {import("@opentelemetry/api").Meter} Meter
 * @typedef {import("@opentelemetry/api").Context} Context
 * @typedef {import("@opentelemetry/api").Attributes} Attributes
 * @typedef {{name: string, kind: string, attributes: Attributes, parent: "caller" | "root", link: "caller" | "client"}} SpanSpec
 * @typedef {{name: string, kind: "histogram" | "counter", unit: string, description: string, buckets?: number[]}} InstrumentSpec
 * @typedef {{client: SpanSpec, call: SpanSpec & {remote: string}, turn: SpanSpec, error: string, instruments: InstrumentSpec[]}} Table
 * @typedef {{instrument: string, value: number, attributes: Attributes}} Point
 * @typedef {{name: string, kind: string, parent: number | null, start: number, end: number, attributes: Attributes, error: string | null}} ChildSpan
 * @typedef {{event?: string, attributes?: Attributes, error?: string | null, message?: string | null, end?: number | true, spans?: ChildSpan[], metrics?: Point[]}} Record
 * @typedef {{
 *   table: () => string,
 *   phaseOf: (client: object) => string,
 *   traceContext: (client: object, traceId: string, spanId: string, flags: number, traceState: string) => boolean,
 * }} Hooks
 */

/** The API: undefined until looked for, null when it is not installed. @type {Api | null | undefined} */
let otel;
/** @type {Hooks | undefined} */
let hooks;
/** The core's table, read once. @type {Table | undefined} */
let table;
/** @type {WeakMap<object, Telemetry>} */
const byClient = new WeakMap();
/** Some client is traced: until then `of()` costs one branch. */
let any = false;

/** `@opentelemetry/api`, as the application has it, or null. */
function api() {
  if (otel === undefined) {
    try {
      otel = require("@opentelemetry/api");
    } catch {
      otel = null;
    }
  }
  return otel;
}

/**
 * Whether a tracer or meter provider is registered, asked of the API's
 * global registry (which every copy of the API 1.x shares) without loading
 * the API: a program that does not trace loads nothing.
 */
function registered() {
  const global = /** @type {any} */ (globalThis)[Symbol.for("opentelemetry.js.api.1")];
  return global !== undefined && (global.trace !== undefined || global.metrics !== undefined);
}

/** `index.js` hands over what only it has. */
function init(/** @type {Hooks} */ h) {
  hooks = h;
}

/** The telemetry of `client`, if it is traced. */
function of(/** @type {object} */ client) {
  return any ? byClient.get(client) : undefined;
}

/** The registered global provider's tracer, or the given provider's. */
function tracerFrom(/** @type {Api} */ a, /** @type {any} */ given, /** @type {string} */ version) {
  let provider = given;
  if (provider === undefined) {
    const global = /** @type {any} */ (a.trace.getTracerProvider());
    const delegate = typeof global.getDelegate === "function" ? global.getDelegate() : global;
    // With none registered, the global proxy delegates to the API's no-op.
    if (delegate === /** @type {any} */ (new a.ProxyTracerProvider()).getDelegate()) return undefined;
    provider = global;
  }
  return /** @type {Tracer} */ (provider.getTracer("@koma/sdk", version));
}

function meterFrom(/** @type {Api} */ a, /** @type {any} */ given, /** @type {string} */ version) {
  const provider = given === undefined ? a.metrics.getMeterProvider() : given;
  const meter = /** @type {Meter} */ (provider.getMeter("@koma/sdk", version));
  // With none registered, the global provider is the API's no-op.
  return given === undefined && meter === a.createNoopMeter() ? undefined : meter;
}

/**
 * The addon calls this as a client is made (unless `telemetry: false`):
 * its Telemetry, or undefined when nothing would be recorded.
 * @param {object} client
 * @param {object | undefined} tracerProvider
 * @param {object | undefined} meterProvider
 */
function makeTelemetry(client, tracerProvider, meterProvider) {
  if (tracerProvider === undefined && meterProvider === undefined && !registered()) return undefined;
  const a = api();
  if (a === null || hooks === undefined) return undefined;
  const version = require("../package.json").version;
  const tracer = tracerFrom(a, tracerProvider, version);
  const meter = meterFrom(a, meterProvider, version);
  if (tracer === undefined && meter === undefined) return undefined;
  table ??= /** @type {Table} */ (JSON.parse(hooks.table()));
  const t = new Telemetry(a, table, tracer, meter);
  byClient.set(client, t);
  any = true;
  return t;
}

/** `Date.now() - performance.now()`, taken once (see `now()`). @type {number | undefined} */
let anchor;

/**
 * Now, in epoch milliseconds with a fraction, for every time of this file's
 * spans: the wall clock (`Date.now()`, which the SDK starts its own spans
 * at), read once, then carried on by the monotonic `performance.now()`, so
 * that the spans of a client and of its turns are in order to the
 * microsecond and a turn's child spans (the core's times added to the turn's
 * start) fall inside it. (`performance.timeOrigin` can be tens of
 * milliseconds off the wall clock early in a process.)
 */
function now() {
  anchor ??= Date.now() - performance.now();
  return anchor + performance.now();
}

/** The first line of a message (an error's carries koma's stderr after it). */
function firstLine(/** @type {unknown} */ m) {
  return typeof m === "string" ? m.split("\n", 1)[0] : undefined;
}

class Telemetry {
  /**
   * @param {Api} a
   * @param {Table} t
   * @param {Tracer | undefined} tracer
   * @param {Meter | undefined} meter
   */
  constructor(a, t, tracer, meter) {
    this.api = a;
    this.table = t;
    this.tracer = tracer;
    /** Each instrument's `record`/`add`, by name. @type {Map<string, (value: number, attributes: Attributes) => void>} */
    this.instruments = new Map();
    if (meter !== undefined) {
      for (const i of t.instruments) {
        const options = {
          unit: i.unit,
          description: i.description,
          advice: i.buckets ? { explicitBucketBoundaries: i.buckets } : undefined,
        };
        if (i.kind === "histogram") {
          const h = meter.createHistogram(i.name, options);
          this.instruments.set(i.name, (v, at) => h.record(v, at));
        } else {
          const c = meter.createCounter(i.name, options);
          this.instruments.set(i.name, (v, at) => c.add(v, at));
        }
      }
    }
    /** The call that starts koma was made. */
    this.started = false;
    /** @type {Span | undefined} */
    this.clientSpan = undefined;
    this.clientEnded = false;
    /** Each call's attributes, by method. @type {Map<string, Attributes>} */
    this.calls = new Map();
  }

  kind(/** @type {string} */ k) {
    return k === "client" ? this.api.SpanKind.CLIENT : this.api.SpanKind.INTERNAL;
  }

  /**
   * The context a span of `spec` starts in, from the caller's, and its
   * options with the one link the table names (`parent`, `link`).
   * @param {SpanSpec} spec
   * @param {Context} caller
   * @param {Attributes} attributes
   * @param {number} startTime
   * @returns {[Context, import("@opentelemetry/api").SpanOptions]}
   */
  placed(spec, caller, attributes, startTime) {
    const { trace } = this.api;
    const linked =
      spec.link === "client" ? this.clientSpan?.spanContext() : spec.link === "caller" ? trace.getSpan(caller)?.spanContext() : undefined;
    const links = linked !== undefined && trace.isSpanContextValid(linked) ? [{ context: linked }] : undefined;
    const context = spec.parent === "root" ? trace.deleteSpan(caller) : caller;
    return [context, { kind: this.kind(spec.kind), attributes, startTime, links }];
  }

  /**
   * A record's attributes, status and metric points, on `span` (if any).
   * @param {Span | undefined} span
   * @param {Record} r
   */
  apply(span, r) {
    if (span !== undefined) {
      if (r.attributes) span.setAttributes(r.attributes);
      if (r.error) {
        span.setAttribute(this.table.error, r.error);
        span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: r.message ?? undefined });
      }
    }
    for (const m of r.metrics ?? []) this.instruments.get(m.instrument)?.(m.value, m.attributes);
  }

  /**
   * `client` is called (`index.js`): `wire` is the method's wire name (or
   * `probe`, `close`, `run`); `invoke()` makes the call. A span per call
   * but `run()` (its turn has one).
   * @template T
   * @param {string} wire
   * @param {object} client
   * @param {() => Promise<T>} invoke
   * @returns {Promise<T>}
   */
  call(wire, client, invoke) {
    if (wire !== "close") this.starting(client);
    const tracer = this.tracer;
    if (tracer === undefined || wire === "run") return invoke();
    const spec = this.table.call;
    let attributes = this.calls.get(wire);
    if (attributes === undefined) {
      attributes = {};
      for (const [k, v] of Object.entries(spec.attributes)) attributes[k] = v === "{method}" ? wire : v;
      this.calls.set(wire, attributes);
    }
    const [context, options] = this.placed(spec, this.api.context.active(), attributes, now());
    const span = tracer.startSpan(spec.name.replace("{method}", wire), options, context);
    const failed = (/** @type {any} */ e) => {
      if (e?.remote?.code !== undefined) span.setAttribute(spec.remote, String(e.remote.code));
      this.apply(span, { error: typeof e?.code === "string" ? e.code : "_OTHER", message: firstLine(e?.message) });
      span.end(now());
    };
    let p;
    try {
      p = invoke();
    } catch (e) {
      failed(e);
      throw e;
    }
    return p.then(
      (v) => {
        span.end(now());
        return v;
      },
      (e) => {
        failed(e);
        throw e;
      },
    );
  }

  /**
   * Before a call that may start koma: the client's span starts (a root of
   * its own, linked to the caller's span: see the core's table), and koma
   * will get its context.
   */
  starting(/** @type {object} */ client) {
    if (this.started || hooks === undefined || hooks.phaseOf(client) !== "not_started") return;
    this.started = true;
    if (this.tracer === undefined) return;
    const spec = this.table.client;
    const [context, options] = this.placed(spec, this.api.context.active(), spec.attributes, now());
    const span = this.tracer.startSpan(spec.name, options, context);
    this.clientSpan = span;
    const c = span.spanContext();
    hooks.traceContext(client, c.traceId, c.spanId, c.traceFlags, c.traceState ? c.traceState.serialize() : "");
  }

  /** The notes of the client's life (the addon, with its wakes): `[Record, ...]` as JSON. */
  notes(/** @type {string} */ json) {
    for (const r of /** @type {Record[]} */ (JSON.parse(json))) {
      const span = this.clientEnded ? undefined : this.clientSpan;
      if (r.event !== undefined && span !== undefined) span.addEvent(r.event, now());
      this.apply(span, r);
      if (r.end === true && span !== undefined) {
        this.clientEnded = true;
        span.end(now());
      }
    }
  }

  /** A turn starts (`lib/turn.js`), in the caller's context. */
  turn() {
    return new TurnTrace(this);
  }
}

/** A turn's spans: its own, live, and its children, from the core's record at its end. */
class TurnTrace {
  /** @param {Telemetry} t */
  constructor(t) {
    this.t = t;
    /** @type {Context} */
    this.parent = t.api.context.active();
    /** The span's start, the origin of the record's times (see `now()`). */
    this.t0 = now();
    const spec = t.table.turn;
    const [context, options] = t.placed(spec, this.parent, spec.attributes, this.t0);
    /** The context of the turn's children (its span's parent's). */
    this.parent = context;
    /** @type {Span | undefined} */
    this.span = t.tracer?.startSpan(spec.name, options, context);
  }

  /**
   * `fn(arg)` in the turn span's context: an approval handler's own spans are the turn's children.
   * @template A, R
   * @param {(arg: A) => R} fn
   * @param {A} arg
   * @returns {R}
   */
  run(fn, arg) {
    const { api } = this.t;
    return this.span === undefined ? fn(arg) : api.context.with(api.trace.setSpan(this.parent, this.span), fn, undefined, arg);
  }

  /**
   * The turn ended: the core's record (JSON text), which a traced client's
   * turn always has (a turn refused at once gets one without a timeline).
   * @param {string | undefined} record
   */
  end(record) {
    const { t, span } = this;
    /** @type {Record} */
    const r = record === undefined ? {} : JSON.parse(record);
    t.apply(span, r);
    if (span === undefined || t.tracer === undefined) return;
    const at = (/** @type {number} */ ns) => this.t0 + ns / 1e6;
    const context = t.api.trace.setSpan(this.parent, span);
    /** @type {Span[]} */
    const made = [];
    for (const s of r.spans ?? []) {
      const parent = s.parent === null ? context : t.api.trace.setSpan(this.parent, made[s.parent]);
      const child = t.tracer.startSpan(s.name, { kind: t.kind(s.kind), attributes: s.attributes, startTime: at(s.start) }, parent);
      t.apply(child, { error: s.error });
      child.end(at(s.end));
      made.push(child);
    }
    span.end(typeof r.end === "number" ? at(r.end) : undefined);
  }
}

module.exports = { init, of, makeTelemetry, Telemetry, TurnTrace };
