//! Script resolution on synthetic records of the built-in workloads: the callchain mode rule, DWARF unwinding of
//! a sample's stack into symbolized frames, the fp chain with its markers, and `[unknown]` for missing DSOs.

use super::machine::Machine;
use super::resolve::{choose_mode, Resolver, SampleInput, PERF_SAMPLE_BRANCH_CALL_STACK};
use super::resolve::{PERF_SAMPLE_BRANCH_STACK, PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER};
use super::{CallchainMode, Frame, Options};
use crate::perf::symbols::{MemLookup, Symbolizer, SymbolizerOptions};
use crate::perf::unwind::fp::{PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER};
use crate::perf::unwind::test_support::{function, synthetic};
use crate::perf::workloads::Build;
use std::path::PathBuf;

fn resolver(files: MemLookup, kallsyms: Option<&str>) -> Resolver<MemLookup> {
    let options = Options {
        symbolizer: SymbolizerOptions {
            home: Some(PathBuf::from("/home/u")),
            kallsyms: kallsyms.map(PathBuf::from),
            running_kernel: false,
            ..SymbolizerOptions::default()
        },
        ..Options::default()
    };
    Resolver::new(Symbolizer::new(files, options.symbolizer.clone()), &options)
}

fn names(frames: &[Frame]) -> Vec<String> {
    frames
        .iter()
        .map(|f| {
            format!(
                "{:x} {}+{:#x} ({})",
                f.addr,
                f.sym_name(),
                f.offset,
                f.dso_name()
            )
        })
        .collect()
}

#[test]
fn mode_follows_the_sample_type_as_in_perf_4_3() {
    let dwarf = PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    assert_eq!(choose_mode(dwarf, 0, false), CallchainMode::Dwarf);
    assert_eq!(choose_mode(dwarf, 0, true), CallchainMode::Fp);
    assert_eq!(
        choose_mode(PERF_SAMPLE_REGS_USER, 0, false),
        CallchainMode::Fp
    );
    assert_eq!(
        choose_mode(
            PERF_SAMPLE_BRANCH_STACK,
            PERF_SAMPLE_BRANCH_CALL_STACK,
            false
        ),
        CallchainMode::Lbr
    );
    assert_eq!(
        choose_mode(PERF_SAMPLE_BRANCH_STACK, 0, false),
        CallchainMode::Fp
    );
}

#[test]
fn dwarf_sample_of_the_no_frame_pointer_workload_resolves_the_full_chain() {
    let data = Build::NoFramePointer.bytes();
    let mut files = MemLookup::new();
    files.insert("/w/chain-nofp", data);
    let mut r = resolver(files, None);
    let mut m = Machine::new();
    m.comm(7, 7, "chain-nofp");
    // The text segment as the kernel maps it: file offset 0x1000 at 0x401000.
    m.mmap(7, 0x40_1000, 0x8_1000, 0x1000, "/w/chain-nofp", None, false);
    let (regs, exact_stack, _sp, expect) = synthetic(data, 0);
    // The kernel's copy goes on past the outermost frame (8 KB by default).
    let mut stack = exact_stack.clone();
    stack.extend_from_slice(&[0u8; 64]);
    // regs_user for mask BP|SP|IP only: values in bit order.
    let mask = (1 << 6) | (1 << 7) | (1 << 8);
    let sample = SampleInput {
        cpumode: 2,
        ip: regs.ip,
        pid: 7,
        tid: 7,
        callchain: Some(vec![]),
        regs_user: Some((mask, vec![regs.bp, regs.sp, regs.ip])),
        stack_user: &stack,
        ..Default::default()
    };
    let frames = r.frames(&m, CallchainMode::Dwarf, &sample);
    let syms: Vec<&str> = frames.iter().map(|f| f.sym_name()).collect();
    assert_eq!(syms, ["chain_c", "chain_b", "chain_a", "main"]);
    // Callers are printed at return address − 1, map-relative (file offsets), like perf's libunwind/libdw.
    let printed: Vec<u64> = frames.iter().map(|f| f.addr).collect();
    let want: Vec<u64> = expect
        .iter()
        .enumerate()
        .map(|(i, a)| a - 0x40_0000 - u64::from(i > 0))
        .collect();
    assert_eq!(printed, want);
    let (c, _) = function(data, "chain_c");
    assert_eq!(frames[0].offset, expect[0] - c);

    // The same sample under the pre-4.3 rule: only the (empty) kernel callchain, no user frames at all.
    assert_eq!(r.frames(&m, CallchainMode::Fp, &sample), vec![]);

    // A copy that ends exactly after main's return-address slot: as perf's libunwind accessor, bport does not
    // read a word ending at the copy's end, and marks the cut-off chain with perf's all-ones frame.
    let cut = SampleInput {
        stack_user: &exact_stack,
        ..sample.clone()
    };
    let frames = r.frames(&m, CallchainMode::Dwarf, &cut);
    assert_eq!(
        names(&frames[4..]),
        ["ffffffffffffffff [unknown]+0x0 ([unknown])"]
    );
    assert_eq!(frames.len(), 5);
}

#[test]
fn fp_chain_with_markers_and_unknown_frames() {
    let data = Build::FramePointer.bytes();
    let mut files = MemLookup::new();
    files.insert("/w/chain-fp", data);
    files.insert(
        "/k/kallsyms",
        "ffffffff81000000 T entry_SYSCALL_64\nffffffff81000100 T do_syscall_64\n",
    );
    let mut r = resolver(files, Some("/k/kallsyms"));
    let mut m = Machine::new();
    m.mmap(
        -1,
        0xffff_ffff_8100_0000,
        0x100_0000,
        0xffff_ffff_8100_0000,
        "[kernel.kallsyms]_text",
        None,
        true,
    );
    m.mmap(9, 0x40_1000, 0x8_1000, 0x1000, "/w/chain-fp", None, false);
    m.mmap(9, 0x7f00_0000_0000, 0x1000, 0, "/w/gone.so", None, false);
    let (a, _) = function(data, "chain_a");
    let (c, _) = function(data, "chain_c");
    let sample = SampleInput {
        cpumode: 1,
        ip: 0xffff_ffff_8100_0110,
        pid: 9,
        tid: 9,
        callchain: Some(vec![
            PERF_CONTEXT_KERNEL,
            0xffff_ffff_8100_0110,
            0xffff_ffff_8100_0010,
            PERF_CONTEXT_USER,
            c + 4,
            a + 0x10,
            0x7f00_0000_0123,
            0,
        ]),
        ..Default::default()
    };
    let frames = r.frames(&m, CallchainMode::Fp, &sample);
    assert_eq!(
        names(&frames),
        [
            "ffffffff81000110 do_syscall_64+0x10 ([kernel.kallsyms])".to_owned(),
            "ffffffff81000010 entry_SYSCALL_64+0x10 ([kernel.kallsyms])".to_owned(),
            format!("{:x} chain_c+0x4 (/w/chain-fp)", c + 4 - 0x40_0000),
            format!("{:x} chain_a+0x10 (/w/chain-fp)", a + 0x10 - 0x40_0000),
            "123 [unknown]+0x0 (/w/gone.so)".to_owned(),
            "0 [unknown]+0x0 ([unknown])".to_owned(),
        ]
    );
    let gone = r.symbolizer.dso("/w/gone.so", None);
    assert_eq!(
        gone.problem,
        Some(crate::perf::symbols::DsoProblem::NotFound)
    );
}

#[test]
fn script_text_equals_formatting_each_sample_over_many_output_buffers() {
    // Thousands of fp samples (cached frames, repeated and new, unmapped ones that are never cached, and whole
    // chains that repeat) make several megabytes of text: the output thread, its recycled buffers, its lines and
    // chains kept by id must give exactly what formatting each sample's frames on its own gives, with one event
    // and with a second one, interleaved, that prints other fields.
    many_samples_script_equals_per_sample_formatting(false);
    many_samples_script_equals_per_sample_formatting(true);
}

fn many_samples_script_equals_per_sample_formatting(second_event: bool) {
    use crate::perf::abi::*;
    use crate::perf::data::{
        CommRecord, Mmap2Inode, Mmap2Record, PerfEventAttr, PerfFile, PerfFileWriter, Record,
        RecordMeta, SampleId, SampleRecord, U64s, WriterOptions,
    };
    let data = Build::FramePointer.bytes();
    let (a, _) = function(data, "chain_a");
    let (c, _) = function(data, "chain_c");
    let attr = PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        size: PERF_ATTR_SIZE_VER5,
        config: PERF_COUNT_SW_CPU_CLOCK,
        sample_period_or_freq: 1000,
        sample_type: PERF_SAMPLE_IDENTIFIER
            | PERF_SAMPLE_IP
            | PERF_SAMPLE_TID
            | PERF_SAMPLE_TIME
            | PERF_SAMPLE_PERIOD
            | PERF_SAMPLE_CALLCHAIN,
        flags: ATTR_FLAG_SAMPLE_ID_ALL | ATTR_FLAG_MMAP | ATTR_FLAG_COMM | ATTR_FLAG_MMAP2,
        ..Default::default()
    };
    let sid = |time| SampleId {
        pid: Some(9),
        tid: Some(9),
        time: Some(time),
        ..Default::default()
    };
    let meta = |ty, misc, time| RecordMeta {
        ty,
        misc,
        attr_index: Some(0),
        sample_id: sid(time),
        ..Default::default()
    };
    let mut w =
        PerfFileWriter::new(std::io::Cursor::new(Vec::new()), WriterOptions::default()).unwrap();
    w.add_attr(&attr, &[1]).unwrap();
    if second_event {
        let other = PerfEventAttr {
            sample_type: attr.sample_type & !PERF_SAMPLE_PERIOD,
            ..attr.clone()
        };
        w.add_attr(&other, &[2]).unwrap();
    }
    w.write_record(&Record::Comm(CommRecord {
        meta: meta(PERF_RECORD_COMM, 0, 1),
        pid: 9,
        tid: 9,
        comm: b"chain-fp",
    }))
    .unwrap();
    w.write_record(&Record::Mmap2(Mmap2Record {
        meta: meta(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 2),
        pid: 9,
        tid: 9,
        addr: 0x40_1000,
        len: 0x8_1000,
        pgoff: 0x1000,
        inode: Mmap2Inode::Inode {
            maj: 0,
            min: 0,
            ino: 0,
            ino_generation: 0,
        },
        prot: 5,
        flags: 2,
        filename: b"/w/chain-fp",
    }))
    .unwrap();
    // The kernel image's map; the file records the kernel's build-id, so its symbol table is parsed in the
    // background and, with one set of fields, symbolized on the output thread.
    w.write_record(&Record::Mmap(crate::perf::data::MmapRecord {
        meta: RecordMeta {
            ty: PERF_RECORD_MMAP,
            misc: PERF_RECORD_MISC_KERNEL,
            attr_index: Some(0),
            sample_id: SampleId {
                pid: Some(u32::MAX),
                tid: Some(0),
                time: Some(3),
                ..Default::default()
            },
            ..Default::default()
        },
        pid: u32::MAX,
        tid: 0,
        addr: 0xffff_ffff_8100_0000,
        len: 0x100_0000,
        pgoff: 0xffff_ffff_8100_0000,
        filename: b"[kernel.kallsyms]_text",
    }))
    .unwrap();
    let chains: Vec<Vec<u64>> = (0..20_000u64)
        .map(|i| {
            let mut chain = Vec::new();
            if i % 3 == 0 {
                chain.extend([
                    PERF_CONTEXT_KERNEL,
                    0xffff_ffff_8100_0110 + i % 7,
                    0xffff_ffff_8100_0010,
                ]);
            }
            chain.extend([PERF_CONTEXT_USER, c + i % 40, a + 0x10 + i % 3]);
            // Most chains end in an unmapped address of their own; the others, all cached frames, repeat
            // (120 of them), so the output thread also copies whole chains by their ids.
            if i % 5 != 1 {
                chain.push(0x7f00_0000_0000 + i);
            }
            chain
        })
        .collect();
    for (i, chain) in chains.iter().enumerate() {
        let time = 10 + i as u64;
        // With a second event, every other sample is its.
        let second = second_event && i % 2 == 1;
        w.write_record(&Record::Sample(SampleRecord {
            meta: RecordMeta {
                attr_index: Some(usize::from(second)),
                ..meta(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, time)
            },
            attr_index: usize::from(second),
            id: Some(if second { 2 } else { 1 }),
            ip: Some(chain[1]),
            pid: Some(9),
            tid: Some(9),
            time: Some(time),
            period: Some(250_000),
            callchain: Some(U64s::from_native(chain)),
            ..Default::default()
        }))
        .unwrap();
    }
    let features = crate::perf::data::Features {
        build_ids: vec![crate::perf::data::BuildIdEntry {
            misc: PERF_RECORD_MISC_KERNEL,
            pid: -1,
            build_id: vec![0x11; 20],
            filename: "[kernel.kallsyms]".into(),
        }],
        ..Default::default()
    };
    let (out, _) = w.finish(&features).unwrap();
    let file = PerfFile::from_bytes(out.into_inner()).unwrap();
    let mut files = MemLookup::new();
    files.insert("/w/chain-fp", data);
    files.insert(
        "/k/kallsyms",
        "ffffffff81000000 T entry_SYSCALL_64\nffffffff81000100 T do_syscall_64\n",
    );
    let options = Options {
        symbolizer: SymbolizerOptions {
            home: None,
            running_kernel: false,
            kallsyms: Some(PathBuf::from("/k/kallsyms")),
            ..SymbolizerOptions::default()
        },
        ..Options::default()
    };
    let mut text = Vec::new();
    let outcome =
        super::session::write_script_with(&file, &options, files.clone(), &mut text).unwrap();
    assert_eq!(outcome.samples, 20_000);
    assert!(outcome.warnings.is_empty(), "{:?}", &outcome.warnings[..1]);
    let mut want = Vec::new();
    let mut it = super::session::samples_with(&file, &options, files);
    let width = "cpu-clock".len();
    let mut columns = Default::default();
    while let Some(item) = it.next_sample() {
        let (info, frames) = item.unwrap();
        let fields = super::format::Fields::for_event(
            None,
            1,
            file.attrs()[info.attr_index].attr.sample_type,
        );
        super::format::write_sample(&mut want, fields, width, &mut columns, &info, &frames);
    }
    assert!(want.len() > 2 << 20, "{} bytes", want.len());
    let want_text = String::from_utf8_lossy(&want);
    assert!(
        want_text.contains("ffffffff81000116 do_syscall_64+0x16 ([kernel.kallsyms])"),
        "kernel frames are symbolized"
    );
    assert!(
        text == want,
        "write_script differs from formatting each sample"
    );
}

#[test]
fn repeated_addresses_follow_map_changes_and_processes() {
    // The resolver's memos of recent addresses and of whole chains must not outlive a map change, nor answer for
    // another process.
    let data = Build::FramePointer.bytes();
    let mut files = MemLookup::new();
    files.insert("/w/chain-fp", data);
    let mut r = resolver(files, None);
    let mut m = Machine::new();
    m.mmap(9, 0x40_1000, 0x8_1000, 0x1000, "/w/chain-fp", None, false);
    let (c, _) = function(data, "chain_c");
    let sample = |pid| SampleInput {
        cpumode: 2,
        ip: c + 4,
        pid,
        tid: pid,
        callchain: Some(vec![PERF_CONTEXT_USER, c + 4]),
        ..Default::default()
    };
    let chain_c = format!("{:x} chain_c+0x4 (/w/chain-fp)", c + 4 - 0x40_0000);
    for _ in 0..2 {
        assert_eq!(
            names(&r.frames(&m, CallchainMode::Fp, &sample(9))),
            std::slice::from_ref(&chain_c)
        );
    }
    // Other processes have nothing mapped there, also those whose chain lands in the same slot of a memo
    // (20,000 pids over 1,024 chain slots and 4,096 address slots: several collide).
    for pid in 10..20_000 {
        assert_eq!(
            names(&r.frames(&m, CallchainMode::Fp, &sample(pid))),
            [format!("{:x} [unknown]+0x0 ([unknown])", c + 4)],
            "pid {pid}"
        );
    }
    // A new mapping over the same range (an exec, a dlopen) changes the answer at once.
    m.mmap(9, 0x40_1000, 0x8_1000, 0, "/w/other.so", None, false);
    assert_eq!(
        names(&r.frames(&m, CallchainMode::Fp, &sample(9))),
        [format!(
            "{:x} [unknown]+0x0 (/w/other.so)",
            c + 4 - 0x40_1000
        )]
    );
}

#[test]
fn event_names_without_event_desc_carry_perfs_modifiers() {
    // Names perf 6.1 prints for files without EVENT_DESC (pipe mode, old perf): evsel__add_modifiers. The first
    // two are from perf_data_converter's perf.data.piped.lost_samples-4.4 and perf.data.busy.0-3.8.
    use crate::perf::abi::consts::*;
    use crate::perf::data::PerfEventAttr;
    let attr = |type_, config, flags: u64, precise: u64| PerfEventAttr {
        type_,
        config,
        flags: flags | precise << ATTR_PRECISE_IP_SHIFT,
        ..PerfEventAttr::default()
    };
    let name = |a: PerfEventAttr| super::session::fallback_event_name(&a);
    assert_eq!(name(attr(0, 0, ATTR_FLAG_EXCLUDE_GUEST, 2)), "cycles:ppH");
    assert_eq!(name(attr(0, 1, ATTR_FLAG_EXCLUDE_GUEST, 0)), "instructions");
    // Nothing excluded: guest exclusion differs from its default, so both H and G (perf's `dummy:HG`).
    assert_eq!(name(attr(0, 0, 0, 0)), "cycles:HG");
    assert_eq!(
        name(attr(
            0,
            0,
            ATTR_FLAG_EXCLUDE_KERNEL | ATTR_FLAG_EXCLUDE_HV,
            0
        )),
        "cycles:u"
    );
    assert_eq!(
        name(attr(
            1,
            0,
            ATTR_FLAG_EXCLUDE_USER | ATTR_FLAG_EXCLUDE_GUEST,
            3
        )),
        "cpu-clock:khpppH"
    );
    assert_eq!(name(attr(3, 0x10000, 0, 0)), "L1-dcache-load-misses:HG");
    assert_eq!(name(attr(3, 0x202, 0, 0)), "LLC-prefetches:HG");
    assert_eq!(name(attr(4, 0x1cd, 0, 1)), "raw 0x1cd:p");
    assert_eq!(name(attr(9, 0, 0, 1)), "unknown attr type: 9");
    // A tracepoint whose format the file does not carry either (named from the tracing data otherwise).
    assert_eq!(name(attr(2, 316, 0, 0)), "unknown tracepoint");
}
