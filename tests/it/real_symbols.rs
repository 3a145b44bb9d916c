//! Symbols on real programs (`real_programs` holds the chain tests): `bport script` against
//! `perf script` on live recordings of programs built here from sources nobody wrote for
//! bport's own tests' convenience: a template-heavy C++ program (g++ -O2, libstdc++) and a Rust program with
//! legacy symbol mangling, and bport's demangler against `c++filt` on every C++ symbol of
//! libstdc++.
//!
//! Named deviations: one — `(inlined)` frames of code in a segment whose address-to-offset distance is not
//! `.text`'s, where perf asks addr2line about another address (see
//! `inline_frames_in_a_segment_offset_unlike_text_name_the_sampled_code`); every other line equals perf 6.1's.

use crate::support::bport;
use crate::support::compare::assert_same_lines;
use crate::support::oracle::{self, perf_ok, tool_ok};
use std::path::{Path, PathBuf};

const PROGRAMS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/programs");

/// Records `exe seconds` with `perf record ARGS` into `dir/NAME.data`.
fn record(dir: &Path, name: &str, args: &[&str], exe: &Path, seconds: &str) -> PathBuf {
    let data = dir.join(format!("{name}.data"));
    let mut cmd: Vec<&str> = vec!["record", "-q", "-o", data.to_str().unwrap()];
    cmd.extend_from_slice(args);
    cmd.extend_from_slice(&["--", exe.to_str().unwrap(), seconds]);
    perf_ok(dir, &cmd);
    data
}

/// `perf script` and `bport script` on `data`, with the same HOME (build-id cache).
fn both_scripts(dir: &Path, data: &Path) -> (String, String) {
    let perf = perf_ok(dir, &["script", "-i", data.to_str().unwrap()]);
    let out = bport::run(dir, &["script", "-i", data.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    (perf, out.stdout)
}

/// Builds tests/fixtures/programs/templates.cpp with g++ -O2 -g and frame pointers, into `dir`.
fn build_templates(dir: &Path) -> Option<PathBuf> {
    if !oracle::has_perf() || !oracle::require("g++", "apt-get install g++") {
        return None;
    }
    let exe = dir.join("templates");
    tool_ok(
        "g++",
        &[
            "-O2",
            "-g",
            "-fno-omit-frame-pointer",
            "-o",
            exe.to_str().unwrap(),
            &format!("{PROGRAMS}/templates.cpp"),
        ],
        &[],
        "",
    );
    Some(exe)
}

#[test]
fn cpp_template_program_equals_perf_script_fp_and_dwarf() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build_templates(dir.path()) else {
        return;
    };
    for (name, args) in [
        ("fp", vec!["-F", "4000", "-g"]),
        ("dwarf", vec!["-F", "2000", "--call-graph", "dwarf"]),
    ] {
        let data = record(dir.path(), name, &args, &exe, "0.4");
        let (perf, ours) = both_scripts(dir.path(), &data);
        // The names this program exists for: a template whose mangled return type cpp_demangle rejects
        // (std::swap<Widget> in DWARF mode), lambdas and libstdc++ containers, all demangled.
        assert!(
            ours.contains("std::") && !ours.contains(" _Z"),
            "{name}: a C++ name stayed mangled or none was seen:\n{ours}"
        );
        assert_same_lines(&perf, &ours, name);
    }
}

#[test]
fn rust_legacy_mangled_program_equals_perf_script() {
    if !oracle::has_perf() || !oracle::require("rustc", "install a Rust toolchain") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("legacy_mangling");
    // Stable rustc 1.95 mangles with v0 by default and takes `legacy` only as an unstable option.
    tool_ok(
        "rustc",
        &[
            "-O",
            "-g",
            "-Zunstable-options",
            "-Csymbol-mangling-version=legacy",
            "-Cforce-frame-pointers=yes",
            "-o",
            exe.to_str().unwrap(),
            &format!("{PROGRAMS}/legacy_mangling.rs"),
        ],
        &[("RUSTC_BOOTSTRAP", "1")],
        "",
    );
    let data = record(dir.path(), "fp", &["-F", "4000", "-g"], &exe, "0.4");
    let (perf, ours) = both_scripts(dir.path(), &data);
    assert!(
        ours.contains("legacy_mangling::work") && !ours.contains("$LT$") && !has_hash(&ours),
        "a legacy Rust name stayed (partly) mangled:\n{ours}"
    );
    assert_same_lines(&perf, &ours, "legacy-mangled Rust");
}

/// Whether a Rust legacy hash suffix (`::h` and 16 hex digits) was left in `text`.
fn has_hash(text: &str) -> bool {
    text.match_indices("::h").any(|(i, _)| {
        let rest = &text.as_bytes()[i + 3..];
        rest.len() >= 16 && rest[..16].iter().all(u8::is_ascii_hexdigit)
    })
}

/// libiberty without DMGL_VERBOSE (perf's flags) abbreviates the four standard typedefs; c++filt is verbose.
fn abbreviate(s: &str) -> String {
    s.replace(
        "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
        "std::string",
    )
    .replace(
        "std::basic_istream<char, std::char_traits<char> >",
        "std::istream",
    )
    .replace(
        "std::basic_ostream<char, std::char_traits<char> >",
        "std::ostream",
    )
    .replace(
        "std::basic_iostream<char, std::char_traits<char> >",
        "std::iostream",
    )
    // libiberty separates `>` from a `>` before it only.
    .replace("string >", "string>")
    .replace("stream >", "stream>")
}

#[test]
fn cpp_demangling_equals_cxxfilt_on_every_libstdcxx_function() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build_templates(dir.path()) else {
        return;
    };
    skip_unless!(oracle::require("c++filt", "apt-get install binutils"));
    // The libstdc++ the program links, and the program's own symbols.
    let ldd = tool_ok("ldd", &[exe.to_str().unwrap()], &[], "");
    let libstdcxx = ldd
        .lines()
        .find_map(|l| {
            l.contains("libstdc++")
                .then(|| l.split_whitespace().nth(2).map(str::to_owned))
        })
        .flatten()
        .expect("the program links libstdc++");
    let mut names: Vec<String> = Vec::new();
    for args in [
        vec!["-D", "--defined-only", libstdcxx.as_str()],
        vec!["--defined-only", exe.to_str().unwrap()],
    ] {
        let nm = tool_ok("nm", &args, &[], "");
        names.extend(
            nm.lines()
                .filter_map(|l| l.split_whitespace().nth(2))
                // Functions only: data (vtables, typeinfo, guard variables) never names a frame.
                .filter(|n| {
                    let thunk = ["_ZTh", "_ZTv", "_ZTc"].iter().any(|p| n.starts_with(p));
                    n.starts_with("_Z") && !n.starts_with("_ZT") && !n.starts_with("_ZGV") || thunk
                })
                .map(|n| n.split('@').next().unwrap_or(n).to_owned()),
        );
    }
    assert!(names.len() > 3000, "only {} names", names.len());
    let filt = tool_ok("c++filt", &["-p"], &[], &(names.join("\n") + "\n"));
    let mut differ = Vec::new();
    for (raw, want) in names.iter().zip(filt.lines()) {
        let ours = ::bport::perf::symbols::demangle::demangle(raw);
        if abbreviate(&ours) != abbreviate(want) {
            differ.push(format!("{raw}\n  c++filt -p: {want}\n  bport:      {ours}"));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} names differ from c++filt -p:\n{}",
        differ.len(),
        names.len(),
        differ.join("\n")
    );
}

#[test]
fn vdso_frames_resolve_as_perf_does_with_and_without_a_recorded_build_id() {
    if !oracle::has_perf() || !oracle::require("gcc", "apt-get install gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("vdso_clock");
    // -fno-plt: no PLT stub frames, whose naming is another matter (the PLT tests below).
    tool_ok(
        "gcc",
        &[
            "-O2",
            "-fno-omit-frame-pointer",
            "-fno-plt",
            "-o",
            exe.to_str().unwrap(),
            &format!("{PROGRAMS}/vdso_clock.c"),
        ],
        &[],
        "",
    );
    // Pipe mode records no build-id for [vdso]: perf reads its own running vDSO (the same kernel's image).
    let pipe = dir.path().join("pipe.data");
    let status = oracle::perf(dir.path())
        .args(["record", "-q", "-g", "-F", "4000", "-o", "-", "--"])
        .arg(&exe)
        .arg("0.3")
        .stdout(std::fs::File::create(&pipe).unwrap())
        .status()
        .unwrap();
    assert!(status.success(), "perf record -o - failed");
    let (perf, ours) = both_scripts(dir.path(), &pipe);
    assert!(
        ours.contains("__vdso_clock_gettime+"),
        "no resolved vdso frame:\n{ours}"
    );
    assert_same_lines(&perf, &ours, "pipe mode, running vdso");
    // File mode with -N: the build-id is recorded but the cache has no copy, and perf 6.1 then leaves the
    // frames unresolved rather than trust the running image.
    let data = record(
        dir.path(),
        "no-cache",
        &["-N", "-g", "-F", "4000"],
        &exe,
        "0.3",
    );
    let (perf, ours) = both_scripts(dir.path(), &data);
    assert!(
        ours.contains("[unknown] ([vdso])"),
        "vdso frames resolved without the recorded build-id's image:\n{ours}"
    );
    assert_same_lines(&perf, &ours, "file mode, build-id recorded, not cached");
    // bport's pipe stream carries the vdso's build-id ahead of its MMAP: perf attaches it only to a vdso it has
    // not mapped yet (a record at the end got listed without its id when perf's reader had flushed the MMAP).
    let stream = dir.path().join("bport-pipe.data");
    let status = bport::bport(dir.path())
        .args(["record", "-g", "-F", "4000", "-o", "-", "--"])
        .arg(&exe)
        .arg("0.3")
        .stdout(std::fs::File::create(&stream).unwrap())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "bport record -o - failed");
    let list = |mut cmd: std::process::Command, what: &str| {
        let out = cmd
            .args(["buildid-list", "-i", "-"])
            .stdin(std::fs::File::open(&stream).unwrap())
            .output()
            .unwrap();
        assert!(out.status.success(), "{what} buildid-list failed");
        String::from_utf8(out.stdout).unwrap()
    };
    let theirs = list(oracle::perf(dir.path()), "perf");
    let ours = list(bport::bport(dir.path()), "bport");
    assert!(
        theirs
            .lines()
            .any(|l| l.ends_with(" [vdso]") && l.split(' ').next().is_some_and(|id| id.len() == 40)),
        "perf lists no build-id for the vdso of bport's stream:\n{theirs}"
    );
    assert_same_lines(
        &theirs,
        &ours,
        "buildid-list of bport's pipe stream of a vdso-bound program",
    );
}

/// Builds `tests/fixtures/programs/NAME.c` with gcc and `flags` (frame pointers, -O1) into `dir/OUT`.
fn build_c(dir: &Path, name: &str, out: &str, flags: &[&str]) -> PathBuf {
    let exe = dir.join(out);
    let src = format!("{PROGRAMS}/{name}.c");
    let mut args = vec![
        "-O1",
        "-fno-omit-frame-pointer",
        "-fno-builtin",
        "-o",
        exe.to_str().unwrap(),
    ];
    args.extend_from_slice(flags);
    args.push(&src);
    tool_ok("gcc", &args, &[], "");
    exe
}

/// Past a binary's end: perf 6.1 keeps objects (`table` in .rodata) and, for labels, only
/// those in "text"/"data" sections, so `etext` (a label at the end of `.fini`) is no symbol, and the
/// zero-size `_fini` runs to the next symbol, `_IO_stdin_used` in `.rodata`; past that object's end perf
/// prints `[unknown]`. bport printed `etext+0x30` (all labels of executable sections, no objects) for the
/// same addresses. Both layouts: .rodata in the text segment (`-z noseparate-code`) and in its own.
#[test]
fn addresses_past_the_last_function_resolve_as_perf_does() {
    if !oracle::has_perf() || !oracle::require("gcc", "apt-get install gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (layout, flags) in [
        ("noseparate", vec!["-Wl,-z,noseparate-code"]),
        ("separate", vec!["-Wl,-z,separate-code"]),
    ] {
        let exe = build_c(
            dir.path(),
            "past_end",
            &format!("past_end_{layout}"),
            &flags,
        );
        for (what, arg, want) in [
            ("just past _fini", "0x10", "_fini+0x"),
            ("past .rodata's first object", "0x30", ""),
            ("inside an object", "t", ""),
        ] {
            let data = dir
                .path()
                .join(format!("{layout}-{}.data", what.replace(' ', "-")));
            perf_ok(
                dir.path(),
                &[
                    "record",
                    "-q",
                    "-g",
                    "-F",
                    "2000",
                    "-o",
                    data.to_str().unwrap(),
                    "--",
                    exe.to_str().unwrap(),
                    "100000000",
                    arg,
                ],
            );
            let (perf, ours) = both_scripts(dir.path(), &data);
            // The frame under `spin` is the fake return address: perf's name for it is what this checks.
            let under_spin = |t: &str| -> Vec<String> {
                let lines: Vec<&str> = t.lines().collect();
                lines
                    .windows(2)
                    .filter(|w| w[0].contains(" spin+"))
                    .map(|w| w[1].to_owned())
                    .collect()
            };
            assert!(
                !under_spin(&perf).is_empty(),
                "{layout}, {what}: no sample in spin"
            );
            assert!(
                under_spin(&perf).iter().all(|l| l.contains(want)),
                "{layout}, {what}: perf printed {:?}",
                under_spin(&perf).first()
            );
            assert_same_lines(&perf, &ours, &format!("{layout}, {what}"));
        }
    }
}

/// A recording made here, not by perf: a process of `exe`, its executable segments mapped as the kernel maps a
/// PIE (or an ET_EXEC where it is linked), and one sample at each of `svmas` (addresses as the file numbers them).
/// Which addresses are sampled is decided here, not left to where a loaded machine's timer happens to fire.
fn samples_at(dir: &Path, exe: &Path, svmas: &[u64]) -> PathBuf {
    let base = load_base(exe);
    let ips: Vec<u64> = svmas.iter().map(|s| base + s).collect();
    synthetic_samples(dir, exe, &[], &ips)
}

/// Where [`synthetic_samples`] maps `exe`: a PIE at the kernel's usual first address, an ET_EXEC where it is
/// linked.
pub(crate) fn load_base(exe: &Path) -> u64 {
    use object::read::elf::FileHeader;
    let bytes = std::fs::read(exe).unwrap();
    let header = object::elf::FileHeader64::<object::Endianness>::parse(&*bytes).unwrap();
    if header.e_type(header.endian().unwrap()) == object::elf::ET_DYN {
        0x5555_5555_4000
    } else {
        0
    }
}

/// A recording of one process of `exe` (mapped at [`load_base`]) that also maps each of `others` (path, start,
/// length; files that need not exist), with one user sample at each address of `ips`, in that order.
pub(crate) fn synthetic_samples(
    dir: &Path,
    exe: &Path,
    others: &[(&str, u64, u64)],
    ips: &[u64],
) -> PathBuf {
    use ::bport::perf::abi::*;
    use ::bport::perf::data::{
        CommRecord, Features, Mmap2Inode, Mmap2Record, PerfEventAttr, PerfFileWriter, Record,
        RecordMeta, SampleId, SampleRecord, WriterOptions,
    };
    use object::read::elf::{FileHeader, ProgramHeader};
    const PID: u32 = 31337;
    let bytes = std::fs::read(exe).unwrap();
    let header = object::elf::FileHeader64::<object::Endianness>::parse(&*bytes).unwrap();
    let endian = header.endian().unwrap();
    let base = load_base(exe);
    let attr = PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        size: PERF_ATTR_SIZE_VER5,
        config: PERF_COUNT_SW_CPU_CLOCK,
        sample_period_or_freq: 4000,
        sample_type: PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD,
        flags: ATTR_FLAG_SAMPLE_ID_ALL
            | ATTR_FLAG_MMAP
            | ATTR_FLAG_COMM
            | ATTR_FLAG_MMAP2
            | ATTR_FLAG_FREQ,
        ..Default::default()
    };
    let meta = |ty, misc, time| RecordMeta {
        ty,
        misc,
        attr_index: Some(0),
        sample_id: SampleId {
            pid: Some(PID),
            tid: Some(PID),
            time: Some(time),
            ..Default::default()
        },
        ..Default::default()
    };
    let data = dir.join(format!(
        "{}.synthetic.data",
        exe.file_name().unwrap().to_string_lossy()
    ));
    let mut w = PerfFileWriter::create(&data, WriterOptions::default()).unwrap();
    w.add_attr(&attr, &[]).unwrap();
    w.write_record(&Record::Comm(CommRecord {
        meta: meta(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, 1),
        pid: PID,
        tid: PID,
        comm: b"plt_calls",
    }))
    .unwrap();
    let name = exe.to_str().unwrap().as_bytes();
    let mut maps: Vec<(&[u8], u64, u64, u64)> = Vec::new();
    for ph in header.program_headers(endian, &*bytes).unwrap() {
        if ph.p_type(endian) != object::elf::PT_LOAD
            || ph.p_flags(endian).0 & object::elf::PF_X.0 == 0
        {
            continue;
        }
        let (vaddr, offset) = (ph.p_vaddr(endian), ph.p_offset(endian));
        let start = vaddr & !0xfff;
        let end = (vaddr + ph.p_memsz(endian) + 0xfff) & !0xfff;
        maps.push((name, base + start, end - start, offset & !0xfff));
    }
    maps.extend(
        others
            .iter()
            .map(|&(f, at, len)| (f.as_bytes(), at, len, 0)),
    );
    for (filename, addr, len, pgoff) in maps {
        w.write_record(&Record::Mmap2(Mmap2Record {
            meta: meta(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 2),
            pid: PID,
            tid: PID,
            addr,
            len,
            pgoff,
            inode: Mmap2Inode::Inode {
                maj: 0,
                min: 0,
                ino: 0,
                ino_generation: 0,
            },
            prot: 5,
            flags: 2,
            filename,
        }))
        .unwrap();
    }
    for (i, ip) in ips.iter().enumerate() {
        let time = 1_000 + i as u64;
        w.write_record(&Record::Sample(SampleRecord {
            meta: meta(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, time),
            ip: Some(*ip),
            pid: Some(PID),
            tid: Some(PID),
            time: Some(time),
            period: Some(250_000),
            ..Default::default()
        }))
        .unwrap();
    }
    w.finish(&Features::default()).unwrap();
    data
}

/// The first and a middle byte of every 16-byte PLT entry of `exe` (`.plt` past its header, `.plt.sec`,
/// `.plt.got`).
fn plt_stub_addresses(exe: &Path) -> Vec<u64> {
    use object::{Object, ObjectSection};
    let bytes = std::fs::read(exe).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let mut addrs = Vec::new();
    for (name, header) in [(".plt", 16), (".plt.sec", 0), (".plt.got", 0)] {
        if let Some(section) = file.section_by_name(name) {
            let mut at = section.address() + header;
            while at + 16 <= section.address() + section.size() {
                addrs.extend([at, at + 6]);
                at += 16;
            }
        }
    }
    assert!(
        addrs.len() >= 2 * 8,
        "{}: fewer PLT entries than plt_calls.c calls",
        exe.display()
    );
    addrs
}

/// PLT stubs. perf 6.1 adds its `NAME@plt` symbols after stretching the zero-size `_init` over
/// the PLT, and its lookup returns the first symbol holding the address on its way down its rb-tree: `_init+0x30`
/// for the first stub of this program, `strlen@plt+0x0` for the others (bport replays the tree,
/// `symbols::rbtree`). With `-fcf-protection -z ibtplt` the stubs are in `.plt.sec`, which perf 6.1 does not
/// know (its symbols go at the `.plt` entries, where the lazy-binding code is): a sample there is `_init+0x…`
/// when the walk meets `_init`, and `[unknown]` here, where the walk passes `_init` by (a one-stub program
/// gets `_init+0x60`). Lazy and `-z now` binding each. The samples are placed at every stub ([`samples_at`]).
#[test]
fn plt_stubs_are_named_as_perf_6_1_names_them() {
    if !oracle::has_perf() || !oracle::require("gcc", "apt-get install gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, flags, want) in [
        ("lazy", vec![], "@plt+0x0 "),
        ("now", vec!["-Wl,-z,now"], "@plt+0x0 "),
        (
            "ibt-lazy",
            vec!["-fcf-protection=full", "-Wl,-z,ibtplt"],
            " [unknown] (EXE)",
        ),
        (
            "ibt-now",
            vec!["-fcf-protection=full", "-Wl,-z,ibtplt", "-Wl,-z,now"],
            " [unknown] (EXE)",
        ),
    ] {
        let exe = build_c(dir.path(), "plt_calls", name, &flags);
        let data = samples_at(dir.path(), &exe, &plt_stub_addresses(&exe));
        let (perf, ours) = both_scripts(dir.path(), &data);
        let want = want.replace("EXE", exe.to_str().unwrap());
        assert!(
            perf.contains(&want),
            "{name}: no sample named {want:?}:\n{perf}"
        );
        assert_same_lines(&perf, &ours, name);
    }
}

/// PLT stubs of a program linked by lld (as rustc links its own `rustc` binary): lld writes
/// `sh_entsize` 0 for `.plt`, and perf 6.1 still synthesizes one `NAME@plt` per relocation, every one at `.plt`'s
/// start with size 0. They hold that address only, but sit in its tree on the way to the zero-size `_fini`
/// stretched over `.plt`, so a sample in a stub is `[unknown]`. bport made no PLT symbols there and printed
/// `_fini+0x80` (32 of this recording's lines; on a system-wide recording, rustc's `_fini+0xf4`). The samples
/// are placed at every stub ([`samples_at`]); a real recording is compared as well, where whichever stubs it
/// sampled (perhaps none, on a loaded machine) must print as perf prints them.
#[test]
fn plt_stubs_of_an_lld_linked_program_are_named_as_perf_6_1_names_them() {
    if !oracle::has_perf()
        || !oracle::require("gcc", "apt-get install gcc")
        || !oracle::require(
            "rustc",
            "install a Rust toolchain (its rust-lld links the program)",
        )
    {
        return;
    }
    let sysroot = tool_ok("rustc", &["--print", "sysroot"], &[], "");
    let gcc_ld = format!(
        "{}/lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld",
        sysroot.trim()
    );
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(
        dir.path(),
        "plt_calls",
        "lld",
        &["-fuse-ld=lld", "-B", &gcc_ld],
    );
    let want = format!(" [unknown] ({})", exe.to_str().unwrap());
    let stubs = plt_stub_addresses(&exe);
    let data = samples_at(dir.path(), &exe, &stubs);
    let (perf, ours) = both_scripts(dir.path(), &data);
    assert_eq!(
        perf.matches(&want).count(),
        stubs.len(),
        "perf names every stub sample [unknown]:\n{perf}"
    );
    assert!(!perf.contains("_fini+0x"), "{perf}");
    assert_same_lines(&perf, &ours, "lld, samples at every stub");

    let data = record(dir.path(), "lld", &["-g", "-F", "10000"], &exe, "3000000");
    let (perf, ours) = both_scripts(dir.path(), &data);
    assert_same_lines(&perf, &ours, "lld, recorded");
}

/// An event group recorded by perf with callchains (`{cpu-clock,task-clock}`, so GROUP_DESC
/// names it) shows as perf 6.1 shows groups by default: one table, "N of events 'anon group { … }'", a share per
/// member in each of the Children and Self (or Overhead) columns, the leader's call graph under each row.
#[test]
fn cpp_template_program_event_group_report_equals_perf_report() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build_templates(dir.path()) else {
        return;
    };
    let data = record(
        dir.path(),
        "group",
        &["-e", "{cpu-clock,task-clock}", "-F", "2000", "-g"],
        &exe,
        "0.3",
    );
    let d = data.to_str().unwrap();
    for (sort, mode) in [
        ("comm,dso,sym", "--children"),
        ("comm,dso,sym", "--no-children"),
        ("dso,sym", "--no-children"),
    ] {
        let args = ["report", "-i", d, "--stdio", "--sort", sort, mode];
        let theirs = perf_ok(dir.path(), &args);
        let ours = bport::run(dir.path(), &args);
        assert_eq!(ours.code, Some(0), "{}", ours.transcript());
        assert!(
            ours.stdout
                .contains("of events 'anon group { cpu-clock, task-clock }'"),
            "no group table:\n{}",
            ours.stdout
        );
        assert!(
            ours.stdout.contains("---"),
            "no call graph:\n{}",
            ours.stdout
        );
        let what = format!("{sort} {mode}");
        assert_same_lines(&strip_tip(&theirs), &strip_tip(&ours.stdout), &what);
    }
}

/// perf's report text without the random "(Tip: …)" block it ends each table with (a named deviation:
/// bport prints no tip).
pub(crate) fn strip_tip(t: &str) -> String {
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
}

#[test]
fn cpp_template_program_report_equals_perf_report_children_and_self() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build_templates(dir.path()) else {
        return;
    };
    // Two events: the page faults of start-up come before the first clock tick, so a table per event in
    // first-sample order would print page-faults first; perf prints the file's attr order.
    let data = record(
        dir.path(),
        "report",
        &[
            "-e",
            "cpu-clock/freq=4000/",
            "-e",
            "page-faults/period=20/",
            "-g",
        ],
        &exe,
        "0.4",
    );
    let d = data.to_str().unwrap();
    // Each mode with the call graph under every row (perf's default) and without (`-g none`).
    for (perf_mode, ours_mode, graph) in [
        ("--children", None, true),
        ("--children", None, false),
        ("--no-children", Some("--no-children"), true),
        ("--no-children", Some("--no-children"), false),
    ] {
        let none: &[&str] = if graph { &[] } else { &["-g", "none"] };
        let mut theirs_args = vec!["report", "-i", d, "--stdio", perf_mode];
        theirs_args.extend(none);
        let theirs = perf_ok(dir.path(), &theirs_args);
        let mut args = vec!["report", "-i", d, "--stdio"];
        args.extend(ours_mode);
        args.extend(none);
        let ours = bport::run(dir.path(), &args);
        assert_eq!(ours.code, Some(0), "{}", ours.transcript());
        let cpu = ours.stdout.find("of event 'cpu-clock");
        let faults = ours.stdout.find("of event 'page-faults");
        assert!(
            cpu.is_some() && faults.is_some() && cpu < faults,
            "{}",
            ours.stdout
        );
        // The graph of a C++ template program: demangled template names in its frames.
        assert_eq!(
            ours.stdout.contains("---"),
            graph,
            "{perf_mode} graph {graph}: {}",
            ours.stdout
        );
        let what = format!("{perf_mode} graph {graph}");
        assert_same_lines(&strip_tip(&theirs), &strip_tip(&ours.stdout), &what);
    }
}

/// One alias of a function in [`ALIAS_GROUPS`]: its binding directive (`globl`, `weak`, or `local` for none)
/// and whether it has the function's size (else `.size 0`).
type Alias = (&'static str, &'static str, bool);

/// Functions with several symbols at one address, each group one of the combinations perf 6.1's
/// `choose_best_symbol` decides differently, with the name perf keeps when its load runs to the end:
/// global over weak and local; fewer leading underscores, then the longer name; a zero-size alias loses
/// unless it is the last at its address in either table (its end was fixed first: `.dynsym` puts
/// `zero_last_longer` after `sized_short`); and names compared demangled, as rustc's
/// ICF-folded v0 symbols (five `grow_one` instances, an inherent and a trait method: librustc_driver's) and a
/// C++ one show. Exported aliases are in `.dynsym` too, which perf 6.1 reads after `.symtab`.
const ALIAS_GROUPS: &[(&[Alias], &str)] = &[
    (
        &[
            ("weak", "weak_alias_with_the_longest_name", true),
            ("local", "local_alias_longer", true),
            ("globl", "bind_global", true),
        ],
        "bind_global",
    ),
    (
        &[
            ("globl", "__two_underscores_long", true),
            ("globl", "_one_underscore_longer", true),
            ("globl", "plain", true),
            ("globl", "plainer", true),
        ],
        "plainer",
    ),
    (
        &[
            ("globl", "zero_first_even_longer_name", false),
            ("globl", "sized_short", true),
            ("globl", "zero_last_longer", false),
        ],
        "zero_last_longer",
    ),
    (
        &[
            ("globl", "_RNvMs3_NtCslNYArtu3iFV_5alloc7raw_vecINtB5_6RawVecNtNtNtCs6mNkMfao1uC_12aho_corasick3nfa13noncontiguous5MatchE8grow_oneBS_", true),
            ("globl", "_RNvMs3_NtCslNYArtu3iFV_5alloc7raw_vecINtB5_6RawVecNtNtNtNtCs5wpeUTfK1SV_14regex_automata3nfa8thompson12literal_trie10TransitionE8grow_oneBU_", true),
            ("globl", "_RNvMs3_NtCslNYArtu3iFV_5alloc7raw_vecINtB5_6RawVecNtNtNtNtCs5wpeUTfK1SV_14regex_automata3nfa8thompson3nfa10TransitionE8grow_oneBU_", true),
            ("globl", "_RNvMs3_NtCslNYArtu3iFV_5alloc7raw_vecINtB5_6RawVecTNtNtNtCs5wpeUTfK1SV_14regex_automata4util10primitives7StateIDBN_EE8grow_oneBT_", true),
            ("globl", "_RNvMs3_NtCslNYArtu3iFV_5alloc7raw_vecINtB5_6RawVecNtNtCsjyvvofjlheH_10rustc_span13span_encoding4SpanE8grow_oneCseW9zhOSAZ32_20rustc_error_messages", true),
        ],
        "<alloc::raw_vec::RawVec<(regex_automata::util::primitives::StateID, regex_automata::util::primitives::StateID)>>::grow_one",
    ),
    (
        &[
            ("globl", "_RNvXNtNtNtCsdadwybgsbvk_12rustc_middle2ty7context13impl_internerNtB4_6TyCtxtNtNtCsdoLGDhjbLAL_13rustc_type_ir8interner8Interner13trait_is_auto", true),
            ("globl", "_RNvMsE_NtCsdadwybgsbvk_12rustc_middle2tyNtNtB5_7context6TyCtxt13trait_is_auto", true),
        ],
        "<rustc_middle::ty::context::TyCtxt as rustc_type_ir::interner::Interner>::trait_is_auto",
    ),
    (
        &[
            ("globl", "short_c", true),
            ("globl", "_ZN9namespace8functionEv", true),
        ],
        "namespace::function",
    ),
];

/// The assembly of a shared library holding [`ALIAS_GROUPS`], each a frame-pointer loop of `%rdi` turns.
fn alias_library_asm() -> String {
    let mut s = String::from("\t.text\n");
    for (g, (aliases, _)) in ALIAS_GROUPS.iter().enumerate() {
        s += "\t.p2align 4\n";
        for (bind, name, _) in *aliases {
            if *bind != "local" {
                s += &format!("\t.{bind} {name}\n");
            }
            s += &format!("\t.type {name},@function\n");
        }
        for (_, name, _) in *aliases {
            s += &format!("{name}:\n");
        }
        s += &format!(
            ".Lstart{g}:\n\tpush %rbp\n\tmov %rsp,%rbp\n\tmov %rdi,%rcx\n1:\tdec %rcx\n\tjnz 1b\n\tpop %rbp\n\tret\n.Lend{g}:\n"
        );
        for (_, name, sized) in *aliases {
            let size = if *sized {
                format!(".Lend{g}-.Lstart{g}")
            } else {
                "0".to_owned()
            };
            s += &format!("\t.size {name},{size}\n");
        }
    }
    s + "\t.section .note.GNU-stack,\"\",@progbits\n"
}

/// A program calling each group of the library in `lib_dir` (by its first exported alias) `argv[1]` turns,
/// eight rounds.
fn alias_main_c() -> String {
    let callees: Vec<&str> = ALIAS_GROUPS
        .iter()
        .map(|(aliases, _)| {
            aliases
                .iter()
                .find(|(bind, _, _)| *bind == "globl")
                .expect("an exported alias")
                .1
        })
        .collect();
    let mut s = String::from("#include <stdlib.h>\n");
    for c in &callees {
        s += &format!("void {c}(long);\n");
    }
    s += "int main(int argc, char **argv) {\n\tlong n = atol(argv[1]);\n\tfor (int r = 0; r < 8; r++) {\n";
    for c in &callees {
        s += &format!("\t\t{c}(n);\n");
    }
    s + "\t}\n\treturn 0;\n}\n"
}

/// Makes the last defined `.dynsym` entry of the ELF file at `path` name a section past the section table, as
/// librustc_driver's `rust_metadata_rustc_driver_…` does (rustc's BOLT step leaves index 48 in a file of 44
/// sections), and returns its name; the dynamic loader only asks whether a symbol is defined, so the program
/// still runs.
fn break_last_dynsym_section_index(path: &Path) -> String {
    use object::read::elf::{FileHeader, SectionHeader, Sym};
    let mut bytes = std::fs::read(path).unwrap();
    let (at, shndx, name) = {
        let header = object::elf::FileHeader64::<object::Endianness>::parse(&*bytes).unwrap();
        let endian = header.endian().unwrap();
        let sections = header.sections(endian, &*bytes).unwrap();
        let dynsym = sections
            .iter()
            .find(|s| s.sh_type(endian) == object::elf::SHT_DYNSYM)
            .expect(".dynsym");
        let symbols = sections
            .symbols(endian, &*bytes, object::elf::SHT_DYNSYM)
            .unwrap();
        let (index, sym) = symbols
            .iter()
            .enumerate()
            .rev()
            .find(|(_, s)| s.st_shndx(endian) != object::elf::SHN_UNDEF)
            .expect("a defined dynamic symbol");
        let name = sym.name(endian, symbols.strings()).unwrap();
        let shnum = sections.len() as u16;
        // Elf64_Sym: st_name (4), st_info, st_other, then st_shndx (2).
        let at = dynsym.sh_offset(endian) as usize + index * 24 + 6;
        (at, shnum + 4, String::from_utf8_lossy(name).into_owned())
    };
    bytes[at..at + 2].copy_from_slice(&shndx.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
    name
}

/// Symbol choice on ICF-folded functions (rustc's librustc_driver, BOLTed with `-icf=all`): which of
/// several symbols at one address perf 6.1 prints. A shared library built here holds each combination of
/// [`ALIAS_GROUPS`]; perf must print the name `choose_best_symbol` keeps (checked by name) and bport the same
/// lines. Then the same library with one `.dynsym` entry's section index broken, as in librustc_driver: perf's
/// load stops there, its tree keeps the dynamic copies read before it beside the chosen alias, and a sample is
/// named by whichever its walk meets first (bport replays the tree); bport printed the longest name.
#[test]
fn icf_folded_aliases_are_named_as_perf_6_1_names_them() {
    if !oracle::has_perf() || !oracle::require("gcc", "apt-get install gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let asm = dir.path().join("aliases.s");
    std::fs::write(&asm, alias_library_asm()).unwrap();
    let main_c = dir.path().join("main.c");
    std::fs::write(&main_c, alias_main_c()).unwrap();
    let mut outputs = Vec::new();
    for variant in ["complete", "stopped"] {
        let lib_dir = dir.path().join(variant);
        std::fs::create_dir(&lib_dir).unwrap();
        let lib = lib_dir.join("libaliases.so");
        let exe = lib_dir.join("main");
        let (lib_s, exe_s, lib_dir_s) = (
            lib.to_str().unwrap(),
            exe.to_str().unwrap(),
            lib_dir.to_str().unwrap(),
        );
        tool_ok(
            "gcc",
            &["-shared", "-o", lib_s, asm.to_str().unwrap()],
            &[],
            "",
        );
        let rpath = format!("-Wl,-rpath,{lib_dir_s}");
        tool_ok(
            "gcc",
            &[
                "-O1",
                "-fno-omit-frame-pointer",
                "-o",
                exe_s,
                main_c.to_str().unwrap(),
                "-L",
                lib_dir_s,
                "-laliases",
                &rpath,
            ],
            &[],
            "",
        );
        if variant == "stopped" {
            // The last one, so every other dynamic copy is read before the stop.
            let name = break_last_dynsym_section_index(&lib);
            eprintln!("broke the section index of {name}");
        }
        // Each variant its own HOME: both libraries carry one build-id, and perf would otherwise name the
        // second recording's samples from the first's copy in its build-id cache.
        let data = record(&lib_dir, variant, &["-g", "-F", "4000"], &exe, "20000000");
        let (perf, ours) = both_scripts(&lib_dir, &data);
        assert_same_lines(&perf, &ours, variant);
        outputs.push(perf);
    }
    // Every group was sampled, under the name `choose_best_symbol` keeps when the load completes.
    for (aliases, want) in ALIAS_GROUPS {
        assert!(
            outputs[0].contains(&format!(" {want}+0x")),
            "complete: no sample named {want:?} for {:?}:\n{}",
            aliases[0].1,
            outputs[0]
        );
    }
    // The stopped load names some group by a dynamic copy the walk meets first: with GNU ld 2.40's `.dynsym`
    // order here, `weak_alias_with_the_longest_name`, `sized_short` and the `literal_trie` instance of
    // `grow_one`. bport printed the complete load's names for every group.
    let renamed: Vec<&str> = ALIAS_GROUPS
        .iter()
        .map(|(_, want)| *want)
        .filter(|want| !outputs[1].contains(&format!(" {want}+0x")))
        .collect();
    assert!(
        !renamed.is_empty(),
        "stopped: every group kept its name, so the stop was not exercised:\n{}",
        outputs[1]
    );
}

/// The C++ functions of rustc's librustc_driver (LLVM's glue, libstdc++'s internals), demangled as `c++filt -p`
/// does: among them function types as template arguments, which libiberty writes with a space before the
/// parameter list whatever the return type (`llvm::function_ref<llvm::PrevailingType (unsigned long)>`, seen
/// in a system-wide `perf script`), cpp_demangle only after a builtin one: 4 of these 4,040 names differed.
#[test]
fn cpp_demangling_equals_cxxfilt_on_the_cpp_functions_of_librustc_driver() {
    if !oracle::require("rustc", "install a Rust toolchain") {
        return;
    }
    skip_unless!(oracle::require("c++filt", "apt-get install binutils"));
    let sysroot = tool_ok("rustc", &["--print", "sysroot"], &[], "");
    let lib = std::fs::read_dir(Path::new(sysroot.trim()).join("lib"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("librustc_driver-") && n.ends_with(".so"))
        })
        .expect("the toolchain has librustc_driver");
    let nm = tool_ok("nm", &["--defined-only", lib.to_str().unwrap()], &[], "");
    let names: Vec<String> = nm
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (kind, name) = (f.nth(1)?, f.next()?);
            // Functions only: data never names a frame.
            ("tTwW".contains(kind) && name.starts_with("_Z") && !name.starts_with("_ZT"))
                .then(|| name.to_owned())
        })
        .collect();
    assert!(names.len() > 1000, "only {} names", names.len());
    let filt = tool_ok("c++filt", &["-p"], &[], &(names.join("\n") + "\n"));
    let differ: Vec<String> = names
        .iter()
        .zip(filt.lines())
        .filter_map(|(raw, want)| {
            let ours = ::bport::perf::symbols::demangle::demangle(raw);
            (abbreviate(&ours) != abbreviate(want))
                .then(|| format!("{raw}\n  c++filt -p: {want}\n  bport:      {ours}"))
        })
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {} names differ from c++filt -p:\n{}",
        differ.len(),
        names.len(),
        differ.join("\n")
    );
}

/// A label inside a function (a global NOTYPE symbol of size 0, as V8's `construct_stub_create_deopt_addr`
/// inside `Builtins_JSConstructStubGeneric`): perf stretches it to the next symbol's start, so the code after
/// it lies in two symbols, and perf names the first one its tree lookup meets on the way down — the function
/// for some labels, the label for others in the same binary. bport named the nearest start (the label)
/// everywhere; on this file perf names both kinds, and every line must be perf's.
#[test]
fn labels_inside_functions_are_named_as_perf_6_1_names_them() {
    if !oracle::has_perf() || !oracle::require("gcc", "apt-get install gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(dir.path(), "inner_label", "inner_label", &[]);
    let data = record(
        dir.path(),
        "inner_label",
        &["-g", "-F", "2000"],
        &exe,
        "100000000",
    );
    let (perf, ours) = both_scripts(dir.path(), &data);
    // The comparison below only proves something if perf named code past a label.
    let named = |t: &str, label: bool| {
        t.lines().any(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|s| s.starts_with("spin_") && s.contains("_label+") == label)
        })
    };
    assert!(
        named(&perf, true) || named(&perf, false),
        "perf named no frame in spin_N:\n{perf}"
    );
    assert_same_lines(
        &perf,
        &ours,
        "perf script of a binary with labels inside functions",
    );
    let flat = perf_ok(
        dir.path(),
        &[
            "script",
            "-F",
            "ip,sym,symoff",
            "-i",
            data.to_str().unwrap(),
        ],
    );
    let out = bport::run(
        dir.path(),
        &[
            "script",
            "-F",
            "ip,sym,symoff",
            "-i",
            data.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_same_lines(
        &flat,
        &out.stdout,
        "perf script -F ip,sym,symoff, labels inside functions",
    );
}

/// `addr2line -f -i -a -e exe ADDRS…`: the function names GNU addr2line reports at each address, innermost first.
fn addr2line_names(exe: &Path, svmas: &[u64]) -> Vec<Vec<String>> {
    let mut args = vec![
        "-f".to_owned(),
        "-i".to_owned(),
        "-a".to_owned(),
        "-e".to_owned(),
        exe.to_str().unwrap().to_owned(),
    ];
    args.extend(svmas.iter().map(|a| format!("{a:#x}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tool_ok("addr2line", &args, &[], "");
    let mut answers: Vec<Vec<String>> = Vec::new();
    let mut lines = out.lines();
    while let Some(line) = lines.next() {
        if line.starts_with("0x") {
            answers.push(Vec::new());
        } else {
            answers
                .last_mut()
                .expect("address line first")
                .push(line.to_owned());
            lines.next(); // file:line
        }
    }
    assert_eq!(answers.len(), svmas.len(), "addr2line answered:\n{out}");
    answers
}

/// perf 6.1 asks addr2line about `map_ip + text_offset` (machine.c `append_inlines` → `map__rip_2objdump`), where
/// `text_offset` is `.text`'s `sh_addr - sh_offset`: right for code in `.text`'s segment, but for code in a segment
/// whose addresses sit at another distance from their file offsets (BOLT's `.bolt.org.text` in librustc_driver and
/// libLLVM, one page off) the query lands on other code, and perf prints that code's function as an `(inlined)`
/// frame in place of the sampled one (`<DiagInner>::arg::<&str, bool>+0x8f (inlined)` for an address of
/// `<Lexer>::bump_minimal`). bport asks about the sampled address itself and prints what addr2line reports there: a
/// named deviation. Every sample in `hot` (a loop with `mix` inlined, in `.hotcode`'s own segment) is checked: perf's
/// frame is exactly addr2line's answer at the moved address (`decoy`), bport's exactly its answer at the sampled one
/// (`mix`, `hot`), and every other line is perf's.
#[test]
fn inline_frames_in_a_segment_offset_unlike_text_name_the_sampled_code() {
    use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};
    if !oracle::has_perf()
        || !oracle::require("gcc", "apt-get install gcc")
        || !oracle::require("addr2line", "apt-get install binutils")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(
        dir.path(),
        "two_segments",
        "two_segments",
        &["-O2", "-g", "-Wl,--section-start=.hotcode=0x5000"],
    );
    // The layout the check needs, read from the file: `hot`'s segment off `.text`'s distance, and `hot` moved by
    // the difference inside `decoy`.
    let bytes = std::fs::read(&exe).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let text = file.section_by_name(".text").unwrap();
    let text_delta = text.address() - text.file_range().unwrap().0;
    let symbol = |name: &str| {
        let s = file.symbols().find(|s| s.name() == Ok(name)).unwrap();
        (s.address(), s.address() + s.size())
    };
    let (hot, hot_end) = symbol("hot");
    let (decoy, decoy_end) = symbol("decoy");
    let segment = file
        .segments()
        .find(|s| (s.address()..s.address() + s.size()).contains(&hot))
        .unwrap();
    let hot_delta = segment.address() - segment.file_range().0;
    let moved = |svma: u64| svma - hot_delta + text_delta;
    assert!(
        hot_delta != text_delta && decoy <= moved(hot) && moved(hot_end) <= decoy_end,
        "layout: .text at distance {text_delta:#x}, hot ({hot:#x}..{hot_end:#x}) at {hot_delta:#x}, \
         decoy {decoy:#x}..{decoy_end:#x}"
    );
    let data = record(
        dir.path(),
        "two_segments",
        &["-F", "2000", "--call-graph", "dwarf"],
        &exe,
        "30000000",
    );
    let (perf, ours) = both_scripts(dir.path(), &data);
    // Frames in `hot`: printed addresses are file offsets, `hot`'s from `hot - hot_delta`.
    let exe_name = format!("({})", exe.display());
    let in_hot = |line: &str| -> Option<(usize, u64)> {
        let trimmed = line.trim_start();
        let (addr, rest) = trimmed.split_once(' ')?;
        let offset = u64::from_str_radix(addr, 16).ok()?;
        let svma = offset + hot_delta;
        ((hot..hot_end).contains(&svma)
            && (rest.ends_with(" (inlined)") || rest.ends_with(&exe_name)))
        .then_some((line.len() - trimmed.len() + addr.len(), svma))
    };
    let lines: Vec<&str> = perf.lines().collect();
    let sampled: Vec<u64> = lines
        .iter()
        .filter_map(|l| in_hot(l))
        .map(|(_, s)| s)
        .collect();
    assert!(!sampled.is_empty(), "no frame in hot:\n{perf}");
    let mut svmas = sampled.clone();
    svmas.sort_unstable();
    svmas.dedup();
    let queries: Vec<u64> = svmas
        .iter()
        .map(|&s| moved(s))
        .chain(svmas.iter().copied())
        .collect();
    let answers = addr2line_names(&exe, &queries);
    let (at_moved, at_sampled) = answers.split_at(svmas.len());
    let mut expected = String::new();
    let mut i = 0;
    while i < lines.len() {
        let Some((prefix, svma)) = in_hot(lines[i]) else {
            expected.push_str(lines[i]);
            expected.push('\n');
            i += 1;
            continue;
        };
        // perf's lines for this frame: one per function addr2line reports at the moved address.
        let k = svmas.binary_search(&svma).unwrap();
        let address = &lines[i][..prefix];
        let offset = svma - hot;
        let frame = |names: &[String]| -> Vec<String> {
            names
                .iter()
                .map(|n| {
                    if n == "hot" {
                        format!("{address} hot+{offset:#x} {exe_name}")
                    } else {
                        format!("{address} {n}+{offset:#x} (inlined)")
                    }
                })
                .collect()
        };
        let perf_frame = frame(&at_moved[k]);
        assert_eq!(
            lines[i..(i + perf_frame.len()).min(lines.len())],
            perf_frame,
            "perf's frame at {svma:#x} is not addr2line's answer at {:#x}",
            moved(svma)
        );
        assert_ne!(
            at_moved[k], at_sampled[k],
            "the moved address names the sampled code"
        );
        for line in frame(&at_sampled[k]) {
            expected.push_str(&line);
            expected.push('\n');
        }
        i += perf_frame.len();
    }
    assert_same_lines(
        &expected,
        &ours,
        "perf script with hot's frames named by addr2line at the sampled address",
    );
}
