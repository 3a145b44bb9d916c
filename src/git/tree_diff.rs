//! Which paths differ between two trees, descending only into subtrees whose ids differ.
//!
//! libgit2's `git_diff_tree_to_tree` walks every entry of both trees (30,000 in the benchmark repository) even
//! when one file changed; a backport run diffs two trees per listed commit, so that walk dominated the run. Here
//! equal subtree ids are skipped, as git's own `diff_tree` does, and a one-file patch costs the handful of trees
//! on its path.

use super::{Context, Error};
use git2::{Oid, Repository, Tree, TreeEntry};
use std::cmp::Ordering;

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

/// The entries of tree `oid` (none for an absent tree), borrowed from libgit2's parsed tree.
fn open(repo: &Repository, oid: Option<Oid>) -> Result<Option<Tree<'_>>, Error> {
    oid.map(|oid| {
        repo.find_tree(oid)
            .context_git(|| format!("reading tree {oid}"))
    })
    .transpose()
}

fn side(e: &TreeEntry<'_>) -> Side {
    Side {
        oid: e.id(),
        mode: e.filemode() as u32,
    }
}

fn entry_is_tree(e: &TreeEntry<'_>) -> bool {
    is_tree(e.filemode() as u32)
}

/// git's tree order (`base_name_compare`): names compare as bytes, a tree's name as if it ended in `/`. A file
/// and a directory of the same name are therefore different entries, which is what a diff wants (a file
/// replaced by a directory is a delete and an add).
fn git_order(a: &TreeEntry<'_>, b: &TreeEntry<'_>) -> Ordering {
    let (an, bn) = (a.name_bytes(), b.name_bytes());
    let n = an.len().min(bn.len());
    an[..n].cmp(&bn[..n]).then_with(|| {
        let end = |name: &[u8], tree: bool| match name.get(n) {
            Some(&c) => c,
            None if tree => b'/',
            None => 0,
        };
        end(an, entry_is_tree(a)).cmp(&end(bn, entry_is_tree(b)))
    })
}

/// Walks two trees' entries side by side in git order, as `diff_tree` does: no maps, no names copied except for
/// the paths that differ (building a map of owned names per tree costs 11% of a real-history run).
fn walk_pair<'t>(
    old: Option<&'t Tree<'_>>,
    new: Option<&'t Tree<'_>>,
    mut each: impl FnMut(Option<TreeEntry<'t>>, Option<TreeEntry<'t>>) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut o = old.into_iter().flat_map(|t| t.iter()).peekable();
    let mut n = new.into_iter().flat_map(|t| t.iter()).peekable();
    loop {
        let order = match (o.peek(), n.peek()) {
            (None, None) => return Ok(()),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(a), Some(b)) => git_order(a, b),
        };
        match order {
            Ordering::Less => each(o.next(), None)?,
            Ordering::Greater => each(None, n.next())?,
            Ordering::Equal => each(o.next(), n.next())?,
        }
    }
}

fn join(prefix: &str, name: &[u8]) -> String {
    let name = String::from_utf8_lossy(name);
    if prefix.is_empty() {
        name.into_owned()
    } else {
        format!("{prefix}/{name}")
    }
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
    let (old_tree, new_tree) = (open(repo, old)?, open(repo, new)?);
    walk_pair(old_tree.as_ref(), new_tree.as_ref(), |o, n| {
        let (os, ns) = (o.as_ref().map(side), n.as_ref().map(side));
        if os == ns {
            return Ok(());
        }
        let name = o.as_ref().or(n.as_ref()).map(TreeEntry::name_bytes);
        let path = join(prefix, name.expect("walk_pair yields at least one entry"));
        // Same key in git order means both are trees or neither is.
        let tree = |s: Option<Side>| s.filter(|s| is_tree(s.mode)).map(|s| s.oid);
        if tree(os).is_some() || tree(ns).is_some() {
            diff(repo, &path, tree(os), tree(ns), out)
        } else {
            out.push(Change {
                path,
                old: os,
                new: ns,
            });
            Ok(())
        }
    })
}

/// Every object reachable from tree `new` but not through an identical entry of tree `old`: the trees on changed
/// paths and the blobs that differ, each with the object it replaces at the same path (a delta base for the
/// pack). Complete by construction (anything new hangs off a changed path). A run lists its new objects as its
/// `TreeStore` builds them; this walk over libgit2's trees is the independent check of that list in the tests.
pub fn new_objects(
    repo: &Repository,
    old: Option<Oid>,
    new: Oid,
    out: &mut Vec<(Oid, Option<Oid>)>,
) -> Result<(), Error> {
    if old == Some(new) {
        return Ok(());
    }
    out.push((new, old));
    let (old_tree, new_tree) = (open(repo, old)?, open(repo, Some(new))?);
    walk_pair(old_tree.as_ref(), new_tree.as_ref(), |o, n| {
        let Some(n) = n else { return Ok(()) };
        let ns = side(&n);
        if o.as_ref().map(side) == Some(ns) || ns.mode == 0o160000 {
            return Ok(());
        }
        if is_tree(ns.mode) {
            new_objects(repo, o.map(|o| o.id()), ns.oid, out)
        } else {
            out.push((ns.oid, o.map(|o| o.id())));
            Ok(())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use git2::build::TreeUpdateBuilder;
    use git2::FileMode;

    fn tree_with<'r>(
        repo: &'r Repository,
        base: &Tree<'_>,
        files: &[(&str, Option<&str>)],
    ) -> Tree<'r> {
        let mut b = TreeUpdateBuilder::new();
        for (path, content) in files {
            match content {
                Some(c) => b.upsert(*path, repo.blob(c.as_bytes()).unwrap(), FileMode::Blob),
                None => b.remove(*path),
            };
        }
        repo.find_tree(b.create_updated(repo, base).unwrap())
            .unwrap()
    }

    #[test]
    fn lists_changed_files_and_new_objects_only() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let empty = repo
            .find_tree(repo.treebuilder(None).unwrap().write().unwrap())
            .unwrap();
        let old = tree_with(
            &repo,
            &empty,
            &[
                ("a/x", Some("1")),
                ("a/y", Some("2")),
                ("b/z", Some("3")),
                ("f", Some("4")),
                // Sorts between file `f` and directory `f/` in git's order: the walk must not pair them wrongly.
                ("f.c", Some("7")),
            ],
        );
        // Modify a/x, delete b/z (and so b/), replace file f by a directory f/g, add c.
        let new = tree_with(
            &repo,
            &old,
            &[
                ("a/x", Some("1'")),
                ("b/z", None),
                ("f", None),
                ("c", Some("5")),
            ],
        );
        let new = tree_with(&repo, &new, &[("f/g", Some("6"))]);
        let changes = tree_changes(&repo, Some(&old), Some(&new)).unwrap();
        let summary: Vec<(&str, bool, bool)> = changes
            .iter()
            .map(|c| (c.path.as_str(), c.old.is_some(), c.new.is_some()))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("a/x", true, true),
                ("b/z", true, false),
                ("c", false, true),
                ("f", true, false),
                ("f/g", false, true)
            ]
        );
        // New objects: the root, a/ and f/ trees, and the blobs of a/x, c and f/g; nothing under unchanged paths.
        let mut objects = Vec::new();
        new_objects(&repo, Some(old.id()), new.id(), &mut objects).unwrap();
        let mut objects: Vec<Oid> = objects.into_iter().map(|(oid, _)| oid).collect();
        let blob = |s: &str| repo.blob(s.as_bytes()).unwrap();
        let mut expected = vec![
            new.id(),
            new.get_path(std::path::Path::new("a")).unwrap().id(),
            new.get_path(std::path::Path::new("f")).unwrap().id(),
            blob("1'"),
            blob("5"),
            blob("6"),
        ];
        expected.sort();
        objects.sort();
        assert_eq!(objects, expected);
        assert!(tree_changes(&repo, Some(&new), Some(&new))
            .unwrap()
            .is_empty());
    }
}
