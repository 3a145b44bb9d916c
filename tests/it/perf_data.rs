//! bport's perf.data reader against Linux perf: files perf records (fp, dwarf, -a, pipe mode) read completely,
//! with every record accounted for and every sample equal to `perf script`'s view of it.

use crate::support::oracle::{assert_success, require};
use bport::perf::abi::*;
use bport::perf::data::{PerfFile, PerfFileWriter, Record, WriteOutcome, WriterOptions};
use bport::verify::workloads::Build;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Command, Stdio};

/// One sample as `perf script -F comm,pid,tid,time,ip --ns -G` prints it.
#[derive(Debug, PartialEq, Eq)]
struct Line {
    comm: String,
    // perf prints them signed (%d): -1 for "no task".
    pid: i32,
    tid: i32,
    time_ns: u64,
    ip: u64,
}

fn perf(dir: &Path) -> Command {
    crate::support::oracle::perf(dir)
}

/// `perf record ARGS -- chain-fp 150` in `dir`; returns the data file path.
fn record(dir: &Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let workload = Build::FramePointer.write_to(dir).unwrap();
    let out = dir.join(name);
    let o = perf(dir)
        .arg("record")
        .args(["-q", "-o"])
        .arg(&out)
        .args(args)
        .arg("--")
        .arg(&workload)
        .arg("150")
        .output()
        .unwrap();
    assert_success(&o, &format!("perf record {args:?}"));
    out
}

fn parse_script(text: &str) -> Vec<Line> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let n = t.len();
            assert!(n >= 4, "unexpected perf script line {l:?}");
            let (pid, tid) = t[n - 3].split_once('/').expect("pid/tid");
            let time = t[n - 2].trim_end_matches(':');
            let (sec, ns) = time.split_once('.').expect("sec.ns");
            assert_eq!(ns.len(), 9, "--ns gives nanoseconds: {l:?}");
            Line {
                comm: t[..n - 3].join(" "),
                pid: pid.parse().unwrap(),
                tid: tid.parse().unwrap(),
                time_ns: sec.parse::<u64>().unwrap() * 1_000_000_000 + ns.parse::<u64>().unwrap(),
                ip: u64::from_str_radix(t[n - 1], 16).unwrap(),
            }
        })
        .collect()
}

fn perf_script(dir: &Path, file: &Path, stdin: Option<&Path>) -> Vec<Line> {
    let mut c = perf(dir);
    c.args(["script", "-F", "comm,pid,tid,time,ip", "--ns", "-G", "-i"]);
    match stdin {
        Some(p) => {
            c.arg("-")
                .stdin(Stdio::from(std::fs::File::open(p).unwrap()));
        }
        None => {
            c.arg(file);
        }
    }
    let o = c.output().unwrap();
    assert_success(&o, "perf script");
    parse_script(&String::from_utf8(o.stdout).unwrap())
}

/// `perf report -D`'s "Aggregated stats": record counts by type name.
fn perf_counts(dir: &Path, file: &Path, pipe: bool) -> BTreeMap<String, u64> {
    let mut c = perf(dir);
    c.args(["report", "-D", "-i"]);
    if pipe {
        c.arg("-")
            .stdin(Stdio::from(std::fs::File::open(file).unwrap()));
    } else {
        c.arg(file);
    }
    let o = c.output().unwrap();
    assert_success(&o, "perf report -D");
    let text = String::from_utf8_lossy(&o.stdout);
    let stats = text
        .split("Aggregated stats:")
        .nth(1)
        .expect("perf report -D prints aggregated stats");
    let mut counts = BTreeMap::new();
    for l in stats.lines().skip(1) {
        let Some((name, rest)) = l.split_once(" events:") else {
            break;
        };
        let name = name.trim();
        if name == "TOTAL" {
            continue;
        }
        let n: u64 = rest.split_whitespace().next().unwrap().parse().unwrap();
        counts.insert(name.to_string(), n);
    }
    counts
}

/// bport's view: counts by type name and each sample with the comm perf would show for it.
fn bport_view(file: &PerfFile) -> (BTreeMap<String, u64>, Vec<Line>) {
    let mut counts = BTreeMap::new();
    let mut comms: HashMap<u32, String> = HashMap::new();
    let mut lines = Vec::new();
    let mut records = file.records();
    for r in records.by_ref() {
        let r = r.unwrap();
        // perf's stats drop the HEADER_ prefix of the pipe-mode records (ATTR, FEATURE, BUILD_ID).
        let name = table::record_type_name(r.meta().ty).unwrap_or("UNKNOWN");
        let name = name.strip_prefix("HEADER_").unwrap_or(name).to_string();
        *counts.entry(name).or_default() += 1;
        match r {
            Record::Comm(c) => {
                comms.insert(c.tid, String::from_utf8_lossy(c.comm).into_owned());
            }
            // A new thread starts with its parent's name (perf's thread__fork).
            Record::Fork(f) => {
                if let Some(parent) = comms.get(&f.ptid).cloned() {
                    comms.entry(f.tid).or_insert(parent);
                }
            }
            Record::Sample(s) => {
                let tid = s.tid.unwrap();
                let comm = comms.get(&tid).cloned().unwrap_or_else(|| {
                    // perf names the idle task "swapper" and threads it never saw ":TID".
                    if tid == 0 {
                        "swapper".into()
                    } else {
                        format!(":{}", tid as i32)
                    }
                });
                lines.push(Line {
                    comm,
                    pid: s.pid.unwrap() as i32,
                    tid: tid as i32,
                    time_ns: s.time.unwrap(),
                    ip: s.ip.unwrap(),
                });
            }
            _ => {}
        }
    }
    assert_eq!(
        records.warnings(),
        &[],
        "no warnings on a file Linux perf wrote"
    );
    (counts, lines)
}

fn check_against_perf(dir: &Path, path: &Path, pipe: bool, what: &str) -> usize {
    let file = PerfFile::open(path).unwrap();
    assert_eq!(file.is_pipe(), pipe);
    assert_eq!(file.warnings(), &[], "{what}");
    let (counts, lines) = bport_view(&file);
    assert_eq!(
        counts,
        perf_counts(dir, path, pipe),
        "{what}: record counts"
    );
    let want = perf_script(dir, path, pipe.then_some(path));
    assert_eq!(lines.len(), want.len(), "{what}: sample count");
    for (i, (got, want)) in lines.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "{what}: sample {i}");
    }
    lines.len()
}

#[test]
fn reads_perf_fp_recording() {
    skip_unless!(require("perf", "apt-get install linux-perf"));
    let dir = tempfile::tempdir().unwrap();
    let path = record(dir.path(), "fp.data", &["-g", "-F", "999"]);
    let n = check_against_perf(dir.path(), &path, false, "fp");
    // Guards the comparison above against being vacuous (a loaded machine gives fewer samples, never none).
    assert!(n > 0, "no samples recorded");
    let file = PerfFile::open(&path).unwrap();
    let attr = &file.attrs()[0].attr;
    assert_ne!(attr.sample_type & PERF_SAMPLE_CALLCHAIN, 0);
    let f = file.features();
    assert_eq!(
        f.osrelease.as_deref(),
        Some(
            std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap()
                .trim()
        )
    );
    assert!(
        f.version.as_deref().unwrap().starts_with("6."),
        "{:?}",
        f.version
    );
    assert_eq!(f.cmdline.as_ref().unwrap()[1], "record");
    assert!(
        f.build_ids.iter().any(|b| b.filename.ends_with("chain-fp")),
        "{:?}",
        f.build_ids
    );
}

#[test]
fn reads_perf_dwarf_recording() {
    skip_unless!(require("perf", "apt-get install linux-perf"));
    let dir = tempfile::tempdir().unwrap();
    let path = record(
        dir.path(),
        "dwarf.data",
        &["--call-graph", "dwarf,4096", "-F", "999"],
    );
    check_against_perf(dir.path(), &path, false, "dwarf");
    let file = PerfFile::open(&path).unwrap();
    let attr = &file.attrs()[0].attr;
    assert_eq!(attr.sample_stack_user, 4096);
    let mut seen = 0;
    for r in file.records() {
        if let Record::Sample(s) = r.unwrap() {
            let regs = s.regs_user.unwrap();
            let stack = s.stack_user.unwrap();
            if regs.abi == PERF_SAMPLE_REGS_ABI_64 {
                // User-mode samples carry sp and ip; the stack snapshot is the requested size.
                assert!(regs.get(PERF_REG_X86_SP).is_some() && regs.get(PERF_REG_X86_IP).is_some());
                assert_eq!(stack.data.len(), 4096);
                assert!(stack.valid().len() as u64 == stack.dyn_size.min(4096));
                seen += 1;
            }
        }
    }
    assert!(seen > 0, "no user-mode dwarf samples");
}

#[test]
fn reads_perf_system_wide_recording() {
    skip_unless!(require("perf", "apt-get install linux-perf"));
    let dir = tempfile::tempdir().unwrap();
    let path = record(dir.path(), "all.data", &["-a", "-g", "-F", "499"]);
    check_against_perf(dir.path(), &path, false, "-a");
    let file = PerfFile::open(&path).unwrap();
    // One id per CPU.
    let cpus = std::thread::available_parallelism().unwrap().get();
    assert_eq!(file.attrs()[0].ids.len(), cpus);
}

#[test]
fn reads_perf_pipe_mode_stream() {
    skip_unless!(require("perf", "apt-get install linux-perf"));
    let dir = tempfile::tempdir().unwrap();
    let workload = Build::FramePointer.write_to(dir.path()).unwrap();
    let path = dir.path().join("pipe.data");
    let o = perf(dir.path())
        .args(["record", "-q", "-g", "-F", "999", "-o", "-", "--"])
        .arg(&workload)
        .arg("150")
        .stdout(Stdio::from(std::fs::File::create(&path).unwrap()))
        .output()
        .unwrap();
    assert_success(&o, "perf record -o -");
    check_against_perf(dir.path(), &path, true, "pipe");
    let file = PerfFile::from_reader(std::fs::File::open(&path).unwrap()).unwrap();
    assert!(file.is_pipe());
    assert_eq!(file.header_size(), 16);
    assert_eq!(file.attrs().len(), 1);
    assert!(file.features().hostname.is_some());
    assert_eq!(
        file.features().cmdline.as_ref().unwrap()[1..9],
        ["record", "-q", "-g", "-F", "999", "-o", "-", "--"]
    );
}

#[test]
fn dump_lists_every_record_with_counts_equal_to_perf() {
    skip_unless!(require("perf", "apt-get install linux-perf"));
    let dir = tempfile::tempdir().unwrap();
    let path = record(dir.path(), "fp.data", &["-g"]);
    let out = crate::support::bport::run(dir.path(), &["dump", "-i", "fp.data"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let text = out.stdout;
    let records: Vec<&str> = text.lines().filter(|l| l.starts_with("0x")).collect();
    let counts = perf_counts(dir.path(), &path, false);
    assert_eq!(records.len() as u64, counts.values().sum::<u64>());
    let dumped: BTreeMap<String, u64> = text
        .lines()
        .skip_while(|l| *l != "# record counts")
        .skip(1)
        .map(|l| {
            let t: Vec<&str> = l.trim_start_matches('#').split_whitespace().collect();
            (t[0].to_string(), t[1].parse().unwrap())
        })
        .collect();
    assert_eq!(dumped, counts);
    assert!(text.contains("# feature 12 EVENT_DESC:"), "{text}");
}

/// Re-writes `src` through bport's writer, capping attrs to `opts.abi` the way `record --kernel` does.
fn rewrite(src: &Path, dst: &Path, opts: WriterOptions) -> WriteOutcome {
    let abi = opts.abi.clone();
    let file = PerfFile::open(src).unwrap();
    let mut w = PerfFileWriter::create(dst, opts).unwrap();
    for a in file.attrs() {
        let mut attr = a.attr.clone();
        attr.cap_to(&abi);
        w.add_attr(&attr, &a.ids).unwrap();
    }
    for r in file.records_in_file_order() {
        w.write_record(&r.unwrap()).unwrap();
    }
    let (_, outcome) = w.finish(file.features()).unwrap();
    outcome
}

fn perf_script_full(dir: &Path, file: &Path) -> String {
    let o = perf(dir).args(["script", "-i"]).arg(file).output().unwrap();
    assert_success(&o, "perf script");
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "",
        "perf script warns about {file:?}"
    );
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn perf_reads_what_bport_writes_and_sees_the_same_callchains() {
    skip_unless!(require("perf", "apt-get install linux-perf"));
    let dir = tempfile::tempdir().unwrap();
    for (name, args) in [
        ("fp.data", &["-g", "-F", "999"][..]),
        (
            "dwarf.data",
            &["--call-graph", "dwarf,4096", "-F", "999"][..],
        ),
    ] {
        let src = record(dir.path(), name, args);
        let want = perf_script_full(dir.path(), &src);
        assert!(want.contains("chain_c"), "{want}");

        let native = dir.path().join(format!("bport-{name}"));
        let outcome = rewrite(&src, &native, WriterOptions::default());
        assert!(outcome.dropped.is_empty());
        assert_eq!(
            perf_script_full(dir.path(), &native),
            want,
            "{name} rewritten by bport"
        );

        // Capped to 4.1's ABI: smaller attrs, no records or features newer than 4.1's perf; perf still reads it
        // and shows the same samples and callchains.
        let v41: KernelVersion = "4.1".parse().unwrap();
        let old = dir.path().join(format!("bport-4.1-{name}"));
        let outcome = rewrite(&src, &old, WriterOptions::for_kernel(&v41));
        let abi = KernelAbi::for_version(&v41);
        assert!(outcome.dropped.keys().all(|&t| !abi.supports_record(t)));
        assert!(outcome.dropped.contains_key(&PERF_RECORD_FINISHED_INIT));
        assert!(outcome.features.iter().all(|&f| abi.supports_feature(f)));
        let file = PerfFile::open(&old).unwrap();
        assert!(file
            .attrs()
            .iter()
            .all(|a| a.attr.size <= PERF_ATTR_SIZE_VER5));
        for r in file.records() {
            let ty = r.unwrap().meta().ty;
            assert!(abi.supports_record(ty), "type {ty} in a 4.1 file");
        }
        assert_eq!(
            perf_script_full(dir.path(), &old),
            want,
            "{name} capped to 4.1"
        );
    }
}

#[test]
fn perf_reads_bport_pipe_mode_output() {
    skip_unless!(require("perf", "apt-get install linux-perf"));
    let dir = tempfile::tempdir().unwrap();
    let src = record(dir.path(), "fp.data", &["-g", "-F", "999"]);
    let file = PerfFile::open(&src).unwrap();
    let mut w = PerfFileWriter::new_pipe(Vec::new(), WriterOptions::default()).unwrap();
    for a in file.attrs() {
        w.add_attr(&a.attr, &a.ids).unwrap();
    }
    for r in file.records_in_file_order() {
        w.write_record(&r.unwrap()).unwrap();
    }
    let (bytes, _) = w.finish_pipe(file.features()).unwrap();
    let pipe = dir.path().join("bport-pipe.data");
    std::fs::write(&pipe, bytes).unwrap();
    let o = perf(dir.path())
        .args(["script", "-i", "-"])
        .stdin(Stdio::from(std::fs::File::open(&pipe).unwrap()))
        .output()
        .unwrap();
    assert_success(&o, "perf script on bport's pipe output");
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        perf_script_full(dir.path(), &src)
    );
}

#[test]
fn host_description_matches_what_perf_writes() {
    skip_unless!(require("perf", "apt-get install linux-perf"));
    let dir = tempfile::tempdir().unwrap();
    let src = record(dir.path(), "fp.data", &["-F", "99"]);
    let perf_wrote = PerfFile::open(&src).unwrap().features().clone();
    let ours = bport::perf::data::Features::describe_host(vec!["bport".into()]);
    assert_eq!(ours.hostname, perf_wrote.hostname);
    assert_eq!(ours.osrelease, perf_wrote.osrelease);
    assert_eq!(ours.arch, perf_wrote.arch);
    assert_eq!(ours.nrcpus, perf_wrote.nrcpus);
    assert_eq!(ours.cpudesc, perf_wrote.cpudesc);
    assert_eq!(ours.cpuid, perf_wrote.cpuid);
    assert_eq!(ours.total_mem, perf_wrote.total_mem);
}

#[test]
fn reads_perf_zstd_compressed_recording() {
    skip_unless!(require("perf", "apt-get install linux-perf"));
    let dir = tempfile::tempdir().unwrap();
    let path = record(dir.path(), "z.data", &["-z", "-g", "-F", "999"]);
    let n = check_against_perf(dir.path(), &path, false, "-z");
    assert!(n > 0, "no samples recorded");
    let file = PerfFile::open(&path).unwrap();
    let compressed = file
        .records_in_file_order()
        .filter(|r| r.as_ref().unwrap().meta().ty == PERF_RECORD_COMPRESSED)
        .count();
    assert!(
        compressed >= 1,
        "perf record -z wrote no COMPRESSED records"
    );
}

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/perf");

#[test]
fn fixtures_read_as_perf_saw_them() {
    let dir = Path::new(FIXTURES);
    for name in ["fp", "dwarf", "zstd", "pipe"] {
        let file = PerfFile::open(dir.join(format!("{name}.data"))).unwrap();
        assert_eq!(file.is_pipe(), name == "pipe");
        assert_eq!(file.warnings(), &[], "{name}");
        let (counts, lines) = bport_view(&file);
        let want_counts: BTreeMap<String, u64> =
            std::fs::read_to_string(dir.join(format!("{name}.counts")))
                .unwrap()
                .lines()
                .map(|l| {
                    let (t, n) = l.split_once(' ').unwrap();
                    (t.to_string(), n.parse().unwrap())
                })
                .collect();
        assert_eq!(counts, want_counts, "{name}: record counts");
        let want =
            parse_script(&std::fs::read_to_string(dir.join(format!("{name}.script"))).unwrap());
        assert_eq!(lines, want, "{name}: samples");
    }
}

#[test]
fn fixture_readme_documents_every_fixture() {
    let readme = std::fs::read_to_string(Path::new(FIXTURES).join("README.md")).unwrap();
    let mut files: Vec<String> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.ends_with(".data"))
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "dwarf.data",
            "fp.data",
            "pipe.data",
            "sleep.compressed2.data",
            "sleep.compressed2.pipe.data",
            "zstd.data"
        ]
    );
    for f in &files {
        if f.starts_with("sleep.") {
            // From mstange/linux-perf-data: documented in their own section, no perf goldens (perf 6.1 cannot
            // read them).
            assert!(
                readme.contains(&format!("`{f}`")),
                "README.md does not document {f}"
            );
            continue;
        }
        assert!(
            readme.contains(&format!("| `{f}` |")),
            "README.md does not document {f}"
        );
        let stem = f.trim_end_matches(".data");
        for golden in ["script", "counts"] {
            assert!(
                Path::new(FIXTURES)
                    .join(format!("{stem}.{golden}"))
                    .exists(),
                "{stem}.{golden} missing"
            );
        }
    }
}

/// `bport dump` of a fixture, compared with its golden file; `BPORT_UPDATE_GOLDEN=1` rewrites the golden.
#[test]
fn dump_of_fixture_matches_golden() {
    let dir = Path::new(FIXTURES);
    let out = crate::support::bport::run(dir, &["dump", "-i", "fp.data"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let golden = dir.join("fp.dump");
    if std::env::var_os("BPORT_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, out.transcript()).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap();
    if out.transcript() != want {
        let diff = similar::TextDiff::from_lines(&want, &out.transcript())
            .unified_diff()
            .header("golden", "bport dump")
            .to_string();
        panic!("bport dump differs from {golden:?} (BPORT_UPDATE_GOLDEN=1 to accept):\n{diff}");
    }
}

#[test]
fn dump_reads_a_pipe_stream_from_stdin() {
    let dir = Path::new(FIXTURES);
    let out = crate::support::bport::bport(dir)
        .args(["dump", "-i", "-", "--header-only"])
        .stdin(Stdio::from(
            std::fs::File::open(dir.join("pipe.data")).unwrap(),
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let first = text.lines().next().unwrap();
    assert_eq!(
        first,
        "# pipe mode, Little endian, header size 16, data 0x10..0x1418"
    );
    assert!(
        text.contains(
            "# feature 11 CMDLINE: Some([\"/usr/bin/perf\", \"record\", \"-q\", \"-o\", \"-\""
        ),
        "{text}"
    );
    assert!(
        !text.lines().any(|l| l.starts_with("0x")),
        "--header-only prints no records"
    );
}

#[test]
fn dump_of_a_damaged_file_names_the_offset_and_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(Path::new(FIXTURES).join("fp.data")).unwrap();
    // Cut in the middle of the data section: records before the cut are printed, then the error.
    let file = PerfFile::open(Path::new(FIXTURES).join("fp.data")).unwrap();
    let cut = file.data_range().start + 100;
    std::fs::write(tmp.path().join("cut.data"), &bytes[..cut]).unwrap();
    let out = crate::support::bport::run(tmp.path(), &["dump", "-i", "cut.data"]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("0x108 PERF_RECORD_ID_INDEX")),
        "{}",
        out.stdout
    );
    // Plain sentences: where the file ends, how much is missing, where the reading stopped.
    let len = cut;
    let stated_end = file.data_range().end;
    assert!(
        out.stderr.contains(&format!(
            "warning: the file is truncated at byte {len}: the header says its records end at byte {stated_end}"
        )) && out.stderr.contains(&format!("error: truncated at byte {len}: the record at byte ")),
        "{}",
        out.stderr
    );
}

/// Re-writes `src` in big-endian byte order with the records bport parses field by field (raw user records such as
/// ID_INDEX or THREAD_MAP are left out: their bodies would need per-type swapping).
fn rewrite_big_endian(src: &Path, dst: &Path) {
    let file = PerfFile::open(src).unwrap();
    let opts = WriterOptions {
        endian: bport::perf::data::Endianness::Big,
        ..Default::default()
    };
    let mut w = PerfFileWriter::create(dst, opts).unwrap();
    for a in file.attrs() {
        w.add_attr(&a.attr, &a.ids).unwrap();
    }
    for r in file.records_in_file_order() {
        let r = r.unwrap();
        if !matches!(
            r,
            Record::User(_) | Record::OtherKernel(_) | Record::Unknown(_) | Record::BpfEvent(_)
        ) {
            w.write_record(&r).unwrap();
        }
    }
    let mut features = file.features().clone();
    features.other.clear();
    w.finish(&features).unwrap();
}

#[test]
fn big_endian_copies_of_fixtures_read_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["fp", "dwarf"] {
        let src = Path::new(FIXTURES).join(format!("{name}.data"));
        let be = tmp.path().join(format!("{name}-be.data"));
        rewrite_big_endian(&src, &be);
        assert_eq!(&std::fs::read(&be).unwrap()[..8], b"2ELIFREP");
        let le_file = PerfFile::open(&src).unwrap();
        let be_file = PerfFile::open(&be).unwrap();
        assert_eq!(be_file.endian(), bport::perf::data::Endianness::Big);
        assert_eq!(be_file.attrs(), le_file.attrs());
        let (_, le_lines) = bport_view(&le_file);
        let (_, be_lines) = bport_view(&be_file);
        assert_eq!(be_lines, le_lines, "{name}");
        // Callchains and user stacks survive the swap too.
        let samples = |f: &PerfFile| -> Vec<(Vec<u64>, Vec<u8>)> {
            f.records()
                .filter_map(|r| match r.unwrap() {
                    Record::Sample(s) => Some((
                        s.callchain.map(|c| c.to_vec()).unwrap_or_default(),
                        s.stack_user.map(|st| st.data.to_vec()).unwrap_or_default(),
                    )),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(samples(&be_file), samples(&le_file), "{name}");
    }
}

#[test]
fn perf_reads_bport_big_endian_files() {
    skip_unless!(require("perf", "apt-get install linux-perf"));
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(FIXTURES).join("fp.data");
    let be = tmp.path().join("fp-be.data");
    rewrite_big_endian(&src, &be);
    // perf swaps a foreign-endian file on read (session.c perf_event__*_swap, header.c bitfield reversal).
    let got = perf_script(tmp.path(), &be, None);
    let want =
        parse_script(&std::fs::read_to_string(Path::new(FIXTURES).join("fp.script")).unwrap());
    assert_eq!(got, want);
}

// ---- damaged files ----

/// Whether an error or warning text is a plain sentence: no number of a terabyte or more (a garbage length
/// printed as is), no 16-digit hex offset, no Rust escapes of binary bytes.
fn assert_plain(msg: &str, what: &str) {
    let long_number = msg
        .split(|c: char| !c.is_ascii_digit())
        .any(|run| run.len() >= 13);
    let long_hex = msg
        .split(|c: char| !c.is_ascii_hexdigit() && c != 'x')
        .any(|run| run.starts_with("0x") && run.len() > 2 + 12);
    assert!(
        !long_number && !long_hex && !msg.contains("\\u{") && !msg.contains("\\x"),
        "{what}: not a plain sentence: {msg}"
    );
}

/// A deterministic stream of numbers (xorshift64*), so that a failing case can be replayed.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// Reads `bytes` completely as `bport script` does (records, unwinding, symbols from an empty file system) and
/// returns the error text, if any; panics only if bport does.
fn script_damaged(bytes: Vec<u8>) -> Option<String> {
    let file = match PerfFile::from_bytes(bytes) {
        Ok(f) => f,
        Err(e) => return Some(e.to_string()),
    };
    for w in file.warnings() {
        assert_plain(&w.to_string(), "warning");
    }
    let options = bport::perf::script::Options::default();
    let mut out = Vec::new();
    let lookup = bport::perf::symbols::MemLookup::new();
    match bport::perf::script::write_script_with(&file, &options, lookup, &mut out) {
        Ok(outcome) => {
            for w in &outcome.warnings {
                assert_plain(w, "warning");
            }
            None
        }
        Err(e) => Some(e.to_string()),
    }
}

/// Real perf.data files (perf 6.1's fp, DWARF, -z and pipe-mode recordings, and two COMPRESSED2 files of a newer
/// perf) cut at every byte of their headers and at every 11th byte after, and with bytes flipped at random places:
/// every one gives records, warnings or an error in plain sentences — never a panic, and never a raw garbage
/// number like "attr ids at offset 0xd4f6f0073568c174 needs 13045289156343957595 bytes".
#[test]
fn real_files_cut_anywhere_or_with_flipped_bytes_never_panic_and_say_what_was_lost() {
    let mut seed = 0x1234_5678_9abc_def1u64;
    for name in [
        "fp.data",
        "dwarf.data",
        "zstd.data",
        "pipe.data",
        "sleep.compressed2.data",
        "sleep.compressed2.pipe.data",
    ] {
        let full = std::fs::read(Path::new(FIXTURES).join(name)).unwrap();
        let data_start = PerfFile::from_bytes(full.clone())
            .unwrap()
            .data_range()
            .start;
        let cuts = (0..full.len()).filter(|&c| c <= data_start + 64 || c % 11 == 0);
        for cut in cuts {
            if let Some(e) = script_damaged(full[..cut].to_vec()) {
                assert_plain(&e, &format!("{name} cut at {cut}"));
                assert!(
                    e.contains("truncated")
                        || e.contains("empty")
                        || e.contains("outside the file"),
                    "{name} cut at {cut}: the error does not say the file is cut short: {e}"
                );
            }
        }
        for _ in 0..250 {
            let mut b = full.clone();
            let at = (xorshift(&mut seed) % b.len() as u64) as usize;
            let flip = (xorshift(&mut seed) % 255 + 1) as u8;
            b[at] ^= flip;
            if let Some(e) = script_damaged(b) {
                assert_plain(&e, &format!("{name} with byte {at} ^= {flip:#x}"));
            }
        }
    }
}

/// What perf prints of a file cut in the middle of its records, bport prints too (perf 6.1 prints less: its
/// ordered-events queue is not flushed when a record is cut), and bport's error says where the file ends.
#[test]
fn a_cut_file_prints_every_sample_perf_prints_and_where_it_was_cut() {
    skip_unless!(require("perf", "apt-get install linux-perf"));
    let tmp = tempfile::tempdir().unwrap();
    let headers = |text: &str| -> Vec<String> {
        text.split("\n\n")
            .filter_map(|b| b.lines().next())
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    };
    for name in ["fp.data", "dwarf.data", "zstd.data", "pipe.data"] {
        let full = std::fs::read(Path::new(FIXTURES).join(name)).unwrap();
        let data = PerfFile::from_bytes(full.clone()).unwrap().data_range();
        for step in 1..=5 {
            let cut = data.start + (data.end - data.start) * step / 6 + 3;
            let path = tmp.path().join(format!("cut-{step}-{name}"));
            std::fs::write(&path, &full[..cut]).unwrap();
            let mut theirs = perf(tmp.path());
            theirs.args(["--no-pager", "script", "-i", "-"]);
            let theirs = theirs
                .stdin(std::fs::File::open(&path).unwrap())
                .output()
                .unwrap();
            let ours = crate::support::bport::bport(tmp.path())
                .args(["script", "-i"])
                .arg(&path)
                .output()
                .unwrap();
            let (t, o) = (
                String::from_utf8_lossy(&theirs.stdout),
                String::from_utf8_lossy(&ours.stdout),
            );
            let ours_headers = headers(&o);
            for h in headers(&t) {
                assert!(
                    ours_headers.contains(&h),
                    "{name} cut at {cut}: perf printed a sample bport did not:\n{h}\n--- bport\n{o}"
                );
            }
            let err = String::from_utf8_lossy(&ours.stderr);
            if ours.status.code() == Some(2) {
                assert!(
                    err.contains(&format!("truncated at byte {cut}")),
                    "{name} cut at {cut}: {err}"
                );
                assert!(err.contains("are lost"), "{name} cut at {cut}: {err}");
            } else {
                // The cut fell between two records: nothing is an error, the warning says what is missing.
                assert_eq!(ours.status.code(), Some(0), "{name} cut at {cut}: {err}");
            }
            assert_plain(&err, &format!("{name} cut at {cut}"));
        }
    }
}

/// sleep.compressed2.pipe.data (a perf newer than 6.1; see the fixture README): COMPRESSED2 records in pipe mode,
/// then perf's own stderr text. Not "record at offset 0x7c40 needs 29216 bytes but only 143 remain"
/// and nothing printed: every sample is read, the text is a warning, and the samples are those of the
/// decompressed stream.
#[test]
fn compressed2_pipe_stream_with_text_appended_reads_every_sample() {
    let path = Path::new(FIXTURES).join("sleep.compressed2.pipe.data");
    let file = PerfFile::open(&path).unwrap();
    assert!(file.is_pipe());
    let mut records = file.records();
    let samples: Vec<(u32, u64)> = records
        .by_ref()
        .filter_map(|r| match r.unwrap() {
            Record::Sample(s) => Some((s.tid.unwrap_or(0), s.time.unwrap_or(0))),
            _ => None,
        })
        .collect();
    // Seven samples of `sleep 1` (pid 255866), in time order.
    assert_eq!(samples.len(), 7, "{samples:?}");
    assert!(samples.iter().all(|&(tid, _)| tid == 255866));
    assert!(samples.windows(2).all(|w| w[0].1 <= w[1].1));
    let warnings: Vec<String> = records.warnings().iter().map(|w| w.to_string()).collect();
    assert!(
        warnings.iter().any(|w| w.starts_with(
            "the last 143 bytes of the file are text, not records (\"[ perf record: Woken up 1 times to write data ]\")"
        )),
        "{warnings:?}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = crate::support::bport::run(tmp.path(), &["script", "-i", path.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert_eq!(out.stdout.lines().count(), 7, "{}", out.stdout);
    // The file-mode sibling reads without warnings about damage.
    let sibling = PerfFile::open(Path::new(FIXTURES).join("sleep.compressed2.data")).unwrap();
    let mut it = sibling.records();
    let n = it
        .by_ref()
        .filter(|r| matches!(r, Ok(Record::Sample(_))))
        .count();
    assert!(n > 0);
    assert!(
        it.warnings().iter().all(|w| !w.message.contains("text")),
        "{:?}",
        it.warnings()
    );
}
