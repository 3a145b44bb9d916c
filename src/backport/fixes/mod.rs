//! Follow-up fixes: the upstream commits that repair or revert what a branch carries (or a patch list is about to
//! add) and that the branch lacks under any id. This is `bport fixes`, and `bport apply --dry-run`/`--with-fixes`.
//!
//! Owns: reading `Fixes:` and revert lines ([`refs`]), finding the commits they name, and the transitive closure
//! (a fix of a fix). Uses the matcher read-only, through [`matcher::judge`], to decide which upstream commits the
//! branch carries under another id; so "carried" means what it means for `bport apply`.
//!
//! Cost: one walk of the upstream range reading messages only; the matcher (tree diffs, and patch-ids where paths
//! agree) runs only for upstream commits that some `Fixes:`/revert line names, and for the candidates themselves.
//! When a named commit is outside the upstream range, one walk of the branch's history (ids only, stopping once
//! every such commit is found) decides whether the branch has it; a subject that names no commit of the repository
//! makes that walk read subjects to the root.

pub mod refs;

use super::matcher::{self, AppliedBecause, Rules, Verdict};
use super::patchlist::{Entry, PatchList, Resolved};
use super::Error;
use crate::git::{self, Context};
use git2::{Oid, Repository, Sort};
use refs::{CommitRef, RefKind};
use std::collections::{HashMap, HashSet};

/// Whose commits the follow-ups are for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seeds {
    /// What the branch carries (its history, and upstream commits it carries under another id) and the list.
    BranchAndList,
    /// Only the list (what `bport apply` will pick); the branch still excludes what it already has.
    List,
}

/// What to look for.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The branch's tip.
    pub head: Oid,
    /// The upstream tips; the range searched is what they reach and `head` does not.
    pub upstream: &'a [Oid],
    /// A patch list about to be applied (its commits count as carried, and are never reported).
    pub list: &'a [Resolved],
    /// The rules that decide "already on the branch", as `bport apply --match`.
    pub rules: Rules,
    /// Whose follow-ups.
    pub seeds: Seeds,
}

/// How the branch (or the list) has the commit a reason names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetIs {
    /// The commit itself is in the branch's history.
    OnBranch,
    /// An upstream commit the branch carries under another id (by the rule the matcher names).
    Ported(AppliedBecause),
    /// A commit of the patch list, at this line.
    Listed {
        /// 1-based line in the list.
        line: usize,
    },
    /// Another follow-up of this report.
    FollowUp,
}

/// Why a commit is a follow-up: it fixes or reverts a commit the branch or list has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    /// Fixes or reverts.
    pub kind: RefKind,
    /// The commit of this repository the line names; `None` when only its subject matched (the id names no commit
    /// here) and the match is not a single commit.
    pub target: Option<Oid>,
    /// The id as the line wrote it (absent when only a subject was written).
    pub named_as: Option<String>,
    /// The target's subject: the commit's own when it is in the repository, else as written.
    pub target_subject: String,
    /// The id named no commit of this repository (or a short id named one with another subject), and the subject
    /// decided.
    pub by_subject: bool,
    /// How the branch or list has the target.
    pub target_is: TargetIs,
}

/// One upstream commit to add.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FollowUp {
    /// The upstream commit.
    pub commit: Oid,
    /// Its subject.
    pub subject: String,
    /// Why, in message order.
    pub reasons: Vec<Reason>,
}

/// A fix of something carried that the branch already has under another id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlreadyCarried {
    /// The upstream commit.
    pub commit: Oid,
    /// Its subject.
    pub subject: String,
    /// The rule and branch commit.
    pub because: AppliedBecause,
}

/// The answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Commits to add, in upstream order (as `git log --reverse`).
    pub follow_ups: Vec<FollowUp>,
    /// Fixes and reverts of carried commits that the branch already has under another id, in upstream order.
    pub already_carried: Vec<AlreadyCarried>,
    /// Commits in the upstream range.
    pub scanned: usize,
    /// `Fixes:`/revert lines in the range that named a commit this repository lacks, without a subject that
    /// matched one.
    pub unresolved: usize,
}

/// One commit of the upstream range.
struct Upstream {
    oid: Oid,
    subject: String,
    refs: Vec<CommitRef>,
}

/// What a line names, once looked up.
#[derive(Clone, Debug)]
enum Target {
    /// A commit of the upstream range (its index).
    Up(usize),
    /// A commit outside the upstream range.
    Commit(Oid),
    /// No commit of the repository: the written subject, normalized.
    Subject(String),
    /// Nothing.
    Nothing,
}

/// The upstream commits that fix or revert what the branch carries (or the list adds), transitively, and that the
/// branch lacks; see the module header.
pub fn find(repo: &Repository, req: &Request<'_>) -> Result<Report, Error> {
    let ups = walk_upstream(repo, req.head, req.upstream)?;
    let mut scan = Scan::index(req, &ups);
    scan.look_up_targets(repo)?;
    scan.walk_branch_if_needed(repo)?;
    let mut judge = Judge {
        repo,
        req,
        ups: &ups,
        branch: None,
        verdicts: HashMap::new(),
    };
    let decided = scan.decide(&mut judge)?;
    scan.report(repo, &decided, &mut judge)
}

/// The upstream range and what its lines are matched against: the list, the range's own subjects and, when
/// needed, the branch's history.
struct Scan<'a> {
    req: &'a Request<'a>,
    ups: &'a [Upstream],
    /// Each upstream commit's index.
    pos: HashMap<Oid, usize>,
    /// The range's commits by normalized subject.
    by_subject: HashMap<String, Vec<usize>>,
    /// The list's commits and their lines.
    listed_line: HashMap<Oid, usize>,
    /// The list's normalized subjects and the first line with each.
    listed_subject: HashMap<String, usize>,
    /// What each `Fixes:`/revert line of each upstream commit names.
    targets: Vec<Vec<Target>>,
    /// Named commits outside the range that the branch's history holds.
    ancestors: HashSet<Oid>,
    /// Subjects naming nothing in range or list that the branch's history holds, with the commit.
    ancestor_subjects: HashMap<String, Oid>,
}

/// Which upstream commits are follow-ups, and which the branch already carries under another id.
struct Decided {
    follow: Vec<bool>,
    already: HashMap<usize, AppliedBecause>,
}

/// The matcher's verdict on upstream commits, asked lazily: the branch is collected at the first question and
/// each answer kept.
struct Judge<'a> {
    repo: &'a Repository,
    req: &'a Request<'a>,
    ups: &'a [Upstream],
    branch: Option<matcher::Branch<'a>>,
    verdicts: HashMap<usize, Verdict>,
}

impl Judge<'_> {
    fn verdict(&mut self, i: usize) -> Result<Verdict, Error> {
        if let Some(v) = self.verdicts.get(&i) {
            return Ok(*v);
        }
        let b = match &mut self.branch {
            Some(b) => b,
            empty => empty.insert(matcher::Branch::collect(
                self.repo,
                self.req.head,
                &[],
                self.req.upstream,
            )?),
        };
        let u = &self.ups[i];
        let resolved = Resolved {
            entry: Entry {
                line: 0,
                sha: u.oid.to_string(),
                subject: u.subject.clone(),
            },
            oid: u.oid,
            subject: u.subject.clone(),
        };
        let v = matcher::judge(b, std::slice::from_ref(&resolved), self.req.rules)?[0];
        self.verdicts.insert(i, v);
        Ok(v)
    }
}

impl<'a> Scan<'a> {
    /// Indexes the range by id and subject, and the list by id and subject.
    fn index(req: &'a Request<'a>, ups: &'a [Upstream]) -> Self {
        let mut pos: HashMap<Oid, usize> = HashMap::with_capacity(ups.len());
        let mut by_subject: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, u) in ups.iter().enumerate() {
            pos.insert(u.oid, i);
            by_subject
                .entry(matcher::normalize_subject(&u.subject))
                .or_default()
                .push(i);
        }
        let listed_line: HashMap<Oid, usize> =
            req.list.iter().map(|r| (r.oid, r.entry.line)).collect();
        let mut listed_subject: HashMap<String, usize> = HashMap::new();
        for r in req.list {
            listed_subject
                .entry(matcher::normalize_subject(&r.subject))
                .or_insert(r.entry.line);
        }
        Scan {
            req,
            ups,
            pos,
            by_subject,
            listed_line,
            listed_subject,
            targets: Vec::new(),
            ancestors: HashSet::new(),
            ancestor_subjects: HashMap::new(),
        }
    }

    /// Looks every line's commit up once.
    fn look_up_targets(&mut self, repo: &Repository) -> Result<(), Error> {
        let odb = repo.odb().context_git(|| "opening the object database")?;
        let mut targets: Vec<Vec<Target>> = Vec::with_capacity(self.ups.len());
        for (i, u) in self.ups.iter().enumerate() {
            let mut ts = Vec::with_capacity(u.refs.len());
            for r in &u.refs {
                let t = resolve(repo, &odb, r, &self.pos, &self.by_subject, self.ups);
                // A commit naming itself (a copy-pasted message) repairs nothing.
                ts.push(match t {
                    Target::Up(j) if j == i => Target::Nothing,
                    other => other,
                });
            }
            targets.push(ts);
        }
        self.targets = targets;
        Ok(())
    }

    /// Which named commits outside the range, and which subjects naming nothing in range or list, the branch's
    /// history holds: one walk, only when some line needs it.
    fn walk_branch_if_needed(&mut self, repo: &Repository) -> Result<(), Error> {
        if self.req.seeds != Seeds::BranchAndList {
            return Ok(());
        }
        let mut pending: HashSet<Oid> = HashSet::new();
        let mut subjects: HashSet<String> = HashSet::new();
        for t in self.targets.iter().flatten() {
            match t {
                Target::Commit(o) if !self.listed_line.contains_key(o) => {
                    pending.insert(*o);
                }
                Target::Subject(s) if !self.listed_subject.contains_key(s) => {
                    subjects.insert(s.clone());
                }
                _ => {}
            }
        }
        if !pending.is_empty() || !subjects.is_empty() {
            walk_branch(
                repo,
                self.req.head,
                pending,
                &subjects,
                &mut self.ancestors,
                &mut self.ancestor_subjects,
            )?;
        }
        Ok(())
    }

    /// Settles every upstream commit with a line naming something the branch or list has: a follow-up when the
    /// branch lacks it, already carried when the matcher finds it there (listed commits are neither).
    fn decide(&self, judge: &mut Judge<'_>) -> Result<Decided, Error> {
        let n = self.ups.len();
        let mut d = Decided {
            follow: vec![false; n],
            already: HashMap::new(),
        };
        let mut decided: Vec<bool> = vec![false; n];
        // Upstream order puts a fix after what it fixes, so one pass settles almost everything; the loop catches
        // lines that name a later commit by subject.
        loop {
            let mut changed = false;
            for (i, done) in decided.iter_mut().enumerate() {
                if *done {
                    continue;
                }
                let mut any = false;
                for t in &self.targets[i] {
                    if self.target_is(t, &d.follow, judge)?.is_some() {
                        any = true;
                        break;
                    }
                }
                if !any {
                    continue;
                }
                *done = true;
                changed = true;
                if self.listed_line.contains_key(&self.ups[i].oid) {
                    continue;
                }
                match judge.verdict(i)? {
                    Verdict::Applied(because) => {
                        d.already.insert(i, because);
                    }
                    Verdict::Missing { .. } => d.follow[i] = true,
                }
            }
            if !changed {
                break;
            }
        }
        Ok(d)
    }

    /// The report: unresolved lines counted, the already carried, and each follow-up with its reasons.
    fn report(
        &self,
        repo: &Repository,
        d: &Decided,
        judge: &mut Judge<'_>,
    ) -> Result<Report, Error> {
        let mut report = Report {
            scanned: self.ups.len(),
            ..Report::default()
        };
        for (i, u) in self.ups.iter().enumerate() {
            report.unresolved += self.unresolved_lines(i);
            if let Some(because) = d.already.get(&i) {
                report.already_carried.push(AlreadyCarried {
                    commit: u.oid,
                    subject: u.subject.clone(),
                    because: *because,
                });
            }
            if !d.follow[i] {
                continue;
            }
            let reasons = self.reasons(repo, i, &d.follow, judge)?;
            report.follow_ups.push(FollowUp {
                commit: u.oid,
                subject: u.subject.clone(),
                reasons,
            });
        }
        Ok(report)
    }

    /// How many lines of upstream commit `i` name a commit this repository lacks, without a subject that
    /// matched one.
    fn unresolved_lines(&self, i: usize) -> usize {
        let u = &self.ups[i];
        u.refs
            .iter()
            .zip(&self.targets[i])
            .filter(|(r, t)| match t {
                Target::Nothing => r
                    .hex
                    .as_deref()
                    .is_some_and(|h| !u.oid.to_string().starts_with(h)),
                Target::Subject(s) => {
                    !self.by_subject.contains_key(s)
                        && !self.listed_subject.contains_key(s)
                        && !self.ancestor_subjects.contains_key(s)
                }
                _ => false,
            })
            .count()
    }

    /// Why follow-up `i` is one: each of its lines naming something the branch or list has, in message order.
    fn reasons(
        &self,
        repo: &Repository,
        i: usize,
        follow: &[bool],
        judge: &mut Judge<'_>,
    ) -> Result<Vec<Reason>, Error> {
        let ups = self.ups;
        let mut reasons = Vec::new();
        for (r, t) in ups[i].refs.iter().zip(&self.targets[i]) {
            let Some(is) = self.target_is(t, follow, judge)? else {
                continue;
            };
            let (target, target_subject, by_subj) = match t {
                Target::Up(j) => (Some(ups[*j].oid), ups[*j].subject.clone(), false),
                Target::Commit(o) => (Some(*o), commit_subject(repo, *o), false),
                Target::Subject(s) => {
                    let named =
                        subject_commit(s, self.req, ups, &self.by_subject, &self.ancestor_subjects);
                    (named, r.subject.clone().unwrap_or_else(|| s.clone()), true)
                }
                Target::Nothing => continue,
            };
            reasons.push(Reason {
                kind: r.kind,
                target,
                named_as: r.hex.clone(),
                target_subject,
                by_subject: by_subj,
                target_is: is,
            });
        }
        Ok(reasons)
    }

    /// How the branch or list has what `t` names, if it does.
    fn target_is(
        &self,
        t: &Target,
        follow: &[bool],
        judge: &mut Judge<'_>,
    ) -> Result<Option<TargetIs>, Error> {
        let up = |j: usize, judge: &mut Judge<'_>| -> Result<Option<TargetIs>, Error> {
            if let Some(&line) = self.listed_line.get(&self.ups[j].oid) {
                return Ok(Some(TargetIs::Listed { line }));
            }
            if follow[j] {
                return Ok(Some(TargetIs::FollowUp));
            }
            if self.req.seeds == Seeds::BranchAndList {
                if let Verdict::Applied(because) = judge.verdict(j)? {
                    return Ok(Some(TargetIs::Ported(because)));
                }
            }
            Ok(None)
        };
        match t {
            Target::Nothing => Ok(None),
            Target::Up(j) => up(*j, judge),
            Target::Commit(o) => Ok(if let Some(&line) = self.listed_line.get(o) {
                Some(TargetIs::Listed { line })
            } else if self.ancestors.contains(o) {
                Some(TargetIs::OnBranch)
            } else {
                None
            }),
            Target::Subject(s) => {
                for &j in self.by_subject.get(s).map_or(&[][..], Vec::as_slice) {
                    if let Some(is) = up(j, judge)? {
                        return Ok(Some(is));
                    }
                }
                if let Some(&line) = self.listed_subject.get(s) {
                    return Ok(Some(TargetIs::Listed { line }));
                }
                Ok(self
                    .ancestor_subjects
                    .contains_key(s)
                    .then_some(TargetIs::OnBranch))
            }
        }
    }
}

/// The one commit a subject names, for the report (the first in the range, else the list's, else the branch's).
fn subject_commit(
    s: &str,
    req: &Request<'_>,
    ups: &[Upstream],
    by_subject: &HashMap<String, Vec<usize>>,
    ancestor_subjects: &HashMap<String, Oid>,
) -> Option<Oid> {
    if let Some(&j) = by_subject.get(s).and_then(|v| v.first()) {
        return Some(ups[j].oid);
    }
    if let Some(r) = req
        .list
        .iter()
        .find(|r| matcher::normalize_subject(&r.subject) == s)
    {
        return Some(r.oid);
    }
    ancestor_subjects.get(s).copied()
}

fn commit_subject(repo: &Repository, oid: Oid) -> String {
    repo.find_commit(oid)
        .map(|c| git::commit_subject(&String::from_utf8_lossy(c.message_bytes())))
        .unwrap_or_default()
}

/// Looks up the commit a line names: by id, and by the written subject when the id names no commit here (or a
/// short id names one with another subject: at 7 to 11 digits a large history has other commits with that prefix).
fn resolve(
    repo: &Repository,
    odb: &git2::Odb<'_>,
    r: &CommitRef,
    pos: &HashMap<Oid, usize>,
    by_subject: &HashMap<String, Vec<usize>>,
    ups: &[Upstream],
) -> Target {
    let written = r.subject.as_deref().map(matcher::normalize_subject);
    let by_id = r.hex.as_deref().and_then(|hex| {
        let prefix = Oid::from_str(&format!("{hex:0<40}")).ok()?;
        let oid = match odb.exists_prefix(prefix, hex.len()) {
            Ok(oid) => oid,
            Err(e) if e.code() == git2::ErrorCode::Ambiguous => {
                // Several objects share the prefix: the one commit of the range that has it and the subject.
                let mut hits = ups.iter().filter(|u| {
                    u.oid.to_string().starts_with(hex)
                        && written
                            .as_deref()
                            .is_none_or(|w| matcher::normalize_subject(&u.subject) == w)
                });
                let first = hits.next()?;
                if hits.next().is_some() {
                    return None;
                }
                first.oid
            }
            Err(_) => return None,
        };
        repo.find_commit(oid).ok().map(|c| (oid, c))
    });
    match by_id {
        Some((oid, commit)) => {
            let short = r.hex.as_deref().is_some_and(|h| h.len() < 12);
            if let (true, Some(w)) = (short, written.as_deref()) {
                let own = matcher::normalize_subject(&git::commit_subject(
                    &String::from_utf8_lossy(commit.message_bytes()),
                ));
                if own != w && by_subject.contains_key(w) {
                    return Target::Subject(w.to_owned());
                }
            }
            match pos.get(&oid) {
                Some(&j) => Target::Up(j),
                None => Target::Commit(oid),
            }
        }
        None => match written {
            Some(w) if !w.is_empty() => Target::Subject(w),
            _ => Target::Nothing,
        },
    }
}

/// The upstream range, oldest first (`git log --reverse` order), with each commit's subject and the commits its
/// message names. Merges are left out: they are not picked, and what they merge is in the range on its own.
fn walk_upstream(repo: &Repository, head: Oid, upstream: &[Oid]) -> Result<Vec<Upstream>, Error> {
    let mut walk = repo.revwalk().context_git(|| "starting a revision walk")?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME | Sort::REVERSE)
        .context_git(|| "sorting the walk")?;
    for &tip in upstream {
        walk.push(tip)
            .context_git(|| format!("walking from {tip}"))?;
    }
    walk.hide(head).context_git(|| format!("hiding {head}"))?;
    let mut out = Vec::new();
    for oid in walk {
        let oid = oid.context_git(|| "walking the upstream range")?;
        let commit = repo
            .find_commit(oid)
            .context_git(|| format!("reading commit {oid}"))?;
        if commit.parent_count() > 1 {
            continue;
        }
        let message = String::from_utf8_lossy(commit.message_bytes());
        out.push(Upstream {
            oid,
            subject: git::commit_subject(&message),
            refs: refs::commit_refs(&message),
        });
    }
    Ok(out)
}

/// Walks the branch's history from `head`: which of `pending` it holds, and which of `subjects` its commits have.
/// Stops once every pending commit is found, unless subjects are wanted (they may be anywhere down to the root).
fn walk_branch(
    repo: &Repository,
    head: Oid,
    mut pending: HashSet<Oid>,
    subjects: &HashSet<String>,
    ancestors: &mut HashSet<Oid>,
    ancestor_subjects: &mut HashMap<String, Oid>,
) -> Result<(), Error> {
    let mut walk = repo.revwalk().context_git(|| "starting a revision walk")?;
    walk.push(head)
        .context_git(|| format!("walking from {head}"))?;
    for oid in walk {
        if pending.is_empty() && ancestor_subjects.len() == subjects.len() {
            break;
        }
        let oid = oid.context_git(|| "walking the branch")?;
        if pending.remove(&oid) {
            ancestors.insert(oid);
        }
        if !subjects.is_empty() && ancestor_subjects.len() < subjects.len() {
            let commit = repo
                .find_commit(oid)
                .context_git(|| format!("reading commit {oid}"))?;
            let s = matcher::normalize_subject(&git::commit_subject(&String::from_utf8_lossy(
                commit.message_bytes(),
            )));
            if subjects.contains(&s) {
                ancestor_subjects.entry(s).or_insert(oid);
            }
        }
    }
    Ok(())
}

/// The refs (local and remote-tracking branches) that contain `oid`, by name, with their tips: where a patch list
/// came from when it does not say.
///
/// One walk for all the branches (a clone has dozens, and a merge-base search per branch read the shared history
/// once for each): every branch's mark goes down from its tip, newest commit first, and stops a day below `oid`'s
/// commit date, since a commit dated earlier than that cannot descend from `oid` unless a clock ran a day behind.
pub fn branches_containing(repo: &Repository, oid: Oid) -> Result<Vec<(String, Oid)>, Error> {
    const SLOP: i64 = 24 * 60 * 60;
    let mut tips = Vec::new();
    let branches = repo.branches(None).context_git(|| "listing branches")?;
    for b in branches {
        let (b, _) = b.context_git(|| "listing branches")?;
        let r = b.get();
        if r.kind() != Some(git2::ReferenceType::Direct) {
            continue;
        }
        if let (Some(tip), Ok(name)) = (r.target(), r.shorthand()) {
            tips.push((name.to_owned(), tip));
        }
    }
    let cutoff = repo
        .find_commit(oid)
        .context_git(|| format!("reading {oid}"))?
        .time()
        .seconds()
        .saturating_sub(SLOP);
    let mut out = Vec::new();
    for batch in tips.chunks(64) {
        let reached = marks_reaching(repo, oid, batch.iter().map(|(_, t)| *t), cutoff)?;
        out.extend(
            batch
                .iter()
                .enumerate()
                .filter(|(i, _)| reached & (1 << i) != 0)
                .map(|(_, b)| b.clone()),
        );
    }
    out.sort();
    Ok(out)
}

/// Which of (at most 64) `tips` reach `target`, as bits in the tips' order, walking no commit dated before `cutoff`.
fn marks_reaching(
    repo: &Repository,
    target: Oid,
    tips: impl Iterator<Item = Oid>,
    cutoff: i64,
) -> Result<u64, Error> {
    let odb = repo.odb().context_git(|| "opening the object database")?;
    let mut marks: HashMap<Oid, u64> = HashMap::new();
    let mut headers: HashMap<Oid, Option<git::CommitHeader>> = HashMap::new();
    let mut queued: HashSet<Oid> = HashSet::new();
    let mut queue = std::collections::BinaryHeap::new();
    // Each commit's header read once; `None` for a commit the repository lacks (a shallow clone's boundary).
    fn read<'m>(
        headers: &'m mut HashMap<Oid, Option<git::CommitHeader>>,
        repo: &Repository,
        odb: &git2::Odb<'_>,
        oid: Oid,
    ) -> Result<Option<&'m git::CommitHeader>, Error> {
        Ok(match headers.entry(oid) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(git::read_commit_header(repo, odb, oid)?)
            }
        }
        .as_ref())
    }
    for (i, tip) in tips.enumerate() {
        *marks.entry(tip).or_default() |= 1 << i;
        if let Some(h) = read(&mut headers, repo, &odb, tip)? {
            if queued.insert(tip) {
                queue.push((h.time, tip));
            }
        }
    }
    while let Some((time, oid)) = queue.pop() {
        queued.remove(&oid);
        // Nothing below the target leads back to it; nothing below the cutoff is looked at.
        if oid == target || time < cutoff {
            continue;
        }
        let bits = marks[&oid];
        let Some(parents) = read(&mut headers, repo, &odb, oid)?.map(|h| h.parents.clone()) else {
            continue;
        };
        for p in parents {
            let have = marks.entry(p).or_default();
            if *have | bits != *have {
                *have |= bits;
                // A commit popped already gets a mark late only when dates are out of order: it goes down again.
                if let Some(time) = read(&mut headers, repo, &odb, p)?.map(|h| h.time) {
                    if queued.insert(p) {
                        queue.push((time, p));
                    }
                }
            }
        }
    }
    Ok(marks.get(&target).copied().unwrap_or(0))
}

/// `list` with the follow-ups added at their upstream place: each goes after the last listed commit that precedes
/// it upstream (after the follow-ups already placed there), so a list in upstream order stays in upstream order.
/// Added entries have line 0 and the commit's full id.
pub fn with_follow_ups(
    repo: &Repository,
    head: Oid,
    upstream: &[Oid],
    list: &PatchList,
    resolved: &[Resolved],
    follow_ups: &[FollowUp],
) -> Result<PatchList, Error> {
    if follow_ups.is_empty() {
        return Ok(list.clone());
    }
    let order: HashMap<Oid, usize> = walk_upstream_ids(repo, head, upstream)?;
    // For each follow-up, the index of the list entry it goes after (None: before the first).
    let mut after: Vec<(Option<usize>, usize, &FollowUp)> = Vec::new();
    for f in follow_ups {
        let p = order.get(&f.commit).copied().unwrap_or(usize::MAX);
        let anchor = resolved
            .iter()
            .rposition(|r| order.get(&r.oid).is_some_and(|&q| q < p));
        after.push((anchor, p, f));
    }
    after.sort_by_key(|&(a, p, _)| (a.map_or(0, |a| a + 1), p));
    let added = |f: &FollowUp| Entry {
        line: 0,
        sha: f.commit.to_string(),
        subject: f.subject.clone(),
    };
    let mut entries = Vec::with_capacity(list.entries.len() + follow_ups.len());
    let mut k = 0;
    while k < after.len() && after[k].0.is_none() {
        entries.push(added(after[k].2));
        k += 1;
    }
    for (i, e) in list.entries.iter().enumerate() {
        entries.push(e.clone());
        while k < after.len() && after[k].0 == Some(i) {
            entries.push(added(after[k].2));
            k += 1;
        }
    }
    Ok(PatchList { entries })
}

/// Every commit of the upstream range (merges too) and its place in upstream order.
fn walk_upstream_ids(
    repo: &Repository,
    head: Oid,
    upstream: &[Oid],
) -> Result<HashMap<Oid, usize>, Error> {
    let mut walk = repo.revwalk().context_git(|| "starting a revision walk")?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME | Sort::REVERSE)
        .context_git(|| "sorting the walk")?;
    for &tip in upstream {
        walk.push(tip)
            .context_git(|| format!("walking from {tip}"))?;
    }
    walk.hide(head).context_git(|| format!("hiding {head}"))?;
    let mut out = HashMap::new();
    for (i, oid) in walk.enumerate() {
        out.insert(oid.context_git(|| "walking the upstream range")?, i);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branches_containing_a_commit_are_those_git_branch_contains_names() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let tree = crate::git::test_history::one_file_tree(&repo);
        let commit = |time: i64, parents: &[Oid]| {
            crate::git::test_history::commit_at(&repo, tree, time, parents)
        };
        let day = 86_400;
        let mut main = vec![commit(day, &[])];
        for i in 1..30 {
            main.push(commit(day + i * 3_600, &[main[main.len() - 1]]));
        }
        let target = main[20];
        let t = day + 20 * 3_600;
        let old = commit(day + 3_600 * 5 + 60, &[main[5]]);
        let forked_before = commit(t + 10 * day, &[main[19]]);
        let merged = commit(t + 2 * day, &[old, main[25]]);
        // Same date as the target, a child of it; and a child dated an hour before it (a clock behind).
        let same_date = commit(t, &[target]);
        let behind = commit(t - 3_600, &[target]);
        for (name, tip) in [
            ("main", main[29]),
            ("old", old),
            ("forked-before", forked_before),
            ("merged", merged),
            ("same-date", same_date),
            ("behind", behind),
            ("at-target", target),
        ] {
            repo.reference(&format!("refs/heads/{name}"), tip, true, "t")
                .unwrap();
        }
        repo.reference("refs/remotes/origin/merged", merged, true, "t")
            .unwrap();
        repo.reference("refs/remotes/origin/old", old, true, "t")
            .unwrap();
        let got: Vec<String> = branches_containing(&repo, target)
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let git = std::process::Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(["branch", "-a", "--format=%(refname:short)", "--contains"])
            .arg(target.to_string())
            .output()
            .expect("git, the oracle");
        assert!(git.status.success(), "{git:?}");
        let mut want: Vec<String> = String::from_utf8(git.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        want.sort();
        assert_eq!(got, want);
        assert!(got.contains(&"behind".to_string()) && !got.contains(&"old".to_string()));
    }
}
