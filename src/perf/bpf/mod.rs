//! BPF without clang, libbpf or BTF: a typed assembler ([`asm`]) for the few small programs bport needs, and the
//! raw `bpf()` system call ([`sys`]) to create maps, load programs and attach them to raw tracepoints.
//!
//! Design: programs are emitted at run time by Rust code, so options (filters on, aggregation key, stack depth)
//! become constants in the instructions rather than global variables in a `.data` map, and nothing needs
//! relocating except map descriptors (`BPF_PSEUDO_MAP_FD`). RAW_TRACEPOINT programs read their arguments from the
//! `u64` context array and attach by name, so they need neither the kernel's BTF nor a vmlinux.h. A refused load
//! carries the verifier's log, which names the instruction and the reason.
//!
//! Owns: instruction encoding and the system-call layer. Does not own what the programs do (`perf::lock`).

pub mod asm;
pub mod sys;

pub use asm::{Alu, Asm, Cond, Helper, Insn, Label, Reg, Size, FP};
pub use sys::{Attachment, LoadError, MapFd, ProgFd};

/// `BPF_MAP_TYPE_HASH`.
pub const MAP_HASH: u32 = 1;
/// `BPF_MAP_TYPE_ARRAY`.
pub const MAP_ARRAY: u32 = 2;
/// `BPF_MAP_TYPE_PERCPU_HASH`.
pub const MAP_PERCPU_HASH: u32 = 5;
/// `BPF_MAP_TYPE_PERCPU_ARRAY`.
pub const MAP_PERCPU_ARRAY: u32 = 6;
/// `BPF_MAP_TYPE_STACK_TRACE`.
pub const MAP_STACK_TRACE: u32 = 7;

/// `BPF_NOEXIST`: update only when the key is absent.
pub const NOEXIST: i32 = 1;
/// `BPF_F_FAST_STACK_CMP`: compare stacks by hash only when storing a stack id.
pub const F_FAST_STACK_CMP: i32 = 1 << 9;

/// The errors of the BPF layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A map could not be created.
    #[error("cannot create BPF map {name}")]
    MapCreate {
        /// The map's name.
        name: String,
        /// The system error.
        source: std::io::Error,
    },
    /// The kernel refused a program.
    #[error(
        "the kernel refused BPF program {name}: {source}{}",
        verifier_tail(log)
    )]
    Load {
        /// The program's name.
        name: String,
        /// The system error.
        #[source]
        source: std::io::Error,
        /// The verifier log.
        log: String,
    },
    /// A program could not be attached.
    #[error("cannot attach BPF program to raw tracepoint {tracepoint}")]
    Attach {
        /// The tracepoint name.
        tracepoint: String,
        /// The system error.
        source: std::io::Error,
    },
    /// A map operation failed.
    #[error("BPF map {name}")]
    Map {
        /// The map's name.
        name: String,
        /// The system error.
        source: std::io::Error,
    },
    /// The assembler failed (a bug in the program text).
    #[error(transparent)]
    Asm(#[from] asm::AsmError),
}

/// The last lines of a verifier log (the verdict is at the end; a full log runs to thousands of lines).
fn verifier_tail(log: &str) -> String {
    if log.is_empty() {
        return String::new();
    }
    let lines: Vec<&str> = log.lines().collect();
    let tail = &lines[lines.len().saturating_sub(12)..];
    format!(
        "\nverifier log (last {} lines):\n{}",
        tail.len(),
        tail.join("\n")
    )
}

impl Error {
    /// The system error underneath, if any (the CLI maps EPERM/EACCES to "the environment lacks something").
    pub fn os_error(&self) -> Option<i32> {
        match self {
            Error::MapCreate { source, .. }
            | Error::Load { source, .. }
            | Error::Attach { source, .. }
            | Error::Map { source, .. } => source.raw_os_error(),
            Error::Asm(_) => None,
        }
    }
}

/// Creates a map, naming it in the error.
pub fn map(
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    name: &str,
) -> Result<MapFd, Error> {
    sys::map_create(map_type, key_size, value_size, max_entries, name).map_err(|source| {
        Error::MapCreate {
            name: name.into(),
            source,
        }
    })
}

/// Loads a RAW_TRACEPOINT program (GPL: `bpf_get_stackid` is GPL-only).
pub fn load_raw_tracepoint(name: &str, insns: &[Insn]) -> Result<ProgFd, Error> {
    sys::prog_load(sys::PROG_TYPE_RAW_TRACEPOINT, insns, "GPL", name).map_err(|e| Error::Load {
        name: name.into(),
        source: e.error,
        log: e.log,
    })
}

/// Attaches `prog` to raw tracepoint `tracepoint` (the name without the group: `contention_begin`).
pub fn attach_raw_tracepoint(tracepoint: &str, prog: &ProgFd) -> Result<Attachment, Error> {
    sys::raw_tracepoint_open(tracepoint, prog).map_err(|source| Error::Attach {
        tracepoint: tracepoint.into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_program_carries_the_verifier_log() {
        if !crate::test_require::require_root("bpf()") {
            return;
        }
        // Returns R2, which nothing wrote: the verifier must refuse it and say so.
        let mut a = Asm::new();
        a.mov(Reg::R0, Reg::R2).exit();
        let err = load_raw_tracepoint("bad", &a.finish().unwrap()).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("R2 !read_ok"), "{text}");
        assert_eq!(err.os_error(), Some(libc::EACCES));
    }

    #[test]
    fn map_elements_round_trip_and_iterate() {
        if !crate::test_require::require_root("bpf()") {
            return;
        }
        let m = map(MAP_HASH, 4, 8, 16, "t").unwrap();
        for k in [3u32, 1, 2] {
            m.update(&k.to_ne_bytes(), &(u64::from(k) * 10).to_ne_bytes())
                .unwrap();
        }
        assert_eq!(
            m.lookup(&2u32.to_ne_bytes()).unwrap(),
            Some(20u64.to_ne_bytes().to_vec())
        );
        assert_eq!(m.lookup(&9u32.to_ne_bytes()).unwrap(), None);
        assert!(m.delete(&3u32.to_ne_bytes()).unwrap());
        assert!(!m.delete(&3u32.to_ne_bytes()).unwrap());
        let mut keys = Vec::new();
        let mut k = None;
        while let Some(next) = m.next_key(k.as_deref()).unwrap() {
            keys.push(u32::from_ne_bytes(next[..4].try_into().unwrap()));
            k = Some(next);
        }
        keys.sort();
        assert_eq!(keys, [1, 2]);
        assert!(m.update(&[0; 3], &[0; 8]).is_err());
    }
}
