//! The calls of a case and what may complete them: each call's record, and
//! whether an outcome fits what the case has done so far.

use koma_transport::{ErrorCode, Outcome};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Request(&'static str),
    Probe,
    Close,
}

#[derive(Debug, Clone)]
pub enum Got {
    /// A result (whether it is JSON).
    Result(bool),
    Hello,
    Closed,
    Err(ErrorCode, String),
}

impl Got {
    pub fn from(o: Outcome) -> Got {
        match o {
            Outcome::Result(raw) => Got::Result(serde_json::from_slice::<serde_json::Value>(raw.text()).is_ok()),
            Outcome::Hello(_) => Got::Hello,
            Outcome::Done => Got::Closed,
            Outcome::Error(e) => Got::Err(e.code, e.message.chars().take(300).collect()),
            Outcome::Turn(n) => panic!("these cases open no turn, yet updates came: {n:?}"),
        }
    }
    pub fn label(&self) -> String {
        match self {
            Got::Result(_) => "result".into(),
            Got::Hello => "hello".into(),
            Got::Closed => "closed()".into(),
            Got::Err(c, _) => c.as_str().into(),
        }
    }
}

#[derive(Debug)]
pub enum Status {
    /// The core took it: a completion will come.
    Accepted,
    /// Answered at once (a local rejection, `Probe::Ready`, `Closing::Done`): no completion may come.
    AtOnce(String),
}

pub struct CallRec {
    pub kind: Kind,
    pub timeout: bool,
    pub status: Status,
    /// The drain count when it was abandoned.
    pub abandoned: Option<u64>,
    pub got: Vec<Got>,
}

/// What the case has done so far that can end calls.
#[derive(Default, Debug)]
pub struct Facts {
    pub close: bool,
    pub kill: bool,
    pub exit: bool,
    pub garbage: bool,
    pub detach: bool,
}

impl Facts {
    pub fn disrupted(&self) -> bool {
        self.close || self.kill || self.exit || self.garbage || self.detach
    }
    pub fn failed(&self) -> bool {
        self.kill || self.exit || self.garbage
    }

    /// Does this completion fit what the case has done so far (`fault`: the sim's)?
    pub fn fits(&self, call: &CallRec, got: &Got, fault: &str) -> Result<(), String> {
        let f = self;
        let answerable = |m: &str| match m {
            "bench_exit" | "bench_garbage" => false,
            "detach" => true,
            _ => !matches!(fault, "hold" | "never_answer"),
        };
        use ErrorCode as C;
        let ok = match (call.kind, got) {
            (Kind::Close, Got::Closed) => true,
            (Kind::Close, _) | (_, Got::Closed) => false,
            (Kind::Probe, Got::Hello) => true,
            (Kind::Probe, Got::Result(_)) | (Kind::Request(_), Got::Hello) => false,
            (Kind::Request(_), Got::Result(false)) => return Err("the result is not JSON".into()),
            (Kind::Request(m), Got::Result(true)) => answerable(m),
            (Kind::Probe, Got::Err(c, _)) => match c {
                C::Timeout => call.timeout,
                C::Closed => f.close,
                C::TransportFailure => f.kill || f.exit,
                C::ProtocolError => f.garbage,
                _ => false,
            },
            (Kind::Request(m), Got::Err(c, _)) => match c {
                C::Remote => m == "submit",
                C::Timeout => call.timeout,
                C::Closed => f.close || f.detach,
                C::DeliveryUnknown => f.disrupted(),
                C::TransportFailure => f.kill || f.exit,
                C::ProtocolError => f.garbage,
                _ => false,
            },
        };
        if ok {
            Ok(())
        } else {
            Err("nothing the case did explains it".into())
        }
    }

    /// Does a local rejection fit?
    pub fn refusal_fits(&self, kind: Kind, code: ErrorCode) -> bool {
        let f = self;
        match code {
            ErrorCode::Closed => f.close,
            ErrorCode::TransportFailure => f.failed(),
            ErrorCode::ProtocolError => kind == Kind::Probe && f.garbage,
            ErrorCode::Lifecycle => matches!(kind, Kind::Request(_)) && f.detach,
            _ => false,
        }
    }
}

/// A completion, shortened for the log.
pub fn short(g: &Got) -> String {
    match g {
        Got::Err(c, m) => format!("{c}: {}", m.chars().take(100).collect::<String>()),
        other => format!("{other:?}"),
    }
}
