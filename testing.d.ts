/* Generated from schema/ by scripts/generate.mjs: do not edit. */

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

// ---- The scenario format (schema/scenario.schema.json)

/**
 * A scenario: the turn entries, tried in order for each turn that starts; the scripted answers to
 * requests; and what a turn that no entry matches gets.
 */
export interface Scenario {
  /**
   * The turn entries, tried in this order for each turn that starts: the first that matches its
   * text and has turns left plays it. `[]` if absent.
   */
  turns?: ScriptedTurn[] | undefined
  /**
   * Scripted answers to requests: for each request read, the first entry of its method (and call
   * number) scripts its answer. `[]` if absent.
   */
  methods?: MethodAnswer[] | undefined
  /**
   * What a turn that no entry matches gets. `"error"` if absent.
   */
  unscripted?: Unscripted | undefined
  /**
   * A comment; ignored.
   */
  about?: string | undefined
  /**
   * The format's version; 1 if absent.
   */
  format?: 1 | undefined
  /**
   * Ignored: for editors.
   */
  $schema?: string | undefined
}

/**
 * What a turn that no entry matches gets: `"error"` refuses the request that would start it with
 * the remote error `unscripted`, which names the text (a queued text's turn fails), and `"agent"`
 * lets koma-sim's keyword agent play it.
 */
export type Unscripted = 'agent' | 'error'

/**
 * A turn entry: the turns it plays (those whose text `match` takes, `times` of them) and their
 * steps.
 */
export interface ScriptedTurn {
  /**
   * Which texts it plays; any text if absent.
   */
  match?: Match | undefined
  /**
   * How many turns it plays: a positive integer, or `"always"` for any number. A text that only a
   * used-up entry matches is refused with the remote error `unscripted`, whose message names that
   * entry (`turns[0] (any text) matches it, but is used up (times 1: it has played 1 turn)`). `1`
   * if absent.
   */
  times?: number | 'always' | undefined
  /**
   * Played in order; a `finish` step is the last of its list. When they run out, the turn finishes
   * `completed`.
   */
  steps: Step[]
  /**
   * A comment; ignored.
   */
  about?: string | undefined
}

/**
 * Which texts a turn entry plays: exactly one matcher.
 */
export type Match = MatchTurn | MatchText | MatchContains | MatchRegex

/**
 * The Nth turn this koma-sim starts (1 is the first; every turn counts, scripted or not).
 */
export interface MatchTurn {
  turn: number
  text?: never
  contains?: never
  regex?: never
}

/**
 * Exactly this text.
 */
export interface MatchText {
  text: string
  turn?: never
  contains?: never
  regex?: never
}

/**
 * A text that contains this (case-sensitive).
 */
export interface MatchContains {
  contains: string
  turn?: never
  text?: never
  regex?: never
}

/**
 * A text in which this regular expression finds a match: Rust's `regex` syntax, not anchored unless
 * it says `^` and `$` (`(?i)` ignores case). The check compiles it as koma-sim does; look-around
 * and backreferences are refused (Rust has neither).
 */
export interface MatchRegex {
  regex: string
  turn?: never
  text?: never
  contains?: never
}

/**
 * What the agent does next: its `do` says which step it is.
 */
export type Step = OutputStep | ToolStep | ApprovalStep | PauseStep | EventStep | FinishStep | ExitStep | CrashStep | StopAnsweringStep | BrokenFrameStep

/**
 * `output {turn, text}`.
 */
export interface OutputStep {
  do: 'output'
  text: string
}

/**
 * A call with a fresh id (`c-N`): `tool_call {turn, call, tool, input}`, then `tool_result {turn,
 * call, output, error}`.
 */
export interface ToolStep {
  do: 'tool'
  tool: string
  /**
   * Any JSON value. `{}` if absent.
   */
  input?: Json | undefined
  /**
   * Any JSON value: the result's output.
   */
  output: Json
  /**
   * Whether the tool failed. `false` if absent.
   */
  error?: boolean | undefined
}

/**
 * A call with fresh ids (`c-N`, `a-N`): `tool_call`, `approval_requested {turn, approval, tool,
 * input}` and `state` (waiting); the turn waits for `approve`. The decision's `tool_result` and a
 * `state` (running) come before the answer to `approve`; then the branch's steps play, then the
 * rest of the turn.
 */
export interface ApprovalStep {
  do: 'approval'
  tool: string
  /**
   * Any JSON value. `{}` if absent.
   */
  input?: Json | undefined
  /**
   * After an allow; if absent, the output `"allowed"`, not an error, and no steps.
   */
  allow?: ApprovalBranch | undefined
  /**
   * After a deny; if absent, the output `"denied"`, an error, and no steps.
   */
  deny?: ApprovalBranch | undefined
}

/**
 * What follows a decision of an approval: the call's `tool_result`, then these steps.
 */
export interface ApprovalBranch {
  /**
   * Any JSON value: the `tool_result`'s output (`"allowed"` or `"denied"` if absent).
   */
  output?: Json | undefined
  /**
   * The `tool_result`'s error (false after an allow, true after a deny, if absent).
   */
  error?: boolean | undefined
  /**
   * Played after the `tool_result`, before the rest of the turn; none if absent.
   */
  steps?: Step[] | undefined
}

/**
 * With `ms`, waits that long; without, until the turn is interrupted (or koma-sim stops). The state
 * stays `running`, and an interrupt ends the turn at once either way.
 */
export interface PauseStep {
  do: 'pause'
  ms?: number | undefined
}

/**
 * An event of this name and data, numbered as every event is: outside the catalog too, or a catalog
 * name with odd data.
 */
export interface EventStep {
  do: 'event'
  name: string
  /**
   * Any JSON value. `{}` if absent.
   */
  data?: Json | undefined
}

/**
 * `turn_finished {turn, status, error?}`: the turn ends here, so nothing may follow it in its list;
 * the queue goes on.
 */
export interface FinishStep {
  do: 'finish'
  /**
   * Any string, outside the catalog too. `"completed"` if absent.
   */
  status?: string | undefined
  error?: string | undefined
}

/**
 * koma-sim exits with this code; what it queued before is written first.
 */
export interface ExitStep {
  do: 'exit'
  code: number
}

/**
 * koma-sim dies of this signal (its default action, without a core file, whatever the fault
 * switches say of it); what it queued before is written first.
 */
export interface CrashStep {
  do: 'crash'
  signal: CrashSignal
}

/**
 * The signals a `crash` step may die of.
 */
export type CrashSignal = 'SIGABRT' | 'SIGALRM' | 'SIGBUS' | 'SIGFPE' | 'SIGHUP' | 'SIGILL' | 'SIGINT' | 'SIGKILL' | 'SIGPIPE' | 'SIGQUIT' | 'SIGSEGV' | 'SIGTERM' | 'SIGUSR1' | 'SIGUSR2'

/**
 * No more answers and no more events: requests are still read (and recorded), and `detach` is
 * ignored; koma-sim exits 0 at the end of stdin and dies of SIGTERM.
 */
export interface StopAnsweringStep {
  do: 'stop_answering'
}

/**
 * This line on koma-sim's stdout, then the terminator; then the turn goes on.
 */
export interface BrokenFrameStep {
  do: 'broken_frame'
  /**
   * One line of text. `"this line is not JSON (koma-sim scenario)"` if absent.
   */
  line?: string | undefined
}

/**
 * A scripted answer to the requests of `method` (the `nth` one, or every one). With `result` or
 * `error` the request is answered so and not carried out; with `delay_ms` alone it is carried out
 * at once and its answer goes that much later.
 */
export type MethodAnswer = {
  /**
   * One of the protocol's methods (those hello lists): a name outside them is a mistake, since no
   * client would send it.
   */
  method: MethodName
  /**
   * The Nth request of this method (1 is the first); every one if absent.
   */
  nth?: number | undefined
  /**
   * A comment; ignored.
   */
  about?: string | undefined
} & (
  | {
    /**
     * Any JSON value: the answer's result.
     */
    result: Json
    /**
     * Milliseconds between reading the request and sending its answer; requests read meanwhile are
     * answered as usual.
     */
    delay_ms?: number | undefined
    error?: never
  }
  | {
    /**
     * The answer's remote error.
     */
    error: ScriptedError
    /**
     * Milliseconds between reading the request and sending its answer; requests read meanwhile are
     * answered as usual.
     */
    delay_ms?: number | undefined
    result?: never
  }
  | {
    /**
     * Milliseconds between reading the request and sending its answer; requests read meanwhile are
     * answered as usual.
     */
    delay_ms: number
    result?: never
    error?: never
  }
)

/**
 * A scripted remote error.
 */
export interface ScriptedError {
  code: string
  /**
   * `"<code> (scripted by the scenario)"` if absent.
   */
  message?: string | undefined
  /**
   * Any JSON value; none if absent.
   */
  data?: Json | undefined
}

/**
 * The steps as functions that return their objects (a step may be written as its object as well: it
 * is the file's JSON).
 */
export declare const step: {
  /**
   * An `output` event.
   */
  output(text: string): OutputStep
  /**
   * A tool call and its result.
   */
  tool(tool: string, output: Json, options?: { input?: Json | undefined; error?: boolean | undefined }): ToolStep
  /**
   * A tool call that asks for approval, and waits.
   */
  approval(tool: string, options?: { input?: Json | undefined; allow?: ApprovalBranch | undefined; deny?: ApprovalBranch | undefined }): ApprovalStep
  /**
   * Waits; without `ms`, until the turn is interrupted.
   */
  pause(ms?: number): PauseStep
  /**
   * Any event, outside the catalog too.
   */
  event(name: string, data?: Json): EventStep
  /**
   * `turn_finished` with any status: the turn ends there.
   */
  finish(status?: string, error?: string): FinishStep
  /**
   * Koma exits with that code.
   */
  exit(code: number): ExitStep
  /**
   * Koma dies of a signal. `signal` is `"SIGKILL"` unless given.
   */
  crash(signal?: CrashSignal): CrashStep
  /**
   * Koma answers nothing more: a hung koma.
   */
  stopAnswering(): StopAnsweringStep
  /**
   * A line that is not JSON on koma's stdout.
   */
  brokenFrame(line?: string): BrokenFrameStep
}
