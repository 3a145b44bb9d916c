//! Stable patch-id, equal to `git show C | git patch-id --stable` (git's `builtin/patch-id.c`).
//!
//! git hashes the diff text with all whitespace removed, skipping `index` lines and hunk headers (line numbers
//! must not matter), and with `--stable` hashes each file separately and adds the per-file SHA-1s as 160-bit
//! little-endian integers, so that the order of files does not matter either. We render the diff with git2
//! (whose xdiff is git's) and run the same line machine over it, so that the two stay comparable line by line.

use super::Change;
use super::{Context, Error};
use git2::{Commit, DiffOptions, Repository};
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
    let changes = commit_changes(repo, commit)?;
    let mut text = Vec::new();
    for change in &changes {
        file_diff_text(repo, change, &mut text)?;
    }
    Ok(patch_id_of_diff_text(&text))
}

/// The paths `commit` changes against its first parent, with their blobs on each side (no rename detection, as
/// for git's own patch-ids, patch-ids.c), in git's path order.
pub fn commit_changes(repo: &Repository, commit: &Commit<'_>) -> Result<Vec<Change>, Error> {
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
    // Rename detection stays off, as for git's own patch-ids (patch-ids.c).
    super::tree_changes(repo, old_tree.as_ref(), Some(&new_tree))
}

/// The paths `commit` changes against its first parent (no rename detection), sorted: equal patch-ids imply
/// equal path sets, and this costs only the trees on the changed paths, so the matcher uses it to avoid most
/// patch-id computations.
pub fn changed_paths(repo: &Repository, commit: &Commit<'_>) -> Result<Vec<String>, Error> {
    Ok(commit_changes(repo, commit)?
        .into_iter()
        .map(|c| c.path)
        .collect())
}

/// Whether [`changed_lines`] of a commit with these changes would be non-empty, without diffing: a change
/// contributes lines unless it keeps the blob (a mode change), is binary (git's NUL-in-the-first-8000-bytes
/// rule, as the diff text uses), or adds or deletes an empty file.
pub fn has_changed_lines(repo: &Repository, changes: &[Change]) -> Result<bool, Error> {
    for c in changes {
        if c.old.map(|s| s.oid) == c.new.map(|s| s.oid) {
            continue;
        }
        if [c.old, c.new].iter().flatten().any(|s| s.mode == 0o160000) {
            return Ok(true);
        }
        let mut text = false;
        let mut binary = false;
        for side in [c.old, c.new].into_iter().flatten() {
            let blob = repo
                .find_blob(side.oid)
                .context_git(|| format!("reading blob {} ({})", side.oid, c.path))?;
            let b = blob.content();
            binary |= b[..b.len().min(8000)].contains(&0);
            text |= !b.is_empty();
        }
        if text && !binary {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The lines `commit` adds and removes against its first parent, each with its `+`/`-` and without surrounding
/// whitespace, sorted, repeats kept (a line a diff repeats in 22 files counts 22 times, so that generic lines cannot
/// make two different diffs look alike): what a port must carry even when its context (so its patch-id) changed.
/// The matcher uses it to confirm a subject match, for the few commits whose subjects match.
pub fn changed_lines(repo: &Repository, commit: &Commit<'_>) -> Result<Vec<Vec<u8>>, Error> {
    let mut text = Vec::new();
    for change in &commit_changes(repo, commit)? {
        file_diff_text(repo, change, &mut text)?;
    }
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut in_hunk = false;
    for line in text.split(|&b| b == b'\n') {
        if line.starts_with(b"@@ ") {
            in_hunk = true;
            continue;
        }
        if line.starts_with(b"diff --git ") {
            in_hunk = false;
            continue;
        }
        if in_hunk && matches!(line.first(), Some(b'+' | b'-')) {
            let body = line[1..].trim_ascii();
            let mut l = Vec::with_capacity(body.len() + 1);
            l.push(line[0]);
            l.extend_from_slice(body);
            out.push(l);
        }
    }
    out.sort();
    Ok(out)
}

/// Appends one file's diff as `git diff` prints it (the parts patch-id reads): header, mode lines, `index`,
/// `---`/`+++`, hunks with 3 lines of context, or git's `Binary files … differ` line.
fn file_diff_text(repo: &Repository, change: &Change, text: &mut Vec<u8>) -> Result<(), Error> {
    let p = &change.path;
    let (old_side, new_side) = (
        SideText::read(repo, change.old, p)?,
        SideText::read(repo, change.new, p)?,
    );
    let (old, new) = (old_side.bytes(), new_side.bytes());
    write_file_header(change, text);
    let binary = |b: &[u8]| b[..b.len().min(8000)].contains(&0);
    let (a, b) = (
        if change.old.is_some() {
            format!("a/{p}")
        } else {
            "/dev/null".into()
        },
        if change.new.is_some() {
            format!("b/{p}")
        } else {
            "/dev/null".into()
        },
    );
    if binary(old) || binary(new) {
        if old != new {
            text.extend_from_slice(format!("Binary files {a} and {b} differ\n").as_bytes());
        }
        return Ok(());
    }
    write_hunks(p, (&old_side, &new_side), (&a, &b), text)
}

/// A side's bytes: a gitlink's text as git prints it, or the blob borrowed from libgit2's object.
enum SideText<'r> {
    Absent,
    Text(Vec<u8>),
    Blob(git2::Blob<'r>),
}

impl<'r> SideText<'r> {
    fn read(
        repo: &'r Repository,
        side: Option<super::Side>,
        path: &str,
    ) -> Result<SideText<'r>, Error> {
        match side {
            None => Ok(SideText::Absent),
            Some(s) if s.mode == 0o160000 => Ok(SideText::Text(
                format!("Subproject commit {}\n", s.oid).into_bytes(),
            )),
            Some(s) => {
                Ok(SideText::Blob(repo.find_blob(s.oid).context_git(|| {
                    format!("reading blob {} ({path})", s.oid)
                })?))
            }
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            SideText::Absent => &[],
            SideText::Text(t) => t,
            SideText::Blob(b) => b.content(),
        }
    }
}

/// The `diff --git` line, the mode lines and the `index` line, as `git diff` writes them.
fn write_file_header(change: &Change, text: &mut Vec<u8>) {
    let p = &change.path;
    text.extend_from_slice(format!("diff --git a/{p} b/{p}\n").as_bytes());
    match (change.old, change.new) {
        (None, Some(n)) => {
            text.extend_from_slice(format!("new file mode {:o}\n", n.mode).as_bytes())
        }
        (Some(o), None) => {
            text.extend_from_slice(format!("deleted file mode {:o}\n", o.mode).as_bytes())
        }
        (Some(o), Some(n)) if o.mode != n.mode => text.extend_from_slice(
            format!("old mode {:o}\nnew mode {:o}\n", o.mode, n.mode).as_bytes(),
        ),
        _ => {}
    }
    let short = |s: Option<super::Side>| {
        s.map_or_else(
            || "0000000".to_owned(),
            |s| s.oid.to_string()[..7].to_owned(),
        )
    };
    text.extend_from_slice(
        format!("index {}..{}\n", short(change.old), short(change.new)).as_bytes(),
    );
}

/// The `---`/`+++` lines and the hunks of a text diff with three lines of context; nothing when the sides
/// hold the same text.
fn write_hunks(
    p: &str,
    (old_side, new_side): (&SideText<'_>, &SideText<'_>),
    (a, b): (&str, &str),
    text: &mut Vec<u8>,
) -> Result<(), Error> {
    let mut opts = DiffOptions::new();
    opts.context_lines(3);
    // Blobs go in as blobs: from buffers, libgit2 hashes both sides again with sha1dc for ids we already have
    // (40% of the diff time of `--match patch-id` on curl).
    let patch = match (old_side, new_side) {
        (SideText::Blob(o), SideText::Blob(n)) => {
            git2::Patch::from_blobs(o, None, n, None, Some(&mut opts))
        }
        (SideText::Blob(o), SideText::Absent) => {
            git2::Patch::from_blob_and_buffer(o, None, &[], None, Some(&mut opts))
        }
        _ => git2::Patch::from_buffers(
            old_side.bytes(),
            None,
            new_side.bytes(),
            None,
            Some(&mut opts),
        ),
    }
    .context_git(|| format!("diffing {p}"))?;
    if patch.num_hunks() == 0 {
        return Ok(());
    }
    text.extend_from_slice(format!("--- {a}\n+++ {b}\n").as_bytes());
    for h in 0..patch.num_hunks() {
        let (hunk, lines) = patch.hunk(h).context_git(|| format!("diffing {p}"))?;
        text.extend_from_slice(hunk.header());
        for l in 0..lines {
            let line = patch
                .line_in_hunk(h, l)
                .context_git(|| format!("diffing {p}"))?;
            if let c @ ('+' | '-' | ' ') = line.origin() {
                text.push(c as u8);
            }
            text.extend_from_slice(line.content());
        }
    }
    Ok(())
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

    /// The shortcut the matcher takes for two commits with the same blobs must agree with the lines themselves,
    /// for each kind of change that has none: a mode change, a binary file, an empty file added or deleted.
    #[test]
    fn has_changed_lines_agrees_with_changed_lines() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let sig =
            git2::Signature::new("T", "t@example.com", &git2::Time::new(1_700_000_000, 0)).unwrap();
        let commit = |files: &[(&str, &[u8], i32)], parent: Option<git2::Oid>| {
            let mut tb = repo.treebuilder(None).unwrap();
            for (name, content, mode) in files {
                tb.insert(name, repo.blob(content).unwrap(), *mode).unwrap();
            }
            let tree = repo.find_tree(tb.write().unwrap()).unwrap();
            let parents: Vec<_> = parent
                .map(|p| repo.find_commit(p).unwrap())
                .into_iter()
                .collect();
            let refs: Vec<_> = parents.iter().collect();
            repo.commit(None, &sig, &sig, "m", &tree, &refs).unwrap()
        };
        let base = commit(&[("t", b"a\n", 0o100644), ("bin", b"\0x", 0o100644)], None);
        type Files<'a> = &'a [(&'a str, &'a [u8], i32)];
        let cases: [(&str, Files<'_>, bool); 6] = [
            (
                "text edit",
                &[("t", b"b\n", 0o100644), ("bin", b"\0x", 0o100644)],
                true,
            ),
            (
                "mode change",
                &[("t", b"a\n", 0o100755), ("bin", b"\0x", 0o100644)],
                false,
            ),
            (
                "binary edit",
                &[("t", b"a\n", 0o100644), ("bin", b"\0y", 0o100644)],
                false,
            ),
            (
                "empty file added",
                &[
                    ("t", b"a\n", 0o100644),
                    ("bin", b"\0x", 0o100644),
                    ("e", b"", 0o100644),
                ],
                false,
            ),
            ("text deleted", &[("bin", b"\0x", 0o100644)], true),
            (
                "text added",
                &[
                    ("t", b"a\n", 0o100644),
                    ("bin", b"\0x", 0o100644),
                    ("n", b"new\n", 0o100644),
                ],
                true,
            ),
        ];
        for (what, files, expected) in cases {
            let c = repo.find_commit(commit(files, Some(base))).unwrap();
            let changes = commit_changes(&repo, &c).unwrap();
            assert!(!changes.is_empty(), "{what}");
            let lines = changed_lines(&repo, &c).unwrap();
            assert_eq!(!lines.is_empty(), expected, "{what}: {lines:?}");
            assert_eq!(
                has_changed_lines(&repo, &changes).unwrap(),
                expected,
                "{what}"
            );
        }
    }
}
