//! Working on a stop: what the CLI's prompt offers (show the conflict's diff, stage the resolution) done here, so
//! the CLI only asks and renders. Markers are recognised as rerere recognises them (the path's
//! `conflict-marker-size`), and staging goes through rerere's index access, the one place that stages.

use super::{Error, StopInfo};
use crate::rerere::conflict_id::has_conflicts;
use crate::rerere::Rerere;
use git2::Repository;
use std::io::Write;

/// What [`stage_stop`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Staged {
    /// Every conflicted path was staged (or its deletion, where the file is gone): `--continue` may go on.
    All,
    /// These paths still hold conflict markers; nothing was staged.
    MarkersRemain(Vec<String>),
}

/// `git add` (or `git rm` for a path the user deleted) of every conflicted path of the stop, unless one still has
/// conflict markers: then nothing is staged and the paths are named.
pub fn stage_stop(repo: &Repository, info: &StopInfo) -> Result<Staged, Error> {
    let rr = Rerere::open(repo)?;
    let mut marked = Vec::new();
    let (mut present, mut deleted) = (Vec::new(), Vec::new());
    for c in &info.conflicts {
        match rr.read_file(&c.path)? {
            Some(content) if has_conflicts(&content, rr.marker_size(&c.path)) => {
                marked.push(c.path.clone())
            }
            Some(_) => present.push(c.path.clone()),
            None => deleted.push(c.path.clone()),
        }
    }
    if !marked.is_empty() {
        return Ok(Staged::MarkersRemain(marked));
    }
    rr.stage(&present)?;
    rr.stage_deletions(&deleted)?;
    Ok(Staged::All)
}

/// The stop's conflicted files against HEAD, as `git diff HEAD -- <paths>` prints them: markers and both sides.
/// (A conflicted index has no stage-0 entry, so a diff against the index would show only a mode line.)
pub fn write_stop_diff(
    repo: &Repository,
    info: &StopInfo,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let git = |operation: &'static str| move |source| Error::Worktree { operation, source };
    let head = repo
        .head()
        .and_then(|h| h.peel_to_tree())
        .map_err(git("reading HEAD's tree"))?;
    let mut opts = git2::DiffOptions::new();
    for c in &info.conflicts {
        opts.pathspec(&c.path);
    }
    opts.disable_pathspec_match(true);
    let diff = repo
        .diff_tree_to_workdir(Some(&head), Some(&mut opts))
        .map_err(git("diffing the conflicted files against HEAD"))?;
    let mut written = Ok(());
    diff.print(git2::DiffFormat::Patch, |_, _, line| {
        let origin = line.origin();
        let prefix: &[u8] = match origin {
            '+' => b"+",
            '-' => b"-",
            ' ' => b" ",
            _ => b"",
        };
        written = out
            .write_all(prefix)
            .and_then(|()| out.write_all(line.content()));
        written.is_ok()
    })
    .or_else(|e| if written.is_err() { Ok(()) } else { Err(e) })
    .map_err(git("printing the diff"))?;
    written.map_err(|source| Error::Io {
        path: "<stdout>".into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backport::ConflictedPath;
    use git2::{Signature, Time};

    /// A repository whose worktree holds `file` conflicted in the index (stages 1-3) with `content` on disk.
    fn conflicted(content: &[u8]) -> (tempfile::TempDir, Repository, StopInfo) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        {
            let sig = Signature::new("T", "t@example.com", &Time::new(1_700_000_000, 0)).unwrap();
            let blob = |b: &[u8]| repo.blob(b).unwrap();
            let mut tb = repo.treebuilder(None).unwrap();
            tb.insert("file", blob(b"base\n"), 0o100644).unwrap();
            let tree = repo.find_tree(tb.write().unwrap()).unwrap();
            repo.commit(Some("HEAD"), &sig, &sig, "base\n", &tree, &[])
                .unwrap();
            let mut index = repo.index().unwrap();
            let entry = |stage: u16, id| git2::IndexEntry {
                ctime: git2::IndexTime::new(0, 0),
                mtime: git2::IndexTime::new(0, 0),
                dev: 0,
                ino: 0,
                mode: 0o100644,
                uid: 0,
                gid: 0,
                file_size: 0,
                id,
                flags: stage << 12 | 4,
                flags_extended: 0,
                path: b"file".to_vec(),
            };
            index.remove_path(std::path::Path::new("file")).unwrap();
            index.add(&entry(1, blob(b"base\n"))).unwrap();
            index.add(&entry(2, blob(b"ours\n"))).unwrap();
            index.add(&entry(3, blob(b"theirs\n"))).unwrap();
            index.write().unwrap();
        }
        std::fs::write(dir.path().join("file"), content).unwrap();
        let info = StopInfo {
            step: 0,
            conflicts: vec![ConflictedPath {
                path: "file".into(),
                kind: "both modified",
            }],
            missing: Vec::new(),
            resolved: Vec::new(),
        };
        (dir, repo, info)
    }

    #[test]
    fn markers_block_staging_and_are_named() {
        let (_d, repo, info) =
            conflicted(b"<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> abc (x)\n");
        assert_eq!(
            stage_stop(&repo, &info).unwrap(),
            Staged::MarkersRemain(vec!["file".into()])
        );
        assert!(repo.index().unwrap().has_conflicts());
    }

    #[test]
    fn the_path_marker_size_decides_what_a_marker_is() {
        // With conflict-marker-size=9, seven-character markers are content (as in git), so the file stages.
        let (d, repo, info) = conflicted(b"<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> abc (x)\n");
        std::fs::write(
            d.path().join(".gitattributes"),
            "file conflict-marker-size=9\n",
        )
        .unwrap();
        assert_eq!(stage_stop(&repo, &info).unwrap(), Staged::All);
        let index = repo.index().unwrap();
        assert!(!index.has_conflicts());
        assert!(index.get_path(std::path::Path::new("file"), 0).is_some());
    }

    #[test]
    fn a_resolved_file_stages_and_a_deleted_one_stages_its_deletion() {
        let (_d, repo, info) = conflicted(b"ours and theirs\n");
        assert_eq!(stage_stop(&repo, &info).unwrap(), Staged::All);
        let index = repo.index().unwrap();
        let e = index.get_path(std::path::Path::new("file"), 0).unwrap();
        assert_eq!(
            repo.find_blob(e.id).unwrap().content(),
            b"ours and theirs\n"
        );

        let (d, repo, info) = conflicted(b"x\n");
        std::fs::remove_file(d.path().join("file")).unwrap();
        assert_eq!(stage_stop(&repo, &info).unwrap(), Staged::All);
        let index = repo.index().unwrap();
        assert!(!index.has_conflicts());
        assert!(index.get_path(std::path::Path::new("file"), 0).is_none());
    }

    #[test]
    fn the_diff_shows_both_sides_against_head() {
        let (_d, repo, info) =
            conflicted(b"<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> abc (x)\n");
        let mut out = Vec::new();
        write_stop_diff(&repo, &info, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("diff --git a/file b/file\n"), "{text}");
        assert!(
            text.ends_with("-base\n+<<<<<<< HEAD\n+ours\n+=======\n+theirs\n+>>>>>>> abc (x)\n"),
            "{text}"
        );
    }
}
