//! The `bpf()` system call: map create, element lookup/update/delete/next-key, program load (with the verifier
//! log), and raw-tracepoint attach. Every descriptor is an owned type that closes on drop, so maps, programs and
//! attachments are released on every exit path, an error or a Ctrl-C included.
//!
//! One of the homes of `unsafe` that ARCHITECTURE.md names: each block says why it is sound.
//! Follows include/uapi/linux/bpf.h (`union bpf_attr`, one anonymous struct per command) and bpf(2). The attr
//! is passed as a zeroed, 8-aligned 128-byte buffer: a kernel that knows a shorter union accepts trailing zeros
//! (`bpf_check_uarg_tail_zero`), so one size fits every kernel since 4.x.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::asm::Insn;

// Commands (enum bpf_cmd).
const BPF_MAP_CREATE: i32 = 0;
const BPF_MAP_LOOKUP_ELEM: i32 = 1;
const BPF_MAP_UPDATE_ELEM: i32 = 2;
const BPF_MAP_DELETE_ELEM: i32 = 3;
const BPF_MAP_GET_NEXT_KEY: i32 = 4;
const BPF_PROG_LOAD: i32 = 5;
const BPF_PROG_TEST_RUN: i32 = 10;
const BPF_RAW_TRACEPOINT_OPEN: i32 = 17;

/// `BPF_PROG_TYPE_RAW_TRACEPOINT`: attaches by tracepoint name without BTF (4.17).
pub const PROG_TYPE_RAW_TRACEPOINT: u32 = 17;

#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Self {
        Attr([0; 128])
    }
    fn u32(&mut self, off: usize, v: u32) -> &mut Self {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, off: usize, v: u64) -> &mut Self {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn bytes(&mut self, off: usize, v: &[u8]) -> &mut Self {
        self.0[off..off + v.len()].copy_from_slice(v);
        self
    }
}

fn bpf(cmd: i32, attr: &mut Attr) -> io::Result<i64> {
    // SAFETY: `attr` is a live, 8-aligned 128-byte buffer and we pass its exact size, so the kernel reads and
    // writes only inside it. Pointers stored in it (keys, values, instructions, log) are set by the callers below
    // to live buffers of the sizes the command implies, which outlive this call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr.0.as_mut_ptr(),
            std::mem::size_of::<Attr>() as u32,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc)
}

fn owned(fd: i64) -> OwnedFd {
    // SAFETY: the syscall returned a fresh descriptor that nothing else owns (the kernel opens BPF descriptors
    // close-on-exec).
    unsafe { OwnedFd::from_raw_fd(fd as RawFd) }
}

/// The kernel's 16-byte object name (15 characters and a NUL; the kernel allows `[A-Za-z0-9_.]`).
fn object_name(name: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (o, b) in out
        .iter_mut()
        .zip(
            name.bytes()
                .filter(|b| b.is_ascii_alphanumeric() || *b == b'_'),
        )
        .take(15)
    {
        *o = b;
    }
    out
}

/// A BPF map; the descriptor closes on drop (the kernel frees the map when no program holds it any more).
#[derive(Debug)]
pub struct MapFd {
    fd: OwnedFd,
    key_size: usize,
    value_size: usize,
}

/// Creates a map (`BPF_MAP_CREATE`).
pub fn map_create(
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    name: &str,
) -> io::Result<MapFd> {
    let mut attr = Attr::new();
    attr.u32(0, map_type)
        .u32(4, key_size)
        .u32(8, value_size)
        .u32(12, max_entries)
        .bytes(28, &object_name(name));
    let fd = bpf(BPF_MAP_CREATE, &mut attr)?;
    Ok(MapFd {
        fd: owned(fd),
        key_size: key_size as usize,
        value_size: value_size as usize,
    })
}

impl MapFd {
    /// The raw descriptor, for `ld_map_fd` in a program.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The key size the map was created with.
    pub fn key_size(&self) -> usize {
        self.key_size
    }

    fn check(&self, key: &[u8], value: Option<usize>) -> io::Result<()> {
        if key.len() != self.key_size || value.is_some_and(|v| v != self.value_size) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "BPF map key or value of the wrong size",
            ));
        }
        Ok(())
    }

    /// Writes `value` under `key` (`BPF_ANY`).
    pub fn update(&self, key: &[u8], value: &[u8]) -> io::Result<()> {
        self.check(key, Some(value.len()))?;
        let mut attr = Attr::new();
        attr.u32(0, self.raw() as u32)
            .u64(8, key.as_ptr() as u64)
            .u64(16, value.as_ptr() as u64);
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(drop)
    }

    /// The value under `key`, `None` when there is none.
    pub fn lookup(&self, key: &[u8]) -> io::Result<Option<Vec<u8>>> {
        self.check(key, None)?;
        let mut value = vec![0u8; self.value_size];
        let mut attr = Attr::new();
        attr.u32(0, self.raw() as u32)
            .u64(8, key.as_ptr() as u64)
            .u64(16, value.as_mut_ptr() as u64);
        match bpf(BPF_MAP_LOOKUP_ELEM, &mut attr) {
            Ok(_) => Ok(Some(value)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Deletes `key`; Ok(false) when it was not there.
    pub fn delete(&self, key: &[u8]) -> io::Result<bool> {
        self.check(key, None)?;
        let mut attr = Attr::new();
        attr.u32(0, self.raw() as u32).u64(8, key.as_ptr() as u64);
        match bpf(BPF_MAP_DELETE_ELEM, &mut attr) {
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The key after `key` (the first key for `None`); `None` at the end.
    pub fn next_key(&self, key: Option<&[u8]>) -> io::Result<Option<Vec<u8>>> {
        if let Some(k) = key {
            self.check(k, None)?;
        }
        let mut next = vec![0u8; self.key_size];
        let mut attr = Attr::new();
        attr.u32(0, self.raw() as u32)
            .u64(8, key.map_or(0, |k| k.as_ptr() as u64))
            .u64(16, next.as_mut_ptr() as u64);
        match bpf(BPF_MAP_GET_NEXT_KEY, &mut attr) {
            Ok(_) => Ok(Some(next)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A loaded program; the descriptor closes on drop.
#[derive(Debug)]
pub struct ProgFd(OwnedFd);

/// Why a load failed: the errno and the verifier's log (empty when the kernel wrote none).
#[derive(Debug)]
pub struct LoadError {
    /// The system error.
    pub error: io::Error,
    /// The verifier log, trimmed.
    pub log: String,
}

/// Loads a program (`BPF_PROG_LOAD`). On failure it loads again with the verifier log on, so the error says
/// which instruction the verifier refused and why (the first try runs without a log: a log costs the verifier
/// time and memory on every successful load).
pub fn prog_load(
    prog_type: u32,
    insns: &[Insn],
    license: &str,
    name: &str,
) -> Result<ProgFd, LoadError> {
    let code: Vec<u8> = insns.iter().flat_map(|i| i.to_bytes()).collect();
    let license = CString::new(license).expect("licence names have no NUL");
    let load = |log: Option<&mut Vec<u8>>| {
        let mut attr = Attr::new();
        attr.u32(0, prog_type)
            .u32(4, insns.len() as u32)
            .u64(8, code.as_ptr() as u64)
            .u64(16, license.as_ptr() as u64)
            .bytes(48, &object_name(name));
        if let Some(log) = log {
            attr.u32(24, 1)
                .u32(28, log.len() as u32)
                .u64(32, log.as_mut_ptr() as u64);
        }
        bpf(BPF_PROG_LOAD, &mut attr)
    };
    match load(None) {
        Ok(fd) => Ok(ProgFd(owned(fd))),
        Err(_) => {
            let mut log = vec![0u8; 1 << 20];
            match load(Some(&mut log)) {
                // Loaded on the second try (a transient failure such as EAGAIN): keep it.
                Ok(fd) => Ok(ProgFd(owned(fd))),
                Err(error) => {
                    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                    Err(LoadError {
                        error,
                        log: String::from_utf8_lossy(&log[..end]).trim_end().to_string(),
                    })
                }
            }
        }
    }
}

impl ProgFd {
    /// The raw descriptor.
    pub fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Runs a raw-tracepoint program once, with no arguments, on the calling CPU (`BPF_PROG_TEST_RUN`, 5.10
    /// for raw tracepoints); returns its return value.
    pub fn test_run(&self) -> io::Result<u32> {
        self.test_run_with(&[])
    }

    /// Runs a raw-tracepoint program once with `args` as the tracepoint's arguments, on the calling CPU and as
    /// the calling thread (`current`); returns its return value.
    pub fn test_run_with(&self, args: &[u64]) -> io::Result<u32> {
        let mut attr = Attr::new();
        attr.u32(0, self.raw() as u32);
        if !args.is_empty() {
            // ctx_size_in and ctx_in of the attr's test-run member.
            attr.u32(40, (args.len() * 8) as u32)
                .u64(48, args.as_ptr() as u64);
        }
        bpf(BPF_PROG_TEST_RUN, &mut attr)?;
        Ok(u32::from_ne_bytes(
            attr.0[4..8].try_into().expect("4 bytes in range"),
        ))
    }
}

/// An attached raw tracepoint; closing it (drop) detaches the program.
#[derive(Debug)]
pub struct Attachment(#[allow(dead_code)] OwnedFd);

/// Attaches `prog` to the raw tracepoint `name` (`BPF_RAW_TRACEPOINT_OPEN`, 4.17). ENOENT: no such tracepoint.
pub fn raw_tracepoint_open(name: &str, prog: &ProgFd) -> io::Result<Attachment> {
    let name = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut attr = Attr::new();
    attr.u64(0, name.as_ptr() as u64).u32(8, prog.raw() as u32);
    let fd = bpf(BPF_RAW_TRACEPOINT_OPEN, &mut attr)?;
    Ok(Attachment(owned(fd)))
}
