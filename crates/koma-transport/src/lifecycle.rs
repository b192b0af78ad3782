//! The order of requests (docs/protocol.md, Lifecycle): hello, then at most one of create or resume
//! (only as the first request written), then the other methods, then detach.

use crate::error::{ErrorCode, KomaError};

/// What became of a first `create` or `resume`, as a refused second one says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Its answer has not come (or will never be read: the call was aborted
    /// or timed out), or the first request was another method.
    Unanswered,
    /// koma answered with a result: the client has its session.
    Started,
    /// koma answered with an error: the client has no session.
    Refused,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// Hello checked; nothing written yet.
    Fresh,
    /// Something has been written; create/resume is no longer allowed.
    Open {
        /// The method of the first request, which a refused create/resume names.
        first: String,
        /// When `first` is `create` or `resume`: what became of it.
        session: Start,
    },
    /// `detach` has been written; nothing more may be.
    Detached,
}

impl Lifecycle {
    /// Check that `method` may be written now, and advance.
    pub fn admit(&mut self, method: &str) -> Result<(), KomaError> {
        self.check(method)?;
        self.advance(method);
        Ok(())
    }

    /// Check that `method` may be written now; nothing changes.
    pub fn check(&self, method: &str) -> Result<(), KomaError> {
        match (self, method) {
            (Lifecycle::Detached, _) => Err(KomaError::new(
                ErrorCode::Lifecycle,
                format!("`{method}` after detach: nothing is written after detach"),
            )),
            (Lifecycle::Open { first, session }, "create" | "resume") => {
                let why = match (first.as_str(), session) {
                    ("create" | "resume", Start::Started) => {
                        "this client has its session already; make a new client for another one"
                    }
                    ("create" | "resume", Start::Refused) => {
                        "it failed, so this client has no session, and a client starts at most one, with its \
                         first request; make a new client to try again"
                    }
                    ("create" | "resume", Start::Unanswered) => {
                        "its answer has not come (or was not waited for), and a client starts at most one \
                         session, with its first request; make a new client for another one"
                    }
                    _ => "this client can no longer start a session; make a new client for one",
                };
                Err(KomaError::new(
                    ErrorCode::Lifecycle,
                    format!("`{method}` is allowed only as the first request, and `{first}` was written first: {why}"),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Advance past `method`, which [`Lifecycle::check`] allowed. Only the
    /// first request allocates (its method is kept).
    pub fn advance(&mut self, method: &str) {
        match (&*self, method) {
            (_, "detach") => *self = Lifecycle::Detached,
            (Lifecycle::Fresh, _) => *self = Lifecycle::Open { first: method.to_owned(), session: Start::Unanswered },
            _ => {}
        }
    }

    /// koma answered `method` (`ok`: with a result); a first `create` or
    /// `resume` records whether it started the session. Nothing else changes.
    pub fn answered(&mut self, method: &str, ok: bool) {
        if let Lifecycle::Open { first, session: session @ Start::Unanswered } = self {
            if first == method && matches!(method, "create" | "resume") {
                *session = if ok { Start::Started } else { Start::Refused };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_only_first_and_once() {
        let mut l = Lifecycle::Fresh;
        l.admit("create").unwrap();
        assert_eq!(l.admit("create").unwrap_err().code, ErrorCode::Lifecycle);
        assert_eq!(l.admit("resume").unwrap_err().code, ErrorCode::Lifecycle);
        l.admit("state").unwrap();
        l.admit("detach").unwrap();
        assert_eq!(l.admit("state").unwrap_err().code, ErrorCode::Lifecycle);
        assert_eq!(l.admit("detach").unwrap_err().code, ErrorCode::Lifecycle);
    }

    #[test]
    fn create_after_another_request_is_refused() {
        let mut l = Lifecycle::Fresh;
        l.admit("state").unwrap();
        assert_eq!(l.admit("resume").unwrap_err().code, ErrorCode::Lifecycle);
    }

    #[test]
    fn a_late_create_names_the_request_that_went_first() {
        let mut l = Lifecycle::Fresh;
        l.admit("state").unwrap();
        l.admit("submit").unwrap();
        assert_eq!(
            l.admit("create").unwrap_err().message,
            "`create` is allowed only as the first request, and `state` was written first: \
             this client can no longer start a session; make a new client for one"
        );
        let mut l = Lifecycle::Fresh;
        l.admit("resume").unwrap();
        l.answered("resume", true);
        assert_eq!(
            l.admit("create").unwrap_err().message,
            "`create` is allowed only as the first request, and `resume` was written first: \
             this client has its session already; make a new client for another one"
        );
    }

    #[test]
    fn a_create_after_a_failed_resume_does_not_claim_a_session() {
        let mut l = Lifecycle::Fresh;
        l.admit("resume").unwrap();
        l.answered("resume", false);
        let message = l.admit("create").unwrap_err().message;
        assert_eq!(
            message,
            "`create` is allowed only as the first request, and `resume` was written first: \
             it failed, so this client has no session, and a client starts at most one, with its first \
             request; make a new client to try again"
        );
        assert!(!message.contains("has its session"));
        // A later answer of another method changes nothing.
        l.answered("create", true);
        assert!(l.admit("resume").unwrap_err().message.contains("it failed"));
    }

    #[test]
    fn a_create_while_the_first_is_unanswered_says_so() {
        let mut l = Lifecycle::Fresh;
        l.admit("create").unwrap();
        let message = l.admit("create").unwrap_err().message;
        assert!(message.contains("its answer has not come (or was not waited for)"), "{message}");
        assert!(!message.contains("has its session"));
        // Only the first answer counts.
        l.answered("create", false);
        l.answered("create", true);
        assert!(l.admit("resume").unwrap_err().message.contains("it failed"));
    }

    #[test]
    fn a_refused_request_changes_nothing() {
        let l = Lifecycle::Fresh;
        l.check("state").unwrap();
        assert_eq!(l, Lifecycle::Fresh, "checking does not advance");
        let open = Lifecycle::Open { first: "state".into(), session: Start::Unanswered };
        let mut l = open.clone();
        assert!(l.admit("create").is_err());
        assert_eq!(l, open);
    }

    #[test]
    fn detach_first_is_allowed() {
        let mut l = Lifecycle::Fresh;
        l.admit("detach").unwrap();
        assert_eq!(l, Lifecycle::Detached);
    }
}
