// OpenTelemetry's SDK for the tests: an in-memory span exporter and a metric
// reader the test collects from, and the exported spans as a tree (each
// span under its parent, siblings in the order they started). The telemetry
// tests and the scenario runner use it; python/tests/spans.py is its twin.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
export const api = require("@opentelemetry/api");
const { AsyncLocalStorageContextManager } = require("@opentelemetry/context-async-hooks");
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require("@opentelemetry/sdk-trace-base");
const { MeterProvider, MetricReader } = require("@opentelemetry/sdk-metrics");

// The caller's context follows async calls (what the Node SDK registers).
api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

class Reader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}

/** A tracer provider and a meter provider to give a client, and what they got. */
export function tracing() {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const reader = new Reader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    tracerProvider,
    meterProvider,
    /** The application's own tracer (its spans are the callers'). */
    tracer: tracerProvider.getTracer("test"),
    spans: () => exporter.getFinishedSpans(),
    tree: () => tree(exporter.getFinishedSpans()),
    /** Every metric's points, by name: `[{attributes, value}]`. */
    async metrics() {
      const { resourceMetrics } = await reader.collect();
      const out = {};
      for (const scope of resourceMetrics.scopeMetrics)
        for (const m of scope.metrics) out[m.descriptor.name] = { unit: m.descriptor.unit, points: m.dataPoints };
      return out;
    },
  };
}

const ns = ([s, n]) => BigInt(s) * 1_000_000_000n + BigInt(n);
const parentOf = (s) => s.parentSpanContext?.spanId ?? s.parentSpanId;

/**
 * The spans as a tree: `{name, attributes, error (error.type or null), status
 * (the status code), start, end (ns, BigInt), links (the names of the
 * exported spans it links to), span, children}`, each span under its parent
 * (a span whose parent was not exported is a root).
 */
export function tree(spans) {
  const nodes = new Map();
  for (const span of spans) {
    const error = span.attributes["error.type"] ?? null;
    const node = {
      name: span.name,
      attributes: span.attributes,
      error,
      status: span.status.code,
      start: ns(span.startTime),
      end: ns(span.endTime),
    };
    nodes.set(span.spanContext().spanId, { ...node, span, children: [] });
  }
  const roots = [];
  for (const n of nodes.values()) {
    n.links = (n.span.links ?? []).map((l) => nodes.get(l.context.spanId)?.name).filter((name) => name !== undefined);
    (nodes.get(parentOf(n.span))?.children ?? roots).push(n);
  }
  const order = (list) => {
    list.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const n of list) order(n.children);
    return list;
  };
  return order(roots);
}

/** A tree as names only: `[name, [children...]]` (a leaf is `[name]`). */
export function shape(nodes) {
  return nodes.map((n) => (n.children.length ? [n.name, shape(n.children)] : [n.name]));
}

/** The one node named `name`, anywhere in the tree (the first, depth first). */
export function find(nodes, name) {
  for (const n of nodes) {
    if (n.name === name) return n;
    const inner = find(n.children, name);
    if (inner) return inner;
  }
  return undefined;
}

/**
 * A trace as text, a waterfall: a row per span, indented under its parent,
 * with a bar on one time axis (`width` characters for the whole trace), its
 * duration, and the values of `keys` among its attributes (and its
 * error.type); a root says what it links to (`link: POST /deploy`). What
 * docs/tracing.md shows, from exported spans.
 */
export function waterfall(nodes, { width = 36, keys = [] } = {}) {
  const rows = [];
  const walk = (list, depth) => {
    for (const n of list) {
      rows.push({ n, depth });
      walk(n.children, depth + 1);
    }
  };
  walk(nodes, 0);
  const t0 = rows.reduce((m, { n }) => (n.start < m ? n.start : m), rows[0].n.start);
  const t1 = rows.reduce((m, { n }) => (n.end > m ? n.end : m), rows[0].n.end);
  const span = Number(t1 - t0) || 1;
  const at = (t) => Math.round((Number(t - t0) / span) * width);
  const label = (r) => `${"  ".repeat(r.depth)}${r.n.name}`;
  const wide = Math.max(...rows.map((r) => label(r).length));
  return rows
    .map((r) => {
      const a = Math.min(at(r.n.start), width - 1);
      const b = Math.max(at(r.n.end), a + 1);
      const bar = `${" ".repeat(a)}${"█".repeat(b - a)}${" ".repeat(width - b)}`;
      const ms = `${(Number(r.n.end - r.n.start) / 1e6).toFixed(1)} ms`.padStart(9);
      const shown = [...keys, "error.type"].filter((k) => r.n.attributes[k] !== undefined).map((k) => `${k}=${r.n.attributes[k]}`);
      if (r.depth === 0) shown.push(...r.n.links.map((name) => `link: ${name}`));
      return `${label(r).padEnd(wide)} |${bar}| ${ms}  ${shown.join(" ")}`.trimEnd();
    })
    .join("\n");
}
