//! The methods koma-sim has: hello's capabilities, which the handlers
//! (`server::methods`) carry out and a scenario may script.

/// The protocol-1 methods, in the order hello lists them. A method listed
/// here and given an arm in `server::methods` is one koma-sim implements;
/// a scenario may script the answers of these alone.
pub const METHODS: &[&str] = &[
    "create",
    "resume",
    "state",
    "submit",
    "enqueue",
    "interrupt",
    "interrupt_and_submit",
    "approve",
    "detach",
    "configure",
];

/// Methods added to the capabilities with `KOMA_SIM_BENCH=1`.
pub const BENCH_METHODS: &[&str] = &["bench_events", "bench_blob", "bench_exit", "bench_garbage"];
