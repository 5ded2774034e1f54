//! `fluxwave init [--catalog]`: writes a first fluxwave.yaml (and drafts the catalog) from
//! what the repository already says, and prints each setting with the file that made it so.
//! An existing fluxwave.yaml is never replaced (exit 2, nothing written), nor an existing
//! catalog file (skipped, and said). Everything is drafted and read back before the first
//! write; each file is written atomically, never through a link, catalog files first and
//! fluxwave.yaml last, so a run cut short is completed by running init again.

use std::io::Write;
use std::path::Path;

use super::report::{io, Outcome};
use crate::error::{Error, Result};
use crate::fs::write;
use crate::init;
use crate::yaml::Text;

pub fn run(root: &Path, catalog: bool, out: &mut impl Write) -> Result<Outcome> {
    let file = init::CONFIG_FILE;
    if root.join(file).symlink_metadata().is_ok() {
        return Err(Error::Usage(format!(
            "{file} exists; init writes nothing over it (nothing was written). Edit it, or move it aside and run `fluxwave init` again to draft a new one"
        )));
    }
    let draft = init::draft(root, catalog)?;
    // Read back as every command will read it: init never writes a file they refuse.
    init::reads_back(&draft.config)?;
    let mut errors = Vec::new();
    for s in &draft.services {
        if let Err(e) = crate::catalog::parse(&s.file, &s.name, Text::new(s.text.clone())) {
            errors.extend(e);
        }
    }
    if !errors.is_empty() {
        return Err(Error::Input(errors));
    }

    // The catalog files to write: those that do not exist under either name.
    let mut writes: Vec<(String, &str)> = Vec::new();
    let mut skipped = Vec::new();
    for s in &draft.services {
        let stem = s.file.strip_suffix(".yaml").unwrap_or(&s.file);
        let exists = [s.file.clone(), format!("{stem}.yml")]
            .iter()
            .any(|f| root.join(f).symlink_metadata().is_ok());
        if exists {
            skipped.push(s);
        } else {
            writes.push((s.file.clone(), &s.text));
        }
    }
    writes.push((file.to_string(), &draft.config));
    let mut checked = std::collections::HashSet::new();
    for (rel, _) in &writes {
        write::refuse_links(root, rel, true, &mut checked)?;
    }
    let lock = crate::fs::lock::acquire(root, "init")?;
    let paths: Vec<std::path::PathBuf> = writes.iter().map(|(rel, _)| root.join(rel)).collect();
    write::probe_writable(
        paths.iter().filter_map(|p| p.parent()),
        paths.iter().map(std::path::PathBuf::as_path),
    )?;
    // Every write is made before the report is printed: a reader that stops reading
    // (`| head`) does not cut the run short.
    let mut done = Vec::new();
    for ((rel, text), path) in writes.iter().zip(&paths) {
        // Checked again at the moment of writing: a file made meanwhile is kept.
        if path.symlink_metadata().is_ok() {
            done.push(format!("  kept {rel}: it appeared while init ran"));
            continue;
        }
        write::write_atomic(path, text)?;
        done.push(match draft.services.iter().find(|s| &s.file == rel) {
            Some(s) => format!("  wrote {rel}: {}", s.why),
            None => format!("wrote {rel}"),
        });
    }
    drop(lock);

    writeln!(out, "found:").map_err(io)?;
    if draft.found.is_empty() {
        writeln!(out, "  nothing fluxwave.yaml needs to set").map_err(io)?;
    }
    for f in &draft.found {
        writeln!(out, "  {}: {}\n      ({})", f.setting, f.value, f.why).map_err(io)?;
    }
    if !draft.notes.is_empty() {
        writeln!(out, "not set:").map_err(io)?;
        for n in &draft.notes {
            writeln!(out, "  {n}").map_err(io)?;
        }
    }
    if catalog {
        writeln!(out, "catalog:").map_err(io)?;
        for s in &skipped {
            writeln!(
                out,
                "  kept {}: it exists, and init writes nothing over it",
                s.file
            )
            .map_err(io)?;
        }
    }
    for line in done {
        writeln!(out, "{line}").map_err(io)?;
    }
    Ok(Outcome::Clean)
}
