//! Exit codes of the perf.data readers through the binary (ARCHITECTURE.md, "Invariants"): a missing or damaged input is
//! the user's (2), an output the disk cannot take is the environment's (4), never the user's.

use crate::support::bport;
use std::path::{Path, PathBuf};
use std::process::Stdio;

const READERS: [&str; 5] = ["report", "script", "buildid-list", "archive", "flamegraph"];

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perf/fp.data")
}

/// `/dev/full` (every write fails with ENOSPC), opened for writing; Linux always has it.
fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full must exist (a Linux character device, 1:7) for the full-disk tests")
}

#[test]
fn a_missing_perf_data_file_is_exit_2_and_named() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in READERS {
        let out = bport::run(dir.path(), &[cmd, "-i", "/nonexistent/perf.data"]);
        assert_eq!(out.code, Some(2), "{cmd}: {}", out.transcript());
        assert!(
            out.stderr.starts_with(
                "error: cannot read /nonexistent/perf.data: No such file or directory"
            ),
            "{cmd}: {}",
            out.stderr
        );
    }
}

#[test]
fn a_perf_data_file_cut_short_in_its_records_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture()).unwrap();
    // fp.data's records run to byte 1704; at 1000 the record at byte 920 is cut in half.
    let cut = dir.path().join("cut.data");
    std::fs::write(&cut, &bytes[..1000]).unwrap();
    for cmd in READERS {
        let out = bport::run(dir.path(), &[cmd, "-i", cut.to_str().unwrap()]);
        assert_eq!(out.code, Some(2), "{cmd}: {}", out.transcript());
        assert!(out.stderr.contains("are lost"), "{cmd}: {}", out.stderr);
    }
}

#[test]
fn an_output_on_a_full_disk_is_exit_4_not_a_user_error() {
    let dir = tempfile::tempdir().unwrap();
    let data = fixture();
    let data = data.to_str().unwrap();
    for cmd in READERS {
        let mut args = vec![cmd, "-i", data];
        let mut command = bport::bport(dir.path());
        if matches!(cmd, "archive" | "flamegraph") {
            args.extend(["-o", "/dev/full"]);
            command.stdout(Stdio::null());
        } else {
            command.stdout(dev_full());
        }
        let out = command.args(&args).stderr(Stdio::piped()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{cmd}: {stderr}");
        assert!(
            stderr.contains("No space left on device"),
            "{cmd}: {stderr}"
        );
    }
}
