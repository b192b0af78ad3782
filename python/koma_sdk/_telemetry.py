"""OpenTelemetry for koma_sdk (python/README.md, "Tracing with OpenTelemetry"):
a client's spans and metrics, made with the application's own
`opentelemetry-api` (the extra `koma_sdk[otel]`), imported here when the
first client that may be traced is made. Without it, or with no provider
set or given, nothing is made and nothing is recorded.

What the spans and metrics are (names, kinds, attributes, times, parents,
metric points) is decided once, in the core (`koma_transport::telemetry`),
for both packages: the native module hands over its table and its records,
and this module makes the API calls. Spans of a client's life (from the call
that starts koma to `close()`), of each call and of each turn are made live,
where the table puts them (`parent`: the caller's context, contextvars; or a
root of its own) and with the link it names (`link`). A turn's child spans (`execute_tool`,
`approval`) are made when it ends, from the core's record, with the times
the core measured: the turn costs its spans, and an output event nothing.
"""

from __future__ import annotations

import inspect
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from . import _native

T = TypeVar("T")


class TracerProviderLike(Protocol):
    """An OpenTelemetry `TracerProvider` (what `tracer_provider=` takes)."""

    def get_tracer(self, name: str, /) -> Any: ...


class MeterProviderLike(Protocol):
    """An OpenTelemetry `MeterProvider` (what `meter_provider=` takes)."""

    def get_meter(self, name: str, /) -> Any: ...


#: `(trace, metrics, context)` of the API; False when it is not installed; None until looked for.
_api: Any = None
#: The core's table, read once.
_table: Any = None


def _load() -> Any:
    global _api
    if _api is None:
        try:
            from opentelemetry import context, metrics, trace
        except ImportError:
            _api = False
        else:
            _api = (trace, metrics, context)
    return _api or None


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("koma-sdk")
    except Exception:
        return ""


def _tracer(trace: Any, given: Any, version: str) -> Any:
    provider = given
    if provider is None:
        provider = trace.get_tracer_provider()
        # With none set, the global provider is the API's proxy (or no-op).
        if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
            return None
    return provider.get_tracer("koma_sdk", version)


def _meter(metrics: Any, given: Any, version: str) -> Any:
    provider = given
    if provider is None:
        provider = metrics.get_meter_provider()
        if isinstance(provider, metrics.NoOpMeterProvider) or type(provider).__name__ == "_ProxyMeterProvider":
            return None
    return provider.get_meter("koma_sdk", version)


def make(tracer_provider: Any, meter_provider: Any) -> Telemetry | None:
    """A client's telemetry, or None when nothing would be recorded."""
    if tracer_provider is None and meter_provider is None and "opentelemetry" not in sys.modules:
        return None  # nobody set a provider (that imports the API): nothing is imported here either
    api = _load()
    if api is None:
        return None
    trace, metrics, context = api
    version = _version()
    tracer = _tracer(trace, tracer_provider, version)
    meter = _meter(metrics, meter_provider, version)
    if tracer is None and meter is None:
        return None
    global _table
    if _table is None:
        _table = json.loads(_native.telemetry_table())
    return Telemetry(api, _table, tracer, meter)


def _first_line(error: Any) -> str | None:
    """The first line of an error's message (a `KomaError`'s carries koma's stderr after it)."""
    message = getattr(error, "message", None)
    if not isinstance(message, str):
        message = str(error)
    return message.split("\n", 1)[0]


class Telemetry:
    """A traced client's: its spans and instruments."""

    __slots__ = ("_trace", "_context", "_table", "_tracer", "_instruments", "_started", "_client_span")

    def __init__(self, api: Any, table: Any, tracer: Any, meter: Any) -> None:
        self._trace, _, self._context = api
        self._table = table
        self._tracer = tracer
        #: Each instrument's `record`/`add`, by name.
        self._instruments: dict[str, Callable[[Any, Any], None]] = {}
        if meter is not None:
            for i in table["instruments"]:
                kw: dict[str, Any] = {"unit": i["unit"], "description": i["description"]}
                if i["kind"] == "histogram":
                    try:
                        h = meter.create_histogram(
                            i["name"], explicit_bucket_boundaries_advisory=i.get("buckets"), **kw
                        )
                    except TypeError:  # an API before the advice
                        h = meter.create_histogram(i["name"], **kw)
                    self._instruments[i["name"]] = h.record
                else:
                    self._instruments[i["name"]] = meter.create_counter(i["name"], **kw).add
        self._started = False
        self._client_span: Any = None

    def _kind(self, kind: str) -> Any:
        sk = self._trace.SpanKind
        return sk.CLIENT if kind == "client" else sk.INTERNAL

    def _placed(self, spec: dict[str, Any], caller: Any) -> tuple[Any, list[Any]]:
        """The context a span of `spec` starts in, from the caller's, and the
        one link the table names (`parent`, `link`)."""
        trace = self._trace
        linked = None
        if spec["link"] == "client" and self._client_span is not None:
            linked = self._client_span.get_span_context()
        elif spec["link"] == "caller":
            linked = trace.get_current_span(caller).get_span_context()
        links = [trace.Link(linked)] if linked is not None and linked.is_valid else []
        if spec["parent"] == "root":
            caller = trace.set_span_in_context(trace.INVALID_SPAN, caller)
        return caller, links

    def apply(self, span: Any, r: dict[str, Any]) -> None:
        """A record's attributes, status and metric points, on `span` (if any)."""
        if span is not None:
            attributes = r.get("attributes")
            if attributes:
                span.set_attributes(attributes)
            error = r.get("error")
            if error:
                span.set_attribute(self._table["error"], error)
                span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, r.get("message")))
        for m in r.get("metrics") or ():
            record = self._instruments.get(m["instrument"])
            if record is not None:
                record(m["value"], m["attributes"])

    def starting(self, native: _native.NativeClient) -> None:
        """Before a call that may start koma: the client's span starts, and koma will get its context."""
        if self._started or native.phase != "not_started":
            return
        self._started = True
        if self._tracer is None:
            return
        spec = self._table["client"]
        context, links = self._placed(spec, self._context.get_current())
        span = self._tracer.start_span(
            spec["name"], context=context, kind=self._kind(spec["kind"]), attributes=spec["attributes"], links=links
        )
        self._client_span = span
        c = span.get_span_context()
        native.trace_context(
            format(c.trace_id, "032x"), format(c.span_id, "016x"), int(c.trace_flags), c.trace_state.to_header()
        )

    async def call(self, method: str, native: _native.NativeClient, work: Awaitable[T]) -> T:
        """A call of the client's (its wire name, or `probe`, `close`), in its span."""
        if method != "close":
            self.starting(native)
        tracer = self._tracer
        if tracer is None:
            return await work
        spec = self._table["call"]
        attributes = {k: method if v == "{method}" else v for k, v in spec["attributes"].items()}
        context, links = self._placed(spec, self._context.get_current())
        span = tracer.start_span(
            spec["name"].replace("{method}", method),
            context=context,
            kind=self._kind(spec["kind"]),
            attributes=attributes,
            links=links,
        )
        try:
            value = await work
        except BaseException as e:
            remote = getattr(e, "remote", None)
            if remote is not None:
                span.set_attribute(spec["remote"], str(remote.code))
            code = getattr(e, "code", None)
            if not isinstance(code, str):
                code = type(e).__name__  # a cancellation, a bug
            self.apply(span, {"error": code, "message": _first_line(e)})
            span.end()
            raise
        span.end()
        return value

    def notes(self, text: str) -> None:
        """The notes of the client's life, `[record, ...]` as JSON (with each wake)."""
        for r in json.loads(text):
            span = self._client_span
            event = r.get("event")
            if event is not None and span is not None:
                span.add_event(event)
            self.apply(span, r)
            if r.get("end") is True and span is not None:
                self._client_span = None
                span.end()

    def turn(self) -> TurnTrace:
        """A turn starts (`_turn.Turn`), in the caller's context."""
        return TurnTrace(self)


class TurnTrace:
    """A turn's spans: its own, live, and its children, from the core's record at its end."""

    __slots__ = ("_t", "_parent", "_t0", "span")

    def __init__(self, t: Telemetry) -> None:
        self._t = t
        #: The span's start, the origin of the record's times (nanoseconds).
        self._t0 = time.time_ns()
        spec = t._table["turn"]
        self.span: Any = None
        #: The context of the turn's span (its children's, with the span set).
        self._parent = t._context.get_current()
        if t._tracer is not None:
            self._parent, links = t._placed(spec, self._parent)
            self.span = t._tracer.start_span(
                spec["name"],
                context=self._parent,
                kind=t._kind(spec["kind"]),
                attributes=spec["attributes"],
                start_time=self._t0,
                links=links,
            )

    def run(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        """`fn(arg)` in the turn span's context (an approval handler: its own
        spans are the turn's); an awaitable it returns is awaited in it too."""
        if self.span is None:
            return fn(arg)
        context = self._t._context
        within = self._t._trace.set_span_in_context(self.span, self._parent)
        token = context.attach(within)
        try:
            answer = fn(arg)
        finally:
            context.detach(token)
        if not inspect.isawaitable(answer):
            return answer

        async def awaited() -> Any:
            token = context.attach(within)
            try:
                return await answer
            finally:
                context.detach(token)

        return awaited()

    def end(self, record: str | None) -> None:
        """The turn ended: the core's record (JSON text), which a traced
        client's turn always has (a turn refused at once gets one without a
        timeline)."""
        t, span = self._t, self.span
        r: dict[str, Any] = {} if record is None else json.loads(record)
        t.apply(span, r)
        if span is None:
            return
        trace, t0 = t._trace, self._t0
        made: list[Any] = []
        for s in r.get("spans") or ():
            parent = span if s["parent"] is None else made[s["parent"]]
            within = trace.set_span_in_context(parent, self._parent)
            child = t._tracer.start_span(
                s["name"],
                context=within,
                kind=t._kind(s["kind"]),
                attributes=s["attributes"],
                start_time=t0 + s["start"],
            )
            t.apply(child, {"error": s["error"]})
            child.end(end_time=t0 + s["end"])
            made.append(child)
        end = r.get("end")
        span.end(end_time=t0 + end if isinstance(end, int) else None)
