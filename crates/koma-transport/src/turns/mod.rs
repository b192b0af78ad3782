//! The turn layer, above the protocol (it has no wire fields of its own):
//! what `turn()` and `run()` are in every host. A host starts a turn with
//! `Connection::open_turn` and learns of it through completions for the
//! turn's key (`Outcome::Turn`: its id, approvals for the host's function,
//! its stream being ready, its end with its result). Everything about turns
//! that is not a language's idiom is decided here, once, for every host:
//!
//! - which consumer each event belongs to ([`router`]);
//! - what a turn collects for its result ([`result`]) and how it ended;
//! - how its approvals are answered, and by whom ([`approvals`]): a fixed
//!   decision, the host's function, or the application with `approve` as it
//!   reads the turn (denied when nobody reads it, or when an overflow lost
//!   the request before anyone saw it);
//! - what leaving a loop early, a stop (abort, deadline), the client's
//!   failure and close do to a turn ([`turn`]);
//! - what a traced turn shows OpenTelemetry ([`telemetry`]).
//!
//! The rules, as a user meets them, are in `docs/semantics.md` ("Turns").

mod approvals;
mod effects;
mod event;
mod fields;
mod result;
mod router;
mod spec;
mod telemetry;
#[cfg(test)]
mod telemetry_tests;
#[cfg(test)]
mod tests;
mod text;
mod turn;
mod unrouted;
mod update;

pub use approvals::AnsweredBy;
pub use effects::{Effects, RequestKind, TurnRequest};
pub use event::Event;
pub use router::Turns;
pub use spec::{Answer, ApprovalOption, Decision, Entry, TurnSpec};
pub use update::{ApprovalAsked, Cause, TurnEnd, TurnError, TurnUpdate};
