//! Frame-pointer callchains: the kernel's own (the `PERF_SAMPLE_CALLCHAIN` array with its `PERF_CONTEXT_*`
//! markers) and a walk of the RBP chain through a user stack snapshot.
//!
//! The kernel walks frame pointers itself when `-g` is used; perf only splits the array by its markers
//! (tools/perf/util/machine.c `thread__resolve_callchain_sample`). The RBP walk here serves LBR stitching and
//! tests; it reads saved `(rbp, return address)` pairs as x86_64 code built with `-fno-omit-frame-pointer` lays
//! them out.

use super::{ChainFrame, Context, FrameAddress, RegsX86_64, StackSnapshot, StopReason, Unwound};

// The markers (include/uapi/linux/perf_event.h) live in the one ABI table; re-exported for unwind's users.
pub use crate::perf::abi::{
    PERF_CONTEXT_GUEST, PERF_CONTEXT_GUEST_KERNEL, PERF_CONTEXT_GUEST_USER, PERF_CONTEXT_HV,
    PERF_CONTEXT_KERNEL, PERF_CONTEXT_MAX, PERF_CONTEXT_USER,
};

/// The context a marker value announces; `None` for an unknown marker (perf skips those too).
pub fn context_of_marker(value: u64) -> Option<Context> {
    Some(match value {
        PERF_CONTEXT_HV => Context::Hypervisor,
        PERF_CONTEXT_KERNEL => Context::Kernel,
        PERF_CONTEXT_USER => Context::User,
        PERF_CONTEXT_GUEST => Context::Guest,
        PERF_CONTEXT_GUEST_KERNEL => Context::GuestKernel,
        PERF_CONTEXT_GUEST_USER => Context::GuestUser,
        _ => return None,
    })
}

/// Whether a callchain holds a value in the marker range that is no known marker. perf then discards the whole
/// chain as corrupted (machine.c: "invalid callchain context"), and so does [`parse_callchain`].
pub fn is_corrupt(ips: &[u64]) -> bool {
    ips.iter()
        .any(|&ip| ip >= PERF_CONTEXT_MAX && context_of_marker(ip).is_none())
}

/// Splits a kernel callchain by its markers. The first address of each context is the interrupted instruction
/// (an [`FrameAddress::InstructionPointer`]); the others are return addresses. `max_frames` counts addresses,
/// not markers (perf's `max_stack`). A corrupted chain ([`is_corrupt`]) gives no frames.
pub fn parse_callchain(ips: &[u64], max_frames: usize) -> Vec<ChainFrame> {
    let mut frames = Vec::with_capacity(ips.len().min(max_frames));
    parse_callchain_into(ips, max_frames, &mut frames);
    frames
}

/// [`parse_callchain`] appending to `frames` (a buffer reused across samples); `max_frames` counts only the
/// frames this call adds.
pub fn parse_callchain_into(ips: &[u64], max_frames: usize, out: &mut Vec<ChainFrame>) {
    if is_corrupt(ips) {
        return;
    }
    let base = out.len();
    let frames = out;
    let mut context = None;
    let mut first_in_context = true;
    for &ip in ips {
        if frames.len() - base >= max_frames {
            break;
        }
        if ip >= PERF_CONTEXT_MAX {
            if let Some(c) = context_of_marker(ip) {
                context = Some(c);
            }
            first_in_context = true;
            continue;
        }
        let addr = if first_in_context {
            FrameAddress::InstructionPointer(ip)
        } else {
            FrameAddress::ReturnAddress(ip)
        };
        first_in_context = false;
        frames.push(ChainFrame { addr, context });
    }
}

/// Walks the RBP chain of a user stack: at each frame the caller's RBP is at `[rbp]` and the return address at
/// `[rbp + 8]`. Stops when RBP leaves the snapshot, does not grow, or the return address is zero.
pub fn unwind(regs: RegsX86_64, stack: &StackSnapshot<'_>, max_frames: usize) -> Unwound {
    let mut frames = vec![FrameAddress::InstructionPointer(regs.ip)];
    let mut bp = regs.bp;
    let mut sp = regs.sp;
    let stop = loop {
        if frames.len() >= max_frames {
            break StopReason::MaxFrames;
        }
        if bp == 0 {
            break StopReason::Outermost;
        }
        if bp < sp {
            break StopReason::StackDidNotGrow;
        }
        let (Some(next_bp), Some(ra)) = (stack.read_u64(bp), stack.read_u64(bp.wrapping_add(8)))
        else {
            break StopReason::StackTooSmall { addr: bp };
        };
        if ra == 0 {
            break StopReason::Outermost;
        }
        frames.push(FrameAddress::ReturnAddress(ra));
        sp = bp.wrapping_add(16);
        if next_bp != 0 && next_bp <= bp {
            break StopReason::StackDidNotGrow;
        }
        bp = next_bp;
    };
    Unwound { frames, stop }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callchain_markers_split_contexts_and_mark_the_first_address_as_ip() {
        let ips = [
            PERF_CONTEXT_KERNEL,
            0xffff_ffff_8100_0010,
            0xffff_ffff_8100_0020,
            PERF_CONTEXT_USER,
            0x40_1724,
            0x40_1770,
        ];
        let frames = parse_callchain(&ips, 127);
        assert_eq!(
            frames,
            vec![
                ChainFrame {
                    addr: FrameAddress::InstructionPointer(0xffff_ffff_8100_0010),
                    context: Some(Context::Kernel)
                },
                ChainFrame {
                    addr: FrameAddress::ReturnAddress(0xffff_ffff_8100_0020),
                    context: Some(Context::Kernel)
                },
                ChainFrame {
                    addr: FrameAddress::InstructionPointer(0x40_1724),
                    context: Some(Context::User)
                },
                ChainFrame {
                    addr: FrameAddress::ReturnAddress(0x40_1770),
                    context: Some(Context::User)
                },
            ]
        );
        assert_eq!(parse_callchain(&ips, 3).len(), 3);
        // Seen in a real `perf record -a` file: a chain ending in -1; perf 6.1 prints no frames for it.
        let corrupt = [
            PERF_CONTEXT_KERNEL,
            0xffff_ffff_8100_0010,
            PERF_CONTEXT_USER,
            0x3,
            u64::MAX,
        ];
        assert!(is_corrupt(&corrupt));
        assert_eq!(parse_callchain(&corrupt, 127), vec![]);
    }

    #[test]
    fn rbp_walk_follows_saved_pairs_and_stops_at_zero() {
        // Stack at 0x1000: [0x1000] = locals, frame 1 at 0x1010: (bp=0x1030, ra=0x401770),
        // frame 2 at 0x1030: (bp=0, ra=0x40155c).
        let mut bytes = vec![0u8; 0x40];
        let mut put = |addr: u64, v: u64| {
            let o = (addr - 0x1000) as usize;
            bytes[o..o + 8].copy_from_slice(&v.to_le_bytes());
        };
        put(0x1010, 0x1030);
        put(0x1018, 0x40_1770);
        put(0x1030, 0);
        put(0x1038, 0x40_155c);
        let stack = StackSnapshot {
            start: 0x1000,
            bytes: &bytes,
        };
        let regs = RegsX86_64::new(0x40_1724, 0x1000, 0x1010);
        let out = unwind(regs, &stack, 127);
        assert_eq!(
            out.frames,
            vec![
                FrameAddress::InstructionPointer(0x40_1724),
                FrameAddress::ReturnAddress(0x40_1770),
                FrameAddress::ReturnAddress(0x40_155c),
            ]
        );
        assert_eq!(out.stop, StopReason::Outermost);
    }
}
