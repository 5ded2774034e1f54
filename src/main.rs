//! The binary: parse arguments, run, map the outcome to an exit code (0 clean, 1 findings,
//! 2 bad input or usage). Nothing else in fluxwave exits the process.

use std::process::ExitCode;

/// mimalloc instead of the system allocator: a build holds hundreds of thousands of small
/// values, and mimalloc gives their memory back where glibc keeps it (see BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    match fluxwave::cli::run(std::env::args_os()) {
        Ok(fluxwave::cli::Outcome::Clean) => ExitCode::SUCCESS,
        Ok(fluxwave::cli::Outcome::Findings) => ExitCode::from(1),
        Err(code) => ExitCode::from(code),
    }
}
