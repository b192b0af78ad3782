//! Fuzz the frame reader and classifier: arbitrary bytes in arbitrary chunks.
//! Byte 0 modulo 16 says how many chunk lengths follow (a byte each); the rest
//! is the stdout stream. The properties are in `koma_transport::testing::frames`,
//! which `crates/koma-transport/tests/chunking.rs` replays over `corpus/frames`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    koma_transport::testing::frames::check_fuzz_input(data);
});
