//! Reading a scenario: its JSON read into the format's types (`format`,
//! generated from schema/scenario.schema.json, read by `read`, which names
//! the place of a mistake), then what a schema cannot say checked here as
//! it becomes the script koma-sim plays (`script`): a regular expression
//! compiles, a `finish` step is the last of its list, a method is one
//! koma-sim has, a number is in its range. The first mistake is one line
//! that names the entry (a turn by its index and its match, a method entry
//! by its index, method and call) and the field, with a path from that
//! entry (`steps[2].code`).

use crate::capabilities::METHODS;
use crate::scenario::format::{self, CrashSignal, SHAPES};
use crate::scenario::read::{self, key, not, quote, Kind, Seg};
use crate::scenario::script::{Matcher, MethodEntry, Methods, Reply, Scenario, TurnEntry, Turns};
use crate::step::{Ask, Decided, Step};
use serde_json::{json, Value};
use std::borrow::Cow;

/// A scenario's first mistake: the entry (a turn by its index and match, a
/// method entry by its index, method and call; empty for the scenario
/// itself), the field's path from it (empty for the entry as a whole), and
/// what is wrong.
#[derive(Debug)]
pub struct Mistake {
    pub entry: String,
    pub field: String,
    pub problem: String,
}

impl std::fmt::Display for Mistake {
    /// `<entry>: <field>: <problem>`, without the parts that are empty.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for part in [&self.entry, &self.field] {
            if !part.is_empty() {
                write!(f, "{part}: ")?;
            }
        }
        f.write_str(&self.problem)
    }
}

/// A mistake found by a check of meaning: its path from the scenario's
/// root, and the problem.
type Fault = (Vec<Seg>, String);

/// `path` and one step more.
fn at(path: &[Seg], seg: Seg) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

/// A scenario from the text of its file.
pub fn parse(text: &str) -> Result<Scenario, Mistake> {
    let v: Value = serde_json::from_str(text).map_err(|e| Mistake {
        entry: String::new(),
        field: String::new(),
        problem: format!("not JSON: {e}"),
    })?;
    let named = |(path, problem): Fault| {
        let (entry, field) = place(&v, &path);
        Mistake { entry, field, problem }
    };
    let s: format::Scenario = read::read(&v, SHAPES).map_err(|e| named(e.into_parts()))?;
    if let Some(f) = s.format.filter(|f| *f != 1) {
        return Err(named((vec![key("format")], format!("must be 1 (the only format there is), not {f}"))));
    }
    let mut turns = Vec::new();
    for (i, t) in s.turns.iter().enumerate() {
        let path = [key("turns"), Seg::Index(i)];
        let label = place(&v, &path).0;
        turns.push(turn(t, &path, label).map_err(named)?);
    }
    let mut methods = Vec::new();
    for (i, m) in s.methods.iter().enumerate() {
        methods.push(method(m, &[key("methods"), Seg::Index(i)]).map_err(named)?);
    }
    Ok(Scenario { turns: Turns::new(turns, s.unscripted), methods: Methods::new(methods) })
}

fn turn(t: &format::ScriptedTurn, path: &[Seg], label: String) -> Result<TurnEntry, Fault> {
    let matcher = match &t.r#match {
        None => Matcher::Any,
        Some(m) => matcher(m, &at(path, key("match")))?,
    };
    let times = match &t.times {
        Value::String(s) if s == "always" => None,
        n => match n.as_u64().filter(|n| *n > 0) {
            Some(n) => Some(n),
            None => {
                return Err((
                    at(path, key("times")),
                    format!("must be a positive integer or \"always\", not {}", not(n)),
                ))
            }
        },
    };
    let steps = steps(&t.steps, &at(path, key("steps")))?;
    Ok(TurnEntry { label, matcher, times, steps })
}

fn matcher(m: &format::Match, path: &[Seg]) -> Result<Matcher, Fault> {
    Ok(match m {
        format::Match::Turn(0) => {
            let problem = "must be a positive integer (1 is the first turn), not 0".to_string();
            return Err((at(path, key("turn")), problem));
        }
        format::Match::Turn(n) => Matcher::Turn(*n),
        format::Match::Text(t) => Matcher::Text(t.clone()),
        format::Match::Contains(t) => Matcher::Contains(t.clone()),
        format::Match::Regex(r) => match regex::Regex::new(r) {
            Ok(r) => Matcher::Regex(r),
            Err(e) => {
                let problem = format!("not a valid regular expression: {}", regex_problem(&e));
                return Err((at(path, key("regex")), problem));
            }
        },
    })
}

/// The regex crate's message without its picture of the pattern: one line.
fn regex_problem(e: &regex::Error) -> String {
    let text = e.to_string();
    match text.lines().rev().find_map(|l| l.trim().strip_prefix("error: ")) {
        Some(p) => p.to_string(),
        None => text.split_whitespace().collect::<Vec<_>>().join(" "),
    }
}

/// A list of steps at `path` (`steps`, `steps[1].allow.steps`).
fn steps(list: &[format::Step], path: &[Seg]) -> Result<Vec<Step>, Fault> {
    let mut out = Vec::with_capacity(list.len());
    for (i, s) in list.iter().enumerate() {
        let path = at(path, Seg::Index(i));
        if matches!(out.last(), Some(Step::Finish { .. })) {
            return Err((path, "comes after a `finish` step, which ends the turn".into()));
        }
        out.push(step(s, &path)?);
    }
    Ok(out)
}

/// A step of the format as the agent plays it: koma-sim's player of
/// scenarios. A step added to the schema is one arm here (rustc refuses the
/// match without it).
fn step(s: &format::Step, path: &[Seg]) -> Result<Step, Fault> {
    use format::Step as S;
    Ok(match s {
        S::Output(o) => Step::Output(o.text.clone()),
        S::Tool(t) => {
            Step::Tool { tool: t.tool.clone(), input: t.input.clone(), output: t.output.clone(), error: t.error }
        }
        S::Approval(a) => Step::Approval(Box::new(Ask {
            ids: None,
            tool: a.tool.clone(),
            input: a.input.clone(),
            allow: branch(a.allow.as_ref(), &at(path, key("allow")), true)?,
            deny: branch(a.deny.as_ref(), &at(path, key("deny")), false)?,
        })),
        S::Pause(p) => p.ms.map_or(Step::Hang, Step::Sleep),
        S::Event(e) => {
            if e.name.is_empty() {
                return Err((at(path, key("name")), "must not be empty".into()));
            }
            Step::Event(Cow::Owned(e.name.clone()), e.data.clone())
        }
        S::Finish(f) => Step::Finish { status: f.status.clone(), error: f.error.clone() },
        S::Exit(e) => match i32::try_from(e.code).ok().filter(|c| *c <= 255) {
            Some(c) => Step::Exit(c),
            None => return Err((at(path, key("code")), format!("must be an exit code, 0 to 255, not {}", e.code))),
        },
        S::Crash(c) => Step::Crash { signal: signal(c.signal), name: c.signal.as_str() },
        S::StopAnswering(_) => Step::StopAnswering,
        S::BrokenFrame(b) => {
            if b.line.contains(['\n', '\r']) {
                return Err((at(path, key("line")), "must be one line (no line break)".into()));
            }
            Step::BrokenFrame(b.line.clone())
        }
    })
}

/// What a `crash` step ends with on Windows: an exit code (see `windows.rs`).
#[cfg(windows)]
fn signal(s: CrashSignal) -> i32 {
    crate::windows::crash_code(s.as_str()) as i32
}

/// The signal a `crash` step dies of.
#[cfg(unix)]
fn signal(s: CrashSignal) -> libc::c_int {
    match s {
        CrashSignal::Sigabrt => libc::SIGABRT,
        CrashSignal::Sigalrm => libc::SIGALRM,
        CrashSignal::Sigbus => libc::SIGBUS,
        CrashSignal::Sigfpe => libc::SIGFPE,
        CrashSignal::Sighup => libc::SIGHUP,
        CrashSignal::Sigill => libc::SIGILL,
        CrashSignal::Sigint => libc::SIGINT,
        CrashSignal::Sigkill => libc::SIGKILL,
        CrashSignal::Sigpipe => libc::SIGPIPE,
        CrashSignal::Sigquit => libc::SIGQUIT,
        CrashSignal::Sigsegv => libc::SIGSEGV,
        CrashSignal::Sigterm => libc::SIGTERM,
        CrashSignal::Sigusr1 => libc::SIGUSR1,
        CrashSignal::Sigusr2 => libc::SIGUSR2,
    }
}

/// An approval's `allow` or `deny`: the call's result and the steps after.
fn branch(b: Option<&format::ApprovalBranch>, path: &[Seg], allow: bool) -> Result<Decided, Fault> {
    let (output, error) = if allow { ("allowed", false) } else { ("denied", true) };
    let Some(b) = b else {
        return Ok(Decided { output: json!(output), error, then: Vec::new() });
    };
    Ok(Decided {
        output: b.output.clone().unwrap_or_else(|| json!(output)),
        error: b.error.unwrap_or(error),
        then: steps(&b.steps, &at(path, key("steps")))?,
    })
}

fn method(m: &format::MethodAnswer, path: &[Seg]) -> Result<MethodEntry, Fault> {
    if !METHODS.contains(&m.method.as_str()) {
        let problem = format!("unknown method {} (the methods are: {})", quote(&m.method), METHODS.join(", "));
        return Err((at(path, key("method")), problem));
    }
    if m.nth == Some(0) {
        return Err((at(path, key("nth")), "must be a positive integer (1 is the first call), not 0".into()));
    }
    let reply = match (&m.result, &m.error) {
        (Some(_), Some(_)) => return Err((path.to_vec(), "has both `result` and `error`; give one".into())),
        (Some(r), None) => Reply::Result(r.clone()),
        (None, Some(e)) => {
            if e.code.is_empty() {
                return Err((at(&at(path, key("error")), key("code")), "must not be empty".into()));
            }
            let message = e.message.clone().unwrap_or_else(|| format!("{} (scripted by the scenario)", e.code));
            Reply::Error { code: e.code.clone(), message, data: e.data.clone() }
        }
        (None, None) if m.delay_ms.is_none() => {
            return Err((path.to_vec(), "scripts nothing: give `result`, `error` or `delay_ms`".into()));
        }
        (None, None) => Reply::Real,
    };
    Ok(MethodEntry { method: m.method.clone(), nth: m.nth, reply, delay_ms: m.delay_ms.unwrap_or(0) })
}

/// The entry and the field of the place `pointer` (a JSON pointer, RFC
/// 6901: `/turns/0/steps/1`) in a scenario's text, named as a mistake
/// there would be: (`turns[0] (any text)`, `steps[1]`). For a mistake that
/// only the program that built the scenario can see (a value JSON cannot
/// hold, which it replaced with null), so that every mistake is named by
/// this one reader.
pub fn name_place(text: &str, pointer: &str) -> (String, String) {
    let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let tokens: Vec<String> = match pointer.strip_prefix('/') {
        Some(p) => p.split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).collect(),
        None => Vec::new(),
    };
    // A token is an index where the value it steps into is an array.
    let mut path = Vec::new();
    let mut here = &v;
    for t in tokens {
        match (here, t.parse::<usize>()) {
            (Value::Array(a), Ok(i)) => {
                here = a.get(i).unwrap_or(&Value::Null);
                path.push(Seg::Index(i));
            }
            _ => {
                here = here.get(t.as_str()).unwrap_or(&Value::Null);
                path.push(Seg::Key(t));
            }
        }
    }
    place(&v, &path)
}

/// The entry and the field of the place `path` in the scenario `v`: a turn
/// or method entry, named by its index and what it is, and the rest of the
/// path from it (`steps[1].allow`, `match["odd key"]`).
fn place(v: &Value, path: &[Seg]) -> (String, String) {
    let (entry, rest) = match path {
        [Seg::Key(list), Seg::Index(i), rest @ ..] if list == "turns" || list == "methods" => {
            let e = &v[list.as_str()][*i];
            let about = if list == "turns" { describe_turn(e) } else { describe_method(e) };
            (format!("{list}[{i}]{about}"), rest)
        }
        _ => (String::new(), path),
    };
    let mut field = String::new();
    for seg in rest {
        match seg {
            Seg::Index(i) => field.push_str(&format!("[{i}]")),
            Seg::Key(k) => {
                let plain = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$'));
                match (plain, field.is_empty()) {
                    (true, true) => field.push_str(k),
                    (true, false) => field.push_str(&format!(".{k}")),
                    (false, _) => field.push_str(&format!("[{}]", quote(k))),
                }
            }
        }
    }
    (entry, field)
}

/// The matchers' names (`turn`, `text`, ...), from the format's table.
fn matchers() -> &'static [read::Field] {
    match SHAPES.iter().find(|s| s.name == "Match").map(|s| &s.kind) {
        Some(Kind::Keyed { keys, .. }) => keys,
        _ => unreachable!("the format has a keyed Match"),
    }
}

/// ` (contains "fix")`: how a turn is named in a message, from its `match`
/// as written (nothing when that is malformed).
fn describe_turn(v: &Value) -> String {
    let Some(m) = v.get("match") else {
        return if v.is_object() { " (any text)".into() } else { String::new() };
    };
    let known = |k: &str| matchers().iter().any(|f| f.name == k);
    match m.as_object().map(|m| m.iter().collect::<Vec<_>>()).as_deref() {
        Some([(k, Value::Number(n))]) if k.as_str() == "turn" => format!(" (turn {n})"),
        Some([(k, Value::String(s))]) if known(k) => format!(" ({k} {})", quote(s)),
        _ => String::new(),
    }
}

/// ` (submit, call 2)`: how a method entry is named in a message.
fn describe_method(v: &Value) -> String {
    match (v.get("method").and_then(Value::as_str), v.get("nth")) {
        (Some(m), None) => format!(" ({m}, every call)"),
        (Some(m), Some(Value::Number(n))) => format!(" ({m}, call {n})"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::script::Unscripted;

    #[test]
    fn defaults() {
        let s = parse(r#"{"turns":[{"steps":[{"do":"approval","tool":"t"},{"do":"finish"}]}]}"#).unwrap();
        assert_eq!(s.turns.unscripted, Unscripted::Error);
        let e = &s.turns.entries[0];
        assert!(matches!(e.matcher, Matcher::Any) && e.times == Some(1));
        let Step::Approval(ask) = &e.steps[0] else { panic!("{:?}", e.steps) };
        assert_eq!(
            (ask.input.clone(), ask.allow.output.clone(), ask.allow.error),
            (json!({}), json!("allowed"), false)
        );
        assert_eq!((ask.deny.output.clone(), ask.deny.error), (json!("denied"), true));
        assert!(matches!(&e.steps[1], Step::Finish { status, error: None } if status == "completed"));
        assert!(parse("{}").is_ok());
        let s = parse(r#"{"turns":[{"steps":[{"do":"broken_frame"},{"do":"crash","signal":"SIGTERM"}]}]}"#).unwrap();
        let steps = &s.turns.entries[0].steps;
        assert!(matches!(&steps[0], Step::BrokenFrame(l) if l == "this line is not JSON (koma-sim scenario)"));
        assert!(matches!(&steps[1], Step::Crash { signal, name: "SIGTERM" } if *signal == libc::SIGTERM));
    }

    #[test]
    fn a_null_where_any_json_value_goes_is_a_value() {
        let s = parse(r#"{"methods":[{"method":"state","result":null}]}"#).unwrap();
        assert!(matches!(&s.methods.entries[0].reply, Reply::Result(Value::Null)));
        let Err(e) = parse(r#"{"methods":[{"method":"state","delay_ms":null}]}"#) else { panic!("a null delay") };
        assert_eq!(e.to_string(), "methods[0] (state, every call): delay_ms: must be a non-negative integer, not null");
    }

    #[test]
    fn every_type_of_the_format_is_in_the_table() {
        // `read` panics on a type the table lacks: a scenario with every one.
        let text = r#"{"unscripted":"agent","turns":[{"match":{"regex":"x"},"times":"always","steps":[
            {"do":"output","text":"a"},{"do":"tool","tool":"t","output":1},
            {"do":"approval","tool":"t","allow":{"steps":[{"do":"pause"}]},"deny":{"output":2}},
            {"do":"event","name":"e"},{"do":"exit","code":1},{"do":"crash","signal":"SIGINT"},
            {"do":"stop_answering"},{"do":"broken_frame"},{"do":"finish"}]}],
            "methods":[{"method":"state","error":{"code":"x"}}]}"#;
        parse(text).unwrap();
    }
}
