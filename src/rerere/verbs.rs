//! git's user-facing rerere verbs: `status`, `remaining`, `diff`, `forget`, `gc` (builtin/rerere.c semantics).

use super::cache::{Image, Warning};
use super::merge_rr::MergeRr;
use super::render::alternative_ids;
use super::resolve::replay;
use super::worktree::Rerere;
use super::{ConflictId, Error};
use std::time::{Duration, SystemTime};

/// `status`: the paths rerere is tracking in the current session (those in `MERGE_RR`).
pub fn status(rr: &Rerere<'_>) -> Result<Vec<String>, Error> {
    Ok(MergeRr::read(&rr.merge_rr_path())?
        .entries
        .into_keys()
        .collect())
}

/// `remaining`: conflicted paths still waiting for the user: tracked paths still conflicted in the index, and
/// conflicts rerere does not handle. Paths rerere resolved (markers gone) are not listed.
pub fn remaining(rr: &Rerere<'_>) -> Result<Vec<String>, Error> {
    let tracked = MergeRr::read(&rr.merge_rr_path())?;
    let mut out = Vec::new();
    for c in rr.conflicts()? {
        let listed = if c.three_staged() {
            tracked.entries.contains_key(&c.path)
        } else {
            true
        };
        if listed {
            out.push(c.path);
        }
    }
    Ok(out)
}

/// One tracked path's diff between its recorded preimage and the work-tree file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathDiff {
    /// The path.
    pub path: String,
    /// A unified diff, `a/PATH` → `b/PATH`; empty when identical.
    pub diff: String,
}

/// `diff`: what the user changed since rerere recorded each tracked conflict.
pub fn diff(rr: &Rerere<'_>) -> Result<Vec<PathDiff>, Error> {
    let tracked = MergeRr::read(&rr.merge_rr_path())?;
    let mut out = Vec::new();
    for (path, (id, variant)) in tracked.entries {
        let pre = rr.local.read(&id, Image::Preimage, variant)?;
        let cur = rr.read_file(&path)?.unwrap_or_default();
        let pre = String::from_utf8_lossy(&pre);
        let cur = String::from_utf8_lossy(&cur);
        let text = similar::TextDiff::from_lines(pre.as_ref(), cur.as_ref())
            .unified_diff()
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string();
        out.push(PathDiff { path, diff: text });
    }
    Ok(out)
}

/// `forget PATH`: drops the recorded resolution that applies to the path's current conflict (the path must be
/// conflicted in the index), re-records its preimage, and tracks it so the next resolution is recorded.
pub fn forget(rr: &Rerere<'_>, path: &str) -> Result<ConflictId, Error> {
    let conflict = rr
        .conflicts()?
        .into_iter()
        .find(|c| c.path == path && c.three_staged())
        .ok_or_else(|| Error::NotConflicted {
            path: path.to_owned(),
        })?;
    let base = rr.blob(conflict.base)?;
    let ours = rr.blob(conflict.ours.map(|(o, _)| o))?;
    let theirs = rr.blob(conflict.theirs.map(|(o, _)| o))?;
    let mut warnings: Vec<Warning> = Vec::new();
    for rendering in alternative_ids(&base, &ours, &theirs, rr.marker_size(path)) {
        let Some(entry) = rr.local.entry(&rendering.id, &mut warnings)? else {
            continue;
        };
        for v in entry.resolutions() {
            let pre = rr.local.read(&rendering.id, Image::Preimage, v)?;
            let post = rr.local.read(&rendering.id, Image::Postimage, v)?;
            if replay(&pre, &rendering.preimage, &post, rr.style).is_none() {
                continue;
            }
            rr.local.remove(&rendering.id, Image::Postimage, v)?;
            rr.local
                .write(&rendering.id, Image::Preimage, v, &rendering.preimage)?;
            let mut tracked = MergeRr::read(&rr.merge_rr_path())?;
            tracked.entries.insert(path.to_owned(), (rendering.id, v));
            tracked.write(&rr.merge_rr_path())?;
            return Ok(rendering.id);
        }
    }
    Err(Error::NoResolution {
        path: path.to_owned(),
    })
}

/// Ages for `gc`, git's defaults: resolutions unused for 60 days, unresolved preimages older than 15 days.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcOptions {
    /// Keep resolutions used within this long (`gc.rerereResolved`); None = forever.
    pub resolved: Option<Duration>,
    /// Keep unresolved preimages younger than this (`gc.rerereUnresolved`); None = forever.
    pub unresolved: Option<Duration>,
}

const DAY: u64 = 86_400;

impl GcOptions {
    /// git's defaults overridden by `gc.rerereResolved` / `gc.rerereUnresolved` (a number of days or `never`).
    pub fn from_config(repo: &git2::Repository) -> GcOptions {
        let days = |key: &str, default: u64| -> Option<Duration> {
            let value = repo.config().ok()?.get_string(key).ok();
            match value.as_deref() {
                None => Some(Duration::from_secs(default * DAY)),
                Some("never") | Some("false") => None,
                Some(v) => Some(Duration::from_secs(
                    v.trim().parse::<u64>().unwrap_or(default) * DAY,
                )),
            }
        };
        GcOptions {
            resolved: days("gc.rerereResolved", 60),
            unresolved: days("gc.rerereUnresolved", 15),
        }
    }
}

/// What `gc` removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcOutcome {
    /// (id, variant) pairs removed.
    pub removed: Vec<(ConflictId, u32)>,
    /// Entries skipped.
    pub warnings: Vec<Warning>,
}

/// `gc`: prunes old variants from `.git/rr-cache` (git's `rerere_gc`), using file times as git does.
pub fn gc(rr: &Rerere<'_>, opts: &GcOptions, now: SystemTime) -> Result<GcOutcome, Error> {
    let (entries, warnings) = rr.local.scan()?;
    let mut out = GcOutcome {
        warnings,
        ..GcOutcome::default()
    };
    let mtime = |p: std::path::PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    for entry in entries {
        let mut left = 0;
        for (&v, files) in &entry.variants {
            let (then, keep) = if files.postimage {
                (
                    mtime(rr.local.path(&entry.id, Image::Postimage, v)),
                    opts.resolved,
                )
            } else {
                (
                    mtime(rr.local.path(&entry.id, Image::Preimage, v)),
                    opts.unresolved,
                )
            };
            let expired = match (then, keep) {
                (Some(t), Some(k)) => now.duration_since(t).is_ok_and(|age| age > k),
                _ => false,
            };
            if expired {
                rr.local.remove(&entry.id, Image::Postimage, v)?;
                rr.local.remove(&entry.id, Image::Preimage, v)?;
                out.removed.push((entry.id, v));
            } else {
                left += 1;
            }
        }
        if left == 0 {
            rr.local.remove_dir_if_empty(&entry.id);
        }
    }
    Ok(out)
}

/// `clear`: abandons the current session (git's `rerere_clear`, run by `--skip`/`--abort`): preimages recorded in
/// it that never got a resolution are removed, and `MERGE_RR` is deleted. Recorded resolutions stay.
pub fn clear(rr: &Rerere<'_>) -> Result<(), Error> {
    let tracked = MergeRr::read(&rr.merge_rr_path())?;
    let mut warnings = Vec::new();
    for (id, variant) in tracked.entries.values() {
        let complete = rr
            .local
            .entry(id, &mut warnings)?
            .and_then(|e| e.variants.get(variant).copied())
            .is_some_and(|f| f.complete());
        if !complete {
            rr.local.remove(id, Image::Preimage, *variant)?;
            rr.local.remove(id, Image::Postimage, *variant)?;
            rr.local.remove_dir_if_empty(id);
        }
    }
    MergeRr::default().write(&rr.decisions_path())?;
    MergeRr::default().write(&rr.merge_rr_path())
}
