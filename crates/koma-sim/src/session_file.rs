//! A session's file, `KOMA_SIM_HOME/<session>.jsonl`: JSON lines, only ever
//! appended to, so that what a save costs is what happened since the last
//! one, however long the session is. The first line names the session; then
//! come the session's log entries (an event frame exactly as sent, or a
//! bench range) and, at each save where they changed, the session's numbers
//! (`state`), the last of which holds. A resume reads it all back once.

use crate::session::{Entry, Session, DEFAULT_MODEL};
use serde_json::Value;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The format written in the first line.
const FORMAT: u64 = 2;

/// An open session file, appended to at each save.
pub struct SessionFile {
    file: File,
    path: PathBuf,
    /// The last `state` line written (a save whose state is the same writes none).
    state: String,
}

pub fn path_of(home: &Path, id: &str) -> PathBuf {
    home.join(format!("{id}.jsonl"))
}

impl SessionFile {
    /// A new session's file (`create`): made, with its first line. Never
    /// one that exists (a resumed session's, which `reopen` failed to open).
    pub fn create(home: &Path, id: &str) -> std::io::Result<SessionFile> {
        std::fs::create_dir_all(home)?;
        let path = path_of(home, id);
        let mut file = OpenOptions::new().create_new(true).write(true).open(&path)?;
        file.write_all(format!("{{\"format\":{FORMAT},\"session\":{}}}\n", json_str(id)).as_bytes())?;
        Ok(SessionFile { file, path, state: String::new() })
    }

    /// A resumed session's file, appended to from its last whole line (a
    /// line cut short by a killed process is dropped).
    pub fn reopen(loaded: &Loaded) -> std::io::Result<SessionFile> {
        let file = OpenOptions::new().write(true).open(&loaded.path)?;
        file.set_len(loaded.whole)?;
        let file = OpenOptions::new().append(true).open(&loaded.path)?;
        Ok(SessionFile { file, path: loaded.path.clone(), state: loaded.state_line.clone() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `entries` and, if it changed, the session's state, in one
    /// write: what a save costs does not grow with the session's length.
    pub fn append(&mut self, entries: &[Entry], s: &Session, seq: u64) -> std::io::Result<()> {
        let mut b = String::new();
        for e in entries {
            match e {
                Entry::Frame { text, .. } => b.push_str(text),
                Entry::Bench { first, count, bytes, turn } => {
                    let _ = write!(b, "{{\"bench\":{{\"first\":{first},\"count\":{count},\"bytes\":{bytes}");
                    if let Some(t) = turn {
                        let _ = write!(b, ",\"turn\":{}", json_str(t));
                    }
                    b.push_str("}}");
                }
            }
            b.push('\n');
        }
        let state = state_line(s, seq);
        if state != self.state {
            b.push_str(&state);
            b.push('\n');
            self.state = state;
        }
        if b.is_empty() {
            return Ok(());
        }
        self.file.write_all(b.as_bytes())
    }
}

fn state_line(s: &Session, seq: u64) -> String {
    format!(
        "{{\"state\":{{\"model\":{},\"cwd\":{},\"next_turn\":{},\"next_call\":{},\"next_approval\":{},\"seq\":{seq},\"active_turn\":{}}}}}",
        json_str(&s.model),
        s.cwd.as_deref().map(json_str).unwrap_or_else(|| "null".into()),
        s.next_turn,
        s.next_call,
        s.next_approval,
        s.active.as_ref().map(|t| json_str(&t.id)).unwrap_or_else(|| "null".into()),
    )
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("string serializes")
}

/// A session read back from its file.
pub struct Loaded {
    pub session: Session,
    /// Its log, for the replay.
    pub log: Vec<Entry>,
    pub seq: u64,
    /// The turn that was running when the file was last saved.
    pub unfinished: Option<String>,
    path: PathBuf,
    /// The length of the file's whole lines.
    whole: u64,
    state_line: String,
}

impl Loaded {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Why a session file could not be loaded: (code, message).
pub type LoadError = (&'static str, String);

pub fn valid_session_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

pub fn load(home: &Path, id: &str) -> Result<Loaded, LoadError> {
    if !valid_session_id(id) {
        return Err(("unknown_session", format!("no session `{id}`")));
    }
    let path = path_of(home, id);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(("unknown_session", format!("no session `{id}` in {}", home.display())))
        }
        Err(e) => return Err(("storage_error", format!("cannot read {}: {e}", path.display()))),
    };
    let bad = |what: &str| ("storage_error", format!("{} is corrupt: {what}", path.display()));
    // A last line without its terminator was cut short by a kill: dropped.
    let whole = text.rfind('\n').map_or(0, |i| i + 1);
    let mut lines = text[..whole].lines();
    let head: Value =
        serde_json::from_str(lines.next().ok_or_else(|| bad("empty"))?).map_err(|e| bad(&e.to_string()))?;
    if head.get("format").and_then(Value::as_u64) != Some(FORMAT) {
        return Err(bad(&format!("not a session file of format {FORMAT}")));
    }
    if head.get("session").and_then(Value::as_str) != Some(id) {
        return Err(bad("field `session`"));
    }
    let mut log = Vec::new();
    let mut state: Option<(Value, &str)> = None;
    for line in lines {
        let v: Value = serde_json::from_str(line).map_err(|e| bad(&e.to_string()))?;
        if let Some(b) = v.get("bench") {
            let g = |k: &str| b.get(k).and_then(Value::as_u64).ok_or_else(|| bad("a bench entry"));
            let turn = match b.get("turn") {
                None => None,
                Some(Value::String(t)) => Some(t.clone()),
                Some(_) => return Err(bad("a bench entry")),
            };
            log.push(Entry::Bench { first: g("first")?, count: g("count")?, bytes: g("bytes")?, turn });
        } else if v.get("state").is_some() {
            state = Some((v, line));
        } else {
            let seq = match (v.get("type"), v.get("seq").and_then(Value::as_u64), v.get("name")) {
                (Some(Value::String(t)), Some(seq), Some(Value::String(_))) if t == "event" => seq,
                _ => return Err(bad("a line that is neither an event, a bench range nor a state")),
            };
            log.push(Entry::Frame { seq, text: line.to_string() });
        }
    }
    let (v, state_line) = state.ok_or_else(|| bad("no state"))?;
    let st = &v["state"];
    let u = |k: &str| st.get(k).and_then(Value::as_u64).ok_or_else(|| bad(&format!("field `{k}`")));
    let opt_str = |k: &str| match st.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(&format!("field `{k}`"))),
    };
    let model = opt_str("model")?.unwrap_or_else(|| DEFAULT_MODEL.into());
    let mut s = Session::new(id.to_string(), Some(model), opt_str("cwd")?);
    s.next_turn = u("next_turn")?;
    s.next_call = u("next_call")?;
    s.next_approval = u("next_approval")?;
    Ok(Loaded {
        session: s,
        log,
        seq: u("seq")?,
        unfinished: opt_str("active_turn")?,
        path,
        whole: whole as u64,
        state_line: state_line.to_string(),
    })
}
