"""OpenTelemetry: a request's trace, with koma's client, its calls and a turn
(its tool calls and their approvals) in it, printed by the SDK's console
exporter. Beside koma_sdk it needs opentelemetry-sdk:

    pip install 'koma-sdk[otel]' opentelemetry-sdk
    python tracing.py

See "Tracing with OpenTelemetry" in the README."""

import asyncio
import tempfile

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from koma_sdk import Client
from koma_sdk.sim import path

# Before any client is made: a client looks for a provider when it is made.
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
trace.set_tracer_provider(provider)


async def main() -> None:
    async with Client(path(), env={"KOMA_SIM_HOME": tempfile.mkdtemp()}) as client:
        with trace.get_tracer("my-app").start_as_current_span("handle request"):
            await client.create()
            result = await client.run("fix notes.txt", on_approval="allow")
            print(f"turn {result.turn}: {result.status}")


asyncio.run(main())
