//! What the turn layer asks of the connection after each step: requests to
//! write, updates for the host, and host calls that are done.

use super::update::TurnUpdate;

/// Which request of a turn's a token stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// `submit` or `interrupt_and_submit`: its answer names the turn.
    Submit,
    Interrupt,
    Approve,
}

/// A request the turn layer writes for turn `key`.
#[derive(Debug)]
pub struct TurnRequest {
    pub key: u64,
    pub kind: RequestKind,
    pub method: &'static str,
    /// The params as JSON text.
    pub params: Option<String>,
}

#[derive(Debug, Default)]
pub struct Effects {
    pub requests: Vec<TurnRequest>,
    /// Updates for the host, by turn key.
    pub updates: Vec<(u64, TurnUpdate)>,
    /// Host calls (a turn's interrupt) that are done, by their token.
    pub done: Vec<u64>,
    /// The turns' requests to forget, by their token (a turn given up):
    /// their pending slots are freed, their late answers ignored.
    pub abandon: Vec<u64>,
}

impl Effects {
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty() && self.updates.is_empty() && self.done.is_empty() && self.abandon.is_empty()
    }
}
