//! Threads, comms and memory maps of the profiled machine, rebuilt from COMM/FORK/EXIT/MMAP/MMAP2 records, so a
//! sample's addresses resolve to the file that was mapped there at that time.
//!
//! Follows perf's `machine__process_*_event` (tools/perf/util/machine.c, thread.c, maps.c): a forked process
//! starts with a copy of its parent's maps (threads of one process share them); a new map replaces whatever it
//! overlaps (`maps__fixup_overlappings`); an unknown thread's comm is `:TID`; kernel maps (pid −1, or records
//! with kernel cpumode) are shared by every process.

use std::collections::HashMap;
use std::rc::Rc;

/// What backs a map, which decides how its addresses are printed and symbolized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapKind {
    /// A file (executable or library) or a pseudo-file like `[vdso]`.
    File,
    /// Anonymous executable memory (JIT code): symbols from `/tmp/perf-PID.map`, addresses used as they are.
    Anon,
    /// The kernel image (`[kernel.kallsyms]`) or a module.
    Kernel,
    /// Memory that is no file (perf's `is_no_dso_memory`: `[stack…`, `[heap]`, `/SYSV…`): no symbols, addresses
    /// printed as they are (perf's identity `map_ip`), under the map's own name.
    NoDso,
}

/// One mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Map {
    /// First avma.
    pub start: u64,
    /// One past the last avma.
    pub end: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// The DSO's name as perf prints it: the path, `[kernel.kallsyms]`, `[vdso]`, `/tmp/perf-PID.map`.
    pub dso: Rc<str>,
    /// The build-id an MMAP2 record carried (kernel 5.12+ `PERF_RECORD_MISC_MMAP_BUILD_ID`).
    pub build_id: Option<Vec<u8>>,
    /// How the map is symbolized.
    pub kind: MapKind,
    /// Unique per MMAP record (kept by the pieces of a split map): a stable cache key for per-map facts.
    pub id: u64,
}

impl Map {
    /// perf's `map__map_ip`: the address as printed for callchain entries and used against symbols of
    /// relocatable files; the identity for the kernel and anonymous memory.
    pub fn map_ip(&self, avma: u64) -> u64 {
        match self.kind {
            MapKind::File => avma.wrapping_sub(self.start).wrapping_add(self.pgoff),
            MapKind::Anon | MapKind::Kernel | MapKind::NoDso => avma,
        }
    }
}

/// A sorted, non-overlapping set of maps.
#[derive(Clone, Debug, Default)]
pub struct Maps {
    maps: Vec<Rc<Map>>,
}

impl Maps {
    /// The maps in address order.
    pub fn iter(&self) -> impl Iterator<Item = &Rc<Map>> {
        self.maps.iter()
    }

    /// Inserts `map`, trimming or removing the maps it overlaps.
    pub fn insert(&mut self, map: Map) {
        let mut out = Vec::with_capacity(self.maps.len() + 2);
        for m in self.maps.drain(..) {
            if m.end <= map.start || m.start >= map.end {
                out.push(m);
                continue;
            }
            if m.start < map.start {
                let mut left = (*m).clone();
                left.end = map.start;
                out.push(Rc::new(left));
            }
            if m.end > map.end {
                let mut right = (*m).clone();
                right.pgoff = m.pgoff.wrapping_add(map.end - m.start);
                right.start = map.end;
                out.push(Rc::new(right));
            }
        }
        out.push(Rc::new(map));
        out.sort_by_key(|m| m.start);
        self.maps = out;
    }

    /// The map containing `avma`.
    pub fn find(&self, avma: u64) -> Option<&Rc<Map>> {
        let pos = self.maps.partition_point(|m| m.start <= avma);
        let m = self.maps.get(pos.checked_sub(1)?)?;
        (avma < m.end).then_some(m)
    }
}

/// A hasher for the integer keys of the per-sample maps (pids, tids, map ids): SipHash's flood resistance buys
/// nothing for keys from our own file and cost ~5% of `bport script` in profiles. Multiplicative (Fx-style).
#[derive(Clone, Copy, Debug, Default)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_i32(&mut self, v: i32) {
        self.write_u64(u64::from(v as u32));
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

/// A `HashMap` keyed by ids, hashed with [`IdHasher`].
pub type IdMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

#[derive(Clone, Debug)]
struct Thread {
    pid: i32,
    comm: Option<Rc<str>>,
}

/// The machine state at the current point of the record stream.
#[derive(Debug, Default)]
pub struct Machine {
    threads: IdMap<i32, Thread>,
    processes: IdMap<i32, Maps>,
    /// The kernel image and modules.
    pub kernel: Maps,
    next_map_id: u64,
    /// Changes whenever any process's maps may have changed (MMAP, FORK): lets per-sample caches of map
    /// lookups skip revalidation.
    generation: u64,
    /// Kernel-side paths of the file's build-id table. perf makes a DSO named by the full path for each
    /// (`__event_process_build_id`), and a module map over such a path then prints that path, not `[name]`.
    pub kernel_build_id_paths: std::collections::HashSet<String>,
}

impl Machine {
    /// A machine that knows only the idle thread, which perf names `swapper` (machine__init).
    pub fn new() -> Self {
        let mut m = Self::default();
        m.comm(0, 0, "swapper");
        m
    }

    /// COMM: names a thread (also on exec, where perf keeps the maps; new mmaps replace the old ones).
    pub fn comm(&mut self, pid: i32, tid: i32, comm: &str) {
        let t = self
            .threads
            .entry(tid)
            .or_insert(Thread { pid, comm: None });
        t.pid = pid;
        t.comm = Some(Rc::from(comm));
    }

    /// FORK: a new thread, or a new process with a copy of its parent's maps.
    pub fn fork(&mut self, pid: i32, ppid: i32, tid: i32, ptid: i32) {
        let parent_comm = self
            .threads
            .get(&ptid)
            .or_else(|| self.threads.get(&ppid))
            .and_then(|t| t.comm.clone());
        self.threads.insert(
            tid,
            Thread {
                pid,
                comm: parent_comm,
            },
        );
        if pid != ppid {
            let maps = self.processes.get(&ppid).cloned().unwrap_or_default();
            self.processes.insert(pid, maps);
            self.generation += 1;
        }
    }

    /// EXIT: nothing to drop, since samples may still arrive for the thread after its exit record in time order;
    /// perf keeps dead threads too.
    pub fn exit(&mut self, _pid: i32, _tid: i32) {}

    /// MMAP/MMAP2 of a process (`pid` −1 or `kernel` true: a kernel map).
    #[allow(clippy::too_many_arguments)]
    pub fn mmap(
        &mut self,
        pid: i32,
        start: u64,
        len: u64,
        pgoff: u64,
        filename: &str,
        build_id: Option<Vec<u8>>,
        kernel: bool,
    ) {
        let end = start.saturating_add(len);
        self.next_map_id += 1;
        self.generation += 1;
        let id = self.next_map_id;
        if kernel || pid == -1 {
            // The build-id table naming a module's path makes perf print the path, not `[name]`.
            let dso: Rc<str> = if self.kernel_build_id_paths.contains(filename)
                && !filename.starts_with("[kernel.kallsyms]")
                && !filename.starts_with("[guest.kernel")
            {
                Rc::from(filename)
            } else {
                Rc::from(dso_name(filename, true, pid))
            };
            // perf stretches the kernel image's map over all kernel text (.init.text, freed init code lie past
            // the `_text` mapping's length); modules mapped later cut their own ranges out of it.
            let end = if &*dso == "[kernel.kallsyms]" {
                u64::MAX
            } else {
                end
            };
            self.kernel.insert(Map {
                start,
                end,
                pgoff,
                dso,
                build_id,
                kind: MapKind::Kernel,
                id,
            });
            return;
        }
        let anon = filename == "//anon"
            || filename.starts_with("/dev/zero")
            || filename.starts_with("/anon_hugepage")
            || filename.starts_with("[anon");
        let kind = if anon || filename.starts_with("/tmp/perf-") {
            MapKind::Anon
        } else if filename.starts_with("[stack")
            || filename == "[heap]"
            || filename.starts_with("/SYSV")
        {
            MapKind::NoDso
        } else {
            MapKind::File
        };
        let dso: Rc<str> = Rc::from(dso_name(filename, false, pid));
        // map.c `map__new` zeroes a vDSO map's pgoff: kernels of the 3.x era recorded its address there
        // (`[0x7fff7e2b4000(0x2000) @ 0x7fff7e2b4000]`), which would put its addresses 0x7fff... past the start.
        let pgoff = if filename == "[vdso]" { 0 } else { pgoff };
        self.processes.entry(pid).or_default().insert(Map {
            start,
            end,
            pgoff,
            dso,
            build_id,
            kind,
            id,
        });
    }

    /// A number that changes whenever some map may have changed since it was last read.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The comm perf prints for a thread: its COMM, else `:TID`.
    pub fn comm_of(&self, tid: i32) -> Rc<str> {
        self.threads
            .get(&tid)
            .and_then(|t| t.comm.clone())
            .unwrap_or_else(|| Rc::from(format!(":{tid}")))
    }

    /// The user map of process `pid` at `avma`.
    pub fn user_map(&self, pid: i32, avma: u64) -> Option<&Rc<Map>> {
        self.processes.get(&pid)?.find(avma)
    }

    /// The user maps of process `pid`, for many lookups in one process.
    pub fn user_maps(&self, pid: i32) -> Option<&Maps> {
        self.processes.get(&pid)
    }

    /// The kernel map at `avma`.
    pub fn kernel_map(&self, avma: u64) -> Option<&Rc<Map>> {
        self.kernel.find(avma)
    }
}

/// perf's short name of a kernel module (`kmod_path__parse_name`): `/lib/…/ath9k-hw.ko.xz` → `[ath9k_hw]`.
pub fn module_short_name(path: &str) -> String {
    let base = path.rsplit('/').next().unwrap_or(path);
    let stem = base.split('.').next().unwrap_or(base).replace('-', "_");
    format!("[{stem}]")
}

/// The DSO name perf gives the file an MMAP record maps (`kernel`: a kernel-mode record, or pid -1): the kernel
/// image is `[kernel.kallsyms]` whatever the record says (`…_text`, `…_stext`), a module `[name]` from its
/// path, anonymous and JIT memory `/tmp/perf-PID.map`, a file its path. `buildid-list` names DSOs by it too.
pub fn dso_name(filename: &str, kernel: bool, pid: i32) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    if kernel || pid == -1 {
        if filename.starts_with("[kernel.kallsyms]") || filename.starts_with("[guest.kernel") {
            return Cow::Borrowed("[kernel.kallsyms]");
        }
        return Cow::Owned(module_short_name(filename));
    }
    let anon = filename == "//anon"
        || filename.starts_with("/dev/zero")
        || filename.starts_with("/anon_hugepage")
        || filename.starts_with("[anon")
        || filename.starts_with("/tmp/perf-");
    if anon {
        Cow::Owned(format!("/tmp/perf-{pid}.map"))
    } else {
        Cow::Borrowed(filename)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_and_heap_print_their_addresses_as_they_are() {
        // perf's is_no_dso_memory maps use the identity map_ip: a DWARF chain that steps onto a stack address
        // printed `7fffffffd30f [unknown] ([stack])` (start − pgoff applied) where perf prints the address itself.
        let mut m = Machine::new();
        m.mmap(
            7,
            0x7fff_cec1_e000,
            0x21000,
            0x7fff_fffd_e000,
            "[stack]",
            None,
            false,
        );
        m.mmap(7, 0x5600_0000_0000, 0x21000, 0, "[heap]", None, false);
        let stack = m.user_map(7, 0x7fff_cec3_d30f).unwrap();
        assert!(stack.kind == MapKind::NoDso && &*stack.dso == "[stack]");
        assert_eq!(stack.map_ip(0x7fff_cec3_d30f), 0x7fff_cec3_d30f);
        let heap = m.user_map(7, 0x5600_0000_0010).unwrap();
        assert_eq!(heap.map_ip(0x5600_0000_0010), 0x5600_0000_0010);
    }

    #[test]
    fn maps_replace_overlaps_and_forks_copy() {
        let mut m = Machine::new();
        m.comm(10, 10, "sh");
        m.mmap(10, 0x1000, 0x3000, 0, "/bin/sh", None, false);
        m.mmap(10, 0x2000, 0x1000, 0x5000, "/lib/x.so", None, false);
        let name =
            |m: &Machine, pid, a| m.user_map(pid, a).map(|x| (x.dso.to_string(), x.map_ip(a)));
        assert_eq!(name(&m, 10, 0x1800), Some(("/bin/sh".into(), 0x800)));
        assert_eq!(name(&m, 10, 0x2800), Some(("/lib/x.so".into(), 0x5800)));
        assert_eq!(name(&m, 10, 0x3800), Some(("/bin/sh".into(), 0x2800)));
        m.fork(11, 10, 11, 10);
        assert_eq!(&*m.comm_of(11), "sh");
        assert_eq!(name(&m, 11, 0x2800), Some(("/lib/x.so".into(), 0x5800)));
        m.comm(11, 11, "ls");
        m.mmap(11, 0x1000, 0x3000, 0, "/bin/ls", None, false);
        assert_eq!(name(&m, 11, 0x2800), Some(("/bin/ls".into(), 0x1800)));
        assert_eq!(name(&m, 10, 0x2800), Some(("/lib/x.so".into(), 0x5800)));
        assert_eq!(&*m.comm_of(99), ":99");
        m.mmap(12, 0x7000, 0x1000, 0, "//anon", None, false);
        assert_eq!(
            name(&m, 12, 0x7010),
            Some(("/tmp/perf-12.map".into(), 0x7010))
        );
        m.mmap(
            -1,
            0xffff_0000,
            0x1000,
            0xffff_0000,
            "[kernel.kallsyms]_text",
            None,
            true,
        );
        assert_eq!(
            m.kernel_map(0xffff_0010).map(|x| x.dso.to_string()),
            Some("[kernel.kallsyms]".into())
        );
    }
}
