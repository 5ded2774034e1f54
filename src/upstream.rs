//! The tables of cases an upstream library answered (tests/fixtures/upstream, written by the
//! oracle's subcommands; docs/testing.md "Upstream tables"), read for the unit test beside
//! each port: every case's input columns and the library's answer.

/// One case of a table: its line (from 1), its input columns and the library's answer.
pub struct Case<'t> {
    pub line: usize,
    pub inputs: Vec<&'t str>,
    pub answer: &'t str,
}

/// The cases of `table` (comments and blank lines left out), each with `inputs` input
/// columns and the answer after them; a line of another shape fails the test.
pub fn cases(table: &str, inputs: usize) -> Vec<Case<'_>> {
    let cases: Vec<Case> = table
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .map(|(n, l)| {
            let mut columns: Vec<&str> = l.split('\t').collect();
            assert_eq!(columns.len(), inputs + 1, "line {}: {l:?}", n + 1);
            let answer = columns.pop().unwrap_or_default();
            Case {
                line: n + 1,
                inputs: columns,
                answer,
            }
        })
        .collect();
    assert!(!cases.is_empty(), "a table without a case");
    cases
}

/// Fails, listing them, when `differs` (what fluxwave answers against the library, when the
/// two differ) finds any case of `cases` that differs; `at_least` guards against a table cut
/// short.
pub fn assert_agrees(
    cases: &[Case<'_>],
    at_least: usize,
    differs: impl Fn(&Case) -> Option<String>,
) {
    let wrong: Vec<String> = cases.iter().filter_map(differs).collect();
    assert!(cases.len() >= at_least, "{} cases", cases.len());
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}
