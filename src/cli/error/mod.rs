//! The CLI's error: a kind that decides the exit code, a cause, and hints that tell the user what to do.
//!
//! Library errors stay typed (one thiserror enum per subsystem). This folder is the one place that turns them into
//! exit codes: every `From<…Error> for CliError` lives here and picks the [`Kind`] by variant, attaching hints for
//! the cases a user can fix, one file per side of the tool: `repo.rs` (backport, git, rerere), `perf.rs` (perf.data,
//! tracefs, record, lock, probe), `verify.rs`; this file holds `CliError` itself and the I/O rule all of them use.
//! Runs that end without an error but not in success have their status here too: [`stopped`] (a backport stopped
//! for the user), [`verdict`] (a failed verify check), [`guest_failed`]. Command files only use `?` /
//! `CliError::from` (and `CliError::user` for their own argument checks), adding a hint where the command knows
//! more (tests/it/architecture/ holds them to it). Exit codes are an API (ARCHITECTURE.md, "Invariants").
//!
//! The rule for files: a missing, bad or damaged input the user named is the user's (exit 2); a disk that is full,
//! read-only or failing, or a permission the process lacks, is the environment's (exit 4), never the user's.

use std::fmt;
use std::io::ErrorKind;
use std::process::ExitCode;

pub use repo::stopped;
pub use verify::{guest_failed, verdict};

/// What kind of failure this is; decides the exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Usage or bad input (exit 2).
    User,
    /// Stopped and waiting for the user, e.g. at a conflict (exit 1).
    Stopped,
    /// A check found a failure, e.g. `verify` (exit 3).
    CheckFailed,
    /// The environment lacks something needed: permissions, a repository, a tool (exit 4).
    Environment,
    /// A bug or an unexpected failure of the system (exit 2 would blame the user; use 70, EX_SOFTWARE).
    Internal,
}

impl Kind {
    /// The process exit code for this kind.
    pub fn exit_code(self) -> u8 {
        match self {
            Kind::Stopped => 1,
            Kind::User => 2,
            Kind::CheckFailed => 3,
            Kind::Environment => 4,
            Kind::Internal => 70,
        }
    }
}

impl From<Kind> for ExitCode {
    fn from(kind: Kind) -> ExitCode {
        ExitCode::from(kind.exit_code())
    }
}

/// An error on its way to the user.
#[derive(Debug)]
pub struct CliError {
    /// Decides the exit code.
    pub kind: Kind,
    /// What went wrong; its `source()` chain is printed too.
    pub error: anyhow::Error,
    /// What the user can do about it, one line each.
    pub hints: Vec<String>,
}

impl CliError {
    /// An error of the given kind.
    pub fn new(kind: Kind, error: impl Into<anyhow::Error>) -> Self {
        CliError {
            kind,
            error: error.into(),
            hints: Vec::new(),
        }
    }

    /// Bad usage or input (exit 2).
    pub fn user(message: impl fmt::Display) -> Self {
        Self::new(Kind::User, anyhow::anyhow!("{message}"))
    }

    /// The environment lacks something (exit 4).
    pub fn environment(message: impl fmt::Display) -> Self {
        Self::new(Kind::Environment, anyhow::anyhow!("{message}"))
    }

    /// A file the user named could not be opened, read or written: the user's (exit 2) when the path is wrong
    /// (missing, a directory), the environment's (exit 4) when the disk or a permission is at fault. `error` is the
    /// message shown (it names the path and says what failed), `io` the failure that decides the kind.
    pub fn file(io: &std::io::Error, message: impl fmt::Display) -> Self {
        Self::new(
            io_kind(io).unwrap_or(Kind::User),
            anyhow::anyhow!("{message}"),
        )
    }

    /// Like [`CliError::file`], with `context` (what was done to which path) above the failure itself.
    pub fn file_context(
        io: std::io::Error,
        context: impl fmt::Display + Send + Sync + 'static,
    ) -> Self {
        let kind = io_kind(&io).unwrap_or(Kind::User);
        Self::new(kind, anyhow::Error::new(io).context(context))
    }

    /// Adds a hint line.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    /// Whether this is only a closed stdout (`bport script | head`): normal use, not an error, so nothing is
    /// printed and the exit status is success.
    pub fn is_broken_pipe(&self) -> bool {
        self.error
            .chain()
            .filter_map(|e| e.downcast_ref::<std::io::Error>())
            .any(|e| e.kind() == ErrorKind::BrokenPipe)
    }

    /// The process's exit status for this error: its kind's code, or success for a closed stdout.
    pub fn exit_code(&self) -> ExitCode {
        if self.is_broken_pipe() {
            ExitCode::SUCCESS
        } else {
            self.kind.into()
        }
    }

    /// Prints the error, its causes and its hints to stderr in one place, so every command looks the same.
    pub fn render(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(out, "error: {}", in_words(self.error.as_ref()))?;
        for cause in self.error.chain().skip(1) {
            writeln!(out, "  caused by: {}", in_words(cause))?;
        }
        for hint in &self.hints {
            writeln!(out, "hint: {hint}")?;
        }
        Ok(())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

/// An error's own sentence. libgit2's display appends its internals (`; class=Repository (6); code=NotFound
/// (-3)`), which say nothing to a user: only its message is shown; the kind and hint already come from the class.
fn in_words(error: &(dyn std::error::Error + 'static)) -> String {
    match error.downcast_ref::<git2::Error>() {
        Some(git) => git.message().to_owned(),
        None => error.to_string(),
    }
}

/// Result type of every command.
pub type CliResult<T = ()> = Result<T, CliError>;

/// The failures of the machine rather than of a path: a full or read-only disk, a quota, a missing permission, a
/// failing device. `None` for the rest, whose kind depends on what was being done.
fn io_kind(error: &std::io::Error) -> Option<Kind> {
    match error.kind() {
        ErrorKind::PermissionDenied
        | ErrorKind::StorageFull
        | ErrorKind::ReadOnlyFilesystem
        | ErrorKind::QuotaExceeded
        | ErrorKind::FileTooLarge
        | ErrorKind::ResourceBusy
        | ErrorKind::ExecutableFileBusy
        | ErrorKind::OutOfMemory => Some(Kind::Environment),
        _ if error.raw_os_error() == Some(libc::EIO) => Some(Kind::Environment),
        _ => None,
    }
}

/// An I/O failure with no path the user named (writing stdout, a pipe): the environment's when the disk or a
/// permission is at fault, else unexpected.
impl From<std::io::Error> for CliError {
    fn from(error: std::io::Error) -> Self {
        CliError::new(io_kind(&error).unwrap_or(Kind::Internal), error)
    }
}

impl From<dialoguer::Error> for CliError {
    fn from(error: dialoguer::Error) -> Self {
        CliError::new(Kind::Internal, error)
    }
}

/// A closed stdout (`bport … | head -1`) ends the output, for every command: errors that carry a broken pipe end
/// in success ([`CliError::exit_code`]), and this hook covers code outside bport that panics on the failed write
/// instead of returning it (clap_complete's `expect`, `println!` in a dependency). Any other panic goes on to the
/// default hook, backtrace and all.
pub fn end_quietly_on_a_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if is_closed_stdout_panic(payload) {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// Whether a panic message is a failed write to a closed stdout. Only stdout's: a closed stderr must not turn a
/// stop or an error into success.
fn is_closed_stdout_panic(payload: &str) -> bool {
    (payload.contains("Broken pipe") || payload.contains("BrokenPipe"))
        && !payload.contains("stderr")
}

mod perf;
mod repo;
#[cfg(test)]
mod tests;
mod verify;
