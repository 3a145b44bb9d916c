//! `bport rerere train`: learn resolutions from an existing port.
//!
//! For each commit of the port range that names its original (a cherry-pick trailer, or the same subject in the
//! `--from` range), replay the original onto the port commit's parent in memory. Where that conflicts, render
//! each conflicted file as git would, and record the port commit's version of the file as the postimage of that
//! conflict. git's contrib `rerere-train.sh` does this only for merge commits; ports are linear.

use super::cache::Warning;
use super::conflict_id::normalize;
use super::record::import_resolution;
use super::render::{render, RenderOptions};
use super::worktree::Rerere;
use super::{git_err, ConflictId, Error};
use git2::{Commit, Oid, Repository};
use std::collections::HashMap;

/// What to learn from.
#[derive(Clone, Debug, Default)]
pub struct TrainOptions {
    /// The port: a range (`base..port`) or a single commit.
    pub range: String,
    /// Where originals are found by subject when the port commit has no trailer.
    pub from: Option<String>,
}

/// One learned resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Learned {
    /// The port commit.
    pub commit: Oid,
    /// The original it was picked from.
    pub original: Oid,
    /// The conflicted path.
    pub path: String,
    /// Its conflict id.
    pub id: ConflictId,
    /// False when the cache already had this exact resolution.
    pub new: bool,
}

/// The result of training.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrainOutcome {
    /// Port commits examined.
    pub commits: usize,
    /// Of those, commits whose original was found.
    pub with_original: usize,
    /// Resolutions found, new or already known.
    pub learned: Vec<Learned>,
    /// Cache problems met on the way.
    pub warnings: Vec<Warning>,
}

/// Collects commits of `spec` (a range `a..b` or one commit), oldest first.
fn commits_of(repo: &Repository, spec: &str) -> Result<Vec<Oid>, Error> {
    let bad = |source| Error::BadRevision {
        spec: spec.to_owned(),
        source,
    };
    let mut walk = repo.revwalk().map_err(git_err("walking history"))?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
        .map_err(git_err("walking history"))?;
    if spec.contains("..") {
        walk.push_range(spec).map_err(bad)?;
        walk.collect::<Result<Vec<_>, _>>()
            .map_err(git_err("walking history"))
    } else {
        let obj = repo.revparse_single(spec).map_err(bad)?;
        Ok(vec![obj.id()])
    }
}

/// The original a commit message names by trailer, if any (the first origin that resolves in `repo`).
pub fn trailer_original(repo: &Repository, message: &str) -> Option<Oid> {
    crate::git::origins(message)
        .iter()
        .filter_map(|o| repo.revparse_single(&o.hex).ok())
        .find_map(|obj| obj.peel_to_commit().ok().map(|c| c.id()))
}

/// A subject normalized for matching, by the same rule as `bport apply`'s already-applied detection.
pub use crate::git::normalize_subject as normalized_subject;

/// A commit's subject line (lossy on non-UTF-8).
fn summary(c: &Commit<'_>) -> String {
    c.summary_bytes()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

/// Learns resolutions into `.git/rr-cache` from the port `opts.range`.
pub fn train(rr: &Rerere<'_>, opts: &TrainOptions) -> Result<TrainOutcome, Error> {
    let repo = rr.repo();
    let mut by_subject: HashMap<String, Oid> = HashMap::new();
    if let Some(from) = &opts.from {
        for oid in commits_of(repo, from)? {
            let c = repo.find_commit(oid).map_err(git_err("reading a commit"))?;
            by_subject
                .entry(normalized_subject(&summary(&c)))
                .or_insert(oid);
        }
    }
    let mut out = TrainOutcome::default();
    for oid in commits_of(repo, &opts.range)? {
        out.commits += 1;
        let port = repo
            .find_commit(oid)
            .map_err(git_err(format!("reading commit {oid}")))?;
        if port.parent_count() != 1 {
            continue;
        }
        let original = trailer_original(repo, &String::from_utf8_lossy(port.message_bytes()))
            .or_else(|| {
                by_subject
                    .get(&normalized_subject(&summary(&port)))
                    .copied()
            });
        let Some(original) = original.filter(|o| *o != oid) else {
            continue;
        };
        out.with_original += 1;
        let original = repo
            .find_commit(original)
            .map_err(git_err(format!("reading commit {original}")))?;
        if original.parent_count() != 1 {
            continue; // a merge has no single change to replay
        }
        learn_one(rr, &port, &original, &mut out)?;
    }
    Ok(out)
}

fn learn_one(
    rr: &Rerere<'_>,
    port: &Commit<'_>,
    original: &Commit<'_>,
    out: &mut TrainOutcome,
) -> Result<(), Error> {
    let repo = rr.repo();
    let parent = port.parent(0).map_err(git_err("reading a parent"))?;
    let index = repo
        .cherrypick_commit(original, &parent, 0, None)
        .map_err(git_err(format!("replaying {}", original.id())))?;
    if !index.has_conflicts() {
        return Ok(());
    }
    let port_tree = port.tree().map_err(git_err("reading a tree"))?;
    let short = original
        .as_object()
        .short_id()
        .ok()
        .and_then(|b| b.as_str().ok().map(str::to_owned))
        .unwrap_or_default();
    for c in index.conflicts().map_err(git_err("listing conflicts"))? {
        let c = c.map_err(git_err("listing conflicts"))?;
        let (Some(ours), Some(theirs)) = (&c.our, &c.their) else {
            continue;
        };
        let regular = |m: u32| m & 0o170000 == 0o100000;
        if !regular(ours.mode) || !regular(theirs.mode) {
            continue;
        }
        let path = String::from_utf8_lossy(&ours.path).into_owned();
        let Ok(entry) = port_tree.get_path(std::path::Path::new(&path)) else {
            continue; // resolved by deletion: git's rerere cannot record that either
        };
        let post = rr.blob(Some(entry.id()))?;
        let marker_size = rr.marker_size(&path);
        if super::conflict_id::has_conflicts(&post, marker_size) {
            continue; // committed with markers: nothing to learn
        }
        let base = rr.blob(c.ancestor.as_ref().map(|e| e.id))?;
        let opts = RenderOptions {
            style: rr.style,
            marker_size,
            ours_label: "HEAD".into(),
            theirs_label: format!("{short} ({})", summary(original)),
            base_label: format!("parent of {short} ({})", summary(original)),
            favor: None,
        };
        let rendered = render(
            &base,
            &rr.blob(Some(ours.id))?,
            &rr.blob(Some(theirs.id))?,
            &opts,
        );
        let Ok(Some(pre)) = normalize(&rendered.content, marker_size) else {
            continue; // libgit2 saw a conflict the content merge resolves (e.g. identical changes)
        };
        let new = import_resolution(&rr.local, &pre.id, &pre.preimage, &post, &mut out.warnings)?;
        out.learned.push(Learned {
            commit: port.id(),
            original: original.id(),
            path,
            id: pre.id,
            new,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailers_name_the_original_in_every_common_form() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = Repository::init(tmp.path()).unwrap();
        let sig = git2::Signature::new("T", "t@e", &git2::Time::new(1_700_000_000, 0)).unwrap();
        let tree = repo
            .find_tree(repo.treebuilder(None).unwrap().write().unwrap())
            .unwrap();
        let oid = repo.commit(None, &sig, &sig, "orig", &tree, &[]).unwrap();
        let hex = oid.to_string();
        for message in [
            format!("x\n\n(cherry picked from commit {hex})\n"),
            format!("x\n\n(cherry-picked from {})\n", &hex[..12]),
            format!("x\n\ncommit {hex} upstream.\n"),
            format!("x\n\n[ Upstream commit {hex} ]\n"),
            format!("x\n\nupstream commit {} (\"x\")\n", &hex[..10]),
        ] {
            assert_eq!(trailer_original(&repo, &message), Some(oid), "{message}");
        }
        assert_eq!(trailer_original(&repo, "x\n\nStable-dep-of: 123\n"), None);
        assert_eq!(
            trailer_original(&repo, "x\n\n(cherry picked from commit 0123456789abcdef)\n"),
            None
        );
    }

    #[test]
    fn subjects_lose_vendor_prefixes() {
        assert_eq!(
            normalized_subject("UPSTREAM: [PATCH v2 3/7]  perf:  fix   x"),
            "perf: fix x"
        );
        assert_eq!(normalized_subject("BACKPORT: FROMGIT: a b"), "a b");
    }
}
