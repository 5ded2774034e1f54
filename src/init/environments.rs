//! `clusters.environments`: the environments `check` and `cutover` discover
//! (`flux::discover`), written when the configured reading of each is the one discovery made
//! (its root Kustomization the same), since `apply` edits the environments fluxwave.yaml
//! lists; else left to discovery, with a comment saying why.

use serde_json::json;

use crate::config::is_dns_label;
use crate::flux::discover::{self, Environment};
use crate::tree::FileTree;
use crate::yaml;

use super::comment::{comment, one_line};
use super::{Draft, Found};

/// `clusters.environments` written to `clusters`, or a comment saying why they are left to
/// discovery.
pub(super) fn setting(
    tree: &FileTree,
    envs: &[Environment],
    apps: &str,
    clusters: &mut String,
    d: &mut Draft,
) {
    if envs.is_empty() {
        return;
    }
    let faithful = envs.iter().all(|e| {
        let configured = Environment::configured(tree, &e.name, &e.path, "");
        discover::root_in(tree, &configured) == discover::root_in(tree, e)
    });
    if let Some(why) = unlisted(faithful, envs, apps) {
        left_to_discovery(why, envs, clusters, d);
        return;
    }
    clusters.push_str(
        "  # The environments: apply keeps a decryption patch per wave in each one's kustomization.\n  environments:\n",
    );
    for e in envs {
        clusters.push_str(&format!(
            "{}    - name: {}\n      path: {}\n",
            comment("    ", &e.found),
            yaml::scalar(&json!(e.name)),
            yaml::scalar(&json!(e.path))
        ));
        d.found.push(Found {
            setting: format!("clusters.environments `{}`", e.name),
            value: e.path.clone(),
            why: e.found.clone(),
        });
    }
}

/// Why the environments cannot be listed, if they cannot: one's root Kustomization is not
/// the one a listed environment would read (not `faithful`), or a name is no DNS-1123 label,
/// or a folder is inside the app tier (`apps`).
fn unlisted(faithful: bool, envs: &[Environment], apps: &str) -> Option<&'static str> {
    let valid = envs.iter().all(|e| {
        is_dns_label(&e.name) && e.path != apps && !e.path.starts_with(&format!("{apps}/"))
    });
    if !faithful {
        Some("the root Kustomization of one is made by the cluster, by the Flux Operator, and a listed environment would not read it")
    } else if !valid {
        Some("an environment's name is not a DNS-1123 label, or its folder is inside the app tier")
    } else {
        None
    }
}

/// The environments as a comment, each found and not written, and a note that apply edits
/// only listed ones.
fn left_to_discovery(why: &str, envs: &[Environment], clusters: &mut String, d: &mut Draft) {
    clusters.push_str(&comment(
        "  ",
        &format!("environments: left to discovery, which finds them each run ({why}):"),
    ));
    for e in envs {
        clusters.push_str(&format!(
            "  #   {}: {} ({})\n",
            one_line(&e.name),
            one_line(&e.path),
            one_line(&e.found)
        ));
    }
    for e in envs {
        d.found.push(Found {
            setting: format!("environment `{}`", e.name),
            value: e.path.clone(),
            why: format!("{}; discovered each run, not written", e.found),
        });
    }
    d.notes.push(format!(
        "clusters.environments: not set ({why}); fluxwave discovers them each run, but `fluxwave apply` edits only listed ones"
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flux::discover::Root;
    use crate::init::fixture::built;

    fn env(name: &str, path: &str) -> Environment {
        Environment {
            name: name.into(),
            path: path.into(),
            found: "test".into(),
            root: Root::Assumed,
            artifact_root: String::new(),
            nested: Vec::new(),
        }
    }

    #[test]
    fn environments_are_listed_only_when_a_listed_one_reads_as_discovered() {
        let prod = [env("prod", "clusters/prod")];
        assert_eq!(unlisted(true, &prod, "apps"), None);
        assert!(unlisted(false, &prod, "apps")
            .unwrap()
            .starts_with("the root Kustomization of one is made by the cluster"));
        let named =
            "an environment's name is not a DNS-1123 label, or its folder is inside the app tier";
        assert_eq!(
            unlisted(true, &[env("Prod", "clusters/prod")], "apps"),
            Some(named)
        );
        assert_eq!(unlisted(true, &[env("prod", "apps")], "apps"), Some(named));
        assert_eq!(
            unlisted(true, &[env("prod", "apps/prod")], "apps"),
            Some(named)
        );
        // A folder whose name only starts with the tier's is not inside it.
        assert_eq!(unlisted(true, &[env("prod", "apps-prod")], "apps"), None);
    }

    #[test]
    fn a_bootstrapped_environment_is_listed_with_where_it_was_found() {
        let (tree, envs, _) = built(&[]);
        let (mut clusters, mut d) = (String::new(), Draft::default());
        setting(&tree, &envs, "apps", &mut clusters, &mut d);
        assert!(
            clusters.contains("  environments:\n")
                && clusters.ends_with("    - name: prod\n      path: clusters/prod\n"),
            "{clusters}"
        );
        assert_eq!(d.found[0].setting, "clusters.environments `prod`");
        assert!(d.notes.is_empty(), "{:?}", d.notes);
    }

    #[test]
    fn environments_left_to_discovery_are_each_a_comment_and_a_finding() {
        let (tree, envs, _) = built(&[]);
        let (mut clusters, mut d) = (String::new(), Draft::default());
        // Its folder inside the app tier: not listed.
        setting(&tree, &envs, "clusters", &mut clusters, &mut d);
        assert!(
            clusters.contains("  #   prod: clusters/prod ("),
            "{clusters}"
        );
        assert!(!clusters.contains("  environments:\n"), "{clusters}");
        assert_eq!(d.found[0].setting, "environment `prod`");
        assert!(d.notes[0].starts_with("clusters.environments: not set (an environment's name"));
    }
}
