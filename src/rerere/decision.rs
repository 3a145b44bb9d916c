//! Modify/delete decisions, beyond git: git's rerere never records how a modify/delete or delete/modify conflict
//! was resolved (rerere.c calls replaying a deletion "inherently risky" in general). bport records the decision
//! only for the exact same conflict: keyed by the path and the blob ids of both sides, so it replays only when
//! the same modification meets the same deletion again.
//!
//! Layout, next to the rr-cache entries (git ignores names that are not conflict ids):
//! `<cache>/bport-decisions/<key>` holding `delete\n`, or `keep\n` followed by the kept file's content.
//! Pending decisions of the current stop are tracked in `.git/BPORT_RERERE_DECISIONS`, in `MERGE_RR`'s format.

use super::cache::{write_atomic, RrCache, Warning, DECISIONS_DIR as DIR};
use super::Error;
use git2::Oid;
use sha1::{Digest, Sha1};
use std::path::PathBuf;

/// What the user did with a modify/delete conflict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The file was removed.
    Delete,
    /// The file was kept with this content.
    Keep(Vec<u8>),
}

impl Decision {
    fn encode(&self) -> Vec<u8> {
        match self {
            Decision::Delete => b"delete\n".to_vec(),
            Decision::Keep(content) => {
                let mut v = b"keep\n".to_vec();
                v.extend_from_slice(content);
                v
            }
        }
    }

    fn decode(data: &[u8]) -> Option<Decision> {
        if data == b"delete\n" {
            Some(Decision::Delete)
        } else {
            data.strip_prefix(b"keep\n")
                .map(|c| Decision::Keep(c.to_vec()))
        }
    }

    /// Which way the conflict was decided, without the kept content.
    pub fn kind(&self) -> DecisionKind {
        match self {
            Decision::Delete => DecisionKind::Delete,
            Decision::Keep(_) => DecisionKind::Keep,
        }
    }
}

/// Which way a modify/delete conflict was decided: what outcomes carry and what staging branches on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecisionKind {
    /// The modified file stays (its recorded content).
    Keep,
    /// The file is deleted.
    Delete,
}

impl std::fmt::Display for DecisionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DecisionKind::Keep => "keep",
            DecisionKind::Delete => "delete",
        })
    }
}

/// The key of a modify/delete conflict: SHA-1 over `path NUL ours NUL theirs` (hex ids, empty for the missing
/// side), in the same 40-hex shape as a conflict id.
pub fn key(path: &str, ours: Option<Oid>, theirs: Option<Oid>) -> super::ConflictId {
    let mut h = Sha1::new();
    h.update(path.as_bytes());
    h.update([0]);
    h.update(ours.map(|o| o.to_string()).unwrap_or_default().as_bytes());
    h.update([0]);
    h.update(theirs.map(|o| o.to_string()).unwrap_or_default().as_bytes());
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    hex.parse().expect("40 lowercase hex digits")
}

fn file(cache: &RrCache, key: &super::ConflictId) -> PathBuf {
    cache.dir().join(DIR).join(key.to_string())
}

/// Reads the decision for `key`; a file that is not a regular file or does not decode is skipped with a warning.
pub fn read(
    cache: &RrCache,
    key: &super::ConflictId,
    warnings: &mut Vec<Warning>,
) -> Result<Option<Decision>, Error> {
    let path = file(cache, key);
    for dir in [cache.dir().to_path_buf(), cache.dir().join(DIR)] {
        if let Some(w) = cache.refused_link(&dir) {
            warnings.push(w);
            return Ok(None);
        }
    }
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() && m.len() > super::cache::MAX_IMAGE => {
            warnings.push(Warning {
                path,
                reason: format!("{} bytes: too large for a decision", m.len()),
            });
            return Ok(None);
        }
        Ok(m) if m.is_file() => {}
        Ok(_) => {
            warnings.push(Warning {
                path,
                reason: "not a regular file".into(),
            });
            return Ok(None);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(Error::Io { path, source }),
    }
    let data = cache.read_capped(&path)?;
    match Decision::decode(&data) {
        Some(d) => Ok(Some(d)),
        None => {
            warnings.push(Warning {
                path,
                reason: "not a bport decision (expected `delete` or `keep`)".into(),
            });
            Ok(None)
        }
    }
}

/// Records a decision.
pub fn write(cache: &RrCache, key: &super::ConflictId, decision: &Decision) -> Result<(), Error> {
    let path = file(cache, key);
    let dir = cache.dir().join(DIR);
    for d in [cache.dir(), dir.as_path()] {
        if let Some(w) = cache.refused_link(d) {
            return Err(Error::BadCacheEntry {
                path: w.path,
                reason: w.reason,
            });
        }
    }
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir, source })?;
    write_atomic(&path, &decision.encode())
}

/// Every valid decision key in `cache`; bad names and files are skipped with warnings.
pub fn keys(cache: &RrCache, warnings: &mut Vec<Warning>) -> Result<Vec<super::ConflictId>, Error> {
    let dir = cache.dir().join(DIR);
    for d in [cache.dir().to_path_buf(), dir.clone()] {
        if let Some(w) = cache.refused_link(&d) {
            warnings.push(w);
            return Ok(Vec::new());
        }
    }
    let read = match std::fs::read_dir(&dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(Error::Io { path: dir, source }),
    };
    let mut out = Vec::new();
    for dirent in read {
        let dirent = dirent.map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        match dirent
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<super::ConflictId>().ok())
        {
            Some(k) => out.push(k),
            None => warnings.push(Warning {
                path: dirent.path(),
                reason: "name is not a decision key (40 lowercase hex digits)".into(),
            }),
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_round_trip_and_keys_depend_on_both_sides() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = RrCache::new(tmp.path());
        let a = Oid::from_str("1111111111111111111111111111111111111111").unwrap();
        let k = key("f.c", Some(a), None);
        assert_ne!(k, key("f.c", None, Some(a)));
        assert_ne!(k, key("g.c", Some(a), None));
        let mut w = Vec::new();
        assert_eq!(read(&cache, &k, &mut w).unwrap(), None);
        write(&cache, &k, &Decision::Keep(b"x\n".to_vec())).unwrap();
        assert_eq!(
            read(&cache, &k, &mut w).unwrap(),
            Some(Decision::Keep(b"x\n".to_vec()))
        );
        write(&cache, &k, &Decision::Delete).unwrap();
        assert_eq!(read(&cache, &k, &mut w).unwrap(), Some(Decision::Delete));
        std::fs::write(file(&cache, &k), b"garbage").unwrap();
        assert_eq!(read(&cache, &k, &mut w).unwrap(), None);
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn a_linked_decisions_folder_in_an_untrusted_cache_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        let k = key("f.c", None, None);
        write(&RrCache::new(&elsewhere), &k, &Decision::Delete).unwrap();
        let shared = RrCache::untrusted(tmp.path().join("shared"));
        std::fs::create_dir_all(shared.dir()).unwrap();
        std::os::unix::fs::symlink(elsewhere.join(DIR), shared.dir().join(DIR)).unwrap();
        let mut w = Vec::new();
        assert_eq!(read(&shared, &k, &mut w).unwrap(), None);
        assert!(keys(&shared, &mut w).unwrap().is_empty());
        assert!(
            w.iter().all(|w| w.reason.contains("symbolic link")),
            "{w:?}"
        );
        let k2 = key("g.c", None, None);
        assert!(write(&shared, &k2, &Decision::Delete).is_err());
        assert!(!elsewhere.join(DIR).join(k2.to_string()).exists());
    }
}
