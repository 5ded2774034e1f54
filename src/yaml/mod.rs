//! One place where YAML is read and written. Reading (`read`) goes through the
//! plain-block-subset reader (`crate::plain`) where it can, and through serde-saphyr with its
//! default budgets everywhere else (alias bombs and absurd nesting fail fast, in bounded time
//! and memory); serde-saphyr's errors become located `SourceError`s in fluxwave's words
//! (`explain`), and values can keep where they were written (`spanned`). Writing (`emit`) is a
//! small block-style emitter whose output is deterministic to the byte and quotes every
//! scalar a YAML 1.1 reader would misread.
//!
//! Every manifest file read (`parse_all`) hands the values of its Secrets to the run's
//! process-wide registry (`redact::remember_documents`), on purpose: no caller can forget to,
//! so no output of the run prints a value it has read, whichever command prints it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

pub mod edit;
mod emit;
mod explain;
mod read;
mod spanned;

pub use emit::{emit, emit_for_reading, emit_with_comments, scalar};
pub use explain::brief_error;
#[cfg(test)]
pub(crate) use read::manifest_options;
pub use read::{
    parse, parse_all, parse_kustomization, parse_reporting_all, parse_value, patch_documents,
};
pub use spanned::{span_of, spanned, Spanned};

/// A parsed file's text, shared by every error that points into it.
pub type Text = Arc<String>;

/// What is derived from texts, kept by text: the trees a run reads share each file's text
/// (one `Text` per git blob), so what is derived from a file that many trees hold (the
/// revisions of a history) is made once. A text is known by its allocation, which its entry
/// keeps alive so that no other text takes its address; an equal text in another allocation
/// is derived again, which is only slower.
pub struct PerText<T>(Mutex<HashMap<usize, (Text, Arc<T>), foldhash::fast::FixedState>>);

impl<T> PerText<T> {
    pub const fn new() -> PerText<T> {
        PerText(Mutex::new(HashMap::with_hasher(
            foldhash::fast::FixedState::with_seed(0),
        )))
    }

    /// What `make` derives from `text`, made on the first call for this text.
    pub fn get(&self, text: &Text, make: impl FnOnce() -> T) -> Arc<T> {
        let key = Arc::as_ptr(text) as usize;
        let known = || self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, made)) = known().get(&key) {
            return made.clone();
        }
        // Made without the lock: builds of two revisions run side by side.
        let made = Arc::new(make());
        known()
            .entry(key)
            .or_insert_with(|| (text.clone(), made))
            .1
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text's derivation is made once however many trees hold the text, and again for an
    /// equal text in another allocation.
    #[test]
    fn what_is_derived_from_a_text_is_made_once_per_text() {
        let made = std::cell::Cell::new(0);
        let count = |t: &Text| {
            made.set(made.get() + 1);
            t.len()
        };
        let memo = PerText::new();
        let a: Text = std::sync::Arc::new("kind: A\n".into());
        let b: Text = std::sync::Arc::new("kind: A\n".into());
        assert_eq!(*memo.get(&a, || count(&a)), 8);
        assert_eq!(*memo.get(&a.clone(), || count(&a)), 8);
        assert_eq!(made.get(), 1);
        assert_eq!(*memo.get(&b, || count(&b)), 8);
        assert_eq!(made.get(), 2);
    }
}
