//! Resumable state in `.git/bport/`: a versioned JSON file written atomically (temp, fsync, rename) under a lock.
//!
//! Loading is two-stage: the `version` field is read first, so that a file from a newer bport fails with a clear
//! message instead of a serde error, and older versions would be upgraded in [`upgrade`] before the typed parse.

use super::oid_hex;
use super::plan::{Plan, StepResult};
use super::Error;
use git2::Oid;
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The state format this bport writes.
pub const VERSION: u32 = 1;

/// Options that must survive a stop, so `--continue` picks the rest exactly as the first run would.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PickOptions {
    /// `-x`: append `(cherry picked from commit …)`.
    pub record_origin: bool,
    /// `-s`: append `Signed-off-by:` of the committer.
    pub signoff: bool,
    /// `-m N`: diff merges against parent N (1-based).
    pub mainline: Option<u32>,
    /// `-X ours|theirs`.
    pub favor: Favor,
    /// `--autoupdate`: stage and continue when recorded resolutions resolved every conflict.
    pub autoupdate: bool,
    /// `-X find-renames[=N]` / `-X no-renames`; the repository's config decides when not given.
    #[serde(default)]
    pub renames: RenameChoice,
}

/// Rename detection asked on the command line (`-X`), over `merge.renames` / `diff.renames`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RenameChoice {
    /// As the config says (git's default: on, 50%).
    #[default]
    Config,
    /// `-X no-renames`.
    Off,
    /// `-X find-renames[=N]`: on, with this threshold out of 60000 (0: git's default).
    Score(u32),
}

impl RenameChoice {
    /// The settings a run uses: merge-ort's reading of `diff.renames`, `merge.renames`, `diff.renameLimit` and
    /// `merge.renameLimit` (the merge keys win), then this choice over them.
    pub fn settings(self, repo: &git2::Repository) -> crate::git::RenameSettings {
        let mut s = crate::git::RenameSettings::default();
        if let Ok(config) = repo.config() {
            for key in ["diff.renames", "merge.renames"] {
                if let Ok(value) = config.get_string(key) {
                    let v = value.to_ascii_lowercase();
                    s.enabled = matches!(
                        v.as_str(),
                        "copy" | "copies" | "true" | "yes" | "on" | "1" | ""
                    ) || v.parse::<i64>().is_ok_and(|n| n != 0);
                }
            }
            if let Some(d) = config
                .get_string("merge.directoryrenames")
                .ok()
                .and_then(|v| crate::git::DirRenames::parse(&v))
            {
                s.directories = d;
            }
            for key in ["diff.renamelimit", "merge.renamelimit"] {
                if let Ok(n) = config.get_i64(key) {
                    s.limit = u64::try_from(n)
                        .ok()
                        .filter(|&n| n > 0)
                        .unwrap_or(crate::git::DEFAULT_RENAME_LIMIT);
                }
            }
        }
        match self {
            RenameChoice::Config => {}
            RenameChoice::Off => s.enabled = false,
            RenameChoice::Score(score) => {
                s.enabled = true;
                s.min_score = if score == 0 {
                    crate::git::DEFAULT_RENAME_SCORE
                } else {
                    score
                };
            }
        }
        s
    }
}

/// Which side wins conflicting hunks (`-X`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Favor {
    /// Leave conflicts for the user.
    #[default]
    None,
    /// The branch's side.
    Ours,
    /// The picked commit's side.
    Theirs,
}

/// Where a run is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "kebab-case")]
pub enum Phase {
    /// Picking; the branch may still be at `anchor` if the run was interrupted before it moved the branch to `tip`.
    Running,
    /// Stopped at a conflict in step `position`; index and worktree hold the conflict.
    Stopped {
        /// The conflicted paths.
        paths: Vec<String>,
    },
}

/// The resumable state of one `bport apply` run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Format version ([`VERSION`]).
    pub version: u32,
    /// The plan.
    pub plan: Plan,
    /// What happened to each step so far.
    pub results: Vec<Option<StepResult>>,
    /// The next step to run, or the step stopped at.
    pub position: usize,
    /// HEAD before the run (for `--abort`).
    #[serde(with = "oid_hex")]
    pub orig_head: Oid,
    /// The branch that was checked out (full ref name), or none when HEAD was detached.
    pub branch: Option<String>,
    /// The commit the branch should point at once the steps before `position` are done.
    #[serde(with = "oid_hex")]
    pub tip: Oid,
    /// Where the branch pointed when this state was written; with a crash between writing objects and moving the
    /// branch, HEAD is here and `tip` is where it should be.
    #[serde(with = "oid_hex")]
    pub anchor: Oid,
    /// Options of the run.
    pub options: PickOptions,
    /// Where the run is.
    pub phase: Phase,
    /// Set, and saved, just before bport writes worktree and index; a run interrupted with it unset left them as
    /// the user had them, so recovery must not reset them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writing: Option<Writing>,
    /// `--abort` began rewinding (saved before it writes): HEAD may already be back at `orig_head`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aborting: bool,
}

/// What bport is writing to the worktree: the tree it checks out and the paths it writes beyond that tree (a
/// stop's conflicted files the branch lacks), so `--abort` can remove the files it created and only those.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Writing {
    /// The tree being checked out.
    #[serde(with = "oid_hex")]
    pub tree: Oid,
    /// Further paths written.
    pub also: Vec<String>,
}

pub use super::state_dir::dir;

fn state_path(git_dir: &Path) -> PathBuf {
    dir(git_dir).join("state.json")
}

/// Whether a run is in progress.
pub fn exists(git_dir: &Path) -> bool {
    state_path(git_dir).exists()
}

/// Loads the state, or `None` when no run is in progress.
pub fn load(git_dir: &Path) -> Result<Option<State>, Error> {
    let path = state_path(git_dir);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(Error::Io { path, source }),
    };
    let corrupt = |reason: String| Error::StateCorrupt {
        path: path.clone(),
        reason,
    };
    // The version alone first (the rest skipped unparsed): a state of this version is then read straight into
    // its types, without the generic tree of values an upgrade works on (a 300-step plan's tree cost ~4 M
    // instructions, as much again as the typed read, at each resume).
    #[derive(serde::Deserialize)]
    struct Versioned {
        version: Option<serde_json::Value>,
    }
    let versioned: Versioned = serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
    let version = versioned
        .version
        .as_ref()
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| corrupt("no version field".into()))?;
    if version > u64::from(VERSION) {
        return Err(Error::StateVersion {
            path,
            found: version,
            supported: VERSION,
        });
    }
    if version == u64::from(VERSION) {
        return serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| corrupt(e.to_string()));
    }
    let raw: serde_json::Value = serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
    let raw = upgrade(raw, version);
    serde_json::from_value(raw)
        .map(Some)
        .map_err(|e| corrupt(e.to_string()))
}

/// Migrates an older state file to [`VERSION`]; version 1 is the first, so there is nothing to do yet.
pub fn upgrade(raw: serde_json::Value, _from: u64) -> serde_json::Value {
    raw
}

/// Writes the state atomically: a temp file in the same directory, fsync, rename, fsync of the directory.
pub fn save(git_dir: &Path, state: &State) -> Result<(), Error> {
    let dir = dir(git_dir);
    fs::create_dir_all(&dir).map_err(|source| Error::Io {
        path: dir.clone(),
        source,
    })?;
    let text = serde_json::to_vec_pretty(state).expect("the state has only serializable fields");
    let path = state_path(git_dir);
    crate::git::write_atomic(&path, &text).map_err(|source| Error::Io { path, source })
}

/// Removes the state at the end of a run.
pub fn remove(git_dir: &Path) -> Result<(), Error> {
    let caches = ["branch-commits", "upstream-graph", "upstream-paths", PACKS]
        .map(|name| dir(git_dir).join(name));
    for path in caches.into_iter().chain([state_path(git_dir)]) {
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(Error::Io { path, source }),
        }
    }
    Ok(())
}

/// The cache naming the packs the run wrote.
const PACKS: &str = "packs";

/// The packs the run wrote that are still its own to merge, oldest first, each with its object count: one
/// `<count> pack-<sha>.pack` a line, the name taken in `pack_dir` (a repository copied or moved mid-run names its
/// own packs, never the original's). Only a cache (see [`save_run_packs`]): a pack it does not name is never
/// touched.
pub fn load_run_packs(git_dir: &Path, pack_dir: &Path) -> Vec<(PathBuf, usize)> {
    let Ok(text) = fs::read_to_string(dir(git_dir).join(PACKS)) else {
        return Vec::new();
    };
    text.lines()
        .map(|l| {
            let (n, name) = l.split_once(' ')?;
            let plain = name.starts_with("pack-")
                && name.ends_with(".pack")
                && !name.contains(['/', '\\'])
                && name.is_ascii();
            plain.then(|| Some((pack_dir.join(name), n.parse().ok()?)))?
        })
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default()
}

/// Replaces the list [`load_run_packs`] reads. Written as a cache (no fsync): after a power loss it may be empty
/// or cut short, which only leaves the packs it named unmerged.
pub fn save_run_packs(git_dir: &Path, packs: &[(PathBuf, usize)]) -> Result<(), Error> {
    let mut text = String::new();
    for (path, n) in packs {
        if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            text.push_str(&format!("{n} {name}\n"));
        }
    }
    let path = dir(git_dir).join(PACKS);
    crate::git::write_cache(&path, text.as_bytes()).map_err(|source| Error::Io { path, source })
}

fn branch_path(git_dir: &Path) -> PathBuf {
    dir(git_dir).join("branch-commits")
}

/// Keeps the commits the branch had of its own when the run was planned (one hex id a line, newest first), so that
/// naming a stop's missing dependencies does not walk the shared history again at every stop. Only a cache: a run
/// without it walks as before.
pub fn save_branch_commits(git_dir: &Path, oids: impl Iterator<Item = Oid>) -> Result<(), Error> {
    let mut text = String::new();
    for oid in oids {
        text.push_str(&oid.to_string());
        text.push('\n');
    }
    let path = branch_path(git_dir);
    crate::git::write_atomic(&path, text.as_bytes()).map_err(|source| Error::Io { path, source })
}

/// The commits [`save_branch_commits`] kept, or `None` when there is no such file or it does not read as a list of
/// ids (then the caller walks).
pub fn load_branch_commits(git_dir: &Path) -> Option<Vec<Oid>> {
    let text = fs::read_to_string(branch_path(git_dir)).ok()?;
    text.lines().map(|l| Oid::from_str(l).ok()).collect()
}

/// An exclusive lock on `.git/bport/lock`, held for the whole command: an advisory `flock` on the file, which the
/// kernel releases when the process ends however it ends, so a killed run never leaves a stale lock and there is no
/// takeover step that two runs could both pass. The file itself stays: deleting it would let a second run lock a
/// new file while a first still holds the old one.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

/// Takes the lock, or fails at once when another bport holds it.
pub fn lock(git_dir: &Path) -> Result<Lock, Error> {
    let dir = dir(git_dir);
    fs::create_dir_all(&dir).map_err(|source| Error::Io {
        path: dir.clone(),
        source,
    })?;
    let path = dir.join("lock");
    let mut file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => return Err(Error::Locked { path }),
        Err(fs::TryLockError::Error(source)) => return Err(Error::Io { path, source }),
    }
    clear_dead_index_lock(git_dir, &dir);
    crate::git::fault::point("lock-taken");
    // The owner's pid, for people looking at a held lock; nothing reads it back.
    let _ = file.set_len(0);
    let _ = writeln!(file, "{}", std::process::id());
    Ok(Lock { _file: file })
}

/// The marker bport keeps in its directory while libgit2 may hold `index.lock` on its behalf.
const INDEX_NOTE: &str = "writing-index";

/// Marks the span in which bport (through libgit2) may hold `.git/index.lock`; the marker goes when dropped. A run
/// killed inside the span leaves both files, and the next bport, holding the run lock, knows the `index.lock`
/// was left by that dead run and not by a live git (see [`lock`]).
#[derive(Debug)]
pub struct IndexNote {
    path: PathBuf,
}

impl IndexNote {
    /// Starts the span.
    pub fn start(git_dir: &Path) -> Result<IndexNote, Error> {
        let path = dir(git_dir).join(INDEX_NOTE);
        File::create(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        Ok(IndexNote { path })
    }
}

impl Drop for IndexNote {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// With the run lock held, a marker left behind means a bport died while libgit2 could hold `index.lock`; an
/// `index.lock` no older than the marker is that run's (a git command started before it would have made the dead
/// run's write fail), so it is removed rather than blocking every later command as git's own stale lock does.
fn clear_dead_index_lock(git_dir: &Path, dir: &Path) {
    let note = dir.join(INDEX_NOTE);
    let Ok(marked) = fs::metadata(&note).and_then(|m| m.modified()) else {
        return;
    };
    let index_lock = git_dir.join("index.lock");
    if fs::metadata(&index_lock)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= marked)
    {
        log::info!("removing {} left by a killed bport", index_lock.display());
        let _ = fs::remove_file(&index_lock);
    }
    let _ = fs::remove_file(&note);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> State {
        let oid = Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        State {
            version: VERSION,
            plan: Plan::default(),
            results: vec![],
            position: 0,
            orig_head: oid,
            branch: Some("refs/heads/main".into()),
            tip: oid,
            anchor: oid,
            options: PickOptions::default(),
            phase: Phase::Stopped {
                paths: vec!["README".into()],
            },
            writing: None,
            aborting: false,
        }
    }

    #[test]
    fn round_trips_and_rejects_newer_versions() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()).unwrap(), None);
        save(dir.path(), &sample()).unwrap();
        assert_eq!(load(dir.path()).unwrap(), Some(sample()));
        let text = fs::read_to_string(state_path(dir.path())).unwrap();
        fs::write(
            state_path(dir.path()),
            text.replace("\"version\": 1", "\"version\": 9"),
        )
        .unwrap();
        let err = load(dir.path()).unwrap_err();
        assert!(
            matches!(
                err,
                Error::StateVersion {
                    found: 9,
                    supported: 1,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn a_second_lock_fails_while_the_first_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock(dir.path()).unwrap();
        assert!(matches!(lock(dir.path()), Err(Error::Locked { .. })));
        drop(first);
        let second = lock(dir.path()).unwrap();
        assert!(matches!(lock(dir.path()), Err(Error::Locked { .. })));
        drop(second);
        // Whatever a file left behind says, only a live holder of the lock counts.
        fs::write(super::dir(dir.path()).join("lock"), "1\n").unwrap();
        lock(dir.path()).unwrap();
    }

    #[test]
    fn the_run_packs_are_kept_by_name_in_the_pack_directory() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(super::dir(dir.path())).unwrap();
        let here = dir.path().join("objects/pack");
        let elsewhere = Path::new("/somewhere/else/objects/pack");
        save_run_packs(
            dir.path(),
            &[
                (elsewhere.join("pack-aa.pack"), 7),
                (elsewhere.join("pack-bb.pack"), 3),
            ],
        )
        .unwrap();
        // A copied repository names its own packs, never the original's.
        assert_eq!(
            load_run_packs(dir.path(), &here),
            vec![
                (here.join("pack-aa.pack"), 7),
                (here.join("pack-bb.pack"), 3)
            ]
        );
        // Anything but a plain pack name in the directory, and the whole list is ignored.
        fs::write(super::dir(dir.path()).join(PACKS), "7 ../pack-aa.pack\n").unwrap();
        assert!(load_run_packs(dir.path(), &here).is_empty());
        fs::write(super::dir(dir.path()).join(PACKS), "x pack-aa.pack\n").unwrap();
        assert!(load_run_packs(dir.path(), &here).is_empty());
        remove(dir.path()).unwrap();
        assert!(!super::dir(dir.path()).join(PACKS).exists());
    }
}
