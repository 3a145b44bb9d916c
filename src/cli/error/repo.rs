//! The repository side's errors to exit codes: `backport`, `git` and `rerere`. A libgit2 failure is classed by
//! what it says about the repository (a missing object, an unreadable ref or index is the repository's problem,
//! exit 4), the rest of the variants by whose move it is.

use std::process::ExitCode;

use super::{io_kind, CliError, Kind};
use crate::{backport, git, rerere};

/// The status of `bport apply` stopped for the user (a conflict to resolve): 1.
pub fn stopped() -> ExitCode {
    Kind::Stopped.into()
}

impl From<backport::Error> for CliError {
    fn from(error: backport::Error) -> Self {
        use backport::Error as E;
        let (kind, hint) = match &error {
            E::MalformedLine { .. } | E::BadCommit { .. } | E::SubjectMismatch { .. } => {
                (Kind::User, Some("fix that line of the patch list (`bport list <range>` writes a valid one); nothing was applied"))
            }
            E::MergeWithoutMainline { .. } => (Kind::User, Some("nothing was applied")),
            E::BadMail { .. } => (Kind::User, Some("fix or drop that mail (git am would stop there too); nothing was applied")),
            E::BadRange { .. } => (Kind::User, Some("give a range such as v6.1..perf-fixes")),
            E::Git(inner) => return inner_git(error_kind_git(inner), error),
            E::UnsupportedAttribute { .. } => (Kind::User, Some("bport reproduces merge, conflict-marker-size, text, eol and crlf; pick this commit with git cherry-pick, or drop the attribute for the run")),
            E::AttributesChangedInRun { .. } => (Kind::Internal, None),
            E::UnsupportedConfig { .. } => (Kind::User, Some("unset it for this repository (git config --unset merge.renormalize), or pick with git cherry-pick")),
            E::MergeDriverWithoutCommand { .. } => (Kind::User, Some("set merge.<name>.driver (git config), or remove the merge attribute")),
            E::MergeDriverFailed { .. } => (Kind::Environment, Some("run the driver by hand on the three versions to see why")),
            E::Locked { .. } => (Kind::User, Some("wait for the other run to finish")),
            E::RunInProgress { .. } => (Kind::User, Some("finish it first: bport apply --continue | --skip | --abort (bport status shows it)")),
            E::NoRun => (Kind::User, Some("start one with: bport apply <patchlist>")),
            E::ConflictsRemain { .. } => (Kind::User, Some("edit the files, `git add` them, then run bport apply --continue")),
            E::UnstagedChanges { .. } => (Kind::User, Some("`git add` the resolution (or `git checkout -- <path>` to drop a change), then --continue")),
            E::BranchSwitched { .. } => (Kind::User, Some("check that branch out again (git switch <branch>), then resume")),
            E::AbortHeadMoved { .. } => (Kind::User, Some("check your HEAD; `bport apply --quit` forgets the run and keeps everything as it is")),
            E::AbortInterrupted => (Kind::User, Some("finish it: bport apply --abort")),
            E::AbortLocalChanges { .. } => (Kind::User, Some("commit or stash those changes, then --abort again; or `bport apply --quit` to forget the run")),
            E::HeadMovedDuringRun { .. } | E::IndexChangedDuringRun => (Kind::User, Some("your commit and changes are kept; `bport apply --quit` forgets the run, or put HEAD back and run bport apply --continue")),
            E::HeadMoved { .. } => (Kind::User, Some("check out the commit bport left and resume, or `bport apply --quit` to forget the run and keep everything")),
            E::StateVersion { .. } => (Kind::Environment, Some("finish the run with the newer bport that started it")),
            E::StateCorrupt { .. } => (Kind::Environment, Some("inspect .git/bport/state.json; `rm -r .git/bport` forgets the run")),
            E::BareRepository { .. } => (Kind::User, Some("run bport apply in a worktree")),
            E::UnbornHead => (Kind::User, None),
            // A file bport must read or write: its path is in the message; the disk, not bport, is at fault.
            E::Io { .. } => (Kind::Environment, Some("check that path's permissions and free space, then run the command again")),
            E::Rerere(crate::rerere::Error::Git { source, .. }) => {
                let (kind, hint) = repository_problem(source);
                return inner_git((kind, hint), error);
            }
            E::Rerere(crate::rerere::Error::Io { .. }) => (Kind::Environment, None),
            _ => (Kind::Internal, None),
        };
        let mut e = CliError::new(kind, error);
        if let Some(h) = hint {
            e = e.hint(h);
        }
        e
    }
}

fn error_kind_git(e: &git::Error) -> (Kind, Option<String>) {
    match e {
        git::Error::NotARepository { .. } => (Kind::Environment, Some("run bport inside a git repository".into())),
        git::Error::Dirty { .. } => (Kind::User, Some("commit or stash your changes (git stash), then run bport apply again".into())),
        git::Error::OperationInProgress { operation, .. } => (
            Kind::User,
            Some(format!("finish it with `git {operation} --continue` or drop it with `git {operation} --abort` first")),
        ),
        git::Error::NoIdentity { .. } => (Kind::Environment, Some("git config user.name 'Your Name'; git config user.email you@example.com".into())),
        git::Error::InvalidDate { variable, .. } => (
            Kind::User,
            Some(format!("set {variable} to a date git reads (e.g. \"2026-01-01T00:00:00Z\", \"@1767225600 +0000\", an RFC 2822 date) or unset it, then run the command again")),
        ),
        git::Error::Io { .. } => (Kind::Environment, Some("check the free space and write permission of the repository's .git directory".into())),
        git::Error::LocalChanges { .. } => (
            Kind::User,
            Some("commit or stash them (nothing was overwritten; the picks before this one are committed), then run `bport apply --continue`; `bport apply --abort` gives up the run".into()),
        ),
        git::Error::UntrackedInTheWay { .. } => (
            Kind::User,
            Some("move or remove them (nothing was overwritten; the picks so far are saved), then run `bport apply --continue`; `bport apply --abort` gives up the run".into()),
        ),
        git::Error::Git { source, .. } => repository_problem(source),
    }
}

/// Classifies a libgit2 failure: a missing or damaged object, an unreadable ref, index or file is a problem of
/// the repository (exit 4) that the message names, not an internal error (exit 70); anything
/// else is bport's.
fn repository_problem(source: &git2::Error) -> (Kind, Option<String>) {
    use git2::ErrorClass as C;
    match source.class() {
        C::Odb | C::Object | C::Zlib | C::Tree => (
            Kind::Environment,
            Some("the repository lacks or cannot read that object (a shallow or partial clone, or damage): \
                  `git fsck` names what is wrong; fetch the missing history (git fetch --unshallow) or repair it"
                .into()),
        ),
        C::Reference => (
            Kind::Environment,
            Some("a ref cannot be read: `git fsck` names it; fix or delete that file under .git/refs \
                  (or its line in .git/packed-refs)"
                .into()),
        ),
        C::Index => (
            Kind::Environment,
            Some("the index cannot be read: `git status` says why; `git reset` rebuilds it from HEAD".into()),
        ),
        C::Os | C::Filesystem => (
            Kind::Environment,
            Some("check the repository's permissions and free space".into()),
        ),
        _ if source.code() == git2::ErrorCode::NotFound => (
            Kind::Environment,
            Some("the repository lacks an object or ref bport needs: `git fsck` names it".into()),
        ),
        _ => (Kind::Internal, None),
    }
}

fn inner_git((kind, hint): (Kind, Option<String>), error: impl Into<anyhow::Error>) -> CliError {
    let mut e = CliError::new(kind, error);
    if let Some(h) = hint {
        e = e.hint(h);
    }
    e
}

impl From<git::Error> for CliError {
    fn from(error: git::Error) -> Self {
        inner_git(error_kind_git(&error), error)
    }
}

impl From<rerere::Error> for CliError {
    fn from(error: rerere::Error) -> Self {
        let kind = match &error {
            rerere::Error::NotConflicted { .. }
            | rerere::Error::NoResolution { .. }
            | rerere::Error::BadRevision { .. } => Kind::User,
            rerere::Error::BareRepository { .. } => Kind::Environment,
            // Files under .git that bport could not read or write, or that are damaged: the repository's
            // problem, with the path in the message (as `apply` classes the same errors).
            rerere::Error::Io { source, .. } => io_kind(source).unwrap_or(Kind::Environment),
            rerere::Error::CorruptMergeRr { .. } | rerere::Error::BadCacheEntry { .. } => {
                Kind::Environment
            }
            rerere::Error::Git { source, .. } => {
                return inner_git(repository_problem(source), error);
            }
        };
        let hint = match &error {
            rerere::Error::CorruptMergeRr { .. } => Some("`git rerere clear` also removes it"),
            rerere::Error::NotConflicted { .. } => {
                Some("`git checkout -m PATH` recreates the conflict of a staged path")
            }
            _ => None,
        };
        let err = CliError::new(kind, error);
        match hint {
            Some(h) => err.hint(h),
            None => err,
        }
    }
}
