//! LBR call-stack callchains: the user part of a chain rebuilt from the hardware's call stack
//! (`PERF_SAMPLE_BRANCH_CALL_STACK`, Haswell and later, kernel 4.1).
//!
//! Follows perf's `resolve_lbr_callchain_sample` (tools/perf/util/machine.c): the kernel part of the callchain up
//! to `PERF_CONTEXT_USER` is kept, then the user part is `entries[0].to` (where the innermost recorded call went)
//! followed by every entry's `from` (the call sites, innermost first). When the callchain has no user context the
//! sample was not a user sample and the kernel chain is used unchanged.

use super::fp::{parse_callchain, PERF_CONTEXT_USER};
use super::{ChainFrame, Context, FrameAddress};

/// One LBR entry: a taken branch (here: a call) from `from` to `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchEntry {
    /// The address of the branch (call) instruction.
    pub from: u64,
    /// The branch target.
    pub to: u64,
}

/// Builds the callchain for an LBR call-stack sample; `None` when the callchain has no user part (perf then falls
/// back to the plain callchain).
pub fn stitch(
    callchain: &[u64],
    lbr: &[BranchEntry],
    max_frames: usize,
) -> Option<Vec<ChainFrame>> {
    let user_at = callchain.iter().position(|&ip| ip == PERF_CONTEXT_USER)?;
    let mut frames = parse_callchain(&callchain[..user_at], max_frames);
    let Some(first) = lbr.first() else {
        // No branch records: keep the kernel's own user chain.
        return Some(parse_callchain(callchain, max_frames));
    };
    let user = Some(Context::User);
    frames.push(ChainFrame {
        addr: FrameAddress::InstructionPointer(first.to),
        context: user,
    });
    for entry in lbr {
        // A call site is the call instruction itself, not a return address: no −1 on lookup.
        frames.push(ChainFrame {
            addr: FrameAddress::InstructionPointer(entry.from),
            context: user,
        });
    }
    frames.truncate(max_frames);
    Some(frames)
}

#[cfg(test)]
mod tests {
    use super::super::fp::PERF_CONTEXT_KERNEL;
    use super::*;

    #[test]
    fn user_part_comes_from_the_call_stack() {
        let chain = [
            PERF_CONTEXT_KERNEL,
            0xffff_0010,
            PERF_CONTEXT_USER,
            0x40_1724,
            0xdead,
        ];
        let lbr = [
            BranchEntry {
                from: 0x40_1736,
                to: 0x40_1700,
            },
            BranchEntry {
                from: 0x40_1756,
                to: 0x40_1730,
            },
            BranchEntry {
                from: 0x40_154e,
                to: 0x40_1750,
            },
        ];
        let got: Vec<(u64, Option<Context>)> = stitch(&chain, &lbr, 127)
            .expect("has a user part")
            .iter()
            .map(|f| (f.addr.lookup_address(), f.context))
            .collect();
        assert_eq!(
            got,
            vec![
                (0xffff_0010, Some(Context::Kernel)),
                (0x40_1700, Some(Context::User)),
                (0x40_1736, Some(Context::User)),
                (0x40_1756, Some(Context::User)),
                (0x40_154e, Some(Context::User)),
            ]
        );
        assert_eq!(stitch(&[PERF_CONTEXT_KERNEL, 0xffff_0010], &lbr, 127), None);
    }
}
