//! The repository side of rerere: where the caches are, the user's config, the conflicted paths in the index,
//! and reading and writing work-tree files. All git access of the rerere module goes through here (git2).

use super::cache::RrCache;
use super::xdiff::merge::Style;
use super::{git_err, Error};
use git2::{Oid, Repository};
use std::path::{Path, PathBuf};

/// The default shared cache directory, relative to the work tree.
pub const SHARED_CACHE_DIR: &str = "rerere-cache";

/// Config key naming another shared cache directory (relative paths are relative to the work tree).
pub const SHARED_CACHE_CONFIG: &str = "bport.rerereCache";

/// One conflicted path in the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// Repository-relative path.
    pub path: String,
    /// Stage 1 blob, if any.
    pub base: Option<Oid>,
    /// Stage 2 blob and mode, if any.
    pub ours: Option<(Oid, u32)>,
    /// Stage 3 blob and mode, if any.
    pub theirs: Option<(Oid, u32)>,
}

impl Conflict {
    /// Exactly one side is present and it is a regular file: a modify/delete (or delete/modify) conflict, which
    /// bport records as a decision.
    pub fn modify_delete(&self) -> bool {
        let regular = |m: u32| m & 0o170000 == 0o100000;
        match (self.ours, self.theirs) {
            (Some((_, m)), None) | (None, Some((_, m))) => regular(m) && self.base.is_some(),
            _ => false,
        }
    }

    /// Both sides are regular files: the only conflicts git's rerere handles.
    pub fn three_staged(&self) -> bool {
        let regular = |m: u32| m & 0o170000 == 0o100000;
        matches!((self.ours, self.theirs), (Some((_, a)), Some((_, b))) if regular(a) && regular(b))
    }
}

/// A repository opened for rerere: caches, config and work tree.
pub struct Rerere<'r> {
    repo: &'r Repository,
    workdir: PathBuf,
    /// `.git/rr-cache` (in the common dir, shared by worktrees as in git).
    pub local: RrCache,
    /// The shared cache: `bport.rerereCache` or `rerere-cache/` in the work tree.
    pub shared: RrCache,
    /// `merge.conflictStyle`, used for replay merges as git does.
    pub style: Style,
    /// `rerere.enabled` is not `false`: a run records and replays (bport's default is on; git's `false` turns it
    /// off for bport as for git).
    pub enabled: bool,
    /// `rerere.autoupdate`: stage what a replay resolved (git's sequencer still stops for the user).
    pub autoupdate: bool,
}

impl<'r> Rerere<'r> {
    /// Opens rerere on `repo`, reading the config.
    pub fn open(repo: &'r Repository) -> Result<Self, Error> {
        let workdir = repo
            .workdir()
            .ok_or_else(|| Error::BareRepository {
                path: repo.path().to_path_buf(),
            })?
            .to_path_buf();
        let config = repo.config().map_err(git_err("reading the git config"))?;
        let style = config
            .get_string("merge.conflictStyle")
            .ok()
            .and_then(|s| Style::from_config(&s))
            .unwrap_or_default();
        let shared = match config.get_path(SHARED_CACHE_CONFIG) {
            Ok(p) if p.is_absolute() => p,
            Ok(p) => workdir.join(p),
            Err(_) => workdir.join(SHARED_CACHE_DIR),
        };
        Ok(Rerere {
            repo,
            local: RrCache::new(repo.commondir().join("rr-cache")),
            shared: if shared.starts_with(&workdir) {
                RrCache::untrusted_within(shared, &workdir)
            } else {
                RrCache::untrusted(shared)
            },
            workdir,
            style,
            enabled: config.get_bool("rerere.enabled").unwrap_or(true),
            autoupdate: config.get_bool("rerere.autoupdate").unwrap_or(false),
        })
    }

    /// The commit on HEAD's first-parent history that added `file` (a path in the work tree) with the content it
    /// has now: where a shared resolution came from. `None` when the file is outside the work tree, not
    /// committed, or changed since its last commit.
    pub fn committed_by(&self, file: &Path) -> Option<Oid> {
        let rel = file.strip_prefix(&self.workdir).ok()?;
        let head = self.repo.head().ok()?.peel_to_commit().ok()?;
        let entry_at = |c: &git2::Commit<'_>| c.tree().ok()?.get_path(rel).ok().map(|e| e.id());
        let blob = entry_at(&head)?;
        if Oid::hash_file(git2::ObjectType::Blob, file).ok()? != blob {
            return None;
        }
        let mut at = head;
        // Bounded: a history deeper than this names the oldest commit looked at, which still has the file.
        for _ in 0..100_000 {
            match at.parent(0) {
                Ok(p) if entry_at(&p) == Some(blob) => at = p,
                _ => break,
            }
        }
        Some(at.id())
    }

    /// The repository.
    pub fn repo(&self) -> &'r Repository {
        self.repo
    }

    /// The work tree root.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// `.git/MERGE_RR` of this worktree.
    pub fn merge_rr_path(&self) -> PathBuf {
        self.repo.path().join("MERGE_RR")
    }

    /// The path's `conflict-marker-size` attribute (git's `ll_merge_marker_size`): 7 unless set to a positive
    /// number.
    pub fn marker_size(&self, path: &str) -> usize {
        super::render::marker_size(self.repo, path)
    }

    /// Conflicted paths in the index, in index order.
    pub fn conflicts(&self) -> Result<Vec<Conflict>, Error> {
        let mut index = self.repo.index().map_err(git_err("opening the index"))?;
        // Not forced: libgit2 reads the file again when its stamp or trailing checksum differs from what the
        // handle holds, which is exactly when someone else wrote it. A forced read parsed and checksummed the
        // whole index again after the caller had just written it (4% of a real backport's CPU).
        index.read(false).map_err(git_err("reading the index"))?;
        let mut out = Vec::new();
        for c in index.conflicts().map_err(git_err("listing conflicts"))? {
            let c = c.map_err(git_err("listing conflicts"))?;
            let path = [&c.ancestor, &c.our, &c.their]
                .into_iter()
                .flatten()
                .next()
                .map(|e| String::from_utf8_lossy(&e.path).into_owned());
            let Some(path) = path else { continue };
            out.push(Conflict {
                path,
                base: c.ancestor.as_ref().map(|e| e.id),
                ours: c.our.as_ref().map(|e| (e.id, e.mode)),
                theirs: c.their.as_ref().map(|e| (e.id, e.mode)),
            });
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// A blob's content (empty for `None`, as git's `handle_cache` treats a missing stage).
    pub fn blob(&self, oid: Option<Oid>) -> Result<Vec<u8>, Error> {
        match oid {
            None => Ok(Vec::new()),
            Some(oid) => Ok(self
                .repo
                .find_blob(oid)
                .map_err(git_err(format!("reading blob {oid}")))?
                .content()
                .to_vec()),
        }
    }

    /// Reads a work-tree file; `None` when it does not exist.
    pub fn read_file(&self, path: &str) -> Result<Option<Vec<u8>>, Error> {
        let full = self.workdir.join(path);
        match std::fs::read(&full) {
            Ok(d) => Ok(Some(d)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(Error::Io { path: full, source }),
        }
    }

    /// Overwrites a work-tree file in place (keeping its mode, as git's fopen/fwrite does).
    pub fn write_file(&self, path: &str, content: &[u8]) -> Result<(), Error> {
        let full = self.workdir.join(path);
        std::fs::write(&full, content).map_err(|source| Error::Io { path: full, source })
    }

    /// `.git/BPORT_RERERE_DECISIONS`: modify/delete conflicts waiting for the user's decision.
    pub fn decisions_path(&self) -> PathBuf {
        self.repo.path().join("BPORT_RERERE_DECISIONS")
    }

    /// The blob staged (stage 0) for `path`, if any.
    pub fn staged_blob(&self, path: &str) -> Result<Option<Oid>, Error> {
        let mut index = self.repo.index().map_err(git_err("opening the index"))?;
        // As in `conflicts`: read again only when the file changed.
        index.read(false).map_err(git_err("reading the index"))?;
        Ok(index.get_path(Path::new(path), 0).map(|e| e.id))
    }

    /// Removes a work-tree file if present.
    pub fn remove_file(&self, path: &str) -> Result<(), Error> {
        let full = self.workdir.join(path);
        match std::fs::remove_file(&full) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(Error::Io { path: full, source }),
        }
    }

    /// Stages the deletion of paths, resolving their conflicts in the index.
    pub fn stage_deletions(&self, paths: &[String]) -> Result<(), Error> {
        if paths.is_empty() {
            return Ok(());
        }
        let mut index = self.repo.index().map_err(git_err("opening the index"))?;
        index.read(true).map_err(git_err("reading the index"))?;
        for p in paths {
            index
                .remove_path(Path::new(p))
                .map_err(git_err(format!("staging the deletion of '{p}'")))?;
        }
        index.write().map_err(git_err("writing the index"))
    }

    /// Stages work-tree files, resolving their conflicts in the index (`rerere.autoupdate`).
    pub fn stage(&self, paths: &[String]) -> Result<(), Error> {
        if paths.is_empty() {
            return Ok(());
        }
        let mut index = self.repo.index().map_err(git_err("opening the index"))?;
        index.read(true).map_err(git_err("reading the index"))?;
        for p in paths {
            index
                .add_path(Path::new(p))
                .map_err(git_err(format!("staging '{p}'")))?;
        }
        index.write().map_err(git_err("writing the index"))
    }
}
