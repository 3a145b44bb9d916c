//! Where a repository's bport state lives, named apart from the state itself so that caches the matcher keeps
//! (kept patch-ids) can find it without importing the run's state.

use std::path::{Path, PathBuf};

/// The `.git/bport` directory of a repository.
pub fn dir(git_dir: &Path) -> PathBuf {
    git_dir.join("bport")
}
