//! Trees built in memory: a run's picks read and rewrite the same few trees (the root, `lib/`, `src/`) again and
//! again, so each tree is parsed once, kept across the run's picks, and each new tree is serialized and hashed
//! here (plain SHA-1, as [`super::MemoryObjects`] does for blobs) and handed to the run's pack.
//!
//! libgit2's `git_tree_create_updated` (git2's `TreeUpdateBuilder`) re-reads every tree on an updated path from
//! the object database, copies its entries into a treebuilder, sorts them and writes the result through the odb
//! with collision-detecting SHA-1, once per pick: ~12% of a real-history run. The format is git's
//! (`tree.c`, `fsck.c`): entries `<octal mode> <name>\0<20-byte id>`, sorted by name as bytes with a directory's name compared as if it ended in `/`, modes written as git
//! writes them (`40000`, `100644`, `100755`, `120000`, `160000`), with the modes canonicalized on read as git's
//! `canon_mode` does.
//!
//! Not owned here: which paths change (the pick decides), writing the pack ([`super::write_pack`]).

use super::{Context, Error, MemoryObjects, Side};
use git2::{ObjectType, Odb, Oid};
use sha1::{Digest, Sha1};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;

pub(super) const TREE: u32 = 0o040000;

pub(super) fn is_tree(mode: u32) -> bool {
    mode & 0o170000 == TREE
}

/// git's `canon_mode`: the mode a tree entry means, whatever bits an old tool wrote.
pub(super) fn canon_mode(mode: u32) -> u32 {
    match mode & 0o170000 {
        0o100000 if mode & 0o100 != 0 => 0o100755,
        0o100000 => 0o100644,
        0o120000 => 0o120000,
        TREE => TREE,
        _ => 0o160000,
    }
}

#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub(super) name: Rc<[u8]>,
    pub(super) mode: u32,
    pub(super) oid: Oid,
}

/// git's tree order (`base_name_compare`): a directory's name sorts as if it ended in `/`.
pub(super) fn git_order(a: &[u8], a_mode: u32, b: &[u8], b_mode: u32) -> Ordering {
    let n = a.len().min(b.len());
    a[..n].cmp(&b[..n]).then_with(|| {
        let end = |name: &[u8], mode: u32| match name.get(n) {
            Some(&c) => c,
            None if is_tree(mode) => b'/',
            None => 0,
        };
        end(a, a_mode).cmp(&end(b, b_mode))
    })
}

/// The parsed trees of a run, by id, and the ones it created.
#[derive(Debug, Default)]
pub struct TreeStore {
    trees: HashMap<Oid, Rc<[Entry]>>,
}

/// One change to a tree: the entry at `path` (`/`-separated, never a directory) set to `side`, or removed.
pub type TreeEdit = (String, Option<Side>);

impl TreeStore {
    /// An empty store.
    pub fn new() -> TreeStore {
        TreeStore::default()
    }

    /// Forgets every parsed tree (they are read again on demand).
    pub fn clear(&mut self) {
        self.trees.clear();
    }

    /// Holds the entries of tree `oid`, made in memory (never read from the object database).
    pub(super) fn insert(&mut self, oid: Oid, entries: Rc<[Entry]>) {
        self.trees.insert(oid, entries);
    }

    pub(super) fn load(&mut self, odb: &Odb<'_>, oid: Oid) -> Result<Rc<[Entry]>, Error> {
        if let Some(t) = self.trees.get(&oid) {
            return Ok(t.clone());
        }
        let object = odb
            .read(oid)
            .context_git(|| format!("reading tree {oid}"))?;
        if object.kind() != ObjectType::Tree {
            return Err(Error::Git {
                context: format!("reading tree {oid}"),
                source: git2::Error::from_str(&format!("{oid} is a {}", object.kind())),
            });
        }
        let entries: Rc<[Entry]> = parse(object.data())
            .ok_or_else(|| Error::Git {
                context: format!("reading tree {oid}"),
                source: git2::Error::from_str("malformed tree object"),
            })?
            .into();
        self.trees.insert(oid, entries.clone());
        Ok(entries)
    }

    /// The entry at `path` under tree `root`, if there is one and it is not a directory.
    pub fn lookup(&mut self, odb: &Odb<'_>, root: Oid, path: &str) -> Result<Option<Side>, Error> {
        let mut tree = root;
        let mut parts = path.split('/').peekable();
        while let Some(part) = parts.next() {
            let entries = self.load(odb, tree)?;
            let Some(e) = entries.iter().find(|e| &*e.name == part.as_bytes()) else {
                return Ok(None);
            };
            match (parts.peek().is_some(), is_tree(e.mode)) {
                (true, true) => tree = e.oid,
                (true, false) => return Ok(None),
                (false, true) => return Ok(None),
                (false, false) => {
                    return Ok(Some(Side {
                        oid: e.oid,
                        mode: e.mode,
                    }))
                }
            }
        }
        Ok(None)
    }

    /// Whether `path` names a directory under tree `root`.
    pub fn has_dir(&mut self, odb: &Odb<'_>, root: Oid, path: &str) -> Result<bool, Error> {
        let mut tree = root;
        for part in path.split('/') {
            let entries = self.load(odb, tree)?;
            match entries.iter().find(|e| &*e.name == part.as_bytes()) {
                Some(e) if is_tree(e.mode) => tree = e.oid,
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Every non-directory path that differs between trees `old` and `new` (either may be a tree the run
    /// created), descending only into subtrees whose ids differ; sorted by path.
    pub fn changes(
        &mut self,
        odb: &Odb<'_>,
        old: Oid,
        new: Oid,
    ) -> Result<Vec<super::Change>, Error> {
        let mut out = Vec::new();
        self.diff(odb, "", Some(old), Some(new), &mut out)?;
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    fn diff(
        &mut self,
        odb: &Odb<'_>,
        prefix: &str,
        old: Option<Oid>,
        new: Option<Oid>,
        out: &mut Vec<super::Change>,
    ) -> Result<(), Error> {
        if old == new {
            return Ok(());
        }
        let entries = |store: &mut TreeStore, oid: Option<Oid>| -> Result<Rc<[Entry]>, Error> {
            match oid {
                Some(oid) => store.load(odb, oid),
                None => Ok(Rc::from(Vec::new())),
            }
        };
        let (a, b) = (entries(self, old)?, entries(self, new)?);
        let mut names: std::collections::BTreeMap<&[u8], (Option<&Entry>, Option<&Entry>)> =
            std::collections::BTreeMap::new();
        for e in a.iter() {
            names.entry(&e.name).or_default().0 = Some(e);
        }
        for e in b.iter() {
            names.entry(&e.name).or_default().1 = Some(e);
        }
        for (name, (x, y)) in names {
            if let (Some(x), Some(y)) = (x, y) {
                if x.oid == y.oid && x.mode == y.mode {
                    continue;
                }
            }
            let path = format!("{prefix}{}", String::from_utf8_lossy(name));
            let split = |e: Option<&Entry>| match e {
                Some(e) if is_tree(e.mode) => (Some(e.oid), None),
                Some(e) => (
                    None,
                    Some(Side {
                        oid: e.oid,
                        mode: e.mode,
                    }),
                ),
                None => (None, None),
            };
            let ((xt, xf), (yt, yf)) = (split(x), split(y));
            if xf.is_some() || yf.is_some() {
                out.push(super::Change {
                    path: path.clone(),
                    old: xf,
                    new: yf,
                });
            }
            if xt.is_some() || yt.is_some() {
                self.diff(odb, &format!("{path}/"), xt, yt, out)?;
            }
        }
        Ok(())
    }

    /// Applies `edits` to tree `root` and returns the new root's id. Every tree this creates goes into `objects`,
    /// and every new object of the result (trees and the blobs the edits name) is appended to `created` with the
    /// object it replaced at the same path, for the pack's delta bases, as [`super::write_pack`] takes them.
    /// Trees left empty are dropped, as git drops them; a root left empty is the empty tree.
    pub fn update(
        &mut self,
        odb: &Odb<'_>,
        root: Oid,
        edits: &[TreeEdit],
        objects: &mut MemoryObjects,
        created: &mut Vec<(Oid, Option<Oid>)>,
    ) -> Result<Oid, Error> {
        let mut rel: Vec<(&[u8], Option<Side>)> =
            edits.iter().map(|(p, s)| (p.as_bytes(), *s)).collect();
        let mut out = Build {
            store: self,
            odb,
            objects,
            created,
        };
        match out.apply(Some(root), &mut rel)? {
            Some(oid) => Ok(oid),
            None => Ok(out.write(Vec::new(), Some(root))),
        }
    }
}

/// One `update`'s borrowed context.
struct Build<'a, 'o> {
    store: &'a mut TreeStore,
    odb: &'a Odb<'o>,
    objects: &'a mut MemoryObjects,
    created: &'a mut Vec<(Oid, Option<Oid>)>,
}

impl Build<'_, '_> {
    /// The tree `tree` (absent: empty) with `edits` (paths relative to it) applied; `None` when it ends empty.
    fn apply(
        &mut self,
        tree: Option<Oid>,
        edits: &mut [(&[u8], Option<Side>)],
    ) -> Result<Option<Oid>, Error> {
        let mut entries: Vec<Entry> = match tree {
            Some(oid) => self.store.load(self.odb, oid)?.to_vec(),
            None => Vec::new(),
        };
        // Removals first, then directories, then files: a file replaced by a directory (or the reverse) comes as
        // a removal and an addition of the same name, and the name must be free before it is taken.
        for (path, side) in edits.iter() {
            if side.is_none() && !path.contains(&b'/') {
                entries.retain(|e| &*e.name != *path || is_tree(e.mode));
            }
        }
        edits.sort_by(|a, b| first(a.0).cmp(first(b.0)));
        let mut i = 0;
        while i < edits.len() {
            let dir = first(edits[i].0);
            let j = i + edits[i..].partition_point(|e| first(e.0) == dir);
            if edits[i..j].iter().any(|e| e.0.len() > dir.len()) {
                // Edits below `dir` (the group may also hold a file edit of the same name, handled below).
                let mut sub: Vec<(&[u8], Option<Side>)> = edits[i..j]
                    .iter()
                    .filter(|e| e.0.len() > dir.len())
                    .map(|e| (&e.0[dir.len() + 1..], e.1))
                    .collect();
                let at = entries
                    .iter()
                    .position(|e| &*e.name == dir && is_tree(e.mode));
                let old = at.map(|k| entries[k].oid);
                let new = self.apply(old, &mut sub)?;
                set(&mut entries, at, dir, new.map(|oid| (TREE, oid)));
            }
            i = j;
        }
        for (path, side) in edits.iter() {
            let Some(side) = side else { continue };
            if path.contains(&b'/') {
                continue;
            }
            let at = entries.iter().position(|e| &*e.name == *path);
            let old = at.map(|k| &entries[k]);
            let mode = canon_mode(side.mode);
            if old.is_some_and(|o| o.oid == side.oid && o.mode == mode) {
                continue;
            }
            if mode != 0o160000 {
                self.created
                    .push((side.oid, old.filter(|o| !is_tree(o.mode)).map(|o| o.oid)));
            }
            set(&mut entries, at, path, Some((mode, side.oid)));
        }
        if entries.is_empty() {
            return Ok(None);
        }
        Ok(Some(self.write(entries, tree)))
    }

    /// Serializes and hashes `entries` (in git order) as a tree replacing `old`, and keeps it.
    fn write(&mut self, entries: Vec<Entry>, old: Option<Oid>) -> Oid {
        let bytes = serialize(&entries);
        let oid = object_id("tree", &bytes);
        if Some(oid) != old && !self.store.trees.contains_key(&oid) {
            self.objects.insert_object(ObjectType::Tree, oid, bytes);
            self.created.push((oid, old));
            self.store.trees.insert(oid, entries.into());
        }
        oid
    }
}

/// The first component of a relative path.
fn first(path: &[u8]) -> &[u8] {
    match memchr::memchr(b'/', path) {
        Some(k) => &path[..k],
        None => path,
    }
}

/// Sets the entry at index `at` (or a new one named `name`) to `to`, or removes it; keeps git order.
fn set(entries: &mut Vec<Entry>, at: Option<usize>, name: &[u8], to: Option<(u32, Oid)>) {
    match (at, to) {
        (Some(k), None) => {
            entries.remove(k);
        }
        (None, None) => {}
        (Some(k), Some((mode, oid))) if is_tree(mode) == is_tree(entries[k].mode) => {
            entries[k].mode = mode;
            entries[k].oid = oid;
        }
        (at, Some((mode, oid))) => {
            let name: Rc<[u8]> = match at {
                Some(k) => entries.remove(k).name,
                None => name.into(),
            };
            let k = entries
                .partition_point(|e| git_order(&e.name, e.mode, &name, mode) == Ordering::Less);
            entries.insert(k, Entry { name, mode, oid });
        }
    }
}

/// A tree object's body from its entries, as git writes it.
pub(super) fn serialize(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.iter().map(|e| e.name.len() + 28).sum());
    for e in entries {
        out.extend_from_slice(mode_text(e.mode));
        out.extend_from_slice(&e.name);
        out.push(0);
        out.extend_from_slice(e.oid.as_bytes());
    }
    out
}

/// A canonical mode as git writes it in a tree, in octal without leading zeros, with the space after it.
fn mode_text(mode: u32) -> &'static [u8] {
    match mode {
        TREE => b"40000 ",
        0o100755 => b"100755 ",
        0o120000 => b"120000 ",
        0o160000 => b"160000 ",
        _ => b"100644 ",
    }
}

/// Parses a tree object's body; `None` when it is malformed.
fn parse(mut data: &[u8]) -> Option<Vec<Entry>> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let sp = memchr::memchr(b' ', data)?;
        let mode = std::str::from_utf8(&data[..sp]).ok()?;
        let mode = u32::from_str_radix(mode, 8).ok()?;
        let rest = &data[sp + 1..];
        let nul = memchr::memchr(0, rest)?;
        let name = &rest[..nul];
        let oid = Oid::from_bytes(rest.get(nul + 1..nul + 21)?).ok()?;
        out.push(Entry {
            name: name.into(),
            mode: canon_mode(mode),
            oid,
        });
        data = &rest[nul + 21..];
    }
    Some(out)
}

/// git's id of an object of type `kind` (`"tree"`, `"commit"`, `"blob"`) with body `bytes`.
pub fn object_id(kind: &str, bytes: &[u8]) -> Oid {
    let mut h = Sha1::new();
    h.update(format!("{kind} {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    Oid::from_bytes(&h.finalize()).expect("a SHA-1 digest is 20 bytes")
}

/// A commit object's body as libgit2's `git_commit_create` writes it (and git's `commit_tree`, for the fields bport
/// sets): `tree`, `parent`s, `author`, `committer`, a blank line and the message as given, no `encoding` header.
pub fn commit_bytes(
    tree: Oid,
    parents: &[Oid],
    author: &git2::Signature<'_>,
    committer: &git2::Signature<'_>,
    message: &str,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 256);
    out.extend_from_slice(format!("tree {tree}\n").as_bytes());
    for p in parents {
        out.extend_from_slice(format!("parent {p}\n").as_bytes());
    }
    signature_line(&mut out, "author", author);
    signature_line(&mut out, "committer", committer);
    out.push(b'\n');
    out.extend_from_slice(message.as_bytes());
    out
}

/// `<header> <name> <<email>> <seconds> <±hhmm>\n`, as libgit2's `git_signature__writebuf` formats it (a `-0000`
/// offset keeps its sign).
fn signature_line(out: &mut Vec<u8>, header: &str, sig: &git2::Signature<'_>) {
    let when = sig.when();
    let offset = when.offset_minutes();
    let sign = if offset < 0 || when.sign() == '-' {
        '-'
    } else {
        '+'
    };
    let offset = offset.unsigned_abs();
    out.extend_from_slice(header.as_bytes());
    out.push(b' ');
    out.extend_from_slice(sig.name_bytes());
    out.extend_from_slice(b" <");
    out.extend_from_slice(sig.email_bytes());
    // libgit2 prints the time with `%u` of a 32-bit cast.
    out.extend_from_slice(
        format!(
            "> {} {sign}{:02}{:02}\n",
            when.seconds() as u32,
            offset / 60,
            offset % 60
        )
        .as_bytes(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use git2::build::TreeUpdateBuilder;
    use git2::{FileMode, Repository};

    fn file_mode(mode: u32) -> FileMode {
        match mode {
            0o100755 => FileMode::BlobExecutable,
            0o120000 => FileMode::Link,
            0o160000 => FileMode::Commit,
            _ => FileMode::Blob,
        }
    }

    fn side(oid: Oid, mode: u32) -> Option<Side> {
        Some(Side { oid, mode })
    }

    /// A tree built by libgit2 from `(path, oid, mode)`.
    fn libgit2_tree(repo: &Repository, files: &[(&str, Oid, FileMode)]) -> Oid {
        let empty = repo.treebuilder(None).unwrap().write().unwrap();
        let mut b = TreeUpdateBuilder::new();
        for (path, oid, mode) in files {
            b.upsert(*path, *oid, *mode);
        }
        b.create_updated(repo, &repo.find_tree(empty).unwrap())
            .unwrap()
    }

    #[test]
    fn trees_and_new_objects_equal_libgit2s_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let blob = |s: &str| repo.blob(s.as_bytes()).unwrap();
        let commit_id = Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        // Names that sort differently as directories: `a.c` < `a/` < `a0`, and `f` (a file) < `f.x` < `f/`.
        let base = libgit2_tree(
            &repo,
            &[
                ("a/x", blob("x"), FileMode::Blob),
                ("a/y", blob("y"), FileMode::Blob),
                ("a.c", blob("ac"), FileMode::Blob),
                ("ab/k", blob("k"), FileMode::Blob),
                ("d/e/f", blob("def"), FileMode::Blob),
                ("f", blob("f"), FileMode::Blob),
                ("f.x", blob("fx"), FileMode::Blob),
                ("link", blob("target"), FileMode::Link),
                ("run.sh", blob("#!/bin/sh"), FileMode::BlobExecutable),
                ("sub", commit_id, FileMode::Commit),
            ],
        );
        let edits: Vec<TreeEdit> = vec![
            ("a/x".into(), side(blob("x2"), 0o100644)),
            ("a/z/new".into(), side(blob("new"), 0o100755)),
            ("a0".into(), side(blob("a0"), 0o100644)),
            // d/e/f was the only file under d/: both trees go.
            ("d/e/f".into(), None),
            // A file replaced by a directory of the same name.
            ("f".into(), None),
            ("f/g".into(), side(blob("g"), 0o100644)),
            ("run.sh".into(), side(blob("#!/bin/sh"), 0o100644)),
            ("sub".into(), side(blob("x"), 0o160000)),
            ("link2".into(), side(blob("elsewhere"), 0o120000)),
            // Unchanged: no new object.
            ("ab/k".into(), side(blob("k"), 0o100644)),
        ];
        // libgit2 refuses a file replaced by a directory in one update ("D/F conflict when updating tree"), which
        // a pick may do: it gets the removals first, then the rest.
        let mut expected = base;
        for removals in [true, false] {
            let mut theirs = TreeUpdateBuilder::new();
            for (path, s) in edits.iter().filter(|e| e.1.is_none() == removals) {
                match s {
                    Some(s) => theirs.upsert(path.as_str(), s.oid, file_mode(s.mode)),
                    None => theirs.remove(path.as_str()),
                };
            }
            expected = theirs
                .create_updated(&repo, &repo.find_tree(expected).unwrap())
                .unwrap();
        }

        let odb = repo.odb().unwrap();
        let mut store = TreeStore::new();
        let mut objects = MemoryObjects::new();
        let mut created = Vec::new();
        let ours = store
            .update(&odb, base, &edits, &mut objects, &mut created)
            .unwrap();
        assert_eq!(ours, expected);
        let tree = repo.find_tree(expected).unwrap();
        assert!(tree.get_name("d").is_none(), "empty trees are dropped");
        // Every tree we made is byte for byte libgit2's.
        let mut new_trees = 0;
        for (oid, _) in &created {
            if let Some((ObjectType::Tree, bytes)) = objects.get_object(*oid) {
                assert_eq!(odb.read(*oid).unwrap().data(), bytes, "tree {oid}");
                new_trees += 1;
            }
        }
        assert_eq!(new_trees, 4, "the root, a/, a/z/ and f/");
        // The same new objects as walking libgit2's result against the base finds.
        let mut walked = Vec::new();
        crate::git::new_objects(&repo, Some(base), expected, &mut walked).unwrap();
        let sorted = |v: &[(Oid, Option<Oid>)]| {
            let mut v = v.to_vec();
            v.sort();
            v.dedup();
            v
        };
        assert_eq!(sorted(&created), sorted(&walked));

        // Reading back through the store: files, and nothing for directories or missing paths.
        assert_eq!(
            store.lookup(&odb, ours, "a/z/new").unwrap(),
            side(blob("new"), 0o100755)
        );
        assert_eq!(
            store.lookup(&odb, ours, "sub").unwrap(),
            side(blob("x"), 0o160000)
        );
        assert_eq!(store.lookup(&odb, ours, "a/z").unwrap(), None);
        assert_eq!(store.lookup(&odb, ours, "f/g/h").unwrap(), None);
        assert_eq!(
            store.lookup(&odb, base, "d/e/f").unwrap(),
            side(blob("def"), 0o100644)
        );

        // Removing everything leaves git's empty tree.
        let all: Vec<TreeEdit> = ["a.c", "ab/k", "f.x", "link", "run.sh", "sub"]
            .iter()
            .map(|p| (p.to_string(), None))
            .chain(
                ["a/x", "a/y", "d/e/f", "f"]
                    .iter()
                    .map(|p| (p.to_string(), None)),
            )
            .collect();
        let empty = store
            .update(&odb, base, &all, &mut objects, &mut created)
            .unwrap();
        assert_eq!(empty, repo.treebuilder(None).unwrap().write().unwrap());
    }

    #[test]
    fn commits_equal_libgit2s_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let author = git2::Signature::new(
            "Ann Ä",
            "ann@example.com",
            &git2::Time::new(1_700_000_000, -330),
        )
        .unwrap();
        let committer = git2::Signature::new(
            "Bob",
            "bob@example.com",
            &git2::Time::new(1_600_000_000, 60),
        )
        .unwrap();
        let parent = repo
            .commit(None, &author, &committer, "root\n", &tree, &[])
            .unwrap();
        let parent = repo.find_commit(parent).unwrap();
        for message in [
            "subject\n\nbody\n\n(cherry picked from commit 1234)\n",
            "no newline",
        ] {
            let theirs = repo
                .commit_create_buffer(&author, &committer, message, &tree, &[&parent])
                .unwrap();
            let ours = commit_bytes(tree.id(), &[parent.id()], &author, &committer, message);
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&theirs)
            );
            assert_eq!(
                object_id("commit", &ours),
                Oid::hash_object(ObjectType::Commit, &theirs).unwrap()
            );
        }
    }
}
