//! `.gitattributes` merge drivers and end-of-line conversion in a pick, with `git cherry-pick` (merge-ort) as the
//! oracle: the same exit (clean or stopped), the same index (every stage), the same worktree bytes, the same
//! commit where git commits. Attributes bport cannot reproduce are refused before anything is written.

use super::*;
use crate::support::oracle::git_ok;
use crate::support::repo::TestRepo;
use ::bport::backport::attributes::NAMES;

/// Ten lines `tag line i`.
fn lines(tag: &str) -> String {
    (1..=10).map(|i| format!("{tag} line {i}\n")).collect()
}

/// A repository with `base` on master, branch `upstream` editing `path` to `theirs`, branch `vendor` editing it
/// to `ours`; git config `config` (key, value pairs) set before either tool runs. Left on `vendor`.
fn fork(
    base: &[(&str, Option<&str>)],
    path: &str,
    ours: &str,
    theirs: &str,
    config: &[(&str, &str)],
) -> TestRepo {
    let t = TestRepo::new();
    for (k, v) in config {
        git_ok(t.path(), &["config", k, v]);
    }
    t.commit("base", base);
    t.branch("upstream", "master");
    t.branch("vendor", "master");
    t.checkout("upstream");
    t.commit("upstream edit", &[(path, Some(theirs))]);
    t.checkout("vendor");
    t.commit("vendor edit", &[(path, Some(ours))]);
    t.checkout("vendor");
    t
}

/// `f.txt` forked as [`fork`] forks it, with `key=value` in the config and, when given, a `.gitattributes`.
fn eol_fork(key: &str, value: &str, attrs: Option<&str>, ours: &str, theirs: &str) -> TestRepo {
    let text = lines("a");
    let mut base = vec![("f.txt", Some(text.as_str()))];
    if let Some(a) = attrs {
        base.push((".gitattributes", Some(a)));
    }
    fork(&base, "f.txt", ours, theirs, &[(key, value)])
}

/// Both sides change line 5: a conflict for the text driver.
fn line5(tag: &str) -> String {
    lines("a").replace("a line 5\n", &format!("{tag} line 5\n"))
}

#[test]
fn union_merges_where_the_text_driver_conflicts() {
    skip_unless!(has_git());
    let base = lines("a");
    let t = fork(
        &[
            ("f.txt", Some(&base)),
            (".gitattributes", Some("*.txt merge=union\n")),
        ],
        "f.txt",
        &line5("ours"),
        &line5("theirs"),
        &[],
    );
    assert!(!same_as_git(&t, &[], &[]));
    assert!(t.read("f.txt").contains("ours line 5\ntheirs line 5\n"));
}

#[test]
fn union_also_overrides_favour_options() {
    skip_unless!(has_git());
    let t = fork(
        &[
            ("f.txt", Some(&lines("a"))),
            (".gitattributes", Some("f.txt merge=union\n")),
        ],
        "f.txt",
        &line5("ours"),
        &line5("theirs"),
        &[],
    );
    assert!(!same_as_git(&t, &["-X", "theirs"], &["-X", "theirs"]));
}

/// Edits of different lines merge as text, but `merge=binary` and `-merge` refuse to merge content: a conflict
/// with the branch's version in the worktree and stages 1/2/3, as git leaves it.
#[test]
fn binary_and_unset_merge_conflict_and_keep_ours() {
    skip_unless!(has_git());
    for attr in ["merge=binary", "-merge", "binary"] {
        let base = lines("a");
        let t = fork(
            &[
                ("f.txt", Some(&base)),
                (".gitattributes", Some(&format!("f.txt {attr}\n"))),
            ],
            "f.txt",
            &base.replace("a line 2\n", "ours line 2\n"),
            &base.replace("a line 9\n", "theirs line 9\n"),
            &[],
        );
        assert!(same_as_git(&t, &[], &[]), "{attr}");
        assert!(t.read("f.txt").contains("ours line 2"), "{attr}");
        assert!(!t.read("f.txt").contains("theirs line 9"), "{attr}");
    }
}

/// `-X theirs` takes the picked side of a binary merge cleanly.
#[test]
fn binary_merge_takes_a_side_with_favour_options() {
    skip_unless!(has_git());
    let base = lines("a");
    let t = fork(
        &[
            ("f.txt", Some(&base)),
            (".gitattributes", Some("f.txt -merge\n")),
        ],
        "f.txt",
        &base.replace("a line 2\n", "ours line 2\n"),
        &base.replace("a line 9\n", "theirs line 9\n"),
        &[],
    );
    assert!(!same_as_git(&t, &["-X", "theirs"], &["-X", "theirs"]));
}

/// A NUL in the first 8000 bytes makes a file binary even under `merge=text`: git does not text-merge it.
#[test]
fn merge_text_does_not_merge_binaries() {
    skip_unless!(has_git());
    let base = format!("{}\0tail\n", lines("a"));
    let t = fork(
        &[
            ("f.bin", Some(&base)),
            (".gitattributes", Some("*.bin merge=text\n")),
        ],
        "f.bin",
        &base.replace("a line 2\n", "ours line 2\n"),
        &base.replace("a line 9\n", "theirs line 9\n"),
        &[],
    );
    assert!(same_as_git(&t, &[], &[]));
}

/// A NUL after the first 8000 bytes is text to git: merged line by line.
#[test]
fn a_nul_past_8000_bytes_is_still_text() {
    skip_unless!(has_git());
    let base = format!("{}{}\0tail\n", lines("a"), "x".repeat(9000));
    let t = fork(
        &[("f.dat", Some(&base))],
        "f.dat",
        &base.replace("a line 2\n", "ours line 2\n"),
        &base.replace("a line 9\n", "theirs line 9\n"),
        &[],
    );
    assert!(!same_as_git(&t, &[], &[]));
}

#[test]
fn conflict_marker_size_sets_the_markers() {
    skip_unless!(has_git());
    let t = fork(
        &[
            ("doc/f.txt", Some(&lines("a"))),
            (
                "doc/.gitattributes",
                Some("*.txt conflict-marker-size=12\n"),
            ),
        ],
        "doc/f.txt",
        &line5("ours"),
        &line5("theirs"),
        &[("merge.conflictStyle", "diff3")],
    );
    assert!(same_as_git(&t, &[], &[]));
    assert!(t.read("doc/f.txt").contains("<<<<<<<<<<<< HEAD\n"));
}

/// `merge.default` names the driver for paths without a `merge` attribute.
#[test]
fn merge_default_picks_the_driver() {
    skip_unless!(has_git());
    let t = fork(
        &[
            ("f.txt", Some(&lines("a"))),
            (".gitattributes", Some("*.c text\n")),
        ],
        "f.txt",
        &line5("ours"),
        &line5("theirs"),
        &[("merge.default", "union")],
    );
    assert!(!same_as_git(&t, &[], &[]));
}

/// A `merge.<name>.driver` runs as git runs it: every placeholder expanded the same way (the result records
/// them, temp-file names aside), exit 0 clean with the result read from %A.
#[test]
fn a_custom_driver_runs_as_git_runs_it() {
    skip_unless!(has_git());
    let driver = "cat %B > %A.new && mv %A.new %A && echo %P %L %S %X %Y %% %Q >> %A && \
                  test -f %O && case %O in .merge_file_*) ;; *) exit 3;; esac";
    let t = fork(
        &[
            ("src/f.txt", Some(&lines("a"))),
            (
                ".gitattributes",
                Some("*.txt merge=mine conflict-marker-size=9\n"),
            ),
        ],
        "src/f.txt",
        &line5("ours"),
        &line5("theirs"),
        &[
            ("merge.mine.driver", driver),
            ("merge.mine.name", "test driver"),
        ],
    );
    assert!(!same_as_git(&t, &[], &[]));
    let merged = t.read("src/f.txt");
    assert!(merged.contains("theirs line 5"), "{merged}");
    assert!(merged.contains("src/f.txt 9"), "{merged}");
    assert!(
        merged.contains("upstream edit") && merged.contains("% %Q"),
        "{merged}"
    );
}

/// A driver that exits 1 leaves a conflict: stages 1/2/3 and %A's content in the worktree.
#[test]
fn a_custom_driver_that_fails_stops() {
    skip_unless!(has_git());
    let t = fork(
        &[
            ("f.txt", Some(&lines("a"))),
            (".gitattributes", Some("f.txt merge=mine\n")),
        ],
        "f.txt",
        &lines("a").replace("a line 2\n", "ours line 2\n"),
        &lines("a").replace("a line 9\n", "theirs line 9\n"),
        &[("merge.mine.driver", "echo driver said no >> %A; exit 1")],
    );
    assert!(same_as_git(&t, &[], &[]));
    assert!(t.read("f.txt").ends_with("driver said no\n"));
}

/// A conflicted file is written as git's checkout writes it: LF → CRLF under `eol=crlf`; a clean path of the
/// same pick goes through libgit2's checkout filter.
#[test]
fn eol_crlf_converts_the_conflicted_file() {
    skip_unless!(has_git());
    let t = TestRepo::new();
    t.commit(
        "base",
        &[
            ("f.txt", Some(&lines("a"))),
            ("g.txt", Some(&lines("g"))),
            (".gitattributes", Some("*.txt text eol=crlf\n")),
        ],
    );
    t.branch("upstream", "master");
    t.branch("vendor", "master");
    t.checkout("upstream");
    t.commit(
        "upstream edit",
        &[
            ("f.txt", Some(&line5("theirs"))),
            (
                "g.txt",
                Some(&lines("g").replace("g line 1\n", "g line one\n")),
            ),
        ],
    );
    t.checkout("vendor");
    t.commit("vendor edit", &[("f.txt", Some(&line5("ours")))]);
    t.checkout("vendor");
    assert!(same_as_git(&t, &[], &[]));
    let f = std::fs::read(t.path().join("f.txt")).unwrap();
    assert!(f.windows(2).any(|w| w == b"\r\n"));
    let g = std::fs::read(t.path().join("g.txt")).unwrap();
    assert!(g.starts_with(b"g line one\r\n"));
}

/// `core.autocrlf=true` without attributes: conflicted text files get CRLF, as git's checkout writes them.
#[test]
fn core_autocrlf_converts_the_conflicted_file() {
    skip_unless!(has_git());
    for (key, value, attrs) in [
        ("core.autocrlf", "true", None),
        ("core.eol", "crlf", Some("*.txt text\n")),
        ("core.autocrlf", "true", Some("*.txt -text\n")),
        ("core.autocrlf", "input", Some("*.txt text=auto\n")),
    ] {
        let t = eol_fork(key, value, attrs, &line5("ours"), &line5("theirs"));
        assert!(same_as_git(&t, &[], &[]), "{key}={value} {attrs:?}");
    }
}

/// Attributes that git would apply through a conversion bport does not reproduce: refused, naming the
/// attribute, with the branch, index and worktree untouched.
#[test]
fn unsupported_conversions_are_refused_before_writing() {
    skip_unless!(has_git());
    for (attr, config) in [
        ("filter=lfs", Some(("filter.lfs.smudge", "cat"))),
        ("working-tree-encoding=UTF-16", None),
        ("ident", None),
    ] {
        let t = fork(
            &[
                ("f.txt", Some(&lines("a"))),
                (".gitattributes", Some(&format!("*.txt {attr}\n"))),
            ],
            "f.txt",
            &line5("ours"),
            &lines("a").replace("a line 9\n", "theirs line 9\n"),
            &[],
        );
        if let Some((k, v)) = config {
            git_ok(t.path(), &["config", k, v]);
        }
        let before = t.snapshot();
        let (_d, list) = list_file(&t.list("upstream~1..upstream"));
        let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
        assert_eq!(out.code, Some(2), "{attr}: {}", out.transcript());
        let name = attr.split('=').next().unwrap();
        assert!(
            out.stderr.contains(&format!("attribute {name}")),
            "{attr}: {}",
            out.stderr
        );
        let after = t.snapshot();
        assert_eq!(before.head, after.head, "{attr}");
        assert_eq!(before.index, after.index, "{attr}");
        assert_eq!(before.files, after.files, "{attr}");
        assert!(
            !t.path().join(".git/bport/state.json").exists(),
            "{attr}: a refused run leaves nothing to continue or abort"
        );
    }
}

/// A filter git does not know (no `filter.<name>` config) is ignored by git, and so by bport.
#[test]
fn an_unconfigured_filter_is_ignored_as_git_ignores_it() {
    skip_unless!(has_git());
    let t = fork(
        &[
            ("f.txt", Some(&lines("a"))),
            (".gitattributes", Some("*.txt filter=nothing\n")),
        ],
        "f.txt",
        &line5("ours"),
        &line5("theirs"),
        &[],
    );
    assert!(same_as_git(&t, &[], &[]));
}

/// An earlier pick of the run adds `merge=union`: git's next pick reads it from the worktree and merges cleanly;
/// bport catches its worktree up with the picks so far and merges under the new attributes too.
#[test]
fn a_pick_that_changes_gitattributes_governs_the_next_pick() {
    skip_unless!(has_git());
    let t = TestRepo::new();
    t.commit(
        "base",
        &[("f.txt", Some(&lines("a"))), ("g.txt", Some("g\n"))],
    );
    t.branch("upstream", "master");
    t.branch("vendor", "master");
    t.checkout("upstream");
    t.commit(
        "attributes",
        &[(".gitattributes", Some("*.txt merge=union\n"))],
    );
    t.commit("upstream edit", &[("f.txt", Some(&line5("theirs")))]);
    t.commit("upstream g", &[("g.txt", Some("g2\n"))]);
    t.checkout("vendor");
    t.commit("vendor edit", &[("f.txt", Some(&line5("ours")))]);
    t.checkout("vendor");
    let g = t.copy();
    let git = oracle::git(g.path())
        .args(["cherry-pick", "master..upstream"])
        .output()
        .unwrap();
    assert_eq!(
        git.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&git.stderr)
    );
    let (_d, list) = list_file(&t.list("master..upstream"));
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let (ours, theirs) = (t.snapshot(), g.snapshot());
    assert_eq!(ours.head.1, theirs.head.1, "the commits git makes");
    assert_eq!(ours.index, theirs.index);
    assert_eq!(ours.files, theirs.files);
    assert!(t.read("f.txt").contains("ours line 5\ntheirs line 5\n"));
    assert!(!t.path().join(".git/bport/state.json").exists());
}

/// Binary files without attributes: git's binary driver (a conflict keeping the branch's version; `-X theirs`
/// takes the picked side cleanly; `-X ours` empties the pick, which bport skips where git stops to ask).
#[test]
fn binaries_without_attributes_merge_as_git_merges_them() {
    skip_unless!(has_git());
    for x in [&[][..], &["-X", "theirs"][..]] {
        let base = format!("\0{}", lines("a"));
        let t = fork(
            &[("f.bin", Some(&base))],
            "f.bin",
            &base.replace("a line 2\n", "ours line 2\n"),
            &base.replace("a line 9\n", "theirs line 9\n"),
            &[],
        );
        assert_eq!(same_as_git(&t, x, x), x.is_empty(), "{x:?}");
    }
}

/// A cleanly merged file under the same settings: written by libgit2's checkout filter, byte for byte as git's.
#[test]
fn clean_merges_are_written_with_git_line_endings() {
    skip_unless!(has_git());
    for (key, value, attrs) in [
        ("core.autocrlf", "true", None),
        ("core.eol", "crlf", Some("*.txt text\n")),
        ("core.autocrlf", "false", Some("*.txt eol=crlf\n")),
        ("core.autocrlf", "input", Some("*.txt text=auto\n")),
    ] {
        let t = eol_fork(
            key,
            value,
            attrs,
            &lines("a").replace("a line 2\n", "ours line 2\n"),
            &lines("a").replace("a line 9\n", "theirs line 9\n"),
        );
        assert!(!same_as_git(&t, &[], &[]), "{key}={value} {attrs:?}");
    }
}

/// `merge.renormalize` makes git convert every version before merging: refused, naming the setting.
#[test]
fn merge_renormalize_is_refused() {
    skip_unless!(has_git());
    let t = fork(
        &[("f.txt", Some(&lines("a")))],
        "f.txt",
        &line5("ours"),
        &lines("a").replace("a line 9\n", "theirs line 9\n"),
        &[("merge.renormalize", "true")],
    );
    let before = t.snapshot();
    let (_d, list) = list_file(&t.list("upstream~1..upstream"));
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert!(
        out.stderr.contains("merge.renormalize=true"),
        "{}",
        out.stderr
    );
    let after = t.snapshot();
    assert_eq!(before.head, after.head);
    assert_eq!(before.files, after.files);
    assert!(!t.path().join(".git/bport/state.json").exists());
}

/// Every attribute a merge reads, for paths that exercise each rule of git's matching (precedence of info,
/// directory, top-level, global files; macros allowed only where git allows them; anchored, `**`, quoted and
/// case patterns; `!attr`; an overlong line; a worktree file missing, so the tree's is read; an untracked
/// worktree file), equal to `git check-attr`'s.
#[test]
fn attribute_values_are_git_check_attrs() {
    skip_unless!(has_git());
    let t = TestRepo::new();
    let long_line = format!("*.long merge={}\n", "x".repeat(3000));
    let top = format!(
        "[attr]mymacro merge=union -text\n\
         *.c text eol=lf\n\
         *.bin binary\n\
         /top.txt conflict-marker-size=12\n\
         docs/**/*.md merge=ours\n\
         *.TXT eol=crlf\n\
         lib/** text=auto\n\
         weird\\ name.txt ident\n\
         \"quoted name.txt\" merge=quoted\n\
         *.m mymacro\n\
         *.n mymacro !text\n\
         {long_line}\
         *.enc working-tree-encoding=UTF-16 filter=lfs\n\
         *.c conflict-marker-size=9\n"
    );
    t.commit(
        "attributes",
        &[
            (".gitattributes", Some(&top)),
            (
                "sub/.gitattributes",
                Some(
                    "[attr]nope -merge\n*.c -text\ndeep/*.h eol=crlf\n*.m merge=sub\nnope.x nope\n",
                ),
            ),
            (
                "sub/deep/.gitattributes",
                Some("*.h !eol\nx.c crlf=input\n"),
            ),
            ("gone/.gitattributes", Some("*.g merge=from-the-tree\n")),
            ("keep.txt", Some("x\n")),
        ],
    );
    // Deleted from the worktree only: `git check-attr` reads the index's copy, a merge does not (below).
    std::fs::remove_file(t.path().join("gone/.gitattributes")).unwrap();
    std::fs::create_dir_all(t.path().join("untracked")).unwrap();
    std::fs::write(
        t.path().join("untracked/.gitattributes"),
        "*.u merge=untracked\n",
    )
    .unwrap();
    std::fs::create_dir_all(t.path().join(".git/info")).unwrap();
    std::fs::write(
        t.path().join(".git/info/attributes"),
        "*.info merge=info\nsub/*.c eol=crlf\n",
    )
    .unwrap();
    let global = t.path().join(".git/global-attributes");
    std::fs::write(
        &global,
        "*.gl merge=global\n*.c merge=globalc\n*.m merge=globalm\n",
    )
    .unwrap();
    git_ok(
        t.path(),
        &["config", "core.attributesFile", global.to_str().unwrap()],
    );
    let paths = [
        "a.c",
        "sub/a.c",
        "sub/deep/x.c",
        "sub/deep/y.h",
        "sub/y.h",
        "sub/deep/z.h",
        "top.txt",
        "sub/top.txt",
        "docs/a/b/c.md",
        "docs/c.md",
        "README.TXT",
        "readme.txt",
        "lib/a",
        "lib/x/y",
        "weird name.txt",
        "quoted name.txt",
        "x.m",
        "x.n",
        "sub/x.m",
        "sub/nope.x",
        "f.info",
        "untracked/a.u",
        "f.gl",
        "x.bin",
        "a.long",
        "a.enc",
        "no/such/dir/file",
    ];
    let want = same_as_check_attr(&t, &paths);
    // The cases are not vacuous: git itself set what the table exercises.
    assert_eq!(want[&("sub/deep/x.c".into(), "crlf".into())], "input");
    // merge-ort checks attributes against an index of its own, empty without merge.renormalize: only the
    // worktree's files count for a merge ([`a_gitattributes_missing_from_the_worktree_does_not_apply`]).
    let git_says = git_ok(t.path(), &["check-attr", "merge", "--", "gone/a.g"]);
    assert_eq!(git_says, "gone/a.g: merge: from-the-tree\n");
    let repo = git2::Repository::open(t.path()).unwrap();
    let mut attrs = ::bport::backport::attributes::Attributes::read(&repo).unwrap();
    assert_eq!(attrs.values("gone/a.g", &["merge"]), vec![None]);
    assert_eq!(want[&("untracked/a.u".into(), "merge".into())], "untracked");
    assert_eq!(want[&("x.m".into(), "merge".into())], "union");
}

/// Asserts that bport's values of [`NAMES`] for `paths` in `t` (its HEAD and worktree) are `git check-attr`'s;
/// returns git's, by (path, attribute).
fn same_as_check_attr(
    t: &TestRepo,
    paths: &[&str],
) -> std::collections::BTreeMap<(String, String), String> {
    let mut args = vec!["check-attr", "-z"];
    args.extend(NAMES);
    args.push("--");
    args.extend(paths.iter().copied());
    let out = git_ok(t.path(), &args);
    let fields: Vec<&str> = out.split('\0').collect();
    let mut want = std::collections::BTreeMap::new();
    for f in fields.chunks_exact(3) {
        want.insert((f[0].to_owned(), f[1].to_owned()), f[2].to_owned());
    }
    assert_eq!(want.len(), paths.len() * NAMES.len(), "{out:?}");

    let repo = git2::Repository::open(t.path()).unwrap();
    let mut attrs = ::bport::backport::attributes::Attributes::read(&repo).unwrap();
    let mut differ = Vec::new();
    for &path in paths {
        let values = attrs.values(path, &NAMES);
        for (name, value) in NAMES.iter().zip(values) {
            let got = match value.as_deref() {
                None => "unspecified".to_owned(),
                Some("\u{1}true") => "set".to_owned(),
                Some("\u{1}false") => "unset".to_owned(),
                Some(v) => v.to_owned(),
            };
            let expected = &want[&(path.to_owned(), (*name).to_owned())];
            if &got != expected {
                differ.push(format!("{path}: {name}: bport {got}, git {expected}"));
            }
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    want
}

/// Patterns written to make a backtracking matcher take exponential time (a branch's `.gitattributes` is
/// untrusted input): runs of `**/` are cut to one and agree with git; a pattern with more than two `**`
/// components is ignored (the named deviation: git honours it, and never finishes on deep paths).
#[test]
fn hostile_attribute_patterns_finish() {
    skip_unless!(has_git());
    let t = TestRepo::new();
    let stars = format!("{}b merge=x\n", "*a".repeat(20));
    let globstars = format!("{}z merge=y\n", "**/".repeat(18));
    let classes = format!("[a-[a-[a-[a-{}c text\n", "*a".repeat(12));
    let spread = "**/p/**/q/**/r merge=spread\n";
    let attrs = format!("{stars}{globstars}{classes}{spread}");
    t.commit("hostile", &[(".gitattributes", Some(&attrs))]);
    let long = "a".repeat(60);
    let deep = ["a"; 40].join("/");
    let deep_z = format!("{deep}/z");
    let want = same_as_check_attr(&t, &[&long, &deep, &deep_z, "ab", "a/b/z"]);
    assert_eq!(want[&(deep_z.clone(), "merge".into())], "y");

    let git_says = git_ok(t.path(), &["check-attr", "merge", "--", "p/q/r"]);
    assert_eq!(git_says, "p/q/r: merge: spread\n");
    let repo = git2::Repository::open(t.path()).unwrap();
    let mut attrs = ::bport::backport::attributes::Attributes::read(&repo).unwrap();
    let values = attrs.values("p/q/r", &["merge"]);
    assert_eq!(values, vec![None]);
}

/// merge-ort reads attributes from the worktree's files only: a `.gitattributes` deleted in the worktree (not
/// staged) no longer makes a conflicting edit a union, in git as in bport.
#[test]
fn a_gitattributes_missing_from_the_worktree_does_not_apply() {
    skip_unless!(has_git());
    let t = fork(
        &[
            ("f.txt", Some(&lines("a"))),
            (".gitattributes", Some("*.txt merge=union\n")),
        ],
        "f.txt",
        &line5("ours"),
        &line5("theirs"),
        &[],
    );
    let g = t.copy();
    for repo in [&t, &g] {
        std::fs::remove_file(repo.path().join(".gitattributes")).unwrap();
    }
    let git = crate::support::oracle::git(g.path())
        .args(["cherry-pick", "upstream"])
        .output()
        .unwrap();
    assert_eq!(git.status.code(), Some(1), "git stops on the conflict");
    let (_d, list) = list_file(&t.list("upstream~1..upstream"));
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    let (ours, theirs) = (t.snapshot(), g.snapshot());
    assert_eq!(ours.index, theirs.index);
    assert_eq!(ours.files, theirs.files);
    assert!(t.read("f.txt").contains("<<<<<<<"));
}
