/**
 * `@koma/sdk/testing`: a fake Koma that a test scripts. koma-sim plays a
 * scenario (what each turn does, and how requests are answered) as a real
 * child through the real transport, and records every request the program
 * sent. The types below mirror koma-sim's scenario format (its JSON file;
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
import type { ApprovalDecision, Client, ClientOptions } from "./index.js";

/** Any JSON value (`input`, `output`, `data`, `result`). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

// ---------------------------------------------------------------- the format

/** Which texts a turn entry plays: exactly one matcher. */
export type Match =
  /** The Nth turn this koma-sim starts (1 is the first; every turn counts). */
  | { turn: number }
  /** Exactly this text. */
  | { text: string }
  /** A text that contains this (case-sensitive). */
  | { contains: string }
  /**
   * A text in which this regular expression finds a match: Rust's `regex`
   * syntax (not anchored unless it says `^` and `$`; `(?i)` ignores case).
   * The check compiles it as koma-sim does; look-around and backreferences
   * are refused (Rust has neither).
   */
  | { regex: string };

/** `output {turn, text}`. */
export interface OutputStep {
  do: "output";
  text: string;
}

/** `tool_call {turn, call, tool, input}`, then `tool_result {turn, call, output, error}`. */
export interface ToolStep {
  do: "tool";
  tool: string;
  /** `{}` if absent. */
  input?: Json | undefined;
  output: Json;
  /** `false` if absent. */
  error?: boolean | undefined;
}

/** What follows a decision of an approval. */
export interface ApprovalBranch {
  /** The call's `tool_result` output: `"allowed"` or `"denied"` if absent. */
  output?: Json | undefined;
  /** The `tool_result`'s error: `false` after an allow, `true` after a deny, if absent. */
  error?: boolean | undefined;
  /** Played after the `tool_result`, before the rest of the turn. */
  steps?: Step[] | undefined;
}

/**
 * `tool_call`, `approval_requested {turn, approval, tool, input}` and `state`
 * (waiting); the turn waits for `approve`, then plays the branch of the
 * decision, then the rest of its steps.
 */
export interface ApprovalStep {
  do: "approval";
  tool: string;
  /** `{}` if absent. */
  input?: Json | undefined;
  allow?: ApprovalBranch | undefined;
  deny?: ApprovalBranch | undefined;
}

/** Wait `ms` milliseconds; without `ms`, until the turn is interrupted (or koma-sim stops). */
export interface PauseStep {
  do: "pause";
  ms?: number | undefined;
}

/** An event of any name (outside the catalog too) with this data. */
export interface EventStep {
  do: "event";
  name: string;
  /** `{}` if absent. */
  data?: Json | undefined;
}

/** `turn_finished {turn, status, error?}`: the turn ends here (it must be the last step of its list). */
export interface FinishStep {
  do: "finish";
  /** Any string, outside the catalog too; `"completed"` if absent. */
  status?: string | undefined;
  error?: string | undefined;
}

/** koma-sim exits with this code (0 to 255); what it queued is written first. */
export interface ExitStep {
  do: "exit";
  code: number;
}

/** The signals a `crash` step may die of. */
export type CrashSignal =
  | "SIGABRT"
  | "SIGALRM"
  | "SIGBUS"
  | "SIGFPE"
  | "SIGHUP"
  | "SIGILL"
  | "SIGINT"
  | "SIGKILL"
  | "SIGPIPE"
  | "SIGQUIT"
  | "SIGSEGV"
  | "SIGTERM"
  | "SIGUSR1"
  | "SIGUSR2";

/** koma-sim dies of this signal; what it queued is written first. */
export interface CrashStep {
  do: "crash";
  signal: CrashSignal;
}

/** No more answers and no more events: a hung koma (it still reads and records requests). */
export interface StopAnsweringStep {
  do: "stop_answering";
}

/** This line on stdout (`"this line is not JSON (koma-sim scenario)"` if absent); then the turn goes on. */
export interface BrokenFrameStep {
  do: "broken_frame";
  line?: string | undefined;
}

/** What the agent does, one step at a time. */
export type Step =
  | OutputStep
  | ToolStep
  | ApprovalStep
  | PauseStep
  | EventStep
  | FinishStep
  | ExitStep
  | CrashStep
  | StopAnsweringStep
  | BrokenFrameStep;

/** A turn entry: the turns it plays (by `match`, `times` of them) and their steps. */
export interface ScriptedTurn {
  /** Absent: any text. */
  match?: Match | undefined;
  /** How many turns it plays: 1 if absent, or `"always"`. */
  times?: number | "always" | undefined;
  /** Played in order; when they run out, the turn finishes `completed`. */
  steps: Step[];
  about?: string | undefined;
}

/** A scripted remote error. */
export interface ScriptedError {
  code: string;
  /** `"<code> (scripted by the scenario)"` if absent. */
  message?: string | undefined;
  data?: Json | undefined;
}

interface MethodAnswerBase {
  /** One of the protocol's methods (`"submit"`): a name outside them is a mistake of the scenario. */
  method: string;
  /** The Nth request of this method (1 is the first); absent: every one. */
  nth?: number | undefined;
  about?: string | undefined;
}

/**
 * A scripted answer: with `result` or `error` the request is answered so and
 * not carried out; with `delay_ms` alone it is carried out at once and its
 * answer goes that much later.
 */
export type MethodAnswer = MethodAnswerBase &
  (
    | { result: Json; error?: never; delay_ms?: number | undefined }
    | { error: ScriptedError; result?: never; delay_ms?: number | undefined }
    | { delay_ms: number; result?: never; error?: never }
  );

/** A scenario: koma-sim's file (`KOMA_SIM_SCENARIO`), format 1. */
export interface Scenario {
  /** Tried in this order for each turn that starts. */
  turns?: ScriptedTurn[] | undefined;
  /** Scripted answers to requests. */
  methods?: MethodAnswer[] | undefined;
  /**
   * A turn no entry matches: `"error"` (the default) refuses the request
   * with the remote error `unscripted`; `"agent"` lets koma-sim's keyword
   * agent play it.
   */
  unscripted?: "error" | "agent" | undefined;
  format?: 1 | undefined;
  about?: string | undefined;
  $schema?: string | undefined;
}

/** The steps as functions that return their objects. */
export declare const step: {
  output(text: string): OutputStep;
  tool(tool: string, output: Json, options?: { input?: Json | undefined; error?: boolean | undefined }): ToolStep;
  approval(
    tool: string,
    options?: { input?: Json | undefined; allow?: ApprovalBranch | undefined; deny?: ApprovalBranch | undefined },
  ): ApprovalStep;
  /** Without `ms`: until the turn is interrupted. */
  pause(ms?: number): PauseStep;
  event(name: string, data?: Json): EventStep;
  finish(status?: string, error?: string): FinishStep;
  exit(code: number): ExitStep;
  /** `SIGKILL` unless given. */
  crash(signal?: CrashSignal): CrashStep;
  stopAnswering(): StopAnsweringStep;
  brokenFrame(line?: string): BrokenFrameStep;
};

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
