//! What Helm deletes inside the HelmReleases that stay, and what of it cannot be judged.
//!
//! helm-controller upgrades a release in place when its chart, version or values change, and
//! uninstalls it before installing a new one when its target changes (`internal/action`
//! `ReleaseTargetChanged`: the storage namespace, the release namespace, the release name
//! after `release.ShortenName`, or the chart's name; `internal/reconcile` `AtomicRelease`
//! then runs `UninstallRemediation`/`Uninstall` on the old release). A target is read from
//! the spec, so a release replaced is seen without rendering; what an upgrade deletes is
//! seen only when both sides are rendered, and is otherwise a gap the verdict names.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use crate::config::Accept;
use crate::flux::data::{self, Data, HELM_GROUP};
use crate::flux::inventory::{Entry, Inventory};
use crate::flux::release::{Object, Release, Rendered};
use crate::kustomize::object::ObjectId;

use super::rules::{suspended, Deletion, Rule};
use super::Incomplete;

/// Suspended in its revision: helm-controller does not touch it until it is resumed.
fn is_suspended(e: &Entry) -> bool {
    e.whole.as_deref().is_some_and(suspended)
}

/// Whether Flux applies HelmRelease entry `e` of `new`: not when its owner's build fails
/// (the cluster keeps the HelmRelease as it was, and helm-controller does nothing new).
fn applied(new: &Inventory, e: &Entry) -> bool {
    new.owners.get(&*e.owner).is_none_or(|o| o.built)
}

/// What Helm deletes inside the HelmReleases that stay (neither side suspended, and applied:
/// `applied`): with both
/// sides rendered, the objects an upgrade no longer renders, or, when the release's target
/// changes, every object of the old release, uninstalled before the new one is installed.
/// When a side is not rendered, a target that surely changes still uninstalls the old
/// release: each of its objects when the old side is rendered, else the HelmRelease itself,
/// judged by its values as a removed one is. Hooks and the chart's `crds/` are not part of a
/// release; `helm.sh/resource-policy: keep` leaves an object in place.
pub(super) fn deletions(env: &Arc<str>, old: &Inventory, new: &Inventory) -> Vec<Deletion> {
    let mut out = Vec::new();
    for (id, e) in old.objects.iter() {
        if !id.is(HELM_GROUP, "HelmRelease") || is_suspended(e) {
            continue;
        }
        let Some(now) = new
            .objects
            .get(id)
            .filter(|n| !is_suspended(n) && applied(new, n))
        else {
            continue;
        };
        let (Some(before), Some(after)) = (e.release.as_deref(), now.release.as_deref()) else {
            continue;
        };
        match (before.rendered(), after.rendered()) {
            (Some(was), Some(is)) => {
                let replaced = was.release_name != is.release_name
                    || was.namespace != is.namespace
                    || was.storage_namespace != is.storage_namespace
                    || chart_name(was) != chart_name(is);
                let reason = if replaced {
                    replaced_reason(id, &was.describe(), &is.describe())
                } else {
                    format!(
                        "{id} renders it no more (chart {} -> {}): Helm's upgrade deletes it",
                        was.chart, is.chart
                    )
                };
                let rule = if replaced {
                    Rule::ReleaseReplaced
                } else {
                    Rule::ReleaseUpgraded
                };
                of_release(env, e, was, Some(is), rule, reason.into(), &mut out);
            }
            _ if before.target.replaced_by(&after.target) == Some(true) => {
                let reason =
                    replaced_reason(id, &before.target.describe(), &after.target.describe());
                match before.rendered() {
                    Some(was) => {
                        let rule = Rule::ReleaseReplaced;
                        of_release(env, e, was, None, rule, reason.into(), &mut out);
                    }
                    None => out.push(uninstalled(env, id, e, before, reason)),
                }
            }
            _ => {}
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// A chart's name, of its `name version`.
fn chart_name(r: &Rendered) -> &str {
    r.chart.split(' ').next().unwrap_or("")
}

fn replaced_reason(id: &ObjectId, was: &str, is: &str) -> String {
    format!(
        "{id} changes its release ({was} -> {is}): helm-controller uninstalls the old release before it installs the new one, and the uninstall deletes it"
    )
}

/// The objects of the old release `was` (of HelmRelease entry `e`) that Helm deletes for
/// `rule`: those `is` (the newer render) no longer installs, or all of them when the release
/// is replaced.
fn of_release(
    env: &Arc<str>,
    e: &Entry,
    was: &Rendered,
    is: Option<&Rendered>,
    rule: Rule,
    reason: Arc<str>,
    out: &mut Vec<Deletion>,
) {
    let replaced = rule == Rule::ReleaseReplaced;
    // What the newer render still installs.
    let still: BTreeSet<&ObjectId> = is
        .iter()
        .flat_map(|r| r.objects.iter())
        .filter(|o| o.in_release())
        .map(|o| &o.id)
        .collect();
    for o in was.objects.iter().filter(|o| o.in_release()) {
        if o.kept() || (!replaced && still.contains(&o.id)) {
            continue;
        }
        let mut reason = reason.clone();
        if replaced && still.contains(&o.id) {
            reason = Arc::from(format!(
                "{reason}; the new release creates it again, as a new object"
            ));
        }
        let judged = rendered_data(was, o, None);
        out.push(Deletion {
            environment: env.clone(),
            id: o.id.clone(),
            stateful: judged.holds(),
            data: judged,
            owner_id: e.owner.clone(),
            new_owner: None,
            rule,
            reason,
            sops: false,
            file: e.file.clone(),
        });
    }
}

/// What object `o` of release `r` holds (`whole`: the object, when its own content is to be
/// judged), its evidence naming the chart and template that render it.
pub(super) fn rendered_data(r: &Rendered, o: &Object, whole: Option<&Value>) -> Data {
    match data::of(&o.id, whole, None, &BTreeMap::new()) {
        Data::Holds(k) => Data::Holds(format!("chart {} renders {}: {k}", r.chart, o.at())),
        other => other,
    }
}

/// The old release of HelmRelease `id` (`e`, not rendered: `before`) uninstalled because its
/// target changes: the HelmRelease stands for what it installed, judged by its values.
fn uninstalled(
    env: &Arc<str>,
    id: &ObjectId,
    e: &Entry,
    before: &Release,
    reason: String,
) -> Deletion {
    let judged = data::of(id, e.whole.as_deref(), Some(before), &BTreeMap::new());
    let why = before.unrendered().unwrap_or("");
    Deletion {
        environment: env.clone(),
        id: id.clone(),
        stateful: judged.holds(),
        data: judged,
        owner_id: e.owner.clone(),
        new_owner: None,
        rule: Rule::ReleaseReplaced,
        reason: Arc::from(format!(
            "{reason}; Helm uninstalls everything the old release installed, which is not rendered ({why}): it is judged by the HelmRelease's values"
        )),
        sops: e.facts.sops,
        file: e.file.clone(),
    }
}

/// The HelmReleases of one environment whose render inputs change between the builds (their
/// values, the chart version their source names, a chart of this repository's files) while
/// a side of them is not rendered (rendering off, no helm, a chart that cannot be had), and
/// that `deletions` does not judge as replaced: what Helm's upgrade deletes inside them is
/// not seen, so each makes the verdict incomplete. One whose release stays the same
/// (`Target::replaced_by` is `Some(false)`) is of the gap `helm-upgrades`, which the base
/// revision's fluxwave.yaml may accept; one whose chart name cannot be read may be an
/// uninstall, and no name accepts it.
pub(super) fn unjudged(env: &str, old: &Inventory, new: &Inventory) -> Vec<Incomplete> {
    let mut out = Vec::new();
    // Only HelmReleases carry a release: the others are passed over without a lookup.
    for (id, e) in new
        .objects
        .iter()
        .filter(|(_, e)| e.release.is_some() && applied(new, e))
    {
        let Some(was) = old.objects.get(id) else {
            continue;
        };
        let (Some(before), Some(after)) = (was.release.as_deref(), e.release.as_deref()) else {
            continue;
        };
        // What the render depends on is the same: the same release is installed.
        if before.inputs == after.inputs {
            continue;
        }
        let Some(why) = before.unrendered().or(after.unrendered()) else {
            continue;
        };
        let replaced = before.target.replaced_by(&after.target);
        let (gap, what) = match replaced {
            // Judged as replaced by `deletions`, unless suspended.
            Some(true) if !is_suspended(was) && !is_suspended(e) => continue,
            Some(false) => (
                Some(Accept::HelmUpgrades),
                "what Helm's upgrade deletes inside the release is not seen".to_string(),
            ),
            _ => (
                None,
                format!(
                    "whether helm-controller upgrades the release or uninstalls it ({} -> {}) is not seen",
                    before.target.describe(),
                    after.target.describe()
                ),
            ),
        };
        out.push(Incomplete {
            environment: env.to_string(),
            kustomization: format!("{}/{}", e.owner.namespace, e.owner.name),
            kind: Incomplete::kind_of(&e.owner),
            file: e.file.to_string(),
            why: vec![format!(
                "{id} changes, and its chart is not rendered ({why}): {what}"
            )],
            gap,
        });
    }
    out
}
