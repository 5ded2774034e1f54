//! The binary: parse arguments, run, map the outcome to an exit code (0 clean, 1 findings,
//! 2 bad input or usage). Nothing else in fluxwave exits the process but `exit_on_signal`,
//! which `process::guard` calls on SIGINT, SIGTERM or SIGHUP once it has ended every child
//! and removed every temporary.

use std::ffi::OsString;
use std::process::ExitCode;

/// mimalloc instead of the system allocator: a build holds hundreds of thousands of small
/// values, and mimalloc gives their memory back where glibc keeps it (see BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The conventional status of a run ended by a signal: 128 + its number (130 for SIGINT,
/// 143 for SIGTERM, 129 for SIGHUP).
fn exit_on_signal(signal: i32) -> ! {
    std::process::exit(128 + signal)
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    // The watcher fluxwave starts beside itself (see `process`), not a command.
    if fluxwave::is_watcher(&args) {
        fluxwave::watch();
        return ExitCode::SUCCESS;
    }
    fluxwave::guard(exit_on_signal);
    match fluxwave::cli::run(args) {
        Ok(fluxwave::cli::Outcome::Clean) => ExitCode::SUCCESS,
        Ok(fluxwave::cli::Outcome::Findings) => ExitCode::from(1),
        Err(code) => ExitCode::from(code),
    }
}
