//! The last step of every byte fluxwave prints, on stdout and on stderr: what the repository
//! holds (a file name, a catalog or object name, a snippet, a message that quotes a file) can
//! neither drive the reader's terminal nor show a Secret's value there.
//!
//! - Control characters are written as `\uXXXX`: C0 but line feed and tab, DEL, C1, and the
//!   bidirectional overrides, isolates and marks (U+202A–U+202E, U+2066–U+2069, U+200E,
//!   U+200F, U+061C) that make a reviewer read text in another order than it is. A file named
//!   `\e[2J` cannot clear the screen, nor an OSC 52 sequence write the clipboard. The form is
//!   JSON's own escape, so JSON output stays valid and decodes to the same text.
//! - On a terminal with colour (no NO_COLOR), the colour sequences fluxwave's diagnostics are
//!   drawn with pass (SGR: colours, bold, underline, reset); every other escape sequence is
//!   written as text.
//! - A line that starts with `::` (after blanks) has its first colon escaped, but in `check
//!   --format github`, whose own lines are workflow commands: a file name with a line break
//!   cannot forge a GitHub Actions command (`::add-mask::`, `::stop-commands::`) in a CI log.
//! - In diagnostics (stderr, and `check`'s report), every plaintext Secret value fluxwave has
//!   read in this run (`redact::remember`) is written as `***` wherever it appears: in a
//!   message, a file name, an object name. The results of the other commands name files and
//!   objects as they are: a cutover report must name what Flux deletes, even when a Secret's
//!   value was substituted into its name.

use std::borrow::Cow;
use std::io::{self, Write};

/// A writer that escapes and masks whole lines: bytes wait until their line ends (or the
/// writer is flushed), so that no sequence or value is split between two writes.
pub struct Safe<W: Write> {
    inner: W,
    pending: Vec<u8>,
    colour: bool,
    /// Whether remembered Secret values are masked (a diagnostic stream).
    mask: bool,
    /// Whether lines may be GitHub workflow commands (`check --format github`).
    commands: bool,
}

impl<W: Write> Safe<W> {
    /// `colour`: whether this stream is a terminal that shows colour.
    pub fn new(inner: W, colour: bool) -> Safe<W> {
        Safe {
            inner,
            pending: Vec::new(),
            colour,
            mask: false,
            commands: false,
        }
    }

    /// The stream's lines may be GitHub workflow commands (they are fluxwave's own: every
    /// name and message in them is escaped by the format).
    pub fn workflow_commands(mut self) -> Safe<W> {
        self.commands = true;
        self
    }

    /// The stream carries diagnostics: remembered Secret values are masked too.
    pub fn diagnostics(mut self) -> Safe<W> {
        self.mask = true;
        self
    }

    fn emit(&mut self, upto: usize) -> io::Result<()> {
        // Checked as UTF-8 first (its ASCII runs are checked a word at a time); only text
        // that is not is read again, its bad bytes replaced.
        let bytes = &self.pending[..upto];
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(bytes),
        };
        let text = if self.mask {
            crate::redact::mask_known(&text)
        } else {
            text
        };
        let shown = escape(&text, self.colour, self.commands);
        self.inner.write_all(shown.as_bytes())?;
        self.pending.drain(..upto);
        Ok(())
    }
}

impl<W: Write> Write for Safe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if let Some(i) = memchr::memrchr(b'\n', &self.pending) {
            self.emit(i + 1)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let all = self.pending.len();
        self.emit(all)?;
        self.inner.flush()
    }
}

/// `--color`: when output shows colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum When {
    /// On a terminal, unless NO_COLOR is set to something
    Auto,
    Always,
    Never,
}

/// The run's `--color`, set once the command line is read (`auto` until then).
static WHEN: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(When::Auto as u8);

pub fn set_when(when: When) {
    WHEN.store(when as u8, std::sync::atomic::Ordering::Relaxed);
}

/// Whether a stream shows colour: as `--color` says; under `auto`, a terminal with NO_COLOR
/// unset or empty (no-color.org).
pub fn colour(is_terminal: bool) -> bool {
    match WHEN.load(std::sync::atomic::Ordering::Relaxed) {
        w if w == When::Always as u8 => true,
        w if w == When::Never as u8 => false,
        _ => is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    }
}

/// The `--color` of raw arguments, read before they are parsed, so that a refusal of the
/// command line shows colour as asked too; the last one given wins, as clap has it.
pub fn when_of(args: &[std::ffi::OsString]) -> When {
    let mut when = When::Auto;
    let mut next_is_value = false;
    for a in args.iter().skip(1) {
        let Some(a) = a.to_str() else {
            next_is_value = false;
            continue;
        };
        if a == "--" {
            break;
        }
        let value = if next_is_value {
            Some(a)
        } else {
            a.strip_prefix("--color=")
        };
        next_is_value = a == "--color";
        when = match value {
            Some("always") => When::Always,
            Some("never") => When::Never,
            Some("auto") => When::Auto,
            _ => when,
        };
    }
    when
}

/// Whether a character is written as `\uXXXX`.
pub(super) fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

/// The length of the colour sequence (SGR: `ESC [ params m`) at the start of `s`, when its
/// parameters only set colours and plain styles.
fn colour_sequence(s: &str) -> Option<usize> {
    let rest = s.strip_prefix("\u{1b}[")?;
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
    if rest.as_bytes()[end] != b'm' {
        return None;
    }
    let mut params = rest[..end].split(';').peekable();
    while let Some(p) = params.next() {
        let n: u32 = if p.is_empty() { 0 } else { p.parse().ok()? };
        match n {
            // Reset, bold, dim, italic, underline, their ends, colours and their reset.
            0..=4 | 22..=24 | 30..=37 | 39 | 90..=97 => {}
            // 256 colours and RGB: `38;5;N`, `38;2;R;G;B`.
            38 => match params.next()? {
                "5" => {
                    params.next()?;
                }
                "2" => {
                    for _ in 0..3 {
                        params.next()?;
                    }
                }
                _ => return None,
            },
            _ => return None,
        }
    }
    Some(2 + end + 1)
}

/// `text` without its colour sequences (those `shown` would pass on a colour terminal).
pub fn without_colour(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('\u{1b}') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let n = colour_sequence(rest).unwrap_or(1);
        if n == 1 {
            out.push('\u{1b}');
        }
        rest = &rest[n..];
    }
    out.push_str(rest);
    out
}

/// A diagnostic as it may be shown: remembered Secret values masked, control characters
/// escaped.
pub fn diagnostic(text: &str, colour: bool) -> String {
    shown(&crate::redact::mask_known(text), colour)
}

/// `text` as it may be shown: control characters escaped, no line a workflow command.
pub fn shown(text: &str, colour: bool) -> String {
    escape(text, colour, false).into_owned()
}

/// `text` as it is written: as it is when nothing in it is escaped (most output).
fn escape(text: &str, colour: bool, commands: bool) -> Cow<'_, str> {
    let text = if commands {
        Cow::Borrowed(text)
    } else {
        no_workflow_commands(text)
    };
    // Most output holds none of them: a pass over its bytes says so (each character
    // `is_unsafe` takes is below 0x20, 0x7f, or starts with 0xc2, 0xd8 or 0xe2 in UTF-8).
    let suspect =
        |b: &u8| *b < 0x20 && *b != b'\n' && *b != b'\t' || matches!(*b, 0x7f | 0xc2 | 0xd8 | 0xe2);
    // Judged 64 bytes at a time without stopping at the first (a loop the compiler
    // vectorises): this pass reads every byte fluxwave prints.
    let any_suspect = |chunk: &[u8]| chunk.iter().fold(false, |any, b| any | suspect(b));
    if !text.as_bytes().chunks(64).any(any_suspect) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest: &str = &text;
    while let Some(i) = rest.find(is_unsafe) {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if colour {
            if let Some(n) = colour_sequence(rest) {
                out.push_str(&rest[..n]);
                rest = &rest[n..];
                continue;
            }
        }
        let c = rest.chars().next().unwrap_or('\u{0}');
        out.push_str(&format!("\\u{:04x}", c as u32));
        rest = &rest[c.len_utf8()..];
    }
    out.push_str(rest);
    out.into()
}

/// Every line that starts with `::` (after blanks), its first colon escaped.
fn no_workflow_commands(text: &str) -> Cow<'_, str> {
    let starts = |line: &str| line.trim_start_matches([' ', '\t']).starts_with("::");
    // Such a line holds `::`, which most output does not: one search says so.
    if memchr::memmem::find(text.as_bytes(), b"::").is_none() || !text.split('\n').any(starts) {
        return text.into();
    }
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| {
            if starts(line) {
                line.replacen(':', "\\u003a", 1)
            } else {
                line.to_string()
            }
        })
        .collect();
    lines.join("\n").into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_lines_and_tabs_kept() {
        let s = shown(
            "a\u{1b}[2Jb\u{1b}]52;c;aGk=\u{7}\tc\r\n\u{9b}d\u{202e}e\u{2066}\u{7f}\n",
            false,
        );
        assert_eq!(
            s,
            "a\\u001b[2Jb\\u001b]52;c;aGk=\\u0007\tc\\u000d\n\\u009bd\\u202ee\\u2066\\u007f\n"
        );
        // JSON reads the escapes back as the characters they stand for.
        let json = shown("\"x\u{202e}y\u{9b}\"", false);
        let back: String = serde_json::from_str(&json).unwrap();
        assert_eq!(back, "x\u{202e}y\u{9b}");
    }

    #[test]
    fn colour_passes_only_on_a_colour_terminal_and_only_colour() {
        let text = "\u{1b}[1;31merror\u{1b}[0m \u{1b}[38;5;12mx\u{1b}[39m";
        assert_eq!(shown(text, true), text);
        assert!(!shown(text, false).contains('\u{1b}'));
        // Conceal, cursor moves, screen clears and OSC are never passed.
        for hostile in [
            "\u{1b}[8m",
            "\u{1b}[2J",
            "\u{1b}[H",
            "\u{1b}]52;c;eA==\u{7}",
            "\u{1b}[38;5m",
        ] {
            assert!(!shown(hostile, true).contains('\u{1b}'), "{hostile:?}");
        }
    }

    #[test]
    fn no_line_is_a_workflow_command_but_in_their_format() {
        let text = "move apps/x\n::add-mask::hidden\n  ::error::forged\nok :: fine\n";
        assert_eq!(
            shown(text, false),
            "move apps/x\n\\u003a:add-mask::hidden\n  \\u003a:error::forged\nok :: fine\n"
        );
        let mut github = Safe::new(Vec::new(), false).workflow_commands();
        github.write_all(b"::error file=a::m\n").unwrap();
        assert_eq!(github.inner, b"::error file=a::m\n");
    }

    #[test]
    fn lines_wait_for_their_end() {
        let mut out = Safe::new(Vec::new(), false);
        out.write_all(b"one \xe2\x80").unwrap();
        out.write_all(b"\xae two\n\x1b").unwrap();
        assert_eq!(out.inner, b"one \\u202e two\n");
        out.flush().unwrap();
        assert_eq!(out.inner, b"one \\u202e two\n\\u001b");
    }
}
