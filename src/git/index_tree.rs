//! The tree of an index, as `git write-tree` makes it, written only where it differs from a tree the object
//! database already holds (the commit the index was staged on).
//!
//! libgit2's `git_index_write_tree` writes every directory its cached-tree extension does not vouch for, then
//! reads the whole new tree back from the object database, every subtree of it, to rebuild that cache: a fifth of
//! a `--continue` on git.git's 4,000-file tree, most of it the read-back. Here every directory of the index is
//! serialized and hashed in memory (plain SHA-1 over a few hundred KB), and only the trees whose ids differ from
//! the base's at the same path are written; the base is read only along those paths.

use super::tree_build::{canon_mode, git_order, is_tree, serialize, Entry, TreeStore, TREE};
use super::{object_id, Context, Error};
use git2::{Index, ObjectType, Odb, Oid};
use std::rc::Rc;

/// A directory of the index, serialized and hashed.
struct Dir {
    oid: Oid,
    body: Vec<u8>,
    /// Its entries, in git's tree order.
    entries: Rc<[Entry]>,
    /// Its subdirectories, by name.
    subdirs: Vec<(Rc<[u8]>, Dir)>,
}

/// Writes `index`'s entries as a tree into `odb` and returns its id; trees equal to `base`'s at the same path are
/// taken as present, the others are written. `None`, with nothing written, when the index holds what git's
/// write-tree treats otherwise than as a plain entry (an unmerged stage, an intent-to-add or a sparse-directory
/// entry) or paths that make no tree (an empty component, a file and a directory of one name): the caller asks
/// libgit2 then.
pub fn write_index_tree(
    odb: &Odb<'_>,
    index: &Index,
    base: Option<Oid>,
) -> Result<Option<Oid>, Error> {
    let Some(root) = index_root(index, None) else {
        return Ok(None);
    };
    write(odb, &mut TreeStore::new(), &root, base)?;
    Ok(Some(root.oid))
}

/// What the index changes against a tree (`git diff --cached` without rename detection): the paths whose stage-0
/// entry differs from the tree's (added, deleted, modified or changed in type, never a directory), sorted, and the
/// unmerged paths (any stage of 1–3), in index order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct IndexChanges {
    /// Stage-0 entries against the tree's (an unmerged path the tree has shows here as deleted too).
    pub staged: Vec<super::Change>,
    /// Paths with conflict stages.
    pub unmerged: Vec<String>,
}

/// [`IndexChanges`] of `index` against tree `base`, found as [`write_index_tree`] finds the index's tree: every
/// directory of the index serialized and hashed in memory (plain SHA-1), and `base` read only where a directory's
/// id differs from its own. libgit2's tree-to-index diff reads every tree of `base` whole, which on git.git
/// (~300 trees, 4,000 files) was a tenth of a `--skip`'s instructions. `None` when the index holds what
/// [`write_index_tree`] leaves to libgit2 (intent-to-add or sparse-directory entries, paths that make no tree);
/// unmerged entries are listed and left out of the comparison.
pub fn index_changes(
    odb: &Odb<'_>,
    index: &Index,
    base: Oid,
) -> Result<Option<IndexChanges>, Error> {
    let mut unmerged: Vec<String> = Vec::new();
    let Some(root) = index_root(index, Some(&mut unmerged)) else {
        return Ok(None);
    };
    let mut store = TreeStore::new();
    fn hold(store: &mut TreeStore, dir: &Dir) {
        store.insert(dir.oid, dir.entries.clone());
        for (_, sub) in &dir.subdirs {
            hold(store, sub);
        }
    }
    hold(&mut store, &root);
    Ok(Some(IndexChanges {
        staged: store.changes(odb, base, root.oid)?,
        unmerged,
    }))
}

/// The root directory of `index`'s stage-0 entries, hashed in memory. With `unmerged`, paths with conflict
/// stages are listed there (in index order) and left out; without it, a conflict stage gives `None`, as do
/// intent-to-add and sparse-directory entries and paths that make no tree.
fn index_root(index: &Index, mut unmerged: Option<&mut Vec<String>>) -> Option<Dir> {
    let mut entries: Vec<(Vec<u8>, u32, Oid)> = Vec::with_capacity(index.len());
    for e in index.iter() {
        if (e.flags >> 12) & 3 != 0 {
            let list = unmerged.as_deref_mut()?;
            let path = String::from_utf8_lossy(&e.path).into_owned();
            if list.last() != Some(&path) {
                list.push(path);
            }
            continue;
        }
        if e.flags_extended & super::INTENT_TO_ADD != 0 || is_tree(e.mode) {
            return None;
        }
        entries.push((e.path, canon_mode(e.mode), e.id));
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let flat: Vec<(&[u8], u32, Oid)> = entries.iter().map(|(p, m, o)| (&p[..], *m, *o)).collect();
    build(&flat, 0)
}

/// The directory holding `entries`, whose paths (sorted as bytes, so each subdirectory's entries are contiguous)
/// go on after their first `skip` bytes, the directory's own path and `/`.
///
/// Byte order of whole paths is git's tree order of each directory's entries (a directory `x` sorts where its
/// paths `x/…` do, as git sorts it, as if named `x/`), so the entries come in order; only a file and a directory
/// of one name break it, and make no tree.
fn build(entries: &[(&[u8], u32, Oid)], skip: usize) -> Option<Dir> {
    let mut list: Vec<Entry> = Vec::new();
    let mut subdirs = Vec::new();
    // This directory's file names so far, in byte order, for the check of a directory of the same name.
    let mut files: Vec<&[u8]> = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let (full, mode, oid) = entries[i];
        let path = full.get(skip..)?;
        let Some(k) = memchr::memchr(b'/', path) else {
            if path.is_empty() || files.last() == Some(&path) {
                return None;
            }
            files.push(path);
            list.push(Entry {
                name: path.into(),
                mode,
                oid,
            });
            i += 1;
            continue;
        };
        let name = &path[..k];
        if name.is_empty() || files.binary_search(&name).is_ok() {
            return None;
        }
        let inside = |p: &[u8]| {
            let p = &p[skip..];
            p.len() > k && p[..k] == *name && p[k] == b'/'
        };
        let end = i + entries[i..].iter().take_while(|e| inside(e.0)).count();
        let dir = build(&entries[i..end], skip + k + 1)?;
        let name: Rc<[u8]> = name.into();
        list.push(Entry {
            name: name.clone(),
            mode: TREE,
            oid: dir.oid,
        });
        subdirs.push((name, dir));
        i = end;
    }
    debug_assert!(list
        .windows(2)
        .all(|w| git_order(&w[0].name, w[0].mode, &w[1].name, w[1].mode).is_lt()));
    let body = serialize(&list);
    Some(Dir {
        oid: object_id("tree", &body),
        body,
        entries: list.into(),
        subdirs,
    })
}

/// Writes `dir` and its subdirectories unless `base` (the tree at the same path, if any) has the same id.
fn write(odb: &Odb<'_>, store: &mut TreeStore, dir: &Dir, base: Option<Oid>) -> Result<(), Error> {
    if base == Some(dir.oid) {
        return Ok(());
    }
    let base_entries = base.map(|b| store.load(odb, b)).transpose()?;
    for (name, sub) in &dir.subdirs {
        let sub_base = base_entries.as_ref().and_then(|entries| {
            entries
                .iter()
                .find(|e| e.name == *name && is_tree(e.mode))
                .map(|e| e.oid)
        });
        write(odb, store, sub, sub_base)?;
    }
    let written = odb
        .write(ObjectType::Tree, &dir.body)
        .context_git(|| format!("writing tree {}", dir.oid))?;
    if written != dir.oid {
        return Err(Error::Git {
            context: format!("writing tree {}", dir.oid),
            source: git2::Error::from_str(&format!("the object database named it {written}")),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use git2::{IndexEntry, IndexTime, Repository};
    use std::path::Path;

    fn entry(path: &str, mode: u32, id: Oid) -> IndexEntry {
        IndexEntry {
            ctime: IndexTime::new(0, 0),
            mtime: IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode,
            uid: 0,
            gid: 0,
            file_size: 0,
            id,
            flags: path.len().min(0xfff) as u16,
            flags_extended: 0,
            path: path.as_bytes().to_vec(),
        }
    }

    /// A new repository (kept while the directory lives) holding the blobs `a\n`, `b\n` and `c\n`.
    fn repo_with_three_blobs() -> (tempfile::TempDir, Repository, [Oid; 3]) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let blobs = ["a\n", "b\n", "c\n"].map(|s| repo.blob(s.as_bytes()).unwrap());
        (dir, repo, blobs)
    }

    /// The index's tree as libgit2 writes it, and as [`write_index_tree`] does over `base`: equal, and readable.
    fn both(repo: &Repository, index: &mut Index, base: Option<Oid>) -> Oid {
        let odb = repo.odb().unwrap();
        let ours = write_index_tree(&odb, index, base).unwrap().unwrap();
        let theirs = index.write_tree_to(repo).unwrap();
        assert_eq!(ours, theirs);
        repo.find_tree(ours).unwrap();
        ours
    }

    #[test]
    fn equals_libgit2s_tree_in_git_order_and_writes_what_the_base_lacks() {
        let (_dir, repo, [a, b, c]) = repo_with_three_blobs();
        let mut index = Index::new().unwrap();
        // Names around `/` in byte order ('-' and '.' sort before it), a directory and a file sharing a prefix,
        // every mode git writes, and a gitlink whose commit the repository does not have.
        for (path, mode, id) in [
            ("a", 0o100644, a),
            ("a-b", 0o100755, b),
            ("a.c", 0o120000, c),
            ("ab/x", 0o100644, a),
            ("ab/y/z", 0o100644, b),
            ("ab.txt", 0o100644, c),
            ("lib/sub", 0o160000, a),
            ("lib/x.c", 0o100644, b),
            ("z", 0o100644, c),
        ] {
            index.add(&entry(path, mode, id)).unwrap();
        }
        let base = both(&repo, &mut index, None);
        // One file changed deep down: only the trees on its path are new.
        index.add(&entry("ab/y/z", 0o100644, c)).unwrap();
        index.remove_path(std::path::Path::new("a-b")).unwrap();
        index.add(&entry("new/dir/f", 0o100644, a)).unwrap();
        let next = both(&repo, &mut index, Some(base));
        assert_ne!(next, base);
        // Unchanged: the base itself.
        let odb = repo.odb().unwrap();
        assert_eq!(
            write_index_tree(&odb, &index, Some(next)).unwrap(),
            Some(next)
        );
    }

    /// [`index_changes`] against libgit2's tree-to-index diff, path by path and kind by kind: edits, adds and
    /// deletes deep and shallow, a mode change, a file becoming a directory and back, a gitlink, conflicts on a
    /// path HEAD has and on one it lacks.
    #[test]
    fn index_changes_are_libgit2s_diff() {
        let (_dir, repo, [a, b, c]) = repo_with_three_blobs();
        let mut index = Index::new().unwrap();
        let head_entries = [
            ("a", 0o100644, a),
            ("c", 0o100644, a),
            ("d/x", 0o100644, a),
            ("d/y", 0o100644, b),
            ("d/deep/z", 0o100644, c),
            ("e", 0o100644, a),
            ("f/g", 0o100644, b),
            ("keep/k", 0o100644, c),
            ("mod", 0o160000, a),
        ];
        for (path, mode, id) in head_entries {
            index.add(&entry(path, mode, id)).unwrap();
        }
        let head = index.write_tree_to(&repo).unwrap();
        let head_tree = repo.find_tree(head).unwrap();
        let odb = repo.odb().unwrap();
        let none = index_changes(&odb, &index, head).unwrap().unwrap();
        assert_eq!(none, IndexChanges::default());

        index.add(&entry("a", 0o100755, a)).unwrap();
        index.add(&entry("d/x", 0o100644, c)).unwrap();
        index.remove_path(Path::new("d/y")).unwrap();
        index.add(&entry("d/deep/new", 0o100644, a)).unwrap();
        index.remove_path(Path::new("e")).unwrap();
        index.add(&entry("e/z", 0o100644, a)).unwrap();
        index.remove_path(Path::new("f/g")).unwrap();
        index.add(&entry("f", 0o100644, c)).unwrap();
        index.add(&entry("mod", 0o160000, b)).unwrap();
        index.add(&entry("n/new", 0o100644, b)).unwrap();
        index.remove_path(Path::new("c")).unwrap();
        for (path, stage) in [("c", 1), ("c", 2), ("c", 3), ("q", 2), ("q", 3)] {
            let mut e = entry(path, 0o100644, b);
            e.flags |= stage << 12;
            index.add(&e).unwrap();
        }
        let ours = index_changes(&odb, &index, head).unwrap().unwrap();
        let theirs = repo
            .diff_tree_to_index(Some(&head_tree), Some(&index), None)
            .unwrap();
        let mut expected: Vec<(String, &str)> = Vec::new();
        let mut conflicted = Vec::new();
        for d in theirs.deltas() {
            let path = d.new_file().path().or(d.old_file().path()).unwrap();
            let path = path.to_str().unwrap().to_owned();
            match d.status() {
                git2::Delta::Added => expected.push((path, "added")),
                git2::Delta::Deleted => expected.push((path, "deleted")),
                git2::Delta::Modified | git2::Delta::Typechange => {
                    expected.push((path, "modified"))
                }
                git2::Delta::Conflicted => conflicted.push(path),
                other => panic!("{path}: {other:?}"),
            }
        }
        let found: Vec<(String, &str)> = ours
            .staged
            .iter()
            .filter(|c| !ours.unmerged.contains(&c.path))
            .map(|c| {
                let kind = match (c.old, c.new) {
                    (None, _) => "added",
                    (_, None) => "deleted",
                    _ => "modified",
                };
                (c.path.clone(), kind)
            })
            .collect();
        expected.sort();
        let mut found_sorted = found.clone();
        found_sorted.sort();
        assert_eq!(found_sorted, expected);
        assert_eq!(ours.unmerged, conflicted);
        assert_eq!(ours.unmerged, ["c", "q"]);
        // The unmerged path HEAD has also shows as deleted from the stage-0 tree.
        assert!(ours.staged.iter().any(|c| c.path == "c" && c.new.is_none()));
        assert!(ours.staged.iter().all(|c| c.path != "keep/k"));
    }

    #[test]
    fn leaves_unmerged_and_intent_to_add_entries_to_libgit2() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let a = repo.blob(b"a\n").unwrap();
        let odb = repo.odb().unwrap();
        let mut index = Index::new().unwrap();
        index.add(&entry("f", 0o100644, a)).unwrap();
        let mut conflicted = entry("g", 0o100644, a);
        conflicted.flags |= 2 << 12;
        index.add(&conflicted).unwrap();
        assert_eq!(write_index_tree(&odb, &index, None).unwrap(), None);
        let mut index = Index::new().unwrap();
        let mut added = entry("h", 0o100644, a);
        added.flags |= 0x4000;
        added.flags_extended = super::super::INTENT_TO_ADD;
        index.add(&added).unwrap();
        assert_eq!(write_index_tree(&odb, &index, None).unwrap(), None);
    }
}
