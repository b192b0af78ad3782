//! The order of requests (A.7): hello, then at most one of create or resume
//! (only as the first request written), then the other methods, then detach.

use crate::error::{ErrorCode, KomaError};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// Hello checked; nothing written yet.
    Fresh,
    /// Something has been written; create/resume is no longer allowed.
    Open {
        /// The method of the first request, which a refused create/resume names.
        first: String,
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
            (Lifecycle::Open { first }, "create" | "resume") => {
                let why = if first == "create" || first == "resume" {
                    "this client has its session already; make a new client for another one"
                } else {
                    "this client can no longer start a session; make a new client for one"
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
            (Lifecycle::Fresh, _) => *self = Lifecycle::Open { first: method.to_owned() },
            _ => {}
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
        assert_eq!(
            l.admit("create").unwrap_err().message,
            "`create` is allowed only as the first request, and `resume` was written first: \
             this client has its session already; make a new client for another one"
        );
    }

    #[test]
    fn a_refused_request_changes_nothing() {
        let l = Lifecycle::Fresh;
        l.check("state").unwrap();
        assert_eq!(l, Lifecycle::Fresh, "checking does not advance");
        let mut l = Lifecycle::Open { first: "state".into() };
        assert!(l.admit("create").is_err());
        assert_eq!(l, Lifecycle::Open { first: "state".into() });
    }

    #[test]
    fn detach_first_is_allowed() {
        let mut l = Lifecycle::Fresh;
        l.admit("detach").unwrap();
        assert_eq!(l, Lifecycle::Detached);
    }
}
