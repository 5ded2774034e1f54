//! kustomize's name references (`nameReference`: api/filters/nameref, run by
//! `accumulator.nameReferenceTransformer` from `KustTarget.makeCustomizedResMap`): once a
//! whole build is transformed and its generated objects have their hash suffix, every field
//! that names an object renamed on the way (the ConfigMap a Deployment mounts, the values
//! ConfigMap of a HelmRelease that a `configurations` file names) is written with the
//! object's new name. The fields are kustomize's defaults (`namereference.yaml`) and those of
//! every `configurations` file the build reads, merged as kustomize merges them
//! (`builtinconfig.TransformerConfig.Merge`).

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::error::BuildError;
use super::keys::fold;
use super::object::{effective_namespace, group_of, path_splitter, version_of};
use super::resource::Resource;

/// A group, version and kind, each empty for any (kyaml `resid.Gvk`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Gvk {
    group: String,
    version: String,
    kind: String,
}

impl Gvk {
    /// Whether it selects an object of `group`, `version` and `kind` (`Gvk.IsSelected`, with
    /// itself as the selector).
    fn selects(&self, (group, version, kind): (&str, &str, &str)) -> bool {
        (self.group.is_empty() || self.group == group)
            && (self.version.is_empty() || self.version == version)
            && (self.kind.is_empty() || self.kind == kind)
    }
}

/// A field of the objects a `Gvk` selects (`types.FieldSpec`), its path split at `/` (`\/`
/// is a `/` within a key).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldSpec {
    gvk: Gvk,
    path: String,
    create: bool,
}

/// The fields (`referrers`) that name an object of kind `target` (`NameBackReferences`).
#[derive(Debug, Clone)]
struct BackRef {
    target: Gvk,
    referrers: Vec<FieldSpec>,
}

/// The name references of a build: kustomize's defaults merged with its `configurations`.
#[derive(Debug, Clone)]
pub(super) struct Config {
    refs: Vec<BackRef>,
}

impl Config {
    /// kustomize's default name references (`the_defaults_are_kustomizes` holds the file to
    /// them: a file that does not read is no references, never a panic).
    pub(super) fn defaults() -> &'static Config {
        static DEFAULTS: OnceLock<Config> = OnceLock::new();
        DEFAULTS.get_or_init(|| {
            let text = std::sync::Arc::new(include_str!("namereference.yaml").to_string());
            crate::yaml::parse_value("namereference.yaml", &text)
                .ok()
                .and_then(|doc| Config::parse(&doc).ok())
                .unwrap_or(Config { refs: Vec::new() })
        })
    }

    /// A transformer configuration file (`builtinconfig.TransformerConfig`, decoded strictly:
    /// a key that is no field fails, as `yaml.UnmarshalStrict` fails it); only its name
    /// references are kept, its other field lists change what objects hold, never a name.
    pub(super) fn parse(doc: &Value) -> Result<Config, String> {
        const LISTS: [&str; 10] = [
            "namePrefix",
            "nameSuffix",
            "namespace",
            "commonLabels",
            "labels",
            "templateLabels",
            "commonAnnotations",
            "varReference",
            "images",
            "replicas",
        ];
        let mut refs = Vec::new();
        for (field, v) in decode(doc, &[&LISTS[..], &["nameReference"]].concat())? {
            if field == "nameReference" {
                for entry in items(v, field)? {
                    let mut target = Gvk::default();
                    let mut referrers = Vec::new();
                    for (f, v) in decode(entry, &["group", "version", "kind", "fieldSpecs"])? {
                        if f == "fieldSpecs" {
                            referrers = items(v, f)?
                                .iter()
                                .map(field_spec)
                                .collect::<Result<_, _>>()?;
                        } else {
                            set_gvk(&mut target, f, v)?;
                        }
                    }
                    refs.push(BackRef { target, referrers });
                }
            } else {
                for spec in items(v, field)? {
                    field_spec(spec)?;
                }
            }
        }
        Ok(Config { refs })
    }

    /// `other` merged into it (`nbrSlice.mergeAll`): the fields of a kind it names already
    /// join that kind's, each once; a field named twice with a different `create` fails.
    pub(super) fn merge(&mut self, other: Config) -> Result<(), String> {
        for r in other.refs {
            let Some(mine) = self.refs.iter_mut().find(|m| m.target == r.target) else {
                self.refs.push(r);
                continue;
            };
            for spec in r.referrers {
                match mine
                    .referrers
                    .iter()
                    .find(|s| s.gvk == spec.gvk && s.path == spec.path)
                {
                    Some(s) if s.create != spec.create => {
                        return Err(format!(
                            "conflicting fieldspecs: `{}` with and without `create`",
                            spec.path
                        ))
                    }
                    Some(_) => {}
                    None => mine.referrers.push(spec),
                }
            }
        }
        Ok(())
    }
}

impl super::Builder<'_> {
    /// The transformer configuration files kustomization `k` of `dir` lists, their name
    /// references merged into those of the build under way. A file that is not there, or
    /// not a configuration, fails the build; a remote one is not read (a warning says so).
    pub(super) fn configurations(
        &mut self,
        file: &str,
        dir: &str,
        k: &Map<String, Value>,
    ) -> Result<(), BuildError> {
        for (i, entry) in super::list(k, "configurations", file)?.iter().enumerate() {
            let what = format!("{file}: configurations[{i}]");
            let fail = |why: String| BuildError::NameReference {
                what: what.clone(),
                why,
            };
            let Some((_, local)) = self.local_entry(
                file,
                dir,
                "configurations",
                entry,
                (
                    "remote configurations",
                    "the names it fixes are not in the inventory",
                ),
            )?
            else {
                continue;
            };
            let text = self
                .tree
                .read(&local)
                .ok_or_else(|| self.not_read(&local))?;
            let doc = crate::yaml::parse_value(&local, &text)
                .map_err(|e| BuildError::Yaml(Box::new(e)))?;
            let config = Config::parse(&doc).map_err(|why| fail(format!("`{local}`: {why}")))?;
            self.name_refs
                .get_or_insert_with(|| Config::defaults().clone())
                .merge(config)
                .map_err(fail)?;
        }
        Ok(())
    }
}

/// The fields of mapping `v` (null: none), each named as one of `fields` (Go's encoding/json
/// matches a key to a field without regard to case); a key that names none fails.
fn decode<'v>(
    v: &'v Value,
    fields: &[&'static str],
) -> Result<Vec<(&'static str, &'v Value)>, String> {
    let m = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Object(m) => m,
        _ => return Err("expected a mapping".into()),
    };
    m.iter()
        .map(|(key, v)| {
            fields
                .iter()
                .find(|f| **f == key)
                .or_else(|| fields.iter().find(|f| fold(f) == fold(key)))
                .map(|f| (*f, v))
                .ok_or_else(|| format!("unknown field \"{key}\""))
        })
        .collect()
}

fn items<'v>(v: &'v Value, field: &str) -> Result<&'v [Value], String> {
    match v {
        Value::Null => Ok(&[]),
        Value::Array(a) => Ok(a),
        _ => Err(format!("`{field}` must be a list")),
    }
}

fn string(v: &Value, field: &str) -> Result<String, String> {
    match v {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        _ => Err(format!("`{field}` must be a string")),
    }
}

fn set_gvk(gvk: &mut Gvk, field: &str, v: &Value) -> Result<(), String> {
    let s = string(v, field)?;
    match field {
        "group" => gvk.group = s,
        "version" => gvk.version = s,
        _ => gvk.kind = s,
    }
    Ok(())
}

fn field_spec(v: &Value) -> Result<FieldSpec, String> {
    let mut spec = FieldSpec {
        gvk: Gvk::default(),
        path: String::new(),
        create: false,
    };
    for (f, v) in decode(v, &["group", "version", "kind", "path", "create"])? {
        match f {
            "path" => spec.path = string(v, f)?,
            "create" => {
                spec.create = match v {
                    Value::Null => false,
                    Value::Bool(b) => *b,
                    _ => return Err("`create` must be true or false".into()),
                }
            }
            _ => set_gvk(&mut spec.gvk, f, v)?,
        }
    }
    Ok(spec)
}

/// What a name reference reads of an object that may be referred to: one renamed on the way
/// (only those have an earlier name a field can hold).
struct Referral {
    group: String,
    version: String,
    kind: String,
    name: String,
    namespace: String,
    /// The namespace of its first id (kustomize's `OrgId`), `default` for none.
    original_namespace: String,
    previous_names: Vec<String>,
    prefixes: Vec<String>,
    suffixes: Vec<String>,
    cluster_scoped: bool,
}

impl Referral {
    fn gvk(&self) -> (&str, &str, &str) {
        (&self.group, &self.version, &self.kind)
    }
}

/// The objects of a build renamed on the way, looked up by an earlier name: a field can
/// name only an object that once had its text as name (`previousNameMatches`), so a build of
/// thousands of generated objects does not ask each of them for each field.
struct Referrals {
    all: Vec<Referral>,
    by_name: HashMap<String, Vec<usize>>,
    /// The original namespaces of the namespaced ones (`GroupedByOriginalNamespace`).
    original_namespaces: HashSet<String>,
}

impl Referrals {
    fn new(all: Vec<Referral>) -> Referrals {
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, r) in all.iter().enumerate() {
            for name in &r.previous_names {
                by_name.entry(name.clone()).or_default().push(i);
            }
        }
        let original_namespaces = all
            .iter()
            .filter(|r| !r.cluster_scoped)
            .map(|r| r.original_namespace.clone())
            .collect();
        Referrals {
            all,
            by_name,
            original_namespaces,
        }
    }

    /// Those that once had the name `old`, in build order, each once.
    fn named<'s>(&'s self, old: &str) -> impl Iterator<Item = &'s Referral> + 's {
        let mut at: Vec<usize> = self.by_name.get(old).cloned().unwrap_or_default();
        at.dedup();
        at.into_iter().map(|i| &self.all[i])
    }
}

/// Every field of `acc` that the references of `config` name, written with the new name of
/// the object it names (`nameReferenceTransformer.Transform`). `cluster_scoped` says which
/// kinds have no namespace; `whole` makes an object held as its head whole before one of its
/// fields is read. Fails, as kustomize fails, where a field could name several objects.
pub(super) fn fix<E>(
    config: &Config,
    acc: &mut [Resource],
    cluster_scoped: &dyn Fn(&str) -> bool,
    whole: &mut dyn FnMut(&mut Resource) -> Result<(), E>,
) -> Result<(), Fix<E>> {
    let referrals: Vec<Referral> = acc
        .iter()
        .filter(|r| !r.previous.is_empty())
        .map(|r| {
            let api = r.api_version();
            Referral {
                group: group_of(api).to_string(),
                version: version_of(api).to_string(),
                kind: r.kind().to_string(),
                name: r.meta_str("name").to_string(),
                namespace: r.meta_str("namespace").to_string(),
                original_namespace: effective_namespace(&r.previous[0].1).to_string(),
                previous_names: r.previous.iter().map(|(n, _)| n.clone()).collect(),
                prefixes: r.prefixes.clone(),
                suffixes: r.suffixes.clone(),
                cluster_scoped: cluster_scoped(r.kind()),
            }
        })
        .collect();
    // A reference to a kind of which nothing was renamed changes nothing.
    let live: Vec<&BackRef> = config
        .refs
        .iter()
        .filter(|b| referrals.iter().any(|r| b.target.selects(r.gvk())))
        .collect();
    let referrals = Referrals::new(referrals);
    if live.is_empty() {
        return Ok(());
    }
    for r in acc.iter_mut() {
        let api = r.api_version().to_string();
        let gvk = (group_of(&api), version_of(&api), r.kind());
        let filters: Vec<(&Gvk, &FieldSpec)> = live
            .iter()
            .flat_map(|b| {
                b.referrers
                    .iter()
                    .filter(|s| s.gvk.selects(gvk))
                    .map(|s| (&b.target, s))
            })
            .collect();
        if filters.is_empty() {
            continue;
        }
        whole(r).map_err(Fix::Whole)?;
        let referrer = Referrer::of(r, cluster_scoped).map_err(Fix::Reference)?;
        for (target, spec) in filters {
            let filter = Filter {
                referrer: &referrer,
                referrals: &referrals,
                target,
                role_ref: spec.path.ends_with("roleRef/name"),
            };
            let path = path_splitter(&spec.path, '/');
            walk(&mut r.value, &path, &mut |node| filter.set(node)).map_err(|why| {
                Fix::Reference(format!(
                    "updating name reference in `{}` field of {}: {why}",
                    spec.path, referrer.shown
                ))
            })?;
        }
    }
    Ok(())
}

/// Why `fix` failed: an object could not be made whole, or a reference is kustomize's error.
#[derive(Debug)]
pub(super) enum Fix<E> {
    Whole(E),
    Reference(String),
}

/// What a name reference reads of the object whose field it writes.
struct Referrer {
    namespace: String,
    cluster_scoped: bool,
    prefixes: Vec<String>,
    suffixes: Vec<String>,
    /// The namespaces of the ServiceAccounts a RoleBinding's subjects name: objects there may
    /// be referred to (`getNamespacesForRoleBinding`).
    subject_namespaces: Vec<String>,
    /// The group and kind its `roleRef` names, if it names both.
    role_ref: Option<(String, String)>,
    shown: String,
}

impl Referrer {
    fn of(r: &Resource, cluster_scoped: &dyn Fn(&str) -> bool) -> Result<Referrer, String> {
        let mut subject_namespaces = Vec::new();
        let shown = format!("{} `{}`", r.kind(), r.meta_str("name"));
        if r.kind() == "RoleBinding" {
            let subjects = r.value.get("subjects").and_then(Value::as_array);
            for s in subjects.into_iter().flatten() {
                let (Some(ns), Some(kind)) = (s.get("namespace"), s.get("kind")) else {
                    continue;
                };
                if kind.as_str() == Some("ServiceAccount") {
                    match ns.as_str() {
                        Some(ns) => subject_namespaces.push(ns.to_string()),
                        None => return Err(format!("a subject of {shown} has no namespace")),
                    }
                }
            }
        }
        let role_ref = r.value.get("roleRef").and_then(|rr| {
            let s = |k: &str| rr.get(k).map(|v| v.as_str().unwrap_or("").to_string());
            Some((s("apiGroup")?, s("kind")?))
        });
        Ok(Referrer {
            namespace: r.meta_str("namespace").to_string(),
            cluster_scoped: cluster_scoped(r.kind()),
            prefixes: r.prefixes.clone(),
            suffixes: r.suffixes.clone(),
            subject_namespaces,
            role_ref,
            shown,
        })
    }

    /// Whether `r` may be referred to by it at all
    /// (`resWrangler.SubsetThatCouldBeReferencedByResource`) and is in its namespace
    /// (`Filter.sameCurrentNamespaceAsReferrer`).
    fn may_refer_to(&self, r: &Referral) -> bool {
        if self.cluster_scoped || r.cluster_scoped {
            return true;
        }
        let same = effective_namespace(&self.namespace) == effective_namespace(&r.namespace);
        let subset = same || self.subject_namespaces.contains(&r.namespace);
        subset && (same || r.kind == "ServiceAccount")
    }
}

/// One field spec of one name reference, applied to one referrer (`nameref.Filter`).
struct Filter<'a> {
    referrer: &'a Referrer,
    referrals: &'a Referrals,
    target: &'a Gvk,
    role_ref: bool,
}

impl Filter<'_> {
    /// `Filter.set`: the node at the end of the field's path.
    fn set(&self, node: &mut Value) -> Result<(), String> {
        match node {
            Value::Null => Ok(()),
            Value::Object(m) => self.set_mapping(m),
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::Null => {}
                        Value::Object(m) => self.set_mapping(m)?,
                        Value::Array(_) => {
                            return Err("a list entry must be a string or a mapping".into())
                        }
                        scalar => self.set_scalar(scalar)?,
                    }
                }
                Ok(())
            }
            scalar => self.set_scalar(scalar),
        }
    }

    fn set_scalar(&self, node: &mut Value) -> Result<(), String> {
        let old = scalar_text(node);
        let candidates: Vec<&Referral> = self.referrals.named(&old).collect();
        let same = |c: &[&Referral]| c.iter().all(|r| r.name == c[0].name);
        if let Some(referral) = self.select(&old, candidates, same)? {
            if referral.name != old {
                *node = Value::String(referral.name.clone());
            }
        }
        Ok(())
    }

    /// A mapping that names an object by `name`, and perhaps `namespace`: both are written.
    fn set_mapping(&self, m: &mut Map<String, Value>) -> Result<(), String> {
        let old = match m.get("name") {
            Some(v) => scalar_text(v),
            None => return Err("path config error; no 'name' field in node".into()),
        };
        let named = self.referrals.named(&old);
        let candidates: Vec<&Referral> = match m.get("namespace") {
            None => named.collect(),
            Some(ns) => {
                // `GroupedByOriginalNamespace` when it has the namespace, else
                // `GroupedByCurrentNamespace`; objects without a namespace are in neither.
                let ns = scalar_text(ns);
                let original = self.referrals.original_namespaces.contains(&ns);
                named
                    .filter(|r| !r.cluster_scoped)
                    .filter(|r| {
                        if original {
                            r.original_namespace == ns
                        } else {
                            effective_namespace(&r.namespace) == ns
                        }
                    })
                    .collect()
            }
        };
        let same = |c: &[&Referral]| {
            c.iter()
                .all(|r| r.name == c[0].name && r.namespace == c[0].namespace)
        };
        let Some(referral) = self.select(&old, candidates, same)? else {
            return Ok(());
        };
        if referral.name == old && referral.namespace.is_empty() {
            return Ok(());
        }
        m.insert("name".into(), Value::String(referral.name.clone()));
        if !referral.namespace.is_empty() {
            m.insert(
                "namespace".into(),
                Value::String(referral.namespace.clone()),
            );
        }
        Ok(())
    }

    /// The object a field holding `old` names (`Filter.selectReferral`): one of `candidates`
    /// once had that name, is of the reference's kind (and of the kind a `roleRef` names)
    /// and may be referred to; of several, those whose name affixes are the referrer's; of
    /// several still alike by `identical`, the first. Several that differ fail.
    fn select<'r>(
        &self,
        old: &str,
        candidates: Vec<&'r Referral>,
        identical: impl Fn(&[&'r Referral]) -> bool,
    ) -> Result<Option<&'r Referral>, String> {
        let role_ref = match (&self.referrer.role_ref, self.role_ref) {
            (Some((group, kind)), true) => Some(Gvk {
                group: group.clone(),
                version: String::new(),
                kind: kind.clone(),
            }),
            _ => None,
        };
        let c: Vec<&Referral> = candidates
            .into_iter()
            .filter(|r| r.previous_names.iter().any(|n| n == old))
            .filter(|r| self.target.selects(r.gvk()))
            .filter(|r| role_ref.as_ref().is_none_or(|g| g.selects(r.gvk())))
            .filter(|r| self.referrer.may_refer_to(r))
            .collect();
        if c.len() == 1 {
            return Ok(Some(c[0]));
        }
        let affixed = |c: Vec<&'r Referral>, allow_empty: bool| -> Vec<&'r Referral> {
            c.into_iter()
                .filter(|r| {
                    affixes_equal(&r.prefixes, &self.referrer.prefixes, allow_empty)
                        && affixes_equal(&r.suffixes, &self.referrer.suffixes, allow_empty)
                })
                .collect()
        };
        let mut c = affixed(c, true);
        if c.len() > 1 {
            c = affixed(c, false);
        }
        match c.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one)),
            _ if identical(&c) => Ok(Some(c[0])),
            _ => Err(format!(
                "found multiple possible referrals: {}",
                c.iter()
                    .map(|r| format!("{} {}/{}", r.kind, r.namespace, r.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

/// `Resource.PrefixesSuffixesEquals` for one of the two lists: `allow_empty` lets an empty
/// list match any.
fn affixes_equal(a: &[String], b: &[String], allow_empty: bool) -> bool {
    (allow_empty && (a.is_empty() || b.is_empty())) || same_ending(a, b)
}

/// kustomize `utils.SameEndingSubSlice`: the shorter list is the end of the longer; an empty
/// list ends only an empty one.
fn same_ending(a: &[String], b: &[String]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.is_empty() {
        return long.is_empty();
    }
    long.ends_with(short)
}

/// A scalar as YAML writes it (go-yaml's `Node.Value`).
fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

/// `fieldspec.Filter`: `set` called on each node at the end of `path`, a list on the way
/// walked entry by entry; a missing or null field ends the walk.
fn walk(
    node: &mut Value,
    path: &[String],
    set: &mut dyn FnMut(&mut Value) -> Result<(), String>,
) -> Result<(), String> {
    let Some((first, rest)) = path.split_first() else {
        return set(node);
    };
    match node {
        Value::Null => Ok(()),
        Value::Array(items) => items.iter_mut().try_for_each(|i| walk(i, path, set)),
        Value::Object(m) => {
            let key = first.strip_suffix("[]").unwrap_or(first);
            if key.is_empty() {
                return Err("cannot set or create an empty field name".into());
            }
            match m.get_mut(key) {
                Some(v) => walk(v, rest, set),
                None => Ok(()),
            }
        }
        _ => Err("expected sequence or mapping node".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_kustomizes() {
        let d = Config::defaults();
        let cm = d
            .refs
            .iter()
            .find(|b| b.target.kind == "ConfigMap")
            .unwrap();
        assert!(cm
            .referrers
            .iter()
            .any(|s| s.gvk.kind == "Deployment"
                && s.path == "spec/template/spec/volumes/configMap/name"));
        assert_eq!(d.refs.len(), 16);
    }

    #[test]
    fn a_path_keeps_an_escaped_slash_in_its_key() {
        assert_eq!(
            path_splitter(
                r"metadata/annotations/nginx.ingress.kubernetes.io\/auth-secret",
                '/'
            ),
            [
                "metadata",
                "annotations",
                "nginx.ingress.kubernetes.io/auth-secret"
            ]
        );
    }

    #[test]
    fn a_config_is_read_strictly_and_merged_once() {
        let doc = serde_json::json!({"nameReference": [{"kind": "ConfigMap", "version": "v1",
            "fieldSpecs": [{"path": "spec/valuesFrom/name", "kind": "HelmRelease"},
                           {"path": "spec/template/spec/volumes/configMap/name", "kind": "Deployment"}]}]});
        let mut c = Config::defaults().clone();
        let before = c.refs.iter().map(|b| b.referrers.len()).sum::<usize>();
        c.merge(Config::parse(&doc).unwrap()).unwrap();
        assert_eq!(
            c.refs.iter().map(|b| b.referrers.len()).sum::<usize>(),
            before + 1
        );
        let bad = serde_json::json!({"nameReferences": []});
        assert_eq!(
            Config::parse(&bad).unwrap_err(),
            "unknown field \"nameReferences\""
        );
        let folded = serde_json::json!({"NameReference": [{"Kind": "Secret"}]});
        assert_eq!(
            Config::parse(&folded).unwrap().refs[0].target.kind,
            "Secret"
        );
    }

    #[test]
    fn affixes_match_by_their_ending() {
        let v = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(same_ending(&v(&["a", "b"]), &v(&["b"])));
        assert!(!same_ending(&v(&["a", "b"]), &v(&["a"])));
        assert!(!same_ending(&v(&[]), &v(&["a"])));
        assert!(same_ending(&v(&[]), &v(&[])));
        assert!(affixes_equal(&v(&[]), &v(&["a"]), true));
    }
}
