//! Go's regular expressions (RE2 syntax as Go's `regexp/syntax` parses it, Perl flags on),
//! compiled with the regex crate. kustomize matches a patch or replacement target's fields
//! with Go's `regexp` (api/types/selector.go `NewSelectorRegex`), and the two libraries read
//! some patterns differently: Go takes a `{` that starts no repetition (`${VAR}`) as itself,
//! `\d`, `\w`, `\s` and `\b` as ASCII only, `\Q...\E` as quoted text, `\123` as an octal
//! code and `\<` as `<`, and refuses `(?x)`, `\e`, `\C`, a repetition of a repetition (`a**`),
//! a count past 1000 and nested counts that multiply past 1000 (`(a{2}){501}`), where the
//! regex crate does the opposite. `compile` rewrites a
//! pattern into the regex crate's syntax with Go's meaning, or fails where Go's parser does.
//! A leaf: it imports nothing of the crate.

use regex::Regex;

/// `pattern` compiled as Go compiles it; `Err` with why when Go's parser refuses it.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    let rust = translate(pattern)?;
    Regex::new(&rust).map_err(|e| e.to_string())
}

/// Go's largest repetition count (`regexp/syntax` `maxRepeat`).
const MAX_REPEAT: u32 = 1000;

/// `pattern` in the regex crate's syntax, every literal written as `\x{..}`.
fn translate(pattern: &str) -> Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut i = 0;
    // Whether the last thing read was a repetition operator: Go refuses another after it.
    let mut repeated = false;
    let mut copies = Copies::default();
    while i < chars.len() {
        let c = chars[i];
        let was_repeat = std::mem::take(&mut repeated);
        match c {
            '*' | '+' | '?' | '{' => {
                let op = match c {
                    '{' => repeat(&chars[i..])?,
                    _ => Some((c.to_string(), 1, None)),
                };
                let Some((op, len, counts)) = op else {
                    // A `{` that starts no repetition is itself.
                    copies.atom();
                    literal(&mut out, '{');
                    i += 1;
                    continue;
                };
                if was_repeat {
                    return Err(format!("invalid nested repetition operator: `{op}`"));
                }
                if let Some((min, max)) = counts {
                    copies.repeat(min, max, &op)?;
                }
                out.push_str(&op);
                i += len;
                // A lazy marker belongs to the operator.
                if chars.get(i) == Some(&'?') {
                    out.push('?');
                    i += 1;
                }
                repeated = true;
            }
            '}' | ']' => {
                copies.atom();
                literal(&mut out, c);
                i += 1;
            }
            '(' => {
                let (next, opened) = group(&chars, i, &mut out)?;
                if opened {
                    copies.open();
                }
                i = next;
            }
            '[' => {
                copies.atom();
                i = class(&chars, i, &mut out)?;
            }
            '|' => {
                copies.alternative();
                out.push(c);
                i += 1;
            }
            ')' => {
                copies.close();
                out.push(c);
                i += 1;
            }
            '\\' => match chars.get(i + 1) {
                Some('Q') => {
                    // Quoted to `\E` or to the end of the pattern.
                    let rest = &chars[i + 2..];
                    let end = rest
                        .windows(2)
                        .position(|w| w == ['\\', 'E'])
                        .unwrap_or(rest.len());
                    rest[..end].iter().for_each(|&q| {
                        copies.atom();
                        literal(&mut out, q)
                    });
                    i += 2 + (end + 2).min(rest.len());
                }
                // Assertions; Go's word boundaries are ASCII.
                Some(&e @ ('b' | 'B' | 'A' | 'z')) => {
                    copies.atom();
                    out.push_str(match e {
                        'b' => r"(?-u:\b)",
                        'B' => r"(?-u:\B)",
                        'A' => r"\A",
                        _ => r"\z",
                    });
                    i += 2;
                }
                _ => {
                    copies.atom();
                    let (item, len) = escape(&chars[i..])?;
                    match item {
                        Item::Char(ch) => literal(&mut out, ch),
                        Item::Class(text) => out.push_str(&text),
                    }
                    i += len;
                }
            },
            _ => {
                // `.`, `^`, `$` mean the same; anything else is itself.
                copies.atom();
                if matches!(c, '.' | '^' | '$') {
                    out.push(c);
                } else {
                    literal(&mut out, c);
                }
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Go's `repeatIsValid`: a counted repetition `{n,m}` stands for `m` copies of what it
/// repeats (`n` when unbounded, none for `{0}`), nested ones multiply, and Go refuses one
/// with a count of 2 or more over which any path needs more than `MAX_REPEAT` copies.
/// Each item's need is the largest product of the counts on a path through it.
struct Copies {
    /// The needs of the open groups' items so far, outermost first.
    open: Vec<u32>,
    /// The need of the items of the group being read, but the last.
    before: u32,
    /// The need of its last item, the one a repetition applies to.
    last: u32,
}

impl Default for Copies {
    fn default() -> Self {
        Copies {
            open: Vec::new(),
            before: 1,
            last: 1,
        }
    }
}

impl Copies {
    /// An item that repeats nothing inside.
    fn atom(&mut self) {
        self.before = self.before.max(self.last);
        self.last = 1;
    }

    fn alternative(&mut self) {
        self.atom();
    }

    fn open(&mut self) {
        self.atom();
        self.open.push(self.before);
        self.before = 1;
    }

    fn close(&mut self) {
        let inside = self.before.max(self.last);
        // An unmatched `)` is refused by the regex crate as by Go.
        self.before = self.open.pop().unwrap_or(1);
        self.last = inside;
    }

    /// `{min,max}` (`max` `None` when unbounded), written `op`, applied to the last item.
    fn repeat(&mut self, min: u32, max: Option<u32>, op: &str) -> Result<(), String> {
        let count = match max {
            Some(0) => {
                self.last = 1;
                return Ok(());
            }
            Some(max) => max,
            None => min,
        };
        self.last = self.last.saturating_mul(count.max(1));
        if (min >= 2 || max.is_some_and(|m| m >= 2)) && self.last > MAX_REPEAT {
            return Err(format!("invalid repeat size: `{op}`"));
        }
        Ok(())
    }
}

/// Pushes character `c` as a literal.
fn literal(out: &mut String, c: char) {
    if c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii() && !c.is_whitespace() {
        out.push(c);
    } else {
        out.push_str(&format!("\\x{{{:X}}}", c as u32));
    }
}

/// A repetition in the regex crate's syntax, its length, and its counts (`None` for `*`,
/// `+`, `?`): the least, and the most when bounded.
type Repeat = (String, usize, Option<(u32, Option<u32>)>);

/// The repetition `{n}`, `{n,}` or `{n,m}` at the start of `t` (Go's `parseRepeat`); `None`
/// when `{` starts none (Go reads it as itself).
fn repeat(t: &[char]) -> Result<Option<Repeat>, String> {
    let Some(close) = t.iter().position(|&c| c == '}') else {
        return Ok(None);
    };
    let inner: String = t[1..close].iter().collect();
    let (min, max) = match inner.split_once(',') {
        Some((min, max)) => (min, Some(max)),
        None => (inner.as_str(), None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(min) || max.is_some_and(|m| !m.is_empty() && !digits(m)) {
        return Ok(None);
    }
    let bad = || {
        let text: String = t[..=close].iter().collect();
        format!("invalid repeat count: `{text}`")
    };
    let count = |s: &str| s.parse::<u32>().ok().filter(|&v| v <= MAX_REPEAT);
    let lo = count(min).ok_or_else(bad)?;
    let (written, hi) = match max {
        None => (format!("{{{lo}}}"), Some(lo)),
        Some("") => (format!("{{{lo},}}"), None),
        Some(max) => match count(max).filter(|&hi| hi >= lo) {
            Some(hi) => (format!("{{{lo},{hi}}}"), Some(hi)),
            None => return Err(bad()),
        },
    };
    Ok(Some((written, close + 1, Some((lo, hi)))))
}

/// The group starting at `chars[i]` (`(`): its flags checked as Go checks them, written to
/// `out`; the index after what was read, and whether a group opened (`(?i)` opens none).
fn group(chars: &[char], i: usize, out: &mut String) -> Result<(usize, bool), String> {
    if chars.get(i + 1) != Some(&'?') {
        out.push('(');
        return Ok((i + 1, true));
    }
    let rest: String = chars[i + 2..].iter().take(3).collect();
    if rest.starts_with("P<") || rest.starts_with('<') {
        let start = i + if rest.starts_with('P') { 4 } else { 3 };
        let len = chars[start..]
            .iter()
            .position(|&c| c == '>')
            .ok_or("invalid named capture")?;
        let name: String = chars[start..start + len].iter().collect();
        if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return Err(format!("invalid named capture: `{name}`"));
        }
        out.push_str(&format!("(?P<{name}>"));
        return Ok((start + len + 1, true));
    }
    // Flags: Go knows `i`, `m`, `s` and `U`, a `-` once, then `:` or `)`.
    let mut j = i + 2;
    let mut negated = false;
    let mut any = false;
    loop {
        match chars.get(j) {
            Some('i' | 'm' | 's' | 'U') => any = true,
            Some('-') if !negated => negated = true,
            Some(':' | ')') if any || !negated => break,
            _ => return Err("invalid or unsupported Perl syntax".into()),
        }
        j += 1;
    }
    out.extend(&chars[i..=j]);
    Ok((j + 1, chars[j] == ':'))
}

/// What an escape reads as.
enum Item {
    Char(char),
    /// A class, in the regex crate's syntax (usable inside a class too).
    Class(String),
}

/// The escape at the start of `t` (`\`...), outside or inside a class (Go's `parseEscape`
/// and its Perl and Unicode classes), with its length.
fn escape(t: &[char]) -> Result<(Item, usize), String> {
    let Some(&c) = t.get(1) else {
        return Err("trailing backslash at end of expression".into());
    };
    let ascii = |s: &str| Item::Class(s.to_string());
    let item = match c {
        'd' => ascii("[0-9]"),
        'D' => ascii("[^0-9]"),
        'w' => ascii("[0-9A-Za-z_]"),
        'W' => ascii("[^0-9A-Za-z_]"),
        's' => ascii(r"[\t\n\f\r ]"),
        'S' => ascii(r"[^\t\n\f\r ]"),
        'p' | 'P' => {
            let len = match t.get(2) {
                Some('{') => {
                    3 + t[3..]
                        .iter()
                        .position(|&c| c == '}')
                        .ok_or("invalid character class range")?
                        + 1
                }
                Some(_) => 3,
                None => return Err("invalid character class range".into()),
            };
            return Ok((Item::Class(t[..len].iter().collect()), len));
        }
        '1'..='7' if !t.get(2).is_some_and(|d| ('0'..='7').contains(d)) => {
            return Err("invalid escape sequence: backreferences are not supported".into())
        }
        '0'..='7' => {
            let len = 1 + t[1..]
                .iter()
                .take(3)
                .take_while(|&&d| ('0'..='7').contains(&d))
                .count();
            let code: String = t[1..len].iter().collect();
            let value = u32::from_str_radix(&code, 8).map_err(|e| e.to_string())?;
            let ch = char::from_u32(value).ok_or("invalid escape sequence")?;
            return Ok((Item::Char(ch), len));
        }
        'x' => {
            let (hex, len) = match t.get(2) {
                Some('{') => {
                    let end = t[3..]
                        .iter()
                        .position(|&c| c == '}')
                        .ok_or("invalid escape sequence")?;
                    (t[3..3 + end].iter().collect::<String>(), 4 + end)
                }
                _ => (
                    t.get(2..4)
                        .ok_or("invalid escape sequence")?
                        .iter()
                        .collect(),
                    4,
                ),
            };
            let ch = u32::from_str_radix(&hex, 16)
                .ok()
                .filter(|_| !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()))
                .and_then(char::from_u32)
                .ok_or("invalid escape sequence")?;
            return Ok((Item::Char(ch), len));
        }
        'a' => Item::Char('\x07'),
        'f' => Item::Char('\x0C'),
        't' => Item::Char('\t'),
        'n' => Item::Char('\n'),
        'r' => Item::Char('\r'),
        'v' => Item::Char('\x0B'),
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => Item::Char(c),
        _ => return Err(format!("invalid escape sequence: `\\{c}`")),
    };
    Ok((item, 2))
}

/// The class starting at `chars[i]` (`[`), read as Go's `parseClass` reads it (a `]` first is
/// itself, `[` is itself unless it opens `[:name:]`, a `-` makes a range unless it comes
/// before the closing `]`), written to `out` with every character escaped; the index after
/// it.
fn class(chars: &[char], i: usize, out: &mut String) -> Result<usize, String> {
    let mut j = i + 1;
    out.push('[');
    if chars.get(j) == Some(&'^') {
        out.push('^');
        j += 1;
    }
    let mut first = true;
    loop {
        let Some(&c) = chars.get(j) else {
            return Err("missing closing ]".into());
        };
        if c == ']' && !first {
            out.push(']');
            return Ok(j + 1);
        }
        first = false;
        if c == '[' && chars.get(j + 1) == Some(&':') {
            let rest: String = chars[j..].iter().collect();
            if let Some(end) = rest[2..].find(":]") {
                let name = &rest[2..2 + end];
                let bare = name.strip_prefix('^').unwrap_or(name);
                if POSIX.contains(&bare) {
                    out.push_str(&format!("[:{name}:]"));
                    j += name.chars().count() + 4;
                    continue;
                }
                if name.chars().all(|c| c.is_ascii_alphabetic() || c == '^') {
                    return Err(format!("invalid character class range: `[:{name}:]`"));
                }
            }
        }
        // One character (or escape), maybe the start of a range.
        let (lo, len) = class_char(&chars[j..])?;
        j += len;
        let lo = match lo {
            Item::Class(text) => {
                out.push_str(&text);
                continue;
            }
            Item::Char(lo) => lo,
        };
        let mut hi = lo;
        if chars.get(j) == Some(&'-') && chars.get(j + 1).is_some_and(|&n| n != ']') {
            match class_char(&chars[j + 1..])? {
                (Item::Char(h), len) => {
                    if h < lo {
                        return Err("invalid character class range".into());
                    }
                    hi = h;
                    j += 1 + len;
                }
                (Item::Class(_), _) => return Err("invalid character class range".into()),
            }
        }
        literal(out, lo);
        if hi != lo {
            out.push('-');
            literal(out, hi);
        }
    }
}

/// Go's POSIX class names (`regexp/syntax` `posixGroup`).
const POSIX: [&str; 14] = [
    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
    "space", "upper", "word", "xdigit",
];

/// A character of a class, or a class escape, with its length.
fn class_char(t: &[char]) -> Result<(Item, usize), String> {
    match t.first() {
        Some('\\') => escape(t),
        Some(&c) => Ok((Item::Char(c), 1)),
        None => Err("missing closing ]".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository writes any pattern: every one of up to three characters of Go's syntax
    /// compiles or is refused, never panics.
    #[test]
    fn no_pattern_panics() {
        let alphabet: Vec<char> = r"\{}[]()^$.|*+?-:,<>PQEx0179aZ_&~é".chars().collect();
        let mut pattern = Vec::new();
        fn all(alphabet: &[char], pattern: &mut Vec<char>, left: usize) {
            let _ = compile(&pattern.iter().collect::<String>());
            if left == 0 {
                return;
            }
            for &c in alphabet {
                pattern.push(c);
                all(alphabet, pattern, left - 1);
                pattern.pop();
            }
        }
        all(&alphabet, &mut pattern, 3);
        for tail in ["\\x{", "\\p{", "[[:", "(?P<", "{1,", "\\Qa"] {
            let _ = compile(tail);
        }
    }

    /// Every case of the upstream table (tests/fixtures/upstream/regexp.tsv: Go's regexp,
    /// each pattern anchored as kustomize anchors a target's).
    #[test]
    fn patterns_match_as_go_matches_them() {
        let table = include_str!("../tests/fixtures/upstream/regexp.tsv");
        let cases = crate::upstream::cases(table, 2);
        crate::upstream::assert_agrees(&cases, 100, |case| {
            let pattern: String = serde_json::from_str(case.inputs[0]).unwrap();
            let text: String = serde_json::from_str(case.inputs[1]).unwrap();
            let got = match compile(&format!("^(?:{pattern})$")) {
                Ok(re) => re.is_match(&text).to_string(),
                Err(_) => "error".to_string(),
            };
            (got != case.answer).then(|| {
                format!(
                    "line {}: {pattern:?} ~ {text:?}: {got}, Go: {}",
                    case.line, case.answer
                )
            })
        });
    }
}
