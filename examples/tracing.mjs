// OpenTelemetry: a request's trace, with koma's client, its calls and a turn
// (its tool calls and their approvals) in it, printed by the SDK's console
// exporter. Beside @koma/sdk it needs @opentelemetry/api,
// @opentelemetry/sdk-trace-base and @opentelemetry/context-async-hooks (or
// @opentelemetry/sdk-node, which sets up both). See docs/tracing.md.
//   node tracing.mjs
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@koma/sdk";
import { simPath } from "@koma/sdk/sim";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, ConsoleSpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

// Before any client is made: a client looks for a provider when it is made.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())] }));

const client = new Client({ executable: simPath, env: { KOMA_SIM_HOME: mkdtempSync(join(tmpdir(), "koma-tracing-")) } });
await trace.getTracer("my-app").startActiveSpan("handle request", async (span) => {
  await client.create({});
  const result = await client.run({ text: "fix notes.txt" }, { onApproval: "allow" });
  console.log(`turn ${result.turn}: ${result.status}`);
  await client.close();
  span.end();
});
