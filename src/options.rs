//! Reading the options JavaScript passes: `new Client`'s, every call's last
//! argument, and `turn()`'s and `run()`'s. Each is checked here, once: a
//! wrong type, an unknown key or a bad value is `invalid_params` naming it.

use std::collections::HashMap;
use std::time::Duration;

use koma_transport::turns::ApprovalOption;
use koma_transport::{ErrorCode, KomaError};
use napi::bindgen_prelude::{FromNapiValue, Object, Unknown};
use napi::ValueType;

use crate::handles::Js;
use crate::surface::{CALL_OPTIONS, CLIENT_OPTIONS, TURN_OPTIONS};
use crate::values::{as_object, as_string, describe, get, is_nullish, kind, own_keys};

/// `new Client(options)`'s options, read (their typings: `ClientOptions`).
pub struct ClientOptions<'e> {
    pub executable: String,
    pub cwd: Option<String>,
    pub env: Option<HashMap<String, String>>,
    pub trace: Option<bool>,
    /// `None`: not given; `Some(None)`: `null`, no bound.
    pub hello_timeout: Option<Option<f64>>,
    // ---- OpenTelemetry (see docs/tracing.md)
    pub telemetry: Option<bool>,
    pub tracer_provider: Option<Object<'e>>,
    pub meter_provider: Option<Object<'e>>,
    pub capture_content: Option<bool>,
}

/// A call's options, read (their typings: `CallOptions`).
pub struct CallOptions<'e> {
    pub signal: Option<Object<'e>>,
    pub timeout: Option<f64>,
}

fn invalid(message: String) -> KomaError {
    KomaError::new(ErrorCode::InvalidParams, message)
}

/// The options of a table of `surface.rs` as a message lists them: `{ executable, cwd?, ... }`.
fn listed(options: &[(&str, bool)]) -> String {
    let names: Vec<String> =
        options.iter().map(|(name, required)| format!("{name}{}", if *required { "" } else { "?" })).collect();
    format!("{{ {} }}", names.join(", "))
}

/// The keys of `obj` that are not in `known`, as an error naming the first
/// (`advice` may say where a key belongs instead).
fn check_keys(
    obj: &Object,
    what: &str,
    known: &[(&str, bool)],
    advice: impl Fn(&str) -> Option<String>,
) -> Result<(), KomaError> {
    let keys = own_keys(obj).map_err(|e| invalid(format!("{what}: its keys could not be read ({})", e.reason)))?;
    match keys.iter().find(|k| !known.iter().any(|(name, _)| name == k)) {
        None => Ok(()),
        Some(k) => Err(invalid(advice(k).unwrap_or_else(|| {
            let list = known.iter().map(|(k, _)| format!("{k}?")).collect::<Vec<_>>().join(", ");
            format!("{what}: unknown option `{k}` (the options are {{ {list} }})")
        }))),
    }
}

/// A member of an options object, `None` when undefined or null.
fn member<'e>(js: Js<'e>, obj: &Object<'e>, what: &str, name: &str) -> Result<Option<Unknown<'e>>, KomaError> {
    let v = get(js, obj, name).map_err(|why| invalid(format!("{what}: `{name}` could not be read ({why})")))?;
    Ok((!is_nullish(&v)).then_some(v))
}

fn string_member(js: Js, obj: &Object, what: &str, name: &str) -> Result<Option<String>, KomaError> {
    match member(js, obj, what, name)? {
        None => Ok(None),
        Some(v) => as_string(v).map(Some).ok_or_else(|| invalid(format!("{what}: `{name}` must be a string"))),
    }
}

/// Milliseconds: a finite number >= 0 that a `Duration` can hold (see [`duration`]).
fn millis(v: Unknown, what: &str, name: &str) -> Result<f64, KomaError> {
    let bad = || invalid(format!("{what}: `{name}` must be a finite number of milliseconds >= 0"));
    if kind(&v) != ValueType::Number {
        return Err(bad());
    }
    let ms = f64::from_unknown(v).map_err(|_| bad())?;
    if !(ms >= 0.0 && ms.is_finite()) {
        return Err(bad());
    }
    match Duration::try_from_secs_f64(ms / 1000.0) {
        Ok(_) => Ok(ms),
        Err(_) => Err(invalid(format!("{what}: `{name}` is too large"))),
    }
}

/// Milliseconds that were read by this module, as a duration.
pub fn duration(ms: f64) -> Duration {
    Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX)
}

/// A signal: anything with `addEventListener`, as an `AbortSignal` has.
fn signal<'e>(js: Js<'e>, obj: &Object<'e>, what: &str) -> Result<Option<Object<'e>>, KomaError> {
    let Some(v) = member(js, obj, what, "signal")? else { return Ok(None) };
    let bad = || invalid(format!("{what}: `signal` must be an AbortSignal"));
    let signal = as_object(v).ok_or_else(bad)?;
    match get(js, &signal, "addEventListener") {
        Ok(f) if kind(&f) == ValueType::Function => Ok(Some(signal)),
        _ => Err(bad()),
    }
}

/// `new Client(options)`'s options.
pub fn client_options<'e>(js: Js<'e>, v: Option<Unknown<'e>>) -> Result<ClientOptions<'e>, KomaError> {
    const WHAT: &str = "new Client";
    let obj = v
        .and_then(as_object)
        .ok_or_else(|| invalid(format!("{WHAT}: options must be an object {}", listed(CLIENT_OPTIONS))))?;
    check_keys(&obj, WHAT, CLIENT_OPTIONS, |_| None)?;
    let executable = match get(js, &obj, "executable") {
        Ok(v) => as_string(v).ok_or_else(|| invalid(format!("{WHAT}: `executable` must be a string")))?,
        Err(why) => return Err(invalid(format!("{WHAT}: `executable` could not be read ({why})"))),
    };
    let env = match member(js, &obj, WHAT, "env")? {
        None => None,
        Some(v) => {
            let env = as_object(v).ok_or_else(|| invalid(format!("{WHAT}: `env` must be an object of strings")))?;
            let keys =
                own_keys(&env).map_err(|e| invalid(format!("{WHAT}: `env` could not be read ({})", e.reason)))?;
            let mut vars = HashMap::with_capacity(keys.len());
            for k in keys {
                let v =
                    get(js, &env, &k).map_err(|why| invalid(format!("{WHAT}: `env.{k}` could not be read ({why})")))?;
                if kind(&v) == ValueType::Undefined {
                    continue; // as Node's spawn does
                }
                let v = as_string(v).ok_or_else(|| invalid(format!("{WHAT}: `env.{k}` must be a string")))?;
                vars.insert(k, v);
            }
            Some(vars)
        }
    };
    let trace = boolean(js, &obj, WHAT, "trace")?;
    let hello_timeout = match get(js, &obj, "helloTimeout") {
        Ok(v) if kind(&v) == ValueType::Undefined => None,
        Ok(v) if kind(&v) == ValueType::Null => Some(None),
        Ok(v) => Some(Some(
            millis(v, WHAT, "helloTimeout").map_err(|e| invalid(format!("{}, or null for no bound", e.message)))?,
        )),
        Err(why) => return Err(invalid(format!("{WHAT}: `helloTimeout` could not be read ({why})"))),
    };
    Ok(ClientOptions {
        executable,
        cwd: string_member(js, &obj, WHAT, "cwd")?,
        env,
        trace,
        hello_timeout,
        telemetry: boolean(js, &obj, WHAT, "telemetry")?,
        tracer_provider: provider(js, &obj, "tracerProvider", "getTracer")?,
        meter_provider: provider(js, &obj, "meterProvider", "getMeter")?,
        capture_content: boolean(js, &obj, WHAT, "captureContent")?,
    })
}

fn boolean(js: Js, obj: &Object, what: &str, name: &str) -> Result<Option<bool>, KomaError> {
    match member(js, obj, what, name)? {
        None => Ok(None),
        Some(v) if kind(&v) == ValueType::Boolean => Ok(bool::from_unknown(v).ok()),
        Some(_) => Err(invalid(format!("{what}: `{name}` must be a boolean"))),
    }
}

/// An OpenTelemetry provider: an object with the method `getter` (`getTracer`, `getMeter`).
fn provider<'e>(js: Js<'e>, obj: &Object<'e>, name: &str, getter: &str) -> Result<Option<Object<'e>>, KomaError> {
    const WHAT: &str = "new Client";
    let Some(v) = member(js, obj, WHAT, name)? else { return Ok(None) };
    let kind_of = if name == "tracerProvider" { "TracerProvider" } else { "MeterProvider" };
    let bad = || invalid(format!("{WHAT}: `{name}` must be an OpenTelemetry {kind_of} (an object with {getter}())"));
    let p = as_object(v).ok_or_else(bad)?;
    match get(js, &p, getter) {
        Ok(f) if kind(&f) == ValueType::Function => Ok(Some(p)),
        _ => Err(bad()),
    }
}

/// A call's options (its optional last argument); `what` is its name.
pub fn call_options<'e>(js: Js<'e>, what: &str, v: Option<Unknown<'e>>) -> Result<CallOptions<'e>, KomaError> {
    let Some(v) = v.filter(|v| !is_nullish(v)) else { return Ok(CallOptions { signal: None, timeout: None }) };
    let obj =
        as_object(v).ok_or_else(|| invalid(format!("{what}: options must be an object {}", listed(CALL_OPTIONS))))?;
    check_keys(&obj, what, CALL_OPTIONS, |k| {
        TURN_OPTIONS.iter().any(|(name, _)| *name == k).then(|| {
            format!(
                "{what}: `{k}` is an option of turn() and run(), which start a turn and answer its approvals; \
                 a call's options are {}; nothing was sent",
                listed(CALL_OPTIONS)
            )
        })
    })?;
    let timeout = member(js, &obj, what, "timeout")?.map(|v| millis(v, what, "timeout")).transpose()?;
    Ok(CallOptions { signal: signal(js, &obj, what)?, timeout })
}

/// `turn()`'s or `run()`'s options, read: `mode` and `onApproval` as given
/// (the core judges them), `signal` and `timeout` checked here.
pub struct TurnArgs<'e> {
    pub mode: Option<String>,
    pub approvals: ApprovalOption,
    /// `onApproval`, when it is a function.
    pub handler: Option<Unknown<'e>>,
    pub signal: Option<Object<'e>>,
    pub timeout: Option<f64>,
}

/// `turn()`'s or `run()`'s options (`what` says which).
pub fn turn_options<'e>(js: Js<'e>, what: &str, v: Option<Unknown<'e>>) -> Result<TurnArgs<'e>, KomaError> {
    let mut args = TurnArgs { mode: None, approvals: ApprovalOption::None, handler: None, signal: None, timeout: None };
    let Some(v) = v.filter(|v| !is_nullish(v)) else { return Ok(args) };
    let obj =
        as_object(v).ok_or_else(|| invalid(format!("{what}: options must be an object {}", listed(TURN_OPTIONS))))?;
    check_keys(&obj, what, TURN_OPTIONS, |_| None)?;
    args.mode = member(js, &obj, what, "mode")?.map(|m| as_string(m).unwrap_or_else(|| describe(m)));
    args.approvals = match member(js, &obj, what, "onApproval")? {
        None => ApprovalOption::None,
        Some(f) if kind(&f) == ValueType::Function => {
            args.handler = Some(f);
            ApprovalOption::Handler
        }
        Some(s) => match as_string(s) {
            Some(s) => ApprovalOption::Text(s),
            None => ApprovalOption::Other(describe(s)),
        },
    };
    args.timeout = member(js, &obj, what, "timeout")?.map(|v| millis(v, what, "timeout")).transpose()?;
    args.signal = signal(js, &obj, what)?;
    Ok(args)
}
