//! The profiler's errors to exit codes: perf.data that cannot be read (`ReadError`, `ScriptError`), kernel
//! versions, tracefs (`trace`), `record`, `lock` and `probe`, with the hints that fix what the user or the machine
//! can fix.

use super::{io_kind, CliError, Kind};
use crate::perf::abi::ParseKernelVersionError;
use crate::perf::data::ReadError;
use crate::perf::script::session::ScriptError;
use crate::perf::tools::archive::ArchiveError;
use crate::perf::{lock, probe, record, trace};

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

/// A DSO name that would leave `~/.debug` is the recording's fault (exit 2); reading and writing follow
/// [`ScriptError`] and the I/O error.
impl From<ArchiveError> for CliError {
    fn from(error: ArchiveError) -> Self {
        match error {
            ArchiveError::Script(script) => script.into(),
            ArchiveError::Io(io) => io.into(),
            bad @ ArchiveError::BadName { .. } => CliError::new(Kind::User, bad),
        }
    }
}

impl From<ParseKernelVersionError> for CliError {
    fn from(error: ParseKernelVersionError) -> Self {
        CliError::new(Kind::User, error)
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
        | E::File(_)
        | E::Kallsyms { .. } => {
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
        let hints = probe_hints(match &e {
            E::NeedsDebugInfo { source, .. } => source,
            other => other,
        });
        let mut err = CliError::new(kind, e);
        err.hints = hints;
        err
    }
}

/// Where to look for a function's name: the binary's list, or for the kernel (its BTF, a vmlinux) the kernel's
/// symbols, since a kernel function is never probed with `-x`.
fn functions_hint(function: &str, path: &std::path::Path) -> String {
    let kernel_btf = path.starts_with("/sys/kernel/btf");
    let vmlinux = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("vmlinux"));
    if kernel_btf {
        format!(
            "look the name up in the kernel's symbols: `grep -w {function} /proc/kallsyms` (the compiler may have \
             renamed a static function, e.g. {function}.isra.0, or inlined it everywhere); with a vmlinux, \
             `bport probe -k VMLINUX -F` lists what can be probed"
        )
    } else if vmlinux {
        format!(
            "list the kernel's functions with `bport probe -k {} -F`",
            path.display()
        )
    } else {
        format!(
            "list the functions with `bport probe -x {} -F`",
            path.display()
        )
    }
}

fn probe_hints(e: &probe::Error) -> Vec<String> {
    use probe::Error as E;
    match e {
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
        E::FunctionNotFound { function, path } | E::SymbolNotFound { function, path } => {
            vec![functions_hint(function, path)]
        }
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
    }
}
