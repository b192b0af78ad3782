//! Fuzz `koma_transport::lift::lift`: long strings cut out of a JSON line.
//! Byte 0 gives the threshold (`min = 1 + byte0 % 16`, small so that short
//! inputs lift); the rest is the line, skipped unless UTF-8. The properties
//! (skeleton valid exactly when the input is; the restored value is the
//! input's) are in `koma_transport::testing::lift`, which
//! `crates/koma-transport/tests/lift_corpus.rs` replays over `corpus/lift`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    koma_transport::testing::lift::check_fuzz_input(data);
});
