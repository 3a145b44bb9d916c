//! Stable patch-id, equal to `git show C | git patch-id --stable` (git's `builtin/patch-id.c`).
//!
//! git hashes the diff text with all whitespace removed, skipping `index` lines and hunk headers (line numbers
//! must not matter), and with `--stable` hashes each file separately and adds the per-file SHA-1s as 160-bit
//! little-endian integers, so that the order of files does not matter either. We render the diff with git2
//! (whose xdiff is git's) and run the same line machine over it, so that the two stay comparable line by line.

use super::{Context, Error};
use git2::{Commit, DiffFormat, DiffOptions, Repository};
use sha1::{Digest, Sha1};
use std::fmt;

/// A stable patch-id (20 bytes, shown as 40 hex digits like git's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PatchId(pub [u8; 20]);

impl fmt::Display for PatchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// The stable patch-id of `commit` against its first parent (or the empty tree for a root commit), or `None`
/// when the commit changes nothing (git prints no patch-id for an empty diff).
pub fn patch_id_of_commit(
    repo: &Repository,
    commit: &Commit<'_>,
) -> Result<Option<PatchId>, Error> {
    let new_tree = commit
        .tree()
        .context_git(|| format!("reading the tree of {}", commit.id()))?;
    let old_tree = match commit.parent(0) {
        Ok(parent) => Some(
            parent
                .tree()
                .context_git(|| format!("reading the tree of {}", parent.id()))?,
        ),
        Err(_) => None,
    };
    // Rename detection stays off, as for git's own patch-ids (patch-ids.c); context is git's default 3 lines.
    let mut opts = DiffOptions::new();
    opts.context_lines(3);
    let diff = repo
        .diff_tree_to_tree(old_tree.as_ref(), Some(&new_tree), Some(&mut opts))
        .context_git(|| format!("diffing {}", commit.id()))?;
    let mut text = Vec::new();
    diff.print(DiffFormat::Patch, |_, _, line| {
        match line.origin() {
            c @ ('+' | '-' | ' ') => {
                text.push(c as u8);
                text.extend_from_slice(line.content());
            }
            _ => text.extend_from_slice(line.content()),
        }
        true
    })
    .context_git(|| format!("rendering the diff of {}", commit.id()))?;
    Ok(patch_id_of_diff_text(&text))
}

/// git's `get_one_patchid` in stable mode over one commit's diff text (`diff --git` headers onward).
pub fn patch_id_of_diff_text(text: &[u8]) -> Option<PatchId> {
    let mut result = [0u8; 20];
    let mut ctx = Sha1::new();
    let mut patchlen = 0usize;
    let (mut before, mut after): (i64, i64) = (-1, -1);
    let mut is_binary = false;
    let (mut pre_oid, mut post_oid) = (Vec::new(), Vec::new());

    for line in text.split_inclusive(|&b| b == b'\n') {
        if line.starts_with(b"\\ ") && line.len() > 12 {
            continue;
        }
        if patchlen == 0 && !line.starts_with(b"diff ") {
            continue;
        }
        if before == -1 {
            if line.starts_with(b"GIT binary patch") || line.starts_with(b"Binary files") {
                is_binary = true;
                before = 0;
                ctx.update(&pre_oid);
                ctx.update(&post_oid);
                flush(&mut result, &mut ctx);
                continue;
            } else if let Some(rest) = line.strip_prefix(b"index ") {
                if let Some(dots) = find(rest, b"..") {
                    pre_oid = rest[..dots].to_vec();
                    let post = &rest[dots + 2..];
                    let end = post
                        .iter()
                        .position(|&b| b == b' ' || b == b'\n')
                        .unwrap_or(post.len());
                    post_oid = post[..end].to_vec();
                }
                continue;
            } else if line.starts_with(b"--- ") {
                before = 1;
                after = 1;
            } else if !line.first().is_some_and(u8::is_ascii_alphabetic) {
                break;
            }
        }
        if is_binary {
            if line.starts_with(b"diff ") {
                is_binary = false;
                before = -1;
            }
            continue;
        }
        if before == 0 && after == 0 {
            if line.starts_with(b"@@ -") {
                let (b, a) = scan_hunk_header(line);
                before = b;
                after = a;
                continue;
            }
            if !line.starts_with(b"diff ") {
                break;
            }
            flush(&mut result, &mut ctx);
            before = -1;
            after = -1;
        }
        match line.first() {
            Some(b'-') => before -= 1,
            Some(b'+') => after -= 1,
            Some(b' ') => {
                before -= 1;
                after -= 1;
            }
            _ => {}
        }
        let squeezed: Vec<u8> = line
            .iter()
            .copied()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        patchlen += squeezed.len();
        ctx.update(&squeezed);
    }
    if patchlen == 0 {
        return None;
    }
    flush(&mut result, &mut ctx);
    Some(PatchId(result))
}

/// Adds the running hash into `result` as a little-endian 160-bit number and restarts the hash (one file done).
fn flush(result: &mut [u8; 20], ctx: &mut Sha1) {
    let hash = std::mem::take(ctx).finalize();
    let mut carry: u16 = 0;
    for (r, h) in result.iter_mut().zip(hash.iter()) {
        carry += u16::from(*r) + u16::from(*h);
        *r = carry as u8;
        carry >>= 8;
    }
}

/// Line counts of a hunk header `@@ -a[,b] +c[,d] @@`; a missing count means 1.
fn scan_hunk_header(line: &[u8]) -> (i64, i64) {
    let text = String::from_utf8_lossy(line);
    let mut counts = text.split_whitespace().skip(1).take(2).map(|range| {
        let range = range.trim_start_matches(['-', '+']);
        match range.split_once(',') {
            Some((_, n)) => n.parse().unwrap_or(1),
            None => 1,
        }
    });
    (counts.next().unwrap_or(1), counts.next().unwrap_or(1))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &[u8] = b"diff --git a/f b/f\nindex 1111111..2222222 100644\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n";
    const TWO: &[u8] = b"diff --git a/g b/g\nindex 1111111..2222222 100644\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-x\n+y\n";

    #[test]
    fn file_order_does_not_matter_and_line_numbers_are_ignored() {
        let ab = patch_id_of_diff_text(&[ONE, TWO].concat()).unwrap();
        let ba = patch_id_of_diff_text(&[TWO, ONE].concat()).unwrap();
        assert_eq!(ab, ba);
        let moved = String::from_utf8_lossy(ONE).replace("@@ -1,2 +1,2 @@", "@@ -10,2 +12,2 @@");
        assert_eq!(
            patch_id_of_diff_text(moved.as_bytes()),
            patch_id_of_diff_text(ONE)
        );
        let ws = String::from_utf8_lossy(ONE).replace("+c", "+ c ");
        assert_eq!(
            patch_id_of_diff_text(ws.as_bytes()),
            patch_id_of_diff_text(ONE)
        );
        assert_ne!(patch_id_of_diff_text(ONE), patch_id_of_diff_text(TWO));
    }

    #[test]
    fn empty_diff_has_no_patch_id() {
        assert_eq!(patch_id_of_diff_text(b""), None);
    }
}
