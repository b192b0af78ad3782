//! The keyword agent: a turn planned from its text. `read`, `look` or
//! `show` reads a file; `fix`, `edit` or `write` asks to write one; then six
//! output pieces repeat what was said.

use crate::step::{Ask, Decided, Step};
use serde_json::json;
use std::borrow::Cow;
use std::collections::VecDeque;

/// The first word of `text` that looks like a path (has a `/` or a `.`),
/// stripped of surrounding quotes and trailing punctuation.
pub fn pick_path(text: &str) -> Option<String> {
    text.split_whitespace()
        .map(|w| {
            w.trim_start_matches(['"', '\'', '`', '('])
                .trim_end_matches(['.', ',', ';', ':', '!', '?', '"', '\'', '`', ')'])
        })
        .find(|w| !w.is_empty() && w.chars().any(|c| c.is_alphanumeric()) && (w.contains('/') || w.contains('.')))
        .map(str::to_string)
}

pub fn wants_read(text: &str) -> bool {
    let l = text.to_lowercase();
    ["read", "look", "show"].iter().any(|k| l.contains(k))
}

pub fn wants_write(text: &str) -> bool {
    let l = text.to_lowercase();
    ["fix", "edit", "write"].iter().any(|k| l.contains(k))
}

/// The reply, as the six `output` pieces it is streamed in.
pub fn reply_pieces(model: &str, turn: &str, text: &str, read: Option<&str>, write: Option<&str>) -> Vec<String> {
    let tools = match (read, write) {
        (None, None) => " No tools were needed.".to_string(),
        (Some(r), None) => format!(" I read {r}."),
        (None, Some(w)) => format!(" I asked to write {w}."),
        (Some(r), Some(w)) => format!(" I read {r} and asked to write {w}."),
    };
    vec![
        "Sim reply".to_string(),
        format!(" ({model}, {turn})"),
        ": you said ".to_string(),
        format!("\"{text}\"."),
        tools,
        " Done.".to_string(),
    ]
}

/// The steps of turn `turn` for `text`, paced by `delay` ms. The call and
/// approval ids are given now, from the session's counters.
pub fn plan(
    next_call: &mut u64,
    next_approval: &mut u64,
    model: &str,
    turn: &str,
    text: &str,
    delay: u64,
) -> VecDeque<Step> {
    let mut st = VecDeque::new();
    let sleep = |st: &mut VecDeque<Step>| {
        if delay > 0 {
            st.push_back(Step::Sleep(delay))
        }
    };
    let event = |name: &'static str, data| Step::Event(Cow::Borrowed(name), data);
    let path = pick_path(text);
    let read = wants_read(text).then(|| path.clone().unwrap_or_else(|| "README.md".into()));
    let write = wants_write(text).then(|| path.clone().unwrap_or_else(|| "notes.txt".into()));
    if let Some(p) = &read {
        *next_call += 1;
        let call = format!("c-{next_call}");
        sleep(&mut st);
        st.push_back(event(
            "tool_call",
            json!({"turn": turn, "call": call, "tool": "read_file", "input": {"path": p}}),
        ));
        sleep(&mut st);
        st.push_back(event(
            "tool_result",
            json!({"turn": turn, "call": call, "output": format!("(koma-sim: simulated contents of {p})\nline 1\nline 2\nline 3\n"), "error": false}),
        ));
    }
    if let Some(p) = &write {
        *next_call += 1;
        *next_approval += 1;
        let call = format!("c-{next_call}");
        let approval = format!("a-{next_approval}");
        let content = format!("// written by koma-sim for: {text}\n");
        let input = json!({"path": p, "content": content});
        sleep(&mut st);
        st.push_back(event("tool_call", json!({"turn": turn, "call": call, "tool": "write_file", "input": input})));
        let allow =
            Decided { output: json!(format!("wrote {} bytes to {p}", content.len())), error: false, then: vec![] };
        let deny = Decided { output: json!(format!("the user denied writing {p}")), error: true, then: vec![] };
        st.push_back(Step::Approval(Box::new(Ask {
            ids: Some((approval, call)),
            tool: "write_file".into(),
            input,
            allow,
            deny,
        })));
    }
    for piece in reply_pieces(model, turn, text, read.as_deref(), write.as_deref()) {
        sleep(&mut st);
        st.push_back(event("output", json!({"turn": turn, "text": piece})));
    }
    st.push_back(Step::completed());
    st
}
