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
use super::plan::StepResult;
use super::{state, Error, State};
use crate::git::{self, Context};
use git2::{DiffOptions, Oid, Repository, Tree};
use std::collections::{HashMap, HashSet};

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
        let mut lines = hunk_lines(repo, Some(&ptree), &ctree, &c.path, &[' ', '-'])?;
        // A relied line the branch's file already has is not what makes the patch conflict: whoever added it
        // upstream is not a missing dependency. Without such lines there is nothing to walk for.
        if let Some(ours) = c.ours.filter(|s| s.mode & 0o170000 == 0o100000) {
            let have = repo
                .find_blob(ours.oid)
                .context_git(|| format!("reading {}", c.path))?;
            let have: HashSet<&[u8]> = have
                .content()
                .split(|&b| b == b'\n')
                .map(<[u8]>::trim_ascii_end)
                .collect();
            lines.retain(|l| !have.contains(l.as_slice()));
        }
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
    let graph = upstream_graph(repo, st)?;
    let found = candidates(repo, &graph, parent.id(), &earlier, &relied)?;
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
    // The branch is what it had of its own when the run was planned plus this run's picks.
    let mut branch = match state::load_branch_commits(repo.path()) {
        Some(mut oids) => {
            let picked = st.results.iter().rev().filter_map(|r| match r {
                Some(StepResult::Picked { new }) => Some(*new),
                _ => None,
            });
            oids.splice(0..0, picked);
            matcher::Branch::from_commits(repo, &oids)?
        }
        None => matcher::Branch::collect(repo, st.tip, &[step.commit], &[])?,
    };
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

/// The commits of `graph` from `from` down (newest first, merges and `earlier` steps left out) that added a line
/// of `relied` to its path.
fn candidates(
    repo: &Repository,
    graph: &Graph,
    from: Oid,
    earlier: &HashSet<Oid>,
    relied: &[(String, HashSet<Vec<u8>>)],
) -> Result<Vec<Oid>, Error> {
    let mut changed = ChangedPaths::load(repo);
    let mut found = Vec::new();
    for (oid, node) in graph.ancestors(from, WALK_LIMIT) {
        if earlier.contains(&oid) || node.parents.len() > 1 {
            continue;
        }
        let parent_tree = match node.parents.first() {
            Some(p) => Some(graph.tree_of(repo, *p)?),
            None => None,
        };
        let paths = changed.of(repo, oid, node.tree, parent_tree)?;
        if adds_a_relied_line(repo, node.tree, parent_tree, relied, paths)? {
            found.push(oid);
        }
    }
    changed.keep(repo);
    Ok(found)
}

/// The paths each commit of the upstream graph changes against its first parent, kept in `.git/bport/` across the
/// stops of a run. Every stop walks the same upstream history for candidates; looking each conflicted path up in
/// every commit's root tree (and its parent's) read two big trees per commit at every stop, while a commit's
/// changed paths are found once, by one tree diff that skips equal subtrees, and reused by all later stops.
struct ChangedPaths {
    known: HashMap<Oid, Vec<String>>,
    /// Entries found by this stop, kept for the next ones.
    fresh: usize,
}

const PATHS_FILE: &str = "upstream-paths";

impl ChangedPaths {
    fn load(repo: &Repository) -> ChangedPaths {
        let path = state::dir(repo.path()).join(PATHS_FILE);
        let known = std::fs::read(path)
            .ok()
            .and_then(|bytes| parse_changed_paths(&bytes))
            .unwrap_or_default();
        ChangedPaths { known, fresh: 0 }
    }

    /// The paths `commit` (root tree `tree`) changes against the root tree `parent` (sorted).
    fn of(
        &mut self,
        repo: &Repository,
        commit: Oid,
        tree: Oid,
        parent: Option<Oid>,
    ) -> Result<&[String], Error> {
        let paths = match self.known.entry(commit) {
            std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let find = |t: Oid| repo.find_tree(t).context_git(|| "reading a tree");
                let old = parent.map(find).transpose()?;
                let paths = git::tree_changes(repo, old.as_ref(), Some(&find(tree)?))?
                    .into_iter()
                    .map(|c| c.path)
                    .collect();
                self.fresh += 1;
                slot.insert(paths)
            }
        };
        Ok(paths)
    }

    /// Writes the memo back when this stop added to it. Only a cache: a failed write costs the next stop the
    /// diffs, nothing else.
    fn keep(&self, repo: &Repository) {
        if self.fresh == 0 {
            return;
        }
        let path = state::dir(repo.path()).join(PATHS_FILE);
        let mut bytes = Vec::new();
        for (oid, paths) in &self.known {
            bytes.extend_from_slice(oid.to_string().as_bytes());
            bytes.push(0);
            for p in paths {
                bytes.extend_from_slice(p.as_bytes());
                bytes.push(0);
            }
            bytes.push(0);
        }
        if let Err(e) = crate::git::write_cache(&path, &bytes) {
            log::debug!("keeping the changed paths in {}: {e}", path.display());
        }
    }
}

/// Reads a kept memo: per commit its hex id, then each path, each ended by a NUL, and an empty word after the
/// last path. `None` when anything does not read (then the paths are found again).
fn parse_changed_paths(bytes: &[u8]) -> Option<HashMap<Oid, Vec<String>>> {
    let mut out = HashMap::new();
    let mut words = bytes.split(|&b| b == 0);
    loop {
        let id = words.next()?;
        if id.is_empty() {
            // The split's final word, after the last record's terminator; a record cut short has none.
            return words.next().is_none().then_some(out);
        }
        if id.len() != 40 {
            return None;
        }
        let oid = Oid::from_str(std::str::from_utf8(id).ok()?).ok()?;
        let mut paths = Vec::new();
        loop {
            let word = words.next()?;
            if word.is_empty() {
                break;
            }
            paths.push(String::from_utf8(word.to_vec()).ok()?);
        }
        // Searched by bisection: sorted whatever the file holds.
        paths.sort();
        out.insert(oid, paths);
    }
}

/// Whether the commit (root tree `tree` against `parent_tree`, which change `changed`) added a relied line.
fn adds_a_relied_line(
    repo: &Repository,
    tree: Oid,
    parent_tree: Option<Oid>,
    relied: &[(String, HashSet<Vec<u8>>)],
    changed: &[String],
) -> Result<bool, Error> {
    for (path, lines) in relied {
        if changed.binary_search(path).is_err() {
            continue;
        }
        let find = |t: Oid| repo.find_tree(t).context_git(|| "reading a tree");
        let ptree = parent_tree.map(find).transpose()?;
        let added = hunk_lines(repo, ptree.as_ref(), &find(tree)?, path, &['+'])?;
        if added.iter().any(|l| lines.contains(l)) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// One commit of the upstream side: its root tree, commit time and parents.
struct Node {
    tree: Oid,
    time: i64,
    parents: Vec<Oid>,
}

/// The commits the listed ones stand on that the branch did not have when the run started: every stop's
/// candidates are among them, since the run's picks are new commits on top of the starting point. Walked once a
/// run and kept in `.git/bport/`: a walk that hides the branch reads the shared history down to the merge base,
/// which on a real project costs far more than the few hundred candidates it yields, at every stop.
struct Graph {
    nodes: HashMap<Oid, Node>,
}

impl Graph {
    /// `from` and its ancestors inside the graph, newest commit first (as a revision walk by date yields them),
    /// at most `limit` of them.
    fn ancestors(&self, from: Oid, limit: usize) -> Vec<(Oid, &Node)> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut queue = std::collections::BinaryHeap::new();
        if let Some(node) = self.nodes.get(&from) {
            seen.insert(from);
            queue.push((node.time, from));
        }
        while let Some((_, oid)) = queue.pop() {
            if out.len() == limit {
                break;
            }
            let node = &self.nodes[&oid];
            for p in &node.parents {
                if let Some(pn) = self.nodes.get(p) {
                    if seen.insert(*p) {
                        queue.push((pn.time, *p));
                    }
                }
            }
            out.push((oid, node));
        }
        out
    }

    /// The root tree of `oid`, from the graph or (a commit the branch has) from the repository.
    fn tree_of(&self, repo: &Repository, oid: Oid) -> Result<Oid, Error> {
        match self.nodes.get(&oid) {
            Some(n) => Ok(n.tree),
            None => Ok(repo
                .find_commit(oid)
                .context_git(|| format!("reading {oid}"))?
                .tree_id()),
        }
    }
}

const GRAPH_FILE: &str = "upstream-graph";

/// The run's upstream graph: read from `.git/bport/` when an earlier stop kept it, else walked and kept.
fn upstream_graph(repo: &Repository, st: &State) -> Result<Graph, Error> {
    let path = state::dir(repo.path()).join(GRAPH_FILE);
    if let Some(graph) = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| parse_graph(&text))
    {
        return Ok(graph);
    }
    let mut walk = repo.revwalk().context_git(|| "walking")?;
    walk.set_sorting(git2::Sort::TIME)
        .context_git(|| "walking")?;
    let mut pushed = false;
    for step in &st.plan.steps {
        let commit = repo
            .find_commit(step.commit)
            .context_git(|| format!("reading {}", step.commit))?;
        for p in commit.parent_ids() {
            walk.push(p).context_git(|| "walking")?;
            pushed = true;
        }
    }
    walk.hide(st.orig_head).context_git(|| "walking")?;
    let mut nodes = HashMap::new();
    let mut text = String::new();
    if pushed {
        for oid in walk {
            let oid = oid.context_git(|| "walking")?;
            let c = repo.find_commit(oid).context_git(|| "reading a commit")?;
            let node = Node {
                tree: c.tree_id(),
                time: c.time().seconds(),
                parents: c.parent_ids().collect(),
            };
            text.push_str(&format!("{oid} {} {}", node.tree, node.time));
            for p in &node.parents {
                text.push_str(&format!(" {p}"));
            }
            text.push('\n');
            nodes.insert(oid, node);
        }
    }
    // Only a cache: a failed write costs the next stop a walk, nothing else.
    if let Err(e) = crate::git::write_cache(&path, text.as_bytes()) {
        log::debug!("keeping the upstream graph in {}: {e}", path.display());
    }
    Ok(Graph { nodes })
}

/// Reads a kept graph; `None` when any line does not read (then the graph is walked again).
fn parse_graph(text: &str) -> Option<Graph> {
    // Kept without an fsync: a file cut short by a crash must not read as a smaller graph.
    if !text.is_empty() && !text.ends_with('\n') {
        return None;
    }
    let id = |w: &str| (w.len() == 40).then(|| Oid::from_str(w).ok()).flatten();
    let mut nodes = HashMap::new();
    for line in text.lines() {
        let mut words = line.split(' ');
        let oid = id(words.next()?)?;
        let tree = id(words.next()?)?;
        let time = words.next()?.parse().ok()?;
        let parents = words.map(id).collect::<Option<Vec<_>>>()?;
        nodes.insert(
            oid,
            Node {
                tree,
                time,
                parents,
            },
        );
    }
    Some(Graph { nodes })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn oid(n: u8) -> Oid {
        Oid::from_bytes(&[n; 20]).unwrap()
    }

    #[test]
    fn a_kept_memo_reads_back_and_a_cut_one_does_not() {
        let mut bytes = Vec::new();
        for (id, paths) in [(oid(1), &["a/b", "c"][..]), (oid(2), &[][..])] {
            bytes.extend_from_slice(id.to_string().as_bytes());
            bytes.push(0);
            for p in paths {
                bytes.extend_from_slice(p.as_bytes());
                bytes.push(0);
            }
            bytes.push(0);
        }
        let memo = parse_changed_paths(&bytes).unwrap();
        assert_eq!(memo[&oid(1)], vec!["a/b".to_string(), "c".to_string()]);
        assert!(memo[&oid(2)].is_empty());
        // A file cut short reads as nothing, or (cut between records) as the whole records before the cut.
        for cut in 1..bytes.len() {
            if let Some(part) = parse_changed_paths(&bytes[..cut]) {
                assert_eq!(cut, 48, "cut at {cut} read back");
                assert_eq!(part.len(), 1);
                assert_eq!(part[&oid(1)], memo[&oid(1)]);
            }
        }
        assert_eq!(parse_changed_paths(b"").map(|m| m.len()), Some(0));
    }

    #[test]
    fn a_kept_graph_cut_short_does_not_read() {
        let text = format!(
            "{} {} 5 {}\n{} {} 4\n",
            oid(1),
            oid(9),
            oid(2),
            oid(2),
            oid(8)
        );
        let graph = parse_graph(&text).unwrap();
        assert_eq!(graph.nodes[&oid(1)].parents, vec![oid(2)]);
        assert!(graph.nodes[&oid(2)].parents.is_empty());
        for cut in 1..text.len() {
            if let Some(part) = parse_graph(&text[..cut]) {
                // Only a cut between lines reads, as the whole lines before it.
                assert!(text[..cut].ends_with('\n'), "cut at {cut} read back");
                assert_eq!(part.nodes.len(), 1);
            }
        }
    }
}
