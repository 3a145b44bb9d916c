//! `bport verify`: per backport target, prove that record and script deliver complete callchains under that
//! kernel's perf ABI, and that the target branch carries the required perf fixes.
//!
//! A [`Request`] (kernel version, targets file, optional kernel image) becomes a [`Report`]; nothing here prints.
//! The report has one [`Cell`] per built-in workload × callchain mode, a readability verdict per recorded file,
//! and the branch check when the target names a branch. With a kernel image the matrix runs inside a qemu virtual
//! machine ([`qemu`]), and the guest's report comes back over the serial console.
//!
//! Owns: the matrix ([`matrix`]: mode support from the ABI table, record under the cap, script), the verdicts
//! ([`checks`]), readability ([`readability`] against the era, [`perf_check`] against Linux perf), the branch
//! check ([`branch`]), the targets file ([`targets`]), the VM backend ([`qemu`], [`initramfs`]). Does not own:
//! recording, unwinding, perf.data (those are `perf`'s), or already-applied detection (the backport matcher's,
//! used read-only).

pub(crate) mod branch;
pub(crate) mod checks;
pub(crate) mod initramfs;
pub(crate) mod lock_cell;
pub mod matrix;
pub(crate) mod perf_check;
pub mod probe_check;
pub(crate) mod qemu;
pub(crate) mod readability;
pub(crate) mod targets;
/// The built-in workloads live with the profiler (its own tests record them); verify runs them.
pub use crate::perf::workloads;

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A callchain mode, named as `perf record --call-graph` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The kernel walks frame pointers (`PERF_SAMPLE_CALLCHAIN`).
    Fp,
    /// Registers and a stack snapshot (`REGS_USER` + `STACK_USER`), unwound with DWARF CFI afterwards.
    Dwarf,
    /// The LBR call stack (`BRANCH_STACK` with `PERF_SAMPLE_BRANCH_CALL_STACK`).
    Lbr,
}

impl Mode {
    /// Every mode, in report order.
    pub const ALL: [Mode; 3] = [Mode::Fp, Mode::Dwarf, Mode::Lbr];

    /// The name `--call-graph` takes.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Fp => "fp",
            Mode::Dwarf => "dwarf",
            Mode::Lbr => "lbr",
        }
    }
}

/// One frame of a scripted sample, innermost first in [`Sample::frames`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// The address as `perf script` prints it (an AVMA).
    pub address: u64,
    /// The function, when it was resolved.
    pub symbol: Option<String>,
    /// The object file (`[unknown]` when unresolved).
    pub dso: String,
}

/// A scripted sample of the workload: its user-space chain, innermost frame first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    /// Sample time in nanoseconds (perf's clock), to find it in `perf script` output.
    pub time: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Whether the sample was taken in user mode (then a working unwinder yields at least the sampled frame).
    #[serde(default = "yes")]
    pub in_user: bool,
    /// User frames, innermost first; kernel frames are dropped (the chain under test is the workload's own).
    pub frames: Vec<Frame>,
}

fn yes() -> bool {
    true
}

/// What a cell's recording showed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainStats {
    /// Samples of the workload.
    pub samples: usize,
    /// Samples whose innermost user frame is the hot leaf (`chain_c`), plus user-mode samples without any user
    /// frame (their leaf is unknown, but they certainly lack the chain: a broken unwinder must not pass by
    /// hiding its samples).
    pub leaf_samples: usize,
    /// Leaf samples with the full chain `chain_c ← chain_b ← chain_a ← main`.
    pub full_chains: usize,
    /// The first leaf sample without the full chain, shown when the cell fails.
    pub first_bad: Option<Sample>,
}

/// A cell's verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum CellStatus {
    /// The full chain in at least [`checks::PASS_PERCENT`]% of leaf samples.
    Pass {
        /// The counts.
        stats: ChainStats,
    },
    /// Fewer full chains than required where the mode should work.
    Fail {
        /// The counts and the first bad sample.
        stats: ChainStats,
    },
    /// The mode cannot work on this build (fp without frame pointers), and indeed it did not.
    ExpectedFail {
        /// The counts.
        stats: ChainStats,
    },
    /// The mode should not have worked on this build but did: the workload or the check is not what we think.
    Surprise {
        /// The counts.
        stats: ChainStats,
    },
    /// The target kernel (or this machine) does not offer the mode.
    Unsupported {
        /// Why, e.g. "kernel 3.6 lacks PERF_SAMPLE_REGS_USER/STACK_USER (3.7)" or "no LBR hardware".
        reason: String,
    },
    /// Recording or scripting failed outright.
    Error {
        /// What failed.
        message: String,
    },
}

impl CellStatus {
    /// The short word shown in the table.
    pub fn word(&self) -> &'static str {
        match self {
            CellStatus::Pass { .. } => "pass",
            CellStatus::Fail { .. } => "fail",
            CellStatus::ExpectedFail { .. } => "expected-fail",
            CellStatus::Surprise { .. } => "surprise",
            CellStatus::Unsupported { .. } => "unsupported",
            CellStatus::Error { .. } => "error",
        }
    }

    /// Whether this cell lets the target pass: a pass, an expected failure, or a mode the target does not offer.
    pub fn is_ok(&self) -> bool {
        matches!(
            self,
            CellStatus::Pass { .. }
                | CellStatus::ExpectedFail { .. }
                | CellStatus::Unsupported { .. }
        )
    }
}

/// One workload × mode result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// The workload's name (`chain-fp`, `chain-nofp`).
    pub workload: String,
    /// The callchain mode.
    pub mode: Mode,
    /// The verdict.
    #[serde(flatten)]
    pub status: CellStatus,
    /// Whether the file recorded for this cell is readable by a perf of the target's era.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readability: Option<Readability>,
}

/// Whether a recorded file is readable by a perf of the target's era, and by the installed Linux perf.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readability {
    /// Record types, header features or attr bits the target era's perf does not know (empty = fine).
    pub era_problems: Vec<String>,
    /// What the installed Linux perf made of the file.
    pub perf: PerfCheck,
}

impl Readability {
    /// Whether nothing is wrong.
    pub fn is_ok(&self) -> bool {
        self.era_problems.is_empty() && !matches!(self.perf, PerfCheck::Mismatch { .. })
    }
}

/// The Linux perf oracle's verdict on a recorded file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum PerfCheck {
    /// `perf script` read the file and printed the same chain as bport for every sample compared.
    Same {
        /// Samples compared.
        samples: usize,
    },
    /// perf failed to read the file, or showed a different chain.
    Mismatch {
        /// The first difference, or perf's error.
        detail: String,
    },
    /// No Linux perf here (e.g. inside the verify VM), so only the era check ran.
    NotInstalled,
}

/// Where the matrix ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "on", rename_all = "kebab-case")]
pub enum Environment {
    /// On this machine, with the ABI capped to the target version.
    Host {
        /// This machine's kernel release.
        release: String,
    },
    /// Inside a qemu VM booted from a kernel image.
    Vm {
        /// The kernel image.
        image: PathBuf,
        /// The release the guest kernel reported (empty if it never got that far).
        release: String,
        /// `kvm` or `tcg`.
        accel: String,
    },
}

/// The branch check's result for one required patch list entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchEntry {
    /// The list file.
    pub list: PathBuf,
    /// The sha as listed.
    pub sha: String,
    /// The subject as listed.
    pub subject: String,
    /// By which rule it is present (`trailer`, `subject`, `patch-id`), or `None` when missing.
    pub present_by: Option<String>,
}

/// The branch check: every required commit present on the target branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchReport {
    /// The kernel tree.
    pub repo: PathBuf,
    /// The target branch.
    pub branch: String,
    /// Every entry of every required list.
    pub entries: Vec<BranchEntry>,
    /// For each list with a missing entry, the command that adds the missing fixes.
    pub apply_commands: Vec<String>,
}

impl BranchReport {
    /// The entries that are missing.
    pub fn missing(&self) -> impl Iterator<Item = &BranchEntry> {
        self.entries.iter().filter(|e| e.present_by.is_none())
    }
}

/// Why the branch check did not run although the target names a branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum BranchCheck {
    /// It ran.
    Checked(BranchReport),
    /// The target names a branch, but bport does not run inside a kernel tree that has it.
    Skipped {
        /// Why (e.g. "not inside a git repository").
        reason: String,
    },
}

/// A VM that did not deliver a report: this is not a failed check but a failed boot, reported as such.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootFailure {
    /// What went wrong ("no report within 120 s", "qemu exited with status 1", ...).
    pub reason: String,
    /// The last lines of the serial console, to see how far the kernel got.
    pub console_tail: Vec<String>,
}

/// What the target file says about the verified kernel, if it is a known target.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetRef {
    /// The targets file.
    pub file: PathBuf,
    /// The target's line in it.
    pub line: usize,
}

/// The outcome of `verify` for one kernel version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The kernel version whose ABI was verified (as given, or the running kernel's release).
    pub kernel: String,
    /// The matching entry of the targets file, when there is one.
    pub target: Option<TargetRef>,
    /// Where the matrix ran.
    pub environment: Environment,
    /// Set when the VM did not boot or report; then `cells` is empty.
    pub boot_failure: Option<BootFailure>,
    /// Workload × mode cells, in a fixed order (workload, then fp, dwarf, lbr).
    pub cells: Vec<Cell>,
    /// The branch check, when the target names a branch.
    pub branch: Option<BranchCheck>,
    /// The lock-contention cell (absent in reports of bports before it existed).
    #[serde(default)]
    pub lock: Option<lock_cell::LockCell>,
    /// The dynamic-probe cell: a BTF-argument kprobe on the verified kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<probe_check::ProbeCheck>,
}

impl Report {
    /// Whether every required check passed: each cell ok, each recorded file readable, no missing fix, a boot.
    pub fn passed(&self) -> bool {
        self.boot_failure.is_none()
            && !self.cells.is_empty()
            && self
                .cells
                .iter()
                .all(|c| c.status.is_ok() && c.readability.as_ref().is_none_or(Readability::is_ok))
            && match &self.branch {
                Some(BranchCheck::Checked(b)) => b.missing().next().is_none(),
                _ => true,
            }
            && self.lock.as_ref().is_none_or(lock_cell::LockCell::is_ok)
            && self
                .probe
                .as_ref()
                .is_none_or(probe_check::ProbeCheck::is_ok)
    }
}

/// What to verify.
#[derive(Clone, Debug)]
pub struct Request {
    /// The target kernel version; `None` verifies the running kernel (inside the VM: the guest's).
    pub kernel: Option<String>,
    /// The targets file; `None` uses the one built into the binary (a version not in the file is verified by
    /// version alone).
    pub targets: Option<PathBuf>,
    /// Boot this kernel image in qemu and run the matrix inside.
    pub kernel_image: Option<PathBuf>,
    /// Where to look for the kernel tree of the branch check (usually the current directory).
    pub repo_dir: PathBuf,
    /// The bport executable to put into the VM (usually the running one).
    pub bport_exe: PathBuf,
    /// How to accelerate the VM.
    pub accel: qemu::Accel,
    /// Upper bound of one VM boot, in seconds.
    pub vm_timeout_secs: u64,
    /// How long each workload runs, in milliseconds.
    pub workload_ms: u32,
    /// Where workloads and perf.data files go.
    pub workdir: PathBuf,
}

/// Why `verify` could not produce a report at all (a failing check is a [`Report`], not an error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The kernel version does not parse.
    #[error("{text:?} is not a kernel version like \"4.1\", \"4.1.15\" or \"5.14.0-331.el9\"")]
    BadVersion {
        /// What was given.
        text: String,
    },
    /// The running kernel's version could not be read from /proc/sys/kernel/osrelease.
    #[error("cannot read the running kernel's version from /proc/sys/kernel/osrelease")]
    NoRunningVersion,
    /// The targets file is wrong.
    #[error(transparent)]
    Targets(#[from] targets::Error),
    /// The VM could not be started.
    #[error(transparent)]
    Qemu(#[from] qemu::Error),
    /// The guest's report did not parse.
    #[error("the guest's report is not valid: {message}")]
    GuestReport {
        /// The parser's message.
        message: String,
    },
    /// Recording is impossible on this machine (perf_event_open denied).
    #[error("cannot record the workloads")]
    Record(#[from] crate::perf::record::Error),
    /// The branch check could not read a required list or the repository.
    #[error(transparent)]
    Branch(#[from] branch::Error),
    /// The work directory could not be created.
    #[error("cannot create the work directory {path}")]
    Workdir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

fn parse_version(text: &str) -> Result<crate::perf::abi::KernelVersion, Error> {
    text.trim().parse().map_err(|_| Error::BadVersion {
        text: text.to_owned(),
    })
}

/// The running kernel's release (`uname -r`).
pub fn running_release() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_owned())
}

/// Runs the verification the request asks for: the matrix (here or in a VM), then the branch check.
pub fn run(request: &Request) -> Result<Report, Error> {
    let targets = load_targets(request)?;
    if let Some(image) = &request.kernel_image {
        let mut options = qemu::BootOptions::new(image.clone(), request.bport_exe.clone());
        options.accel = request.accel;
        options.timeout = std::time::Duration::from_secs(request.vm_timeout_secs);
        options.guest_args = vec!["--duration-ms".into(), request.workload_ms.to_string()];
        if let Some(k) = &request.kernel {
            parse_version(k)?;
            options.guest_args.extend(["--kernel".into(), k.clone()]);
        }
        let boot = qemu::boot(&options)?;
        let mut report = match &boot.report {
            Some(text) => {
                let mut guest: Report =
                    serde_json::from_str(text).map_err(|e| Error::GuestReport {
                        message: e.to_string(),
                    })?;
                if let Environment::Host { release } = &guest.environment {
                    guest.environment = Environment::Vm {
                        image: image.clone(),
                        release: release.clone(),
                        accel: boot.accel.name().to_owned(),
                    };
                }
                guest
            }
            None => Report {
                kernel: request.kernel.clone().unwrap_or_default(),
                target: None,
                environment: Environment::Vm {
                    image: image.clone(),
                    release: String::new(),
                    accel: boot.accel.name().to_owned(),
                },
                boot_failure: Some(BootFailure {
                    reason: boot.failure.clone().unwrap_or_default(),
                    console_tail: qemu::console_tail(&boot.console, 15),
                }),
                cells: Vec::new(),
                branch: None,
                lock: None,
                probe: None,
            },
        };
        attach_target(&mut report, targets.as_ref(), request)?;
        return Ok(report);
    }
    let release = running_release().ok_or(Error::NoRunningVersion)?;
    let kernel = request.kernel.clone().unwrap_or_else(|| release.clone());
    let version = parse_version(&kernel)?;
    std::fs::create_dir_all(&request.workdir).map_err(|source| Error::Workdir {
        path: request.workdir.clone(),
        source,
    })?;
    let lock = lock_cell::run(&version, request.workload_ms);
    let options = matrix::MatrixOptions {
        version,
        workload_ms: request.workload_ms,
        workdir: request.workdir.clone(),
        perf: find_perf(),
    };
    let cells = matrix::run(&options, matrix::Hardware::detect())?;
    let probe = Some(probe_check::run(&request.workdir));
    let mut report = Report {
        kernel,
        target: None,
        environment: Environment::Host { release },
        boot_failure: None,
        cells,
        branch: None,
        lock: Some(lock),
        probe,
    };
    attach_target(&mut report, targets.as_ref(), request)?;
    Ok(report)
}

/// Linux perf, when installed (the readability oracle).
pub fn find_perf() -> Option<PathBuf> {
    ["/usr/bin/perf", "/usr/local/bin/perf"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

fn load_targets(request: &Request) -> Result<Option<targets::Targets>, Error> {
    match &request.targets {
        Some(path) => Ok(Some(targets::Targets::load(path)?)),
        None => Ok(Some(targets::Targets::built_in()?)),
    }
}

/// Names the matching target and runs its branch check.
fn attach_target(
    report: &mut Report,
    targets: Option<&targets::Targets>,
    request: &Request,
) -> Result<(), Error> {
    let Some(targets) = targets else {
        return Ok(());
    };
    let Some(target) = find_target(targets, &report.kernel) else {
        return Ok(());
    };
    report.target = Some(TargetRef {
        file: targets.path.clone(),
        line: target.line,
    });
    if let Some(branch) = &target.branch {
        report.branch = Some(branch::check(&request.repo_dir, branch, &target.lists)?);
    }
    Ok(())
}

/// The target for `kernel`: the exact string, else the same `MAJOR.MINOR` (a running `6.1.0-56-cloud-amd64`
/// is the 6.1 target).
pub fn find_target<'t>(targets: &'t targets::Targets, kernel: &str) -> Option<&'t targets::Target> {
    targets.find(kernel).or_else(|| {
        let v = parse_version(kernel).ok()?;
        targets.targets.iter().find(|t| {
            parse_version(&t.kernel)
                .is_ok_and(|tv| tv.major == v.major && tv.minor == v.minor && tv.patch.is_none())
        })
    })
}

/// The guest side of `--kernel-image`: the matrix on the running (guest) kernel, capped to `kernel` if given.
pub fn run_guest(kernel: Option<String>, workload_ms: u32) -> Result<Report, Error> {
    let request = Request {
        kernel,
        targets: None,
        kernel_image: None,
        repo_dir: PathBuf::from("/nonexistent"),
        bport_exe: PathBuf::new(),
        accel: qemu::Accel::Tcg,
        vm_timeout_secs: 0,
        workload_ms,
        workdir: PathBuf::from("/tmp/bport-verify"),
    };
    run(&request)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats() -> ChainStats {
        ChainStats {
            samples: 10,
            leaf_samples: 9,
            full_chains: 9,
            first_bad: None,
        }
    }

    fn report(cells: Vec<Cell>) -> Report {
        Report {
            kernel: "4.1".into(),
            target: None,
            environment: Environment::Host {
                release: "6.1.0".into(),
            },
            boot_failure: None,
            cells,
            branch: None,
            lock: None,
            probe: None,
        }
    }

    fn cell(status: CellStatus) -> Cell {
        Cell {
            workload: "chain-fp".into(),
            mode: Mode::Fp,
            status,
            readability: None,
        }
    }

    #[test]
    fn report_passes_only_when_every_required_cell_is_ok() {
        let ok = vec![
            cell(CellStatus::Pass { stats: stats() }),
            cell(CellStatus::ExpectedFail { stats: stats() }),
            cell(CellStatus::Unsupported {
                reason: "no LBR hardware".into(),
            }),
        ];
        assert!(report(ok.clone()).passed());
        for bad in [
            CellStatus::Fail { stats: stats() },
            CellStatus::Surprise { stats: stats() },
            CellStatus::Error {
                message: "x".into(),
            },
        ] {
            let mut cells = ok.clone();
            cells.push(cell(bad.clone()));
            assert!(!report(cells).passed(), "{bad:?}");
        }
        assert!(!report(vec![]).passed(), "no cells proves nothing");
        let mut unreadable = ok;
        unreadable[0].readability = Some(Readability {
            era_problems: vec!["record type 79 (TIME_CONV) needs perf 4.6".into()],
            perf: PerfCheck::NotInstalled,
        });
        assert!(!report(unreadable).passed());
    }

    #[test]
    fn a_running_release_finds_its_series_target() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(targets::DEFAULT_TARGETS);
        let t = targets::Targets::load(&path).unwrap();
        let kernel = |k: &str| find_target(&t, k).map(|t| t.kernel.as_str());
        assert_eq!(kernel("6.1.0-56-cloud-amd64"), Some("6.1"));
        assert_eq!(kernel("5.10.0-32-cloud-amd64"), Some("5.10"));
        assert_eq!(kernel("4.1"), Some("4.1"));
        assert_eq!(kernel("4.1.15"), Some("4.1"));
        assert_eq!(kernel("6.18.44-fc-v657"), None);
        assert_eq!(kernel("4.10"), None);
    }

    #[test]
    fn report_round_trips_through_json_with_readable_tags() {
        let r = report(vec![cell(CellStatus::Unsupported {
            reason: "no LBR hardware".into(),
        })]);
        let json = serde_json::to_string(&r).unwrap();
        assert!(
            json.contains(r#""mode":"fp","status":"unsupported","reason":"no LBR hardware""#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Report>(&json).unwrap(), r);
    }
}
