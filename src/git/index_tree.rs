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
use std::collections::HashSet;
use std::rc::Rc;

/// A directory of the index, serialized and hashed.
struct Dir {
    oid: Oid,
    body: Vec<u8>,
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
    let mut entries: Vec<(Vec<u8>, u32, Oid)> = Vec::with_capacity(index.len());
    for e in index.iter() {
        let stage = (e.flags >> 12) & 3;
        if stage != 0 || e.flags_extended & super::INTENT_TO_ADD != 0 || is_tree(e.mode) {
            return Ok(None);
        }
        entries.push((e.path, canon_mode(e.mode), e.id));
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let flat: Vec<(&[u8], u32, Oid)> = entries.iter().map(|(p, m, o)| (&p[..], *m, *o)).collect();
    let Some(root) = build(&flat) else {
        return Ok(None);
    };
    write(odb, &mut TreeStore::new(), &root, base)?;
    Ok(Some(root.oid))
}

/// The directory holding `entries` (paths relative to it, sorted as bytes, so each subdirectory's entries are
/// contiguous).
fn build(entries: &[(&[u8], u32, Oid)]) -> Option<Dir> {
    let mut list: Vec<Entry> = Vec::new();
    let mut subdirs = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let (path, mode, oid) = entries[i];
        let Some(k) = memchr::memchr(b'/', path) else {
            if path.is_empty() {
                return None;
            }
            list.push(Entry {
                name: path.into(),
                mode,
                oid,
            });
            i += 1;
            continue;
        };
        let name = &path[..k];
        if name.is_empty() {
            return None;
        }
        let inside = |p: &[u8]| p.len() > k && p[..k] == *name && p[k] == b'/';
        let end = i + entries[i..].iter().take_while(|e| inside(e.0)).count();
        let inner: Vec<(&[u8], u32, Oid)> = entries[i..end]
            .iter()
            .map(|&(p, m, o)| (&p[k + 1..], m, o))
            .collect();
        let dir = build(&inner)?;
        let name: Rc<[u8]> = name.into();
        list.push(Entry {
            name: name.clone(),
            mode: TREE,
            oid: dir.oid,
        });
        subdirs.push((name, dir));
        i = end;
    }
    let mut names = HashSet::with_capacity(list.len());
    if !list.iter().all(|e| names.insert(e.name.clone())) {
        return None;
    }
    list.sort_by(|a, b| git_order(&a.name, a.mode, &b.name, b.mode));
    let body = serialize(&list);
    Some(Dir {
        oid: object_id("tree", &body),
        body,
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
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let blob = |s: &str| repo.blob(s.as_bytes()).unwrap();
        let (a, b, c) = (blob("a\n"), blob("b\n"), blob("c\n"));
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
