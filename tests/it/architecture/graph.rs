//! The import graph of one folder (module) of the crate: its children — every `.rs` file but the facade
//! (`mod.rs`, or the `x.rs` beside a folder `x/`) and every subfolder, each subfolder taken whole — and which
//! child names which, by any path [`super::scan`] resolves. The facade declares and re-exports the children, so
//! it is no node; a child naming the facade's own items (`super::Error`) is no edge.

use super::scan::SourceFile;
use std::collections::{BTreeMap, BTreeSet};

pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// The graph of the children of `folder` among `files`. Every child is a key, with no edges when it names no
/// sibling.
pub fn children_graph(files: &[SourceFile], folder: &[String]) -> Graph {
    let mut graph = Graph::new();
    for file in files {
        if file.module.len() > folder.len() && file.module.starts_with(folder) {
            graph.entry(file.module[folder.len()].clone()).or_default();
        }
    }
    for file in files {
        if file.module.len() <= folder.len() || !file.module.starts_with(folder) {
            continue;
        }
        let from = &file.module[folder.len()];
        for named in file.named() {
            let Some(to) = named
                .path
                .get(folder.len())
                .filter(|_| named.path.starts_with(folder))
            else {
                continue;
            };
            if to != from && graph.contains_key(to) {
                graph.get_mut(from).unwrap().insert(to.clone());
            }
        }
    }
    graph
}

/// A cycle of `graph`, as the modules along it with the first repeated at the end (`a → b → a`), or `None`.
pub fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    fn visit<'g>(
        node: &'g str,
        graph: &'g Graph,
        marks: &mut BTreeMap<&'g str, Mark>,
        path: &mut Vec<&'g str>,
    ) -> Option<Vec<String>> {
        marks.insert(node, Mark::OnPath);
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            match marks.get(next.as_str()).copied().unwrap_or(Mark::New) {
                Mark::OnPath => {
                    let from = path.iter().position(|n| *n == next).expect("on the path");
                    let mut cycle: Vec<String> =
                        path[from..].iter().map(|n| n.to_string()).collect();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Mark::New => {
                    if let Some(cycle) = visit(next, graph, marks, path) {
                        return Some(cycle);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks.insert(node, Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in graph.keys() {
        if marks.get(node.as_str()).copied().unwrap_or(Mark::New) == Mark::New {
            if let Some(cycle) = visit(node, graph, &mut marks, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}
