//! Which tracked files may differ from the index, found as git's `refresh_index` finds them: by comparing each
//! entry's recorded stat data with the file's, so that only the files whose stat data changed are read.
//!
//! libgit2's status walks the whole worktree (directory reads, path building, ignore rules) before it compares
//! anything; on a 4,000-file tree that was a sixth of a `bport apply --continue`. Here the index drives: one
//! `lstat` per entry, and libgit2's status runs only over the suspects, so its answer (filters, racy entries,
//! type changes) stays the one that decides.

use super::{Context, Error};
use git2::{Index, Repository, Status, StatusOptions};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// `CE_INTENT_TO_ADD`, in the extended flags (`git add -N`).
pub const INTENT_TO_ADD: u16 = 1 << 13;
const GITLINK: u32 = 0o160000;

/// The tracked paths whose worktree file is modified, deleted or changed type against its stage-0 index entry, as
/// `git status` lists them under "Changes not staged for commit" (submodules and skip-worktree entries left out).
pub fn unstaged_changes(repo: &Repository, index: &Index) -> Result<Vec<String>, Error> {
    let Some(workdir) = repo.workdir() else {
        return Ok(Vec::new());
    };
    let index_mtime = index_mtime(repo);
    let suspects = index
        .iter()
        .filter(|entry| suspect(workdir, entry, index_mtime))
        .map(|entry| String::from_utf8_lossy(&entry.path).into_owned())
        .collect();
    confirm(repo, index, suspects)
}

/// Of `paths`, those [`unstaged_changes`] lists, looking only at them: one `lstat` per path instead of one per
/// index entry, for a caller that knows which paths matter (the paths a pick writes, the paths a resolution
/// stages). Returned in `paths`' order, each once.
pub fn unstaged_changes_among<'p>(
    repo: &Repository,
    index: &Index,
    paths: impl IntoIterator<Item = &'p str>,
) -> Result<Vec<String>, Error> {
    let Some(workdir) = repo.workdir() else {
        return Ok(Vec::new());
    };
    let index_mtime = index_mtime(repo);
    let mut seen = std::collections::HashSet::new();
    let mut suspects: Vec<String> = Vec::new();
    for path in paths {
        if !seen.insert(path) {
            continue;
        }
        if let Some(entry) = index.get_path(Path::new(path), 0) {
            if suspect(workdir, &entry, index_mtime) {
                suspects.push(path.to_owned());
            }
        }
    }
    let confirmed: std::collections::HashSet<String> = confirm(repo, index, suspects.clone())?
        .into_iter()
        .collect();
    Ok(suspects
        .into_iter()
        .filter(|p| confirmed.contains(p))
        .collect())
}

/// The index file's modification time: an entry whose file changed in the same instant the index was written may
/// look unchanged by its stat data (git's "racy" entries) and is read, whatever its stat says.
fn index_mtime(repo: &Repository) -> Option<(i64, i64)> {
    std::fs::metadata(repo.path().join("index"))
        .map(|m| (m.mtime(), m.mtime_nsec()))
        .ok()
}

/// Whether the worktree file of `entry` may differ from it (then libgit2 decides). Conflict stages, gitlinks and
/// skip-worktree entries are never suspects.
fn suspect(workdir: &Path, entry: &git2::IndexEntry, index_mtime: Option<(i64, i64)>) -> bool {
    let stage = (entry.flags >> 12) & 3;
    if stage != 0
        || entry.mode == GITLINK
        || entry.flags_extended & super::sparse::SKIP_WORKTREE != 0
    {
        return false;
    }
    let path = String::from_utf8_lossy(&entry.path);
    entry.flags_extended & INTENT_TO_ADD != 0 || !stat_matches(workdir, &path, entry, index_mtime)
}

/// The suspects libgit2's status finds modified, deleted or changed in type (its answer decides: filters, racy
/// entries, type changes).
fn confirm(repo: &Repository, index: &Index, suspects: Vec<String>) -> Result<Vec<String>, Error> {
    if suspects.is_empty() {
        return Ok(suspects);
    }
    let mut opts = StatusOptions::new();
    opts.include_untracked(false)
        .exclude_submodules(true)
        .disable_pathspec_match(true);
    for p in &suspects {
        opts.pathspec(p);
    }
    let statuses = repo
        .statuses(Some(&mut opts))
        .context_git(|| "reading the worktree status")?;
    Ok(statuses
        .iter()
        .filter(|e| {
            e.status()
                .intersects(Status::WT_MODIFIED | Status::WT_DELETED | Status::WT_TYPECHANGE)
                && !super::worktree_change_ignored(index, e.status(), e.path_bytes())
        })
        .map(|e| String::from_utf8_lossy(e.path_bytes()).into_owned())
        .collect())
}

/// Whether the file's stat data is the entry's and the entry is not racy. Any doubt answers `false`: the path is
/// then read by libgit2, which is exact.
fn stat_matches(
    workdir: &Path,
    path: &str,
    entry: &git2::IndexEntry,
    index_mtime: Option<(i64, i64)>,
) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(workdir.join(path)) else {
        return false;
    };
    let file_type = meta.mode() & 0o170000;
    let same_type = file_type == entry.mode & 0o170000;
    let same_exec = file_type != 0o100000 || (meta.mode() & 0o100 != 0) == (entry.mode == 0o100755);
    // The index keeps 32-bit seconds, sizes and inode numbers.
    let mtime = (meta.mtime() as u32, meta.mtime_nsec() as u32);
    let recorded = (entry.mtime.seconds() as u32, entry.mtime.nanoseconds());
    let same_stat = mtime == recorded
        && meta.ctime() as u32 == entry.ctime.seconds() as u32
        && meta.ctime_nsec() as u32 == entry.ctime.nanoseconds()
        && meta.size() as u32 == entry.file_size
        && meta.ino() as u32 == entry.ino;
    let racy = index_mtime.is_none_or(|(s, ns)| {
        (
            i64::from(entry.mtime.seconds()),
            i64::from(entry.mtime.nanoseconds()),
        ) >= (s, ns)
    });
    same_type && same_exec && same_stat && !racy
}
