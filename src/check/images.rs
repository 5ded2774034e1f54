//! `uncovered-image-policy` and `unknown-image-policy`: an image setter marker
//! (`# {"$imagepolicy": "ns:name"}`) that no ImageUpdateAutomation's `update.path` (Setters
//! strategy, relative to the repository root) covers is never updated, and one that names an
//! ImagePolicy no environment builds is never updated either; both fail in silence, the image
//! simply stays old. Every YAML file of the repository is read for markers.

use serde_json::Value;

use super::{Finding, FluxView, Place};
use crate::diag::Code;
use crate::flux::normalize_path;
use crate::kustomize::object::ObjectId;
use crate::pointer::Pointer;

pub const UNCOVERED: Code = Code::UncoveredImagePolicy;
pub const UNKNOWN: Code = Code::UnknownImagePolicy;

const IMAGE_GROUP: &str = "image.toolkit.fluxcd.io";
const MARKER: &str = "\"$imagepolicy\"";

/// The `ns:name` of every marker in a text, with the byte span of the marker (from
/// `"$imagepolicy"` to the closing quote of its value): the scan that finds a marker is the
/// one that places it.
fn markers(text: &str) -> Vec<((usize, usize), String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(MARKER) {
        let start = from + at;
        from = start + MARKER.len();
        let rest = text[from..].trim_start();
        let Some(rest) = rest.strip_prefix(':') else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(rest) = rest.strip_prefix('"') else {
            continue;
        };
        if let Some(end) = rest.find('"') {
            let close = text.len() - rest.len() + end + 1;
            out.push(((start, close - start), rest[..end].to_string()));
        }
    }
    out
}

pub fn image_policies(flux: &FluxView) -> Vec<Finding> {
    let mut paths: Vec<String> = Vec::new();
    let mut policies: Vec<ObjectId> = Vec::new();
    for (_, id, e) in flux.objects() {
        if id.is(IMAGE_GROUP, "ImageUpdateAutomation") {
            let Some(update) = e.whole.as_ref().and_then(|v| v.at_pointer("/spec/update")) else {
                continue;
            };
            let strategy = update
                .get("strategy")
                .and_then(Value::as_str)
                .unwrap_or("Setters");
            if strategy == "Setters" {
                paths.push(normalize_path(
                    update.get("path").and_then(Value::as_str).unwrap_or(""),
                ));
            }
        } else if id.is(IMAGE_GROUP, "ImagePolicy") {
            policies.push(id.clone());
        }
    }
    let mut findings = Vec::new();
    for (file, text) in flux.tree.manifests() {
        for ((offset, len), reference) in markers(text) {
            let pos = Some(Place::new(text, offset, len));
            let covered = paths
                .iter()
                .any(|p| p.is_empty() || file.starts_with(&format!("{p}/")));
            if !covered {
                findings.push(
                    Finding::new(
                        UNCOVERED,
                        file,
                        format!(
                            "the image marker for `{reference}` lies outside every ImageUpdateAutomation's update.path{}: the image is never updated",
                            if paths.is_empty() {
                                " (no ImageUpdateAutomation with the Setters strategy is built)".to_string()
                            } else {
                                format!(" ({})", paths.iter().map(|p| format!("./{p}")).collect::<Vec<_>>().join(", "))
                            }
                        ),
                        "move the file under an ImageUpdateAutomation's spec.update.path, or widen that path",
                    )
                    .at(pos.clone()),
                );
            }
            let mut parts = reference.split(':');
            let (ns, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let exists = policies.iter().any(|p| p.namespace == ns && p.name == name);
            if !exists {
                findings.push(
                    Finding::new(
                        UNKNOWN,
                        file,
                        format!("the image marker names ImagePolicy `{ns}/{name}`, which no environment builds: the image is never updated"),
                        "name an existing ImagePolicy as `namespace:name`, or add the ImagePolicy",
                    )
                    .at(pos),
                );
            }
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_setter_markers() {
        let text = "image: a:1 # {\"$imagepolicy\": \"flux-system:a\"}\ntag: 1 # {\"$imagepolicy\":\"ns:b:tag\"}\n";
        let m = markers(text);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].1, "flux-system:a");
        assert_eq!(m[1].1, "ns:b:tag");
        let at = |(o, l): (usize, usize)| &text[o..o + l];
        assert_eq!(at(m[0].0), "\"$imagepolicy\": \"flux-system:a\"");
        assert_eq!(at(m[1].0), "\"$imagepolicy\":\"ns:b:tag\"");
        let text = std::sync::Arc::new(text.to_string());
        assert_eq!(Place::new(&text, m[0].0 .0, 1).line_col(), (1, 15));
    }
}
