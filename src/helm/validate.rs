//! What a value read from a repository must be before it reaches `helm`, each rule the one the
//! upstream controller or Helm applies to it: a value that fails is refused with the reason
//! they give, and the release is not rendered. A repository is untrusted input (SECURITY.md):
//! nothing it writes may become an option of helm, a path outside the chart, or an address
//! of a kind source-controller would not fetch.

use super::error::Invalid;
use super::semver::Constraint;
use crate::config::is_dns_label;

/// Helm's `validName` (`pkg/chartutil/validate_name.go`): labels joined by `.`.
fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.split('.').all(is_dns_label)
}

/// Helm's `ValidateReleaseName`, which helm-controller's install and upgrade run: at most 53
/// characters, a DNS-1123 subdomain.
pub fn release_name(name: &str) -> Result<(), Invalid> {
    if name.is_empty() {
        return Err(Invalid::ReleaseNameEmpty);
    }
    if name.len() > 53 || !is_dns_subdomain(name) {
        return Err(Invalid::ReleaseName(shown(name)));
    }
    Ok(())
}

/// What the API server checks of a HelmRelease before helm-controller sees it: its name is a
/// DNS-1123 subdomain of at most 253 characters (as every object's), and `spec.releaseName`
/// is at most 53 characters (`MaxLength=53` in the HelmRelease CRD; a longer name made of
/// `targetNamespace` and the name is shortened instead).
pub fn helm_release(name: &str, release_name: Option<&str>) -> Result<(), Invalid> {
    if name.len() > 253 || !is_dns_subdomain(name) {
        return Err(Invalid::ObjectName(shown(name)));
    }
    if release_name.is_some_and(|r| r.chars().count() > 53) {
        return Err(Invalid::ReleaseNameTooLong);
    }
    Ok(())
}

/// A namespace's name (`targetNamespace`, the HelmRelease's own): a DNS-1123 label of at
/// most 63 characters, as the API server wants.
pub fn namespace(name: &str) -> Result<(), Invalid> {
    if !is_dns_label(name) {
        return Err(Invalid::Namespace(shown(name)));
    }
    Ok(())
}

/// A chart's name: what `helm create` accepts (`chartName`, `^[a-zA-Z0-9._-]+$` in
/// `pkg/chartutil/create.go`), so also what `Metadata.Validate` wants (not `.` or `..`, its
/// own base name), and never starting with `-`. The name is looked up in a repository's
/// index or appended to an OCI repository's address, never used as a path.
pub fn chart_name(name: &str) -> Result<(), Invalid> {
    let chars = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if !chars || name == "." || name == ".." || name.starts_with('-') {
        return Err(Invalid::ChartName(shown(name)));
    }
    Ok(())
}

/// The kinds of address source-controller fetches a chart from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// A HelmRepository's `spec.url` (`^(http|https|oci)://.*$` in its CRD).
    HelmRepository,
    /// An OCIRepository's `spec.url` (`^oci://.*$`).
    Oci,
}

impl Scheme {
    /// The addresses of the kind, for a message.
    pub(super) fn expected(self) -> &'static str {
        match self {
            Scheme::HelmRepository => "an http://, https:// or oci:// address",
            Scheme::Oci => "an oci:// address",
        }
    }
}

/// A source's `spec.url`, as its CRD's pattern wants it, with a host fluxwave can name:
/// `http://`, `https://` or `oci://` (`Scheme`), then an authority of ASCII letters, digits,
/// `.`, `-`, `:`, `[`, `]` and `_` (user information is refused: a credential in an address is
/// no address to fetch, and `user@host` hides which host is asked), and no white space,
/// control character or `\` anywhere. Gives the host, lower-case, with its port.
pub fn url(url: &str, scheme: Scheme) -> Result<String, Invalid> {
    let schemes: &[&str] = match scheme {
        Scheme::HelmRepository => &["http://", "https://", "oci://"],
        Scheme::Oci => &["oci://"],
    };
    let Some(rest) = schemes.iter().find_map(|s| url.strip_prefix(s)) else {
        return Err(Invalid::UrlScheme {
            url: shown(url),
            scheme,
        });
    };
    if url
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '\\')
    {
        return Err(Invalid::UrlCharacters(shown(url)));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_ok = !authority.is_empty()
        && authority
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-:[]_".contains(c));
    if !host_ok {
        return Err(Invalid::UrlHost(shown(url)));
    }
    Ok(authority.to_ascii_lowercase())
}

/// `host` (lower-case, with its port when the address gives one) without its port.
pub fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        // An IPv6 literal: `[::1]:5000`.
        return rest.split(']').next().unwrap_or(rest);
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

/// An OCI digest, as an OCIRepository's `spec.ref.digest` or a HelmRelease pins it:
/// `sha256:` and 64 lower-case hexadecimal digits (or `sha512:` and 128).
pub fn digest(d: &str) -> Result<(), Invalid> {
    let ok = |hex: &str, n: usize| {
        hex.len() == n
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    match d.split_once(':') {
        Some(("sha256", hex)) if ok(hex, 64) => Ok(()),
        Some(("sha512", hex)) if ok(hex, 128) => Ok(()),
        _ => Err(Invalid::Digest(shown(d))),
    }
}

/// A version, constraint or tag as it is handed to helm (`--version=…`): a version
/// constraint as Masterminds/semver reads it (source-controller's HelmRepository charts and an
/// OCIRepository's `ref.semver`; an exact version is one), an OCI tag (`[A-Za-z0-9_]` then at
/// most 127 of `[A-Za-z0-9._-]`, the distribution spec's rule) or a digest. Anything else
/// source-controller cannot resolve either.
pub fn version(v: &str) -> Result<(), Invalid> {
    let tag = v.len() <= 128
        && v.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if tag || digest(v).is_ok() || (v.len() <= 256 && Constraint::parse(v).is_some()) {
        return Ok(());
    }
    Err(Invalid::Version(shown(v)))
}

/// `text` for a message: at most 80 characters (a hostile name may be very long).
pub(super) fn shown(text: &str) -> String {
    let mut out: String = text.chars().take(80).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Helm's own cases (`pkg/chartutil/validate_name_test.go`, `TestValidateReleaseName`).
    #[test]
    fn release_names_are_judged_as_helm_judges_them() {
        for (name, ok) in [
            ("", false),
            ("release", true),
            ("release-name", true),
            ("release.name", true),
            ("release.name.with.dots", true),
            ("release-name-with-dashes", true),
            ("1release", true),
            ("release1", true),
            ("Release", false),
            ("-release", false),
            ("release-", false),
            (".release", false),
            ("release.", false),
            ("release_name", false),
            ("release name", false),
            ("release/name", false),
            ("--post-renderer=/bin/sh", false),
            ("--output-dir=/tmp", false),
            (
                "a-name-that-is-way-too-long-for-a-release-name-in-helm",
                false,
            ),
            (
                "a-name-that-is-exactly-53-characters-long-for-helm-ok",
                true,
            ),
        ] {
            assert_eq!(release_name(name).is_ok(), ok, "{name:?}");
        }
    }

    #[test]
    fn namespaces_are_dns_labels() {
        for (name, ok) in [
            ("apps", true),
            ("kube-system", true),
            ("a.b", false),
            ("-n", false),
            ("--namespace=x", false),
            ("", false),
            (&"a".repeat(64), false),
            (&"a".repeat(63), true),
        ] {
            assert_eq!(namespace(name).is_ok(), ok, "{name:?}");
        }
    }

    #[test]
    fn chart_names_are_base_names() {
        for (name, ok) in [
            ("podinfo", true),
            ("app-template", true),
            ("-chart", false),
            ("chart_1.x", true),
            ("<img>", false),
            ("a b", false),
            ("", false),
            (".", false),
            ("..", false),
            ("../../etc", false),
            ("a/b", false),
            ("a\\b", false),
            ("a\nb", false),
        ] {
            assert_eq!(chart_name(name).is_ok(), ok, "{name:?}");
        }
    }

    #[test]
    fn urls_are_of_the_schemes_source_controller_fetches() {
        use Scheme::*;
        assert_eq!(
            url("https://charts.example.com/stable", HelmRepository).as_deref(),
            Ok("charts.example.com")
        );
        assert_eq!(
            url("oci://GHCR.io/org/charts", Oci).as_deref(),
            Ok("ghcr.io")
        );
        assert_eq!(
            url("http://127.0.0.1:5000/x", HelmRepository).as_deref(),
            Ok("127.0.0.1:5000")
        );
        for bad in [
            "file:///etc",
            "ssh://git@host/x",
            "s3://bucket/x",
            "secrets://x",
            "--repo=x",
            "https://user@evil.example/x",
            "https://allowed.example@evil.example/",
            "https://",
            "https://host name/",
            "https://host\\@evil/",
            "https://host/\nx",
        ] {
            assert!(url(bad, HelmRepository).is_err(), "{bad:?}");
        }
        assert!(url("https://charts.example.com", Oci).is_err());
        assert_eq!(host_name("127.0.0.1:5000"), "127.0.0.1");
        assert_eq!(host_name("[::1]:5000"), "::1");
        assert_eq!(host_name("ghcr.io"), "ghcr.io");
    }

    #[test]
    fn digests_and_versions() {
        assert!(digest(&format!("sha256:{}", "a".repeat(64))).is_ok());
        assert!(digest("sha256:abc").is_err());
        assert!(digest(&format!("sha256:{}", "A".repeat(64))).is_err());
        assert!(version("1.2.3").is_ok());
        assert!(version(">=1.0.0 <2.0.0").is_ok());
        assert!(version("latest").is_ok());
        assert!(version("2.x").is_ok());
        assert!(version(">=1.0.0, <2.0.0 || 3.x").is_ok());
        for bad in [
            "1\n",
            "--kubeconfig=/tmp/x",
            "$(echo pwned)",
            "x; echo pwned",
            "file:///etc/passwd",
            "-f/etc/passwd",
            "/tmp/chart",
        ] {
            assert!(version(bad).is_err(), "{bad:?}");
        }
    }
}
