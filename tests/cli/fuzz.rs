//! Every input a fuzzer ever crashed, replayed through the same check the fuzz target runs
//! (fuzz/fuzz_targets/checks.rs, included as is): tests/fixtures/fuzz/<target>/<input>.

#[path = "../../fuzz/fuzz_targets/checks.rs"]
mod checks;

use crate::common::fixtures;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = fixtures().join("fuzz").join(target);
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    assert!(
        !inputs.is_empty(),
        "no regression inputs in {}",
        dir.display()
    );
    for input in inputs {
        let data = std::fs::read(&input).unwrap();
        if std::panic::catch_unwind(|| check(&data)).is_err() {
            panic!("fuzz regression {} fails", input.display());
        }
    }
}

#[test]
fn emit_regressions() {
    replay("emit", checks::emit);
}
