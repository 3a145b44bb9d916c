//! One cherry-pick in memory: three-way merge of only the paths the commit touches, onto a tree.
//!
//! ```text
//!   parent tree ──diff──▶ commit tree        (the patch: a handful of deltas)
//!        │ base               │ theirs
//!        ▼                    ▼
//!   tip tree ─── per touched path: ours ──▶ merged blob / conflict
//!        └── the run's TreeStore rewrites only the trees on those paths ──▶ new tree
//! ```
//!
//! Nothing here touches the worktree, the index or a ref; the new trees and merged blobs stay in the run's
//! [`PickCache`] until the run writes its pack (binary merges go through libgit2, into the repository's object
//! database: a mempack during `apply`). Conflicts are returned as data for the one place that stops a run.

use super::attributes::{Attributes, Driver, ExternalMerge, PathAttributes};
use super::state::Favor;
use super::Error;
use crate::git::Context;
use crate::git::{Candidate, DirRenames, RenameSettings};
use git2::{Commit, FileMode, Odb, Oid, Repository, Tree};
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

pub use crate::git::Side;

/// How a path conflicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConflictKind {
    /// Both sides changed the content.
    Content,
    /// Both sides added the path with different content.
    AddAdd,
    /// The branch changed it, the commit deletes it.
    ModifyDelete,
    /// The branch deleted it, the commit changes it.
    DeleteModify,
    /// Both sides renamed it away, to different paths: only the base is staged, under the old path.
    BothDeleted,
    /// Only the branch's side is staged (the branch's name of a path both sides renamed differently).
    AddedByUs,
    /// Only the commit's side is staged (the commit's name of a path both sides renamed differently).
    AddedByThem,
}

/// One conflicted path, with everything needed to write it into the index and worktree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// Repository-relative path (`/`-separated).
    pub path: String,
    /// How it conflicts.
    pub kind: ConflictKind,
    /// Stage 1.
    pub base: Option<Side>,
    /// Stage 2 (the branch).
    pub ours: Option<Side>,
    /// Stage 3 (the picked commit).
    pub theirs: Option<Side>,
    /// What the worktree file gets: the text with conflict markers, or one side's content.
    pub worktree: Option<Vec<u8>>,
    /// The worktree file's mode.
    pub mode: u32,
}

/// The result of a pick.
#[derive(Debug)]
pub struct Picked {
    /// The new tree: the tip with every cleanly merged path updated (conflicted paths keep the branch's version).
    pub tree: Oid,
    /// Conflicted paths, in diff order; empty when the pick is clean.
    pub conflicts: Vec<Conflict>,
}

/// Labels and style for conflict markers, as git's cherry-pick writes them.
#[derive(Clone, Debug)]
pub struct Markers {
    /// `HEAD`.
    pub ours: String,
    /// `<sha7> (<subject>)`.
    pub theirs: String,
    /// `parent of <sha7> (<subject>)` (shown in diff3/zdiff3 style).
    pub base: String,
    /// `merge.conflictStyle`.
    pub style: ConflictStyle,
    /// Added to the marker size: git lengthens the markers of a merge nested in a rename conflict by one, so
    /// that the outer conflict's markers stay distinguishable.
    pub extra_size: usize,
}

/// `merge.conflictStyle`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConflictStyle {
    /// `merge` (two sides).
    #[default]
    Merge,
    /// `diff3` (with the base).
    Diff3,
    /// `zdiff3`.
    Zdiff3,
}

impl ConflictStyle {
    /// Reads `merge.conflictStyle` from the repository's config.
    pub fn from_config(repo: &Repository) -> ConflictStyle {
        let value = repo
            .config()
            .ok()
            .and_then(|c| c.get_string("merge.conflictstyle").ok());
        match value.as_deref() {
            Some("diff3") => ConflictStyle::Diff3,
            Some("zdiff3") => ConflictStyle::Zdiff3,
            _ => ConflictStyle::Merge,
        }
    }
}

impl Markers {
    /// The labels git writes when a rename puts the three versions at different paths: each followed by
    /// `:<path>` (base, branch, commit).
    pub fn with_paths(&self, base: &str, ours: &str, theirs: &str) -> Markers {
        Markers {
            ours: format!("{}:{ours}", self.ours),
            theirs: format!("{}:{theirs}", self.theirs),
            base: format!("{}:{base}", self.base),
            style: self.style,
            extra_size: self.extra_size,
        }
    }

    /// Labels for picking the commit abbreviated as `short` (git's abbreviation, see [`crate::git::short_id`]), as
    /// git's sequencer builds them.
    pub fn for_commit(short: &str, subject: &str, style: ConflictStyle) -> Markers {
        Markers {
            ours: "HEAD".into(),
            theirs: format!("{short} ({subject})"),
            base: format!("parent of {short} ({subject})"),
            style,
            extra_size: 0,
        }
    }
}

/// What a run's picks keep between picks.
///
/// Contents of blobs the last few picks merged, by id: when consecutive commits of a series edit the same file,
/// each merge's base is the previous commit's version of it and its `ours` the previous merge's result; both
/// were in hand a pick ago, and reading them again meant inflating a delta chain or copying out of the mempack.
///
/// The parsed trees of the branch and the new ones ([`crate::git::TreeStore`]): each pick rewrites the same few
/// trees, parsed once here rather than re-read by libgit2 per pick.
///
/// And what the run created: the merged blobs, new trees and commits ([`crate::git::MemoryObjects`]), hashed and
/// held here, never copied into libgit2's object database, with the list of every new object for the pack.
#[derive(Debug, Default)]
pub struct PickCache {
    blobs: HashMap<Oid, (Rc<[u8]>, u64)>,
    pick: u64,
    written: crate::git::MemoryObjects,
    trees: crate::git::TreeStore,
    created: Vec<(Oid, Option<Oid>)>,
    renames: RenameSettings,
    attributes: Attributes,
    /// The tree the worktree's `.gitattributes` files come from (the branch at the run's start).
    attributes_tree: Option<Oid>,
    /// The tree the current pick merges onto.
    tip: Option<Oid>,
    dir_rename_scans: u64,
    /// Each path's looked-up attributes: the sources do not change while `attributes_tree` stands (a pick that
    /// changes a `.gitattributes` the run merges under is refused before any lookup), and a path is often
    /// merged again by later picks.
    looked_up: HashMap<String, PathAttributes>,
}

/// Entries unused for this many picks are dropped, so the cache holds the files the series is editing now.
const CACHE_PICKS: u64 = 8;

impl PickCache {
    /// An empty cache.
    pub fn new() -> PickCache {
        PickCache::default()
    }

    /// How the run's picks detect renames (git's defaults until set).
    pub fn set_renames(&mut self, renames: RenameSettings) {
        self.renames = renames;
    }

    /// The config and attribute sources the run's merges follow, and the tree whose `.gitattributes` files the
    /// worktree holds (libgit2 reads those).
    pub fn set_attributes(&mut self, attributes: Attributes, worktree_tree: Oid) {
        self.attributes = attributes;
        self.attributes_tree = Some(worktree_tree);
        self.looked_up.clear();
    }

    /// Takes the attributes the worktree holds for the tree `tree` as they are (a dry run, which cannot move
    /// the worktree to the tree a pick merges onto).
    pub fn accept_attributes(&mut self, tree: Oid) {
        self.attributes_tree = Some(tree);
        self.looked_up.clear();
    }

    /// How many picks so far looked for directory renames on the branch (a pick does only when it adds a path
    /// inside a directory the branch no longer has).
    pub fn dir_rename_scans(&self) -> u64 {
        self.dir_rename_scans
    }

    /// Keeps a blob that only the index will name (a stage of a rename conflict), for the pack.
    fn keep_blob(&mut self, content: Vec<u8>) -> Oid {
        let (oid, _) = self.written.insert(content);
        if !self.created.iter().any(|(o, _)| *o == oid) {
            self.created.push((oid, None));
        }
        oid
    }

    fn next_pick(&mut self) {
        self.pick += 1;
        if self.blobs.len() > 64 {
            let now = self.pick;
            self.blobs.retain(|_, (_, used)| now - *used <= CACHE_PICKS);
        }
    }

    /// The objects the run created and holds, for the pack.
    pub fn written(&self) -> &crate::git::MemoryObjects {
        &self.written
    }

    /// Every object the run created so far (whether held here or in libgit2's object database), each with the
    /// object it replaced at the same path: what [`crate::git::write_pack`] takes.
    pub fn created(&self) -> &[(Oid, Option<Oid>)] {
        &self.created
    }

    /// Applies `edits` to the tree `root` (which may be one this cache holds) and returns the new tree, held here
    /// like a pick's: a dry run's assumed resolution of a predicted conflict.
    pub fn edit_tree(
        &mut self,
        repo: &Repository,
        root: Oid,
        edits: &[crate::git::TreeEdit],
    ) -> Result<Oid, Error> {
        let odb = repo.odb().context_git(|| "opening the object database")?;
        Ok(self
            .trees
            .update(&odb, root, edits, &mut self.written, &mut self.created)?)
    }

    /// The entry at `path` in tree `root` (which may be one this cache holds), if it is not a directory.
    pub fn lookup(
        &mut self,
        repo: &Repository,
        root: Oid,
        path: &str,
    ) -> Result<Option<Side>, Error> {
        let odb = repo.odb().context_git(|| "opening the object database")?;
        Ok(self.trees.lookup(&odb, root, path)?)
    }

    /// The non-directory paths whose entries differ between trees `old` and `new` (either may be one this cache
    /// holds), sorted.
    pub fn changed_paths(
        &mut self,
        repo: &Repository,
        old: Oid,
        new: Oid,
    ) -> Result<Vec<String>, Error> {
        let odb = repo.odb().context_git(|| "opening the object database")?;
        Ok(self
            .trees
            .changes(&odb, old, new)?
            .into_iter()
            .map(|c| c.path)
            .collect())
    }

    /// Keeps a commit the run created, for the pack.
    pub fn add_commit(&mut self, bytes: Vec<u8>) -> Oid {
        let oid = crate::git::object_id("commit", &bytes);
        self.written
            .insert_object(git2::ObjectType::Commit, oid, bytes);
        self.created.push((oid, None));
        oid
    }

    /// Forgets the created objects once they are in a pack (or, in a dry run, dropped).
    pub fn clear_written(&mut self) {
        self.written.clear();
        self.created.clear();
    }

    fn get(&mut self, oid: Oid) -> Option<Rc<[u8]>> {
        if let Some(bytes) = self.written.get(oid) {
            return Some(bytes.clone());
        }
        let (bytes, used) = self.blobs.get_mut(&oid)?;
        *used = self.pick;
        Some(bytes.clone())
    }

    fn insert(&mut self, oid: Oid, bytes: Rc<[u8]>) {
        self.blobs.insert(oid, (bytes, self.pick));
    }
}

/// A blob's bytes: from the cache, or borrowed from libgit2's object.
enum Content<'r> {
    Cached(Rc<[u8]>),
    Read(git2::Blob<'r>),
}

impl Content<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Content::Cached(b) => b,
            Content::Read(b) => b.content(),
        }
    }
}

fn content<'r>(
    repo: &'r Repository,
    cache: &mut PickCache,
    oid: Oid,
) -> Result<Content<'r>, Error> {
    Ok(match cache.get(oid) {
        Some(b) => Content::Cached(b),
        None => Content::Read(find_blob(repo, oid)?),
    })
}

/// Picks `commit` (diffed against parent `mainline`, 1-based, default 1) onto the tree `tip`.
pub fn pick(
    repo: &Repository,
    tip: Oid,
    commit: &Commit<'_>,
    mainline: Option<u32>,
    favor: Favor,
    markers: &Markers,
    cache: &mut PickCache,
) -> Result<Picked, Error> {
    cache.next_pick();
    cache.tip = Some(tip);
    let odb = repo.odb().context_git(|| "opening the object database")?;
    let theirs_tree = commit
        .tree()
        .context_git(|| format!("reading the tree of {}", commit.id()))?;
    let parent_index = mainline.map_or(0, |m| m.saturating_sub(1) as usize);
    let base_tree = match commit.parent(parent_index) {
        Ok(p) => Some(
            p.tree()
                .context_git(|| format!("reading the tree of {}", p.id()))?,
        ),
        Err(_) => None,
    };
    let changes = crate::git::tree_changes(repo, base_tree.as_ref(), Some(&theirs_tree))?;
    let renames = find_renames(
        repo,
        &odb,
        tip,
        base_tree.as_ref().map(Tree::id),
        &changes,
        cache,
    )?;
    let run = PickRun {
        repo,
        odb: &odb,
        tip,
        favor,
        markers,
    };
    let mut out = Outcomes::default();
    let mut handled_adds: Vec<&str> = Vec::new();
    for (i, c) in changes.iter().enumerate() {
        if renames.theirs_dst.contains(&i) || handled_adds.contains(&c.path.as_str()) {
            continue;
        }
        if let Some(target) = renames.dirs.get(&i) {
            let ours = run.ours(cache, target)?;
            let outcome = run.merge_moved_by_dir_rename(c, target, ours, cache)?;
            out.record(target.clone(), outcome, ours);
            continue;
        }
        let entry = Entry {
            changes: &changes,
            index: i,
            renames: &renames,
        };
        let Some((target, outcome)) = run.merge_entry(entry, &mut handled_adds, &mut out, cache)?
        else {
            continue;
        };
        let current = run.ours(cache, &target)?;
        out.record(target, outcome, current);
    }
    check_attributes_and_convert(repo, cache, &out.updates, &mut out.conflicts)?;
    let tree = if out.updates.is_empty() {
        tip
    } else {
        let PickCache {
            trees,
            written,
            created,
            ..
        } = cache;
        trees.update(&odb, tip, &out.updates, written, created)?
    };
    Ok(Picked {
        tree,
        conflicts: out.conflicts,
    })
}

/// What every path of one pick merges with: the branch's tree, the strategy option and the conflict labels.
struct PickRun<'a, 'r> {
    repo: &'r Repository,
    odb: &'a Odb<'r>,
    tip: Oid,
    favor: Favor,
    markers: &'a Markers,
}

/// One entry of the commit's patch, with the patch and the renames found in it.
#[derive(Clone, Copy)]
struct Entry<'c> {
    changes: &'c [crate::git::Change],
    index: usize,
    renames: &'c Renames,
}

/// What one pick has decided so far: the branch's tree edits and the conflicts.
#[derive(Default)]
struct Outcomes {
    updates: Vec<crate::git::TreeEdit>,
    conflicts: Vec<Conflict>,
}

impl Outcomes {
    /// Records the outcome of merging `target`, whose entry on the branch is `current`.
    fn record(&mut self, target: String, outcome: PathOutcome, current: Option<Side>) {
        match outcome {
            PathOutcome::Unchanged => {}
            PathOutcome::Set(s) => {
                if current != s {
                    self.updates.push((target, s));
                }
            }
            PathOutcome::Conflict(mut c) => {
                c.path = target;
                self.conflicts.push(c);
            }
        }
    }
}

impl PickRun<'_, '_> {
    /// The branch's entry at `path`.
    fn ours(&self, cache: &mut PickCache, path: &str) -> Result<Option<Side>, Error> {
        Ok(cache.trees.lookup(self.odb, self.tip, path)?)
    }

    fn resolve(
        &self,
        path: &str,
        sides: (Option<Side>, Option<Side>, Option<Side>),
        labels: &Markers,
        cache: &mut PickCache,
    ) -> Result<PathOutcome, Error> {
        resolve_path(self.repo, path, sides, self.favor, labels, cache)
    }

    /// A path the commit adds into a directory the branch renamed, merged at its place in the new name.
    fn merge_moved_by_dir_rename(
        &self,
        c: &crate::git::Change,
        target: &str,
        ours: Option<Side>,
        cache: &mut PickCache,
    ) -> Result<PathOutcome, Error> {
        let path = c.path.as_str();
        let labels = self.markers.with_paths(path, target, path);
        let outcome = self.resolve(target, (None, ours, c.new), &labels, cache)?;
        Ok(match (cache.renames.directories, outcome, c.new) {
            // git's `conflict` setting: the file is where the rename puts it, staged as the commit's
            // alone, so the pick stops for the user to confirm the location.
            (DirRenames::Conflict, PathOutcome::Set(_) | PathOutcome::Unchanged, Some(new)) => {
                let text = if new.mode == GITLINK {
                    None
                } else {
                    Some(content(self.repo, cache, new.oid)?.bytes().to_vec())
                };
                PathOutcome::Conflict(Conflict {
                    path: target.to_owned(),
                    kind: ConflictKind::AddedByThem,
                    base: None,
                    ours: None,
                    theirs: Some(new),
                    worktree: text,
                    mode: new.mode,
                })
            }
            (_, outcome, _) => outcome,
        })
    }

    /// Merges one entry of the patch, following a rename on either side: the path it ends at and its outcome,
    /// or nothing when it was recorded already (rename/rename to different names).
    fn merge_entry<'c>(
        &self,
        entry: Entry<'c>,
        handled_adds: &mut Vec<&'c str>,
        out: &mut Outcomes,
        cache: &mut PickCache,
    ) -> Result<Option<(String, PathOutcome)>, Error> {
        let c = &entry.changes[entry.index];
        let path = c.path.as_str();
        let theirs_rename = entry
            .renames
            .theirs
            .get(&entry.index)
            .map(|&d| &entry.changes[d]);
        let ours_rename = entry.renames.ours.get(path);
        Ok(Some(match (theirs_rename, ours_rename) {
            (Some(r), Some((q, o))) if *q == r.path => {
                // Both sides renamed it to the same path: an ordinary merge there.
                let ours_r = self.ours(cache, &r.path)?.or(Some(*o));
                (
                    r.path.clone(),
                    self.resolve(&r.path, (c.old, ours_r, r.new), self.markers, cache)?,
                )
            }
            (Some(r), Some((q, o))) => {
                rename_rename(
                    self.repo,
                    c,
                    q,
                    *o,
                    r,
                    self.favor,
                    self.markers,
                    cache,
                    &mut out.conflicts,
                )?;
                return Ok(None);
            }
            (Some(r), None) => self.merge_their_rename(c, r, &mut out.updates, cache)?,
            (None, Some((q, o))) => self.merge_our_rename(entry, q, *o, handled_adds, cache)?,
            (None, None) => {
                let ours = self.ours(cache, path)?;
                (
                    path.to_owned(),
                    self.resolve(path, (c.old, ours, c.new), self.markers, cache)?,
                )
            }
        }))
    }

    /// The commit renamed the path `c` to `r`, the branch did not: the branch's version leaves the old path and
    /// merges at the new one.
    fn merge_their_rename(
        &self,
        c: &crate::git::Change,
        r: &crate::git::Change,
        updates: &mut Vec<crate::git::TreeEdit>,
        cache: &mut PickCache,
    ) -> Result<(String, PathOutcome), Error> {
        let path = c.path.as_str();
        let ours = self.ours(cache, path)?;
        if ours.is_some() {
            updates.push((path.to_owned(), None));
        }
        let labels = self.markers.with_paths(path, path, &r.path);
        let at_target = self.ours(cache, &r.path)?;
        let outcome = self.resolve(&r.path, (c.old, ours, r.new), &labels, cache)?;
        Ok(match (at_target, outcome) {
            // The branch has a file where the commit renames this one (rename/add): what the rename
            // merged meets the branch's file as both sides adding it.
            (Some(other), PathOutcome::Set(Some(merged))) if ours.is_some() => (
                r.path.clone(),
                self.resolve(
                    &r.path,
                    (None, Some(other), Some(merged)),
                    self.markers,
                    cache,
                )?,
            ),
            // Both sides hold the same content: the branch's file moves to the new path.
            (_, PathOutcome::Unchanged) => (r.path.clone(), PathOutcome::Set(ours)),
            (_, outcome) => (r.path.clone(), outcome),
        })
    }

    /// The branch renamed the entry's path to `q` (its entry `o` there), the commit did not: the commit's
    /// change merges at the new path.
    fn merge_our_rename<'c>(
        &self,
        entry: Entry<'c>,
        q: &str,
        o: Side,
        handled_adds: &mut Vec<&'c str>,
        cache: &mut PickCache,
    ) -> Result<(String, PathOutcome), Error> {
        let c = &entry.changes[entry.index];
        let path = c.path.as_str();
        if c.new.is_none() {
            // Renamed on the branch, deleted by the commit (rename/delete): the branch's file stays, with
            // the base and the branch's version staged at its new path.
            return Ok((
                q.to_owned(),
                PathOutcome::Conflict(Conflict {
                    path: q.to_owned(),
                    kind: ConflictKind::ModifyDelete,
                    base: c.old,
                    ours: Some(o),
                    theirs: None,
                    worktree: None,
                    mode: o.mode,
                }),
            ));
        }
        let labels = self.markers.with_paths(path, q, path);
        let outcome = self.resolve(q, (c.old, Some(o), c.new), &labels, cache)?;
        let added =
            entry.changes.iter().enumerate().find(|(j, a)| {
                a.path == q && a.old.is_none() && !entry.renames.theirs_dst.contains(j)
            });
        Ok(match (added, outcome) {
            // The commit adds a file where the branch renamed this one (rename/add).
            (Some((_, a)), PathOutcome::Set(Some(merged))) => {
                handled_adds.push(a.path.as_str());
                (
                    q.to_owned(),
                    self.resolve(q, (None, Some(merged), a.new), self.markers, cache)?,
                )
            }
            (_, outcome) => (q.to_owned(), outcome),
        })
    }
}

/// Attributes bport cannot reproduce are refused for every path the pick writes, merged or taken whole; the
/// worktree gets a conflicted file as git's checkout writes it (end-of-line conversion).
fn check_attributes_and_convert(
    repo: &Repository,
    cache: &mut PickCache,
    updates: &[crate::git::TreeEdit],
    conflicts: &mut [Conflict],
) -> Result<(), Error> {
    for (path, side) in updates {
        if side.is_some() {
            path_attributes(repo, cache, path)?;
        }
    }
    for c in conflicts {
        if let Some(text) = &c.worktree {
            let attrs = path_attributes(repo, cache, &c.path)?;
            if let Some(converted) = cache.attributes.to_worktree(attrs.crlf, text) {
                c.worktree = Some(converted);
            }
        }
    }
    Ok(())
}

/// The renames that matter to one pick, as merge-ort finds them on each side.
#[derive(Default)]
struct Renames {
    /// The commit's renames: index of the deleted path in the patch → index of the added one.
    theirs: HashMap<usize, usize>,
    /// Indexes of the patch's added paths that are the commit's rename destinations.
    theirs_dst: Vec<usize>,
    /// The branch's renames of paths the commit changes: old path → the branch's new path and entry.
    ours: HashMap<String, (String, Side)>,
    /// Paths the commit adds inside a directory the branch renamed: index in the patch → the path in the
    /// directory's new name.
    dirs: HashMap<usize, String>,
}

/// Blobs for the detector: the run's own first, then the object database.
struct PickBlobs<'a, 'r> {
    repo: &'r Repository,
    cache: &'a mut PickCache,
}

impl crate::git::Blobs for PickBlobs<'_, '_> {
    fn bytes(&mut self, oid: Oid) -> Result<Rc<[u8]>, crate::git::Error> {
        if let Some(b) = self.cache.get(oid) {
            return Ok(b);
        }
        let blob = self
            .repo
            .find_blob(oid)
            .map_err(|source| crate::git::Error::Git {
                context: format!("reading blob {oid}"),
                source,
            })?;
        Ok(Rc::from(blob.content()))
    }
}

/// Rename detection for one pick, run only where a path is missing on one side (merge-ort's rule): the commit's
/// side when its patch deletes a path the branch changed, the branch's side when the patch changes a path the
/// branch lacks. A patch that only edits files present on the branch costs one lookup per path here.
fn find_renames(
    repo: &Repository,
    odb: &Odb<'_>,
    tip: Oid,
    base: Option<Oid>,
    changes: &[crate::git::Change],
    cache: &mut PickCache,
) -> Result<Renames, Error> {
    let mut found = Renames::default();
    if !cache.renames.enabled {
        return Ok(found);
    }
    let added: Vec<usize> = (0..changes.len())
        .filter(|&i| changes[i].old.is_none())
        .collect();
    collect_commit_renames(repo, odb, tip, changes, &added, cache, &mut found)?;
    // The branch's side: only when the patch changes a path the branch lacks, or adds one inside a directory the
    // branch no longer has (where a directory rename may move it).
    let Some(base) = base else {
        return Ok(found);
    };
    let mut missing: Vec<&str> = Vec::new();
    for c in changes {
        if c.old.is_some() && cache.trees.lookup(odb, tip, &c.path)?.is_none() {
            missing.push(&c.path);
        }
    }
    let mut removed = RemovedDirs {
        base,
        tip,
        known: HashMap::new(),
    };
    let adds = AddsIntoRemoved::collect(odb, changes, &added, &found, &mut removed, cache)?;
    if missing.is_empty() && adds.paths.is_empty() {
        return Ok(found);
    }
    let branch = BranchRenames::detect(repo, odb, (base, tip), &missing, &adds, cache)?;
    for &(s, d) in &branch.pairs {
        if missing.contains(&branch.sources[s].path.as_str()) {
            found.ours.insert(
                branch.sources[s].path.clone(),
                (branch.dests[d].path.clone(), branch.dests[d].side),
            );
        }
    }
    if adds.paths.is_empty() {
        return Ok(found);
    }
    let dir_renames = collect_directory_renames(odb, &branch, &adds, &mut removed, cache)?;
    found.dirs = moved_by_directory_renames(changes, &adds, &dir_renames);
    Ok(found)
}

/// The commit's renames: sources are the paths it deletes, destinations the ones it adds (`added`); a source is
/// relevant when the branch changed it (otherwise the rename and "delete + add" merge alike).
fn collect_commit_renames(
    repo: &Repository,
    odb: &Odb<'_>,
    tip: Oid,
    changes: &[crate::git::Change],
    added: &[usize],
    cache: &mut PickCache,
    found: &mut Renames,
) -> Result<(), Error> {
    // A deletion: an old side and no new one.
    let deleted: Vec<(usize, Side)> = (0..changes.len())
        .filter(|&i| changes[i].new.is_none())
        .filter_map(|i| Some((i, changes[i].old?)))
        .collect();
    if deleted.is_empty() || added.is_empty() {
        return Ok(());
    }
    let mut sources = Vec::new();
    let mut changed_on_branch = Vec::new();
    for &(i, old) in &deleted {
        let c = &changes[i];
        changed_on_branch.push(cache.trees.lookup(odb, tip, &c.path)? != Some(old));
        sources.push(Candidate {
            path: c.path.clone(),
            side: old,
        });
    }
    // An addition: a new side (indexes kept beside the candidates, so a pair's `d` names its change).
    let added: Vec<(usize, Side)> = added
        .iter()
        .filter_map(|&i| Some((i, changes[i].new?)))
        .collect();
    let dests: Vec<Candidate> = added
        .iter()
        .map(|&(i, side)| Candidate {
            path: changes[i].path.clone(),
            side,
        })
        .collect();
    let relevant = |c: &Candidate| {
        sources
            .iter()
            .position(|s| s.path == c.path)
            .is_some_and(|i| changed_on_branch[i])
    };
    let settings = cache.renames;
    let mut blobs = PickBlobs { repo, cache };
    for (s, d) in crate::git::detect_renames(&sources, &dests, &relevant, settings, &mut blobs)? {
        found.theirs.insert(deleted[s].0, added[d].0);
        found.theirs_dst.push(added[d].0);
    }
    Ok(())
}

/// The paths the commit adds under a directory the branch removed, and the directories they are added directly
/// into: merge-ort looks for a directory's rename only at and below such a directory.
struct AddsIntoRemoved<'c> {
    /// Indexes in the patch.
    paths: Vec<usize>,
    dirs: Vec<&'c str>,
}

impl<'c> AddsIntoRemoved<'c> {
    fn collect(
        odb: &Odb<'_>,
        changes: &'c [crate::git::Change],
        added: &[usize],
        found: &Renames,
        removed: &mut RemovedDirs,
        cache: &mut PickCache,
    ) -> Result<Self, Error> {
        let mut adds = AddsIntoRemoved {
            paths: Vec::new(),
            dirs: Vec::new(),
        };
        if cache.renames.directories == DirRenames::Off {
            return Ok(adds);
        }
        for &i in added {
            if found.theirs_dst.contains(&i) {
                continue;
            }
            for dir in ancestors(&changes[i].path) {
                if removed.get(odb, cache, dir)? {
                    adds.paths.push(i);
                    adds.dirs.push(split_last(&changes[i].path).0);
                    break;
                }
            }
        }
        Ok(adds)
    }

    /// Whether `dir` is, or is below, a directory a path was added directly into.
    fn cover(&self, dir: &str) -> bool {
        self.dirs.contains(&dir) || ancestors(dir).any(|a| self.dirs.contains(&a))
    }
}

/// The branch's renames (base to tip) of the paths that matter to the pick.
struct BranchRenames {
    sources: Vec<Candidate>,
    dests: Vec<Candidate>,
    /// Indexes into `sources` and `dests`.
    pairs: Vec<(usize, usize)>,
}

impl BranchRenames {
    /// Sources are relevant when the patch changes them and the branch lacks them (`missing`), or when they lie
    /// inside a removed directory the commit adds into: they count towards that directory's rename, so merge-ort
    /// looks for their new names even when the commit does not touch them.
    fn detect(
        repo: &Repository,
        odb: &Odb<'_>,
        (base, tip): (Oid, Oid),
        missing: &[&str],
        adds: &AddsIntoRemoved<'_>,
        cache: &mut PickCache,
    ) -> Result<Self, Error> {
        let branch = cache.trees.changes(odb, base, tip)?;
        let sources: Vec<Candidate> = branch
            .iter()
            .filter_map(|c| {
                Some(Candidate {
                    path: c.path.clone(),
                    side: c.old?,
                })
                .filter(|_| c.new.is_none())
            })
            .collect();
        let dests: Vec<Candidate> = branch
            .iter()
            .filter_map(|c| {
                Some(Candidate {
                    path: c.path.clone(),
                    side: c.new?,
                })
                .filter(|_| c.old.is_none())
            })
            .collect();
        let mut in_removed = vec![false; sources.len()];
        if !adds.paths.is_empty() {
            cache.dir_rename_scans += 1;
            for (k, s) in sources.iter().enumerate() {
                in_removed[k] = adds.cover(split_last(&s.path).0);
            }
        }
        let relevant = |c: &Candidate| {
            missing.contains(&c.path.as_str())
                || sources
                    .iter()
                    .position(|s| s.path == c.path)
                    .is_some_and(|k| in_removed[k])
        };
        let settings = cache.renames;
        let pairs = {
            let mut blobs = PickBlobs { repo, cache };
            crate::git::detect_renames(&sources, &dests, &relevant, settings, &mut blobs)?
        };
        Ok(BranchRenames {
            sources,
            dests,
            pairs,
        })
    }
}

/// merge-ort's directory renames: each file rename votes for its directory's new name (and for the parents'
/// while the trailing names agree and the parents are gone too); a removed directory whose votes have a unique
/// maximum is renamed. Old directory → new.
fn collect_directory_renames<'b>(
    odb: &Odb<'_>,
    branch: &'b BranchRenames,
    adds: &AddsIntoRemoved<'_>,
    removed: &mut RemovedDirs,
    cache: &mut PickCache,
) -> Result<HashMap<&'b str, &'b str>, Error> {
    let mut votes: HashMap<&str, HashMap<&str, u32>> = HashMap::new();
    for &(s, d) in &branch.pairs {
        let (mut old, mut new) = (
            branch.sources[s].path.as_str(),
            branch.dests[d].path.as_str(),
        );
        let mut first = true;
        loop {
            let (old_dir, old_name) = split_last(old);
            let (new_dir, new_name) = split_last(new);
            if !first && old_name != new_name {
                break;
            }
            // A removed directory counts when a path was added into it or into a directory above it; past the
            // file's own directory, a level votes only when a path was added directly into it.
            let gone =
                !old_dir.is_empty() && removed.get(odb, cache, old_dir)? && adds.cover(old_dir);
            if gone && (first || adds.dirs.contains(&old_dir)) {
                *votes
                    .entry(old_dir)
                    .or_default()
                    .entry(new_dir)
                    .or_default() += 1;
            }
            first = false;
            if !gone || old_dir.is_empty() || new_dir.is_empty() {
                break;
            }
            (old, new) = (old_dir, new_dir);
        }
    }
    let mut dir_renames: HashMap<&str, &str> = HashMap::new();
    for (old, counts) in &votes {
        let max = counts.values().copied().max().unwrap_or(0);
        let mut best = counts.iter().filter(|(_, &n)| n == max);
        // Without a majority git stops the pick ("directory rename split") with nothing staged; here the
        // directory is simply not renamed.
        if let (Some((new, _)), None) = (best.next(), best.next()) {
            dir_renames.insert(old, new);
        }
    }
    Ok(dir_renames)
}

/// Where the directory renames move the paths added into removed directories: index in the patch → new path.
fn moved_by_directory_renames(
    changes: &[crate::git::Change],
    adds: &AddsIntoRemoved<'_>,
    dir_renames: &HashMap<&str, &str>,
) -> HashMap<usize, String> {
    let mut targets: Vec<(usize, String)> = Vec::new();
    for &i in &adds.paths {
        let path = &changes[i].path;
        if let Some((old, new)) = ancestors(path).find_map(|d| Some((d, *dir_renames.get(d)?))) {
            let rest = &path[old.len() + 1..];
            let target = if new.is_empty() {
                rest.to_owned()
            } else {
                format!("{new}/{rest}")
            };
            targets.push((i, target));
        }
    }
    // Several added paths mapped onto one: git leaves each where it was added (and stops).
    let mut moved = HashMap::new();
    for (i, target) in &targets {
        if targets.iter().filter(|(_, t)| t == target).count() == 1 {
            moved.insert(*i, target.clone());
        }
    }
    moved
}

/// The parent directories of `path`, nearest first.
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut rest = path;
    std::iter::from_fn(move || {
        let cut = rest.rfind('/')?;
        rest = &rest[..cut];
        Some(rest)
    })
}

/// `path` cut at its last `/`: (directory, name); the directory is empty at the top.
fn split_last(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(cut) => (&path[..cut], &path[cut + 1..]),
        None => ("", path),
    }
}

/// Directories of the base that the branch no longer has, each looked up once.
struct RemovedDirs {
    base: Oid,
    tip: Oid,
    known: HashMap<String, bool>,
}

impl RemovedDirs {
    fn get(&mut self, odb: &Odb<'_>, cache: &mut PickCache, dir: &str) -> Result<bool, Error> {
        if let Some(&r) = self.known.get(dir) {
            return Ok(r);
        }
        let r = cache.trees.has_dir(odb, self.base, dir)?
            && !cache.trees.has_dir(odb, self.tip, dir)?;
        self.known.insert(dir.to_owned(), r);
        Ok(r)
    }
}

/// Both sides renamed the path, to different names (git's rename/rename(1to2)): the content is merged once and
/// the result staged at both new paths (stage 2 at the branch's, stage 3 at the commit's), the base stays at
/// stage 1 under the old path, and both new files get the merged text.
#[allow(clippy::too_many_arguments)]
fn rename_rename(
    repo: &Repository,
    c: &crate::git::Change,
    ours_path: &str,
    ours: Side,
    theirs: &crate::git::Change,
    favor: Favor,
    markers: &Markers,
    cache: &mut PickCache,
    conflicts: &mut Vec<Conflict>,
) -> Result<(), Error> {
    let mut labels = markers.with_paths(&c.path, ours_path, &theirs.path);
    labels.extra_size = 1;
    let merged = resolve_path(
        repo,
        &c.path,
        (c.old, Some(ours), theirs.new),
        favor,
        &labels,
        cache,
    )?;
    let theirs_side = theirs.new.unwrap_or(ours);
    let (ours_stage, theirs_stage, text) = match merged {
        PathOutcome::Set(Some(side)) => (side, side, None),
        PathOutcome::Conflict(Conflict {
            worktree: Some(text),
            mode,
            ..
        }) => {
            let oid = cache.keep_blob(text.clone());
            let side = Side { oid, mode };
            (side, side, Some(text))
        }
        // Not mergeable as text (binary, links): each new path keeps its own side.
        _ => (ours, theirs_side, None),
    };
    conflicts.push(Conflict {
        path: c.path.clone(),
        kind: ConflictKind::BothDeleted,
        base: c.old,
        ours: None,
        theirs: None,
        worktree: None,
        mode: c.old.map_or(ours.mode, |b| b.mode),
    });
    let mut file = |side: Side| -> Result<Option<Vec<u8>>, Error> {
        Ok(match &text {
            Some(t) => Some(t.clone()),
            None if side.mode == GITLINK => None,
            None => Some(content(repo, cache, side.oid)?.bytes().to_vec()),
        })
    };
    let ours_text = file(ours_stage)?;
    let theirs_text = file(theirs_stage)?;
    conflicts.push(Conflict {
        path: ours_path.to_owned(),
        kind: ConflictKind::AddedByUs,
        base: None,
        ours: Some(ours_stage),
        theirs: None,
        worktree: ours_text,
        mode: ours_stage.mode,
    });
    conflicts.push(Conflict {
        path: theirs.path.clone(),
        kind: ConflictKind::AddedByThem,
        base: None,
        ours: None,
        theirs: Some(theirs_stage),
        worktree: theirs_text,
        mode: theirs_stage.mode,
    });
    Ok(())
}

enum PathOutcome {
    Unchanged,
    Set(Option<Side>),
    Conflict(Conflict),
}

/// One path's three versions as a merge of that path sees them, and the conflict it records when they do not
/// merge.
#[derive(Clone, Copy)]
struct PathSides<'p> {
    path: &'p str,
    base: Option<Side>,
    ours: Option<Side>,
    theirs: Option<Side>,
}

impl PathSides<'_> {
    fn conflict(&self, kind: ConflictKind, worktree: Option<Vec<u8>>, mode: u32) -> PathOutcome {
        PathOutcome::Conflict(Conflict {
            path: self.path.to_owned(),
            kind,
            base: self.base,
            ours: self.ours,
            theirs: self.theirs,
            worktree,
            mode,
        })
    }

    /// A content conflict when the base has the path, both sides adding it otherwise.
    fn content_kind(&self) -> ConflictKind {
        if self.base.is_some() {
            ConflictKind::Content
        } else {
            ConflictKind::AddAdd
        }
    }
}

/// Merges one path: a side that did not change it yields to the other; a side that deleted it conflicts with one
/// that changed it; two changed versions merge as files.
fn resolve_path(
    repo: &Repository,
    path: &str,
    (base, ours, theirs): (Option<Side>, Option<Side>, Option<Side>),
    favor: Favor,
    markers: &Markers,
    cache: &mut PickCache,
) -> Result<PathOutcome, Error> {
    if ours == theirs {
        return Ok(PathOutcome::Unchanged);
    }
    if ours == base {
        return Ok(PathOutcome::Set(theirs));
    }
    let sides = PathSides {
        path,
        base,
        ours,
        theirs,
    };
    match (ours, theirs) {
        (Some(o), None) => Ok(sides.conflict(ConflictKind::ModifyDelete, None, o.mode)),
        (None, Some(t)) => {
            // A gitlink names a commit of another repository, never a blob of this one (reading it as a
            // blob fails): git stages 1 and 3 and leaves the submodule's directory, with no file content.
            let content = if t.mode == GITLINK {
                None
            } else {
                Some(blob(repo, t.oid)?)
            };
            Ok(sides.conflict(ConflictKind::DeleteModify, content, t.mode))
        }
        (Some(o), Some(t)) => merge_files(repo, sides, (o, t), favor, markers, cache),
        (None, None) => Ok(PathOutcome::Unchanged),
    }
}

/// Both sides changed the path and differ: regular files merge through the path's merge driver; anything else
/// (links, gitlinks, a type change) is a conflict with no merged text.
fn merge_files(
    repo: &Repository,
    sides: PathSides<'_>,
    (o, t): (Side, Side),
    favor: Favor,
    markers: &Markers,
    cache: &mut PickCache,
) -> Result<PathOutcome, Error> {
    let base = sides.base;
    let is_file = |s: Side| s.mode & 0o170000 == 0o100000;
    if !is_file(o) || !is_file(t) || base.is_some_and(|b| !is_file(b)) {
        return Ok(sides.conflict(sides.content_kind(), None, o.mode));
    }
    // Mode: a side that kept the base's mode yields to the other (git's merge of modes).
    let mode = match base {
        Some(b) if o.mode == b.mode => t.mode,
        _ => o.mode,
    };
    // Borrowed from libgit2's object cache: big files are not copied once more per merge.
    let base_blob = match base {
        Some(b) if b.mode & 0o170000 == 0o100000 => Some(content(repo, cache, b.oid)?),
        _ => None,
    };
    let ours_blob = content(repo, cache, o.oid)?;
    let theirs_blob = content(repo, cache, t.oid)?;
    let base_bytes: &[u8] = base_blob.as_ref().map_or(&[], |b| b.bytes());
    let versions = [base_bytes, ours_blob.bytes(), theirs_blob.bytes()];
    let attrs = path_attributes(repo, cache, sides.path)?;
    let marker_size = attrs.marker_size + markers.extra_size;
    let binary = versions
        .iter()
        .any(|b| crate::rerere::resolve::is_binary(b));
    let union = match &attrs.driver {
        Driver::External { name, command } => {
            let driver = ExternalMerge {
                command,
                name,
                path: sides.path,
                marker_size,
                labels: [&markers.base, &markers.ours, &markers.theirs],
            };
            return run_merge_driver(repo, sides, &driver, versions, mode, cache);
        }
        // git's binary driver: no content merge; `-X ours/theirs` take that side, otherwise a conflict
        // with the branch's version in the worktree.
        Driver::Binary => None,
        Driver::Text | Driver::Union if binary => None,
        Driver::Text => Some(false),
        Driver::Union => Some(true),
    };
    let Some(union) = union else {
        return Ok(match favor {
            Favor::Ours => PathOutcome::Set(Some(Side { oid: o.oid, mode })),
            Favor::Theirs => PathOutcome::Set(Some(Side { oid: t.oid, mode })),
            Favor::None => sides.conflict(sides.content_kind(), Some(versions[1].to_vec()), mode),
        });
    };
    let merged = merge_text(versions, union, favor, markers, marker_size);
    if merged.conflicts == 0 {
        // The next commit that edits this file starts from their version and merges into ours.
        if let Content::Read(b) = &theirs_blob {
            cache.insert(t.oid, Rc::from(b.content()));
        }
        let (oid, _) = cache.written.insert(merged.content);
        return Ok(PathOutcome::Set(Some(Side { oid, mode })));
    }
    Ok(sides.conflict(sides.content_kind(), Some(merged.content), mode))
}

/// A merge driver the user configured, run in the worktree: its exit status says whether its result is clean.
fn run_merge_driver(
    repo: &Repository,
    sides: PathSides<'_>,
    driver: &ExternalMerge<'_>,
    versions: [&[u8]; 3],
    mode: u32,
    cache: &mut PickCache,
) -> Result<PathOutcome, Error> {
    let dir = cache
        .attributes
        .workdir()
        .ok_or_else(|| Error::BareRepository {
            path: repo.path().to_path_buf(),
        })?;
    let (clean, result) = driver.run(dir, versions)?;
    if clean {
        let (oid, _) = cache.written.insert(result);
        return Ok(PathOutcome::Set(Some(Side { oid, mode })));
    }
    Ok(sides.conflict(sides.content_kind(), Some(result), mode))
}

/// The three versions merged as text (`union` for the union driver), rendered as git renders them.
fn merge_text(
    [base, ours, theirs]: [&[u8]; 3],
    union: bool,
    favor: Favor,
    markers: &Markers,
    marker_size: usize,
) -> crate::rerere::xdiff::merge::MergeOutput {
    // git's own rendering (histogram diff, xdiff's refinement), so that conflict text and rerere ids
    // are the ones `git cherry-pick` produces; libgit2 only renders with Myers.
    let opts = crate::rerere::render::RenderOptions {
        style: match markers.style {
            ConflictStyle::Merge => crate::rerere::xdiff::merge::Style::Merge,
            ConflictStyle::Diff3 => crate::rerere::xdiff::merge::Style::Diff3,
            ConflictStyle::Zdiff3 => crate::rerere::xdiff::merge::Style::Zdiff3,
        },
        marker_size,
        ours_label: markers.ours.clone(),
        theirs_label: markers.theirs.clone(),
        base_label: markers.base.clone(),
        // The union driver overrides `-X ours/theirs`, as git's does.
        favor: match (union, favor) {
            (true, _) => Some(crate::rerere::xdiff::merge::Favor::Union),
            (false, Favor::None) => None,
            (false, Favor::Ours) => Some(crate::rerere::xdiff::merge::Favor::Ours),
            (false, Favor::Theirs) => Some(crate::rerere::xdiff::merge::Favor::Theirs),
        },
    };
    crate::rerere::render::render(base, ours, theirs, &opts)
}

/// The mode of a gitlink (a submodule's commit recorded in a tree).
pub const GITLINK: u32 = 0o160000;

/// The entry at `path` in `tree`, if it is not a directory.
pub fn lookup(tree: &Tree<'_>, path: &str) -> Option<Side> {
    let entry = tree.get_path(Path::new(path)).ok()?;
    let mode = entry.filemode() as u32;
    (mode & 0o170000 != 0o040000).then(|| Side {
        oid: entry.id(),
        mode,
    })
}

fn blob(repo: &Repository, oid: Oid) -> Result<Vec<u8>, Error> {
    Ok(find_blob(repo, oid)?.content().to_vec())
}

fn find_blob(repo: &Repository, oid: Oid) -> Result<git2::Blob<'_>, Error> {
    Ok(repo
        .find_blob(oid)
        .context_git(|| format!("reading blob {oid}"))?)
}

/// The git2 mode for a raw mode.
pub fn file_mode(mode: u32) -> FileMode {
    match mode {
        0o100755 => FileMode::BlobExecutable,
        0o120000 => FileMode::Link,
        0o160000 => FileMode::Commit,
        0o040000 => FileMode::Tree,
        _ => FileMode::Blob,
    }
}

/// The attributes of `path` for the current pick: looked up only when an attributes file can apply to it (a
/// `.gitattributes` on one of its directories in the branch's tree, or a file outside the trees); otherwise
/// git's defaults under the config, with no lookup.
fn path_attributes(
    repo: &Repository,
    cache: &mut PickCache,
    path: &str,
) -> Result<PathAttributes, Error> {
    let mut any = cache.attributes.global();
    if let (Some(tip), Some(start)) = (cache.tip, cache.attributes_tree) {
        let odb = repo.odb().context_git(|| "opening the object database")?;
        let mut dir = "";
        loop {
            let file = if dir.is_empty() {
                ".gitattributes".to_owned()
            } else {
                format!("{dir}/.gitattributes")
            };
            let now = cache.trees.lookup(&odb, tip, &file)?;
            let then = if tip == start {
                now
            } else {
                cache.trees.lookup(&odb, start, &file)?
            };
            if now != then {
                return Err(Error::AttributesChangedInRun {
                    path: path.to_owned(),
                    attributes: file,
                });
            }
            any |= now.is_some();
            match path[dir.len()..].trim_start_matches('/').split_once('/') {
                Some((next, _)) => {
                    let end = if dir.is_empty() {
                        next.len()
                    } else {
                        dir.len() + 1 + next.len()
                    };
                    dir = &path[..end];
                }
                None => break,
            }
        }
    }
    if any {
        if let Some(known) = cache.looked_up.get(path) {
            return Ok(known.clone());
        }
        let attrs = cache.attributes.lookup(path)?;
        cache.looked_up.insert(path.to_owned(), attrs.clone());
        Ok(attrs)
    } else {
        cache.attributes.defaults()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree holding `files` (path, content).
    fn tree(repo: &Repository, files: &[(&str, &str)]) -> Oid {
        let mut index = git2::Index::new().unwrap();
        for (path, text) in files {
            let oid = repo.blob(text.as_bytes()).unwrap();
            index
                .add(&git2::IndexEntry {
                    ctime: git2::IndexTime::new(0, 0),
                    mtime: git2::IndexTime::new(0, 0),
                    dev: 0,
                    ino: 0,
                    mode: 0o100644,
                    uid: 0,
                    gid: 0,
                    file_size: 0,
                    id: oid,
                    flags: 0,
                    flags_extended: 0,
                    path: path.as_bytes().to_vec(),
                })
                .unwrap();
        }
        index.write_tree_to(repo).unwrap()
    }

    fn commit<'r>(repo: &'r Repository, tree_id: Oid, parents: &[&Commit<'_>]) -> Commit<'r> {
        let sig = git2::Signature::new("A", "a@example.com", &git2::Time::new(0, 0)).unwrap();
        let t = repo.find_tree(tree_id).unwrap();
        let oid = repo.commit(None, &sig, &sig, "c", &t, parents).unwrap();
        repo.find_commit(oid).unwrap()
    }

    /// Directory renames are looked for only when a pick adds a path inside a directory the branch no longer
    /// has: edits, additions into directories the branch has, the commit's own renames and the branch's file
    /// renames (an edit of a path the branch moved) all leave the counter alone.
    #[test]
    fn directory_renames_are_looked_for_only_where_a_directory_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let other: String = (1..=20).map(|i| format!("other {i}\n")).collect();
        let base_files = [
            ("old/a.c", text.as_str()),
            ("old/b.c", other.as_str()),
            ("keep/k.c", "k\n"),
        ];
        let base = commit(&repo, tree(&repo, &base_files), &[]);
        let tip = tree(
            &repo,
            &[
                ("new/a.c", text.as_str()),
                ("new/b.c", other.as_str()),
                ("keep/k.c", "k\n"),
            ],
        );
        let markers = Markers::for_commit("abc", "c", ConflictStyle::Merge);
        let mut cache = PickCache::new();
        cache.set_renames(RenameSettings {
            directories: DirRenames::On,
            ..RenameSettings::default()
        });
        let with = |extra: &[(&'static str, Option<&'static str>)]| {
            let mut files: Vec<(&str, &str)> = base_files.to_vec();
            for (path, content) in extra {
                files.retain(|(p, _)| p != path);
                if let Some(c) = content {
                    files.push((path, c));
                }
            }
            tree(&repo, &files)
        };
        let quiet = [
            vec![("keep/k.c", Some("k2\n")), ("keep/z.c", Some("z\n"))],
            vec![("keep/k.c", None), ("keep/y.c", Some("k\n"))],
            vec![("old/a.c", Some("line 1 fixed\n"))],
        ];
        for extra in &quiet {
            let c = commit(&repo, with(extra), &[&base]);
            pick(&repo, tip, &c, None, Favor::None, &markers, &mut cache).unwrap();
            assert_eq!(cache.dir_rename_scans(), 0, "{extra:?}");
        }
        let c = commit(&repo, with(&[("old/n.c", Some("n\n"))]), &[&base]);
        let picked = pick(&repo, tip, &c, None, Favor::None, &markers, &mut cache).unwrap();
        assert_eq!(cache.dir_rename_scans(), 1);
        assert!(picked.conflicts.is_empty());
        let odb = repo.odb().unwrap();
        assert!(cache
            .trees
            .lookup(&odb, picked.tree, "new/n.c")
            .unwrap()
            .is_some());
    }
}
