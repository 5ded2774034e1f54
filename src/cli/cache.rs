//! `fluxwave cache gc`: prunes the cache folder (see `crate::cache`) and says what went.

use std::io::Write;
use std::path::Path;

use super::report::{io, warn, Outcome};
use crate::cache::{Policy, Tally};
use crate::error::{Error, Result};

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn entries(t: Tally) -> String {
    count(t.entries)
}

/// "1 entry", "2 entries".
fn count(n: usize) -> String {
    if n == 1 {
        "1 entry".into()
    } else {
        format!("{n} entries")
    }
}

pub fn gc(cache: &Path, policy: &Policy, out: &mut impl Write) -> Result<Outcome> {
    let report = crate::cache::prune(cache, policy)?;
    if !report.found {
        writeln!(out, "{}: no cache there, nothing to prune", cache.display()).map_err(io)?;
        return Ok(Outcome::Clean);
    }
    let removed = [report.unused, report.over_size, report.leftovers];
    let bytes: u64 = removed.iter().map(|t| t.bytes).sum();
    let n: usize = removed.iter().map(|t| t.entries).sum();
    writeln!(
        out,
        "{}: removed {} ({}): {} unused for {} days, {} past the size bound of {}, {} left by interrupted runs; kept {} ({})",
        cache.display(),
        count(n),
        mib(bytes),
        entries(report.unused),
        policy.max_age.as_secs() / (24 * 60 * 60),
        entries(report.over_size),
        mib(policy.max_size),
        entries(report.leftovers),
        entries(report.kept),
        mib(report.kept.bytes),
    )
    .map_err(io)?;
    for (path, e) in &report.failed {
        warn(format_args!("fluxwave: cannot remove {path}: {e}"));
    }
    if !report.failed.is_empty() {
        return Err(Error::Partial(format!(
            "{} of the cache could not be removed",
            count(report.failed.len())
        )));
    }
    Ok(Outcome::Clean)
}
