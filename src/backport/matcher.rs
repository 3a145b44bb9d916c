//! Already-applied detection: does the branch carry a listed commit under another id?
//!
//! Three rules, tried in this order, each naming itself in the skip:
//! a *trailer* on a branch commit names the listed commit; the *subject*s are equal after normalizing; the stable
//! *patch-id*s are equal. A subject that occurs twice in the list or on the branch cannot decide alone: then only a
//! trailer or patch-id can, and if neither does the patch is picked with a warning.
//!
//! This module only reads; `verify` uses [`presence`] for its branch check.

use super::patchlist::{PatchList, Resolved};
use super::Error;
use crate::git::{self, Context, PatchId};
use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Which rules may decide that a patch is already applied (`--match`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rules {
    /// Trailer naming the listed commit.
    pub trailer: bool,
    /// Normalized subject.
    pub subject: bool,
    /// Stable patch-id.
    pub patch_id: bool,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            trailer: true,
            subject: true,
            patch_id: true,
        }
    }
}

/// The rule that found a listed commit on the branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// A trailer on the branch commit names the listed commit.
    Trailer,
    /// Equal normalized subjects.
    Subject,
    /// Equal stable patch-ids.
    PatchId,
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Rule::Trailer => "upstream trailer",
            Rule::Subject => "subject",
            Rule::PatchId => "patch-id",
        })
    }
}

/// Why a listed commit counts as applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedBecause {
    /// The deciding rule.
    pub rule: Rule,
    /// The branch commit that carries it.
    #[serde(with = "super::oid_hex")]
    pub by: Oid,
    /// What confirmed the match beyond its rule: for a *subject*, the files; for a *trailer* naming another
    /// commit, that commit's patch-id (absent otherwise, and in states written by versions without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<Confirmation>,
}

/// What confirmed that a branch commit is the listed commit's port when its rule alone could not
/// (generic subjects such as "fix memory leak" repeat all over kernel history, so the subject alone is not enough,
/// and a trailer may name an equal copy of the listed commit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "kebab-case")]
pub enum Confirmation {
    /// Both commits change exactly the same paths, and the branch commit carries `lines` percent (at least half)
    /// of the lines the listed commit adds and removes.
    SameFiles {
        /// Percent of the listed commit's changed lines that the branch commit changes too.
        lines: u8,
    },
    /// Some paths are shared (a backport often drops files the old tree lacks or touches a moved file), and at
    /// least half of the listed commit's changed lines.
    SharedFiles {
        /// Paths both change.
        shared: u32,
        /// Paths the listed commit changes.
        of: u32,
        /// Percent of the listed commit's changed lines that the branch commit changes too.
        lines: u8,
    },
    /// For a *trailer* match: the trailer names `origin`, another commit with the listed commit's subject and the
    /// same stable patch-id (the same change under another id, e.g. the version of a merge request before it was
    /// rebased; seen on flatpak-1.14.x).
    SamePatchAs {
        /// The commit the trailer names.
        #[serde(with = "super::oid_hex")]
        origin: Oid,
    },
    /// For a *trailer* match: the trailer names `merge`, a merge commit that brought the listed commit in (the
    /// listed commit is reachable from one of its other parents and not from its first): the branch commit is a
    /// squashed backport of the whole merge, a pull request ported as one commit.
    InMerge {
        /// The merge commit the trailer names.
        #[serde(with = "super::oid_hex")]
        merge: Oid,
    },
}

impl std::fmt::Display for Confirmation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Confirmation::SameFiles { lines } => write!(f, "same files, {lines}% of lines"),
            Confirmation::SharedFiles { shared, of, lines } => {
                write!(f, "{shared} of {of} files, {lines}% of lines")
            }
            Confirmation::SamePatchAs { origin } => {
                write!(f, "names {}, same patch-id", &origin.to_string()[..7])
            }
            Confirmation::InMerge { merge } => {
                write!(
                    f,
                    "names merge {}, which brought it in",
                    &merge.to_string()[..7]
                )
            }
        }
    }
}

/// The verdict for one listed commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Already on the branch.
    Applied(AppliedBecause),
    /// Not found; `ambiguous_subject` says a subject match existed but was not unique, so nothing decided.
    Missing {
        /// The subject occurs more than once in the list or on the branch and no other rule matched.
        ambiguous_subject: bool,
    },
}

pub use crate::git::normalize_subject;

struct BranchCommit {
    oid: Oid,
    origins: Vec<git::Origin>,
}

/// The commits on a branch since it diverged from a patch list, indexed for the three rules.
pub struct Branch<'r> {
    repo: &'r Repository,
    commits: Vec<BranchCommit>,
    by_subject: HashMap<String, Vec<usize>>,
    by_origin: HashMap<String, usize>,
    short_origins: Vec<(String, usize)>,
    by_paths: Option<HashMap<Vec<String>, Vec<usize>>>,
    /// Each branch commit's changes (path, old and new blob), filled with `by_paths`.
    changes: HashMap<usize, Vec<git::Change>>,
    patch_ids: HashMap<usize, Option<PatchId>>,
    /// Every patch-id asked for, kept across runs.
    memo: super::patch_ids::PatchIds,
    /// The commits that merges named by trailers brought in, each with the branch commit naming the merge and the
    /// merge; filled on first use.
    merged_in: Option<HashMap<Oid, (usize, Oid)>>,
}

impl<'r> Branch<'r> {
    /// Collects the commits reachable from `tip` but not from the parents of any listed commit (nor from
    /// `hide`, when the list's commits are not in the repository).
    pub fn collect(
        repo: &'r Repository,
        tip: Oid,
        listed: &[Oid],
        hide: &[Oid],
    ) -> Result<Self, Error> {
        let mut walk = repo.revwalk().context_git(|| "starting a revision walk")?;
        walk.push(tip)
            .context_git(|| format!("walking from {tip}"))?;
        for &oid in listed {
            let commit = repo
                .find_commit(oid)
                .context_git(|| format!("reading commit {oid}"))?;
            for parent in commit.parent_ids() {
                walk.hide(parent)
                    .context_git(|| format!("hiding {parent}"))?;
            }
        }
        for &oid in hide {
            walk.hide(oid).context_git(|| format!("hiding {oid}"))?;
        }
        let mut oids = Vec::new();
        for oid in walk {
            oids.push(oid.context_git(|| "walking the branch")?);
        }
        Self::from_commits(repo, &oids)
    }

    /// The branch made of `oids` (newest first, as a walk yields them), for callers that already know which commits
    /// the branch has since it diverged: a walk that hides a list's parents reads the whole shared history down to
    /// the merge base, which costs far more than reading the few commits it yields.
    pub fn from_commits(repo: &'r Repository, oids: &[Oid]) -> Result<Self, Error> {
        let mut branch = Branch {
            repo,
            commits: Vec::new(),
            by_subject: HashMap::new(),
            by_origin: HashMap::new(),
            short_origins: Vec::new(),
            by_paths: None,
            changes: HashMap::new(),
            patch_ids: HashMap::new(),
            memo: super::patch_ids::PatchIds::load(repo),
            merged_in: None,
        };
        for &oid in oids {
            let commit = repo
                .find_commit(oid)
                .context_git(|| format!("reading commit {oid}"))?;
            let message = String::from_utf8_lossy(commit.message_bytes());
            let index = branch.commits.len();
            let origins = git::origins(&message);
            for origin in &origins {
                if origin.hex.len() == 40 {
                    branch.by_origin.entry(origin.hex.clone()).or_insert(index);
                } else {
                    branch.short_origins.push((origin.hex.clone(), index));
                }
            }
            branch
                .by_subject
                .entry(normalize_subject(&git::commit_subject(&message)))
                .or_default()
                .push(index);
            branch.commits.push(BranchCommit { oid, origins });
        }
        Ok(branch)
    }

    /// The branch's commits since it diverged, newest first.
    pub fn oids(&self) -> impl Iterator<Item = Oid> + '_ {
        self.commits.iter().map(|c| c.oid)
    }

    /// How many commits the branch has since it diverged.
    pub fn len(&self) -> usize {
        self.commits.len()
    }

    /// Whether the branch has no commits since it diverged.
    pub fn is_empty(&self) -> bool {
        self.commits.is_empty()
    }

    fn by_trailer(&self, full_hex: &str) -> Option<usize> {
        if let Some(&i) = self.by_origin.get(full_hex) {
            return Some(i);
        }
        self.short_origins
            .iter()
            .find(|(hex, i)| {
                full_hex.starts_with(hex.as_str())
                    && self.commits[*i].origins.iter().any(|o| o.names(full_hex))
            })
            .map(|&(_, i)| i)
    }

    /// The branch commit whose trailer names a merge that brought `listed` in, and that merge. A merge's commits
    /// are those reachable from its parents 2..n and not from parent 1, as `git log M^1..M` lists them less the
    /// merge itself. Trailers are resolved and merges walked once, on the first call.
    fn by_merge_trailer(&mut self, listed: Oid) -> Result<Option<(usize, Oid)>, Error> {
        if self.merged_in.is_none() {
            let odb = self
                .repo
                .odb()
                .context_git(|| "opening the object database")?;
            let mut map: HashMap<Oid, (usize, Oid)> = HashMap::new();
            let mut walked = std::collections::HashSet::new();
            for (i, c) in self.commits.iter().enumerate() {
                for o in &c.origins {
                    let Ok(prefix) = Oid::from_str(&format!("{:0<40}", o.hex)) else {
                        continue;
                    };
                    // A trailer naming a commit this repository lacks, or an ambiguous abbreviation, decides
                    // nothing here.
                    let Ok(oid) = odb.exists_prefix(prefix, o.hex.len()) else {
                        continue;
                    };
                    let Ok(merge) = self.repo.find_commit(oid) else {
                        continue;
                    };
                    if merge.parent_count() < 2 || !walked.insert(oid) {
                        continue;
                    }
                    let mut walk = self
                        .repo
                        .revwalk()
                        .context_git(|| "starting a revision walk")?;
                    for p in merge.parent_ids().skip(1) {
                        walk.push(p).context_git(|| format!("walking from {p}"))?;
                    }
                    walk.hide(
                        merge
                            .parent_id(0)
                            .context_git(|| format!("reading {oid}"))?,
                    )
                    .context_git(|| format!("hiding the first parent of {oid}"))?;
                    for member in walk {
                        let member = member.context_git(|| format!("walking the merge {oid}"))?;
                        map.entry(member).or_insert((i, oid));
                    }
                }
            }
            self.merged_in = Some(map);
        }
        Ok(self
            .merged_in
            .as_ref()
            .and_then(|m| m.get(&listed).copied()))
    }

    /// Branch commits whose normalized subject is `norm`, less those whose trailers name another commit than
    /// `listed_hex` (40 hex digits, or the listed abbreviation when the repository lacks the commit): such a commit
    /// is the port of that other commit, whatever its subject (systemd's "repart: fix memory leak").
    fn subject_candidates(&self, norm: &str, listed_hex: &str) -> Vec<usize> {
        let names_listed = |o: &git::Origin| {
            o.names(listed_hex) || (listed_hex.len() < 40 && o.hex.starts_with(listed_hex))
        };
        self.by_subject
            .get(norm)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .copied()
            .filter(|&i| {
                let origins = &self.commits[i].origins;
                origins.is_empty() || origins.iter().any(names_listed)
            })
            .collect()
    }

    /// A branch commit with the listed commit's subject whose trailer names another commit of this repository that
    /// has the listed commit's stable patch-id: the same change under another id. Only subject-equal branch
    /// commits are looked at, so this costs a few patch-ids, and only when such a commit exists.
    fn by_equivalent_origin(
        &mut self,
        norm: &str,
        listed: &git2::Commit<'_>,
    ) -> Result<Option<(usize, Oid)>, Error> {
        if listed.parent_count() > 1 {
            return Ok(None);
        }
        let candidates: Vec<usize> = self
            .by_subject
            .get(norm)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .copied()
            .filter(|&i| !self.commits[i].origins.is_empty())
            .collect();
        if candidates.is_empty() {
            return Ok(None);
        }
        let odb = self
            .repo
            .odb()
            .context_git(|| "opening the object database")?;
        let mut listed_id = None;
        for i in candidates {
            for o in self.commits[i].origins.clone() {
                let Ok(prefix) = Oid::from_str(&format!("{:0<40}", o.hex)) else {
                    continue;
                };
                let Ok(oid) = odb.exists_prefix(prefix, o.hex.len()) else {
                    continue;
                };
                let Ok(origin) = self.repo.find_commit(oid) else {
                    continue;
                };
                if oid == listed.id()
                    || origin.parent_count() > 1
                    || normalize_subject(&git::commit_subject(&String::from_utf8_lossy(
                        origin.message_bytes(),
                    ))) != norm
                {
                    continue;
                }
                if listed_id.is_none() {
                    listed_id = Some(self.memo.of(self.repo, listed)?);
                }
                // The named commit is only evidence: if its objects cannot be read (a partial clone), it decides
                // nothing, and the plan goes on.
                let id = self.memo.of(self.repo, &origin).ok().flatten();
                if id.is_some() && Some(id) == listed_id {
                    return Ok(Some((i, oid)));
                }
            }
        }
        Ok(None)
    }

    /// Confirms a subject match by the paths both commits change and the lines they add and remove: `None` when
    /// they share no path or the branch commit carries less than half of the listed commit's changed lines (then
    /// the equal subject is a coincidence, and only patch-id or a trailer can decide).
    fn confirm_by_files(
        &mut self,
        listed: &git2::Commit<'_>,
        i: usize,
    ) -> Result<Option<Confirmation>, Error> {
        let oid = self.commits[i].oid;
        let on_branch = self
            .repo
            .find_commit(oid)
            .context_git(|| format!("reading commit {oid}"))?;
        let theirs_changes = git::commit_changes(self.repo, listed)?;
        let ours_changes = git::commit_changes(self.repo, &on_branch)?;
        let theirs: Vec<String> = theirs_changes.iter().map(|c| c.path.clone()).collect();
        let ours: Vec<String> = ours_changes.iter().map(|c| c.path.clone()).collect();
        let ours_set: std::collections::HashSet<&String> = ours.iter().collect();
        let shared = theirs.iter().filter(|p| ours_set.contains(p)).count();
        if shared == 0 {
            return Ok(None);
        }
        // The files alone are not enough either: a stable branch's own "Update localization files for release"
        // shares 19 of 22 files with upstream's but only 16 of its 64 changed lines (flatpak-1.12.x, b6f0045;
        // counted without repeats, its one POT-Creation-Date line in 22 files made it look like 66%).
        if theirs_changes == ours_changes {
            // The same blobs on the same paths: the same lines, all carried, without diffing (a copy made by a
            // clean cherry-pick; on curl's 991 x 992 list diffing these is most of the all-rules dry run).
            return Ok(git::has_changed_lines(self.repo, &theirs_changes)?
                .then_some(Confirmation::SameFiles { lines: 100 }));
        }
        let listed_lines = git::changed_lines(self.repo, listed)?;
        if listed_lines.is_empty() {
            return Ok(None);
        }
        let branch_lines = git::changed_lines(self.repo, &on_branch)?;
        // Multiset intersection of the two sorted lists: each branch line carries one listed line at most.
        let (mut carried, mut j) = (0, 0);
        for l in &listed_lines {
            while j < branch_lines.len() && branch_lines[j] < *l {
                j += 1;
            }
            if j < branch_lines.len() && branch_lines[j] == *l {
                carried += 1;
                j += 1;
            }
        }
        if carried * 2 < listed_lines.len() {
            return Ok(None);
        }
        let lines = u8::try_from(carried * 100 / listed_lines.len()).unwrap_or(100);
        Ok(Some(if theirs == ours {
            Confirmation::SameFiles { lines }
        } else {
            Confirmation::SharedFiles {
                shared: u32::try_from(shared).unwrap_or(u32::MAX),
                of: u32::try_from(theirs.len()).unwrap_or(u32::MAX),
                lines,
            }
        }))
    }

    /// A branch commit with the same stable patch-id as `commit`, if any: one with the very same blobs on the same
    /// paths first, else the first in walk order. Only branch commits that change the same paths can match, so
    /// patch-ids are computed for those alone.
    fn by_patch_id(&mut self, commit: &git2::Commit<'_>) -> Result<Option<usize>, Error> {
        if self.by_paths.is_none() {
            let mut map: HashMap<Vec<String>, Vec<usize>> = HashMap::new();
            for (i, c) in self.commits.iter().enumerate() {
                let bc = self
                    .repo
                    .find_commit(c.oid)
                    .context_git(|| format!("reading commit {}", c.oid))?;
                // A merge's diff against its first parent is not a port of anything.
                if bc.parent_count() > 1 {
                    continue;
                }
                let changes = git::commit_changes(self.repo, &bc)?;
                map.entry(changes.iter().map(|c| c.path.clone()).collect())
                    .or_default()
                    .push(i);
                self.changes.insert(i, changes);
            }
            self.by_paths = Some(map);
        }
        if self.by_paths.as_ref().is_some_and(HashMap::is_empty) {
            // Nothing on the branch to compare with: no tree diff, no patch-id.
            return Ok(None);
        }
        let changes = git::commit_changes(self.repo, commit)?;
        let paths: Vec<String> = changes.iter().map(|c| c.path.clone()).collect();
        let candidates = match self.by_paths.as_ref().and_then(|m| m.get(&paths)) {
            Some(c) => c.clone(),
            None => return Ok(None),
        };
        // The same blobs before and after on the same paths are the same diff, so the same patch-id, without
        // reading or diffing a blob: a clean cherry-pick onto an unchanged file keeps both. A non-empty diff always
        // has one (its `diff --git` lines count). Such a copy is preferred to an earlier candidate that would need
        // its patch-id computed: on curl's 991 x 991 list, full patch-ids are the whole cost of `--match
        // patch-id`, most of them of the many "RELEASE-NOTES: synced" commits.
        if !changes.is_empty() {
            if let Some(&i) = candidates
                .iter()
                .find(|&i| self.changes.get(i) == Some(&changes))
            {
                return Ok(Some(i));
            }
        }
        let Some(id) = self.memo.of(self.repo, commit)? else {
            return Ok(None);
        };
        for i in candidates {
            if !self.patch_ids.contains_key(&i) {
                let oid = self.commits[i].oid;
                let bc = self
                    .repo
                    .find_commit(oid)
                    .context_git(|| format!("reading commit {oid}"))?;
                self.patch_ids.insert(i, self.memo.of(self.repo, &bc)?);
            }
            if self.patch_ids[&i] == Some(id) {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }
}

/// Decides, for every resolved entry, whether the branch already carries it.
pub fn judge(
    branch: &mut Branch<'_>,
    list: &[Resolved],
    rules: Rules,
) -> Result<Vec<Verdict>, Error> {
    let mut listed_subjects: HashMap<String, usize> = HashMap::new();
    for r in list {
        *listed_subjects
            .entry(normalize_subject(&r.subject))
            .or_default() += 1;
    }
    let mut out = Vec::with_capacity(list.len());
    for r in list {
        let hex = r.oid.to_string();
        if rules.trailer {
            if let Some(i) = branch.by_trailer(&hex) {
                out.push(applied(Rule::Trailer, branch.commits[i].oid));
                continue;
            }
            if let Some((i, merge)) = branch.by_merge_trailer(r.oid)? {
                out.push(Verdict::Applied(AppliedBecause {
                    rule: Rule::Trailer,
                    by: branch.commits[i].oid,
                    confirmed: Some(Confirmation::InMerge { merge }),
                }));
                continue;
            }
        }
        let norm = normalize_subject(&r.subject);
        let on_branch = branch.subject_candidates(&norm, &hex);
        let mut ambiguous = false;
        let commit = branch
            .repo
            .find_commit(r.oid)
            .context_git(|| format!("reading commit {}", r.oid))?;
        if rules.trailer {
            if let Some((i, origin)) = branch.by_equivalent_origin(&norm, &commit)? {
                out.push(Verdict::Applied(AppliedBecause {
                    rule: Rule::Trailer,
                    by: branch.commits[i].oid,
                    confirmed: Some(Confirmation::SamePatchAs { origin }),
                }));
                continue;
            }
        }
        if rules.subject && !on_branch.is_empty() {
            if on_branch.len() == 1 && listed_subjects[&norm] == 1 {
                let i = on_branch[0];
                if let Some(confirmed) = branch.confirm_by_files(&commit, i)? {
                    out.push(Verdict::Applied(AppliedBecause {
                        rule: Rule::Subject,
                        by: branch.commits[i].oid,
                        confirmed: Some(confirmed),
                    }));
                    continue;
                }
            } else {
                ambiguous = true;
            }
        }
        if rules.patch_id && commit.parent_count() <= 1 {
            if let Some(i) = branch.by_patch_id(&commit)? {
                out.push(applied(Rule::PatchId, branch.commits[i].oid));
                continue;
            }
        }
        out.push(Verdict::Missing {
            ambiguous_subject: ambiguous,
        });
    }
    branch.memo.keep();
    Ok(out)
}

fn applied(rule: Rule, by: Oid) -> Verdict {
    Verdict::Applied(AppliedBecause {
        rule,
        by,
        confirmed: None,
    })
}

/// One entry of a [`presence`] report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Presence {
    /// The list entry.
    pub entry: super::patchlist::Entry,
    /// The listed commit, when the repository has it.
    pub oid: Option<Oid>,
    /// Whether and how the branch carries it.
    pub verdict: Verdict,
}

/// Read-only branch check for `verify`: for each entry of `list`, whether the commit `reference` points at (a
/// branch, tag or any revision) carries it, and by which rule.
///
/// Entries whose commit the repository lacks can still be found by trailer (by the listed abbreviation) and by
/// subject; the branch is then walked back to `since` when given, else to the root.
pub fn presence(
    repo: &Repository,
    reference: &str,
    list: &PatchList,
    rules: Rules,
    since: Option<&str>,
) -> Result<Vec<Presence>, Error> {
    let bad = |source: git2::Error| Error::BadRange {
        range: reference.to_owned(),
        source,
    };
    let tip = repo
        .revparse_single(reference)
        .map_err(bad)?
        .peel_to_commit()
        .map_err(bad)?
        .id();
    let hide = match since {
        Some(s) => vec![repo
            .revparse_single(s)
            .map_err(bad)?
            .peel_to_commit()
            .map_err(bad)?
            .id()],
        None => Vec::new(),
    };
    let odb = repo.odb().context_git(|| "opening the object database")?;
    let mut known = Vec::new();
    let mut oids = Vec::new();
    for entry in &list.entries {
        let oid = Oid::from_str(&format!("{:0<40}", entry.sha))
            .ok()
            .and_then(|p| odb.exists_prefix(p, entry.sha.len()).ok())
            .filter(|oid| repo.find_commit(*oid).is_ok());
        oids.push(oid);
        if let Some(oid) = oid {
            known.push(oid);
        }
    }
    let mut branch = Branch::collect(repo, tip, &known, &hide)?;
    let resolved: Vec<Resolved> = list
        .entries
        .iter()
        .zip(&oids)
        .map(|(entry, oid)| Resolved {
            entry: entry.clone(),
            oid: oid.unwrap_or(Oid::ZERO_SHA1),
            subject: entry.subject.clone(),
        })
        .collect();
    let mut out = Vec::with_capacity(resolved.len());
    for (r, oid) in resolved.iter().zip(&oids) {
        let verdict = match oid {
            Some(_) => judge(&mut branch, std::slice::from_ref(r), rules)?[0],
            None => {
                // Without the commit only the listed text is known: trailer by abbreviation, then subject.
                let by_trailer = rules
                    .trailer
                    .then(|| {
                        branch.commits.iter().find(|c| {
                            c.origins.iter().any(|o| {
                                o.hex.starts_with(&r.entry.sha) || r.entry.sha.starts_with(&o.hex)
                            })
                        })
                    })
                    .flatten();
                // Without the commit its files are unknown: the subject decides alone, but never for a branch
                // commit whose trailer names another commit.
                let candidates =
                    branch.subject_candidates(&normalize_subject(&r.subject), &r.entry.sha);
                match by_trailer {
                    Some(c) => applied(Rule::Trailer, c.oid),
                    None if rules.subject && candidates.len() == 1 => {
                        applied(Rule::Subject, branch.commits[candidates[0]].oid)
                    }
                    None => Verdict::Missing {
                        ambiguous_subject: rules.subject && candidates.len() > 1,
                    },
                }
            }
        };
        out.push(Presence {
            entry: r.entry.clone(),
            oid: *oid,
            verdict,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_normalize_stacked_prefixes_and_patch_tags() {
        assert_eq!(normalize_subject("perf script: fix"), "perf script: fix");
        assert_eq!(
            normalize_subject("BACKPORT: FROMGIT: perf script:   fix\t x"),
            "perf script: fix x"
        );
        assert_eq!(
            normalize_subject("[PATCH v2 3/7] UPSTREAM: perf: a"),
            "perf: a"
        );
        assert_eq!(normalize_subject("ANDROID: CHROMIUM: FROMLIST: x"), "x");
        assert_ne!(normalize_subject("perf: a"), normalize_subject("perf: b"));
    }
}
