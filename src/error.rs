//! Errors are failures to read or act on input, never lint findings (those are data, see
//! `check`). Every input error names its file and, where the file has one, the line, column
//! and offending text, with a help line that says what to do.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use miette::{Diagnostic, NamedSource};

/// One problem in one input file, located by a byte span. Its `Diagnostic` is derived: the
/// help line, and, once `report` has attached the file's masked text, the snippet with the
/// span labelled.
#[derive(Debug, Clone, Diagnostic)]
pub struct SourceError {
    /// The path as the user should see it (relative to the repository root).
    pub path: String,
    pub source: Option<Arc<String>>,
    /// Byte offset and length of the offending text.
    #[label("here")]
    pub span: Option<(usize, usize)>,
    pub message: String,
    #[help]
    pub help: Option<String>,
    /// What miette shows of the file: its text with every secret masked (set by `report`).
    /// (Behind an `Arc`, so that a `Result<_, SourceError>` stays small.)
    #[source_code]
    shown: Option<Arc<NamedSource<String>>>,
}

impl SourceError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        SourceError {
            path: path.into(),
            source: None,
            span: None,
            message: message.into(),
            help: None,
            shown: None,
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

/// A line longer than this (minified or hostile input) is not shown in a snippet: the
/// location alone is printed then.
pub const MAX_SHOWN_LINE: usize = 400;

/// Whether the line that holds byte `offset` of `text` is too long to show.
pub fn too_long_to_show(text: &str, offset: usize) -> bool {
    let bytes = text.as_bytes();
    let offset = offset.min(bytes.len());
    let start = memchr::memrchr(b'\n', &bytes[..offset]).map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &bytes[offset..]).map_or(bytes.len(), |i| offset + i);
    end - start > MAX_SHOWN_LINE
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

impl SourceError {
    /// `path:line:col: message` (or `path: message` when there is no place).
    pub fn located(&self) -> String {
        match self.line_col() {
            Some((line, col)) => format!("{}:{}:{}: {}", self.path, line, col, self.message),
            None => format!("{}: {}", self.path, self.message),
        }
    }

    /// A miette report with the file's text attached, for rendering.
    /// A line too long to show (minified or hostile input) is left out: the location alone
    /// is printed then.
    pub fn report(&self) -> miette::Report {
        let (Some(src), Some((start, _))) = (&self.source, self.span) else {
            return miette::Report::new(self.clone());
        };
        if too_long_to_show(src, start) {
            let (line, col) = self.line_col().unwrap_or((0, 0));
            return miette::Report::new(SourceError {
                path: format!("{}:{line}:{col}", self.path),
                source: None,
                span: None,
                ..self.clone()
            });
        }
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
        miette::Report::new(SourceError {
            shown: Some(Arc::new(NamedSource::new(&self.path, shown))),
            ..self.clone()
        })
    }
}

/// The message as miette prints it: beside the snippet, which shows the place, the message
/// alone; otherwise with the place in front.
impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.shown.is_some() {
            f.write_str(&self.message)
        } else {
            f.write_str(&self.located())
        }
    }
}

impl std::error::Error for SourceError {}

/// Two errors are one when they say the same of the same place: what miette is shown of the
/// file (`report`'s masked copy) follows from the rest.
impl PartialEq for SourceError {
    fn eq(&self, other: &Self) -> bool {
        (
            &self.path,
            &self.source,
            self.span,
            &self.message,
            &self.help,
        ) == (
            &other.path,
            &other.source,
            other.span,
            &other.message,
            &other.help,
        )
    }
}

impl Eq for SourceError {}

/// A failure: bad input (every problem found, not just the first), I/O, or a refusal to act.
#[derive(Debug)]
pub enum Error {
    Input(Vec<SourceError>),
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    Usage(String),
    /// No Flux environment is found where the message says it looked: bad input, exit 2, but
    /// one step of a history says so in its report (`cutover --each`).
    NoEnvironment(String),
    /// The command printed what it could (all its output, in its format) and this is what it
    /// could not: exit 2, said on stderr only.
    Partial(String),
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
                    f.write_str(&e.located())?;
                }
                Ok(())
            }
            Error::Io { path, source } => write!(f, "{}: {}", path.display(), source),
            Error::Usage(message) | Error::NoEnvironment(message) | Error::Partial(message) => {
                f.write_str(message)
            }
            Error::Git { command, message } => write!(f, "`{command}` failed: {message}"),
        }
    }
}

impl std::error::Error for Error {}
