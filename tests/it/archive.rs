//! `bport buildid-list` and `bport archive`: build-ids as perf lists them, and an
//! archive that makes a recording symbolize on a machine where its binary no longer exists.

use crate::support::bport;
use crate::support::oracle::{self, perf_ok};
use ::bport::verify::workloads::Build;

#[test]
fn buildid_list_equals_perf() {
    skip_unless!(oracle::has_perf());
    let dir = tempfile::tempdir().unwrap();
    let exe = Build::FramePointer.write_to(dir.path()).unwrap();
    let data = dir.path().join("perf.data");
    let d = data.to_str().unwrap();
    perf_ok(
        dir.path(),
        &[
            "record",
            "-q",
            "-g",
            "-o",
            d,
            "--",
            exe.to_str().unwrap(),
            "200",
        ],
    );
    for args in [
        vec!["buildid-list", "-i", d],
        vec!["buildid-list", "-i", d, "--with-hits"],
    ] {
        let ours = bport::run(dir.path(), &args);
        assert_eq!(ours.code, Some(0), "{}", ours.transcript());
        assert_eq!(ours.stdout, perf_ok(dir.path(), &args), "{args:?}");
        assert!(ours.stdout.contains(&format!(" {}\n", exe.display())));
    }
}

#[test]
fn archive_round_trip_symbolizes_a_deleted_binary() {
    skip_unless!(oracle::has_perf());
    // Record without perf's own build-id cache (-N): the binary on disk is the only copy.
    let rec = tempfile::tempdir().unwrap();
    let exe = Build::NoFramePointer.write_to(rec.path()).unwrap();
    let data = rec.path().join("perf.data");
    let d = data.to_str().unwrap();
    perf_ok(
        rec.path(),
        &[
            "record",
            "-q",
            "-N",
            "--call-graph",
            "dwarf",
            "-o",
            d,
            "--",
            exe.to_str().unwrap(),
            "300",
        ],
    );
    let before = bport::run(rec.path(), &["script", "-i", d]);
    assert_eq!(before.code, Some(0), "{}", before.transcript());
    assert!(before.stdout.contains(" chain_b+"));

    let tar = rec.path().join("bundle.tar");
    let out = bport::run(
        rec.path(),
        &["archive", "-i", d, "-o", tar.to_str().unwrap()],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());

    // The binary is gone; a fresh HOME gets the bundle unpacked into ~/.debug, as the status line says.
    std::fs::remove_file(&exe).unwrap();
    let home = tempfile::tempdir().unwrap();
    let debug = home.path().join(".debug");
    std::fs::create_dir_all(&debug).unwrap();
    let status = std::process::Command::new("tar")
        .args(["xf", tar.to_str().unwrap(), "-C", debug.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());

    let after = bport::run(home.path(), &["script", "-i", d]);
    assert_eq!(after.code, Some(0), "{}", after.transcript());
    assert_eq!(
        after.stdout, before.stdout,
        "the archive must restore every frame"
    );
    // Linux perf reads the same bundle (same cache layout).
    let theirs = perf_ok(home.path(), &["script", "-i", d]);
    assert_eq!(theirs, after.stdout);
}

/// A binary linked with `--build-id=none` (as Go binaries often are) has no entry in the BUILD_ID table, yet
/// its samples hit it: `perf buildid-list -H` lists it after the table's DSOs with a blank id; bport left it
/// out.
#[test]
fn buildid_list_with_hits_lists_a_dso_without_build_id_as_perf() {
    skip_unless!(oracle::has_perf() && oracle::require("gcc", "apt-get install gcc"));
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("no_build_id");
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/programs/inner_label.c"
    );
    crate::support::oracle::tool_ok(
        "gcc",
        &[
            "-O1",
            "-Wl,--build-id=none",
            "-o",
            exe.to_str().unwrap(),
            src,
        ],
        &[],
        "",
    );
    let data = dir.path().join("perf.data");
    let d = data.to_str().unwrap();
    perf_ok(
        dir.path(),
        &[
            "record",
            "-q",
            "-o",
            d,
            "--",
            exe.to_str().unwrap(),
            "50000000",
        ],
    );
    for args in [
        vec!["buildid-list", "-i", d],
        vec!["buildid-list", "-i", d, "-H"],
    ] {
        let ours = bport::run(dir.path(), &args);
        assert_eq!(ours.code, Some(0), "{}", ours.transcript());
        assert_eq!(ours.stdout, perf_ok(dir.path(), &args), "{args:?}");
    }
    let hits = bport::run(dir.path(), &["buildid-list", "-i", d, "-H"]).stdout;
    assert!(
        hits.contains(&format!("{:40} {}\n", "", exe.display())),
        "the binary without build-id is not listed blank:\n{hits}"
    );
}
