//! The checks behind each cell of the verify report, as pure functions over what record and script produced:
//! "does the hot leaf carry the full expected chain", "is the cell's verdict what the mode and build predict".
//!
//! Recording and scripting happen in [`super::matrix`]; the branch check in [`super::branch`]. Keeping the verdicts
//! here, free of I/O, lets tests feed them exact chains.

use super::workloads::{EXPECTED_CHAIN, LEAF};
use super::{CellStatus, ChainStats, Mode, Sample};
use crate::verify::workloads::Build;

/// The share of leaf samples that must carry the full chain for a cell to pass (at least 90%).
/// A frame-pointer walk sampled in the leaf's prologue (before `push rbp`) legitimately loses the caller, so
/// 100% would be flaky; 90% still fails every broken unwinder we know of by a wide margin.
pub const PASS_PERCENT: usize = 90;

/// Whether `sample` counts for the leaf: its innermost user frame is [`LEAF`], or it was taken in user mode and
/// has no user frame at all (what script shows when it ignores the DWARF registers and stack: the workload spends
/// its time in the leaf, and such a sample certainly lacks the chain).
pub fn is_leaf_sample(sample: &Sample) -> bool {
    match sample.frames.first() {
        Some(f) => f.symbol.as_deref() == Some(LEAF),
        None => sample.in_user,
    }
}

/// Whether `sample`'s chain starts with the full expected chain, innermost first:
/// `chain_c, chain_b, chain_a, main` (frames beyond `main`, such as libc's start code, are not checked).
pub fn has_full_chain(sample: &Sample) -> bool {
    let expected = EXPECTED_CHAIN.iter().rev();
    sample.frames.len() >= EXPECTED_CHAIN.len()
        && sample
            .frames
            .iter()
            .zip(expected)
            .all(|(f, want)| f.symbol.as_deref() == Some(*want))
}

/// Counts leaf samples and full chains, and keeps the first leaf sample without the full chain.
pub fn chain_stats(samples: &[Sample]) -> ChainStats {
    let mut stats = ChainStats {
        samples: samples.len(),
        leaf_samples: 0,
        full_chains: 0,
        first_bad: None,
    };
    for sample in samples.iter().filter(|s| is_leaf_sample(s)) {
        stats.leaf_samples += 1;
        if has_full_chain(sample) {
            stats.full_chains += 1;
        } else if stats.first_bad.is_none() {
            stats.first_bad = Some(sample.clone());
        }
    }
    stats
}

/// Whether the stats meet the pass threshold (and there was at least one leaf sample to judge).
pub fn meets_threshold(stats: &ChainStats) -> bool {
    stats.leaf_samples > 0 && stats.full_chains * 100 >= stats.leaf_samples * PASS_PERCENT
}

/// Whether `mode` cannot work on `build` by construction: a frame-pointer walk over code built without frame
/// pointers. Such a cell is `expected-fail`, and must in fact fail.
pub fn expected_to_fail(build: Build, mode: Mode) -> bool {
    build == Build::NoFramePointer && mode == Mode::Fp
}

/// The verdict of a recorded and scripted cell.
pub fn verdict(build: Build, mode: Mode, stats: ChainStats) -> CellStatus {
    let ok = meets_threshold(&stats);
    match (expected_to_fail(build, mode), ok) {
        (false, true) => CellStatus::Pass { stats },
        (false, false) => CellStatus::Fail { stats },
        (true, false) => CellStatus::ExpectedFail { stats },
        (true, true) => CellStatus::Surprise { stats },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::Frame;

    fn sample(time: u64, symbols: &[&str]) -> Sample {
        Sample {
            time,
            pid: 7,
            tid: 7,
            in_user: true,
            frames: symbols
                .iter()
                .enumerate()
                .map(|(i, s)| Frame {
                    address: 0x401000 + i as u64,
                    symbol: (!s.is_empty()).then(|| s.to_string()),
                    dso: "chain-fp".into(),
                })
                .collect(),
        }
    }

    const FULL: &[&str] = &[
        "chain_c",
        "chain_b",
        "chain_a",
        "main",
        "__libc_start_call_main",
    ];
    const CUT: &[&str] = &["chain_c", ""];

    #[test]
    fn full_chain_needs_every_frame_in_order() {
        assert!(has_full_chain(&sample(1, FULL)));
        assert!(has_full_chain(&sample(1, &FULL[..4])));
        assert!(!has_full_chain(&sample(1, &FULL[..3])));
        assert!(!has_full_chain(&sample(
            1,
            &["chain_c", "chain_a", "chain_b", "main"]
        )));
        assert!(!has_full_chain(&sample(1, CUT)));
        assert!(!is_leaf_sample(&sample(1, &["main"])));
        assert!(
            is_leaf_sample(&sample(1, &[])),
            "a user sample without user frames counts (as bad)"
        );
        let kernel_only = Sample {
            in_user: false,
            ..sample(1, &[])
        };
        assert!(!is_leaf_sample(&kernel_only));
    }

    #[test]
    fn stats_count_leaf_samples_only_and_keep_the_first_bad_one() {
        let samples = vec![
            sample(1, &["main"]),
            sample(2, FULL),
            sample(3, CUT),
            sample(4, FULL),
            sample(5, &["chain_c", "chain_b"]),
        ];
        let stats = chain_stats(&samples);
        assert_eq!(
            (stats.samples, stats.leaf_samples, stats.full_chains),
            (5, 4, 2)
        );
        assert_eq!(stats.first_bad, Some(sample(3, CUT)));
    }

    #[test]
    fn threshold_is_ninety_percent_of_leaf_samples() {
        let mut samples: Vec<Sample> = (0..9).map(|t| sample(t, FULL)).collect();
        samples.push(sample(9, CUT));
        assert!(meets_threshold(&chain_stats(&samples)));
        samples.push(sample(10, CUT));
        assert!(!meets_threshold(&chain_stats(&samples)), "9 of 11 is < 90%");
        assert!(
            !meets_threshold(&chain_stats(&[])),
            "no samples never passes"
        );
    }

    #[test]
    fn verdicts_follow_build_and_mode() {
        let good = chain_stats(&[sample(1, FULL)]);
        let bad = chain_stats(&[sample(1, CUT)]);
        use Build::*;
        assert!(matches!(
            verdict(FramePointer, Mode::Fp, good.clone()),
            CellStatus::Pass { .. }
        ));
        assert!(matches!(
            verdict(FramePointer, Mode::Dwarf, bad.clone()),
            CellStatus::Fail { .. }
        ));
        assert!(matches!(
            verdict(NoFramePointer, Mode::Fp, bad),
            CellStatus::ExpectedFail { .. }
        ));
        assert!(matches!(
            verdict(NoFramePointer, Mode::Fp, good.clone()),
            CellStatus::Surprise { .. }
        ));
        assert!(matches!(
            verdict(NoFramePointer, Mode::Dwarf, good),
            CellStatus::Pass { .. }
        ));
    }
}
