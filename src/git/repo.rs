//! Opening repositories, refusing unsafe starting points, identities, subjects and abbreviations.

use super::{Context, Error};
use git2::{Repository, RepositoryState, Signature, Status, StatusOptions};
use std::fmt;
use std::path::Path;

/// Opens the repository that contains `dir`, as git does when run there.
pub fn discover(dir: &Path) -> Result<Repository, Error> {
    read_objects_as_git_does();
    Repository::discover(dir).map_err(|source| Error::NotARepository {
        path: dir.to_path_buf(),
        source,
    })
}

/// libgit2 re-hashes every object it reads (strict hash verification, on by default) with collision-detecting
/// SHA-1: a third of `apply --dry-run`'s CPU on curl's moved-base list (perf profile: sha1dc's
/// `sha1_compression_states` and `ubc_check`), where git's readers do not hash what they inflate (zlib's
/// checksum still guards each object, `git fsck` the ids). A process-wide libgit2 setting, set before the first
/// repository is opened.
pub fn read_objects_as_git_does() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| git2::opts::strict_hash_verification(false));
}

/// A git operation that owns the index and worktree until it finishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operation {
    /// `git merge` stopped.
    Merge,
    /// `git rebase` (any flavour) stopped.
    Rebase,
    /// `git cherry-pick` stopped.
    CherryPick,
    /// `git revert` stopped.
    Revert,
    /// `git am` or `git apply --3way` mailbox in progress.
    ApplyMailbox,
    /// `git bisect` is running.
    Bisect,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Merge => "merge",
            Operation::Rebase => "rebase",
            Operation::CherryPick => "cherry-pick",
            Operation::Revert => "revert",
            Operation::ApplyMailbox => "am",
            Operation::Bisect => "bisect",
        })
    }
}

/// Refuses when git is in the middle of another operation whose state a run would trample.
pub fn check_no_operation(repo: &Repository) -> Result<(), Error> {
    let operation = match repo.state() {
        RepositoryState::Clean => return Ok(()),
        RepositoryState::Merge => Operation::Merge,
        RepositoryState::Revert | RepositoryState::RevertSequence => Operation::Revert,
        RepositoryState::CherryPick | RepositoryState::CherryPickSequence => Operation::CherryPick,
        RepositoryState::Bisect => Operation::Bisect,
        RepositoryState::ApplyMailbox | RepositoryState::ApplyMailboxOrRebase => {
            Operation::ApplyMailbox
        }
        _ => Operation::Rebase,
    };
    Err(Error::OperationInProgress {
        operation,
        path: repo.path().to_path_buf(),
    })
}

/// Refuses when the index differs from HEAD (git's cherry-pick refuses too: "your local changes would be
/// overwritten"); changes in the worktree alone are checked pick by pick against the paths each pick writes.
pub fn check_index_clean(repo: &Repository) -> Result<(), Error> {
    let mut opts = StatusOptions::new();
    opts.show(git2::StatusShow::Index)
        .include_untracked(false)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut opts))
        .context_git(|| "reading the worktree status")?;
    let staged = Status::INDEX_NEW
        | Status::INDEX_MODIFIED
        | Status::INDEX_DELETED
        | Status::INDEX_RENAMED
        | Status::INDEX_TYPECHANGE
        | Status::CONFLICTED;
    let dirty: Vec<String> = statuses
        .iter()
        .filter(|e| e.status().intersects(staged))
        .map(|e| String::from_utf8_lossy(e.path_bytes()).into_owned())
        .collect();
    if dirty.is_empty() {
        Ok(())
    } else {
        let mut paths: Vec<String> = dirty.iter().take(5).cloned().collect();
        if dirty.len() > 5 {
            paths.push(format!("and {} more", dirty.len() - 5));
        }
        Err(Error::Dirty { paths })
    }
}

/// Whether a status entry is only a worktree difference of a path whose index entry says "skip the worktree": git
/// never looks at such a file (a sparse checkout removes it), so `git status` is clean; libgit2's status does not
/// know the flag and reports the path as deleted or modified.
pub fn worktree_change_ignored(index: &git2::Index, status: Status, path: &[u8]) -> bool {
    let worktree_only = (Status::WT_MODIFIED | Status::WT_DELETED | Status::WT_TYPECHANGE)
        .contains(status)
        && !status.is_empty();
    worktree_only
        && index
            .get_path(Path::new(&*String::from_utf8_lossy(path)), 0)
            .is_some_and(|e| e.flags_extended & super::sparse::SKIP_WORKTREE != 0)
}

/// Untracked files that writing `to` over the worktree of `from` (HEAD's tree) would overwrite, plus those at
/// `also` (paths a stop writes itself), sorted: git's "The following untracked working tree files would be
/// overwritten". A path is in the way when the tree adds it (or a directory above it) and the worktree has a file,
/// link or directory there that the index does not track and `.gitignore` does not ignore (ignored files are
/// expendable to git's checkout, and to libgit2's).
pub fn untracked_in_the_way(
    repo: &Repository,
    from: Option<&git2::Tree<'_>>,
    to: &git2::Tree<'_>,
    also: &[String],
) -> Result<Vec<String>, Error> {
    let Some(workdir) = repo.workdir() else {
        return Ok(Vec::new());
    };
    let index = repo.index().context_git(|| "reading the index")?;
    let mut added: Vec<String> = super::tree_changes(repo, from, Some(to))?
        .into_iter()
        .filter(|c| c.old.is_none() && c.new.is_some())
        .map(|c| c.path)
        .collect();
    added.extend(also.iter().cloned());
    let tracked = |path: &str| {
        index.get_path(Path::new(path), 0).is_some()
            // A tracked directory: some index entry lies below it.
            || index.find_prefix(Path::new(&format!("{path}/"))).is_ok()
    };
    let mut out = Vec::new();
    for path in added {
        // The path itself, or a file where the tree needs one of its directories.
        let mut prefix = String::new();
        for (i, component) in path.split('/').enumerate() {
            if i > 0 {
                prefix.push('/');
            }
            prefix.push_str(component);
            let full = workdir.join(&prefix);
            let Ok(meta) = std::fs::symlink_metadata(&full) else {
                break;
            };
            let last = prefix.len() == path.len();
            if meta.is_dir() && !last {
                continue;
            }
            // An empty directory holds nothing to lose (git leaves one behind for every submodule).
            let empty_dir =
                meta.is_dir() && std::fs::read_dir(&full).is_ok_and(|mut d| d.next().is_none());
            if !empty_dir
                && !tracked(&prefix)
                && !repo.is_path_ignored(Path::new(&prefix)).unwrap_or(false)
            {
                out.push(prefix.clone());
            }
            break;
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The committer identity git would use: `GIT_COMMITTER_NAME`/`EMAIL`/`DATE` first, then `user.name`/`user.email`.
///
/// libgit2's `git_signature_default` reads only the config; honouring the environment keeps bport's commits equal
/// to git's in scripted and test runs.
pub fn committer(repo: &Repository) -> Result<Signature<'static>, Error> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let config = repo.config().ok();
    let from_config = |k: &str| config.as_ref().and_then(|c| c.get_string(k).ok());
    let name = env("GIT_COMMITTER_NAME").or_else(|| from_config("user.name"));
    let email = env("GIT_COMMITTER_EMAIL").or_else(|| from_config("user.email"));
    let (Some(name), Some(email)) = (name, email) else {
        return Err(Error::NoIdentity {
            source: git2::Error::from_str("user.name or user.email is not set"),
        });
    };
    // Not UTF-8 is no date git reads either: refused, not taken as unset.
    let date = std::env::var_os("GIT_COMMITTER_DATE").filter(|v| !v.is_empty());
    let sig = match date {
        Some(value) => match value.to_str().and_then(super::date::parse) {
            Some(time) => Signature::new(&name, &email, &time),
            None => {
                return Err(Error::InvalidDate {
                    variable: "GIT_COMMITTER_DATE",
                    value: value.to_string_lossy().into_owned(),
                })
            }
        },
        None => Signature::now(&name, &email),
    };
    sig.map_err(|source| Error::NoIdentity { source })
}

/// The subject as git's `%s` prints it: the first paragraph, lines joined by a space, trailing blanks dropped.
pub fn commit_subject(message: &str) -> String {
    let mut out = String::new();
    let mut started = false;
    for line in message.split('\n') {
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            if started {
                break;
            }
            continue;
        }
        if started {
            out.push(' ');
        }
        out.push_str(trimmed);
        started = true;
    }
    out
}

/// The editor command git would run (`git var GIT_EDITOR`): `GIT_EDITOR`, then `core.editor`, then `VISUAL` (unless
/// the terminal is dumb), then `EDITOR`, then `vi`; `None` on a dumb terminal with none of them set, where git
/// refuses too. `config` is the repository's configuration (`core.editor`), `env` reads an environment variable
/// (the process's, or a test's). The command is a shell
/// command line: run it as git does, `sh -c '<editor> "$@"' <editor> <files>…`.
pub fn editor(
    config: Option<&git2::Config>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    // As git's `git_editor()`: a variable set to the empty string counts as set.
    let dumb = env("TERM").is_none_or(|t| t == "dumb");
    env("GIT_EDITOR")
        .or_else(|| config?.get_string("core.editor").ok())
        .or_else(|| if dumb { None } else { env("VISUAL") })
        .or_else(|| env("EDITOR"))
        .or_else(|| (!dumb).then(|| "vi".to_owned()))
}

/// The abbreviation length `git log --oneline` starts from with `core.abbrev` unset ("auto"):
/// half the bits of the packed-object count, rounded up, at least 7 (git's `object-name.c`).
pub fn abbrev_len(repo: &Repository) -> usize {
    if let Ok(config) = repo.config() {
        if let Ok(n) = config.get_i32("core.abbrev") {
            return (n.clamp(4, 40)) as usize;
        }
    }
    let count = packed_object_count(&repo.path().join("objects/pack"));
    if count == 0 {
        return 7;
    }
    let bits = 64 - count.leading_zeros() as usize; // msb + 1
    bits.div_ceil(2).max(7)
}

/// Objects in all pack indexes (the fan-out table's last entry), as git's approximate object count does.
fn packed_object_count(pack_dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(pack_dir) else {
        return 0;
    };
    let mut count = 0u64;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "idx") {
            continue;
        }
        // v2 index: magic, version, then 256 fan-out entries; the last is the object count.
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let fanout_end = 8 + 256 * 4;
        if bytes.len() >= fanout_end && bytes[..4] == [0xff, b't', b'O', b'c'] {
            let last: [u8; 4] = bytes[fanout_end - 4..fanout_end]
                .try_into()
                .expect("slice of length 4");
            count += u64::from(u32::from_be_bytes(last));
        }
    }
    count
}

/// The shortest unique abbreviation of `oid` that is at least `min_len` long.
pub fn short_id(repo: &Repository, oid: git2::Oid, min_len: usize) -> Result<String, Error> {
    let hex = oid.to_string();
    let odb = repo.odb().context_git(|| "opening the object database")?;
    let mut len = min_len.min(40);
    while len < 40 {
        match odb.exists_prefix(oid, len) {
            Ok(_) => break,
            Err(e) if e.code() == git2::ErrorCode::Ambiguous => len += 1,
            Err(source) => {
                return Err(Error::Git {
                    context: format!("abbreviating {hex}"),
                    source,
                })
            }
        }
    }
    Ok(hex[..len].to_owned())
}

/// What the index says, for noticing that someone else wrote it: SHA-1 over each entry's path, stage, mode and
/// blob id (stat data left out, so a `git status` that only refreshes stat information does not count as a
/// change). `None` when the worktree has no index file yet.
pub fn index_fingerprint(repo: &Repository) -> Result<Option<[u8; 20]>, Error> {
    let path = repo.path().join("index");
    if !path.exists() {
        return Ok(None);
    }
    index_fingerprint_of(&path).map(Some)
}

/// [`index_fingerprint`] of an index file anywhere.
pub fn index_fingerprint_of(path: &Path) -> Result<[u8; 20], Error> {
    use sha1::{Digest, Sha1};
    // A fresh read of the file: the repository's cached index may predate another process's write.
    let index = git2::Index::open(path).context_git(|| format!("reading {}", path.display()))?;
    let mut h = Sha1::new();
    for e in index.iter() {
        h.update(&e.path);
        h.update([0]);
        h.update(((e.flags >> 12) & 3).to_be_bytes());
        h.update(e.mode.to_be_bytes());
        h.update(e.id.as_bytes());
    }
    Ok(h.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_joins_the_first_paragraph() {
        assert_eq!(commit_subject("\n\nfoo  \nbar\n\nbody\n"), "foo bar");
        assert_eq!(commit_subject("only"), "only");
        assert_eq!(commit_subject("  indented\n"), "  indented");
    }
}
