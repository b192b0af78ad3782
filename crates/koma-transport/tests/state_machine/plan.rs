//! A case's plan: the phase its connection is brought to, how, and the
//! operations then applied; drawn from the case's seed.

use koma_transport::testing::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    NotStarted,
    Spawning,
    BeforeHello,
    Idle,
    InFlight,
    EventsUnread,
    DuringDetach,
    AfterFailure,
}

pub const PHASES: [Phase; 8] = [
    Phase::NotStarted,
    Phase::Spawning,
    Phase::BeforeHello,
    Phase::Idle,
    Phase::InFlight,
    Phase::EventsUnread,
    Phase::DuringDetach,
    Phase::AfterFailure,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    Close,
    Abort,
    Timeout,
    Exit,
    Kill,
    Fatal,
}

pub const OPS: [Op; 6] = [Op::Close, Op::Abort, Op::Timeout, Op::Exit, Op::Kill, Op::Fatal];

/// How the phase is reached, where there is a choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Plain,
    /// Requests in flight: held back by the sim (`never_answer` or `hold`).
    Unanswered,
    /// Requests in flight beside a turn that waits for an approval.
    Approval,
    /// After a failure: which one.
    Garbage,
    ExitFirst,
    KillFirst,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub phase: Phase,
    pub variant: Variant,
    pub fault: &'static str,
    pub spawn_tool: bool,
    pub hello_delay_ms: u64,
    pub ops: Vec<Op>,
}

impl Plan {
    pub fn new(rng: &mut Rng) -> Plan {
        let phase = *rng.pick(&PHASES);
        let mut variant = Variant::Plain;
        // Most cases talk to a well-behaved sim; some to one that holds answers back.
        let mut fault = match rng.below(10) {
            0 => "never_answer",
            1 => "hold",
            _ => "",
        };
        let mut hello_delay_ms = 0;
        match phase {
            Phase::InFlight => {
                variant = if rng.chance(65) { Variant::Unanswered } else { Variant::Approval };
                fault = match variant {
                    Variant::Unanswered => *rng.pick(&["never_answer", "hold"]),
                    _ => "",
                };
            }
            Phase::EventsUnread => fault = "",
            Phase::BeforeHello => hello_delay_ms = rng.range(3, 40),
            Phase::Spawning if rng.chance(20) => hello_delay_ms = rng.range(1, 5),
            Phase::AfterFailure => {
                variant = *rng.pick(&[Variant::Garbage, Variant::Garbage, Variant::ExitFirst, Variant::KillFirst])
            }
            _ => {}
        }
        let spawn_tool = phase != Phase::NotStarted && rng.chance(20);
        let n = rng.range(1, 4);
        let ops = (0..n).map(|_| *rng.pick(&OPS)).collect();
        Plan { phase, variant, fault, spawn_tool, hello_delay_ms, ops }
    }
}
