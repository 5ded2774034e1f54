//! Which files of a repository are in the artifact Flux builds. source-controller archives a
//! GitRepository's checkout without the files its ignore patterns exclude, and
//! kustomize-controller builds that archive: a file the patterns exclude does not exist for
//! Flux. This is a port of what it runs, rule for rule:
//!
//! - fluxcd/pkg `sourceignore.LoadIgnorePatterns`: every `.sourceignore` of the checkout (not
//!   inside `.git`), each scoped to its folder, in a depth-first walk of sorted folders, then
//!   the GitRepository's `spec.ignore` (source-controller `reconcileArtifact`), scoped to the
//!   root;
//! - fluxcd/pkg `artifact/storage.SourceIgnoreFilter`: with no pattern at all, the default
//!   matcher (`VCSPatterns` then `DefaultPatterns`); with any, `VCSPatterns` then those
//!   patterns only, so a `.sourceignore` or `spec.ignore` replaces the default exclusions;
//! - fluxcd/pkg `sourceignore/gitignore` (go-git's gitignore): `ParsePattern`,
//!   `pattern.Match`, and `matcher.Match`, where the last pattern that matches decides;
//! - Go's `path/filepath.Match` for each path segment.
//!
//! `storage.Archive` walks every folder, excluded or not (the filter returns no
//! `filepath.SkipDir`), so each file is judged by its own path: `!keep.yaml` brings back a
//! file inside an excluded folder, unlike git.

/// fluxcd/pkg `sourceignore.ExcludeVCS`.
const EXCLUDE_VCS: &str = ".git/,.gitignore,.gitmodules,.gitattributes";
/// fluxcd/pkg `sourceignore.ExcludeExt`, `ExcludeCI` and `ExcludeExtra`: `DefaultPatterns`.
const EXCLUDE_DEFAULT: [&str; 3] = [
    "*.jpg,*.jpeg,*.gif,*.png,*.wmv,*.flv,*.tar.gz,*.zip",
    ".github/,.circleci/,.travis.yml,.gitlab-ci.yml,appveyor.yml,.drone.yml,cloudbuild.yaml,codeship-services.yml,codeship-steps.yml",
    "**/.goreleaser.yml,**/.sops.yaml,**/.flux.yaml",
];

/// The name of the ignore file (`sourceignore.IgnoreFile`).
pub const IGNORE_FILE: &str = ".sourceignore";

/// bufio.Scanner's largest line (`bufio.MaxScanTokenSize`): `ReadPatterns` stops reading at a
/// longer one, keeping the patterns before it.
const MAX_LINE: usize = 64 * 1024;

/// One segment of a pattern, read once: most are a name or `*.ext`, which need no
/// `filepath.Match`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// `*` then a literal.
    Suffix(String),
    Glob(String),
}

impl Part {
    fn new(p: &str) -> Part {
        let special = |s: &str| s.contains(['*', '?', '[', '\\']);
        match p.strip_prefix('*') {
            _ if !special(p) => Part::Literal(p.to_string()),
            Some(rest) if !special(rest) => Part::Suffix(rest.to_string()),
            _ => Part::Glob(p.to_string()),
        }
    }

    fn text(&self) -> &str {
        match self {
            Part::Literal(s) | Part::Glob(s) => s,
            Part::Suffix(_) => "*",
        }
    }

    /// `filepath.Match(part, name)` (`name` holds no `/`).
    fn matches(&self, name: &str) -> Result<bool, BadPattern> {
        match self {
            Part::Literal(s) => Ok(s == name),
            Part::Suffix(s) => Ok(name.ends_with(s.as_str())),
            Part::Glob(p) => go_match(p, name),
        }
    }
}

/// One gitignore pattern (`gitignore.pattern`), scoped to the folder `domain`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    domain: Vec<String>,
    parts: Vec<Part>,
    inclusion: bool,
    dir_only: bool,
    glob: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    NoMatch,
    Exclude,
    Include,
}

impl Pattern {
    /// `gitignore.ParsePattern`.
    fn parse(p: &str, domain: &[String]) -> Pattern {
        let (inclusion, mut p) = match p.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, p),
        };
        if !p.ends_with("\\ ") {
            p = p.trim_end_matches(' ');
        }
        let (dir_only, p) = match p.strip_suffix('/') {
            Some(rest) => (true, rest),
            None => (false, p),
        };
        Pattern {
            domain: domain.to_vec(),
            parts: p.split('/').map(Part::new).collect(),
            inclusion,
            dir_only,
            glob: p.contains('/'),
        }
    }

    /// `pattern.Match`.
    fn outcome(&self, path: &[&str], is_dir: bool) -> Outcome {
        if path.len() <= self.domain.len() || self.domain.iter().zip(path).any(|(d, p)| d != p) {
            return Outcome::NoMatch;
        }
        let path = &path[self.domain.len()..];
        let matched = if self.glob {
            self.glob_match(path, is_dir)
        } else {
            self.simple_name_match(path, is_dir)
        };
        match (matched, self.inclusion) {
            (false, _) => Outcome::NoMatch,
            (true, true) => Outcome::Include,
            (true, false) => Outcome::Exclude,
        }
    }

    /// `pattern.simpleNameMatch`: the pattern against every segment of the path.
    fn simple_name_match(&self, path: &[&str], is_dir: bool) -> bool {
        for (i, name) in path.iter().enumerate() {
            match self.parts[0].matches(name) {
                Err(BadPattern) => return false,
                Ok(false) => continue,
                Ok(true) => {}
            }
            if self.dir_only && !is_dir && i == path.len() - 1 {
                return false;
            }
            return true;
        }
        false
    }

    /// `pattern.globMatch`, step for step (a leading `/` gives an empty first part, which
    /// anchors the pattern at its folder; `**` crosses folders).
    fn glob_match(&self, mut path: &[&str], is_dir: bool) -> bool {
        let mut matched = false;
        let mut can_traverse = false;
        for (i, part) in self.parts.iter().enumerate() {
            let pattern = part.text();
            if pattern.is_empty() {
                can_traverse = false;
                continue;
            }
            if pattern == "**" {
                if i == self.parts.len() - 1 {
                    break;
                }
                can_traverse = true;
                continue;
            }
            if pattern.contains("**") {
                return false;
            }
            if path.is_empty() {
                return false;
            }
            if can_traverse {
                can_traverse = false;
                while let Some((e, rest)) = path.split_first() {
                    path = rest;
                    match part.matches(e) {
                        Err(BadPattern) => return false,
                        Ok(true) => {
                            matched = true;
                            break;
                        }
                        Ok(false) if path.is_empty() => matched = false,
                        Ok(false) => {}
                    }
                }
            } else {
                match part.matches(path[0]) {
                    Ok(true) => {}
                    _ => return false,
                }
                matched = true;
                path = &path[1..];
            }
        }
        if matched && self.dir_only && !is_dir && path.is_empty() {
            matched = false;
        }
        matched
    }
}

/// `sourceignore.ReadPatterns`: one pattern a line, but blank lines and lines that start with
/// `#`; a line break is `\n` or `\r\n` (bufio.ScanLines).
fn read_patterns(text: &str, domain: &[String], into: &mut Vec<Pattern>) {
    let mut rest = text;
    while !rest.is_empty() {
        let (line, next) = match rest.find('\n') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        if line.len() >= MAX_LINE {
            return;
        }
        rest = next;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if !line.starts_with('#') && !line.trim().is_empty() {
            into.push(Pattern::parse(line, domain));
        }
    }
}

fn parse_list(list: &str, into: &mut Vec<Pattern>) {
    into.extend(list.split(',').map(|p| Pattern::parse(p, &[])));
}

/// What source-controller leaves out of the artifact of one source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matcher {
    /// In increasing priority (`gitignore.NewMatcher`).
    patterns: Vec<Pattern>,
}

impl Matcher {
    /// The matcher of a checkout whose `.sourceignore` files are `files` (each by the folder
    /// it is in, "" for the root, in any order), with the GitRepository's `spec.ignore`.
    pub fn new<'a>(
        files: impl IntoIterator<Item = (&'a str, &'a str)>,
        spec_ignore: Option<&str>,
    ) -> Matcher {
        // `LoadIgnorePatterns` reads a folder's file before its subfolders', subfolders in
        // name order: an order in which every folder comes before the folders inside it,
        // which is the only order that matters (a pattern only matches under its folder).
        let mut files: Vec<(Vec<String>, &str)> = files
            .into_iter()
            .map(|(dir, text)| {
                let domain = dir
                    .split('/')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                (domain, text)
            })
            .collect();
        files.sort();
        let mut ps = Vec::new();
        for (domain, text) in &files {
            read_patterns(text, domain, &mut ps);
        }
        if let Some(ignore) = spec_ignore {
            read_patterns(ignore, &[], &mut ps);
        }
        let mut patterns = Vec::new();
        parse_list(EXCLUDE_VCS, &mut patterns);
        if ps.is_empty() {
            for list in EXCLUDE_DEFAULT {
                parse_list(list, &mut patterns);
            }
        }
        patterns.extend(ps);
        Matcher { patterns }
    }

    /// It, with everything outside `folder` left out (the artifact is made of that folder of
    /// the checkout: an OCI artifact pushed from it). The patterns that do so come first, so
    /// that every rule of the folder's own `.sourceignore` files still decides inside it; none
    /// of those matches outside it.
    pub fn within(mut self, folder: &str) -> Matcher {
        let mut text = String::new();
        let mut at = String::new();
        for part in folder.split('/').filter(|p| !p.is_empty()) {
            text.push_str(&format!("{at}/*\n!{at}/{part}/\n"));
            at = format!("{at}/{part}");
        }
        let mut confine = Vec::new();
        read_patterns(&text, &[], &mut confine);
        confine.append(&mut self.patterns);
        self.patterns = confine;
        self
    }

    /// Whether the file (or, with `is_dir`, the folder) at `path`, relative to the root of
    /// the checkout, is left out of the artifact (`matcher.Match`: the last pattern that
    /// matches decides).
    pub fn hides(&self, path: &str, is_dir: bool) -> bool {
        // Every file of a large repository is judged: its segments go on the stack.
        let mut stack = [""; 16];
        let mut n = 0;
        let mut heap = Vec::new();
        for part in path.split('/').filter(|s| !s.is_empty()) {
            if n < stack.len() {
                stack[n] = part;
            } else {
                if heap.is_empty() {
                    heap.extend_from_slice(&stack);
                }
                heap.push(part);
            }
            n += 1;
        }
        let parts = if heap.is_empty() {
            &stack[..n]
        } else {
            &heap[..]
        };
        for p in self.patterns.iter().rev() {
            match p.outcome(parts, is_dir) {
                Outcome::NoMatch => {}
                Outcome::Exclude => return true,
                Outcome::Include => return false,
            }
        }
        false
    }
}

/// `filepath.ErrBadPattern`: a malformed pattern matches nothing.
#[derive(Debug, PartialEq, Eq)]
struct BadPattern;

/// Go's `path/filepath.Match` on Unix: `*` any run of characters but `/`, `?` one character
/// but `/`, `[a-z]` and `[^a-z]` classes, `\` escapes.
fn go_match(mut pattern: &str, mut name: &str) -> Result<bool, BadPattern> {
    'pattern: while !pattern.is_empty() {
        let (star, chunk, rest) = scan_chunk(pattern);
        pattern = rest;
        if star && chunk.is_empty() {
            return Ok(!name.contains('/'));
        }
        let (t, ok, err) = match_chunk(chunk, name);
        if ok && (t.is_empty() || !pattern.is_empty()) {
            name = t;
            continue;
        }
        if err {
            return Err(BadPattern);
        }
        if star {
            let bytes = name.as_bytes();
            let mut i = 0;
            while i < bytes.len() && bytes[i] != b'/' {
                // Go skips byte by byte; only character boundaries are tried here (Go's `?`
                // or class could also match the tail of a character: names are UTF-8, and
                // such patterns are not written).
                if name.is_char_boundary(i + 1) {
                    let (t, ok, err) = match_chunk(chunk, &name[i + 1..]);
                    if ok {
                        if pattern.is_empty() && !t.is_empty() {
                            i += 1;
                            continue;
                        }
                        name = t;
                        continue 'pattern;
                    }
                    if err {
                        return Err(BadPattern);
                    }
                }
                i += 1;
            }
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

/// `filepath.scanChunk`: leading stars, then the text up to the next star outside a class.
fn scan_chunk(pattern: &str) -> (bool, &str, &str) {
    let trimmed = pattern.trim_start_matches('*');
    let star = trimmed.len() < pattern.len();
    let b = trimmed.as_bytes();
    let mut in_range = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if i + 1 < b.len() => i += 1,
            b'[' => in_range = true,
            b']' => in_range = false,
            b'*' if !in_range => return (star, &trimmed[..i], &trimmed[i..]),
            _ => {}
        }
        i += 1;
    }
    (star, trimmed, "")
}

/// `filepath.matchChunk`: (rest of `s`, matched, malformed). After a mismatch the chunk is
/// still read through, so that a malformed pattern is an error whatever the name.
fn match_chunk<'s>(chunk: &str, mut s: &'s str) -> (&'s str, bool, bool) {
    let mut failed = false;
    let mut chunk = chunk;
    while let Some(c) = chunk.chars().next() {
        failed = failed || s.is_empty();
        match c {
            '[' => {
                let mut r = None;
                if !failed {
                    let ch = s.chars().next();
                    s = &s[ch.map_or(0, char::len_utf8)..];
                    r = ch;
                }
                chunk = &chunk[1..];
                let negated = chunk.starts_with('^');
                if negated {
                    chunk = &chunk[1..];
                }
                let mut matched = false;
                let mut ranges = 0;
                loop {
                    if chunk.starts_with(']') && ranges > 0 {
                        chunk = &chunk[1..];
                        break;
                    }
                    let Some((lo, rest)) = get_esc(chunk) else {
                        return ("", false, true);
                    };
                    chunk = rest;
                    let mut hi = lo;
                    if let Some(rest) = chunk.strip_prefix('-') {
                        let Some((h, rest)) = get_esc(rest) else {
                            return ("", false, true);
                        };
                        hi = h;
                        chunk = rest;
                    }
                    matched = matched || r.is_some_and(|r| lo <= r && r <= hi);
                    ranges += 1;
                }
                failed = failed || matched == negated;
            }
            '?' => {
                if !failed {
                    failed = s.starts_with('/');
                    let n = s.chars().next().map_or(0, char::len_utf8);
                    s = &s[n..];
                }
                chunk = &chunk[1..];
            }
            _ => {
                if c == '\\' {
                    chunk = &chunk[1..];
                    if chunk.is_empty() {
                        return ("", false, true);
                    }
                }
                // One byte compared, as Go compares bytes: the whole character here.
                let lit = chunk.chars().next().unwrap_or(c);
                if !failed {
                    failed = !s.starts_with(lit);
                    if !failed {
                        s = &s[lit.len_utf8()..];
                    }
                }
                chunk = &chunk[lit.len_utf8()..];
            }
        }
    }
    if failed {
        ("", false, false)
    } else {
        (s, true, false)
    }
}

/// `filepath.getEsc`: one character of a class (possibly escaped); `None` when malformed
/// (an empty class, a bare `-` or `]`, or a class that never closes).
fn get_esc(chunk: &str) -> Option<(char, &str)> {
    if chunk.is_empty() || chunk.starts_with('-') || chunk.starts_with(']') {
        return None;
    }
    let chunk = match chunk.strip_prefix('\\') {
        Some("") => return None,
        Some(rest) => rest,
        None => chunk,
    };
    let c = chunk.chars().next()?;
    let rest = &chunk[c.len_utf8()..];
    if rest.is_empty() {
        return None;
    }
    Some((c, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An artifact made of folder `a/b` holds nothing outside it, and what `.sourceignore`
    /// files inside it leave out stays out.
    #[test]
    fn a_folders_artifact_holds_only_that_folder() {
        let m = Matcher::new([("a/b", "*.md\n")], None).within("a/b");
        assert!(m.hides("x.yaml", false));
        assert!(m.hides("a/x.yaml", false));
        assert!(m.hides("a/c/x.yaml", false));
        assert!(!m.hides("a/b/x.yaml", false));
        assert!(!m.hides("a/b/c/d.yaml", false));
        assert!(m.hides("a/b/c/d.md", false));
        assert!(!m.hides("a/b", true));
    }

    /// Every case of the upstream table (tests/fixtures/upstream/ignore.tsv: each set of
    /// `.sourceignore` files against each path, answered by fluxcd/pkg/sourceignore itself).
    #[test]
    fn agrees_with_the_library_on_its_table() {
        let table = include_str!("../../tests/fixtures/upstream/ignore.tsv");
        let cases = crate::upstream::cases(table, 3);
        crate::upstream::assert_agrees(&cases, 400, |c| {
            let (path, kind) = (c.inputs[1], c.inputs[2]);
            let files: std::collections::BTreeMap<String, String> =
                serde_json::from_str(c.inputs[0]).unwrap();
            let m = Matcher::new(files.iter().map(|(d, t)| (d.as_str(), t.as_str())), None);
            let got = m.hides(path, kind == "dir").to_string();
            (got != c.answer).then(|| {
                format!(
                    "{files:?} {path} ({kind}): library {}, fluxwave {got}",
                    c.answer
                )
            })
        });
    }

    /// Cases of Go's `path/filepath` match_test.go (`matchTests`), on Unix.
    #[test]
    fn matches_as_go_filepath_match() {
        let cases: &[(&str, &str, Result<bool, BadPattern>)] = &[
            ("abc", "abc", Ok(true)),
            ("*", "abc", Ok(true)),
            ("*c", "abc", Ok(true)),
            ("a*", "a", Ok(true)),
            ("a*", "abc", Ok(true)),
            ("a*", "ab/c", Ok(false)),
            ("a*/b", "abc/b", Ok(true)),
            ("a*/b", "a/c/b", Ok(false)),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", Ok(true)),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/f", Ok(true)),
            ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", Ok(false)),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/fff", Ok(false)),
            ("a*b?c*x", "abxbbxdbxebxczzx", Ok(true)),
            ("a*b?c*x", "abxbbxdbxebxczzy", Ok(false)),
            ("ab[c]", "abc", Ok(true)),
            ("ab[b-d]", "abc", Ok(true)),
            ("ab[e-g]", "abc", Ok(false)),
            ("ab[^c]", "abc", Ok(false)),
            ("ab[^b-d]", "abc", Ok(false)),
            ("ab[^e-g]", "abc", Ok(true)),
            ("a\\*b", "a*b", Ok(true)),
            ("a\\*b", "ab", Ok(false)),
            ("a?b", "a☺b", Ok(true)),
            ("a[^a]b", "a☺b", Ok(true)),
            ("a???b", "a☺b", Ok(false)),
            ("a[^a][^a][^a]b", "a☺b", Ok(false)),
            ("[a-ζ]*", "α", Ok(true)),
            ("*[a-ζ]", "A", Ok(false)),
            ("a?b", "a/b", Ok(false)),
            ("a*b", "a/b", Ok(false)),
            ("[\\]a]", "]", Ok(true)),
            ("[\\-]", "-", Ok(true)),
            ("[x\\-]", "x", Ok(true)),
            ("[x\\-]", "-", Ok(true)),
            ("[x\\-]", "z", Ok(false)),
            ("[\\-x]", "x", Ok(true)),
            ("[\\-x]", "-", Ok(true)),
            ("[\\-x]", "a", Ok(false)),
            ("[]a]", "]", Err(BadPattern)),
            ("[-]", "-", Err(BadPattern)),
            ("[x-]", "x", Err(BadPattern)),
            ("[x-]", "-", Err(BadPattern)),
            ("[x-]", "z", Err(BadPattern)),
            ("[-x]", "x", Err(BadPattern)),
            ("[-x]", "-", Err(BadPattern)),
            ("[-x]", "a", Err(BadPattern)),
            ("\\", "a", Err(BadPattern)),
            ("[a-b-c]", "a", Err(BadPattern)),
            ("[", "a", Err(BadPattern)),
            ("[^", "a", Err(BadPattern)),
            ("[^bc", "a", Err(BadPattern)),
            ("a[", "a", Err(BadPattern)),
            ("a[", "ab", Err(BadPattern)),
            ("a[", "x", Err(BadPattern)),
            ("a/b[", "x", Err(BadPattern)),
            ("*x", "xxx", Ok(true)),
        ];
        for (pattern, name, want) in cases {
            assert_eq!(&go_match(pattern, name), want, "{pattern} {name}");
        }
    }

    fn hides(m: &Matcher, path: &str) -> bool {
        m.hides(path, false)
    }

    /// fluxcd/pkg `sourceignore.DefaultPatterns`/`VCSPatterns`, applied when no pattern is
    /// given (`storage.SourceIgnoreFilter`): CI files and images anywhere, a folder named
    /// `.github` at any depth.
    #[test]
    fn the_default_exclusions_apply_without_patterns() {
        let m = Matcher::new([], None);
        for path in [
            ".git/config",
            ".gitignore",
            "apps/.gitattributes",
            ".github/workflows/ci.yaml",
            "apps/.github/x.yaml",
            "docs/logo.png",
            "bundle.tar.gz",
            "cloudbuild.yaml",
            "apps/cloudbuild.yaml",
            ".sops.yaml",
            "clusters/dev/.sops.yaml",
            ".gitlab-ci.yml",
            "deep/a/.flux.yaml",
        ] {
            assert!(hides(&m, path), "{path}");
        }
        for path in [
            "apps/kustomization.yaml",
            "apps/github/x.yaml",
            "cloudbuild.yaml.bak",
            "apps/sops.yaml",
            ".sourceignore",
        ] {
            assert!(!hides(&m, path), "{path}");
        }
    }

    /// `SourceIgnoreFilter`: any pattern replaces the defaults but for `VCSPatterns`.
    #[test]
    fn a_pattern_replaces_the_defaults_but_the_vcs_ones() {
        let m = Matcher::new([("", "# only this\n/tmp\n")], None);
        assert!(hides(&m, "tmp/x.yaml") && hides(&m, ".git/HEAD") && hides(&m, ".gitignore"));
        assert!(!hides(&m, ".github/workflows/ci.yaml") && !hides(&m, "cloudbuild.yaml"));
        // Comments and blank lines are no patterns: the defaults stay.
        let m = Matcher::new([("", "# nothing\n\n   \n")], Some(""));
        assert!(hides(&m, ".github/workflows/ci.yaml"));
    }

    /// The shape of the Flux docs' GitRepository `spec.ignore` example: exclude everything,
    /// then bring one folder back. Files in an excluded folder are judged one by one
    /// (`storage.Archive` does not skip excluded folders), so a negation reaches into it.
    #[test]
    fn spec_ignore_is_read_last_and_negations_reach_into_excluded_folders() {
        let m = Matcher::new(
            [],
            Some("# exclude all\n/*\n# include deploy dir\n!/deploy\n"),
        );
        assert!(!hides(&m, "deploy/k/kustomization.yaml"));
        assert!(hides(&m, "apps/a.yaml") && hides(&m, "README.md"));
        let m = Matcher::new([("", "logs/\n!logs/keep.yaml\n")], None);
        assert!(hides(&m, "logs/a.yaml") && !hides(&m, "logs/keep.yaml"));
        assert!(m.hides("logs", true) && !m.hides("logs", false));
        // spec.ignore outranks every .sourceignore.
        let m = Matcher::new([("apps", "*.yaml\n")], Some("!apps/keep.yaml\n"));
        assert!(hides(&m, "apps/x.yaml") && !hides(&m, "apps/keep.yaml"));
    }

    /// `LoadIgnorePatterns`: a `.sourceignore` in a folder applies below it only, and below
    /// it outranks the files of the folders above.
    #[test]
    fn nested_files_apply_below_their_folder() {
        let m = Matcher::new(
            [
                ("apps/media", "!keep.yaml\nsecret-*.yaml\n"),
                ("", "keep.yaml\n"),
            ],
            None,
        );
        assert!(hides(&m, "keep.yaml") && hides(&m, "clusters/keep.yaml"));
        assert!(!hides(&m, "apps/media/keep.yaml") && !hides(&m, "apps/media/x/keep.yaml"));
        assert!(hides(&m, "apps/media/secret-a.yaml") && !hides(&m, "apps/secret-a.yaml"));
        // Anchored and `**` patterns (go-git `globMatch`), scoped to the folder.
        let m = Matcher::new([("apps", "/top.yaml\n**/deep.yaml\nx/**\n")], None);
        assert!(hides(&m, "apps/top.yaml") && !hides(&m, "apps/a/top.yaml"));
        assert!(hides(&m, "apps/a/b/deep.yaml") && hides(&m, "apps/deep.yaml"));
        assert!(hides(&m, "apps/x/y/z.yaml") && !hides(&m, "x/y/z.yaml"));
        let deep = format!("apps/{}deep.yaml", "d/".repeat(30));
        assert!(hides(&m, &deep) && !hides(&m, &deep.replace("deep.yaml", "flat.yaml")));
    }

    /// `ParsePattern` and `ReadPatterns`: trailing blanks are trimmed but an escaped one, a
    /// comment is a line that starts with `#`, `\r\n` ends a line.
    #[test]
    fn reads_lines_as_read_patterns_does() {
        let m = Matcher::new([("", "a.yaml   \r\n  #b.yaml\n#c.yaml\n[bad\n")], None);
        assert!(hides(&m, "a.yaml"));
        assert!(hides(&m, "  #b.yaml") && !hides(&m, "c.yaml"));
        assert!(!hides(&m, "[bad"), "a malformed pattern matches nothing");
        // A line over bufio.Scanner's limit ends the reading; what came before stays.
        let long = format!("a.yaml\n{}\nb.yaml\n", "x".repeat(MAX_LINE));
        let m = Matcher::new([("", long.as_str())], None);
        assert!(hides(&m, "a.yaml") && !hides(&m, "b.yaml"));
    }
}
