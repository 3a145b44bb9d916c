//! Which DSOs the samples hit, and their build-ids, for the BUILD_ID header feature (perf record's
//! `build_id__mark_dso_hit`: only DSOs with samples get an entry, so `perf buildid-list --with-hits`, `perf archive`
//! and symbolization elsewhere find exactly the binaries that matter).
//!
//! Tracks MMAP/MMAP2/FORK/EXIT records per process as they stream by and looks up each sample's IP and user/kernel
//! callchain addresses. Owns nothing of the file format beyond reading the few fields it needs from records whose
//! layout the recorder itself chose.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::ring::RawData;
use crate::perf::abi;

/// Where the kernel's addresses start on x86-64 (and the callchain context markers live above that).
const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// The name the kernel gives the vDSO mapping, and perf its BUILD_ID entry.
pub const VDSO: &str = "[vdso]";

/// The name perf gives the kernel's DSO in BUILD_ID entries.
pub const KERNEL_DSO: &str = "[kernel.kallsyms]";

#[derive(Clone, Debug)]
struct Mapping {
    end: u64,
    name: String,
}

/// Follows mappings and marks DSOs with samples.
#[derive(Debug, Default)]
pub struct DsoTracker {
    sample_type: u64,
    maps: HashMap<u32, BTreeMap<u64, Mapping>>,
    hits: BTreeSet<String>,
    kernel_hit: bool,
}

impl DsoTracker {
    /// A tracker for samples of `sample_type` (the recorder's own attr; IDENTIFIER/ADDR/ID/STREAM_ID are
    /// understood for completeness, READ is never used by the recorder).
    pub fn new(sample_type: u64) -> DsoTracker {
        DsoTracker {
            sample_type,
            ..DsoTracker::default()
        }
    }

    /// Looks at one record (kernel or synthesized, header included).
    pub fn observe(&mut self, raw: &RawData<'_>) {
        match raw.record_type() {
            abi::PERF_RECORD_MMAP => self.mmap(raw, false),
            abi::PERF_RECORD_MMAP2 => self.mmap(raw, true),
            abi::PERF_RECORD_FORK => {
                // pid, ppid: a new process (pid != ppid) starts with a copy of its parent's maps.
                if let (Some(pid), Some(ppid)) = (raw.u32_at(8), raw.u32_at(12)) {
                    if pid != ppid {
                        if let Some(parent) = self.maps.get(&ppid).cloned() {
                            self.maps.insert(pid, parent);
                        }
                    }
                }
            }
            abi::PERF_RECORD_SAMPLE => self.sample(raw),
            _ => {}
        }
    }

    fn mmap(&mut self, raw: &RawData<'_>, v2: bool) {
        let (Some(pid), Some(start), Some(len)) = (raw.u32_at(8), raw.u64_at(16), raw.u64_at(24))
        else {
            return;
        };
        let name_at = if v2 {
            8 + 8 + 24 + 8 + 16 + 8
        } else {
            8 + 8 + 24
        };
        let mut scratch = Vec::new();
        let bytes = raw.contiguous(&mut scratch);
        let name = bytes.get(name_at..).unwrap_or_default();
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        let name = String::from_utf8_lossy(name).into_owned();
        if pid == u32::MAX {
            return; // the kernel map: kernel addresses are recognized by range
        }
        let maps = self.maps.entry(pid).or_default();
        let end = start.saturating_add(len);
        // A new mapping replaces whatever overlapped it (munmap/mmap over an old range).
        let overlapping: Vec<u64> = maps
            .range(..end)
            .filter(|(_, m)| m.end > start)
            .map(|(&s, _)| s)
            .collect();
        for s in overlapping {
            maps.remove(&s);
        }
        maps.insert(start, Mapping { end, name });
    }

    fn sample(&mut self, raw: &RawData<'_>) {
        let st = self.sample_type;
        let mut at = 8;
        let mut ip = None;
        let mut pid = None;
        if st & abi::PERF_SAMPLE_IDENTIFIER != 0 {
            at += 8;
        }
        if st & abi::PERF_SAMPLE_IP != 0 {
            ip = raw.u64_at(at);
            at += 8;
        }
        if st & abi::PERF_SAMPLE_TID != 0 {
            pid = raw.u32_at(at);
            at += 8;
        }
        for bit in [
            abi::PERF_SAMPLE_TIME,
            abi::PERF_SAMPLE_ADDR,
            abi::PERF_SAMPLE_ID,
        ] {
            if st & bit != 0 {
                at += 8;
            }
        }
        for bit in [
            abi::PERF_SAMPLE_STREAM_ID,
            abi::PERF_SAMPLE_CPU,
            abi::PERF_SAMPLE_PERIOD,
        ] {
            if st & bit != 0 {
                at += 8;
            }
        }
        let Some(pid) = pid else { return };
        if let Some(ip) = ip {
            self.mark(pid, ip);
        }
        if st & abi::PERF_SAMPLE_CALLCHAIN != 0 {
            let nr = raw.u64_at(at).unwrap_or(0).min(1024) as usize;
            for i in 0..nr {
                match raw.u64_at(at + 8 + i * 8) {
                    Some(addr) if addr < abi::PERF_CONTEXT_MAX => self.mark(pid, addr),
                    Some(_) => {}
                    None => break,
                }
            }
        }
    }

    fn mark(&mut self, pid: u32, addr: u64) {
        if addr >= KERNEL_START {
            self.kernel_hit = true;
            return;
        }
        let Some(maps) = self.maps.get(&pid) else {
            return;
        };
        if let Some((_, m)) = maps.range(..=addr).next_back() {
            if addr < m.end && !self.hits.contains(&m.name) {
                self.hits.insert(m.name.clone());
            }
        }
    }

    /// Files (absolute paths) with samples, sorted.
    pub fn user_hits(&self) -> impl Iterator<Item = &str> {
        self.hits
            .iter()
            .map(String::as_str)
            .filter(|n| n.starts_with('/'))
    }

    /// Whether any sample hit the vDSO (`[vdso]`).
    pub fn vdso_hit(&self) -> bool {
        self.hits.contains(VDSO)
    }

    /// Whether any sample hit the kernel.
    pub fn kernel_hit(&self) -> bool {
        self.kernel_hit
    }
}

/// The GNU build-id of an ELF file, if it has one and is readable.
pub fn elf_build_id(path: &std::path::Path) -> Option<Vec<u8>> {
    use object::Object;
    // Read, not mapped: mapping is unsafe (the file could change under us) and only hit DSOs are read, once.
    let bytes = std::fs::read(path).ok()?;
    let obj = object::File::parse(&*bytes).ok()?;
    obj.build_id().ok().flatten().map(<[u8]>::to_vec)
}

/// The build-id of the vDSO, which the kernel maps into every process, read from this process's own copy
/// through /proc/self/mem (perf does the same: the workload's vDSO is the recorder's).
pub fn vdso_build_id() -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with(VDSO))?;
    let (start, end) = line.split_whitespace().next()?.split_once('-')?;
    let (start, end) = (
        u64::from_str_radix(start, 16).ok()?,
        u64::from_str_radix(end, 16).ok()?,
    );
    let mut mem = std::fs::File::open("/proc/self/mem").ok()?;
    mem.seek(SeekFrom::Start(start)).ok()?;
    let mut image = vec![0u8; usize::try_from(end.checked_sub(start)?).ok()?];
    mem.read_exact(&mut image).ok()?;
    use object::Object;
    let obj = object::File::parse(&*image).ok()?;
    obj.build_id().ok().flatten().map(<[u8]>::to_vec)
}

#[cfg(test)]
mod tests {
    use super::super::synth::{parse_maps, Framing};
    use super::*;

    #[test]
    fn samples_mark_the_dsos_their_ip_and_callchain_hit() {
        let st = abi::PERF_SAMPLE_IP
            | abi::PERF_SAMPLE_TID
            | abi::PERF_SAMPLE_TIME
            | abi::PERF_SAMPLE_CPU
            | abi::PERF_SAMPLE_PERIOD
            | abi::PERF_SAMPLE_CALLCHAIN;
        let framing = Framing {
            sample_type: st,
            sample_id_all: true,
            mmap2: true,
            mmap_data: false,
            id: 0,
        };
        let mut t = DsoTracker::new(st);
        let maps = parse_maps(
            "400000-401000 r-xp 00000000 fd:01 7 /bin/app\n7f0000000000-7f0000100000 r-xp 0 fd:01 8 /lib/libc.so\n\
             7f0000200000-7f0000300000 r-xp 0 fd:01 9 /lib/unused.so\n",
        );
        for m in &maps {
            t.observe(&RawData::Single(&framing.mmap(
                42,
                42,
                m,
                abi::PERF_RECORD_MISC_USER,
            )));
        }
        // A sample: ip in /bin/app, callchain [PERF_CONTEXT_USER, libc addr].
        let mut s = Vec::new();
        s.extend_from_slice(&9u32.to_ne_bytes());
        s.extend_from_slice(&[0, 0, 0, 0]);
        for v in [
            0x400010u64,
            (42u64 << 32) | 42,
            1,
            0,
            1,
            2,
            (-512i64) as u64,
            0x7f0000000100,
        ] {
            s.extend_from_slice(&v.to_ne_bytes());
        }
        let len = s.len() as u16;
        s[6..8].copy_from_slice(&len.to_ne_bytes());
        t.observe(&RawData::Single(&s));
        assert_eq!(
            t.user_hits().collect::<Vec<_>>(),
            ["/bin/app", "/lib/libc.so"]
        );
        assert!(!t.vdso_hit());
        // A sample in the vDSO marks it (its build-id then comes from our own mapping).
        let vdso = parse_maps("7ffd3c1f2000-7ffd3c1f4000 r-xp 00000000 00:00 0 [vdso]\n").remove(0);
        t.observe(&RawData::Single(&framing.mmap(
            42,
            42,
            &vdso,
            abi::PERF_RECORD_MISC_USER,
        )));
        s[8..16].copy_from_slice(&0x7ffd3c1f2100u64.to_ne_bytes());
        t.observe(&RawData::Single(&s));
        assert!(t.vdso_hit());
        assert!(!t.kernel_hit());
    }

    #[test]
    fn the_vdso_build_id_is_read_from_our_own_mapping() {
        // x86-64 kernels build the vDSO with a GNU build-id note.
        assert_eq!(vdso_build_id().map(|b| b.len()), Some(20));
    }

    #[test]
    fn this_test_binary_has_a_build_id() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        assert_eq!(elf_build_id(&exe).map(|b| b.len()), Some(20));
    }
}
