//! The cutover runbook made specific to one change: which Kustomization to
//! release in a first commit and how to see that the cluster has it, which objects to protect
//! with Flux's per-object opt-out, and the verification commands, all with the real names.
//! Only what the deletions call for is written; a safe change gets no runbook.

use std::collections::{BTreeMap, BTreeSet};

use foldhash::{HashMap, HashMapExt, HashSet};

use serde::Serialize;

use super::rules::{Deletion, Rule};
use crate::flux::inventory::{Inventory, Owner};
// The Flux Operator's opt-out, and its annotation that stops it reconciling a ResourceSet.
use crate::flux::resource_set::{PRUNE as OPERATOR_PRUNE, RECONCILE};
use crate::kustomize::object::ObjectId;

#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub title: String,
    pub lines: Vec<String>,
}

const PRUNE: &str = "kustomize.toolkit.fluxcd.io/prune";

/// The opt-out that protects object `d` deletes from its owner: the Flux Operator's for what
/// a ResourceSet applies (see `flux::resource_set`), else kustomize-controller's.
fn opt_out_key(d: Option<&&Deletion>) -> &'static str {
    if d.is_some_and(|d| crate::flux::resource_set::is(&d.owner_id)) {
        OPERATOR_PRUNE
    } else {
        PRUNE
    }
}

/// `a.b/c` as a jsonpath key: `a\.b/c`.
fn jsonpath_key(key: &str) -> String {
    key.replace('.', "\\.")
}

fn kubectl(id: &ObjectId, verb: &str) -> String {
    if id.namespace.is_empty() {
        format!("kubectl {verb} {}/{}", id.resource(), id.name)
    } else {
        format!(
            "kubectl -n {} {verb} {}/{}",
            id.namespace,
            id.resource(),
            id.name
        )
    }
}

/// `line` with `note` first in its comment (one is started when it has none).
fn noted(line: &str, note: &str) -> String {
    match line.split_once("    # ") {
        Some((command, rest)) => format!("{command}    # {note}; {rest}"),
        None => format!("{line}    # {note}"),
    }
}

/// `line`, a command about objects of `cluster`, with where it is run: for a cluster other
/// than Flux's own, with the kubeconfig a Kustomization's `spec.kubeConfig` names (not the
/// hub's), said last in its comment.
fn in_cluster(line: String, cluster: Option<&str>) -> String {
    let Some(c) = cluster else { return line };
    let note = format!("with the kubeconfig in {c}");
    if line.contains("    # ") {
        format!("{line}; {note}")
    } else {
        format!("{line}    # {note}")
    }
}

/// One command per object, but all Namespaces of a cluster in one command.
fn commands<'a>(ids: impl Iterator<Item = &'a ObjectId>, verb: &str, tail: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut namespaces: BTreeMap<Option<&str>, Vec<&str>> = BTreeMap::new();
    for id in ids {
        if id.kind == "Namespace" && id.group.is_empty() {
            namespaces
                .entry(id.cluster_name())
                .or_default()
                .push(id.name.as_str());
        } else {
            let command = format!("{} {tail}", kubectl(id, verb));
            out.push(in_cluster(
                command.trim_end().to_string(),
                id.cluster_name(),
            ));
        }
    }
    for (cluster, names) in namespaces {
        let command = format!("kubectl {verb} namespace {} {tail}", names.join(" "));
        out.push(in_cluster(command.trim_end().to_string(), cluster));
    }
    out
}

fn ks(id: &ObjectId) -> String {
    format!("-n {} kustomization {}", id.namespace, id.name)
}

/// Whether the runbook protects and backs up `d`: it holds data, or may.
fn at_risk(d: &Deletion) -> bool {
    d.data.holds() || d.data.may()
}

/// The runbook for `deletions` (all environments), given each environment's inventories.
pub fn write(
    deletions: &[Deletion],
    envs: &[(Inventory, Inventory)],
    removed: &[Owner],
    change: &str,
) -> Vec<Section> {
    if deletions.is_empty() {
        return Vec::new();
    }
    let r = Runbook::of(deletions, removed, change);
    let mut out = vec![r.pre_flight()];
    let (first, annotated) = r.releases();
    if !first.is_empty() {
        out.push(Section {
            title: "Preferred: commit 1 releases, nothing is deleted".into(),
            lines: first,
        });
        out.push(r.commit_two(annotated));
    }
    out.extend(r.single_commit());
    out.push(r.verify(envs));
    out.extend(r.helm());
    out.extend(r.intended());
    out
}

/// What the runbook's sections are written from: the deletions, sorted by what each calls
/// for.
struct Runbook<'a> {
    deletions: &'a [Deletion],
    /// The Kustomizations the change removes.
    removed: &'a [Owner],
    /// How the change is named (`A..B`, a revision).
    change: &'a str,
    /// What holds data, and what may (a chart not rendered): the advice treats both alike,
    /// since nothing here rules the second out.
    holding: Vec<&'a Deletion>,
    /// Objects protected one by one: those, and whatever moves (their owner stays); sorted.
    protect: Vec<&'a ObjectId>,
    moves: Vec<&'a Deletion>,
    /// What the change deletes on purpose: it leaves the build, or its identity changes.
    intended: Vec<&'a Deletion>,
    /// The first deletion of each object (an object may be deleted in several environments).
    first_of: HashMap<&'a ObjectId, &'a Deletion>,
}

impl<'a> Runbook<'a> {
    fn of(deletions: &'a [Deletion], removed: &'a [Owner], change: &'a str) -> Runbook<'a> {
        let mut protect: Vec<&ObjectId> = deletions
            .iter()
            .filter(|d| at_risk(d) || d.rule.is_move())
            .filter(|d| d.rule != Rule::NamespaceDeleted && d.rule != Rule::CrdDeleted)
            .filter(|d| !d.rule.is_helm())
            .map(|d| &d.id)
            .collect();
        protect.sort_unstable();
        protect.dedup();
        let mut first_of: HashMap<&ObjectId, &Deletion> = HashMap::with_capacity(deletions.len());
        for d in deletions {
            first_of.entry(&d.id).or_insert(d);
        }
        Runbook {
            first_of,
            deletions,
            removed,
            change,
            holding: deletions.iter().filter(|d| at_risk(d)).collect(),
            protect,
            moves: deletions.iter().filter(|d| d.rule.is_move()).collect(),
            intended: deletions
                .iter()
                .filter(|d| matches!(d.rule, Rule::LeftBuild | Rule::IdentityChanged))
                .collect(),
        }
    }

    /// Pre-flight: every Kustomization Ready, the AGE of what holds data, and which
    /// namespaces to back up (those that hold data apart from those that may).
    fn pre_flight(&self) -> Section {
        let mut pre = vec![
            "flux get kustomizations    # every Kustomization Ready before you start".to_string(),
        ];
        pre.extend(
            commands(self.holding.iter().map(|d| &d.id), "get", "")
                .into_iter()
                .map(|c| noted(&c, "note the AGE")),
        );
        let namespaces = |holds: bool| -> String {
            let ns: BTreeSet<String> = self
                .holding
                .iter()
                .filter(|d| d.data.holds() == holds)
                .map(|d| {
                    let ns = if d.id.namespace.is_empty() {
                        d.id.name.as_str()
                    } else {
                        d.id.namespace.as_str()
                    };
                    match d.id.cluster_name() {
                        Some(c) => format!("{ns} (cluster {c})"),
                        None => ns.to_string(),
                    }
                })
                .collect();
            ns.into_iter().collect::<Vec<_>>().join(", ")
        };
        let (holds, may) = (namespaces(true), namespaces(false));
        if !holds.is_empty() {
            pre.push(format!(
                "back up what holds data (Velero, Longhorn, a database dump): namespaces {holds}"
            ));
        }
        if !may.is_empty() {
            pre.push(format!(
                "back up what may hold data as well (charts are not rendered, so their volumes cannot be ruled out): namespaces {may}"
            ));
        }
        Section {
            title: "Pre-flight (no changes)".into(),
            lines: pre,
        }
    }

    /// Commit 1, which releases what the change would delete: each removed Kustomization
    /// made to orphan what it applied, and each protected object annotated (unless its
    /// removed owner releases it), with the command that shows the cluster has it; and the
    /// opt-outs the objects were annotated with.
    fn releases(&self) -> (Vec<String>, BTreeSet<&'static str>) {
        let mut first = Vec::new();
        for o in self.removed {
            let file = if o.file.is_empty() {
                "its file".to_string()
            } else {
                o.file.clone()
            };
            // A ResourceSet the operator does not reconcile is let go without deleting
            // anything (flux-operator `uninstall`: `IsDisabled`).
            if o.is_resource_set() {
                first.push(format!(
                    "{file}: add the annotation `{RECONCILE}: disabled` to {} (keep everything else)",
                    o.id
                ));
                first.push(format!(
                    "after it merges: {} -o jsonpath='{{.metadata.annotations.{}}}'    # must print disabled",
                    kubectl(&o.id, "get"),
                    jsonpath_key(RECONCILE)
                ));
                continue;
            }
            let (edit, check, want) = if orphans_by_policy(o) {
                ("deletionPolicy: Orphan", "{.spec.deletionPolicy}", "Orphan")
            } else {
                ("prune: false", "{.spec.prune}", "false")
            };
            first.push(format!(
                "{file}: set `{edit}` on {} (keep everything else)",
                o.id
            ));
            first.push(format!(
                "after it merges: kubectl {} -o jsonpath='{check}'    # must print {want}",
                ks(&o.id).replacen("kustomization", "get kustomization", 1)
            ));
        }
        let first_of = &self.first_of;
        let released: HashSet<&ObjectId> = self
            .deletions
            .iter()
            .filter(|d| d.rule == Rule::OwnerRemoved)
            .map(|d| &d.id)
            .collect();
        let mut annotated = BTreeSet::new();
        for id in &self.protect {
            if released.contains(id) && !self.removed.is_empty() {
                continue; // released with its owner
            }
            let file = first_of
                .get(id)
                .map_or(String::new(), |d| d.file.to_string());
            // A SOPS file's MAC covers its unencrypted values too (unless `mac_only_encrypted`):
            // an annotation added by hand makes Flux's decryption of it fail.
            let how = if first_of.get(id).is_some_and(|d| d.sops) {
                format!(" (a SOPS file: edit it with `sops edit {file}`, which keeps its MAC in step; an edit by hand makes Flux's decryption fail)")
            } else {
                String::new()
            };
            let key = opt_out_key(first_of.get(id));
            annotated.insert(key);
            let place = if key == OPERATOR_PRUNE {
                " (in the template of the ResourceSet that makes it)"
            } else {
                ""
            };
            first.push(format!(
                "{file}: add the annotation `{key}: disabled` to {id}{place}{how}"
            ));
            first.push(in_cluster(format!(
                "after it merges: {} -o jsonpath='{{.metadata.annotations.{}}}'    # must print disabled",
                kubectl(id, "get"),
                jsonpath_key(key)
            ), id.cluster_name()));
        }
        (first, annotated)
    }

    /// Commit 2, the change itself, and a commit 3 that removes the `annotated` opt-outs.
    fn commit_two(&self, annotated: BTreeSet<&str>) -> Section {
        let mut second = vec![format!(
            "merge this change ({}); the old owners release, the new ones adopt by identity",
            self.change
        )];
        if !annotated.is_empty() {
            let keys: Vec<String> = annotated
                .iter()
                .map(|k| format!("`{k}: disabled`"))
                .collect();
            second.push(format!(
                "commit 3, once the new owners hold them: remove the {} annotations again",
                keys.join(" and ")
            ));
        }
        Section {
            title: "Commit 2: this change".into(),
            lines: second,
        }
    }

    /// The single-commit variant: the removed Kustomizations suspended and patched live, the
    /// objects annotated live, then the change; none when there is nothing to do live.
    fn single_commit(&self) -> Option<Section> {
        let change = self.change;
        let mut single = Vec::new();
        for o in self.removed {
            if o.is_resource_set() {
                single.push(format!(
                    "{} {RECONCILE}=disabled",
                    kubectl(&o.id, "annotate")
                ));
                continue;
            }
            single.push(format!(
                "flux suspend kustomization {} -n {}",
                o.id.name, o.id.namespace
            ));
            let patch = if orphans_by_policy(o) {
                r#"'{"spec":{"deletionPolicy":"Orphan"}}'"#
            } else {
                r#"'{"spec":{"prune":false}}'"#
            };
            single.push(format!(
                "kubectl {} --type=merge -p {patch}",
                ks(&o.id).replacen("kustomization", "patch kustomization", 1)
            ));
        }
        let protected: Vec<&ObjectId> = self
            .holding
            .iter()
            .filter(|d| d.rule != Rule::NamespaceDeleted && d.rule != Rule::CrdDeleted)
            .filter(|d| !d.rule.is_helm())
            .chain(self.moves.iter().filter(|d| !at_risk(d)))
            .map(|d| &d.id)
            .collect();
        // Each with its owner's opt-out.
        let first_of = &self.first_of;
        let by_key = |key: &str| -> Vec<&ObjectId> {
            protected
                .iter()
                .copied()
                .filter(|id| opt_out_key(first_of.get(id)) == key)
                .collect()
        };
        let keyed = [
            (PRUNE, by_key(PRUNE)),
            (OPERATOR_PRUNE, by_key(OPERATOR_PRUNE)),
        ];
        for (key, ids) in &keyed {
            single.extend(commands(
                ids.iter().copied(),
                "annotate",
                &format!("{key}=disabled"),
            ));
        }
        if single.is_empty() {
            return None;
        }
        // The suspended owners are the removed ones: the change deletes them, and with them
        // their opt-outs. Only annotations on objects stay behind to undo.
        if protected.is_empty() {
            single.push(format!(
                "merge this change ({change}) and verify (below); it removes the suspended Kustomizations, so nothing is left to undo"
            ));
        } else {
            single.push(format!(
                "merge this change ({change}) and verify (below); then remove the opt-outs:"
            ));
            for (key, ids) in &keyed {
                single.extend(commands(
                    ids.iter().copied(),
                    "annotate",
                    &format!("{key}-"),
                ));
            }
        }
        Some(Section {
            title: "Single-commit variant (a live pre-step instead of commit 1)".into(),
            lines: single,
        })
    }

    /// Verify: the Kustomizations the change adds Ready and those it removes absent (over
    /// `envs`, each environment's old and new inventory), what holds data still there, and
    /// one object adopted by its new owner.
    fn verify(&self, envs: &[(Inventory, Inventory)]) -> Section {
        let mut verify = Vec::new();
        let mut new_owners = BTreeSet::new();
        let mut gone = BTreeSet::new();
        for (old, new) in envs {
            new_owners.extend(
                new.kustomizations()
                    .map(|(k, _)| k)
                    .filter(|k| !old.owners.contains_key(*k))
                    .map(|k| k.name.clone()),
            );
            gone.extend(
                old.kustomizations()
                    .map(|(k, _)| k)
                    .filter(|k| !new.owners.contains_key(*k))
                    .map(|k| k.name.clone()),
            );
        }
        let list = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
        verify.push(match (new_owners.is_empty(), gone.is_empty()) {
            (false, false) => format!(
                "flux get kustomizations    # {} Ready; {} absent",
                list(&new_owners),
                list(&gone)
            ),
            (false, true) => format!("flux get kustomizations    # {} Ready", list(&new_owners)),
            (true, false) => format!("flux get kustomizations    # {} absent", list(&gone)),
            (true, true) => "flux get kustomizations    # all Ready".to_string(),
        });
        verify.extend(
            commands(self.holding.iter().map(|d| &d.id), "get", "")
                .into_iter()
                .map(|c| noted(&c, "present, with the AGE noted before")),
        );
        let sample = self
            .deletions
            .iter()
            .filter(|d| d.new_owner.is_some())
            .find(|d| d.id.kind == "Deployment")
            .or_else(|| self.deletions.iter().find(|d| d.new_owner.is_some()));
        if let Some(d) = sample {
            verify.push(in_cluster(format!(
                "{} -o jsonpath='{{.metadata.labels.kustomize\\.toolkit\\.fluxcd\\.io/name}}'    # {}",
                kubectl(&d.id, "get"),
                d.new_owner.as_ref().map_or("", |o| o.name.as_str())
            ), d.id.cluster_name()));
        }
        Section {
            title: "Verify".into(),
            lines: verify,
        }
    }

    /// Helm's own deletions at risk, which Flux's opt-out does not reach; none without any.
    fn helm(&self) -> Option<Section> {
        let mut helm = Vec::new();
        for d in self
            .deletions
            .iter()
            .filter(|d| d.rule.is_helm() && at_risk(d))
        {
            match d.rule {
                Rule::ReleaseUpgraded => helm.push(in_cluster(format!(
                    "{} helm.sh/resource-policy=keep    # before the merge: Helm's upgrade leaves an object so annotated in the cluster",
                    kubectl(&d.id, "annotate")
                ), d.id.cluster_name())),
                _ => helm.push(format!(
                    "{}: its release is uninstalled and installed anew, and an annotation on the live object does not stop an uninstall (Helm reads the release's own manifest): back it up, or keep the release's name, namespace and chart (spec.releaseName, spec.targetNamespace, spec.storageNamespace) in this change",
                    d.id
                )),
            }
        }
        (!helm.is_empty()).then(|| Section {
            title: "Deleted by Helm inside a HelmRelease that stays".into(),
            lines: helm,
        })
    }

    /// What the change deletes on purpose, and how to keep it; none without any.
    fn intended(&self) -> Option<Section> {
        (!self.intended.is_empty()).then(|| Section {
            title: "Deleted because the change asks for it".into(),
            lines: self
                .intended
                .iter()
                .map(|d| format!("{}: {} — keep it in a build, or add `{}: disabled` first, if it must survive", d.id, d.rule.code(), opt_out_key(Some(d))))
                .collect(),
        })
    }
}

/// Whether the removed Kustomization `o` is made to orphan by its `deletionPolicy` (which
/// overrides `prune` when it is `Delete` or `WaitForTermination`) rather than by `prune`.
fn orphans_by_policy(o: &Owner) -> bool {
    o.deletion_policy == "Delete" || o.deletion_policy == "WaitForTermination"
}
