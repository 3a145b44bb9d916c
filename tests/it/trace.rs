//! The tracepoint layer (`perf::trace`) against this machine's tracefs and Linux perf: `format` files parsed,
//! the tracing-data section read from perf's files and written so perf reads it, and trace lines rendered as
//! `perf script` renders them (perf uses libtraceevent).
//!
//! Named deviations: events whose print fmt uses a helper bport does not implement (`__print_hex`,
//! `__get_dynamic_array`, `%pS`...) print perf's `[FAILED TO PARSE]` fallback in bport where perf renders them;
//! the events of these tests use none.

use crate::support::bport;
use crate::support::oracle::{self, perf_ok};
use ::bport::perf::abi;
use ::bport::perf::data::{PerfFile, Record};
use ::bport::perf::trace::{self, EventFormat, FileEvents, Tracefs, TracingData};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/trace")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn real_format_files_parse_with_their_fields() {
    let f = EventFormat::parse(
        &fixture("lock_contention_begin.format"),
        "lock:contention_begin",
    )
    .unwrap();
    assert_eq!((f.name.as_str(), f.id), ("contention_begin", 408));
    assert_eq!(f.common_fields.len(), 4);
    let names: Vec<_> = f
        .fields
        .iter()
        .map(|x| (x.name.as_str(), x.offset, x.size, x.signed))
        .collect();
    assert_eq!(names, [("lock_addr", 8, 8, false), ("flags", 16, 4, false)]);
    assert!(f.fields[0].is_pointer());
    assert!(f
        .print_fmt
        .starts_with("\"%p (flags=%s)\", REC->lock_addr, __print_flags("));

    let f =
        EventFormat::parse(&fixture("sched_sched_switch.format"), "sched:sched_switch").unwrap();
    let comm = f.field("next_comm").unwrap();
    assert_eq!(
        (comm.offset, comm.size, comm.array_len, comm.is_string()),
        (40, 16, Some(16), true)
    );
    assert_eq!(f.field("prev_state").unwrap().type_name, "long");

    let f =
        EventFormat::parse(&fixture("uprobe_true_entry.format"), "bporttest:true_entry").unwrap();
    let s = f.field("str").unwrap();
    assert!(s.data_loc && s.is_string() && s.signed);
    assert_eq!(f.field("__probe_ip").unwrap().type_name, "unsigned long");
    assert_eq!(f.field("arg2").unwrap().type_name, "s32");

    // Damaged copies of a real file: each cut and each corrupted number is an error, never a panic.
    let text = fixture("sched_sched_switch.format");
    for cut in (0..text.len()).step_by(7) {
        let _ = EventFormat::parse(&text[..cut], "cut");
    }
    let bad = text.replace("offset:24;", "offset:2x4;");
    assert!(EventFormat::parse(&bad, "bad")
        .unwrap_err()
        .to_string()
        .contains("line 10"));
}

#[test]
fn every_event_format_of_this_kernel_parses() {
    let Some(tracefs) = Tracefs::find() else {
        panic!("no tracefs mounted: this test needs /sys/kernel/tracing (mount -t tracefs nodev /sys/kernel/tracing)");
    };
    let events = tracefs.events(None).unwrap();
    assert!(
        events.len() > 100,
        "only {} events in {}",
        events.len(),
        tracefs.root().display()
    );
    let mut print_failed = Vec::new();
    for (sys, name) in &events {
        let f = tracefs
            .format(sys, name)
            .unwrap_or_else(|e| panic!("{sys}:{name}: {e}"));
        // ftrace's own events (function, bprint...) have a format but no `id` file: perf cannot open them.
        if sys != "ftrace" {
            assert_eq!(f.id, tracefs.id(sys, name).unwrap(), "{sys}:{name}");
        }
        if trace::PrintFmt::parse(&f.print_fmt).is_err() {
            print_failed.push(format!("{sys}:{name}"));
        }
    }
    // The print fmts this module cannot parse fall back to perf's field list; they must stay a small minority.
    assert!(
        print_failed.len() * 20 < events.len(),
        "{} of {} print fmts unparsed: {:?}",
        print_failed.len(),
        events.len(),
        &print_failed[..print_failed.len().min(40)]
    );
}

/// A uprobe on `/usr/bin/true`'s entry point with integer and string arguments, removed on drop.
struct Uprobe {
    tracefs: Tracefs,
    event: String,
    /// The probe tests delete probes by pattern: none runs while this one exists.
    _lock: crate::support::machine::MachineLock,
}

impl Uprobe {
    fn on_true(group: &str) -> Uprobe {
        let lock = crate::support::machine::lock("uprobe-events");
        let tracefs = Tracefs::find_or_mount().unwrap();
        let bin = std::fs::read("/usr/bin/true").unwrap();
        let elf = object::read::File::parse(&*bin).unwrap();
        use object::{Object, ObjectSegment};
        let entry = elf.entry();
        let off = elf
            .segments()
            .find_map(|s| {
                let (a, sz) = (s.address(), s.size());
                (entry >= a && entry < a + sz).then(|| entry - a + s.file_range().0)
            })
            .unwrap();
        let event = format!("{group}/true_entry");
        tracefs
            .write_control(
                "uprobe_events",
                &format!(
                    "p:{event} /usr/bin/true:{off:#x} arg1=%di:u64 arg2=%si:s32 str=+0(%sp):string"
                ),
            )
            .unwrap();
        Uprobe {
            tracefs,
            event,
            _lock: lock,
        }
    }
}

impl Drop for Uprobe {
    fn drop(&mut self) {
        let _ = self
            .tracefs
            .write_control("uprobe_events", &format!("-:{}", self.event));
    }
}

fn trace_lines(file: &Path) -> Vec<String> {
    let bytes = std::fs::read(file).unwrap();
    let pf = PerfFile::from_bytes(bytes).unwrap();
    let events = FileEvents::from_features(pf.features()).unwrap();
    assert!(!events.is_empty(), "{} has no tracing data", file.display());
    let mut lines = Vec::new();
    for r in pf.records_in_file_order() {
        if let Record::Sample(s) = r.unwrap() {
            let attr = &pf.attrs()[s.attr_index].attr;
            assert_eq!(attr.type_, abi::PERF_TYPE_TRACEPOINT);
            lines.push(
                events
                    .line(attr.config, s.raw.expect("RAW"))
                    .expect("a known event"),
            );
        }
    }
    lines.sort();
    lines
}

fn perf_trace_lines(dir: &Path, file: &Path) -> Vec<String> {
    let out = perf_ok(
        dir,
        &["script", "-i", file.to_str().unwrap(), "-F", "trace"],
    );
    let mut lines: Vec<String> = out.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

const EVENTS: &str =
    "sched:sched_switch,sched:sched_process_exec,syscalls:sys_enter_read,irq:softirq_entry,\
                      lock:contention_begin,lock:contention_end,sched:sched_wakeup";

fn workload() -> Vec<&'static str> {
    vec![
        "--",
        "sh",
        "-c",
        "for i in 1 2 3 4; do /usr/bin/true; cat /etc/passwd > /dev/null; ls /usr/bin > /dev/null; done",
    ]
}

#[test]
fn trace_lines_of_perfs_recording_match_perf_script() {
    skip_unless!(oracle::has_perf());
    let group = format!("bport_it{}", std::process::id());
    let probe = Uprobe::on_true(&group);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    let events = format!("{EVENTS},{}", probe.event.replace('/', ":"));
    let mut args = vec![
        "record",
        "-q",
        "-a",
        "-o",
        data.to_str().unwrap(),
        "-e",
        &events,
    ];
    args.extend(workload());
    perf_ok(dir.path(), &args);
    let ours = trace_lines(&data);
    let perfs = perf_trace_lines(dir.path(), &data);
    assert!(
        ours.iter().any(|l| l.contains("==> next_comm=")),
        "no sched_switch samples"
    );
    assert!(
        ours.iter().any(|l| l.starts_with("filename=/usr/bin/true")),
        "no exec samples"
    );
    assert!(
        ours.iter()
            .any(|l| l.contains(" arg1=") && l.contains(" str=\"")),
        "no uprobe samples"
    );
    assert_same_lines(&ours, &perfs);
}

/// Both sorted line lists equal, reporting the first few differences only.
fn assert_same_lines(ours: &[String], perfs: &[String]) {
    let only_ours: Vec<_> = ours.iter().filter(|l| !perfs.contains(l)).take(5).collect();
    let only_perf: Vec<_> = perfs.iter().filter(|l| !ours.contains(l)).take(5).collect();
    assert!(
        only_ours.is_empty() && only_perf.is_empty() && ours.len() == perfs.len(),
        "{} lines vs perf's {}\nonly bport: {only_ours:#?}\nonly perf: {only_perf:#?}",
        ours.len(),
        perfs.len()
    );
}

#[test]
fn tracing_data_of_perfs_file_reads_back_and_rewrites_byte_for_byte() {
    skip_unless!(oracle::has_perf());
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    let mut args = vec![
        "record",
        "-q",
        "-a",
        "-o",
        data.to_str().unwrap(),
        "-e",
        EVENTS,
    ];
    args.extend(workload());
    perf_ok(dir.path(), &args);
    let pf = PerfFile::from_bytes(std::fs::read(&data).unwrap()).unwrap();
    let (_, bytes) = pf
        .features()
        .other
        .iter()
        .find(|(id, _)| *id == abi::HEADER_TRACING_DATA)
        .expect("perf wrote HEADER_TRACING_DATA");
    let (td, used) = TracingData::parse(bytes).unwrap();
    assert_eq!(used, bytes.len());
    assert_eq!(
        (td.version.as_str(), td.long_size, td.big_endian),
        ("0.6", 8, false)
    );
    let mut names: Vec<String> = td
        .formats()
        .unwrap()
        .into_iter()
        .map(|(s, f)| format!("{s}:{}", f.name))
        .collect();
    names.sort();
    let mut want: Vec<String> = EVENTS.split(',').map(str::to_string).collect();
    want.sort();
    assert_eq!(names, want);
    assert_eq!(&td.write(), bytes);
    // Every truncation of the section is an error, not a panic.
    for cut in (0..bytes.len()).step_by(13) {
        assert!(TracingData::parse(&bytes[..cut]).is_err() || cut >= used);
    }
}

fn bport_record(dir: &Path, events: &str) -> PathBuf {
    let data = dir.join("bport.data");
    let mut args = vec!["record", "-a", "-o", data.to_str().unwrap(), "-e", events];
    args.extend(workload());
    let out = bport::run(dir, &args);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    data
}

#[test]
fn bport_records_tracepoints_that_perf_script_reads() {
    skip_unless!(oracle::has_perf());
    let group = format!("bport_itb{}", std::process::id());
    let probe = Uprobe::on_true(&group);
    let dir = tempfile::tempdir().unwrap();
    let events = format!("{EVENTS},{}", probe.event.replace('/', ":"));
    let data = bport_record(dir.path(), &events);
    let ours = trace_lines(&data);
    let perfs = perf_trace_lines(dir.path(), &data);
    assert!(
        ours.iter().any(|l| l.contains("==> next_comm=")),
        "no sched_switch samples"
    );
    assert!(
        ours.iter().any(|l| l.contains(" arg1=")),
        "no uprobe samples"
    );
    assert_same_lines(&ours, &perfs);
    // perf sees the events under their names, with the attrs perf itself uses for tracepoints.
    let evlist = perf_ok(dir.path(), &["evlist", "-v", "-i", data.to_str().unwrap()]);
    let sw = evlist
        .lines()
        .find(|l| l.starts_with("sched:sched_switch:"))
        .expect(&evlist);
    for want in [
        "type: 2",
        "sample_period, sample_freq }: 1",
        "sample_type: IP|TID|TIME|CPU|PERIOD|RAW|IDENTIFIER",
    ] {
        assert!(sw.contains(want), "{want:?} not in {sw}");
    }
}

#[test]
fn bad_tracepoint_names_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (event, want) in [
        ("sched:no_such_event", "no tracepoint sched:no_such_event"),
        ("../x:y", "is not a tracepoint name"),
        ("nosuchevent", "unknown event"),
    ] {
        let out = bport::run(dir.path(), &["record", "-a", "-e", event, "--", "true"]);
        let err = &out.stderr;
        assert_eq!(out.code, Some(2), "{event}: {err}");
        assert!(err.contains(want), "{event}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn bport_script_prints_tracepoint_samples_as_perf_script_does() {
    skip_unless!(oracle::has_perf());
    let group = format!("bport_its{}", std::process::id());
    let probe = Uprobe::on_true(&group);
    let dir = tempfile::tempdir().unwrap();
    let events = format!("{EVENTS},{}", probe.event.replace('/', ":"));
    let perfs_file = dir.path().join("perf.data");
    let mut args = vec![
        "record",
        "-q",
        "-a",
        "-o",
        perfs_file.to_str().unwrap(),
        "-e",
        &events,
    ];
    args.extend(workload());
    perf_ok(dir.path(), &args);
    let ours_file = bport_record(dir.path(), &events);
    for file in [&perfs_file, &ours_file] {
        let f = file.to_str().unwrap();
        let perf = perf_ok(dir.path(), &["script", "-i", f]);
        let out = bport::run(dir.path(), &["script", "-i", f]);
        assert_eq!(out.code, Some(0), "{}", out.transcript());
        assert!(
            perf.lines().count() > 20,
            "{f}: only {} samples",
            perf.lines().count()
        );
        let (b, p): (Vec<&str>, Vec<&str>) = (out.stdout.lines().collect(), perf.lines().collect());
        let first_diff = b.iter().zip(&p).position(|(x, y)| x != y);
        assert!(
            b.len() == p.len() && first_diff.is_none(),
            "{f}: {} lines vs perf's {}, first difference:\n bport: {:?}\n perf:  {:?}",
            b.len(),
            p.len(),
            first_diff.map(|i| b[i]),
            first_diff.map(|i| p[i]),
        );
    }
}

#[test]
fn pipe_mode_tracing_data_gives_the_same_trace_lines() {
    skip_unless!(oracle::has_perf());
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["record", "-q", "-a", "-o", "-", "-e", EVENTS];
    args.extend(workload());
    let out = oracle::perf(dir.path()).args(&args).output().unwrap();
    oracle::assert_success(&out, "perf record -o -");
    let data = dir.path().join("pipe.data");
    std::fs::write(&data, &out.stdout).unwrap();
    let pf = PerfFile::from_bytes(out.stdout).unwrap();
    assert!(pf.is_pipe());
    assert!(pf.feature_ids().contains(&abi::HEADER_TRACING_DATA));
    let perf = perf_ok(dir.path(), &["script", "-i", data.to_str().unwrap()]);
    let ours = bport::run(dir.path(), &["script", "-i", data.to_str().unwrap()]);
    assert_eq!(ours.code, Some(0), "{}", ours.transcript());
    assert!(perf.contains("==> next_comm="), "{perf}");
    assert_eq!(ours.stdout, perf);
}
