/* Generated from schema/ by scripts/generate.mjs: do not edit. */
/* eslint-disable */

// The start of index.d.ts, by hand: what index.js and lib/ add to the addon
// as behaviour (the errors' constructors, `isKomaError`, the Turn, the
// approval function). The types of values after it are generated from
// schema/ (scripts/generate.mjs), and the `Client` class last by napi.

/**
 * `onApproval` as a function: called with each `approval_requested` of the
 * turn, it answers `"allow"` or `"deny"`, or a promise of one (it may take
 * as long as a person needs). An answer that is neither, a throw or a
 * rejection denies, and the turn then fails with `invalid_params` (its
 * `cause` is what the function threw).
 *
 * The promise's type admits any string so that the natural async function
 * compiles: TypeScript widens an async function's returned literal to
 * `string` when the expected type mixes a promise with a plain value (a
 * limitation of its contextual typing, the same in TypeScript 7). A plain
 * function's answer is still checked.
 */
export type ApprovalHandler = (
  request: ApprovalRequestedData,
) => ApprovalDecision | Promise<ApprovalDecision | (string & {})>

/**
 * A turn started by `client.turn()`: an async iterable of its events (its
 * `turn_started` through its `turn_finished`, with the `state` and
 * `diagnostic` events between them, and an overflow report if one hit),
 * its id, its result, and a way to interrupt it. A loop over it ends the
 * way its result settles: after its events, normally, or throwing the
 * error the result rejects with. Leaving a loop early (`break`, `return`,
 * a throw) interrupts the turn if it still runs; the result then settles
 * when its `turn_finished` arrives, with the status koma reports (normally
 * `"interrupted"`). Iterating again goes on from where the last loop stopped.
 *
 * Only `client.turn()` makes one: it is a type with no constructor.
 */
export interface Turn extends AsyncIterable<EventItem> {
  /**
   * The turn id, once `submit` (or `interrupt_and_submit`) has answered.
   * Rejects as the submit does (for example remote `busy`).
   */
  readonly id: Promise<string>
  /**
   * The turn's result, once its `turn_finished` has arrived. Rejects with
   * `aborted` or `timeout` (after the agent was interrupted), with
   * `invalid_params` if the options were bad or `onApproval` failed
   * (after the turn finished), or with the client's error if it failed
   * first; every rejection carries the result so far as `result`.
   */
  readonly result: Promise<TurnResult>
  /** Interrupt this turn if it is still running (nothing is written otherwise). */
  readonly interrupt: () => Promise<void>
}

/** What every error of the package has; the class of its code narrows `code` (and adds `remote`). */
export interface KomaErrorBase<C extends ErrorCode> extends Error {
  readonly code: C
  /** What led to it, if anything did: a signal's reason, what `onApproval` threw. */
  cause?: unknown
  /**
   * What the turn had come to, on a rejection of `turn.result` or `run()`
   * (and an error a loop over a Turn throws).
   */
  result?: PartialTurnResult
}

/** The last argument of an error's constructor: what the package sets on the errors it makes. */
export interface KomaErrorOptions {
  cause?: unknown
  result?: PartialTurnResult | undefined
  remote?: RemoteError | undefined
}

/**
 * The class of the errors of one code (`TransportFailure`, `TimedOut`, ...):
 * `new TransportFailure(message)` makes one (a test may throw it where the
 * package would), and `instanceof` is true for the errors of that code only.
 */
export interface KomaErrorClass<E extends KomaError, O extends KomaErrorOptions = KomaErrorOptions> {
  new (message: string, ...options: {} extends O ? [options?: O] : [options: O]): E
  readonly prototype: E
  [Symbol.hasInstance](value: unknown): value is E
}

/**
 * `KomaError`, the class of every error of the package: `err instanceof
 * KomaError` narrows to the union of the classes of the codes, where `code`
 * narrows further. `new KomaError(code, message)` makes an error of the
 * class of `code`, as the package does.
 */
export interface KomaErrorConstructor {
  new <C extends ErrorCode>(code: C, message: string, options?: KomaErrorOptions): Extract<KomaError, { code: C }>
  readonly prototype: KomaErrorBase<ErrorCode>
  [Symbol.hasInstance](value: unknown): value is KomaError
}

/**
 * `err instanceof KomaError`: whether `err` is an error of this package (made
 * by it, or by one of its constructors). Its `name` is `"AbortError"` for
 * code `aborted`, `"TimeoutError"` for `timeout`, and `"KomaError"` otherwise.
 */
export declare const KomaError: KomaErrorConstructor

/**
 * Whether `value` is an error of this package (`value instanceof
 * KomaError`): one it made, or one made with its constructors, not any
 * `Error` with a `code`. In a `catch`, it narrows to `KomaError`, and then
 * `code` narrows:
 *
 * ```ts
 * try { await client.submit({ text }); } catch (e) {
 *   if (isKomaError(e) && e.code === "remote" && e.remote.code === "busy") retry();
 * }
 * ```
 */
export declare function isKomaError(value: unknown): value is KomaError

// ---- The values of schema/ (protocol.schema.json, sdk.schema.json)

/**
 * The params of `create`.
 */
export interface CreateParams {
  /**
   * The session's workspace: the directory koma works in.
   */
  cwd?: string | undefined
  model?: string | undefined
}

/**
 * The params of `resume`.
 */
export interface ResumeParams {
  session: string
  /**
   * Send again the saved events with a seq greater than this (all: 0).
   */
  after?: number | undefined
}

/**
 * The params of `submit`, `enqueue`, `interruptAndSubmit`.
 */
export interface TextParams {
  text: string
}

/**
 * The params of `approve`.
 */
export interface ApproveParams {
  /**
   * The `approval` of the `approval_requested` event.
   */
  approval: string
  decision: ApprovalDecision
}

/**
 * The params of `configure`.
 */
export interface ConfigureParams {
  model?: string | undefined
}

/**
 * The answer to an approval request.
 */
export type ApprovalDecision = 'allow' | 'deny'

/**
 * What the session is doing: `waiting` means a turn waits for an approval.
 */
export type Status = 'idle' | 'running' | 'waiting'

/**
 * The session's state. `waiting` means a turn waits for an approval.
 */
export interface State {
  /**
   * The session's id; null before `create` or `resume`.
   */
  session: string | null
  status: Status
  /**
   * The running (or waiting) turn's id.
   */
  turn: string | null
  /**
   * Texts waiting behind the running turn.
   */
  queued: number
  model: string | null
}

/**
 * The result of `create` and `resume`.
 */
export interface SessionResult {
  session: string
  state: State
}

/**
 * The result of `submit`.
 */
export interface SubmitResult {
  turn: string
}

/**
 * The result of `enqueue`: 0 if the turn started at once, else its place behind the running turn.
 */
export interface EnqueueResult {
  position: number
}

/**
 * The result of `interrupt`: the turn stopped, if any.
 */
export interface InterruptResult {
  turn: string | null
}

/**
 * The result of `interrupt_and_submit`: the turn stopped, if any, and the new one.
 */
export interface InterruptAndSubmitResult {
  interrupted: string | null
  turn: string
}

/**
 * The result of a method that answers `{}`.
 */
export interface EmptyResult {
}

/**
 * Data of `turn_started`.
 */
export interface TurnStartedData {
  turn: string
  text: string
}

/**
 * Data of `output`: a piece of the reply, streamed.
 */
export interface OutputData {
  turn: string
  text: string
}

/**
 * Data of `tool_call`.
 */
export interface ToolCallData {
  turn: string
  call: string
  tool: string
  input: unknown
}

/**
 * Data of `tool_result`.
 */
export interface ToolResultData {
  turn: string
  call: string
  output: unknown
  /**
   * Whether the tool failed.
   */
  error: boolean
}

/**
 * Data of `approval_requested`: answer with `approve`.
 */
export interface ApprovalRequestedData {
  turn: string
  approval: string
  tool: string
  input: unknown
}

/**
 * Data of `turn_finished`.
 */
export interface TurnFinishedData {
  turn: string
  status: 'completed' | 'interrupted' | 'failed'
  /**
   * Why it failed.
   */
  error?: string
}

/**
 * Data of `diagnostic`.
 */
export interface DiagnosticData {
  level: 'info' | 'warning' | 'error'
  message: string
}

/**
 * What every event of the catalog has: its sequence number, its name and its data.
 */
export interface EventBase {
  type: 'event'
  /**
   * The event's sequence number (contiguous; checked by the client).
   */
  seq: number
  name: string
  data: unknown
}

/**
 * The session's state changed.
 */
export interface StateEvent extends EventBase {
  name: 'state'
  data: State
}

/**
 * A turn started.
 */
export interface TurnStartedEvent extends EventBase {
  name: 'turn_started'
  data: TurnStartedData
}

/**
 * A piece of the reply.
 */
export interface OutputEvent extends EventBase {
  name: 'output'
  data: OutputData
}

/**
 * The agent calls a tool.
 */
export interface ToolCallEvent extends EventBase {
  name: 'tool_call'
  data: ToolCallData
}

/**
 * A tool's result.
 */
export interface ToolResultEvent extends EventBase {
  name: 'tool_result'
  data: ToolResultData
}

/**
 * The agent asks to use a tool: answer with `approve`.
 */
export interface ApprovalRequestedEvent extends EventBase {
  name: 'approval_requested'
  data: ApprovalRequestedData
}

/**
 * A turn ended.
 */
export interface TurnFinishedEvent extends EventBase {
  name: 'turn_finished'
  data: TurnFinishedData
}

/**
 * A note of koma's.
 */
export interface DiagnosticEvent extends EventBase {
  name: 'diagnostic'
  data: DiagnosticData
}

/**
 * An event of the catalog. Narrow on `name`. An event with another name is checked for its seq,
 * then ignored.
 */
export type KomaEvent = StateEvent | TurnStartedEvent | OutputEvent | ToolCallEvent | ToolResultEvent | ApprovalRequestedEvent | TurnFinishedEvent | DiagnosticEvent

/**
 * The `code` of every error of the package (see the README's table). Each code has its class
 * (`x-class`), the same in both packages; `x-written` says whether the request was written.
 */
export type ErrorCode = 'remote' | 'delivery_unknown' | 'transport_failure' | 'spawn_failed' | 'protocol_error' | 'protocol_mismatch' | 'frame_too_large' | 'too_many_pending' | 'lifecycle' | 'unsupported' | 'invalid_params' | 'closed' | 'aborted' | 'timeout'

/**
 * The `binary` member of hello.
 */
export interface BinaryInfo {
  path: string
  version: string
}

/**
 * The first frame koma sends, checked: what `probe()` resolves with.
 */
export interface Hello {
  type: 'hello'
  /**
   * Always 1: any other protocol is rejected with `protocol_mismatch`.
   */
  protocol: 1
  binary: BinaryInfo
  /**
   * Items passed through as JSON.
   */
  diagnostics: unknown[]
  /**
   * The method names this binary implements.
   */
  capabilities: string[]
}

/**
 * The one report of an overflow: the event buffer (256 frames / 64 MiB) was full, so it was cleared
 * and events were discarded until this report was taken.
 */
export interface OverflowReport {
  type: 'overflow'
  /**
   * How many events were discarded.
   */
  dropped: number
}

/**
 * What a loop over events yields: an event of the catalog, or the one overflow report. Narrow on
 * `type`, then on `name`.
 */
export type EventItem = KomaEvent | OverflowReport

/**
 * How a turn starts: `submit` fails with remote `busy` while another runs; `interrupt` interrupts
 * the running turn first (`interrupt_and_submit`).
 */
export type TurnMode = 'submit' | 'interrupt'

/**
 * What `turn_finished` said, as koma said it (a status outside the catalog included); `unknown`
 * when no `turn_finished` came (the client failed or closed first).
 */
export type TurnStatus = 'completed' | 'interrupted' | 'failed' | 'unknown' | (string & {})

/**
 * A tool call of a turn, from its `tool_call` and `tool_result` events: what was asked (`tool`,
 * `input`), what came of it (`output`, `error`, once its result came), and the answer to its
 * approval if one was asked.
 */
export interface ToolCallRecord {
  call: string
  tool: string
  input: unknown
  /**
   * The `tool_result`'s output, once it came.
   */
  output?: unknown
  /**
   * Whether the tool failed, once its result came.
   */
  error?: boolean
  /**
   * How its approval was answered: by `onApproval`, by the application's `approve()`, or denied for
   * want of anyone to answer.
   */
  approval?: ApprovalDecision
}

/**
 * What a turn came to: `status` as `turn_finished` said, `output` the `output` texts joined, the
 * tool calls, how many events the turn had, and whether an overflow cost its loop events. `turn` is
 * null only in the `result` of an error of a turn that koma never started (the submit failed, or
 * the options were bad).
 */
export interface PartialTurnResult {
  turn: string | null
  status: TurnStatus
  /**
   * All the turn's `output` text, joined.
   */
  output: string
  toolCalls: ToolCallRecord[]
  /**
   * How many events the turn had.
   */
  events: number
  /**
   * An overflow cost the turn's loop events (the result is still collected from every event, unless
   * they were dropped before the turn was known: then `output` may lack pieces).
   */
  overflowed: boolean
}

/**
 * What a turn came to, once its `turn_finished` has arrived.
 */
export interface TurnResult extends PartialTurnResult {
  turn: string
}

/**
 * The server's `error` of a failed response (`err.remote` when `err.code === "remote"`).
 */
export interface RemoteError {
  code: string
  message: string
  /**
   * The `data` member, as JSON (absent when koma sent none).
   */
  data?: unknown
}

/**
 * Options of `new Client(...)`.
 */
export interface ClientOptions {
  /**
   * The Koma executable: a name looked up on `PATH`, or a path. It is run as `<executable> sdk
   * serve`, with no shell.
   */
  executable: string
  /**
   * The child's working directory (default: this process's).
   */
  cwd?: string | undefined
  /**
   * Variables added to this process's environment for the child (`undefined` values are skipped, so
   * `process.env` may be given).
   */
  env?: Record<string, string | undefined> | undefined
  /**
   * Print every frame in both directions, every stderr line and the notes of the client's life to
   * this process's stderr (fd 2, from the native code), each line naming the client: `[koma-sdk pid
   * 1234] -> {...}`. Also on when `KOMA_SDK_TRACE=1`. To route the trace yourself, subscribe to the
   * `koma-sdk:trace` diagnostics channel instead.
   */
  trace?: boolean | undefined
  /**
   * Milliseconds the first call waits for koma's hello before the client fails with
   * `transport_failure`; `null`: no bound. `15000` if absent.
   */
  helloTimeout?: number | null | undefined
  /**
   * Trace this client with OpenTelemetry (default `true`): spans and metrics when
   * `@opentelemetry/api` is installed and a provider is registered or given; `false` turns them off
   * for this client (docs/tracing.md).
   */
  telemetry?: boolean | undefined
  /**
   * The tracer provider of this client's spans (default: the global one, if one is registered).
   */
  tracerProvider?: { getTracer(name: string, version?: string, options?: object): unknown } | undefined
  /**
   * The meter provider of this client's metrics (default: the global one, if one is registered).
   */
  meterProvider?: { getMeter(name: string, version?: string, options?: object): unknown } | undefined
  /**
   * Record content in spans: the prompt, the output, each tool call's input and output (default
   * `false`: none of it is recorded).
   */
  captureContent?: boolean | undefined
}

/**
 * The optional last argument of every method.
 */
export interface CallOptions {
  /**
   * Abort the call: it rejects with code `aborted` (`timeout` if the signal's reason is a
   * `TimeoutError`, as `AbortSignal.timeout()` gives), with the signal's reason as its `cause`. If
   * the request was already written, its late answer is ignored.
   */
  signal?: AbortSignal | undefined
  /**
   * Milliseconds before the call rejects with code `timeout`. If the request was already written,
   * its late answer is ignored.
   */
  timeout?: number | undefined
}

/**
 * Options of `client.turn()`.
 */
export interface TurnOptions {
  /**
   * `"submit"` (the default) starts the turn with `submit` (remote error `busy` while another
   * runs); `"interrupt"` with `interrupt_and_submit`.
   */
  mode?: TurnMode | undefined
  /**
   * Answers each `approval_requested` of the turn: `"allow"`, `"deny"`, or a function of the
   * request that returns one (or a promise of one), and may take as long as a person needs. A
   * function that throws, rejects or returns anything else denies, and the turn then fails with
   * `invalid_params` (its `cause` is what the function threw) once it has finished: its iterator
   * throws that error after the turn's events, and its result rejects with it.
   */
  onApproval?: ApprovalDecision | ApprovalHandler | undefined
  /**
   * Interrupts the agent when aborted; the result then rejects with `aborted` (`timeout` for a
   * `TimeoutError` reason), the signal's reason as its `cause` and the result so far as its
   * `result`, once the turn has finished.
   */
  signal?: AbortSignal | undefined
  /**
   * Milliseconds after which the agent is interrupted; the result then rejects with `timeout`, the
   * result so far as its `result`, once the turn has finished.
   */
  timeout?: number | undefined
}

/**
 * Options of `client.run()`: those of `turn()`, with `onApproval` required (nobody else sees the
 * turn's approvals).
 */
export interface RunOptions {
  /**
   * `"submit"` (the default) starts the turn with `submit` (remote error `busy` while another
   * runs); `"interrupt"` with `interrupt_and_submit`.
   */
  mode?: TurnMode | undefined
  /**
   * Answers each `approval_requested` of the turn: `"allow"`, `"deny"`, or a function of the
   * request that returns one (or a promise of one), and may take as long as a person needs. A
   * function that throws, rejects or returns anything else denies, and `run()` then rejects with
   * `invalid_params` (its `cause` is what the function threw, its `result` the turn's result) once
   * the turn has finished.
   */
  onApproval: ApprovalDecision | ApprovalHandler
  /**
   * Interrupts the agent when aborted; `run()` then rejects with `aborted` (`timeout` for a
   * `TimeoutError` reason), the signal's reason as its `cause` and the result so far as its
   * `result`, once the turn has finished.
   */
  signal?: AbortSignal | undefined
  /**
   * Milliseconds after which the agent is interrupted; `run()` then rejects with `timeout`, the
   * result so far as its `result`, once the turn has finished.
   */
  timeout?: number | undefined
}

/**
 * A message of the `koma-sdk:trace` diagnostics channel: one thing a client's connection saw.
 * Subscribe before making the client: a client made while nobody listens keeps no trace.
 *
 * ```ts
 * diagnostics_channel.subscribe("koma-sdk:trace", (m) => {
 *   const { pid, kind, text } = m as TraceMessage;
 *   if (kind === "stderr") console.log(`koma ${pid}: ${text}`);
 * });
 * ```
 */
export interface TraceMessage {
  /**
   * The client (`undefined` once it was collected).
   */
  client: Client | undefined
  /**
   * koma's process id (`null` before it started).
   */
  pid: number | null
  /**
   * A frame, a whole line of koma's stderr, a note of the client's life, or how many records were
   * dropped because they were not taken in time.
   */
  kind: 'frame' | 'stderr' | 'spawned' | 'hello' | 'detach' | 'exit' | 'failed' | 'closed' | 'dropped'
  /**
   * A frame's: written to koma, or read from it; `null` for the others.
   */
  direction: 'written' | 'read' | null
  /**
   * The frame's text (escaped, cut at 4 KiB), the stderr line (escaped), or the note's sentence.
   */
  text: string
}

/**
 * The name of one of the protocol's methods (on the wire).
 */
export type MethodName = 'create' | 'resume' | 'state' | 'submit' | 'enqueue' | 'interrupt' | 'interrupt_and_submit' | 'approve' | 'configure' | 'detach'

// ---- A class per error code (schema/protocol.schema.json, ErrorCode)

/**
 * `remote`: koma answered with an error; `err.remote` is `{code, message, data}`. Its `name` is
 * `"KomaError"`.
 */
export interface RemoteFailure extends KomaErrorBase<'remote'> {
  name: 'KomaError'
  /**
   * koma's error.
   */
  remote: RemoteError
}
export declare const RemoteFailure: KomaErrorClass<RemoteFailure, KomaErrorOptions & { remote: RemoteError }>

/**
 * `delivery_unknown`: written, then the stream ended or failed before the answer: koma may or may
 * not have acted. Its `name` is `"KomaError"`.
 */
export interface DeliveryUnknown extends KomaErrorBase<'delivery_unknown'> {
  name: 'KomaError'
}
export declare const DeliveryUnknown: KomaErrorClass<DeliveryUnknown>

/**
 * `transport_failure`: koma could not be talked to (it exited, crashed, closed a pipe, sent no
 * hello in time); every later call on a failed client. Its `name` is `"KomaError"`.
 */
export interface TransportFailure extends KomaErrorBase<'transport_failure'> {
  name: 'KomaError'
}
export declare const TransportFailure: KomaErrorClass<TransportFailure>

/**
 * `spawn_failed`: the executable could not be started (not found, not executable, a working
 * directory that cannot be entered). Its `name` is `"KomaError"`.
 */
export interface SpawnFailed extends KomaErrorBase<'spawn_failed'> {
  name: 'KomaError'
}
export declare const SpawnFailed: KomaErrorClass<SpawnFailed>

/**
 * `protocol_error`: koma broke the protocol (a bad frame, a bad hello, a sequence gap, a frame over
 * 40 MiB). Its `name` is `"KomaError"`.
 */
export interface ProtocolError extends KomaErrorBase<'protocol_error'> {
  name: 'KomaError'
}
export declare const ProtocolError: KomaErrorClass<ProtocolError>

/**
 * `protocol_mismatch`: hello's protocol is not the integer 1. Its `name` is `"KomaError"`.
 */
export interface ProtocolMismatch extends KomaErrorBase<'protocol_mismatch'> {
  name: 'KomaError'
}
export declare const ProtocolMismatch: KomaErrorClass<ProtocolMismatch>

/**
 * `frame_too_large`: this request would be over 40 MiB. Its `name` is `"KomaError"`.
 */
export interface FrameTooLarge extends KomaErrorBase<'frame_too_large'> {
  name: 'KomaError'
}
export declare const FrameTooLarge: KomaErrorClass<FrameTooLarge>

/**
 * `too_many_pending`: 64 requests already wait for their answers. Its `name` is `"KomaError"`.
 */
export interface TooManyPending extends KomaErrorBase<'too_many_pending'> {
  name: 'KomaError'
}
export declare const TooManyPending: KomaErrorClass<TooManyPending>

/**
 * `lifecycle`: out of order: `create`/`resume` not first or twice, anything after `detach`. Its
 * `name` is `"KomaError"`.
 */
export interface LifecycleError extends KomaErrorBase<'lifecycle'> {
  name: 'KomaError'
}
export declare const LifecycleError: KomaErrorClass<LifecycleError>

/**
 * `unsupported`: the method is not in hello's `capabilities`. Its `name` is `"KomaError"`.
 */
export interface Unsupported extends KomaErrorBase<'unsupported'> {
  name: 'KomaError'
}
export declare const Unsupported: KomaErrorClass<Unsupported>

/**
 * `invalid_params`: bad params, constructor options or call options. Its `name` is `"KomaError"`.
 */
export interface InvalidParams extends KomaErrorBase<'invalid_params'> {
  name: 'KomaError'
}
export declare const InvalidParams: KomaErrorClass<InvalidParams>

/**
 * `closed`: the client was closed before this call. Its `name` is `"KomaError"`.
 */
export interface ClientClosed extends KomaErrorBase<'closed'> {
  name: 'KomaError'
}
export declare const ClientClosed: KomaErrorClass<ClientClosed>

/**
 * `aborted`: the call's `signal` was aborted. Its `name` is `"AbortError"`.
 */
export interface Aborted extends KomaErrorBase<'aborted'> {
  name: 'AbortError'
}
export declare const Aborted: KomaErrorClass<Aborted>

/**
 * `timeout`: the call's `timeout` passed. Its `name` is `"TimeoutError"`.
 */
export interface TimedOut extends KomaErrorBase<'timeout'> {
  name: 'TimeoutError'
}
export declare const TimedOut: KomaErrorClass<TimedOut>

/**
 * Every error of the package: an instance of `KomaError` and of the class of its code, narrowed by
 * `code` (`err.remote` is there when it is `"remote"`). `isKomaError(e)` and `e instanceof
 * KomaError` tell one apart in a `catch`.
 */
export type KomaError =
  | RemoteFailure
  | DeliveryUnknown
  | TransportFailure
  | SpawnFailed
  | ProtocolError
  | ProtocolMismatch
  | FrameTooLarge
  | TooManyPending
  | LifecycleError
  | Unsupported
  | InvalidParams
  | ClientClosed
  | Aborted
  | TimedOut

/**
 * The protocol's methods of a client (the rest of `Client` is the addon's).
 */
export interface Client {
  /**
   * `create`: Start a new session. Allowed only as the first request.
   */
  create(params?: CreateParams, options?: CallOptions): Promise<SessionResult>
  /**
   * `resume`: Reattach to a saved session; its events after `after` are sent again. Allowed only as
   * the first request.
   */
  resume(params: ResumeParams, options?: CallOptions): Promise<SessionResult>
  /**
   * `state`: The session's state.
   */
  state(options?: CallOptions): Promise<State>
  /**
   * `submit`: Start a turn. Remote error `busy` while a turn runs.
   */
  submit(params: TextParams, options?: CallOptions): Promise<SubmitResult>
  /**
   * `enqueue`: Queue a text to run after the current turn.
   */
  enqueue(params: TextParams, options?: CallOptions): Promise<EnqueueResult>
  /**
   * `interrupt`: Stop the running turn, if any.
   */
  interrupt(options?: CallOptions): Promise<InterruptResult>
  /**
   * `interrupt_and_submit`: Stop the running turn and start this one, ahead of the queue.
   */
  interruptAndSubmit(params: TextParams, options?: CallOptions): Promise<InterruptAndSubmitResult>
  /**
   * `approve`: Answer an `approval_requested` event.
   */
  approve(params: ApproveParams, options?: CallOptions): Promise<EmptyResult>
  /**
   * `configure`: Change the model of later turns.
   */
  configure(params?: ConfigureParams, options?: CallOptions): Promise<State>
  /**
   * `detach`: koma saves the session and exits 0. Settles after the answer and koma's exit; the
   * events then end, and nothing is written after it.
   */
  detach(options?: CallOptions): Promise<EmptyResult>
}

// ---- The Client class: written by napi build from src/client.rs

/**
 * A client of one `koma sdk serve` child. Every method starts the child and
 * awaits its hello first if that has not happened. Every method takes an
 * optional last argument `{ signal?: AbortSignal, timeout?: number }`.
 *
 * ```ts
 * await using client = new Client({ executable: "koma" });
 * await client.create({ cwd: process.cwd() });
 * await client.submit({ text: "fix the failing test" });
 * ```
 */
export declare class Client {
  /**
   * Make a client. Nothing is started until the first call. Bad options
   * throw an `Error` with code `invalid_params`.
   */
  constructor(options: ClientOptions)
  /** Start the child if needed; resolves with its checked hello. */
  probe(options?: CallOptions): Promise<Hello>
  /**
   * Send any method in hello's capabilities. Methods of the protocol's table
   * get their params checked; for any other, `params` must be a JSON object
   * and is sent as given.
   */
  request(method: string, params?: Record<string, unknown>, options?: CallOptions): Promise<unknown>
  /**
   * The events of this client that no Turn took, in order: catalog events
   * and the one overflow report. Ends after detach or close; throws the
   * client's fatal error after a failure (once the events received before
   * it were taken). There is one queue per client: each call is a loop of
   * its own over it, and leaving one loop ends that loop only. With a
   * `signal` or a `timeout`, the loop ends throwing `aborted` or `timeout`
   * when the signal aborts or the time has passed (bad options: it throws
   * `invalid_params`).
   */
  events(options?: CallOptions): AsyncIterableIterator<EventItem>
  /** The kept tail of the child's stderr (the newest 64 KiB), as text. */
  get stderr(): string
  /** The child's process id while it runs, else `null`. */
  get pid(): number | null
  /**
   * Detach if it can (bounded), else end stdin, then SIGTERM, then SIGKILL,
   * each after a short grace; the child (and the tools it started) are
   * stopped and reaped. Idempotent. Pending calls get `delivery_unknown`.
   * A `signal` or `timeout` bounds the wait, not the close: the promise
   * rejects with `aborted` or `timeout`, and the close goes on.
   */
  close(options?: CallOptions): Promise<void>
  /**
   * Start a turn: `submit` (or, with `mode: "interrupt"`,
   * `interrupt_and_submit`) its text, and take its events from the
   * client's one event queue (`events()` gets the rest). Answers its
   * approvals with `onApproval` if given; else the application answers
   * them with `approve()` as it reads the Turn (and an approval that
   * arrives while nobody reads it is denied). `signal` and `timeout`
   * interrupt the agent, and the result then rejects with `aborted` or
   * `timeout` once the turn has finished.
   */
  turn(params: TextParams, options?: TurnOptions): Turn
  /**
   * A turn in one call: `turn()` drained. Resolves with its result.
   * `onApproval` is required (`invalid_params` otherwise, nothing written).
   * A rejection after the turn started (abort, timeout, a failing
   * `onApproval`) carries the result so far as `result`.
   */
  run(params: TextParams, options: RunOptions): Promise<TurnResult>
  /** `await using client = new Client(...)` closes it. */
  [globalThis.Symbol.asyncDispose](): Promise<void>
}
