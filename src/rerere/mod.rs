//! Recorded conflict resolutions, compatible with git's rerere (rerere.c): the conflict id, the rr-cache layout in
//! `.git/rr-cache` and the shared `rerere-cache/`, replay by three-way merge, and training from an earlier port.
//!
//! Owns: computing ids ([`conflict_id`]), rendering conflicts as git does ([`render`], on the [`xdiff`] port),
//! the cache directories ([`cache`]), `MERGE_RR` ([`merge_rr`]), replay ([`resolve`]), the rerere step run at a
//! conflict stop and at `--continue` ([`record`]), the user verbs ([`verbs`]), sharing ([`share`]),
//! training ([`train`]) and, beyond git, modify/delete decisions ([`decision`]). Does not own: the cherry-pick
//! loop (backport) or printing (cli).
//!
//! Specs followed: git v2.47's `rerere.c` (ids, layout, `MERGE_RR`, replay, forget, gc) and `xdiff/`
//! (rendering). The rr-cache lives in the common git dir (shared by worktrees), `MERGE_RR` per worktree, as in git.

pub mod cache;
pub mod conflict_id;
pub mod decision;
pub mod merge_rr;
pub mod record;
pub mod render;
pub mod resolve;
pub mod share;
pub mod train;
pub mod verbs;
mod worktree;
pub mod xdiff;

pub use cache::{RrCache, Warning};
pub use conflict_id::ConflictId;
pub use record::{
    rerere, rerere_at_commit, PathAction, PathOutcome, RerereOptions, RerereOutcome, Source,
};
pub use worktree::Rerere;

use std::path::PathBuf;

/// Everything that can go wrong in rerere.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read or written.
    #[error("cannot access {}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `MERGE_RR` cannot be parsed.
    #[error("{} is corrupt ({reason}); delete it to drop the current rerere session", path.display())]
    CorruptMergeRr {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// A cache entry cannot be written because something else is in its place.
    #[error("rr-cache entry {} is unusable: {reason}", path.display())]
    BadCacheEntry {
        /// The entry's path.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// A git operation failed.
    #[error("{operation} failed")]
    Git {
        /// What bport was doing.
        operation: String,
        /// libgit2's error.
        #[source]
        source: git2::Error,
    },
    /// The repository has no work tree; rerere works on conflicted files in one.
    #[error("the repository at {} has no work tree", path.display())]
    BareRepository {
        /// The git directory.
        path: PathBuf,
    },
    /// `forget` was asked about a path that has no conflict in the index.
    #[error("'{path}' has no conflict in the index; forget works on paths that are conflicted right now")]
    NotConflicted {
        /// The path.
        path: String,
    },
    /// `forget` found no recorded resolution for the path's conflict.
    #[error("no remembered resolution for '{path}'")]
    NoResolution {
        /// The path.
        path: String,
    },
    /// A revision or range given by the user does not resolve.
    #[error("`{spec}` is not a commit or range in this repository")]
    BadRevision {
        /// What the user gave.
        spec: String,
        /// libgit2's error.
        #[source]
        source: git2::Error,
    },
}

pub(crate) fn git_err(operation: impl Into<String>) -> impl FnOnce(git2::Error) -> Error {
    let operation = operation.into();
    move |source| Error::Git { operation, source }
}
