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
type Node = git::CommitHeader;

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
    let mut tips = Vec::new();
    for step in &st.plan.steps {
        let commit = repo
            .find_commit(step.commit)
            .context_git(|| format!("reading {}", step.commit))?;
        tips.extend(commit.parent_ids());
    }
    let nodes = walk_upstream(repo, &tips, st.orig_head, (GRAPH_LIMIT, READ_LIMIT))?;
    let mut text = String::new();
    for (oid, node) in &nodes {
        text.push_str(&format!("{oid} {} {}", node.tree, node.time));
        for p in &node.parents {
            text.push_str(&format!(" {p}"));
        }
        text.push('\n');
    }
    // Only a cache: a failed write costs the next stop a walk, nothing else.
    if let Err(e) = crate::git::write_cache(&path, text.as_bytes()) {
        log::debug!("keeping the upstream graph in {}: {e}", path.display());
    }
    Ok(Graph { nodes })
}

/// At most this many commits make the graph (the newest), and at most this many are read to find them. A stop's
/// candidates are among its parent's [`WALK_LIMIT`] newest ancestors; without bounds, a port across years of
/// history (an upstream fix onto a vendor tree several releases old) would read and keep every commit between
/// the two, hundreds of thousands on a kernel tree, before the first stop could say anything.
const GRAPH_LIMIT: usize = 4 * WALK_LIMIT;
const READ_LIMIT: usize = 100_000;

/// `tips` and their ancestors that `hide` does not reach, newest first by commit date, within the bounds above.
///
/// Both sides are painted down together by commit date, as git's `rev-list A ^B` paints: a commit is taken when
/// it is popped still unreached from `hide`, since every commit newer than it has been popped and has passed
/// `hide`'s mark on to its parents. The walk ends when nothing queued is upstream-only. A date out of order (a
/// child older than its parent) can let a commit be taken before `hide`'s mark reaches it; a mark that arrives
/// later takes it back out and goes on down through it.
fn walk_upstream(
    repo: &Repository,
    tips: &[Oid],
    hide: Oid,
    (graph_limit, read_limit): (usize, usize),
) -> Result<HashMap<Oid, Node>, Error> {
    let odb = repo.odb().context_git(|| "opening the object database")?;
    let mut walk = Paint {
        repo,
        odb,
        seen: HashMap::new(),
        queue: std::collections::BinaryHeap::new(),
        pushed: 0,
        taken: HashSet::new(),
        oldest_taken: i64::MAX,
        pending: 0,
        reads: 0,
    };
    walk.mark(hide, Paint::BRANCH)?;
    for &tip in tips {
        walk.mark(tip, Paint::UPSTREAM)?;
    }
    // Past the last upstream-only commit, a branch commit as new as the oldest taken one may still reach it
    // (commits of one series often share a date to the second).
    while walk.taken.len() < graph_limit && walk.reads < read_limit {
        let Some(&(time, _, _, oid)) = walk.queue.peek() else {
            break;
        };
        if walk.pending == 0 && time < walk.oldest_taken {
            break;
        }
        walk.queue.pop();
        let Some((flags, node)) = walk.seen.get_mut(&oid) else {
            continue;
        };
        if *flags & Paint::QUEUED == 0 {
            // Queued again when the branch's mark reached it; handled then.
            continue;
        }
        *flags &= !Paint::QUEUED;
        let (flags, parents) = (*flags, node.parents.clone());
        if flags & Paint::BRANCH == 0 {
            walk.pending -= 1;
            walk.taken.insert(oid);
            walk.oldest_taken = walk.oldest_taken.min(time);
        }
        for p in parents {
            walk.mark(p, flags & (Paint::UPSTREAM | Paint::BRANCH))?;
        }
    }
    let Paint { seen, taken, .. } = walk;
    Ok(seen
        .into_iter()
        .filter(|(oid, _)| taken.contains(oid))
        .map(|(oid, (_, node))| (oid, node))
        .collect())
}

/// The state of [`walk_upstream`].
struct Paint<'r> {
    repo: &'r Repository,
    odb: git2::Odb<'r>,
    /// Every commit read, with its marks.
    seen: HashMap<Oid, (u8, Node)>,
    /// By commit date, newest first; at equal dates the branch's commits first (a series often shares one date to
    /// the second, and its commits must have the branch's mark before any is taken), then first in, first out.
    queue: std::collections::BinaryHeap<(i64, bool, std::cmp::Reverse<usize>, Oid)>,
    pushed: usize,
    /// The graph so far, and the oldest date it has held.
    taken: HashSet<Oid>,
    oldest_taken: i64,
    /// Queued commits not (yet) reached from the branch: the walk is over when there are none.
    pending: usize,
    reads: usize,
}

impl Paint<'_> {
    const UPSTREAM: u8 = 1;
    const BRANCH: u8 = 2;
    const QUEUED: u8 = 4;

    /// Adds `flags` to `oid`'s marks, queueing it when it is new.
    fn mark(&mut self, oid: Oid, flags: u8) -> Result<(), Error> {
        if let Some((have, node)) = self.seen.get_mut(&oid) {
            let new = *have | flags;
            let reached_now = *have & Self::BRANCH == 0 && new & Self::BRANCH != 0;
            if reached_now {
                if *have & Self::QUEUED != 0 {
                    if *have & Self::UPSTREAM != 0 {
                        self.pending -= 1;
                    }
                } else {
                    // Popped already (dates out of order): out of the graph, and the mark goes on down through it.
                    self.taken.remove(&oid);
                }
                // Queued (again) as the branch's, ahead of its date's upstream commits.
                self.pushed += 1;
                self.queue
                    .push((node.time, true, std::cmp::Reverse(self.pushed), oid));
                *have = new | Self::QUEUED;
                return Ok(());
            }
            *have = new;
            return Ok(());
        }
        let Some(node) = git::read_commit_header(self.repo, &self.odb, oid)? else {
            // Not in the repository (a shallow clone's boundary): nothing below it is known.
            return Ok(());
        };
        self.reads += 1;
        if flags & Self::BRANCH == 0 {
            self.pending += 1;
        }
        self.pushed += 1;
        self.queue.push((
            node.time,
            flags & Self::BRANCH != 0,
            std::cmp::Reverse(self.pushed),
            oid,
        ));
        self.seen.insert(oid, (flags | Self::QUEUED, node));
        Ok(())
    }
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

    /// A history with what makes painting hard: a topic forked long before the branch point, a series whose
    /// commits share one date to the second, an upstream child dated before its parent, and the branch's tip, a
    /// merge, dated `branch_time` (before its first parent's 3,000 when below it).
    fn painted_history(dir: &std::path::Path, branch_time: i64) -> (Repository, Vec<Oid>, Oid) {
        let repo = Repository::init(dir).unwrap();
        let (tips, branch) = painted_commits(&repo, branch_time);
        (repo, tips, branch)
    }

    fn painted_commits(repo: &Repository, branch_time: i64) -> (Vec<Oid>, Oid) {
        let tree = crate::git::test_history::one_file_tree(repo);
        let commit = |time: i64, parents: &[Oid]| {
            crate::git::test_history::commit_at(repo, tree, time, parents)
        };
        let mut main = vec![commit(1_000, &[])];
        for i in 1..40 {
            let t = 1_000 + i * 100;
            main.push(commit(t, &[main[main.len() - 1]]));
        }
        // An old topic, new commits: the walk must paint the branch down to its fork point to leave that out.
        let mut topic = main[2];
        for t in [5_000, 5_100, 5_200] {
            topic = commit(t, &[topic]);
        }
        // A series sharing one date, merged into the branch: all of it is the branch's.
        let mut series = vec![main[8]];
        for _ in 0..4 {
            series.push(commit(1_850, &[series[series.len() - 1]]));
        }
        let branch = commit(branch_time, &[main[20], series[4]]);
        // Upstream: on top of the series' second commit (queued long before the branch's mark reaches the
        // series), a child dated before its parent, then more.
        let on_series = commit(5_300, &[series[2]]);
        let skewed = commit(2_000, &[main[30]]);
        let tip = commit(5_500, &[skewed, main[39]]);
        (vec![tip, topic, on_series], branch)
    }

    fn git_rev_list(dir: &std::path::Path, args: &[String]) -> Vec<Oid> {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .arg("rev-list")
            .args(args)
            .output()
            .expect("git, the oracle");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| Oid::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn the_upstream_walk_takes_what_git_rev_list_takes() {
        for branch_time in [2_050, 3_050] {
            let dir = tempfile::tempdir().unwrap();
            let (repo, tips, branch) = painted_history(dir.path(), branch_time);
            let mut args: Vec<String> = tips.iter().map(Oid::to_string).collect();
            args.push(format!("^{branch}"));
            let want: HashSet<Oid> = git_rev_list(dir.path(), &args).into_iter().collect();
            let got = walk_upstream(&repo, &tips, branch, (usize::MAX, usize::MAX)).unwrap();
            assert_eq!(got.keys().copied().collect::<HashSet<_>>(), want);
            for (oid, node) in &got {
                let c = repo.find_commit(*oid).unwrap();
                assert_eq!(node.tree, c.tree_id());
                assert_eq!(node.time, c.time().seconds());
                assert_eq!(node.parents, c.parent_ids().collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn a_bounded_upstream_walk_takes_the_newest_commits() {
        // The branch's dates in order: a walk cut short has taken nothing the branch reaches.
        let dir = tempfile::tempdir().unwrap();
        let (repo, tips, branch) = painted_history(dir.path(), 3_050);
        let mut args: Vec<String> = tips.iter().map(Oid::to_string).collect();
        args.push(format!("^{branch}"));
        let want: HashSet<Oid> = git_rev_list(dir.path(), &args).into_iter().collect();

        // Bounded: the newest commits of that set, however far the rest goes.
        let few = walk_upstream(&repo, &tips, branch, (5, usize::MAX)).unwrap();
        assert_eq!(few.len(), 5);
        let oldest = few.values().map(|n| n.time).min().unwrap();
        for oid in &want {
            let time = repo.find_commit(*oid).unwrap().time().seconds();
            assert_eq!(few.contains_key(oid), time >= oldest, "{oid} at {time}");
        }
        // A read budget stops the walk with what it has taken, never more than the whole set.
        for reads in 0..60 {
            let part = walk_upstream(&repo, &tips, branch, (usize::MAX, reads)).unwrap();
            assert!(part.keys().all(|k| want.contains(k)), "{reads} reads");
        }
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
