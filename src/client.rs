//! The `Client` class: the `#[napi]` surface. It only converts: arguments
//! into the core's calls, and the core's answers into promises (see
//! `delivery.rs`), events (`stream.rs`) and call options (`call.rs`).

use std::ffi::OsString;
use std::rc::Rc;

use koma_transport::child::LaunchOptions;
use koma_transport::{Closing, Connection, ConnectionOptions, ErrorCode, KomaError, Probe};
use napi::bindgen_prelude::{FromNapiValue, This, ToNapiValue, TypeName, ValidateNapiValue};
use napi::{sys, Env, JsValue, ValueType};
use napi_derive::napi;

use crate::call::{CallOpts, Started};
use crate::delivery::{Ctx, JsState};
use crate::env::EnvData;
use crate::handles::{Deferred, OwnedRef};
use crate::js::{Js, Value};
use crate::turn::Turn;
use crate::types::Census;

/// A raw JavaScript value returned as is (the typings say what it is).
pub struct Raw(Value);

impl From<Value> for Raw {
    fn from(v: Value) -> Self {
        Raw(v)
    }
}

impl ToNapiValue for Raw {
    unsafe fn to_napi_value(_env: sys::napi_env, v: Self) -> napi::Result<sys::napi_value> {
        Ok(v.0)
    }
}

impl TypeName for Raw {
    fn type_name() -> &'static str {
        "unknown"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

/// A raw JavaScript argument, whatever it is.
pub struct Arg(Value);

impl FromNapiValue for Arg {
    unsafe fn from_napi_value(_env: sys::napi_env, v: sys::napi_value) -> napi::Result<Self> {
        Ok(Arg(v))
    }
}

impl TypeName for Arg {
    fn type_name() -> &'static str {
        "unknown"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ValidateNapiValue for Arg {}

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

fn env_trace() -> bool {
    matches!(std::env::var("KOMA_SDK_TRACE").as_deref(), Ok("1") | Ok("true") | Ok("yes"))
}

/// A promise rejected now with `e`.
fn rejected(js: Js, ctx: &Ctx, e: &KomaError) -> napi::Result<Raw> {
    let (d, p) = Deferred::new(js, &ctx.env.life)?;
    d.reject_with(js, e, None);
    Ok(Raw(p))
}

/// Throw `e` from the constructor, as an `Error` with its code.
fn throw(js: Js, e: &KomaError) -> napi::Error {
    if let Ok(err) = js.error(e, None) {
        if js.throw(err).is_ok() {
            return napi::Error::new(napi::Status::PendingException, e.message.clone());
        }
    }
    napi::Error::new(napi::Status::InvalidArg, format!("{}: {}", e.code, e.message))
}

/// `new Client(options)`: read and check the options; nothing is started.
fn client_options(js: Js, v: Value) -> Result<(LaunchOptions, bool), KomaError> {
    let bad = |what: String| KomaError::new(ErrorCode::InvalidParams, format!("new Client: {what}"));
    let string = |v: Value, what: &str| -> Result<String, KomaError> {
        if js.type_of(v).ok() != Some(sys::ValueType::napi_string) {
            return Err(bad(format!("`{what}` must be a string")));
        }
        js.get_string(v).map_err(|_| bad(format!("`{what}` could not be read")))
    };
    let present = |v: Value| !js.is_nullish(v).unwrap_or(true);
    if js.type_of(v).ok() != Some(sys::ValueType::napi_object) {
        return Err(bad("options must be an object { executable, cwd?, env?, trace? }".into()));
    }
    let get = |name: &str| js.get(v, name).map_err(|_| bad(format!("`{name}` could not be read")));
    let mut launch =
        LaunchOptions { executable: OsString::from(string(get("executable")?, "executable")?), ..Default::default() };
    let cwd = get("cwd")?;
    if present(cwd) {
        launch.cwd = Some(string(cwd, "cwd")?.into());
    }
    let env = get("env")?;
    if present(env) {
        if js.type_of(env).ok() != Some(sys::ValueType::napi_object) {
            return Err(bad("`env` must be an object of strings".into()));
        }
        let keys = js.own_keys(env).map_err(|_| bad("`env` could not be read".into()))?;
        let mut vars = Vec::with_capacity(keys.len());
        for k in keys {
            let value = js.get(env, &k).map_err(|_| bad(format!("`env.{k}` could not be read")))?;
            if js.type_of(value).ok() == Some(sys::ValueType::napi_undefined) {
                continue; // as Node's spawn does
            }
            vars.push((OsString::from(&k), OsString::from(string(value, &format!("env.{k}"))?)));
        }
        vars.sort();
        launch.env = vars;
    }
    let trace = get("trace")?;
    let trace = if present(trace) {
        if js.type_of(trace).ok() != Some(sys::ValueType::napi_boolean) {
            return Err(bad("`trace` must be a boolean".into()));
        }
        js.get_bool(trace).unwrap_or(false)
    } else {
        false
    };
    launch.validate().map_err(|e| bad(e.message))?;
    Ok((launch, trace))
}

#[napi]
impl Client {
    /// Make a client. Nothing is started until the first call. Bad options
    /// throw an `Error` with code `invalid_params`.
    #[napi(catch_unwind, constructor, ts_args_type = "options: ClientOptions")]
    pub fn new(env: Env, options: Arg) -> napi::Result<Self> {
        let js = Js(env.raw());
        let (launch, trace) = client_options(js, options.0).map_err(|e| throw(js, &e))?;
        let env_data = EnvData::of(js)?;
        let state =
            JsState { calls: Default::default(), stream: None, events_waiting: false, client: None, held: false };
        // The connection wakes the JavaScript thread through the
        // environment's one threadsafe function, naming this client.
        let (id, waker) = env_data.wakes.waker();
        let conn = Connection::new(
            ConnectionOptions { launch, trace: trace || env_trace(), label: "koma-sdk".into(), ..Default::default() },
            waker,
        );
        let ctx = Rc::new(Ctx { conn, env: env_data, id, state: std::cell::RefCell::new(state) });
        ctx.env.wakes.register(id, &ctx);
        Ok(Client { ctx })
    }

    /// Start the child if needed; resolves with its checked hello.
    #[napi(catch_unwind, ts_args_type = "options?: CallOptions", ts_return_type = "Promise<Hello>")]
    pub fn probe(&self, env: Env, this: This, options: Option<Arg>) -> napi::Result<Raw> {
        let js = Js(env.raw());
        self.ctx.remember_client(js, this.raw())?;
        let opts = match CallOpts::parse(js, options.map(|a| a.0)) {
            Ok(o) => o,
            Err(e) => return rejected(js, &self.ctx, &e),
        };
        let timeout = opts.timeout;
        let ctx = &self.ctx;
        ctx.call(js, "probe", opts, |token| match ctx.conn.probe(token, timeout)? {
            Probe::Wait => Ok(Started::Waiting),
            Probe::Ready(h) => ctx.parse_json(js, h.to_json().as_bytes()).map(Started::Now).map_err(|e| {
                KomaError::new(ErrorCode::TransportFailure, format!("could not convert hello: {}", e.reason))
            }),
        })
        .map(Raw)
    }

    /// `create`: start a new session. Allowed only as the first request.
    #[napi(
        catch_unwind,
        ts_args_type = "params?: CreateParams, options?: CallOptions",
        ts_return_type = "Promise<SessionResult>"
    )]
    pub fn create(&self, env: Env, this: This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "create", params, options)
    }

    /// `resume`: reattach to a saved session and replay its events after `after`.
    #[napi(
        catch_unwind,
        ts_args_type = "params: ResumeParams, options?: CallOptions",
        ts_return_type = "Promise<SessionResult>"
    )]
    pub fn resume(&self, env: Env, this: This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "resume", params, options)
    }

    /// `state`: the session's state.
    #[napi(catch_unwind, ts_args_type = "options?: CallOptions", ts_return_type = "Promise<State>")]
    pub fn state(&self, env: Env, this: This, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "state", None, options)
    }

    /// `submit`: start a turn. Remote error `busy` while a turn runs.
    #[napi(
        catch_unwind,
        ts_args_type = "params: TextParams, options?: CallOptions",
        ts_return_type = "Promise<SubmitResult>"
    )]
    pub fn submit(&self, env: Env, this: This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "submit", params, options)
    }

    /// `enqueue`: queue a text to run after the current turn.
    #[napi(
        catch_unwind,
        ts_args_type = "params: TextParams, options?: CallOptions",
        ts_return_type = "Promise<EnqueueResult>"
    )]
    pub fn enqueue(&self, env: Env, this: This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "enqueue", params, options)
    }

    /// `interrupt`: stop the running turn, if any.
    #[napi(catch_unwind, ts_args_type = "options?: CallOptions", ts_return_type = "Promise<InterruptResult>")]
    pub fn interrupt(&self, env: Env, this: This, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "interrupt", None, options)
    }

    /// `interrupt_and_submit`: stop the running turn and start a new one.
    #[napi(
        catch_unwind,
        ts_args_type = "params: TextParams, options?: CallOptions",
        ts_return_type = "Promise<InterruptAndSubmitResult>"
    )]
    pub fn interrupt_and_submit(
        &self,
        env: Env,
        this: This,
        params: Option<Arg>,
        options: Option<Arg>,
    ) -> napi::Result<Raw> {
        self.send(env, this, "interrupt_and_submit", params, options)
    }

    /// `approve`: answer an `approval_requested` event.
    #[napi(
        catch_unwind,
        ts_args_type = "params: ApproveParams, options?: CallOptions",
        ts_return_type = "Promise<EmptyResult>"
    )]
    pub fn approve(&self, env: Env, this: This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "approve", params, options)
    }

    /// `configure`: change the model.
    #[napi(
        catch_unwind,
        ts_args_type = "params?: ConfigureParams, options?: CallOptions",
        ts_return_type = "Promise<State>"
    )]
    pub fn configure(&self, env: Env, this: This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "configure", params, options)
    }

    /// `detach`: koma saves the session and exits 0. Resolves after the answer
    /// and the child's exit; `events()` then ends. Nothing is written after it.
    #[napi(catch_unwind, ts_args_type = "options?: CallOptions", ts_return_type = "Promise<EmptyResult>")]
    pub fn detach(&self, env: Env, this: This, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "detach", None, options)
    }

    /// Send any method in hello's capabilities. Methods of the protocol's table
    /// get their params checked; for any other, `params` must be a JSON object
    /// and is sent as given.
    #[napi(
        catch_unwind,
        ts_args_type = "method: string, params?: Record<string, unknown>, options?: CallOptions",
        ts_return_type = "Promise<unknown>"
    )]
    pub fn request(
        &self,
        env: Env,
        this: This,
        method: Arg,
        params: Option<Arg>,
        options: Option<Arg>,
    ) -> napi::Result<Raw> {
        let js = Js(env.raw());
        if js.type_of(method.0)? != sys::ValueType::napi_string {
            let e = KomaError::new(ErrorCode::InvalidParams, "request: `method` must be a string");
            return rejected(js, &self.ctx, &e);
        }
        let method = js.get_string(method.0)?;
        self.send(env, this, &method, params, options)
    }

    /// The events of this client, in order: catalog events and the one
    /// overflow report. Ends after detach or close; throws the client's fatal
    /// error after a failure (once the events received before it were taken).
    /// There is one queue per client: every call iterates the same queue.
    #[napi(catch_unwind, ts_return_type = "AsyncIterableIterator<EventItem>")]
    pub fn events(&self, env: Env, this: This) -> napi::Result<Raw> {
        let js = Js(env.raw());
        self.ctx.remember_client(js, this.raw())?;
        self.ctx.event_stream(js).map(Raw)
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

    /// Detach if it can (bounded), else end stdin, then SIGTERM, then SIGKILL,
    /// each after a short grace; the child (and the tools it started) are
    /// stopped and reaped. Idempotent. Pending calls get `delivery_unknown`.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn close(&self, env: Env, this: This) -> napi::Result<Raw> {
        let js = Js(env.raw());
        self.ctx.remember_client(js, this.raw())?;
        let ctx = &self.ctx;
        ctx.call(js, "close", CallOpts::NONE, |token| match ctx.conn.close(token) {
            Closing::Wait => Ok(Started::Waiting),
            Closing::Done => {
                js.undefined().map(Started::Now).map_err(|e| KomaError::new(ErrorCode::TransportFailure, e.reason))
            }
        })
        .map(Raw)
    }

    /// Start a turn: `submit` (or, with `mode: "interrupt"`,
    /// `interrupt_and_submit`) its text, and take its events from the
    /// client's one event queue (`events()` gets the rest). Answers its
    /// approvals with `onApproval` if given; else the application answers
    /// them with `approve()` as it reads the Turn (and an approval that
    /// arrives while nobody reads it is denied). `signal` and `timeout`
    /// interrupt the agent, and the result then rejects with `aborted` or
    /// `timeout` once the turn has finished.
    #[napi(catch_unwind, ts_args_type = "params: TextParams, options?: TurnOptions")]
    pub fn turn(&self, env: Env, this: This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Turn> {
        let js = Js(env.raw());
        let made = self.turn_layer(js, this, "makeTurn", params, options)?;
        Ok(Turn::new(OwnedRef::new(js, &self.ctx.env.life, made, true)?))
    }

    /// A turn in one call: `turn()` drained. Resolves with its result.
    /// `onApproval` is required (`invalid_params` otherwise, nothing written).
    #[napi(
        catch_unwind,
        ts_args_type = "params: TextParams, options: RunOptions",
        ts_return_type = "Promise<TurnResult>"
    )]
    pub fn run(&self, env: Env, this: This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        self.turn_layer(Js(env.raw()), this, "run", params, options).map(Raw)
    }

    /// `await using client = new Client(...)` closes it.
    #[napi(catch_unwind, well_known_symbol = "asyncDispose", ts_return_type = "Promise<void>")]
    pub fn async_dispose(&self, env: Env, this: This) -> napi::Result<Raw> {
        self.close(env, this)
    }

    /// Call the turn layer's `name` (turn.js) with this client, the event
    /// queue's router, and the call's arguments.
    fn turn_layer(
        &self,
        js: Js,
        this: This,
        name: &str,
        params: Option<Arg>,
        options: Option<Arg>,
    ) -> napi::Result<Value> {
        self.ctx.remember_client(js, this.raw())?;
        let layer = self.ctx.env.turn_layer(js)?;
        let f = js.get(layer, name)?;
        let router = self.ctx.event_router(js)?;
        let args =
            [this.raw(), router, params.map_or(js.undefined()?, |p| p.0), options.map_or(js.undefined()?, |o| o.0)];
        js.call(f, layer, &args)
    }

    fn send(&self, env: Env, this: This, method: &str, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        let js = Js(env.raw());
        self.ctx.remember_client(js, this.raw())?;
        let opts = match CallOpts::parse(js, options.map(|a| a.0)) {
            Ok(o) => o,
            Err(e) => return rejected(js, &self.ctx, &e),
        };
        let params_json = match params {
            None => None,
            Some(p) => match self.ctx.stringify(js, p.0, method) {
                Ok(s) => s,
                Err(e) => return rejected(js, &self.ctx, &e),
            },
        };
        let timeout = opts.timeout;
        let ctx = &self.ctx;
        ctx.call(js, method, opts, |token| {
            ctx.conn.request(token, method, params_json.as_deref(), timeout).map(|()| Started::Waiting)
        })
        .map(Raw)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // Collected, or its environment is ending (a Worker terminated),
        // without close(): stop the child's whole group now. The iterator
        // and the client's references go now too.
        self.ctx.conn.kill_now();
        self.ctx.env.wakes.unregister(self.ctx.id);
        let mut st = self.ctx.state.borrow_mut();
        st.stream = None;
        st.client = None;
    }
}

impl Ctx {
    fn remember_client(&self, js: Js, this: Value) -> napi::Result<()> {
        if self.state.borrow().client.is_none() {
            let r = OwnedRef::new(js, &self.env.life, this, false)?;
            self.state.borrow_mut().client = Some(r);
        }
        Ok(())
    }

    /// `JSON.stringify(params)`; `undefined` and `null` give no params.
    fn stringify(&self, js: Js, v: Value, method: &str) -> Result<Option<String>, KomaError> {
        let fail = |why: &str| KomaError::new(ErrorCode::InvalidParams, format!("{method}: {why}"));
        if js.is_nullish(v).unwrap_or(false) {
            return Ok(None);
        }
        if js.type_of(v).ok() != Some(sys::ValueType::napi_object) {
            return Err(fail("params must be an object"));
        }
        let stringify = self.env.json_stringify(js).map_err(|_| fail("JSON unavailable"))?;
        let undefined = js.undefined().map_err(|_| fail("internal"))?;
        let out = js.call(stringify, undefined, &[v]);
        if let Some(_exc) = js.take_exception() {
            return Err(fail("params cannot be sent as JSON (a BigInt or a cycle?)"));
        }
        let out = out.map_err(|_| fail("params cannot be sent as JSON"))?;
        js.get_string(out).map(Some).map_err(|_| fail("params cannot be sent as JSON"))
    }
}

/// Internal counts of this process, for the package's own tests (not part of
/// the API): connections whose memory is still held, and call deadlines
/// still running.
#[napi(js_name = "__census", catch_unwind)]
pub fn census() -> Census {
    let c = koma_transport::connection::census();
    Census { connections: c.connections as u32, timers: c.timers as u32 }
}
