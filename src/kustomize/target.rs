//! Kustomize patch targets: which objects a `target` selects, by group, version, kind,
//! name or namespace (anchored regular expressions) and label or annotation selector, as
//! kustomize reads them.

use regex::Regex;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use super::error::{SelectorProblem, TargetError};

#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) group: Option<(String, Regex)>,
    pub(crate) version: Option<(String, Regex)>,
    pub(crate) kind: Option<(String, Regex)>,
    pub(crate) name: Option<(String, Regex)>,
    pub(crate) namespace: Option<(String, Regex)>,
    pub(crate) labels: Option<LabelSelector>,
    pub(crate) annotations: Option<LabelSelector>,
}

#[derive(Debug, Clone)]
pub(crate) struct LabelSelector(Vec<Requirement>);

#[derive(Debug, Clone)]
enum Requirement {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// Any object a kustomize patch target may select (the builder applies patches to every
/// kind, not only Flux Kustomizations).
#[derive(Debug, Clone, Copy)]
pub struct ObjectRef<'a> {
    /// API group; empty for the core group.
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub namespace: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub annotations: &'a BTreeMap<String, String>,
}

/// A kustomize patch `target`, parsed once: literal or regular-expression names and
/// namespaces, label and annotation selectors, as kustomize reads them.
#[derive(Debug, Clone)]
pub struct PatchTarget(Target);

impl PatchTarget {
    pub fn parse(v: &Value, what: &str) -> Result<PatchTarget, TargetError> {
        parse_target(v, &format!("{what}.target")).map(PatchTarget)
    }

    /// A selector of the same form that messages name `what` itself (a replacement's
    /// `select` and `reject`).
    pub(crate) fn parse_selector(v: &Value, what: &str) -> Result<PatchTarget, TargetError> {
        parse_target(v, what).map(PatchTarget)
    }

    /// The one name the target selects, when it gives a name with no regular-expression
    /// syntax: kustomize anchors a target's name (`^name$`), so such a name matches only
    /// itself. Letters, digits, `-` and `_` are literal in a pattern; a `.` is not (`a.b`
    /// selects `axb` too), so a name holding one is not exact.
    pub fn exact_name(&self) -> Option<&str> {
        let (name, _) = self.0.name.as_ref()?;
        name.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            .then_some(name.as_str())
    }

    /// Whether the target reads labels or annotations (a selector of either).
    pub fn reads_metadata_maps(&self) -> bool {
        self.0.labels.is_some() || self.0.annotations.is_some()
    }

    /// Whether the target selects `obj` (every field given must match: kustomize's
    /// `SelectorRegex`, where group, version and kind are anchored patterns too).
    pub fn matches(&self, obj: &ObjectRef) -> bool {
        self.0
            .selects_id(obj.group, obj.version, obj.kind, obj.name, obj.namespace)
            && self.selects_maps(obj.labels, obj.annotations)
    }

    /// Whether the target's label and annotation selectors (if any) select these maps.
    pub(crate) fn selects_maps(
        &self,
        labels: &BTreeMap<String, String>,
        annotations: &BTreeMap<String, String>,
    ) -> bool {
        let t = &self.0;
        t.labels.as_ref().is_none_or(|s| s.matches(labels))
            && t.annotations
                .as_ref()
                .is_none_or(|s| s.matches(annotations))
    }

    /// Whether the target gives no group, version, kind, name or namespace
    /// (kustomize's `ResId.IsEmpty`).
    pub(crate) fn id_is_empty(&self) -> bool {
        let t = &self.0;
        [&t.group, &t.version, &t.kind, &t.name, &t.namespace]
            .iter()
            .all(|f| f.is_none())
    }

    /// Whether the target's group, version, kind, name and namespace patterns select this id
    /// (`SelectorRegex.MatchGvk`, `MatchName`, `MatchNamespace`).
    pub(crate) fn selects_id(
        &self,
        group: &str,
        version: &str,
        kind: &str,
        name: &str,
        namespace: &str,
    ) -> bool {
        self.0.selects_id(group, version, kind, name, namespace)
    }
}

impl Target {
    fn selects_id(&self, group: &str, version: &str, kind: &str, name: &str, ns: &str) -> bool {
        let is = |want: &Option<(String, Regex)>, have: &str| {
            want.as_ref().is_none_or(|(_, re)| re.is_match(have))
        };
        is(&self.group, group)
            && is(&self.version, version)
            && is(&self.kind, kind)
            && is(&self.name, name)
            && is(&self.namespace, ns)
    }
}

impl LabelSelector {
    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Eq(k, v) => labels.get(k) == Some(v),
            Requirement::NotEq(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => !labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
        })
    }
}

/// Parses a Kubernetes label selector (`k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`,
/// `k notin (a,b)`, comma = AND).
fn parse_selector(s: &str, what: &str) -> Result<LabelSelector, TargetError> {
    let bad = |problem: SelectorProblem| TargetError::Selector {
        what: what.to_string(),
        selector: s.to_string(),
        problem,
    };
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| bad(SelectorProblem::UnbalancedClose))?
            }
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(bad(SelectorProblem::UnbalancedOpen));
    }
    parts.push(&s[start..]);
    if s.trim().is_empty() {
        return Ok(LabelSelector(Vec::new()));
    }
    let mut reqs = Vec::new();
    for part in parts {
        let p = part.trim();
        if p.is_empty() {
            return Err(bad(SelectorProblem::EmptyRequirement));
        }
        let req = if let Some(k) = p.strip_prefix('!') {
            Requirement::NotExists(label_key(k.trim(), &bad)?)
        } else if let Some((key, negate, set)) = set_requirement(p) {
            let inner = set
                .strip_prefix('(')
                .and_then(|x| x.strip_suffix(')'))
                .ok_or_else(|| bad(SelectorProblem::NoValueList))?;
            let mut values = Vec::new();
            for v in inner.split(',') {
                values.push(label_value(v.trim(), &bad)?);
            }
            let key = label_key(key, &bad)?;
            if negate {
                Requirement::NotIn(key, values)
            } else {
                Requirement::In(key, values)
            }
        } else if let Some((k, v)) = p.split_once("!=") {
            Requirement::NotEq(label_key(k.trim(), &bad)?, label_value(v.trim(), &bad)?)
        } else if let Some((k, v)) = p.split_once("==") {
            Requirement::Eq(label_key(k.trim(), &bad)?, label_value(v.trim(), &bad)?)
        } else if let Some((k, v)) = p.split_once('=') {
            Requirement::Eq(label_key(k.trim(), &bad)?, label_value(v.trim(), &bad)?)
        } else {
            Requirement::Exists(label_key(p, &bad)?)
        };
        reqs.push(req);
    }
    Ok(LabelSelector(reqs))
}

/// Splits `key in (a,b)` / `key notin (a,b)` into key, negation and the `(...)` part.
fn set_requirement(p: &str) -> Option<(&str, bool, &str)> {
    let i = p.find([' ', '\t'])?;
    let (key, rest) = (&p[..i], p[i..].trim_start());
    let (negate, set) = if let Some(r) = rest.strip_prefix("notin") {
        (true, r)
    } else {
        (false, rest.strip_prefix("in")?)
    };
    let set = set.trim();
    set.starts_with('(').then_some((key, negate, set))
}

fn label_key(k: &str, bad: &dyn Fn(SelectorProblem) -> TargetError) -> Result<String, TargetError> {
    if k.is_empty()
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
    {
        return Err(bad(SelectorProblem::Key(k.to_string())));
    }
    Ok(k.to_string())
}

fn label_value(
    v: &str,
    bad: &dyn Fn(SelectorProblem) -> TargetError,
) -> Result<String, TargetError> {
    if !v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(bad(SelectorProblem::Value(v.to_string())));
    }
    Ok(v.to_string())
}

/// A string field of a mapping; absent, null and "" are None.
pub(crate) fn opt_str(
    m: &Map<String, Value>,
    field: &str,
    what: &str,
) -> Result<Option<String>, TargetError> {
    match m.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(TargetError::NotAString {
            what: what.to_string(),
            field: field.to_string(),
            value: other.clone(),
        }),
    }
}

/// The pattern `re` matching whole strings, as kustomize matches a target's fields (Go's
/// regexp, `goregex`). Compiled
/// once for each pattern: a parent's `patches` are written into every child it applies, so
/// one pattern is read by each of their builds, at every step of a history. The patterns kept
/// are bounded (a repository may write any number of them): past the bound they are let go.
fn anchored(re: &str, what: &str) -> Result<Regex, TargetError> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    const KEPT: usize = 4096;
    static COMPILED: Mutex<Option<HashMap<String, Regex>>> = Mutex::new(None);
    let lock = || COMPILED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(kept) = lock().get_or_insert_default().get(re) {
        return Ok(kept.clone());
    }
    let compiled =
        crate::goregex::compile(&format!("^(?:{re})$")).map_err(|e| TargetError::Regex {
            what: what.to_string(),
            pattern: re.to_string(),
            error: e.to_string(),
        })?;
    let mut kept = lock();
    let kept = kept.get_or_insert_default();
    if kept.len() >= KEPT {
        kept.clear();
    }
    kept.insert(re.to_string(), compiled.clone());
    Ok(compiled)
}

pub(crate) fn parse_target(v: &Value, what: &str) -> Result<Target, TargetError> {
    let what = what.to_string();
    let m = v
        .as_object()
        .ok_or_else(|| TargetError::NotAMapping { what: what.clone() })?;
    let pattern = |field: &str| -> Result<Option<(String, Regex)>, TargetError> {
        match opt_str(m, field, &what)? {
            Some(p) => {
                let re = anchored(&p, &format!("{what}.{field}"))?;
                Ok(Some((p, re)))
            }
            None => Ok(None),
        }
    };
    let labels = match opt_str(m, "labelSelector", &what)? {
        Some(s) => Some(parse_selector(&s, &format!("{what}.labelSelector"))?),
        None => None,
    };
    let annotations = match opt_str(m, "annotationSelector", &what)? {
        Some(s) => Some(parse_selector(&s, &format!("{what}.annotationSelector"))?),
        None => None,
    };
    Ok(Target {
        group: pattern("group")?,
        version: pattern("version")?,
        kind: pattern("kind")?,
        name: pattern("name")?,
        namespace: pattern("namespace")?,
        labels,
        annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_forms_and_errors() {
        let l: BTreeMap<String, String> = [("a", "1"), ("b", "2")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let ok = |sel: &str| parse_selector(sel, "t").unwrap().matches(&l);
        assert!(ok("a==1"));
        assert!(ok("a=1, b"));
        assert!(ok("a!=2"));
        assert!(ok("c!=2"));
        assert!(ok("b notin (3,4)"));
        assert!(ok("c notin (3)"));
        assert!(!ok("c in (3)"));
        assert!(!ok("!a"));
        assert!(ok(""));
        for bad in ["a in 1", "a=1,,b", "a in (1", "=1", "a b"] {
            assert!(parse_selector(bad, "t").is_err(), "{bad}");
        }
    }
}
