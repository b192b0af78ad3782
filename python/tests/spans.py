"""OpenTelemetry's SDK for the tests: an in-memory span exporter and a metric
reader, and the exported spans as a tree (each span under its parent,
siblings in the order they started). The telemetry tests and the scenario
runner use it; __test__/spans.mjs is its twin."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@dataclass
class Node:
    name: str
    attributes: dict[str, Any]
    #: `error.type`, or None.
    error: str | None
    status: Any
    start: int
    end: int
    span: ReadableSpan
    children: list[Node] = field(default_factory=list)
    #: The names of the exported spans it links to.
    links: list[str] = field(default_factory=list)


class Tracing:
    """A tracer provider and a meter provider to give a client, and what they got."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        #: The application's own tracer (its spans are the callers').
        self.tracer = self.tracer_provider.get_tracer("test")

    def providers(self) -> dict[str, Any]:
        return {"tracer_provider": self.tracer_provider, "meter_provider": self.meter_provider}

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def tree(self) -> list[Node]:
        return tree(self.spans())

    def metrics(self) -> dict[str, tuple[str, list[Any]]]:
        """Every metric's `(unit, points)`, by name."""
        data = self.reader.get_metrics_data()
        out: dict[str, tuple[str, list[Any]]] = {}
        if data is None:
            return out
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    out[m.name] = (m.unit or "", list(m.data.data_points))
        return out


def tree(spans: list[ReadableSpan]) -> list[Node]:
    nodes: dict[int, Node] = {}
    for s in spans:
        a = dict(s.attributes or {})
        error = a.get("error.type")
        nodes[s.context.span_id] = Node(
            s.name,
            a,
            error if isinstance(error, str) else None,
            s.status.status_code,
            s.start_time or 0,
            s.end_time or 0,
            s,
        )
    roots: list[Node] = []
    for n in nodes.values():
        n.links = [nodes[link.context.span_id].name for link in n.span.links if link.context.span_id in nodes]
        parent = n.span.parent.span_id if n.span.parent is not None else None
        (nodes[parent].children if parent in nodes else roots).append(n)

    def order(ns: list[Node]) -> list[Node]:
        ns.sort(key=lambda n: (n.start, n.name))
        for n in ns:
            order(n.children)
        return ns

    return order(roots)


def shape(nodes: list[Node]) -> list[Any]:
    """A tree as names only: `[name, [children...]]` (a leaf is `[name]`)."""
    return [[n.name, shape(n.children)] if n.children else [n.name] for n in nodes]


def find(nodes: list[Node], name: str) -> Node | None:
    for n in nodes:
        if n.name == name:
            return n
        inner = find(n.children, name)
        if inner is not None:
            return inner
    return None


def waterfall(nodes: list[Node], *, width: int = 36, keys: tuple[str, ...] = ()) -> str:
    """A trace as text, a waterfall: a row per span, indented under its
    parent, with a bar on one time axis (`width` characters for the whole
    trace), its duration, and the values of `keys` among its attributes (and
    its error.type); a root says what it links to (`link: POST /deploy`).
    What docs/tracing-python.md shows, from exported spans."""
    rows: list[tuple[Node, int]] = []

    def walk(ns: list[Node], depth: int) -> None:
        for n in ns:
            rows.append((n, depth))
            walk(n.children, depth + 1)

    walk(nodes, 0)
    t0 = min(n.start for n, _ in rows)
    t1 = max(n.end for n, _ in rows)
    total = (t1 - t0) or 1

    def at(t: int) -> int:
        return round((t - t0) / total * width)

    labels = ["  " * d + n.name for n, d in rows]
    wide = max(len(label) for label in labels)
    out = []
    for (n, depth), label in zip(rows, labels, strict=True):
        a = min(at(n.start), width - 1)
        b = max(at(n.end), a + 1)
        bar = " " * a + "█" * (b - a) + " " * (width - b)
        ms = f"{(n.end - n.start) / 1e6:.1f} ms".rjust(9)
        shown = [f"{k}={_text(n.attributes[k])}" for k in (*keys, "error.type") if k in n.attributes]
        if depth == 0:
            shown += [f"link: {name}" for name in n.links]
        out.append(f"{label.ljust(wide)} |{bar}| {ms}  {' '.join(shown)}".rstrip())
    return "\n".join(out)


def _text(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)
