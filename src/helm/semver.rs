//! Chart versions and the constraints a HelmRelease writes in `spec.chart.spec.version`, read
//! as source-controller reads them (Masterminds/semver v3, `NewConstraint`): `*`, exact
//! versions, `=`, `!=`, `>`, `>=`, `<`, `<=`, `~`, `^`, `x`/`*` wildcards (`1.2.x`), `a - b`
//! ranges, comparisons joined by spaces or commas (all must hold) and `||` (one must). A
//! pre-release matches only a constraint that names a pre-release itself. fluxwave needs
//! this only to pick a chart from its cache without the network; with the network, `helm`
//! resolves the constraint itself.

use std::cmp::Ordering;

/// A version `major.minor.patch[-pre][+build]` (a leading `v` allowed; missing parts are 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    parts: [u64; 3],
    pre: Vec<String>,
}

impl Version {
    pub fn parse(text: &str) -> Option<Version> {
        let t = text.trim();
        let t = t.strip_prefix('v').unwrap_or(t);
        let t = t.split('+').next().unwrap_or(t);
        let (core, pre) = match t.split_once('-') {
            Some((c, p)) => (c, p.split('.').map(str::to_string).collect()),
            None => (t, Vec::new()),
        };
        let mut parts = [0u64; 3];
        let nums: Vec<&str> = core.split('.').collect();
        if nums.is_empty() || nums.len() > 3 {
            return None;
        }
        for (i, n) in nums.iter().enumerate() {
            parts[i] = n.parse().ok()?;
        }
        Some(Version { parts, pre })
    }

    fn is_pre(&self) -> bool {
        !self.pre.is_empty()
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.parts.cmp(&other.parts).then_with(|| {
            match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => {
                    for (a, b) in self.pre.iter().zip(&other.pre) {
                        let o = match (a.parse::<u64>(), b.parse::<u64>()) {
                            (Ok(x), Ok(y)) => x.cmp(&y),
                            (Ok(_), Err(_)) => Ordering::Less,
                            (Err(_), Ok(_)) => Ordering::Greater,
                            (Err(_), Err(_)) => a.cmp(b),
                        };
                        if o != Ordering::Equal {
                            return o;
                        }
                    }
                    self.pre.len().cmp(&other.pre.len())
                }
            }
        })
    }
}

/// One comparison: an operator and a version, wildcards resolved into a range.
#[derive(Debug, Clone)]
struct Cmp {
    op: Op,
    v: Version,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

/// A constraint: alternatives (`||`), each a list of comparisons that must all hold.
#[derive(Debug, Clone)]
pub struct Constraint {
    any: Vec<Vec<Cmp>>,
    /// Whether it names a pre-release (only then does a pre-release match).
    pre: bool,
}

impl Constraint {
    /// `None` when it cannot be read.
    pub fn parse(text: &str) -> Option<Constraint> {
        let mut any = Vec::new();
        let mut pre = false;
        for alt in text.split("||") {
            let words = words(alt)?;
            let mut all = Vec::new();
            let mut i = 0;
            while i < words.len() {
                // `a - b`: from a to b, both included.
                if words.get(i + 1).map(String::as_str) == Some("-") {
                    let b = words.get(i + 2)?;
                    all.extend(range(">=", &words[i], &mut pre)?);
                    all.extend(range("<=", b, &mut pre)?);
                    i += 3;
                    continue;
                }
                let w = &words[i];
                let at = w
                    .find(|c: char| c.is_ascii_alphanumeric() || c == '*')
                    .unwrap_or(w.len());
                let (op, v) = w.split_at(at);
                all.extend(range(op, v, &mut pre)?);
                i += 1;
            }
            any.push(all);
        }
        Some(Constraint { any, pre })
    }

    pub fn matches(&self, v: &Version) -> bool {
        if v.is_pre() && !self.pre {
            return false;
        }
        self.any.iter().any(|all| {
            all.iter().all(|c| {
                let o = v.cmp(&c.v);
                match c.op {
                    Op::Eq => o == Ordering::Equal,
                    Op::Ne => o != Ordering::Equal,
                    Op::Gt => o == Ordering::Greater,
                    Op::Ge => o != Ordering::Less,
                    Op::Lt => o == Ordering::Less,
                    Op::Le => o != Ordering::Greater,
                }
            })
        })
    }
}

/// The comparisons of one alternative, an operator glued to its version (`>= 1.0` is `>=1.0`).
fn words(alt: &str) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let mut pending = String::new();
    for w in alt.split([' ', ',']).filter(|w| !w.is_empty()) {
        if w.chars().all(|c| "<>=!~^".contains(c)) {
            pending.push_str(w);
            continue;
        }
        out.push(format!("{pending}{w}"));
        pending.clear();
    }
    if !pending.is_empty() {
        return None;
    }
    if out.is_empty() {
        out.push("*".into());
    }
    Some(out)
}

/// The comparisons `op v` stands for, wildcards and partial versions as ranges.
fn range(op: &str, v: &str, pre: &mut bool) -> Option<Vec<Cmp>> {
    let v = v.strip_prefix('v').unwrap_or(v);
    let core = v.split(['-', '+']).next().unwrap_or(v);
    let fields: Vec<&str> = core.split('.').collect();
    if fields.len() > 3 || fields.is_empty() {
        return None;
    }
    let wild = |f: &str| matches!(f, "x" | "X" | "*" | "");
    // How many leading parts are given before the first wildcard.
    let given = fields.iter().take_while(|f| !wild(f)).count();
    let mut parts = [0u64; 3];
    for (i, f) in fields.iter().take(given).enumerate() {
        parts[i] = f.parse().ok()?;
    }
    let at = |parts: [u64; 3]| Version {
        parts,
        pre: Vec::new(),
    };
    let mut exact = || -> Option<Version> {
        let v = Version::parse(v)?;
        *pre |= v.is_pre();
        Some(v)
    };
    let bump = |n: usize| -> Version {
        let mut p = parts;
        p[n] += 1;
        for x in p.iter_mut().skip(n + 1) {
            *x = 0;
        }
        at(p)
    };
    let cmp = |op, v| Cmp { op, v };
    if given == 0 {
        return Some(match op {
            "" | "=" | ">=" | "<=" | "~" | "^" => Vec::new(),
            "!=" | ">" | "<" => vec![cmp(Op::Lt, at([0, 0, 0]))], // nothing
            _ => return None,
        });
    }
    let partial = given < 3;
    Some(match op {
        "" | "=" if partial => vec![cmp(Op::Ge, at(parts)), cmp(Op::Lt, bump(given - 1))],
        "" | "=" => vec![cmp(Op::Eq, exact()?)],
        "!=" if partial => return None,
        "!=" => vec![cmp(Op::Ne, exact()?)],
        ">" if partial => vec![cmp(Op::Ge, bump(given - 1))],
        ">" => vec![cmp(Op::Gt, exact()?)],
        // Masterminds reads `=>` and `=<` as `>=` and `<=`.
        ">=" | "=>" if partial => vec![cmp(Op::Ge, at(parts))],
        ">=" | "=>" => vec![cmp(Op::Ge, exact()?)],
        "<" => vec![cmp(Op::Lt, if partial { at(parts) } else { exact()? })],
        "<=" | "=<" if partial => vec![cmp(Op::Lt, bump(given - 1))],
        "<=" | "=<" => vec![cmp(Op::Le, exact()?)],
        // `~1.2.3` is >=1.2.3 <1.3.0; `~1` is >=1 <2.
        "~" | "~>" => {
            let low = if partial { at(parts) } else { exact()? };
            vec![
                cmp(Op::Ge, low),
                cmp(Op::Lt, below(bump(if given == 1 { 0 } else { 1 }))),
            ]
        }
        // `^1.2.3` is >=1.2.3 <2.0.0; `^0.2.3` is >=0.2.3 <0.3.0; `^0.0.3` is >=0.0.3 <0.0.4.
        "^" => {
            let low = if partial { at(parts) } else { exact()? };
            let n = if parts[0] > 0 || given == 1 {
                0
            } else if parts[1] > 0 || given == 2 {
                1
            } else {
                2
            };
            vec![cmp(Op::Ge, low), cmp(Op::Lt, below(bump(n)))]
        }
        _ => return None,
    })
}

/// The lowest pre-release of `v` (`2.0.0-0`): the bound below which a tilde or caret range
/// stays, so that `^1.2.3-alpha` admits no `2.0.0-rc.1` (Masterminds' `constraintCaret` and
/// `constraintTilde` want the same major, and minor, version).
fn below(mut v: Version) -> Version {
    v.pre = vec!["0".to_string()];
    v
}

/// The highest of `versions` that `constraint` admits.
pub fn best<'a>(
    constraint: &Constraint,
    versions: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    versions
        .filter_map(|s| Some((Version::parse(s)?, s)))
        .filter(|(v, _)| constraint.matches(v))
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, s)| s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admits(c: &str, v: &str) -> bool {
        Constraint::parse(c)
            .unwrap()
            .matches(&Version::parse(v).unwrap())
    }

    /// Every case of the upstream table (tests/fixtures/upstream/semver.tsv: each of its
    /// constraints against each of its versions, answered by Masterminds/semver itself). An
    /// empty constraint is not in it: the library refuses one, and fluxwave reads it as `*`,
    /// the version a HelmChart has when its HelmRelease gives none.
    #[test]
    fn agrees_with_the_library_on_its_table() {
        let table = include_str!("../../tests/fixtures/upstream/semver.tsv");
        let cases = crate::upstream::cases(table, 2);
        crate::upstream::assert_agrees(&cases, 600, |c| {
            let (constraint, version) = (c.inputs[0], c.inputs[1]);
            let got = match (Constraint::parse(constraint), Version::parse(version)) {
                (Some(c), Some(v)) => c.matches(&v).to_string(),
                _ => "error".to_string(),
            };
            (got != c.answer).then(|| {
                format!(
                    "{constraint:?} {version:?}: library {}, fluxwave {got}",
                    c.answer
                )
            })
        });
    }

    /// Masterminds/semver v3's documented ranges (its README, "Basic Comparisons" to
    /// "Caret Range Comparisons").
    #[test]
    fn constraints_read_as_source_controller_reads_them() {
        for (c, yes, no) in [
            ("*", "3.1.4", "1.0.0-rc.1"),
            ("1.2.3", "1.2.3", "1.2.4"),
            (">=1.0.0 <2.0.0", "1.9.9", "2.0.0"),
            (">= 1.2, < 3.0.0 || >= 4.2.3", "4.5.0", "3.1.0"),
            ("1.2.x", "1.2.9", "1.3.0"),
            ("~1.2.3", "1.2.9", "1.3.0"),
            ("~1", "1.9.0", "2.0.0"),
            ("^1.2.3", "1.99.0", "2.0.0"),
            ("^0.2.3", "0.2.9", "0.3.0"),
            ("^0.0.3", "0.0.3", "0.0.4"),
            ("1.2 - 1.4.5", "1.4.5", "1.4.6"),
            ("!=1.2.3", "1.2.4", "1.2.3"),
            (">1.2", "1.3.0", "1.2.9"),
            ("<=1.2", "1.2.9", "1.3.0"),
            (">=1.0.0-0", "1.0.0-rc.1", "0.9.0"),
        ] {
            assert!(admits(c, yes), "{c} admits {yes}");
            assert!(!admits(c, no), "{c} refuses {no}");
        }
        assert!(Constraint::parse(">=").is_none());
    }

    #[test]
    fn the_highest_admitted_version_is_picked() {
        let c = Constraint::parse(">=1.0.0 <2.0.0").unwrap();
        let got = best(
            &c,
            ["0.9.0", "1.1.0", "1.0.0", "2.0.0", "1.2.0-rc.1"].into_iter(),
        );
        assert_eq!(got, Some("1.1.0"));
    }
}
