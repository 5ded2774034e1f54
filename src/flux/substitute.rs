//! Flux's `postBuild` variable substitution: the variables a Flux Kustomization sets and
//! what `${VAR}` becomes in the objects it builds. It follows fluxcd/pkg
//! `kustomize/kustomize_varsub.go` (`SubstituteVariables`, `LoadVariables`,
//! `varSubstitution`) as kustomize-controller calls it (`KustomizationReconciler.build`):
//!
//! - only an owner with `spec.postBuild` substitutes, in every object it builds but those
//!   labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled`;
//! - the variables are those of the `substituteFrom` ConfigMaps and Secrets in order, a later
//!   one overriding an earlier one, then the inline `substitute`, which overrides them all;
//!   newlines are taken out of every value. A missing source fails the build unless it is
//!   `optional`;
//! - every variable name must match `^[_[:alpha:]][_[:alpha:][:digit:]]*$`, or the build
//!   fails;
//! - nothing is substituted when there is no variable at all, unless `substituteStrategy`
//!   is `Always`;
//! - strict mode (the `StrictPostBuildSubstitutions` feature gate, on by default since
//!   kustomize-controller v1.9) fails the build on a variable without default that is not
//!   set: the string is left as written, and the inventory marks its owner not built;
//! - Flux substitutes the object's YAML text and parses it back, so a plain scalar that
//!   becomes `true` or `3` is a boolean or a number afterwards.
//!
//! The syntax itself is in `envsubst`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::admission::{Admission, Admitted};
use super::facts::SUBSTITUTE;
use crate::envsubst::{self, Lookup, ParseError, Unresolved};
use crate::kustomize::object::{digest, ObjectId};
use crate::pointer::Pointer;

/// Why Flux's substitution fails a Kustomization's build (and Flux applies nothing of it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubstituteError {
    /// A variable whose name Flux refuses (`varsubRegex`).
    #[error("'{0}' var name is invalid, must match '^[_[:alpha:]][_[:alpha:][:digit:]]*$'")]
    Name(String),
    /// A string Flux's envsubst cannot parse.
    #[error("envsubst error: variable substitution failed: {error}: `{text}`")]
    Parse { error: ParseError, text: String },
}

/// The inline `postBuild.substitute` variables of a Flux Kustomization.
pub fn substitutions(owner: &Value) -> BTreeMap<String, String> {
    crate::flux::string_map_at(owner, "/spec/postBuild/substitute")
}

/// What a `substituteFrom` source holds, as the cluster has it once the repository is
/// applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Its variables: a ConfigMap's `data`, a Secret's `data` (decoded) and `stringData`;
    /// shared by every owner that reads it.
    Data(Arc<BTreeMap<String, String>>),
    /// It cannot be read from the repository (SOPS-encrypted, made in the cluster): why, and
    /// the digest of the object of the build it comes from (the encrypted Secret, the
    /// ExternalSecret that makes it), so that a change of that object is seen; `None` when
    /// no object of the build makes it. `keys` are its keys when the repository says which
    /// they are though not their values (SOPS encrypts values only; an ExternalSecret's
    /// template names the keys it writes): no other variable can come from it. `agreed`
    /// are the values it holds whichever way it is (two owners apply it with these in
    /// common), each key among `keys`.
    Unknown {
        why: String,
        from: Option<[u8; 32]>,
        keys: Option<BTreeSet<String>>,
        agreed: Arc<BTreeMap<String, String>>,
    },
}

/// The kinds of the objects that are a source (`Source::of`) or make one
/// (`Source::made_by`): no object of another kind is either.
pub const SOURCE_KINDS: [&str; 4] = ["ConfigMap", "Secret", "ExternalSecret", "SealedSecret"];

impl Source {
    /// The Secret an object of the build makes in the cluster, with what its variables are:
    /// an `ExternalSecret` (external-secrets.io) makes `spec.target.name`, by default its own
    /// name (external-secrets' API reference, `ExternalSecretTarget.Name`), and a
    /// `SealedSecret` (bitnami.com) its own name. Their values are not in the repository, but
    /// the Secret exists once they are applied, so a Kustomization that reads it builds.
    pub fn made_by(id: &ObjectId, v: &Value) -> Option<(ObjectId, Source)> {
        let name = match (id.group.as_str(), id.kind.as_str()) {
            ("external-secrets.io", "ExternalSecret") => v
                .at_pointer("/spec/target/name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .unwrap_or(&id.name),
            ("bitnami.com", "SealedSecret") => &id.name,
            _ => return None,
        };
        let secret = ObjectId {
            group: String::new(),
            kind: "Secret".into(),
            namespace: id.namespace.clone(),
            name: name.to_string(),
            cluster: None,
        };
        let keys = match id.kind.as_str() {
            "ExternalSecret" => external_secret_keys(v),
            _ => None,
        };
        Some((
            secret,
            Source::Unknown {
                why: format!("made in the cluster by {id}"),
                from: Some(digest(v)),
                keys,
                agreed: Default::default(),
            },
        ))
    }

    /// The source a built ConfigMap or Secret is; `None` for other objects.
    pub fn of(id: &ObjectId, v: &Value) -> Option<Source> {
        if !id.group.is_empty() || !matches!(id.kind.as_str(), "ConfigMap" | "Secret") {
            return None;
        }
        if super::facts::is_sops(v) {
            // SOPS encrypts the values; the keys stay as written.
            let keys = ["data", "stringData"]
                .iter()
                .filter_map(|k| v.get(k).and_then(Value::as_object))
                .flat_map(|m| m.keys().cloned())
                .collect();
            return Some(Source::Unknown {
                why: "SOPS-encrypted".into(),
                from: Some(digest(v)),
                keys: Some(keys),
                agreed: Default::default(),
            });
        }
        let map = |k: &str| v.get(k).and_then(Value::as_object);
        // Generated ones too: the builder makes their data as kustomize does.
        let (data, string_data) = (map("data"), map("stringData"));
        let mut vars = BTreeMap::new();
        let secret = id.kind == "Secret";
        for (k, val) in data.into_iter().flatten() {
            let text = match val {
                Value::String(s) if secret => match crate::base64::decode(s) {
                    Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    None => continue,
                },
                Value::String(s) => s.clone(),
                _ => continue,
            };
            vars.insert(k.clone(), text);
        }
        // The API server merges `stringData` into `data`, `stringData` winning.
        if secret {
            for (k, val) in string_data.into_iter().flatten() {
                if let Some(s) = val.as_str() {
                    vars.insert(k.clone(), s.to_string());
                }
            }
        }
        Some(Source::Data(Arc::new(vars)))
    }

    /// The variables it may set, when they are known.
    pub fn keys(&self) -> Option<BTreeSet<String>> {
        match self {
            Source::Data(vars) => Some(vars.keys().cloned().collect()),
            Source::Unknown { keys, .. } => keys.clone(),
        }
    }

    /// The values it holds whichever way it is.
    fn known(&self) -> &BTreeMap<String, String> {
        match self {
            Source::Data(vars) | Source::Unknown { agreed: vars, .. } => vars,
        }
    }

    /// The source two owners of one build apply under one id, `self` recorded first: when
    /// they differ, the cluster holds whichever applied last (both apply with
    /// kustomize-controller's field manager, so the last one's fields replace the other's),
    /// which is not known before the merge: its keys are one of the two's, and only a value
    /// both hold alike is known.
    pub fn either(&self, other: &Source, why: impl FnOnce() -> String) -> Source {
        if self == other {
            return self.clone();
        }
        let seen = |s: &Source| match s {
            Source::Data(vars) => serde_json::json!(&**vars),
            Source::Unknown {
                from, keys, agreed, ..
            } => serde_json::json!([from, keys, &**agreed]),
        };
        let theirs = other.known();
        let agreed = self
            .known()
            .iter()
            .filter(|(k, v)| theirs.get(*k) == Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Source::Unknown {
            why: why(),
            from: Some(digest(&serde_json::json!([seen(self), seen(other)]))),
            keys: self.keys().zip(other.keys()).map(|(a, b)| &a | &b),
            agreed: Arc::new(agreed),
        }
    }
}

/// The keys of the Secret an ExternalSecret writes, when its spec says them all
/// (external-secrets `Reconciler.applyTemplate`): with `creationPolicy: Merge` the Secret keeps
/// keys it had, so they are not known; without a `template.data` or `templateFrom` it holds
/// the fetched data, the `data[].secretKey`s (and whatever a `dataFrom` brings, unknown);
/// with `template.data` it holds the template's keys, and the fetched data too with
/// `mergePolicy: Merge`; a `templateFrom` may write keys of its own, unknown.
fn external_secret_keys(v: &Value) -> Option<BTreeSet<String>> {
    let spec = v.get("spec")?;
    let target = spec.get("target");
    let text = |v: Option<&Value>, k: &str| {
        v.and_then(|v| v.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    if text(target, "creationPolicy") == "Merge" {
        return None;
    }
    let template = target
        .and_then(|t| t.get("template"))
        .filter(|t| !t.is_null());
    let listed = |v: Option<&Value>| v.and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    if listed(template.and_then(|t| t.get("templateFrom"))) {
        return None;
    }
    let data_keys = || -> Option<BTreeSet<String>> {
        if listed(spec.get("dataFrom")) {
            return None;
        }
        let entries = spec.get("data").and_then(Value::as_array);
        entries
            .into_iter()
            .flatten()
            .map(|d| d.get("secretKey").and_then(Value::as_str).map(String::from))
            .collect()
    };
    let templated: BTreeSet<String> = template
        .and_then(|t| t.get("data"))
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    if templated.is_empty() {
        return data_keys();
    }
    if text(template, "mergePolicy") == "Merge" {
        let mut keys = data_keys()?;
        keys.extend(templated);
        return Some(keys);
    }
    Some(templated)
}

/// A `substituteFrom` source as an owner reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Read {
    /// Its variables, as the source holds them: Flux takes the newlines out of each value.
    Known(Arc<BTreeMap<String, String>>),
    /// It cannot be read (see `Source::Unknown`): it may set any variable, or any of its
    /// keys when they are known, those it holds whichever way it is to their values.
    Unknown(
        Option<[u8; 32]>,
        Option<BTreeSet<String>>,
        Arc<BTreeMap<String, String>>,
    ),
}

impl Read {
    fn of(source: Source) -> Read {
        match source {
            Source::Data(vars) => Read::Known(vars),
            Source::Unknown {
                from, keys, agreed, ..
            } => Read::Unknown(from, keys, agreed),
        }
    }

    /// What it says of variable `name`: its value, that it is unknown, or `None` when it
    /// does not set it; `anything`: whether one whose keys are not known may set it.
    fn get(&self, name: &str, anything: bool) -> Option<Lookup> {
        // Flux takes the newlines out of each value it substitutes.
        let set = |v: &String| Lookup::Set(v.replace('\n', ""));
        match self {
            Read::Known(vars) => vars.get(name).map(set),
            Read::Unknown(_, keys, agreed) => match agreed.get(name) {
                Some(v) => Some(set(v)),
                None if keys.as_ref().map_or(anything, |k| k.contains(name)) => {
                    Some(Lookup::Unknown)
                }
                None => None,
            },
        }
    }
}

/// The variables an owner substitutes with, in Flux's precedence. Two are equal when every
/// source reads the same, an unknown one coming from the same object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Variables {
    /// The `substituteFrom` sources in order, as `Kind/name`, with what they hold.
    from: Vec<(String, Read)>,
    inline: BTreeMap<String, String>,
    /// What a mutating webhook adds to `substitute` as the cluster admits the Kustomization
    /// (`flux::admission`), in the order it reads its sources, each named for messages.
    admitted: Vec<(String, Read)>,
    /// The sources that are not `optional` and in no build of the environment, as
    /// `Kind/name`: Flux fails the build unless they are in the cluster (made out of band),
    /// and what they set is unknown.
    pub missing: Vec<String>,
    /// Whether Flux substitutes at all: some variable is (or may be) set, or
    /// `substituteStrategy: Always`.
    pub runs: bool,
}

impl Variables {
    /// A variable's value: inline, else the last source that sets it; unknown when a source
    /// that cannot be read comes after every one that sets it, as it may set it too
    /// (`LoadVariables` reads the sources in order, each overriding the ones before, and
    /// `SubstituteVariables` lays the inline `substitute` over them all).
    ///
    /// What a webhook adds replaces even the inline ones; one of its sources whose keys are
    /// not known is taken to set only what nothing else sets (the variables a Kustomization
    /// names itself are its own, not the cluster-wide ones the webhook adds).
    pub fn lookup(&self, name: &str) -> Lookup {
        let mut admitted = self.admitted.iter().rev();
        if let Some(found) = admitted.find_map(|(_, s)| s.get(name, false)) {
            return found;
        }
        if let Some(v) = self.inline.get(name) {
            return Lookup::Set(v.replace('\n', ""));
        }
        if let Some(found) = self.from.iter().rev().find_map(|(_, s)| s.get(name, true)) {
            return found;
        }
        if self
            .admitted
            .iter()
            .any(|(_, s)| matches!(s, Read::Unknown(_, None, _)))
        {
            return Lookup::Unknown;
        }
        Lookup::Unset
    }

    /// A digest of everything `object` reads of them: two with the same digest substitute an
    /// object alike (every string and list is written with its length first, so no two
    /// differ only in where one ends).
    pub fn digest(&self) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        fn count(h: &mut Sha256, n: usize) {
            h.update((n as u64).to_le_bytes());
        }
        fn text(h: &mut Sha256, s: &str) {
            count(h, s.len());
            h.update(s.as_bytes());
        }
        fn map(h: &mut Sha256, m: &BTreeMap<String, String>) {
            count(h, m.len());
            for (k, v) in m {
                text(h, k);
                text(h, v);
            }
        }
        let mut h = Sha256::new();
        for list in [&self.from, &self.admitted] {
            count(&mut h, list.len());
            for (label, read) in list {
                text(&mut h, label);
                match read {
                    Read::Known(m) => {
                        h.update([0]);
                        map(&mut h, m);
                    }
                    Read::Unknown(from, keys, agreed) => {
                        h.update([1]);
                        map(&mut h, agreed);
                        h.update(from.map_or([0; 33], |d| {
                            let mut b = [1; 33];
                            b[1..].copy_from_slice(&d);
                            b
                        }));
                        match keys {
                            None => h.update([0]),
                            Some(keys) => {
                                h.update([1]);
                                count(&mut h, keys.len());
                                keys.iter().for_each(|k| text(&mut h, k));
                            }
                        }
                    }
                }
            }
        }
        map(&mut h, &self.inline);
        count(&mut h, self.missing.len());
        self.missing.iter().for_each(|m| text(&mut h, m));
        h.update([u8::from(self.runs)]);
        h.finalize().into()
    }

    /// The sources that cannot be read, as `Kind/name`.
    pub fn unknown_sources(&self) -> Vec<&str> {
        self.from
            .iter()
            .chain(&self.admitted)
            .filter(|(_, s)| matches!(s, Read::Unknown(..)))
            .map(|(n, _)| n.as_str())
            .collect()
    }
}

/// The variables of Flux Kustomization `owner` (in namespace `namespace`), its
/// `substituteFrom` sources and those of the webhook that changes it as the cluster admits
/// it (`admission`, when one does) read through `find` (ConfigMaps and Secrets of the
/// environment's builds). `Err` is why Flux's build fails: a variable name Flux refuses.
pub fn variables(
    owner: &Value,
    namespace: &str,
    admission: Option<&Admission>,
    find: &mut dyn FnMut(&ObjectId) -> Option<Source>,
) -> Result<Variables, SubstituteError> {
    let post = owner.at_pointer("/spec/postBuild");
    let mut vars = Variables::default();
    let refs = post
        .and_then(|p| p.get("substituteFrom"))
        .and_then(Value::as_array);
    for r in refs.into_iter().flatten() {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let (kind, name) = (s("kind"), s("name"));
        // `LoadVariables` reads only these two kinds and ignores any other.
        if kind != "ConfigMap" && kind != "Secret" {
            continue;
        }
        let optional = r.get("optional").and_then(Value::as_bool).unwrap_or(false);
        let id = ObjectId {
            group: String::new(),
            kind: kind.into(),
            namespace: namespace.into(),
            name: name.into(),
            cluster: None,
        };
        let label = format!("{kind}/{name}");
        match find(&id) {
            Some(source) => vars.from.push((label, Read::of(source))),
            None if optional => {}
            None => {
                vars.missing.push(label.clone());
                vars.from
                    .push((label, Read::Unknown(None, None, Arc::default())));
            }
        }
    }
    vars.inline = substitutions(owner);
    if let Some(a) = admission {
        vars.admitted = admitted(a, find);
    }
    let names = vars
        .inline
        .keys()
        .chain(
            vars.from
                .iter()
                .chain(&vars.admitted)
                .flat_map(|(_, s)| match s {
                    Read::Known(m) => Box::new(m.keys()) as Box<dyn Iterator<Item = &String>>,
                    Read::Unknown(_, keys, _) => Box::new(keys.iter().flatten()),
                }),
        );
    for name in names {
        if !valid_name(name) {
            return Err(SubstituteError::Name(name.clone()));
        }
    }
    let always = post
        .and_then(|p| p.get("substituteStrategy"))
        .and_then(Value::as_str)
        == Some("Always");
    vars.runs = always
        || !vars.inline.is_empty()
        || vars
            .from
            .iter()
            .chain(&vars.admitted)
            .any(|(_, s)| !matches!(s, Read::Known(m) if m.is_empty()));
    Ok(vars)
}

/// What webhook `a` adds, source by source: one it cannot read, or that is in no build
/// (the cluster may hold it, made out of band), adds what is unknown.
fn admitted(
    a: &Admission,
    find: &mut dyn FnMut(&ObjectId) -> Option<Source>,
) -> Vec<(String, Read)> {
    let Some(sources) = &a.sources else {
        return vec![(a.describe(), Read::Unknown(None, None, Arc::default()))];
    };
    sources
        .iter()
        .map(|s| match s {
            Admitted::Made(name, data) => (
                format!("ConfigMap/{name} (made by {})", a.describe()),
                Read::Known(Arc::new(data.clone())),
            ),
            Admitted::Object(id) => {
                let read = find(id).map_or(Read::Unknown(None, None, Arc::default()), Read::of);
                (format!("{id} (read by {})", a.describe()), read)
            }
        })
        .collect()
}

/// `varsubRegex`: `^[_[:alpha:]][_[:alpha:][:digit:]]*$` (POSIX classes: ASCII).
fn valid_name(name: &str) -> bool {
    let mut b = name.bytes();
    b.next()
        .is_some_and(|c| c == b'_' || c.is_ascii_alphabetic())
        && b.all(|c| c == b'_' || c.is_ascii_alphanumeric())
}

/// What substituting an object left as written.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Variables whose value cannot be known, each with whether it stands in the object's
    /// name or namespace.
    pub unknown: Vec<(bool, String)>,
    /// Variables not set and without default (Flux, in strict mode, fails the build on
    /// them), the same way.
    pub unset: Vec<(bool, String)>,
}

impl Outcome {
    /// The unknown variables of its name or namespace.
    pub fn in_identity(&self) -> BTreeSet<String> {
        identity(&self.unknown)
    }
}

fn identity(found: &[(bool, String)]) -> BTreeSet<String> {
    found
        .iter()
        .filter(|(identity, _)| *identity)
        .map(|(_, v)| v.clone())
        .collect()
}

/// Where a value stands: what `walk` needs to know of its path, without building it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    Top,
    Metadata,
    /// `metadata.name` or `metadata.namespace`.
    Identity,
    Other,
}

/// Whether Flux leaves the object alone (`kustomize.toolkit.fluxcd.io/substitute:
/// disabled`, as a label or an annotation).
pub fn disabled(v: &Value) -> bool {
    ["labels", "annotations"].iter().any(|k| {
        v.get("metadata")
            .and_then(|m| m.get(*k))
            .and_then(|m| m.get(SUBSTITUTE))
            .and_then(Value::as_str)
            == Some("disabled")
    })
}

/// Whether `object` may change `v`: some string or key of it holds `${` or `$$`.
pub fn may_change(v: &Value) -> bool {
    match v {
        Value::String(s) => envsubst::may_change(s),
        Value::Array(items) => items.iter().any(may_change),
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| envsubst::may_change(k) || may_change(v)),
        _ => false,
    }
}

/// Substitutes `vars` in every string and key of `v` (what a build holds of the object),
/// as Flux does; only strings with `${` or `$$` are parsed. A string whose variables are
/// unknown, or not set, is left as written. `Err` is a string Flux cannot parse: its build
/// fails.
pub fn object(v: &mut Value, vars: &Variables) -> Result<Outcome, SubstituteError> {
    let mut outcome = Outcome::default();
    if !vars.runs || disabled(v) {
        return Ok(outcome);
    }
    walk(v, vars, At::Top, &mut outcome)?;
    Ok(outcome)
}

fn walk(v: &mut Value, vars: &Variables, at: At, out: &mut Outcome) -> Result<(), SubstituteError> {
    match v {
        Value::String(s) => {
            if let Some(new) = string(s, vars, at == At::Identity, out)? {
                *v = retyped(s, new);
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(item, vars, At::Other, out)?;
            }
        }
        Value::Object(m) => {
            if m.keys().any(|k| envsubst::may_change(k)) {
                let mut renamed = Map::new();
                for (k, val) in std::mem::take(m) {
                    let key = string(&k, vars, false, out)?.unwrap_or(k);
                    renamed.insert(key, val);
                }
                *m = renamed;
            }
            for (k, val) in m.iter_mut() {
                let below = match (at, k.as_str()) {
                    (At::Top, "metadata") => At::Metadata,
                    (At::Metadata, "name" | "namespace") => At::Identity,
                    _ => At::Other,
                };
                walk(val, vars, below, out)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `s` substituted; `None` when it stays as written (`identity`: it is the object's name or
/// namespace).
fn string(
    s: &str,
    vars: &Variables,
    identity: bool,
    out: &mut Outcome,
) -> Result<Option<String>, SubstituteError> {
    if !envsubst::may_change(s) {
        return Ok(None);
    }
    let nodes = envsubst::parse(s).map_err(|error| SubstituteError::Parse {
        error,
        text: s.to_string(),
    })?;
    match envsubst::eval(&nodes, &|name| vars.lookup(name)) {
        Ok(new) => Ok(Some(new)),
        Err(Unresolved::NotSet(var)) => {
            out.unset.push((identity, var));
            Ok(None)
        }
        Err(Unresolved::Unknown(var)) => {
            out.unknown.push((identity, var));
            Ok(None)
        }
    }
}

/// The value Flux's YAML round trip gives `new`, the substitution of plain scalar `old`: a
/// boolean, a number or null when it reads as one, else the string.
fn retyped(old: &str, new: String) -> Value {
    if !plain(old) {
        return Value::String(new);
    }
    // A quoted scalar is its text (`${ID:-"web"}` becomes `"web"`, read as `web`).
    if let Some(text) = quoted(&new) {
        return Value::String(text);
    }
    // YAML 1.1 (go-yaml v2, under sigs.k8s.io/yaml's YAMLToJSON).
    match new.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "true" | "True" | "TRUE" => {
            return Value::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "false" | "False" | "FALSE" => {
            return Value::Bool(false)
        }
        _ => {}
    }
    let digits = new.strip_prefix(['-', '+']).unwrap_or(&new);
    if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
        if let Ok(i) = new.parse::<i64>() {
            return Value::from(i);
        }
    }
    if digits.bytes().any(|c| c.is_ascii_digit())
        && digits
            .bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'-' | b'+'))
        && digits.contains(['.', 'e', 'E'])
    {
        if let Some(f) = new
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
        {
            return Value::Number(f);
        }
    }
    Value::String(new)
}

/// The text of `s` when it is one whole quoted YAML scalar: `"..."` (JSON's escapes, which
/// YAML's double-quoted style has too) or `'...'` (`''` for a quote inside).
fn quoted(s: &str) -> Option<String> {
    if s.len() < 2 {
        return None;
    }
    if s.starts_with('"') && s.ends_with('"') {
        return serde_json::from_str::<String>(s).ok();
    }
    let inner = s.strip_prefix('\'')?.strip_suffix('\'')?;
    if inner.replace("''", "").contains('\'') {
        return None;
    }
    Some(inner.replace("''", "'"))
}

/// Whether go-yaml writes `s` as a plain scalar (unquoted), so that what it becomes is read
/// again as YAML: one line, no surrounding spaces, no indicator first (a quote is one only
/// there), no `: ` or ` #`.
fn plain(s: &str) -> bool {
    !s.is_empty()
        && !s.contains('\n')
        && s.trim() == s
        && !s.starts_with([
            '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '%', '@', '`',
            '"', '\'',
        ])
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(owner: Value, sources: &[(&str, Source)]) -> Result<Variables, SubstituteError> {
        variables(&owner, "flux-system", None, &mut |id| {
            sources
                .iter()
                .find(|(n, _)| *n == format!("{}/{}", id.kind, id.name))
                .map(|(_, s)| s.clone())
        })
    }

    fn data(pairs: &[(&str, &str)]) -> Source {
        Source::Data(Arc::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ))
    }

    fn set(v: &Variables, name: &str) -> Option<String> {
        match v.lookup(name) {
            Lookup::Set(s) => Some(s),
            Lookup::Unset => None,
            Lookup::Unknown => Some("?".into()),
        }
    }

    #[test]
    fn substitutes_inline_variables_and_defaults() {
        let v = vars(
            json!({"spec": {"postBuild": {"substitute": {"APP": "web"}}}}),
            &[],
        )
        .unwrap();
        let mut obj = json!({"metadata": {"name": "${APP}-${NS:=media}-${X}"}});
        object(&mut obj, &v).unwrap();
        // `${X}` is not set: Flux fails the build (strict); the string stays as written.
        let out = object(&mut obj, &v).unwrap();
        assert_eq!(obj["metadata"]["name"], "${APP}-${NS:=media}-${X}");
        assert_eq!(out.unset, [(true, "X".to_string())]);
        let mut obj = json!({"metadata": {"name": "${APP}-${NS:=media}", "namespace": "$${APP}"}});
        object(&mut obj, &v).unwrap();
        assert_eq!(
            obj["metadata"],
            json!({"name": "web-media", "namespace": "${APP}"})
        );
    }

    /// `LoadVariables` then `SubstituteVariables`: later sources override earlier ones, the
    /// inline `substitute` overrides them all, newlines are dropped.
    #[test]
    fn precedence_is_fluxs() {
        let owner = json!({"spec": {"postBuild": {
        "substitute": {"A": "inline"},
        "substituteFrom": [
            {"kind": "ConfigMap", "name": "first"},
            {"kind": "Secret", "name": "second"},
            {"kind": "ConfigMap", "name": "gone", "optional": true},
            {"kind": "Other", "name": "ignored"},
        ]}}});
        let sources = [
            (
                "ConfigMap/first",
                data(&[("A", "1"), ("B", "1"), ("C", "1")]),
            ),
            ("Secret/second", data(&[("B", "2"), ("D", "x\ny")])),
        ];
        let v = vars(owner.clone(), &sources).unwrap();
        let got: Vec<Option<String>> = ["A", "B", "C", "D", "E"]
            .iter()
            .map(|n| set(&v, n))
            .collect();
        assert_eq!(
            got,
            [
                Some("inline".into()),
                Some("2".into()),
                Some("1".into()),
                Some("xy".into()),
                None
            ]
        );
        // A SOPS Secret after the ConfigMap may set anything the ConfigMap sets.
        let sealed = [
            ("ConfigMap/first", data(&[("B", "1")])),
            (
                "Secret/second",
                Source::Unknown {
                    why: "SOPS-encrypted".into(),
                    from: None,
                    keys: None,
                    agreed: Default::default(),
                },
            ),
        ];
        let v = vars(owner, &sealed).unwrap();
        assert_eq!(
            (set(&v, "A"), set(&v, "B")),
            (Some("inline".into()), Some("?".into()))
        );
        assert_eq!(v.unknown_sources(), ["Secret/second"]);
    }

    #[test]
    fn a_missing_source_fails_unless_optional_and_names_are_validated() {
        let missing = json!({"spec": {"postBuild": {"substituteFrom": [
            {"kind": "Secret", "name": "s"}, {"kind": "Secret", "name": "o", "optional": true}]}}});
        let v = vars(missing, &[]).unwrap();
        assert_eq!(
            (v.missing.as_slice(), set(&v, "A")),
            (["Secret/s".to_string()].as_slice(), Some("?".into()))
        );
        let bad = json!({"spec": {"postBuild": {"substituteFrom": [{"kind": "ConfigMap", "name": "c"}]}}});
        let err = vars(bad, &[("ConfigMap/c", data(&[("app.name", "x")]))]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "'app.name' var name is invalid, must match '^[_[:alpha:]][_[:alpha:][:digit:]]*$'"
        );
        for (name, ok) in [
            ("_a1", true),
            ("A_B", true),
            ("1A", false),
            ("a-b", false),
            ("é", false),
        ] {
            assert_eq!(valid_name(name), ok, "{name}");
        }
    }

    /// With no variable at all Flux does not substitute, unless `substituteStrategy: Always`.
    #[test]
    fn nothing_runs_without_variables_unless_always() {
        let mut obj = json!({"metadata": {"name": "${N:=x}"}});
        let v = vars(json!({"spec": {"postBuild": {}}}), &[]).unwrap();
        object(&mut obj, &v).unwrap();
        assert_eq!(obj["metadata"]["name"], "${N:=x}");
        let v = vars(
            json!({"spec": {"postBuild": {"substituteStrategy": "Always"}}}),
            &[],
        )
        .unwrap();
        object(&mut obj, &v).unwrap();
        assert_eq!(obj["metadata"]["name"], "x");
    }

    #[test]
    fn whole_objects_keys_types_and_opt_out() {
        let v = vars(
            json!({"spec": {"postBuild": {"substitute": {"APP": "db", "PRUNE": "false", "N": "3"}}}}),
            &[],
        )
        .unwrap();
        let mut ks = json!({"spec": {"path": "./apps/${APP}", "prune": "${PRUNE}", "retries": "${N}",
            "postBuild": {"substitute": {"APP": "${APP}-x", "${APP}_KEY": "v", "ESC": "$${APP}"}},
            "note": "${APP}: ${N}"}});
        let out = object(&mut ks, &v).unwrap();
        assert!(out.unknown.is_empty());
        assert_eq!(
            ks,
            json!({"spec": {"path": "./apps/db", "prune": false, "retries": 3,
                "postBuild": {"substitute": {"APP": "db-x", "db_KEY": "v", "ESC": "${APP}"}},
                "note": "db: 3"}})
        );
        let mut off = json!({"metadata": {"name": "${APP}", "labels": {SUBSTITUTE: "disabled"}}});
        object(&mut off, &v).unwrap();
        assert_eq!(off["metadata"]["name"], "${APP}");
        let mut broken = json!({"metadata": {"name": "${APP"}});
        assert_eq!(
            object(&mut broken, &v).unwrap_err().to_string(),
            "envsubst error: variable substitution failed: missing closing brace: `${APP`"
        );
    }

    #[test]
    fn unknown_values_stay_and_are_reported() {
        let owner = json!({"spec": {"postBuild": {"substitute": {"APP": "web"},
            "substituteFrom": [{"kind": "Secret", "name": "sealed"}]}}});
        let v = vars(
            owner,
            &[(
                "Secret/sealed",
                Source::Unknown {
                    why: "SOPS-encrypted".into(),
                    from: None,
                    keys: None,
                    agreed: Default::default(),
                },
            )],
        )
        .unwrap();
        let mut obj = json!({"metadata": {"name": "${APP}-${DOMAIN}", "namespace": "${APP}",
            "labels": {"x": "${DOMAIN}"}}});
        let out = object(&mut obj, &v).unwrap();
        assert_eq!(obj["metadata"]["name"], "${APP}-${DOMAIN}");
        assert_eq!(obj["metadata"]["namespace"], "web");
        assert_eq!(out.in_identity(), BTreeSet::from(["DOMAIN".to_string()]));
        assert_eq!(out.unknown.len(), 2);
    }

    /// A source whose values cannot be read but whose keys can (a SOPS Secret's keys are
    /// written in the clear; an ExternalSecret's template names the keys it writes, external-
    /// secrets `Reconciler.applyTemplate`) sets no other variable: one it lacks comes from the
    /// sources before it, or its default.
    #[test]
    fn a_source_of_known_keys_sets_no_other_variable() {
        let id = ObjectId {
            group: "external-secrets.io".into(),
            kind: "ExternalSecret".into(),
            namespace: "flux-system".into(),
            name: "cluster-secrets".into(),
            cluster: None,
        };
        let keys = |es: Value| match Source::made_by(&id, &es) {
            Some((_, Source::Unknown { keys, .. })) => keys,
            other => panic!("{other:?}"),
        };
        let set = |ks: &[&str]| Some(ks.iter().map(|k| k.to_string()).collect::<BTreeSet<_>>());
        let templated = json!({"spec": {"target": {"template": {"data": {"SECRET_DOMAIN": "{{ .d }}"}}},
            "dataFrom": [{"extract": {"key": "cluster"}}]}});
        assert_eq!(keys(templated.clone()), set(&["SECRET_DOMAIN"]));
        let mut merged = templated.clone();
        merged["spec"]["target"]["template"]["mergePolicy"] = json!("Merge");
        assert_eq!(keys(merged), None);
        let listed = json!({"spec": {"data": [{"secretKey": "A", "remoteRef": {"key": "x"}},
            {"secretKey": "B", "remoteRef": {"key": "y"}}]}});
        assert_eq!(keys(listed.clone()), set(&["A", "B"]));
        let mut merged = listed.clone();
        merged["spec"]["target"] =
            json!({"template": {"mergePolicy": "Merge", "data": {"C": "c"}}});
        assert_eq!(keys(merged), set(&["A", "B", "C"]));
        let mut kept = listed.clone();
        kept["spec"]["target"] = json!({"creationPolicy": "Merge"});
        assert_eq!(keys(kept), None);
        let mut from = templated.clone();
        from["spec"]["target"]["template"]["templateFrom"] = json!([{"configMap": {"name": "t"}}]);
        assert_eq!(keys(from), None);
        assert_eq!(
            keys(json!({"spec": {"dataFrom": [{"extract": {"key": "c"}}]}})),
            None
        );

        let owner = json!({"spec": {"postBuild": {"substitute": {"APP": "web"}, "substituteFrom": [
            {"kind": "ConfigMap", "name": "settings"}, {"kind": "Secret", "name": "cluster-secrets"}]}}});
        let unknown = |keys: Option<BTreeSet<String>>| Source::Unknown {
            why: "SOPS-encrypted".into(),
            from: None,
            keys,
            agreed: Default::default(),
        };
        let sources = [
            ("ConfigMap/settings", data(&[("TZ", "UTC")])),
            ("Secret/cluster-secrets", unknown(set(&["SECRET_DOMAIN"]))),
        ];
        let v = vars(owner.clone(), &sources).unwrap();
        assert_eq!(v.lookup("SECRET_DOMAIN"), Lookup::Unknown);
        assert_eq!(v.lookup("TZ"), Lookup::Set("UTC".into()));
        assert_eq!(v.lookup("VOLSYNC_CLAIM"), Lookup::Unset);
        let mut claim = json!({"metadata": {"name": "${VOLSYNC_CLAIM:-${APP}}"}});
        let out = object(&mut claim, &v).unwrap();
        assert_eq!(claim["metadata"]["name"], "web");
        assert!(out.unknown.is_empty());
        // Its keys are variable names Flux checks like any other.
        let bad = [
            ("ConfigMap/settings", data(&[])),
            ("Secret/cluster-secrets", unknown(set(&["tls.crt"]))),
        ];
        assert!(vars(owner, &bad).is_err());
        // SOPS: the keys of data and stringData.
        let secret = ObjectId {
            group: String::new(),
            kind: "Secret".into(),
            namespace: "flux-system".into(),
            name: "s".into(),
            cluster: None,
        };
        let sops = json!({"data": {"A": "ENC[...]"}, "stringData": {"B": "ENC[...]"}, "sops": {"mac": "m"}});
        assert!(matches!(
            Source::of(&secret, &sops),
            Some(Source::Unknown { keys: Some(k), .. }) if k == BTreeSet::from(["A".to_string(), "B".to_string()])
        ));
    }

    #[test]
    fn secrets_and_config_maps_as_sources() {
        let id = |kind: &str| ObjectId {
            group: String::new(),
            kind: kind.into(),
            namespace: "flux-system".into(),
            name: "s".into(),
            cluster: None,
        };
        let secret =
            json!({"data": {"A": "d2Vi", "B": "bm90IGJhc2U2NCE="}, "stringData": {"B": "plain"}});
        assert_eq!(
            Source::of(&id("Secret"), &secret),
            Some(data(&[("A", "web"), ("B", "plain")]))
        );
        let cm = json!({"data": {"A": "d2Vi"}, "binaryData": {"C": "eA=="}});
        assert_eq!(
            Source::of(&id("ConfigMap"), &cm),
            Some(data(&[("A", "d2Vi")]))
        );
        let sops = json!({"data": {"A": "ENC[...]"}, "sops": {"mac": "m"}});
        assert!(matches!(
            Source::of(&id("Secret"), &sops),
            Some(Source::Unknown { .. })
        ));
        // A ConfigMap with no data (a generated one is built with its data) sets nothing.
        assert_eq!(Source::of(&id("ConfigMap"), &json!({})), Some(data(&[])));
        assert_eq!(Source::of(&id("Service"), &cm), None);
    }
    /// Flux substitutes the YAML text and reads it again (fluxcd/pkg kustomize
    /// `varSubstitution`, then `YAMLToJSON`): a plain scalar whose substitution is a quoted
    /// scalar is its text, and one that reads as a number is a number; a scalar written
    /// quoted stays the string it was substituted to.
    #[test]
    fn a_substitution_is_read_again_as_yaml() {
        for (old, new, want) in [
            (r#"${ID:-"web"}"#, r#""web""#, json!("web")),
            (r#"${ID:='single'}"#, "'single'", json!("single")),
            (r#"${ID:-"a\tb"}"#, r#""a\tb""#, json!("a\tb")),
            ("${ID:-'it''s'}", "'it''s'", json!("it's")),
            (r#"${ID:-"web"x}"#, r#""web"x"#, json!(r#""web"x"#)),
            ("${N:=5}", "5", json!(5)),
            ("${A:-it's}", "it's", json!("it's")),
            (r#""${ID}""#, r#""web""#, json!(r#""web""#)),
        ] {
            assert_eq!(retyped(old, new.to_string()), want, "{old} -> {new}");
        }
    }
}
