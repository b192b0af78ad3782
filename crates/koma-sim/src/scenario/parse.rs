//! Reading a scenario: every field is checked, and the first mistake is one
//! line that names the entry (a turn by its index and its match, a method
//! entry by its index, method and call) and the field, with a path from
//! that entry (`steps[2].code`). The tables below are the format's fields;
//! `scenario.schema.json` says the same, and a test holds the two together.

use crate::capabilities::METHODS;
use crate::scenario::script::{Matcher, MethodEntry, Methods, Reply, Scenario, TurnEntry, Turns, Unscripted};
use crate::step::{Ask, Decided, Step};
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// A field of an object of the format: its name and whether it is required.
type Fields = [(&'static str, bool)];

const TOP: &Fields = &[
    ("$schema", false),
    ("format", false),
    ("about", false),
    ("unscripted", false),
    ("turns", false),
    ("methods", false),
];
const TURN: &Fields = &[("about", false), ("match", false), ("times", false), ("steps", true)];
/// The matchers; a `match` has exactly one.
const MATCHERS: &[&str] = &["turn", "text", "contains", "regex"];
const BRANCH: &Fields = &[("output", false), ("error", false), ("steps", false)];
const METHOD: &Fields =
    &[("about", false), ("method", true), ("nth", false), ("result", false), ("error", false), ("delay_ms", false)];
const ERROR: &Fields = &[("code", true), ("message", false), ("data", false)];

/// Every step, with its fields besides `do`.
pub const STEPS: &[(&str, &Fields)] = &[
    ("output", &[("text", true)]),
    ("tool", &[("tool", true), ("input", false), ("output", true), ("error", false)]),
    ("approval", &[("tool", true), ("input", false), ("allow", false), ("deny", false)]),
    ("pause", &[("ms", false)]),
    ("event", &[("name", true), ("data", false)]),
    ("finish", &[("status", false), ("error", false)]),
    ("exit", &[("code", true)]),
    ("crash", &[("signal", true)]),
    ("stop_answering", &[]),
    ("broken_frame", &[("line", false)]),
];

/// The signals a `crash` step may die of.
pub const SIGNALS: &[(&str, libc::c_int)] = &[
    ("SIGABRT", libc::SIGABRT),
    ("SIGALRM", libc::SIGALRM),
    ("SIGBUS", libc::SIGBUS),
    ("SIGFPE", libc::SIGFPE),
    ("SIGHUP", libc::SIGHUP),
    ("SIGILL", libc::SIGILL),
    ("SIGINT", libc::SIGINT),
    ("SIGKILL", libc::SIGKILL),
    ("SIGPIPE", libc::SIGPIPE),
    ("SIGQUIT", libc::SIGQUIT),
    ("SIGSEGV", libc::SIGSEGV),
    ("SIGTERM", libc::SIGTERM),
    ("SIGUSR1", libc::SIGUSR1),
    ("SIGUSR2", libc::SIGUSR2),
];

/// What a `broken_frame` step writes unless it says.
pub const BROKEN_LINE: &str = "this line is not JSON (koma-sim scenario)";

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

impl Mistake {
    /// A mistake in `entry`, from a checker's `field: problem` line (a path
    /// has no space, so a line whose head has one is all problem).
    fn at(entry: &str, line: String) -> Mistake {
        let is_path = |h: &str| {
            !h.is_empty() && h.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | '$'))
        };
        let (field, problem) = match line.split_once(": ") {
            Some((head, rest)) if is_path(head) => (head.to_string(), rest.to_string()),
            _ => (String::new(), line),
        };
        Mistake { entry: entry.to_string(), field, problem }
    }
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

/// A scenario from the text of its file.
pub fn parse(text: &str) -> Result<Scenario, Mistake> {
    let v: Value = serde_json::from_str(text).map_err(|e| Mistake::at("", format!("not JSON: {e}")))?;
    let (unscripted, turns, methods) = top(&v).map_err(|e| Mistake::at("", e))?;
    let mut turn_entries = Vec::new();
    for (i, t) in turns.iter().enumerate() {
        let at = format!("turns[{i}]{}", describe_turn(t));
        turn_entries.push(turn(t, &at).map_err(|e| Mistake::at(&at, e))?);
    }
    let mut method_entries = Vec::new();
    for (i, m) in methods.iter().enumerate() {
        let at = format!("methods[{i}]{}", describe_method(m));
        method_entries.push(method(m).map_err(|e| Mistake::at(&at, e))?);
    }
    Ok(Scenario { turns: Turns::new(turn_entries, unscripted), methods: Methods::new(method_entries) })
}

/// The scenario's own fields: how unscripted turns go, its turns, its
/// method entries.
fn top(v: &Value) -> Result<(Unscripted, &[Value], &[Value]), String> {
    let top = Obj::new(v, "", "the scenario", TOP)?;
    if let Some(f) = top.uint("format")? {
        if f != 1 {
            return Err(format!("format: must be 1 (the only format there is), not {f}"));
        }
    }
    top.string("about")?;
    top.string("$schema")?;
    let unscripted = match top.string("unscripted")?.as_deref() {
        None | Some("error") => Unscripted::Error,
        Some("agent") => Unscripted::Agent,
        Some(other) => return Err(format!("unscripted: must be \"agent\" or \"error\", not {}", quote(other))),
    };
    let turns = top.array("turns")?.unwrap_or(&[]);
    let methods = top.array("methods")?.unwrap_or(&[]);
    Ok((unscripted, turns, methods))
}

fn turn(v: &Value, label: &str) -> Result<TurnEntry, String> {
    let o = Obj::new(v, "", "a turn", TURN)?;
    o.string("about")?;
    let matcher = match o.get("match") {
        None => Matcher::Any,
        Some(m) => matcher(m)?,
    };
    let times = match o.get("times") {
        None => Some(1),
        Some(Value::String(s)) if s == "always" => None,
        Some(t) => match t.as_u64().filter(|n| *n > 0) {
            Some(n) => Some(n),
            None => return Err(format!("times: must be a positive integer or \"always\", not {}", not(t))),
        },
    };
    let steps = steps(o.get("steps").expect("required"), "steps")?;
    Ok(TurnEntry { label: label.to_string(), matcher, times, steps })
}

fn matcher(v: &Value) -> Result<Matcher, String> {
    let Some(map) = v.as_object() else {
        return Err(format!("match: must be an object, not {}", not(v)));
    };
    if let Some(k) = map.keys().find(|k| !MATCHERS.contains(&k.as_str())) {
        return Err(format!("match.{k}: unknown matcher (a match has one of: {})", MATCHERS.join(", ")));
    }
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    match keys.as_slice() {
        [] => return Err(format!("match: has no matcher (give one of: {})", MATCHERS.join(", "))),
        [_] => {}
        _ => return Err(format!("match: has {} matchers ({}); give one", keys.len(), keys.join(", "))),
    }
    let (k, v) = map.iter().next().expect("one");
    let string = || match v {
        Value::String(s) => Ok(s.clone()),
        _ => Err(format!("match.{k}: must be a string, not {}", not(v))),
    };
    Ok(match k.as_str() {
        "turn" => match v.as_u64().filter(|n| *n > 0) {
            Some(n) => Matcher::Turn(n),
            None => {
                return Err(format!("match.turn: must be a positive integer (1 is the first turn), not {}", not(v)))
            }
        },
        "text" => Matcher::Text(string()?),
        "contains" => Matcher::Contains(string()?),
        _ => {
            let re = string()?;
            match regex::Regex::new(&re) {
                Ok(r) => Matcher::Regex(r),
                Err(e) => return Err(format!("match.regex: not a valid regular expression: {}", regex_problem(&e))),
            }
        }
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

/// A list of steps at `at` (`steps`, `steps[1].allow.steps`).
fn steps(v: &Value, at: &str) -> Result<Vec<Step>, String> {
    let Some(list) = v.as_array() else {
        return Err(format!("{at}: must be an array of steps, not {}", not(v)));
    };
    let mut out = Vec::with_capacity(list.len());
    for (i, s) in list.iter().enumerate() {
        let at = format!("{at}[{i}]");
        if matches!(out.last(), Some(Step::Finish { .. })) {
            return Err(format!("{at}: comes after a `finish` step, which ends the turn"));
        }
        out.push(step(s, &at)?);
    }
    Ok(out)
}

fn step(v: &Value, at: &str) -> Result<Step, String> {
    let Some(map) = v.as_object() else {
        return Err(format!("{at}: must be an object (a step), not {}", not(v)));
    };
    let kinds = || STEPS.iter().map(|s| s.0).collect::<Vec<_>>().join(", ");
    let kind = match map.get("do") {
        None => return Err(format!("{at}.do: missing (every step has `do`, one of: {})", kinds())),
        Some(Value::String(k)) => k.as_str(),
        Some(other) => return Err(format!("{at}.do: must be a string, not {}", not(other))),
    };
    let Some(&(name, fields)) = STEPS.iter().find(|s| s.0 == kind) else {
        return Err(format!("{at}.do: unknown step {} (the steps are: {})", quote(kind), kinds()));
    };
    let mut all: Vec<(&'static str, bool)> = vec![("do", true)];
    all.extend_from_slice(fields);
    let o = Obj::new(v, at, &format!("the step `{name}`"), &all)?;
    let required = |k: &str| o.get(k).expect("required fields are checked").clone();
    Ok(match name {
        "output" => Step::Output(o.string("text")?.expect("required")),
        "tool" => Step::Tool {
            tool: o.string("tool")?.expect("required"),
            input: o.get("input").cloned().unwrap_or_else(|| json!({})),
            output: required("output"),
            error: o.boolean("error")?.unwrap_or(false),
        },
        "approval" => Step::Approval(Box::new(Ask {
            ids: None,
            tool: o.string("tool")?.expect("required"),
            input: o.get("input").cloned().unwrap_or_else(|| json!({})),
            allow: branch(o.get("allow"), &o.path("allow"), true)?,
            deny: branch(o.get("deny"), &o.path("deny"), false)?,
        })),
        "pause" => match o.uint("ms")? {
            Some(ms) => Step::Sleep(ms),
            None => Step::Hang,
        },
        "event" => {
            let event = o.string("name")?.expect("required");
            if event.is_empty() {
                return Err(format!("{}: must not be empty", o.path("name")));
            }
            Step::Event(Cow::Owned(event), o.get("data").cloned().unwrap_or_else(|| json!({})))
        }
        "finish" => Step::Finish {
            status: o.string("status")?.unwrap_or_else(|| "completed".into()),
            error: o.string("error")?,
        },
        "exit" => {
            let code = required("code");
            match code.as_u64().filter(|c| *c <= 255) {
                Some(c) => Step::Exit(c as i32),
                None => return Err(format!("{}: must be an exit code, 0 to 255, not {}", o.path("code"), not(&code))),
            }
        }
        "crash" => {
            let signal = o.string("signal")?.expect("required");
            match SIGNALS.iter().find(|s| s.0 == signal) {
                Some(&(name, signal)) => Step::Crash { signal, name },
                None => {
                    let names = SIGNALS.iter().map(|s| s.0).collect::<Vec<_>>().join(", ");
                    return Err(format!(
                        "{}: unknown signal {} (the signals are: {names})",
                        o.path("signal"),
                        quote(&signal)
                    ));
                }
            }
        }
        "stop_answering" => Step::StopAnswering,
        "broken_frame" => {
            let line = o.string("line")?.unwrap_or_else(|| BROKEN_LINE.into());
            if line.contains(['\n', '\r']) {
                return Err(format!("{}: must be one line (no line break)", o.path("line")));
            }
            Step::BrokenFrame(line)
        }
        other => unreachable!("step {other} is listed but not read"),
    })
}

/// An approval's `allow` or `deny`: the call's result and the steps after.
fn branch(v: Option<&Value>, at: &str, allow: bool) -> Result<Decided, String> {
    let (output, error) = if allow { ("allowed", false) } else { ("denied", true) };
    let Some(v) = v else {
        return Ok(Decided { output: json!(output), error, then: Vec::new() });
    };
    let o = Obj::new(v, at, "an approval's branch", BRANCH)?;
    let then = match o.get("steps") {
        None => Vec::new(),
        Some(s) => steps(s, &o.path("steps"))?,
    };
    Ok(Decided {
        output: o.get("output").cloned().unwrap_or_else(|| json!(output)),
        error: o.boolean("error")?.unwrap_or(error),
        then,
    })
}

fn method(v: &Value) -> Result<MethodEntry, String> {
    let o = Obj::new(v, "", "a method entry", METHOD)?;
    o.string("about")?;
    let method = o.string("method")?.expect("required");
    if !METHODS.contains(&method.as_str()) {
        return Err(format!("method: unknown method {} (the methods are: {})", quote(&method), METHODS.join(", ")));
    }
    let nth = match o.get("nth") {
        None => None,
        Some(n) => match n.as_u64().filter(|n| *n > 0) {
            Some(n) => Some(n),
            None => return Err(format!("nth: must be a positive integer (1 is the first call), not {}", not(n))),
        },
    };
    let delay_ms = o.uint("delay_ms")?;
    let reply = match (o.get("result"), o.get("error")) {
        (Some(_), Some(_)) => return Err("has both `result` and `error`; give one".into()),
        (Some(r), None) => Reply::Result(r.clone()),
        (None, Some(e)) => {
            let e = Obj::new(e, "error", "an error", ERROR)?;
            let code = e.string("code")?.expect("required");
            if code.is_empty() {
                return Err("error.code: must not be empty".into());
            }
            let message = e.string("message")?.unwrap_or_else(|| format!("{code} (scripted by the scenario)"));
            Reply::Error { code, message, data: e.get("data").cloned() }
        }
        (None, None) if delay_ms.is_none() => {
            return Err("scripts nothing: give `result`, `error` or `delay_ms`".into());
        }
        (None, None) => Reply::Real,
    };
    Ok(MethodEntry { method, nth, reply, delay_ms: delay_ms.unwrap_or(0) })
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
    let index = |t: Option<&String>| t.and_then(|t| t.parse::<usize>().ok());
    let (entry, from, rest) = match (tokens.first().map(String::as_str), index(tokens.get(1))) {
        (Some(list @ ("turns" | "methods")), Some(i)) => {
            let e = &v[list][i];
            let about = if list == "turns" { describe_turn(e) } else { describe_method(e) };
            (format!("{list}[{i}]{about}"), e, &tokens[2..])
        }
        _ => (String::new(), &v, &tokens[..]),
    };
    let mut field = String::new();
    let mut at = from;
    for t in rest {
        match (at, t.parse::<usize>()) {
            (Value::Array(a), Ok(i)) => {
                field.push_str(&format!("[{i}]"));
                at = a.get(i).unwrap_or(&Value::Null);
            }
            _ => {
                let plain = !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$'));
                match (plain, field.is_empty()) {
                    (true, true) => field.push_str(t),
                    (true, false) => field.push_str(&format!(".{t}")),
                    (false, _) => field.push_str(&format!("[{}]", quote(t))),
                }
                at = at.get(t.as_str()).unwrap_or(&Value::Null);
            }
        }
    }
    (entry, field)
}

/// ` (contains "fix")`: how a turn is named in a message, from its `match`
/// as written (nothing when that is malformed).
fn describe_turn(v: &Value) -> String {
    let Some(m) = v.get("match") else {
        return if v.is_object() { " (any text)".into() } else { String::new() };
    };
    match m.as_object().map(|m| m.iter().collect::<Vec<_>>()).as_deref() {
        Some([(k, Value::Number(n))]) if k.as_str() == "turn" => format!(" (turn {n})"),
        Some([(k, Value::String(s))]) if MATCHERS.contains(&k.as_str()) => format!(" ({k} {})", quote(s)),
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

/// A string as JSON writes it: quoted, on one line.
fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// What a value that does not fit is, for a message: numbers as written.
fn not(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(n) => n.to_string(),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// An object of the format, checked for unknown and missing fields.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    /// Its path from the entry ("" for the entry itself).
    at: String,
}

impl<'a> Obj<'a> {
    fn new(v: &'a Value, at: &str, what: &str, fields: &Fields) -> Result<Obj<'a>, String> {
        let Some(map) = v.as_object() else {
            let at = if at.is_empty() { String::new() } else { format!("{at}: ") };
            return Err(format!("{at}must be an object ({what}), not {}", not(v)));
        };
        let o = Obj { map, at: at.to_string() };
        let names = || fields.iter().map(|f| f.0).collect::<Vec<_>>().join(", ");
        if let Some(k) = map.keys().find(|k| !fields.iter().any(|f| f.0 == k.as_str())) {
            return Err(format!("{}: unknown field ({what} has: {})", o.path(k), names()));
        }
        if let Some((k, _)) = fields.iter().find(|(k, required)| *required && !map.contains_key(*k)) {
            return Err(format!("{}: missing ({what} needs `{k}`)", o.path(k)));
        }
        Ok(o)
    }

    fn path(&self, k: &str) -> String {
        if self.at.is_empty() {
            k.to_string()
        } else {
            format!("{}.{k}", self.at)
        }
    }

    fn get(&self, k: &str) -> Option<&'a Value> {
        self.map.get(k)
    }

    fn typed<T>(&self, k: &str, want: &str, read: impl Fn(&'a Value) -> Option<T>) -> Result<Option<T>, String> {
        match self.map.get(k) {
            None => Ok(None),
            Some(v) => read(v).map(Some).ok_or_else(|| format!("{}: must be {want}, not {}", self.path(k), not(v))),
        }
    }

    fn string(&self, k: &str) -> Result<Option<String>, String> {
        self.typed(k, "a string", |v| v.as_str().map(str::to_string))
    }

    fn uint(&self, k: &str) -> Result<Option<u64>, String> {
        self.typed(k, "a non-negative integer", Value::as_u64)
    }

    fn boolean(&self, k: &str) -> Result<Option<bool>, String> {
        self.typed(k, "a boolean", Value::as_bool)
    }

    fn array(&self, k: &str) -> Result<Option<&'a [Value]>, String> {
        self.typed(k, "an array", |v| v.as_array().map(Vec::as_slice))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = include_str!("../../scenario.schema.json");

    /// An object schema's fields: (name, required), sorted.
    fn schema_fields(d: &Value) -> Vec<(String, bool)> {
        let required: Vec<&str> =
            d["required"].as_array().map(|r| r.iter().map(|x| x.as_str().unwrap()).collect()).unwrap_or_default();
        let mut v: Vec<(String, bool)> = d["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("no properties in {d}"))
            .keys()
            .map(|k| (k.clone(), required.contains(&k.as_str())))
            .collect();
        v.sort();
        assert_eq!(d["additionalProperties"], false, "{d} allows other fields");
        v
    }

    fn table(f: &Fields) -> Vec<(String, bool)> {
        let mut v: Vec<(String, bool)> = f.iter().map(|(k, r)| (k.to_string(), *r)).collect();
        v.sort();
        v
    }

    #[test]
    fn the_schema_has_exactly_the_fields_the_parser_reads() {
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        let defs = &schema["$defs"];
        assert_eq!(schema_fields(&schema), table(TOP));
        assert_eq!(schema_fields(&defs["turn"]), table(TURN));
        assert_eq!(schema_fields(&defs["branch"]), table(BRANCH));
        assert_eq!(schema_fields(&defs["method"]), table(METHOD));
        assert_eq!(schema_fields(&defs["error"]), table(ERROR));
        let matchers: Vec<String> = schema_fields(&defs["match"]).into_iter().map(|f| f.0).collect();
        let mut want: Vec<String> = MATCHERS.iter().map(|m| m.to_string()).collect();
        want.sort();
        assert_eq!(matchers, want);
        assert_eq!(schema["properties"]["unscripted"]["enum"], json!(["error", "agent"]));
        let refs = defs["step"]["oneOf"].as_array().unwrap();
        assert_eq!(refs.len(), STEPS.len());
        for (i, (name, fields)) in STEPS.iter().enumerate() {
            assert_eq!(refs[i]["$ref"], format!("#/$defs/step_{name}"));
            let d = &defs[format!("step_{name}")];
            assert_eq!(d["properties"]["do"]["const"], *name);
            let mut all = vec![("do", true)];
            all.extend_from_slice(fields);
            assert_eq!(schema_fields(d), table(&all), "step {name}");
        }
        let signals: Vec<&str> = SIGNALS.iter().map(|s| s.0).collect();
        assert_eq!(defs["step_crash"]["properties"]["signal"]["enum"], json!(signals));
        assert_eq!(defs["step_broken_frame"]["properties"]["line"]["default"], BROKEN_LINE);
    }

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
    }
}
