//! The backport engine: parse a patch list, decide what is already applied, and cherry-pick the rest in memory,
//! stopping at conflicts with resumable state.
//!
//! Owns: patch lists ([`patchlist`]), already-applied detection ([`matcher`], read-only, also used by `verify`),
//! the typed plan ([`plan`]), the in-memory pick ([`pick`]), the loop and its stops ([`execute`]) and the state in
//! `.git/bport/` ([`state`]), mail series made commits as `git am -3` makes them ([`mbox`]), and the upstream
//! follow-ups (`Fixes:`, reverts) of what a branch carries ([`fixes`]). Does not own: recorded resolutions
//! (`rerere`, called at a stop), printing (`cli`).
//!
//! Entry points: [`apply`], [`resume`], [`status`], [`patchlist::list_range`].

pub mod attributes;
mod deps;
pub mod execute;
pub mod fixes;
pub mod matcher;
pub mod mbox;
pub mod message;
pub mod oid_hex;
mod patch_ids;
pub mod patchlist;
pub mod pick;
pub mod plan;
pub mod state;
mod state_dir;
pub mod stop;

pub use execute::Checkpoint;
pub use matcher::{AppliedBecause, Rule, Rules};
pub use patchlist::PatchList;
pub use plan::{Action, Plan, Step, StepResult};
pub use state::{Favor, PickOptions, RenameChoice, State};

use crate::git::{self, Context};
use git2::{Oid, Repository};
use std::path::PathBuf;

/// Errors of the backport engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A line of the patch list is not `<sha> <subject>`.
    #[error("patch list line {line}: expected `<sha> <subject>`, found {text:?}")]
    MalformedLine {
        /// 1-based line.
        line: usize,
        /// The line.
        text: String,
    },
    /// A listed sha does not name exactly one commit, or `-m` names a parent it lacks.
    #[error("patch list line {line}: {sha}: {reason}")]
    BadCommit {
        /// 1-based line.
        line: usize,
        /// The sha as listed.
        sha: String,
        /// What is wrong.
        reason: String,
    },
    /// A listed commit is a merge and no `-m N` says which parent to pick it against.
    #[error(
        "patch list line {line}: {sha} is a merge commit with {parents} parents; pick it against parent N with \
         -m N (--mainline N, as git cherry-pick -m N), or list the range without merges: bport list --no-merges"
    )]
    MergeWithoutMainline {
        /// 1-based line.
        line: usize,
        /// The sha as listed.
        sha: String,
        /// How many parents it has.
        parents: usize,
    },
    /// The listed subject is not the commit's.
    #[error("patch list line {line}: {sha} is {actual:?}, but the list says {listed:?}")]
    SubjectMismatch {
        /// 1-based line.
        line: usize,
        /// The sha as listed.
        sha: String,
        /// The subject in the list.
        listed: String,
        /// The commit's subject.
        actual: String,
    },
    /// A mail of a series cannot be made a commit.
    #[error("mail {index} ({subject:?}): {reason}")]
    BadMail {
        /// 1-based position of the mail in the input.
        index: usize,
        /// Its subject as far as it was read.
        subject: String,
        /// What is wrong.
        reason: String,
    },
    /// A revision or range does not parse.
    #[error("bad revision or range {range:?}")]
    BadRange {
        /// The range as given.
        range: String,
        /// What libgit2 said.
        #[source]
        source: git2::Error,
    },
    /// Reading or writing a file failed.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A path the run merges has an attribute whose effect bport does not reproduce; nothing was picked.
    #[error("{path}: the attribute {attribute}={value} is not supported by bport apply (git would convert the file through it); nothing was picked")]
    UnsupportedAttribute {
        /// The path.
        path: String,
        /// The attribute (`filter`, `working-tree-encoding`, `ident`).
        attribute: String,
        /// Its value.
        value: String,
    },
    /// A git setting whose effect on the merge bport does not reproduce; nothing was picked.
    #[error("the git setting {key}={value} is not supported by bport apply; nothing was picked")]
    UnsupportedConfig {
        /// The key.
        key: String,
        /// Its value.
        value: String,
    },
    /// A pick of the run changed a `.gitattributes` file that a later pick of the same run merges under.
    #[error("{path}: an earlier pick of this run changed {attributes}, which git would use for this path's merge")]
    AttributesChangedInRun {
        /// The path being merged.
        path: String,
        /// The `.gitattributes` file.
        attributes: String,
    },
    /// `merge=<name>` names a `merge.<name>` config section without a `driver` command line.
    #[error("{path}: custom merge driver {name} lacks a command line (merge.{name}.driver)")]
    MergeDriverWithoutCommand {
        /// The path.
        path: String,
        /// The driver's name.
        name: String,
    },
    /// A `merge.<name>.driver` command could not run or was killed.
    #[error("{path}: merge driver {name}: {reason}")]
    MergeDriverFailed {
        /// The path.
        path: String,
        /// The driver's name.
        name: String,
        /// What happened.
        reason: String,
    },
    /// A git operation failed or the repository is not in a state to start.
    #[error(transparent)]
    Git(#[from] git::Error),
    /// The state file cannot be read.
    #[error("the bport state {} is damaged: {reason}", path.display())]
    StateCorrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The state file was written by a newer bport.
    #[error("the bport state {} has version {found}; this bport reads up to {supported}", path.display())]
    StateVersion {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: u64,
        /// Ours.
        supported: u32,
    },
    /// Another bport holds the lock.
    #[error("another bport apply is running in this repository (lock {})", path.display())]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// `--continue`/`--skip`/`--abort` without a run in progress.
    #[error("no bport apply is in progress")]
    NoRun,
    /// `apply` while a run is stopped.
    #[error("a bport apply is already in progress ({})", path.display())]
    RunInProgress {
        /// The state file.
        path: PathBuf,
    },
    /// `--continue` with unresolved paths.
    #[error("unresolved conflicts remain: {}", paths.join(", "))]
    ConflictsRemain {
        /// The conflicted paths.
        paths: Vec<String>,
    },
    /// `--continue` with changes that are not staged.
    #[error("changes not staged for the commit: {}", paths.join(", "))]
    UnstagedChanges {
        /// The paths.
        paths: Vec<String>,
    },
    /// HEAD is not where the run left it.
    #[error("HEAD is at {found}, but the stopped run left it at {expected}")]
    HeadMoved {
        /// Where bport left it.
        expected: Oid,
        /// Where it is.
        found: Oid,
    },
    /// `--abort` found HEAD where the run did not leave it: rewinding would drop the commits made since.
    #[error("HEAD is at {found}, but bport apply left it at {expected}: not rewinding (you seem to have moved HEAD)")]
    AbortHeadMoved {
        /// Where bport left it.
        expected: Oid,
        /// Where it is.
        found: Oid,
    },
    /// `--abort` of an interrupted run that had not written the worktree: the changes in it are someone else's.
    #[error("the worktree or index has changes bport did not make: {}; not rewinding", paths.join(", "))]
    AbortLocalChanges {
        /// The changed paths (at most a handful).
        paths: Vec<String>,
    },
    /// `--continue`/`--skip` after an `--abort` that was interrupted half-way.
    #[error("an earlier bport apply --abort was interrupted; the run cannot go on")]
    AbortInterrupted,
    /// The branch moved (a `git commit`, `git reset`) while the run picked in memory; nothing was written.
    #[error("HEAD moved to {found} while bport apply was running (it was at {expected}); stopped before writing anything")]
    HeadMovedDuringRun {
        /// Where the run had it.
        expected: Oid,
        /// Where it is.
        found: Oid,
    },
    /// The index changed (a `git add`) while the run picked in memory; nothing was written.
    #[error("the index changed while bport apply was running (a git add or commit?); stopped before writing anything")]
    IndexChangedDuringRun,
    /// HEAD is on another branch than the run's.
    #[error("the bport apply in progress is on {expected}, but HEAD is elsewhere")]
    BranchSwitched {
        /// The run's branch.
        expected: String,
    },
    /// The repository has no worktree.
    #[error("{} is a bare repository; bport apply needs a worktree", path.display())]
    BareRepository {
        /// The git directory.
        path: PathBuf,
    },
    /// HEAD does not point at a commit yet.
    #[error("HEAD has no commit yet; commit something first")]
    UnbornHead,
    /// Recording or replaying a resolution failed.
    #[error(transparent)]
    Rerere(#[from] crate::rerere::Error),
    /// Reading the worktree or HEAD while working on a stop failed.
    #[error("{operation} failed")]
    Worktree {
        /// What bport was doing.
        operation: &'static str,
        /// What libgit2 said.
        #[source]
        source: git2::Error,
    },
}

/// Options of `bport apply`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApplyOptions {
    /// What each pick does.
    pub pick: PickOptions,
    /// Which rules decide "already applied".
    pub rules: Rules,
    /// Plan and predict conflicts only.
    pub dry_run: bool,
}

/// Receives progress from a run (the CLI draws it; tests may count it).
pub trait Progress {
    /// A step finished (or, in a dry run, was predicted).
    fn step(&mut self, index: usize, total: usize, step: &Step, result: &StepResult);
    /// A crash-safety checkpoint was reached (used by crash tests).
    fn checkpoint(&mut self, _at: Checkpoint) {}
    /// `--continue` found the stopped patch empty after its resolution (the index equals the last pick's tree)
    /// and dropped it; git's `cherry-pick --continue` would stop there ("The previous cherry-pick is now empty,
    /// possibly due to conflict resolution.") and wait for `--skip` or `git commit --allow-empty`.
    fn dropped_empty(&mut self, _index: usize, _total: usize, _step: &Step) {}
    /// rerere ran at a stop or at `--continue` (the CLI prints git's per-path messages).
    fn rerere(&mut self, _outcome: &crate::rerere::RerereOutcome) {}
}

/// A progress sink that ignores everything.
pub struct NoProgress;

impl Progress for NoProgress {
    fn step(&mut self, _: usize, _: usize, _: &Step, _: &StepResult) {}
}

/// One conflicted path of a stop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConflictedPath {
    /// The path.
    pub path: String,
    /// How it conflicts, in `git status` words (`both modified`, …).
    pub kind: &'static str,
}

/// Details of a stop at a conflict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StopInfo {
    /// Index of the step in the plan.
    pub step: usize,
    /// The conflicted paths.
    pub conflicts: Vec<ConflictedPath>,
    /// Commits on the picked commit's side that added lines the patch relies on in the conflicted files and are
    /// neither earlier in the list nor on the branch: likely missing dependencies (newest first, at most five).
    pub missing: Vec<(Oid, String)>,
    /// Paths that recorded resolutions resolved in the worktree (left for review unless `--autoupdate`).
    pub resolved: Vec<String>,
}

/// How a command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// All steps done.
    Done(State),
    /// Stopped at a conflict.
    Stopped(State, StopInfo),
    /// Nothing was touched; `State.results` holds the predictions.
    DryRun(State),
    /// `--abort` restored the state before the run.
    Aborted(State),
    /// `--quit` forgot the run; branch, index and worktree are as they were.
    Quit(State),
    /// The patch list has no entries: nothing was read or touched.
    NothingToDo,
}

/// Plans and runs `bport apply` for `list` on the current branch.
pub fn apply(
    repo: &Repository,
    list: &PatchList,
    opts: &ApplyOptions,
    progress: &mut dyn Progress,
) -> Result<Outcome, Error> {
    // Before anything else: with no listed commit there is no base to stop the branch walk at, and collecting the
    // branch would walk the whole history.
    if list.entries.is_empty() {
        return Ok(Outcome::NothingToDo);
    }
    let _lock = if opts.dry_run {
        None
    } else {
        Some(state::lock(repo.path())?)
    };
    let (head_oid, branch) = starting_point(repo)?;
    let started = std::time::Instant::now();
    let resolved = list.resolve(repo, opts.pick.mainline)?;
    // Each commit reads the committer again; reading it here refuses a missing identity or an unreadable
    // GIT_COMMITTER_DATE before the run writes anything (git dies at its first commit, that pick already merged
    // into the index and worktree).
    git::committer(repo)?;
    if !opts.dry_run {
        git::check_index_clean(repo)?;
    }
    let listed: Vec<Oid> = resolved.iter().map(|r| r.oid).collect();
    let mut on_branch = matcher::Branch::collect(repo, head_oid, &listed, &[])?;
    let verdicts = matcher::judge(&mut on_branch, &resolved, opts.rules)?;
    let steps = plan_steps(&resolved, verdicts);
    let mut timings = execute::Timings {
        matching: started.elapsed(),
        ..Default::default()
    };
    let mut st = State {
        version: state::VERSION,
        results: vec![None; steps.len()],
        plan: Plan { steps },
        position: 0,
        orig_head: head_oid,
        branch,
        tip: head_oid,
        anchor: head_oid,
        options: opts.pick,
        phase: state::Phase::Running,
        writing: None,
        aborting: false,
    };
    if opts.dry_run {
        execute::run(repo, &mut st, progress, true, &mut timings)?;
        timings.log();
        return Ok(Outcome::DryRun(st));
    }
    state::save(repo.path(), &st)?;
    state::save_branch_commits(repo.path(), on_branch.oids())?;
    let result = finish(repo, st, progress, timings);
    forget_run_refused_before_writing(repo, head_oid, &result)?;
    result
}

/// Refuses to start where a run cannot: another run in progress, a bare repository, a git operation under way, no
/// commit yet. Returns HEAD's commit and its branch (`None` when detached).
fn starting_point(repo: &Repository) -> Result<(Oid, Option<String>), Error> {
    if state::exists(repo.path()) {
        return Err(Error::RunInProgress {
            path: state::dir(repo.path()).join("state.json"),
        });
    }
    if repo.is_bare() {
        return Err(Error::BareRepository {
            path: repo.path().to_path_buf(),
        });
    }
    git::check_no_operation(repo)?;
    // Only an unborn branch is "no commit yet"; a ref that cannot be read is a damaged repository, named.
    let head = repo.head().map_err(|source| match source.code() {
        git2::ErrorCode::UnbornBranch => Error::UnbornHead,
        _ => Error::Git(git::Error::Git {
            context: "reading HEAD".into(),
            source,
        }),
    })?;
    let head_oid = head.target().ok_or(Error::UnbornHead)?;
    let branch = if repo.head_detached().unwrap_or(false) {
        None
    } else {
        head.name().ok().map(|n| n.to_string())
    };
    Ok((head_oid, branch))
}

/// The plan: a skip for each listed commit the matcher found on the branch, a pick for each other.
fn plan_steps(resolved: &[patchlist::Resolved], verdicts: Vec<matcher::Verdict>) -> Vec<Step> {
    resolved
        .iter()
        .zip(verdicts)
        .map(|(r, v)| Step {
            line: r.entry.line,
            commit: r.oid,
            subject: r.subject.clone(),
            action: match v {
                matcher::Verdict::Applied(because) => Action::Skip { because },
                matcher::Verdict::Missing { ambiguous_subject } => {
                    Action::Pick { ambiguous_subject }
                }
            },
        })
        .collect()
}

/// Removes the state of a run refused while merging in memory: when the branch has not moved from `head_oid`,
/// nothing of the run was written, so there is nothing to continue or abort.
fn forget_run_refused_before_writing(
    repo: &Repository,
    head_oid: Oid,
    result: &Result<Outcome, Error>,
) -> Result<(), Error> {
    if let Err(
        Error::UnsupportedAttribute { .. }
        | Error::UnsupportedConfig { .. }
        | Error::AttributesChangedInRun { .. }
        | Error::MergeDriverWithoutCommand { .. },
    ) = result
    {
        if repo.head().ok().and_then(|h| h.target()) == Some(head_oid) {
            state::remove(repo.path())?;
        }
    }
    Ok(())
}

/// `--continue`, `--skip` or `--abort`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// Commit the staged resolution and go on.
    Continue,
    /// Drop the stopped patch and go on.
    Skip,
    /// Restore branch, index and worktree as they were before the run.
    Abort,
    /// Forget the run, touching nothing else (`git cherry-pick --quit`).
    Quit,
}

/// Resumes a stopped (or interrupted) run.
pub fn resume(
    repo: &Repository,
    how: Resume,
    progress: &mut dyn Progress,
) -> Result<Outcome, Error> {
    let _lock = state::lock(repo.path())?;
    let mut st = state::load(repo.path())?.ok_or(Error::NoRun)?;
    let head = repo
        .head()
        .ok()
        .and_then(|h| h.target())
        .ok_or(Error::UnbornHead)?;
    check_same_place(repo, &st)?;
    if how == Resume::Quit {
        return quit(repo, st);
    }
    // Where bport may have left HEAD: at the last tip it wrote, or (interrupted before the branch moved) at the
    // anchor. Anywhere else someone committed or reset since, and rewinding would drop that work.
    let ours = head == st.tip
        || (st.phase == state::Phase::Running && head == st.anchor)
        || (st.aborting && head == st.orig_head);
    if how == Resume::Abort {
        return abort(repo, st, head, ours);
    }
    if st.aborting {
        return Err(Error::AbortInterrupted);
    }
    match (st.phase.clone(), how) {
        (state::Phase::Running, _) => {
            recover_interrupted(repo, &mut st, head, ours)?;
            if how == Resume::Skip {
                st.results[st.position] = Some(StepResult::SkippedByUser);
                st.position += 1;
            }
        }
        (state::Phase::Stopped { .. }, Resume::Continue) => {
            continue_stopped(repo, &mut st, head, progress)?;
            let i = st.position - 1;
            let total = st.plan.steps.len();
            if st.results[i] == Some(StepResult::Empty) {
                progress.dropped_empty(i, total, &st.plan.steps[i]);
            }
        }
        (state::Phase::Stopped { .. }, _) => skip_stopped(repo, &mut st, head)?,
    }
    st.phase = state::Phase::Running;
    st.writing = None;
    state::save(repo.path(), &st)?;
    finish(repo, st, progress, execute::Timings::default())
}

/// Refuses to resume on another branch (or off the detached HEAD) than the run's: it would move the wrong ref.
fn check_same_place(repo: &Repository, st: &State) -> Result<(), Error> {
    let on = repo
        .head()
        .ok()
        .and_then(|h| h.name().ok().map(|n| n.to_string()));
    let detached = repo.head_detached().unwrap_or(false);
    let same_place = match &st.branch {
        Some(name) => !detached && on.as_deref() == Some(name.as_str()),
        None => detached,
    };
    if !same_place {
        return Err(Error::BranchSwitched {
            expected: st
                .branch
                .clone()
                .unwrap_or_else(|| "a detached HEAD".into()),
        });
    }
    Ok(())
}

/// `--quit`: as `git cherry-pick --quit`, the run's state and rerere's record of the current conflicts go, nothing
/// else.
fn quit(repo: &Repository, st: State) -> Result<Outcome, Error> {
    let rr = crate::rerere::Rerere::open(repo)?;
    for path in [rr.merge_rr_path(), rr.decisions_path()] {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(Error::Io { path, source }),
        }
    }
    state::remove(repo.path())?;
    Ok(Outcome::Quit(st))
}

/// `--abort`: restores branch, index and worktree as they were before the run, once nothing of the user's would
/// be lost. `ours` says HEAD is where bport may have left it.
fn abort(repo: &Repository, mut st: State, head: Oid, ours: bool) -> Result<Outcome, Error> {
    if !ours {
        return Err(Error::AbortHeadMoved {
            expected: st.tip,
            found: head,
        });
    }
    if st.phase == state::Phase::Running && st.writing.is_none() && !st.aborting {
        refuse_abort_over_local_changes(repo, &st, head)?;
    }
    if !st.aborting {
        st.aborting = true;
        state::save(repo.path(), &st)?;
        git::fault::point("abort-state-saved");
    }
    crate::rerere::verbs::clear(&crate::rerere::Rerere::open(repo)?)?;
    execute::hard_reset(repo, st.orig_head, st.writing.as_ref())?;
    state::remove(repo.path())?;
    Ok(Outcome::Aborted(st))
}

/// Refuses an abort of a run interrupted before writing over changes that are the user's: whatever differs from
/// HEAD was not written by bport.
fn refuse_abort_over_local_changes(repo: &Repository, st: &State, head: Oid) -> Result<(), Error> {
    if let Err(git::Error::Dirty { paths }) = git::check_index_clean(repo) {
        return Err(Error::AbortLocalChanges { paths });
    }
    // Worktree changes the reset would overwrite: on paths the run changed since it started.
    let at = |oid: Oid| {
        repo.find_commit(oid)
            .and_then(|c| c.tree())
            .context_git(|| format!("reading {oid}"))
    };
    let changed: Vec<String> = git::tree_changes(repo, Some(&at(head)?), Some(&at(st.orig_head)?))?
        .into_iter()
        .map(|c| c.path)
        .collect();
    let index = repo.index().context_git(|| "reading the index")?;
    let paths: Vec<String> = git::unstaged_changes(repo, &index)?
        .into_iter()
        .filter(|p| changed.contains(p))
        .collect();
    if !paths.is_empty() {
        return Err(Error::AbortLocalChanges { paths });
    }
    Ok(())
}

/// An interrupted run: rolls forward to the last written tip, or back to it. `ours` says HEAD is where bport may
/// have left it.
fn recover_interrupted(
    repo: &Repository,
    st: &mut State,
    head: Oid,
    ours: bool,
) -> Result<(), Error> {
    if !ours {
        return Err(Error::HeadMoved {
            expected: st.tip,
            found: head,
        });
    }
    if st.writing.is_some() {
        // The worktree belongs to the run: it was writing when it died.
        execute::hard_reset(repo, head, st.writing.as_ref())?;
    } else {
        // Nothing was written since the run last left things consistent: changes are the user's; staged
        // ones would go into the next commit, worktree ones are checked against each pick's paths.
        git::check_index_clean(repo)?;
    }
    if head != st.tip {
        // A forced reset would overwrite untracked files where the picks add tracked ones.
        let tip_tree = repo
            .find_commit(st.tip)
            .and_then(|c| c.tree())
            .context_git(|| format!("reading {}", st.tip))?;
        execute::check_nothing_in_the_way(repo, head, &tip_tree, &[])?;
        execute::set_branch(
            repo,
            st,
            st.tip,
            "bport apply: recovering an interrupted run",
        )?;
        execute::hard_reset(repo, st.tip, None)?;
    }
    st.anchor = st.tip;
    Ok(())
}

/// `--skip` at a stop: drops the stopped patch's changes and moves past it.
fn skip_stopped(repo: &Repository, st: &mut State, head: Oid) -> Result<(), Error> {
    crate::rerere::verbs::clear(&crate::rerere::Rerere::open(repo)?)?;
    if head != st.tip {
        return Err(Error::HeadMoved {
            expected: st.tip,
            found: head,
        });
    }
    execute::hard_reset(repo, st.tip, st.writing.as_ref())?;
    st.results[st.position] = Some(StepResult::SkippedByUser);
    st.position += 1;
    Ok(())
}

/// Records the user's resolutions as postimages (git's rerere at commit time); only once nothing is conflicted,
/// so a refused `--continue` records nothing.
fn record_resolutions(repo: &Repository, progress: &mut dyn Progress) -> Result<(), Error> {
    let rr = crate::rerere::Rerere::open(repo)?;
    if !rr.enabled {
        return Ok(());
    }
    let outcome = crate::rerere::rerere_at_commit(&rr, &crate::rerere::RerereOptions::default())?;
    progress.rerere(&outcome);
    Ok(())
}

/// Commits the user's resolution of the stopped step.
fn continue_stopped(
    repo: &Repository,
    st: &mut State,
    head: Oid,
    progress: &mut dyn Progress,
) -> Result<(), Error> {
    let step = st.plan.steps[st.position].clone();
    let original = repo
        .find_commit(step.commit)
        .context_git(|| format!("reading {}", step.commit))?;
    if head != st.tip {
        // The user committed the resolution with git: take that commit as the pick.
        let committed = repo
            .find_commit(head)
            .context_git(|| format!("reading {head}"))?;
        if committed.parent_id(0).ok() != Some(st.tip) {
            return Err(Error::HeadMoved {
                expected: st.tip,
                found: head,
            });
        }
        record_resolutions(repo, progress)?;
        st.results[st.position] = Some(StepResult::Picked { new: head });
        st.tip = head;
        st.anchor = head;
        st.position += 1;
        return Ok(());
    }
    let mut index = repo.index().context_git(|| "reading the index")?;
    refuse_conflicts(&index)?;
    let head_tree = repo
        .find_commit(head)
        .and_then(|c| c.tree())
        .context_git(|| format!("reading {head}"))?;
    let tree = staged_tree(repo, &mut index, &head_tree, st)?;
    // Before the resolutions are recorded: a --continue refused for the committer records nothing.
    let committer = git::committer(repo)?;
    record_resolutions(repo, progress)?;
    let parent = repo
        .find_commit(st.tip)
        .context_git(|| format!("reading {}", st.tip))?;
    let result = if tree == parent.tree_id() {
        StepResult::Empty
    } else {
        let sob = format!(
            "Signed-off-by: {} <{}>",
            committer.name().unwrap_or_default(),
            committer.email().unwrap_or_default()
        );
        let new = execute::commit_pick(repo, &original, tree, &parent, st, &committer, &sob)?;
        execute::set_branch(repo, st, new, "bport apply --continue")?;
        st.tip = new;
        st.anchor = new;
        StepResult::Picked { new }
    };
    st.results[st.position] = Some(result);
    st.position += 1;
    Ok(())
}

/// Refuses a `--continue` while the index still has conflicted paths.
fn refuse_conflicts(index: &git2::Index) -> Result<(), Error> {
    if !index.has_conflicts() {
        return Ok(());
    }
    let mut paths: Vec<String> = index
        .conflicts()
        .context_git(|| "reading conflicts")?
        .filter_map(Result::ok)
        .filter_map(|c| c.our.or(c.their).or(c.ancestor))
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect();
    paths.dedup();
    Err(Error::ConflictsRemain { paths })
}

/// Writes the index as the stopped pick's tree, once the resolution is all in it: a worktree change on a path the
/// pick or its resolution staged (where the index differs from HEAD, or a path the stop conflicted on) means the
/// resolution is not all staged; one on a path the pick left alone is the user's own, kept as git keeps it.
///
/// Only those paths are looked at, found by diffing HEAD's tree with the index's (equal subtrees skipped): a look
/// at every index entry cost an `lstat` each, and libgit2's strict tree writing a pack lookup each, together a
/// fifth of a `--continue` on a 4,000-file tree. An entry equal to HEAD's names an object HEAD has; the others
/// are checked here, and when one is missing libgit2 writes again, strictly, to name it. The tree itself is
/// written only where it differs from HEAD's ([`git::write_index_tree`]): libgit2's write reads the whole new tree
/// back to rebuild its cache, another fifth of such a `--continue`.
fn staged_tree(
    repo: &Repository,
    index: &mut git2::Index,
    head_tree: &git2::Tree<'_>,
    st: &State,
) -> Result<Oid, Error> {
    let odb = repo.odb().context_git(|| "opening the object database")?;
    let tree = match git::write_index_tree(&odb, index, Some(head_tree.id()))? {
        Some(tree) => tree,
        None => {
            git2::opts::strict_object_creation(false);
            index
                .write_tree()
                .context_git(|| "writing the index as a tree")?
        }
    };
    let written = repo
        .find_tree(tree)
        .context_git(|| format!("reading tree {tree}"))?;
    let staged = git::tree_changes(repo, Some(head_tree), Some(&written))?;
    let stopped_paths = match &st.phase {
        state::Phase::Stopped { paths } => paths.as_slice(),
        state::Phase::Running => &[],
    };
    // `git add -N` entries: never in a written tree, always staged against HEAD.
    let intent_to_add: Vec<String> = index
        .iter()
        .filter(|e| e.flags_extended & git::INTENT_TO_ADD != 0)
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect();
    let candidates = staged
        .iter()
        .map(|c| c.path.as_str())
        .chain(stopped_paths.iter().map(String::as_str))
        .chain(intent_to_add.iter().map(String::as_str));
    let mut unstaged = git::unstaged_changes_among(repo, index, candidates)?;
    if !unstaged.is_empty() {
        unstaged.sort();
        return Err(Error::UnstagedChanges { paths: unstaged });
    }
    let all_present = staged
        .iter()
        .filter_map(|c| c.new)
        .all(|side| side.mode == pick::GITLINK || odb.exists(side.oid));
    if !all_present {
        git2::opts::strict_object_creation(true);
        index
            .write_tree()
            .context_git(|| "writing the index as a tree")?;
    }
    Ok(tree)
}

/// Runs the remaining steps and turns the end into an outcome; removes the state when done.
fn finish(
    repo: &Repository,
    mut st: State,
    progress: &mut dyn Progress,
    mut timings: execute::Timings,
) -> Result<Outcome, Error> {
    loop {
        let end = execute::run(repo, &mut st, progress, false, &mut timings)?;
        timings.log();
        match end {
            execute::RunEnd::Done => {
                state::remove(repo.path())?;
                return Ok(Outcome::Done(st));
            }
            execute::RunEnd::Stopped(_conflicts, rerere)
                if st.options.autoupdate && execute::stop_fully_resolved(&rerere) =>
            {
                // Every conflict was resolved from recorded resolutions and staged: unlike git's sequencer, go on
                // as the user would (docs/shared-resolutions.md).
                let head = st.tip;
                continue_stopped(repo, &mut st, head, progress)?;
                progress.step(
                    st.position - 1,
                    st.plan.steps.len(),
                    &st.plan.steps[st.position - 1],
                    st.results[st.position - 1]
                        .as_ref()
                        .expect("continue_stopped records the step's result"),
                );
                st.phase = state::Phase::Running;
                state::save(repo.path(), &st)?;
            }
            execute::RunEnd::Stopped(conflicts, rerere) => {
                let resolved = rerere.resolved().map(|p| p.path.clone()).collect();
                return stopped(repo, st, conflicts, resolved);
            }
        }
    }
}

/// Builds the outcome of a stop, naming likely missing dependencies.
fn stopped(
    repo: &Repository,
    st: State,
    conflicts: Vec<pick::Conflict>,
    resolved: Vec<String>,
) -> Result<Outcome, Error> {
    let missing = deps::likely_missing(repo, &st, &conflicts).unwrap_or_default();
    let info = StopInfo {
        step: st.position,
        conflicts: conflicts
            .iter()
            .map(|c| ConflictedPath {
                path: c.path.clone(),
                kind: execute::kind_label(c.kind),
            })
            .collect(),
        missing,
        resolved,
    };
    Ok(Outcome::Stopped(st, info))
}

/// The state of the run in progress, if any (for `bport status`).
pub fn status(repo: &Repository) -> Result<Option<State>, Error> {
    state::load(repo.path())
}
