//! Thin adapter over git2: the one place that opens repositories and speaks git2 broadly.
//!
//! `backport` and `rerere` reach git through here so that error context and object ids stay consistent, and so
//! that the rule "no shelling out to git" has a single home. What git itself defines (the stable patch-id of
//! `builtin/patch-id.c`, the `%s` subject of `pretty.c`, the abbreviation length of `object-name.c`) is
//! reimplemented here against git's behaviour and tested against the real `git` in `tests/it/`.

mod atomic;
mod commit_header;
mod date;
pub mod fault;
mod index_tree;
mod pack_absorb;
mod pack_write;
mod patch_id;
mod renames;
mod repo;
mod sparse;
#[cfg(test)]
pub(crate) mod test_history;
mod trailers;
mod tree_build;
mod tree_diff;
mod worktree_stat;

pub use atomic::{write_atomic, write_cache};
pub use commit_header::{read_commit_header, CommitHeader};
pub use index_tree::{index_changes, write_index_tree, IndexChanges};
pub use pack_write::{blob_id, write_pack, write_pack_absorbing, MemoryObjects, Written};
pub use patch_id::{
    changed_lines, changed_paths, commit_changes, has_changed_lines, patch_id_of_commit,
    patch_id_of_diff_text, PatchId,
};
pub use renames::{
    detect as detect_renames, parse_score as parse_rename_score, Blobs, Candidate, DirRenames,
    RenameSettings, DEFAULT_LIMIT as DEFAULT_RENAME_LIMIT, DEFAULT_SCORE as DEFAULT_RENAME_SCORE,
    MAX_SCORE as MAX_RENAME_SCORE,
};
pub use repo::{
    abbrev_len, check_index_clean, check_no_operation, commit_subject, committer, discover, editor,
    index_fingerprint, index_fingerprint_of, read_objects_as_git_does, short_id,
    untracked_in_the_way, worktree_change_ignored, Operation,
};
pub use sparse::{reapply as reapply_sparse, split_changes, update_index_only, Sparse};
pub use trailers::{normalize_subject, origins, Origin, OriginForm};
pub use tree_build::{commit_bytes, object_id, TreeEdit, TreeStore};
pub use tree_diff::{new_objects, tree_changes, Change, Side};
pub use worktree_stat::{unstaged_changes, unstaged_changes_among, INTENT_TO_ADD};

use std::path::PathBuf;

/// Errors of the git adapter.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No repository at or above the directory.
    #[error("no git repository at or above {path}")]
    NotARepository {
        /// Where the search started.
        path: PathBuf,
        /// What libgit2 said.
        #[source]
        source: git2::Error,
    },
    /// The worktree or index has changes that a run could overwrite or mix into a commit.
    #[error("the worktree has uncommitted changes: {}", paths.join(", "))]
    Dirty {
        /// The changed paths (at most a handful, for the message).
        paths: Vec<String>,
    },
    /// Untracked files sit where the run must write tracked ones (git: "The following untracked working tree files
    /// would be overwritten by merge").
    #[error("untracked working tree files would be overwritten: {}", paths.join(", "))]
    UntrackedInTheWay {
        /// The untracked paths.
        paths: Vec<String>,
    },
    /// A pick would write paths whose worktree files hold uncommitted changes (git: "Your local changes to the
    /// following files would be overwritten by merge").
    #[error("your local changes to the following files would be overwritten by the pick: {}", paths.join(", "))]
    LocalChanges {
        /// The changed paths the pick writes.
        paths: Vec<String>,
    },
    /// Another git operation (merge, rebase, cherry-pick, …) is in progress.
    #[error("a git {operation} is in progress in {path}")]
    OperationInProgress {
        /// Which operation.
        operation: Operation,
        /// The repository's git directory.
        path: PathBuf,
    },
    /// The committer identity could not be determined.
    #[error("no committer identity (set user.name and user.email, or GIT_COMMITTER_NAME/EMAIL)")]
    NoIdentity {
        /// What libgit2 said.
        #[source]
        source: git2::Error,
    },
    /// `GIT_COMMITTER_DATE` holds a date git cannot read (git dies with "invalid date format" at its first commit).
    #[error("invalid date format in {variable}: {value:?}")]
    InvalidDate {
        /// The environment variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// Reading or writing a file in the git directory failed.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A git2 call failed; `context` says what bport was doing.
    #[error("{context}")]
    Git {
        /// What bport was doing.
        context: String,
        /// What libgit2 said.
        #[source]
        source: git2::Error,
    },
}

/// Attaches what bport was doing to a git2 error.
pub trait Context<T> {
    /// Wraps the error into [`Error::Git`] with the message `context()` builds.
    fn context_git<S: Into<String>>(self, context: impl FnOnce() -> S) -> Result<T, Error>;
}

impl<T> Context<T> for Result<T, git2::Error> {
    fn context_git<S: Into<String>>(self, context: impl FnOnce() -> S) -> Result<T, Error> {
        self.map_err(|source| Error::Git {
            context: context().into(),
            source,
        })
    }
}
