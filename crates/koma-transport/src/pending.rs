//! The table of requests written and not yet answered (docs/protocol.md: Requests and responses, Bounds).

use std::collections::HashMap;

use crate::error::{ErrorCode, KomaError};
use crate::limits::MAX_PENDING;

/// One request in flight. Its wire id is its token in decimal.
#[derive(Debug)]
pub struct PendingRequest {
    pub method: String,
    /// The writer has started writing it: if the stream fails now, its delivery is unknown.
    pub written: bool,
}

#[derive(Default, Debug)]
pub struct PendingTable {
    entries: HashMap<u64, PendingRequest>,
}

impl PendingTable {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Register a request about to be written; the 65th is `too_many_pending`.
    pub fn insert(&mut self, token: u64, method: &str) -> Result<(), KomaError> {
        if self.entries.len() >= MAX_PENDING {
            return Err(KomaError::new(
                ErrorCode::TooManyPending,
                format!("{MAX_PENDING} requests are already pending; `{method}` was not written"),
            ));
        }
        self.entries.insert(token, PendingRequest { method: method.to_owned(), written: false });
        Ok(())
    }

    pub fn mark_written(&mut self, token: u64) {
        if let Some(p) = self.entries.get_mut(&token) {
            p.written = true;
        }
    }

    /// Match a response id: only the exact decimal spelling of a pending token matches.
    pub fn take_by_id(&mut self, id: &str) -> Option<(u64, PendingRequest)> {
        let token = parse_id(id)?;
        self.entries.remove(&token).map(|p| (token, p))
    }

    /// Abandon a request (aborted, timed out): its late answer will be ignored.
    pub fn abandon(&mut self, token: u64) -> Option<PendingRequest> {
        self.entries.remove(&token)
    }

    pub fn contains(&self, token: u64) -> bool {
        self.entries.contains_key(&token)
    }

    pub fn drain(&mut self) -> impl Iterator<Item = (u64, PendingRequest)> + '_ {
        self.entries.drain()
    }
}

/// The token of a wire id, if the id is spelled exactly as this client spells ids.
pub fn parse_id(id: &str) -> Option<u64> {
    let b = id.as_bytes();
    if b.is_empty() || b.len() > 19 || b[0] == b'0' || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    id.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixty_fifth_is_refused_and_a_slot_frees_on_answer() {
        let mut t = PendingTable::default();
        for i in 1..=64 {
            t.insert(i, "state").unwrap();
        }
        assert_eq!(t.insert(65, "state").unwrap_err().code, ErrorCode::TooManyPending);
        assert!(t.take_by_id("7").is_some());
        t.insert(65, "state").unwrap();
        assert_eq!(t.insert(66, "state").unwrap_err().code, ErrorCode::TooManyPending);
        assert!(t.abandon(65).is_some());
        t.insert(66, "state").unwrap();
    }

    #[test]
    fn ids_match_exactly() {
        let mut t = PendingTable::default();
        t.insert(7, "state").unwrap();
        assert!(t.take_by_id("07").is_none());
        assert!(t.take_by_id("7 ").is_none());
        assert!(t.take_by_id("+7").is_none());
        assert!(t.take_by_id("8").is_none());
        assert!(t.take_by_id("7").is_some());
        assert!(t.take_by_id("7").is_none(), "already answered");
    }
}
