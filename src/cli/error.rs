//! The CLI's error: a kind that decides the exit code, a cause, and hints that tell the user what to do.
//!
//! Library errors stay typed (one thiserror enum per subsystem); `From` impls here attach hints for the cases a
//! user can fix. Exit codes are an API (DESIGN.md, "Exit codes").

use std::fmt;

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

    /// Adds a hint line.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    /// Prints the error, its causes and its hints to stderr in one place, so every command looks the same.
    pub fn render(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(out, "error: {}", self.error)?;
        for cause in self.error.chain().skip(1) {
            writeln!(out, "  caused by: {cause}")?;
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

impl From<std::io::Error> for CliError {
    fn from(error: std::io::Error) -> Self {
        CliError::new(Kind::Internal, error)
    }
}

/// Result type of every command.
pub type CliResult<T = ()> = Result<T, CliError>;
