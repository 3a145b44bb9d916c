//! Header feature sections (tools/perf/util/header.c `write_*`/`process_*`): parsed and written by the same
//! module. In file mode they follow the data section, one `perf_file_section` per set bit; in pipe mode each
//! arrives as a `PERF_RECORD_HEADER_FEATURE` record (`u64 feat_id` + the same payload).

use super::attr::PerfEventAttr;
use super::cursor::{align8, u64s, Cursor};
use super::ReadError;
use crate::perf::abi::*;
use object::endian::Endian;

/// perf pads header strings to this alignment (`NAME_ALIGN`).
const NAME_ALIGN: u64 = 64;

/// The feature sections bport understands, plus the raw bytes of any others.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// BUILD_ID: build-ids of the DSOs (with samples) and the kernel.
    pub build_ids: Vec<BuildIdEntry>,
    /// HOSTNAME.
    pub hostname: Option<String>,
    /// OSRELEASE (`uname -r` of the recording machine).
    pub osrelease: Option<String>,
    /// VERSION (the perf version that wrote the file).
    pub version: Option<String>,
    /// ARCH (`uname -m`).
    pub arch: Option<String>,
    /// NRCPUS.
    pub nrcpus: Option<NrCpus>,
    /// CPUDESC.
    pub cpudesc: Option<String>,
    /// CPUID.
    pub cpuid: Option<String>,
    /// TOTAL_MEM in kB.
    pub total_mem: Option<u64>,
    /// CMDLINE: the recording command line.
    pub cmdline: Option<Vec<String>>,
    /// EVENT_DESC: event names with their attrs and ids.
    pub event_desc: Option<Vec<EventDesc>>,
    /// GROUP_DESC: the event groups (`perf record -e '{a,b}'`), as recorded; which of them fit the file's
    /// attrs is the reader's question.
    pub group_desc: Option<Vec<GroupDesc>>,
    /// Sections bport does not parse, by feature id, in the file's byte order.
    pub other: Vec<(u32, Vec<u8>)>,
}

/// One build-id entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// `header.misc` (cpumode of the DSO: kernel or user, guest or host).
    pub misc: u16,
    /// Process id (-1 for the host kernel/all).
    pub pid: i32,
    /// The build-id bytes (usually 20).
    pub build_id: Vec<u8>,
    /// The DSO's path (`[kernel.kallsyms]` for the kernel).
    pub filename: String,
}

/// NRCPUS: CPUs available (present) and online.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NrCpus {
    /// `nr_cpus_available`.
    pub available: u32,
    /// `nr_cpus_online`.
    pub online: u32,
}

/// One EVENT_DESC entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventDesc {
    /// The event's attr.
    pub attr: PerfEventAttr,
    /// Its name (`cycles:u`, `cpu-clock`).
    pub name: String,
    /// Its ids.
    pub ids: Vec<u64>,
}

/// One GROUP_DESC entry (header.c `write_group_desc`: only leaders of more than one member are written).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupDesc {
    /// The group's name; perf writes `{anon_group}` for a group without one.
    pub name: String,
    /// The leader's attr index (`evsel->core.idx`).
    pub leader_idx: u32,
    /// Members, the leader included: attrs `leader_idx..leader_idx + nr_members`.
    pub nr_members: u32,
}

/// The features [`Features::write_section`] can produce, in id order.
pub const WRITABLE: [u32; 12] = [
    HEADER_BUILD_ID,
    HEADER_HOSTNAME,
    HEADER_OSRELEASE,
    HEADER_VERSION,
    HEADER_ARCH,
    HEADER_NRCPUS,
    HEADER_CPUDESC,
    HEADER_CPUID,
    HEADER_TOTAL_MEM,
    HEADER_CMDLINE,
    HEADER_EVENT_DESC,
    HEADER_GROUP_DESC,
];

fn read_string<E: Endian>(c: &mut Cursor<'_, E>) -> Result<String, ReadError> {
    let len = c.u32()?;
    let bytes = c.take(u64::from(len))?;
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    Ok(String::from_utf8_lossy(&bytes[..end]).into_owned())
}

fn write_string<E: Endian>(s: &str, endian: E, out: &mut Vec<u8>) {
    let len = (s.len() as u64 + 1).div_ceil(NAME_ALIGN) * NAME_ALIGN;
    out.extend_from_slice(&endian.write_u32(len as u32));
    let start = out.len();
    out.extend_from_slice(s.as_bytes());
    out.resize(start + len as usize, 0);
}

/// Parses one build-id entry (a BUILD_ID feature element or a pipe-mode HEADER_BUILD_ID record body), given its
/// header's misc and the body after the 8-byte header.
pub(crate) fn parse_build_id<E: Endian>(
    misc: u16,
    body: &[u8],
    offset: u64,
    endian: E,
) -> Result<BuildIdEntry, ReadError> {
    let mut c = Cursor::new(body, offset, endian, "build-id entry");
    let pid = c.u32()? as i32;
    let id = c.take(24)?;
    // Before MISC_BUILD_ID_SIZE every build-id was a 20-byte SHA-1.
    let n = if misc & PERF_RECORD_MISC_BUILD_ID_SIZE != 0 {
        usize::from(id[20]).min(20)
    } else {
        20
    };
    let name = c.c_str_in_rest();
    Ok(BuildIdEntry {
        misc: misc & !PERF_RECORD_MISC_BUILD_ID_SIZE,
        pid,
        build_id: id[..n].to_vec(),
        filename: String::from_utf8_lossy(name).into_owned(),
    })
}

/// Encodes a build-id entry as perf's `write_buildid` does (type 0 in file mode).
pub(crate) fn write_build_id<E: Endian>(b: &BuildIdEntry, ty: u32, endian: E, out: &mut Vec<u8>) {
    let name_len = (b.filename.len() as u64 + 1).div_ceil(NAME_ALIGN) * NAME_ALIGN;
    let size = 8 + 4 + 24 + name_len;
    out.extend_from_slice(&endian.write_u32(ty));
    out.extend_from_slice(&endian.write_u16(b.misc | PERF_RECORD_MISC_BUILD_ID_SIZE));
    out.extend_from_slice(&endian.write_u16(size as u16));
    out.extend_from_slice(&endian.write_u32(b.pid as u32));
    let mut id = [0u8; 24];
    let n = b.build_id.len().min(20);
    id[..n].copy_from_slice(&b.build_id[..n]);
    id[20] = n as u8;
    out.extend_from_slice(&id);
    let start = out.len();
    out.extend_from_slice(b.filename.as_bytes());
    out.resize(start + name_len as usize, 0);
}

impl Features {
    /// Parses feature `id` from its section bytes (at file offset `offset`) into `self`. Unknown ids are kept raw.
    pub(crate) fn parse_section<E: Endian>(
        &mut self,
        id: u32,
        data: &[u8],
        offset: u64,
        endian: E,
    ) -> Result<(), ReadError> {
        let mut c = Cursor::new(data, offset, endian, feature_what(id));
        match id {
            HEADER_BUILD_ID => {
                while c.remaining() > 0 {
                    let at = c.offset();
                    let _ty = c.u32()?;
                    let misc = c.u16()?;
                    let size = c.u16()?;
                    if size < 8 {
                        return Err(ReadError::invalid(
                            "build-id entry",
                            at,
                            format!("size {size} is below 8"),
                        ));
                    }
                    let body = c.take(u64::from(size) - 8)?;
                    self.build_ids
                        .push(parse_build_id(misc, body, at + 8, endian)?);
                }
            }
            HEADER_HOSTNAME => self.hostname = Some(read_string(&mut c)?),
            HEADER_OSRELEASE => self.osrelease = Some(read_string(&mut c)?),
            HEADER_VERSION => self.version = Some(read_string(&mut c)?),
            HEADER_ARCH => self.arch = Some(read_string(&mut c)?),
            HEADER_CPUDESC => self.cpudesc = Some(read_string(&mut c)?),
            HEADER_CPUID => self.cpuid = Some(read_string(&mut c)?),
            HEADER_NRCPUS => {
                self.nrcpus = Some(NrCpus {
                    available: c.u32()?,
                    online: c.u32()?,
                })
            }
            HEADER_TOTAL_MEM => self.total_mem = Some(c.u64()?),
            HEADER_CMDLINE => {
                let nr = c.u32()?;
                let mut v = Vec::new();
                for _ in 0..nr {
                    v.push(read_string(&mut c)?);
                }
                self.cmdline = Some(v);
            }
            HEADER_EVENT_DESC => {
                let nr = c.u32()?;
                let attr_size = c.u32()?;
                let mut v = Vec::new();
                for _ in 0..nr {
                    let at = c.offset();
                    let bytes = c.take(u64::from(attr_size))?;
                    let (attr, _) = PerfEventAttr::parse(bytes, at, endian)?;
                    let nr_ids = c.u32()?;
                    let name = read_string(&mut c)?;
                    let ids = c.u64s(u64::from(nr_ids))?;
                    let ids = u64s(ids, endian).collect();
                    v.push(EventDesc { attr, name, ids });
                }
                self.event_desc = Some(v);
            }
            HEADER_GROUP_DESC => {
                let nr = c.u32()?;
                let mut v = Vec::new();
                for _ in 0..nr {
                    v.push(GroupDesc {
                        name: read_string(&mut c)?,
                        leader_idx: c.u32()?,
                        nr_members: c.u32()?,
                    });
                }
                self.group_desc = Some(v);
            }
            _ => self.other.push((id, data.to_vec())),
        }
        Ok(())
    }

    /// Encodes feature `id` if `self` has it (`None` otherwise); `other` sections are written as given.
    pub fn write_section<E: Endian>(&self, id: u32, endian: E) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let string = |s: &Option<String>, out: &mut Vec<u8>| -> Option<()> {
            write_string(s.as_deref()?, endian, out);
            Some(())
        };
        match id {
            HEADER_BUILD_ID => {
                if self.build_ids.is_empty() {
                    return None;
                }
                for b in &self.build_ids {
                    write_build_id(b, 0, endian, &mut out);
                }
            }
            HEADER_HOSTNAME => string(&self.hostname, &mut out)?,
            HEADER_OSRELEASE => string(&self.osrelease, &mut out)?,
            HEADER_VERSION => string(&self.version, &mut out)?,
            HEADER_ARCH => string(&self.arch, &mut out)?,
            HEADER_CPUDESC => string(&self.cpudesc, &mut out)?,
            HEADER_CPUID => string(&self.cpuid, &mut out)?,
            HEADER_NRCPUS => {
                let n = self.nrcpus?;
                out.extend_from_slice(&endian.write_u32(n.available));
                out.extend_from_slice(&endian.write_u32(n.online));
            }
            HEADER_TOTAL_MEM => out.extend_from_slice(&endian.write_u64(self.total_mem?)),
            HEADER_CMDLINE => {
                let v = self.cmdline.as_ref()?;
                out.extend_from_slice(&endian.write_u32(v.len() as u32));
                for s in v {
                    write_string(s, endian, &mut out);
                }
            }
            HEADER_EVENT_DESC => {
                let v = self.event_desc.as_ref()?;
                let attr_size = v
                    .iter()
                    .map(|e| align8(u64::from(e.attr.size.max(e.attr.min_size()))) as u32)
                    .max()
                    .unwrap_or(PERF_ATTR_SIZE_VER0)
                    .clamp(PERF_ATTR_SIZE_VER0, PERF_ATTR_SIZE_NEWEST);
                out.extend_from_slice(&endian.write_u32(v.len() as u32));
                out.extend_from_slice(&endian.write_u32(attr_size));
                for e in v {
                    e.attr.write(attr_size, endian, &mut out);
                    out.extend_from_slice(&endian.write_u32(e.ids.len() as u32));
                    write_string(&e.name, endian, &mut out);
                    for id in &e.ids {
                        out.extend_from_slice(&endian.write_u64(*id));
                    }
                }
            }
            HEADER_GROUP_DESC => {
                let v = self.group_desc.as_ref()?;
                out.extend_from_slice(&endian.write_u32(v.len() as u32));
                for g in v {
                    write_string(&g.name, endian, &mut out);
                    out.extend_from_slice(&endian.write_u32(g.leader_idx));
                    out.extend_from_slice(&endian.write_u32(g.nr_members));
                }
            }
            _ => {
                let (_, data) = self.other.iter().find(|(i, _)| *i == id)?;
                out.extend_from_slice(data);
            }
        }
        Some(out)
    }

    /// Ids of every feature `self` has, ascending.
    pub fn ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = WRITABLE
            .iter()
            .copied()
            .filter(|&id| {
                self.write_section(id, object::endian::LittleEndian)
                    .is_some()
            })
            .chain(self.other.iter().map(|(i, _)| *i))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

impl Features {
    /// The machine-description features perf writes, read from this host the way perf reads them
    /// (header.c `write_*`): HOSTNAME, OSRELEASE, ARCH, NRCPUS, CPUDESC, CPUID (x86: `vendor,family,model,stepping`),
    /// TOTAL_MEM, and CMDLINE from `cmdline`. VERSION, BUILD_ID and EVENT_DESC are the caller's. Facts that cannot
    /// be read are left out.
    pub fn describe_host(cmdline: Vec<String>) -> Self {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .map(|s| s.trim().to_string())
        };
        let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.split_whitespace().collect::<Vec<_>>().join(" "))
            })
        };
        let cpuid = match (
            field("vendor_id"),
            field("cpu family"),
            field("model"),
            field("stepping"),
        ) {
            (Some(v), Some(f), Some(m), Some(s)) => Some(format!("{v},{f},{m},{s}")),
            _ => None,
        };
        let nrcpus = match (
            read("/sys/devices/system/cpu/present").and_then(|s| max_cpu(&s)),
            read("/sys/devices/system/cpu/online").and_then(|s| count_cpus(&s)),
        ) {
            (Some(max), Some(online)) => Some(NrCpus {
                available: max + 1,
                online,
            }),
            _ => None,
        };
        let total_mem = read("/proc/meminfo").and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        });
        Features {
            hostname: read("/proc/sys/kernel/hostname"),
            osrelease: read("/proc/sys/kernel/osrelease"),
            arch: Some(std::env::consts::ARCH.to_string()),
            nrcpus,
            cpudesc: field("model name"),
            cpuid,
            total_mem,
            cmdline: Some(cmdline),
            ..Default::default()
        }
    }
}

/// CPUs in a sysfs list like `0-3,8,10-11`.
fn cpu_ranges(list: &str) -> Option<Vec<(u32, u32)>> {
    list.trim()
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => p.parse().ok().map(|a| (a, a)),
        })
        .collect()
}

fn max_cpu(list: &str) -> Option<u32> {
    cpu_ranges(list)?.into_iter().map(|(_, b)| b).max()
}

fn count_cpus(list: &str) -> Option<u32> {
    Some(
        cpu_ranges(list)?
            .into_iter()
            .map(|(a, b)| b.saturating_sub(a) + 1)
            .sum(),
    )
}

fn feature_what(id: u32) -> &'static str {
    match id {
        HEADER_BUILD_ID => "BUILD_ID feature",
        HEADER_EVENT_DESC => "EVENT_DESC feature",
        HEADER_CMDLINE => "CMDLINE feature",
        HEADER_NRCPUS => "NRCPUS feature",
        HEADER_TOTAL_MEM => "TOTAL_MEM feature",
        HEADER_GROUP_DESC => "GROUP_DESC feature",
        _ => "feature section",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(max_cpu("0-3,8,10-11\n"), Some(11));
        assert_eq!(count_cpus("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpus("0"), Some(1));
        assert_eq!(count_cpus("x"), None);
    }

    /// The layout perf 6.1 writes for `-e '{cpu-clock,task-clock}' -e 'faults/{page-faults,minor-faults}'`
    /// (header.c `write_group_desc`: a count, then per group its NAME_ALIGN-padded name, leader index and
    /// member count), read, written back byte for byte in both byte orders, and a cut section refused.
    #[test]
    fn group_desc_reads_and_writes_perfs_layout() {
        use object::endian::{BigEndian, LittleEndian};
        let groups = vec![
            GroupDesc {
                name: "{anon_group}".into(),
                leader_idx: 0,
                nr_members: 2,
            },
            GroupDesc {
                name: "faults".into(),
                leader_idx: 2,
                nr_members: 2,
            },
        ];
        let mut perf = 2u32.to_le_bytes().to_vec();
        for (name, leader) in [("{anon_group}", 0u32), ("faults", 2)] {
            perf.extend_from_slice(&64u32.to_le_bytes());
            let mut padded = name.as_bytes().to_vec();
            padded.resize(64, 0);
            perf.extend_from_slice(&padded);
            perf.extend_from_slice(&leader.to_le_bytes());
            perf.extend_from_slice(&2u32.to_le_bytes());
        }
        let mut f = Features::default();
        f.parse_section(HEADER_GROUP_DESC, &perf, 0x100, LittleEndian)
            .unwrap();
        assert_eq!(f.group_desc.as_ref(), Some(&groups));
        assert!(f.other.is_empty());
        assert_eq!(
            f.write_section(HEADER_GROUP_DESC, LittleEndian),
            Some(perf.clone())
        );
        assert!(f.ids().contains(&HEADER_GROUP_DESC));
        let big = f.write_section(HEADER_GROUP_DESC, BigEndian).unwrap();
        let mut g = Features::default();
        g.parse_section(HEADER_GROUP_DESC, &big, 0, BigEndian)
            .unwrap();
        assert_eq!(g.group_desc, Some(groups));
        let cut =
            Features::default().parse_section(HEADER_GROUP_DESC, &perf[..100], 0x100, LittleEndian);
        let msg = cut.unwrap_err().to_string();
        assert!(msg.contains("GROUP_DESC"), "{msg}");
    }
}
