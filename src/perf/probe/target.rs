//! What the probes are placed in, as `perf probe`'s options choose it, and which debug information answers:
//! a user program's DWARF (or its symbol table where the DWARF cannot answer), a vmlinux's DWARF, or the running
//! kernel's BTF. Each target takes one kind of probe definition.

use std::path::Path;

use super::btf::Btf;
use super::dwarf::DebugInfo;
use super::spec::Spec;
use super::tracefs::Kind;
use super::{Error, Plan};

/// Where the running kernel publishes its BTF.
const RUNNING_KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

/// What the probes are placed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target<'a> {
    /// A user program (`-x BINARY`): uprobes.
    Program(&'a Path),
    /// The kernel, described by a vmlinux with DWARF (`-k VMLINUX`): kprobes.
    Vmlinux(&'a Path),
    /// The running kernel, described by its BTF: kprobes at function entries and returns.
    RunningKernel,
}

impl Target<'_> {
    /// The kind of probe definition this target takes.
    pub fn kind(&self) -> Kind {
        match self {
            Target::Program(_) => Kind::Uprobe,
            Target::Vmlinux(_) | Target::RunningKernel => Kind::Kprobe,
        }
    }
}

/// Plans `specs` on `target`; `taken` holds the `GROUP:EVENT` names already defined. A program without DWARF (or
/// whose DWARF lacks the function) is probed from its symbol table, as perf does, at an entry, offset or return.
pub fn plan(target: Target<'_>, specs: &[Spec], taken: &[String]) -> Result<Plan, Error> {
    match target {
        Target::Program(path) => {
            let (di, missing) = match DebugInfo::open(path) {
                Ok(di) => (Some(di), None),
                Err(Error::NoDebugInfo {
                    path,
                    stripped,
                    build_id,
                }) => (None, Some((path, stripped, build_id))),
                Err(e) => return Err(e),
            };
            let no_dwarf = || {
                let (p, stripped, build_id) =
                    missing.clone().unwrap_or((path.to_path_buf(), false, None));
                Error::NoDebugInfo {
                    path: p,
                    stripped,
                    build_id,
                }
            };
            super::plan_user_or_symbols(di.as_ref(), &no_dwarf, path, specs, taken)
        }
        Target::Vmlinux(path) => super::plan_vmlinux(&DebugInfo::open(path)?, specs, taken),
        Target::RunningKernel => {
            super::plan_kernel(&Btf::open(Path::new(RUNNING_KERNEL_BTF))?, specs, taken)
        }
    }
}
