//! `init --catalog`: one dependency-only ServiceDefinition per unit of the app tier (see
//! `units`), or, without a flat app tier, per Flux Kustomization written in a per-app
//! `ks.yaml`. `<svc>-db` beside `<svc>` is its database. Dependencies are the `dependsOn`
//! between the units' own Kustomizations, where they have them; else none, for the user to
//! fill in.

use std::collections::BTreeMap;

use crate::config::{self, is_dns_label};
use crate::flux::discover::Environment;
use crate::flux::inventory::{Inventory, Owner};
use crate::kustomize::object::ObjectId;

use super::app_tier::AppTierFound;
use super::comment::{comment, one_line, shown_id};
use super::DraftService;

/// Each unit to draft: what it was drafted from, and its Kustomization if it has one of its
/// own.
type Drafted<'a> = BTreeMap<String, (String, Option<&'a Owner>)>;

/// One dependency-only ServiceDefinition per unit (see the module's rules).
pub(super) fn draft_catalog(
    envs: &[Environment],
    catalog_dir: &str,
    tier: Option<&AppTierFound>,
    units: &BTreeMap<String, Vec<String>>,
    inventories: &[Inventory],
) -> Vec<DraftService> {
    let drafted = drafted(envs, tier, units, inventories);
    let mut out = Vec::new();
    for (unit, (from, own)) in &drafted {
        // `<svc>-db` beside `<svc>` is its database: a dependency, not a definition.
        if let Some(svc) = unit.strip_suffix("-db") {
            if drafted.contains_key(svc) && tier.is_some() {
                continue;
            }
        }
        let (deps, left_out) = dependencies(&drafted, unit, *own, tier.is_some());
        let wave = tier.and_then(|t| wave_of(&t.dir, from));
        let text = service_text(unit, from, own.is_some(), &deps, &left_out, wave);
        let why = if deps.is_empty() {
            format!("{from}; no dependencies")
        } else {
            format!(
                "{from}; depends on {}",
                deps.iter()
                    .map(|(d, _)| d.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        out.push(DraftService {
            name: unit.clone(),
            file: format!("{catalog_dir}/{unit}.yaml"),
            text,
            why,
        });
    }
    out
}

/// The units to draft: those of the app tier, each with the Kustomization of its folder if
/// there is one; without an app tier, the Kustomizations written in a `ks.yaml` outside the
/// environments' own folders (those apply the apps; they are not apps themselves).
fn drafted<'a>(
    envs: &[Environment],
    tier: Option<&AppTierFound>,
    units: &BTreeMap<String, Vec<String>>,
    inventories: &'a [Inventory],
) -> Drafted<'a> {
    // Every Flux Kustomization, by id, the first build's.
    let mut owners: BTreeMap<&ObjectId, &Owner> = BTreeMap::new();
    for inv in inventories {
        for (id, o) in inv.kustomizations() {
            owners.entry(id).or_insert(o);
        }
    }
    let mut drafted = Drafted::new();
    if let Some(t) = tier {
        for (unit, files) in units {
            let own = owners
                .values()
                .find(|o| o.path == format!("{}/{unit}", t.dir))
                .copied();
            drafted.insert(unit.clone(), (files.join(", "), own));
        }
        return drafted;
    }
    for o in owners.values() {
        let file_name = o.file.rsplit('/').next().unwrap_or("");
        let in_env = envs
            .iter()
            .any(|e| o.file.starts_with(&format!("{}/", e.path)));
        if o.parent.is_none() || in_env || !matches!(file_name, "ks.yaml" | "ks.yml") {
            continue;
        }
        if !is_dns_label(&o.id.name) || drafted.contains_key(&o.id.name) {
            continue;
        }
        drafted.insert(
            o.id.name.clone(),
            (
                format!("Flux Kustomization {} in {}", shown_id(&o.id), o.file),
                Some(*o),
            ),
        );
    }
    drafted
}

/// The dependencies of `unit` (whose Kustomization is `own`), each with why: the `dependsOn`
/// of its Kustomization that are other units', and in an app tier (`in_tier`) its database
/// `<unit>-db`; and the `dependsOn` left out, on no unit.
fn dependencies(
    drafted: &Drafted,
    unit: &str,
    own: Option<&Owner>,
    in_tier: bool,
) -> (Vec<(String, String)>, Vec<String>) {
    let unit_of = |id: &ObjectId| -> Option<String> {
        drafted
            .iter()
            .find(|(_, (_, o))| o.is_some_and(|o| &o.id == id))
            .map(|(u, _)| u.clone())
    };
    let mut deps: Vec<(String, String)> = Vec::new();
    let mut left_out: Vec<String> = Vec::new();
    if let Some(o) = own {
        for dep in &o.depends_on {
            match unit_of(dep) {
                Some(u) if u != unit => deps.push((
                    u,
                    format!("dependsOn {} of {}", shown_id(dep), shown_id(&o.id)),
                )),
                _ => left_out.push(shown_id(dep)),
            }
        }
    }
    let db = format!("{unit}-db");
    if in_tier && drafted.contains_key(&db) && !deps.iter().any(|(d, _)| *d == db) {
        let files = drafted.get(&db).map(|(f, _)| f.clone()).unwrap_or_default();
        deps.push((db.clone(), format!("its database: {files}")));
    }
    (deps, left_out)
}

/// The wave above 0 that `from` (a unit's files) is in, in a tier at `dir` that fluxwave
/// split into waves (`<dir>/wave-<N>/...`).
fn wave_of(dir: &str, from: &str) -> Option<usize> {
    from.strip_prefix(&format!("{dir}/wave-"))
        .and_then(|rest| rest.split('/').next())
        .and_then(config::wave_number)
        .filter(|n| *n > 0)
}

/// The ServiceDefinition of `unit`, drafted from `from`: comments that say what it was
/// drafted from and what to add (no dependency, while it is in `wave` above 0 today, moves
/// it to wave 0), the `dependsOn` left out, then the definition with `deps`.
fn service_text(
    unit: &str,
    from: &str,
    has_own: bool,
    deps: &[(String, String)],
    left_out: &[String],
    wave: Option<usize>,
) -> String {
    let mut text = comment(
        "",
        &format!("Drafted by `fluxwave init --catalog` from {from}."),
    );
    if deps.is_empty() && left_out.is_empty() {
        let none = if has_own {
            "Its Kustomization has no dependsOn"
        } else {
            "No dependsOn to read"
        };
        text.push_str(&comment("", &format!("{none}: add what must be healthy before `{unit}` starts (`- to: <service>`); it sets the unit's wave.")));
        // A unit in wave N > 0 of a tier fluxwave split waited for something below it.
        if let Some(n) = wave {
            text.push_str(&comment("", &format!("It is in wave {n} today, so it waits for something of the waves below: without a dependency, apply moves it to wave 0.")));
        }
    }
    if !left_out.is_empty() {
        text.push_str(&comment("", &format!(
            "Left out: dependsOn {} (not a unit of the app tier; waves.upstream orders the waves after the platform).",
            left_out.join(", ")
        )));
    }
    text.push_str(&format!(
        "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: {unit}\nspec:\n"
    ));
    if deps.is_empty() {
        text.push_str("  dependencies: []\n");
    } else {
        text.push_str("  dependencies:\n");
        for (to, why) in deps {
            text.push_str(&format!("    - to: {to}    # {}\n", one_line(why)));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::init::fixture::{built, kustomization};

    #[test]
    fn a_unit_in_a_wave_folder_above_0_is_in_that_wave() {
        assert_eq!(
            wave_of("apps", "apps/wave-2/sonarr.yaml, apps/wave-2/x.yaml"),
            Some(2)
        );
        assert_eq!(wave_of("apps", "apps/wave-0/sonarr.yaml"), None);
        assert_eq!(wave_of("apps", "apps/sonarr.yaml"), None);
        assert_eq!(wave_of("apps", "other/wave-3/sonarr.yaml"), None);
    }

    #[test]
    fn a_unit_without_dependencies_is_told_what_to_add() {
        let text = service_text(
            "sonarr",
            "apps/wave-2/sonarr.yaml",
            false,
            &[],
            &[],
            Some(2),
        );
        assert!(
            text.contains("# No dependsOn to read: add what must be healthy before `sonarr`"),
            "{text}"
        );
        assert!(text.contains("# It is in wave 2 today"), "{text}");
        assert!(
            text.ends_with(
                "kind: ServiceDefinition\nmetadata:\n  name: sonarr\nspec:\n  dependencies: []\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_units_dependencies_each_say_why() {
        let deps = [(
            "sonarr-db".to_string(),
            "its database: apps/sonarr-db.yaml".to_string(),
        )];
        let left_out = ["flux-system/infra".to_string()];
        let text = service_text(
            "sonarr",
            "apps/sonarr.yaml",
            true,
            &deps,
            &left_out,
            Some(2),
        );
        assert!(!text.contains("add what must be healthy"), "{text}");
        assert!(!text.contains("wave 2"), "{text}");
        assert!(
            text.contains("# Left out: dependsOn flux-system/infra (not a unit"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "  dependencies:\n    - to: sonarr-db    # its database: apps/sonarr-db.yaml\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn without_a_flat_tier_each_ks_yaml_kustomization_is_a_unit() {
        let apps = kustomization("apps", "flux-system", "apps", &[], "");
        let sonarr = kustomization(
            "sonarr",
            "flux-system",
            "apps/sonarr/app",
            &["radarr", "infra"],
            "",
        );
        let radarr = kustomization("radarr", "flux-system", "apps/radarr/app", &[], "");
        let files = [
            (
                "clusters/prod/kustomization.yaml",
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- flux-system\n- apps.yaml\n",
            ),
            ("clusters/prod/apps.yaml", apps.as_str()),
            (
                "apps/kustomization.yaml",
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- sonarr/ks.yaml\n- radarr/ks.yaml\n",
            ),
            ("apps/sonarr/ks.yaml", &sonarr),
            ("apps/radarr/ks.yaml", &radarr),
        ];
        let (_, envs, inventories) = built(&files);
        let services = draft_catalog(&envs, "catalog", None, &BTreeMap::new(), &inventories);
        let names: Vec<&str> = services.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["radarr", "sonarr"]);
        let sonarr = &services[1];
        assert_eq!(sonarr.file, "catalog/sonarr.yaml");
        assert_eq!(
            sonarr.why,
            "Flux Kustomization flux-system/sonarr in apps/sonarr/ks.yaml; depends on radarr"
        );
        assert!(
            sonarr.text.contains(
                "    - to: radarr    # dependsOn flux-system/radarr of flux-system/sonarr\n"
            ),
            "{}",
            sonarr.text
        );
        assert!(
            sonarr
                .text
                .contains("Left out: dependsOn flux-system/infra"),
            "{}",
            sonarr.text
        );
        assert!(services[0]
            .text
            .contains("Its Kustomization has no dependsOn"));
    }
}
