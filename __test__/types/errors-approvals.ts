// Type-checked with `tsc --strict` (typescript.test.mjs and `npm test`), never run:
// the natural async approval handler, errors narrowed by `code`, `env: process.env`.
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { trace, metrics } from "@opentelemetry/api";
import {
  Client,
  KomaError,
  isKomaError,
  RemoteFailure,
  type TimedOut,
  TransportFailure,
  type ApprovalDecision,
  type ApprovalHandler,
  type PartialTurnResult,
} from "../../index.js";

declare function ask(): Promise<void>;
declare const client: Client;

export async function approvals(): Promise<void> {
  // An async handler that awaits a person, then answers a literal.
  await client.run(
    { text: "fix the typo" },
    {
      // biome-ignore lint/correctness/noUnusedFunctionParameters: the handler as issue 26 wrote it
      onApproval: async (req) => {
        await ask();
        return "deny";
      },
    },
  );
  const turn = client.turn(
    { text: "fix the typo" },
    {
      onApproval: async (req) => {
        await ask();
        return req.tool === "write_file" ? "allow" : "deny";
      },
    },
  );
  void turn;
  // A plain function, and a policy.
  await client.run({ text: "x" }, { onApproval: (req) => (req.tool === "read_file" ? "allow" : "deny") });
  await client.run({ text: "x" }, { onApproval: () => "allow" });
  await client.run({ text: "x" }, { onApproval: "deny" });
  // The exported types.
  const decision: ApprovalDecision = "allow";
  const handler: ApprovalHandler = async () => {
    await ask();
    return decision;
  };
  await client.run({ text: "x" }, { onApproval: handler });
  // @ts-expect-error a plain function answers "allow" or "deny"
  void client.run({ text: "x" }, { onApproval: () => "maybe" });
  // @ts-expect-error a policy is "allow" or "deny"
  void client.run({ text: "x" }, { onApproval: "maybe" });
  // @ts-expect-error an async handler answers a string
  void client.run({ text: "x" }, { onApproval: async () => 1 });
  // @ts-expect-error ApprovalDecision is the two answers
  const wrong: ApprovalDecision = "ask";
  void wrong;
}

export async function errors(): Promise<void> {
  try {
    await client.submit({ text: "run the tests" });
  } catch (err) {
    // The README's snippet, as written.
    if (isKomaError(err) && err.code === "remote" && err.remote.code === "busy") console.log("a turn is running");
    if (err instanceof KomaError && err.code === "remote") {
      const code: string = err.remote.code;
      void code;
    }
    if (isKomaError(err) && err.code === "timeout") {
      const name: "TimeoutError" = err.name;
      void name;
    }
    if (err instanceof KomaError && err.code === "aborted") {
      const name: "AbortError" = err.name;
      void name;
    }
    if (isKomaError(err) && err.code !== "remote") {
      // @ts-expect-error only a remote error has `remote`
      void err.remote;
      const name: "KomaError" | "AbortError" | "TimeoutError" = err.name;
      void name;
    }
    if (isKomaError(err)) {
      const asError: Error = err;
      const result: PartialTurnResult | undefined = err.result;
      const cause: unknown = err.cause;
      void asError;
      void result;
      void cause;
    }
    // @ts-expect-error an unknown caught value has no code
    void err.code;
  }
}

// A program's tests make the package's errors: `new KomaError(code, ...)` is
// of the class of its code, which narrows as a caught error does.
export function constructed(): void {
  const timeout = new KomaError("timeout", "x");
  const name: "TimeoutError" = timeout.name;
  const asTimedOut: TimedOut = timeout;
  const failed = new TransportFailure("koma exited", { cause: new Error("EPIPE") });
  const code: "transport_failure" = failed.code;
  const remote = new RemoteFailure("busy", { remote: { code: "busy", message: "a turn runs" } });
  const remoteCode: string = remote.remote.code;
  // @ts-expect-error a remote failure has koma's error
  void new RemoteFailure("busy");
  // @ts-expect-error only the codes of the table
  void new KomaError("bogus", "x");
  const caught: unknown = failed;
  if (caught instanceof TransportFailure) {
    const narrowed: "transport_failure" = caught.code;
    void narrowed;
  }
  if (caught instanceof KomaError && caught.code === "remote") {
    const data: unknown = caught.remote.data;
    void data;
  }
  void [name, asTimedOut, code, remoteCode];
}

export function environment(): void {
  void new Client({ executable: "koma", env: process.env });
  void new Client({ executable: "koma", env: { ...process.env, KOMA_SIM_DELAY_MS: "0" } });
  // @ts-expect-error a variable's value is a string
  void new Client({ executable: "koma", env: { N: 1 } });
}

export function telemetry(): void {
  // The SDK's providers, and the API's globals, are what the options take.
  void new Client({
    executable: "koma",
    tracerProvider: new BasicTracerProvider(),
    meterProvider: new MeterProvider(),
    captureContent: true,
  });
  void new Client({ executable: "koma", tracerProvider: trace.getTracerProvider(), meterProvider: metrics.getMeterProvider() });
  void new Client({ executable: "koma", telemetry: false });
  // @ts-expect-error a provider has getTracer()
  void new Client({ executable: "koma", tracerProvider: {} });
}

export function options(ac: AbortController): void {
  void client.events({ signal: ac.signal, timeout: 1000 });
  void client.close({ timeout: 1000 });
  // @ts-expect-error a call's options are { signal?, timeout? }
  void client.events({ deadline: 1 });
}

// Under exactOptionalPropertyTypes, an option may be given as `undefined`
// wherever the package takes it so (a value that may be missing).
export function explicitUndefined(maybeSignal: AbortSignal | undefined, maybeMs: number | undefined): void {
  void client.state({ signal: maybeSignal });
  void client.state({ timeout: undefined });
  void client.create({ cwd: undefined, model: undefined });
  void client.turn({ text: "x" }, { mode: undefined, onApproval: undefined, signal: maybeSignal, timeout: maybeMs });
  void client.run({ text: "x" }, { onApproval: "deny", timeout: maybeMs });
  void new Client({ executable: "koma", cwd: undefined, trace: undefined, helloTimeout: undefined });
}
