//! Throwaway repositories built in-process with git2 on a deterministic clock, and the histories of the
//! non-conflict tests (`upstream_and_vendor`); conflict set-ups are `scenario.rs`'s. Oids are stable across runs,
//! so tests may compare them exactly.

use git2::{IndexAddOption, Oid, Repository, Signature, Time};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// A repository in a temp dir (or a directory the test owns); every commit gets the next tick of a test clock.
pub struct TestRepo {
    root: PathBuf,
    pub repo: Repository,
    clock: Cell<i64>,
    /// Removed with the repository (after it, fields drop in order) when the repository made it.
    _temp: Option<TempDir>,
}

/// Everything `--abort` must restore: HEAD (symbolic name and target), every index entry, every worktree file.
#[derive(Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub head: (Option<String>, Oid),
    pub index: Vec<(String, u16, Oid, u32)>,
    pub files: BTreeMap<String, Vec<u8>>,
    pub refs: BTreeMap<String, Oid>,
}

impl TestRepo {
    /// An empty repository on branch `master` with a local identity.
    pub fn new() -> TestRepo {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut t = TestRepo::init_at(dir.path(), "master");
        t._temp = Some(dir);
        t
    }

    /// An empty repository at `root` (which the caller keeps) on branch `branch`, with a local identity.
    pub fn init_at(root: &Path, branch: &str) -> TestRepo {
        let repo = Repository::init(root).expect("init");
        repo.set_head(&format!("refs/heads/{branch}"))
            .expect("HEAD → branch");
        let mut config = repo.config().expect("config");
        config
            .set_str("user.name", "Test Committer")
            .expect("user.name");
        config
            .set_str("user.email", "committer@example.com")
            .expect("user.email");
        TestRepo {
            root: root.to_path_buf(),
            repo,
            clock: Cell::new(1_600_000_000),
            _temp: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Writes (Some) or deletes (None) files in the worktree, stages everything, and commits on HEAD with
    /// author `A U Thor` at the next clock tick.
    pub fn commit(&self, message: &str, files: &[(&str, Option<&str>)]) -> Oid {
        for (path, content) in files {
            let full = self.path().join(path);
            match content {
                Some(c) => {
                    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
                    std::fs::write(&full, c).unwrap();
                }
                None => std::fs::remove_file(&full).unwrap(),
            }
        }
        let mut index = self.repo.index().unwrap();
        index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
        index.update_all(["*"], None).unwrap();
        index.write().unwrap();
        let tree = self.repo.find_tree(index.write_tree().unwrap()).unwrap();
        let t = self.clock.get() + 60;
        self.clock.set(t);
        let sig = Signature::new("A U Thor", "author@example.com", &Time::new(t, 0)).unwrap();
        let parents: Vec<git2::Commit<'_>> = self
            .repo
            .head()
            .ok()
            .and_then(|h| h.peel_to_commit().ok())
            .into_iter()
            .collect();
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        self.repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .unwrap()
    }

    /// Creates branch `name` at `at` (a revision).
    pub fn branch(&self, name: &str, at: &str) {
        let c = self
            .repo
            .revparse_single(at)
            .unwrap()
            .peel_to_commit()
            .unwrap();
        self.repo.branch(name, &c, true).unwrap();
    }

    /// Checks out branch `name`, forcing the worktree to match.
    pub fn checkout(&self, name: &str) {
        let refname = format!("refs/heads/{name}");
        let obj = self.repo.revparse_single(&refname).unwrap();
        self.repo
            .checkout_tree(&obj, Some(git2::build::CheckoutBuilder::new().force()))
            .unwrap();
        self.repo.set_head(&refname).unwrap();
    }

    pub fn oid(&self, rev: &str) -> Oid {
        self.repo
            .revparse_single(rev)
            .unwrap()
            .peel_to_commit()
            .unwrap()
            .id()
    }

    /// The patch list for `range` (`A..B`), derived from the repo as `git log --reverse --oneline` prints it.
    pub fn list(&self, range: &str) -> String {
        let mut walk = self.repo.revwalk().unwrap();
        walk.push_range(range).unwrap();
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
            .unwrap();
        walk.map(|oid| {
            let c = self.repo.find_commit(oid.unwrap()).unwrap();
            format!(
                "{} {}\n",
                &c.id().to_string()[..7],
                c.summary().unwrap().unwrap()
            )
        })
        .collect()
    }

    /// Subjects from HEAD back to (not including) `since`, oldest first.
    pub fn subjects_since(&self, since: &str) -> Vec<String> {
        let mut walk = self.repo.revwalk().unwrap();
        walk.push_range(&format!("{since}..HEAD")).unwrap();
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
            .unwrap();
        walk.map(|oid| {
            self.repo
                .find_commit(oid.unwrap())
                .unwrap()
                .summary()
                .unwrap()
                .unwrap()
                .to_owned()
        })
        .collect()
    }

    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.path().join(path)).unwrap()
    }

    pub fn snapshot(&self) -> Snapshot {
        let head = self.repo.find_reference("HEAD").unwrap();
        let head = (
            head.symbolic_target().ok().flatten().map(str::to_owned),
            self.repo.head().unwrap().target().unwrap(),
        );
        let mut index = self.repo.index().unwrap();
        index.read(true).unwrap();
        let index = index
            .iter()
            .map(|e| {
                (
                    String::from_utf8(e.path.clone()).unwrap(),
                    (e.flags >> 12) & 3,
                    e.id,
                    e.mode,
                )
            })
            .collect();
        let mut files = BTreeMap::new();
        walk_files(self.path(), self.path(), &mut files);
        let refs = self
            .repo
            .references()
            .unwrap()
            .flatten()
            .filter_map(|r| Some((r.name().ok()?.to_owned(), r.target()?)))
            .collect();
        Snapshot {
            head,
            index,
            files,
            refs,
        }
    }

    /// A byte-for-byte copy of the repository (worktree and .git) in a new temp dir.
    pub fn copy(&self) -> TestRepo {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(self.path(), dir.path());
        let repo = Repository::open(dir.path()).unwrap();
        TestRepo {
            root: dir.path().to_path_buf(),
            repo,
            clock: Cell::new(self.clock.get()),
            _temp: Some(dir),
        }
    }
}

fn walk_files(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        if path.is_dir() {
            walk_files(root, &path, out);
        } else {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.insert(rel, std::fs::read(&path).unwrap());
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let src = entry.path();
        let dst: PathBuf = to.join(entry.file_name());
        if src.is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// The README of the workflow this tool grew from.
pub const README: &str = "\
Linux kernel release 4.x

WHAT IS LINUX?

  Linux is a clone of the operating system Unix, written from scratch by
  Linus Torvalds with assistance from a loosely-knit team of hackers.

ON WHAT HARDWARE DOES IT RUN?

  Although originally developed first for 32-bit x86-based PCs (386 or higher),
  today Linux also runs on (at least) the Compaq Alpha AXP.
";

fn lines(n: usize, tag: &str) -> String {
    (1..=n).map(|i| format!("{tag} line {i}\n")).collect()
}

/// An upstream series on branch `upstream` (modify, add, delete, rename with edit, mode change, no newline at
/// end of file) and a vendor branch `vendor` with its own non-overlapping change; HEAD on vendor.
pub fn upstream_and_vendor() -> TestRepo {
    let t = TestRepo::new();
    let a = lines(12, "a");
    let old = lines(20, "old");
    t.commit(
        "base",
        &[
            ("a.txt", Some(&a)),
            ("b.txt", Some("b\n")),
            ("dir/c.txt", Some(&lines(5, "c"))),
            ("script.sh", Some("#!/bin/sh\necho hi\n")),
            ("old.txt", Some(&old)),
        ],
    );
    t.branch("upstream", "master");
    t.branch("vendor", "master");
    t.checkout("upstream");
    t.commit(
        "a: change line 2",
        &[("a.txt", Some(&a.replace("a line 2\n", "a line two\n")))],
    );
    t.commit(
        "dir: add new.txt\n\nWith a body.\n",
        &[("dir/new.txt", Some("new\n"))],
    );
    t.commit("b: remove", &[("b.txt", None)]);
    t.commit(
        "old: move into dir",
        &[
            ("old.txt", None),
            (
                "dir/renamed.txt",
                Some(&old.replace("old line 20\n", "old line twenty\n")),
            ),
        ],
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let p = t.path().join("script.sh");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    t.commit(
        "script: make executable\n\nSigned-off-by: Up Stream <up@example.com>\n",
        &[],
    );
    let a_now = t.read("a.txt");
    t.commit(
        "a, c: two files at once",
        &[
            (
                "a.txt",
                Some(&a_now.replace("a line 11\n", "a line eleven\n")),
            ),
            ("dir/c.txt", Some("c line 1\nc\n")),
        ],
    );
    t.commit(
        "c: no newline at end",
        &[("dir/c.txt", Some("c line 1\nc"))],
    );
    t.checkout("vendor");
    t.commit(
        "vendor: local change",
        &[
            (
                "a.txt",
                Some(&a.replace("a line 6\n", "a line six (vendor)\n")),
            ),
            ("v.txt", Some("vendor\n")),
        ],
    );
    t
}
