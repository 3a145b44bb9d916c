//! Replaying a recorded resolution, as rerere.c's `try_merge` does: a three-way merge with base = the recorded
//! preimage, ours = the current conflict normalized the same way, theirs = the recorded postimage. When that
//! merge is clean, its result is the resolved file; otherwise the resolution does not apply.
//!
//! git runs this merge through `ll_merge` with default options, i.e. xdiff's Myers at the zealous level and the
//! user's `merge.conflictStyle`, so bport does exactly that.

use super::xdiff::merge::{merge, Level, MergeOptions, Style};
use super::xdiff::Algorithm;

/// git's binary detection (`buffer_is_binary`): a NUL in the first 8000 bytes.
pub fn is_binary(content: &[u8]) -> bool {
    content[..content.len().min(8000)].contains(&0)
}

/// The resolved text, or `None` when the recorded resolution does not apply cleanly to `thisimage`.
pub fn replay(
    preimage: &[u8],
    thisimage: &[u8],
    postimage: &[u8],
    style: Style,
) -> Option<Vec<u8>> {
    if is_binary(preimage) || is_binary(thisimage) || is_binary(postimage) {
        // git's binary merge driver only succeeds when nothing changed on one side; rerere never records
        // binary files, so such an entry is foreign or corrupt.
        return None;
    }
    let opts = MergeOptions {
        algorithm: Algorithm::Myers,
        style,
        level: Level::Zealous,
        ..MergeOptions::default()
    };
    let out = merge(preimage, thisimage, postimage, &opts);
    (out.conflicts == 0).then_some(out.content)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRE: &[u8] = b"head\nmid\n<<<<<<<\nB\n=======\nC\n>>>>>>>\ntail\n";
    const POST: &[u8] = b"head\nmid\nBC\ntail\n";

    #[test]
    fn the_same_conflict_resolves_to_the_postimage() {
        assert_eq!(replay(PRE, PRE, POST, Style::Merge).as_deref(), Some(POST));
    }

    #[test]
    fn unrelated_changes_around_the_conflict_are_kept() {
        // As in git, a change must not touch the conflict's lines (adjacent changes conflict).
        let this = b"HEAD CHANGED\nmid\n<<<<<<<\nB\n=======\nC\n>>>>>>>\ntail\n";
        assert_eq!(
            replay(PRE, this, POST, Style::Merge).as_deref(),
            Some(&b"HEAD CHANGED\nmid\nBC\ntail\n"[..])
        );
    }

    #[test]
    fn a_different_conflict_does_not_apply() {
        let this = b"head\nmid\n<<<<<<<\nB\n=======\nD\n>>>>>>>\ntail\n";
        assert_eq!(replay(PRE, this, POST, Style::Merge), None);
    }
}
