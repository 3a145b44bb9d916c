//! `bport verify` end to end: the matrix on this machine under several ABI caps, a deliberately broken script,
//! the branch check on a kernel-like repo, and the real-kernel path (qemu with Debian kernel images).

use crate::support::{bport, oracle, require};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where `.ci/fetch-kernels` puts the images.
const KERNELS: &str = "/var/cache/bport-kernels";

/// The kernel image of `series`, or a loud skip (a failure under CI, where .ci/run must have fetched it).
fn kernel_image(series: &str) -> Option<(PathBuf, String)> {
    if !oracle::require("qemu-system-x86_64", "apt-get install qemu-system-x86") {
        return None;
    }
    let dir = Path::new(KERNELS).join(series);
    let image = dir.join("vmlinuz");
    let release = std::fs::read_to_string(dir.join("release")).ok();
    match release {
        Some(r) if image.is_file() => Some((image, r.trim().to_owned())),
        _ => {
            require::require(
                false,
                &format!("no kernel image {}", image.display()),
                "run .ci/fetch-kernels",
            );
            None
        }
    }
}

fn json(out: &bport::CommandOutput) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.transcript()))
}

/// `(workload, mode) -> status` of every cell, in report order.
fn statuses(report: &Value) -> Vec<(String, String, String)> {
    report["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .map(|c| {
            (
                c["workload"].as_str().unwrap().to_owned(),
                c["mode"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn reason(report: &Value, workload: &str, mode: &str) -> String {
    report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["workload"] == workload && c["mode"] == mode)
        .and_then(|c| c["reason"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// What every cell must show on this machine for a target with DWARF and the LBR call stack (≥ 4.1).
fn passing_cells() -> Vec<(String, String, String)> {
    // LBR needs the hardware: these machines have none (no `cpu` PMU), so the cell is unsupported here.
    let lbr = if ::bport::verify::matrix::Hardware::detect().lbr {
        "pass"
    } else {
        "unsupported"
    };
    [
        ("chain-fp", "fp", "pass"),
        ("chain-fp", "dwarf", "pass"),
        ("chain-fp", "lbr", lbr),
        ("chain-nofp", "fp", "expected-fail"),
        ("chain-nofp", "dwarf", "pass"),
        ("chain-nofp", "lbr", lbr),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect()
}

/// Every recorded cell's file is readable by the target era's perf, and Linux perf shows bport's chains.
fn assert_readable(report: &Value, transcript: &str) {
    let perf = oracle::has_perf();
    for c in report["cells"].as_array().unwrap() {
        if c["status"] == "unsupported" {
            continue;
        }
        let r = &c["readability"];
        assert_eq!(
            r["era_problems"],
            serde_json::json!([]),
            "{c}\n{transcript}"
        );
        let want = if perf { "same" } else { "not-installed" };
        assert_eq!(r["perf"]["status"], want, "{c}\n{transcript}");
    }
}

/// 4.1, 3.10, 6.1 and the host kernel pass on this machine.
#[test]
fn targets_4_1_3_10_6_1_and_the_host_kernel_pass_here() {
    let dir = tempfile::tempdir().unwrap();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    for kernel in ["4.1", "3.10", "6.1", release.trim()] {
        let mut args = vec!["verify", "--format", "json", "--duration-ms", "400"];
        if kernel != release.trim() {
            args.extend(["--kernel", kernel]);
        }
        let out = bport::run(dir.path(), &args);
        let report = json(&out);
        assert_eq!(report["kernel"], kernel);
        let mut expected = passing_cells();
        if kernel == "3.10" {
            for c in expected.iter_mut().filter(|c| c.1 == "lbr") {
                c.2 = "unsupported".into();
            }
        }
        assert_eq!(
            statuses(&report),
            expected,
            "{kernel}: {}",
            out.transcript()
        );
        if kernel == "3.10" {
            assert_eq!(
                reason(&report, "chain-fp", "lbr"),
                "kernel 3.10 lacks the LBR call stack (PERF_SAMPLE_BRANCH_CALL_STACK, since 4.1)"
            );
        } else if expected[2].2 == "unsupported" {
            assert_eq!(reason(&report, "chain-fp", "lbr"), "no LBR hardware");
        }
        assert_readable(&report, &out.transcript());
        // The probe cell runs on this machine's kernel whatever the cap.
        if Path::new("/sys/kernel/tracing/kprobe_events").exists() {
            assert_eq!(report["probe"]["status"], "pass", "{}", out.transcript());
        } else {
            assert_eq!(
                report["probe"],
                serde_json::json!({
                    "status": "unsupported",
                    "reason": "the kernel has no kprobe_events (CONFIG_KPROBE_EVENTS)"
                })
            );
        }
        assert_eq!(out.code, Some(0), "{kernel}: {}", out.transcript());
    }
}

/// With script's DWARF mode selection switched off (perf script before v4.3, 7322d6c98dd2), the
/// dwarf cells fail and show their first bad sample; the fp cells are untouched.
#[test]
fn script_without_dwarf_mode_selection_fails_the_dwarf_cells() {
    let dir = tempfile::tempdir().unwrap();
    let run = |format: &str| {
        let out = bport::bport(dir.path())
            .args([
                "verify",
                "--kernel",
                "4.1",
                "--duration-ms",
                "300",
                "--format",
                format,
            ])
            .env("BPORT_TEST_SCRIPT_NO_DWARF_MODE", "1")
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            out.status.code(),
        )
    };
    let (stdout, code) = run("json");
    assert_eq!(code, Some(3), "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let mut expected = passing_cells();
    expected[1].2 = "fail".into();
    expected[4].2 = "fail".into();
    assert_eq!(statuses(&report), expected);
    for c in report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail")
    {
        let stats = &c["stats"];
        assert_eq!(stats["full_chains"], 0, "{c}");
        // Without DWARF unwinding the user part of each chain is gone: the first bad sample has no user frame.
        assert_eq!(stats["first_bad"]["frames"], serde_json::json!([]), "{c}");
        assert_eq!(stats["first_bad"]["in_user"], true, "{c}");
    }
    let (table, code) = run("table");
    assert_eq!(code, Some(3));
    for workload in ["chain-fp", "chain-nofp"] {
        let note = format!("{workload} dwarf: fail: too few full chains: 0 of ");
        let at = table
            .find(&note)
            .unwrap_or_else(|| panic!("{note} missing:\n{table}"));
        let next: Vec<&str> = table[at..].lines().skip(1).take(2).collect();
        assert!(next[0].starts_with("  first bad sample: pid "), "{table}");
        assert_eq!(next[1], "  \t(no user frames)", "{table}");
    }
}

#[test]
fn kernel_3_6_has_no_dwarf_mode() {
    let dir = tempfile::tempdir().unwrap();
    let out = bport::run(
        dir.path(),
        &[
            "verify",
            "--kernel",
            "3.6",
            "--format",
            "json",
            "--duration-ms",
            "300",
        ],
    );
    let report = json(&out);
    assert_eq!(report["kernel"], "3.6");
    let fp: Vec<(String, String, String)> = statuses(&report)
        .into_iter()
        .filter(|c| c.1 == "fp")
        .collect();
    assert_eq!(
        fp,
        [
            ("chain-fp", "fp", "pass"),
            ("chain-nofp", "fp", "expected-fail")
        ]
        .map(|(a, b, c)| (a.to_owned(), b.to_owned(), c.to_owned()))
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let unsupported: Vec<(String, String)> = statuses(&report)
        .into_iter()
        .filter(|(_, _, s)| s == "unsupported")
        .map(|(w, m, _)| (w, m))
        .collect();
    assert_eq!(
        unsupported,
        [
            ("chain-fp", "dwarf"),
            ("chain-fp", "lbr"),
            ("chain-nofp", "dwarf"),
            ("chain-nofp", "lbr")
        ]
        .map(|(w, m)| (w.to_owned(), m.to_owned()))
    );
    for workload in ["chain-fp", "chain-nofp"] {
        assert_eq!(
            reason(&report, workload, "dwarf"),
            "kernel 3.6 lacks PERF_SAMPLE_REGS_USER/STACK_USER (since 3.7)"
        );
        assert_eq!(
            reason(&report, workload, "lbr"),
            "kernel 3.6 lacks the LBR call stack (PERF_SAMPLE_BRANCH_CALL_STACK, since 4.1)"
        );
    }
}

#[test]
fn a_bad_version_or_targets_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = bport::run(dir.path(), &["verify", "--kernel", "vendor-4.1"]);
    assert_eq!(
        out.transcript(),
        "------- stderr -------\nerror: \"vendor-4.1\" is not a kernel version like \"4.1\", \"4.1.15\" or \"5.14.0-331.el9\"\n[exit status: 2]\n"
    );
    std::fs::write(
        dir.path().join("t.yaml"),
        "targets:\n  - kernel: \"4.1\"\n    lists: [gone.txt]\n",
    )
    .unwrap();
    let out = bport::run(
        dir.path(),
        &["verify", "--kernel", "4.1", "--targets", "t.yaml"],
    );
    assert_eq!(
        out.transcript(),
        format!(
            "------- stderr -------\nerror: t.yaml:2: patch list \"gone.txt\" of kernel \"4.1\" does not exist (gone.txt)\n[exit status: 2]\n"
        )
    );
}

fn boots_and_reports(series: &str) {
    let Some((image, release)) = kernel_image(series) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = bport::run(
        dir.path(),
        &[
            "verify",
            "--kernel-image",
            image.to_str().unwrap(),
            "--format",
            "json",
            "--duration-ms",
            "500",
            "--vm-timeout",
            "240",
        ],
    );
    let report = json(&out);
    assert_eq!(report["boot_failure"], Value::Null, "{}", out.transcript());
    assert_eq!(report["environment"]["on"], "vm");
    assert_eq!(report["environment"]["release"], release.as_str());
    assert_eq!(
        report["kernel"],
        release.as_str(),
        "no --kernel: the guest's own"
    );
    assert_eq!(statuses(&report), passing_cells(), "{}", out.transcript());
    if passing_cells()[2].2 == "unsupported" {
        assert_eq!(reason(&report, "chain-fp", "lbr"), "no LBR hardware");
    }
    for c in report["cells"].as_array().unwrap() {
        if c["status"] != "unsupported" {
            // No Linux perf inside the VM; the era check still runs there.
            assert_eq!(
                c["readability"]["era_problems"],
                serde_json::json!([]),
                "{c}"
            );
            assert_eq!(c["readability"]["perf"]["status"], "not-installed", "{c}");
        }
    }
    // The lock-contention cell: counted inside the guest on 5.19+, unsupported with the reason before.
    let lock = &report["lock"];
    if release.starts_with("5.10") {
        assert_eq!(lock["status"], "unsupported", "{}", out.transcript());
        assert_eq!(
            lock["reason"],
            format!(
                "lock:contention_begin/end appeared in Linux 5.19; kernel {release} lacks them"
            )
            .as_str()
        );
    } else {
        assert_eq!(lock["status"], "pass", "{}", out.transcript());
        let callers: Vec<&str> = lock["callers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert!(
            callers
                .iter()
                .any(|c| ["vm_mmap_pgoff", "__vm_munmap", "vm_munmap"].contains(c)),
            "{}",
            out.transcript()
        );
    }
    // The probe cell: a kprobe on vfs_read with `count` from the guest kernel's BTF saw exactly the
    // sizes the guest passed to read(2), in order.
    let probe = &report["probe"];
    assert_eq!(probe["status"], "pass", "{}", out.transcript());
    assert_eq!(
        probe["definition"],
        "p:bport_verify/vfs_read vfs_read+0 count=%dx:x64"
    );
    let sizes = ::bport::verify::probe_check::READ_SIZES;
    let expected: Vec<u64> = (0..3).flat_map(|_| sizes).collect();
    let seen: Vec<u64> = probe["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .filter(|c| sizes.contains(c))
        .collect();
    assert_eq!(seen, expected);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
}

#[test]
fn real_kernel_6_1_in_qemu() {
    boots_and_reports("6.1");
}

#[test]
fn real_kernel_5_10_in_qemu() {
    boots_and_reports("5.10");
}

#[test]
fn a_kernel_that_does_not_boot_is_a_boot_failure_not_a_failed_check() {
    skip_unless!(oracle::require(
        "qemu-system-x86_64",
        "apt-get install qemu-system-x86"
    ));
    let dir = tempfile::tempdir().unwrap();
    // Not a kernel: qemu refuses it, so the guest never reports.
    let image = dir.path().join("vmlinuz");
    std::fs::write(&image, b"not a kernel image").unwrap();
    let out = bport::run(
        dir.path(),
        &[
            "verify",
            "--kernel-image",
            image.to_str().unwrap(),
            "--accel",
            "tcg",
            "--vm-timeout",
            "30",
        ],
    );
    assert_eq!(out.code, Some(3), "{}", out.transcript());
    assert!(
        out.stdout
            .contains("BOOT FAILED: qemu (tcg) exited (exit status: 1) before the guest reported"),
        "{}",
        out.transcript()
    );
}

/// A kernel-like repo whose vendor branch carries two of three listed fixes (one by upstream trailer,
/// one by subject under an `UPSTREAM:` prefix); the check names exactly the third, with the command that adds it.
#[test]
fn branch_check_names_exactly_the_missing_fix() {
    let repo = crate::support::repo::TestRepo::new();
    repo.commit(
        "Linux 4.1",
        &[
            ("tools/perf/builtin-script.c", Some("int record_mode;\n")),
            ("tools/perf/util/unwind.c", Some("int unwind;\n")),
            ("tools/perf/util/dwarf.c", Some("int offsets;\n")),
        ],
    );
    repo.branch("base", "HEAD");
    let fix_a = repo.commit(
        "perf script: Initialize callchain_param.record_mode",
        &[(
            "tools/perf/builtin-script.c",
            Some("int record_mode = 1;\n"),
        )],
    );
    repo.commit(
        "perf unwind: Do not look just at the global callchain_param.record_mode",
        &[("tools/perf/util/unwind.c", Some("int unwind = 1;\n"))],
    );
    repo.commit(
        "perf script: Show correct offsets for DWARF-based unwinding",
        &[("tools/perf/util/dwarf.c", Some("int offsets = 1;\n"))],
    );
    let list = repo.list("base..master");
    repo.branch("vendor", "base");
    repo.checkout("vendor");
    repo.commit("vendor: our own change", &[("vendor.txt", Some("v\n"))]);
    // Backported with a conflict resolution (other content), found by its trailer.
    repo.commit(
        &format!("perf script: Initialize callchain_param.record_mode\n\n(cherry picked from commit {fix_a})\n"),
        &[("tools/perf/builtin-script.c", Some("int record_mode = 1; /* vendor */\n"))],
    );
    // Backported by hand under a vendor prefix, found by its subject.
    repo.commit(
        "UPSTREAM: perf unwind: Do not look just at the global callchain_param.record_mode",
        &[("tools/perf/util/unwind.c", Some("int unwind = 2;\n"))],
    );
    std::fs::write(repo.path().join("fixes.txt"), &list).unwrap();
    std::fs::write(
        repo.path().join("targets.yaml"),
        "targets:\n  - kernel: \"4.1\"\n    branch: vendor\n    lists: [fixes.txt]\n",
    )
    .unwrap();
    let missing_sha = list
        .lines()
        .nth(2)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_owned();

    let out = bport::run(
        repo.path(),
        &[
            "verify",
            "--kernel",
            "4.1",
            "--targets",
            "targets.yaml",
            "--format",
            "json",
            "--duration-ms",
            "200",
        ],
    );
    assert_eq!(
        out.code,
        Some(3),
        "a missing fix fails verify: {}",
        out.transcript()
    );
    let report = json(&out);
    let branch = &report["branch"];
    assert_eq!(branch["status"], "checked", "{}", out.transcript());
    let entries: Vec<(String, Value)> = branch["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["subject"].as_str().unwrap().to_owned(),
                e["present_by"].clone(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        vec![
            (
                "perf script: Initialize callchain_param.record_mode".to_owned(),
                Value::from("trailer")
            ),
            (
                "perf unwind: Do not look just at the global callchain_param.record_mode"
                    .to_owned(),
                Value::from("subject")
            ),
            (
                "perf script: Show correct offsets for DWARF-based unwinding".to_owned(),
                Value::Null
            ),
        ]
    );
    assert_eq!(
        branch["apply_commands"],
        serde_json::json!(["git checkout vendor && bport apply fixes.txt"])
    );

    let table = bport::run(
        repo.path(),
        &[
            "verify",
            "--kernel",
            "4.1",
            "--targets",
            "targets.yaml",
            "--duration-ms",
            "200",
        ],
    );
    let start = table
        .stdout
        .find("\nbranch vendor:")
        .expect("branch section");
    let end = table.stdout.find("\nresult:").unwrap();
    assert_eq!(
        &table.stdout[start..end],
        format!(
            "\nbranch vendor: 2 of 3 required fixes present\n  missing: {missing_sha} perf script: Show correct offsets for DWARF-based unwinding (fixes.txt)\n  add with: git checkout vendor && bport apply fixes.txt\n"
        )
    );
}
