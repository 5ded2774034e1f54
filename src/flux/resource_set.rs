//! Flux Operator ResourceSets (`fluxcd.controlplane.io/v1`), rendered as the operator renders
//! them: by the user's own `flux-operator` CLI (`flux-operator build resourceset`, the
//! operator's `builder.BuildResourceSetFromSpec` and `inputs.Combine` linked in), found on
//! the PATH or named with `--flux-operator`. The ResourceSet is handed over as the build holds
//! it, with the Static `ResourceSetInputProvider`s of the same build its `inputsFrom` selects
//! (`--inputs-from-provider`); what it prints already carries the owner labels and
//! `spec.commonMetadata` the operator sets.
//!
//! The operator applies what a ResourceSet makes and keeps its own inventory of it
//! (flux-operator internal/controller/resourceset_controller.go): an object that leaves it is
//! deleted at the next reconcile (`apply`: `inventory.Diff`, then `deleteAllStaged`), and a
//! ResourceSet deleted takes everything it applied with it (`uninstall`), both unless the
//! object is annotated or labelled `fluxcd.controlplane.io/prune: disabled` (the
//! `Exclusions`), and nothing at all while the ResourceSet is annotated
//! `fluxcd.controlplane.io/reconcile: disabled` (`IsDisabled`). kustomize-controller's
//! `kustomize.toolkit.fluxcd.io/*` opt-outs mean nothing to it (`ssa.DefaultApplyOptions`).
//!
//! What cannot be told offline is said, never guessed: inputs from a provider of another
//! type than Static (pull requests, tags, artifacts: fetched at reconcile time), a provider no
//! build of the environment makes, and a template that reads a Static provider's `id`
//! (the operator derives it from the provider's UID in the cluster).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::kustomize::object::ObjectId;
use crate::pointer::Pointer;
use crate::process::Limits;

/// The API group of the Flux Operator.
pub const GROUP: &str = "fluxcd.controlplane.io";

/// Whether `id` is a ResourceSet.
pub fn is(id: &ObjectId) -> bool {
    id.is(GROUP, "ResourceSet")
}

/// Whether `id` is a ResourceSetInputProvider.
pub fn is_provider(id: &ObjectId) -> bool {
    id.is(GROUP, "ResourceSetInputProvider")
}

/// `fluxcd.controlplane.io/prune: disabled`: the operator does not delete the object.
pub const PRUNE: &str = "fluxcd.controlplane.io/prune";
/// `fluxcd.controlplane.io/reconcile: disabled`: the operator leaves the ResourceSet alone.
pub const RECONCILE: &str = "fluxcd.controlplane.io/reconcile";

/// How ResourceSets are rendered in this run (`--flux-operator`).
#[derive(Debug, Clone)]
pub struct Options {
    /// The flux-operator program; `None` when none is found (every ResourceSet says so).
    pub program: Option<PathBuf>,
    /// The cache (`--cache`): renders are kept in its `renders`, each run's files written in
    /// its `tmp`.
    pub cache: PathBuf,
    /// The bounds of each run (those of helm's).
    pub limits: Limits,
}

impl Options {
    /// No program: nothing is rendered (the library's own tests, until configured).
    fn none() -> Options {
        Options {
            program: None,
            cache: std::env::temp_dir(),
            limits: Limits::HELM,
        }
    }
}

static OPTIONS: Mutex<Option<Arc<Options>>> = Mutex::new(None);

pub fn configure(options: Options) {
    *OPTIONS.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(options));
}

fn options() -> Arc<Options> {
    OPTIONS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .unwrap_or_else(|| Arc::new(Options::none()))
}

/// Why no ResourceSet is rendered when no flux-operator is found.
pub const NO_PROGRAM: &str = "no flux-operator is found on the PATH (install the Flux Operator CLI, or name it with --flux-operator)";

/// What a ResourceSet makes, or why that is not known.
#[derive(Debug, Clone)]
pub enum Made {
    /// What the operator applies, in order.
    Objects(Arc<Vec<Value>>),
    /// Its build fails (a template that does not render, an invalid spec): the operator
    /// stalls on it, and applies and deletes nothing.
    Fails(String),
    /// What it makes cannot be told here: why.
    Unknown(String),
}

/// Whether the operator reconciles ResourceSet `set` at all (`IsDisabled`).
pub fn reconciled(set: &Value) -> bool {
    !annotation(set, RECONCILE).is_some_and(|v| v.eq_ignore_ascii_case("disabled"))
}

fn annotation<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.at_pointer("/metadata/annotations")?.get(key)?.as_str()
}

/// What ResourceSet `set` (`id`, as its build holds it) makes, given the input providers its
/// environment builds (`providers`, each whole).
pub fn render(id: &ObjectId, set: &Value, providers: &[&Value]) -> Made {
    if id.namespace.is_empty() {
        return Made::Unknown(
            "it has no namespace, which the operator reads its input providers in".into(),
        );
    }
    let chosen = match selected(id, set, providers) {
        Ok(chosen) => chosen,
        Err(why) => return Made::Unknown(why),
    };
    if !chosen.is_empty() && reads_id(set) {
        return Made::Unknown("its templates read an input's `id`, which the operator derives from its input provider's UID in the cluster".into());
    }
    let mut set = set.clone();
    if let Some(meta) = set.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("namespace".into(), Value::String(id.namespace.clone()));
    }
    let reads_providers = set
        .at_pointer("/spec/inputsFrom")
        .and_then(Value::as_array)
        .is_some_and(|refs| !refs.is_empty());
    let inline = set
        .at_pointer("/spec/inputs")
        .and_then(Value::as_array)
        .is_some_and(|i| !i.is_empty());
    // Providers that give no inputs: the operator reconciles an empty set, which deletes
    // what it applied (`reconcile`, "No inputs returned from providers").
    if reads_providers && chosen.is_empty() && !inline {
        return Made::Objects(Arc::new(Vec::new()));
    }
    let opts = options();
    let Some(program) = opts.program.as_deref() else {
        return Made::Unknown(NO_PROGRAM.into());
    };
    let providers: Vec<Value> = chosen.into_iter().cloned().collect();
    let providers = reads_providers.then_some(providers);
    let key = key(program, &set, &providers);
    let slot = {
        let mut memo = MEMO.lock().unwrap_or_else(|p| p.into_inner());
        memo.get_or_insert_default().entry(key).or_default().clone()
    };
    slot.get_or_init(|| {
        let kept = opts
            .cache
            .join("renders")
            .join(format!("resourceset-{}.yaml", crate::fs::hex(&key)));
        if let Some(made) = read_kept(&kept) {
            crate::cache::used(&kept);
            return made;
        }
        crate::cache::mark(&opts.cache);
        let made = run(program, &opts, &set, providers.as_deref());
        keep(&kept, &made);
        made
    })
    .clone()
}

/// A render kept in the cache by its key: `objects` or `fails`, a line, then what
/// flux-operator printed or why it failed.
fn read_kept(path: &Path) -> Option<Made> {
    let text = std::fs::read_to_string(path).ok()?;
    let (head, rest) = text.split_once('\n')?;
    match head {
        "objects" => Some(parse(rest)),
        "fails" => Some(Made::Fails(rest.to_string())),
        _ => None,
    }
}

/// Keeps `made` in the cache at `path`; what cannot be told (a run that did not finish) is
/// made again next time.
fn keep(path: &Path, made: &Made) {
    let text = match made {
        Made::Objects(objects) => {
            let mut text = String::from("objects\n");
            for o in objects.iter() {
                text.push_str("---\n");
                text.push_str(&o.to_string());
                text.push('\n');
            }
            text
        }
        Made::Fails(why) => format!("fails\n{why}"),
        Made::Unknown(_) => return,
    };
    crate::cache::keep(path, &text);
}

/// The renders of this run by what decides them, each made once.
type Memo = HashMap<[u8; 32], Arc<std::sync::OnceLock<Made>>>;
static MEMO: Mutex<Option<Memo>> = Mutex::new(None);

/// The digest of what decides a render: the program (its path, size and time), the
/// ResourceSet and its providers.
fn key(program: &Path, set: &Value, providers: &Option<Vec<Value>>) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(crate::cache::program_identity(program));
    h.update([0]);
    h.update(set.to_string());
    for p in providers.iter().flatten() {
        h.update([0]);
        h.update(p.to_string());
    }
    h.finalize().into()
}

/// The input providers of `set`'s `spec.inputsFrom` among `providers`, as the operator
/// selects them (`getInputs`: by name, or by label selector, in the ResourceSet's
/// namespace); `Err` when one cannot be known here.
fn selected<'a>(
    id: &ObjectId,
    set: &Value,
    providers: &[&'a Value],
) -> Result<Vec<&'a Value>, String> {
    let here: Vec<&Value> = providers
        .iter()
        .copied()
        .filter(|p| namespace_of(p) == Some(id.namespace.as_str()))
        .collect();
    let mut chosen: Vec<&Value> = Vec::new();
    let refs = set
        .at_pointer("/spec/inputsFrom")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for r in refs {
        let name = r
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        let found: Vec<&Value> = match (name, r.get("selector")) {
            (Some(name), _) => {
                let p = here
                    .iter()
                    .copied()
                    .find(|p| name_of(p) == Some(name))
                    .ok_or_else(|| format!("its input provider {}/{name} is in no build of the environment (the operator fails without it, unless it is in the cluster)", id.namespace))?;
                vec![p]
            }
            (None, Some(selector)) => {
                let mut found = Vec::new();
                for p in &here {
                    if selects(selector, p)? {
                        found.push(*p);
                    }
                }
                found
            }
            (None, None) => return Err("an input provider reference has neither name nor selector: the operator fails on it".into()),
        };
        for p in found {
            if !chosen.iter().any(|c| std::ptr::eq(*c, p)) {
                chosen.push(p);
            }
        }
    }
    for p in &chosen {
        let kind = p
            .at_pointer("/spec/type")
            .and_then(Value::as_str)
            .unwrap_or("");
        if kind != "Static" {
            return Err(format!(
                "its input provider {}/{} is of type `{kind}`, whose inputs the operator fetches when it reconciles",
                id.namespace,
                name_of(p).unwrap_or("")
            ));
        }
    }
    Ok(chosen)
}

fn name_of(v: &Value) -> Option<&str> {
    v.at_pointer("/metadata/name").and_then(Value::as_str)
}

fn namespace_of(v: &Value) -> Option<&str> {
    v.at_pointer("/metadata/namespace").and_then(Value::as_str)
}

/// Whether label selector `selector` (`matchLabels`, `matchExpressions`) selects object `v`,
/// as `metav1.LabelSelectorAsSelector` reads it; `Err` for one it refuses.
fn selects(selector: &Value, v: &Value) -> Result<bool, String> {
    let empty = Map::new();
    let labels = v
        .at_pointer("/metadata/labels")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    if let Some(m) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, want) in m {
            if label(k) != want.as_str() {
                return Ok(false);
            }
        }
    }
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for e in expressions {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|vs| vs.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let has = label(key);
        let holds = match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => has.is_some_and(|h| values.contains(&h)),
            "NotIn" => has.is_none_or(|h| !values.contains(&h)),
            "Exists" => has.is_some(),
            "DoesNotExist" => has.is_none(),
            op => {
                return Err(format!(
                    "an input provider selector has operator `{op}`, which the operator refuses"
                ))
            }
        };
        if !holds {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether a template of `set` reads an input's `id` (`inputs.id`, `$x.id`, `get $x "id"`).
fn reads_id(set: &Value) -> bool {
    fn text_reads_id(s: &str) -> bool {
        let b = s.as_bytes();
        let word = |i: usize| {
            b.get(i)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        };
        s.match_indices("id").any(|(i, _)| {
            let before = i.checked_sub(1).and_then(|j| b.get(j)).copied();
            let after_ok = !word(i + 2);
            after_ok
                && (before == Some(b'.') || (before == Some(b'"') && b.get(i + 2) == Some(&b'"')))
        })
    }
    fn any(v: &Value) -> bool {
        match v {
            Value::String(s) => s.contains("<<") && text_reads_id(s),
            Value::Array(a) => a.iter().any(any),
            Value::Object(m) => m
                .iter()
                .any(|(k, v)| (k.contains("<<") && text_reads_id(k)) || any(v)),
            _ => false,
        }
    }
    set.get("spec").is_some_and(any)
}

/// `flux-operator build resourceset` of `set` with `providers` (when it reads providers), in
/// a folder of the cache made for the run, with no environment (no kubeconfig: it reaches no
/// cluster).
fn run(program: &Path, opts: &Options, set: &Value, providers: Option<&[Value]>) -> Made {
    let dir = opts
        .cache
        .join("tmp")
        .join(format!("resourceset-{}", crate::cache::unique()));
    let folder = match crate::process::Temporary::folder(&dir) {
        Ok(f) => f,
        Err(e) => return Made::Unknown(format!("cannot write {}: {e}", dir.display())),
    };
    let set_file = folder.join("resourceset.json");
    let providers_file = folder.join("providers.yaml");
    let mut listed = String::new();
    for p in providers.into_iter().flatten() {
        listed.push_str("---\n");
        listed.push_str(&p.to_string());
        listed.push('\n');
    }
    let written = std::fs::write(&set_file, set.to_string())
        .and_then(|()| std::fs::write(&providers_file, &listed));
    if let Err(e) = written {
        return Made::Unknown(format!("cannot write {}: {e}", folder.display()));
    }
    let mut cmd = std::process::Command::new(program);
    cmd.env_clear()
        .env("HOME", &*folder)
        .env("TMPDIR", &*folder)
        .current_dir(&*folder)
        .arg("build")
        .arg("resourceset")
        .arg("--filename")
        .arg(&set_file);
    if providers.is_some() {
        cmd.arg("--inputs-from-provider").arg(&providers_file);
    }
    match crate::process::run(cmd, None, &opts.limits) {
        Ok(out) => match String::from_utf8(out.stdout) {
            Ok(text) => parse(&text),
            Err(_) => Made::Unknown("flux-operator printed what is not UTF-8".into()),
        },
        // The CLI fails where the operator's build fails (a template error, an invalid spec),
        // and where it prints nothing ("no objects were generated": the operator applies
        // nothing, and deletes what it applied before).
        Err(crate::process::Error::Failed { stderr, .. }) => {
            // Its errors begin with a mark (`✗ `).
            let why = crate::process::first_lines(&stderr);
            let why = why.trim_start_matches('✗').trim_start().to_string();
            if why.contains("no objects were generated") {
                Made::Objects(Arc::new(Vec::new()))
            } else {
                Made::Fails(why)
            }
        }
        Err(e) => Made::Unknown(format!("flux-operator cannot render it: {e}")),
    }
}

/// The objects flux-operator printed (`---`-separated YAML, `# step:` comments between).
fn parse(text: &str) -> Made {
    let text: crate::yaml::Text = Arc::new(text.to_string());
    match crate::yaml::parse_all("flux-operator output", &text) {
        Ok(docs) => Made::Objects(Arc::new(
            docs.into_iter().filter(|d| !d.is_null()).collect(),
        )),
        Err(e) => Made::Unknown(format!("flux-operator printed what cannot be read: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_read_labels_as_kubernetes_does() {
        let p = json!({"metadata": {"labels": {"team": "a", "tier": "db"}}});
        let yes = |s: Value| selects(&s, &p).unwrap();
        assert!(yes(json!({})));
        assert!(yes(json!({"matchLabels": {"team": "a"}})));
        assert!(!yes(json!({"matchLabels": {"team": "b"}})));
        assert!(yes(
            json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["db", "x"]}]})
        ));
        assert!(!yes(
            json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]})
        ));
        assert!(yes(
            json!({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["x"]}]})
        ));
        assert!(yes(
            json!({"matchExpressions": [{"key": "team", "operator": "Exists"}]})
        ));
        assert!(!yes(
            json!({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]})
        ));
        assert!(selects(
            &json!({"matchExpressions": [{"key": "team", "operator": "Gt"}]}),
            &p
        )
        .is_err());
    }

    #[test]
    fn a_template_reading_an_inputs_id_is_seen() {
        let set = |t: &str| json!({"spec": {"resourcesTemplate": t}});
        assert!(reads_id(&set("name: app-<< inputs.id >>")));
        assert!(reads_id(&set("name: << get $in \"id\" >>")));
        assert!(!reads_id(&set("name: << inputs.idle >>")));
        assert!(!reads_id(&set("name: << inputs.app >>-id")));
        assert!(reads_id(
            &json!({"spec": {"resources": [{"metadata": {"name": "<< $x.id >>"}}]}})
        ));
    }

    #[test]
    fn a_resource_set_not_reconciled_is_read_from_its_annotation() {
        let annotated =
            |v: &str| json!({"metadata": {"annotations": {"fluxcd.controlplane.io/reconcile": v}}});
        assert!(!reconciled(&annotated("disabled")));
        assert!(!reconciled(&annotated("Disabled")));
        assert!(reconciled(&annotated("enabled")));
        assert!(reconciled(
            &json!({"metadata": {"labels": {"fluxcd.controlplane.io/reconcile": "disabled"}}})
        ));
    }
}
