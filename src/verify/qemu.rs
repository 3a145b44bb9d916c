//! The real-kernel backend: boot a kernel image in qemu with an initramfs whose init is bport itself, and read
//! the guest's report back from the serial console.
//!
//! The guest side is `bport verify-guest` (hidden): it mounts /proc and /sys, runs the matrix, and prints the
//! report as one JSON line between [`REPORT_BEGIN`] and [`REPORT_END`]. When init exits the kernel panics, and
//! `panic=-1` plus qemu's `-no-reboot` turn that into qemu exiting: no power-off code (and no `unsafe`) in the
//! guest.
//!
//! KVM is used when `/dev/kvm` works; on machines where it does not (measured here: qemu hangs or fails setting
//! MSRs), TCG boots a Debian cloud kernel with this initramfs in a few seconds, so KVM is tried with a short
//! deadline for the first console output and TCG is the fallback. Every boot is time-bounded.

use super::initramfs::{self, Initramfs};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Printed by the guest before its JSON report.
pub const REPORT_BEGIN: &str = "=====BPORT-VERIFY-REPORT-BEGIN=====";
/// Printed by the guest after its JSON report.
pub const REPORT_END: &str = "=====BPORT-VERIFY-REPORT-END=====";

/// The name of the hidden guest subcommand (the guest's init runs `bport verify-guest ...`).
pub const GUEST_COMMAND: &str = "verify-guest";

/// The qemu binary.
pub const QEMU: &str = "qemu-system-x86_64";

/// How to accelerate the VM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    /// KVM when `/dev/kvm` works, else TCG.
    Auto,
    /// Hardware virtualization.
    Kvm,
    /// qemu's emulator: slow, but works everywhere.
    Tcg,
}

impl Accel {
    /// qemu's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Accel::Auto => "auto",
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// How to boot.
#[derive(Clone, Debug)]
pub struct BootOptions {
    /// The kernel image (`vmlinuz`/bzImage).
    pub kernel_image: PathBuf,
    /// The bport executable to run as init (usually the running one).
    pub bport_exe: PathBuf,
    /// Arguments after `bport verify-guest`.
    pub guest_args: Vec<String>,
    /// Acceleration.
    pub accel: Accel,
    /// Upper bound for the whole boot-and-report, per attempt.
    pub timeout: Duration,
    /// With [`Accel::Auto`], how long KVM may stay silent on the console before TCG is tried instead.
    pub kvm_first_output: Duration,
    /// Guest memory in MiB.
    pub memory_mib: u32,
}

impl BootOptions {
    /// Defaults for `kernel_image` running `bport_exe`: auto accel, 180 s bound, 1 GiB (the initramfs, holding a
    /// bport of up to ~100 MB, is unpacked into the guest's RAM).
    pub fn new(kernel_image: PathBuf, bport_exe: PathBuf) -> Self {
        BootOptions {
            kernel_image,
            bport_exe,
            guest_args: Vec::new(),
            accel: Accel::Auto,
            timeout: Duration::from_secs(180),
            kvm_first_output: Duration::from_secs(20),
            memory_mib: 1024,
        }
    }
}

/// What a boot gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Boot {
    /// The accelerator that was used for the attempt reported here.
    pub accel: Accel,
    /// The report text between the markers, when the guest got that far.
    pub report: Option<String>,
    /// Why there is no report (timeout, qemu's exit), when there is none.
    pub failure: Option<String>,
    /// The whole console output, for the boot-failure message.
    pub console: String,
}

/// What went wrong before a VM could run at all (a failed boot is a [`Boot`] with `failure`, not an error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The kernel image does not exist.
    #[error("kernel image {0} does not exist")]
    NoImage(PathBuf),
    /// qemu is not installed.
    #[error("cannot run {QEMU}")]
    NoQemu(#[source] std::io::Error),
    /// Building the initramfs failed.
    #[error("cannot build the initramfs")]
    Initramfs(#[from] initramfs::Error),
    /// Writing the initramfs or talking to qemu failed.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
}

/// Builds the guest's initramfs: bport (with its interpreter and libraries) as `/bin/bport`, `mount` for /proc
/// and /sys, `/dev/console` for init's stdio, and the mount points.
pub fn build_initramfs(bport_exe: &Path) -> Result<Initramfs, Error> {
    let mut fs = Initramfs::new();
    fs.char_dev("/dev/console", 5, 1)
        .char_dev("/dev/null", 1, 3)
        .dir("/proc")
        .dir("/sys")
        .dir("/tmp")
        .dir("/root");
    // bport keeps its host path, so `current_exe()` agrees inside the guest; /bin/bport (the init the kernel
    // command line names) links to it rather than copying it: a debug build is ~80 MB, and the guest unpacks the
    // initramfs into RAM.
    for path in initramfs::elf_closure(bport_exe)? {
        fs.host_file(&path)?;
    }
    fs.symlink("/bin/bport", &bport_exe.to_string_lossy());
    let mount = ["/usr/bin/mount", "/bin/mount"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.is_file());
    if let Some(mount) = mount {
        fs.host_executable(mount)?;
        fs.symlink("/bin/mount", &mount.to_string_lossy());
    }
    Ok(fs)
}

/// Whether `/dev/kvm` can be opened for reading and writing (necessary, not sufficient, for KVM to work).
pub fn kvm_available() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok()
}

/// Boots the kernel with bport as init and waits for the report, the VM's end, or the timeout.
pub fn boot(options: &BootOptions) -> Result<Boot, Error> {
    if !options.kernel_image.is_file() {
        return Err(Error::NoImage(options.kernel_image.clone()));
    }
    let initrd = TempFile(std::env::temp_dir().join(format!(
        "bport-vm-{}-{}.cpio",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )));
    let initrd = &initrd;
    let fs = build_initramfs(&options.bport_exe)?;
    std::fs::write(&initrd.0, fs.to_bytes()).map_err(|source| Error::Io {
        what: format!("cannot write {}", initrd.0.display()),
        source,
    })?;
    let try_kvm = match options.accel {
        Accel::Kvm => true,
        Accel::Tcg => false,
        Accel::Auto => kvm_available(),
    };
    if try_kvm {
        let first_output = match options.accel {
            Accel::Auto => Some(options.kvm_first_output),
            _ => None,
        };
        let boot = run_vm(options, &initrd.0, Accel::Kvm, first_output)?;
        if boot.report.is_some() || options.accel == Accel::Kvm {
            return Ok(boot);
        }
        log::info!(
            "KVM boot gave no report ({}); retrying with TCG",
            boot.failure.as_deref().unwrap_or("?")
        );
    }
    run_vm(options, &initrd.0, Accel::Tcg, None)
}

/// A file removed when dropped (the initramfs lives only as long as the VM).
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The kernel command line: serial console, quiet, panic reboots at once (qemu then exits), bport as init.
pub fn kernel_cmdline(guest_args: &[String]) -> String {
    let mut cmdline =
        format!("console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/bin/bport -- {GUEST_COMMAND}");
    for a in guest_args {
        cmdline.push(' ');
        cmdline.push_str(a);
    }
    cmdline
}

/// Boots the kernel with `initrd` under `accel` and collects the console until the guest's report, a timeout
/// (`first_output`: how long to wait for any output at all), or qemu's exit.
fn run_vm(
    options: &BootOptions,
    initrd: &Path,
    accel: Accel,
    first_output: Option<Duration>,
) -> Result<Boot, Error> {
    let mut child = qemu_command(options, initrd, accel)
        .spawn()
        .map_err(Error::NoQemu)?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let reader = std::thread::spawn(move || pump(stdout, tx));
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::BufReader::new(stderr).read_to_string(&mut s);
        s
    });

    let (mut console, mut failure) = watch_console(&rx, options, accel, first_output);
    let status = stop(&mut child);
    let _ = reader.join();
    let qemu_stderr = err_reader.join().unwrap_or_default();
    // Whatever arrived after the loop stopped (the VM may exit right after the report).
    while let Ok(chunk) = rx.try_recv() {
        console.extend_from_slice(&chunk);
    }
    let console = String::from_utf8_lossy(&console).replace("\r\n", "\n");
    let report = extract_report(&console).map(str::to_owned);
    if report.is_none() && failure.is_none() {
        failure = Some(exit_failure(accel, status, &qemu_stderr));
    }
    Ok(Boot {
        accel,
        failure: if report.is_some() { None } else { failure },
        report,
        console,
    })
}

/// qemu's command line: no devices but the serial console on stdio, the kernel and initramfs, and a CPU with
/// every feature the accelerator offers.
fn qemu_command(options: &BootOptions, initrd: &Path, accel: Accel) -> Command {
    let mut cmd = Command::new(QEMU);
    cmd.args([
        "-nodefaults",
        "-no-reboot",
        "-display",
        "none",
        "-serial",
        "stdio",
    ])
    .args(["-m", &options.memory_mib.to_string(), "-smp", "1"])
    .args(["-accel", accel.name()])
    .arg("-kernel")
    .arg(&options.kernel_image)
    .arg("-initrd")
    .arg(initrd)
    .args(["-append", &kernel_cmdline(&options.guest_args)])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if accel == Accel::Kvm {
        cmd.args(["-cpu", "host"]);
    } else {
        // `max` gives the guest every feature TCG emulates (e.g. for the perf PMU probe), like `host` under KVM.
        cmd.args(["-cpu", "max"]);
    }
    cmd
}

/// Collects console output until it holds a report, qemu's output ends, or a time limit passes (then says which).
fn watch_console(
    rx: &mpsc::Receiver<Vec<u8>>,
    options: &BootOptions,
    accel: Accel,
    first_output: Option<Duration>,
) -> (Vec<u8>, Option<String>) {
    let start = Instant::now();
    let mut console = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(chunk) => console.extend_from_slice(&chunk),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if extract_report(&String::from_utf8_lossy(&console)).is_some() {
            break;
        }
        let elapsed = start.elapsed();
        if let Some(limit) = first_output {
            if console.is_empty() && elapsed > limit {
                let failure = format!(
                    "no console output from the {} VM within {} s",
                    accel.name(),
                    limit.as_secs()
                );
                return (console, Some(failure));
            }
        }
        if elapsed > options.timeout {
            let failure = format!(
                "no report from the {} VM within {} s",
                accel.name(),
                options.timeout.as_secs()
            );
            return (console, Some(failure));
        }
    }
    (console, None)
}

/// Why qemu ended without a report: its exit status and what it wrote on stderr.
fn exit_failure(
    accel: Accel,
    status: Option<std::process::ExitStatus>,
    qemu_stderr: &str,
) -> String {
    match status {
        Some(s) => format!(
            "qemu ({}) exited ({s}) before the guest reported{}",
            accel.name(),
            if qemu_stderr.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", qemu_stderr.trim())
            }
        ),
        None => format!("qemu ({}) ended before the guest reported", accel.name()),
    }
}

fn pump(mut from: impl Read, tx: mpsc::Sender<Vec<u8>>) {
    let mut buf = [0u8; 8192];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if tx.send(buf[..n].to_vec()).is_err() {
                    return;
                }
            }
        }
    }
}

/// Kills qemu if it still runs (the guest has reported or the time is up) and reaps it.
fn stop(child: &mut Child) -> Option<std::process::ExitStatus> {
    if let Ok(Some(status)) = child.try_wait() {
        return Some(status);
    }
    // Give a guest that has just printed its report a moment to exit on its own.
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    child.wait().ok().filter(|s| s.code().is_some())
}

/// The text between the report markers, each on its own line (kernel messages may surround them).
pub fn extract_report(console: &str) -> Option<&str> {
    let begin = console.find(REPORT_BEGIN)? + REPORT_BEGIN.len();
    let end = begin + console[begin..].find(REPORT_END)?;
    Some(console[begin..end].trim())
}

/// The last `n` non-empty console lines, for a boot-failure message.
pub fn console_tail(console: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = console
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_is_found_between_markers_among_kernel_noise() {
        let console = format!(
            "[    0.1] Linux version 6.1\n{REPORT_BEGIN}\n{{\"a\":1}}\n{REPORT_END}\n[    1.2] Kernel panic - not syncing: Attempted to kill init!\n"
        );
        assert_eq!(extract_report(&console), Some("{\"a\":1}"));
        assert_eq!(extract_report(&console[..40]), None);
        assert_eq!(
            console_tail(&console, 2),
            vec![
                REPORT_END.to_string(),
                "[    1.2] Kernel panic - not syncing: Attempted to kill init!".to_string()
            ]
        );
    }

    #[test]
    fn cmdline_runs_bport_as_init_with_the_guest_arguments() {
        assert_eq!(
            kernel_cmdline(&["--kernel".into(), "4.1".into()]),
            "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/bin/bport -- verify-guest --kernel 4.1"
        );
    }

    #[test]
    fn initramfs_holds_bport_its_libraries_and_the_console() {
        let me = std::env::current_exe().unwrap();
        let bytes = build_initramfs(&me).unwrap().to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        for name in ["dev/console", "bin/bport", "libc.so.6", "proc\0"] {
            assert!(text.contains(name), "{name} missing");
        }
    }
}
