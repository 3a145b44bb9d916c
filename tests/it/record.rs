//! `bport record` against Linux perf as the oracle: perf reads bport's files
//! without complaint, sees exactly the samples bport's reader sees, and shows the workload's full chain.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ::bport::perf::abi::{self, KernelAbi};
use ::bport::perf::data::{PerfFile, Record};
use ::bport::verify::workloads::{Build, EXPECTED_CHAIN, LEAF};

use crate::support::{bport, oracle};

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
    let out: Output = oracle::perf(dir)
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

/// `comm pid/tid time ip` per sample, as perf prints them and as bport's reader gives them.
fn perf_samples(dir: &Path, file: &Path) -> Vec<String> {
    perf(
        dir,
        &["script", "-F", "comm,pid,tid,time,ip", "--ns", "-G"],
        file,
    )
    .lines()
    .map(|l| {
        // From the right: a comm may contain spaces.
        let f: Vec<&str> = l.split_whitespace().collect();
        assert!(f.len() >= 4, "unexpected perf script line {l:?}");
        let n = f.len();
        format!(
            "{} {} {} {}",
            f[..n - 3].join(" "),
            f[n - 3],
            f[n - 2].trim_end_matches(':'),
            f[n - 1].trim_start_matches("0x")
        )
    })
    .collect()
}

/// The same view from bport's reader: comms follow COMM records and are inherited on FORK, as perf's thread
/// table does; a thread never named prints as `:TID`, as perf prints it.
fn bport_samples(file: &Path) -> Vec<String> {
    let data = PerfFile::open(file).expect("bport reads its own file");
    assert_eq!(
        data.warnings(),
        &[],
        "bport's reader warned about {}",
        file.display()
    );
    let mut comms: std::collections::HashMap<u32, String> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for record in data.records() {
        match record.expect("record") {
            Record::Comm(c) => {
                comms.insert(c.tid, String::from_utf8_lossy(c.comm).into_owned());
            }
            Record::Fork(f) => {
                // A new thread starts with its parent's comm until it sets its own.
                match comms.get(&f.ptid).cloned() {
                    Some(parent) => comms.insert(f.tid, parent),
                    None => comms.remove(&f.tid),
                };
            }
            Record::Sample(s) => {
                let time = s.time.expect("TIME");
                let tid = s.tid.expect("TID");
                // perf's machine starts with the idle thread named "swapper" (tid 0), which no COMM record names.
                let comm = match comms.get(&tid) {
                    Some(comm) => comm.clone(),
                    None if tid == 0 => "swapper".to_owned(),
                    None => format!(":{}", tid as i32),
                };
                out.push(format!(
                    "{comm} {}/{} {}.{:09} {:x}",
                    s.pid.expect("TID") as i32,
                    tid as i32,
                    time / 1_000_000_000,
                    time % 1_000_000_000,
                    s.ip.expect("IP")
                ));
            }
            _ => {}
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

/// How long an attached-to workload would run on its own: far longer than any recording in these tests, which
/// end the workload themselves once bport has samples (the bound only keeps a broken test from hanging forever).
const LONG_RUN_MS: &str = "60000";

/// Runs `bport record ARGS` attached to `workload` until bport has recorded its first samples, then kills the
/// workload: the recording must end by itself when the attached task exits. Returns bport's stderr.
///
/// Ending on an event instead of a fixed workload duration keeps a loaded machine (a slow bport start, a
/// workload that gets little CPU) from leaving the file without samples.
fn record_attached(dir: &Path, args: &[&str], workload: &mut std::process::Child) -> String {
    let mut recorder = bport::bport(dir)
        .args(args)
        .env("BPORT_LOG", "info")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let before = wait_for_log(&mut recorder, "first samples recorded");
    workload.kill().unwrap();
    let status = workload.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    let out = recorder.wait_with_output().unwrap();
    let stderr = before + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "bport {}\n{stderr}",
        args.join(" ")
    );
    stderr
}

/// Reads the piped stderr of a `bport record` run with `BPORT_LOG=info` until a line containing `milestone`
/// (a developer-log event), and returns what it read. The rest of stderr stays in the pipe for `wait_with_output`.
fn wait_for_log(child: &mut std::process::Child, milestone: &str) -> String {
    use std::io::Read;
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    // Byte by byte, so nothing after the milestone line is consumed here.
    loop {
        match stderr.read(&mut byte).expect("read bport's stderr") {
            0 => panic!(
                "bport record ended before logging {milestone:?}:\n{}",
                String::from_utf8_lossy(&seen)
            ),
            _ => seen.push(byte[0]),
        }
        if byte[0] == b'\n'
            && String::from_utf8_lossy(&seen)
                .lines()
                .last()
                .is_some_and(|l| l.contains(milestone))
        {
            break;
        }
    }
    child.stderr = Some(stderr);
    String::from_utf8_lossy(&seen).into_owned()
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
    skip_unless!(oracle::has_perf());
    let dir = tempfile::tempdir().unwrap();
    let file = record(dir.path(), Build::FramePointer, &["-g"], "1000");
    check_perf_reads(dir.path(), &file);
    check_chains(dir.path(), &file, Build::FramePointer);
}

#[test]
fn perf_reads_bports_dwarf_recording_with_full_chains() {
    skip_unless!(oracle::has_perf());
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
    skip_unless!(oracle::has_perf());
    let dir = tempfile::tempdir().unwrap();
    let file = record(dir.path(), Build::FramePointer, &["-a", "-g"], "500");
    check_perf_reads(dir.path(), &file);
    check_chains(dir.path(), &file, Build::FramePointer);
}

#[test]
fn kernel_41_cap_writes_only_what_a_41_era_perf_reads() {
    skip_unless!(oracle::has_perf());
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
    skip_unless!(oracle::has_perf());
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
    skip_unless!(oracle::has_perf());
    let dir = tempfile::tempdir().unwrap();
    let exe = Build::FramePointer.write_to(dir.path()).unwrap();
    let mut workload = Command::new(&exe).arg(LONG_RUN_MS).spawn().unwrap();
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
    let stderr = record_attached(dir.path(), &args, &mut workload);
    assert!(
        stderr.contains("[ bport record: Captured and wrote "),
        "{stderr}"
    );
    // The process existed before recording: its COMM and maps come from /proc synthesis, so perf names and
    // symbolizes it exactly as for a recorded command.
    check_perf_reads(dir.path(), &file);
    check_chains(dir.path(), &file, Build::FramePointer);
}

#[test]
fn ctrl_c_ends_a_system_wide_recording_cleanly() {
    skip_unless!(oracle::has_perf());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sigint.data");
    let mut child = bport::bport(dir.path())
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
        // The developer log announces the first samples: interrupting before them could end the recording
        // before its events are even enabled (the /proc synthesis of a loaded machine can take seconds).
        .env("BPORT_LOG", "info")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let before = wait_for_log(&mut child, "first samples recorded");
    // Interrupt as a terminal would.
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stderr = before + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("[ bport record: Captured and wrote "),
        "{stderr}"
    );
    check_perf_reads(dir.path(), &file);
}

#[test]
fn cycles_without_a_pmu_falls_back_to_cpu_clock_with_a_note() {
    skip_unless!(oracle::has_perf());
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

#[test]
fn an_unprivileged_system_wide_recording_names_the_paranoid_level_and_the_fix() {
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Needs root (to drop to nobody) and a paranoid level that forbids -a for unprivileged users.
    if running_as_root() != Some(true)
        || paranoid < 1
        || !oracle::require("setpriv", "apt-get install util-linux")
    {
        eprintln!("SKIPPED (needs root and kernel.perf_event_paranoid >= 1; it is {paranoid})");
        return;
    }
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_bport"),
        ])
        .args([
            "record",
            "-a",
            "-o",
            "/nonexistent/never-written.data",
            "--",
            "true",
        ])
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: perf_event_open was denied: kernel.perf_event_paranoid is {paranoid}, this recording needs 0 or \
             lower (or root / CAP_PERFMON)\n  caused by: Permission denied (os error 13)\nhint: allow it with: sudo \
             sysctl -w kernel.perf_event_paranoid=0\nhint: or run as root, or grant the capability: sudo setcap \
             cap_perfmon,cap_sys_ptrace=ep $(command -v bport) (Linux 5.8+; CAP_SYS_ADMIN before)\n"
        )
    );
}

/// Whether the test runs as root, from /proc/self/status (no libc call in tests).
fn running_as_root() -> Option<bool> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let uid = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    Some(uid.split_whitespace().next()? == "0")
}

#[test]
fn attaching_to_one_thread_with_a_fixed_period() {
    skip_unless!(oracle::has_perf());
    let dir = tempfile::tempdir().unwrap();
    let exe = Build::FramePointer.write_to(dir.path()).unwrap();
    let mut workload = Command::new(&exe).arg(LONG_RUN_MS).spawn().unwrap();
    let tid = workload.id().to_string(); // single-threaded: the main thread's tid is the pid
    let file = dir.path().join("thread.data");
    // cpu-clock counts nanoseconds: one sample per 2 ms of CPU.
    let args = [
        "record",
        "-e",
        "cpu-clock",
        "-c",
        "2000000",
        "-g",
        "-t",
        &tid,
        "-o",
        file.to_str().unwrap(),
    ];
    record_attached(dir.path(), &args, &mut workload);
    let data = PerfFile::open(&file).unwrap();
    let attr = &data.attrs()[0].attr;
    assert_eq!(
        (attr.sample_period_or_freq, attr.freq()),
        (2_000_000, false)
    );
    for record in data.records() {
        if let Record::Sample(s) = record.unwrap() {
            assert_eq!((s.tid, s.period), (Some(workload.id()), Some(2_000_000)));
        }
    }
    check_perf_reads(dir.path(), &file);
    check_chains(dir.path(), &file, Build::FramePointer);
}

#[test]
fn lost_samples_are_counted_as_the_file_and_perf_count_them() {
    skip_unless!(oracle::has_perf());
    // A one-page ring cannot hold a single 8 KiB-stack sample: the kernel loses every sample and says so with
    // PERF_RECORD_LOST, which is what must reach the summary and the file.
    let dir = tempfile::tempdir().unwrap();
    let exe = Build::NoFramePointer.write_to(dir.path()).unwrap();
    let file = dir.path().join("lost.data");
    let args = [
        "record",
        "-m",
        "1",
        "-e",
        "cpu-clock",
        "--call-graph",
        "dwarf,8192",
        "-o",
        file.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
        "200",
    ];
    let run = bport::run(dir.path(), &args);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let (mut lost, mut chunks, mut samples) = (0, 0, 0);
    for record in PerfFile::open(&file).unwrap().records() {
        match record.unwrap() {
            Record::Lost(l) => {
                lost += l.lost;
                chunks += 1;
            }
            Record::Sample(_) => samples += 1,
            _ => {}
        }
    }
    assert_eq!(samples, 0);
    assert!(chunks > 0, "no LOST record:\n{}", run.transcript());
    assert!(
        run.stderr.contains(&format!(
            "warning: lost {lost} events in {chunks} chunks: the buffers overflowed (try a larger -m or a lower -F)\n"
        )),
        "{}",
        run.transcript()
    );
    assert!(
        run.stderr
            .contains(&format!("{} (0 samples) ]\n", file.display())),
        "{}",
        run.transcript()
    );
    let stats = oracle::perf(dir.path())
        .args(["report", "--stats", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    let stats = String::from_utf8_lossy(&stats.stdout);
    let perf_chunks: u64 = stats
        .lines()
        .find_map(|l| l.trim().strip_prefix("LOST events:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("perf report --stats prints LOST events");
    assert_eq!(perf_chunks, chunks);
}

#[test]
fn instructions_without_a_pmu_is_an_environment_error_not_a_silent_timer() {
    if Path::new("/sys/bus/event_source/devices/cpu").exists() {
        eprintln!("SKIPPED (this machine has a hardware PMU; the error path needs one without)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = bport::run(dir.path(), &["record", "-e", "instructions", "--", "true"]);
    assert_eq!(run.code, Some(4), "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "error: the instructions event is not available here: this machine exposes no hardware PMU \
         (/sys/bus/event_source/devices/cpu is missing; virtual machines usually have none)\nhint: sample on a \
         timer instead: -e cpu-clock\n"
    );
    assert!(
        !dir.path().join("perf.data").exists(),
        "nothing is written when nothing can be recorded"
    );
}

#[test]
fn an_attached_process_is_followed_into_the_children_it_starts_later() {
    skip_unless!(oracle::has_perf());
    let dir = tempfile::tempdir().unwrap();
    let exe = Build::FramePointer.write_to(dir.path()).unwrap();
    let go = dir.path().join("go");
    // The shell starts the workload only once recording runs, so its samples come only through inheritance.
    let script = format!(
        "while [ ! -e {go} ]; do sleep 0.05; done; {exe} 500; true",
        go = go.display(),
        exe = exe.display()
    );
    let mut shell = Command::new("sh").args(["-c", &script]).spawn().unwrap();
    let file = dir.path().join("children.data");
    let pid = shell.id().to_string();
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
    let mut recorder = bport::bport(dir.path())
        .args(args)
        .env("BPORT_LOG", "info")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Start the workload only once the events are enabled: a disabled event gets no side-band records, so a
    // child exec'd earlier would have no COMM in the file and its samples would carry the shell's name.
    let stderr = wait_for_log(&mut recorder, "sampling enabled");
    std::fs::write(&go, b"").unwrap();
    let out = recorder.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(shell.wait().unwrap().success());
    check_perf_reads(dir.path(), &file);
    check_chains(dir.path(), &file, Build::FramePointer);
}
