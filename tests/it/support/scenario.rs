//! Conflict scenarios, the set-up every conflict test of `apply/` and `rerere/` starts from: a base commit, two
//! branches that edit the same lines, and the patch list that picks one branch onto the other, as
//! `git log --reverse --oneline` would list it.
//!
//! ```text
//! trunk:   base ── (ours, when ours is the trunk)
//!            ├── ours:   ours commits          ← checked out
//!            └── theirs: theirs commits        ← the patch list is trunk..theirs
//! ```
//!
//! Commits are made in a fixed order (base, every ours commit, every theirs commit) on the repository's clock, so
//! a scenario's oids are the same on every run.

use super::repo::{TestRepo, README};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// A file written (`Some`) or deleted (`None`) by a commit.
type Change = (String, Option<String>);

/// A commit: its message and its changes.
type Commit = (String, Vec<Change>);

/// A conflict scenario under construction; [`Conflict::repo`] or [`Conflict::with_list`] builds it.
#[derive(Clone, Debug)]
pub struct Conflict {
    trunk: String,
    ours: String,
    theirs: String,
    base: Commit,
    ours_commits: Vec<Commit>,
    theirs_commits: Vec<Commit>,
}

fn changes(files: &[(&str, Option<&str>)]) -> Vec<Change> {
    files
        .iter()
        .map(|(path, content)| (path.to_string(), content.map(str::to_owned)))
        .collect()
}

impl Conflict {
    /// A base commit of `files` on `master`, the trunk; by default ours commits go on the trunk and theirs on
    /// `upstream`.
    pub fn new(message: &str, files: &[(&str, Option<&str>)]) -> Conflict {
        Conflict {
            trunk: "master".into(),
            ours: "master".into(),
            theirs: "upstream".into(),
            base: (message.into(), changes(files)),
            ours_commits: Vec::new(),
            theirs_commits: Vec::new(),
        }
    }

    /// Names the branches: the base commit's (`trunk`), the one checked out at the end (`ours`, which may be the
    /// trunk itself) and the one the patch list is taken from (`theirs`).
    pub fn branches(mut self, trunk: &str, ours: &str, theirs: &str) -> Conflict {
        (self.trunk, self.ours, self.theirs) = (trunk.into(), ours.into(), theirs.into());
        self
    }

    /// A commit on our side (the branch the list is applied to).
    pub fn ours(mut self, message: &str, files: &[(&str, Option<&str>)]) -> Conflict {
        self.ours_commits.push((message.into(), changes(files)));
        self
    }

    /// A commit on their side (the branch the list picks from).
    pub fn theirs(mut self, message: &str, files: &[(&str, Option<&str>)]) -> Conflict {
        self.theirs_commits.push((message.into(), changes(files)));
        self
    }

    /// Builds the scenario in a new temp dir, ours checked out.
    pub fn repo(self) -> TestRepo {
        let t = TestRepo::new();
        assert_eq!(self.trunk, "master", "TestRepo::new starts on master");
        self.build(t)
    }

    /// Builds the scenario at `root`, a directory the caller keeps (e.g. to clone it next to itself).
    pub fn repo_at(self, root: &Path) -> TestRepo {
        let t = TestRepo::init_at(root, &self.trunk);
        self.build(t)
    }

    /// Builds the scenario and writes its patch list (`trunk..theirs`) to a file outside the worktree.
    pub fn with_list(self) -> (TestRepo, TempDir, PathBuf) {
        let range = format!("{}..{}", self.trunk, self.theirs);
        let t = self.repo();
        let (dir, list) = list_file(&t.list(&range));
        (t, dir, list)
    }

    fn build(self, t: TestRepo) -> TestRepo {
        let commit = |t: &TestRepo, (message, changes): &Commit| {
            let files: Vec<(&str, Option<&str>)> = changes
                .iter()
                .map(|(p, c)| (p.as_str(), c.as_deref()))
                .collect();
            t.commit(message, &files);
        };
        commit(&t, &self.base);
        if self.ours != self.trunk {
            t.branch(&self.ours, &self.trunk);
        }
        t.branch(&self.theirs, &self.trunk);
        t.checkout(&self.ours);
        for c in &self.ours_commits {
            commit(&t, c);
        }
        t.checkout(&self.theirs);
        for c in &self.theirs_commits {
            commit(&t, c);
        }
        t.checkout(&self.ours);
        t
    }
}

/// The foo/bar scenario: master with a README; `foo` adds `foo` under "WHAT IS LINUX?"; `bar` adds `bar` at
/// the same place ("bar description", conflicts with foo) and then appends a line ("more bar description").
/// Builds with HEAD on foo; the list is master..bar.
pub fn foo_bar() -> Conflict {
    let with_bar = README.replace("WHAT IS LINUX?\n", "WHAT IS LINUX?\nbar\n");
    Conflict::new("Initial README", &[("README", Some(README))])
        .branches("master", "foo", "bar")
        .ours(
            "foo",
            &[(
                "README",
                Some(&README.replace("WHAT IS LINUX?\n", "WHAT IS LINUX?\nfoo\n")),
            )],
        )
        .theirs("bar description", &[("README", Some(&with_bar))])
        .theirs(
            "more bar description",
            &[("README", Some(&format!("{with_bar}more bar\n")))],
        )
}

/// Writes `text` as a patch list outside the worktree (an untracked file would be fine, but keeps snapshots pure).
pub fn list_file(text: &str) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("patches.txt");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// The 7-digit abbreviation of `rev`, as bport prints it.
pub fn short(t: &TestRepo, rev: &str) -> String {
    t.oid(rev).to_string()[..7].to_owned()
}
