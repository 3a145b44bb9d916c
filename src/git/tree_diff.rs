//! Which paths differ between two trees, descending only into subtrees whose ids differ.
//!
//! libgit2's `git_diff_tree_to_tree` walks every entry of both trees (30,000 in the benchmark repository) even
//! when one file changed; a backport run diffs two trees per listed commit, so that walk dominated the run. Here
//! equal subtree ids are skipped, as git's own `diff_tree` does, and a one-file patch costs the handful of trees
//! on its path.

use super::{Context, Error};
use git2::{ObjectType, Oid, Repository, Tree};
use std::collections::HashMap;

/// A blob, link or gitlink as a tree entry has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Side {
    /// The object.
    pub oid: Oid,
    /// Its raw file mode (0o100644, 0o100755, 0o120000, 0o160000).
    pub mode: u32,
}

/// One changed path (never a directory): absent on one side for adds and deletes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// `/`-separated path from the root.
    pub path: String,
    /// Before.
    pub old: Option<Side>,
    /// After.
    pub new: Option<Side>,
}

const TREE: u32 = 0o040000;

fn is_tree(mode: u32) -> bool {
    mode & 0o170000 == TREE
}

/// Every non-directory path that differs between `old` and `new` (either may be absent = empty), sorted by path.
pub fn tree_changes(
    repo: &Repository,
    old: Option<&Tree<'_>>,
    new: Option<&Tree<'_>>,
) -> Result<Vec<Change>, Error> {
    let mut out = Vec::new();
    diff(repo, "", old.map(Tree::id), new.map(Tree::id), &mut out)?;
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

fn entries(repo: &Repository, tree: Option<Oid>) -> Result<Vec<(String, Side)>, Error> {
    let Some(oid) = tree else {
        return Ok(Vec::new());
    };
    let tree = repo
        .find_tree(oid)
        .context_git(|| format!("reading tree {oid}"))?;
    Ok(tree
        .iter()
        .map(|e| {
            let name = String::from_utf8_lossy(e.name_bytes()).into_owned();
            let mode = e.filemode() as u32;
            let mode = if e.kind() == Some(ObjectType::Tree) {
                TREE
            } else {
                mode
            };
            (name, Side { oid: e.id(), mode })
        })
        .collect())
}

fn diff(
    repo: &Repository,
    prefix: &str,
    old: Option<Oid>,
    new: Option<Oid>,
    out: &mut Vec<Change>,
) -> Result<(), Error> {
    if old == new {
        return Ok(());
    }
    let old_entries = entries(repo, old)?;
    let new_entries = entries(repo, new)?;
    let mut old_by_name: HashMap<&str, Side> =
        old_entries.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    let join = |name: &str| {
        if prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{prefix}/{name}")
        }
    };
    for (name, n) in &new_entries {
        let o = old_by_name.remove(name.as_str());
        if o == Some(*n) {
            continue;
        }
        let path = join(name);
        let (o_tree, n_tree) = (
            o.filter(|s| is_tree(s.mode)).map(|s| s.oid),
            is_tree(n.mode).then_some(n.oid),
        );
        if o_tree.is_some() || n_tree.is_some() {
            diff(repo, &path, o_tree, n_tree, out)?;
        }
        let o_file = o.filter(|s| !is_tree(s.mode));
        let n_file = (!is_tree(n.mode)).then_some(*n);
        if o_file.is_some() || n_file.is_some() {
            out.push(Change {
                path,
                old: o_file,
                new: n_file,
            });
        }
    }
    for (name, o) in old_by_name {
        let path = join(name);
        if is_tree(o.mode) {
            diff(repo, &path, Some(o.oid), None, out)?;
        } else {
            out.push(Change {
                path,
                old: Some(o),
                new: None,
            });
        }
    }
    Ok(())
}

/// Every object reachable from tree `new` but not through an identical entry of tree `old`: the trees on changed
/// paths and the blobs that differ. Complete by construction (anything new hangs off a changed path), so a run
/// packs exactly these after writing into memory.
pub fn new_objects(
    repo: &Repository,
    old: Option<Oid>,
    new: Oid,
    out: &mut Vec<Oid>,
) -> Result<(), Error> {
    if old == Some(new) {
        return Ok(());
    }
    out.push(new);
    let old_entries = entries(repo, old)?;
    let old_by_name: HashMap<&str, Side> =
        old_entries.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    for (name, n) in entries(repo, Some(new))? {
        let o = old_by_name.get(name.as_str()).copied();
        if o == Some(n) || n.mode == 0o160000 {
            continue;
        }
        if is_tree(n.mode) {
            new_objects(
                repo,
                o.filter(|s| is_tree(s.mode)).map(|s| s.oid),
                n.oid,
                out,
            )?;
        } else {
            out.push(n.oid);
        }
    }
    Ok(())
}
