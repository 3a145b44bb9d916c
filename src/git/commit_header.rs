//! A commit's tree, parents and committer date read straight from its object's header, for history walks that
//! read thousands of commits and need nothing else: no message, no signatures, no object cache entry.

use super::{Context, Error};
use git2::{Odb, Oid, Repository};

/// What a history walk needs of a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitHeader {
    /// The root tree.
    pub tree: Oid,
    /// The committer date, seconds since the epoch.
    pub time: i64,
    /// The parents, in order.
    pub parents: Vec<Oid>,
}

/// The header of commit `oid`; `None` when the object is missing (a shallow clone's boundary). A header this
/// reader does not take apart is left to libgit2's parser, never guessed.
pub fn read_commit_header(
    repo: &Repository,
    odb: &Odb<'_>,
    oid: Oid,
) -> Result<Option<CommitHeader>, Error> {
    let obj = match odb.read(oid) {
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
        read => read.context_git(|| format!("reading {oid}"))?,
    };
    if obj.kind() == git2::ObjectType::Commit {
        if let Some(header) = parse(obj.data()) {
            return Ok(Some(header));
        }
    }
    let c = repo
        .find_commit(oid)
        .context_git(|| format!("reading commit {oid}"))?;
    Ok(Some(CommitHeader {
        tree: c.tree_id(),
        time: c.time().seconds(),
        parents: c.parent_ids().collect(),
    }))
}

/// The tree, parents and committer time of a commit object's header (the lines before the first empty one).
fn parse(data: &[u8]) -> Option<CommitHeader> {
    let hex = |h: &[u8]| {
        (h.len() == 40)
            .then(|| {
                std::str::from_utf8(h)
                    .ok()
                    .and_then(|h| Oid::from_str(h).ok())
            })
            .flatten()
    };
    let (mut tree, mut parents, mut time) = (None, Vec::new(), None);
    for line in data.split(|&b| b == b'\n') {
        if line.is_empty() {
            break;
        }
        if let Some(h) = line.strip_prefix(b"tree ") {
            tree = Some(hex(h)?);
        } else if let Some(h) = line.strip_prefix(b"parent ") {
            parents.push(hex(h)?);
        } else if let Some(rest) = line.strip_prefix(b"committer ") {
            let after_email = &rest[rest.iter().rposition(|&b| b == b'>')? + 1..];
            let seconds = after_email.split(|&b| b == b' ').find(|w| !w.is_empty())?;
            time = Some(std::str::from_utf8(seconds).ok()?.parse().ok()?);
        }
    }
    Some(CommitHeader {
        tree: tree?,
        time: time?,
        parents,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_header_reads_as_libgit2_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let tree = repo
            .find_tree(crate::git::test_history::one_file_tree(&repo))
            .unwrap();
        let sig = git2::Signature::new(
            "A U Thor",
            "a@example.com",
            &git2::Time::new(1_700_000_000, -420),
        )
        .unwrap();
        let root = repo.commit(None, &sig, &sig, "root", &tree, &[]).unwrap();
        let other = repo.commit(None, &sig, &sig, "other", &tree, &[]).unwrap();
        let parents = [
            repo.find_commit(root).unwrap(),
            repo.find_commit(other).unwrap(),
        ];
        let merge = repo
            .commit(
                None,
                &sig,
                &sig,
                "merge",
                &tree,
                &[&parents[0], &parents[1]],
            )
            .unwrap();
        let odb = repo.odb().unwrap();
        for oid in [root, merge] {
            let c = repo.find_commit(oid).unwrap();
            let want = CommitHeader {
                tree: c.tree_id(),
                time: c.time().seconds(),
                parents: c.parent_ids().collect(),
            };
            assert_eq!(parse(odb.read(oid).unwrap().data()), Some(want.clone()));
            assert_eq!(read_commit_header(&repo, &odb, oid).unwrap(), Some(want));
        }
        assert_eq!(
            read_commit_header(&repo, &odb, Oid::from_bytes(&[7; 20]).unwrap()).unwrap(),
            None
        );
        // What it does not take apart is left to libgit2, never guessed.
        for bad in [
            &b"tree 12\ncommitter A <a> 5 +0000\n\n"[..],
            b"tree 0123456789012345678901234567890123456789\n\n",
            b"tree 0123456789012345678901234567890123456789\ncommitter A <a> soon +0000\n\n",
            b"tree 0123456789012345678901234567890123456789\ncommitter A no email 5 +0000\n",
            b"",
        ] {
            assert!(parse(bad).is_none(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
