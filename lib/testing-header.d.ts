// The start of testing.d.ts, by hand: the fake, the check of a scenario and
// the record (lib/testing.js, lib/scenario.js). The scenario format's types
// and `step` follow it, generated from schema/scenario.schema.json
// (scripts/generate.mjs); this file is written as testing.d.ts sees it, from
// the package's root.

/**
 * `@koma/sdk/testing`: a fake Koma that a test scripts. koma-sim plays a
 * scenario (what each turn does, and how requests are answered) as a real
 * child through the real transport, and records every request the program
 * sent. The scenario's types are koma-sim's scenario format (its JSON file;
 * docs/koma-sim.md, "Scenarios"): an object written by hand, or made with
 * `step`, is the file's JSON. docs/testing.md is the guide.
 *
 * ```ts
 * import { fakeKoma, step } from "@koma/sdk/testing";
 * test("denies the push", async (t) => {
 *   const koma = fakeKoma(t, { turns: [{ steps: [step.approval("git_push")] }] });
 *   await koma.client.create({});
 *   await koma.client.run({ text: "deploy" }, { onApproval: "deny" });
 *   assert.deepEqual(koma.approvals(), [{ approval: "a-1", decision: "deny" }]);
 * });
 * ```
 */
import type { ApprovalDecision, Client, ClientOptions, MethodName } from "./index.js";

/** Any JSON value (`input`, `output`, `data`, `result`). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

// ---------------------------------------------------------------- checking

/**
 * A scenario with a mistake, found before a fake starts. Its message is
 * koma-sim's: `bad scenario: <entry>: <field>: <problem>`, for example
 * `bad scenario: turns[0] (contains "deploy"): steps[1].do: unknown step "explode" (...)`.
 */
export declare class ScenarioError extends Error {
  private constructor();
  name: "ScenarioError";
  code: "ERR_KOMA_BAD_SCENARIO";
  /** The turn or method entry (`turns[0] (contains "deploy")`, `methods[1] (submit, call 2)`); `""` for a field of the scenario itself. */
  entry: string;
  /** The field, as a path from the entry (`steps[1].do`, `match.regex`). */
  field: string;
  /** What is wrong. */
  problem: string;
}

/**
 * Check a scenario as koma-sim checks its file (`@koma/sdk/sim`'s koma-sim
 * reads it, with `koma-sim check-scenario`, and exits); its JSON text, or a
 * {@link ScenarioError} naming its first mistake. `undefined` fields are
 * absent, as in JSON.
 */
export declare function checkScenario(scenario: Scenario): string;

// ---------------------------------------------------------------- the fake

/** A request koma-sim read, as its record has it. */
export interface RecordedRequest {
  /** Its number among the requests this koma-sim read, from 1. */
  n: number;
  /** The koma-sim process that read it. */
  pid: number;
  id: string;
  /** As sent (`null` when it was missing). */
  method: string | null;
  /** As sent (`{}` when missing). */
  params: Record<string, Json>;
}

/** The requests of a record file (`KOMA_SIM_RECORD`) in order; none when it is not there yet. */
export declare function readRecord(file: string): RecordedRequest[];

export interface FakeKomaOptions {
  /** koma-sim to run; default: `simPath` of `@koma/sdk/sim`. */
  executable?: string | undefined;
  /** More environment for koma-sim (`KOMA_SIM_FAULT`, ...). */
  env?: Record<string, string | undefined>;
  /** `KOMA_SIM_DELAY_MS`: 0 unless given (scripted steps are not paced by it). */
  delayMs?: number | undefined;
  /** The client's other options. */
  client?: Omit<ClientOptions, "executable" | "env"> | undefined;
}

/**
 * koma-sim playing a scenario. The constructor checks the scenario (a
 * {@link ScenarioError} before anything starts), writes it into a fresh
 * temporary folder beside a session home and the record of requests, and
 * makes `client`. `close()` closes every client it made and removes the
 * folder.
 */
export declare class FakeKoma {
  constructor(scenario: Scenario, options?: FakeKomaOptions);
  /** A client of this fake (nothing starts until its first call). */
  readonly client: Client;
  /** The options of a `new Client()` of this fake: `executable` (koma-sim) and `env`. */
  readonly clientOptions: ClientOptions & { env: Record<string, string> };
  /** koma-sim's environment: `KOMA_SIM_SCENARIO`, `KOMA_SIM_RECORD`, `KOMA_SIM_HOME`, `KOMA_SIM_DELAY_MS`. */
  readonly env: Record<string, string>;
  /** The temporary folder, and the files in it. */
  readonly dir: string;
  readonly scenarioPath: string;
  readonly recordPath: string;
  readonly home: string;
  /** Another client of the same scenario, record and home (`close()` closes it too). */
  newClient(options?: Omit<ClientOptions, "executable" | "env">): Client;
  /** Every request koma-sim read so far, in order (from every client of this fake). */
  requests(): RecordedRequest[];
  /** The requests of one method, in order. */
  calls(method: string): RecordedRequest[];
  /** Whether the program sent this method at all. */
  called(method: string): boolean;
  /** The methods sent, in order. */
  methods(): Array<string | null>;
  /** The answers to approvals, in order. */
  approvals(): Array<{ approval: string; decision: ApprovalDecision }>;
  /** The texts of `submit`, `enqueue` and `interrupt_and_submit`, in order. */
  texts(): string[];
  /** Close every client (koma-sim is stopped and reaped), then remove the folder. Idempotent. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** node:test's test context (`t.after`) or vitest's (`onTestFinished`). */
export type TestContextLike = { after(fn: () => unknown): unknown } | { onTestFinished(fn: () => unknown): unknown };

/**
 * A {@link FakeKoma} closed when the test ends: `t` is the test's context
 * (node:test's `t`, or vitest's `({ onTestFinished })`).
 */
export declare function fakeKoma(t: TestContextLike, scenario: Scenario, options?: FakeKomaOptions): FakeKoma;
