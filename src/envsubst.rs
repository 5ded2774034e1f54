//! Flux's variable syntax for `postBuild` substitution, as fluxcd/pkg's `envsubst` package
//! (a fork of drone/envsubst) parses and evaluates it (`parse/scan.go`, `parse/parse.go`,
//! `eval.go`, `funcs.go`):
//!
//! - `${VAR}`; the name is letters, digits and `_` (the scanner's `acceptIdent`);
//! - defaults `${VAR:=x}`, `${VAR:-x}`, `${VAR=x}`, and `${VAR:?x}`, `${VAR:+x}`, which
//!   all act alike (`toDefault`): the value, or the default when the value is empty. A
//!   default may hold further `${...}`: `${A:-${B}}`, `${A:=${B:=c}}`. `${VAR-x}` is no
//!   operator: `parseFunc` has no `-` case, so it is a "missing closing brace" error;
//! - the functions `${#VAR}`, `${VAR^}`, `${VAR^^}`, `${VAR,}`, `${VAR,,}`,
//!   `${VAR:pos}`, `${VAR:pos:len}`, `${VAR/a/b}`, `${VAR//a/b}`, `${VAR/#a/b}`,
//!   `${VAR/%a/b}`, `${VAR#p}`, `${VAR##p}`, `${VAR%p}`, `${VAR%%p}`;
//! - `$$` outside `${...}` is one `$`, so `$${VAR}` is the text `${VAR}`; `$VAR` is text;
//! - an unclosed `${`, or `${}`, is an error, and Flux's build fails on it.
//!
//! The arguments of a function are evaluated before its variable is looked up
//! (`evalFunc`), so in strict mode `${A:=${B}}` needs `B` even when `A` is set; a variable
//! that is not set fails the evaluation unless its operator is a default (`isDefaultOp`).
//!
//! A leaf: it knows nothing of the rest of fluxwave, so that both the YAML emitter (which
//! quotes a scalar holding `${`) and Flux's substitution (`flux::substitute`) can use it.

use std::collections::BTreeSet;
use std::fmt;

/// Why a string does not parse (the errors of `parse/parse.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    BadSubstitution,
    MissingClosingBrace,
    VariableName,
    FuncSubstitution,
    DefaultFunction,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParseError::BadSubstitution => "bad substitution",
            ParseError::MissingClosingBrace => "missing closing brace",
            ParseError::VariableName => "unable to parse variable name",
            ParseError::FuncSubstitution => "unable to parse substitution within function",
            ParseError::DefaultFunction => "unable to parse default function",
        })
    }
}

/// A parsed string: text and `${...}` expressions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Text(String),
    /// `${param<name>args...}`; `name` is the operator (`""` for a plain `${VAR}`).
    Func {
        name: String,
        param: String,
        args: Vec<Node>,
    },
}

// Scanner modes and escapes (`scan.go`).
const IDENT: u8 = 1;
const LBRACK: u8 = 2;
const RBRACK: u8 = 4;
const ESCAPE: u8 = 8;
const DOLLAR: u8 = 1;
const BACKSLASH: u8 = 2;

#[derive(PartialEq, Eq)]
enum Token {
    Illegal,
    Eof,
    Ident,
    Lbrack,
    Rbrack,
}

type Accept = fn(char, usize) -> bool;

/// A port of `scan.go`'s scanner: it works on characters and `skip` drops the escaping
/// character from the buffer, as the original does.
struct Scanner {
    buf: Vec<char>,
    pos: usize,
    start: usize,
    width: usize,
    mode: u8,
    escape: u8,
    accept: Accept,
    /// How many `${` are open: bounded, so that hostile input cannot exhaust the stack.
    depth: usize,
}

/// More nested `${` than this is refused as a bad substitution.
const MAX_DEPTH: usize = 64;

const EOF: char = '\0';

impl Scanner {
    fn read(&mut self) -> char {
        match self.buf.get(self.pos) {
            None => {
                self.width = 0;
                EOF
            }
            Some(c) => {
                self.width = 1;
                self.pos += 1;
                *c
            }
        }
    }

    fn unread(&mut self) {
        self.pos -= self.width;
    }

    fn skip(&mut self) {
        self.buf.remove(self.pos - 1);
    }

    fn peek(&mut self) -> char {
        let r = self.read();
        self.unread();
        r
    }

    fn string(&self) -> String {
        self.buf[self.start..self.pos].iter().collect()
    }

    fn scan(&mut self) -> Token {
        self.start = self.pos;
        let r = self.read();
        if self.width == 0 {
            return Token::Eof;
        }
        if self.scan_lbrack(r) {
            Token::Lbrack
        } else if self.scan_rbrack(r) {
            Token::Rbrack
        } else if self.scan_ident(r) {
            Token::Ident
        } else {
            Token::Illegal
        }
    }

    fn scan_ident(&mut self, r: char) -> bool {
        if self.mode & IDENT == 0 {
            return false;
        }
        if self.scan_escaped(r) {
            self.skip();
        } else if !(self.accept)(r, self.pos - self.start) {
            return false;
        }
        loop {
            let r = self.read();
            if self.width == 0 {
                self.unread();
                break;
            }
            if self.scan_lbrack(r) {
                self.unread();
                self.unread();
                break;
            }
            if self.scan_escaped(r) {
                self.skip();
                continue;
            }
            if !(self.accept)(r, self.pos - self.start) {
                self.unread();
                break;
            }
        }
        true
    }

    fn scan_lbrack(&mut self, r: char) -> bool {
        if self.mode & LBRACK == 0 {
            return false;
        }
        if r == '$' {
            if self.read() == '{' {
                return true;
            }
            self.unread();
        }
        false
    }

    fn scan_rbrack(&self, r: char) -> bool {
        self.mode & RBRACK != 0 && r == '}'
    }

    fn scan_escaped(&mut self, r: char) -> bool {
        if self.mode & ESCAPE == 0 {
            return false;
        }
        if r == '$' && self.escape & DOLLAR != 0 && self.peek() == '$' {
            return true;
        }
        r == '\\' && self.escape & BACKSLASH != 0 && matches!(self.peek(), '/' | '\\')
    }
}

fn accept_rune(_: char, _: usize) -> bool {
    true
}
fn accept_ident(r: char, _: usize) -> bool {
    r.is_alphanumeric() || r == '_'
}
fn accept_colon(r: char, _: usize) -> bool {
    r == ':'
}
fn accept_one_hash(r: char, i: usize) -> bool {
    r == '#' && i == 1
}
fn accept_not_closing(r: char, _: usize) -> bool {
    r != '}'
}
fn accept_hash_func(r: char, i: usize) -> bool {
    r == '#' && i < 3
}
fn accept_percent_func(r: char, i: usize) -> bool {
    r == '%' && i < 3
}
fn accept_default_func(r: char, i: usize) -> bool {
    (i == 1 && r == ':') || (i == 2 && matches!(r, '=' | '-' | '?' | '+'))
}
fn accept_replace_func(r: char, i: usize) -> bool {
    (i == 1 && r == '/') || (i == 2 && matches!(r, '/' | '#' | '%'))
}
fn accept_one_equal(r: char, i: usize) -> bool {
    i == 1 && r == '='
}
fn accept_one_colon(r: char, i: usize) -> bool {
    i == 1 && r == ':'
}
fn reject_colon_close(r: char, _: usize) -> bool {
    r != ':' && r != '}'
}
fn accept_slash(r: char, _: usize) -> bool {
    r == '/'
}
fn accept_not_slash(r: char, _: usize) -> bool {
    r != '/'
}
fn accept_casing_func(r: char, i: usize) -> bool {
    (r == ',' || r == '^') && i < 3
}

/// Parses `s` as `parse.Parse` does.
pub fn parse(s: &str) -> Result<Vec<Node>, ParseError> {
    let mut p = Scanner {
        buf: s.chars().collect(),
        pos: 0,
        start: 0,
        width: 0,
        mode: 0,
        escape: 0,
        accept: accept_rune,
        depth: 0,
    };
    let mut nodes = Vec::new();
    loop {
        p.accept = accept_rune;
        p.mode = IDENT | LBRACK | ESCAPE;
        p.escape = DOLLAR;
        match p.scan() {
            Token::Ident => nodes.push(Node::Text(p.string())),
            Token::Eof => return Ok(nodes),
            Token::Lbrack => nodes.push(p.parse_func()?),
            _ => return Err(ParseError::BadSubstitution),
        }
    }
}

impl Scanner {
    fn scan_with(&mut self, accept: Accept, mode: u8) -> Token {
        self.accept = accept;
        self.mode = mode;
        self.scan()
    }

    fn parse_func(&mut self) -> Result<Node, ParseError> {
        if self.depth == MAX_DEPTH {
            return Err(ParseError::BadSubstitution);
        }
        self.depth += 1;
        let node = self.parse_func_inner();
        self.depth -= 1;
        node
    }

    fn parse_func_inner(&mut self) -> Result<Node, ParseError> {
        self.escape = DOLLAR | BACKSLASH;
        if self.peek() == '#' {
            return self.parse_len_func();
        }
        if self.scan_with(accept_ident, IDENT) != Token::Ident {
            return Err(ParseError::VariableName);
        }
        let name = self.string();
        match self.peek() {
            ':' => return self.parse_default_or_substr(name),
            '=' => return self.parse_default_func(name),
            ',' | '^' => return self.parse_casing_func(name),
            '/' => return self.parse_replace_func(name),
            '#' => return self.parse_remove_func(name, accept_hash_func),
            '%' => return self.parse_remove_func(name, accept_percent_func),
            _ => {}
        }
        match self.scan_with(accept_ident, RBRACK) {
            Token::Rbrack => Ok(Node::Func {
                name: String::new(),
                param: name,
                args: Vec::new(),
            }),
            _ => Err(ParseError::MissingClosingBrace),
        }
    }

    fn parse_param(&mut self, accept: Accept, mode: u8) -> Result<Node, ParseError> {
        match self.scan_with(accept, mode | LBRACK) {
            Token::Lbrack => self.parse_func(),
            Token::Ident | Token::Rbrack => Ok(Node::Text(self.string())),
            _ => Err(ParseError::FuncSubstitution),
        }
    }

    /// The operator of a function, scanned with `accept`.
    fn operator(&mut self, accept: Accept, err: ParseError) -> Result<String, ParseError> {
        match self.scan_with(accept, IDENT) {
            Token::Ident => Ok(self.string()),
            _ => Err(err),
        }
    }

    fn parse_default_or_substr(&mut self, name: String) -> Result<Node, ParseError> {
        self.read();
        let r = self.peek();
        self.unread();
        if matches!(r, '=' | '-' | '?' | '+') {
            self.parse_default_func(name)
        } else {
            self.parse_substr_func(name)
        }
    }

    fn parse_substr_func(&mut self, param: String) -> Result<Node, ParseError> {
        let name = self.operator(accept_one_colon, ParseError::BadSubstitution)?;
        let mut args = vec![self.parse_param(reject_colon_close, IDENT)?];
        match self.scan_with(accept_colon, IDENT | RBRACK) {
            Token::Rbrack => return Ok(Node::Func { name, param, args }),
            Token::Ident => {}
            _ => return Err(ParseError::BadSubstitution),
        }
        args.push(self.parse_param(accept_not_closing, IDENT)?);
        self.consume_rbrack()?;
        Ok(Node::Func { name, param, args })
    }

    fn parse_remove_func(&mut self, param: String, accept: Accept) -> Result<Node, ParseError> {
        let name = self.operator(accept, ParseError::BadSubstitution)?;
        let args = vec![self.parse_param(accept_not_closing, IDENT)?];
        self.consume_rbrack()?;
        Ok(Node::Func { name, param, args })
    }

    fn parse_replace_func(&mut self, param: String) -> Result<Node, ParseError> {
        let name = self.operator(accept_replace_func, ParseError::BadSubstitution)?;
        let mut args = vec![self.parse_param(accept_not_slash, IDENT | ESCAPE)?];
        if self.scan_with(accept_slash, IDENT) != Token::Ident {
            return Err(ParseError::BadSubstitution);
        }
        if self.peek() != '}' {
            args.push(self.parse_param(accept_not_closing, IDENT | ESCAPE)?);
        }
        self.consume_rbrack()?;
        Ok(Node::Func { name, param, args })
    }

    fn parse_default_func(&mut self, param: String) -> Result<Node, ParseError> {
        let accept = if self.peek() == '=' {
            accept_one_equal
        } else {
            accept_default_func
        };
        let name = self.operator(accept, ParseError::DefaultFunction)?;
        let mut args = Vec::new();
        while self.peek() != '}' {
            args.push(self.parse_param(accept_not_closing, IDENT)?);
        }
        self.consume_rbrack()?;
        Ok(Node::Func { name, param, args })
    }

    fn parse_casing_func(&mut self, param: String) -> Result<Node, ParseError> {
        let name = self.operator(accept_casing_func, ParseError::BadSubstitution)?;
        self.consume_rbrack()?;
        Ok(Node::Func {
            name,
            param,
            args: Vec::new(),
        })
    }

    fn parse_len_func(&mut self) -> Result<Node, ParseError> {
        let name = self.operator(accept_one_hash, ParseError::BadSubstitution)?;
        let param = self.operator(accept_ident, ParseError::BadSubstitution)?;
        self.consume_rbrack()?;
        Ok(Node::Func {
            name,
            param,
            args: Vec::new(),
        })
    }

    fn consume_rbrack(&mut self) -> Result<(), ParseError> {
        self.mode = RBRACK;
        match self.scan() {
            Token::Rbrack => Ok(()),
            _ => Err(ParseError::BadSubstitution),
        }
    }
}

/// Whether an operator tolerates an unset variable (`isDefaultOp`).
pub fn is_default_op(name: &str) -> bool {
    matches!(name, "-" | "+" | "=" | "?" | ":-" | ":+" | ":=" | ":?")
}

/// What a variable is when a string is evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Set(String),
    /// Not set: an error in strict mode unless the operator is a default.
    Unset,
    /// Its value cannot be known (it may come from a source that cannot be read).
    Unknown,
}

/// Why a string cannot be evaluated to a known text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// A variable it needs is not set, and Flux (in strict mode) fails the build.
    NotSet(String),
    /// A variable it needs has a value that cannot be known.
    Unknown(String),
}

/// Evaluates parsed `nodes` as `Template.Execute` does in strict mode, `lookup` giving each
/// variable.
pub fn eval(nodes: &[Node], lookup: &dyn Fn(&str) -> Lookup) -> Result<String, Unresolved> {
    let mut out = String::new();
    for n in nodes {
        out.push_str(&eval_node(n, lookup)?);
    }
    Ok(out)
}

fn eval_node(n: &Node, lookup: &dyn Fn(&str) -> Lookup) -> Result<String, Unresolved> {
    let (name, param, args) = match n {
        Node::Text(t) => return Ok(t.clone()),
        Node::Func { name, param, args } => (name, param, args),
    };
    // Arguments first, as `evalFunc` does; an unknown one only matters if it is used.
    let args: Vec<Result<String, Unresolved>> = args.iter().map(|a| eval_node(a, lookup)).collect();
    if let Some(Err(e @ Unresolved::NotSet(_))) = args.iter().find(|a| a.is_err()) {
        return Err(e.clone());
    }
    let value = match lookup(param) {
        Lookup::Set(v) => v,
        Lookup::Unset if is_default_op(name) => String::new(),
        Lookup::Unset => return Err(Unresolved::NotSet(param.clone())),
        Lookup::Unknown => return Err(Unresolved::Unknown(param.clone())),
    };
    let uses_args = match name.as_str() {
        "^" | "^^" | "," | ",," => false,
        "#" | "##" | "%" | "%%" | ":" | "/" | "//" | "/#" | "/%" => true,
        _ => value.is_empty(),
    };
    let args: Vec<String> = if uses_args {
        args.into_iter().collect::<Result<_, _>>()?
    } else {
        Vec::new()
    };
    Ok(apply(name, &value, &args))
}

/// The function of an operator (`lookupFunc`) applied to `s`.
fn apply(name: &str, s: &str, args: &[String]) -> String {
    let arg = |i: usize| args.get(i).map(String::as_str);
    match name {
        "," => first_char(s, false),
        ",," => s.to_lowercase(),
        "^" => first_char(s, true),
        "^^" => s.to_uppercase(),
        "#" if args.is_empty() => s.len().to_string(),
        "#" => trim_prefix(s, arg(0).unwrap_or(""), false),
        "##" => trim_prefix(s, arg(0).unwrap_or(""), true),
        "%" => trim_suffix(s, arg(0).unwrap_or(""), false),
        "%%" => trim_suffix(s, arg(0).unwrap_or(""), true),
        ":" => substr(s, args),
        "/#" => match (arg(0), arg(1)) {
            (Some(a), Some(b)) if s.starts_with(a) => s.replacen(a, b, 1),
            _ => s.to_string(),
        },
        "/%" => match (arg(0), arg(1)) {
            (Some(a), Some(b)) if s.ends_with(a) => format!("{}{b}", &s[..s.len() - a.len()]),
            _ => s.to_string(),
        },
        "/" => match arg(0) {
            Some(a) => s.replacen(a, arg(1).unwrap_or(""), 1),
            None => s.to_string(),
        },
        "//" => match arg(0) {
            Some(a) => s.replace(a, arg(1).unwrap_or("")),
            None => s.to_string(),
        },
        // `toDefault`: every other operator, `${VAR}` included.
        _ if s.is_empty() && !args.is_empty() => args.concat(),
        _ => s.to_string(),
    }
}

fn first_char(s: &str, upper: bool) -> String {
    let mut chars = s.chars();
    match chars.next() {
        None => String::new(),
        Some(c) if upper => c.to_uppercase().chain(chars).collect(),
        Some(c) => c.to_lowercase().chain(chars).collect(),
    }
}

/// `toSubstr`, on bytes as Go slices strings.
fn substr(s: &str, args: &[String]) -> String {
    let Some(Ok(mut pos)) = args.first().map(|a| a.parse::<i64>()) else {
        return s.to_string();
    };
    let len = s.len() as i64;
    if pos < 0 {
        pos = (len + pos).max(0);
    }
    let slice = |from: i64, to: i64| {
        s.get(from as usize..to as usize)
            .unwrap_or_default()
            .to_string()
    };
    let Some(length) = args.get(1) else {
        return if pos < len {
            slice(pos, len)
        } else {
            String::new()
        };
    };
    let Ok(length) = length.parse::<i64>() else {
        return s.to_string();
    };
    if pos.saturating_add(length) >= len {
        return if pos < len {
            slice(pos, len)
        } else {
            String::new()
        };
    }
    slice(pos, pos + length)
}

/// `trimShortest`/`trimLongest` of a prefix matching the glob `pattern` (`path.Match`).
fn trim_prefix(s: &str, pattern: &str, longest: bool) -> String {
    let ends: Vec<usize> = (1..=s.len()).filter(|i| s.is_char_boundary(*i)).collect();
    let mut found = None;
    for end in ends.iter().rev() {
        if glob(pattern, &s[..*end]) {
            found = Some(*end);
            if longest {
                break;
            }
        }
    }
    match found {
        Some(end) => s[end..].to_string(),
        None => s.to_string(),
    }
}

fn trim_suffix(s: &str, pattern: &str, longest: bool) -> String {
    let rev = |t: &str| t.chars().rev().collect::<String>();
    rev(&trim_prefix(&rev(s), &rev(pattern), longest))
}

/// One element of a glob pattern.
enum Glob {
    Star,
    Any,
    Char(char),
    /// `[...]`: ranges, negated.
    Class(Vec<(char, char)>, bool),
}

/// A glob of `*`, `?`, `[...]` (with `^` or `!` negation and ranges) and `\` escapes, as
/// `path.Match`; matched in O(pattern × name) (one star backtracked at a time).
fn glob(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let mut elems = Vec::new();
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '*' => elems.push(Glob::Star),
            '?' => elems.push(Glob::Any),
            '\\' if i + 1 < p.len() => {
                i += 1;
                elems.push(Glob::Char(p[i]));
            }
            '[' => {
                let Some(close) = p[i + 1..].iter().position(|c| *c == ']') else {
                    return false; // `path.ErrBadPattern`: no match
                };
                let mut class = &p[i + 1..i + 1 + close];
                let negated = matches!(class.first(), Some('^' | '!'));
                if negated {
                    class = &class[1..];
                }
                let mut ranges = Vec::new();
                let mut j = 0;
                while j < class.len() {
                    if j + 2 < class.len() && class[j + 1] == '-' {
                        ranges.push((class[j], class[j + 2]));
                        j += 3;
                    } else {
                        ranges.push((class[j], class[j]));
                        j += 1;
                    }
                }
                elems.push(Glob::Class(ranges, negated));
                i += close + 1;
            }
            c => elems.push(Glob::Char(c)),
        }
        i += 1;
    }
    let one = |e: &Glob, c: char| match e {
        Glob::Star => true,
        Glob::Any => true,
        Glob::Char(x) => *x == c,
        Glob::Class(ranges, negated) => ranges.iter().any(|(a, b)| *a <= c && c <= *b) != *negated,
    };
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match elems.get(pi) {
            Some(Glob::Star) => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(e) if one(e, n[ni]) => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    elems[pi..].iter().all(|e| matches!(e, Glob::Star))
}

/// Whether Flux's substitution could change `s` (it holds `${` or the `$$` escape): the
/// others are left alone without parsing.
pub fn may_change(s: &str) -> bool {
    dollar_then(s, |b| b == b'{' || b == b'$')
}

/// Whether `s` holds `${`, the opening of a variable.
pub fn opens_variable(s: &str) -> bool {
    dollar_then(s, |b| b == b'{')
}

/// Whether a `$` in `s` is followed by a byte `next` takes.
fn dollar_then(s: &str, next: impl Fn(u8) -> bool) -> bool {
    let b = s.as_bytes();
    memchr::memchr_iter(b'$', b).any(|i| b.get(i + 1).is_some_and(|&n| next(n)))
}

/// The variables `s` needs in strict mode: those of every `${...}` whose operator is not a
/// default, arguments included (they are evaluated first). A string that does not parse
/// needs none (its build fails for another reason).
pub fn needed(s: &str, out: &mut BTreeSet<String>) {
    fn walk(n: &Node, out: &mut BTreeSet<String>) {
        if let Node::Func { name, param, args } = n {
            if !is_default_op(name) {
                out.insert(param.clone());
            }
            args.iter().for_each(|a| walk(a, out));
        }
    }
    if !opens_variable(s) {
        return;
    }
    if let Ok(nodes) = parse(s) {
        nodes.iter().for_each(|n| walk(n, out));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Why `run` gives no text: the string does not parse, or does not evaluate.
    #[derive(Debug, PartialEq, Eq)]
    enum Failed {
        Parse(ParseError),
        Eval(Unresolved),
    }

    fn run(s: &str, vars: &[(&str, &str)]) -> Result<String, Failed> {
        let vars: BTreeMap<&str, &str> = vars.iter().copied().collect();
        let nodes = parse(s).map_err(Failed::Parse)?;
        eval(&nodes, &|k| match vars.get(k) {
            Some(v) if *v == "?" => Lookup::Unknown,
            Some(v) => Lookup::Set(v.to_string()),
            None => Lookup::Unset,
        })
        .map_err(Failed::Eval)
    }

    fn not_set(name: &str) -> Result<String, Failed> {
        Err(Failed::Eval(Unresolved::NotSet(name.into())))
    }

    /// Every case of the upstream table (tests/fixtures/upstream/envsubst.tsv: the library's
    /// own `eval_test.go` inputs and more, answered by the library in strict mode).
    #[test]
    fn agrees_with_the_library_on_its_table() {
        let table = include_str!("../tests/fixtures/upstream/envsubst.tsv");
        let cases = crate::upstream::cases(table, 2);
        for c in &cases {
            let vars: std::collections::BTreeMap<String, String> =
                serde_json::from_str(c.inputs[0]).unwrap();
            let text: String = serde_json::from_str(c.inputs[1]).unwrap();
            let lookup = |k: &str| match vars.get(k) {
                Some(v) => Lookup::Set(v.clone()),
                None => Lookup::Unset,
            };
            let got = parse(&text)
                .ok()
                .and_then(|nodes| eval(&nodes, &lookup).ok());
            let want: Option<String> =
                (c.answer != "error").then(|| serde_json::from_str(c.answer).unwrap());
            assert_eq!(got, want, "line {}: {text:?} with {vars:?}", c.line);
        }
        assert!(cases.len() >= 80, "{} cases", cases.len());
    }

    /// Cases of fluxcd/pkg envsubst `eval_test.go` and `parse_test.go`.
    #[test]
    fn evaluates_as_fluxs_envsubst() {
        let v = [("var01", "abcdEFGH28ij"), ("stringZ", "foo/bar/baz")];
        for (input, want) in [
            ("${var01}", "abcdEFGH28ij"),
            ("${var01^}", "AbcdEFGH28ij"),
            ("${var01^^}", "ABCDEFGH28IJ"),
            ("${var01,,}", "abcdefgh28ij"),
            ("${#var01}", "12"),
            ("${var01:4}", "EFGH28ij"),
            ("${var01:4:3}", "EFG"),
            ("${var01:-4}", "abcdEFGH28ij"),
            ("${var=${var01^^}}", "ABCDEFGH28IJ"),
            ("$${var01}", "${var01}"),
            (
                "some text ${var01}$${var$${var01}$var01${var01}",
                "some text abcdEFGH28ij${var${var01}$var01abcdEFGH28ij",
            ),
            (
                "something $${var=${var01}}",
                "something ${var=abcdEFGH28ij}",
            ),
            (r"${stringZ/\//-}", "foo-bar/baz"),
            (r"${stringZ//\//-}", "foo-bar-baz"),
            ("${stringZ#*/}", "bar/baz"),
            ("${stringZ##*/}", "baz"),
            ("${stringZ%/*}", "foo/bar"),
            ("${stringZ%%/*}", "foo"),
            ("${stringZ/#foo/x}", "x/bar/baz"),
            ("${stringZ/%baz/x}", "foo/bar/x"),
            (
                "a$$b $x }text http://github.com",
                "a$b $x }text http://github.com",
            ),
        ] {
            assert_eq!(run(input, &v).as_deref(), Ok(want), "{input}");
        }
    }

    /// Nested defaults, the shapes `${VOLSYNC_CLAIM:=${APP}}` and `${A:=${B:=c}}`.
    #[test]
    fn nested_defaults() {
        let app = [("APP", "web")];
        assert_eq!(run("${CLAIM:=${APP}}", &app).as_deref(), Ok("web"));
        assert_eq!(
            run("${CLAIM:=${APP}}", &[("APP", "web"), ("CLAIM", "data")]).as_deref(),
            Ok("data")
        );
        assert_eq!(run("${A:=${B:=c}}-x", &[]).as_deref(), Ok("c-x"));
        assert_eq!(run("${A:-${B:-}}", &[]).as_deref(), Ok(""));
        // Set but empty takes the default too (`toDefault`), for every default operator.
        for op in [":=", ":-", "=", ":?", ":+"] {
            assert_eq!(
                run(&format!("${{A{op}d}}"), &[("A", "")]).as_deref(),
                Ok("d")
            );
        }
        // Arguments are evaluated first: an unset variable in an unused default still fails.
        assert_eq!(run("${A:=${B}}", &[("A", "a")]), not_set("B"));
        // An unknown one in an unused default does not matter.
        assert_eq!(
            run("${A:=${B}}", &[("A", "a"), ("B", "?")]).as_deref(),
            Ok("a")
        );
        assert_eq!(
            run("${A:=${B}}", &[("B", "?")]),
            Err(Failed::Eval(Unresolved::Unknown("B".into())))
        );
    }

    #[test]
    fn strict_mode_fails_on_unset_variables_without_default() {
        assert_eq!(run("${X}", &[]), not_set("X"));
        assert_eq!(run("${X^^}", &[]), not_set("X"));
        assert_eq!(run("${#X}", &[]), not_set("X"));
        assert_eq!(run("${X:=}", &[]).as_deref(), Ok(""));
    }

    #[test]
    fn parse_errors_fail() {
        for (input, err, message) in [
            (
                "${A",
                ParseError::MissingClosingBrace,
                "missing closing brace",
            ),
            (
                "${A-x}",
                ParseError::MissingClosingBrace,
                "missing closing brace",
            ),
            (
                "${}",
                ParseError::VariableName,
                "unable to parse variable name",
            ),
            (
                "x ${",
                ParseError::VariableName,
                "unable to parse variable name",
            ),
            (
                "${A:=x",
                ParseError::FuncSubstitution,
                "unable to parse substitution within function",
            ),
        ] {
            assert_eq!(
                run(input, &[("A", "a")]),
                Err(Failed::Parse(err)),
                "{input}"
            );
            assert_eq!(err.to_string(), message);
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = "${A:=".repeat(10_000) + &"}".repeat(10_000);
        assert_eq!(parse(&deep), Err(ParseError::BadSubstitution));
        let fine = "${A:=".repeat(10) + "x" + &"}".repeat(10);
        assert_eq!(run(&fine, &[]).as_deref(), Ok("x"));
        let long = "a".repeat(5_000);
        let star = [("S", long.as_str())];
        assert_eq!(run("${S#*****b}", &star).as_deref(), Ok(long.as_str()));
        assert_eq!(run("${S##*a}", &star).as_deref(), Ok(""));
        assert_eq!(
            run("${S:1:9223372036854775807}", &star).as_deref(),
            Ok(&long[1..])
        );
    }

    #[test]
    fn globs_as_path_match() {
        for (p, n, want) in [
            ("a*c", "abbbc", true),
            ("a?c", "abc", true),
            ("a[b-d]c", "acc", true),
            ("a[^b]c", "abc", false),
            ("a\\*", "a*", true),
            ("a\\*", "ab", false),
            ("*.yaml", "x.yml", false),
        ] {
            assert_eq!(glob(p, n), want, "{p} {n}");
        }
    }

    /// The byte scans say what the plain searches say, on every arrangement of the bytes
    /// they look at.
    #[test]
    fn dollar_scans_are_their_plain_definitions() {
        let parts = ["$", "{", "}", "a", "é"];
        for a in parts {
            for b in parts {
                for c in parts {
                    let s = format!("{a}{b}{c}");
                    assert_eq!(opens_variable(&s), s.contains("${"), "{s:?}");
                    assert_eq!(
                        may_change(&s),
                        s.contains("${") || s.contains("$$"),
                        "{s:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn needed_variables_include_nested_ones() {
        let mut out = BTreeSet::new();
        for s in [
            "${A} ${B:=x} ${C:-${D}} ${E:=${F:=y}} $${G} ${H^^} $I",
            "${J-x}",
        ] {
            needed(s, &mut out);
        }
        assert_eq!(out.into_iter().collect::<Vec<_>>(), ["A", "D", "H"]);
    }
}
