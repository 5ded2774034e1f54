//! `fluxwave schema`: the draft-07 JSON Schemas that editors (yaml-language-server) use to
//! complete and check catalog files and `fluxwave.yaml`. Generated from the very types that
//! read those files, so the schema cannot drift from what fluxwave accepts.

use std::io::Write;

use super::report::{io, Outcome};
use crate::error::Result;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// A ServiceDefinition (catalog/<svc>.yaml)
    Service,
    /// fluxwave.yaml
    Config,
}

/// The schema text: pretty JSON with a final newline, as committed under `schemas/`.
pub fn text(kind: Kind) -> String {
    let schema = match kind {
        Kind::Service => crate::catalog::schema(),
        Kind::Config => crate::config::schema(),
    };
    let mut s = serde_json::to_string_pretty(&schema).unwrap_or_default();
    s.push('\n');
    s
}

pub fn run(kind: Kind, out: &mut impl Write) -> Result<Outcome> {
    out.write_all(text(kind).as_bytes()).map_err(io)?;
    Ok(Outcome::Clean)
}
