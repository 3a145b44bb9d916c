//! Histories built for unit tests of history walks: commits with chosen dates and parents over one tree.

use git2::{Oid, Repository};

/// A tree holding one file, for commits whose content does not matter.
pub fn one_file_tree(repo: &Repository) -> Oid {
    let blob = repo.blob(b"x\n").unwrap();
    let mut b = repo.treebuilder(None).unwrap();
    b.insert("f", blob, 0o100644).unwrap();
    b.write().unwrap()
}

/// A commit of `tree` with `parents`, authored and committed at `time` (UTC).
pub fn commit_at(repo: &Repository, tree: Oid, time: i64, parents: &[Oid]) -> Oid {
    let sig = git2::Signature::new("T", "t@example.com", &git2::Time::new(time, 0)).unwrap();
    let tree = repo.find_tree(tree).unwrap();
    let parents: Vec<_> = parents
        .iter()
        .map(|p| repo.find_commit(*p).unwrap())
        .collect();
    let refs: Vec<_> = parents.iter().collect();
    repo.commit(None, &sig, &sig, &format!("at {time}"), &tree, &refs)
        .unwrap()
}
