//! `bport script` against Linux perf's `perf script` on files perf recorded from the built-in workloads
//! (the archive round trip is in `archive.rs`).
//!
//! Every comparison is line for line on the same file, with the same `HOME` (so the same build-id cache).
//! Named deviations: none so far — where bport and perf 6.1 differed (kernel init text, kallsyms aliases, PLT
//! symbols, C++ demangling, corrupt chains) bport was changed to print what perf prints.

use crate::support::bport;
use crate::support::compare::assert_same_lines;
use crate::support::oracle::{self, perf_ok};
use ::bport::verify::workloads::{Build, EXPECTED_CHAIN};
use std::path::{Path, PathBuf};

struct Recording {
    dir: tempfile::TempDir,
    data: PathBuf,
    exe: PathBuf,
}

/// Records `build` for 300 ms with `perf record ARGS`; `cache` false passes `-N` (no build-id cache copy), so
/// the DSO on disk is the only copy.
fn record(build: Build, args: &[&str], cache: bool) -> Option<Recording> {
    if !oracle::has_perf() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = build.write_to(dir.path()).unwrap();
    let data = dir.path().join("perf.data");
    let mut cmd: Vec<&str> = vec!["record", "-q", "-o", data.to_str().unwrap()];
    if !cache {
        cmd.push("-N");
    }
    cmd.extend_from_slice(args);
    cmd.extend_from_slice(&["--", exe.to_str().unwrap(), "300"]);
    perf_ok(dir.path(), &cmd);
    Some(Recording { dir, data, exe })
}

fn perf_script(r: &Recording) -> String {
    perf_ok(r.dir.path(), &["script", "-i", r.data.to_str().unwrap()])
}

fn bport_script(r: &Recording, env: &[(&str, &str)]) -> bport::CommandOutput {
    let mut cmd = bport::bport(r.dir.path());
    cmd.args(["script", "-i", r.data.to_str().unwrap()]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    bport::CommandOutput {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
    }
}

/// Sample blocks of script output: (header line, frame lines' symbol names).
fn samples(text: &str) -> Vec<(String, Vec<String>)> {
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            let mut lines = block.lines();
            let header = lines.next().unwrap_or_default().to_owned();
            let syms = lines
                .map(|l| {
                    let l = l.trim_start();
                    let after_addr = l.split_once(' ').map_or("", |(_, rest)| rest);
                    let sym = after_addr.rsplit_once(" (").map_or(after_addr, |(s, _)| s);
                    sym.split('+').next().unwrap_or(sym).to_owned()
                })
                .collect();
            (header, syms)
        })
        .collect()
}

/// Share (in percent) of the samples in the hot leaf whose chain continues `chain_b → chain_a → main`.
fn full_chain_percent(text: &str) -> (usize, usize) {
    let leaf: Vec<Vec<String>> = samples(text)
        .into_iter()
        .map(|(_, syms)| syms)
        .filter(|syms| syms.first().map(String::as_str) == Some("chain_c"))
        .collect();
    let want: Vec<&str> = EXPECTED_CHAIN.iter().rev().copied().collect();
    let full = leaf
        .iter()
        .filter(|syms| syms.len() >= 4 && syms[..4] == want[..])
        .count();
    (full, leaf.len())
}

#[test]
fn fp_recordings_equal_perf_script() {
    for build in Build::ALL {
        let Some(r) = record(build, &["-g"], true) else {
            return;
        };
        let ours = bport_script(&r, &[]);
        assert_eq!(ours.code, Some(0), "{}", ours.stderr);
        assert_same_lines(&perf_script(&r), &ours.stdout, build.file_name());
        let leaf = samples(&ours.stdout)
            .iter()
            .filter(|(_, s)| s.first().map(String::as_str) == Some("chain_c"))
            .count();
        assert!(
            leaf >= 50,
            "only {leaf} samples in chain_c:\n{}",
            ours.stdout
        );
    }
}

#[test]
fn dwarf_recordings_equal_perf_script_and_unwind_the_no_frame_pointer_build() {
    for build in Build::ALL {
        let Some(r) = record(build, &["--call-graph", "dwarf"], true) else {
            return;
        };
        let ours = bport_script(&r, &[]);
        assert_eq!(ours.code, Some(0), "{}", ours.stderr);
        assert_same_lines(&perf_script(&r), &ours.stdout, build.file_name());
        let (full, leaf) = full_chain_percent(&ours.stdout);
        assert!(
            leaf >= 50,
            "only {leaf} samples in chain_c:\n{}",
            ours.stdout
        );
        assert!(
            full * 100 >= leaf * 95,
            "{}: only {full} of {leaf} chain_c samples carry main → chain_a → chain_b → chain_c",
            build.file_name()
        );
    }
}

/// The sample blocks of a system-wide script output that belong to the workload or touch only the kernel.
fn workload_and_kernel_blocks(text: &str, comm: &str) -> String {
    text.split("\n\n")
        .filter(|b| {
            let mut lines = b.lines();
            let header = lines.next().unwrap_or_default();
            header.starts_with(&format!("{comm} "))
                || lines.all(|l| l.ends_with("([kernel.kallsyms])"))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[test]
fn system_wide_recording_equals_perf_script() {
    let Some(r) = record(Build::FramePointer, &["-a", "-g"], true) else {
        return;
    };
    let ours = bport_script(&r, &[]);
    assert_eq!(ours.code, Some(0), "{}", ours.stderr);
    let theirs = perf_script(&r);
    // Named deviation: blocks of other processes on this shared machine are left out. They pass through
    // whatever DSOs those processes map (here: BOLT-optimised rustc libraries, for which perf 6.1 sometimes
    // prints [unknown] where the symbol table has the function); the workload's and kernel-only blocks must match.
    let comm = Build::FramePointer.file_name();
    let (a, b) = (
        workload_and_kernel_blocks(&theirs, comm),
        workload_and_kernel_blocks(&ours.stdout, comm),
    );
    assert!(a.contains(comm), "no workload samples in the -a file");
    assert_same_lines(&a, &b, "perf record -a -g");
    // The CPU column is there because -a samples PERF_SAMPLE_CPU.
    let header = &samples(&ours.stdout)[0].0;
    assert!(header.contains(" [0"), "no [CPU] column in {header:?}");
}

#[test]
fn inferno_folds_bport_and_perf_output_to_the_same_stacks() {
    let Some(r) = record(Build::NoFramePointer, &["--call-graph", "dwarf"], true) else {
        return;
    };
    let ours = bport_script(&r, &[]);
    let theirs = perf_script(&r);
    let fold = |t: &str| {
        String::from_utf8(::bport::perf::tools::flame::collapse_perf_script(t.as_bytes()).unwrap())
            .unwrap()
    };
    let (a, b) = (fold(&theirs), fold(&ours.stdout));
    assert_eq!(a, b);
    let hot = b
        .lines()
        .find(|l| l.contains("main;chain_a;chain_b;chain_c "))
        .unwrap_or_else(|| panic!("no full chain among the folded stacks:\n{b}"));
    assert!(hot.starts_with("chain-nofp;"), "{hot}");
}

#[test]
fn dwarf_is_chosen_from_the_sample_type_and_the_legacy_switch_proves_it_matters() {
    // Regression test for the bug the project exists for (perf commit 7322d6c98dd2, v4.3): perf script before
    // 4.3 did not set the callchain mode from the file, so DWARF recordings printed no user frames.
    let Some(r) = record(Build::NoFramePointer, &["--call-graph", "dwarf"], true) else {
        return;
    };
    let ours = bport_script(&r, &[]);
    let (full, leaf) = full_chain_percent(&ours.stdout);
    assert!(full * 100 >= leaf * 95 && leaf > 0, "{full}/{leaf}");

    let legacy = bport_script(&r, &[(::bport::perf::script::TEST_NO_DWARF_MODE_ENV, "1")]);
    assert_eq!(legacy.code, Some(0), "{}", legacy.stderr);
    let (full, _) = full_chain_percent(&legacy.stdout);
    assert_eq!(full, 0, "the pre-4.3 behaviour must lose the chain");
    // User-mode samples have an empty kernel callchain, so pre-4.3 output shows no frame at all for them.
    let user_only = samples(&legacy.stdout)
        .into_iter()
        .filter(|(_, syms)| syms.iter().any(|s| s == "chain_b"))
        .count();
    assert_eq!(user_only, 0);
}

/// Overwrites the bytes of `section` in the ELF file at `path` with 0xff, keeping everything else (the build-id
/// note included) so the file still matches the recording.
fn scribble_section(path: &Path, section: &str) {
    use object::{Object, ObjectSection};
    let mut bytes = std::fs::read(path).unwrap();
    let (offset, size) = {
        let file = object::File::parse(&bytes[..]).unwrap();
        let s = file.section_by_name(section).unwrap();
        s.file_range().unwrap()
    };
    for b in &mut bytes[offset as usize..(offset + size) as usize] {
        *b = 0xff;
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn changed_missing_and_corrupt_dsos_degrade_frames_not_the_run() {
    // A DSO that changed since recording: rejected for its build-id, reported, frames [unknown].
    let Some(r) = record(Build::FramePointer, &["-g"], false) else {
        return;
    };
    std::fs::write(&r.exe, Build::NoFramePointer.bytes()).unwrap();
    let ours = bport_script(&r, &[]);
    assert_eq!(ours.code, Some(0), "{}", ours.stderr);
    assert!(
        ours.stderr.contains("build id mismatch"),
        "no mismatch warning: {}",
        ours.stderr
    );
    assert_same_lines(&perf_script(&r), &ours.stdout, "changed DSO");
    let exe = r.exe.to_str().unwrap();
    assert!(ours.stdout.contains(&format!(" [unknown] ({exe})")));
    assert!(!ours.stdout.contains("chain_c"));

    // A DSO that is gone: [unknown] frames, no error.
    std::fs::remove_file(&r.exe).unwrap();
    let ours = bport_script(&r, &[]);
    assert_eq!(ours.code, Some(0), "{}", ours.stderr);
    assert!(ours.stderr.contains("no file found"), "{}", ours.stderr);
    assert_same_lines(&perf_script(&r), &ours.stdout, "missing DSO");

    // Corrupt unwind tables: each chain ends at the first frame, every sample is still printed.
    let Some(r) = record(Build::NoFramePointer, &["--call-graph", "dwarf"], false) else {
        return;
    };
    let before = bport_script(&r, &[]);
    scribble_section(&r.exe, ".eh_frame");
    scribble_section(&r.exe, ".eh_frame_hdr");
    let after = bport_script(&r, &[]);
    assert_eq!(after.code, Some(0), "{}", after.stderr);
    let (b, a) = (samples(&before.stdout), samples(&after.stdout));
    assert_eq!(a.len(), b.len(), "samples lost");
    let leaf: Vec<&Vec<String>> = a
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.first().map(String::as_str) == Some("chain_c"))
        .collect();
    assert!(!leaf.is_empty());
    assert!(
        leaf.iter().all(|s| s.len() == 1),
        "chains went past the corrupt tables"
    );
}

#[test]
fn report_table_equals_perf_report() {
    let Some(r) = record(Build::FramePointer, &["-g"], true) else {
        return;
    };
    let d = r.data.to_str().unwrap();
    // Named deviation: perf ends each table with a randomly chosen "(Tip: …)" comment; bport prints none.
    let strip_tip = |t: &str| -> String {
        let lines: Vec<&str> = t.lines().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            if i + 2 < lines.len()
                && lines[i] == "#"
                && lines[i + 1].starts_with("# (Tip:")
                && lines[i + 2] == "#"
            {
                i += 3;
                continue;
            }
            out.push(lines[i]);
            i += 1;
        }
        out.join("\n")
    };
    // With callchains perf's default is Children and Self columns and the call graph under each row:
    // both tools with their defaults, and with `-g none` (the tables alone).
    for mode in ["--no-children", "--children"] {
        for (sort, graph) in [
            ("comm,dso,sym", None),
            ("comm,dso,sym", Some("none")),
            ("comm,dso", Some("none")),
            ("dso,sym", None),
            ("pid,sym", Some("none")),
        ] {
            let mut args = vec!["report", "-i", d, "--stdio", "--sort", sort, mode];
            if let Some(g) = graph {
                args.extend(["-g", g]);
            }
            let theirs = perf_ok(r.dir.path(), &args);
            let ours = bport::run(r.dir.path(), &args);
            assert_eq!(ours.code, Some(0), "{}", ours.transcript());
            let what = format!("{mode} {sort} -g {graph:?}");
            assert_same_lines(&strip_tip(&theirs), &strip_tip(&ours.stdout), &what);
            assert!(ours.stdout.contains("[.] chain_c") || !sort.contains("sym"));
            assert_eq!(
                ours.stdout.contains("# Children      Self"),
                mode == "--children",
                "{what}"
            );
        }
    }
}

#[test]
fn flamegraph_folds_as_inferno_does_on_perf_script() {
    let Some(r) = record(Build::NoFramePointer, &["--call-graph", "dwarf"], true) else {
        return;
    };
    let d = r.data.to_str().unwrap();
    let folded = bport::run(r.dir.path(), &["flamegraph", "-i", d, "--folded"]);
    assert_eq!(folded.code, Some(0), "{}", folded.transcript());
    let theirs =
        ::bport::perf::tools::flame::collapse_perf_script(perf_script(&r).as_bytes()).unwrap();
    assert_eq!(folded.stdout, String::from_utf8(theirs).unwrap());
    let svg = r.dir.path().join("flame.svg");
    let out = bport::run(
        r.dir.path(),
        &["flamegraph", "-i", d, "-o", svg.to_str().unwrap()],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.starts_with("<?xml"), "{}", &svg[..100.min(svg.len())]);
    for f in EXPECTED_CHAIN {
        assert!(
            svg.contains(&format!(">{f} (")),
            "{f} missing from the flame graph"
        );
    }
}

/// A DWARF file read where none of its DSOs can be (a file from another machine; here an
/// empty `--symfs`). perf 6.1 builds no libunwind address space for such a process and prints its samples
/// without any user frame; bport must not print the IP as `[unknown] (ld-linux…)`. Also: with a symfs, the debug
/// directories are looked up under it, as perf does (the host's /usr/lib/debug made ld.so readable).
#[test]
fn dwarf_file_without_readable_dsos_prints_no_user_frames_as_perf() {
    let Some(r) = record(Build::NoFramePointer, &["--call-graph", "dwarf"], true) else {
        return;
    };
    let empty = r.dir.path().join("empty-symfs");
    std::fs::create_dir_all(&empty).unwrap();
    let home = r.dir.path().join("empty-home");
    std::fs::create_dir_all(&home).unwrap();
    let (d, e) = (r.data.to_str().unwrap(), empty.to_str().unwrap());
    let args = ["script", "-i", d, "--symfs", e, "--kallsyms", "/dev/null"];
    let theirs = perf_ok(&home, &args);
    let ours = bport::run(&home, &args);
    assert_eq!(ours.code, Some(0), "{}", ours.transcript());
    assert_same_lines(&theirs, &ours.stdout, "dwarf, empty symfs");
    // The point of the test: samples whose chain perf leaves empty.
    assert!(theirs.contains(": \n\n"), "no empty chain in perf's output");
}

/// A copy of the perf.data file `bytes` without the header features `drop` (their bits cleared and their
/// section-table entries taken out), as a file from a perf that did not write them reads.
fn without_features(bytes: &[u8], drop: &[u32]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let table = (u64_at(&b, 0x28) + u64_at(&b, 0x30)) as usize;
    let set: Vec<u32> = (0..256u32)
        .filter(|bit| b[0x48 + (*bit / 8) as usize] >> (bit % 8) & 1 == 1)
        .collect();
    let mut entries = Vec::new();
    for (k, bit) in set.iter().enumerate() {
        if drop.contains(bit) {
            b[0x48 + (*bit / 8) as usize] &= !(1 << (bit % 8));
        } else {
            entries.extend_from_slice(&bytes[table + 16 * k..table + 16 * k + 16]);
        }
    }
    b[table..table + entries.len()].copy_from_slice(&entries);
    b
}

/// A tracepoint recording without EVENT_DESC (perf before 3.x wrote none; the attr has no
/// name) is named as perf names it, `sys:name` from the tracing data, not `unknown attr type: 2`. With the
/// tracing data gone too, perf 6.1 refuses the file ("incompatible file format"); bport prints what it has,
/// the event as evsel__name calls it ("unknown tracepoint"): a named deviation, nothing the file holds is lost.
#[test]
fn tracepoint_without_event_desc_is_named_from_the_tracing_data() {
    use ::bport::perf::abi::{HEADER_EVENT_DESC, HEADER_TRACING_DATA};
    if !oracle::has_perf() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("tp.data");
    perf_ok(
        dir.path(),
        &[
            "record",
            "-q",
            "-e",
            "sched:sched_switch",
            "-a",
            "-o",
            data.to_str().unwrap(),
            "--",
            "sleep",
            "0.2",
        ],
    );
    let bytes = std::fs::read(&data).unwrap();
    let rec = |name: &str, drop: &[u32]| {
        let path = dir.path().join(name);
        std::fs::write(&path, without_features(&bytes, drop)).unwrap();
        Recording {
            dir: tempfile::tempdir_in(dir.path()).unwrap(),
            data: path,
            exe: PathBuf::new(),
        }
    };
    let no_desc = rec("no-desc.data", &[HEADER_EVENT_DESC]);
    let perf = perf_script(&no_desc);
    let ours = bport_script(&no_desc, &[]);
    assert_eq!(ours.code, Some(0), "{}", ours.stderr);
    assert!(perf.contains(" sched:sched_switch: prev_comm="), "{perf}");
    assert_same_lines(&perf, &ours.stdout, "sched_switch without EVENT_DESC");

    let nothing = rec(
        "no-tracing-data.data",
        &[HEADER_EVENT_DESC, HEADER_TRACING_DATA],
    );
    let refused = oracle::perf(nothing.dir.path())
        .args(["script", "-i", nothing.data.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        !refused.status.success(),
        "perf 6.1 read it after all: update the deviation"
    );
    let ours = bport_script(&nothing, &[]);
    assert_eq!(ours.code, Some(0), "{}", ours.stderr);
    let headers: Vec<&str> = ours
        .stdout
        .lines()
        .filter(|l| !l.starts_with('\t') && !l.is_empty())
        .collect();
    assert_eq!(
        headers.len(),
        perf.lines().count(),
        "one sample line per sched_switch"
    );
    assert!(
        headers
            .iter()
            .all(|l| l.contains(" 1 unknown tracepoint: ")),
        "{headers:?}"
    );
}
