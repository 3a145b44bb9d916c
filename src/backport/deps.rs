//! Likely missing dependencies at a stop: the backporter's most common question, "which upstream commit does this
//! patch need first?"
//!
//! A candidate is a commit on the picked commit's side (reachable from its parent, not from the branch) that
//! changed a conflicted file, is not earlier in the list, and is not on the branch by trailer or subject. It is
//! named when it *added a line the patch relies on*: a context or removed line of the patch's hunks in that file.
//! That is what `git blame` on the patch's preimage would point at, without blaming whole files.

use super::matcher::{self, Rules};
use super::patchlist::{Entry, Resolved};
use super::pick::{self, Conflict};
use super::{Error, State};
use crate::git::{self, Context};
use git2::{Commit, DiffOptions, Oid, Repository, Tree};
use std::collections::HashSet;

/// At most this many commits are walked and this many named.
const WALK_LIMIT: usize = 5000;
const NAMED: usize = 5;

/// The likely missing dependencies of the stopped step, newest first.
pub fn likely_missing(
    repo: &Repository,
    st: &State,
    conflicts: &[Conflict],
) -> Result<Vec<(Oid, String)>, Error> {
    let step = &st.plan.steps[st.position];
    let commit = repo
        .find_commit(step.commit)
        .context_git(|| "reading the stopped commit")?;
    let parent_index = st
        .options
        .mainline
        .map_or(0, |m| m.saturating_sub(1) as usize);
    let Ok(parent) = commit.parent(parent_index) else {
        return Ok(Vec::new());
    };
    // Lines the patch relies on, per conflicted path.
    let mut relied: Vec<(String, HashSet<Vec<u8>>)> = Vec::new();
    let (ptree, ctree) = (
        parent.tree().context_git(|| "reading a tree")?,
        commit.tree().context_git(|| "reading a tree")?,
    );
    for c in conflicts {
        let lines = hunk_lines(repo, Some(&ptree), &ctree, &c.path, &[' ', '-'])?;
        if !lines.is_empty() {
            relied.push((c.path.clone(), lines));
        }
    }
    if relied.is_empty() {
        return Ok(Vec::new());
    }
    let earlier: HashSet<Oid> = st.plan.steps[..st.position]
        .iter()
        .map(|s| s.commit)
        .collect();
    let mut walk = repo.revwalk().context_git(|| "walking")?;
    walk.push(parent.id()).context_git(|| "walking")?;
    walk.hide(st.tip).context_git(|| "walking")?;
    let mut found = Vec::new();
    for oid in walk.take(WALK_LIMIT) {
        let oid = oid.context_git(|| "walking")?;
        if earlier.contains(&oid) {
            continue;
        }
        let c = repo.find_commit(oid).context_git(|| "reading a commit")?;
        if c.parent_count() > 1 {
            continue;
        }
        if adds_a_relied_line(repo, &c, &relied)? {
            found.push(oid);
        }
    }
    let resolved: Vec<Resolved> = found
        .iter()
        .filter_map(|&oid| {
            let c = repo.find_commit(oid).ok()?;
            let subject = git::commit_subject(&String::from_utf8_lossy(c.message_bytes()));
            Some(Resolved {
                entry: Entry {
                    line: 0,
                    sha: oid.to_string(),
                    subject: subject.clone(),
                },
                oid,
                subject,
            })
        })
        .collect();
    if resolved.is_empty() {
        return Ok(Vec::new());
    }
    let mut branch = matcher::Branch::collect(repo, st.tip, &[step.commit], &[])?;
    let rules = Rules {
        patch_id: false,
        ..Rules::default()
    };
    let verdicts = matcher::judge(&mut branch, &resolved, rules)?;
    Ok(resolved
        .into_iter()
        .zip(verdicts)
        .filter(|(_, v)| matches!(v, matcher::Verdict::Missing { .. }))
        .map(|(r, _)| (r.oid, r.subject))
        .take(NAMED)
        .collect())
}

fn adds_a_relied_line(
    repo: &Repository,
    c: &Commit<'_>,
    relied: &[(String, HashSet<Vec<u8>>)],
) -> Result<bool, Error> {
    let tree = c.tree().context_git(|| "reading a tree")?;
    let ptree = c.parent(0).ok().and_then(|p| p.tree().ok());
    for (path, lines) in relied {
        let before = ptree.as_ref().and_then(|t| pick::lookup(t, path));
        if pick::lookup(&tree, path) == before {
            continue;
        }
        let added = hunk_lines(repo, ptree.as_ref(), &tree, path, &['+'])?;
        if added.iter().any(|l| lines.contains(l)) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The lines of `path`'s diff between the trees whose origin is one of `origins`, trailing whitespace dropped;
/// blank and one-character lines (braces) say nothing about dependencies and are left out.
fn hunk_lines(
    repo: &Repository,
    old: Option<&Tree<'_>>,
    new: &Tree<'_>,
    path: &str,
    origins: &[char],
) -> Result<HashSet<Vec<u8>>, Error> {
    let blob = |t: Option<&Tree<'_>>| -> Result<Vec<u8>, Error> {
        match t.and_then(|t| pick::lookup(t, path)) {
            Some(side) if side.mode & 0o170000 == 0o100000 => Ok(repo
                .find_blob(side.oid)
                .context_git(|| format!("reading {path}"))?
                .content()
                .to_vec()),
            _ => Ok(Vec::new()),
        }
    };
    let (a, b) = (blob(old)?, blob(Some(new))?);
    let mut opts = DiffOptions::new();
    opts.context_lines(3);
    let patch = git2::Patch::from_buffers(&a, None, &b, None, Some(&mut opts))
        .context_git(|| format!("diffing {path}"))?;
    let mut out = HashSet::new();
    for h in 0..patch.num_hunks() {
        let lines = patch
            .num_lines_in_hunk(h)
            .context_git(|| format!("diffing {path}"))?;
        for l in 0..lines {
            let line = patch
                .line_in_hunk(h, l)
                .context_git(|| format!("diffing {path}"))?;
            if origins.contains(&line.origin()) {
                let text = line.content().trim_ascii_end();
                if text.trim_ascii_start().len() > 1 {
                    out.insert(text.to_vec());
                }
            }
        }
    }
    Ok(out)
}
