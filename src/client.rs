//! The `Client` class, and the native side of its event iterator (`events.js`).
//!
//! Requests return promises created here on the JavaScript thread; their
//! answers arrive from the core's reader task as completions, and one wake of
//! the JavaScript thread (a weak threadsafe function, referenced only while
//! something is outstanding) settles a whole batch: results are joined and
//! parsed by one `JSON.parse`. Events cross in batches too: the iterator (a
//! few lines of JavaScript, `events.js`) yields from the parsed batch and counts
//! what it took in memory shared with the core, with no call per event.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_void, OsString};
use std::ptr;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use koma_transport::child::LaunchOptions;
use koma_transport::connection::{batch_data_index, Probe, RawJson};
use koma_transport::events::{End, Take};
use koma_transport::lift::Step;
use koma_transport::{Completion, Connection, ConnectionOptions, ErrorCode, KomaError, Outcome, Waker};
use napi::bindgen_prelude::{FromNapiValue, ToNapiValue, TypeName, ValidateNapiValue};
use napi::{sys, Env, JsValue, ValueType};
use napi_derive::napi;

use crate::js::{callback_data, Js, Value};
use crate::types::ClientOptions;

/// A raw JavaScript value returned as is (the typings say what it is).
pub struct Raw(Value);

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

/// The threadsafe function that wakes the JavaScript thread; `None` once
/// released or finalized, so a late wake from the reader is a no-op.
struct TsfnSlot(Mutex<Option<usize>>);

struct JsWaker(Arc<TsfnSlot>);

impl Waker for JsWaker {
    fn wake(&self) {
        let slot = self.0 .0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tsfn) = *slot {
            // SAFETY: the pointer is live while it is in the slot (the finalizer empties it).
            unsafe {
                sys::napi_call_threadsafe_function(
                    tsfn as sys::napi_threadsafe_function,
                    ptr::null_mut(),
                    sys::ThreadsafeFunctionCallMode::nonblocking,
                );
            }
        }
    }
}

struct PendingJs {
    deferred: sys::napi_deferred,
    /// The call's name, for its `aborted` message.
    what: String,
    /// (signal, listener) to remove once settled.
    abort: Option<(sys::napi_ref, sys::napi_ref)>,
}

struct JsState {
    pending: HashMap<u64, PendingJs>,
    /// The event iterator (one per client) and its `settle`, once made.
    stream: sys::napi_ref,
    settle: sys::napi_ref,
    /// The iterator waits for events: the next wake calls `settle`.
    events_waiting: bool,
    json_parse: sys::napi_ref,
    json_stringify: sys::napi_ref,
    /// The Client's own object: held strongly while anything is outstanding,
    /// so a client with work in flight is never collected.
    client_ref: sys::napi_ref,
    held: bool,
}

struct Ctx {
    conn: Connection,
    tsfn: Arc<TsfnSlot>,
    state: RefCell<JsState>,
}

/// What a call's optional last argument holds.
struct CallOpts {
    signal: Option<Value>,
    timeout: Option<Duration>,
}

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

#[napi]
impl Client {
    /// Make a client. Nothing is started until the first call.
    #[napi(catch_unwind, constructor)]
    pub fn new(env: Env, options: ClientOptions) -> napi::Result<Self> {
        let js = Js(env.raw());
        if options.executable.is_empty() {
            return Err(napi::Error::new(napi::Status::InvalidArg, "invalid_params: `executable` must be a non-empty string"));
        }
        let mut launch = LaunchOptions { executable: OsString::from(options.executable), ..Default::default() };
        launch.cwd = options.cwd.map(Into::into);
        if let Some(vars) = options.env {
            let mut vars: Vec<_> = vars.into_iter().collect();
            vars.sort();
            launch.env = vars.into_iter().map(|(k, v)| (OsString::from(k), OsString::from(v))).collect();
        }
        let trace = options.trace.unwrap_or(false) || env_trace();
        let slot = Arc::new(TsfnSlot(Mutex::new(None)));
        let conn = Connection::new(ConnectionOptions { launch, trace }, Box::new(JsWaker(slot.clone())));
        let global = js.global()?;
        let json = js.get(global, "JSON")?;
        let state = JsState {
            pending: HashMap::new(),
            stream: ptr::null_mut(),
            settle: ptr::null_mut(),
            events_waiting: false,
            json_parse: js.reference(js.get(json, "parse")?, 1)?,
            json_stringify: js.reference(js.get(json, "stringify")?, 1)?,
            client_ref: ptr::null_mut(),
            held: false,
        };
        let ctx = Rc::new(Ctx { conn, tsfn: slot.clone(), state: RefCell::new(state) });
        // The threadsafe function: no JavaScript function, our own call_js.
        let name = js.string(b"koma-sdk")?;
        let mut tsfn = ptr::null_mut();
        let context = Rc::into_raw(ctx.clone()) as *mut c_void;
        let status = unsafe {
            sys::napi_create_threadsafe_function(
                js.0,
                ptr::null_mut(),
                ptr::null_mut(),
                name,
                0,
                1,
                context,
                Some(finalize_tsfn),
                context,
                Some(on_wake),
                &mut tsfn,
            )
        };
        if status != sys::Status::napi_ok {
            drop(unsafe { Rc::from_raw(context as *const Ctx) });
            return Err(napi::Error::from_reason("could not create the threadsafe function"));
        }
        unsafe { sys::napi_unref_threadsafe_function(js.0, tsfn) };
        *slot.0.lock().unwrap() = Some(tsfn as usize);
        Ok(Client { ctx })
    }

    /// Start the child if needed; resolves with its checked hello.
    #[napi(catch_unwind, ts_args_type = "options?: CallOptions", ts_return_type = "Promise<Hello>")]
    pub fn probe(&self, env: Env, this: napi::bindgen_prelude::This, options: Option<Arg>) -> napi::Result<Raw> {
        let js = Js(env.raw());
        self.ctx.remember_client(js, this.raw())?;
        let opts = match parse_opts(js, options.map(|a| a.0)) {
            Ok(o) => o,
            Err(e) => return js.rejected(&e).map(Raw),
        };
        if signal_aborted(js, &opts)? {
            return js.rejected(&aborted_error("probe")).map(Raw);
        }
        match self.ctx.conn.probe(opts.timeout) {
            Err(e) => js.rejected(&e).map(Raw),
            Ok(Probe::Ready(h)) => {
                let v = self.ctx.parse_json(js, h.to_json().as_bytes())?;
                js.resolved(v).map(Raw)
            }
            Ok(Probe::Wait(token)) => self.ctx.track(js, token, opts, "probe").map(Raw),
        }
    }

    /// `create`: start a new session. Allowed only as the first request.
    #[napi(catch_unwind, ts_args_type = "params?: CreateParams, options?: CallOptions", ts_return_type = "Promise<SessionResult>")]
    pub fn create(&self, env: Env, this: napi::bindgen_prelude::This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "create", params, options)
    }

    /// `resume`: reattach to a saved session and replay its events after `after`.
    #[napi(catch_unwind, ts_args_type = "params: ResumeParams, options?: CallOptions", ts_return_type = "Promise<SessionResult>")]
    pub fn resume(&self, env: Env, this: napi::bindgen_prelude::This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "resume", params, options)
    }

    /// `state`: the session's state.
    #[napi(catch_unwind, ts_args_type = "options?: CallOptions", ts_return_type = "Promise<State>")]
    pub fn state(&self, env: Env, this: napi::bindgen_prelude::This, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "state", None, options)
    }

    /// `submit`: start a turn. Remote error `busy` while a turn runs.
    #[napi(catch_unwind, ts_args_type = "params: TextParams, options?: CallOptions", ts_return_type = "Promise<SubmitResult>")]
    pub fn submit(&self, env: Env, this: napi::bindgen_prelude::This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "submit", params, options)
    }

    /// `enqueue`: queue a text to run after the current turn.
    #[napi(catch_unwind, ts_args_type = "params: TextParams, options?: CallOptions", ts_return_type = "Promise<EnqueueResult>")]
    pub fn enqueue(&self, env: Env, this: napi::bindgen_prelude::This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "enqueue", params, options)
    }

    /// `interrupt`: stop the running turn, if any.
    #[napi(catch_unwind, ts_args_type = "options?: CallOptions", ts_return_type = "Promise<InterruptResult>")]
    pub fn interrupt(&self, env: Env, this: napi::bindgen_prelude::This, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "interrupt", None, options)
    }

    /// `interrupt_and_submit`: stop the running turn and start a new one.
    #[napi(catch_unwind, ts_args_type = "params: TextParams, options?: CallOptions", ts_return_type = "Promise<InterruptAndSubmitResult>")]
    pub fn interrupt_and_submit(&self, env: Env, this: napi::bindgen_prelude::This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "interrupt_and_submit", params, options)
    }

    /// `approve`: answer an `approval_requested` event.
    #[napi(catch_unwind, ts_args_type = "params: ApproveParams, options?: CallOptions", ts_return_type = "Promise<EmptyResult>")]
    pub fn approve(&self, env: Env, this: napi::bindgen_prelude::This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "approve", params, options)
    }

    /// `configure`: change the model.
    #[napi(catch_unwind, ts_args_type = "params?: ConfigureParams, options?: CallOptions", ts_return_type = "Promise<State>")]
    pub fn configure(&self, env: Env, this: napi::bindgen_prelude::This, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "configure", params, options)
    }

    /// `detach`: koma saves the session and exits 0. Resolves after the answer
    /// and the child's exit; `events()` then ends. Nothing is written after it.
    #[napi(catch_unwind, ts_args_type = "options?: CallOptions", ts_return_type = "Promise<EmptyResult>")]
    pub fn detach(&self, env: Env, this: napi::bindgen_prelude::This, options: Option<Arg>) -> napi::Result<Raw> {
        self.send(env, this, "detach", None, options)
    }

    /// Send any method in hello's capabilities. Methods of the protocol's table
    /// get their params checked; for any other, `params` must be a JSON object
    /// and is sent as given.
    #[napi(catch_unwind, ts_args_type = "method: string, params?: Record<string, unknown>, options?: CallOptions", ts_return_type = "Promise<unknown>")]
    pub fn request(&self, env: Env, this: napi::bindgen_prelude::This, method: Arg, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        let js = Js(env.raw());
        if js.type_of(method.0)? != sys::ValueType::napi_string {
            let e = KomaError::new(ErrorCode::InvalidParams, "request: `method` must be a string");
            return js.rejected(&e).map(Raw);
        }
        let method = js.get_string(method.0)?;
        self.send(env, this, &method, params, options)
    }

    /// The events of this client, in order: catalog events and the one
    /// overflow report. Ends after detach or close; throws the client's fatal
    /// error after a failure (once the events received before it were taken).
    /// There is one queue per client: every call iterates the same queue.
    #[napi(catch_unwind, ts_return_type = "AsyncIterableIterator<EventItem>")]
    pub fn events(&self, env: Env, this: napi::bindgen_prelude::This) -> napi::Result<Raw> {
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
    pub fn close(&self, env: Env, this: napi::bindgen_prelude::This) -> napi::Result<Raw> {
        let js = Js(env.raw());
        self.ctx.remember_client(js, this.raw())?;
        match self.ctx.conn.close() {
            None => js.resolved(js.undefined()?).map(Raw),
            Some(token) => {
                let opts = CallOpts { signal: None, timeout: None };
                self.ctx.track(js, token, opts, "close").map(Raw)
            }
        }
    }

    /// `await using client = new Client(...)` closes it.
    #[napi(catch_unwind, well_known_symbol = "asyncDispose", ts_return_type = "Promise<void>")]
    pub fn async_dispose(&self, env: Env, this: napi::bindgen_prelude::This) -> napi::Result<Raw> {
        self.close(env, this)
    }

    fn send(&self, env: Env, this: napi::bindgen_prelude::This, method: &str, params: Option<Arg>, options: Option<Arg>) -> napi::Result<Raw> {
        let js = Js(env.raw());
        self.ctx.remember_client(js, this.raw())?;
        let opts = match parse_opts(js, options.map(|a| a.0)) {
            Ok(o) => o,
            Err(e) => return js.rejected(&e).map(Raw),
        };
        if signal_aborted(js, &opts)? {
            return js.rejected(&aborted_error(method)).map(Raw);
        }
        let params_json = match params {
            None => None,
            Some(p) => match self.ctx.stringify(js, p.0, method) {
                Ok(s) => s,
                Err(e) => return js.rejected(&e).map(Raw),
            },
        };
        match self.ctx.conn.request(method, params_json.as_deref(), opts.timeout) {
            Err(e) => js.rejected(&e).map(Raw),
            Ok(token) => self.ctx.track(js, token, opts, method).map(Raw),
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // Collected or its environment is ending (a Worker terminated) without
        // close(): stop the child's whole group now, and let the wake-ups go.
        self.ctx.conn.kill_now();
        let tsfn = self.ctx.tsfn.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = tsfn {
            unsafe {
                sys::napi_release_threadsafe_function(t as sys::napi_threadsafe_function, sys::ThreadsafeFunctionReleaseMode::release)
            };
        }
    }
}

impl Ctx {
    fn remember_client(&self, js: Js, this: Value) -> napi::Result<()> {
        let mut st = self.state.borrow_mut();
        if st.client_ref.is_null() {
            st.client_ref = js.reference(this, 0)?;
        }
        Ok(())
    }

    fn parse_json(&self, js: Js, bytes: &[u8]) -> napi::Result<Value> {
        self.parse_string(js, js.string(bytes)?)
    }

    /// `JSON.parse` of a JavaScript string.
    fn parse_string(&self, js: Js, text: Value) -> napi::Result<Value> {
        let parse = js.deref(self.state.borrow().json_parse)?;
        let undefined = js.undefined()?;
        js.call(parse, undefined, &[text])
    }

    /// `JSON.stringify(params)`; `undefined` gives no params.
    fn stringify(&self, js: Js, v: Value, method: &str) -> Result<Option<String>, KomaError> {
        let fail = |why: &str| KomaError::new(ErrorCode::InvalidParams, format!("{method}: {why}"));
        if js.is_nullish(v).unwrap_or(false) {
            return if js.type_of(v).ok() == Some(sys::ValueType::napi_null) {
                Err(fail("params must be an object, not null"))
            } else {
                Ok(None)
            };
        }
        if js.type_of(v).ok() != Some(sys::ValueType::napi_object) {
            return Err(fail("params must be an object"));
        }
        let stringify = js.deref(self.state.borrow().json_stringify).map_err(|_| fail("JSON unavailable"))?;
        let undefined = js.undefined().map_err(|_| fail("internal"))?;
        let out = js.call(stringify, undefined, &[v]);
        if let Some(_exc) = js.take_exception() {
            return Err(fail("params cannot be sent as JSON (a BigInt or a cycle?)"));
        }
        let out = out.map_err(|_| fail("params cannot be sent as JSON"))?;
        js.get_string(out).map(Some).map_err(|_| fail("params cannot be sent as JSON"))
    }

    /// Keep a promise for `token`; listen to the signal if there is one.
    fn track(self: &Rc<Self>, js: Js, token: u64, opts: CallOpts, what: &str) -> napi::Result<Value> {
        let (deferred, promise) = js.promise()?;
        let mut abort = None;
        if let Some(signal) = opts.signal {
            let data = Box::new(AbortData { ctx: Rc::downgrade(self), token });
            let listener = js.function("onabort", on_abort, data)?;
            let add = js.get(signal, "addEventListener")?;
            let once = js.object()?;
            js.set(once, "once", js.boolean(true)?)?;
            let name = js.string(b"abort")?;
            js.call(add, signal, &[name, listener, once])?;
            abort = Some((js.reference(signal, 1)?, js.reference(listener, 1)?));
        }
        self.state.borrow_mut().pending.insert(token, PendingJs { deferred, what: what.to_owned(), abort });
        self.update_hold(js);
        Ok(promise)
    }

    /// Reference the wake-up and the client object while anything is outstanding.
    fn update_hold(&self, js: Js) {
        let mut st = self.state.borrow_mut();
        let busy = !st.pending.is_empty() || st.events_waiting;
        if busy == st.held {
            return;
        }
        st.held = busy;
        let tsfn = *self.tsfn.0.lock().unwrap_or_else(|p| p.into_inner());
        unsafe {
            if let Some(t) = tsfn {
                if busy {
                    sys::napi_ref_threadsafe_function(js.0, t as sys::napi_threadsafe_function);
                } else {
                    sys::napi_unref_threadsafe_function(js.0, t as sys::napi_threadsafe_function);
                }
            }
            if !st.client_ref.is_null() {
                let mut count = 0;
                if busy {
                    sys::napi_reference_ref(js.0, st.client_ref, &mut count);
                } else {
                    sys::napi_reference_unref(js.0, st.client_ref, &mut count);
                }
            }
        }
    }

    fn remove_listener(&self, js: Js, abort: Option<(sys::napi_ref, sys::napi_ref)>) {
        if let Some((signal_ref, listener_ref)) = abort {
            if let (Ok(signal), Ok(listener)) = (js.deref(signal_ref), js.deref(listener_ref)) {
                if let Ok(remove) = js.get(signal, "removeEventListener") {
                    if let Ok(name) = js.string(b"abort") {
                        let _ = js.call(remove, signal, &[name, listener]);
                        let _ = js.take_exception();
                    }
                }
            }
            js.delete_reference(signal_ref);
            js.delete_reference(listener_ref);
        }
    }

    /// Settle a batch of completions.
    fn settle(&self, js: Js, completions: Vec<Completion>) -> napi::Result<()> {
        let mut results: Vec<(sys::napi_deferred, RawJson)> = Vec::new();
        for c in completions {
            let Some(p) = self.state.borrow_mut().pending.remove(&c.token) else { continue };
            self.remove_listener(js, p.abort);
            match c.outcome {
                Outcome::Result(raw) => results.push((p.deferred, raw)),
                Outcome::Hello(h) => {
                    let v = self.parse_json(js, h.to_json().as_bytes())?;
                    js.resolve(p.deferred, v);
                }
                Outcome::Closed => js.resolve(p.deferred, js.undefined()?),
                Outcome::Error(e) => {
                    let parse = js.deref(self.state.borrow().json_parse).ok();
                    let err = js.error(&e, parse)?;
                    let _ = js.take_exception();
                    js.reject(p.deferred, err);
                }
            }
        }
        self.resolve_results(js, results)
    }

    /// Parse many results with one `JSON.parse` of a joined array; large ones alone.
    fn resolve_results(&self, js: Js, results: Vec<(sys::napi_deferred, RawJson)>) -> napi::Result<()> {
        const JOIN_LIMIT: usize = 1 << 20;
        let mut group: Vec<(sys::napi_deferred, RawJson)> = Vec::new();
        let mut group_bytes = 0;
        let flush = |group: &mut Vec<(sys::napi_deferred, RawJson)>| -> napi::Result<()> {
            match group.len() {
                0 => Ok(()),
                1 => {
                    let (d, RawJson { bytes, range, lifts }) = group.pop().unwrap();
                    let text = js.string(&bytes[range])?;
                    drop(bytes); // a large result is not held twice while it is parsed
                    let value = self.parse_string(js, text)?;
                    js.resolve(d, js.put_lifted(value, lifts)?);
                    Ok(())
                }
                _ => {
                    let mut joined = Vec::with_capacity(group.iter().map(|(_, r)| r.range.len() + 1).sum::<usize>() + 2);
                    joined.push(b'[');
                    for (i, (_, r)) in group.iter().enumerate() {
                        if i > 0 {
                            joined.push(b',');
                        }
                        joined.extend_from_slice(r.text());
                    }
                    joined.push(b']');
                    let array = self.parse_json(js, &joined)?;
                    for (i, (d, raw)) in group.drain(..).enumerate() {
                        let value = js.element(array, i as u32)?;
                        js.resolve(d, js.put_lifted(value, raw.lifts)?);
                    }
                    Ok(())
                }
            }
        };
        for (d, raw) in results {
            let n = raw.range.len();
            if n > JOIN_LIMIT {
                let mut alone = vec![(d, raw)];
                flush(&mut alone)?;
                continue;
            }
            if group_bytes + n > JOIN_LIMIT {
                flush(&mut group)?;
                group_bytes = 0;
            }
            group_bytes += n;
            group.push((d, raw));
        }
        flush(&mut group)
    }

    /// The client's event iterator: made once (JavaScript, see `events.js`), then the same object.
    fn event_stream(self: &Rc<Self>, js: Js) -> napi::Result<Value> {
        let existing = self.state.borrow().stream;
        if !existing.is_null() {
            return js.deref(existing);
        }
        let source = js.string(include_str!("events.js").as_bytes())?;
        let mut factory = ptr::null_mut();
        crate::js::check(unsafe { sys::napi_run_script(js.0, source, &mut factory) })?;
        let pull = js.function("pull", on_pull, Box::new(Rc::downgrade(self)))?;
        let stop = js.function("stop", on_stop, Box::new(Rc::downgrade(self)))?;
        let counters = Box::new(self.conn.event_counters());
        let data = Arc::as_ptr(&counters) as *mut c_void;
        unsafe extern "C" fn free_counters(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
            drop(unsafe { Box::from_raw(hint.cast::<Arc<koma_transport::connection::EventCounters>>()) });
        }
        let mut buffer = ptr::null_mut();
        let hint = Box::into_raw(counters);
        let status = unsafe {
            sys::napi_create_external_arraybuffer(js.0, data, 12, Some(free_counters), hint.cast(), &mut buffer)
        };
        if status != sys::Status::napi_ok {
            drop(unsafe { Box::from_raw(hint) });
            return Err(napi::Error::from_reason("could not share the event counters"));
        }
        let undefined = js.undefined()?;
        let made = js.call(factory, undefined, &[pull, stop, buffer])?;
        let stream = js.get(made, "stream")?;
        let settle = js.get(made, "settle")?;
        let mut st = self.state.borrow_mut();
        st.stream = js.reference(stream, 1)?;
        st.settle = js.reference(settle, 1)?;
        Ok(stream)
    }

    /// `pull()` for the iterator: a batch (a flat array `[seq, name, data, ...]`
    /// parsed by one JSON.parse, its long strings put back), the overflow
    /// report, `undefined` (nothing now; a wake will call `settle`), or `null`
    /// (the end). Throws the fatal error after a failure.
    fn pull(&self, js: Js) -> napi::Result<Value> {
        match self.conn.take_events(true) {
            Take::Batch { json, epoch, lifts, .. } => {
                let array = self.parse_json(js, &json)?;
                drop(json);
                for (i, mut l) in lifts {
                    l.path.insert(0, Step::Index(batch_data_index(i)));
                    js.put_lifted(array, [l])?;
                }
                self.conn.event_counters().batch_epoch.store(epoch, std::sync::atomic::Ordering::Relaxed);
                Ok(array)
            }
            Take::Overflow { dropped } => {
                let o = js.object()?;
                js.set_named(o, c"type", js.string(b"overflow")?)?;
                js.set_named(o, c"dropped", js.number(dropped as f64)?)?;
                Ok(o)
            }
            Take::Empty => {
                self.state.borrow_mut().events_waiting = true;
                self.update_hold(js);
                js.undefined()
            }
            Take::Ended(End::Finished) => {
                let mut v = ptr::null_mut();
                crate::js::check(unsafe { sys::napi_get_null(js.0, &mut v) })?;
                Ok(v)
            }
            Take::Ended(End::Failed(e)) => {
                let err = js.error(&e, None)?;
                unsafe { sys::napi_throw(js.0, err) };
                js.undefined()
            }
        }
    }

    /// Events are ready (or the end): let a waiting iterator take them.
    fn pump_events(&self, js: Js) -> napi::Result<()> {
        let settle = {
            let mut st = self.state.borrow_mut();
            if !st.events_waiting {
                return Ok(());
            }
            st.events_waiting = false;
            st.settle
        };
        let settle = js.deref(settle)?;
        let undefined = js.undefined()?;
        let r = js.call(settle, undefined, &[]);
        if let Some(_exc) = js.take_exception() {
            // settle never throws; a failure inside it is reported to the waiters
        }
        r.map(|_| ())
    }

    /// Reject everything outstanding (after an internal error).
    fn fail_all(&self, js: Js, why: &str) {
        self.conn.kill_now();
        let e = KomaError::new(ErrorCode::TransportFailure, why);
        let pending: Vec<_> = self.state.borrow_mut().pending.drain().map(|(_, p)| p).collect();
        for p in pending {
            if let Ok(err) = js.error(&e, None) {
                js.reject(p.deferred, err);
            }
        }
        self.update_hold(js);
        // The iterator learns it from the connection (it failed: kill_now above).
        let _ = self.pump_events(js);
    }

    /// Deliver what one wake-up drained.
    fn deliver(&self, js: Js, completions: Vec<Completion>) -> napi::Result<()> {
        self.settle(js, completions)?;
        self.pump_events(js)?;
        self.update_hold(js);
        Ok(())
    }
}

struct AbortData {
    ctx: std::rc::Weak<Ctx>,
    token: u64,
}

unsafe extern "C" fn on_abort(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // A panic must not unwind into Node: it would abort the process.
    match std::panic::catch_unwind(|| unsafe { on_abort_inner(env, info) }) {
        Ok(v) => v,
        Err(_) => ptr::null_mut(),
    }
}

unsafe fn on_abort_inner(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let js = Js(env);
    if let Some(data) = unsafe { callback_data::<AbortData>(env, info) } {
        if let Some(ctx) = data.ctx.upgrade() {
            let pending = ctx.state.borrow_mut().pending.remove(&data.token);
            if let Some(p) = pending {
                ctx.conn.abandon(data.token);
                ctx.remove_listener(js, p.abort);
                if let Ok(err) = js.error(&aborted_error(&p.what), None) {
                    js.reject(p.deferred, err);
                }
                ctx.update_hold(js);
            }
        }
    }
    js.undefined().unwrap_or(ptr::null_mut())
}

unsafe extern "C" fn on_pull(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let js = Js(env);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let ctx = unsafe { callback_data::<std::rc::Weak<Ctx>>(env, info) }?.upgrade()?;
        ctx.pull(js).ok()
    }));
    match result {
        Ok(Some(v)) => v,
        _ => js.undefined().unwrap_or(ptr::null_mut()),
    }
}

unsafe extern "C" fn on_stop(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let js = Js(env);
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if let Some(ctx) = unsafe { callback_data::<std::rc::Weak<Ctx>>(env, info) }.and_then(|w| w.upgrade()) {
            ctx.conn.unwant_events();
            ctx.state.borrow_mut().events_waiting = false;
            ctx.update_hold(js);
        }
    }));
    js.undefined().unwrap_or(ptr::null_mut())
}

unsafe extern "C" fn on_wake(env: sys::napi_env, _js_cb: sys::napi_value, context: *mut c_void, _data: *mut c_void) {
    if env.is_null() || context.is_null() {
        return; // the environment is ending
    }
    // SAFETY: `context` is the Rc<Ctx> given at creation, alive until finalize.
    let ctx = unsafe { &*(context as *const Ctx) };
    let js = Js(env);
    // Draining first re-arms the wake-up, whatever happens while delivering.
    let completions = ctx.conn.drain();
    let woke = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if test_panic("wake") {
            panic!("KOMA_SDK_TEST_PANIC=wake");
        }
        ctx.deliver(js, completions)
    }));
    match woke {
        Ok(Ok(())) => {}
        Ok(Err(_)) => {
            let _ = js.take_exception();
        }
        Err(_) => {
            // Settle what is outstanding rather than leave it hanging.
            let _ = js.take_exception();
            ctx.fail_all(js, "an internal error (a panic) in @koma/sdk while delivering results");
        }
    }
}

/// A test hook: `KOMA_SDK_TEST_PANIC=wake` panics in the wake-up of the JavaScript thread.
fn test_panic(place: &str) -> bool {
    static FIRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    std::env::var("KOMA_SDK_TEST_PANIC").is_ok_and(|v| v == place)
        && !FIRED.swap(true, std::sync::atomic::Ordering::Relaxed)
}

unsafe extern "C" fn finalize_tsfn(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: the Rc leaked at creation.
    let ctx = unsafe { Rc::from_raw(data as *const Ctx) };
    ctx.tsfn.0.lock().unwrap_or_else(|p| p.into_inner()).take();
    drop(ctx);
}

fn aborted_error(what: &str) -> KomaError {
    KomaError::new(ErrorCode::Aborted, format!("`{what}` was aborted by its signal"))
}

fn signal_aborted(js: Js, opts: &CallOpts) -> napi::Result<bool> {
    match opts.signal {
        None => Ok(false),
        Some(s) => {
            let a = js.get(s, "aborted")?;
            Ok(js.type_of(a)? == sys::ValueType::napi_boolean && js.get_bool(a)?)
        }
    }
}

fn parse_opts(js: Js, v: Option<Value>) -> Result<CallOpts, KomaError> {
    let bad = |why: &str| KomaError::new(ErrorCode::InvalidParams, format!("options: {why}"));
    let mut opts = CallOpts { signal: None, timeout: None };
    let Some(v) = v else { return Ok(opts) };
    if js.is_nullish(v).unwrap_or(true) {
        return Ok(opts);
    }
    if js.type_of(v).ok() != Some(sys::ValueType::napi_object) {
        return Err(bad("must be an object { signal?, timeout? }"));
    }
    let signal = js.get(v, "signal").map_err(|_| bad("unreadable signal"))?;
    if !js.is_nullish(signal).unwrap_or(true) {
        let add = js.get(signal, "addEventListener").ok();
        let is_fn = add.and_then(|f| js.type_of(f).ok()) == Some(sys::ValueType::napi_function);
        if js.type_of(signal).ok() != Some(sys::ValueType::napi_object) || !is_fn {
            return Err(bad("`signal` must be an AbortSignal"));
        }
        opts.signal = Some(signal);
    }
    let timeout = js.get(v, "timeout").map_err(|_| bad("unreadable timeout"))?;
    if !js.is_nullish(timeout).unwrap_or(true) {
        if js.type_of(timeout).ok() != Some(sys::ValueType::napi_number) {
            return Err(bad("`timeout` must be a number of milliseconds"));
        }
        let ms = js.get_f64(timeout).map_err(|_| bad("bad timeout"))?;
        if !(ms >= 0.0 && ms.is_finite()) {
            return Err(bad("`timeout` must be a finite number >= 0"));
        }
        opts.timeout = Some(Duration::from_secs_f64(ms / 1000.0));
    }
    Ok(opts)
}
