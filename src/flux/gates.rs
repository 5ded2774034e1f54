//! The Flux Kustomizations of one environment as built, read as health gates: each one's
//! `dependsOn`, what its readiness waits for, its timeout, and the units whose app-tier files
//! it applies. `blast` (what a failing unit blocks) and `check`'s `dependency-drift` read this
//! one graph, so they never disagree on which Kustomization holds a unit.
//!
//! The rules, from kustomize-controller (`api/v1/kustomization_types.go`,
//! `internal/controller/kustomization_controller.go`, `docs/spec/v1/kustomizations.md`):
//! - A Kustomization with `dependsOn` is reconciled only once every dependency exists, has
//!   `Ready=True` for its current generation and has applied the current source revision
//!   (`checkDependencies`); until then it is itself `Ready=False` (DependencyNotReady), so what
//!   depends on it waits too: blocking is transitive. A dependency's namespace defaults to
//!   the dependant's.
//! - Its readiness covers the health of what it applied only with `wait: true` (every object
//!   it applied, `healthChecks` ignored) or a non-empty `healthChecks` (those objects):
//!   `checkHealth` returns at once when neither is set, so a crashlooping workload in such a
//!   Kustomization leaves it `Ready=True` and blocks nothing.
//! - A Kustomization applied by another one is one of its parent's objects: a parent with
//!   `wait: true` (or listing it in `healthChecks`) is not Ready while the child is not.
//! - `GetTimeout`: `spec.timeout`, else `spec.interval` minus 30 s, and never under 30 s.

use std::collections::HashMap;

use serde_json::Value;

use super::inventory::{flux_id, Inventory, Owner};
use crate::kustomize::object::ObjectId;

/// What a Kustomization's readiness waits for once it has applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waits {
    /// `wait: true`: every object it applied.
    All,
    /// `healthChecks` (without `wait: true`): these objects.
    Listed(Vec<ObjectId>),
    /// Neither: it is Ready once applied.
    Nothing,
}

impl Waits {
    /// Whether a failing `id` among what it applied makes it not Ready.
    pub fn covers(&self, id: &ObjectId) -> bool {
        match self {
            Waits::All => true,
            Waits::Listed(ids) => ids.iter().any(|l| l == id),
            Waits::Nothing => false,
        }
    }

    pub fn gates_anything(&self) -> bool {
        !matches!(self, Waits::Nothing)
    }
}

/// One Flux Kustomization of the build.
#[derive(Debug, Clone)]
pub struct Gate {
    pub id: ObjectId,
    /// Its `dependsOn` entries that the environment has, as indices, sorted; an entry naming
    /// none is `unknown-dependency`'s to report and left out here.
    pub depends_on: Vec<usize>,
    /// The Kustomization whose build applies it (None for the root).
    pub parent: Option<usize>,
    pub waits: Waits,
    /// What kustomize-controller's `GetTimeout` gives it, in milliseconds.
    pub timeout_ms: u64,
    /// The units whose app-tier files it applies, sorted, each with whether its readiness
    /// covers them (some object of the unit is one `waits` covers).
    pub units: Vec<(usize, bool)>,
}

/// Every Flux Kustomization of an environment, sorted by id (namespace, then name).
#[derive(Debug, Clone, Default)]
pub struct Gates {
    pub nodes: Vec<Gate>,
}

impl Gates {
    /// The gates of `inv`; `unit_of` names the unit of a repository file, when it is an
    /// app-tier file of a unit (None for everything else, and always without a catalog).
    pub fn of(inv: &Inventory, unit_of: &dyn Fn(&str) -> Option<usize>) -> Gates {
        let index: HashMap<ObjectId, usize> = inv
            .owners
            .keys()
            .enumerate()
            .map(|(i, id)| (id.clone(), i))
            .collect();
        let mut nodes: Vec<Gate> = inv
            .owners
            .values()
            .map(|o| {
                let mut depends_on: Vec<usize> = o
                    .depends_on
                    .iter()
                    .filter_map(|d| index.get(d).copied())
                    .collect();
                depends_on.sort_unstable();
                depends_on.dedup();
                Gate {
                    id: o.id.clone(),
                    depends_on,
                    parent: o.parent.as_ref().and_then(|p| index.get(p).copied()),
                    waits: waits(o),
                    timeout_ms: timeout_ms(&o.object),
                    units: Vec::new(),
                }
            })
            .collect();
        for (id, e) in inv
            .objects
            .iter()
            .chain(inv.duplicates.iter().map(|(id, e)| (id, e)))
        {
            let Some(unit) = unit_of(&e.file) else {
                continue;
            };
            let Some(&k) = index.get(&*e.owner) else {
                continue;
            };
            let covered = nodes[k].waits.covers(id);
            nodes[k].units.push((unit, covered));
        }
        for n in &mut nodes {
            n.units.sort_unstable();
            // One entry per unit: covered when any of its objects is.
            n.units.dedup_by(|later, first| {
                if later.0 == first.0 {
                    first.1 |= later.1;
                    true
                } else {
                    false
                }
            });
        }
        Gates { nodes }
    }

    /// Whether `child`'s not being Ready makes its parent not Ready (see the module's rules).
    pub fn gates_parent(&self, child: usize) -> Option<usize> {
        let p = self.nodes[child].parent?;
        self.nodes[p]
            .waits
            .covers(&self.nodes[child].id)
            .then_some(p)
    }
}

fn waits(o: &Owner) -> Waits {
    let spec = o.object.get("spec").unwrap_or(&Value::Null);
    if spec.get("wait").and_then(Value::as_bool) == Some(true) {
        return Waits::All;
    }
    let listed: Vec<ObjectId> = spec
        .get("healthChecks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|h| {
            let text = |k: &str| h.get(k).and_then(Value::as_str).unwrap_or("");
            let kind = text("kind");
            let name = text("name");
            if kind.is_empty() || name.is_empty() {
                return None;
            }
            let group = text("apiVersion")
                .rsplit_once('/')
                .map_or("", |(g, _)| g)
                .to_string();
            let mut id = ObjectId {
                group,
                kind: kind.to_string(),
                namespace: text("namespace").to_string(),
                name: name.to_string(),
                // What it waits on is where it applies.
                cluster: o.applies_to.clone(),
            };
            // A Kustomization listed without a namespace is looked up as Flux's own objects
            // are: in the listing Kustomization's namespace.
            if id.kind == "Kustomization" && id.namespace.is_empty() {
                id = ObjectId {
                    cluster: id.cluster,
                    ..flux_id(&o.id.namespace, &id.name)
                };
            }
            Some(id)
        })
        .collect();
    if listed.is_empty() {
        Waits::Nothing
    } else {
        Waits::Listed(listed)
    }
}

/// kustomize-controller's `GetTimeout`: `spec.timeout`, else `spec.interval` minus 30 s;
/// never under 30 s (`api/v1/kustomization_types.go`).
pub fn timeout_ms(object: &Value) -> u64 {
    const FLOOR: u64 = 30_000;
    let spec = object.get("spec").unwrap_or(&Value::Null);
    let field = |k: &str| spec.get(k).and_then(Value::as_str).and_then(parse_duration);
    let ms =
        field("timeout").unwrap_or_else(|| field("interval").unwrap_or(0).saturating_sub(FLOOR));
    ms.max(FLOOR)
}

/// A Go duration as Flux's API accepts it (`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`), in
/// milliseconds (rounded down).
pub fn parse_duration(s: &str) -> Option<u64> {
    let mut rest = s.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..end].parse().ok()?;
        rest = &rest[end..];
        let (unit, len) = if rest.starts_with("ms") {
            (1.0, 2)
        } else if rest.starts_with('s') {
            (1_000.0, 1)
        } else if rest.starts_with('m') {
            (60_000.0, 1)
        } else if rest.starts_with('h') {
            (3_600_000.0, 1)
        } else {
            return None;
        };
        total += number * unit;
        rest = &rest[len..];
    }
    (total.is_finite() && total < 1e15).then_some(total as u64)
}

/// Milliseconds as Go prints a `time.Duration` (`4m30s`, `1h0m0s`, `1.5s`), as Flux's own
/// messages show timeouts.
pub fn go_duration(ms: u64) -> String {
    if ms == 0 {
        return "0s".into();
    }
    if ms < 1_000 {
        return format!("{ms}ms");
    }
    let (h, m, s, frac) = (
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1_000 % 60,
        ms % 1_000,
    );
    let secs = if frac == 0 {
        format!("{s}s")
    } else {
        format!("{s}.{}s", format!("{frac:03}").trim_end_matches('0'))
    };
    if h > 0 {
        format!("{h}h{m}m{secs}")
    } else if m > 0 {
        format!("{m}m{secs}")
    } else {
        secs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_follow_get_timeout() {
        let ks =
            |spec: &str| -> Value { serde_saphyr::from_str(&format!("spec: {spec}\n")).unwrap() };
        assert_eq!(timeout_ms(&ks("{interval: 10m}")), 570_000);
        assert_eq!(timeout_ms(&ks("{interval: 10m, timeout: 5m}")), 300_000);
        assert_eq!(timeout_ms(&ks("{interval: 40s}")), 30_000);
        assert_eq!(timeout_ms(&ks("{interval: 1h, timeout: 10s}")), 30_000);
        assert_eq!(timeout_ms(&ks("{}")), 30_000);
        assert_eq!(parse_duration("1h30m"), Some(5_400_000));
        assert_eq!(parse_duration("1.5s"), Some(1_500));
        assert_eq!(parse_duration("250ms"), Some(250));
        assert_eq!(parse_duration("5 m"), None);
        assert_eq!(parse_duration("5d"), None);
        assert_eq!(go_duration(570_000), "9m30s");
        assert_eq!(go_duration(3_600_000), "1h0m0s");
        assert_eq!(go_duration(1_500), "1.5s");
        assert_eq!(go_duration(30_000), "30s");
    }
}
