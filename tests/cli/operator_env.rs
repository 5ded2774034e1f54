//! The Flux Operator side of the ResourceSet tests: the real `flux-operator` CLI (v0.58.1, the
//! operator's own builder linked in), found or installed as the Helm tests find helm.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::helm_env::{is_executable, on_path};

/// The pinned Flux Operator release.
pub const VERSION: &str = "v0.58.1";

/// The `flux-operator` the tests run: `FLUXWAVE_TEST_FLUX_OPERATOR` when set, else
/// `flux-operator` on the `PATH`, else `$HOME/go/bin/flux-operator` (where `.ci/run` puts
/// it), else the pinned release installed here with `go install` into Cargo's target folder.
/// Panics with how to install it when that fails too: never a silent skip.
pub fn flux_operator() -> PathBuf {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM
        .get_or_init(|| {
            if let Some(p) =
                std::env::var_os("FLUXWAVE_TEST_FLUX_OPERATOR").filter(|p| !p.is_empty())
            {
                let p = PathBuf::from(p);
                assert!(
                    is_executable(&p),
                    "FLUXWAVE_TEST_FLUX_OPERATOR={} is not an executable file",
                    p.display()
                );
                return p;
            }
            if let Some(p) = on_path("flux-operator") {
                return p;
            }
            if let Some(home) = std::env::var_os("HOME") {
                let p = Path::new(&home).join("go/bin/flux-operator");
                if is_executable(&p) {
                    return p;
                }
            }
            let bin =
                Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("flux-operator-{VERSION}"));
            let built = bin.join("flux-operator");
            if is_executable(&built) {
                return built;
            }
            let module =
                format!("github.com/controlplaneio-fluxcd/flux-operator/cmd/cli@{VERSION}");
            let how = format!(
                "the ResourceSet tests need the Flux Operator CLI {VERSION}: install it with \
                 `go install {module}` and rename the `cli` it makes to flux-operator, or run \
                 .ci/run, or point FLUXWAVE_TEST_FLUX_OPERATOR at one"
            );
            let out = Command::new("go")
                .args(["install", &module])
                .env("GOBIN", &bin)
                .output()
                .unwrap_or_else(|e| panic!("{how}\n(`go install` did not start: {e})"));
            assert!(
                out.status.success(),
                "{how}\n`go install` failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::fs::rename(bin.join("cli"), &built).unwrap();
            built
        })
        .clone()
}
