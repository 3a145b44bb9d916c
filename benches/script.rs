//! `bport script` against `perf script` on the same perf.data files, in one run.
//!
//! Records with Linux perf (fp and dwarf callchains; the built-in no-frame-pointer workload and a Python run
//! that maps many DSOs; a medium and a large file each), then times both tools on each file, checks that their
//! outputs are identical, and prints a Markdown table of wall times and ratios.
//!
//! Run: `cargo bench --bench script` (needs perf and root or perf_event_paranoid ≤ 1). Sizes scale with
//! `BPORT_BENCH_SECONDS` (default 2 for "medium"; "large" records five times as long). Each tool runs once
//! untimed per file (its output is kept for the comparison), then the best of three runs is taken.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn perf_available() -> bool {
    Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn record(dir: &Path, name: &str, callgraph: &[&str], cmd: &[&str]) -> PathBuf {
    let out = dir.join(format!("{name}.data"));
    let status = Command::new("perf")
        .args(["record", "-q", "-o"])
        .arg(&out)
        .args(callgraph)
        .arg("--")
        .args(cmd)
        .env("HOME", dir)
        .stdout(Stdio::null())
        .status()
        .expect("run perf record");
    assert!(status.success(), "perf record {name} failed");
    out
}

/// Best of `runs` wall times of `cmd`, and its stdout. The output is captured in a first, untimed run (which also
/// warms the page cache and the build-id cache); the timed runs write into a pipe that is drained into one reused
/// buffer, as a consumer such as `inferno-collapse-perf` reads it. Collecting tens of megabytes into a growing
/// `Vec` here instead cost this process about as much as bport's own run on the medium DWARF file, the same for
/// both tools, which pulled every ratio toward 1. Each timed run must write as many bytes as the captured one.
fn time(cmd: &mut dyn FnMut() -> Command, runs: usize) -> (Duration, Vec<u8>) {
    let captured = cmd().stderr(Stdio::null()).output().expect("run script");
    assert!(captured.status.success(), "{:?} failed", cmd());
    let mut best = Duration::MAX;
    let mut buf = vec![0u8; 1 << 20];
    for _ in 0..runs {
        let start = Instant::now();
        let mut child = cmd()
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run script");
        let mut pipe = child.stdout.take().expect("piped stdout");
        let mut written = 0;
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => panic!("reading {:?}: {e}", cmd()),
            }
        }
        let status = child.wait().expect("wait for script");
        best = best.min(start.elapsed());
        assert!(status.success(), "{:?} failed", cmd());
        assert_eq!(
            written,
            captured.stdout.len(),
            "{:?}: output length changed between runs",
            cmd()
        );
    }
    (best, captured.stdout)
}

fn main() {
    if !perf_available() {
        eprintln!("SKIPPED (perf not found; apt-get install linux-perf)");
        return;
    }
    let bport = env!("CARGO_BIN_EXE_bport");
    let seconds: u64 = std::env::var("BPORT_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let dir = tempfile::tempdir().expect("temp dir");
    if std::env::var_os("BPORT_BENCH_KEEP").is_some() {
        // Keep the recordings (and their build-id cache) for a look at a difference.
        eprintln!("keeping {}", dir.path().display());
    }
    let exe = bport::verify::workloads::Build::NoFramePointer
        .write_to(dir.path())
        .expect("write workload");
    let exe = exe.to_str().expect("utf-8 path").to_owned();
    let python = |secs: u64| {
        format!(
            "import json, time\nend = time.time() + {secs}\nwhile time.time() < end:\n    json.dumps([{{'a': i, 'b': str(i)}} for i in range(2000)])\n"
        )
    };
    // The interpreter by its real path: a launcher that execs it (pyenv's shim runs `env python3`) would make
    // the recorded process exec, and perf 6.1 unwinds DWARF samples after such an exec from stale unwind data
    // (a named deviation in docs/perf-compat.md), so its output could not be the reference for the rows below.
    let python3 = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "python3".to_owned());
    let mut files = Vec::new();
    for (size, secs) in [("medium", seconds), ("large", seconds * 5)] {
        let ms = (secs * 1000).to_string();
        // -F 10000: this 2-core VM delivers few samples at perf's default rate; more samples make the
        // per-sample cost, not start-up, decide the ratio.
        for (mode, cg) in [
            ("fp", vec!["-F", "10000", "-g"]),
            ("dwarf", vec!["-F", "10000", "--call-graph", "dwarf"]),
        ] {
            let name = format!("chain-{mode}-{size}");
            files.push((name.clone(), record(dir.path(), &name, &cg, &[&exe, &ms])));
            let name = format!("python-{mode}-{size}");
            let script = python(secs);
            files.push((
                name.clone(),
                record(dir.path(), &name, &cg, &[&python3, "-c", &script]),
            ));
        }
    }
    print_header();
    for (name, path) in &files {
        print_row(name, path, bport, dir.path(), 3);
    }

    // Real programs: a large C++ binary (gcc's cc1plus, 30,000 symbols to demangle),
    // system-wide recordings (whatever runs on this shared machine: other builds' rustc and cc1plus, shells),
    // and a compressed (-z) file. The system-wide DWARF file is small and timed once: perf 6.1 spends about half
    // a second per sample there running addr2line over rustc's libraries.
    let have_gxx = Command::new("g++")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_gxx {
        eprintln!("SKIPPED the real-program table (g++ not found; apt-get install g++)");
        return;
    }
    let cpp = dir.path().join("big.cpp");
    std::fs::write(&cpp, BIG_CPP).expect("write big.cpp");
    let cpp = cpp.to_str().expect("utf-8 path").to_owned();
    let compile = ["g++", "-O2", "-g", "-c", cpp.as_str(), "-o", "/dev/null"];
    let mut real = Vec::new();
    for (name, args, cmd, runs) in [
        ("cc1plus-fp", vec!["-F", "10000", "-g"], compile.to_vec(), 3),
        (
            "cc1plus-fp-zstd",
            vec!["-z", "-F", "10000", "-g"],
            compile.to_vec(),
            3,
        ),
        (
            "system-wide-fp",
            vec!["-a", "-F", "2000", "-g"],
            compile.to_vec(),
            3,
        ),
        (
            "system-wide-dwarf",
            vec!["-a", "-F", "25", "--call-graph", "dwarf"],
            compile.to_vec(),
            1,
        ),
    ] {
        let path = record(dir.path(), name, &args, &cmd);
        real.push((name.to_owned(), path, runs));
    }
    println!();
    print_header();
    for (name, path, runs) in real {
        print_row(&name, &path, bport, dir.path(), runs);
    }
    if std::env::var_os("BPORT_BENCH_KEEP").is_some() {
        let _ = dir.keep();
    }
}

/// A translation unit that makes cc1plus work for a few seconds (libstdc++'s regex, containers, streams).
const BIG_CPP: &str = r#"#include <regex>
#include <iostream>
#include <map>
#include <unordered_map>
#include <algorithm>
#include <functional>
#include <memory>
#include <sstream>
#include <variant>
#include <optional>
int main() {
  std::map<std::string, std::vector<std::regex>> m;
  std::unordered_map<int, std::function<std::optional<std::variant<int, std::string>>(int)>> f;
  std::ostringstream os; os << m.size() << f.size();
  std::cout << os.str() << std::endl;
}
"#;

fn print_header() {
    println!("| file | size | perf script | bport script | speed-up | identical |");
    println!("|---|---:|---:|---:|---:|---|");
}

/// Times both tools on one file (best of `runs`) and prints its row.
fn print_row(name: &str, path: &Path, bport: &str, home: &Path, runs: usize) {
    {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let (perf_t, perf_out) = time(
            &mut || {
                let mut c = Command::new("perf");
                c.arg("script").arg("-i").arg(path).env("HOME", home);
                c
            },
            runs,
        );
        let (ours_t, ours_out) = time(
            &mut || {
                let mut c = Command::new(bport);
                c.arg("script").arg("-i").arg(path).env("HOME", home);
                c
            },
            runs,
        );
        if perf_out != ours_out {
            // Say where, so a difference can be named or fixed.
            let (p, o) = (
                String::from_utf8_lossy(&perf_out),
                String::from_utf8_lossy(&ours_out),
            );
            if let Some((a, b)) = p.lines().zip(o.lines()).find(|(a, b)| a != b) {
                eprintln!("{name}: first difference:\n  perf:  {a}\n  bport: {b}");
            } else {
                eprintln!("{name}: one output is a prefix of the other");
            }
        }
        println!(
            "| {name} | {:.1} MB | {:.2} s | {:.3} s | {:.1}× | {} |",
            size as f64 / 1e6,
            perf_t.as_secs_f64(),
            ours_t.as_secs_f64(),
            perf_t.as_secs_f64() / ours_t.as_secs_f64(),
            if perf_out == ours_out { "yes" } else { "NO" }
        );
    }
}
