//! `bport verify`: arguments → `verify::Request`, and the report as a table (or JSON) on stdout.
//!
//! Exit 0 only when every required check passes, 3 otherwise (a check failed). The hidden
//! `bport verify-guest` is the init of the verify VM: it runs the matrix and prints the report on the console.

use super::{CliError, CliResult, Ui};
use crate::verify::{self, qemu, BranchCheck, CellStatus, Environment, Report};
use clap::{Args, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// Prove that profiling yields complete callchains on a target kernel, and that its branch carries the fixes.
///
/// For each built-in workload (with and without frame pointers) and callchain mode (fp, dwarf, lbr), record
/// under the target kernel's perf ABI, script the file with bport, and require the full chain
/// main → chain_a → chain_b → chain_c in at least 90% of the samples in chain_c. Each recorded file must use only
/// what a perf of that kernel's era reads (and Linux perf, when installed, must show the same chains). Inside a
/// kernel tree, a target with a branch must carry every commit of its required patch lists.
///
/// Exit status: 0 when every required check passes, 3 when one fails.
///
/// Example: bport verify --kernel 4.1
#[derive(Debug, Args)]
#[command(after_help = "Example: bport verify --kernel 4.1\n\
         Example: bport verify --kernel-image /var/cache/bport-kernels/6.1/vmlinuz --format json")]
pub struct VerifyArgs {
    /// Target kernel version (e.g. 4.1, 4.1.15, 5.14.0-331.el9); default: the running kernel.
    #[arg(long, value_name = "VERSION")]
    pub kernel: Option<String>,

    /// Targets file (default: the one built into bport, as shipped in patchlists/targets.yaml).
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,

    /// Boot this kernel image in qemu and run the matrix inside the VM (results come back over the serial console).
    #[arg(long, value_name = "PATH")]
    pub kernel_image: Option<PathBuf>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// How long each workload runs, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub duration_ms: u32,

    /// VM acceleration for --kernel-image (auto: KVM when /dev/kvm works, else TCG).
    #[arg(long, value_enum, default_value_t = AccelArg::Auto)]
    pub accel: AccelArg,

    /// Upper bound for one VM boot, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub vm_timeout: u64,

    /// Keep workloads and perf.data files in this directory (default: a temporary directory, removed).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
}

/// Report formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for people.
    Table,
    /// The report as JSON, for machines.
    Json,
}

/// `--accel` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AccelArg {
    /// KVM when /dev/kvm works, else TCG.
    Auto,
    /// KVM only.
    Kvm,
    /// TCG only.
    Tcg,
}

/// Arguments of the hidden guest command (the verify VM's init).
#[derive(Debug, Args)]
pub struct GuestArgs {
    /// Target kernel version; default: the guest's running kernel.
    #[arg(long)]
    pub kernel: Option<String>,
    /// How long each workload runs, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub duration_ms: u32,
    /// The probe cell's workload: read FILE with the check's sizes, then exit.
    #[arg(long, value_name = "FILE")]
    pub probe_reads: Option<std::path::PathBuf>,
}

/// Runs `bport verify`.
pub fn run(args: VerifyArgs, ui: &Ui) -> CliResult<ExitCode> {
    let cwd = std::env::current_dir()?;
    let bport_exe = std::env::current_exe()?;
    let temp;
    let workdir = match &args.keep {
        Some(dir) => dir.clone(),
        None => {
            temp = TempDir::new()?;
            temp.0.clone()
        }
    };
    let request = verify::Request {
        kernel: args.kernel.clone(),
        targets: args.targets.clone(),
        kernel_image: args.kernel_image.clone(),
        repo_dir: cwd,
        bport_exe,
        accel: match args.accel {
            AccelArg::Auto => qemu::Accel::Auto,
            AccelArg::Kvm => qemu::Accel::Kvm,
            AccelArg::Tcg => qemu::Accel::Tcg,
        },
        vm_timeout_secs: args.vm_timeout,
        workload_ms: args.duration_ms,
        workdir,
    };
    if let Some(image) = &args.kernel_image {
        ui.status(format!("booting {} in qemu ...", image.display()));
    }
    let report = verify::run(&request).map_err(CliError::from)?;
    let mut out = std::io::stdout().lock();
    let written = match args.format {
        Format::Json => serde_json::to_writer_pretty(&mut out, &report)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out)),
        Format::Table => {
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            out.write_all(render(&report, color).as_bytes())
        }
    };
    // A closed stdout (`bport verify | head -3`) ends the report, not the verdict: the exit status still says
    // whether a check failed.
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(super::error::verdict(&report))
}

/// Runs the guest side: the report between markers on stdout (the serial console).
pub fn run_guest(args: GuestArgs) -> CliResult<ExitCode> {
    if let Some(file) = &args.probe_reads {
        verify::probe_check::workload(file)?;
        return Ok(ExitCode::SUCCESS);
    }
    if std::process::id() == 1 {
        mount_pseudo_filesystems();
    }
    let mut out = std::io::stdout().lock();
    let report = verify::run_guest(args.kernel, args.duration_ms);
    let json = match report {
        Ok(r) => serde_json::to_string(&r).map_err(std::io::Error::from)?,
        Err(e) => {
            // The host shows this as a boot failure with the console tail, which includes this line.
            writeln!(out, "bport verify-guest: {e}")?;
            return Ok(super::error::guest_failed());
        }
    };
    writeln!(
        out,
        "\n{}\n{json}\n{}",
        qemu::REPORT_BEGIN,
        qemu::REPORT_END
    )?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// /proc (for /proc/PID/maps synthesis and osrelease) and /sys (PMU capabilities) in the guest, with the
/// `mount` binary the initramfs carries: no mount(2) call, so no `unsafe`, outside `perf/sys/`.
fn mount_pseudo_filesystems() {
    for (fstype, target) in [("proc", "/proc"), ("sysfs", "/sys"), ("tmpfs", "/tmp")] {
        let _ = std::process::Command::new("/bin/mount")
            .args(["-t", fstype, fstype, target])
            .status();
    }
}

struct Paint(bool);

impl Paint {
    fn status(&self, s: &CellStatus, text: &str) -> String {
        let code = match s {
            CellStatus::Pass { .. } => "32",
            CellStatus::ExpectedFail { .. } | CellStatus::Unsupported { .. } => "2",
            CellStatus::Fail { .. } | CellStatus::Surprise { .. } | CellStatus::Error { .. } => {
                "1;31"
            }
        };
        self.wrap(code, text)
    }

    fn wrap(&self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}

fn cell_text(s: &CellStatus) -> String {
    match s {
        CellStatus::Pass { stats }
        | CellStatus::Fail { stats }
        | CellStatus::Surprise { stats } => {
            format!("{} {}/{}", s.word(), stats.full_chains, stats.leaf_samples)
        }
        _ => s.word().to_owned(),
    }
}

/// The report as a table a person reads at a glance, with the reasons and failures under it.
pub fn render(report: &Report, color: bool) -> String {
    let paint = Paint(color);
    let mut s = heading(report);
    if let Some(boot) = &report.boot_failure {
        s.push_str(&format!(
            "{} {}\n",
            paint.wrap("1;31", "BOOT FAILED:"),
            boot.reason
        ));
        for line in &boot.console_tail {
            s.push_str(&format!("  | {line}\n"));
        }
    } else {
        s.push_str(&matrix(report, &paint));
        s.push_str(&probe_cell(report));
    }
    s.push_str(&lock_line(report, &paint));
    s.push_str(&branch(report));
    let verdict = if report.passed() {
        paint.wrap("32", "PASS")
    } else {
        paint.wrap("1;31", "FAIL")
    };
    s.push_str(&format!("\nresult: {verdict}\n"));
    s
}

/// The lock-contention cell.
fn lock_line(report: &Report, paint: &Paint) -> String {
    use crate::verify::lock_cell::LockCell;
    match &report.lock {
        None => String::new(),
        Some(LockCell::Pass {
            callers,
            contentions,
        }) => format!(
            "\nlock contention: {} ({contentions} mmap_lock contentions from {})\n",
            paint.wrap("32", "pass"),
            callers.join(", ")
        ),
        Some(LockCell::Unsupported { reason }) => {
            format!("\nlock contention: unsupported: {reason}\n")
        }
        Some(LockCell::Fail { reason }) => {
            format!(
                "\nlock contention: {} {reason}\n",
                paint.wrap("1;31", "FAIL:")
            )
        }
    }
}

/// The dynamic-probe cell under the matrix.
fn probe_cell(report: &Report) -> String {
    use verify::probe_check::ProbeCheck;
    let Some(p) = &report.probe else {
        return String::new();
    };
    let detail = match p {
        ProbeCheck::Pass { definition, counts } => format!(
            "{} samples recorded, every read(2) of {:?} bytes seen with its count ({definition})",
            counts.len(),
            verify::probe_check::READ_SIZES
        ),
        ProbeCheck::Fail {
            definition,
            expected,
            counts,
        } => format!("read {expected:?} but the probe saw count {counts:?} ({definition})"),
        ProbeCheck::Unsupported { reason } => reason.clone(),
        ProbeCheck::Error { message } => message.clone(),
    };
    format!(
        "\nprobe (kprobe vfs_read count from BTF): {}: {detail}\n",
        p.word()
    )
}

/// What was verified, against which target, and where it ran.
fn heading(report: &Report) -> String {
    let target = match &report.target {
        Some(t) => format!(" (target {}:{})", t.file.display(), t.line),
        None => " (not in the targets file: ABI checks only)".to_owned(),
    };
    let place = match &report.environment {
        Environment::Host { release } => {
            format!(
                "on this machine ({release}), ABI capped to {}",
                report.kernel
            )
        }
        Environment::Vm {
            image,
            release,
            accel,
        } => format!(
            "in a qemu VM ({accel}) booted from {} ({release})",
            image.display()
        ),
    };
    format!("verify kernel {}{target}\n  {place}\n\n", report.kernel)
}

/// The workload × mode table, one row per workload, then every cell's notes.
fn matrix(report: &Report, paint: &Paint) -> String {
    let mut s = String::new();
    let mut header = format!("{:<12}", "workload");
    for mode in verify::Mode::ALL {
        header.push_str(&format!("{:<18}", mode.name()));
    }
    s.push_str(header.trim_end());
    s.push('\n');
    let mut notes = Vec::new();
    let mut row = String::new();
    let mut current = "";
    for cell in &report.cells {
        if cell.workload != current {
            if !row.is_empty() {
                s.push_str(row.trim_end());
                s.push('\n');
            }
            current = &cell.workload;
            row = format!("{current:<12}");
        }
        let text = cell_text(&cell.status);
        let pad = 18usize.saturating_sub(text.len()).max(1);
        row.push_str(&paint.status(&cell.status, &text));
        row.push_str(&" ".repeat(pad));
        notes.extend(cell_notes(cell, report));
    }
    if !row.is_empty() {
        s.push_str(row.trim_end());
        s.push('\n');
    }
    if !notes.is_empty() {
        s.push('\n');
        for n in notes {
            s.push_str(&n);
            s.push('\n');
        }
    }
    s
}

/// Why a cell is not a plain pass: its reason, the first bad sample's frames, readability problems.
fn cell_notes(cell: &verify::Cell, report: &Report) -> Vec<String> {
    let mut notes = Vec::new();
    let what = format!("{} {}", cell.workload, cell.mode.name());
    match &cell.status {
        CellStatus::Unsupported { reason } => notes.push(format!("{what}: unsupported: {reason}")),
        CellStatus::Error { message } => notes.push(format!("{what}: error: {message}")),
        CellStatus::Fail { stats } | CellStatus::Surprise { stats } => {
            let why = if matches!(cell.status, CellStatus::Surprise { .. }) {
                "expected to fail (fp without frame pointers) but passed"
            } else {
                "too few full chains"
            };
            notes.push(format!(
                "{what}: {}: {why}: {} of {} samples in chain_c had main → chain_a → chain_b → chain_c ({} samples)",
                cell.status.word(),
                stats.full_chains,
                stats.leaf_samples,
                stats.samples
            ));
            if let Some(bad) = &stats.first_bad {
                notes.push(format!(
                    "  first bad sample: pid {} time {}.{:09}",
                    bad.pid,
                    bad.time / 1_000_000_000,
                    bad.time % 1_000_000_000
                ));
                if bad.frames.is_empty() {
                    notes.push("  \t(no user frames)".to_owned());
                }
                for f in &bad.frames {
                    notes.push(format!(
                        "  \t{:x} {} ({})",
                        f.address,
                        f.symbol.as_deref().unwrap_or("[unknown]"),
                        f.dso
                    ));
                }
            }
        }
        _ => {}
    }
    if let Some(r) = &cell.readability {
        for p in &r.era_problems {
            notes.push(format!(
                "{what}: unreadable for perf of {}: {p}",
                report.kernel
            ));
        }
        if let verify::PerfCheck::Mismatch { detail } = &r.perf {
            notes.push(format!("{what}: Linux perf disagrees: {detail}"));
        }
    }
    notes
}

/// The branch check: how many required fixes the branch carries, and how to add the missing ones.
fn branch(report: &Report) -> String {
    let mut s = String::new();
    match &report.branch {
        Some(BranchCheck::Checked(b)) => {
            let missing: Vec<_> = b.missing().collect();
            s.push_str(&format!(
                "\nbranch {}: {} of {} required fixes present\n",
                b.branch,
                b.entries.len() - missing.len(),
                b.entries.len()
            ));
            for m in &missing {
                s.push_str(&format!(
                    "  missing: {} {} ({})\n",
                    m.sha,
                    m.subject,
                    m.list.display()
                ));
            }
            for c in &b.apply_commands {
                s.push_str(&format!("  add with: {c}\n"));
            }
        }
        Some(BranchCheck::Skipped { reason }) => {
            s.push_str(&format!("\nbranch check skipped: {reason}\n"));
        }
        None => {}
    }
    s
}

/// A temporary directory removed on drop (tempfile is a dev-dependency only).
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path =
            std::env::temp_dir().join(format!("bport-verify-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::{Cell, ChainStats, Frame, Mode, Sample, TargetRef};

    fn stats(full: usize, leaf: usize, bad: Option<Sample>) -> ChainStats {
        ChainStats {
            samples: leaf + 3,
            leaf_samples: leaf,
            full_chains: full,
            first_bad: bad,
        }
    }

    #[test]
    fn table_shows_cells_reasons_first_bad_sample_and_verdict() {
        let bad = Sample {
            time: 12_000_000_123,
            pid: 42,
            tid: 42,
            in_user: true,
            frames: vec![Frame {
                address: 0x401136,
                symbol: Some("chain_c".into()),
                dso: "/tmp/chain-nofp".into(),
            }],
        };
        let cell = |w: &str, mode, status| Cell {
            workload: w.into(),
            mode,
            status,
            readability: None,
        };
        let lbr = || CellStatus::Unsupported {
            reason: "no LBR hardware".into(),
        };
        let report = Report {
            kernel: "4.1".into(),
            target: Some(TargetRef {
                file: "patchlists/targets.yaml".into(),
                line: 13,
            }),
            environment: Environment::Host {
                release: "6.18.44".into(),
            },
            boot_failure: None,
            cells: vec![
                cell(
                    "chain-fp",
                    Mode::Fp,
                    CellStatus::Pass {
                        stats: stats(98, 100, None),
                    },
                ),
                cell(
                    "chain-fp",
                    Mode::Dwarf,
                    CellStatus::Pass {
                        stats: stats(99, 100, None),
                    },
                ),
                cell("chain-fp", Mode::Lbr, lbr()),
                cell(
                    "chain-nofp",
                    Mode::Fp,
                    CellStatus::ExpectedFail {
                        stats: stats(0, 90, None),
                    },
                ),
                cell(
                    "chain-nofp",
                    Mode::Dwarf,
                    CellStatus::Fail {
                        stats: stats(1, 90, Some(bad)),
                    },
                ),
                cell("chain-nofp", Mode::Lbr, lbr()),
            ],
            branch: None,
            lock: None,
            probe: None,
        };
        assert_eq!(
            render(&report, false),
            "verify kernel 4.1 (target patchlists/targets.yaml:13)
  on this machine (6.18.44), ABI capped to 4.1

workload    fp                dwarf             lbr
chain-fp    pass 98/100       pass 99/100       unsupported
chain-nofp  expected-fail     fail 1/90         unsupported

chain-fp lbr: unsupported: no LBR hardware
chain-nofp dwarf: fail: too few full chains: 1 of 90 samples in chain_c had main → chain_a → chain_b → chain_c (93 samples)
  first bad sample: pid 42 time 12.000000123
  \t401136 chain_c (/tmp/chain-nofp)
chain-nofp lbr: unsupported: no LBR hardware

result: FAIL
"
        );
    }

    #[test]
    fn boot_failure_is_reported_as_such() {
        let report = Report {
            kernel: "6.1".into(),
            target: None,
            environment: Environment::Vm {
                image: "/k/vmlinuz".into(),
                release: String::new(),
                accel: "tcg".into(),
            },
            boot_failure: Some(verify::BootFailure {
                reason: "no report from the tcg VM within 5 s".into(),
                console_tail: vec!["Kernel panic - not syncing: VFS".into()],
            }),
            cells: vec![],
            branch: None,
            lock: None,
            probe: None,
        };
        let text = render(&report, false);
        assert!(
            text.contains("BOOT FAILED: no report from the tcg VM within 5 s\n  | Kernel panic - not syncing: VFS\n"),
            "{text}"
        );
        assert!(text.ends_with("result: FAIL\n"), "{text}");
    }
}
