//! Connections kept after their case, drained again later: nothing may
//! complete on them any more.

use koma_transport::Connection;

/// A connection kept after its case: nothing may complete on it any more.
pub struct Retired {
    pub seed: u64,
    pub conn: Connection,
}

/// A complaint if a completion came after the case was done.
pub fn check_retired(r: &Retired) -> Option<String> {
    let late = r.conn.drain();
    (!late.is_empty()).then(|| {
        let what: Vec<String> = late.iter().map(|c| format!("token {} -> {:?}", c.token, c.outcome)).collect();
        format!("case seed {:#x}: completions after its close was done and checked: {what:?}", r.seed)
    })
}
