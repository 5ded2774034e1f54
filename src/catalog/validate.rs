//! Checks of a spec that serde cannot express: names that become Kubernetes names, one-of
//! choices, quantities, and references between fields (a probe's port, an Ingress needs a
//! port). Every problem is reported, each at the value that causes it, so that the renderer
//! can trust its input and never fails.

use std::collections::HashSet;
use std::sync::LazyLock;

use crate::yaml::Spanned;
use regex::Regex;

use super::spec::{Probe, ResourceList, Spec};
use crate::config::is_dns_label;
use crate::error::SourceError;
use crate::yaml::{self, Text};

static QUANTITY: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][0-9]+)?$").ok()
});

/// A semver tag as Flux's ImagePolicy reads it (an optional leading `v`).
static SEMVER: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^v?[0-9]+(\.[0-9]+){0,2}(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$").ok()
});

fn matches(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

/// An IANA service name, as Kubernetes requires of a port name.
fn is_port_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 15
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && s.bytes().any(|b| b.is_ascii_lowercase())
        && !s.starts_with('-')
        && !s.ends_with('-')
        && !s.contains("--")
}

struct Check<'a> {
    path: &'a str,
    text: &'a Text,
    errors: &'a mut Vec<SourceError>,
}

impl Check<'_> {
    fn at(&mut self, s: &Spanned<String>, message: String, help: &str) {
        let span = yaml::spanned(self.text, s);
        self.errors.push(
            SourceError::new(self.path, message)
                .at(self.text, span)
                .help(help),
        );
    }

    fn quantity(&mut self, q: &Spanned<String>, what: &str) {
        if !matches(&QUANTITY, &q.value) {
            self.at(
                q,
                format!("{what} `{}` is not a Kubernetes quantity", q.value),
                "write a number with an optional suffix, such as `10Gi`, `512Mi` or `100m`",
            );
        }
    }

    fn resources(&mut self, list: Option<&ResourceList>) {
        let Some(list) = list else { return };
        if let Some(cpu) = &list.cpu {
            self.quantity(cpu, "cpu");
        }
        if let Some(memory) = &list.memory {
            self.quantity(memory, "memory");
        }
    }

    fn probe(
        &mut self,
        probe: &Probe,
        kind: &str,
        ports: &HashSet<&str>,
        anchor: &Spanned<String>,
    ) {
        let port = probe.port.as_ref();
        match (&probe.http, probe.tcp) {
            (Some(_), Some(true)) => self.at(
                port.unwrap_or(anchor),
                format!("the {kind} probe has both `http` and `tcp`"),
                "keep one: `http: /path` or `tcp: true`",
            ),
            (None, None | Some(false)) => self.at(
                port.unwrap_or(anchor),
                format!("the {kind} probe has neither `http` nor `tcp: true`"),
                "add `http: /path` for an HTTP GET, or `tcp: true` for a connection check",
            ),
            _ => {}
        }
        let name = port.map_or("http", |p| p.value.as_str());
        if !ports.contains(name) {
            let help = if name == "http" {
                "set `port` (the main port is named `http`), or name one of `ports`"
            } else {
                "name `http` (the main port) or one of `ports`"
            };
            self.at(
                port.unwrap_or(anchor),
                format!("the {kind} probe checks port `{name}`, which the container does not have"),
                help,
            );
        }
    }
}

/// Every problem of `spec`, into `errors`. `name` is `metadata.name`: where a problem with
/// no value of its own is pointed at when the spec has no image tag to point at.
pub(super) fn spec(
    path: &str,
    text: &Text,
    spec: &Spec,
    name: &Spanned<String>,
    errors: &mut Vec<SourceError>,
) {
    let mut c = Check { path, text, errors };
    let tag = spec.image.as_ref().map_or(name, |i| &i.tag);
    let ports = c.ports(spec);
    if let Some(ingress) = &spec.ingress {
        if spec.port.is_none() {
            c.at(
                &ingress.host,
                "an Ingress needs the main `port`".into(),
                "add `port: <container port>` to spec",
            );
        }
    }
    c.env(spec);
    c.env_from(spec, tag);
    c.volumes(spec);
    if let Some(r) = &spec.resources {
        c.resources(r.requests.as_ref());
        c.resources(r.limits.as_ref());
    }
    if let Some(probes) = &spec.probes {
        for (kind, probe) in [
            ("readiness", &probes.readiness),
            ("liveness", &probes.liveness),
            ("startup", &probes.startup),
        ] {
            if let Some(probe) = probe {
                c.probe(probe, kind, &ports, tag);
            }
        }
    }
    if let Some(db) = &spec.database {
        c.quantity(&db.size, "database size");
        if let Some(r) = &db.resources {
            c.resources(r.requests.as_ref());
            c.resources(r.limits.as_ref());
        }
    }
    if let Some(a) = spec.image.as_ref().and_then(|i| i.automation.as_ref()) {
        if let Some(ft) = &a.filter_tags {
            if Regex::new(&ft.pattern).is_err() {
                c.at(
                    tag,
                    format!(
                        "image.automation.filterTags.pattern `{}` is not a regular expression",
                        ft.pattern
                    ),
                    "fix the pattern; named groups such as (?P<version>...) feed `extract`",
                );
            }
        }
    }
}

impl Check<'_> {
    /// The container's port names (`http` for `port`, then those of `ports`); a name that
    /// is no IANA service name, `http` again, or a name given twice is a problem.
    fn ports<'s>(&mut self, spec: &'s Spec) -> HashSet<&'s str> {
        let mut ports: HashSet<&str> = HashSet::new();
        if spec.port.is_some() {
            ports.insert("http");
        }
        for p in &spec.ports {
            if !is_port_name(&p.name.value) {
                self.at(
                    &p.name,
                    format!("`{}` is not a valid port name", p.name.value),
                    "a port name is 1-15 lower-case letters, digits and `-`, with at least one letter",
                );
            } else if p.name.value == "http" {
                self.at(
                    &p.name,
                    "`http` is the name of the main `port`".into(),
                    "set `port` for the main port, and give this one another name",
                );
            } else if !ports.insert(&p.name.value) {
                self.at(
                    &p.name,
                    format!("port `{}` is named twice", p.name.value),
                    "give each port its own name",
                );
            }
        }
        ports
    }

    /// Each environment variable: a name Kubernetes takes, set once, with exactly one of a
    /// value and a Secret's key.
    fn env(&mut self, spec: &Spec) {
        let mut env: HashSet<&str> = HashSet::new();
        for e in &spec.env {
            let name = &e.name.value;
            if name.is_empty() || name.contains('=') || name.chars().any(char::is_control) {
                self.at(
                    &e.name,
                    format!("`{name}` is not a valid environment variable name"),
                    "use letters, digits, `_`, `-` and `.`",
                );
            } else if !env.insert(name) {
                self.at(
                    &e.name,
                    format!("environment variable `{name}` is set twice"),
                    "remove one of the two entries",
                );
            }
            if e.value.is_some() == e.secret_key_ref.is_some() {
                self.at(
                    &e.name,
                    format!("`{name}` needs exactly one of `value` and `secretKeyRef`"),
                    "write `value: \"...\"`, or `secretKeyRef: {name: <secret>, key: <key>}`",
                );
            }
        }
    }

    /// Each `envFrom` entry names exactly one Secret or ConfigMap, by a valid object name;
    /// one that names none is pointed at `tag`.
    fn env_from(&mut self, spec: &Spec, tag: &Spanned<String>) {
        for from in &spec.env_from {
            match (&from.secret, &from.config_map) {
                (Some(_), Some(second)) => self.at(
                    second,
                    "an envFrom entry names both a secret and a configMap".into(),
                    "split it into two entries",
                ),
                (Some(s), None) | (None, Some(s)) if !is_dns_subdomain(&s.value) => self.at(
                    s,
                    format!("`{}` is not a valid object name", s.value),
                    "name a Secret or ConfigMap of the service's namespace",
                ),
                (None, None) => self.at(
                    tag,
                    "an envFrom entry names neither a secret nor a configMap".into(),
                    "write `- secret: <name>` or `- configMap: <name>` under envFrom",
                ),
                _ => {}
            }
        }
    }

    /// Each volume: a DNS-1123 name given once, its own absolute mount path, and a
    /// persistent volume's size a quantity.
    fn volumes(&mut self, spec: &Spec) {
        let mut volumes: HashSet<&str> = HashSet::new();
        let mut mounts: HashSet<&str> = HashSet::new();
        for v in &spec.volumes {
            if !is_dns_label(&v.name.value) {
                self.at(
                    &v.name,
                    format!("volume name `{}` is not a DNS-1123 label", v.name.value),
                    "a volume name is lower-case letters, digits and `-`, such as `config`",
                );
            } else if !volumes.insert(&v.name.value) {
                self.at(
                    &v.name,
                    format!("volume `{}` is listed twice", v.name.value),
                    "give each volume its own name",
                );
            }
            if !v.mount_path.starts_with('/') || !mounts.insert(&v.mount_path) {
                self.at(
                    &v.name,
                    format!(
                        "volume `{}` has mountPath `{}`, which is not absolute or is used twice",
                        v.name.value, v.mount_path
                    ),
                    "mount each volume at its own absolute path, such as `/config`",
                );
            }
            if let Some(p) = &v.persistent {
                self.quantity(&p.size, "size");
            }
        }
    }
}

/// Image automation's default policy (`>=<tag>`) needs a semver tag. Checked when rendering
/// only: loading the catalog for waves must not depend on how its images are tagged.
pub fn automation_policy(service: &super::Service) -> Option<SourceError> {
    let image = service.spec.image.as_ref()?;
    let tag = &image.tag;
    let automated = image
        .automation
        .as_ref()
        .is_none_or(|a| a.enabled != Some(false));
    let own_range = image
        .automation
        .as_ref()
        .is_some_and(|a| a.semver.is_some() || a.filter_tags.is_some());
    if !automated || own_range || matches(&SEMVER, &tag.value) {
        return None;
    }
    Some(
        SourceError::new(
            &service.path,
            format!(
                "tag `{}` is not semver, so image automation has no default policy",
                tag.value
            ),
        )
        .at(&service.text, yaml::spanned(&service.text, tag))
        .help("set image.automation.semver (with filterTags to extract a version), or image.automation.enabled: false; or render with --no-image-automation"),
    )
}

/// What `render` needs that a dependency-only definition leaves out: `image` (and `port`,
/// when the definition has neither). Located at `metadata.name`, the place the file names
/// the service; `None` when the service can be rendered.
pub fn renderable(service: &super::Service) -> Option<SourceError> {
    let spec = &service.spec;
    if spec.image.is_some() {
        return None;
    }
    let (missing, example) = if spec.port.is_none() {
        (
            "`image` and `port`",
            "  image:\n    repository: ghcr.io/example/app\n    tag: \"1.0.0\"\n  port: 8080",
        )
    } else {
        (
            "`image`",
            "  image:\n    repository: ghcr.io/example/app\n    tag: \"1.0.0\"",
        )
    };
    Some(
        SourceError::new(
            &service.path,
            format!(
                "`fluxwave render` needs {missing} in spec; `{}` declares only what orders its unit",
                service.name
            ),
        )
        .at(&service.text, service.name_span)
        .help(format!(
            "add them under spec:\n{example}\n(waves, plan, apply, check, cutover and blast need only `dependencies`)"
        )),
    )
}

/// A DNS-1123 subdomain: the names of Secrets and ConfigMaps.
fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

#[cfg(test)]
mod tests {
    use crate::catalog::parse;
    use crate::yaml::Text;

    /// The messages and 1-based positions of every error of a spec.
    fn errors(spec: &str) -> Vec<(String, (usize, usize))> {
        let text = format!(
            "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: s\nspec:\n  image: {{repository: r, tag: \"1.0.0\"}}\n{spec}"
        );
        match parse("catalog/s.yaml", "s", Text::new(text)) {
            Ok(_) => vec![],
            Err(e) => e
                .iter()
                .map(|e| (e.message.clone(), e.line_col().unwrap_or((0, 0))))
                .collect(),
        }
    }

    #[test]
    fn every_problem_is_reported_at_its_value() {
        let errs = errors(
            "  ports:\n    - {name: http, port: 1}\n    - {name: Metrics, port: 2}\n  ingress: {host: s.example}\n  env:\n    - {name: A, value: x}\n    - {name: A}\n  volumes:\n    - {name: data, mountPath: data}\n",
        );
        let got: Vec<(&str, (usize, usize))> =
            errs.iter().map(|(m, at)| (m.as_str(), *at)).collect();
        assert_eq!(
            got,
            [
                ("`http` is the name of the main `port`", (8, 14)),
                ("`Metrics` is not a valid port name", (9, 14)),
                ("an Ingress needs the main `port`", (10, 19)),
                ("environment variable `A` is set twice", (13, 14)),
                (
                    "`A` needs exactly one of `value` and `secretKeyRef`",
                    (13, 14)
                ),
                (
                    "volume `data` has mountPath `data`, which is not absolute or is used twice",
                    (15, 14)
                ),
            ]
        );
    }

    #[test]
    fn one_of_choices_are_enforced() {
        let errs = errors("  port: 80\n  envFrom:\n    - {secret: a, configMap: b}\n  probes:\n    liveness: {http: /x, tcp: true}\n");
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].0.contains("both a secret and a configMap"));
        assert_eq!(errs[0].1, (9, 30));
        assert!(errs[1].0.contains("both `http` and `tcp`"));
        let ok = errors("  port: 80\n  envFrom:\n    - secret: a-bootstrap-secret\n  probes:\n    liveness: {http: /x}\n  resources:\n    requests: {cpu: \"0.5\", memory: 1e3}\n  database: {size: 1Gi}\n");
        assert!(ok.is_empty(), "{ok:?}");
    }
}
