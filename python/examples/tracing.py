"""OpenTelemetry: a request's trace, with koma's calls and a turn (its tool
calls and their approvals) in it, and the client's life, a trace of its own
linked to the request, printed by the SDK's console exporter; then the
metrics the client recorded, printed by the metrics' console exporter.
Beside koma_sdk it needs opentelemetry-sdk:

    pip install './python[otel]' opentelemetry-sdk   # in a clone; once released: pip install 'koma-sdk[otel]' opentelemetry-sdk
    python tracing.py

See docs/tracing-python.md in the repository."""

import asyncio
import tempfile

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from koma_sdk import Client
from koma_sdk.sim import path

# Before any client is made: a client looks for providers when it is made.
tracer_provider = TracerProvider()
tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
trace.set_tracer_provider(tracer_provider)
meter_provider = MeterProvider(
    metric_readers=[PeriodicExportingMetricReader(ConsoleMetricExporter(), export_interval_millis=60_000)]
)
metrics.set_meter_provider(meter_provider)


async def main() -> None:
    # A request with a client of its own: made, used and closed in the request's span.
    with trace.get_tracer("my-app").start_as_current_span("handle request"):
        async with Client(path(), env={"KOMA_SIM_HOME": tempfile.mkdtemp()}) as client:
            await client.create()
            result = await client.run("fix notes.txt", on_approval="allow")
            print(f"turn {result.turn}: {result.status}")


asyncio.run(main())
meter_provider.shutdown()  # the metrics are exported (printed) now
