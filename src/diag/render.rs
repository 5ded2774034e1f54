//! One renderer for every diagnostic. Text goes through miette's graphical handler, with a
//! snippet of the offending line when the finding has a place (as ruff shows its lints), in
//! the same form as input errors; JSON and GitHub workflow commands are made from the same
//! findings; `plan` and `apply` print their warnings in a one-line form. A snippet never shows
//! a Secret's value: the file's text is masked (`redact`) before miette sees it.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use miette::{
    Diagnostic, LabeledSpan, MietteHandler, MietteHandlerOpts, NamedSource, ReportHandler,
    SourceCode,
};

use super::{Finding, Severity};
use crate::plural::count;

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

/// A finding as miette sees it: its file's masked text when there is a snippet to show.
struct Shown<'a> {
    finding: &'a Finding,
    source: Option<NamedSource<Arc<String>>>,
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
            severity_word(self.finding.severity),
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

fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// The text of `check`: every finding through miette, then the counts.
pub fn text(findings: &[Finding], colour: bool) -> String {
    let handler = handler(Some(colour));
    // Each file is masked once, however many findings point into it.
    let mut masked: HashMap<*const String, Arc<String>> = HashMap::new();
    let mut s = String::new();
    for f in findings {
        let source = f
            .place
            .as_ref()
            .filter(|p| !crate::error::too_long_to_show(&p.text, p.span.0))
            .map(|p| {
                let text = masked
                    .entry(Arc::as_ptr(&p.text))
                    .or_insert_with(|| {
                        Arc::new(crate::redact::masked(
                            &p.text,
                            &crate::redact::ranges(&p.text),
                        ))
                    })
                    .clone();
                NamedSource::new(&f.path, text)
            });
        let shown = Shown { finding: f, source };
        let _ = writeln!(s, "{:?}", Render(&handler, &shown));
    }
    s.push_str(&summary(findings));
    s
}

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

/// `{"findings": [...], "errors": N, "warnings": N}`.
pub fn json(findings: &[Finding]) -> String {
    let (errors, warnings) = counts(findings);
    serde_json::to_string_pretty(
        &serde_json::json!({"findings": findings, "errors": errors, "warnings": warnings}),
    )
    .unwrap_or_default()
        + "\n"
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
pub fn github(findings: &[Finding]) -> String {
    let mut s = String::new();
    for f in findings {
        let mut props = format!("file={}", escape(&f.path, true));
        if let Some((line, col)) = f.line_col() {
            props.push_str(&format!(",line={line},col={col}"));
        }
        props.push_str(&format!(",title={}", escape(f.code.as_str(), true)));
        s.push_str(&format!(
            "::{} {props}::{}\n",
            severity_word(f.severity),
            escape(&format!("{}\nhelp: {}", f.message, f.help), false)
        ));
    }
    s.push_str(&summary(findings));
    s
}

/// The one-line form of `plan` and `apply` warnings on stderr.
pub fn line(f: &Finding) -> String {
    format!(
        "fluxwave: {}[{}]: {}: {}\n  help: {}",
        severity_word(f.severity),
        f.code,
        f.path,
        f.message,
        f.help
    )
}
