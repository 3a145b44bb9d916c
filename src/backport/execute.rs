//! The cherry-pick loop: picks in memory (new trees, commits and merged blobs held in the run's
//! [`pick::PickCache`], blobs of binary merges in a mempack), then writes one pack and updates HEAD, index and
//! worktree once, at the end or at a stop.
//!
//! Crash safety comes from the order of writes:
//!
//! ```text
//!  picks (memory only) ─▶ pack written ─▶ guard ─▶ state {tip, anchor=old HEAD, Running, writing} ─▶ worktree/index ─▶ ref
//!        crash here: state still says "from position p at anchor": --continue redoes the picks
//!                                            crash here: HEAD is at anchor, objects exist: --continue rolls forward to tip
//! ```
//!
//! The guard ([`Guard`]) is the last look before writing: the branch must still be at the anchor and the index as
//! the run found it, or the run refuses and writes nothing (a `git commit` or `git add` made meanwhile is the
//! user's). `writing` names the tree being checked out, so recovery knows the worktree is the run's and which files
//! it may have created; a state without it means the worktree is the user's and is never reset.
//!
//! [`stop_at_conflict`] is the one place a run stops; rerere hooks in there.

use super::message::{picked_message, Made, MessageRules};
use super::pick::{self, Conflict, ConflictKind, ConflictStyle, Markers};
use super::plan::{Action, StepResult};
use super::state::{self, Phase, State, Writing};
use super::{Error, Progress};
use crate::git::{self, fault, Context};
use git2::build::CheckoutBuilder;
use git2::{Commit, IndexEntry, IndexTime, Oid, Repository, ResetType};
use std::path::Path;
use std::time::{Duration, Instant};

/// Where a run's time went, logged at info level (`BPORT_LOG=info`) for developers and benches/real_history.py.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timings {
    /// Resolving the list and deciding what is already applied.
    pub matching: Duration,
    /// Diffing each commit and merging the touched paths into new trees.
    pub merge: Duration,
    /// Creating commits and writing the new objects out as a pack.
    pub objects: Duration,
    /// Updating worktree, index and branch (at the end or at a stop).
    pub materialize: Duration,
}

impl Timings {
    /// Adds the time since `since` to `slot` and returns now.
    fn lap(slot: &mut Duration, since: Instant) -> Instant {
        let now = Instant::now();
        *slot += now - since;
        now
    }

    /// Logs the breakdown on one line, in milliseconds.
    pub fn log(&self) {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        log::info!(
            "apply timing: match {:.2} ms, merge {:.2} ms, objects {:.2} ms, materialize {:.2} ms",
            ms(self.matching),
            ms(self.merge),
            ms(self.objects),
            ms(self.materialize)
        );
    }
}

/// Why [`run`] returned.
#[derive(Debug)]
pub enum RunEnd {
    /// Every step is done; the branch is at the final tip.
    Done,
    /// Stopped at a conflict; rerere's outcome at the stop.
    Stopped(Vec<Conflict>, crate::rerere::RerereOutcome),
}

/// Crash-test checkpoints reported to [`Progress::checkpoint`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checkpoint {
    /// The pack with the new objects is written.
    PackWritten,
    /// The state naming the new tip is saved; the branch has not moved yet.
    StateSaved,
    /// Index and worktree are updated; the branch has not moved yet.
    WorktreeUpdated,
}

/// What HEAD and the index were when the run last looked (its start, or its own last write): a `git commit` or
/// `git add` made while bport picks in memory must stop it before it writes, never be undone by it.
#[derive(Clone, Debug)]
pub struct Guard {
    /// The index file's bytes (`None`: no index yet). Compared whole, so the usual case parses nothing (parsing
    /// and hashing a 30,000-entry index costs ~57 ms in a debug build); only when the bytes differ are both read
    /// as entries, so that a `git status` that refreshed stat data only does not count as a change.
    index: Option<Vec<u8>>,
}

impl Guard {
    /// Notes the index as it is now.
    pub fn take(repo: &Repository) -> Result<Guard, Error> {
        Ok(Guard {
            index: read_index_file(repo)?,
        })
    }

    /// Fails when the run's branch no longer points at `st.anchor` or the index entries changed since
    /// [`Guard::take`].
    pub fn check(&self, repo: &Repository, st: &State) -> Result<(), Error> {
        let found = match &st.branch {
            Some(name) => repo.refname_to_id(name).ok(),
            None => repo.head().ok().and_then(|h| h.target()),
        }
        .unwrap_or(Oid::ZERO_SHA1);
        if found != st.anchor {
            return Err(Error::HeadMovedDuringRun {
                expected: st.anchor,
                found,
            });
        }
        if self.same_checksum(repo)? {
            return Ok(());
        }
        let now = read_index_file(repo)?;
        if now == self.index {
            return Ok(());
        }
        let before = match &self.index {
            None => None,
            Some(bytes) => {
                // libgit2 parses an index only from a file: the old bytes go beside the state for the comparison.
                let path = state::dir(repo.path()).join("index.guard");
                git::write_atomic(&path, bytes).map_err(|source| Error::Io {
                    path: path.clone(),
                    source,
                })?;
                let fp = git::index_fingerprint_of(&path);
                let _ = std::fs::remove_file(&path);
                Some(fp?)
            }
        };
        if git::index_fingerprint(repo)? != before {
            return Err(Error::IndexChangedDuringRun);
        }
        Ok(())
    }
}

impl Guard {
    /// Whether the index file still has the length and ends in the checksum it had: git and libgit2 end every
    /// index with the SHA-1 of the bytes before it, so these 20 bytes stand for the file, and a look at them spares
    /// reading the whole file again (its pages were a third of a `--continue`'s page faults on git.git). An
    /// all-zero checksum (`index.skipHash`) stands for nothing: `false`, and the caller compares the bytes.
    fn same_checksum(&self, repo: &Repository) -> Result<bool, Error> {
        use std::os::unix::fs::FileExt;
        let Some(before) = &self.index else {
            return Ok(false);
        };
        let Some(tail) = before.len().checked_sub(20).map(|at| &before[at..]) else {
            return Ok(false);
        };
        if tail.iter().all(|&b| b == 0) {
            return Ok(false);
        }
        let path = repo.path().join("index");
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(io(e)),
        };
        let len = file.metadata().map_err(io)?.len();
        if len != before.len() as u64 {
            return Ok(false);
        }
        let mut now = [0u8; 20];
        file.read_exact_at(&mut now, len - 20).map_err(io)?;
        Ok(now[..] == *tail)
    }
}

/// The worktree's index file, whole (`None` when there is none).
fn read_index_file(repo: &Repository) -> Result<Option<Vec<u8>>, Error> {
    let path = repo.path().join("index");
    match std::fs::read(&path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Io { path, source }),
    }
}

/// Runs the steps from `state.position`, updating `state` and saving it at the points the module doc shows.
/// With `dry_run`, nothing is written: conflicts are recorded as predictions and the run goes on.
pub fn run(
    repo: &Repository,
    st: &mut State,
    progress: &mut dyn Progress,
    dry_run: bool,
    timings: &mut Timings,
) -> Result<RunEnd, Error> {
    // Objects are only created from trees and commits we just read; re-validating each one costs a lookup per
    // entry (143 ms vs 42 ms a pick on a 30,000-file repo).
    git2::opts::strict_object_creation(false);
    crate::git::read_objects_as_git_does();
    // A private handle: the mempack is attached to its object database only, so nothing written later through
    // `repo` (index trees, rerere) can land in memory and be lost.
    let work = Repository::open(repo.path())
        .context_git(|| format!("opening {}", repo.path().display()))?;
    let odb = work.odb().context_git(|| "opening the object database")?;
    let mempack = odb
        .add_new_mempack_backend(1000)
        .context_git(|| "adding an in-memory object store")?;
    let mut run = Run::start(repo, &work, &mempack, st, dry_run)?;
    let total = st.plan.steps.len();
    let mut blocked: Option<Vec<String>> = None;

    while st.position < total {
        let i = st.position;
        let step = st.plan.steps[i].clone();
        let result = match step.action {
            Action::Skip { because } => StepResult::Applied { because },
            Action::Pick { .. } => {
                let commit = work
                    .find_commit(step.commit)
                    .context_git(|| format!("reading {}", step.commit))?;
                let started = Instant::now();
                let picked = run.pick(st, &commit, &step.subject, progress)?;
                let merged = Timings::lap(&mut timings.merge, started);
                if let Some(index) = &run.index {
                    let touched =
                        touched_paths(repo, &work, index, &mut run.cache, run.tip_tree, &picked)?;
                    if !touched.is_empty() {
                        blocked = Some(touched);
                        break;
                    }
                }
                if !picked.conflicts.is_empty() {
                    if dry_run {
                        run.predict_past_conflict(picked)?
                    } else {
                        run.flush_objects(progress)?;
                        let flushed = Timings::lap(&mut timings.objects, merged);
                        let conflicts = picked.conflicts;
                        let rerere = stop_at_conflict(
                            repo,
                            st,
                            picked.tree,
                            &conflicts,
                            &run.guard,
                            progress,
                        )?;
                        Timings::lap(&mut timings.materialize, flushed);
                        return Ok(RunEnd::Stopped(conflicts, rerere));
                    }
                } else if picked.tree == run.tip_tree {
                    StepResult::Empty
                } else {
                    let new = run.commit_clean(st, &commit, picked.tree);
                    Timings::lap(&mut timings.objects, merged);
                    StepResult::Picked { new }
                }
            }
        };
        progress.step(i, total, &step, &result);
        st.results[i] = Some(result);
        st.position += 1;
    }
    if dry_run {
        mempack
            .reset()
            .context_git(|| "dropping in-memory objects")?;
        return Ok(RunEnd::Done);
    }
    run.write_out(st, blocked, progress, timings)
}

/// What the steps of one run share: the repositories, the settings read once, and what the picks made so far.
struct Run<'a, 'm> {
    repo: &'a Repository,
    /// The run's private handle, whose object database holds `mempack`.
    work: &'a Repository,
    mempack: &'a git2::Mempack<'m>,
    dry_run: bool,
    committer: git2::Signature<'static>,
    sob: String,
    style: ConflictStyle,
    rules: MessageRules,
    /// Marker labels carry the abbreviation git would print (longer than 7 digits in big repositories).
    abbrev: usize,
    /// The tip's tree; it and the commits made here live in `cache` until the pack is written: only their ids
    /// are needed.
    tip_tree: Oid,
    /// Every object the run creates is listed in `cache` as the picks make it, for the one pack at the end: the
    /// mempack cannot list its objects, and `git_mempack_dump` walks each commit's whole tree (30,000 entries a
    /// commit in the benchmark).
    cache: pick::PickCache,
    guard: Guard,
    /// Uncommitted changes in the worktree may stay as long as no pick writes their paths (git's cherry-pick
    /// refuses at the first pick that would, with the picks before it committed). Only the paths each pick
    /// writes are looked at: a look at every index entry costs an `lstat` each, more than a pick on a big tree.
    /// `None` in a dry run.
    index: Option<git2::Index>,
}

impl<'a, 'm> Run<'a, 'm> {
    /// Reads the settings and the tip, and takes the guard.
    fn start(
        repo: &'a Repository,
        work: &'a Repository,
        mempack: &'a git2::Mempack<'m>,
        st: &State,
        dry_run: bool,
    ) -> Result<Self, Error> {
        let committer = git::committer(work)?;
        let sob = format!(
            "Signed-off-by: {} <{}>",
            committer.name().unwrap_or_default(),
            committer.email().unwrap_or_default()
        );
        let style = ConflictStyle::from_config(work);
        let rules = MessageRules::from_config(work);
        let abbrev = git::abbrev_len(work);
        let tip_tree = work
            .find_commit(st.tip)
            .context_git(|| format!("reading {}", st.tip))?
            .tree_id();
        let mut cache = pick::PickCache::new();
        cache.set_renames(st.options.renames.settings(work));
        cache.set_attributes(super::attributes::Attributes::read(work)?, tip_tree);
        let guard = Guard::take(repo)?;
        let index = (!dry_run)
            .then(|| repo.index().context_git(|| "reading the index"))
            .transpose()?;
        Ok(Run {
            repo,
            work,
            mempack,
            dry_run,
            committer,
            sob,
            style,
            rules,
            abbrev,
            tip_tree,
            cache,
            guard,
            index,
        })
    }

    /// Picks `commit` onto the tip in memory, under the attributes its merge needs, with the conflict labels git
    /// would print.
    fn pick(
        &mut self,
        st: &mut State,
        commit: &Commit<'_>,
        subject: &str,
        progress: &mut dyn Progress,
    ) -> Result<pick::Picked, Error> {
        // Labels only show in conflicts; the uniqueness check of the abbreviation costs a prefix lookup, so it
        // runs only when a pick conflicts (and re-renders in the rare case of a collision).
        let hex = commit.id().to_string();
        let mut markers = Markers::for_commit(&hex[..self.abbrev.min(40)], subject, self.style);
        let mut moved = false;
        let mut picked = loop {
            match self.pick_once(st, commit, &markers) {
                // An earlier pick changed a `.gitattributes` this one merges under: git's sequencer would read
                // the new one from its worktree, so the worktree and branch catch up with the picks so far (as
                // at the end of a run) and the pick runs again. A dry run writes nothing and predicts under the
                // attributes the worktree has.
                Err(Error::AttributesChangedInRun { .. }) if !moved => {
                    moved = true;
                    if self.dry_run {
                        self.cache.accept_attributes(self.tip_tree);
                    } else {
                        self.catch_up_with_attributes(st, progress)?;
                    }
                }
                other => break other?,
            }
        };
        if !picked.conflicts.is_empty() {
            let short = git::short_id(self.work, commit.id(), self.abbrev)?;
            if short.len() != self.abbrev {
                markers = Markers::for_commit(&short, subject, self.style);
                picked = self.pick_once(st, commit, &markers)?;
            }
        }
        Ok(picked)
    }

    /// One in-memory pick of `commit` onto the tip with conflict labels `markers`.
    fn pick_once(
        &mut self,
        st: &State,
        commit: &Commit<'_>,
        markers: &Markers,
    ) -> Result<pick::Picked, Error> {
        pick::pick(
            self.work,
            self.tip_tree,
            commit,
            st.options.mainline,
            st.options.favor,
            markers,
            &mut self.cache,
        )
    }

    /// Writes the picks so far out (objects, worktree, index, branch) and reads the attributes they leave.
    fn catch_up_with_attributes(
        &mut self,
        st: &mut State,
        progress: &mut dyn Progress,
    ) -> Result<(), Error> {
        self.flush_objects(progress)?;
        catch_up(
            self.repo,
            self.work,
            st,
            self.tip_tree,
            &self.guard,
            progress,
        )?;
        self.guard = Guard::take(self.repo)?;
        // The checkout wrote the index through `work`: `repo`'s copy, which the next picks' worktree checks
        // read, is read again when the file changed.
        let mut index = self.repo.index().context_git(|| "reading the index")?;
        index.read(false).context_git(|| "reading the index")?;
        self.index = Some(index);
        self.cache.set_attributes(
            super::attributes::Attributes::read(self.work)?,
            self.tip_tree,
        );
        Ok(())
    }

    /// Writes the objects made so far as a pack, when there are any, and empties the mempack.
    fn flush_objects(&mut self, progress: &mut dyn Progress) -> Result<(), Error> {
        if self.write_pack(progress)? {
            self.mempack
                .reset()
                .context_git(|| "emptying the in-memory object store")?;
        }
        Ok(())
    }

    /// Writes the objects made so far as a pack when there are any (and says whether there were), then forgets
    /// them: from then on they are read from the pack on disk (every written blob is among the created objects).
    fn write_pack(&mut self, progress: &mut dyn Progress) -> Result<bool, Error> {
        let any = !self.cache.created().is_empty();
        if any {
            flush(
                self.repo,
                self.work,
                self.cache.written(),
                self.cache.created(),
                progress,
            )?;
            self.cache.clear_written();
        }
        Ok(any)
    }

    /// In a dry run, predicts the rest as the run would go on if the user resolved this stop by taking the picked
    /// side of each conflicted path (`git checkout --theirs`, or `git rm` where the pick deletes it) and
    /// continued: the clean part of the patch is in, and so are the lines the next patches of the series build
    /// on. Keeping the branch's side instead predicted stops at every later patch of the series that touches
    /// those lines.
    fn predict_past_conflict(&mut self, picked: pick::Picked) -> Result<StepResult, Error> {
        let edits: Vec<crate::git::TreeEdit> = picked
            .conflicts
            .iter()
            .map(|c| (c.path.clone(), c.theirs))
            .collect();
        self.tip_tree = self.cache.edit_tree(self.work, picked.tree, &edits)?;
        Ok(StepResult::Conflict {
            paths: picked.conflicts.iter().map(|c| c.path.clone()).collect(),
        })
    }

    /// Commits a clean pick with tree `tree` on the tip (in memory) and makes it the tip.
    fn commit_clean(&mut self, st: &mut State, commit: &Commit<'_>, tree: Oid) -> Oid {
        let message = pick_message(commit, st, &self.sob, &self.rules, Made::Clean);
        let new = self.cache.add_commit(git::commit_bytes(
            tree,
            &[st.tip],
            &commit.author(),
            &self.committer,
            &message,
        ));
        self.tip_tree = tree;
        st.tip = new;
        new
    }

    /// The end of a run that did not stop: writes the pack, then (in the order the module doc shows) the state,
    /// worktree, index and branch; refuses with the paths `blocked` names when a pick would have written over
    /// worktree changes.
    fn write_out(
        mut self,
        st: &mut State,
        blocked: Option<Vec<String>>,
        progress: &mut dyn Progress,
        timings: &mut Timings,
    ) -> Result<RunEnd, Error> {
        let started = Instant::now();
        // The final checkout reads the new blobs from the pack now on disk.
        self.write_pack(progress)?;
        let flushed = Timings::lap(&mut timings.objects, started);
        st.phase = Phase::Running;
        if st.tip == st.anchor {
            if let Some(paths) = blocked {
                state::save(self.repo.path(), st)?;
                return Err(Error::Git(git::Error::LocalChanges { paths }));
            }
        } else {
            // Last look before writing: from here on the worktree and index are the run's until the branch moves.
            self.guard.check(self.repo, st)?;
            st.writing = Some(Writing {
                tree: self.tip_tree,
                also: Vec::new(),
            });
        }
        state::save(self.repo.path(), st)?;
        fault::point("state-saved");
        progress.checkpoint(Checkpoint::StateSaved);
        // The checkout reads the new trees and blobs from the pack just written (blobs of binary merges from the
        // mempack, which still holds them).
        move_to_tip(self.repo, self.work, st, progress)?;
        Timings::lap(&mut timings.materialize, flushed);
        if let Some(paths) = blocked {
            state::save(self.repo.path(), st)?;
            return Err(Error::Git(git::Error::LocalChanges { paths }));
        }
        Ok(RunEnd::Done)
    }
}

/// The paths the pick `picked` onto `tip` writes (its conflicted paths and the paths whose entry differs between
/// the two trees, read through `cache`, which holds the run's trees) that have changes in the worktree, sorted.
fn touched_paths(
    repo: &Repository,
    work: &Repository,
    index: &git2::Index,
    cache: &mut pick::PickCache,
    tip: Oid,
    picked: &pick::Picked,
) -> Result<Vec<String>, Error> {
    let mut written = cache.changed_paths(work, tip, picked.tree)?;
    written.extend(picked.conflicts.iter().map(|c| c.path.clone()));
    let mut out = git::unstaged_changes_among(repo, index, written.iter().map(String::as_str))?;
    out.sort();
    Ok(out)
}

/// Moves the worktree, index and branch to the run's tip in the middle of a run (the objects already written),
/// saving the state around it as the end of a run does.
fn catch_up(
    repo: &Repository,
    work: &Repository,
    st: &mut State,
    tip_tree: Oid,
    guard: &Guard,
    progress: &mut dyn Progress,
) -> Result<(), Error> {
    if st.tip == st.anchor {
        return Ok(());
    }
    guard.check(repo, st)?;
    st.phase = Phase::Running;
    st.writing = Some(Writing {
        tree: tip_tree,
        also: Vec::new(),
    });
    state::save(repo.path(), st)?;
    move_to_tip(repo, work, st, progress)?;
    state::save(repo.path(), st)
}

/// Creates the commit for a resolved stop: original author and message (cleaned up as `git cherry-pick --continue`
/// cleans it: comment lines dropped), the user as committer.
pub fn commit_pick(
    repo: &Repository,
    original: &Commit<'_>,
    tree: Oid,
    parent: &Commit<'_>,
    st: &State,
    committer: &git2::Signature<'_>,
    sob: &str,
) -> Result<Oid, Error> {
    let tree = repo
        .find_tree(tree)
        .context_git(|| format!("reading tree {tree}"))?;
    let rules = MessageRules::from_config(repo);
    let message = pick_message(original, st, sob, &rules, Made::AfterConflict);
    Ok(repo
        .commit(
            None,
            &original.author(),
            committer,
            &message,
            &tree,
            &[parent],
        )
        .context_git(|| format!("committing the pick of {}", original.id()))?)
}

/// The message of the pick of `original`: its own, with `-x` and `-s` lines as the run's options ask, cleaned up as
/// git cleans up a pick made that way.
fn pick_message(
    original: &Commit<'_>,
    st: &State,
    sob: &str,
    rules: &MessageRules,
    made: Made,
) -> String {
    let message = String::from_utf8_lossy(original.message_raw_bytes());
    picked_message(
        &message,
        &original.id().to_string(),
        st.options.record_origin,
        st.options.signoff.then_some(sob),
        rules,
        made,
    )
}

/// Writes the objects the run created to the object database as one undeltified pack (see
/// [`git::write_pack`]: no delta search, no re-indexing). The mempack keeps its copies until the caller resets it.
fn flush(
    repo: &Repository,
    work: &Repository,
    blobs: &git::MemoryObjects,
    created: &[(Oid, Option<Oid>)],
    progress: &mut dyn Progress,
) -> Result<(), Error> {
    // `repo`'s object database has no mempack: what it holds is on disk.
    let disk = repo.odb().context_git(|| "opening the object database")?;
    let source = work.odb().context_git(|| "opening the object database")?;
    // Linked worktrees keep their objects in the common directory.
    let pack_dir = work.commondir().join("objects/pack");
    let listed = state::load_run_packs(repo.path(), &pack_dir);
    let absorb = packs_to_absorb(&listed, created.len());
    let written = git::write_pack_absorbing(&source, blobs, &disk, &pack_dir, created, &absorb)?;
    // `work` reads through its own on-disk backends, which must see the new pack before the mempack is emptied.
    source.refresh().context_git(|| "reading the new pack")?;
    fault::point("pack-written");
    progress.checkpoint(Checkpoint::PackWritten);
    if let Some(pack) = written.pack {
        let mut packs: Vec<(std::path::PathBuf, usize)> = listed
            .into_iter()
            .filter(|(p, _)| !written.absorbed.contains(p))
            .collect();
        packs.push((pack, written.objects));
        // Only a cache: when it cannot be written, the absorbed packs stay (their objects are then in two packs,
        // which git reads as once) rather than the run failing after its objects are safe.
        if let Err(e) = state::save_run_packs(repo.path(), &packs) {
            log::debug!("keeping the list of the run's packs: {e}");
            return Ok(());
        }
        // The new pack, synced and renamed into place, holds every object of these: they can go. The index
        // first, so that no index ever names a missing pack; a crash in between leaves objects twice, which git
        // reads as once. libgit2 handles that still list them find the objects in the new pack.
        for old in &written.absorbed {
            let _ = std::fs::remove_file(old.with_extension("idx"));
            let _ = std::fs::remove_file(old);
        }
    }
    Ok(())
}

/// The run's packs to copy into the one about to be written with `new` objects: the newest ones, as long as each
/// is no more than twice the objects gathered so far, so that pack sizes grow geometrically (a run keeps a few
/// packs, and an object is copied a few times at most) as git's `repack --geometric=2` keeps them.
fn packs_to_absorb(listed: &[(std::path::PathBuf, usize)], new: usize) -> Vec<std::path::PathBuf> {
    let mut gathered = new;
    let mut out = Vec::new();
    for (path, objects) in listed.iter().rev() {
        if *objects > 2 * gathered {
            break;
        }
        gathered += objects;
        out.push(path.clone());
    }
    out.reverse();
    out
}

/// Checks out `st.tip` and moves the branch there (from `st.anchor`), then records the new anchor. The tree and
/// blobs are read through `objects` (the same repository, possibly with the run's mempack still attached).
fn move_to_tip(
    repo: &Repository,
    objects: &Repository,
    st: &mut State,
    progress: &mut dyn Progress,
) -> Result<(), Error> {
    if st.tip != st.anchor {
        let tree = objects
            .find_commit(st.tip)
            .and_then(|c| c.tree())
            .context_git(|| format!("reading {}", st.tip))?;
        check_nothing_in_the_way(objects, st.anchor, &tree, &[])?;
        let from = objects
            .find_commit(st.anchor)
            .and_then(|c| c.tree())
            .context_git(|| format!("reading {}", st.anchor))?;
        // Only the paths the run changed: without a path list libgit2 walks and stats the whole worktree
        // (fstat, readlink and path lookups of every file cost ~8% of a real-history run). The rest
        // is the same in both trees, so a full checkout would leave it as it is too.
        let changed = git::tree_changes(objects, Some(&from), Some(&tree))?;
        if !changed.is_empty() {
            let _note = state::IndexNote::start(repo.path())?;
            write_changes(repo, objects, &tree, changed, &[], IndexWrite::Here)?;
        }
        fault::point("worktree-updated");
        progress.checkpoint(Checkpoint::WorktreeUpdated);
        set_branch(repo, st, st.tip, "bport apply")?;
        fault::point("branch-moved");
        st.anchor = st.tip;
        st.writing = None;
    }
    Ok(())
}

/// Who writes the index file after [`write_changes`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum IndexWrite {
    /// `write_changes` does.
    Here,
    /// The caller, after changing more entries of `repo`'s index (`objects` must then be `repo`, whose index the
    /// checkout updated): each libgit2 write hashes the whole file with collision-detecting SHA-1, and each forced
    /// read parses and hashes it again (~15 M and ~23 M instructions on git.git's 400 KB index).
    ByCaller,
}

/// Writes the paths `changed` between the index's tree and `tree` (read through `objects`): a safe checkout of
/// each path the worktree holds, and an index-only update, skip-worktree kept, of each path a sparse checkout
/// leaves out (`conflicted` paths are written by the caller, as git materialises a conflict outside the cone).
/// Only the listed paths: without a path list libgit2 walks and stats the whole worktree, and its checkout does
/// not know skip-worktree (a path absent from a sparse worktree counts as deleted, so "conflicts prevent
/// checkout").
fn write_changes(
    repo: &Repository,
    objects: &Repository,
    tree: &git2::Tree<'_>,
    changed: Vec<git::Change>,
    conflicted: &[&str],
    write: IndexWrite,
) -> Result<(), Error> {
    let sparse = git::Sparse::load(repo)?;
    let index = repo.index().context_git(|| "reading the index")?;
    let (worktree, index_only): (Vec<git::Change>, Vec<git::Change>) =
        git::split_changes(&index, sparse.as_ref(), changed);
    let index_only: Vec<git::Change> = index_only
        .into_iter()
        .filter(|c| !conflicted.contains(&c.path.as_str()))
        .collect();
    drop(index);
    if !worktree.is_empty() {
        let mut checkout = CheckoutBuilder::new();
        checkout
            .safe()
            .disable_pathspec_match(true)
            .progress(|_, _, _| fault::point("checkout-file"));
        for c in &worktree {
            checkout.path(c.path.as_str());
        }
        objects
            .checkout_tree(tree.as_object(), Some(&mut checkout))
            .context_git(|| "updating the worktree")?;
    }
    if sparse.is_none() && index_only.is_empty() {
        return Ok(());
    }
    let mut index = repo.index().context_git(|| "reading the index")?;
    if write == IndexWrite::Here {
        // The checkout may have written the index through another handle.
        index.read(true).context_git(|| "reading the index")?;
    }
    git::update_index_only(&mut index, &index_only)?;
    if let Some(sparse) = &sparse {
        git::reapply_sparse(repo, &mut index, sparse, conflicted)?;
    }
    if write == IndexWrite::Here {
        index.write().context_git(|| "writing the index")?;
    }
    Ok(())
}

/// Refuses, naming them, when untracked files sit where checking out `to` over `from` (a commit) would write:
/// libgit2's safe checkout would only say "1 conflict prevents checkout", and a forced one would
/// destroy them. The state already names the new tip, so `--continue` retries once they are moved.
pub fn check_nothing_in_the_way(
    repo: &Repository,
    from: Oid,
    to: &git2::Tree<'_>,
    also: &[String],
) -> Result<(), Error> {
    let from_tree = repo
        .find_commit(from)
        .and_then(|c| c.tree())
        .context_git(|| format!("reading {from}"))?;
    let paths = git::untracked_in_the_way(repo, Some(&from_tree), to, also)?;
    if paths.is_empty() {
        Ok(())
    } else {
        Err(Error::Git(git::Error::UntrackedInTheWay { paths }))
    }
}

/// Moves the branch (or detached HEAD) from `st.anchor` to `to`.
pub fn set_branch(repo: &Repository, st: &State, to: Oid, why: &str) -> Result<(), Error> {
    match &st.branch {
        Some(name) => {
            repo.reference_matching(name, to, true, st.anchor, why)
                .context_git(|| format!("moving {name} to {to}"))?;
        }
        None => repo
            .set_head_detached(to)
            .context_git(|| format!("moving HEAD to {to}"))?,
    }
    Ok(())
}

/// The one place a run stops at a conflict: index and worktree get the partial pick `partial` (clean paths staged)
/// with each conflicted path as git leaves it (stages 1–3 in the index, markers in the file), the branch moves to
/// the last pick, and the state records the stop.
///
/// The rerere helper hooks in at `rerere_step` below: after markers and stages are written, before the stop is
/// saved, so that a resolution it replays is part of the stop the user sees.
pub fn stop_at_conflict(
    repo: &Repository,
    st: &mut State,
    partial: Oid,
    conflicts: &[Conflict],
    guard: &Guard,
    progress: &mut dyn Progress,
) -> Result<crate::rerere::RerereOutcome, Error> {
    st.phase = Phase::Running;
    let tree = repo
        .find_tree(partial)
        .context_git(|| format!("reading tree {partial}"))?;
    // The stop writes conflicted paths the branch lacks itself (their side, or a submodule's directory).
    let written: Vec<String> = conflicts
        .iter()
        .filter(|c| c.ours.is_none())
        .map(|c| c.path.clone())
        .collect();
    check_nothing_in_the_way(repo, st.anchor, &tree, &written)?;
    // Last look before writing: from here on the worktree and index are the run's until the stop is saved.
    guard.check(repo, st)?;
    st.writing = Some(Writing {
        tree: partial,
        also: written,
    });
    state::save(repo.path(), st)?;
    fault::point("stop-state-saved");
    progress.checkpoint(Checkpoint::StateSaved);

    let note = state::IndexNote::start(repo.path())?;
    // Only the paths the stop changes, as in `move_to_tip`: a checkout without a path list walks and stats the
    // whole worktree, which cost about a fifth of each `--continue` that stops again on a 4,000-file tree.
    let from = repo
        .find_commit(st.anchor)
        .and_then(|c| c.tree())
        .context_git(|| format!("reading {}", st.anchor))?;
    let changed = git::tree_changes(repo, Some(&from), Some(&tree))?;
    let conflicted: Vec<&str> = conflicts.iter().map(|c| c.path.as_str()).collect();
    write_changes(
        repo,
        repo,
        &tree,
        changed,
        &conflicted,
        IndexWrite::ByCaller,
    )?;
    write_conflicts(repo, conflicts)?;
    fault::point("stop-index-written");
    progress.checkpoint(Checkpoint::WorktreeUpdated);
    set_branch(repo, st, st.tip, "bport apply: stopped at a conflict")?;
    fault::point("stop-branch-moved");
    st.anchor = st.tip;

    let outcome = rerere_step(repo, st)?;
    drop(note);
    fault::point("stop-rerere-done");
    progress.rerere(&outcome);

    st.phase = Phase::Stopped {
        paths: conflicts.iter().map(|c| c.path.clone()).collect(),
    };
    st.results[st.position] = Some(StepResult::Conflict {
        paths: conflicts.iter().map(|c| c.path.clone()).collect(),
    });
    state::save(repo.path(), st)?;
    fault::point("stop-saved");
    Ok(outcome)
}

/// Stages each conflicted path as git leaves it (stages 1–3 in place of stage 0) and writes its worktree file (the
/// markers, or the branch's version), then writes `repo`'s index, which the stop's checkout updated.
fn write_conflicts(repo: &Repository, conflicts: &[Conflict]) -> Result<(), Error> {
    let workdir = repo.workdir().ok_or_else(|| Error::BareRepository {
        path: repo.path().to_path_buf(),
    })?;
    let mut index = repo.index().context_git(|| "reading the index")?;
    for c in conflicts {
        let path = Path::new(&c.path);
        let _ = index.remove(path, 0);
        for (stage, side) in [(1u16, c.base), (2, c.ours), (3, c.theirs)] {
            if let Some(side) = side {
                index
                    .add(&stage_entry(&c.path, side, stage))
                    .context_git(|| format!("staging {} (stage {stage})", c.path))?;
            }
        }
        let file = workdir.join(path);
        if let Some(content) = &c.worktree {
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir).map_err(|source| Error::Io {
                    path: dir.to_path_buf(),
                    source,
                })?;
            }
            std::fs::write(&file, content).map_err(|source| Error::Io {
                path: file.clone(),
                source,
            })?;
            set_executable(&file, c.mode == 0o100755)?;
        } else if c.mode == pick::GITLINK {
            // git leaves a submodule's directory in the tree at a gitlink conflict (an empty one when the
            // submodule is not checked out), never a file.
            std::fs::create_dir_all(&file).map_err(|source| Error::Io {
                path: file.clone(),
                source,
            })?;
        }
    }
    index.write().context_git(|| "writing the index")?;
    Ok(())
}

/// Records preimages and replays recorded resolutions for the conflicts just written (git's `rerere()` after a
/// failed pick) unless `rerere.enabled` is false; with `--autoupdate` or `rerere.autoupdate` the resolved files
/// are staged (only `--autoupdate` goes on without the user).
fn rerere_step(repo: &Repository, st: &State) -> Result<crate::rerere::RerereOutcome, Error> {
    let rr = crate::rerere::Rerere::open(repo)?;
    if !rr.enabled {
        return Ok(crate::rerere::RerereOutcome::default());
    }
    Ok(crate::rerere::rerere(
        &rr,
        &crate::rerere::RerereOptions {
            autoupdate: st.options.autoupdate || rr.autoupdate,
        },
    )?)
}

/// The stop's rerere outcome decides whether an `--autoupdate` run may go on without the user.
pub fn stop_fully_resolved(outcome: &crate::rerere::RerereOutcome) -> bool {
    outcome.all_resolved()
}

fn stage_entry(path: &str, side: pick::Side, stage: u16) -> IndexEntry {
    IndexEntry {
        ctime: IndexTime::new(0, 0),
        mtime: IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode: side.mode,
        uid: 0,
        gid: 0,
        file_size: 0,
        id: side.oid,
        flags: (stage << 12) | (path.len().min(0xfff) as u16),
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}

fn set_executable(file: &Path, executable: bool) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    let io = |source| Error::Io {
        path: file.to_path_buf(),
        source,
    };
    let mut perms = std::fs::metadata(file).map_err(io)?.permissions();
    let mode = perms.mode();
    perms.set_mode(if executable {
        mode | 0o111
    } else {
        mode & !0o111
    });
    std::fs::set_permissions(file, perms).map_err(io)
}

/// Resets HEAD (and its branch), index and worktree to `to`, and deletes files that only the
/// index knew about (paths a stopped pick added), which a hard reset would leave behind as untracked, and the
/// files an interrupted write (`writing`) created that `to` lacks.
pub fn hard_reset(repo: &Repository, to: Oid, writing: Option<&Writing>) -> Result<(), Error> {
    let target = repo
        .find_commit(to)
        .context_git(|| format!("reading {to}"))?;
    let target_tree = target.tree().context_git(|| "reading the tree")?;
    let head_tree = repo.head().and_then(|h| h.peel_to_tree()).ok();
    let index = repo.index().context_git(|| "reading the index")?;
    // git's reset (`--abort`'s `reset --merge`) leaves a path unmerged before it in the worktree even outside
    // the sparse patterns.
    let unmerged: Vec<String> = index
        .iter()
        .filter(|e| (e.flags >> 12) & 3 != 0)
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect();
    let (staged_paths, strays) = staged_and_strays(repo, head_tree.as_ref(), &index, &target_tree)?;
    let created = match writing {
        Some(w) => created_by(repo, w, &target_tree)?,
        None => Vec::new(),
    };
    let mut paths = paths_the_run_may_have_written(
        repo,
        head_tree.as_ref(),
        &target_tree,
        writing,
        &index,
        &unmerged,
    )?;
    paths.extend(staged_paths);
    drop(index);
    let _note = state::IndexNote::start(repo.path())?;
    // Checked out before HEAD moves: the baseline is the current HEAD tree, so files the picks added go.
    if !paths.is_empty() {
        reset_paths(repo, &target_tree, to, &paths)?;
    }
    repo.reset(target.as_object(), ResetType::Soft, None)
        .context_git(|| format!("resetting to {to}"))?;
    fault::point("reset-done");
    restore_sparse_layout(repo, &unmerged)?;
    remove_strays_and_created(repo, strays, created)
}

/// The paths the index changes against HEAD (submodules left out), and the strays among them: paths only the
/// index has, neither HEAD's tree nor `target_tree`, which a hard reset would leave behind as untracked.
fn staged_and_strays(
    repo: &Repository,
    head_tree: Option<&git2::Tree<'_>>,
    index: &git2::Index,
    target_tree: &git2::Tree<'_>,
) -> Result<StagedAndStrays, Error> {
    if let Some(found) = staged_and_strays_in_memory(repo, head_tree, index, target_tree)? {
        return Ok(found);
    }
    let mut strays = Vec::new();
    // Only paths the index has and HEAD's tree lacks can be strays: found by one diff, not by looking every
    // entry up from the root (libgit2 does not cache a tree over 4 KiB, so each lookup inflated the root tree
    // again: 84% of a `--skip` on a 4,000-file tree).
    let staged = repo
        .diff_tree_to_index(head_tree, Some(index), None)
        .context_git(|| "comparing the index with HEAD")?;
    // Every path the index changes against HEAD (submodules left out): the run's own writes, reset below. One
    // diff of HEAD with the index answers it; a status would also walk and stat the whole worktree (a third of
    // a `--skip`'s CPU on a 4,000-file tree) for worktree changes nothing here looks at.
    let mut staged_paths = Vec::new();
    for delta in staged.deltas() {
        let Some(path) = delta.new_file().path().or(delta.old_file().path()) else {
            continue;
        };
        let gitlink = |f: git2::DiffFile<'_>| f.mode() == git2::FileMode::Commit;
        if !(gitlink(delta.old_file()) || gitlink(delta.new_file())) {
            staged_paths.push(path.to_string_lossy().into_owned());
        }
        if !matches!(delta.status(), git2::Delta::Added | git2::Delta::Conflicted) {
            continue;
        }
        let in_tree = |t: &git2::Tree<'_>| t.get_path(path).is_ok();
        if !in_tree(target_tree) && !head_tree.is_some_and(in_tree) {
            strays.push(path.to_string_lossy().into_owned());
        }
    }
    Ok((staged_paths, strays))
}

/// The paths the index changes against HEAD, and the strays among them (see [`staged_and_strays`]).
type StagedAndStrays = (Vec<String>, Vec<String>);

/// [`staged_and_strays`] from [`git::index_changes`], which reads HEAD's trees only where the index's differ (libgit2's
/// tree-to-index diff reads all of them: a tenth of a `--skip` on git.git); `None` where that comparison is not
/// libgit2's: no HEAD, `core.ignorecase` (libgit2 folds case, the comparison is byte-exact), a submodule among the
/// conflict stages, or an index [`git::index_changes`] leaves to libgit2.
fn staged_and_strays_in_memory(
    repo: &Repository,
    head_tree: Option<&git2::Tree<'_>>,
    index: &git2::Index,
    target_tree: &git2::Tree<'_>,
) -> Result<Option<StagedAndStrays>, Error> {
    let Some(head_tree) = head_tree else {
        return Ok(None);
    };
    let config = repo.config().context_git(|| "reading the git config")?;
    if config.get_bool("core.ignorecase").unwrap_or(false)
        || index
            .iter()
            .any(|e| (e.flags >> 12) & 3 != 0 && e.mode == pick::GITLINK)
    {
        return Ok(None);
    }
    let odb = repo.odb().context_git(|| "opening the object database")?;
    let Some(changes) = git::index_changes(&odb, index, head_tree.id())? else {
        return Ok(None);
    };
    let in_trees = |path: &str| {
        let path = Path::new(path);
        target_tree.get_path(path).is_ok() || head_tree.get_path(path).is_ok()
    };
    let gitlink = |side: Option<pick::Side>| side.is_some_and(|s| s.mode == pick::GITLINK);
    let mut staged_paths = Vec::new();
    let mut strays = Vec::new();
    for c in &changes.staged {
        // An unmerged path is missing from the stage-0 tree; libgit2 lists it once, as conflicted (below).
        if changes.unmerged.contains(&c.path) {
            continue;
        }
        if !(gitlink(c.old) || gitlink(c.new)) {
            staged_paths.push(c.path.clone());
        }
        if c.old.is_none() && !in_trees(&c.path) {
            strays.push(c.path.clone());
        }
    }
    for path in changes.unmerged {
        let at_head = head_tree.get_path(Path::new(&path)).ok();
        if at_head.is_none_or(|e| e.filemode() as u32 != pick::GITLINK) {
            staged_paths.push(path.clone());
        }
        if !in_trees(&path) {
            strays.push(path);
        }
    }
    Ok(Some((staged_paths, strays)))
}

/// Only the paths the run may have written: those where HEAD or an interrupted write differ from `target_tree`,
/// and the unmerged ones (every index path when there is no HEAD tree; the caller adds those the index changes).
/// Everything else is the same in HEAD, the index and the target, so a worktree change there is the user's own
/// (git's `reset --merge` keeps it too) and a hard reset of the whole tree would destroy it.
fn paths_the_run_may_have_written(
    repo: &Repository,
    head_tree: Option<&git2::Tree<'_>>,
    target_tree: &git2::Tree<'_>,
    writing: Option<&Writing>,
    index: &git2::Index,
    unmerged: &[String],
) -> Result<std::collections::BTreeSet<String>, Error> {
    let mut paths: std::collections::BTreeSet<String> = unmerged.iter().cloned().collect();
    if let Some(head_tree) = head_tree {
        for c in git::tree_changes(repo, Some(head_tree), Some(target_tree))? {
            paths.insert(c.path);
        }
        if let Some(w) = writing {
            let tree = repo
                .find_tree(w.tree)
                .context_git(|| format!("reading tree {}", w.tree))?;
            for c in git::tree_changes(repo, Some(head_tree), Some(&tree))? {
                paths.insert(c.path);
            }
            paths.extend(w.also.iter().cloned());
        }
    } else {
        paths.extend(
            index
                .iter()
                .map(|e| String::from_utf8_lossy(&e.path).into_owned()),
        );
    }
    Ok(paths)
}

/// Checks `paths` out of `target_tree` by force and makes their index entries the target's (stage 0 only).
fn reset_paths(
    repo: &Repository,
    target_tree: &git2::Tree<'_>,
    to: Oid,
    paths: &std::collections::BTreeSet<String>,
) -> Result<(), Error> {
    let mut checkout = CheckoutBuilder::new();
    checkout
        .force()
        .disable_pathspec_match(true)
        .progress(|_, _, _| fault::point("reset-file"));
    for p in paths {
        checkout.path(p.as_str());
    }
    repo.checkout_tree(target_tree.as_object(), Some(&mut checkout))
        .context_git(|| format!("resetting to {to}"))?;
    // The checkout updated and wrote this handle's index: it is read again only if someone else wrote the
    // file since (a forced read parsed all of it again, 5% of a `--skip` on a 4,000-file tree).
    let mut index = repo.index().context_git(|| "reading the index")?;
    index.read(false).context_git(|| "reading the index")?;
    // Written again only when an entry is still not the target's: each libgit2 write hashes the whole file with
    // collision-detecting SHA-1 (~15 M instructions on git.git's 400 KB index, a tenth of a `--skip`).
    let mut changed = false;
    for p in paths {
        let path = Path::new(p);
        for stage in 1..=3 {
            changed |= index.remove(path, stage).is_ok();
        }
        match target_tree.get_path(path) {
            Ok(e) if e.kind() != Some(git2::ObjectType::Tree) => {
                let want = (e.id(), e.filemode() as u32);
                let have = index.get_path(path, 0).map(|x| (x.id, x.mode));
                if have != Some(want) {
                    let mut entry = stage_entry(
                        p,
                        pick::Side {
                            oid: want.0,
                            mode: want.1,
                        },
                        0,
                    );
                    entry.flags = p.len().min(0xfff) as u16;
                    index.add(&entry).context_git(|| format!("staging {p}"))?;
                    changed = true;
                }
            }
            _ => changed |= index.remove(path, 0).is_ok(),
        }
    }
    if changed {
        index.write().context_git(|| "writing the index")?;
    }
    Ok(())
}

/// libgit2's reset rebuilds the index without skip-worktree and writes every path; in a sparse checkout this puts
/// the sparse layout back as git's reset leaves it (`unmerged` paths stay in the worktree).
fn restore_sparse_layout(repo: &Repository, unmerged: &[String]) -> Result<(), Error> {
    if let Some(sparse) = git::Sparse::load(repo)? {
        let mut index = repo.index().context_git(|| "reading the index")?;
        index.read(true).context_git(|| "reading the index")?;
        let except: Vec<&str> = unmerged.iter().map(String::as_str).collect();
        git::reapply_sparse(repo, &mut index, &sparse, &except)?;
        index.write().context_git(|| "writing the index")?;
    }
    Ok(())
}

/// Deletes the strays, and the files an interrupted write created that the index does not track, when their
/// content is still what bport wrote.
fn remove_strays_and_created(
    repo: &Repository,
    strays: Vec<String>,
    created: Vec<(String, Option<Oid>)>,
) -> Result<(), Error> {
    if let Some(workdir) = repo.workdir() {
        for path in strays {
            let _ = std::fs::remove_file(workdir.join(path));
        }
        let index = repo.index().context_git(|| "reading the index")?;
        for (path, blob) in created {
            if index.get_path(Path::new(&path), 0).is_some() {
                continue;
            }
            let file = workdir.join(&path);
            let ours = match blob {
                // Only a file whose content is still what bport wrote: anything else is the user's.
                Some(blob) => {
                    std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file())
                        && Oid::hash_file(git2::ObjectType::Blob, &file).ok() == Some(blob)
                }
                None => true,
            };
            if ours {
                let _ = std::fs::remove_file(&file);
            }
        }
    }
    Ok(())
}

/// The paths an interrupted write may have created that `target` lacks: each with the blob bport wrote there
/// (`None` for a stop's conflicted file, written with markers).
fn created_by(
    repo: &Repository,
    w: &Writing,
    target: &git2::Tree<'_>,
) -> Result<Vec<(String, Option<Oid>)>, Error> {
    let tree = repo
        .find_tree(w.tree)
        .context_git(|| format!("reading tree {}", w.tree))?;
    let mut out: Vec<(String, Option<Oid>)> = git::tree_changes(repo, Some(target), Some(&tree))?
        .into_iter()
        .filter(|c| c.old.is_none())
        .filter_map(|c| {
            let new = c.new?;
            (new.mode & 0o170000 == 0o100000).then_some((c.path, Some(new.oid)))
        })
        .collect();
    out.extend(
        w.also
            .iter()
            .filter(|p| target.get_path(Path::new(p)).is_err())
            .map(|p| (p.clone(), None)),
    );
    Ok(out)
}

/// Describes a conflict kind as `git status` words it.
pub fn kind_label(kind: ConflictKind) -> &'static str {
    match kind {
        ConflictKind::Content => "both modified",
        ConflictKind::AddAdd => "both added",
        ConflictKind::ModifyDelete => "deleted by them",
        ConflictKind::DeleteModify => "deleted by us",
        ConflictKind::BothDeleted => "both deleted",
        ConflictKind::AddedByUs => "added by us",
        ConflictKind::AddedByThem => "added by them",
    }
}

#[cfg(test)]
mod tests {
    use super::{packs_to_absorb, Guard};
    use std::path::PathBuf;

    /// The guard's shortcut: an index file of the same length ending in the same non-zero checksum is the same
    /// file; a zero checksum (`index.skipHash`) or another length is never taken as one.
    #[test]
    fn the_guard_trusts_only_a_real_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let file = repo.path().join("index");
        let body = |fill: u8, sum: u8| -> Vec<u8> {
            let mut b = vec![fill; 100];
            b.extend([sum; 20]);
            b
        };
        std::fs::write(&file, body(1, 7)).unwrap();
        let guard = Guard::take(&repo).unwrap();
        assert!(guard.same_checksum(&repo).unwrap());
        // Other bytes, same length and checksum: taken as the same (as git and libgit2 write, a checksum names
        // its bytes).
        std::fs::write(&file, body(2, 7)).unwrap();
        assert!(guard.same_checksum(&repo).unwrap());
        std::fs::write(&file, body(1, 8)).unwrap();
        assert!(!guard.same_checksum(&repo).unwrap());
        let mut longer = body(1, 7);
        longer.insert(0, 0);
        std::fs::write(&file, longer).unwrap();
        assert!(!guard.same_checksum(&repo).unwrap());
        std::fs::remove_file(&file).unwrap();
        assert!(!guard.same_checksum(&repo).unwrap());
        // No checksum written: only the bytes can tell.
        std::fs::write(&file, body(1, 0)).unwrap();
        let guard = Guard::take(&repo).unwrap();
        assert!(!guard.same_checksum(&repo).unwrap());
        // No index at the start.
        std::fs::remove_file(&file).unwrap();
        let guard = Guard::take(&repo).unwrap();
        std::fs::write(&file, body(1, 7)).unwrap();
        assert!(!guard.same_checksum(&repo).unwrap());
    }

    #[test]
    fn packs_are_absorbed_newest_first_while_they_stay_geometric() {
        let listed = |counts: &[usize]| -> Vec<(PathBuf, usize)> {
            counts
                .iter()
                .enumerate()
                .map(|(i, &n)| (PathBuf::from(format!("pack-{i}.pack")), n))
                .collect()
        };
        let names = |v: Vec<PathBuf>| -> Vec<String> {
            v.into_iter().map(|p| p.display().to_string()).collect()
        };
        // 10 new objects: the 12-object pack (<= 20) goes, then the 30 (<= 44), not the 1,000.
        assert_eq!(
            names(packs_to_absorb(&listed(&[1000, 30, 12]), 10)),
            vec!["pack-1.pack", "pack-2.pack"]
        );
        // A big newest pack stops the absorbing at once.
        assert!(packs_to_absorb(&listed(&[5, 500]), 10).is_empty());
        assert!(packs_to_absorb(&[], 10).is_empty());
    }
}
