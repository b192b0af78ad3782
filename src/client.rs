//! The `Client` class: the `#[napi]` surface. It only converts: arguments
//! into the core's calls, and the core's answers into promises (through the
//! call layer, `call.rs`), events (`stream.rs`) and turns (`turn.rs`).

use std::ffi::OsString;
use std::rc::Rc;

use koma_transport::child::LaunchOptions;
use koma_transport::environment::process_settings;
use koma_transport::telemetry::TelemetryOptions;
use koma_transport::turns::Entry;
use koma_transport::wording::{DurationUnit, Naming, Wording};
use koma_transport::{Closing, Connection, ConnectionOptions, ErrorCode, KomaError, Probe, TraceKinds};
use napi::bindgen_prelude::{Object, This, Unknown};
use napi::{Env, Result};
use napi_derive::napi;

use crate::call::{call, rejected, send, Started};
use crate::context::Ctx;
use crate::delivery::{on_wake, register, unregister};
use crate::env::EnvData;
use crate::handles::{coded_error, Js};
use crate::options::{call_options, client_options, duration, CallOptions, ClientOptions};
use crate::stream;
use crate::telemetry;
use crate::trace;
use crate::turn;
use crate::values::as_string;

/// The label the core puts on traces (`[koma-sdk pid 1234] -> ...`) and internal errors.
const LABEL: &str = "koma-sdk";

/// A client of one `koma sdk serve` child. Every method starts the child and
/// awaits its hello first if that has not happened. Every method takes an
/// optional last argument `{ signal?: AbortSignal, timeout?: number }`.
///
/// ```ts
/// await using client = new Client({ executable: "koma" });
/// await client.create({ cwd: process.cwd() });
/// await client.submit({ text: "fix the failing test" });
/// ```
#[napi]
pub struct Client {
    ctx: Rc<Ctx>,
}

/// The core's options for `new Client(options)`.
fn connection_options(options: &ClientOptions) -> std::result::Result<ConnectionOptions, KomaError> {
    let bad = |e: KomaError| KomaError::new(ErrorCode::InvalidParams, format!("new Client: {}", e.message));
    let mut env: Vec<(OsString, OsString)> =
        options.env.clone().unwrap_or_default().into_iter().map(|(k, v)| (k.into(), v.into())).collect();
    env.sort();
    // KOMA_SDK_SPAWN and KOMA_SDK_TRACE, read once by the core for every host.
    let settings = process_settings()?;
    let launch = LaunchOptions {
        executable: options.executable.clone().into(),
        cwd: options.cwd.clone().map(Into::into),
        env,
        spawn: settings.spawn,
    };
    launch.validate().map_err(bad)?;
    // `mut` for the `testing` build; the update fills `faults` where the core's
    // `testing` feature is on (a workspace build), and nothing otherwise.
    #[allow(unused_mut, clippy::needless_update)]
    let mut connection = ConnectionOptions {
        launch,
        trace: options.trace.unwrap_or(false) || settings.trace,
        label: LABEL.into(),
        hello_timeout: match options.hello_timeout {
            None => Some(koma_transport::surface::HELLO_TIMEOUT),
            Some(ms) => ms.map(duration),
        },
        wording: Wording { naming: Naming::Camel, durations: DurationUnit::Milliseconds },
        ..Default::default()
    };
    #[cfg(feature = "testing")]
    {
        connection.faults = crate::testing::faults();
    }
    Ok(connection)
}

#[napi]
impl Client {
    /// Make a client. Nothing is started until the first call. Bad options
    /// throw an `Error` with code `invalid_params`.
    #[napi(catch_unwind, constructor, ts_args_type = "options: ClientOptions")]
    pub fn new(env: &Env, this: This, options: Option<Unknown>) -> Result<Self> {
        let js = Js::new(env);
        let given = client_options(js, options).map_err(|e| throw(js, &e))?;
        let mut options = connection_options(&given).map_err(|e| throw(js, &e))?;
        let env_data = EnvData::of(js, on_wake)?;
        // OpenTelemetry: a telemetry object when the application traces (see `telemetry.rs`).
        let content = given.capture_content.unwrap_or(false);
        let tracer_provider = given.tracer_provider;
        let meter_provider = given.meter_provider;
        let wanted = telemetry::Wanted { tracer_provider, meter_provider };
        let telemetry =
            if given.telemetry == Some(false) { None } else { telemetry::make(js, &env_data, &this, wanted) };
        if telemetry.is_some() {
            options.telemetry = Some(TelemetryOptions { content });
        }
        // Records for the `koma-sdk:trace` channel are kept only if someone
        // listens when the client is made: otherwise a frame costs one branch.
        let traced = trace::subscribed(js, &env_data);
        if traced {
            options.trace_records = TraceKinds::ALL;
        }
        // The connection wakes the JavaScript thread through the
        // environment's one threadsafe function, naming this client.
        let (id, waker) = env_data.wakes.waker();
        let ctx = Ctx::new(Connection::new(options, waker), env_data, id, traced, telemetry);
        ctx.remember_client(js, &this)?;
        register(&ctx);
        Ok(Client { ctx })
    }

    /// Start the child if needed; resolves with its checked hello.
    #[napi(catch_unwind, ts_args_type = "options?: CallOptions", ts_return_type = "Promise<Hello>")]
    pub fn probe<'e>(&self, env: &'e Env, options: Unknown<'e>) -> Result<Unknown<'e>> {
        let js = Js::new(env);
        let opts = match call_options(js, "probe", Some(options)) {
            Ok(o) => o,
            Err(e) => return rejected(js, &self.ctx, &e),
        };
        let ctx = &self.ctx;
        call(ctx, js, "probe", &opts, |token| match ctx.conn.probe(token, opts.timeout.map(duration))? {
            Probe::Wait => Ok(Started::Waiting),
            Probe::Ready(h) => ctx.env.parse(js, h.to_json().as_bytes()).map(Started::Now).map_err(|e| {
                KomaError::new(ErrorCode::TransportFailure, format!("could not convert hello: {}", e.reason))
            }),
        })
    }

    /// Send any method in hello's capabilities. Methods of the protocol's table
    /// get their params checked; for any other, `params` must be a JSON object
    /// and is sent as given.
    #[napi(
        catch_unwind,
        ts_args_type = "method: string, params?: Record<string, unknown>, options?: CallOptions",
        ts_return_type = "Promise<unknown>"
    )]
    pub fn request<'e>(
        &self,
        env: &'e Env,
        method: Unknown<'e>,
        params: Unknown<'e>,
        options: Unknown<'e>,
    ) -> Result<Unknown<'e>> {
        let Some(method) = as_string(method) else {
            let e = KomaError::new(ErrorCode::InvalidParams, "request: `method` must be a string");
            return rejected(Js::new(env), &self.ctx, &e);
        };
        self.send(env, &method, Some(params), options)
    }

    /// The events of this client that no Turn took, in order: catalog events
    /// and the one overflow report. Ends after detach or close; throws the
    /// client's fatal error after a failure (once the events received before
    /// it were taken). There is one queue per client: each call is a loop of
    /// its own over it, and leaving one loop ends that loop only. With a
    /// `signal` or a `timeout`, the loop ends throwing `aborted` or `timeout`
    /// when the signal aborts or the time has passed (bad options: it throws
    /// `invalid_params`).
    #[napi(catch_unwind, ts_args_type = "options?: CallOptions", ts_return_type = "AsyncIterableIterator<EventItem>")]
    pub fn events<'e>(&self, env: &'e Env, options: Unknown<'e>) -> Result<Unknown<'e>> {
        let js = Js::new(env);
        stream::events(&self.ctx, js, call_options(js, "events", Some(options)))
    }

    /// The kept tail of the child's stderr (the newest 64 KiB), as text.
    #[napi(catch_unwind, getter)]
    pub fn stderr(&self) -> String {
        self.ctx.conn.stderr_text()
    }

    /// The child's process id while it runs, else `null`.
    #[napi(catch_unwind, getter, ts_return_type = "number | null")]
    pub fn pid(&self) -> Option<u32> {
        self.ctx.conn.pid()
    }

    /// `lib/telemetry.js`'s: koma is to be started with this trace context
    /// (`TRACEPARENT`, `TRACESTATE`) if it has not been started; not part of
    /// the API (no typings; `index.js` takes it off the prototype).
    #[napi(catch_unwind, js_name = "__traceContext", skip_typescript)]
    pub fn trace_context(&self, trace_id: String, span_id: String, flags: u32, trace_state: String) -> bool {
        telemetry::trace_context(&self.ctx, &trace_id, &span_id, flags, &trace_state)
    }

    /// Where the client is in its life, for `util.inspect` (`index.js`); not
    /// part of the API (no typings).
    #[napi(catch_unwind, getter, js_name = "__phase", skip_typescript)]
    pub fn phase(&self) -> String {
        self.ctx.conn.phase_name().to_owned()
    }

    /// The client keeps its trace for the `koma-sdk:trace` channel from now
    /// on (`index.js` calls it before a call when the channel has a
    /// subscriber the client was made without); not part of the API.
    #[napi(catch_unwind, js_name = "__keepTrace", skip_typescript)]
    pub fn keep_trace(&self) {
        trace::keep(&self.ctx);
    }

    /// Detach if it can (bounded), else end stdin, then SIGTERM, then SIGKILL,
    /// each after a short grace; the child (and the tools it started) are
    /// stopped and reaped. Idempotent. Pending calls get `delivery_unknown`.
    /// A `signal` or `timeout` bounds the wait, not the close: the promise
    /// rejects with `aborted` or `timeout`, and the close goes on.
    #[napi(catch_unwind, ts_args_type = "options?: CallOptions", ts_return_type = "Promise<void>")]
    pub fn close<'e>(&self, env: &'e Env, options: Unknown<'e>) -> Result<Unknown<'e>> {
        let js = Js::new(env);
        let ctx = &self.ctx;
        let opts = match call_options(js, "close", Some(options)) {
            Ok(o) => o,
            Err(e) => return rejected(js, ctx, &e),
        };
        let timeout = opts.timeout.map(duration);
        call(ctx, js, "close", &opts, |token| match ctx.conn.close_within(token, timeout) {
            Closing::Wait => Ok(Started::Waiting),
            Closing::Done => Ok(Started::Now(js.undefined())),
            Closing::Refused(e) => Err(e),
        })
    }

    /// Start a turn: `submit` (or, with `mode: "interrupt"`,
    /// `interrupt_and_submit`) its text, and take its events from the
    /// client's one event queue (`events()` gets the rest). Answers its
    /// approvals with `onApproval` if given; else the application answers
    /// them with `approve()` as it reads the Turn (and an approval that
    /// arrives while nobody reads it is denied). `signal` and `timeout`
    /// interrupt the agent, and the result then rejects with `aborted` or
    /// `timeout` once the turn has finished.
    #[napi(catch_unwind, ts_args_type = "params: TextParams, options?: TurnOptions", ts_return_type = "Turn")]
    pub fn turn<'e>(&self, env: &'e Env, params: Unknown<'e>, options: Unknown<'e>) -> Result<Unknown<'e>> {
        turn::enter(Entry::Turn, &self.ctx, Js::new(env), Some(params), Some(options))
    }

    /// A turn in one call: `turn()` drained. Resolves with its result.
    /// `onApproval` is required (`invalid_params` otherwise, nothing written).
    /// A rejection after the turn started (abort, timeout, a failing
    /// `onApproval`) carries the result so far as `result`.
    #[napi(
        catch_unwind,
        ts_args_type = "params: TextParams, options: RunOptions",
        ts_return_type = "Promise<TurnResult>"
    )]
    pub fn run<'e>(&self, env: &'e Env, params: Unknown<'e>, options: Unknown<'e>) -> Result<Unknown<'e>> {
        turn::enter(Entry::Run, &self.ctx, Js::new(env), Some(params), Some(options))
    }

    /// `await using client = new Client(...)` closes it.
    #[napi(catch_unwind, well_known_symbol = "asyncDispose", ts_return_type = "Promise<void>")]
    pub fn async_dispose<'e>(&self, env: &'e Env) -> Result<Unknown<'e>> {
        let js = Js::new(env);
        let ctx = &self.ctx;
        let none = CallOptions { signal: None, timeout: None };
        call(ctx, js, "close", &none, |token| match ctx.conn.close(token) {
            Closing::Wait => Ok(Started::Waiting),
            Closing::Done => Ok(Started::Now(js.undefined())),
            Closing::Refused(e) => Err(e),
        })
    }
}

impl Client {
    fn send<'e>(
        &self,
        env: &'e Env,
        method: &str,
        params: Option<Unknown<'e>>,
        options: Unknown<'e>,
    ) -> Result<Unknown<'e>> {
        send(&self.ctx, Js::new(env), method, params, Some(options))
    }
}

/// Throw `e` from the constructor, as an `Error` with its code.
fn throw(js: Js, e: &KomaError) -> napi::Error {
    match coded_error(js, e, None, None) {
        Ok(err) => napi::Error::from(err),
        Err(_) => napi::Error::new(napi::Status::InvalidArg, format!("{}: {}", e.code, e.message)),
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // Collected, or its environment is ending (a Worker terminated),
        // without close(): stop the child's whole group now. The queue and
        // the client's references go now too.
        self.ctx.conn.kill_now();
        unregister(self.ctx.id);
        self.ctx.forget_js();
    }
}

/// `index.js` registers the package's JavaScript half (`lib/`) here when
/// the package loads, once per environment: the binding calls its functions
/// to make what is JavaScript's own (a loop over a stream: `clientStream`; a
/// Turn: `makeTurn`; an error: `makeError`). Called by `index.js` only; not
/// part of the package's API (no typings).
#[napi(js_name = "__setJsHalf", skip_typescript)]
pub fn set_js_half(env: &Env, functions: Object) -> Result<()> {
    let js = Js::new(env);
    EnvData::of(js, on_wake)?.set_js_half(js, &functions)
}
