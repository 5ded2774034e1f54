//! One renderer for every diagnostic. Text goes through miette's graphical handler, with a
//! snippet of the offending line when the finding has a place (as ruff shows its lints), in
//! the same form as input errors; JSON and GitHub workflow commands are made from the same
//! findings; `plan` and `apply` print their warnings in a one-line form. A snippet never shows
//! a Secret's value: miette sees only the lines around the span, masked (`redact`) first.

use std::collections::HashMap;
use std::fmt::{self, Write as _};

use miette::{
    Diagnostic, LabeledSpan, MietteError, MietteHandler, MietteHandlerOpts, MietteSpanContents,
    ReportHandler, SourceCode, SourceSpan, SpanContents,
};

use super::{Finding, Severity};
use crate::plural::count;
use crate::yaml::Text;

/// The handler every diagnostic is rendered with. Messages are not wrapped, so that a path or
/// a name is never split across lines. `colour`: `None` lets miette decide (for stderr).
pub fn handler(colour: Option<bool>) -> MietteHandler {
    let opts = MietteHandlerOpts::new().wrap_lines(false);
    match colour {
        Some(c) => opts.color(c),
        None => opts,
    }
    .build()
}

/// Renders a diagnostic with a handler, as `{:?}` of a `miette::Report` would with the hook.
struct Render<'a>(&'a MietteHandler, &'a dyn Diagnostic);

impl fmt::Debug for Render<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.debug(self.1, f)
    }
}

/// A finding as miette sees it: the lines of its file around the span, masked, when there
/// is a snippet to show.
struct Shown<'a> {
    finding: &'a Finding,
    source: Option<Window>,
}

/// The lines of a file a snippet shows (the span's, and two either side: miette shows one),
/// every secret in them masked, with where they start in the file. miette reads only these,
/// so a snippet costs its lines and their YAML document, not the whole file.
struct Window {
    name: String,
    text: String,
    /// Byte offset of `text` in the file.
    offset: usize,
    /// 0-based line of `text`'s first line, counted as miette counts lines.
    first_line: usize,
}

/// Lines kept either side of a span (miette's context is one).
const WINDOW_MARGIN: usize = 2;

/// Masked windows already made, by file text and line range: the findings on one line (an
/// image marker is usually two) share one.
#[derive(Default)]
struct Windows {
    made: HashMap<(*const String, usize, usize), String>,
    /// The secret ranges of the documents the windows are in, read once each.
    documents: crate::redact::Documents,
}

impl Window {
    fn of(
        path: &str,
        text: &Text,
        (start, len): (usize, usize),
        made: &mut Windows,
    ) -> Option<Window> {
        let bytes = text.as_bytes();
        let line_start = |at: usize| memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1);
        let next_line =
            |at: usize| memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i + 1);
        let start = start.min(bytes.len());
        let mut from = line_start(start);
        for _ in 0..WINDOW_MARGIN {
            if from > 0 {
                from = line_start(from - 1);
            }
        }
        let mut to = next_line((start + len).min(bytes.len()).max(start));
        for _ in 0..WINDOW_MARGIN {
            to = next_line(to);
        }
        let key = (std::sync::Arc::as_ptr(text), from, to);
        let masked = match made.made.get(&key) {
            Some(m) => m.clone(),
            None => {
                let m = crate::redact::masked_lines_with(text, from, to, &mut made.documents)?;
                made.made.insert(key, m.clone());
                m
            }
        };
        Some(Window {
            name: path.to_string(),
            text: masked,
            offset: from,
            first_line: miette_lines(&bytes[..from]),
        })
    }
}

/// The line breaks of `bytes` as miette counts them: `\n`, `\r\n` and a lone `\r`.
fn miette_lines(bytes: &[u8]) -> usize {
    let lone_cr = memchr::memchr_iter(b'\r', bytes)
        .filter(|&i| bytes.get(i + 1) != Some(&b'\n'))
        .count();
    memchr::memchr_iter(b'\n', bytes).count() + lone_cr
}

impl SourceCode for Window {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let offset = span
            .offset()
            .checked_sub(self.offset)
            .ok_or(MietteError::OutOfBounds)?;
        let inner =
            self.text
                .read_span(&SourceSpan::new(offset.into(), span.len()), before, after)?;
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            SourceSpan::new(
                (inner.span().offset() + self.offset).into(),
                inner.span().len(),
            ),
            inner.line() + self.first_line,
            inner.column(),
            inner.line_count(),
        )))
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let x = self.finding;
        // Beside a snippet miette prints the place; without one the message carries it.
        match (&self.source, x.line_col()) {
            (Some(_), _) => f.write_str(&x.message),
            (None, Some((line, col))) => write!(f, "{}:{line}:{col}: {}", x.path, x.message),
            (None, None) => write!(f, "{}: {}", x.path, x.message),
        }
    }
}

impl fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Shown<'_> {}

impl Diagnostic for Shown<'_> {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(format!(
            "{}[{}]",
            self.finding.severity.as_str(),
            self.finding.code
        )))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.finding.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        let help = &self.finding.help;
        (!help.is_empty()).then(|| Box::new(help) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.source.as_ref().map(|s| s as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        self.source.as_ref()?;
        let (start, len) = self.finding.place.as_ref()?.span;
        Some(Box::new(std::iter::once(LabeledSpan::new(
            None, start, len,
        ))))
    }
}

/// Each finding with its snippet, written to `out` as it is rendered (the counts are the
/// caller's: `summary`). Rendered in runs on every core, a batch at a time, so a report of
/// many findings is never held whole: masking a snippet reads its document, the costly part.
/// Findings come sorted by file, so the windows a run makes are shared as in one pass.
pub fn write_text(
    findings: &[Finding],
    colour: bool,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    for batch in findings.chunks(FINDINGS_PER_RUN * RUNS_PER_BATCH) {
        let runs: Vec<&[Finding]> = batch.chunks(FINDINGS_PER_RUN).collect();
        for text in crate::par::map(&runs, |run| text_of(run, colour)) {
            out.write_all(text.as_bytes())?;
        }
    }
    Ok(())
}

/// The findings of one run, one after another.
fn text_of(findings: &[Finding], colour: bool) -> String {
    let handler = handler(Some(colour));
    let mut made = Windows::default();
    let mut s = String::new();
    for f in findings {
        let source = f
            .place
            .as_ref()
            .filter(|p| !crate::error::too_long_to_show(&p.text, p.span.0))
            .and_then(|p| Window::of(&f.path, &p.text, p.span, &mut made));
        let shown = Shown { finding: f, source };
        let _ = writeln!(s, "{:?}", Render(&handler, &shown));
    }
    s
}

/// Findings rendered one after another by one thread, and runs in a batch (enough for
/// `par::map` to spread them).
const FINDINGS_PER_RUN: usize = 64;
const RUNS_PER_BATCH: usize = 64;

/// `N errors, M warnings`.
pub fn summary(findings: &[Finding]) -> String {
    let (errors, warnings) = counts(findings);
    format!(
        "{}, {}\n",
        count(errors, "error"),
        count(warnings, "warning")
    )
}

/// The number of errors and of warnings.
pub fn counts(findings: &[Finding]) -> (usize, usize) {
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    (errors, findings.len() - errors)
}

/// `{"findings": [...], "errors": N, "warnings": N}`, then the fields of `more`.
/// `check`'s document: the format's `version`, the findings and their counts, then `more`.
pub fn json(
    version: u32,
    findings: &[Finding],
    more: serde_json::Map<String, serde_json::Value>,
) -> String {
    let (errors, warnings) = counts(findings);
    let mut doc = serde_json::json!({"version": version, "findings": findings, "errors": errors, "warnings": warnings});
    if let Some(m) = doc.as_object_mut() {
        m.extend(more);
    }
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// GitHub's escaping of a workflow command's message and properties.
fn escape(s: &str, property: bool) -> String {
    let mut out = s
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    if property {
        out = out.replace(':', "%3A").replace(',', "%2C");
    }
    out
}

/// GitHub Actions workflow commands (`::error file=...,line=...::message`), then the counts.
/// A finding is annotated on its file only when `is_file` says the checked revision has it and
/// the finding has a line: GitHub cannot place an annotation on a file the pull request
/// deleted, or on a folder, and drops it from the diff view. Those are written without a
/// file, their path leading the message, so they still show in the run's summary.
pub fn github(findings: &[Finding], is_file: &dyn Fn(&str) -> bool) -> String {
    let mut s = String::new();
    for f in findings {
        let mut props = String::new();
        let mut message = format!("{}\nhelp: {}", f.message, f.help);
        match f.line_col() {
            Some((line, col)) if is_file(&f.path) => {
                props.push_str(&format!(
                    "file={},line={line},col={col},",
                    escape(&f.path, true)
                ));
            }
            _ => message = format!("{}: {message}", f.path),
        }
        props.push_str(&format!("title={}", escape(f.code.as_str(), true)));
        s.push_str(&format!(
            "::{} {props}::{}\n",
            f.severity.as_str(),
            escape(&message, false)
        ));
    }
    s.push_str(&summary(findings));
    s
}

/// A failure to read the input as one GitHub workflow command, at its file and line when it
/// has them (`title=bad-input`): a run with `--format github` that cannot check still
/// annotates the pull request.
pub fn github_error(
    path: Option<&str>,
    line_col: Option<(usize, usize)>,
    message: &str,
    help: Option<&str>,
) -> String {
    let mut props = String::new();
    if let Some(path) = path {
        props.push_str(&format!("file={},", escape(path, true)));
        if let Some((line, col)) = line_col {
            props.push_str(&format!("line={line},col={col},"));
        }
    }
    props.push_str("title=bad-input");
    let text = match help {
        Some(help) => format!("{message}\nhelp: {help}"),
        None => message.to_string(),
    };
    format!("::error {props}::{}\n", escape(&text, false))
}

/// The one-line form of `plan` and `apply` warnings on stderr.
pub fn line(f: &Finding) -> String {
    format!(
        "fluxwave: {}[{}]: {}: {}\n  help: {}",
        f.severity.as_str(),
        f.code,
        f.path,
        f.message,
        f.help
    )
}
