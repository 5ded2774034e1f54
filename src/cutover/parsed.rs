//! Every YAML file of both revisions parsed once, in parallel, before either is built. A file
//! that `apply` moved is the same text in both revisions (a rename), so it is parsed once;
//! the builders clone what they load. Only successful parses are kept: a file that does not
//! parse is parsed again where it is loaded, so that its error names the path it is read at.

use std::sync::Arc;

use foldhash::{HashMap, HashSet, HashSetExt};
use serde_json::Value;

use super::source::FileTree;
use crate::yaml::{self, Text};

#[derive(Default)]
pub struct Parsed {
    docs: HashMap<Text, Arc<Vec<Value>>>,
}

impl Parsed {
    pub fn of(trees: &[&FileTree]) -> Parsed {
        let mut seen: HashSet<&Text> = HashSet::new();
        let texts: Vec<&Text> = trees
            .iter()
            .flat_map(|t| t.texts())
            .filter(|text| seen.insert(*text))
            .collect();
        let docs = crate::par::map(&texts, |text| yaml::parse_all("", text).ok());
        Parsed {
            docs: texts
                .into_iter()
                .zip(docs)
                .filter_map(|(text, docs)| Some((text.clone(), Arc::new(docs?))))
                .collect(),
        }
    }

    /// The documents of `text`, when it parsed.
    pub fn get(&self, text: &Text) -> Option<&[Value]> {
        self.docs.get(text).map(|d| d.as_slice())
    }
}
