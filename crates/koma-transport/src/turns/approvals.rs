//! A turn's approval requests: those still waiting for an answer, and how
//! each answered one was answered.

use super::spec::Decision;

/// Who an approval request waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Waits {
    /// The host's function.
    Handler,
    /// Decided on the host's thread (see `Turns::decide_unread`): left to
    /// the application if a loop reads the turn, else denied.
    Undecided,
    /// The application, which reads the turn and answers with `approve`.
    Application,
}

/// Who answered an approval request, or why it was denied with nobody to answer it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnsweredBy {
    /// By the turn's fixed decision (`"allow"` or `"deny"`).
    Policy,
    /// By the host's function.
    Handler,
    /// Denied because the host's function failed or gave no decision.
    HandlerFailed,
    /// By the application's `approve`.
    Application,
    /// Denied: nobody read the turn, so nobody could answer.
    NoReader,
    /// Denied: an overflow lost the request before anyone saw it.
    Overflow,
}

pub(super) struct Pending {
    pub approval: String,
    /// The tool call it is for, by index in the turn's calls.
    pub call: Option<usize>,
    /// The batch of the turn's stream its event went into.
    pub batch: Option<u64>,
    pub waits: Waits,
}

#[derive(Default)]
pub(super) struct Approvals {
    pending: Vec<Pending>,
    answered: Vec<(String, Decision, AnsweredBy)>,
}

impl Approvals {
    pub fn wait(&mut self, p: Pending) {
        self.pending.push(p);
    }

    /// The request `approval` if it waits for one of `waits`: no longer waiting.
    pub fn take(&mut self, approval: &str, waits: &[Waits]) -> Option<Pending> {
        let i = self.pending.iter().position(|p| p.approval == approval && waits.contains(&p.waits))?;
        Some(self.pending.remove(i))
    }

    pub fn placed(&mut self, approval: &str, batch: u64) {
        if let Some(p) = self.pending.iter_mut().find(|p| p.approval == approval) {
            p.batch = Some(batch);
        }
    }

    /// The requests that wait for the application (decided or not) and
    /// satisfy `which`: no longer waiting.
    pub fn take_for_application(&mut self, mut which: impl FnMut(&Pending) -> bool) -> Vec<Pending> {
        let (taken, kept) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| matches!(p.waits, Waits::Undecided | Waits::Application) && which(p));
        self.pending = kept;
        taken
    }

    /// Leave the undecided ones to the application.
    pub fn leave_to_application(&mut self) {
        for p in &mut self.pending {
            if p.waits == Waits::Undecided {
                p.waits = Waits::Application;
            }
        }
    }

    pub fn answered(&mut self, approval: String, decision: Decision, by: AnsweredBy) {
        self.answered.push((approval, decision, by));
    }

    /// How each answered request was answered, in order.
    pub fn history(&self) -> &[(String, Decision, AnsweredBy)] {
        &self.answered
    }
}
