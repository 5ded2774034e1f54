//! Every YAML file of both revisions parsed once, in parallel, before either is built. A file
//! that `apply` moved is the same text in both revisions (a rename), so it is parsed once;
//! the builders clone what they load, and the last of the loads the trees can make takes
//! the documents instead (so a file is held once more than it is used, never twice). Only
//! successful parses are kept: a file that does not parse is parsed again where it is
//! loaded, so that its error names the path it is read at.

use std::sync::Mutex;

use foldhash::{HashMap, HashMapExt};
use serde_json::Value;

use super::source::FileTree;
use crate::yaml::{self, Text};

#[derive(Default)]
pub struct Parsed {
    docs: HashMap<Text, Mutex<Shared>>,
}

struct Shared {
    docs: Option<Vec<Value>>,
    /// How many paths of the trees hold this text: loads left before the last one.
    uses: usize,
}

impl Parsed {
    pub fn of(trees: &[&FileTree]) -> Parsed {
        let mut uses: HashMap<&Text, usize> = HashMap::new();
        for text in trees.iter().flat_map(|t| t.texts()) {
            *uses.entry(text).or_default() += 1;
        }
        let texts: Vec<(&Text, usize)> = uses.into_iter().collect();
        let docs = crate::par::map(&texts, |(text, _)| yaml::parse_all("", text).ok());
        Parsed {
            docs: texts
                .into_iter()
                .zip(docs)
                .filter_map(|((text, uses), docs)| {
                    let shared = Shared {
                        docs: Some(docs?),
                        uses,
                    };
                    Some((text.clone(), Mutex::new(shared)))
                })
                .collect(),
        }
    }

    /// The documents of `text`, when it parsed (and was not handed out for good already).
    pub fn take(&self, text: &Text) -> Option<Vec<Value>> {
        let mut shared = self
            .docs
            .get(text)?
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        shared.uses = shared.uses.saturating_sub(1);
        if shared.uses == 0 {
            shared.docs.take()
        } else {
            shared.docs.clone()
        }
    }
}
