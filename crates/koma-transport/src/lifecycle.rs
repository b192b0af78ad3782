//! The order of requests (A.7): hello, then at most one of create or resume
//! (only as the first request written), then the other methods, then detach.

use crate::error::{ErrorCode, KomaError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// Hello checked; nothing written yet.
    Fresh,
    /// Something has been written; create/resume is no longer allowed.
    Open,
    /// `detach` has been written; nothing more may be.
    Detached,
}

impl Lifecycle {
    /// Check that `method` may be written now, and advance.
    pub fn admit(&mut self, method: &str) -> Result<(), KomaError> {
        match (*self, method) {
            (Lifecycle::Detached, _) => Err(KomaError::new(
                ErrorCode::Lifecycle,
                format!("`{method}` after detach: nothing is written after detach"),
            )),
            (Lifecycle::Open, "create" | "resume") => Err(KomaError::new(
                ErrorCode::Lifecycle,
                format!("`{method}` is allowed only as the first request, and only once"),
            )),
            (_, "detach") => {
                *self = Lifecycle::Detached;
                Ok(())
            }
            _ => {
                *self = Lifecycle::Open;
                Ok(())
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
    fn detach_first_is_allowed() {
        let mut l = Lifecycle::Fresh;
        l.admit("detach").unwrap();
        assert_eq!(l, Lifecycle::Detached);
    }
}
