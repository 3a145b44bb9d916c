//! The documentation's worked examples are real: every ```` ```console ```` block that follows a
//! `<!-- transcript: SCENARIO -->` line in README.md or docs/*.md is run here, command by command, and its text must
//! be what the commands print (stdout and stderr as one stream, as on a terminal), so the docs cannot drift from
//! the tool. `BPORT_UPDATE_GOLDEN=1 cargo test --test it readme` rewrites the blocks with what was printed.
//!
//! A block is `$ COMMAND` lines, each followed by its output. The commands run through `sh` in the scenario's
//! directory, one after another, with the test binary's `bport` first on PATH and the hermetic environment of
//! [`bport::bport`] (no user git config, a fixed committer and date), so ids and outputs are the same on every
//! machine. `$EDITOR FILE` resolves a conflict by keeping both sides. Blocks of one scenario share its directory,
//! in document order; that directory prints as `/tmp/work`. `$?` is the previous command's exit status.

use crate::support::{bport, oracle, scenario};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const MARK: &str = "<!-- transcript: ";

/// A block to check: where it is, which scenario, and its lines.
struct Block {
    file: PathBuf,
    /// Byte range of the block's body (between the fences) in the file.
    body: std::ops::Range<usize>,
    scenario: String,
    text: String,
}

fn blocks(file: &Path) -> Vec<Block> {
    let doc = std::fs::read_to_string(file).unwrap();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(i) = doc[at..].find(MARK) {
        let start = at + i;
        let name_end = doc[start..]
            .find(" -->")
            .expect("transcript mark ends with -->")
            + start;
        let scenario = doc[start + MARK.len()..name_end].trim().to_owned();
        let fence = doc[name_end..]
            .find("```console\n")
            .expect("a ```console block after the mark")
            + name_end;
        let body_start = fence + "```console\n".len();
        let body_end = doc[body_start..].find("```\n").expect("the block ends") + body_start;
        found.push(Block {
            file: file.to_owned(),
            body: body_start..body_end,
            scenario,
            text: doc[body_start..body_end].to_owned(),
        });
        at = body_end;
    }
    found
}

/// Where a scenario's commands run, and what keeps it alive.
struct Stage {
    dir: PathBuf,
    _keep: Box<dyn std::any::Any>,
}

fn stage(name: &str) -> Stage {
    match name {
        // A branch `foo` and a branch `bar` that edit the same line of README; HEAD on foo.
        "backport" => {
            let t = scenario::foo_bar().repo();
            Stage {
                dir: t.path().to_owned(),
                _keep: Box::new(t),
            }
        }
        // A directory holding a recording of the built-in frame-pointer workload as perf.data.
        "profile" => {
            let dir = tempfile::tempdir().unwrap();
            let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perf");
            std::fs::copy(fixtures.join("fp.data"), dir.path().join("perf.data")).unwrap();
            Stage {
                dir: dir.path().to_owned(),
                _keep: Box::new(dir),
            }
        }
        other => panic!("unknown transcript scenario {other:?}"),
    }
}

/// Runs `command` as a shell line in `dir` and returns what it printed on stdout and stderr, interleaved as
/// written, and its exit status.
fn run_line(dir: &Path, editor: &Path, command: &str, last_status: i32) -> (String, i32) {
    let bin = Path::new(env!("CARGO_BIN_EXE_bport")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (mut reader, writer) = std::io::pipe().unwrap();
    // `bport` with the tests' hermetic environment, turned into a shell.
    let template = bport::bport(dir);
    let mut cmd = Command::new("sh");
    for (k, v) in template.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let mut child = cmd
        .current_dir(dir)
        .env("PATH", path)
        .env("EDITOR", editor)
        .env_remove("VISUAL")
        .args(["-c", &format!("(exit {last_status}); {command}")])
        .stdin(Stdio::null())
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .unwrap();
    // The Command holds copies of the pipe's writing end: the read below ends only once they are closed too.
    drop(cmd);
    let mut out = String::new();
    std::io::Read::read_to_string(&mut reader, &mut out).unwrap();
    let status = child.wait().unwrap().code().unwrap_or(-1);
    (out, status)
}

/// The block as the commands print it: each `$ COMMAND` line followed by its output.
fn replay(block: &Block, dir: &Path, editor: &Path, last_status: &mut i32) -> String {
    let mut actual = String::new();
    for line in block.text.lines().filter(|l| l.starts_with("$ ")) {
        let command = &line[2..];
        let (out, status) = run_line(dir, editor, command, *last_status);
        *last_status = status;
        actual.push_str(line);
        actual.push('\n');
        actual.push_str(&out);
    }
    actual
}

#[test]
fn readme_and_docs_transcripts_are_what_bport_prints() {
    skip_unless!(oracle::has_git());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    docs.sort();
    files.extend(
        docs.into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "md")),
    );

    let editor_dir = tempfile::tempdir().unwrap();
    let editor = editor_dir.path().join("keep-both-sides");
    std::fs::write(
        &editor,
        "#!/bin/sh\n# Resolves every conflict in the named files by keeping both sides.\n\
         for f in \"$@\"; do sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' \"$f\"; done\n",
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    let bless = std::env::var_os("BPORT_UPDATE_GOLDEN").is_some();
    let mut checked = 0;
    let mut differences = Vec::new();
    for file in &files {
        let mut stages: Vec<(String, Stage, i32)> = Vec::new();
        let mut rewrites = Vec::new();
        for block in blocks(file) {
            let i = match stages.iter().position(|(n, _, _)| *n == block.scenario) {
                Some(i) => i,
                None => {
                    stages.push((block.scenario.clone(), stage(&block.scenario), 0));
                    stages.len() - 1
                }
            };
            let (_, stage, last_status) = &mut stages[i];
            let actual = replay(&block, &stage.dir.clone(), &editor, last_status);
            let actual = actual.replace(&stage.dir.display().to_string(), "/tmp/work");
            checked += 1;
            if actual != block.text {
                differences.push(format!(
                    "{} ({} block):\n--- documented\n{}--- printed\n{}",
                    block.file.display(),
                    block.scenario,
                    block.text,
                    actual
                ));
                rewrites.push((block.body.clone(), actual));
            }
        }
        if bless && !rewrites.is_empty() {
            let mut doc = std::fs::read_to_string(file).unwrap();
            for (range, text) in rewrites.into_iter().rev() {
                doc.replace_range(range, &text);
            }
            std::fs::write(file, doc).unwrap();
        }
    }
    assert!(
        checked > 0,
        "no transcript blocks found in README.md or docs/"
    );
    assert!(
        differences.is_empty() || bless,
        "documented transcripts differ from what bport prints (BPORT_UPDATE_GOLDEN=1 rewrites them):\n{}",
        differences.join("\n")
    );
}
