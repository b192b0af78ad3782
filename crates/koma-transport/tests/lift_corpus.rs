//! Long strings cut out of a line (`koma_transport::lift`): the properties of
//! the `lift` fuzz target (`koma_transport::testing::lift`), over every file
//! of `fuzz/corpus/lift` and `fuzz/seeds/lift`.

use std::path::PathBuf;

use koma_transport::testing::lift as lift_check;

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
    let corpus = files("corpus/lift");
    let seeds = files("seeds/lift");
    assert!(corpus.len() > 100 && seeds.len() > 10, "{} corpus files, {} seeds", corpus.len(), seeds.len());
    let mut lifted = 0;
    for path in corpus.iter().chain(&seeds) {
        let data = std::fs::read(path).unwrap();
        let Some((min, json)) = lift_check::split_fuzz_input(&data) else { continue };
        if std::str::from_utf8(json).is_ok() && koma_transport::lift::lift(json, min).is_some() {
            lifted += 1;
        }
        lift_check::check_fuzz_input(&data);
    }
    assert!(lifted > corpus.len() / 2, "only {lifted} inputs lifted anything");
}
