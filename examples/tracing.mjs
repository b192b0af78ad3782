// OpenTelemetry: a request's trace, with koma's calls and a turn (its tool
// calls and their approvals) in it, and the client's life, a trace of its
// own linked to the request, printed by the SDK's console exporter; then
// the metrics the client recorded, printed by the metrics' console exporter.
// Beside @koma/sdk it needs @opentelemetry/api, @opentelemetry/sdk-trace-base,
// @opentelemetry/sdk-metrics and @opentelemetry/context-async-hooks (or
// @opentelemetry/sdk-node, which sets them up). See docs/tracing.md.
//   node tracing.mjs
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@koma/sdk";
import { simPath } from "@koma/sdk/sim";
import { context, metrics, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { ConsoleMetricExporter, MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, ConsoleSpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

// Before any client is made: a client looks for providers when it is made.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())] }));
const meterProvider = new MeterProvider({
  readers: [new PeriodicExportingMetricReader({ exporter: new ConsoleMetricExporter(), exportIntervalMillis: 60_000 })],
});
metrics.setGlobalMeterProvider(meterProvider);

// A request with a client of its own: made, used and closed in the request's span.
await trace.getTracer("my-app").startActiveSpan("handle request", async (span) => {
  const client = new Client({ executable: simPath, env: { KOMA_SIM_HOME: mkdtempSync(join(tmpdir(), "koma-tracing-")) } });
  try {
    await client.create({});
    const result = await client.run({ text: "fix notes.txt" }, { onApproval: "allow" });
    console.log(`turn ${result.turn}: ${result.status}`);
  } finally {
    await client.close();
    span.end();
  }
});
await meterProvider.shutdown(); // the metrics are exported (printed) now
