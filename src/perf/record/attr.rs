//! The kernel-facing side of the `perf_event_attr` bport asks for: its byte image for the syscall, the size it is
//! written to a file at, and the ABI negotiation that fits it to the running kernel and to a `--kernel` cap.
//!
//! Negotiation (perf's `evsel__open_cpu` fallbacks, samply's attr probing):
//! 1. the attr starts in the newest layout we know and is capped to the target ABI (sizes, flags, sample bits);
//! 2. E2BIG: the kernel wrote its own struct size into `size`; retry with that size if the fields we use fit;
//! 3. EINVAL: drop optional features one at a time in [`DROP_ORDER`] (newest first), logging each, and retry;
//! 4. ENOENT/EOPNOTSUPP/ENODEV on a hardware event: no PMU (typical in VMs) — fall back to `cpu-clock`.
//!
//! The attr itself and its byte layout are `perf::data::PerfEventAttr`; the table of which kernel has what is
//! `perf::abi`.

use object::endian::NativeEndian;

use crate::perf::abi::{self, KernelAbi};
use crate::perf::data::PerfEventAttr;
use crate::perf::sys::AttrBuf;

/// The byte image `perf_event_open` reads: `attr.size` bytes in the kernel's layout and byte order (the bitfield
/// word too, which is why this goes through [`PerfEventAttr::write`]), the rest of the buffer zero.
pub fn encode(attr: &PerfEventAttr) -> AttrBuf {
    let mut bytes = Vec::with_capacity(AttrBuf::CAPACITY);
    attr.write(attr.size, NativeEndian, &mut bytes);
    let mut b = AttrBuf([0; AttrBuf::CAPACITY]);
    // A size beyond the buffer is refused by `sys::perf_event_open` (E2BIG), which reads `size` back from the
    // buffer; the bytes past the buffer never reach the kernel.
    let n = bytes.len().min(AttrBuf::CAPACITY);
    b.0[..n].copy_from_slice(&bytes[..n]);
    b
}

/// The size to write the attr into a file at: the smallest layout that holds every non-zero field, so that old
/// perf versions, which reject attrs larger than their own struct (perf's `read_attr`), still read it; at least
/// VER1 (72), because perf itself never wrote VER0 attrs after 2.6.33, so stay at the size readers expect most.
/// Negotiation uses it too: a kernel struct smaller than this cannot hold what we ask for.
pub fn file_size(attr: &PerfEventAttr) -> u32 {
    attr.min_size().max(abi::PERF_ATTR_SIZE_VER1)
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

/// Applies a target ABI's limits ([`PerfEventAttr::cap_to`] plus the attr size) and says what was removed, one
/// sentence each. Branch sampling goes as a whole: a partial branch filter would record something else than asked.
/// The caller decides whether a removed sample bit is fatal (DWARF without REGS_USER).
pub fn cap_to_target(attr: &mut PerfEventAttr, target: &KernelAbi) -> Vec<String> {
    attr.size = target.cap_attr_size(attr.size);
    let mut notes = Vec::new();
    for (field, bits) in attr.cap_to(target) {
        match field {
            "flags" => {
                // Optional features in drop order (newest first), then anything else one bit at a time.
                let rest = DROP_ORDER.iter().fold(bits, |rest, &f| rest & !f);
                let named = DROP_ORDER.iter().copied().filter(|&f| bits & f != 0);
                let others = (0..64).map(|i| 1u64 << i).filter(|&f| rest & f != 0);
                for flag in named.chain(others) {
                    notes.push(format!("{} is not in the target ABI", describe_flag(flag)));
                }
            }
            "branch_sample_type" => {
                notes.push(format!(
                    "branch_sample_type bits {bits:#x} are not in the target ABI"
                ));
                attr.branch_sample_type = 0;
                attr.sample_type &= !abi::PERF_SAMPLE_BRANCH_STACK;
            }
            _ => notes.push(format!("{field} bits {bits:#x} are not in the target ABI")),
        }
    }
    notes
}

/// What to do after the kernel rejected an attr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Retry {
    /// Try again with this changed attr; the string says what changed (logged, and kept in the outcome).
    With(PerfEventAttr, String),
    /// Nothing left to change.
    GiveUp,
}

/// The next attempt after `errno`, or [`Retry::GiveUp`]. `kernel_size` is the `size` field after the failed call
/// (the kernel's own struct size on E2BIG).
pub fn next_attempt(attr: &PerfEventAttr, errno: i32, kernel_size: u32) -> Retry {
    match errno {
        libc::E2BIG if kernel_size >= abi::PERF_ATTR_SIZE_VER0 && kernel_size < attr.size => {
            if file_size(attr) > kernel_size {
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

    fn dwarf_attr() -> PerfEventAttr {
        PerfEventAttr {
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
            wakeup_events_or_watermark: 0,
            branch_sample_type: 0,
            sample_regs_user: 0xff0fff,
            sample_stack_user: 8192,
            ..Default::default()
        }
    }

    #[test]
    fn encoding_puts_fields_at_their_uapi_offsets() {
        let b = encode(&dwarf_attr());
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
    fn a_target_without_the_branch_filter_loses_branch_sampling_as_a_whole() {
        let mut target = KernelAbi::newest();
        target.branch_sample_types &= !abi::PERF_SAMPLE_BRANCH_CALL_STACK;
        let mut attr = PerfEventAttr {
            size: abi::PERF_ATTR_SIZE_NEWEST,
            sample_type: abi::PERF_SAMPLE_IP | abi::PERF_SAMPLE_BRANCH_STACK,
            branch_sample_type: abi::PERF_SAMPLE_BRANCH_USER | abi::PERF_SAMPLE_BRANCH_CALL_STACK,
            ..Default::default()
        };
        assert_eq!(
            cap_to_target(&mut attr, &target),
            [format!(
                "branch_sample_type bits {:#x} are not in the target ABI",
                abi::PERF_SAMPLE_BRANCH_CALL_STACK
            )]
        );
        assert_eq!(
            (attr.sample_type, attr.branch_sample_type),
            (abi::PERF_SAMPLE_IP, 0)
        );
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
    fn file_size_follows_the_fields_in_use() {
        let mut attr = dwarf_attr();
        assert_eq!(file_size(&attr), 96);
        attr.sample_regs_user = 0;
        attr.sample_stack_user = 0;
        assert_eq!(file_size(&attr), 72);
        attr.branch_sample_type = 1;
        assert_eq!(file_size(&attr), 80);
    }
}
