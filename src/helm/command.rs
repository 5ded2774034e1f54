//! Every command line fluxwave gives `helm`, built here and nowhere else. A value that comes
//! from a repository has passed `validate` and is written either as `--flag=value` (so helm
//! never reads it as an option of its own) or after `--` (so it is an argument, whatever it
//! starts with). helm runs with no plugin (`HELM_PLUGINS` is a folder that does not exist):
//! a plugin is a program, and a repository's address could pick a downloader plugin by its
//! scheme.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

/// The helm program and the cache folder this run keeps helm's own settings in.
pub struct Helm<'a> {
    pub program: &'a Path,
    pub cache: &'a Path,
}

/// `flag=value` as one argument.
fn flag(name: &str, value: impl Into<OsString>) -> OsString {
    let mut arg = OsString::from(name);
    arg.push("=");
    arg.push(value.into());
    arg
}

impl Helm<'_> {
    /// helm, with no plugin and with the repository settings `helm repo` writes kept in the
    /// cache (never the user's own list of repositories).
    fn command(&self) -> Command {
        let mut cmd = Command::new(self.program);
        let settings = self.cache.join("repositories");
        cmd.env("HELM_PLUGINS", self.cache.join("no-plugins"))
            .env("HELM_REPOSITORY_CONFIG", settings.join("repositories.yaml"))
            .env("HELM_REPOSITORY_CACHE", settings.join("cache"));
        cmd
    }

    /// `helm template` of the chart folder `chart` (in the cache) as release `release` in
    /// `namespace` on Kubernetes `kube_version`, the values on standard input.
    pub fn template(
        &self,
        release: &str,
        chart: &Path,
        namespace: &str,
        kube_version: &str,
        (include_crds, skip_schema_validation): (bool, bool),
    ) -> Command {
        let mut cmd = self.command();
        cmd.arg("template")
            .arg(flag("--namespace", namespace))
            .arg(flag("--kube-version", kube_version));
        if include_crds {
            cmd.arg("--include-crds");
        }
        if skip_schema_validation {
            cmd.arg("--skip-schema-validation");
        }
        cmd.arg("--values=-").arg("--").arg(release).arg(chart);
        cmd
    }

    /// `helm pull` of an OCI chart (`reference` is `oci://host/path/name`, with `@digest`
    /// when pinned by one), unpacked into `into`.
    pub fn pull_oci(
        &self,
        reference: &str,
        version: Option<&str>,
        plain_http: bool,
        into: &Path,
    ) -> Command {
        let mut cmd = self.command();
        cmd.arg("pull");
        if let Some(v) = version {
            cmd.arg(flag("--version", v));
        }
        if plain_http {
            cmd.arg("--plain-http");
        }
        cmd.arg("--untar")
            .arg(flag("--untardir", into))
            .arg("--")
            .arg(reference);
        cmd
    }

    /// `helm pull` of chart `name` at `version` from the Helm repository at `repo`, unpacked
    /// into `into`.
    pub fn pull_from_repo(&self, name: &str, repo: &str, version: &str, into: &Path) -> Command {
        let mut cmd = self.command();
        cmd.arg("pull")
            .arg(flag("--repo", repo))
            .arg(flag("--version", version))
            .arg("--untar")
            .arg(flag("--untardir", into))
            .arg("--")
            .arg(name);
        cmd
    }

    /// `helm repo add` of the Helm repository at `url` as `alias` (a name fluxwave made),
    /// fetching its index again.
    pub fn repo_add(&self, alias: &str, url: &str) -> Command {
        let mut cmd = self.command();
        cmd.args(["repo", "add", "--force-update", "--"])
            .arg(alias)
            .arg(url);
        cmd
    }

    /// `helm search repo` for chart `name` (`alias/chart`) in the versions `constraint`
    /// allows, as JSON.
    pub fn search(&self, name: &str, constraint: &str) -> Command {
        let mut cmd = self.command();
        cmd.args(["search", "repo"])
            .arg(flag("--version", constraint))
            .arg("--output=json")
            .arg("--")
            .arg(name);
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(cmd: &Command) -> Vec<String> {
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// Nothing a repository writes can be read as an option: every value is `--flag=value`
    /// or after `--`.
    #[test]
    fn repository_values_are_never_options() {
        let helm = Helm {
            program: Path::new("helm"),
            cache: Path::new("/cache"),
        };
        let hostile = "--post-renderer=/bin/sh";
        let t = helm.template(
            hostile,
            Path::new("/c/x"),
            hostile,
            "v1.37.0",
            (true, false),
        );
        assert_eq!(
            args(&t),
            [
                "template",
                "--namespace=--post-renderer=/bin/sh",
                "--kube-version=v1.37.0",
                "--include-crds",
                "--values=-",
                "--",
                hostile,
                "/c/x"
            ]
        );
        let p = helm.pull_from_repo(hostile, hostile, hostile, Path::new("/t"));
        assert_eq!(
            args(&p),
            [
                "pull",
                "--repo=--post-renderer=/bin/sh",
                "--version=--post-renderer=/bin/sh",
                "--untar",
                "--untardir=/t",
                "--",
                hostile
            ]
        );
        let s = helm.search(hostile, hostile);
        assert_eq!(args(&s).last().map(String::as_str), Some(hostile));
        assert_eq!(args(&s)[args(&s).len() - 2], "--");
        let a = helm.repo_add("alias", hostile);
        assert_eq!(
            args(&a),
            ["repo", "add", "--force-update", "--", "alias", hostile]
        );
        let envs: Vec<_> = t.get_envs().collect();
        assert!(envs
            .iter()
            .any(|(k, v)| *k == "HELM_PLUGINS"
                && *v == Some(Path::new("/cache/no-plugins").as_os_str())));
    }
}
