//! `fluxwave.yaml`: every setting is optional and takes the default the README documents, so
//! examples/homelab needs nothing but its `units`. Paths are checked to stay inside the
//! repository; names that become file or object names are checked to be DNS-1123 labels.

use std::path::Path;

use crate::yaml::Spanned;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::error::{Result, SourceError};
use crate::tree::FileTree;
use crate::yaml::{self, Text};

pub const FILE: &str = "fluxwave.yaml";

#[derive(Debug, Clone)]
pub struct Config {
    pub catalog: String,
    pub apps: String,
    pub base: String,
    pub environments: Vec<ConfiguredEnvironment>,
    /// Whether fluxwave.yaml lists `clusters.environments` (else they are discovered; see
    /// `flux::discover`).
    pub environments_configured: bool,
    /// How the app tier is split into Flux Kustomizations.
    pub topology: Topology,
    pub waves: Waves,
    pub units: Vec<Unit>,
    pub check: CheckSettings,
    /// `helm.allowHosts`: hosts charts may be pulled from when this revision is the base of a
    /// comparison, beyond those its chart sources name.
    pub helm_allow_hosts: Vec<String>,
    /// `cutover.accept`: the gaps of the analysis this repository accepts, by name. Read from
    /// the base revision of a comparison only (`cutover`).
    pub cutover_accept: Vec<Accept>,
    /// Text of fluxwave.yaml when there is one (for locating unit errors).
    pub text: Option<Text>,
}

/// An environment as fluxwave.yaml names it (`clusters.environments`, or the default `dev`):
/// its name and entry folder. `flux::discover::Environment` is one found in a tree.
#[derive(Debug, Clone)]
pub struct ConfiguredEnvironment {
    pub name: String,
    pub path: String,
}

/// How the app tier is split into Flux Kustomizations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Topology {
    /// One Kustomization per wave, each depending on the wave below: a failure holds its
    /// wave and every wave above it.
    #[default]
    Waves,
    /// One Kustomization per unit, depending on exactly its dependencies' Kustomizations: a
    /// failure holds only what depends on it.
    Units,
}

impl Topology {
    pub const ALL: [Topology; 2] = [Topology::Waves, Topology::Units];

    pub fn as_str(self) -> &'static str {
        match self {
            Topology::Waves => "waves",
            Topology::Units => "units",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Waves {
    pub name_prefix: String,
    /// Name of a unit's own Kustomization is `<unit_name_prefix><unit>`.
    pub unit_name_prefix: String,
    pub upstream: Vec<String>,
    pub namespace: String,
    /// Copied into the spec of every wave Kustomization, in this key order.
    pub spec: Map<String, Value>,
    pub decryption: Value,
}

/// Settings of `fluxwave check`.
#[derive(Debug, Clone, Default)]
pub struct CheckSettings {
    /// Secrets that may be committed in plain text: (namespace, or any when `None`; name).
    pub allow_plaintext_secrets: Vec<(Option<String>, String)>,
    /// Findings silenced on purpose, in the order written.
    pub ignore: Vec<Ignore>,
}

/// An entry of `check.ignore`: findings of `code` (checked against the registry by `check`,
/// which knows the codes), under `path` when one is given.
#[derive(Debug, Clone)]
pub struct Ignore {
    pub code: String,
    /// A path or glob relative to the repository root, normalised; `None` is everywhere.
    pub path: Option<String>,
    /// Where the entry's code is written in fluxwave.yaml.
    pub code_span: (usize, usize),
}

impl CheckSettings {
    pub fn allows_plaintext(&self, namespace: &str, name: &str) -> bool {
        self.allow_plaintext_secrets
            .iter()
            .any(|(ns, n)| n == name && ns.as_deref().is_none_or(|ns| ns == namespace))
    }
}

/// A kind of gap in what `cutover` can judge that a repository may accept by name
/// (`cutover.accept`): a touched thing of that kind that is not judged then leaves the
/// verdict alone, and the report lists it as accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Accept {
    /// A HelmRelease that stays the same release (name, namespaces, chart name) and whose
    /// chart, version or values change while a side of it is not rendered (`--no-helm`, no
    /// helm, a chart that cannot be had): what Helm's upgrade deletes is not judged.
    HelmUpgrades,
}

impl Accept {
    pub const ALL: [Accept; 1] = [Accept::HelmUpgrades];

    pub fn as_str(self) -> &'static str {
        match self {
            Accept::HelmUpgrades => "helm-upgrades",
        }
    }

    pub fn parse(name: &str) -> Option<Accept> {
        Accept::ALL.into_iter().find(|a| a.as_str() == name)
    }
}

/// An app-tier unit with no ServiceDefinition, placed relative to its anchor.
#[derive(Debug, Clone)]
pub struct Unit {
    pub name: String,
    pub anchor: String,
    pub above: bool,
    /// Whether a failure of this unit holds what reconciles after it (see `Graph`).
    pub gating: bool,
    pub name_span: (usize, usize),
    pub anchor_span: (usize, usize),
}

/// `fluxwave.yaml`; `fluxwave schema --kind config` is generated from this type.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(
    title = "fluxwave Config",
    description = "fluxwave.yaml: every key is optional"
)]
struct RawConfig {
    /// `fluxwave.dev/v1alpha1`.
    #[allow(dead_code)]
    api_version: Option<String>,
    /// `Config`.
    #[schemars(with = "Option<String>", extend("const" = "Config"))]
    kind: Option<Spanned<String>>,
    /// Folder of the ServiceDefinitions. Default `catalog`.
    #[schemars(with = "Option<String>")]
    catalog: Option<Spanned<String>>,
    /// Folder of the app tier (and of `fluxwave render`'s output). Default `apps`.
    #[schemars(with = "Option<String>")]
    apps: Option<Spanned<String>>,
    clusters: Option<RawClusters>,
    /// `waves` (the default): one Flux Kustomization per wave, each depending on the wave
    /// below. `units`: one per unit (`<waves.unitNamePrefix><unit>` at `./<apps>/<unit>`),
    /// depending on exactly the Kustomizations of the unit's own dependencies, so a failure
    /// holds only what depends on it. `fluxwave blast` compares the two.
    topology: Option<Topology>,
    waves: Option<RawWaves>,
    /// App-tier units with no ServiceDefinition, placed relative to an anchor.
    units: Option<Vec<RawUnit>>,
    check: Option<RawCheck>,
    helm: Option<RawHelm>,
    cutover: Option<RawCutover>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "Cutover")]
/// How `cutover`, `diff` and `check --base` judge a change.
struct RawCutover {
    /// Gaps of the analysis accepted by name: a touched thing of that kind that cannot be
    /// judged leaves the verdict alone (it is listed as accepted) instead of making it
    /// `incomplete`. `helm-upgrades`: a HelmRelease whose chart, version or values change
    /// while it is not rendered (`--no-helm`, no helm, a chart that cannot be had). Read from
    /// the base revision of a comparison only, so a change cannot accept its own gap.
    #[schemars(with = "Option<Vec<AcceptName>>")]
    accept: Option<Vec<Spanned<String>>>,
}

/// The name of a gap `cutover.accept` may accept.
#[derive(JsonSchema)]
#[allow(dead_code)]
#[serde(rename_all = "kebab-case")]
enum AcceptName {
    HelmUpgrades,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "Helm")]
/// How HelmReleases are rendered.
struct RawHelm {
    /// Hosts charts may be pulled from when this revision is the base of a comparison
    /// (`check --base`, `diff`, `cutover`), beyond the hosts of its own HelmRepositories and
    /// OCIRepositories: `ghcr.io` (any port) or `registry.example:5000`. Read from the base
    /// revision only, never from the change under review (SECURITY.md).
    allow_hosts: Option<Vec<String>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "Check")]
/// Settings of `fluxwave check`.
struct RawCheck {
    /// Secrets that may be committed without SOPS encryption (`plaintext-secret` lets them
    /// through): each by name, and by namespace when one is given.
    allow_plaintext_secrets: Option<Vec<RawAllowedSecret>>,
    /// Findings to silence on purpose: each by its code, under a path (or glob) when one is
    /// given. An entry that silences nothing is reported (`unused-ignore`). A finding may also
    /// be silenced in a YAML file by a comment `# fluxwave:ignore <code>` on its line or the
    /// line above.
    ignore: Option<Vec<RawIgnore>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Ignore")]
struct RawIgnore {
    /// The finding code, as printed (`missing-timeout`); `fluxwave check --explain CODE`
    /// describes it.
    #[schemars(with = "String")]
    code: Spanned<String>,
    /// Where: a path relative to the repository root (a folder covers everything under it),
    /// or a glob (`*` within one path segment, `**` across segments, `?` one character, such
    /// as `kubernetes/apps/**/ks.yaml`). Everywhere when left out.
    #[schemars(with = "Option<String>")]
    path: Option<Spanned<String>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "AllowedSecret")]
struct RawAllowedSecret {
    /// The Secret's namespace as written in its manifest; any namespace when left out.
    namespace: Option<String>,
    /// The Secret's `metadata.name`.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Clusters")]
struct RawClusters {
    /// Folder of the shared Flux objects. Default `clusters/base`.
    #[schemars(with = "Option<String>")]
    base: Option<Spanned<String>>,
    /// Each environment's kustomization gets one decryption patch per wave. Default
    /// `[{name: dev, path: clusters/dev}]`.
    environments: Option<Vec<RawEnvironment>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Environment")]
struct RawEnvironment {
    #[schemars(with = "String")]
    name: Spanned<String>,
    #[schemars(with = "String")]
    path: Spanned<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "Waves")]
struct RawWaves {
    /// Name of wave N's Flux Kustomization is `<namePrefix><N>`. Default `apps-wave-`.
    #[schemars(with = "Option<String>")]
    name_prefix: Option<Spanned<String>>,
    /// Name of a unit's own Flux Kustomization (every unit under `topology: units`, a unit
    /// with `gating: false` under `waves`) is `<unitNamePrefix><unit>`. Default `apps-`.
    #[schemars(with = "Option<String>")]
    unit_name_prefix: Option<Spanned<String>>,
    /// What wave 0 dependsOn. Default `[platform-config]`.
    upstream: Option<Vec<String>>,
    /// Namespace of the wave Kustomizations. Default `flux-system`.
    #[schemars(with = "Option<String>")]
    namespace: Option<Spanned<String>>,
    /// Merged key by key into the spec of every wave Kustomization; a key set to `null`
    /// leaves the default of that key out (`postBuild: null` when there is no cluster-vars).
    spec: Option<Map<String, Value>>,
    /// The decryption each environment patches onto every wave. Default
    /// `{provider: sops, secretRef: {name: sops-age}}`.
    /// A mapping, as Flux's `spec.decryption` is; `null` for none (a repository without
    /// SOPS: a patch naming a Secret the cluster lacks fails every reconciliation).
    // Anything else is refused where it is written: it would make every apply append
    // patches that never match. (kustomize-controller's `ImportKeys`,
    // `internal/decryptor/decryptor.go`, reads `decryption.secretRef` whenever decryption is
    // set and returns the NotFound error of a missing Secret: the reconciliation fails.)
    #[serde(default, deserialize_with = "present")]
    #[schemars(
        with = "Option<Map<String, Value>>",
        extend("default" = {"provider": "sops", "secretRef": {"name": "sops-age"}})
    )]
    decryption: Option<Option<Map<String, Value>>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Unit")]
struct RawUnit {
    /// The unit's name: the longest-prefix owner of its app-tier files.
    #[schemars(with = "String")]
    name: Spanned<String>,
    /// The node (service, database or unit) whose wave the unit takes.
    #[schemars(with = "String")]
    anchor: Spanned<String>,
    /// One wave above the anchor instead of in its wave. Default false.
    #[serde(default)]
    above: bool,
    /// `false`: nothing waits for this unit, so its failure holds nothing else (a flaky CI
    /// runner). It gets a Flux Kustomization of its own that depends on what the unit
    /// depends on; a dependency or an anchor on it is an error. Default true.
    gating: Option<bool>,
}

/// The draft-07 JSON Schema of `fluxwave.yaml`.
pub fn schema() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07().into_generator();
    generator.into_root_schema_for::<RawConfig>().to_value()
}

pub fn default_spec() -> Map<String, Value> {
    match json!({
        "interval": "10m",
        "retryInterval": "1m",
        "timeout": "5m",
        "prune": true,
        "wait": true,
        "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
        "postBuild": {"substituteFrom": [{"kind": "ConfigMap", "name": "cluster-vars"}]},
    }) {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            catalog: "catalog".into(),
            apps: "apps".into(),
            base: "clusters/base".into(),
            environments: vec![ConfiguredEnvironment {
                name: "dev".into(),
                path: "clusters/dev".into(),
            }],
            environments_configured: false,
            topology: Topology::Waves,
            waves: Waves {
                name_prefix: "apps-wave-".into(),
                unit_name_prefix: "apps-".into(),
                upstream: vec!["platform-config".into()],
                namespace: "flux-system".into(),
                spec: default_spec(),
                decryption: json!({"provider": "sops", "secretRef": {"name": "sops-age"}}),
            },
            units: vec![],
            check: CheckSettings::default(),
            helm_allow_hosts: Vec::new(),
            cutover_accept: Vec::new(),
            text: None,
        }
    }
}

/// A byte span of fluxwave.yaml: (offset, length).
type Span = (usize, usize);

/// One reading of `fluxwave.yaml`: each section of the raw file into the config, every
/// problem gathered with its place in the text.
struct Parse<'t> {
    text: &'t Text,
    errors: Vec<SourceError>,
}

impl Parse<'_> {
    fn err(&mut self, s: &Spanned<String>, msg: String, help: &str) {
        self.errors.push(
            SourceError::new(FILE, msg)
                .at(self.text, yaml::spanned(self.text, s))
                .help(help),
        );
    }

    fn kind(&mut self, kind: Option<&Spanned<String>>) {
        if let Some(kind) = kind.filter(|k| k.value != "Config") {
            self.err(
                kind,
                format!("kind is `{}`", kind.value),
                "fluxwave.yaml has `kind: Config`",
            );
        }
    }

    /// A path inside the repository into `slot`, when it is given.
    fn path(&mut self, field: Option<Spanned<String>>, slot: &mut String) {
        if let Some(p) = field {
            match repo_relative(&p.value) {
                Some(clean) => *slot = clean,
                None => self.err(
                    &p,
                    format!("`{}` is not a path inside the repository", p.value),
                    "give a relative path without `..`, such as `clusters/dev`",
                ),
            }
        }
    }

    fn paths(
        &mut self,
        config: &mut Config,
        catalog: Option<Spanned<String>>,
        apps: Option<Spanned<String>>,
        clusters: Option<RawClusters>,
    ) {
        self.path(catalog, &mut config.catalog);
        let apps_span = apps.as_ref().map(|a| yaml::spanned(self.text, a));
        self.path(apps, &mut config.apps);
        let (base, environments) = clusters.map_or((None, None), |c| (c.base, c.environments));
        let base_span = base.as_ref().map(|b| yaml::spanned(self.text, b));
        self.path(base, &mut config.base);
        let mut env_spans = Vec::new();
        if let Some(envs) = environments {
            config.environments.clear();
            config.environments_configured = true;
            for env in envs {
                let mut path = String::new();
                env_spans.push(Some(yaml::spanned(self.text, &env.path)));
                self.path(Some(env.path), &mut path);
                config.environments.push(ConfiguredEnvironment {
                    name: env.name.value,
                    path,
                });
            }
        } else {
            env_spans = vec![None; config.environments.len()];
        }
        if self.errors.is_empty() {
            self.overlaps(config, apps_span, base_span, &env_spans);
        }
    }

    /// Folders whose files fluxwave writes must not be one another's: `apply` edits the
    /// base's kustomization.yaml and each environment's, and moves and writes the files of
    /// the app tier; two of them in one folder (or a cluster folder inside the app tier)
    /// would make two edits of one file, and one would be lost. Paths are compared
    /// normalised (`./clusters/dev/` is `clusters/dev`); the error points at the later of
    /// the two as written.
    fn overlaps(
        &mut self,
        config: &Config,
        apps_span: Option<(usize, usize)>,
        base_span: Option<(usize, usize)>,
        env_spans: &[Option<(usize, usize)>],
    ) {
        let inside = |dir: &str, tier: &str| dir == tier || dir.starts_with(&format!("{tier}/"));
        // (what it is, its folder, where fluxwave.yaml sets it)
        let mut folders: Vec<(String, &str, Option<Span>)> =
            vec![("clusters.base".to_string(), config.base.as_str(), base_span)];
        for (env, span) in config.environments.iter().zip(env_spans) {
            folders.push((
                format!("environment `{}`", env.name),
                env.path.as_str(),
                *span,
            ));
        }
        let help = "give clusters.base, each environment and the app tier folders of their own: fluxwave edits the kustomization.yaml of each, and two edits of one file would lose one";
        let mut found: Vec<((usize, usize), String)> = Vec::new();
        for (i, (what, path, span)) in folders.iter().enumerate() {
            for (other, other_path, other_span) in &folders[..i] {
                if path == other_path {
                    if let Some(at) = span.or(*other_span) {
                        let (a, b) = if span.is_some() {
                            (what, other)
                        } else {
                            (other, what)
                        };
                        let note = if span.is_none() || other_span.is_none() {
                            " (the default, as fluxwave.yaml lists no environments)"
                        } else {
                            ""
                        };
                        found.push((at, format!("{a} is `{path}`, the folder of {b}{note}")));
                    }
                }
            }
            if inside(path, &config.apps) {
                if let Some(at) = span.or(apps_span) {
                    found.push((
                        at,
                        format!(
                            "{what} is `{path}`, inside the app tier `{}`, whose files apply moves",
                            config.apps
                        ),
                    ));
                }
            }
        }
        for (at, message) in found {
            self.errors
                .push(SourceError::new(FILE, message).at(self.text, at).help(help));
        }
    }

    fn waves(&mut self, into: &mut Waves, waves: RawWaves) {
        if let Some(prefix) = waves.name_prefix {
            let probe = format!("{}0", prefix.value);
            if is_dns_label(&probe) {
                into.name_prefix = prefix.value;
            } else {
                self.err(
                    &prefix,
                    format!("namePrefix `{}` does not make DNS-1123 names", prefix.value),
                    "use lower-case letters, digits and `-`, such as `apps-wave-`",
                );
            }
        }
        if let Some(prefix) = waves.unit_name_prefix {
            if is_dns_label(&format!("{}a", prefix.value)) {
                into.unit_name_prefix = prefix.value;
            } else {
                self.err(
                    &prefix,
                    format!(
                        "unitNamePrefix `{}` does not make DNS-1123 names",
                        prefix.value
                    ),
                    "use lower-case letters, digits and `-`, such as `apps-`",
                );
            }
        }
        if let Some(up) = waves.upstream {
            into.upstream = up;
        }
        if let Some(ns) = waves.namespace {
            if is_dns_label(&ns.value) {
                into.namespace = ns.value;
            } else {
                self.err(
                    &ns,
                    format!("namespace `{}` is not a DNS-1123 label", ns.value),
                    "use a namespace name such as `flux-system`",
                );
            }
        }
        if let Some(spec) = waves.spec {
            merge(&mut into.spec, spec);
        }
        if let Some(d) = waves.decryption {
            into.decryption = d.map_or(Value::Null, Value::Object);
        }
    }

    /// The `check.ignore` entries; a path that leaves the repository is an error.
    fn ignores(&mut self, into: &mut Vec<Ignore>, ignores: Vec<RawIgnore>) {
        for i in ignores {
            let path = i.path.and_then(|p| {
                // `./` and trailing slashes are the repository's own spelling of a path.
                let clean = p.value.trim_start_matches("./").trim_end_matches('/');
                if clean.is_empty() || clean == "**" {
                    return None;
                }
                match repo_relative(clean) {
                    Some(clean) => Some(clean),
                    None => {
                        self.err(
                            &p,
                            format!("`{}` is not a path inside the repository", p.value),
                            "give a path or glob relative to the repository root, such as `kubernetes/apps/**/ks.yaml`",
                        );
                        None
                    }
                }
            });
            into.push(Ignore {
                code_span: yaml::spanned(self.text, &i.code),
                code: i.code.value,
                path,
            });
        }
    }

    /// The `cutover.accept` names; one that names no gap is an error.
    fn accept(&mut self, into: &mut Vec<Accept>, names: Vec<Spanned<String>>) {
        for name in names {
            match Accept::parse(&name.value) {
                Some(a) => {
                    if !into.contains(&a) {
                        into.push(a);
                    }
                }
                None => {
                    let known: Vec<&str> = Accept::ALL.iter().map(|a| a.as_str()).collect();
                    self.err(
                        &name,
                        format!("cutover.accept: `{}` names no gap", name.value),
                        &format!("the gaps that may be accepted: {}", known.join(", ")),
                    );
                }
            }
        }
    }

    /// The units, with their names' places; a name declared twice is an error.
    fn units(&mut self, into: &mut Vec<Unit>, units: Vec<RawUnit>) {
        let text = self.text;
        for u in units {
            for field in [&u.name, &u.anchor] {
                if !is_dns_label(&field.value) {
                    self.err(
                        field,
                        format!("`{}` is not a DNS-1123 label", field.value),
                        "unit names use lower-case letters, digits and `-`, at most 63 characters",
                    );
                }
            }
            into.push(Unit {
                name_span: yaml::spanned(text, &u.name),
                anchor_span: yaml::spanned(text, &u.anchor),
                name: u.name.value,
                anchor: u.anchor.value,
                above: u.above,
                gating: u.gating.unwrap_or(true),
            });
        }
        let mut seen = std::collections::HashMap::new();
        for u in into.iter() {
            if let Some(first) = seen.insert(u.name.clone(), u.name_span) {
                let (line, _) = crate::error::line_col(text, first.0);
                self.errors.push(
                    SourceError::new(FILE, format!("unit `{}` is declared twice", u.name))
                        .at(text, u.name_span)
                        .help(format!(
                            "remove one of the two; the first is on line {line}"
                        )),
                );
            }
        }
    }
}

impl Config {
    /// Reads `fluxwave.yaml` under `root`; a missing file means every default.
    pub fn load(root: &Path) -> Result<Config> {
        Ok(Config::load_optional(root)?.unwrap_or_default())
    }

    /// Reads `fluxwave.yaml` under `root`; `Ok(None)` when there is none.
    pub fn load_optional(root: &Path) -> Result<Option<Config>> {
        match crate::fs::read_optional(root, FILE)? {
            Some(t) => Config::parse(&Text::new(t)).map(Some),
            None => Ok(None),
        }
    }

    /// The `fluxwave.yaml` of `tree` (a git revision, or the working tree); `Ok(None)` when
    /// the tree has none. A file that is there is read as the working tree's is: one that
    /// is no text or does not parse is an error naming the revision, the file and the
    /// place, never a silent fall back to the defaults.
    pub fn from_tree(tree: &FileTree) -> Result<Option<Config>> {
        let shown = tree.shown(FILE);
        if let Some(why) = tree.unreadable(FILE) {
            return Err(crate::fs::undecodable(&shown, why).into());
        }
        let Some(text) = tree.read(FILE) else {
            return Ok(None);
        };
        Config::parse(&text).map(Some).map_err(|e| match e {
            crate::error::Error::Input(errors) => crate::error::Error::Input(
                errors
                    .into_iter()
                    .map(|mut e| {
                        if e.path == FILE {
                            e.path.clone_from(&shown);
                        }
                        e
                    })
                    .collect(),
            ),
            other => other,
        })
    }

    pub fn parse(text: &Text) -> Result<Config> {
        let raw: Option<RawConfig> =
            yaml::parse_reporting_all(FILE, text).map_err(crate::error::Error::Input)?;
        let mut config = Config {
            text: Some(text.clone()),
            ..Config::default()
        };
        let Some(raw) = raw else { return Ok(config) };
        let mut p = Parse {
            text,
            errors: Vec::new(),
        };
        p.kind(raw.kind.as_ref());
        p.paths(&mut config, raw.catalog, raw.apps, raw.clusters);
        config.topology = raw.topology.unwrap_or_default();
        if let Some(waves) = raw.waves {
            p.waves(&mut config.waves, waves);
        }
        p.units(&mut config.units, raw.units.unwrap_or_default());
        if let Some(check) = raw.check {
            config.check.allow_plaintext_secrets = check
                .allow_plaintext_secrets
                .unwrap_or_default()
                .into_iter()
                .map(|a| (a.namespace, a.name))
                .collect();
            p.ignores(&mut config.check.ignore, check.ignore.unwrap_or_default());
        }
        if let Some(helm) = raw.helm {
            config.helm_allow_hosts = helm
                .allow_hosts
                .unwrap_or_default()
                .into_iter()
                .map(|h| h.to_ascii_lowercase())
                .collect();
        }
        if let Some(cutover) = raw.cutover {
            p.accept(
                &mut config.cutover_accept,
                cutover.accept.unwrap_or_default(),
            );
        }
        if p.errors.is_empty() {
            Ok(config)
        } else {
            Err(p.errors.into())
        }
    }

    /// The Flux Kustomization name of wave `n`.
    pub fn wave_name(&self, n: usize) -> String {
        format!("{}{}", self.waves.name_prefix, n)
    }

    /// The Flux Kustomization name of a unit's own Kustomization.
    pub fn unit_kustomization_name(&self, unit: &str) -> String {
        format!("{}{unit}", self.waves.unit_name_prefix)
    }

    /// The wave number of a Flux Kustomization name made by `wave_name`.
    pub fn wave_of_name(&self, name: &str) -> Option<usize> {
        wave_number(name.strip_prefix(&self.waves.name_prefix)?)
    }
}

/// `N` of a canonical decimal (`0`, `12`, not `012`).
pub fn wave_number(s: &str) -> Option<usize> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

/// Recursively overlays the user's settings on the defaults: mappings merge, `null` removes
/// the key (a default the app tier does without, such as `postBuild`), the rest replaces.
fn merge(base: &mut Map<String, Value>, over: Map<String, Value>) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (_, Value::Null) => {
                base.remove(&k);
            }
            (Some(Value::Object(b)), Value::Object(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// A DNS-1123 label: 1 to 63 lower-case letters, digits and `-`, starting and ending with a
/// letter or digit. Every name that becomes a path or an object name passes this first.
pub fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// A relative path that stays inside the repository, normalised (`./a//b/` -> `a/b`).
pub fn repo_relative(p: &str) -> Option<String> {
    if p.starts_with('/') || p.contains('\\') {
        return None;
    }
    let mut parts = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(parts.join("/"))
}

/// A key that is written, even as `null` (`Some(None)`), as opposed to one left out (`None`).
fn present<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_without_a_file() {
        let c = Config::parse(&Text::new(String::new())).unwrap();
        assert_eq!(c.apps, "apps");
        assert_eq!(c.wave_name(2), "apps-wave-2");
        assert_eq!(c.environments[0].path, "clusters/dev");
    }

    #[test]
    fn spec_overrides_merge_into_the_defaults() {
        let c = Config::parse(&Text::new(
            "waves:\n  spec:\n    timeout: 15m\n    sourceRef: {name: fleet}\n".into(),
        ))
        .unwrap();
        assert_eq!(c.waves.spec["timeout"], "15m");
        assert_eq!(c.waves.spec["sourceRef"]["kind"], "GitRepository");
        assert_eq!(c.waves.spec["sourceRef"]["name"], "fleet");
        assert_eq!(c.waves.spec["prune"], true);
        let c = Config::parse(&Text::new(
            "waves:\n  spec:\n    postBuild: null\n    sourceRef: {namespace: null}\n".into(),
        ))
        .unwrap();
        assert!(!c.waves.spec.contains_key("postBuild"));
        assert_eq!(c.waves.spec["sourceRef"]["name"], "flux-system");
    }

    #[test]
    fn rejects_paths_out_of_the_repository_and_bad_names() {
        let text =
            Text::new("apps: ../elsewhere\nunits:\n  - {name: ../x, anchor: gitea}\n".into());
        let Err(crate::error::Error::Input(errs)) = Config::parse(&text) else {
            panic!()
        };
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].line_col(), Some((1, 7)));
        assert_eq!(errs[1].line_col().unwrap().0, 3);
    }

    /// Two folders fluxwave writes that are one (however spelled), or a cluster folder in
    /// the app tier, are refused where the later one is written.
    #[test]
    fn folders_fluxwave_writes_are_never_shared() {
        let refused = |yaml: &str| -> Vec<((usize, usize), String)> {
            let Err(crate::error::Error::Input(errs)) = Config::parse(&Text::new(yaml.into()))
            else {
                panic!("accepted: {yaml}")
            };
            errs.iter()
                .map(|e| (e.line_col().unwrap(), e.message.clone()))
                .collect()
        };
        assert_eq!(
            refused("clusters: {base: clusters/dev}\n"),
            [(
                (1, 18),
                "clusters.base is `clusters/dev`, the folder of environment `dev` (the default, as fluxwave.yaml lists no environments)".to_string()
            )]
        );
        let both = "clusters:\n  base: ./clusters/dev/\n  environments:\n    - {name: dev, path: clusters/dev}\n";
        assert_eq!(
            refused(both),
            [(
                (4, 25),
                "environment `dev` is `clusters/dev`, the folder of clusters.base".to_string()
            )]
        );
        let twice = "clusters:\n  environments:\n    - {name: dev, path: clusters/dev}\n    - {name: prod, path: ./clusters//dev/}\n";
        assert_eq!(refused(twice)[0].0, (4, 26));
        assert!(refused(twice)[0]
            .1
            .contains("environment `prod` is `clusters/dev`, the folder of environment `dev`"));
        let in_apps = "clusters:\n  environments:\n    - {name: dev, path: apps/dev}\n";
        assert!(refused(in_apps)[0].1.contains("inside the app tier `apps`"));
        assert_eq!(refused("clusters: {base: apps}\n")[0].0, (1, 18));
        // The app tier moved over the default base is pointed at where the app tier is set.
        assert_eq!(refused("apps: clusters\n")[0].0, (1, 7));
        // Neighbours are fine.
        Config::parse(&Text::new(
            "apps: kubernetes/apps\nclusters:\n  base: clusters/base\n  environments:\n    - {name: dev, path: clusters/dev}\n    - {name: prod, path: clusters/dev-prod}\n".into(),
        ))
        .unwrap();
    }

    #[test]
    fn wave_numbers_are_canonical() {
        assert_eq!(wave_number("12"), Some(12));
        assert_eq!(wave_number("012"), None);
        assert_eq!(wave_number(""), None);
        assert_eq!(wave_number("1a"), None);
    }
}
