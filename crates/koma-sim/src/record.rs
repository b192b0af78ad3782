//! The record of requests (`KOMA_SIM_RECORD`): one JSON line per request
//! read, written (one write(2), appended) as it is read, before it is
//! handled, so a test can read what its program sent while koma-sim runs
//! and after it ends. Each line also says the W3C trace context koma-sim was
//! started with (`TRACEPARENT`, `TRACESTATE`), if any, so a test can check
//! what a traced client gave it.

use crate::agent::json_str;
use serde_json::Value;
use std::fs::File;
use std::io::Write;
use std::path::Path;

pub struct Record {
    file: File,
    /// Requests recorded so far by this process.
    n: u64,
    pid: u32,
    /// `,"env":{...}`: the trace context variables it was started with, or empty.
    env: String,
}

impl Record {
    /// Opens `path` for appending, creating it if need be.
    pub fn open(path: &Path) -> Result<Record, String> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("cannot open the record file {} (KOMA_SIM_RECORD): {e}", path.display()))?;
        let mut vars = serde_json::Map::new();
        for name in ["TRACEPARENT", "TRACESTATE"] {
            if let Some(v) = std::env::var_os(name) {
                vars.insert(name.into(), Value::String(v.to_string_lossy().into_owned()));
            }
        }
        let env = if vars.is_empty() { String::new() } else { format!(",\"env\":{}", Value::Object(vars)) };
        Ok(Record { file, n: 0, pid: std::process::id(), env })
    }

    /// `{"n":N,"pid":P,"id":..,"method":..,"params":..}`: `method` as sent
    /// (null when it is missing), `params` as sent (`{}` when missing), and
    /// `"env":{"TRACEPARENT":..,"TRACESTATE":..}` with those of the two it had.
    pub fn request(&mut self, id: &str, method: Option<&Value>, params: Option<&Value>) {
        self.n += 1;
        let method = method.map_or_else(|| "null".to_string(), Value::to_string);
        let params = params.map_or_else(|| "{}".to_string(), Value::to_string);
        let line = format!(
            "{{\"n\":{},\"pid\":{},\"id\":{},\"method\":{method},\"params\":{params}{}}}\n",
            self.n,
            self.pid,
            json_str(id),
            self.env
        );
        if let Err(e) = self.file.write_all(line.as_bytes()) {
            eprintln!("koma-sim: cannot write the record of requests: {e}");
        }
    }
}
