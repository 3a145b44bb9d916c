//! git configuration and layouts a run honours as git does: the editor's order.

use super::*;
use crate::support::oracle::git;
use std::collections::HashMap;

/// The editor bport opens at a stop is the one `git var GIT_EDITOR` names, for every combination of
/// `GIT_EDITOR`, `core.editor`, `VISUAL`, `EDITOR` and `TERM` (dumb or not, set empty or not).
#[test]
fn editor_follows_gits_order() {
    skip_unless!(has_git());
    let t = TestRepo::new();
    t.commit("base", &[("f", Some("f\n"))]);
    let vars = ["GIT_EDITOR", "VISUAL", "EDITOR"];
    let mut checked = 0;
    for mask in 0..(1 << vars.len()) {
        for core in [None, Some("core-ed")] {
            for term in [None, Some("dumb"), Some("xterm")] {
                match core {
                    Some(c) => {
                        oracle::git_ok(t.path(), &["config", "core.editor", c]);
                    }
                    None => {
                        let _ = git(t.path())
                            .args(["config", "--unset", "core.editor"])
                            .output();
                    }
                }
                let mut env: HashMap<&str, String> = HashMap::new();
                for (i, v) in vars.iter().enumerate() {
                    if mask & (1 << i) != 0 {
                        env.insert(v, format!("{}-ed", v.to_lowercase()));
                    }
                }
                if let Some(term) = term {
                    env.insert("TERM", term.to_owned());
                }
                let mut cmd = git(t.path());
                cmd.args(["var", "GIT_EDITOR"]).env_remove("TERM");
                for v in vars {
                    cmd.env_remove(v);
                }
                for (k, v) in &env {
                    cmd.env(k, v);
                }
                let out = cmd.output().unwrap();
                let theirs = out
                    .status
                    .success()
                    .then(|| String::from_utf8_lossy(&out.stdout).trim_end().to_owned());
                // The repository's own config only, as the hermetic git sees it (never the tester's ~/.gitconfig).
                let config = git2::Config::open(&t.path().join(".git/config")).unwrap();
                let ours = ::bport::git::editor(Some(&config), &|name| env.get(name).cloned());
                assert_eq!(ours, theirs, "env {env:?}, core.editor {core:?}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 48);
}
