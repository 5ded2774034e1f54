//! Counts in prose: "1 error", "2 errors", never "1 errors". Every count fluxwave prints
//! beside a noun goes through `count`.

/// `n` and `noun`, the noun in the plural unless `n` is 1 (every noun fluxwave counts takes
/// an `s`).
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn one_is_singular_and_everything_else_plural() {
        assert_eq!(count(0, "error"), "0 errors");
        assert_eq!(count(1, "error"), "1 error");
        assert_eq!(count(2, "warning"), "2 warnings");
    }
}
