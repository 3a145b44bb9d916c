//! `--help` and the generated completions and man page: every subcommand documented, with an example.

use crate::support::bport;

#[test]
fn every_subcommand_has_help_with_an_example() {
    let dir = tempfile::tempdir().unwrap();
    let top = bport::run(dir.path(), &["--help"]);
    assert_eq!(top.code, Some(0), "{}", top.transcript());
    let commands: Vec<String> = top
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect();
    assert!(
        commands.contains(&"completions".to_owned()),
        "{}",
        top.stdout
    );
    for command in commands {
        let help = bport::run(dir.path(), &[&command, "--help"]);
        assert_eq!(help.code, Some(0), "{command}: {}", help.transcript());
        assert!(
            help.stdout.contains("Example"),
            "`bport {command} --help` lacks an example:\n{}",
            help.stdout
        );
    }
}

#[test]
fn completions_and_man_page_are_generated() {
    let dir = tempfile::tempdir().unwrap();
    let bash = bport::run(dir.path(), &["completions", "bash"]);
    assert_eq!(bash.code, Some(0), "{}", bash.transcript());
    assert!(bash.stdout.contains("_bport()"), "{}", bash.stdout);
    let man = bport::run(dir.path(), &["man"]);
    assert_eq!(man.code, Some(0), "{}", man.transcript());
    assert!(
        man.stdout.starts_with(".ie") || man.stdout.contains(".TH bport"),
        "{}",
        &man.stdout[..200.min(man.stdout.len())]
    );
}

/// `bport --help` and every subcommand's `--help`, snapshotted so that help changes show up in review (as jj's
/// cli-reference). `BPORT_UPDATE_GOLDEN=1 cargo test --test it help_snapshot` rewrites the golden file.
#[test]
fn help_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let top = bport::run(dir.path(), &["--help"]);
    let mut all = format!("$ bport --help\n{}", top.stdout);
    let commands: Vec<String> = top
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect();
    for command in commands {
        let help = bport::run(dir.path(), &[&command, "--help"]);
        all.push_str(&format!("\n$ bport {command} --help\n{}", help.stdout));
    }
    let golden =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cli-help.txt");
    if std::env::var_os("BPORT_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &all).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_default();
    if want != all {
        let diff = similar::TextDiff::from_lines(&want, &all);
        panic!(
            "--help changed; review and rerun with BPORT_UPDATE_GOLDEN=1:\n{}",
            diff.unified_diff().header("golden", "now")
        );
    }
}
