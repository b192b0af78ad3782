//! The shapes of docs/protocol.md for the generated typings, with the wire's
//! field names. The options are what `options.rs` reads JavaScript's
//! arguments into. Results, events and the Turn are never converted by
//! napi-rs (they cross as JSON, parsed by one `JSON.parse` per batch, or are
//! made by `turn.js`), so they have no conversions (`object_to_js = false,
//! object_from_js = false`); their JSON members are `serde_json::Value`,
//! typed `unknown`.

use std::collections::HashMap;

use napi::bindgen_prelude::{Either4, Object, Unknown};
use napi_derive::napi;
use serde_json::Value;

/// Options of `new Client(...)`.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct ClientOptions<'e> {
    /// The Koma executable: a name looked up on `PATH`, or a path. It is run as
    /// `<executable> sdk serve`, with no shell.
    pub executable: String,
    /// The child's working directory (default: this process's).
    pub cwd: Option<String>,
    /// Variables added to this process's environment for the child
    /// (`undefined` values are skipped, so `process.env` may be given).
    #[napi(ts_type = "Record<string, string | undefined>")]
    pub env: Option<HashMap<String, String>>,
    /// Print every frame in both directions, every stderr line and the notes
    /// of the client's life to this process's stderr (fd 2, from the native
    /// code), each line naming the client: `[koma-sdk pid 1234] -> {...}`.
    /// Also on when `KOMA_SDK_TRACE=1`. To route the trace yourself,
    /// subscribe to the `koma-sdk:trace` diagnostics channel instead.
    pub trace: Option<bool>,
    /// Milliseconds the first call waits for koma's hello before the client
    /// fails with `transport_failure` (default 15000); `null`: no bound.
    #[napi(ts_type = "number | null")]
    pub hello_timeout: Option<Option<f64>>,
    // ---- OpenTelemetry (see docs/tracing.md)
    /// Trace this client with OpenTelemetry (default `true`): spans and
    /// metrics when `@opentelemetry/api` is installed and a provider is
    /// registered or given; `false` turns them off for this client.
    pub telemetry: Option<bool>,
    /// The tracer provider of this client's spans (default: the global one,
    /// if one is registered).
    #[napi(ts_type = "{ getTracer(name: string, version?: string, options?: object): unknown }")]
    pub tracer_provider: Option<Object<'e>>,
    /// The meter provider of this client's metrics (default: the global
    /// one, if one is registered).
    #[napi(ts_type = "{ getMeter(name: string, version?: string, options?: object): unknown }")]
    pub meter_provider: Option<Object<'e>>,
    /// Record content in spans: the prompt, the output, each tool call's
    /// input and output (default `false`: none of it is recorded).
    pub capture_content: Option<bool>,
}

/// The optional last argument of every method.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct CallOptions<'e> {
    /// Abort the call: it rejects with code `aborted` (`timeout` if the
    /// signal's reason is a `TimeoutError`, as `AbortSignal.timeout()`
    /// gives), with the signal's reason as its `cause`. If the request was
    /// already written, its late answer is ignored.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Object<'e>>,
    /// Milliseconds before the call rejects with code `timeout`. If the
    /// request was already written, its late answer is ignored.
    pub timeout: Option<f64>,
}

/// Options of `client.turn()`.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct TurnOptions<'e> {
    /// `"submit"` (the default) starts the turn with `submit` (remote error
    /// `busy` while another runs); `"interrupt"` with `interrupt_and_submit`.
    #[napi(ts_type = "'submit' | 'interrupt'")]
    pub mode: Option<String>,
    /// Answers each `approval_requested` of the turn: `"allow"`, `"deny"`, or
    /// a function of the request that returns one (or a promise of one), and
    /// may take as long as a person needs. A function that throws, rejects or
    /// returns anything else denies, and the turn then fails with
    /// `invalid_params` (its `cause` is what the function threw) once it has
    /// finished: its iterator throws that error after the turn's events, and
    /// its result rejects with it.
    #[napi(ts_type = "ApprovalDecision | ApprovalHandler")]
    pub on_approval: Option<Unknown<'e>>,
    /// Interrupts the agent when aborted; the result then rejects with
    /// `aborted` (`timeout` for a `TimeoutError` reason), the signal's reason
    /// as its `cause` and the result so far as its `result`, once the turn
    /// has finished.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Object<'e>>,
    /// Milliseconds after which the agent is interrupted; the result then
    /// rejects with `timeout`, the result so far as its `result`, once the
    /// turn has finished.
    pub timeout: Option<f64>,
}

/// Options of `client.run()`: those of `turn()`, with `onApproval` required
/// (nobody else sees the turn's approvals).
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct RunOptions<'e> {
    /// `"submit"` (the default) starts the turn with `submit` (remote error
    /// `busy` while another runs); `"interrupt"` with `interrupt_and_submit`.
    #[napi(ts_type = "'submit' | 'interrupt'")]
    pub mode: Option<String>,
    /// Answers each `approval_requested` of the turn: `"allow"`, `"deny"`, or
    /// a function of the request that returns one (or a promise of one), and
    /// may take as long as a person needs. A function that throws, rejects or
    /// returns anything else denies, and `run()` then rejects with
    /// `invalid_params` (its `cause` is what the function threw, its
    /// `result` the turn's result) once the turn has finished.
    #[napi(ts_type = "ApprovalDecision | ApprovalHandler")]
    pub on_approval: Unknown<'e>,
    /// Interrupts the agent when aborted; `run()` then rejects with `aborted`
    /// (`timeout` for a `TimeoutError` reason), the signal's reason as its
    /// `cause` and the result so far as its `result`, once the turn has
    /// finished.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Object<'e>>,
    /// Milliseconds after which the agent is interrupted; `run()` then
    /// rejects with `timeout`, the result so far as its `result`, once the
    /// turn has finished.
    pub timeout: Option<f64>,
}

/// A turn started by `client.turn()`: an async iterable of its events (its
/// `turn_started` through its `turn_finished`, with the `state` and
/// `diagnostic` events between them, and an overflow report if one hit),
/// its id, its result, and a way to interrupt it. A loop over it ends the
/// way its result settles: after its events, normally, or throwing the
/// error the result rejects with. Leaving a loop early (`break`, `return`,
/// a throw) interrupts the turn if it still runs; the result then settles
/// when its `turn_finished` arrives, with the status koma reports (normally
/// `"interrupted"`). Iterating again goes on from where the last loop stopped.
///
/// Only `client.turn()` makes one: it is a type with no constructor. (Its
/// `extends` is in its name because napi-rs objects cannot have symbol keys.)
#[napi(object, object_to_js = false, object_from_js = false, js_name = "Turn extends AsyncIterable<EventItem>")]
pub struct Turn<'e> {
    /// The turn id, once `submit` (or `interrupt_and_submit`) has answered.
    /// Rejects as the submit does (for example remote `busy`).
    #[napi(readonly, ts_type = "Promise<string>")]
    pub id: Unknown<'e>,
    /// The turn's result, once its `turn_finished` has arrived. Rejects with
    /// `aborted` or `timeout` (after the agent was interrupted), with
    /// `invalid_params` if the options were bad or `onApproval` failed
    /// (after the turn finished), or with the client's error if it failed
    /// first; every rejection carries the result so far as `result`.
    #[napi(readonly, ts_type = "Promise<TurnResult>")]
    pub result: Unknown<'e>,
    /// Interrupt this turn if it is still running (nothing is written otherwise).
    #[napi(readonly, ts_type = "() => Promise<void>")]
    pub interrupt: Unknown<'e>,
}

/// A tool call of a turn, from its `tool_call` and `tool_result` events.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct ToolCallRecord {
    pub call: String,
    pub tool: String,
    #[napi(ts_type = "unknown")]
    pub input: Value,
    /// The `tool_result`'s output, once it came.
    #[napi(ts_type = "unknown")]
    pub output: Option<Value>,
    /// Whether the tool failed, once its result came.
    pub error: Option<bool>,
    /// How its approval was answered: by `onApproval`, by the application's
    /// `approve()`, or denied for want of anyone to answer.
    #[napi(ts_type = "ApprovalDecision")]
    pub approval: Option<String>,
}

/// What a turn came to.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct TurnResult {
    pub turn: String,
    /// What `turn_finished` said, as koma said it (a status outside the
    /// catalog included); `"unknown"` when no `turn_finished` came.
    #[napi(ts_type = "'completed' | 'interrupted' | 'failed' | 'unknown' | (string & {})")]
    pub status: String,
    /// All the turn's `output` text, joined.
    pub output: String,
    pub tool_calls: Vec<ToolCallRecord>,
    /// How many events the turn had.
    pub events: u32,
    /// An overflow cost the turn's loop events (the result is still
    /// collected from every event, unless they were dropped before the turn
    /// was known: then `output` may lack pieces).
    pub overflowed: bool,
}

/// What a turn that failed had come to: its `turn` is `null` when koma
/// never started one (the submit failed, or the options were bad).
#[napi(object, object_to_js = false, object_from_js = false, use_nullable = true)]
pub struct PartialTurnResult {
    pub turn: Option<String>,
    #[napi(ts_type = "'completed' | 'interrupted' | 'failed' | 'unknown' | (string & {})")]
    pub status: String,
    pub output: String,
    pub tool_calls: Vec<ToolCallRecord>,
    pub events: u32,
    pub overflowed: bool,
}

/// The `binary` member of hello.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct BinaryInfo {
    pub path: String,
    pub version: String,
}

/// The first frame koma sends: what `probe()` resolves with.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct Hello {
    #[napi(ts_type = "'hello'")]
    pub r#type: String,
    /// Always 1: any other protocol is rejected with `protocol_mismatch`.
    #[napi(ts_type = "1")]
    pub protocol: u32,
    pub binary: BinaryInfo,
    /// Items passed through as JSON.
    #[napi(ts_type = "unknown[]")]
    pub diagnostics: Vec<Value>,
    /// The method names this binary implements.
    pub capabilities: Vec<String>,
}

/// The server's `error` of a failed response (`err.remote` when `err.code === "remote"`).
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct RemoteError {
    pub code: String,
    pub message: String,
    #[napi(ts_type = "unknown")]
    pub data: Option<Value>,
}

/// An error of the package whose code is `remote`: koma answered with an
/// error, `remote`.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct RemoteKomaError {
    #[napi(ts_type = "'KomaError'")]
    pub name: String,
    pub message: String,
    pub stack: Option<String>,
    #[napi(ts_type = "'remote'")]
    pub code: String,
    /// koma's error.
    pub remote: RemoteError,
    #[napi(ts_type = "unknown")]
    pub cause: Option<Value>,
    /// What the turn had come to, on a rejection of `turn.result` or
    /// `run()` (and an error a loop over a Turn throws).
    pub result: Option<PartialTurnResult>,
}

/// An error of the package whose code is `aborted`: the call's signal was
/// aborted (its reason is the `cause`). Named `AbortError`, as `fetch`'s is.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct AbortKomaError {
    #[napi(ts_type = "'AbortError'")]
    pub name: String,
    pub message: String,
    pub stack: Option<String>,
    #[napi(ts_type = "'aborted'")]
    pub code: String,
    /// The signal's reason.
    #[napi(ts_type = "unknown")]
    pub cause: Option<Value>,
    /// What the turn had come to, on a rejection of `turn.result` or
    /// `run()` (and an error a loop over a Turn throws).
    pub result: Option<PartialTurnResult>,
}

/// An error of the package whose code is `timeout`: the call's `timeout`
/// passed, or its signal was aborted with a `TimeoutError` (`cause`). Named
/// `TimeoutError`, as `AbortSignal.timeout()`'s reason is.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct TimeoutKomaError {
    #[napi(ts_type = "'TimeoutError'")]
    pub name: String,
    pub message: String,
    pub stack: Option<String>,
    #[napi(ts_type = "'timeout'")]
    pub code: String,
    /// The signal's reason, when a signal timed out.
    #[napi(ts_type = "unknown")]
    pub cause: Option<Value>,
    /// What the turn had come to, on a rejection of `turn.result` or
    /// `run()` (and an error a loop over a Turn throws).
    pub result: Option<PartialTurnResult>,
}

/// An error of the package with any other code of the README's table.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct OtherKomaError {
    #[napi(ts_type = "'KomaError'")]
    pub name: String,
    pub message: String,
    pub stack: Option<String>,
    #[napi(ts_type = "Exclude<ErrorCode, 'remote' | 'aborted' | 'timeout'>")]
    pub code: String,
    /// What led to it, if anything did: what `onApproval` threw (an
    /// `invalid_params` of a turn).
    #[napi(ts_type = "unknown")]
    pub cause: Option<Value>,
    /// What the turn had come to, on a rejection of `turn.result` or
    /// `run()` (and an error a loop over a Turn throws).
    pub result: Option<PartialTurnResult>,
}

/// Every error of the package: an instance of the class `KomaError` with
/// one of the README's codes, narrowed by `code` (`err.remote` is there when
/// it is `"remote"`). `isKomaError(e)` and `e instanceof KomaError` tell
/// one apart in a `catch`.
#[napi]
pub type KomaError = Either4<RemoteKomaError, AbortKomaError, TimeoutKomaError, OtherKomaError>;

/// The one report of an overflow: the event buffer (256 frames / 64 MiB) was
/// full, so it was cleared and events were discarded until this report was taken.
#[napi(object, object_to_js = false, object_from_js = false)]
pub struct OverflowReport {
    #[napi(ts_type = "'overflow'")]
    pub r#type: String,
    /// How many events were discarded.
    pub dropped: f64,
}

/// A message of the `koma-sdk:trace` diagnostics channel: one thing a
/// client's connection saw. Subscribe before making the client: a client
/// made while nobody listens keeps no trace.
///
/// ```ts
/// diagnostics_channel.subscribe("koma-sdk:trace", (m) => {
///   const { pid, kind, text } = m as TraceMessage;
///   if (kind === "stderr") console.log(`koma ${pid}: ${text}`);
/// });
/// ```
#[napi(object, object_to_js = false, object_from_js = false, use_nullable = true)]
pub struct TraceMessage {
    /// The client (`undefined` once it was collected).
    #[napi(ts_type = "Client | undefined")]
    pub client: String,
    /// koma's process id (`null` before it started).
    pub pid: Option<u32>,
    /// A frame, a whole line of koma's stderr, a note of the client's life,
    /// or how many records were dropped because they were not taken in time.
    #[napi(ts_type = "'frame' | 'stderr' | 'spawned' | 'hello' | 'detach' | 'exit' | 'failed' | 'closed' | 'dropped'")]
    pub kind: String,
    /// A frame's: written to koma, or read from it; `null` for the others.
    #[napi(ts_type = "'written' | 'read' | null")]
    pub direction: String,
    /// The frame's text (escaped, cut at 4 KiB), the stderr line (escaped),
    /// or the note's sentence.
    pub text: String,
}
