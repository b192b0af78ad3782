//! Fuzz koma-sim's scenario reader (`koma-sim check-scenario`, and the file
//! of `KOMA_SIM_SCENARIO`): any bytes as a scenario file's text. koma-sim is
//! a binary crate that shares no code with the client, so its reader's
//! files are included here as modules of this target (the scenario module,
//! and the two it reads from: the methods koma-sim has, and a turn's
//! steps). The properties are in koma-sim's `scenario::fuzz_check`, which
//! `cargo test -p koma-sim` replays over `corpus/scenario` and `seeds/scenario`.
#![no_main]
#![allow(dead_code, unused_imports)]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/koma-sim/src/capabilities.rs"]
mod capabilities;
#[path = "../../crates/koma-sim/src/scenario/mod.rs"]
mod scenario;
#[path = "../../crates/koma-sim/src/step.rs"]
mod step;

fuzz_target!(|data: &[u8]| {
    scenario::fuzz_check::check_fuzz_input(data);
});
