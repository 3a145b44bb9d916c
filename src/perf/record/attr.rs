//! The `perf_event_attr` bport asks the kernel for, its byte encoding, and the ABI negotiation that fits it to the
//! running kernel and to a `--kernel` cap.
//!
//! Negotiation (DESIGN "ABI negotiation"; perf's `evsel__open_cpu` fallbacks, samply's attr probing):
//! 1. the attr starts in the newest layout we know and is capped to the target ABI (sizes, flags, sample bits);
//! 2. E2BIG: the kernel wrote its own struct size into `size`; retry with that size if the fields we use fit;
//! 3. EINVAL: drop optional features one at a time in [`DROP_ORDER`] (newest first), logging each, and retry;
//! 4. ENOENT/EOPNOTSUPP/ENODEV on a hardware event: no PMU (typical in VMs) — fall back to `cpu-clock`.
//!
//! Owns the layout of the attr bytes we send; the table of which kernel has what is `perf::abi`.

use super::sys::AttrBuf;
use crate::perf::abi::{self, KernelAbi};

/// The fields of `perf_event_attr` the recorder sets; everything else is zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventAttr {
    /// `type` (PERF_TYPE_*).
    pub type_: u32,
    /// `size` sent to the kernel and written to the file.
    pub size: u32,
    /// `config`.
    pub config: u64,
    /// `sample_period` or, with `ATTR_FLAG_FREQ`, `sample_freq`.
    pub sample_period_or_freq: u64,
    /// `sample_type` (PERF_SAMPLE_*).
    pub sample_type: u64,
    /// `read_format`.
    pub read_format: u64,
    /// The flags word (`abi::ATTR_FLAG_*`).
    pub flags: u64,
    /// `wakeup_events` or, with `ATTR_FLAG_WATERMARK`, `wakeup_watermark` in bytes.
    pub wakeup: u32,
    /// `branch_sample_type` (PERF_SAMPLE_BRANCH_*).
    pub branch_sample_type: u64,
    /// `sample_regs_user` (PERF_REG_* bit mask).
    pub sample_regs_user: u64,
    /// `sample_stack_user` in bytes.
    pub sample_stack_user: u32,
}

impl EventAttr {
    /// The byte image of the attr, `size` bytes meaningful, the rest zero.
    pub fn encode(&self) -> AttrBuf {
        let mut b = AttrBuf([0; AttrBuf::CAPACITY]);
        let mut put = |at: usize, bytes: &[u8]| b.0[at..at + bytes.len()].copy_from_slice(bytes);
        put(0, &self.type_.to_ne_bytes());
        put(4, &self.size.to_ne_bytes());
        put(8, &self.config.to_ne_bytes());
        put(16, &self.sample_period_or_freq.to_ne_bytes());
        put(24, &self.sample_type.to_ne_bytes());
        put(32, &self.read_format.to_ne_bytes());
        put(40, &self.flags.to_ne_bytes());
        put(48, &self.wakeup.to_ne_bytes());
        put(72, &self.branch_sample_type.to_ne_bytes());
        put(80, &self.sample_regs_user.to_ne_bytes());
        put(88, &self.sample_stack_user.to_ne_bytes());
        b
    }

    /// The smallest layout that holds every non-zero field: the size to write into a file, so that old perf
    /// versions, which reject attrs larger than their own struct (PERF-FACTS §4.4), still read it.
    pub fn minimal_size(&self) -> u32 {
        if self.sample_regs_user != 0 || self.sample_stack_user != 0 {
            96
        } else if self.branch_sample_type != 0 {
            80
        } else {
            // VER1 (72): perf itself never wrote VER0 attrs after 2.6.33, so stay at the size readers expect most.
            72
        }
    }

    /// Whether `flags` has all of `bits`.
    pub fn has(&self, bits: u64) -> bool {
        self.flags & bits == bits
    }
}

/// Optional attr flags in the order they are dropped on EINVAL: newest first, as perf's fallbacks do, so a kernel
/// that lacks a recent feature loses only that. Names and versions come from the `perf::abi` table.
pub const DROP_ORDER: [u64; 5] = [
    abi::ATTR_FLAG_COMM_EXEC,
    abi::ATTR_FLAG_MMAP2,
    abi::ATTR_FLAG_EXCLUDE_CALLCHAIN_USER,
    abi::ATTR_FLAG_SAMPLE_ID_ALL,
    abi::ATTR_FLAG_MMAP_DATA,
];

/// `name (Linux X.Y)` of an attr flag, from the ABI table.
pub fn describe_flag(flag: u64) -> String {
    match abi::table::find(abi::table::ATTR_FLAGS, flag) {
        Some(item) => format!("{} (Linux {})", item.name, item.since),
        None => format!("attr flag {flag:#x}"),
    }
}

/// Applies a target ABI's limits: attr size, flag bits and sample bits the target lacks are removed and reported
/// as `(what, reason)` pairs. The caller decides whether a removed sample bit is fatal (DWARF without REGS_USER).
pub fn cap_to_abi(attr: &mut EventAttr, target: &KernelAbi) -> Vec<String> {
    let mut notes = Vec::new();
    attr.size = target.cap_attr_size(attr.size);
    for flag in DROP_ORDER {
        if attr.flags & flag != 0 && !target.supports_flag(flag) {
            attr.flags &= !flag;
            notes.push(format!("{} is not in the target ABI", describe_flag(flag)));
        }
    }
    let unsupported = attr.sample_type & !target.sample_types;
    if unsupported != 0 {
        attr.sample_type &= !unsupported;
        notes.push(format!(
            "sample_type bits {unsupported:#x} are not in the target ABI"
        ));
    }
    if attr.branch_sample_type & !target.branch_sample_types != 0 {
        notes.push(format!(
            "branch_sample_type bits {:#x} are not in the target ABI",
            attr.branch_sample_type & !target.branch_sample_types
        ));
        attr.branch_sample_type = 0;
        attr.sample_type &= !abi::PERF_SAMPLE_BRANCH_STACK;
    }
    notes
}

/// What to do after the kernel rejected an attr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Retry {
    /// Try again with this changed attr; the string says what changed (logged, and kept in the outcome).
    With(EventAttr, String),
    /// Nothing left to change.
    GiveUp,
}

/// The next attempt after `errno`, or [`Retry::GiveUp`]. `kernel_size` is the `size` field after the failed call
/// (the kernel's own struct size on E2BIG).
pub fn next_attempt(attr: &EventAttr, errno: i32, kernel_size: u32) -> Retry {
    match errno {
        libc::E2BIG if kernel_size >= abi::PERF_ATTR_SIZE_VER0 && kernel_size < attr.size => {
            if attr.minimal_size() > kernel_size {
                // The fields we need do not exist in that kernel: no smaller attr can work.
                return Retry::GiveUp;
            }
            let mut next = attr.clone();
            next.size = kernel_size;
            Retry::With(
                next,
                format!("kernel attr size is {kernel_size} bytes (E2BIG), retrying with it"),
            )
        }
        libc::EINVAL => {
            for flag in DROP_ORDER {
                if attr.flags & flag != 0 {
                    let mut next = attr.clone();
                    next.flags &= !flag;
                    return Retry::With(
                        next,
                        format!(
                            "kernel rejected the attr (EINVAL); dropping {}",
                            describe_flag(flag)
                        ),
                    );
                }
            }
            Retry::GiveUp
        }
        _ => Retry::GiveUp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dwarf_attr() -> EventAttr {
        EventAttr {
            type_: 1,
            size: abi::PERF_ATTR_SIZE_NEWEST,
            config: 0,
            sample_period_or_freq: 999,
            sample_type: abi::PERF_SAMPLE_IP
                | abi::PERF_SAMPLE_TID
                | abi::PERF_SAMPLE_CALLCHAIN
                | abi::PERF_SAMPLE_REGS_USER
                | abi::PERF_SAMPLE_STACK_USER,
            read_format: 0,
            flags: abi::ATTR_FLAG_FREQ
                | abi::ATTR_FLAG_MMAP
                | abi::ATTR_FLAG_MMAP2
                | abi::ATTR_FLAG_COMM_EXEC
                | abi::ATTR_FLAG_SAMPLE_ID_ALL,
            wakeup: 0,
            branch_sample_type: 0,
            sample_regs_user: 0xff0fff,
            sample_stack_user: 8192,
        }
    }

    #[test]
    fn encoding_puts_fields_at_their_uapi_offsets() {
        let b = dwarf_attr().encode();
        let u64_at = |o: usize| u64::from_ne_bytes(b.0[o..o + 8].try_into().unwrap());
        assert_eq!(b.size(), 136);
        assert_eq!(u64_at(16), 999);
        assert_eq!(
            u64_at(40),
            abi::ATTR_FLAG_FREQ
                | abi::ATTR_FLAG_MMAP
                | abi::ATTR_FLAG_MMAP2
                | abi::ATTR_FLAG_COMM_EXEC
                | abi::ATTR_FLAG_SAMPLE_ID_ALL
        );
        assert_eq!(u64_at(80), 0xff0fff);
        assert_eq!(u32::from_ne_bytes(b.0[88..92].try_into().unwrap()), 8192);
        assert!(b.0[92..].iter().all(|&x| x == 0));
    }

    #[test]
    fn einval_drops_features_newest_first_then_gives_up() {
        let mut attr = dwarf_attr();
        attr.flags |= abi::ATTR_FLAG_EXCLUDE_CALLCHAIN_USER | abi::ATTR_FLAG_MMAP_DATA;
        let mut dropped = Vec::new();
        while let Retry::With(next, why) = next_attempt(&attr, libc::EINVAL, attr.size) {
            dropped.push(why);
            attr = next;
        }
        assert_eq!(
            dropped,
            [
                "kernel rejected the attr (EINVAL); dropping comm_exec (Linux 3.16)",
                "kernel rejected the attr (EINVAL); dropping mmap2 (Linux 3.16)",
                "kernel rejected the attr (EINVAL); dropping exclude_callchain_user (Linux 3.7)",
                "kernel rejected the attr (EINVAL); dropping sample_id_all (Linux 2.6.38)",
                "kernel rejected the attr (EINVAL); dropping mmap_data (Linux 2.6.36)",
            ]
        );
        assert_eq!(attr.flags, abi::ATTR_FLAG_FREQ | abi::ATTR_FLAG_MMAP);
    }

    #[test]
    fn e2big_takes_the_kernel_size_unless_our_fields_do_not_fit() {
        let attr = dwarf_attr();
        match next_attempt(&attr, libc::E2BIG, 112) {
            Retry::With(next, _) => assert_eq!(next.size, 112),
            Retry::GiveUp => panic!("112 holds the DWARF fields"),
        }
        // A 3.4 kernel (80 bytes) has no sample_regs_user: retrying cannot help.
        assert_eq!(next_attempt(&attr, libc::E2BIG, 80), Retry::GiveUp);
        // A nonsense size is not taken.
        assert_eq!(next_attempt(&attr, libc::E2BIG, 0), Retry::GiveUp);
    }

    #[test]
    fn minimal_size_follows_the_fields_in_use() {
        let mut attr = dwarf_attr();
        assert_eq!(attr.minimal_size(), 96);
        attr.sample_regs_user = 0;
        attr.sample_stack_user = 0;
        assert_eq!(attr.minimal_size(), 72);
        attr.branch_sample_type = 1;
        assert_eq!(attr.minimal_size(), 80);
    }
}
