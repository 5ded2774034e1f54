//! kustomize's `replacements` (api/filters/replacement at sigs.k8s.io/kustomize/api v0.21.1,
//! the version kustomize-controller builds with): each replacement reads one value, from the
//! one object its `source` selects or from `sourceValue`, and writes it to every field its
//! `targets` name, in order, each replacement seeing what the ones before it wrote. A
//! replacement may set a Flux Kustomization's `spec.targetNamespace` or an object's own
//! name or namespace, so it decides which objects a build yields.
//!
//! Paths are kyaml's: `a.b`, `[a.b]` or `a\.b` for a key holding a dot, `[name=x]` for the
//! elements of a list whose `name` matches the pattern `x` (unanchored, as kyaml's
//! `PathMatcher` matches it; the source's lookup takes the first element whose `name` is
//! `x`), `[=x]` for a list of scalars, a number for an index, `-` for the last element
//! (source only), `*` for every element of a list (targets only). A target path that runs
//! into a string holding JSON or YAML continues inside it, and the text is written back
//! (`setValueInStructuredData`): JSON as Go's encoding/json writes it (keys sorted, two-space
//! indent when the text had both new lines and double spaces), YAML as fluxwave's emitter
//! writes it, which may lay the text out differently than kyaml (the values are the same).
//!
//! `tests/fixtures/upstream/replacements.tsv` holds the library's own answers to a table of
//! cases; `agrees_with_the_library_on_its_table` holds this port to it.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

use super::object::{effective_namespace, group_of, path_splitter, string_map, version_of};
use super::resource::Resource;
use super::target::PatchTarget;

/// One replacement as kustomize reads it (`types.Replacement`).
#[derive(Debug)]
pub(super) struct Replacement {
    source: Source,
    targets: Vec<TargetSelector>,
}

#[derive(Debug)]
enum Source {
    /// `sourceValue`: a scalar with no tag, read as YAML reads a plain scalar where it lands.
    Value(String),
    Object(Box<FromObject>),
}

/// A source that is a field of the one object its selector selects.
#[derive(Debug)]
struct FromObject {
    selector: IdSelector,
    /// What messages call the selector (`types.SourceSelector.String`).
    shown: String,
    /// The field path as written (`metadata.name` when none is), and split.
    field_path: String,
    path: Vec<String>,
    options: Options,
}

/// A source's id selector (`resid.ResId`, matched by `ResId.IsSelectedBy`: every field given
/// must be equal; no namespace is `default`).
#[derive(Debug, Default)]
struct IdSelector {
    group: String,
    version: String,
    kind: String,
    name: String,
    namespace: String,
}

#[derive(Debug)]
struct TargetSelector {
    select: PatchTarget,
    reject: Vec<PatchTarget>,
    paths: Vec<(String, Vec<String>)>,
    options: Options,
}

/// `types.FieldOptions`.
#[derive(Debug, Default, Clone)]
struct Options {
    delimiter: String,
    index: i64,
    create: bool,
}

/// The value a replacement writes: a scalar with its text and YAML tag (kyaml copies a
/// scalar's text into a scalar target, which keeps its own tag), or a whole mapping or list.
#[derive(Debug, Clone)]
enum Node {
    Scalar(String, Tag),
    Whole(Value),
}

/// A scalar's YAML tag; `Plain` for `sourceValue`, which has none and is resolved where it
/// lands.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tag {
    Str,
    Int,
    Float,
    Bool,
    Null,
    Plain,
}

/// Why a replacement fails; kustomize fails the build there too.
pub(super) type Failed = String;

/// Reads `replacements` entries (each one replacement, inline) as Flux's generator and
/// kustomize read them: Go's encoding/json, so that field names match whatever their case and
/// unknown fields are left out, but a value of the wrong type fails.
pub(super) fn parse(v: &Value) -> Result<Replacement, Failed> {
    let m = v.as_object().ok_or("a replacement must be a mapping")?;
    let source = match (field(m, "source"), field(m, "sourceValue")) {
        (Some(s), Some(_)) if !s.is_null() => {
            return Err("value and resource selectors are mutually exclusive".into())
        }
        (_, Some(Value::String(s))) => Source::Value(s.clone()),
        (_, Some(Value::Null) | None) => match field(m, "source") {
            Some(s @ Value::Object(_)) => source(s)?,
            Some(Value::Null) | None => {
                return Err("replacements must specify a source and at least one target".into())
            }
            Some(other) => return Err(not_a("source", "a mapping", other)),
        },
        (_, Some(other)) => return Err(not_a("sourceValue", "a string", other)),
    };
    let targets = match field(m, "targets") {
        Some(Value::Array(ts)) if !ts.is_empty() => ts
            .iter()
            .enumerate()
            .map(|(i, t)| target(t, i))
            .collect::<Result<_, _>>()?,
        Some(Value::Array(_)) | Some(Value::Null) | None => {
            return Err("replacements must specify a source and at least one target".into())
        }
        Some(other) => return Err(not_a("targets", "a list", other)),
    };
    Ok(Replacement { source, targets })
}

/// The `path` of a `replacements` entry, when it has one; an entry with both a path and an
/// inline source or targets is refused (`ReplacementTransformerPlugin.Config`).
pub(super) fn path(m: &Map<String, Value>) -> Option<Result<String, Failed>> {
    let path = match string(m, "path") {
        Ok(p) if p.is_empty() => return None,
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    let inline = field(m, "source").is_some_and(|s| !s.is_null())
        || field(m, "targets").is_some_and(|t| t.as_array().is_some_and(|a| !a.is_empty()));
    Some(if inline {
        Err("cannot specify both path and inline replacement".into())
    } else {
        Ok(path)
    })
}

/// Field `name` of `m` as Go's encoding/json finds it: the exact key, else one equal to it
/// without regard to case (`keys::fold`).
fn field<'v>(m: &'v Map<String, Value>, name: &str) -> Option<&'v Value> {
    m.get(name).or_else(|| {
        let folded = super::keys::fold(name);
        m.iter()
            .find(|(k, _)| super::keys::fold(k) == folded)
            .map(|(_, v)| v)
    })
}

fn not_a(field: &str, what: &str, v: &Value) -> Failed {
    format!("`{field}` must be {what}, not {v}")
}

fn string(m: &Map<String, Value>, name: &str) -> Result<String, Failed> {
    match field(m, name) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(not_a(name, "a string", other)),
    }
}

fn options(m: &Map<String, Value>) -> Result<Options, Failed> {
    let o = match field(m, "options") {
        None | Some(Value::Null) => return Ok(Options::default()),
        Some(Value::Object(o)) => o,
        Some(other) => return Err(not_a("options", "a mapping", other)),
    };
    let index = match field(o, "index") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) => n
            .as_i64()
            .ok_or_else(|| not_a("index", "an integer", &Value::Number(n.clone())))?,
        Some(other) => return Err(not_a("index", "an integer", other)),
    };
    let create = match field(o, "create") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(not_a("create", "a boolean", other)),
    };
    Ok(Options {
        delimiter: string(o, "delimiter")?,
        index,
        create,
    })
}

fn source(v: &Value) -> Result<Source, Failed> {
    let Value::Object(m) = v else {
        return Err(not_a("source", "a mapping", v));
    };
    let selector = IdSelector {
        group: string(m, "group")?,
        version: string(m, "version")?,
        kind: string(m, "kind")?,
        name: string(m, "name")?,
        namespace: string(m, "namespace")?,
    };
    let given = string(m, "fieldPath")?;
    let options = options(m)?;
    // `SourceSelector.String`: the id, then the field path and options when given.
    let mut shown = vec![selector.shown()];
    if !given.is_empty() {
        shown.push(given.clone());
    }
    if !options.delimiter.is_empty() || options.create {
        shown.push(format!(
            "{}({}), create={}",
            options.delimiter, options.index, options.create
        ));
    }
    let given = if given.is_empty() {
        "metadata.name".to_string()
    } else {
        given
    };
    Ok(Source::Object(Box::new(FromObject {
        selector,
        shown: shown.join(":"),
        path: bounded(split_path(&given))?,
        field_path: given,
        options,
    })))
}

fn target(v: &Value, i: usize) -> Result<TargetSelector, Failed> {
    let Value::Object(m) = v else {
        return Err(not_a(&format!("targets[{i}]"), "a mapping", v));
    };
    let selector =
        |v: &Value, what: &str| PatchTarget::parse_selector(v, what).map_err(|e| e.to_string());
    let select = match field(m, "select") {
        Some(s @ Value::Object(_)) => selector(s, &format!("targets[{i}].select"))?,
        Some(Value::Null) | None => return Err("target must specify resources to select".into()),
        Some(other) => return Err(not_a("select", "a mapping", other)),
    };
    let reject = match field(m, "reject") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(rs)) => rs
            .iter()
            .enumerate()
            .map(|(j, r)| selector(r, &format!("targets[{i}].reject[{j}]")))
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(not_a("reject", "a list", other)),
    };
    let paths: Vec<String> = match field(m, "fieldPaths") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ps)) => ps
            .iter()
            .map(|p| match p {
                Value::String(s) => Ok(s.clone()),
                other => Err(not_a("fieldPaths", "a list of strings", other)),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(not_a("fieldPaths", "a list", other)),
    };
    let paths = if paths.is_empty() {
        vec!["metadata.name".to_string()]
    } else {
        paths
    };
    Ok(TargetSelector {
        select,
        reject,
        paths: paths
            .into_iter()
            .map(|p| {
                let split = bounded(split_path(&p))?;
                Ok((p, split))
            })
            .collect::<Result<_, Failed>>()?,
        options: options(m)?,
    })
}

impl IdSelector {
    /// `ResId.String`: `kind.version.group/name.namespace`, each left empty as given (kyaml
    /// writes `[noGrp]`, `[noVer]`, `[noKind]`, `[noName]`, `[noNs]` in their place).
    fn shown(&self) -> String {
        let or = |s: &str, none: &str| {
            if s.is_empty() {
                none.to_string()
            } else {
                s.to_string()
            }
        };
        format!(
            "{}.{}.{}/{}.{}",
            or(&self.kind, "[noKind]"),
            or(&self.version, "[noVer]"),
            or(&self.group, "[noGrp]"),
            or(&self.name, "[noName]"),
            or(&self.namespace, "[noNs]")
        )
    }

    fn selects(&self, id: &Id) -> bool {
        (self.name.is_empty() || self.name == id.name)
            && (self.namespace.is_empty()
                || effective_namespace(&self.namespace) == effective_namespace(&id.namespace))
            && (self.group.is_empty() || self.group == id.group)
            && (self.version.is_empty() || self.version == id.version)
            && (self.kind.is_empty() || self.kind == id.kind)
    }
}

/// One id of an object (`utils.MakeResIds`: its current one, then those it had before a
/// transformer renamed it).
struct Id {
    group: String,
    version: String,
    kind: String,
    name: String,
    namespace: String,
}

fn ids(r: &Resource) -> Vec<Id> {
    let api = r.api_version();
    let id = |name: &str, namespace: &str| Id {
        group: group_of(api).to_string(),
        version: version_of(api).to_string(),
        kind: r.kind().to_string(),
        name: name.to_string(),
        namespace: namespace.to_string(),
    };
    std::iter::once(id(r.meta_str("name"), r.meta_str("namespace")))
        .chain(r.previous.iter().map(|(n, s)| id(n, s)))
        .collect()
}

/// kyaml's `SmarterPathSplitter` with `.`: a leading `.` dropped, `\.` kept in its part, a
/// bracketed part kept whole (with its brackets when it holds `=`, else without them).
fn split_path(path: &str) -> Vec<String> {
    let split = path_splitter(path.strip_prefix('.').unwrap_or(path), '.');
    let mut out = Vec::new();
    let mut i = 0;
    while i < split.len() {
        let elem = &split[i];
        if elem.starts_with('[') && !elem.ends_with(']') {
            let mut bracketed = vec![elem.clone()];
            while i < split.len() - 1 {
                i += 1;
                bracketed.push(split[i].clone());
                if split[i].ends_with(']') {
                    break;
                }
            }
            let joined = bracketed.join(".");
            if joined.contains('=') {
                out.push(joined);
            } else {
                out.push(joined.trim_matches(['[', ']']).to_string());
            }
        } else {
            out.push(elem.clone());
        }
        i += 1;
    }
    out
}

/// The most parts a field path may have: a path is walked part by part, and no object is
/// nested this deep.
const MAX_PARTS: usize = 256;

/// `parts`, unless there are more than `MAX_PARTS`.
fn bounded(parts: Vec<String>) -> Result<Vec<String>, Failed> {
    if parts.len() > MAX_PARTS {
        return Err(format!(
            "a field path of {} parts is deeper than any object ({MAX_PARTS} at most)",
            parts.len()
        ));
    }
    Ok(parts)
}

/// `[name=value]`: the field and the value (kyaml `IsListIndex`, `SplitIndexNameValue`).
fn list_index(part: &str) -> Option<Result<(&str, &str), Failed>> {
    let inner = part.strip_prefix('[')?.strip_suffix(']')?;
    Some(inner.split_once('=').ok_or_else(|| {
        "list path element must contain fieldName=fieldValue for element to match".to_string()
    }))
}

/// A scalar's text as kyaml holds it (`yaml.Node.Value`).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Object(_) | Value::Array(_))
}

fn tag(v: &Value) -> Tag {
    match v {
        Value::String(_) => Tag::Str,
        Value::Number(n) if n.is_f64() => Tag::Float,
        Value::Number(_) => Tag::Int,
        Value::Bool(_) => Tag::Bool,
        _ => Tag::Null,
    }
}

/// A scalar's text read as a value of `tag` (how the built object decodes it); `None` where
/// it is no such value, which fails the build.
fn typed(text: &str, tag: Tag) -> Option<Value> {
    let int = |t: &str| t.parse::<i64>().ok().map(Value::from);
    let float = |t: &str| {
        int(t).or_else(|| {
            t.parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
        })
    };
    let boolean = |t: &str| match t {
        "true" | "True" | "TRUE" => Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => Some(Value::Bool(false)),
        _ => None,
    };
    match tag {
        Tag::Str => Some(Value::String(text.to_string())),
        Tag::Int => int(text),
        Tag::Float => float(text),
        Tag::Bool => boolean(text),
        Tag::Null => None,
        Tag::Plain => Some(match text {
            "" | "~" | "null" | "Null" | "NULL" => Value::Null,
            t => int(t)
                .or_else(|| boolean(t))
                .or_else(|| {
                    let number = t.trim_start_matches(['-', '+']);
                    number
                        .starts_with(|c: char| c.is_ascii_digit() || c == '.')
                        .then(|| float(t))
                        .flatten()
                })
                .unwrap_or_else(|| Value::String(t.to_string())),
        }),
    }
}

/// Applies `replacements` to `objects` (each whole), in order.
pub(super) fn apply(replacements: &[Replacement], objects: &mut [Resource]) -> Result<(), Failed> {
    for r in replacements {
        let value = match &r.source {
            Source::Value(s) => Node::Scalar(s.clone(), Tag::Plain),
            Source::Object(from) => {
                let FromObject {
                    selector,
                    shown,
                    field_path,
                    path,
                    options,
                } = &**from;
                let mut found = None;
                for (i, o) in objects.iter().enumerate() {
                    if ids(o).iter().any(|id| selector.selects(id)) {
                        if found.is_some() {
                            return Err(format!("multiple matches for selector {shown}"));
                        }
                        found = Some(i);
                    }
                }
                let i = found.ok_or_else(|| format!("nothing selected by {shown}"))?;
                let got = lookup(&objects[i].value, path)?;
                let empty = match got {
                    None | Some(Value::Null) => true,
                    Some(Value::Object(m)) => m.is_empty(),
                    Some(Value::Array(a)) => a.is_empty(),
                    _ => false,
                };
                let Some(got) = got.filter(|_| !empty) else {
                    return Err(format!(
                        "fieldPath `{field_path}` is missing for replacement source {}",
                        selector.shown()
                    ));
                };
                refine(options, got)?
            }
        };
        for t in &r.targets {
            for o in objects.iter_mut() {
                if selects(t, o) {
                    copy_to_target(&mut o.value, &value, t)?;
                }
            }
        }
    }
    Ok(())
}

/// Whether target selector `t` selects object `o` (`applyReplacement`: its label and
/// annotation selectors, no `reject` whose selectors match, no `reject` whose id patterns
/// match any of its ids, and one of its ids matched by `select`).
fn selects(t: &TargetSelector, o: &Resource) -> bool {
    let labels: BTreeMap<String, String> = string_map(&o.value, "labels");
    let annotations: BTreeMap<String, String> = string_map(&o.value, "annotations");
    if !t.select.selects_maps(&labels, &annotations) {
        return false;
    }
    let ids = ids(o);
    for reject in &t.reject {
        let maps = reject.reads_metadata_maps();
        if maps && reject.selects_maps(&labels, &annotations) {
            return false;
        }
        if !reject.id_is_empty()
            && ids.iter().any(|id| {
                reject.selects_id(&id.group, &id.version, &id.kind, &id.name, &id.namespace)
            })
        {
            return false;
        }
    }
    ids.iter().any(|id| {
        t.select
            .selects_id(&id.group, &id.version, &id.kind, &id.name, &id.namespace)
    })
}

/// `getRefinedValue`: with a delimiter, element `index` of the scalar split by it.
fn refine(options: &Options, v: &Value) -> Result<Node, Failed> {
    if options.delimiter.is_empty() {
        return Ok(node_of(v));
    }
    if !is_scalar(v) {
        return Err("delimiter option can only be used with scalar nodes".into());
    }
    let whole = text(v);
    let parts: Vec<&str> = whole.split(options.delimiter.as_str()).collect();
    usize::try_from(options.index)
        .ok()
        .and_then(|i| parts.get(i))
        .map(|p| Node::Scalar(p.to_string(), tag(v)))
        .ok_or_else(|| {
            format!(
                "options.index {} is out of bounds for value {whole}",
                options.index
            )
        })
}

fn node_of(v: &Value) -> Node {
    if is_scalar(v) {
        Node::Scalar(text(v), tag(v))
    } else {
        Node::Whole(v.clone())
    }
}

/// kyaml's `Lookup` (`PathGetter` without create): the value at `path`, `None` where it is
/// missing.
fn lookup<'v>(v: &'v Value, path: &[String]) -> Result<Option<&'v Value>, Failed> {
    let mut at = v;
    for part in path.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let next = if let Ok(i) = part.parse::<i64>() {
            if i < 0 {
                return Err(format!("array index {i} cannot be negative"));
            }
            let list = sequence(at)?;
            usize::try_from(i).ok().and_then(|i| list?.get(i))
        } else if part == "-" {
            sequence(at)?.and_then(|l| l.last())
        } else if part == "*" {
            return Err("wildcard is not supported in PathGetter".into());
        } else if let Some(index) = list_index(part) {
            let (key, want) = index?;
            sequence(at)?.and_then(|l| l.iter().find(|e| element_is(e, key, want)))
        } else {
            match at {
                Value::Object(m) => m.get(part),
                _ => None,
            }
        };
        match next {
            Some(n) => at = n,
            None => return Ok(None),
        }
    }
    Ok(Some(at))
}

/// Whether list element `e` is the one `[key=want]` names to kyaml's `ElementMatcher`: a
/// scalar whose text is `want` (`key` empty), or a mapping whose field `key` has the text
/// `want`. A mapping or a list has no text.
fn element_is(e: &Value, key: &str, want: &str) -> bool {
    let node_text = |v: &Value| if is_scalar(v) { text(v) } else { String::new() };
    match (key, e) {
        ("", e) => node_text(e) == want,
        (key, Value::Object(m)) => m.get(key).is_some_and(|f| node_text(f) == want),
        _ => false,
    }
}

/// The elements of a list; `None` for null (missing), an error for any other value (kyaml
/// `ErrorIfInvalid`).
fn sequence(v: &Value) -> Result<Option<&Vec<Value>>, Failed> {
    match v {
        Value::Array(a) => Ok(Some(a)),
        Value::Null => Ok(None),
        _ => Err("wrong node kind: expected SequenceNode".into()),
    }
}

/// `copyValueToTarget`: `value` written at each field path of `t` in `object`.
fn copy_to_target(object: &mut Value, value: &Node, t: &TargetSelector) -> Result<(), Failed> {
    let create = t.options.create;
    for (shown, path) in &t.paths {
        if in_structured_text(object, value, path, create)? {
            continue;
        }
        let missing = || {
            if create {
                format!("unable to find or create field {shown:?} in replacement target")
            } else {
                format!("unable to find field {shown:?} in replacement target")
            }
        };
        let mut found = 0;
        let mut result = Ok(());
        matched(object, path, create, value, &mut |field, made| {
            found += 1;
            if result.is_ok() {
                result = set_field(&t.options, field, made, value);
            }
        })
        .map_err(|e| format!("{}: {e}", missing()))?;
        result?;
        if found == 0 {
            return Err(missing());
        }
    }
    Ok(())
}

/// `setValueInStructuredData`: when a proper prefix of `path` reaches a string that parses as
/// a mapping or a list, `value` is written inside it at the rest of the path and the string
/// is written again. Whether it was.
fn in_structured_text(
    object: &mut Value,
    value: &Node,
    path: &[String],
    create: bool,
) -> Result<bool, Failed> {
    if path.len() < 2 {
        return Ok(false);
    }
    let mut prefix = None;
    for i in 1..path.len() {
        match lookup(object, &path[..i]) {
            Ok(Some(Value::String(s))) => {
                if let Some(parsed) = structured(s) {
                    prefix = Some((i, parsed, s.clone()));
                }
                break;
            }
            // A scalar that is not text (a number, a boolean) parses as itself: nothing
            // inside it can match.
            Ok(Some(v)) if is_scalar(v) && !v.is_null() => break,
            _ => {}
        }
    }
    let Some((i, mut parsed, original)) = prefix else {
        return Ok(false);
    };
    let (mut found, mut unwritable) = (0, false);
    let walked = matched(
        &mut parsed,
        &path[i..],
        create,
        value,
        &mut |field, made| {
            found += 1;
            // v0.21.1 writes no delimiter here: a scalar takes the text, anything else the value.
            let written = match value {
                Node::Scalar(t, _) if made => typed(t, Tag::Plain),
                Node::Scalar(t, _) if is_scalar(field) => typed(t, tag(field)),
                Node::Whole(_) if is_scalar(field) && !made => typed("", tag(field)),
                _ => whole_value(value),
            };
            match written {
                Some(w) => *field = w,
                None => unwritable = true,
            }
        },
    );
    if walked.is_err() || found == 0 || unwritable {
        return Ok(false);
    }
    let written = serialize(&parsed, &original);
    let Some(field) = lookup_mut(object, &path[..i]) else {
        return Ok(false);
    };
    *field = Value::String(written);
    Ok(true)
}

/// A string that YAML reads as a mapping or a list.
fn structured(s: &str) -> Option<Value> {
    let text = std::sync::Arc::new(s.to_string());
    match crate::yaml::parse_all("", &text).ok()?.as_mut_slice() {
        [v @ (Value::Object(_) | Value::Array(_))] => Some(v.take()),
        _ => None,
    }
}

/// `serializeStructuredData`: JSON when the text began with `{` or `[` (Go's encoding/json:
/// keys sorted, `<`, `>` and `&` escaped; indented by two spaces when the text had new lines
/// and double spaces), else YAML.
fn serialize(v: &Value, original: &str) -> String {
    let trimmed = original.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let sorted = sort_keys(v);
        let json = if original.contains('\n') && original.contains("  ") {
            serde_json::to_string_pretty(&sorted)
        } else {
            serde_json::to_string(&sorted)
        }
        .unwrap_or_default();
        json.replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
            .replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029")
    } else {
        crate::yaml::emit(v).trim().to_string()
    }
}

fn sort_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, Value> =
                m.iter().map(|(k, v)| (k, sort_keys(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

fn lookup_mut<'v>(v: &'v mut Value, path: &[String]) -> Option<&'v mut Value> {
    let mut at = v;
    for part in path.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        at = if let Ok(i) = part.parse::<usize>() {
            at.as_array_mut()?.get_mut(i)?
        } else if part == "-" {
            at.as_array_mut()?.last_mut()?
        } else if let Some(Ok((key, want))) = list_index(part) {
            at.as_array_mut()?
                .iter_mut()
                .find(|e| element_is(e, key, want))?
        } else {
            at.as_object_mut()?.get_mut(part)?
        };
    }
    Some(at)
}

/// What kyaml creates for a missing part before `next` (`getPathPartKind`): a list before an
/// index or `[a=b]`, a mapping before a field. At the end of the path it makes a node of the
/// value's kind with no tag, which the value is then written into (see `set_field`): null
/// here, handed on as made.
fn created(next: Option<&str>) -> Value {
    match next {
        Some(n) if list_index(n).is_some() || n.parse::<i64>().is_ok() => Value::Array(Vec::new()),
        Some(_) => Value::Object(Map::new()),
        None => Value::Null,
    }
}

/// kyaml's `PathMatcher`: every field at `path` in `v` handed to `each`, parts created
/// where missing when `create` is set (with whether the field itself was just made).
fn matched(
    v: &mut Value,
    path: &[String],
    create: bool,
    value: &Node,
    each: &mut dyn FnMut(&mut Value, bool),
) -> Result<(), Failed> {
    matched_made(v, path, create, value, false, each)
}

fn matched_made(
    v: &mut Value,
    path: &[String],
    create: bool,
    value: &Node,
    made: bool,
    each: &mut dyn FnMut(&mut Value, bool),
) -> Result<(), Failed> {
    let Some(part) = path.first() else {
        each(v, made);
        return Ok(());
    };
    let rest = &path[1..];
    let next = rest.first().map(String::as_str);
    if let Ok(idx) = part.parse::<i64>() {
        let Value::Array(list) = v else {
            return Err("wrong node kind: expected SequenceNode".into());
        };
        let idx = usize::try_from(idx).map_err(|_| format!("index {idx} is negative"))?;
        let made = list.len() == idx && create;
        if made {
            list.push(created(next));
        }
        let len = list.len();
        let elem = list
            .get_mut(idx)
            .ok_or_else(|| format!("index {idx} specified but only {len} elements found"))?;
        return matched_made(elem, rest, create, value, made, each);
    }
    if let Some(index) = list_index(part) {
        let (key, pattern) = index?;
        // kyaml matches the value with Go's regexp, unanchored (`PathMatcher.visitElem`).
        let re = crate::goregex::compile(pattern)?;
        let Value::Array(list) = v else {
            return if v.is_null() {
                Ok(())
            } else {
                Err("wrong node kind: expected SequenceNode".into())
            };
        };
        let hit = |e: &Value| match (key, e) {
            ("", e) => is_scalar(e) && re.is_match(&text(e)),
            (key, Value::Object(m)) => m.get(key).is_some_and(|f| re.is_match(&printed(f))),
            _ => false,
        };
        let mut any = false;
        for e in list.iter_mut() {
            if hit(e) {
                any = true;
                if key.is_empty() {
                    each(e, false);
                } else {
                    matched(e, rest, create, value, each)?;
                }
            }
        }
        if !any && create {
            let made = if key.is_empty() {
                typed(pattern, Tag::Plain).unwrap_or(Value::Null)
            } else {
                let mut m = Map::new();
                m.insert(
                    key.to_string(),
                    typed(pattern, Tag::Plain).unwrap_or(Value::Null),
                );
                Value::Object(m)
            };
            list.push(made);
            // Walked again: the element made now matches, and what lies under it is made.
            return matched(v, path, create, value, each);
        }
        return Ok(());
    }
    if part == "*" {
        let list = match v {
            Value::Array(list) => list,
            Value::Null => return Ok(()),
            _ => return Err("wrong node kind: expected SequenceNode".into()),
        };
        for e in list.iter_mut() {
            matched(e, rest, create, value, each)?;
        }
        return Ok(());
    }
    let Value::Object(m) = v else {
        if create {
            return Err(format!("cannot set field `{part}` on a scalar"));
        }
        return Ok(());
    };
    let made = !m.contains_key(part.as_str());
    if made {
        if !create {
            return Ok(());
        }
        m.insert(part.clone(), created(next));
    }
    let Some(field) = m.get_mut(part.as_str()) else {
        return Ok(());
    };
    if is_scalar(field) && !rest.is_empty() {
        // `handleStructuredDataInScalar`: a string holding a mapping or a list is walked
        // into, but what is written there is not kept.
        if let Value::String(s) = field {
            if let Some(mut parsed) = structured(s) {
                return matched(&mut parsed, rest, create, value, &mut |_, _| {});
            }
        }
        return Ok(());
    }
    matched_made(field, rest, create, value, made, each)
}

/// A field's value as kyaml prints it to match an element pattern (its YAML, trimmed).
fn printed(v: &Value) -> String {
    if is_scalar(v) {
        text(v)
    } else {
        crate::yaml::emit(v).trim().to_string()
    }
}

/// The value a whole (mapping or list) target takes.
fn whole_value(value: &Node) -> Option<Value> {
    match value {
        Node::Whole(v) => Some(v.clone()),
        Node::Scalar(t, tag) => typed(t, *tag),
    }
}

/// `setFieldValue`: with a delimiter, the value put into element `index` of the target split
/// by it (before the first for a negative index, after the last past the end); a scalar
/// target takes the value's text and keeps its own type; any other target is replaced. A
/// field just `made` is a node of the value's kind with no text and no tag, so a scalar
/// written there is read as YAML reads a plain scalar.
fn set_field(options: &Options, field: &mut Value, made: bool, value: &Node) -> Result<(), Failed> {
    if made && matches!(value, Node::Whole(_)) && options.delimiter.is_empty() {
        *field = whole_value(value).unwrap_or(Value::Null);
        return Ok(());
    }
    let mut value = value.clone();
    if !options.delimiter.is_empty() {
        if !is_scalar(field) && !made {
            return Err("delimiter option can only be used with scalar nodes".into());
        }
        let d = options.delimiter.as_str();
        let have = if made { String::new() } else { text(field) };
        let mut parts: Vec<&str> = have.split(d).collect();
        let v = match &value {
            Node::Scalar(t, _) => t.clone(),
            Node::Whole(_) => String::new(),
        };
        match usize::try_from(options.index) {
            Err(_) => parts.insert(0, &v),
            Ok(i) if i >= parts.len() => parts.push(&v),
            Ok(i) => parts[i] = &v,
        }
        let joined = parts.join(d);
        value = match value {
            Node::Scalar(_, tag) => Node::Scalar(joined, tag),
            Node::Whole(_) => Node::Scalar(joined, Tag::Str),
        };
    }
    if is_scalar(field) {
        let t = match &value {
            Node::Scalar(t, _) => t.as_str(),
            Node::Whole(_) => "",
        };
        let as_tag = if made { Tag::Plain } else { tag(field) };
        *field = typed(t, as_tag).ok_or_else(|| format!("`{t}` cannot be written over {field}"))?;
    } else {
        *field = whole_value(&value).ok_or("a null value cannot be written")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path deeper than any object is refused, not walked (each part is a step of the walk).
    #[test]
    fn a_very_deep_path_is_refused() {
        let deep = vec!["a"; 100_000].join(".");
        let r = serde_json::json!({"sourceValue": "x", "targets": [{"select": {}, "fieldPaths": [deep],
            "options": {"create": true}}]});
        let err = parse(&r).unwrap_err();
        assert!(err.contains("100000 parts"), "{err}");
    }

    /// Every case of the upstream table: the same objects, or an error where the library
    /// fails.
    #[test]
    fn agrees_with_the_library_on_its_table() {
        let table = include_str!("../../tests/fixtures/upstream/replacements.tsv");
        let cases = crate::upstream::cases(table, 2);
        let mut failures = Vec::new();
        for c in &cases {
            let objects: Vec<Value> = serde_json::from_str(c.inputs[0]).unwrap();
            let list: Vec<Value> = serde_json::from_str(c.inputs[1]).unwrap();
            let mut resources: Vec<Resource> = objects
                .into_iter()
                .enumerate()
                .map(|(i, v)| Resource::generated(v, "t.yaml", i))
                .collect();
            let got = list
                .iter()
                .map(parse)
                .collect::<Result<Vec<_>, _>>()
                .and_then(|rs| apply(&rs, &mut resources))
                .map(|()| Value::Array(resources.into_iter().map(|r| r.value).collect()));
            let want =
                (c.answer != "error").then(|| serde_json::from_str::<Value>(c.answer).unwrap());
            if got.as_ref().ok() != want.as_ref() {
                failures.push(format!(
                    "line {}\n  library: {}\n  fluxwave: {}",
                    c.line,
                    c.answer,
                    match &got {
                        Ok(v) => v.to_string(),
                        Err(e) => format!("error: {e}"),
                    }
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(cases.len() >= 70, "{} cases", cases.len());
    }
}
