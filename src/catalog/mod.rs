//! ServiceDefinitions: `catalog/<svc>.yaml` read into a raw form that mirrors the file
//! (unknown fields are errors, every value keeps its location), then validated into
//! `Service`. Validation reports every problem of every file, not just the first, and a name
//! reaches the rest of fluxwave only after it passed the DNS-1123 check, so it is safe in paths.

use std::collections::HashMap;
use std::path::Path;

use crate::yaml::Spanned;
use schemars::JsonSchema;
use serde::Deserialize;

pub use spec::Spec;

use crate::config::is_dns_label;
use crate::error::{Error, Result, SourceError};
use crate::yaml::{self, Text};

pub const API_VERSION: &str = "fluxwave.dev/v1alpha1";
pub const KIND: &str = "ServiceDefinition";

pub mod spec;
pub mod validate;

#[derive(Debug, Clone)]
pub struct Service {
    pub name: String,
    /// Path relative to the repository root, as shown to the user.
    pub path: String,
    pub text: Text,
    /// Byte span of `metadata.name`.
    pub name_span: (usize, usize),
    /// Validated: DNS-1123 labels, no duplicates, and `<name>-db` when `spec.database` is set.
    pub dependencies: Vec<Dependency>,
    /// The spec as written (its `dependencies` moved into `dependencies` above). Boxed: it
    /// is 1,400 bytes, and services are moved and sorted by the 100,000.
    pub spec: Box<Spec>,
}

#[derive(Debug, Clone)]
pub struct Dependency {
    pub to: String,
    /// Byte span of the target's name in the catalog file (of `metadata.name` for the
    /// dependency that `spec.database` implies).
    pub span: (usize, usize),
}

/// A ServiceDefinition file; `fluxwave schema` is generated from this type.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(
    title = "ServiceDefinition",
    description = "A fluxwave catalog entry: catalog/<name>.yaml"
)]
pub(crate) struct RawServiceDefinition {
    /// Always `fluxwave.dev/v1alpha1`.
    #[schemars(with = "String", extend("const" = "fluxwave.dev/v1alpha1"))]
    api_version: Spanned<String>,
    /// Always `ServiceDefinition`.
    #[schemars(with = "String", extend("const" = "ServiceDefinition"))]
    kind: Spanned<String>,
    metadata: RawMetadata,
    spec: Spec,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Metadata")]
struct RawMetadata {
    /// The service name: a DNS-1123 label, equal to the file name. Also its namespace.
    #[schemars(with = "String")]
    name: Spanned<String>,
    /// Kept in the catalog only; not rendered.
    #[allow(dead_code)]
    labels: Option<std::collections::BTreeMap<String, String>>,
    /// Kept in the catalog only; not rendered.
    #[allow(dead_code)]
    annotations: Option<std::collections::BTreeMap<String, String>>,
}

/// The draft-07 JSON Schema of a ServiceDefinition file.
pub fn schema() -> serde_json::Value {
    let generator = schemars::generate::SchemaSettings::draft07().into_generator();
    generator
        .into_root_schema_for::<RawServiceDefinition>()
        .to_value()
}

/// Parses and validates one catalog file. `path` is how the user sees it; `stem` is the file
/// name without its extension, which the service's name must equal.
pub fn parse(path: &str, stem: &str, text: Text) -> std::result::Result<Service, Vec<SourceError>> {
    parse_with(path, stem, text, true)
}

/// `parse`, with or without the plain reader (the tests compare the two).
pub(crate) fn parse_with(
    path: &str,
    stem: &str,
    text: Text,
    fast: bool,
) -> std::result::Result<Service, Vec<SourceError>> {
    // The plain reader declines whatever it does not read exactly as serde-saphyr does, and
    // every file with a problem: serde-saphyr reads those and locates the problem.
    let raw: Option<RawServiceDefinition> = match fast.then(|| crate::plain::parse(&text)).flatten()
    {
        Some(raw) => Some(raw),
        None => yaml::parse_reporting_all(path, &text)?,
    };
    let Some(raw) = raw else {
        return Err(vec![SourceError::new(path, "the file is empty").help(
            "a catalog file holds one ServiceDefinition; delete the file or fill it in",
        )]);
    };
    let mut errors = Vec::new();
    let at = |s: &Spanned<String>| yaml::spanned(&text, s);
    if raw.api_version.value != API_VERSION {
        errors.push(
            SourceError::new(path, format!("apiVersion is `{}`", raw.api_version.value))
                .at(&text, at(&raw.api_version))
                .help(format!(
                    "ServiceDefinitions have `apiVersion: {API_VERSION}`"
                )),
        );
    }
    if raw.kind.value != KIND {
        errors.push(
            SourceError::new(path, format!("kind is `{}`", raw.kind.value))
                .at(&text, at(&raw.kind))
                .help(format!("catalog files hold `kind: {KIND}`")),
        );
    }
    let name = &raw.metadata.name;
    if !is_dns_label(&name.value) {
        errors.push(
            SourceError::new(path, format!("`{}` is not a DNS-1123 label", name.value))
                .at(&text, at(name))
                .help("a service name is 1-63 lower-case letters, digits and `-`, starting and ending with a letter or digit"),
        );
    } else if name.value != stem {
        errors.push(
            SourceError::new(
                path,
                format!("metadata.name `{}` differs from the file name", name.value),
            )
            .at(&text, at(name))
            .help(format!(
                "rename the file to `{}.yaml`, or the service to `{stem}`",
                name.value
            )),
        );
    }
    let mut spec = raw.spec;
    let mut dependencies: Vec<Dependency> = Vec::new();
    for d in spec.dependencies.take().unwrap_or_default() {
        let span = at(&d.to);
        if !is_dns_label(&d.to.value) {
            errors.push(
                SourceError::new(
                    path,
                    format!("dependency `{}` is not a DNS-1123 label", d.to.value),
                )
                .at(&text, span)
                .help("name a catalog service, an extra unit or a `<svc>-db` database"),
            );
        } else if dependencies.iter().any(|x| x.to == d.to.value) {
            errors.push(
                SourceError::new(path, format!("`{}` is listed twice", d.to.value))
                    .at(&text, span)
                    .help("remove the second entry"),
            );
        } else {
            dependencies.push(Dependency {
                to: d.to.value,
                span,
            });
        }
    }
    if spec.database.is_some() {
        // The database is a node of the graph like any dependency, so waves need no rule of
        // their own for it: its consumer lands strictly above it.
        let db = format!("{}-db", name.value);
        if !dependencies.iter().any(|d| d.to == db) {
            dependencies.push(Dependency {
                to: db,
                span: at(name),
            });
        }
    }
    validate::spec(path, &text, &spec, name, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Service {
        name: name.value.clone(),
        path: path.to_string(),
        name_span: at(name),
        text,
        dependencies,
        spec: Box::new(spec),
    })
}

/// Reads every `*.yaml` / `*.yml` file of the catalog folder, in parallel; other files are
/// ignored. Services come back sorted by name. A missing folder is an empty catalog.
/// `preread` gives the text of a file (by repository-relative path) that this run has read
/// already, so no file is read twice.
pub fn load(
    root: &Path,
    dir: &str,
    preread: &(dyn Fn(&str) -> Option<Text> + Sync),
) -> Result<Vec<Service>> {
    let abs = root.join(dir);
    crate::fs::check_inside(root, dir)?;
    let entries = match std::fs::read_dir(&abs) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(Error::io(&abs, e)),
    };
    let mut files = Vec::new();
    let mut link_errors = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(&abs, e))?;
        let file_name = entry.file_name();
        let Some(file_name) = file_name.to_str() else {
            continue;
        };
        let Some(stem) = file_name
            .strip_suffix(".yaml")
            .or_else(|| file_name.strip_suffix(".yml"))
        else {
            continue;
        };
        let ft = entry.file_type().map_err(|e| Error::io(&entry.path(), e))?;
        if ft.is_dir() {
            continue;
        }
        if ft.is_symlink() {
            link_errors.push(
                SourceError::new(
                    format!("{dir}/{file_name}"),
                    "is a symbolic link; fluxwave does not follow links",
                )
                .help("replace the link with the file itself"),
            );
            continue;
        }
        let regular = ft.is_file();
        files.push((
            format!("{dir}/{file_name}"),
            stem.to_string(),
            file_name.to_string(),
            regular,
        ));
    }
    files.sort_unstable();
    let folder = crate::fs::Folder::open(&abs);
    let results = crate::par::map(&files, |(shown, stem, name, regular)| {
        if let Some(text) = preread(shown).filter(|_| *regular) {
            return Ok(parse(shown, stem, text));
        }
        let read = if *regular {
            folder.read_regular(name, shown)
        } else {
            crate::fs::read_regular(&abs.join(name), shown)
        };
        let bytes = match read {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(Err(vec![])),
            Err(Error::Input(e)) => return Ok(Err(e)),
            Err(e) => return Err(e),
        };
        // Decoded as every file of the repository is (`fs::decode`): `check`, which takes
        // the catalog from the tree it reads, and `waves` read the same file alike.
        let text = match crate::fs::decode(bytes) {
            Ok(text) => text,
            Err(why) => return Ok(Err(vec![crate::fs::undecodable(shown, why)])),
        };
        Ok::<_, Error>(parse(shown, stem, Text::new(text)))
    });
    let mut services = Vec::with_capacity(files.len());
    let mut errors = link_errors;
    for r in results {
        match r? {
            Ok(s) => services.push(s),
            Err(e) => errors.extend(e),
        }
    }
    services.sort_by(|a, b| a.name.cmp(&b.name));
    let mut seen: HashMap<&str, &Service> = HashMap::new();
    for s in &services {
        if let Some(first) = seen.insert(&s.name, s) {
            errors.push(
                SourceError::new(
                    &s.path,
                    format!("service `{}` is also defined in {}", s.name, first.path),
                )
                .at(&s.text, s.name_span)
                .help("keep one file per service: catalog/<name>.yaml"),
            );
        }
    }
    if errors.is_empty() {
        Ok(services)
    } else {
        Err(Error::Input(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(stem: &str, s: &str) -> std::result::Result<Service, Vec<SourceError>> {
        parse(
            &format!("catalog/{stem}.yaml"),
            stem,
            Text::new(s.to_string()),
        )
    }

    const SONARR: &str = "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: sonarr\nspec:\n  dependencies:\n    - to: qbittorrent\n    - to: jackett\n  image: {repository: lscr.io/linuxserver/sonarr, tag: \"4.0.9\"}\n  port: 8989\n  ingress: {host: sonarr.home.example}\n";

    #[test]
    fn reads_the_contract_fields() {
        let s = parse_str("sonarr", SONARR).unwrap();
        let deps: Vec<_> = s.dependencies.iter().map(|d| d.to.as_str()).collect();
        assert_eq!(deps, ["qbittorrent", "jackett"]);
        assert_eq!(s.spec.port, Some(8989));
        assert_eq!(s.spec.image.as_ref().unwrap().tag.value, "4.0.9");
        assert_eq!(
            crate::error::line_col(&s.text, s.dependencies[1].span.0),
            (8, 11)
        );
    }

    #[test]
    fn unknown_field_is_located() {
        let bad = SONARR.replace("  port: 8989", "  prot: 8989");
        let errs = parse_str("sonarr", &bad).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(errs[0].message.contains("prot"), "{}", errs[0].message);
        assert_eq!(errs[0].line_col().map(|l| l.0), Some(10));
    }

    #[test]
    fn name_must_match_the_file_and_be_a_label() {
        let errs = parse_str("radarr", SONARR).unwrap_err();
        assert!(errs[0].message.contains("differs from the file name"));
        let errs = parse_str("x", &SONARR.replace("name: sonarr", "name: ../x")).unwrap_err();
        assert!(errs[0].message.contains("not a DNS-1123 label"));
    }
}
