//! The Linux perf cross-check of readability: when perf is installed, `perf script` must read the file bport
//! recorded and show the same chains bport's script shows.
//!
//! perf is run with an explicit field list (`-F pid,tid,time,ip,sym,dso`) so its output does not depend on the
//! user's perfconfig, and compared sample by sample on the part of the chain the check is about: the user frames
//! up to `main`.

use super::{checks, PerfCheck, Sample};
use std::path::Path;
use std::process::Command;

/// One sample as `perf script` printed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerfSample {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Time as printed: microseconds (perf prints seconds with 6 decimals).
    pub time_us: u64,
    /// User frames, innermost first: the symbol (`[unknown]` when perf could not resolve one).
    pub symbols: Vec<String>,
}

/// Parses `perf script -F pid,tid,time,ip,sym,dso` output: a header line `  PID/TID TIME:` per sample (padded
/// with spaces), then one tab-indented `ADDR SYM (DSO)` line per frame, samples separated by blank lines. Kernel frames are dropped.
pub fn parse_perf_script(text: &str) -> Vec<PerfSample> {
    let mut out: Vec<PerfSample> = Vec::new();
    let mut current: Option<PerfSample> = None;
    for line in text.lines() {
        if line.trim().is_empty() {
            out.extend(current.take());
            continue;
        }
        if line.starts_with('\t') {
            if let Some(s) = current.as_mut() {
                let t = line.trim();
                // "ADDR SYM+OFF (DSO)" or "ADDR [unknown] (DSO)"
                let rest = t.split_once(' ').map_or("", |(_, r)| r);
                let (sym, dso) = match rest.rfind(" (") {
                    Some(i) => (&rest[..i], rest[i + 2..].trim_end_matches(')')),
                    None => (rest, ""),
                };
                if dso.starts_with("[kernel") || dso.ends_with(".ko") {
                    continue;
                }
                let sym = sym.rsplit_once("+0x").map_or(sym, |(s, _)| s);
                s.symbols.push(sym.to_owned());
            }
            continue;
        }
        out.extend(current.take());
        current = parse_header(line);
    }
    out.extend(current);
    out
}

fn parse_header(line: &str) -> Option<PerfSample> {
    let mut words = line.split_whitespace();
    let (pid, tid) = words.next()?.split_once('/')?;
    let time = words.next()?.trim_end_matches(':');
    let (secs, frac) = time.split_once('.')?;
    // `get`, not `[..6]`: a malformed time with a multi-byte character there must not panic.
    let micros: u64 = format!("{frac:0<6}").get(..6)?.parse().ok()?;
    Some(PerfSample {
        pid: pid.parse().ok()?,
        tid: tid.parse().ok()?,
        time_us: secs.parse::<u64>().ok()? * 1_000_000 + micros,
        symbols: Vec::new(),
    })
}

/// The part of a chain compared: frames up to and including `main` (at most the expected chain's length).
fn key<S: AsRef<str>>(symbols: &[S]) -> Vec<String> {
    let mut out = Vec::new();
    for s in symbols.iter().take(super::workloads::EXPECTED_CHAIN.len()) {
        out.push(s.as_ref().to_owned());
        if s.as_ref() == "main" {
            break;
        }
    }
    out
}

fn chain_text(symbols: &[String]) -> String {
    if symbols.is_empty() {
        "no user frames".to_owned()
    } else {
        symbols.join(" ← ")
    }
}

/// Compares bport's samples of the workload with perf's, sample by sample (matched by tid and time).
///
/// Only the samples the chain check judges (those in the hot leaf, [`checks::is_leaf_sample`]) are compared:
/// they carry the chain under test. Elsewhere (libc's start code, the timer calls) the two tools may name a
/// function by different aliases at one address (`__clock_gettime` / `clock_gettime`), which says nothing about
/// the chains.
pub fn compare(bport: &[Sample], perf: &[PerfSample]) -> PerfCheck {
    let mut compared = 0;
    for b in bport.iter().filter(|s| checks::is_leaf_sample(s)) {
        let time_us = b.time / 1000;
        let Some(p) = perf.iter().find(|p| p.tid == b.tid && p.time_us == time_us) else {
            return PerfCheck::Mismatch {
                detail: format!(
                    "perf script shows no sample of tid {} at {}.{:06}",
                    b.tid,
                    time_us / 1_000_000,
                    time_us % 1_000_000
                ),
            };
        };
        let ours: Vec<String> = b
            .frames
            .iter()
            .map(|f| f.symbol.clone().unwrap_or_else(|| "[unknown]".to_owned()))
            .collect();
        let (ours, theirs) = (key(&ours), key(&p.symbols));
        if ours != theirs {
            return PerfCheck::Mismatch {
                detail: format!(
                    "sample of tid {} at {}.{:06}: bport shows {}, perf shows {}",
                    b.tid,
                    time_us / 1_000_000,
                    time_us % 1_000_000,
                    chain_text(&ours),
                    chain_text(&theirs)
                ),
            };
        }
        compared += 1;
    }
    PerfCheck::Same { samples: compared }
}

/// Runs `perf script` on `data` and compares its chains with bport's `samples`.
pub fn check(perf: &Path, data: &Path, samples: &[Sample]) -> PerfCheck {
    let out = Command::new(perf)
        .args(["script", "-F", "pid,tid,time,ip,sym,dso", "-i"])
        .arg(data)
        .env("PAGER", "cat")
        .output();
    match out {
        Err(e) => PerfCheck::Mismatch {
            detail: format!("cannot run {}: {e}", perf.display()),
        },
        Ok(o) if !o.status.success() => PerfCheck::Mismatch {
            detail: format!(
                "perf script failed ({}): {}",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        },
        Ok(o) => compare(
            samples,
            &parse_perf_script(&String::from_utf8_lossy(&o.stdout)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::Frame;

    const SCRIPT: &str = "    4242/4242  12.000001:
\t          401136 chain_c+0x16 (/tmp/w/chain-fp)
\t          401175 chain_b+0x15 (/tmp/w/chain-fp)
\t          4011a5 chain_a+0x15 (/tmp/w/chain-fp)
\t          401050 main+0x30 (/tmp/w/chain-fp)
\t          401c2a __libc_start_call_main+0x6a (/tmp/w/chain-fp)

    4242/4242  12.000251:
\tffffffff81000000 asm_sysvec_apic_timer_interrupt+0x16 ([kernel.kallsyms])
\t          401136 chain_c+0x16 (/tmp/w/chain-fp)
\t               0 [unknown] ([unknown])
";

    fn ours(time: u64, syms: &[&str]) -> Sample {
        Sample {
            time,
            pid: 4242,
            tid: 4242,
            in_user: true,
            frames: syms
                .iter()
                .map(|s| Frame {
                    address: 0,
                    symbol: (*s != "[unknown]").then(|| s.to_string()),
                    dso: String::new(),
                })
                .collect(),
        }
    }

    /// A header whose time has a multi-byte character where the microseconds are cut: no sample, no panic.
    #[test]
    fn malformed_times_with_multibyte_text_are_skipped() {
        for time in ["12.00000é:", "12.é:", "12.ñññ:", "1.🐛"] {
            assert!(
                parse_header(&format!("4242/4242 {time}")).is_none(),
                "{time}"
            );
        }
        assert!(parse_header("4242/4242 12.5:").is_some());
    }

    #[test]
    fn parses_perf_script_samples_without_kernel_frames() {
        let samples = parse_perf_script(SCRIPT);
        assert_eq!(
            samples,
            vec![
                PerfSample {
                    pid: 4242,
                    tid: 4242,
                    time_us: 12_000_001,
                    symbols: vec![
                        "chain_c".into(),
                        "chain_b".into(),
                        "chain_a".into(),
                        "main".into(),
                        "__libc_start_call_main".into()
                    ],
                },
                PerfSample {
                    pid: 4242,
                    tid: 4242,
                    time_us: 12_000_251,
                    symbols: vec!["chain_c".into(), "[unknown]".into()],
                },
            ]
        );
    }

    #[test]
    fn same_chains_pass_and_the_first_difference_is_named() {
        let perf = parse_perf_script(SCRIPT);
        let good = [
            ours(
                12_000_001_500,
                &["chain_c", "chain_b", "chain_a", "main", "_start"],
            ),
            ours(12_000_251_000, &["chain_c", "[unknown]"]),
        ];
        assert_eq!(compare(&good, &perf), PerfCheck::Same { samples: 2 });
        let bad = [ours(12_000_251_999, &["chain_c", "chain_b"])];
        assert_eq!(
            compare(&bad, &perf),
            PerfCheck::Mismatch {
                detail: "sample of tid 4242 at 12.000251: bport shows chain_c ← chain_b, perf shows chain_c ← [unknown]"
                    .into()
            }
        );
        // Outside the leaf, alias choices may differ between the tools; those samples are not compared.
        let elsewhere = [ours(14_000_000_000, &["__clock_gettime", "now_ms", "main"])];
        assert_eq!(compare(&elsewhere, &perf), PerfCheck::Same { samples: 0 });
        let missing = [ours(13_000_000_000, &["chain_c"])];
        assert!(matches!(
            compare(&missing, &perf),
            PerfCheck::Mismatch { .. }
        ));
    }
}
