//! The properties of the `scenario` fuzz target (fuzz/fuzz_targets/scenario.rs),
//! which includes this reader's files as its own modules: any bytes as a
//! scenario file's text, through `check` (what `koma-sim check-scenario` and
//! `KOMA_SIM_SCENARIO` run). Compiled for the tests and the fuzzer only;
//! the tests below replay `fuzz/corpus/scenario` and `fuzz/seeds/scenario`.
//!
//! - no panic, whatever the input (text that is not UTF-8 is read lossily);
//! - the same verdict twice (the reader keeps no state between files);
//! - a mistake is one line, without a control character, naming its place
//!   within what was read;
//! - a file accepted is accepted again as serde_json writes its value back
//!   (compact, keys sorted): the verdict depends on the JSON, not its layout.

use super::parse::parse;

/// The check of `koma-sim check-scenario` (`super::check`).
fn check(text: &str) -> Result<(), super::parse::Mistake> {
    parse(text).map(|_| ())
}

/// Check one fuzz input (see the module's doc).
pub fn check_fuzz_input(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let first = check(&text).map_err(|m| m.to_string());
    let second = check(&text).map_err(|m| m.to_string());
    assert_eq!(first, second, "the verdict changed between two reads");
    match first {
        Err(message) => {
            assert!(!message.is_empty(), "an empty message");
            assert!(!message.chars().any(char::is_control), "a mistake is one plain line: {message:?}");
        }
        Ok(()) => {
            let value: serde_json::Value = serde_json::from_str(&text).expect("accepted, so JSON");
            let again = serde_json::to_string(&value).unwrap();
            if let Err(m) = check(&again) {
                panic!("accepted as written, refused as serde_json writes it back: {m}\n{again}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    fn files(dir: &str) -> Vec<PathBuf> {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz").join(dir);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files
    }

    #[test]
    fn every_corpus_and_seed_file_keeps_the_properties() {
        let corpus = files("corpus/scenario");
        let seeds = files("seeds/scenario");
        assert!(seeds.len() > 20, "{} seeds", seeds.len());
        let mut accepted = 0;
        for path in corpus.iter().chain(&seeds) {
            let data = std::fs::read(path).unwrap();
            accepted += usize::from(super::check(&String::from_utf8_lossy(&data)).is_ok());
            super::check_fuzz_input(&data);
        }
        assert!(accepted * 4 > seeds.len(), "only {accepted} inputs were scenarios koma-sim plays");
    }
}
