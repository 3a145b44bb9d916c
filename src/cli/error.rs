//! The CLI's error: a kind that decides the exit code, a cause, and hints that tell the user what to do.
//!
//! Library errors stay typed (one thiserror enum per subsystem). This file is the one place that turns them into
//! exit codes: every `From<…Error> for CliError` lives here and picks the [`Kind`] by variant, attaching hints for
//! the cases a user can fix. Command files only use `?` / `CliError::from` (and `CliError::user` for their own
//! argument checks), adding a hint where the command knows more. Exit codes are an API (DESIGN.md, "Exit codes").
//!
//! The rule for files: a missing, bad or damaged input the user named is the user's (exit 2); a disk that is full,
//! read-only or failing, or a permission the process lacks, is the environment's (exit 4), never the user's.

use crate::backport;
use crate::git;
use crate::perf::abi::ParseKernelVersionError;
use crate::perf::data::ReadError;
use crate::perf::script::session::ScriptError;
use crate::perf::{lock, probe, record, trace};
use crate::rerere;
use crate::verify::{self, qemu};
use std::fmt;
use std::io::ErrorKind;

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

/// A perf.data file that is missing, not perf.data, cut short or damaged is the user's input (exit 2); one the
/// disk or a permission keeps from being read is not.
impl From<ReadError> for CliError {
    fn from(error: ReadError) -> Self {
        let kind = match &error {
            ReadError::Io { source, .. } => io_kind(source).unwrap_or(Kind::User),
            _ => Kind::User,
        };
        CliError::new(kind, error)
    }
}

/// The reading side follows [`ReadError`]; a failure to write the output (a full disk, a closed pipe) is never
/// the user's.
impl From<ScriptError> for CliError {
    fn from(error: ScriptError) -> Self {
        match error {
            ScriptError::Read(read) => read.into(),
            ScriptError::Io(io) => io.into(),
        }
    }
}

impl From<ParseKernelVersionError> for CliError {
    fn from(error: ParseKernelVersionError) -> Self {
        CliError::new(Kind::User, error)
    }
}

impl From<dialoguer::Error> for CliError {
    fn from(error: dialoguer::Error) -> Self {
        CliError::new(Kind::Internal, error)
    }
}

fn trace_kind(error: &trace::Error) -> Kind {
    match error {
        trace::Error::Mount { .. } => Kind::Environment,
        trace::Error::Io { source, .. } => io_kind(source).unwrap_or(Kind::Environment),
        _ => Kind::User,
    }
}

impl From<trace::Error> for CliError {
    fn from(error: trace::Error) -> Self {
        CliError::new(trace_kind(&error), error)
    }
}

impl From<backport::Error> for CliError {
    fn from(error: backport::Error) -> Self {
        use backport::Error as E;
        let (kind, hint) = match &error {
            E::MalformedLine { .. } | E::BadCommit { .. } | E::SubjectMismatch { .. } => {
                (Kind::User, Some("fix that line of the patch list (`bport list <range>` writes a valid one); nothing was applied"))
            }
            E::BadRange { .. } => (Kind::User, Some("give a range such as v6.1..perf-fixes")),
            E::Git(inner) => return inner_git(error_kind_git(inner), error),
            E::Locked { .. } => (Kind::User, Some("wait for the other run to finish")),
            E::RunInProgress { .. } => (Kind::User, Some("finish it first: bport apply --continue | --skip | --abort (bport status shows it)")),
            E::NoRun => (Kind::User, Some("start one with: bport apply <patchlist>")),
            E::ConflictsRemain { .. } => (Kind::User, Some("edit the files, `git add` them, then run bport apply --continue")),
            E::UnstagedChanges { .. } => (Kind::User, Some("`git add` the resolution (or `git checkout -- <path>` to drop a change), then --continue")),
            E::BranchSwitched { .. } => (Kind::User, Some("check that branch out again (git switch <branch>), then resume")),
            E::HeadMoved { .. } => (Kind::User, Some("check out the commit bport left, or run bport apply --abort")),
            E::StateVersion { .. } => (Kind::Environment, Some("finish the run with the newer bport that started it")),
            E::StateCorrupt { .. } => (Kind::Environment, Some("inspect .git/bport/state.json; `rm -r .git/bport` forgets the run")),
            E::BareRepository { .. } => (Kind::User, Some("run bport apply in a worktree")),
            E::UnbornHead => (Kind::User, None),
            // A file bport must read or write: its path is in the message; the disk, not bport, is at fault.
            E::Io { .. } => (Kind::Environment, Some("check that path's permissions and free space, then run the command again")),
            E::Rerere(crate::rerere::Error::Git { source, .. }) => {
                let (kind, hint) = repository_problem(source);
                return inner_git((kind, hint), error);
            }
            E::Rerere(crate::rerere::Error::Io { .. }) => (Kind::Environment, None),
            _ => (Kind::Internal, None),
        };
        let mut e = CliError::new(kind, error);
        if let Some(h) = hint {
            e = e.hint(h);
        }
        e
    }
}

fn error_kind_git(e: &git::Error) -> (Kind, Option<String>) {
    match e {
        git::Error::NotARepository { .. } => (Kind::Environment, Some("run bport inside a git repository".into())),
        git::Error::Dirty { .. } => (Kind::User, Some("commit or stash your changes (git stash), then run bport apply again".into())),
        git::Error::OperationInProgress { operation, .. } => (
            Kind::User,
            Some(format!("finish it with `git {operation} --continue` or drop it with `git {operation} --abort` first")),
        ),
        git::Error::NoIdentity { .. } => (Kind::Environment, Some("git config user.name 'Your Name'; git config user.email you@example.com".into())),
        git::Error::Io { .. } => (Kind::Environment, Some("check the free space and write permission of the repository's .git directory".into())),
        git::Error::UntrackedInTheWay { .. } => (
            Kind::User,
            Some("move or remove them (nothing was overwritten; the picks so far are saved), then run `bport apply --continue`; `bport apply --abort` gives up the run".into()),
        ),
        git::Error::Git { source, .. } => repository_problem(source),
    }
}

/// Classifies a libgit2 failure: a missing or damaged object, an unreadable ref, index or file is a problem of
/// the repository (exit 4) that the message names (issue 13: these were "internal errors", exit 70); anything
/// else is bport's.
fn repository_problem(source: &git2::Error) -> (Kind, Option<String>) {
    use git2::ErrorClass as C;
    match source.class() {
        C::Odb | C::Object | C::Zlib | C::Tree => (
            Kind::Environment,
            Some("the repository lacks or cannot read that object (a shallow or partial clone, or damage): \
                  `git fsck` names what is wrong; fetch the missing history (git fetch --unshallow) or repair it"
                .into()),
        ),
        C::Reference => (
            Kind::Environment,
            Some("a ref cannot be read: `git fsck` names it; fix or delete that file under .git/refs \
                  (or its line in .git/packed-refs)"
                .into()),
        ),
        C::Index => (
            Kind::Environment,
            Some("the index cannot be read: `git status` says why; `git reset` rebuilds it from HEAD".into()),
        ),
        C::Os | C::Filesystem => (
            Kind::Environment,
            Some("check the repository's permissions and free space".into()),
        ),
        _ if source.code() == git2::ErrorCode::NotFound => (
            Kind::Environment,
            Some("the repository lacks an object or ref bport needs: `git fsck` names it".into()),
        ),
        _ => (Kind::Internal, None),
    }
}

fn inner_git((kind, hint): (Kind, Option<String>), error: impl Into<anyhow::Error>) -> CliError {
    let mut e = CliError::new(kind, error);
    if let Some(h) = hint {
        e = e.hint(h);
    }
    e
}

impl From<git::Error> for CliError {
    fn from(error: git::Error) -> Self {
        inner_git(error_kind_git(&error), error)
    }
}

impl From<rerere::Error> for CliError {
    fn from(error: rerere::Error) -> Self {
        let kind = match &error {
            rerere::Error::NotConflicted { .. }
            | rerere::Error::NoResolution { .. }
            | rerere::Error::BadRevision { .. } => Kind::User,
            rerere::Error::BareRepository { .. } => Kind::Environment,
            // Files under .git that bport could not read or write, or that are damaged: the repository's
            // problem, with the path in the message (as `apply` classes the same errors).
            rerere::Error::Io { source, .. } => io_kind(source).unwrap_or(Kind::Environment),
            rerere::Error::CorruptMergeRr { .. } | rerere::Error::BadCacheEntry { .. } => {
                Kind::Environment
            }
            rerere::Error::Git { source, .. } => {
                return inner_git(repository_problem(source), error);
            }
        };
        let hint = match &error {
            rerere::Error::CorruptMergeRr { .. } => Some("`git rerere clear` also removes it"),
            rerere::Error::NotConflicted { .. } => {
                Some("`git checkout -m PATH` recreates the conflict of a staged path")
            }
            _ => None,
        };
        let err = CliError::new(kind, error);
        match hint {
            Some(h) => err.hint(h),
            None => err,
        }
    }
}

impl From<verify::Error> for CliError {
    fn from(e: verify::Error) -> Self {
        match e {
        verify::Error::BadVersion { .. } | verify::Error::Targets(_) => CliError::new(Kind::User, e),
        verify::Error::Qemu(qemu::Error::NoQemu(_)) => CliError::new(Kind::Environment, e)
            .hint("install qemu: apt-get install qemu-system-x86"),
        verify::Error::Qemu(qemu::Error::NoImage(_)) => CliError::new(Kind::User, e).hint(
            "Debian kernels: apt-get download linux-image-6.1.0-NN-cloud-amd64-unsigned, then dpkg -x (see .ci/fetch-kernels)",
        ),
        verify::Error::Record(crate::perf::record::Error::PermissionDenied { .. }) => {
            CliError::new(Kind::Environment, e).hint(
                "allow profiling: sudo sysctl -w kernel.perf_event_paranoid=1, or run bport verify as root",
            )
        }
        verify::Error::NoRunningVersion => CliError::new(Kind::Environment, e)
            .hint("give the target kernel version: bport verify --kernel 4.1"),
        _ => CliError::new(Kind::Environment, e),
    }
    }
}

/// A recording error: its exit code and the hints that fix it.
impl From<record::Error> for CliError {
    fn from(err: record::Error) -> Self {
        use record::Error as E;
        let (kind, hints): (Kind, Vec<String>) = match &err {
        E::PermissionDenied { needed, .. } => {
            let mut hints = vec![format!("allow it with: sudo sysctl -w kernel.perf_event_paranoid={needed}")];
            hints.push(
                "or run as root, or grant the capability: sudo setcap cap_perfmon,cap_sys_ptrace=ep \
                 $(command -v bport) (Linux 5.8+; CAP_SYS_ADMIN before)"
                    .into(),
            );
            (Kind::Environment, hints)
        }
        E::LbrUnavailable { .. } => (
            Kind::Environment,
            vec!["use --call-graph dwarf (any CPU, Linux 3.7+) or -g on code built with frame pointers".into()],
        ),
        E::ModeUnsupported { .. } => (
            Kind::Environment,
            vec!["use -g (frame pointers) for that kernel; build the program with -fno-omit-frame-pointer".into()],
        ),
        E::EventUnavailable { .. } => (
            Kind::Environment,
            vec!["sample on a timer instead: -e cpu-clock".into()],
        ),
        E::NoSuchTask { .. } | E::InvalidConfig(_) => (Kind::User, vec![]),
        E::Trace(inner) => (trace_kind(inner), vec![]),
        E::Exec { .. } => (Kind::User, vec!["check the command name and that it is executable".into()]),
        E::Mmap { .. } => (
            Kind::Environment,
            vec!["use a smaller -m, or raise kernel.perf_event_mlock_kb".into()],
        ),
        E::Output { .. } | E::Write { .. } | E::Open { .. } => (Kind::Environment, vec![]),
        _ => (Kind::Internal, vec![]),
    };
        let mut cli = CliError::new(kind, err);
        cli.hints = hints;
        cli
    }
}

/// A lock error: its exit code and hints.
impl From<lock::Error> for CliError {
    fn from(err: lock::Error) -> Self {
        use lock::Error as E;
        match &err {
        E::KernelTooOld { .. } => CliError::new(Kind::Environment, err).hint(
            "run on Linux 5.19 or later; on older kernels `perf lock record` needs CONFIG_LOCKDEP/CONFIG_LOCK_STAT \
             (lock:lock_acquire events)",
        ),
        E::BpfDenied { .. } => CliError::new(Kind::Environment, err)
            .hint("run as root, or grant the capabilities: sudo setcap cap_bpf,cap_perfmon=ep $(command -v bport)")
            .hint("check that BPF is enabled: sysctl kernel.unprivileged_bpf_disabled, and no lockdown mode"),
        E::Bpf(_) => CliError::new(Kind::Environment, err).hint(
            "the kernel refused bport's BPF programs; please report this with the verifier log above and `uname -r`",
        ),
        E::UnknownType { .. }
        | E::BadLock { .. }
        | E::NoSuchTask { .. }
        | E::InvalidOptions(_)
        | E::NoLockEvents
        | E::File(_) => {
            CliError::new(Kind::User, err)
        }
        E::Exec { .. } => CliError::new(Kind::User, err).hint("check the command name and that it is executable"),
        E::System { .. } => CliError::new(Kind::Internal, err),
    }
    }
}

impl From<probe::Error> for CliError {
    fn from(e: probe::Error) -> Self {
        use probe::Error as E;
        let kind = match &e {
            E::TracefsUnavailable { .. } | E::NoProbeFile { .. } | E::Tracefs { .. } => {
                Kind::Environment
            }
            // A binary that cannot be read, or a probe definition tracefs refuses, is the user's unless the
            // disk or a permission (EACCES on the control file) is at fault.
            E::Read { source, .. } | E::Write { source, .. } => {
                io_kind(source).unwrap_or(Kind::User)
            }
            _ => Kind::User,
        };
        let hints: Vec<String> = match &e {
        E::NoDebugInfo {
            path,
            stripped,
            build_id,
        } => {
            let mut h = Vec::new();
            if *stripped {
                h.push("the binary was stripped; probe the unstripped build, or install its debug file".to_string());
            }
            h.push(
                "install the debug symbols: the -dbgsym package on Debian/Ubuntu (apt install PACKAGE-dbgsym), \
                 -debuginfo on Fedora/RHEL (dnf debuginfo-install PACKAGE), or rebuild with -g"
                    .to_string(),
            );
            if let Some(id) = build_id {
                h.push(format!(
                    "bport looked for /usr/lib/debug/.build-id/{}/{}.debug (build-id of {})",
                    &id[..2],
                    &id[2..],
                    path.display()
                ));
            }
            h
        }
        E::FunctionNotFound { .. } => vec!["list the functions with `bport probe -x BINARY -F`".into()],
        E::NoCode { .. } => vec!["show the lines that can be probed with `bport probe -x BINARY -L FUNC`".into()],
        E::VariableNotFound { .. } => vec!["show the variables there with `bport probe -x BINARY -V POINT`".into()],
        E::EventExists(_) => vec![
            "delete it with `bport probe -d GROUP:EVENT`, or name the new one with `NAME=POINT`".into(),
        ],
        E::TracefsUnavailable { .. } => {
            vec!["mount it (mount -t tracefs nodev /sys/kernel/tracing) or run as root".into()]
        }
        E::NoProbeFile { .. } => vec![
            "the kernel needs CONFIG_UPROBE_EVENTS / CONFIG_KPROBE_EVENTS; `bport verify --kernel-image` runs a kernel that has them in a VM"
                .into(),
        ],
        _ => Vec::new(),
    };
        let mut err = CliError::new(kind, e);
        err.hints = hints;
        err
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::path::PathBuf;

    fn read_io(kind: io::ErrorKind) -> ReadError {
        ReadError::Io {
            path: PathBuf::from("perf.data"),
            source: io::Error::from(kind),
        }
    }

    #[test]
    fn a_failed_write_of_the_output_is_the_environments_not_the_users() {
        for raw in [
            libc::ENOSPC,
            libc::EACCES,
            libc::EPERM,
            libc::EROFS,
            libc::EDQUOT,
            libc::EIO,
        ] {
            let io = io::Error::from_raw_os_error(raw);
            let err = CliError::from(ScriptError::Io(io));
            assert_eq!(err.kind.exit_code(), 4, "errno {raw}: {}", err.error);
        }
        let err = CliError::from(io::Error::from(io::ErrorKind::StorageFull));
        assert_eq!(err.kind, Kind::Environment);
    }

    #[test]
    fn an_unexpected_io_failure_is_internal() {
        let err = CliError::from(ScriptError::Io(io::Error::other("inferno failed")));
        assert_eq!(err.kind.exit_code(), 70);
    }

    #[test]
    fn a_perf_data_file_the_disk_or_a_permission_keeps_from_being_read_is_exit_4() {
        for kind in [io::ErrorKind::PermissionDenied, io::ErrorKind::StorageFull] {
            assert_eq!(
                CliError::from(read_io(kind)).kind.exit_code(),
                4,
                "{kind:?}"
            );
            let through_script = CliError::from(ScriptError::Read(read_io(kind)));
            assert_eq!(
                through_script.kind.exit_code(),
                4,
                "{kind:?} through ScriptError"
            );
        }
        let eio = ReadError::Io {
            path: PathBuf::from("perf.data"),
            source: io::Error::from_raw_os_error(libc::EIO),
        };
        assert_eq!(CliError::from(eio).kind, Kind::Environment);
    }

    #[test]
    fn a_missing_or_damaged_perf_data_file_is_the_users() {
        let missing = CliError::from(read_io(io::ErrorKind::NotFound));
        assert_eq!(missing.kind.exit_code(), 2);
        let damaged = [
            ReadError::Empty,
            ReadError::BadMagic {
                magic: *b"GIF89a\0\0",
            },
            ReadError::Truncated {
                what: "attr",
                offset: 104,
                needed: 136,
                available: 40,
            },
            ReadError::RecordsLost {
                offset: 4096,
                lost: 100,
                data_len: 8192,
                cause: Box::new(ReadError::Invalid {
                    what: "record size",
                    offset: 4096,
                    reason: "below the 8-byte header".into(),
                }),
            },
        ];
        for e in damaged {
            let shown = e.to_string();
            let err = CliError::from(ScriptError::Read(e));
            assert_eq!(err.kind.exit_code(), 2, "{shown}");
            assert_eq!(err.error.to_string(), shown, "the message is the library's");
        }
    }

    #[test]
    fn a_path_the_user_named_is_theirs_when_wrong_and_the_environments_when_the_disk_fails() {
        let missing = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(CliError::file(&missing, "cannot create x").kind, Kind::User);
        let full = io::Error::from_raw_os_error(libc::ENOSPC);
        let err = CliError::file_context(full, "writing list.txt");
        assert_eq!(err.kind, Kind::Environment);
        let mut text = Vec::new();
        err.render(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.starts_with("error: writing list.txt\n  caused by: No space left on device"),
            "{text}"
        );
    }

    #[test]
    fn a_repository_file_bport_cannot_write_is_not_an_internal_error() {
        let err = CliError::from(rerere::Error::Io {
            path: PathBuf::from(".git/MERGE_RR"),
            source: io::Error::from_raw_os_error(libc::ENOSPC),
        });
        assert_eq!(err.kind.exit_code(), 4);
    }
}
