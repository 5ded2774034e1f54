//! `missing-timeout`: a Flux Kustomization that waits (`wait: true`, `healthChecks`, or a
//! wave or a unit's own Kustomization, which what depends on them waits for) without an explicit `timeout` waits as long as its
//! `interval` (minus 30 s in some Flux versions): a stuck workload holds it, and everything
//! that dependsOn it, for most of an interval before Flux reports the failure and retries.

use serde_json::Value;

use super::{flux_name, Finding, FluxView};
use crate::diag::Code;

pub const CODE: Code = Code::MissingTimeout;

pub fn missing_timeout(flux: &FluxView, waves: bool) -> Vec<Finding> {
    let mut findings = Vec::new();
    for inv in &flux.envs {
        for (id, owner) in inv.kustomizations() {
            let spec = owner.object.get("spec").cloned().unwrap_or(Value::Null);
            if spec.get("timeout").is_some() {
                continue;
            }
            let config = &flux.config;
            let wave = waves && config.wave_of_name(&id.name).is_some();
            // A unit's own Kustomization is generated from the same `waves.spec`.
            let unit = waves
                && !wave
                && id.name.starts_with(&config.waves.unit_name_prefix)
                && owner
                    .path
                    .strip_prefix(&config.apps)
                    .is_some_and(|p| p.starts_with('/'));
            let waits = spec.get("wait").and_then(Value::as_bool) == Some(true);
            let checks = spec
                .get("healthChecks")
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty());
            if !(wave || unit || waits || checks) {
                continue;
            }
            let why = if wave {
                "is a wave"
            } else if unit {
                "is a unit's own Kustomization"
            } else if waits {
                "has wait: true"
            } else {
                "has healthChecks"
            };
            let interval = spec
                .get("interval")
                .and_then(Value::as_str)
                .unwrap_or("its interval");
            let (path, pos) = flux.owner_at(inv, owner, "spec");
            findings.push(
                Finding::new(
                    CODE,
                    path,
                    format!(
                        "Flux Kustomization `{}` {why} but sets no timeout (environment `{}`): Flux then waits as long as the interval ({interval}, minus 30 s in some versions), so one stuck workload holds it and everything that depends on it for most of an interval",
                        flux_name(id),
                        inv.env
                    ),
                    "set spec.timeout to how long a healthy rollout takes (such as `5m`), well below spec.interval",
                )
                .at(pos),
            );
        }
    }
    findings
}
