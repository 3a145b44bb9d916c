//! Runs the built `bport` binary and captures its output as a transcript.

use std::path::Path;
use std::process::Command;

/// A finished `bport` run.
#[derive(Debug)]
pub struct CommandOutput {
    pub stdout: String,
    pub stderr: String,
    pub code: Option<i32>,
}

impl CommandOutput {
    /// jj-style transcript: stdout, a divider, stderr, and the exit status when it is not zero.
    pub fn transcript(&self) -> String {
        let mut s = self.stdout.clone();
        if !self.stderr.is_empty() {
            s.push_str("------- stderr -------\n");
            s.push_str(&self.stderr);
        }
        if self.code != Some(0) {
            s.push_str(&format!(
                "[exit status: {}]\n",
                self.code.map_or("signal".into(), |c| c.to_string())
            ));
        }
        s
    }
}

/// A `bport` command in `dir`, with a hermetic environment (no user git config, fixed committer).
pub fn bport(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bport"));
    cmd.current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("BPORT_LOG")
        // Help text wraps at the terminal width; without a terminal or COLUMNS it is fixed.
        .env_remove("COLUMNS")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join(".xdg"))
        .env("GIT_COMMITTER_NAME", "Test Committer")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .env("GIT_COMMITTER_DATE", "1700000000 +0000")
        .env("NO_COLOR", "1")
        .env("LC_ALL", "C");
    cmd
}

/// Runs `bport args…` in `dir` to completion.
pub fn run(dir: &Path, args: &[&str]) -> CommandOutput {
    let out = bport(dir).args(args).output().expect("spawn bport");
    CommandOutput {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
    }
}
