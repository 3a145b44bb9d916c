//! Stable patch-ids kept across runs in `.git/bport/patch-ids`. A commit's patch-id is a function of the commit
//! alone (its diff against its first parent, content-only: no attributes, no config), and matching a list against
//! a branch whose copies' blobs differ (a moved base) spends nearly all its time diffing both sides' files; a
//! second `apply` or `--dry-run` of the same list on the same branch asks for the same commits again.
//!
//! Only a cache: a file that does not read as a whole is ignored (the ids are computed again), and a failed write
//! costs the next run the diffs, nothing else.

use super::state_dir;
use crate::git::{self, PatchId};
use git2::{Commit, Oid, Repository};
use std::collections::HashMap;
use std::path::PathBuf;

const FILE: &str = "patch-ids";
const MAGIC: &[u8] = b"bport patch-ids 1\n";
/// A record: the commit, 0 (no diff) or 1, the patch-id (zeros when none).
const RECORD: usize = 20 + 1 + 20;
/// Past this many entries a kept file holds only what the last run used (about 8 MB).
const KEEP_AT_MOST: usize = 200_000;

/// The patch-ids known so far, and which of them this process computed or used.
pub struct PatchIds {
    path: PathBuf,
    /// Read on first use: most matching never needs a patch-id.
    known: Option<HashMap<Oid, Option<PatchId>>>,
    used: Vec<Oid>,
    fresh: usize,
}

impl PatchIds {
    /// The kept patch-ids of `repo`, read when first asked for (none when there is no readable file).
    pub fn load(repo: &Repository) -> PatchIds {
        PatchIds {
            path: state_dir::dir(repo.path()).join(FILE),
            known: None,
            used: Vec::new(),
            fresh: 0,
        }
    }

    /// `commit`'s stable patch-id (`None` for an empty diff), from the kept ones or computed.
    pub fn of(
        &mut self,
        repo: &Repository,
        commit: &Commit<'_>,
    ) -> Result<Option<PatchId>, git::Error> {
        let oid = commit.id();
        let path = &self.path;
        let known = self.known.get_or_insert_with(|| {
            std::fs::read(path)
                .ok()
                .and_then(|bytes| parse(&bytes))
                .unwrap_or_default()
        });
        if let Some(&id) = known.get(&oid) {
            self.used.push(oid);
            return Ok(id);
        }
        let id = git::patch_id_of_commit(repo, commit)?;
        known.insert(oid, id);
        self.used.push(oid);
        self.fresh += 1;
        Ok(id)
    }

    /// Writes the file back when this process computed new ids.
    pub fn keep(&mut self) {
        let Some(known) = self.known.as_ref().filter(|_| self.fresh > 0) else {
            return;
        };
        let mut oids: Vec<Oid> = if known.len() > KEEP_AT_MOST {
            let mut used = self.used.clone();
            used.sort();
            used.dedup();
            used
        } else {
            known.keys().copied().collect()
        };
        oids.sort();
        let mut bytes = Vec::with_capacity(MAGIC.len() + oids.len() * RECORD);
        bytes.extend_from_slice(MAGIC);
        for oid in oids {
            let id = known[&oid];
            bytes.extend_from_slice(oid.as_bytes());
            bytes.push(u8::from(id.is_some()));
            bytes.extend_from_slice(&id.map_or([0; 20], |p| p.0));
        }
        let dir = self.path.parent().unwrap_or(&self.path);
        if let Err(e) =
            std::fs::create_dir_all(dir).and_then(|()| git::write_cache(&self.path, &bytes))
        {
            log::debug!("keeping patch-ids in {}: {e}", self.path.display());
        }
        self.fresh = 0;
    }
}

/// Reads a kept file; `None` unless it is the magic line and whole records.
fn parse(bytes: &[u8]) -> Option<HashMap<Oid, Option<PatchId>>> {
    let body = bytes.strip_prefix(MAGIC)?;
    if !body.len().is_multiple_of(RECORD) {
        return None;
    }
    let mut known = HashMap::with_capacity(body.len() / RECORD);
    for rec in body.chunks_exact(RECORD) {
        let oid = Oid::from_bytes(&rec[..20]).ok()?;
        let id = match rec[20] {
            0 => None,
            1 => Some(PatchId(rec[21..].try_into().ok()?)),
            _ => return None,
        };
        known.insert(oid, id);
    }
    Some(known)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: u8) -> HashMap<Oid, Option<PatchId>> {
        (0..n)
            .map(|i| {
                let oid = Oid::from_bytes(&[i; 20]).unwrap();
                (oid, (i % 3 != 0).then_some(PatchId([i ^ 0x5a; 20])))
            })
            .collect()
    }

    #[test]
    fn kept_patch_ids_read_back_and_a_damaged_file_reads_as_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let mut memo = PatchIds::load(&repo);
        memo.known = Some(ids(7));
        memo.fresh = 1;
        memo.keep();
        let bytes = std::fs::read(state_dir::dir(repo.path()).join(FILE)).unwrap();
        assert_eq!(bytes.len(), MAGIC.len() + 7 * RECORD);
        assert_eq!(parse(&bytes), Some(ids(7)));
        // Cut inside the header or a record, or with a foreign header or tag, the file is not believed at all;
        // cut between records, it holds the records before the cut (a cache may know less, never wrongly).
        for cut in 0..bytes.len() {
            match parse(&bytes[..cut]) {
                Some(part) => {
                    assert!(
                        cut >= MAGIC.len() && (cut - MAGIC.len()).is_multiple_of(RECORD),
                        "cut at {cut}"
                    );
                    assert_eq!(part.len(), (cut - MAGIC.len()) / RECORD);
                    assert!(part.iter().all(|(k, v)| ids(7)[k] == *v));
                }
                None => assert!(cut < MAGIC.len() || !(cut - MAGIC.len()).is_multiple_of(RECORD)),
            }
        }
        let mut bad = bytes.clone();
        bad[0] = b'B';
        assert_eq!(parse(&bad), None);
        let mut bad = bytes.clone();
        bad[MAGIC.len() + 20] = 2;
        assert_eq!(parse(&bad), None);
        assert_eq!(parse(MAGIC), Some(HashMap::new()));
    }
}
