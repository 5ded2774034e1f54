//! Errors are failures to read or act on input, never lint findings (those are data, see
//! `check`). Every input error names its file and, where the file has one, the line, column
//! and offending text, with a help line that says what to do.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceCode};

/// One problem in one input file, located by a byte span.
#[derive(Debug, Clone)]
pub struct SourceError {
    /// The path as the user should see it (relative to the repository root).
    pub path: String,
    pub source: Option<Arc<String>>,
    /// Byte offset and length of the offending text.
    pub span: Option<(usize, usize)>,
    pub message: String,
    pub help: Option<String>,
}

impl SourceError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        SourceError {
            path: path.into(),
            source: None,
            span: None,
            message: message.into(),
            help: None,
        }
    }

    pub fn at(mut self, source: &Arc<String>, span: (usize, usize)) -> Self {
        let len = source.len();
        let start = span.0.min(len);
        let end = (span.0 + span.1).min(len);
        self.source = Some(source.clone());
        self.span = Some((start, end - start));
        // A message that quotes the text it points at must not quote a secret.
        let secrets = crate::redact::ranges(source);
        if !secrets.is_empty() {
            self.message = crate::redact::message(&self.message, source, &secrets);
        }
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// 1-based line and column of the span start, when there is one.
    pub fn line_col(&self) -> Option<(usize, usize)> {
        let (src, (start, _)) = (self.source.as_ref()?, self.span?);
        Some(line_col(src, start))
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line_col() {
            Some((line, col)) => write!(f, "{}:{}:{}: {}", self.path, line, col, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

impl std::error::Error for SourceError {}

impl Diagnostic for SourceError {
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        None
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        None
    }
}

impl SourceError {
    /// A miette report with the file's text attached, for rendering.
    /// A line too long to show (minified or hostile input) is left out: the location alone
    /// is printed then.
    pub fn report(&self) -> miette::Report {
        const MAX_SHOWN_LINE: usize = 400;
        let long_line = match (&self.source, self.span) {
            (Some(src), Some((start, _))) => {
                let line_start = src[..start.min(src.len())].rfind('\n').map_or(0, |i| i + 1);
                src[line_start..].split('\n').next().map_or(0, str::len) > MAX_SHOWN_LINE
            }
            _ => false,
        };
        if long_line {
            let (line, col) = self.line_col().unwrap_or((0, 0));
            let located = SourceError {
                path: format!("{}:{line}:{col}", self.path),
                source: None,
                span: None,
                ..self.clone()
            };
            return miette::Report::new(Plain(located));
        }
        let mut report = miette::Report::new(Plain(self.clone()));
        if let (Some(src), Some((start, _))) = (&self.source, self.span) {
            let mut secrets = crate::redact::ranges(src);
            // The value beside an unknown key is not needed to fix it, and may be a secret
            // put in the wrong place.
            if self.message.starts_with("unknown field") {
                let line_end = src[start.min(src.len())..]
                    .find('\n')
                    .map_or(src.len(), |i| start + i);
                if let Some(colon) = src.get(start..line_end).and_then(|l| l.find(':')) {
                    secrets.push((start + colon + 1, line_end - (start + colon + 1)));
                }
            }
            let shown = crate::redact::masked(src, &secrets);
            report = report.with_source_code(NamedSource::new(&self.path, shown));
        }
        report
    }
}

/// The rendering form: the message without the location prefix (miette prints the location
/// beside the underlined text), one label on the span.
#[derive(Debug)]
struct Plain(SourceError);

impl fmt::Display for Plain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.span.is_some() && self.0.source.is_some() {
            f.write_str(&self.0.message)
        } else {
            write!(f, "{}: {}", self.0.path, self.0.message)
        }
    }
}

impl std::error::Error for Plain {}

impl Diagnostic for Plain {
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let (start, len) = self.0.span?;
        self.0.source.as_ref()?;
        Some(Box::new(std::iter::once(LabeledSpan::new(
            Some("here".into()),
            start,
            len,
        ))))
    }
}

/// A failure: bad input (every problem found, not just the first), I/O, or a refusal to act.
#[derive(Debug)]
pub enum Error {
    Input(Vec<SourceError>),
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    Usage(String),
    /// git failed, or could not be run: the command and what git said.
    Git {
        command: String,
        message: String,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl Error {
    /// A failure of `git <args>`.
    pub fn git(args: &[&str], message: impl Into<String>) -> Self {
        Error::Git {
            command: std::iter::once("git")
                .chain(args.iter().copied())
                .collect::<Vec<_>>()
                .join(" "),
            message: message.into(),
        }
    }
}

impl From<SourceError> for Error {
    fn from(e: SourceError) -> Self {
        Error::Input(vec![e])
    }
}

impl From<Vec<SourceError>> for Error {
    fn from(e: Vec<SourceError>) -> Self {
        Error::Input(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Input(errors) => {
                for (i, e) in errors.iter().enumerate() {
                    if i > 0 {
                        f.write_str("\n")?;
                    }
                    write!(f, "{e}")?;
                }
                Ok(())
            }
            Error::Io { path, source } => write!(f, "{}: {}", path.display(), source),
            Error::Usage(message) => f.write_str(message),
            Error::Git { command, message } => write!(f, "`{command}` failed: {message}"),
        }
    }
}

impl std::error::Error for Error {}
