//! `bport record` against Linux perf as the oracle (issue #4, "Must show" 1 and 4): perf reads bport's files
//! without complaint, sees exactly the samples bport's reader sees, and shows the workload's full chain.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ::bport::perf::abi::{self, KernelAbi};
use ::bport::perf::data::{PerfFile, Record};
use ::bport::verify::workloads::{Build, EXPECTED_CHAIN, LEAF};

use crate::support::{bport, oracle};

const PERF: &str = "/usr/bin/perf";
const PERF_HINT: &str = "apt-get install linux-perf";

/// Runs the workload `build` for `ms` milliseconds under `bport record FLAGS` and returns the file.
fn record(dir: &Path, build: Build, flags: &[&str], ms: &str) -> PathBuf {
    let exe = build.write_to(dir).expect("write workload");
    let out = dir.join(format!(
        "{}.data",
        flags.join("").replace([' ', ',', '-'], "")
    ));
    let mut args = vec![
        "record",
        "-e",
        "cpu-clock",
        "-F",
        "999",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", exe.to_str().unwrap(), ms]);
    let run = bport::run(dir, &args);
    assert_eq!(
        run.code,
        Some(0),
        "bport {}\n{}",
        args.join(" "),
        run.transcript()
    );
    assert!(
        run.stderr.contains("[ bport record: Captured and wrote "),
        "no summary:\n{}",
        run.transcript()
    );
    out
}

/// Runs perf on `file`; asserts exit 0 and nothing on stderr (perf's warnings about a file go there).
fn perf(dir: &Path, args: &[&str], file: &Path) -> String {
    let out: Output = Command::new(PERF)
        .current_dir(dir)
        .env("HOME", dir) // no ~/.debug or ~/.perfconfig of the user
        .env("PAGER", "cat")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .expect("spawn perf");
    oracle::assert_success(&out, &format!("perf {}", args.join(" ")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr,
        "",
        "perf {} complained about {}",
        args.join(" "),
        file.display()
    );
    String::from_utf8(out.stdout).expect("perf output is UTF-8")
}

/// `pid/tid time ip` per sample, as perf prints them and as bport's reader gives them.
fn perf_samples(dir: &Path, file: &Path) -> Vec<String> {
    perf(
        dir,
        &["script", "-F", "pid,tid,time,ip", "--ns", "-G"],
        file,
    )
    .lines()
    .map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(f.len(), 3, "unexpected perf script line {l:?}");
        format!(
            "{} {} {}",
            f[0],
            f[1].trim_end_matches(':'),
            f[2].trim_start_matches("0x")
        )
    })
    .collect()
}

fn bport_samples(file: &Path) -> Vec<String> {
    let data = PerfFile::open(file).expect("bport reads its own file");
    assert_eq!(
        data.warnings(),
        &[],
        "bport's reader warned about {}",
        file.display()
    );
    let mut out = Vec::new();
    for record in data.records() {
        if let Record::Sample(s) = record.expect("record") {
            let time = s.time.expect("TIME");
            out.push(format!(
                "{}/{} {}.{:09} {:x}",
                s.pid.expect("TID") as i32,
                s.tid.expect("TID") as i32,
                time / 1_000_000_000,
                time % 1_000_000_000,
                s.ip.expect("IP")
            ));
        }
    }
    out
}

/// Share of the leaf's samples of `comm` whose `perf script` chain starts leaf → … → main.
fn full_chain_share(script: &str, comm: &str) -> (usize, usize) {
    let (mut leaf, mut full) = (0, 0);
    for block in script.split("\n\n") {
        let mut lines = block.lines().filter(|l| !l.is_empty());
        let Some(header) = lines.next() else { continue };
        if header.split_whitespace().next() != Some(comm) {
            continue;
        }
        let syms: Vec<&str> = lines.filter_map(|l| l.split_whitespace().nth(1)).collect();
        if syms.first() != Some(&LEAF) {
            continue;
        }
        leaf += 1;
        let want: Vec<&str> = EXPECTED_CHAIN.iter().rev().copied().collect();
        if syms.len() >= want.len() && syms[..want.len()] == want[..] {
            full += 1;
        }
    }
    (leaf, full)
}

fn check_perf_reads(dir: &Path, file: &Path) {
    let perf_view = perf_samples(dir, file);
    let bport_view = bport_samples(file);
    assert_eq!(perf_view.len(), bport_view.len(), "sample counts differ");
    assert!(
        !perf_view.is_empty(),
        "no samples at all: the comparison would be vacuous"
    );
    for (i, (p, b)) in perf_view.iter().zip(&bport_view).enumerate() {
        assert_eq!(
            p, b,
            "sample {i} differs between perf script and bport's reader"
        );
    }
    perf(dir, &["report", "--stdio"], file);
}

fn check_chains(dir: &Path, file: &Path, build: Build) {
    let script = perf(dir, &["script", "-F", "comm,tid,time,ip,sym"], file);
    let (leaf, full) = full_chain_share(&script, build.file_name());
    assert!(
        leaf > 0,
        "no samples in {LEAF}: the 95% check below would be vacuous"
    );
    assert!(
        full * 100 >= leaf * 95,
        "only {full} of {leaf} {LEAF} samples show main → chain_a → chain_b → chain_c"
    );
}

#[test]
fn perf_reads_bports_frame_pointer_recording_with_full_chains() {
    if !oracle::require(PERF, PERF_HINT) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = record(dir.path(), Build::FramePointer, &["-g"], "1000");
    check_perf_reads(dir.path(), &file);
    check_chains(dir.path(), &file, Build::FramePointer);
}

#[test]
fn perf_reads_bports_dwarf_recording_with_full_chains() {
    if !oracle::require(PERF, PERF_HINT) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = record(
        dir.path(),
        Build::NoFramePointer,
        &["--call-graph", "dwarf"],
        "1000",
    );
    check_perf_reads(dir.path(), &file);
    check_chains(dir.path(), &file, Build::NoFramePointer);
}

#[test]
fn perf_reads_bports_system_wide_recording() {
    if !oracle::require(PERF, PERF_HINT) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = record(dir.path(), Build::FramePointer, &["-a", "-g"], "500");
    check_perf_reads(dir.path(), &file);
    check_chains(dir.path(), &file, Build::FramePointer);
}

#[test]
fn kernel_41_cap_writes_only_what_a_41_era_perf_reads() {
    if !oracle::require(PERF, PERF_HINT) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = record(
        dir.path(),
        Build::NoFramePointer,
        &["--kernel", "4.1", "--call-graph", "dwarf"],
        "1000",
    );
    let abi41 = KernelAbi::for_version(&"4.1".parse().unwrap());
    let data = PerfFile::open(&file).unwrap();
    for entry in data.attrs() {
        assert!(
            entry.attr.size <= abi::PERF_ATTR_SIZE_VER5,
            "attr of {} bytes",
            entry.attr.size
        );
        assert_eq!(
            entry.attr.flags & !abi41.attr_flags,
            0,
            "attr flags newer than 4.1"
        );
        assert_eq!(
            entry.attr.sample_type & !abi41.sample_types,
            0,
            "sample bits newer than 4.1"
        );
    }
    for id in data.feature_ids() {
        assert!(
            abi41.supports_feature(*id),
            "feature {id} is newer than 4.1's perf"
        );
    }
    for record in data.records_in_file_order() {
        let record = record.unwrap();
        let ty = record.meta().ty;
        assert!(
            abi41.supports_record(ty),
            "record type {ty} is newer than 4.1's era"
        );
    }
    check_perf_reads(dir.path(), &file);
    check_chains(dir.path(), &file, Build::NoFramePointer);
}

#[test]
fn an_existing_output_is_kept_as_old() {
    if !oracle::require(PERF, PERF_HINT) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("perf.data");
    std::fs::write(&file, b"previous").unwrap();
    let exe = Build::FramePointer.write_to(dir.path()).unwrap();
    let run = bport::run(
        dir.path(),
        &[
            "record",
            "-e",
            "cpu-clock",
            "--",
            exe.to_str().unwrap(),
            "50",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert_eq!(
        std::fs::read(dir.path().join("perf.data.old")).unwrap(),
        b"previous"
    );
    perf(dir.path(), &["script"], &file);
}

#[test]
fn lbr_without_hardware_names_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let run = bport::run(
        dir.path(),
        &[
            "record",
            "-e",
            "cpu-clock",
            "--call-graph",
            "lbr",
            "--",
            "true",
        ],
    );
    assert_eq!(run.code, Some(4), "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "error: LBR call stacks are not available: LBR records branches of a hardware event; cpu-clock is a \
         software timer (use -e cycles)\nhint: use --call-graph dwarf (any CPU, Linux 3.7+) or -g on code built \
         with frame pointers\n"
    );
}

#[test]
fn attaching_to_a_running_process_records_until_it_exits() {
    if !oracle::require(PERF, PERF_HINT) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = Build::FramePointer.write_to(dir.path()).unwrap();
    let mut workload = Command::new(&exe).arg("1000").spawn().unwrap();
    let pid = workload.id().to_string();
    let file = dir.path().join("attach.data");
    let args = [
        "record",
        "-e",
        "cpu-clock",
        "-F",
        "999",
        "-g",
        "-p",
        &pid,
        "-o",
        file.to_str().unwrap(),
    ];
    let run = bport::run(dir.path(), &args);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(workload.wait().unwrap().success());
    // The process existed before recording: its COMM and maps come from /proc synthesis, so perf names and
    // symbolizes it exactly as for a recorded command.
    check_perf_reads(dir.path(), &file);
    check_chains(dir.path(), &file, Build::FramePointer);
}

#[test]
fn ctrl_c_ends_a_system_wide_recording_cleanly() {
    if !oracle::require(PERF, PERF_HINT) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sigint.data");
    let child = bport::bport(dir.path())
        .args([
            "record",
            "-a",
            "-e",
            "cpu-clock",
            "-F",
            "99",
            "-o",
            file.to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until recording has started (the file exists), then interrupt as a terminal would.
    while !file.exists() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("[ bport record: Captured and wrote "),
        "{stderr}"
    );
    check_perf_reads(dir.path(), &file);
}

#[test]
fn cycles_without_a_pmu_falls_back_to_cpu_clock_with_a_note() {
    if !oracle::require(PERF, PERF_HINT) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = Build::FramePointer.write_to(dir.path()).unwrap();
    let run = bport::run(
        dir.path(),
        &["record", "-e", "cycles", "--", exe.to_str().unwrap(), "100"],
    );
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let file = dir.path().join("perf.data");
    let data = PerfFile::open(&file).unwrap();
    let has_pmu = Path::new("/sys/bus/event_source/devices/cpu").exists();
    let note = "note: the cycles event is not supported here";
    if has_pmu {
        assert!(!run.stderr.contains(note), "{}", run.transcript());
        assert_eq!(data.attrs()[0].attr.type_, abi::PERF_TYPE_HARDWARE);
    } else {
        assert!(run.stderr.contains(note), "{}", run.transcript());
        assert_eq!(data.attrs()[0].attr.type_, abi::PERF_TYPE_SOFTWARE);
        assert_eq!(data.attrs()[0].attr.config, abi::PERF_COUNT_SW_CPU_CLOCK);
        assert_eq!(
            data.features().event_desc.as_ref().unwrap()[0].name,
            "cpu-clock"
        );
    }
    check_perf_reads(dir.path(), &file);
}
