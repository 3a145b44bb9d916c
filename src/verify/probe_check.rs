//! The probe cell of `verify`: on the verified kernel, define a kprobe on `vfs_read` whose `count`
//! argument comes from the kernel's BTF (no vmlinux DWARF), read a file with known sizes, and check that every
//! hit the probe recorded for this process carries exactly those sizes.
//!
//! The hits are recorded as `bport record -e bport_verify:vfs_read -c 1 -- bport verify-guest --probe-reads FILE`
//! does, and read back from the file with `bport script`'s trace lines.

use crate::perf::data::PerfFile;
use crate::perf::probe::{self, btf::Btf, spec, tracefs};
use crate::perf::{record, script};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::Path;

/// The sizes the check passes to read(2), three times each.
pub const READ_SIZES: [u64; 2] = [4321, 12345];
const GROUP: &str = "bport_verify";

/// The probe cell's verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum ProbeCheck {
    /// Every hit carried a size the check read, and each read was seen.
    Pass {
        /// The kprobe definition written.
        definition: String,
        /// `count` of each hit, in order.
        counts: Vec<u64>,
    },
    /// The values are not the sizes read.
    Fail {
        /// The kprobe definition written.
        definition: String,
        /// The sizes read, in order.
        expected: Vec<u64>,
        /// What the probe saw.
        counts: Vec<u64>,
    },
    /// The kernel lacks kprobe events or BTF.
    Unsupported {
        /// Why.
        reason: String,
    },
    /// Defining or reading the probe failed.
    Error {
        /// What failed.
        message: String,
    },
}

impl ProbeCheck {
    /// The word shown in the table.
    pub fn word(&self) -> &'static str {
        match self {
            ProbeCheck::Pass { .. } => "pass",
            ProbeCheck::Fail { .. } => "fail",
            ProbeCheck::Unsupported { .. } => "unsupported",
            ProbeCheck::Error { .. } => "error",
        }
    }

    /// Whether the target may pass with this cell.
    pub fn is_ok(&self) -> bool {
        matches!(
            self,
            ProbeCheck::Pass { .. } | ProbeCheck::Unsupported { .. }
        )
    }
}

/// Runs the check, writing its scratch file in `workdir`.
pub fn run(workdir: &Path) -> ProbeCheck {
    let fs = match tracefs::Tracefs::open() {
        Ok(fs) => fs,
        Err(e) => {
            return ProbeCheck::Unsupported {
                reason: e.to_string(),
            }
        }
    };
    if !fs.has(tracefs::Kind::Kprobe) {
        return ProbeCheck::Unsupported {
            reason: "the kernel has no kprobe_events (CONFIG_KPROBE_EVENTS)".into(),
        };
    }
    let btf_path = Path::new("/sys/kernel/btf/vmlinux");
    if !btf_path.exists() {
        return ProbeCheck::Unsupported {
            reason: "the kernel has no /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF)".into(),
        };
    }
    let event = format!("{GROUP}:vfs_read");
    let result = check(&fs, btf_path, workdir);
    let _ = fs.delete(tracefs::Kind::Kprobe, GROUP, "vfs_read");
    match result {
        Ok(c) => c,
        Err(message) => ProbeCheck::Error {
            message: format!("{event}: {message}"),
        },
    }
}

fn check(fs: &tracefs::Tracefs, btf_path: &Path, workdir: &Path) -> Result<ProbeCheck, String> {
    let btf = Btf::open(btf_path).map_err(|e| e.to_string())?;
    let spec =
        spec::parse(&format!("{GROUP}:vfs_read=vfs_read count")).map_err(|e| e.to_string())?;
    let taken: Vec<String> = fs
        .read(tracefs::Kind::Kprobe)
        .map_err(|e| e.to_string())?
        .iter()
        .map(|l| l.full_name())
        .collect();
    if taken.contains(&format!("{GROUP}:vfs_read")) {
        fs.delete(tracefs::Kind::Kprobe, GROUP, "vfs_read")
            .map_err(|e| e.to_string())?;
    }
    let plan = probe::plan_kernel(&btf, &[spec], &[]).map_err(|e| e.to_string())?;
    let definition = plan.probes[0].definition();
    fs.add(tracefs::Kind::Kprobe, std::slice::from_ref(&definition))
        .map_err(|e| e.to_string())?;
    let scratch = workdir.join("probe-read.bin");
    std::fs::create_dir_all(workdir).map_err(|e| e.to_string())?;
    std::fs::write(&scratch, vec![0x5a; 16384]).map_err(|e| e.to_string())?;
    let tracefs = crate::perf::trace::Tracefs::at(fs.root());
    let tp = record::Tracepoint::resolve(&tracefs, &format!("{GROUP}:vfs_read"))
        .map_err(|e| e.to_string())?;
    // Not `current_exe()`: in the guest that is bport's host path, which the tmpfs mounted on /tmp hides when the
    // host's bport lives under /tmp (as CI's clone may); the kernel's own link to the running image always works.
    let exe = std::path::PathBuf::from("/proc/self/exe");
    let mut config = record::Config::new(record::Target::Command(vec![
        exe.into(),
        crate::verify::qemu::GUEST_COMMAND.into(),
        "--probe-reads".into(),
        scratch.into(),
    ]));
    config.event = record::Event::Tracepoint;
    config.tracepoints = vec![tp];
    config.sampling = record::Sampling::Period(1);
    config.output = workdir.join("probe.data");
    config.cmdline = vec!["bport".into(), "verify".into()];
    record::record(&config).map_err(|e| format!("recording failed: {e}"))?;
    let file = PerfFile::open(&config.output).map_err(|e| e.to_string())?;
    let mut text = Vec::new();
    script::write_script(&file, &script::Options::default(), &mut text)
        .map_err(|e| format!("bport script failed: {e:?}"))?;
    let text = String::from_utf8_lossy(&text);
    let counts: Vec<u64> = text
        .lines()
        .filter(|l| l.contains(&format!(" {GROUP}:vfs_read: ")))
        .filter_map(|l| {
            let v = l
                .split_whitespace()
                .find_map(|w| w.strip_prefix("count=0x"))?;
            u64::from_str_radix(v, 16).ok()
        })
        .collect();
    let expected: Vec<u64> = (0..3).flat_map(|_| READ_SIZES).collect();
    // The workload's other reads (the dynamic loader reads each library's ELF header) are not the check's
    // business; every read the check made must be there, in order.
    let mine: Vec<u64> = counts
        .iter()
        .copied()
        .filter(|c| READ_SIZES.contains(c))
        .collect();
    Ok(if mine == expected {
        ProbeCheck::Pass { definition, counts }
    } else {
        ProbeCheck::Fail {
            definition,
            expected,
            counts,
        }
    })
}

/// The workload: three reads of each of [`READ_SIZES`] bytes from `file`, each one read(2) of exactly that many
/// bytes (so vfs_read's `count` is the size).
pub fn workload(file: &Path) -> std::io::Result<()> {
    let mut buf = vec![0u8; 16384];
    for _ in 0..3 {
        for size in READ_SIZES {
            let mut f = std::fs::File::open(file)?;
            let _ = f.read(&mut buf[..size as usize])?;
        }
    }
    Ok(())
}
