//! Round trips writer → reader for every record type, every attr size and both byte orders; time ordering;
//! damaged files.

use super::*;
use crate::perf::abi::*;
use std::io::Cursor as IoCursor;

const REGS_MASK: u64 = (1 << PERF_REG_X86_BP) | (1 << PERF_REG_X86_SP) | (1 << PERF_REG_X86_IP);

fn attr0() -> PerfEventAttr {
    PerfEventAttr {
        type_: PERF_TYPE_HARDWARE,
        size: PERF_ATTR_SIZE_VER5,
        config: PERF_COUNT_HW_CPU_CYCLES,
        sample_period_or_freq: 999,
        sample_type: PERF_SAMPLE_IDENTIFIER
            | PERF_SAMPLE_IP
            | PERF_SAMPLE_TID
            | PERF_SAMPLE_TIME
            | PERF_SAMPLE_ADDR
            | PERF_SAMPLE_STREAM_ID
            | PERF_SAMPLE_CPU
            | PERF_SAMPLE_PERIOD
            | PERF_SAMPLE_CALLCHAIN
            | PERF_SAMPLE_REGS_USER
            | PERF_SAMPLE_STACK_USER,
        flags: ATTR_FLAG_FREQ
            | ATTR_FLAG_SAMPLE_ID_ALL
            | ATTR_FLAG_MMAP
            | ATTR_FLAG_COMM
            | ATTR_FLAG_MMAP2,
        sample_regs_user: REGS_MASK,
        sample_stack_user: 64,
        sample_max_stack: 127,
        ..Default::default()
    }
}

fn attr1() -> PerfEventAttr {
    PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        size: PERF_ATTR_SIZE_VER8,
        config: PERF_COUNT_SW_CPU_CLOCK,
        sample_period_or_freq: 10000,
        sample_type: PERF_SAMPLE_IDENTIFIER
            | PERF_SAMPLE_IP
            | PERF_SAMPLE_TID
            | PERF_SAMPLE_TIME
            | PERF_SAMPLE_CPU
            | PERF_SAMPLE_PERIOD
            | PERF_SAMPLE_READ
            | PERF_SAMPLE_RAW
            | PERF_SAMPLE_BRANCH_STACK
            | PERF_SAMPLE_WEIGHT
            | PERF_SAMPLE_DATA_SRC
            | PERF_SAMPLE_TRANSACTION
            | PERF_SAMPLE_REGS_INTR
            | PERF_SAMPLE_PHYS_ADDR
            | PERF_SAMPLE_CGROUP
            | PERF_SAMPLE_DATA_PAGE_SIZE
            | PERF_SAMPLE_CODE_PAGE_SIZE
            | PERF_SAMPLE_AUX,
        read_format: PERF_FORMAT_TOTAL_TIME_ENABLED
            | PERF_FORMAT_ID
            | PERF_FORMAT_GROUP
            | PERF_FORMAT_LOST,
        branch_sample_type: PERF_SAMPLE_BRANCH_ANY
            | PERF_SAMPLE_BRANCH_HW_INDEX
            | PERF_SAMPLE_BRANCH_COUNTERS,
        flags: ATTR_FLAG_SAMPLE_ID_ALL | ATTR_FLAG_DISABLED | (2 << ATTR_PRECISE_IP_SHIFT),
        sample_regs_intr: 0b11,
        config3: 7,
        ..Default::default()
    }
}

fn sid(pid: u32, tid: u32, time: u64, id: u64, cpu: u32, stream: Option<u64>) -> SampleId {
    SampleId {
        pid: Some(pid),
        tid: Some(tid),
        time: Some(time),
        id: Some(id),
        stream_id: stream,
        cpu: Some(cpu),
    }
}

fn m(ty: u32, misc: u16, attr: Option<usize>, sample_id: SampleId) -> RecordMeta {
    RecordMeta {
        offset: 0,
        ty,
        misc,
        attr_index: attr,
        sample_id,
    }
}

static CHAIN: [u64; 5] = [PERF_CONTEXT_USER, 0x401136, 0x401156, 0x401176, 0x401196];
static REGS: [u64; 3] = [0x7ffe_0000_1000, 0x7ffe_0000_0ff0, 0x401136];
static STACK: [u8; 64] = [0xab; 64];
static READ: [u64; 8] = [2, 1000, 11, 100, 0, 22, 101, 1];
static BRANCHES: [u64; 6] = [0x1000, 0x2000, 1, 0x3000, 0x4000, 2];
static COUNTERS: [u64; 2] = [5, 6];
static INTR: [u64; 2] = [1, 2];
static BUILD_ID: [u8; 20] = [0x5a; 20];

/// One record of every type bport writes, as the reader must give them back (file order).
fn all_records() -> Vec<Record<'static>> {
    let k0 = |time| sid(100, 101, time, 7, 1, Some(70));
    let s0 = SampleRecord {
        meta: m(
            PERF_RECORD_SAMPLE,
            PERF_RECORD_MISC_USER,
            Some(0),
            sid(100, 101, 5000, 7, 1, Some(70)),
        ),
        attr_index: 0,
        id: Some(7),
        ip: Some(0x401136),
        pid: Some(100),
        tid: Some(101),
        time: Some(5000),
        addr: Some(0xdead),
        stream_id: Some(70),
        cpu: Some(1),
        period: Some(1234),
        callchain: Some(U64s::from_native(&CHAIN)),
        regs_user: Some(Regs {
            abi: PERF_SAMPLE_REGS_ABI_64,
            mask: REGS_MASK,
            values: U64s::from_native(&REGS),
        }),
        stack_user: Some(StackUser {
            data: &STACK,
            dyn_size: 40,
        }),
        ..Default::default()
    };
    let s1 = SampleRecord {
        meta: m(
            PERF_RECORD_SAMPLE,
            PERF_RECORD_MISC_KERNEL,
            Some(1),
            sid(100, 102, 6000, 8, 0, None),
        ),
        attr_index: 1,
        id: Some(8),
        ip: Some(0xffff_ffff_8100_0000),
        pid: Some(100),
        tid: Some(102),
        time: Some(6000),
        cpu: Some(0),
        period: Some(10000),
        read: Some(U64s::from_native(&READ)),
        raw: Some(&[1, 2, 3, 4]),
        branch_stack: Some(BranchStack {
            hw_idx: Some(9),
            entries: U64s::from_native(&BRANCHES),
            counters: Some(U64s::from_native(&COUNTERS)),
        }),
        weight: Some(3),
        data_src: Some(4),
        transaction: Some(5),
        regs_intr: Some(Regs {
            abi: PERF_SAMPLE_REGS_ABI_64,
            mask: 0b11,
            values: U64s::from_native(&INTR),
        }),
        phys_addr: Some(6),
        cgroup: Some(7),
        data_page_size: Some(4096),
        code_page_size: Some(4096),
        aux: Some(&[9; 16]),
        ..Default::default()
    };
    let fixed = |ty, misc, fields| FixedRecord {
        meta: m(ty, misc, Some(0), k0(10)),
        fields,
    };
    let raw = |ty, attr, sample_id, body: &'static [u8]| RawRecord {
        meta: m(ty, 0, attr, sample_id),
        body,
    };
    vec![
        Record::Comm(CommRecord {
            meta: m(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, Some(0), k0(1)),
            pid: 100,
            tid: 101,
            comm: b"chain-fp",
        }),
        Record::Mmap(MmapRecord {
            meta: m(PERF_RECORD_MMAP, PERF_RECORD_MISC_USER, Some(0), k0(2)),
            pid: 100,
            tid: 101,
            addr: 0x400000,
            len: 0x1000,
            pgoff: 0,
            filename: b"/tmp/chain-fp",
        }),
        Record::Mmap2(Mmap2Record {
            meta: m(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, Some(0), k0(3)),
            pid: 100,
            tid: 101,
            addr: 0x7f00_0000_0000,
            len: 0x2000,
            pgoff: 0x1000,
            inode: Mmap2Inode::Inode {
                maj: 8,
                min: 1,
                ino: 1234,
                ino_generation: 5,
            },
            prot: 5,
            flags: 2,
            filename: b"/usr/lib/x86_64-linux-gnu/libc.so.6",
        }),
        Record::Mmap2(Mmap2Record {
            meta: m(
                PERF_RECORD_MMAP2,
                PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID,
                Some(0),
                k0(4),
            ),
            pid: 100,
            tid: 101,
            addr: 0x7f00_0001_0000,
            len: 0x2000,
            pgoff: 0,
            inode: Mmap2Inode::BuildId(&BUILD_ID),
            prot: 5,
            flags: 2,
            filename: b"/lib/ld.so",
        }),
        Record::Fork(ForkRecord {
            meta: m(PERF_RECORD_FORK, 0, Some(0), k0(5)),
            pid: 100,
            ppid: 99,
            tid: 102,
            ptid: 99,
            time: 5,
        }),
        Record::Sample(s0),
        Record::Sample(s1),
        Record::Lost(LostRecord {
            meta: m(PERF_RECORD_LOST, 0, Some(0), k0(6)),
            id: 7,
            lost: 3,
        }),
        Record::Throttle(ThrottleRecord {
            meta: m(PERF_RECORD_THROTTLE, 0, Some(0), k0(7)),
            time: 7,
            id: 7,
            stream_id: 70,
        }),
        Record::Unthrottle(ThrottleRecord {
            meta: m(PERF_RECORD_UNTHROTTLE, 0, Some(0), k0(8)),
            time: 8,
            id: 7,
            stream_id: 70,
        }),
        Record::LostSamples(fixed(PERF_RECORD_LOST_SAMPLES, 0, [42, 0, 0])),
        Record::ItraceStart(fixed(PERF_RECORD_ITRACE_START, 0, [100, 101, 0])),
        Record::Switch(fixed(PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, [0, 0, 0])),
        Record::SwitchCpuWide(fixed(PERF_RECORD_SWITCH_CPU_WIDE, 0, [200, 201, 0])),
        Record::Aux(fixed(PERF_RECORD_AUX, 0, [0x1000, 0x800, 1])),
        Record::AuxOutputHwId(fixed(PERF_RECORD_AUX_OUTPUT_HW_ID, 0, [3, 0, 0])),
        Record::BpfEvent(raw(PERF_RECORD_BPF_EVENT, Some(0), k0(11), &[1, 0, 0, 0, 9, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8])),
        Record::OtherKernel(raw(PERF_RECORD_KSYMBOL, Some(0), k0(12), b"\x00\x10\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x01\x00\x00\x00bpf_prog\x00\x00\x00\x00\x00\x00\x00\x00")),
        Record::OtherKernel(raw(PERF_RECORD_CGROUP, Some(0), k0(13), b"\x01\x00\x00\x00\x00\x00\x00\x00/sys/fs\x00")),
        Record::OtherKernel(raw(PERF_RECORD_NAMESPACES, Some(0), k0(14), &[0; 24])),
        Record::OtherKernel(raw(PERF_RECORD_TEXT_POKE, Some(0), k0(15), &[0; 16])),
        Record::OtherKernel(raw(PERF_RECORD_READ, Some(0), k0(16), &[0; 16])),
        Record::OtherKernel(raw(PERF_RECORD_CALLCHAIN_DEFERRED, Some(0), k0(17), &[0; 16])),
        Record::Exit(ForkRecord {
            meta: m(PERF_RECORD_EXIT, 0, Some(0), k0(18)),
            pid: 100,
            ppid: 99,
            tid: 102,
            ptid: 99,
            time: 18,
        }),
        Record::FinishedRound(m(PERF_RECORD_FINISHED_ROUND, 0, None, SampleId::default())),
        Record::User(raw(PERF_RECORD_ID_INDEX, None, SampleId::default(), &[0; 8])),
        Record::User(raw(PERF_RECORD_TIME_CONV, None, SampleId::default(), &[1; 24])),
        Record::FinishedInit(m(PERF_RECORD_FINISHED_INIT, 0, None, SampleId::default())),
        // A kernel type from the future: kept whole (its last u64, the trailer's id, is 0 → attr 0).
        Record::Unknown(raw(40, Some(0), SampleId::default(), &[0; 16])),
        // A user type from the future.
        Record::Unknown(raw(120, None, SampleId::default(), &[7; 8])),
    ]
}

fn features() -> Features {
    let mut a = attr0();
    a.size = PERF_ATTR_SIZE_VER8;
    Features {
        build_ids: vec![
            BuildIdEntry {
                misc: PERF_RECORD_MISC_KERNEL,
                pid: -1,
                build_id: vec![0x11; 20],
                filename: "[kernel.kallsyms]".into(),
            },
            BuildIdEntry {
                misc: PERF_RECORD_MISC_USER,
                pid: -1,
                build_id: vec![0x22; 16],
                filename: "/tmp/chain-fp".into(),
            },
        ],
        hostname: Some("testhost".into()),
        osrelease: Some("6.18.44-fc".into()),
        version: Some("bport 0.1.0".into()),
        arch: Some("x86_64".into()),
        nrcpus: Some(NrCpus {
            available: 2,
            online: 2,
        }),
        cpudesc: Some("Test CPU @ 1GHz".into()),
        cpuid: Some("GenuineIntel,6,85,4".into()),
        total_mem: Some(8_000_000),
        cmdline: Some(vec!["bport".into(), "record".into(), "-g".into()]),
        event_desc: Some(vec![
            EventDesc {
                attr: a,
                name: "cycles".into(),
                ids: vec![7],
            },
            EventDesc {
                attr: attr1(),
                name: "cpu-clock".into(),
                ids: vec![8, 9],
            },
        ]),
        group_desc: Some(vec![GroupDesc {
            name: "{anon_group}".into(),
            leader_idx: 0,
            nr_members: 2,
        }]),
        other: vec![],
    }
}

fn write_file(endian: Endianness, records: &[Record<'_>]) -> (Vec<u8>, WriteOutcome) {
    let opts = WriterOptions {
        endian,
        ..Default::default()
    };
    let mut w = PerfFileWriter::new(IoCursor::new(Vec::new()), opts).unwrap();
    assert_eq!(w.add_attr(&attr0(), &[7]).unwrap(), 0);
    assert_eq!(w.add_attr(&attr1(), &[8, 9]).unwrap(), 1);
    for r in records {
        w.write_record(r).unwrap();
    }
    let (out, outcome) = w.finish(&features()).unwrap();
    (out.into_inner(), outcome)
}

fn read_all(file: &PerfFile, sorted: bool) -> (Vec<Record<'_>>, Vec<Warning>) {
    let mut it = if sorted {
        file.records()
    } else {
        file.records_in_file_order()
    };
    let recs = it.by_ref().map(|r| r.unwrap().with_offset(0)).collect();
    (recs, it.warnings().to_vec())
}

#[test]
fn every_record_type_round_trips_in_both_byte_orders() {
    let want = all_records();
    for endian in [Endianness::Little, Endianness::Big] {
        let (bytes, outcome) = write_file(endian, &want);
        assert_eq!(outcome.records, want.len() as u64);
        assert_eq!(outcome.samples, 2);
        let magic: &[u8] = if endian == Endianness::Big {
            b"2ELIFREP"
        } else {
            b"PERFILE2"
        };
        assert_eq!(&bytes[0..8], magic);
        let file = PerfFile::from_bytes(bytes).unwrap();
        assert_eq!(file.endian(), endian);
        assert!(file.warnings().is_empty(), "{:?}", file.warnings());
        let mut a0 = attr0();
        a0.size = PERF_ATTR_SIZE_VER8;
        assert_eq!(
            file.attrs(),
            &[
                AttrEntry {
                    attr: a0,
                    ids: vec![7],
                    name: Some("cycles".into())
                },
                AttrEntry {
                    attr: attr1(),
                    ids: vec![8, 9],
                    name: Some("cpu-clock".into())
                },
            ]
        );
        assert_eq!(file.features(), &features());
        let (got, warnings) = read_all(&file, false);
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w, "{endian:?}");
        }
        assert_eq!(
            warnings.iter().map(|w| w.message.as_str()).collect::<Vec<_>>(),
            [
                "unknown record type 40 skipped (from a newer kernel?); further records of this type are skipped silently",
                "unknown record type 120 skipped (from a newer perf?); further records of this type are skipped silently"
            ]
        );
    }
}

#[test]
fn big_endian_file_is_really_big_endian() {
    let comm = Record::Comm(CommRecord {
        meta: m(PERF_RECORD_COMM, 0, Some(0), SampleId::default()),
        pid: 0x0102_0304,
        tid: 5,
        comm: b"x",
    });
    let (bytes, _) = write_file(Endianness::Big, &[comm]);
    let file = PerfFile::from_bytes(bytes.clone()).unwrap();
    let at = file.data_range().start;
    // type 3, misc 0, size 8 + 8 + 8 (comm padded) + trailer (tid, time, stream_id, cpu, identifier = 40).
    assert_eq!(&bytes[at..at + 8], &[0, 0, 0, 3, 0, 0, 0, 64]);
    assert_eq!(&bytes[at + 8..at + 12], &[1, 2, 3, 4]);
    assert_eq!(&bytes[8..16], &[0, 0, 0, 0, 0, 0, 0, 104]);
}

#[test]
fn pipe_mode_round_trips() {
    let want = all_records();
    for endian in [Endianness::Little, Endianness::Big] {
        let opts = WriterOptions {
            endian,
            ..Default::default()
        };
        let mut w = PerfFileWriter::new_pipe(Vec::new(), opts).unwrap();
        w.add_attr(&attr0(), &[7]).unwrap();
        w.add_attr(&attr1(), &[8, 9]).unwrap();
        for r in &want {
            w.write_record(r).unwrap();
        }
        let (bytes, outcome) = w.finish_pipe(&features()).unwrap();
        assert_eq!(outcome.features, features().ids());
        let file = PerfFile::from_reader(&bytes[..]).unwrap();
        assert!(file.is_pipe());
        assert!(file.warnings().is_empty(), "{:?}", file.warnings());
        assert_eq!(file.attrs().len(), 2);
        assert_eq!(file.attrs()[1].attr, attr1());
        assert_eq!(file.attrs()[1].ids, vec![8, 9]);
        assert_eq!(file.attrs()[1].name.as_deref(), Some("cpu-clock"));
        assert_eq!(file.features(), &features());
        let (got, _) = read_all(&file, false);
        let header_types = [
            PERF_RECORD_HEADER_ATTR,
            PERF_RECORD_HEADER_FEATURE,
            PERF_RECORD_HEADER_BUILD_ID,
        ];
        let types: Vec<u32> = got.iter().map(|r| r.meta().ty).collect();
        assert_eq!(&types[..2], &[PERF_RECORD_HEADER_ATTR; 2]);
        let got: Vec<_> = got
            .into_iter()
            .filter(|r| !header_types.contains(&r.meta().ty))
            .collect();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w, "{endian:?}");
        }
    }
}

/// perf before 6.6 reads a pipe-mode HEADER_ATTR's ids after its own 128-byte struct whatever attr.size says;
/// a smaller attr made perf 6.1 read the ids from the next records and crash (`bport record -o - | perf script -i -`).
#[test]
fn pipe_attrs_are_written_at_the_struct_size_of_perf_5_13_to_6_2() {
    for (opts, want) in [
        (WriterOptions::default(), PERF_ATTR_SIZE_VER7),
        (
            WriterOptions::for_kernel(&"4.1".parse().unwrap()),
            PERF_ATTR_SIZE_VER5,
        ),
    ] {
        let small = PerfEventAttr {
            size: PERF_ATTR_SIZE_VER1,
            ..attr0()
        };
        let mut w = PerfFileWriter::new_pipe(Vec::new(), opts).unwrap();
        w.add_attr(&small, &[0xcb8, 0xcb9]).unwrap();
        let (bytes, _) = w.finish_pipe(&Features::default()).unwrap();
        let size = u16::from_le_bytes([bytes[22], bytes[23]]);
        assert_eq!(u32::from(size), 8 + want + 16);
        let file = PerfFile::from_reader(&bytes[..]).unwrap();
        assert_eq!(file.attrs()[0].attr.size, want);
        assert_eq!(file.attrs()[0].ids, [0xcb8, 0xcb9]);
        let at = 16 + 8 + want as usize;
        assert_eq!(
            &bytes[at..at + 8],
            &0xcb8u64.to_le_bytes(),
            "ids right after the struct"
        );
    }
}

#[test]
fn every_attr_size_round_trips() {
    let full = PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        sample_type: PERF_SAMPLE_IP | PERF_SAMPLE_TID,
        config2: 1,
        branch_sample_type: PERF_SAMPLE_BRANCH_USER,
        sample_regs_user: 1,
        sample_regs_intr: 1,
        aux_watermark: 1,
        aux_sample_size: 1,
        sig_data: 1,
        config3: 1,
        ..Default::default()
    };
    let sizes = [64u32, 72, 80, 96, 104, 112, 120, 128, 136];
    for (i, &size) in sizes.iter().enumerate() {
        // Keep the fields of layouts up to `size`.
        let mut a = full.clone();
        let clear: [&mut dyn FnMut(&mut PerfEventAttr); 8] = [
            &mut |a| a.config2 = 0,
            &mut |a| a.branch_sample_type = 0,
            &mut |a| a.sample_regs_user = 0,
            &mut |a| a.sample_regs_intr = 0,
            &mut |a| a.aux_watermark = 0,
            &mut |a| a.aux_sample_size = 0,
            &mut |a| a.sig_data = 0,
            &mut |a| a.config3 = 0,
        ];
        for (j, f) in clear.into_iter().enumerate() {
            if j >= i {
                f(&mut a);
            }
        }
        a.size = size;
        assert_eq!(a.min_size(), size);
        for endian in [Endianness::Little, Endianness::Big] {
            let opts = WriterOptions {
                endian,
                ..Default::default()
            };
            let mut w = PerfFileWriter::new(IoCursor::new(Vec::new()), opts).unwrap();
            w.add_attr(&a, &[1]).unwrap();
            let s = SampleRecord {
                meta: m(PERF_RECORD_SAMPLE, 0, Some(0), SampleId::default()),
                ip: Some(0x1234),
                pid: Some(1),
                tid: Some(2),
                ..Default::default()
            };
            w.write_record(&Record::Sample(s)).unwrap();
            let (out, _) = w.finish(&Features::default()).unwrap();
            let bytes = out.into_inner();
            // attr_size in the header is the attr's size + the ids section.
            let file = PerfFile::from_bytes(bytes).unwrap();
            assert_eq!(file.attrs()[0].attr, a, "size {size} {endian:?}");
            let recs: Vec<_> = file.records().map(|r| r.unwrap()).collect();
            let Record::Sample(got) = recs[0] else {
                panic!("not a sample")
            };
            assert_eq!((got.ip, got.pid, got.tid), (Some(0x1234), Some(1), Some(2)));
        }
    }
}

/// A writer with one event whose samples carry IP and TIME (and a `sample_id` trailer on other records).
fn timed_writer() -> PerfFileWriter<IoCursor<Vec<u8>>> {
    let attr = PerfEventAttr {
        sample_type: PERF_SAMPLE_IP | PERF_SAMPLE_TIME,
        flags: ATTR_FLAG_SAMPLE_ID_ALL,
        size: 64,
        ..Default::default()
    };
    let mut w = PerfFileWriter::new(IoCursor::new(Vec::new()), WriterOptions::default()).unwrap();
    w.add_attr(&attr, &[]).unwrap();
    w
}

/// A sample of [`timed_writer`]'s event at `ip` and `time`.
fn timed_sample(ip: u64, time: u64) -> Record<'static> {
    Record::Sample(SampleRecord {
        meta: m(PERF_RECORD_SAMPLE, 0, Some(0), SampleId::default()),
        ip: Some(ip),
        time: Some(time),
        ..Default::default()
    })
}

#[test]
fn records_come_in_time_order_across_rounds_like_perf() {
    // Two CPUs' buffers drained per round: round 1 has t=10,30 (cpu0) and t=20 (cpu1); round 2 brings a late
    // t=25 from cpu1 and t=40. perf flushes at the end of round 2 only what is <= round 1's max (30).
    let mut w = timed_writer();
    let sample = |t: u64| timed_sample(t, t);
    for t in [10, 30, 20] {
        w.write_record(&sample(t)).unwrap();
    }
    w.write_finished_round().unwrap();
    for t in [25, 40] {
        w.write_record(&sample(t)).unwrap();
    }
    w.write_comm(1, 1, b"no-time", false, SampleId::default())
        .unwrap();
    w.write_finished_round().unwrap();
    w.write_record(&sample(35)).unwrap();
    let (out, _) = w.finish(&Features::default()).unwrap();
    let file = PerfFile::from_bytes(out.into_inner()).unwrap();
    let order: Vec<String> = file
        .records()
        .map(|r| match r.unwrap() {
            Record::Sample(s) => s.time.unwrap().to_string(),
            Record::FinishedRound(_) => "R".into(),
            Record::Comm(c) => String::from_utf8_lossy(c.comm).into_owned(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    // The COMM has a zero time in its trailer (synthesized), so it is queued at t=0 and leaves at the second
    // round like every record <= 30; 40 and the late 35 leave at the end, sorted.
    assert_eq!(
        order,
        ["R", "0", "10", "20", "25", "30", "R", "35", "40"].map(|s| if s == "0" {
            "no-time".to_string()
        } else {
            s.to_string()
        })
    );
}

/// Runs of rising times with drops back, ties among them: the reader's queue (records that come in order kept
/// apart from late ones) hands them out as one sort by time would, equal times in file order.
#[test]
fn records_in_and_out_of_order_come_out_sorted_with_ties_in_file_order() {
    let mut w = timed_writer();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut times = Vec::new();
    let mut t = 1000u64;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Mostly rising by 0-3 (ties included), now and then back by up to 40.
        t = if x.is_multiple_of(10) {
            t.saturating_sub(x % 41)
        } else {
            t + x % 4
        };
        times.push(t);
    }
    for (i, &t) in times.iter().enumerate() {
        w.write_record(&timed_sample(i as u64, t)).unwrap();
    }
    let (out, _) = w.finish(&Features::default()).unwrap();
    let file = PerfFile::from_bytes(out.into_inner()).unwrap();
    let got: Vec<u64> = file
        .records()
        .filter_map(|r| match r.unwrap() {
            Record::Sample(s) => s.ip,
            _ => None,
        })
        .collect();
    let mut want: Vec<u64> = (0..times.len() as u64).collect();
    want.sort_by_key(|&i| times[i as usize]);
    assert_eq!(got, want);
}

#[test]
fn target_abi_caps_what_is_written() {
    let v41: KernelVersion = "4.1.15".parse().unwrap();
    let mut opts = WriterOptions::for_kernel(&v41);
    opts.endian = Endianness::Little;
    let mut w = PerfFileWriter::new(IoCursor::new(Vec::new()), opts.clone()).unwrap();
    // attr1 uses CGROUP and PHYS_ADDR samples (not in 4.1): refused with the bits named.
    match w.add_attr(&attr1(), &[1]) {
        Err(WriteError::NotInAbi {
            what,
            value,
            target,
        }) => {
            assert_eq!(what, "sample_type bits");
            assert_eq!(
                value,
                PERF_SAMPLE_PHYS_ADDR
                    | PERF_SAMPLE_AUX
                    | PERF_SAMPLE_CGROUP
                    | PERF_SAMPLE_DATA_PAGE_SIZE
                    | PERF_SAMPLE_CODE_PAGE_SIZE
            );
            assert_eq!(target, "Linux 4.1.15");
        }
        other => panic!("expected NotInAbi, got {other:?}"),
    }
    // An attr stated at VER8 but using only VER3 fields is written at 112 (4.1's size).
    let mut a = attr0();
    a.size = PERF_ATTR_SIZE_VER8;
    w.add_attr(&a, &[7]).unwrap();
    w.write_comm(1, 1, b"x", false, SampleId::default())
        .unwrap();
    w.write_record(&Record::LostSamples(FixedRecord {
        meta: m(PERF_RECORD_LOST_SAMPLES, 0, Some(0), SampleId::default()),
        fields: [1, 0, 0],
    }))
    .unwrap();
    w.write_record(&Record::User(RawRecord {
        meta: m(PERF_RECORD_TIME_CONV, 0, None, SampleId::default()),
        body: &[0; 24],
    }))
    .unwrap();
    w.write_finished_round().unwrap();
    let mut f = features();
    f.other.push((HEADER_CLOCK_DATA, vec![0; 8]));
    let (out, outcome) = w.finish(&f).unwrap();
    assert_eq!(outcome.records, 2);
    assert_eq!(
        outcome.dropped.into_iter().collect::<Vec<_>>(),
        [(PERF_RECORD_LOST_SAMPLES, 1), (PERF_RECORD_TIME_CONV, 1)]
    );
    assert_eq!(outcome.features_dropped, [HEADER_CLOCK_DATA]);
    let file = PerfFile::from_bytes(out.into_inner()).unwrap();
    assert_eq!(file.attrs()[0].attr.size, PERF_ATTR_SIZE_VER5);
    assert_eq!(file.feature_ids(), features().ids());
}

// ---- damaged files: an error or a warning, never a panic ----

/// What a damaged file gave: the records (offset, type), the first error and all warnings.
type Damaged = (Vec<(u64, u32)>, Option<ReadError>, Vec<Warning>);

/// Reads everything `bytes` offers, in time and in file order, and checks what holds for any input: both orders
/// hand out the same number of records (and the same error), file order goes by offset, and every record lies
/// inside the file.
fn read_damaged(bytes: Vec<u8>) -> Result<Damaged, ReadError> {
    let len = bytes.len() as u64;
    let file = PerfFile::from_bytes(bytes)?;
    let mut warnings = file.warnings().to_vec();
    let sorted = file.records().count();
    let mut it = file.records_in_file_order();
    let mut got = Vec::new();
    let mut err = None;
    for r in it.by_ref() {
        match r {
            Ok(r) => got.push((r.meta().offset, r.meta().ty)),
            Err(e) => {
                assert!(err.is_none(), "the iterator stops after its first error");
                err = Some(e);
            }
        }
    }
    warnings.extend_from_slice(it.warnings());
    assert_eq!(
        sorted,
        got.len() + usize::from(err.is_some()),
        "time order and file order hand out different records"
    );
    assert!(got.windows(2).all(|w| w[0].0 <= w[1].0), "{got:?}");
    assert!(got.iter().all(|&(offset, _)| offset < len), "{got:?}");
    Ok((got, err, warnings))
}

#[test]
fn empty_and_wrong_magic() {
    assert!(matches!(
        PerfFile::from_bytes(vec![]),
        Err(ReadError::Empty)
    ));
    let mut bytes = write_file(Endianness::Little, &all_records()).0;
    bytes[0..8].copy_from_slice(b"NOTPERF!");
    match PerfFile::from_bytes(bytes) {
        Err(e @ ReadError::BadMagic { magic }) => {
            assert_eq!(&magic, b"NOTPERF!");
            assert_eq!(
                e.to_string(),
                "not a perf.data file: it starts with the bytes 4e 4f 54 50 45 52 46 21 (\"NOTPERF!\"), not the \
                 magic \"PERFILE2\" of a file `perf record` writes"
            );
        }
        other => panic!("{other:?}"),
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("empty.data");
    std::fs::write(&p, b"").unwrap();
    assert!(matches!(PerfFile::open(&p), Err(ReadError::Empty)));
    assert!(matches!(
        PerfFile::open(dir.path().join("missing")),
        Err(ReadError::Io { .. })
    ));
}

#[test]
fn truncated_at_every_byte() {
    let want = all_records();
    for endian in [Endianness::Little, Endianness::Big] {
        let (full, _) = write_file(endian, &want);
        let file = PerfFile::from_bytes(full.clone()).unwrap();
        let data = file.data_range();
        let offsets: Vec<u64> = file
            .records_in_file_order()
            .map(|r| r.unwrap().meta().offset)
            .collect();
        drop(file);
        for cut in 0..full.len() {
            let r = read_damaged(full[..cut].to_vec());
            if cut < data.start {
                // Header or attrs are cut: an error that names where.
                let e = r.expect_err("a file cut before its data cannot open");
                assert!(
                    matches!(
                        e,
                        ReadError::Empty
                            | ReadError::Truncated { .. }
                            | ReadError::OutsideFile { .. }
                    ),
                    "cut {cut}: {e}"
                );
                let msg = e.to_string();
                assert!(
                    msg.contains("truncated") || msg.contains("empty"),
                    "cut {cut}: a plain sentence naming the truncation: {msg}"
                );
                continue;
            }
            let (got, err, warnings) =
                r.unwrap_or_else(|e| panic!("cut {cut} in the data must open: {e}"));
            if cut >= data.end {
                // Only features are lost: all records, warnings about the feature table.
                assert_eq!(got.len(), want.len(), "cut {cut}");
                assert!(err.is_none());
                continue;
            }
            // Records wholly before the cut are read; a record cut in the middle is an error at its offset.
            let whole: Vec<u64> = offsets
                .iter()
                .zip(
                    offsets
                        .iter()
                        .skip(1)
                        .chain(std::iter::once(&(data.end as u64))),
                )
                .filter(|(_, &end)| end <= cut as u64)
                .map(|(&o, _)| o)
                .collect();
            assert_eq!(
                got.iter().map(|g| g.0).collect::<Vec<_>>(),
                whole,
                "cut {cut}"
            );
            let at_boundary = cut == data.start || offsets.contains(&(cut as u64));
            match err {
                None => assert!(at_boundary, "cut {cut} mid-record without an error"),
                Some(e) => {
                    assert!(!at_boundary, "cut {cut} at a boundary gave {e}");
                    let last_start = offsets.iter().rev().find(|&&o| o < cut as u64).unwrap();
                    assert_eq!(e.offset(), Some(*last_start), "cut {cut}: {e}");
                }
            }
            assert!(
                warnings
                    .iter()
                    .any(|w| w.message.contains("the file is truncated")),
                "cut {cut}: {warnings:?}"
            );
        }
    }
}

#[test]
fn pipe_stream_truncated_at_every_byte() {
    let mut w = PerfFileWriter::new_pipe(Vec::new(), WriterOptions::default()).unwrap();
    w.add_attr(&attr0(), &[7]).unwrap();
    w.add_attr(&attr1(), &[8, 9]).unwrap();
    for r in all_records() {
        w.write_record(&r).unwrap();
    }
    let (full, _) = w.finish_pipe(&features()).unwrap();
    for cut in 0..full.len() {
        match read_damaged(full[..cut].to_vec()) {
            Ok((_, err, _)) => {
                if let Some(e) = err {
                    assert!(e.offset().is_some_and(|o| o < cut as u64), "cut {cut}: {e}");
                }
            }
            Err(e) => assert!(cut < 16, "cut {cut}: {e}"),
        }
    }
}

fn put_u64(bytes: &mut [u8], at: usize, v: u64) {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn overflowing_lengths_and_offsets() {
    let (good, _) = write_file(Endianness::Little, &all_records());
    let data_start = PerfFile::from_bytes(good.clone())
        .unwrap()
        .data_range()
        .start;
    // Header fields: attr_size, attrs.offset/size, data.offset/size.
    for (field, value) in [
        (16, 0),
        (16, 1),
        (16, u64::MAX),
        (24, u64::MAX),
        (24, u64::MAX - 7),
        (32, u64::MAX),
        (40, u64::MAX),
        (48, u64::MAX),
        (48, u64::MAX - 100),
        (8, 17),
        (8, u64::MAX),
    ] {
        let mut b = good.clone();
        put_u64(&mut b, field, value);
        // Whatever the outcome, it is an error or a result, and reading all records terminates.
        let _ = read_damaged(b);
    }
    // attr_size 0 is rejected like perf does.
    let mut b = good.clone();
    put_u64(&mut b, 16, 0);
    assert!(matches!(
        PerfFile::from_bytes(b),
        Err(ReadError::Invalid { offset: 16, .. })
    ));
    // A data offset past the end is an error naming the section, without printing the garbage.
    let mut b = good.clone();
    put_u64(&mut b, 40, u64::MAX);
    let e = PerfFile::from_bytes(b).unwrap_err();
    assert!(
        matches!(e, ReadError::OutsideFile { what: "data", .. }),
        "{e}"
    );
    assert!(
        e.to_string().starts_with(
            "the data section points outside the file: its offset or size in the header is garbage"
        ),
        "{e}"
    );
    // A record whose size is below its header: an error at its offset, the records before it kept.
    let mut b = good.clone();
    b[data_start + 6..data_start + 8].copy_from_slice(&4u16.to_le_bytes());
    let (got, err, _) = read_damaged(b).unwrap();
    assert!(got.is_empty());
    assert_eq!(err.unwrap().offset(), Some(data_start as u64));
    // A sample whose callchain count overflows: that sample is skipped with a warning, the rest is read.
    let file = PerfFile::from_bytes(good.clone()).unwrap();
    let sample_at = file
        .records_in_file_order()
        .find_map(|r| match r.unwrap() {
            Record::Sample(s) if s.attr_index == 0 => Some(s.meta.offset as usize),
            _ => None,
        })
        .unwrap();
    drop(file);
    // attr0 layout: identifier, ip, tid, time, addr, stream_id, cpu, period, then callchain nr.
    let nr_at = sample_at + 8 + 8 * 8;
    for nr in [u64::MAX, u64::MAX / 8 + 1, 1 << 40] {
        let mut b = good.clone();
        put_u64(&mut b, nr_at, nr);
        let (got, err, warnings) = read_damaged(b).unwrap();
        assert!(err.is_none());
        assert_eq!(got.len(), all_records().len() - 1);
        assert!(
            warnings.iter().any(|w| w.offset == Some(sample_at as u64)
                && w.message.starts_with("SAMPLE record at byte ")),
            "{warnings:?}"
        );
    }
}

/// A small deterministic generator, so failures reproduce.
struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Random bytes and random damage to good files: besides what [`read_damaged`] checks on every input, damage
/// past the header leaves every record before the first damaged byte as it was: the reader hands out the
/// undamaged file's records up to there, in order, before any warning or error.
#[test]
fn random_bytes_and_random_damage() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for i in 0..3000 {
        let len = (rng.next() % 512) as usize;
        let mut b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Give most inputs a real magic and a plausible header size, so the parser goes past the first check.
        if len >= 16 && i % 4 != 0 {
            b[0..8].copy_from_slice(if i % 3 == 0 { b"2ELIFREP" } else { b"PERFILE2" });
            let size: u64 = [16u64, 104, 72][i % 3];
            let bytes = if i % 3 == 0 {
                size.to_be_bytes()
            } else {
                size.to_le_bytes()
            };
            b[8..16].copy_from_slice(&bytes);
        }
        let _ = read_damaged(b);
    }
    let (good, _) = write_file(Endianness::Little, &all_records());
    let (good_be, _) = write_file(Endianness::Big, &all_records());
    let mut prefixes_checked = 0;
    for base in [good, good_be] {
        let data = PerfFile::from_bytes(base.clone()).unwrap().data_range();
        let (intact, err, _) = read_damaged(base.clone()).unwrap();
        assert!(err.is_none());
        // Where each record ends: the next one's start, or the data's end.
        let ends: Vec<u64> = intact
            .iter()
            .skip(1)
            .map(|&(o, _)| o)
            .chain([data.end as u64])
            .collect();
        for _ in 0..1500 {
            let mut b = base.clone();
            let mut first = usize::MAX;
            for _ in 0..1 + rng.next() % 8 {
                let at = (rng.next() as usize) % b.len();
                b[at] = rng.next() as u8;
                first = first.min(at);
            }
            let Ok((got, _, _)) = read_damaged(b) else {
                continue;
            };
            if first < data.start {
                continue;
            }
            let before: Vec<(u64, u32)> = intact
                .iter()
                .zip(&ends)
                .filter(|&(_, &end)| end <= first as u64)
                .map(|(&r, _)| r)
                .collect();
            assert!(
                got.starts_with(&before),
                "damage at byte {first} changed the records before it: {got:?} vs {before:?}"
            );
            prefixes_checked += 1;
        }
    }
    // Most damage lands in the data section: the check above ran on most inputs.
    assert!(prefixes_checked > 1500, "{prefixes_checked}");
}

#[test]
fn raw_ring_buffer_records_are_written_verbatim() {
    let attr = PerfEventAttr {
        sample_type: PERF_SAMPLE_IP | PERF_SAMPLE_TID,
        size: 64,
        ..Default::default()
    };
    let mut w = PerfFileWriter::new(IoCursor::new(Vec::new()), WriterOptions::default()).unwrap();
    w.add_attr(&attr, &[1]).unwrap();
    // A sample as the kernel writes it: header, ip, pid, tid (native byte order).
    let mut raw = Vec::new();
    raw.extend_from_slice(&PERF_RECORD_SAMPLE.to_ne_bytes());
    raw.extend_from_slice(&PERF_RECORD_MISC_USER.to_ne_bytes());
    raw.extend_from_slice(&24u16.to_ne_bytes());
    raw.extend_from_slice(&0x40_1136u64.to_ne_bytes());
    raw.extend_from_slice(&7u32.to_ne_bytes());
    raw.extend_from_slice(&8u32.to_ne_bytes());
    w.write_raw_record(&raw).unwrap();
    assert!(matches!(
        w.write_raw_record(&raw[..20]),
        Err(WriteError::Usage(_))
    ));
    assert!(matches!(
        w.write_raw_record(&raw[..4]),
        Err(WriteError::Usage(_))
    ));
    // Attrs cannot follow data.
    assert!(matches!(w.add_attr(&attr, &[2]), Err(WriteError::Usage(_))));
    let (out, outcome) = w.finish(&Features::default()).unwrap();
    assert_eq!(
        (outcome.records, outcome.samples, outcome.data_bytes),
        (1, 1, 24)
    );
    let file = PerfFile::from_bytes(out.into_inner()).unwrap();
    let recs: Vec<_> = file.records().map(|r| r.unwrap()).collect();
    let Record::Sample(s) = recs[0] else { panic!() };
    assert_eq!(
        (s.ip, s.pid, s.tid, s.meta.misc),
        (Some(0x401136), Some(7), Some(8), PERF_RECORD_MISC_USER)
    );
}

#[test]
fn mmap2_falls_back_to_mmap_for_kernels_before_3_16() {
    let opts = WriterOptions::for_kernel(&"3.10".parse().unwrap());
    let mut w = PerfFileWriter::new(IoCursor::new(Vec::new()), opts).unwrap();
    let attr = PerfEventAttr {
        sample_type: PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
        flags: ATTR_FLAG_SAMPLE_ID_ALL,
        size: 64,
        ..Default::default()
    };
    w.add_attr(&attr, &[1]).unwrap();
    let m2 = Mmap2Record {
        pid: 5,
        tid: 5,
        addr: 0x400000,
        len: 0x1000,
        pgoff: 0,
        filename: b"/bin/x",
        ..Default::default()
    };
    let sample_id = SampleId {
        pid: Some(5),
        tid: Some(5),
        time: Some(9),
        ..Default::default()
    };
    w.write_mmap2(m2, PERF_RECORD_MISC_USER, sample_id).unwrap();
    let (out, _) = w.finish(&Features::default()).unwrap();
    let file = PerfFile::from_bytes(out.into_inner()).unwrap();
    let recs: Vec<_> = file.records().map(|r| r.unwrap()).collect();
    assert_eq!(
        recs,
        [Record::Mmap(MmapRecord {
            meta: RecordMeta {
                offset: file.data_range().start as u64,
                ty: PERF_RECORD_MMAP,
                misc: PERF_RECORD_MISC_USER,
                attr_index: Some(0),
                sample_id,
            },
            pid: 5,
            tid: 5,
            addr: 0x400000,
            len: 0x1000,
            pgoff: 0,
            filename: b"/bin/x",
        })]
    );
}

#[test]
fn legacy_magic_and_larger_headers_are_read() {
    let attr = PerfEventAttr {
        sample_type: PERF_SAMPLE_IP,
        size: 64,
        ..Default::default()
    };
    for endian in [Endianness::Little, Endianness::Big] {
        let opts = WriterOptions {
            endian,
            ..Default::default()
        };
        let mut w = PerfFileWriter::new(IoCursor::new(Vec::new()), opts).unwrap();
        w.add_attr(&attr, &[1]).unwrap();
        w.write_finished_round().unwrap();
        let (out, _) = w.finish(&features()).unwrap();
        let good = out.into_inner();
        // perf before 3.4 wrote "PERFFILE" with no byte-order mark; the attr entry size (64 + 16) decides.
        let mut legacy = good.clone();
        legacy[0..8].copy_from_slice(b"PERFFILE");
        let file = PerfFile::from_bytes(legacy).unwrap();
        assert_eq!(file.endian(), endian);
        assert_eq!(file.records().count(), 1);
        // A header that says it is bigger than 104 (a newer writer): known fields used, one warning.
        let mut big = good.clone();
        let size: u64 = 120;
        big[8..16].copy_from_slice(&if endian == Endianness::Big {
            size.to_be_bytes()
        } else {
            size.to_le_bytes()
        });
        let file = PerfFile::from_bytes(big).unwrap();
        assert_eq!(file.header_size(), 120);
        assert_eq!(
            file.warnings()
                .iter()
                .map(|w| w.message.as_str())
                .collect::<Vec<_>>(),
            ["header size 120 is larger than the 104 bytes perf writes; extra bytes ignored"]
        );
        assert_eq!(file.features(), &features());
        assert_eq!(file.records().count(), 1);
    }
}

#[test]
fn zstd_compressed_records_are_read_in_place() {
    // What `perf record -z` writes: ordinary records, zstd-compressed, split over COMPRESSED records.
    let inner = all_records()[..7].to_vec();
    let layouts = [
        sample::SampleLayout::of(&attr0()),
        sample::SampleLayout::of(&attr1()),
    ];
    let mut plain = Vec::new();
    for r in &inner {
        let layout = r.meta().attr_index.map(|i| &layouts[i]);
        plain.extend(codec::encode(r, layout, object::endian::LittleEndian).unwrap());
    }
    let z = zstd::bulk::compress(&plain[..], 1).unwrap();
    let (first, second) = z.split_at(z.len() / 2);
    let mut w = PerfFileWriter::new(IoCursor::new(Vec::new()), WriterOptions::default()).unwrap();
    w.add_attr(&attr0(), &[7]).unwrap();
    w.add_attr(&attr1(), &[8, 9]).unwrap();
    for part in [first, second] {
        w.write_record(&Record::User(RawRecord {
            meta: m(PERF_RECORD_COMPRESSED, 0, None, SampleId::default()),
            body: part,
        }))
        .unwrap();
    }
    w.write_finished_round().unwrap();
    let (out, _) = w.finish(&features()).unwrap();
    let file = PerfFile::from_bytes(out.into_inner()).unwrap();
    assert!(file.warnings().is_empty(), "{:?}", file.warnings());
    let got: Vec<Record<'_>> = file.records_in_file_order().map(|r| r.unwrap()).collect();
    let types: Vec<u32> = got.iter().map(|r| r.meta().ty).collect();
    assert_eq!(&types[..2], &[PERF_RECORD_COMPRESSED; 2]);
    assert_eq!(types.last(), Some(&PERF_RECORD_FINISHED_ROUND));
    // The frame ends in the second COMPRESSED record: its records come right after it, with its offset.
    let second_at = got[1].meta().offset;
    assert_eq!(got.len(), 2 + inner.len() + 1);
    for (g, w) in got[2..2 + inner.len()].iter().zip(&inner) {
        assert_eq!(g.meta().offset, second_at);
        assert_eq!(g.with_offset(0), *w);
    }
    // Time order draws from the decompressed records too.
    assert_eq!(
        file.records()
            .filter(|r| matches!(r, Ok(Record::Sample(_))))
            .count(),
        2
    );
}

#[test]
fn corrupt_zstd_data_is_a_warning() {
    let mut w = PerfFileWriter::new(IoCursor::new(Vec::new()), WriterOptions::default()).unwrap();
    w.add_attr(&attr0(), &[7]).unwrap();
    w.write_record(&Record::User(RawRecord {
        meta: m(PERF_RECORD_COMPRESSED, 0, None, SampleId::default()),
        body: &[0x28, 0xb5, 0x2f, 0xfd, 0xff, 0xff, 0xff, 0xff],
    }))
    .unwrap();
    let (out, _) = w.finish(&Features::default()).unwrap();
    let file = PerfFile::from_bytes(out.into_inner()).unwrap();
    // Decoding waits for the first iterator that meets a COMPRESSED record; the warning is that iterator's.
    assert!(file.warnings().is_empty(), "{:?}", file.warnings());
    let mut records = file.records();
    assert_eq!(records.by_ref().count(), 1);
    assert_eq!(records.warnings().len(), 1, "{:?}", records.warnings());
    assert!(records.warnings()[0]
        .message
        .starts_with("zstd data of a COMPRESSED record could not be decompressed"));
    // A second iterator reports it too (the decoding itself is not repeated).
    let mut again = file.records_in_file_order();
    assert_eq!(again.by_ref().count(), 1);
    assert_eq!(again.warnings().len(), 1);
}

#[test]
fn compressed2_records_are_read_too() {
    let inner = all_records()[..1].to_vec();
    let layout = sample::SampleLayout::of(&attr0());
    let plain = codec::encode(&inner[0], Some(&layout), object::endian::LittleEndian).unwrap();
    let z = zstd::bulk::compress(&plain[..], 1).unwrap();
    // `u64 data_size`, the data, then padding to 8 bytes that data_size leaves out.
    let mut body = (z.len() as u64).to_le_bytes().to_vec();
    body.extend_from_slice(&z);
    body.resize(body.len().div_ceil(8) * 8, 0);
    let mut w = PerfFileWriter::new(IoCursor::new(Vec::new()), WriterOptions::default()).unwrap();
    w.add_attr(&attr0(), &[7]).unwrap();
    w.add_attr(&attr1(), &[8, 9]).unwrap();
    w.write_record(&Record::User(RawRecord {
        meta: m(PERF_RECORD_COMPRESSED2, 0, None, SampleId::default()),
        body: &body,
    }))
    .unwrap();
    let (out, _) = w.finish(&Features::default()).unwrap();
    let file = PerfFile::from_bytes(out.into_inner()).unwrap();
    assert!(file.warnings().is_empty(), "{:?}", file.warnings());
    let got: Vec<Record<'_>> = file
        .records_in_file_order()
        .map(|r| r.unwrap().with_offset(0))
        .collect();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1], inner[0]);
}

#[test]
fn payloads_after_tracing_data_and_auxtrace_records_are_skipped() {
    let mut w = PerfFileWriter::new_pipe(Vec::new(), WriterOptions::default()).unwrap();
    w.add_attr(&attr0(), &[7]).unwrap();
    let (mut bytes, _) = w.finish_pipe(&Features::default()).unwrap();
    let layout = sample::SampleLayout::of(&attr0());
    let comm = codec::encode(
        &all_records()[0],
        Some(&layout),
        object::endian::LittleEndian,
    )
    .unwrap();
    let rec = |ty: u32, body: &[u8]| {
        let mut r = ty.to_le_bytes().to_vec();
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&(8 + body.len() as u16).to_le_bytes());
        r.extend_from_slice(body);
        r
    };
    // HEADER_TRACING_DATA { u32 size; u32 pad } followed by `size` bytes padded to 8.
    let mut tracing = 10u32.to_le_bytes().to_vec();
    tracing.extend_from_slice(&[0; 4]);
    bytes.extend(rec(PERF_RECORD_HEADER_TRACING_DATA, &tracing));
    bytes.extend_from_slice(&[0xee; 16]);
    bytes.extend_from_slice(&comm);
    // AUXTRACE { u64 size, offset, reference; u32 idx, tid, cpu, reserved } followed by `size` bytes.
    let mut aux = 24u64.to_le_bytes().to_vec();
    aux.extend_from_slice(&[0; 8 + 8 + 16]);
    bytes.extend(rec(PERF_RECORD_AUXTRACE, &aux));
    bytes.extend_from_slice(&[0xdd; 24]);
    bytes.extend_from_slice(&comm);
    let (got, err, warnings) = read_damaged(bytes.clone()).unwrap();
    assert!(err.is_none() && warnings.is_empty(), "{err:?} {warnings:?}");
    assert_eq!(
        got.iter().map(|g| g.1).collect::<Vec<_>>(),
        [
            PERF_RECORD_HEADER_ATTR,
            PERF_RECORD_HEADER_TRACING_DATA,
            PERF_RECORD_COMM,
            PERF_RECORD_AUXTRACE,
            PERF_RECORD_COMM
        ]
    );
    // An AUXTRACE payload larger than the stream: an error at that record, the records before it kept.
    let aux_at = bytes.len() - comm.len() - 24 - 48;
    bytes[aux_at + 8..aux_at + 16].copy_from_slice(&u64::MAX.to_le_bytes());
    let (got, err, _) = read_damaged(bytes).unwrap();
    assert_eq!(got.len(), 3);
    assert_eq!(err.unwrap().offset(), Some(aux_at as u64));
}

#[test]
fn samples_find_their_attr_by_id_or_fall_back_to_the_first() {
    let sample = |attr_index: usize, id: u64| {
        Record::Sample(SampleRecord {
            meta: m(PERF_RECORD_SAMPLE, 0, Some(attr_index), SampleId::default()),
            ip: Some(0x1000 + id),
            id: Some(id),
            ..Default::default()
        })
    };
    // ID (not IDENTIFIER) at the same place in both attrs: perf's id_pos works, and so does ours.
    let with_id = |period| PerfEventAttr {
        sample_type: PERF_SAMPLE_IP | PERF_SAMPLE_ID,
        sample_period_or_freq: period,
        size: 64,
        ..Default::default()
    };
    let mut w = PerfFileWriter::new(IoCursor::new(Vec::new()), WriterOptions::default()).unwrap();
    w.add_attr(&with_id(1), &[10, 11]).unwrap();
    w.add_attr(&with_id(2), &[20]).unwrap();
    for (i, id) in [(1, 20), (0, 11), (0, 10), (0, 99)] {
        w.write_record(&sample(i, id)).unwrap();
    }
    let (out, _) = w.finish(&Features::default()).unwrap();
    let file = PerfFile::from_bytes(out.into_inner()).unwrap();
    let got: Vec<(usize, Option<u64>)> = file
        .records()
        .map(|r| match r.unwrap() {
            Record::Sample(s) => (s.attr_index, s.id),
            other => panic!("{other:?}"),
        })
        .collect();
    // An id no attr lists (99) falls back to the first attr, as synthesized id-0 records do.
    assert_eq!(
        got,
        [(1, Some(20)), (0, Some(11)), (0, Some(10)), (0, Some(99))]
    );
}

#[test]
fn unknown_feature_sections_are_skipped_with_one_warning_each() {
    let mut f = features();
    f.other.push((40, vec![1, 2, 3, 4, 5, 6, 7, 8]));
    f.other.push((HEADER_CPU_TOPOLOGY, vec![9; 16]));
    f.other.sort();
    for pipe in [false, true] {
        let bytes = if pipe {
            let mut w = PerfFileWriter::new_pipe(Vec::new(), WriterOptions::default()).unwrap();
            w.add_attr(&attr0(), &[7]).unwrap();
            w.finish_pipe(&f).unwrap().0
        } else {
            let mut w =
                PerfFileWriter::new(IoCursor::new(Vec::new()), WriterOptions::default()).unwrap();
            w.add_attr(&attr0(), &[7]).unwrap();
            w.finish(&f).unwrap().0.into_inner()
        };
        let file = PerfFile::from_bytes(bytes).unwrap();
        let msgs: Vec<&str> = file.warnings().iter().map(|w| w.message.as_str()).collect();
        if pipe {
            assert_eq!(
                msgs,
                ["unknown feature 40 skipped; written by a newer perf?"]
            );
        } else {
            assert_eq!(
                msgs,
                ["unknown feature 40 (8 bytes) skipped; written by a newer perf?"]
            );
        }
        // Everything else is read, and the unknown section is kept raw.
        assert_eq!(file.features(), &f, "pipe {pipe}");
        assert!(file.feature_ids().contains(&40));
    }
}

#[test]
fn a_killed_recording_is_read_to_its_end() {
    // perf record killed before it fixed the header: data size 0, no feature sections after the records (the
    // bitmap may still claim some).
    let want = all_records();
    let (bytes, _) = write_file(Endianness::Little, &want);
    let file = PerfFile::from_bytes(bytes.clone()).unwrap();
    let data = file.data_range();
    drop(file);
    let mut killed = bytes[..data.end].to_vec();
    put_u64(&mut killed, 48, 0);
    let (got, err, warnings) = read_damaged(killed.clone()).unwrap();
    assert!(err.is_none());
    assert_eq!(got.len(), want.len());
    assert_eq!(
        warnings.iter().map(|w| w.message.as_str()).collect::<Vec<_>>()[..1],
        ["data size is 0 (was 'perf record' properly terminated?); reading records to the end of the file"]
    );
    // The same with an empty feature bitmap.
    for w in 0..4 {
        put_u64(&mut killed, 72 + 8 * w, 0);
    }
    let (got, _, _) = read_damaged(killed).unwrap();
    assert_eq!(got.len(), want.len());
    // A finished file with no records: data size 0, features right after; no records, no warning.
    let mut w = PerfFileWriter::new(IoCursor::new(Vec::new()), WriterOptions::default()).unwrap();
    w.add_attr(&attr0(), &[7]).unwrap();
    let empty = w.finish(&features()).unwrap().0.into_inner();
    let file = PerfFile::from_bytes(empty).unwrap();
    assert!(file.warnings().is_empty(), "{:?}", file.warnings());
    assert_eq!(file.records().count(), 0);
    assert_eq!(file.features(), &features());
}

#[test]
fn a_large_mapped_file_reads_the_same_as_in_memory() {
    // Over the prefetcher's threshold (32 MB): opened from a path, the file is mapped and its pages are faulted
    // in by another thread while the records are read, and released behind the reader; the records must be
    // exactly those of the same bytes read into memory (no prefetcher), in both orders, also when they are
    // looked at after their pages were released (read_all keeps every record).
    static BIG_STACK: [u8; 8192] = [0x5c; 8192];
    let template = all_records()
        .into_iter()
        .find_map(|r| match r {
            Record::Sample(s) if s.attr_index == 0 => Some(s),
            _ => None,
        })
        .expect("all_records has a sample of attr 0");
    let mut records = Vec::new();
    for i in 0..5000u64 {
        let mut s = template;
        // Out of order within each round of 100, as several CPUs' buffers are.
        let time = 10_000 + (i / 100) * 1000 + (99 - i % 100) * 7;
        s.time = Some(time);
        s.meta.sample_id.time = Some(time);
        s.stack_user = Some(StackUser {
            data: &BIG_STACK,
            dyn_size: 8000 - i % 64,
        });
        records.push(Record::Sample(s));
        if i % 100 == 99 {
            records.push(Record::User(RawRecord {
                meta: m(PERF_RECORD_FINISHED_ROUND, 0, None, SampleId::default()),
                body: &[],
            }));
        }
    }
    let (bytes, _) = write_file(Endianness::Little, &records);
    assert!(bytes.len() > 33 << 20, "{} bytes", bytes.len());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.data");
    std::fs::write(&path, &bytes).unwrap();
    let mapped = PerfFile::open(&path).unwrap();
    let memory = PerfFile::from_bytes(bytes).unwrap();
    for sorted in [true, false] {
        let (got, got_warnings) = read_all(&mapped, sorted);
        if sorted {
            // The rounds end every ~0.8 MB, so all but the last few MB are released once the thread sees it.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while mapped.released_bytes() < 16 << 20 && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            assert!(
                mapped.released_bytes() >= 16 << 20,
                "{} bytes released",
                mapped.released_bytes()
            );
        }
        let (want, want_warnings) = read_all(&memory, sorted);
        assert_eq!(got.len(), 5050);
        assert!(got == want, "records differ (sorted: {sorted})");
        assert_eq!(got_warnings, want_warnings);
    }
    let times: Vec<u64> = read_all(&mapped, true)
        .0
        .iter()
        .filter_map(|r| r.time())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "not in time order");
}

/// A pipe is copied into a file without a name (nothing is left behind in the directory, even when the process is
/// killed) and read like a recording on disk.
#[test]
fn a_stream_is_spilled_to_an_unnamed_file_and_read_as_mapped() {
    let (bytes, _) = write_file(Endianness::Little, &all_records());
    let dir = tempfile::tempdir().unwrap();
    let file = super::reader::spill(&bytes[..], dir.path()).unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    assert_eq!(file.metadata().unwrap().len(), bytes.len() as u64);
    let read = PerfFile::from_file(file, "stream").unwrap();
    let want = PerfFile::from_bytes(bytes).unwrap();
    assert_eq!(read_all(&read, true).0, read_all(&want, true).0);
}

/// Found by the fuzz target: a feature table entry 800 GB past a 12 KB file was printed with its numbers; any
/// section ending past 512 GiB is garbage and is called that.
#[test]
fn a_feature_section_far_outside_the_file_is_called_garbage() {
    let (mut b, _) = write_file(Endianness::Little, &all_records());
    let table = PerfFile::from_bytes(b.clone()).unwrap().data_range().end;
    put_u64(&mut b, table, 858_993_459_200);
    put_u64(&mut b, table + 8, 858_993_459_200);
    let file = PerfFile::from_bytes(b).unwrap();
    let w: Vec<String> = file.warnings().iter().map(|w| w.message.clone()).collect();
    assert!(
        w.iter()
            .any(|m| m
                .contains("points outside the file: its offset or size in the header is garbage")),
        "{w:?}"
    );
    assert!(w.iter().all(|m| !m.contains("858993459200")), "{w:?}");
}

/// `n` SAMPLE records of a bare 8-byte header, each too short for attr0's sample fields: each is skipped
/// with a warning. Every `stride`-th has a random `misc`, so that zstd compresses them about as much as the
/// reader's bound on decompressed sizes allows (a hostile file's best).
fn bad_samples(n: usize, stride: usize) -> Vec<u8> {
    let mut rng = XorShift(0x5eed);
    let mut out = Vec::with_capacity(n * 8);
    for i in 0..n {
        let misc = if i % stride == 0 {
            rng.next() as u16
        } else {
            0
        };
        out.extend_from_slice(&PERF_RECORD_SAMPLE.to_le_bytes());
        out.extend_from_slice(&misc.to_le_bytes());
        out.extend_from_slice(&8u16.to_le_bytes());
    }
    out
}

/// Millions of bad records in plain records and in COMPRESSED ones (a `-z` file smaller than one record can
/// hold them): every one is counted, ten of a kind are kept word for word, and one more line says how many
/// were not shown.
#[test]
fn millions_of_bad_records_keep_a_bounded_warning_log() {
    const N: usize = 2_000_000;
    let expect_bounded = |records: &Records<'_>| {
        let log = records.warning_log();
        assert_eq!(log.count(raw::kind::SKIPPED), N as u64);
        assert_eq!(log.total(), N as u64, "{:?}", records.warnings());
        let shown = records.warnings();
        assert_eq!(shown.len(), WARNING_EXAMPLES + 1, "{shown:?}");
        assert!(
            shown[0].message.starts_with("SAMPLE record at byte"),
            "{}",
            shown[0]
        );
        assert_eq!(
            shown[WARNING_EXAMPLES].message,
            format!(
                "{} more warnings of records skipped as unparsable not shown ({N} in all)",
                N - WARNING_EXAMPLES
            )
        );
    };

    // Plain: the records are in the data section.
    let mut w = PerfFileWriter::new(IoCursor::new(Vec::new()), WriterOptions::default()).unwrap();
    w.add_attr(&attr0(), &[7]).unwrap();
    let bad = bad_samples(N, 256);
    for chunk in bad.chunks(8) {
        w.write_raw_record(chunk).unwrap();
    }
    let (out, _) = w.finish(&Features::default()).unwrap();
    let file = PerfFile::from_bytes(out.into_inner()).unwrap();
    for mut records in [file.records(), file.records_in_file_order()] {
        assert_eq!(records.by_ref().count(), 0);
        expect_bounded(&records);
    }

    // Compressed: the same records in one COMPRESSED record of a file smaller than one record can be.
    let z = zstd::bulk::compress(&bad, 1).unwrap();
    // Small enough for one record, large enough for the reader to decode every bad record it holds.
    assert!(
        z.len() < 64 << 10 && z.len() * 1024 > bad.len(),
        "{} bytes compressed",
        z.len()
    );
    let mut w = PerfFileWriter::new(IoCursor::new(Vec::new()), WriterOptions::default()).unwrap();
    w.add_attr(&attr0(), &[7]).unwrap();
    w.write_record(&Record::User(RawRecord {
        meta: m(PERF_RECORD_COMPRESSED, 0, None, SampleId::default()),
        body: &z,
    }))
    .unwrap();
    let (out, _) = w.finish(&Features::default()).unwrap();
    let out = out.into_inner();
    assert!(out.len() < 70 << 10, "{} bytes", out.len());
    let file = PerfFile::from_bytes(out).unwrap();
    for mut records in [file.records(), file.records_in_file_order()] {
        // The COMPRESSED record itself is handed out; none of the bad records in it is.
        assert_eq!(records.by_ref().count(), 1);
        expect_bounded(&records);
    }
}

/// The log itself: counts per kind, examples per kind, one summary per kind with more, added once.
#[test]
fn a_warning_log_counts_every_kind_and_keeps_the_first_of_each() {
    let w = |m: &str| Warning {
        offset: None,
        message: m.to_owned(),
    };
    let mut log = WarningLog::new();
    for i in 0..25 {
        log.push("apples", w(&format!("apple {i}")));
    }
    log.push("pears", w("pear"));
    assert_eq!(log.as_slice().len(), WARNING_EXAMPLES + 1);
    log.finish();
    log.finish();
    let messages: Vec<&str> = log.as_slice().iter().map(|w| w.message.as_str()).collect();
    assert_eq!(messages.len(), WARNING_EXAMPLES + 2);
    assert_eq!(messages[0], "apple 0");
    assert_eq!(messages[WARNING_EXAMPLES - 1], "apple 9");
    assert_eq!(messages[WARNING_EXAMPLES], "pear");
    assert_eq!(
        messages[WARNING_EXAMPLES + 1],
        "15 more warnings of apples not shown (25 in all)"
    );
    assert_eq!(
        (log.count("apples"), log.count("pears"), log.total()),
        (25, 1, 26)
    );
}
