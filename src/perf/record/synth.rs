//! Describing what existed before recording started, as perf does (tools/perf/util/synthetic-events.c): COMM for
//! every thread, FORK linking threads to their process, MMAP2 (or MMAP on kernels before 3.16) for the executable
//! mappings in `/proc/PID/maps`, and a kernel map for `[kernel.kallsyms]` anchored at `_text` from
//! `/proc/kallsyms`.
//!
//! Records are built as native-endian bytes, framed exactly as the kernel frames them (8-byte aligned, with the
//! `sample_id` trailer when `sample_id_all` is on), so they flow through the same writer path and DSO tracking as
//! kernel records. Owns /proc parsing; not the file format (that is `perf::data`).

use std::fs;
use std::io;
use std::path::Path;

use crate::perf::abi;

/// How synthesized records are framed: the same choices the kernel makes for the attr in use.
#[derive(Clone, Copy, Debug)]
pub struct Framing {
    /// The attr's `sample_type`, which decides the `sample_id` trailer's fields.
    pub sample_type: u64,
    /// Whether non-sample records carry the `sample_id` trailer.
    pub sample_id_all: bool,
    /// MMAP2 (Linux 3.16) rather than MMAP.
    pub mmap2: bool,
    /// Describe readable non-executable mappings too (`mmap_data`), flagged PERF_RECORD_MISC_MMAP_DATA: perf's
    /// DWARF unwinder reads `.eh_frame_hdr` through them (it lies in a read-only segment, outside the text map).
    pub mmap_data: bool,
    /// The event id written in the trailer's ID/IDENTIFIER fields (the first event's), so that readers of a
    /// multi-event file (IDENTIFIER set) attribute synthesized records to an event and find the trailer's size.
    pub id: u64,
}

/// One readable or executable mapping from `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapsEntry {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// Device major.
    pub maj: u32,
    /// Device minor.
    pub min: u32,
    /// Inode.
    pub ino: u64,
    /// PROT_* bits.
    pub prot: u32,
    /// MAP_PRIVATE or MAP_SHARED.
    pub flags: u32,
    /// Path, `[vdso]`-style name, or `//anon` for anonymous executable memory (perf's name).
    pub filename: String,
}

/// Parses the readable or executable mappings of a `/proc/PID/maps` text; other lines are skipped.
pub fn parse_maps(text: &str) -> Vec<MapsEntry> {
    text.lines().filter_map(parse_maps_line).collect()
}

fn parse_maps_line(line: &str) -> Option<MapsEntry> {
    // start-end perms offset maj:min inode   path (the path may contain spaces)
    let mut fields = line.splitn(6, ' ');
    let range = fields.next()?;
    let perms = fields.next()?;
    let offset = fields.next()?;
    let dev = fields.next()?;
    let inode = fields.next()?;
    let path = fields.next().unwrap_or("").trim_start();
    let perms = perms.as_bytes();
    if perms.len() < 4 || (perms[0] != b'r' && perms[2] != b'x') {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    let (maj, min) = dev.split_once(':')?;
    let mut prot = 0;
    for (i, bit) in [libc::PROT_READ, libc::PROT_WRITE, libc::PROT_EXEC]
        .into_iter()
        .enumerate()
    {
        if perms[i] != b'-' {
            prot |= bit as u32;
        }
    }
    let flags = if perms[3] == b's' {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    } as u32;
    let filename = if path.is_empty() {
        "//anon".to_string()
    } else {
        path.to_string()
    };
    Some(MapsEntry {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        pgoff: u64::from_str_radix(offset, 16).ok()?,
        maj: u32::from_str_radix(maj, 16).ok()?,
        min: u32::from_str_radix(min, 16).ok()?,
        ino: inode.parse().ok()?,
        prot,
        flags,
        filename,
    })
}

/// Builds records with the kernel's framing.
#[derive(Debug)]
struct RecordBuf(Vec<u8>);

impl RecordBuf {
    fn new(ty: u32, misc: u16) -> RecordBuf {
        let mut v = Vec::with_capacity(128);
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(&misc.to_ne_bytes());
        v.extend_from_slice(&0u16.to_ne_bytes());
        RecordBuf(v)
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    /// A NUL-terminated string padded to 8 bytes (perf's `PERF_ALIGN(len + 1, sizeof(u64))`).
    fn string(&mut self, s: &str) -> &mut Self {
        self.0.extend_from_slice(s.as_bytes());
        let padded = (s.len() + 1).next_multiple_of(8);
        self.0.resize(self.0.len() + padded - s.len(), 0);
        self
    }
    fn finish(mut self, framing: &Framing, pid: u32, tid: u32) -> Vec<u8> {
        if framing.sample_id_all {
            // The sample_id trailer, in the kernel's order (perf_event__header_size / __perf_event_header__init_id).
            // Synthesized records carry time 0, as perf's do: they describe the state before the first sample.
            let st = framing.sample_type;
            if st & abi::PERF_SAMPLE_TID != 0 {
                self.u32(pid).u32(tid);
            }
            if st & abi::PERF_SAMPLE_TIME != 0 {
                self.u64(0);
            }
            if st & abi::PERF_SAMPLE_ID != 0 {
                self.u64(framing.id);
            }
            if st & abi::PERF_SAMPLE_STREAM_ID != 0 {
                self.u64(framing.id);
            }
            if st & abi::PERF_SAMPLE_CPU != 0 {
                self.u32(0).u32(0);
            }
            if st & abi::PERF_SAMPLE_IDENTIFIER != 0 {
                self.u64(framing.id);
            }
        }
        let size = u16::try_from(self.0.len()).unwrap_or(u16::MAX);
        self.0[6..8].copy_from_slice(&size.to_ne_bytes());
        self.0
    }
}

impl Framing {
    /// PERF_RECORD_COMM for thread `tid` of process `pid`.
    pub fn comm(&self, pid: u32, tid: u32, comm: &str) -> Vec<u8> {
        let mut r = RecordBuf::new(abi::PERF_RECORD_COMM, 0);
        // The kernel's TASK_COMM_LEN is 16 with the NUL.
        let comm = truncate_utf8(comm, 15);
        r.u32(pid).u32(tid).string(comm);
        r.finish(self, pid, tid)
    }

    /// PERF_RECORD_FORK: `tid` of process `pid` was created by `ptid` of `ppid`.
    pub fn fork(&self, pid: u32, ppid: u32, tid: u32, ptid: u32) -> Vec<u8> {
        let mut r = RecordBuf::new(abi::PERF_RECORD_FORK, 0);
        r.u32(pid).u32(ppid).u32(tid).u32(ptid).u64(0);
        r.finish(self, pid, tid)
    }

    /// PERF_RECORD_MMAP2, or PERF_RECORD_MMAP when the kernel (or the target ABI) lacks MMAP2.
    pub fn mmap(&self, pid: u32, tid: u32, map: &MapsEntry, misc: u16) -> Vec<u8> {
        let len = map.end.wrapping_sub(map.start);
        if self.mmap2 {
            let mut r = RecordBuf::new(abi::PERF_RECORD_MMAP2, misc);
            r.u32(pid).u32(tid).u64(map.start).u64(len).u64(map.pgoff);
            r.u32(map.maj).u32(map.min).u64(map.ino).u64(0);
            r.u32(map.prot).u32(map.flags).string(&map.filename);
            r.finish(self, pid, tid)
        } else {
            let mut r = RecordBuf::new(abi::PERF_RECORD_MMAP, misc);
            r.u32(pid)
                .u32(tid)
                .u64(map.start)
                .u64(len)
                .u64(map.pgoff)
                .string(&map.filename);
            r.finish(self, pid, tid)
        }
    }

    /// The kernel map perf synthesizes: pid -1, `[kernel.kallsyms]_text` from `_text` to the end of the address
    /// space, pgoff = the `_text` address (perf's `ref_reloc_sym`, which lets it relocate vmlinux symbols). Always
    /// an MMAP record, as perf writes it.
    pub fn kernel_mmap(&self, text: u64) -> Vec<u8> {
        let mut r = RecordBuf::new(abi::PERF_RECORD_MMAP, abi::PERF_RECORD_MISC_KERNEL);
        r.u32(u32::MAX)
            .u32(0)
            .u64(text)
            .u64(u64::MAX - text)
            .u64(text)
            .string("[kernel.kallsyms]_text");
        r.finish(self, u32::MAX, 0)
    }

    /// FORK (threads other than the leader), COMM and MMAPs for process `pid` as /proc shows it now.
    /// A process that vanished meanwhile yields nothing; that is a race, not an error.
    pub fn process(&self, proc_root: &Path, pid: u32, with_maps: bool) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let dir = proc_root.join(pid.to_string());
        let mut tids = list_numeric(&dir.join("task")).unwrap_or_default();
        if tids.is_empty() {
            tids.push(pid);
        }
        tids.sort_unstable();
        for &tid in &tids {
            let comm = fs::read_to_string(dir.join("task").join(tid.to_string()).join("comm"))
                .or_else(|_| fs::read_to_string(dir.join("comm")));
            let Ok(comm) = comm else { continue };
            // FORK before COMM, as perf synthesizes them: a reader handles FORK by starting the thread afresh
            // from its parent (comm included), so a COMM before it would be lost and the thread would show the
            // process's name instead of its own.
            if tid != pid {
                out.push(self.fork(pid, pid, tid, pid));
            }
            out.push(self.comm(pid, tid, comm.trim_end_matches('\n')));
        }
        if with_maps {
            if let Ok(maps) = fs::read_to_string(dir.join("maps")) {
                for map in parse_maps(&maps) {
                    let exec = map.prot & libc::PROT_EXEC as u32 != 0;
                    if exec {
                        out.push(self.mmap(pid, pid, &map, abi::PERF_RECORD_MISC_USER));
                    } else if self.mmap_data {
                        let misc = abi::PERF_RECORD_MISC_USER | abi::PERF_RECORD_MISC_MMAP_DATA;
                        out.push(self.mmap(pid, pid, &map, misc));
                    }
                }
            }
        }
        out
    }
}

fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Numeric directory entries (pids or tids) of `dir`.
pub fn list_numeric(dir: &Path) -> io::Result<Vec<u32>> {
    let mut ids = Vec::new();
    for entry in fs::read_dir(dir)? {
        if let Some(id) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) {
            ids.push(id);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// The address of `_text` (else `_stext`) in a `/proc/kallsyms` text; None when absent or hidden (all zero under
/// `kptr_restrict`).
pub fn kernel_text_address(kallsyms: &str) -> Option<u64> {
    let mut stext = None;
    for line in kallsyms.lines() {
        let mut f = line.split_ascii_whitespace();
        let (Some(addr), Some(_kind), Some(name)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let want = match name {
            "_text" => true,
            "_stext" => false,
            _ => continue,
        };
        let addr = u64::from_str_radix(addr, 16).ok().filter(|&a| a != 0)?;
        if want {
            return Some(addr);
        }
        stext = Some(addr);
    }
    stext
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAMING: Framing = Framing {
        sample_type: abi::PERF_SAMPLE_IP
            | abi::PERF_SAMPLE_TID
            | abi::PERF_SAMPLE_TIME
            | abi::PERF_SAMPLE_CPU
            | abi::PERF_SAMPLE_PERIOD,
        sample_id_all: true,
        mmap2: true,
        mmap_data: false,
        id: 0,
    };

    #[test]
    fn maps_lines_keep_executable_mappings_with_perf_names() {
        let text = "\
55d0c0a00000-55d0c0a21000 r--p 00000000 fd:01 1234 /usr/bin/my prog
55d0c0a21000-55d0c0a9a000 r-xp 00021000 fd:01 1234 /usr/bin/my prog
7f00aa000000-7f00aa001000 rwxp 00000000 00:00 0 
7ffd3c1f2000-7ffd3c1f4000 r-xp 00000000 00:00 0                          [vdso]
7f00ab000000-7f00ab001000 r-xs 00001000 08:10 99 /dev/shm/jit
";
        let all = parse_maps(text);
        assert_eq!(
            (all[0].start, all[0].prot),
            (0x55d0c0a00000, libc::PROT_READ as u32)
        );
        let maps: Vec<MapsEntry> = all
            .into_iter()
            .filter(|m| m.prot & libc::PROT_EXEC as u32 != 0)
            .collect();
        assert_eq!(
            maps.iter()
                .map(|m| (m.start, m.end, m.pgoff, m.filename.as_str()))
                .collect::<Vec<_>>(),
            [
                (0x55d0c0a21000, 0x55d0c0a9a000, 0x21000, "/usr/bin/my prog"),
                (0x7f00aa000000, 0x7f00aa001000, 0, "//anon"),
                (0x7ffd3c1f2000, 0x7ffd3c1f4000, 0, "[vdso]"),
                (0x7f00ab000000, 0x7f00ab001000, 0x1000, "/dev/shm/jit"),
            ]
        );
        assert_eq!((maps[0].maj, maps[0].min, maps[0].ino), (0xfd, 1, 1234));
        assert_eq!(maps[0].prot, (libc::PROT_READ | libc::PROT_EXEC) as u32);
        assert_eq!(
            maps[1].prot,
            (libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC) as u32
        );
        assert_eq!(maps[0].flags, libc::MAP_PRIVATE as u32);
        assert_eq!(maps[3].flags, libc::MAP_SHARED as u32);
    }

    #[test]
    fn comm_record_is_framed_like_the_kernels() {
        let r = FRAMING.comm(10, 11, "chain-fp");
        // header 8 + pid/tid 8 + "chain-fp\0" padded to 16 + trailer (pid/tid 8, time 8, cpu 8) = 56
        assert_eq!(r.len(), 56);
        assert_eq!(u16::from_ne_bytes([r[6], r[7]]), 56);
        assert_eq!(u32::from_ne_bytes(r[0..4].try_into().unwrap()), 3);
        assert_eq!(&r[16..25], b"chain-fp\0");
        assert_eq!(u32::from_ne_bytes(r[32..36].try_into().unwrap()), 10);
        assert_eq!(u32::from_ne_bytes(r[36..40].try_into().unwrap()), 11);
        // Names are cut to the kernel's 15 characters.
        let long = FRAMING.comm(1, 1, "a-very-long-command-name");
        assert_eq!(&long[16..32], b"a-very-long-com\0");
    }

    #[test]
    fn mmap_falls_back_to_the_old_record_without_mmap2() {
        let map = parse_maps("400000-401000 r-xp 00000000 fd:01 7 /bin/x\n").remove(0);
        let m2 = FRAMING.mmap(5, 5, &map, abi::PERF_RECORD_MISC_USER);
        assert_eq!(u32::from_ne_bytes(m2[0..4].try_into().unwrap()), 10);
        // 8 + 8 + 24 + maj/min 8 + ino 16 + prot/flags 8 + "/bin/x\0" 8 + trailer 24
        assert_eq!(m2.len(), 104);
        let old = Framing {
            mmap2: false,
            ..FRAMING
        };
        let m1 = old.mmap(5, 5, &map, abi::PERF_RECORD_MISC_USER);
        assert_eq!(u32::from_ne_bytes(m1[0..4].try_into().unwrap()), 1);
        assert_eq!(m1.len(), 8 + 8 + 24 + 8 + 24);
        assert_eq!(&m1[40..47], b"/bin/x\0");
        // Without sample_id_all there is no trailer.
        let bare = Framing {
            sample_id_all: false,
            ..old
        };
        assert_eq!(bare.mmap(5, 5, &map, abi::PERF_RECORD_MISC_USER).len(), 48);
        // With several events (IDENTIFIER, ID) the trailer ends with the event id, as the kernel writes it.
        let multi = Framing {
            sample_type: FRAMING.sample_type | abi::PERF_SAMPLE_ID | abi::PERF_SAMPLE_IDENTIFIER,
            id: 0x1234,
            ..FRAMING
        };
        let m3 = multi.mmap(5, 5, &map, abi::PERF_RECORD_MISC_USER);
        assert_eq!(m3.len(), 104 + 16);
        assert_eq!(u64::from_ne_bytes(m3[112..120].try_into().unwrap()), 0x1234);
        assert_eq!(u64::from_ne_bytes(m3[96..104].try_into().unwrap()), 0x1234);
    }

    #[test]
    fn kernel_text_comes_from_text_then_stext_and_hidden_addresses_give_none() {
        let ks = "ffffffff81000000 T _stext\nffffffff80ff0000 T _text\n";
        assert_eq!(kernel_text_address(ks), Some(0xffffffff80ff0000));
        assert_eq!(
            kernel_text_address("ffffffff81000000 T _stext\n"),
            Some(0xffffffff81000000)
        );
        assert_eq!(kernel_text_address("0000000000000000 T _text\n"), None);
        let k = FRAMING.kernel_mmap(0xffffffff81000000);
        assert_eq!(
            u16::from_ne_bytes([k[4], k[5]]),
            abi::PERF_RECORD_MISC_KERNEL
        );
        assert_eq!(&k[40..63], b"[kernel.kallsyms]_text\0");
    }

    #[test]
    fn this_process_is_synthesized_with_its_own_executable() {
        let pid = std::process::id();
        let recs = FRAMING.process(Path::new("/proc"), pid, true);
        let exe = fs::read_link("/proc/self/exe").unwrap();
        let exe = exe.to_str().unwrap();
        // The main thread is named by a COMM and never forked; other threads' records may come first, as tids
        // are sorted and a machine whose pids wrapped gives a process's later threads lower numbers.
        let u32_at = |r: &[u8], o: usize| u32::from_ne_bytes(r[o..o + 4].try_into().unwrap());
        let of_main = |r: &[u8]| u32_at(r, 8) == pid && u32_at(r, 12) == pid;
        assert!(
            recs.iter().any(|r| u32_at(r, 0) == 3 && of_main(r)),
            "a COMM of the main thread"
        );
        assert!(
            !recs
                .iter()
                .any(|r| u32_at(r, 0) == 7 && u32_at(r, 16) == pid),
            "no FORK of the main thread"
        );
        assert!(
            recs.iter()
                .any(|r| r[0] == 10 && r.windows(exe.len()).any(|w| w == exe.as_bytes())),
            "an MMAP2 of {exe}"
        );
        // The test harness runs this on a thread of its own: its FORK comes right before its COMM.
        let tid: u32 = fs::read_link("/proc/thread-self")
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        if tid == pid {
            return; // --test-threads=1 runs tests on the main thread
        }
        let fork = recs
            .iter()
            .position(|r| u32_at(r, 0) == 7 && u32_at(r, 16) == tid)
            .expect("FORK of this thread");
        let next = &recs[fork + 1];
        assert_eq!(
            (u32_at(next, 0), u32_at(next, 12)),
            (3, tid),
            "COMM right after the FORK"
        );
    }
}
