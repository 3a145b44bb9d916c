//! Rendering a conflicted file the way git does, and the other renderings a conflict id might come from.
//!
//! git's cherry-pick and merge (merge-ort) render content conflicts with xdiff's histogram diff at the zealous
//! level, in the user's `merge.conflictStyle`, with labels `HEAD` and `<sha7> (<subject>)`. The rerere id
//! hashes that text, so bport renders the same way ([`render`]) and, when looking up a resolution, also tries
//! the ids of the renderings other tools produce ([`alternative_ids`]): Myers (libgit2, `git rerere forget`) and
//! the other conflict styles.

use super::conflict_id::{normalize, ConflictId, Normalized};
use super::xdiff::merge::{merge, Level, MergeOptions, MergeOutput, Style};
use super::xdiff::Algorithm;

/// Labels and style for a conflict rendering.
#[derive(Clone, Debug)]
pub struct RenderOptions {
    /// `merge.conflictStyle`.
    pub style: Style,
    /// `conflict-marker-size` of the path.
    pub marker_size: usize,
    /// Label of our side, e.g. `HEAD`.
    pub ours_label: String,
    /// Label of their side, e.g. `1a2b3c4 (perf: fix x)`.
    pub theirs_label: String,
    /// Label of the base (diff3 styles), e.g. `parent of 1a2b3c4 (perf: fix x)`.
    pub base_label: String,
    /// `-X ours|theirs`: resolve conflicting hunks for one side.
    pub favor: Option<super::xdiff::merge::Favor>,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            style: Style::Merge,
            marker_size: super::conflict_id::DEFAULT_MARKER_SIZE,
            ours_label: "HEAD".into(),
            theirs_label: "theirs".into(),
            base_label: "base".into(),
            favor: None,
        }
    }
}

/// A path's `conflict-marker-size` attribute (git's `ll_merge_marker_size`): 7 unless set to a positive number.
pub fn marker_size(repo: &git2::Repository, path: &str) -> usize {
    repo.get_attr(
        std::path::Path::new(path),
        "conflict-marker-size",
        git2::AttrCheckFlags::FILE_THEN_INDEX,
    )
    .ok()
    .flatten()
    .and_then(|v| v.parse::<i64>().ok())
    .filter(|&n| n > 0)
    .map_or(super::conflict_id::DEFAULT_MARKER_SIZE, |n| n as usize)
}

/// Merges one file's three versions and renders conflicts exactly as git's merge-ort does.
pub fn render(base: &[u8], ours: &[u8], theirs: &[u8], opts: &RenderOptions) -> MergeOutput {
    render_with(base, ours, theirs, opts, Algorithm::Histogram)
}

fn render_with(
    base: &[u8],
    ours: &[u8],
    theirs: &[u8],
    opts: &RenderOptions,
    algorithm: Algorithm,
) -> MergeOutput {
    merge(
        base,
        ours,
        theirs,
        &MergeOptions {
            algorithm,
            style: opts.style,
            level: Level::Zealous,
            marker_size: opts.marker_size,
            ours_label: opts.ours_label.clone(),
            theirs_label: opts.theirs_label.clone(),
            base_label: opts.base_label.clone(),
            favor: opts.favor,
        },
    )
}

/// Every distinct normalized rendering of the conflict (histogram first, then Myers; each style), for lookups
/// that missed under the id of the file in the worktree. Renderings without a conflict are left out.
pub fn alternative_ids(
    base: &[u8],
    ours: &[u8],
    theirs: &[u8],
    marker_size: usize,
) -> Vec<Normalized> {
    let mut out: Vec<Normalized> = Vec::new();
    for algorithm in [Algorithm::Histogram, Algorithm::Myers] {
        for style in [Style::Merge, Style::Diff3, Style::Zdiff3] {
            let opts = RenderOptions {
                style,
                marker_size,
                ours_label: "ours".into(),
                theirs_label: "theirs".into(),
                base_label: "base".into(),
                favor: None,
            };
            let rendered = render_with(base, ours, theirs, &opts, algorithm);
            if let Ok(Some(n)) = normalize(&rendered.content, marker_size) {
                if !out.iter().any(|o| o.id == n.id) {
                    out.push(n);
                }
            }
        }
    }
    out
}

/// The ids of [`alternative_ids`], for display and tests.
pub fn ids(normalized: &[Normalized]) -> Vec<ConflictId> {
    normalized.iter().map(|n| n.id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_labels_sides_like_cherry_pick() {
        let opts = RenderOptions {
            theirs_label: "abc1234 (fix)".into(),
            ..RenderOptions::default()
        };
        let out = render(b"a\nb\n", b"a\nB\n", b"a\nC\n", &opts);
        assert_eq!(
            String::from_utf8(out.content).unwrap(),
            "a\n<<<<<<< HEAD\nB\n=======\nC\n>>>>>>> abc1234 (fix)\n"
        );
    }

    #[test]
    fn alternatives_include_the_primary_rendering_first() {
        let alts = alternative_ids(b"a\nb\n", b"a\nB\n", b"a\nC\n", 7);
        assert_eq!(
            alts[0].id.to_string(),
            "b5af61297bb440010b5deb18d272d0976716bc1f"
        );
    }
}
