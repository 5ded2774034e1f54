//! `waves:` drafted from the app tier's Kustomization: what wave 0 waits for (`upstream`),
//! the name prefix and namespace of the wave Kustomizations, the keys of their spec that
//! differ from fluxwave's defaults, and the decryption an environment's patch gives it.
//! `wait` and `timeout` stay fluxwave's: they make each wave a health gate.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::config::Config;
use crate::flux::inventory::Inventory;
use crate::kustomize::object::ObjectId;
use crate::pointer::Pointer;
use crate::yaml;

use super::app_tier::{AppTierFound, Layout};
use super::comment::{comment, shown_id};
use super::{Draft, Found};

/// `wait` and `timeout` make a wave a health gate (the next wave starts once it is Ready,
/// and with `wait: true` Ready means healthy): the defaults stay, whatever the one
/// Kustomization did, and a difference is said.
const GATING: [&str; 2] = ["wait", "timeout"];

/// `waves.upstream`, `waves.namespace`, `waves.spec` and `waves.decryption` from the app
/// tier's Kustomization, written to `out`.
pub(super) fn settings(
    t: &AppTierFound,
    inventories: &[Inventory],
    defaults: &Config,
    out: &mut String,
    d: &mut Draft,
) {
    let (depends_on, what) = waited_for(t);
    let mut w = Waves {
        tier: t,
        defaults,
        what,
        out,
        d,
    };
    w.upstream(&depends_on);
    w.name_prefix();
    w.namespace();
    let written = t
        .written
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    w.spec(&SpecDraft::of(&written, &defaults.waves.spec));
    // Decryption an environment's patch gives the Kustomization.
    if !written.contains_key("decryption") {
        w.decryption(patched_decryption(inventories, &t.owner.id));
    }
}

/// What the tier waits for, and what says so: the one Kustomization's dependsOn, wave 0's,
/// or under units what the units' Kustomizations wait for besides one another.
fn waited_for<'a>(t: &'a AppTierFound) -> (Vec<&'a ObjectId>, String) {
    let k = t.owner;
    match &t.layout {
        Layout::Units { members, .. } => {
            let ids: BTreeSet<&ObjectId> = members.iter().map(|m| &m.id).collect();
            let outside: BTreeSet<&ObjectId> = members
                .iter()
                .flat_map(|m| m.depends_on.iter())
                .filter(|d| !ids.contains(d))
                .collect();
            (
                outside.into_iter().collect(),
                format!("the unit Kustomizations of {}", t.dir),
            )
        }
        _ => (
            k.depends_on.iter().collect(),
            format!("{} in {}", shown_id(&k.id), k.file),
        ),
    }
}

/// `names` as a YAML flow list: `[]`, or `[a, b]`.
fn flow_list(names: &[String]) -> String {
    if names.is_empty() {
        return "[]".to_string();
    }
    format!(
        "[{}]",
        names
            .iter()
            .map(|u| yaml::scalar(&json!(u)))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The wave Kustomizations' spec drafted from the one the app tier's Kustomization has.
#[derive(Debug, PartialEq)]
struct SpecDraft {
    /// Each key as written that differs from the default, and `null` for a default the
    /// Kustomization does without (neither `path`, `dependsOn` nor a `GATING` key).
    spec: Map<String, Value>,
    /// The defaults set to `null`.
    dropped: Vec<String>,
    /// The `GATING` keys it sets otherwise than the default, as `key: default`.
    gates_kept: Vec<String>,
}

impl SpecDraft {
    /// The draft of `written` (the Kustomization's spec) against `defaults` (the waves').
    fn of(written: &Map<String, Value>, defaults: &Map<String, Value>) -> SpecDraft {
        let mut spec = Map::new();
        for (key, value) in written {
            if matches!(key.as_str(), "path" | "dependsOn") || GATING.contains(&key.as_str()) {
                continue;
            }
            if defaults.get(key) != Some(value) {
                spec.insert(key.clone(), value.clone());
            }
        }
        let mut dropped = Vec::new();
        for key in defaults.keys() {
            if !written.contains_key(key) && !GATING.contains(&key.as_str()) {
                spec.insert(key.clone(), Value::Null);
                dropped.push(key.clone());
            }
        }
        let gates_kept = GATING
            .iter()
            .filter(|key| written.get(**key) != defaults.get(**key))
            .filter_map(|key| {
                let default = defaults.get(*key)?;
                Some(format!("{key}: {}", yaml::scalar(default)))
            })
            .collect();
        SpecDraft {
            spec,
            dropped,
            gates_kept,
        }
    }
}

/// The decryption an environment's patch gives the Kustomization `id`, in the first build
/// that has one: (environment, its folder, `spec.decryption`).
fn patched_decryption(inventories: &[Inventory], id: &ObjectId) -> Option<(String, String, Value)> {
    inventories.iter().find_map(|inv| {
        let built = inv.owners.get(id)?;
        let dec = built.object.at_pointer("/spec/decryption")?.clone();
        Some((inv.env.clone(), inv.env_path.clone(), dec))
    })
}

/// The settings being written, and what they are read from.
struct Waves<'a> {
    tier: &'a AppTierFound<'a>,
    defaults: &'a Config,
    /// What the settings come from, for comments and findings: the Kustomization and its
    /// file, or the unit Kustomizations of the tier.
    what: String,
    out: &'a mut String,
    d: &'a mut Draft,
}

impl Waves<'_> {
    /// `waves.upstream`: the names of `depends_on`, with a note when one is of another
    /// namespace than the tier's Kustomization.
    fn upstream(&mut self, depends_on: &[&ObjectId]) {
        let k = self.tier.owner;
        let what = &self.what;
        let upstream: Vec<String> = depends_on.iter().map(|o| o.name.clone()).collect();
        let cross: Vec<String> = depends_on
            .iter()
            .copied()
            .filter(|o| o.namespace != k.id.namespace)
            .map(shown_id)
            .collect();
        let list = flow_list(&upstream);
        let first = if matches!(self.tier.layout, Layout::Units { .. }) {
            "a unit without dependencies"
        } else {
            "wave 0"
        };
        self.out.push_str(&format!(
            "{}  upstream: {list}\n",
            comment(
                "  ",
                &format!("What {first} waits for: the dependsOn of {what}.")
            )
        ));
        self.d.found.push(Found {
            setting: "waves.upstream".into(),
            value: list,
            why: format!("the dependsOn of {what}"),
        });
        if !cross.is_empty() {
            self.d.notes.push(format!("waves.upstream names Kustomizations of another namespace ({}); the waves depend on them in waves.namespace: check the names", cross.join(", ")));
        }
    }

    /// `waves.namePrefix` or `waves.unitNamePrefix`, for a tier split already under names
    /// that are not the default's.
    fn name_prefix(&mut self) {
        let k = self.tier.owner;
        let waves = &self.defaults.waves;
        let prefix = match &self.tier.layout {
            Layout::Flat => None,
            Layout::Waves { prefix } => Some(("namePrefix", prefix, &waves.name_prefix)),
            Layout::Units { prefix, .. } => {
                Some(("unitNamePrefix", prefix, &waves.unit_name_prefix))
            }
        };
        let Some((key, prefix, default)) = prefix.filter(|(_, p, d)| p != d) else {
            return;
        };
        let why = format!("the name of {} in {}", shown_id(&k.id), k.file);
        self.out.push_str(&format!(
            "{}  {key}: {}\n",
            comment("  ", &format!("From {why}.")),
            yaml::scalar(&json!(prefix))
        ));
        self.d.found.push(Found {
            setting: format!("waves.{key}"),
            value: prefix.clone(),
            why: format!("{why} (the default is {default})"),
        });
    }

    /// `waves.namespace`, when the tier's Kustomization is in another than the default.
    fn namespace(&mut self) {
        let what = &self.what;
        let namespace = Some(self.tier.owner.id.namespace.as_str()).filter(|n| !n.is_empty());
        let Some(ns) = namespace.filter(|n| *n != self.defaults.waves.namespace) else {
            return;
        };
        self.out.push_str(&format!(
            "{}  namespace: {}\n",
            comment("  ", &format!("The namespace of {what}.")),
            yaml::scalar(&json!(ns))
        ));
        self.d.found.push(Found {
            setting: "waves.namespace".into(),
            value: ns.to_string(),
            why: format!("the namespace of {what}"),
        });
    }

    /// `waves.spec` as `draft` has it, and a note for the gates kept.
    fn spec(&mut self, draft: &SpecDraft) {
        let what = &self.what;
        if !draft.gates_kept.is_empty() {
            self.d.notes.push(format!(
                "waves.spec: {} kept as fluxwave's default, unlike {what}: they make each wave a health gate, so the next wave starts once it is healthy (set them in waves.spec to have the waves do as {what} did)",
                draft.gates_kept.join(", ")
            ));
        }
        if draft.spec.is_empty() {
            return;
        }
        let mut said = format!("The spec of {what} where it differs from fluxwave's defaults");
        if !draft.dropped.is_empty() {
            said.push_str(&format!(
                "; `null` leaves out a default it does not set ({})",
                draft.dropped.join(", ")
            ));
        }
        said.push('.');
        self.out.push_str(&comment("  ", &said));
        self.out.push_str("  spec:\n");
        indented(self.out, &Value::Object(draft.spec.clone()));
        let keys: Vec<&str> = draft.spec.keys().map(String::as_str).collect();
        self.d.found.push(Found {
            setting: "waves.spec".into(),
            value: keys.join(", "),
            why: format!("the spec of {what}"),
        });
    }

    /// `waves.decryption`: what an environment patches onto the tier's Kustomization
    /// (`patched`) when it is not the default; `null` when no environment decrypts it, as a
    /// default SOPS patch would name a Secret the cluster may not have, and
    /// kustomize-controller fails a Kustomization whose decryption Secret it cannot read.
    fn decryption(&mut self, patched: Option<(String, String, Value)>) {
        let id = &self.tier.owner.id;
        let Some((env, env_path, dec)) = patched else {
            let why = format!("no environment gives {} spec.decryption", shown_id(id));
            self.out.push_str(&format!(
                "{}  decryption: null\n",
                comment(
                    "  ",
                    &format!("No decryption patch on the waves: {why}. Set the provider and its Secret here once the app tier holds SOPS files.")
                )
            ));
            self.d.found.push(Found {
                setting: "waves.decryption".into(),
                value: "null".into(),
                why,
            });
            return;
        };
        if dec == self.defaults.waves.decryption || !dec.is_object() {
            return;
        }
        self.out.push_str(&format!(
            "{}  decryption:\n",
            comment(
                "  ",
                &format!(
                    "The decryption environment `{env}` ({env_path}) patches onto {}.",
                    shown_id(id)
                )
            )
        ));
        indented(self.out, &dec);
        self.d.found.push(Found {
            setting: "waves.decryption".into(),
            value: serde_json::to_string(&dec).unwrap_or_default(),
            why: format!("the patch of environment `{env}` ({env_path})"),
        });
    }
}

/// `value` as YAML under a key at two spaces' indent.
fn indented(out: &mut String, value: &Value) {
    for line in yaml::emit(value).lines() {
        out.push_str("    ");
        out.push_str(line);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::init::app_tier;
    use crate::init::fixture::{built, config_map, kustomization};

    fn object(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn the_spec_keeps_what_differs_and_nulls_the_defaults_it_does_without() {
        let defaults = object(json!({
            "interval": "10m", "prune": true, "wait": true, "timeout": "5m",
            "postBuild": {"substituteFrom": []},
        }));
        let written = object(json!({
            "interval": "1h", "prune": true, "path": "./apps", "dependsOn": [{"name": "x"}],
            "wait": false, "force": true,
        }));
        let draft = SpecDraft::of(&written, &defaults);
        assert_eq!(
            Value::Object(draft.spec),
            json!({"interval": "1h", "force": true, "postBuild": null})
        );
        assert_eq!(draft.dropped, ["postBuild"]);
        // The gates stay fluxwave's, whatever the Kustomization did: said, never written.
        assert_eq!(draft.gates_kept, ["wait: true", "timeout: 5m"]);
    }

    #[test]
    fn a_spec_as_the_defaults_drafts_nothing() {
        let defaults = object(json!({"interval": "10m", "wait": true, "timeout": "5m"}));
        let draft = SpecDraft::of(&defaults.clone(), &defaults);
        assert_eq!(
            draft,
            SpecDraft {
                spec: Map::new(),
                dropped: vec![],
                gates_kept: vec![],
            }
        );
    }

    #[test]
    fn upstream_is_a_flow_list() {
        assert_eq!(flow_list(&[]), "[]");
        assert_eq!(
            flow_list(&["platform".into(), "infra".into()]),
            "[platform, infra]"
        );
    }

    /// The waves settings of a tier whose `apps` Kustomization is `apps` (with `extra`
    /// lines of spec), with `env_patch` in the environment's kustomization.
    fn drafted(depends_on: &[&str], extra: &str, env_patch: &str) -> (String, Draft) {
        let env = format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- flux-system\n- apps.yaml\n{env_patch}"
        );
        let apps = kustomization("apps", "flux-system", "apps", depends_on, extra);
        let files = [
            ("clusters/prod/kustomization.yaml", env.as_str()),
            ("clusters/prod/apps.yaml", &apps),
            ("apps/a.yaml", &config_map("a")),
        ];
        let (tree, envs, inventories) = built(&files);
        let t = app_tier::find(&tree, &envs, &inventories, &mut Vec::new()).unwrap();
        let (mut out, mut d) = (String::new(), Draft::default());
        settings(&t, &inventories, &Config::default(), &mut out, &mut d);
        (out, d)
    }

    #[test]
    fn upstream_is_the_dependson_and_another_namespace_is_said() {
        let (out, d) = drafted(&["infra", "platform/db"], "", "");
        assert!(out.contains("  upstream: [infra, db]\n"), "{out}");
        assert!(
            out.contains("# What wave 0 waits for: the dependsOn of flux-system/apps in"),
            "{out}"
        );
        assert!(
            d.notes.iter().any(|n| n.starts_with(
                "waves.upstream names Kustomizations of another namespace (platform/db)"
            )),
            "{:?}",
            d.notes
        );
    }

    #[test]
    fn without_an_environment_that_decrypts_the_waves_decrypt_nothing() {
        let (out, d) = drafted(&[], "", "");
        assert!(out.contains("  upstream: []\n"), "{out}");
        assert!(out.ends_with("  decryption: null\n"), "{out}");
        let found = d.found.iter().find(|f| f.setting == "waves.decryption");
        assert_eq!(found.map(|f| f.value.as_str()), Some("null"));
        // The gates the fixture does without are said.
        assert!(
            d.notes
                .iter()
                .any(|n| n.starts_with("waves.spec: wait: true, timeout: 5m kept")),
            "{:?}",
            d.notes
        );
    }

    #[test]
    fn the_decryption_an_environment_patches_on_is_the_waves() {
        let patch = "patches:\n- target:\n    kind: Kustomization\n    name: apps\n  patch: |\n    - op: add\n      path: /spec/decryption\n      value: {provider: sops, secretRef: {name: sops-gpg}}\n";
        let (out, d) = drafted(&[], "", patch);
        assert!(
            out.ends_with(
                "  decryption:\n    provider: sops\n    secretRef:\n      name: sops-gpg\n"
            ),
            "{out}"
        );
        assert!(out.contains("environment `prod` (clusters/prod)"), "{out}");
        let found = d.found.iter().find(|f| f.setting == "waves.decryption");
        assert_eq!(
            found.map(|f| f.value.as_str()),
            Some(r#"{"provider":"sops","secretRef":{"name":"sops-gpg"}}"#)
        );
        // Written in the Kustomization itself, it is part of the spec instead.
        let (out, _) = drafted(&[], "  decryption:\n    provider: sops\n", patch);
        assert!(!out.contains("  decryption:\n    provider"), "{out}");
        assert!(
            out.contains("    decryption:\n      provider: sops\n"),
            "{out}"
        );
    }

    #[test]
    fn another_namespace_than_the_default_is_written() {
        let apps = kustomization("apps", "apps-system", "apps", &[], "");
        let files = [
            (
                "clusters/prod/kustomization.yaml",
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- flux-system\n- apps.yaml\n",
            ),
            ("clusters/prod/apps.yaml", apps.as_str()),
            ("apps/a.yaml", &config_map("a")),
        ];
        let (tree, envs, inventories) = built(&files);
        let t = app_tier::find(&tree, &envs, &inventories, &mut Vec::new()).unwrap();
        let (mut out, mut d) = (String::new(), Draft::default());
        settings(&t, &inventories, &Config::default(), &mut out, &mut d);
        assert!(out.contains("  namespace: apps-system\n"), "{out}");
        assert!(d.found.iter().any(|f| f.setting == "waves.namespace"));
    }

    #[test]
    fn units_wait_for_what_their_kustomizations_wait_for_outside_the_tier() {
        let units = format!(
            "{}---\n{}",
            kustomization("apps-a", "flux-system", "apps/a", &["apps-b", "infra"], ""),
            kustomization("apps-b", "flux-system", "apps/b", &["infra", "certs"], "")
        );
        let files = [
            (
                "clusters/prod/kustomization.yaml",
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- flux-system\n- units.yaml\n",
            ),
            ("clusters/prod/units.yaml", units.as_str()),
            ("apps/a/a.yaml", &config_map("a")),
            ("apps/b/b.yaml", &config_map("b")),
        ];
        let (tree, envs, inventories) = built(&files);
        let t = app_tier::find(&tree, &envs, &inventories, &mut Vec::new()).unwrap();
        let (ids, what) = waited_for(&t);
        let names: Vec<&str> = ids.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["certs", "infra"]);
        assert_eq!(what, "the unit Kustomizations of apps");
        let (mut out, mut d) = (String::new(), Draft::default());
        settings(&t, &inventories, &Config::default(), &mut out, &mut d);
        assert!(
            out.contains("What a unit without dependencies waits for"),
            "{out}"
        );
        // The default unit prefix: not written.
        assert!(!out.contains("unitNamePrefix"), "{out}");
    }
}
