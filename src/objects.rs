//! The objects an environment's Flux Kustomizations apply, whole and with their Secret values
//! masked (`build`), and what changes in them between two builds of one environment
//! (`diff`). An object is matched across the builds by its id; one whose owner changes is
//! one object that moves, not one removed and one added, as Flux sees it (the newer owner
//! adopts it; whether the older prunes it first is cutover's verdict).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::flux::inventory::Inventory;
use crate::flux::release::Release;
use crate::flux::substitute::Source;
use crate::kustomize::object::{is_sops, ObjectId};

/// One object as its owner applies it.
#[derive(Debug, Clone)]
pub struct Built {
    pub environment: String,
    /// The Flux Kustomization that applies it.
    pub owner: ObjectId,
    pub id: ObjectId,
    /// The file it is written in (a generator's kustomization for what a generator makes).
    pub file: String,
    /// The object, its Secret values masked (`redact::mask_object`).
    pub object: Value,
    /// The object as built, unmasked: compared, never printed.
    raw: Value,
    /// Whether masking changed it.
    pub masked: bool,
    /// The HelmRelease whose chart renders it, for an object of a rendered release.
    pub release: Option<ObjectId>,
}

impl Built {
    pub fn api_version(&self) -> &str {
        self.object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The object as block YAML (masked), a string of several lines as a literal block.
    pub fn yaml(&self) -> String {
        crate::yaml::emit_for_reading(&self.object)
    }
}

/// Every object the Flux Kustomizations of `inv` (built with `inventory::build_whole`) apply,
/// the Flux Kustomizations they apply included, sorted by owner and id. An object two owners
/// apply is listed under each: Flux applies it twice.
pub fn of(inv: &Inventory) -> Vec<Built> {
    let mut out = Vec::with_capacity(inv.objects.len() + inv.owners.len());
    let substituted = substituted_secrets(inv);
    let built = |owner: &ObjectId, id: &ObjectId, file: &str, raw: &Value| {
        let mut object = raw.clone();
        // kustomize-controller decrypts a SOPS-encrypted object and applies it without its
        // `sops` block; its values, ciphertext here, are masked all the same.
        let sops = is_sops(raw);
        if let (true, Value::Object(map)) = (sops, &mut object) {
            map.remove("sops");
        }
        // Substituted values first: they are masked where they stand, not their whole string.
        let mut masked = substituted
            .get(owner)
            .is_some_and(|values| crate::redact::mask_values(&mut object, values));
        masked |= crate::redact::mask_object(&mut object) || sops;
        Built {
            environment: inv.env.clone(),
            owner: owner.clone(),
            id: id.clone(),
            file: file.to_string(),
            object,
            raw: raw.clone(),
            masked,
            release: None,
        }
    };
    for (id, o) in &inv.owners {
        if let Some(parent) = &o.parent {
            out.push(built(parent, id, &o.file, &o.object));
        }
    }
    let entries = inv
        .objects
        .iter()
        .chain(inv.duplicates.iter().map(|(id, e)| (id, e)));
    for (id, e) in entries {
        // Every entry of a `build_whole` inventory holds its object.
        if let Some(whole) = &e.whole {
            out.push(built(&e.owner, id, &e.file, whole));
        }
        // What its chart renders, under the HelmRelease, as its owner applies the release.
        if let Some(r) = e.release.as_deref().and_then(Release::rendered) {
            for o in &r.objects {
                let file = format!(
                    "{} (HelmRelease {}/{}, chart {}: {})",
                    e.file, id.namespace, id.name, r.chart, o.template
                );
                let mut b = built(&e.owner, &o.id, &file, &o.value);
                if crate::redact::mask_values(&mut b.object, &r.secret_strings) {
                    b.masked = true;
                }
                b.release = Some(id.clone());
                out.push(b);
            }
        }
    }
    out.sort_by(|a, b| (&a.owner, &a.id).cmp(&(&b.owner, &b.id)));
    out
}

/// The values of the Secrets of `inv` each owner substitutes from (`postBuild.substituteFrom`
/// of kind Secret, decoded), longest first: Flux writes them into the objects it builds.
fn substituted_secrets(inv: &Inventory) -> BTreeMap<ObjectId, Vec<String>> {
    let mut out = BTreeMap::new();
    for (id, o) in &inv.owners {
        let refs = o
            .object
            .pointer("/spec/postBuild/substituteFrom")
            .and_then(Value::as_array);
        let mut values: Vec<String> = Vec::new();
        for r in refs.into_iter().flatten() {
            if r.get("kind").and_then(Value::as_str) != Some("Secret") {
                continue;
            }
            let secret = ObjectId {
                group: String::new(),
                kind: "Secret".into(),
                namespace: id.namespace.clone(),
                name: r.get("name").and_then(Value::as_str).unwrap_or("").into(),
            };
            let whole = inv.objects.get(&secret).and_then(|e| e.whole.as_deref());
            if let Some(Source::Data(data)) = whole.and_then(|w| Source::of(&secret, w)) {
                values.extend(data.into_values().map(|v| v.replace('\n', "")));
            }
        }
        if !values.is_empty() {
            values.sort_by_key(|v| std::cmp::Reverse(v.len()));
            values.dedup();
            out.insert(id.clone(), values);
        }
    }
    out
}

/// How an object changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Added,
    Removed,
    /// Its content or its owner changes.
    Modified,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Added => "added",
            Kind::Removed => "removed",
            Kind::Modified => "modified",
        }
    }
}

/// One object that changes between two builds of an environment.
#[derive(Debug, Clone)]
pub struct Change {
    pub environment: String,
    pub id: ObjectId,
    pub api_version: String,
    pub change: Kind,
    /// Its owner in the newer build (the older, for one removed).
    pub owner: ObjectId,
    /// Its owner in the older build, when that is another (it moves).
    pub previous_owner: Option<ObjectId>,
    /// Its file in the newer build (the older, for one removed).
    pub file: String,
    /// Its file in the older build, when that is another.
    pub previous_file: Option<String>,
    /// The unified diff of its YAML, masked; empty when only its owner changes or only
    /// masked values do.
    pub diff: String,
    /// The keys of `data` / `stringData` of a Secret whose masked values change.
    pub secret_keys: Vec<String>,
    /// For a Flux Kustomization removed: why Flux deletes it, when it does (its objects'
    /// deletions are cutover's, by object).
    pub kustomization_deleted: Option<String>,
}

/// What changes between `old` and `new`, two builds of one environment (`old` empty when the
/// environment is new), in owner and id order.
pub fn diff(old: &Inventory, new: &Inventory) -> Vec<Change> {
    let env = if new.env.is_empty() {
        &old.env
    } else {
        &new.env
    };
    // An object is matched by its id; one two owners apply is compared as its first
    // owner's (the one Flux counts it as).
    let index = |built: Vec<Built>, inv: &Inventory| -> BTreeMap<ObjectId, Built> {
        let mut by_id = BTreeMap::new();
        for b in built {
            let first = inv.objects.get(&b.id).is_none_or(|e| *e.owner == b.owner);
            if first {
                by_id.entry(b.id.clone()).or_insert(b);
            }
        }
        by_id
    };
    let before = index(of(old), old);
    let mut after = index(of(new), new);
    let mut out = Vec::new();
    let change = |b: &Built, kind: Kind| Change {
        environment: env.clone(),
        id: b.id.clone(),
        api_version: b.api_version().to_string(),
        change: kind,
        owner: b.owner.clone(),
        previous_owner: None,
        file: b.file.clone(),
        previous_file: None,
        diff: String::new(),
        secret_keys: Vec::new(),
        kustomization_deleted: None,
    };
    for (id, a) in before {
        let Some(b) = after.remove(&id) else {
            let mut c = change(&a, Kind::Removed);
            if old.owners.contains_key(&id) {
                // The reason names it as its objects' owner: "its owner X is removed (...)".
                c.kustomization_deleted =
                    crate::cutover::rules::kustomization_deleted(old, new, &id)
                        .map(|why| why.strip_prefix("its owner ").unwrap_or(&why).to_string());
            }
            out.push(c);
            continue;
        };
        if a.raw == b.raw && a.owner == b.owner {
            continue;
        }
        let mut c = change(&b, Kind::Modified);
        if a.owner != b.owner {
            c.previous_owner = Some(a.owner.clone());
        }
        if a.file != b.file {
            c.previous_file = Some(a.file.clone());
        }
        let (ya, yb) = (a.yaml(), b.yaml());
        if ya != yb {
            c.diff = crate::unified::unified_diff(&label(&id), &ya, &yb);
        }
        c.secret_keys = changed_secret_keys(&a.raw, &b.raw);
        out.push(c);
    }
    out.extend(after.values().map(|b| change(b, Kind::Added)));
    out.sort_by(|a, b| (&a.owner, &a.id).cmp(&(&b.owner, &b.id)));
    out
}

/// `kind/namespace/name` (`kind/name` for a cluster-scoped object), naming an object's diff.
pub fn label(id: &ObjectId) -> String {
    if id.namespace.is_empty() {
        format!("{}/{}", id.kind, id.name)
    } else {
        format!("{}/{}/{}", id.kind, id.namespace, id.name)
    }
}

/// The keys of `data` and `stringData` whose values differ between two versions of a Secret
/// (`data.password`): what changes where the diff shows only masks.
fn changed_secret_keys(a: &Value, b: &Value) -> Vec<String> {
    let secret = |v: &Value| {
        v.get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k.eq_ignore_ascii_case("secret"))
    };
    if !secret(a) || !secret(b) {
        return Vec::new();
    }
    let mut keys = Vec::new();
    for field in ["data", "stringData"] {
        let (ma, mb) = (a.get(field), b.get(field));
        let empty = serde_json::Map::new();
        let (ma, mb) = (
            ma.and_then(Value::as_object).unwrap_or(&empty),
            mb.and_then(Value::as_object).unwrap_or(&empty),
        );
        for (k, va) in ma {
            if mb.get(k).is_some_and(|vb| vb != va) {
                keys.push(format!("{field}.{k}"));
            }
        }
    }
    keys
}
