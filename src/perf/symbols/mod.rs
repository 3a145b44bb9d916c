//! Symbolization over ELF files (object), separate debug files, the build-id cache, kallsyms and JIT perf maps;
//! pure over a file lookup.
//!
//! Owns: finding the right file for a DSO (build-id checked), its symbols, demangling, the kernel's symbols, and
//! the per-DSO caches of what it reads (each DSO is loaded once per run; inline frames parsed on first use). Does
//! not own: which DSO is mapped where in a process (`perf::script`'s thread maps) or unwinding and its tables
//! (`perf::unwind`; `perf::script` builds a DSO's tables from [`Dso::runtime_image`] and [`Dso::debug_image`]
//! when a DWARF sample first needs them).
//!
//! Every file is read through a [`FileLookup`] (samply-symbols' sans-IO design), so tests feed bytes and check
//! build-id mismatches without touching `~/.debug`. [`FsLookup`] is the real file system.
//!
//! Search order for a DSO follows perf's `dso__load` (tools/perf/util/symbol.c, `binary_type_symtab`): the
//! build-id cache (`~/.debug/.build-id/xx/yyyy…/elf`), `/usr/lib/debug/.build-id/xx/yyyy….debug`, the path itself
//! (under `--symfs`), then `.gnu_debuglink` targets. A candidate whose build-id differs from the one recorded in
//! the perf.data file is rejected (perf's "build id mismatch"); the first with a `.symtab` gives the symbols,
//! else the first with a `.dynsym`.

pub mod demangle;
pub mod elf;
pub(crate) mod inline;
pub mod kallsyms;
pub(crate) mod open;
pub(crate) mod perfmap;
mod rbtree;

use elf::ElfInfo;
use kallsyms::Kallsyms;
pub use open::Unread;
use perfmap::PerfMap;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

/// The candidate standing for the running kernel's vDSO image ([`FileLookup::running_vdso`]).
const RUNNING_VDSO: &str = "(running vdso)";

/// Bytes of a file: a map or an owned buffer.
pub type FileBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Reads files by path. Implementations must not fail loudly: a missing file is `None`.
pub trait FileLookup {
    /// The bytes of the file at `path`, or `None` when it does not exist or cannot be read. For files read on
    /// purpose (`/proc/kallsyms`, `/sys/kernel/notes`, JIT maps, `--kallsyms`).
    fn read(&self, path: &Path) -> Option<FileBytes>;

    /// The bytes of an object file whose name came from a recording (a DSO, a debug file, a build-id cache
    /// entry), or why it was not read: never a FIFO, a device or a file the kernel generates on read
    /// ([`open`] says why). The default is [`FileLookup::read`].
    fn read_object(&self, path: &Path) -> Result<FileBytes, Unread> {
        self.read(path).ok_or(Unread::Missing)
    }

    /// The first `max` bytes of the file at `path` (fewer when it is shorter), for generated files whose start
    /// is cheap and whose whole is not (`/proc/kallsyms`). The default reads the whole file.
    fn read_head(&self, path: &Path, max: usize) -> Option<Vec<u8>> {
        self.read(path).map(|b| {
            let b = (*b).as_ref();
            b[..b.len().min(max)].to_vec()
        })
    }

    /// A reader of `path` that can run on another thread, for a file worth reading in the background
    /// (`/proc/kallsyms`); `None` (the default) when the lookup has no such reader.
    fn background_reader(
        &self,
        _path: &Path,
    ) -> Option<Box<dyn FnOnce() -> Option<FileBytes> + Send + 'static>> {
        None
    }

    /// The image of the vDSO the running kernel maps into processes, or `None` (the default) when the
    /// lookup has none.
    fn running_vdso(&self) -> Option<FileBytes> {
        None
    }
}

/// The real file system, opened as [`open`] says: only regular files, without blocking; objects are mapped
/// (through [`crate::perf::data::map`], the one place that maps files), not read: reading copied every byte of
/// large DSOs and debug files, a sixth of `bport script` on fp recordings, while a run touches few of their pages.
/// Generated files read on purpose (procfs, sysfs) are read, up to [`open::MAX_GENERATED`].
#[derive(Clone, Copy, Debug, Default)]
pub struct FsLookup;

impl FileLookup for FsLookup {
    fn read_head(&self, path: &Path, max: usize) -> Option<Vec<u8>> {
        open::head(path, max)
    }

    fn read_object(&self, path: &Path) -> Result<FileBytes, Unread> {
        open::object(path)
    }

    fn background_reader(
        &self,
        path: &Path,
    ) -> Option<Box<dyn FnOnce() -> Option<FileBytes> + Send + 'static>> {
        let path = path.to_path_buf();
        Some(Box::new(move || FsLookup.read(&path)))
    }

    /// This process's own `[vdso]` mapping, read through `/proc/self/mem` (the kernel maps the same image
    /// into every process), as perf's `vdso__get_filename` copies its own into a temporary file.
    fn running_vdso(&self) -> Option<FileBytes> {
        use std::os::unix::fs::FileExt;
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        let range = maps
            .lines()
            .find(|l| l.ends_with("[vdso]"))?
            .split_whitespace()
            .next()?;
        let (start, end) = range.split_once('-')?;
        let start = u64::from_str_radix(start, 16).ok()?;
        let end = u64::from_str_radix(end, 16).ok()?;
        let mut image = vec![0u8; usize::try_from(end.checked_sub(start)?).ok()?];
        std::fs::File::open("/proc/self/mem")
            .ok()?
            .read_exact_at(&mut image, start)
            .ok()?;
        Some(Arc::new(image))
    }

    fn read(&self, path: &Path) -> Option<FileBytes> {
        open::any(path)
    }
}

/// A lookup over in-memory files, for tests and for callers that already hold the bytes.
#[derive(Clone, Default)]
pub struct MemLookup {
    files: HashMap<PathBuf, FileBytes>,
    unread: HashMap<PathBuf, Unread>,
}

impl MemLookup {
    /// An empty set of files.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file.
    pub fn insert(
        &mut self,
        path: impl Into<PathBuf>,
        bytes: impl AsRef<[u8]> + Send + Sync + 'static,
    ) {
        self.files.insert(path.into(), Arc::new(bytes));
    }

    /// Adds a path that is there but is no object file (a FIFO, a device, a generated file), as `why` says.
    pub fn insert_unreadable(&mut self, path: impl Into<PathBuf>, why: Unread) {
        self.unread.insert(path.into(), why);
    }
}

impl FileLookup for MemLookup {
    fn read(&self, path: &Path) -> Option<FileBytes> {
        self.files.get(path).cloned()
    }

    fn read_object(&self, path: &Path) -> Result<FileBytes, Unread> {
        match (self.files.get(path), self.unread.get(path)) {
            (Some(bytes), _) => Ok(bytes.clone()),
            (None, Some(why)) => Err(why.clone()),
            (None, None) => Err(Unread::Missing),
        }
    }
}

/// Options of a [`Symbolizer`].
#[derive(Clone, Debug)]
pub struct SymbolizerOptions {
    /// Demangle C++ and Rust names as perf does (perf's default; `--no-demangle` turns it off).
    pub demangle: bool,
    /// Prefix for every DSO path (perf's `--symfs`).
    pub symfs: Option<PathBuf>,
    /// The home directory whose `.debug` is the build-id cache (`None`: no cache).
    pub home: Option<PathBuf>,
    /// Directories of separate debug files (`/usr/lib/debug`).
    pub debug_dirs: Vec<PathBuf>,
    /// Use this kallsyms file for the kernel regardless of build-ids (perf's `--kallsyms`).
    pub kallsyms: Option<PathBuf>,
    /// Read `/proc/kallsyms` when the file's kernel build-id matches the running kernel (or is not recorded).
    pub running_kernel: bool,
}

impl Default for SymbolizerOptions {
    fn default() -> Self {
        SymbolizerOptions {
            demangle: true,
            symfs: None,
            home: std::env::var_os("HOME").map(PathBuf::from),
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            kallsyms: None,
            running_kernel: true,
        }
    }
}

/// Why a DSO could not be (fully) used. Not an error of the run: its frames print `[unknown]`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DsoProblem {
    /// No candidate file exists.
    NotFound,
    /// Files were found but none carried the build-id recorded in the perf.data file.
    BuildIdMismatch {
        /// The recorded build-id, hex.
        expected: String,
        /// The candidate that was rejected and its build-id (hex, empty when it had none).
        rejected: Vec<(PathBuf, String)>,
    },
    /// The file the recording names is not one a DSO can be: a FIFO, a device, a generated file. It was not
    /// opened (or not read); its samples print `[unknown]`, as perf's do.
    NotADso {
        /// The file.
        path: PathBuf,
        /// What it is.
        why: Unread,
    },
    /// A file was found but is not a readable ELF file.
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
}

impl std::fmt::Display for DsoProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DsoProblem::NotFound => write!(f, "no file found"),
            DsoProblem::BuildIdMismatch { expected, rejected } => {
                write!(f, "build id mismatch: the recording has {expected}")?;
                for (path, found) in rejected {
                    let found = if found.is_empty() { "none" } else { found };
                    write!(f, ", {} has {found}", path.display())?;
                }
                write!(f, " (the file changed since recording; unpack a `bport archive` of the recording machine into ~/.debug)")
            }
            DsoProblem::NotADso { path, why } => write!(f, "{} is {why}", path.display()),
            DsoProblem::Unreadable { path, message } => write!(f, "{}: {message}", path.display()),
        }
    }
}

/// One loaded DSO.
pub struct Dso {
    /// The path as recorded (the mmap's file name).
    pub path: String,
    /// The build-id recorded for it, or the one read from the file used.
    pub build_id: Option<Vec<u8>>,
    /// Symbols (and load segments) from the best file found; `None` when nothing usable was found.
    pub info: Option<ElfInfo>,
    /// The file the symbols came from.
    pub symbols_file: Option<PathBuf>,
    /// The file the runtime image was read from (what `archive` bundles).
    pub runtime_file: Option<PathBuf>,
    /// The runtime image (for load segments and `.eh_frame`); the debug file when no runtime image was found.
    runtime: Option<FileBytes>,
    /// A separate debug file (for `.debug_frame`).
    debug: Option<FileBytes>,
    /// Why the DSO is missing or incomplete.
    pub problem: Option<DsoProblem>,
    /// The file whose `.debug_info` answers inline-frame queries.
    dwarf_source: Option<FileBytes>,
    dwarf: OnceCell<Option<inline::InlineInfo>>,
}

impl std::fmt::Debug for Dso {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dso")
            .field("path", &self.path)
            .field("symbols_file", &self.symbols_file)
            .field("problem", &self.problem)
            .finish_non_exhaustive()
    }
}

/// A resolved symbol: its (demangled) name and the address's offset into it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolHit {
    /// The name as perf prints it.
    pub name: Rc<str>,
    /// Offset of the looked-up address from the symbol's start.
    pub offset: u64,
}

impl Dso {
    /// The symbol containing `svma`.
    pub fn symbolize(&self, svma: u64) -> Option<SymbolHit> {
        let info = self.info.as_ref()?;
        let sym = info.lookup(svma)?;
        Some(SymbolHit {
            name: info.symbol_name(sym),
            offset: svma - sym.start,
        })
    }

    /// `avma − svma` for a mapping of this DSO at `map_start` with file offset `pgoff` (the mmap record's
    /// fields): the address of the mapping's first byte, as the file's `PT_LOAD` segments place it.
    pub fn bias(&self, map_start: u64, pgoff: u64) -> Option<u64> {
        let svma = self.info.as_ref()?.mapping_start_svma(pgoff)?;
        Some(map_start.wrapping_sub(svma))
    }

    /// Whether inline-frame queries can be answered from DWARF debug information.
    pub fn has_dwarf(&self) -> bool {
        self.dwarf_source.is_some()
    }

    /// The function names GNU addr2line (`-f -i`) reports for `svma` from DWARF, innermost inlined function
    /// first, raw (not demangled); `None` without debug information for the address.
    pub fn inline_names(&self, svma: u64) -> Option<Vec<Option<String>>> {
        let info = self.info.as_ref();
        let symbol = |a: u64| {
            info.and_then(|i| i.addr2line_symbol(a))
                .map(|(n, s)| (n.into_owned(), s))
        };
        self.dwarf
            .get_or_init(|| {
                self.dwarf_source
                    .as_ref()
                    .and_then(|b| inline::InlineInfo::parse((**b).as_ref()))
            })
            .as_ref()?
            .names(svma, &symbol)
    }

    /// The runtime image (its `.eh_frame` unwinds), or the debug file when no runtime image was found.
    pub fn runtime_image(&self) -> Option<&[u8]> {
        self.runtime.as_deref().map(|b| b.as_ref())
    }

    /// A separate debug file, whose `.debug_frame` can add to the runtime image's CFI.
    pub fn debug_image(&self) -> Option<&[u8]> {
        self.debug.as_deref().map(|b| b.as_ref())
    }
}

/// What [`Symbolizer::scan`] found for one DSO.
#[derive(Default)]
struct Scan {
    /// Some candidate file existed.
    found_any: bool,
    rejected: Vec<(PathBuf, String)>,
    unreadable: Option<DsoProblem>,
    /// The first file with a `.symtab` (path, bytes), and those without one in search order, the first of
    /// which with symbols perf reads gives them when no file has a `.symtab`. Their symbols are read only
    /// once the file is chosen: every DSO with a separate debug file (libc) read its runtime image's `.dynsym`
    /// and then the debug file's `.symtab` twice, its PLT symbols coming from the runtime image.
    symtab: Option<(PathBuf, FileBytes)>,
    dynsym: Vec<(PathBuf, FileBytes)>,
    runtime: Option<FileBytes>,
    runtime_file: Option<PathBuf>,
    debug: Option<FileBytes>,
}

impl Scan {
    /// The DSO from what was found: the symbols file (`.symtab` over `.dynsym`), PLT symbols and load segments
    /// from the runtime image, the file GNU addr2line would read DWARF from, or why nothing was usable.
    fn into_dso(self, path: &str, build_id: Option<&[u8]>, demangle: bool) -> Dso {
        let Scan {
            found_any,
            rejected,
            unreadable,
            symtab,
            dynsym,
            runtime,
            runtime_file,
            debug,
        } = self;
        let parse = |(path, bytes): (PathBuf, FileBytes)| {
            // PLT symbols exist only in the runtime image: perf synthesizes them from it
            // (`dso__synthesize_plt_symbols(dso, runtime_ss)`) when the symbols come from another file.
            let plt_from = match (&runtime_file, &runtime) {
                (Some(rf), Some(rt)) if *rf != path => Some((**rt).as_ref()),
                _ => None,
            };
            let info = ElfInfo::parse_full(bytes.clone(), demangle, plt_from).ok()?;
            Some((path, info, bytes))
        };
        let chosen = match symtab {
            Some(found) => parse(found),
            None => dynsym
                .into_iter()
                .filter_map(parse)
                .find(|(_, info, _)| !info.symbols.is_empty()),
        };
        let problem = if chosen.is_some() {
            None
        } else if !rejected.is_empty() {
            Some(DsoProblem::BuildIdMismatch {
                expected: build_id.map(hex).unwrap_or_default(),
                rejected,
            })
        } else if let Some(p) = unreadable {
            Some(p)
        } else if found_any {
            None
        } else {
            Some(DsoProblem::NotFound)
        };
        let (symbols_file, mut info, symbols_bytes) = match chosen {
            Some((p, i, b)) => (Some(p), Some(i), Some(b)),
            None => (None, None, None),
        };
        if let Some(info) = &mut info {
            // Segments must come from the runtime image when the symbols came from a debug file whose program
            // headers were rewritten (they normally agree; the runtime image is authoritative).
            if let Some(segments) = runtime
                .as_ref()
                .and_then(|rt| elf::segments((**rt).as_ref()))
            {
                info.segments = segments;
            }
        }
        // Where GNU addr2line would find DWARF: the symbols file itself, else the separate debug file.
        let dwarf_source = match (&info, &symbols_bytes) {
            (Some(i), Some(b)) if i.has_debug_info => Some(b.clone()),
            _ => debug
                .clone()
                .filter(|d| elf::has_debug_info((**d).as_ref())),
        };
        Dso {
            path: path.to_owned(),
            build_id: build_id
                .map(<[u8]>::to_vec)
                .or_else(|| info.as_ref().and_then(|i| i.build_id.clone())),
            info,
            symbols_file,
            runtime_file,
            runtime: runtime.or_else(|| debug.clone()),
            debug,
            problem,
            dwarf_source,
            dwarf: OnceCell::new(),
        }
    }
}

/// The hex of `found` when it is not the `expected` build-id: such a file is rejected before its symbols are
/// read, as a rebuilt binary's table can be large and nothing of it is used.
fn other_build_id(expected: Option<&[u8]>, found: Option<&[u8]>) -> Option<String> {
    match (expected, found) {
        (Some(expected), Some(found)) => (found != expected).then(|| hex(found)),
        _ => None,
    }
}

/// Hex of a build-id, as perf prints it.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `xx/yyyy…` of a build-id, the cache's directory layout.
pub fn build_id_link(build_id: &[u8]) -> String {
    let h = hex(build_id);
    format!("{}/{}", &h[..2.min(h.len())], &h[2.min(h.len())..])
}

/// Per-run symbolizer with per-DSO caches.
pub struct Symbolizer<L: FileLookup> {
    lookup: L,
    options: SymbolizerOptions,
    dsos: HashMap<(String, Option<Vec<u8>>), Rc<Dso>>,
    /// The same DSOs in the order they were loaded, so a caller can look at the new ones only.
    load_order: Vec<Rc<Dso>>,
    kernel: Option<Rc<Kallsyms>>,
    /// The kernel's table being parsed in the background, for this build-id ([`Symbolizer::prefetch_kernel`]).
    kernel_pending: Option<(Option<Vec<u8>>, kallsyms::PendingKallsyms)>,
    perf_maps: HashMap<u32, Option<PerfMap>>,
}

impl<L: FileLookup> Symbolizer<L> {
    /// A symbolizer reading files through `lookup`.
    pub fn new(lookup: L, options: SymbolizerOptions) -> Self {
        Symbolizer {
            lookup,
            options,
            dsos: HashMap::new(),
            load_order: Vec::new(),
            kernel: None,
            kernel_pending: None,
            perf_maps: HashMap::new(),
        }
    }

    /// Reads a file through the symbolizer's lookup.
    pub fn read(&self, path: &Path) -> Option<FileBytes> {
        self.lookup.read(path)
    }

    /// Reads an object file (a DSO, a debug file) through the symbolizer's lookup: never a special file.
    pub fn read_object(&self, path: &Path) -> Result<FileBytes, Unread> {
        self.lookup.read_object(path)
    }

    /// The options in force.
    pub fn options(&self) -> &SymbolizerOptions {
        &self.options
    }

    /// Every DSO loaded so far, in load order.
    pub fn loaded(&self) -> &[Rc<Dso>] {
        &self.load_order
    }

    /// How many DSOs [`Symbolizer::loaded`] holds: a caller that saw the first `n` looks at `loaded()[n..]`.
    pub fn loaded_count(&self) -> usize {
        self.load_order.len()
    }

    fn with_symfs(&self, path: &Path) -> PathBuf {
        match &self.options.symfs {
            Some(root) => root.join(path.strip_prefix("/").unwrap_or(path)),
            None => path.to_path_buf(),
        }
    }

    /// Loads (once) the DSO recorded as `path` with `build_id` (from the file's BUILD_ID feature or an MMAP2
    /// record), and returns it. Never fails: a DSO that cannot be found has `info == None` and a `problem`.
    pub fn dso(&mut self, path: &str, build_id: Option<&[u8]>) -> Rc<Dso> {
        let key = (path.to_owned(), build_id.map(<[u8]>::to_vec));
        if let Some(d) = self.dsos.get(&key) {
            return d.clone();
        }
        let dso = Rc::new(self.load_dso(path, build_id));
        self.dsos.insert(key, dso.clone());
        self.load_order.push(dso.clone());
        dso
    }

    /// Loads one DSO in three phases: the candidate files in perf's search order ([`Symbolizer::candidates`]),
    /// reading them until one gives symbols and one the runtime image ([`Symbolizer::scan`]), and putting the
    /// pieces together ([`Scan::into_dso`]).
    fn load_dso(&self, path: &str, build_id: Option<&[u8]>) -> Dso {
        let (candidates, running_vdso) = self.candidates(path, build_id);
        let scan = self.scan(path, build_id, candidates, running_vdso);
        scan.into_dso(path, build_id, self.options.demangle)
    }

    /// The files that may hold `path`'s symbols, in perf's `dso__load` order, each marked whether it is a
    /// runtime image; and whether the running kernel's vDSO stands for it.
    fn candidates(&self, path: &str, build_id: Option<&[u8]>) -> (Vec<(PathBuf, bool)>, bool) {
        let mut candidates: Vec<(PathBuf, bool)> = Vec::new();
        // perf records build-ids only for DSOs a sample's IP hit; for one seen only in callchains it reads the
        // build-id from the file itself to find debug files by it (no mismatch check: nothing was recorded).
        let own_bid = match build_id {
            Some(_) => None,
            None => self
                .lookup
                .read_object(&self.with_symfs(Path::new(path)))
                .ok()
                .and_then(|b| elf::build_id((*b).as_ref())),
        };
        if let Some(bid) = build_id.or(own_bid.as_deref()) {
            let link = build_id_link(bid);
            if let Some(home) = &self.options.home {
                let base = home.join(".debug/.build-id").join(&link);
                candidates.push((base.join("elf"), true));
                // perf 6.x caches the vDSO image as `vdso` beside the other cached files.
                candidates.push((base.join("vdso"), true));
                candidates.push((base.clone(), true));
                candidates.push((base.join("debug"), false));
            }
            // perf joins the symfs to the debug directories too (dso__read_binary_type_filename), only the
            // build-id cache in HOME stays as it is.
            for dir in &self.options.debug_dirs {
                let dir = self.with_symfs(dir);
                candidates.push((dir.join(".build-id").join(format!("{link}.debug")), false));
            }
        }
        let own = self.with_symfs(Path::new(path));
        candidates.push((own, true));
        // perf 6.1 reads `[vdso]` from the running kernel's vDSO (its own, copied to a temporary file) when the
        // recording names no build-id for it, as pipe-mode files do; with a build-id recorded it only looks in
        // the build-id cache (the header's build-id entry creates the DSO before any mmap could point it at
        // the running image), and with --symfs the temporary file's path is looked up under the symfs.
        let running_vdso = path == "[vdso]" && build_id.is_none() && self.options.symfs.is_none();
        if running_vdso {
            candidates.push((PathBuf::from(RUNNING_VDSO), true));
        }
        for dir in &self.options.debug_dirs {
            let dir = self.with_symfs(dir);
            let rel = Path::new(path).strip_prefix("/").unwrap_or(Path::new(path));
            candidates.push((dir.join(rel), false));
            candidates.push((dir.join(format!("{}.debug", rel.display())), false));
        }
        (candidates, running_vdso)
    }

    /// Reads the candidates in order (adding `.gnu_debuglink` targets as they are learnt) until one has a
    /// `.symtab` and one is the runtime image; files whose build-id differs from the recorded one are rejected.
    fn scan(
        &self,
        path: &str,
        build_id: Option<&[u8]>,
        mut candidates: Vec<(PathBuf, bool)>,
        running_vdso: bool,
    ) -> Scan {
        let mut scan = Scan::default();
        let mut debuglink: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        let mut parsed: Vec<(usize, Option<Vec<u8>>)> = Vec::new();
        let mut i = 0;
        while i < candidates.len() {
            let (cand, is_runtime) = candidates[i].clone();
            i += 1;
            if !seen.insert(cand.clone()) {
                continue;
            }
            let bytes = if running_vdso && cand == Path::new(RUNNING_VDSO) {
                self.lookup.running_vdso().ok_or(Unread::Missing)
            } else {
                self.lookup.read_object(&cand)
            };
            let bytes = match bytes {
                Ok(bytes) => bytes,
                Err(Unread::Missing) => continue,
                Err(why) => {
                    scan.unreadable.get_or_insert(DsoProblem::NotADso {
                        path: cand.clone(),
                        why,
                    });
                    continue;
                }
            };
            scan.found_any = true;
            // The build-id cache's `elf` and the path itself are usually the same file: parse it once (a
            // large DSO's symbol table was most of a short run).
            let identity = ((*bytes).as_ref().len(), elf::build_id((*bytes).as_ref()));
            if identity.1.is_some() && parsed.contains(&identity) {
                continue;
            }
            let mismatch = other_build_id(build_id, identity.1.as_deref());
            parsed.push(identity);
            if let Some(found) = mismatch {
                scan.rejected.push((cand.clone(), found));
                continue;
            }
            let info = match ElfInfo::parse_layout(bytes.clone()) {
                Ok(info) => info,
                Err(e) => {
                    scan.unreadable.get_or_insert(DsoProblem::Unreadable {
                        path: cand.clone(),
                        message: e.to_string(),
                    });
                    continue;
                }
            };
            if let Some(expected) = build_id {
                if info.build_id.as_deref() != Some(expected) {
                    scan.rejected.push((
                        cand.clone(),
                        info.build_id.as_deref().map(hex).unwrap_or_default(),
                    ));
                    continue;
                }
            }
            if debuglink.is_none() {
                if let Some(link) = &info.debuglink {
                    debuglink = Some(link.clone());
                    // perf's DEBUGLINK candidates: beside the file, in .debug/ beside it, under the debug dirs.
                    let dir = Path::new(path).parent().unwrap_or(Path::new("/"));
                    candidates.push((self.with_symfs(&dir.join(link)), false));
                    candidates.push((self.with_symfs(&dir.join(".debug").join(link)), false));
                    for d in &self.options.debug_dirs {
                        let rel = dir.strip_prefix("/").unwrap_or(dir);
                        candidates.push((self.with_symfs(d).join(rel).join(link), false));
                    }
                }
            }
            let has_runtime_sections = info.segments.iter().any(|s| s.file_size > 0);
            if is_runtime && scan.runtime.is_none() && has_runtime_sections {
                scan.runtime = Some(bytes.clone());
                scan.runtime_file = Some(cand.clone());
            } else if !is_runtime && scan.debug.is_none() {
                scan.debug = Some(bytes.clone());
            }
            if info.has_symtab {
                if scan.symtab.is_none() {
                    scan.symtab = Some((cand, bytes.clone()));
                }
            } else if scan.symtab.is_none() {
                scan.dynsym.push((cand, bytes.clone()));
            }
            if scan.symtab.is_some() && scan.runtime.is_some() {
                break;
            }
        }
        scan
    }

    /// The kernel's symbols, loaded once: `--kallsyms`, else the build-id cache's `kallsyms`, else
    /// `/proc/kallsyms` when the running kernel's build-id matches `build_id` (or none was recorded).
    pub fn kernel(&mut self, build_id: Option<&[u8]>) -> Rc<Kallsyms> {
        if let Some(k) = &self.kernel {
            return k.clone();
        }
        let pending = self
            .kernel_pending
            .take()
            .filter(|(bid, _)| bid.as_deref() == build_id);
        let k = Rc::new(match pending {
            Some((_, p)) => p.wait(),
            None if let Some(snapshot) = self.running_snapshot(build_id) => {
                kallsyms::PendingKallsyms::snapshot(snapshot, self.live_kallsyms_reader()).wait()
            }
            None => self
                .kallsyms_source(build_id)
                .map(|(_, b)| Kallsyms::from_bytes(b))
                .unwrap_or_default(),
        });
        self.kernel = Some(k.clone());
        k
    }

    /// Starts parsing the kernel's symbols for `build_id` on another thread, for a caller that knows kernel
    /// frames will come: [`Symbolizer::kernel`] with the same build-id then waits for that table.
    pub fn prefetch_kernel(&mut self, build_id: Option<&[u8]>) {
        if self.kernel.is_some() || self.kernel_pending.is_some() {
            return;
        }
        let pending = match self.kallsyms_cached(build_id) {
            Some((_, bytes)) => Some(Kallsyms::parse_in_background(bytes)),
            None if self.running_kallsyms_matches(build_id) => {
                match self.running_snapshot(build_id) {
                    Some(snapshot) => Some(kallsyms::PendingKallsyms::snapshot(
                        snapshot,
                        self.live_kallsyms_reader(),
                    )),
                    None => {
                        let path = Path::new("/proc/kallsyms");
                        match self.lookup.background_reader(path) {
                            Some(reader) => kallsyms::PendingKallsyms::read_in_background(reader),
                            None => self.lookup.read(path).map(Kallsyms::parse_in_background),
                        }
                    }
                }
            }
            None => None,
        };
        if let Some(pending) = pending {
            self.kernel_pending = Some((build_id.map(<[u8]>::to_vec), pending));
        }
    }

    /// Hands over the kernel table being parsed for `build_id` ([`Symbolizer::prefetch_kernel`]), for a caller
    /// that symbolizes kernel frames elsewhere.
    pub fn take_kernel_pending(
        &mut self,
        build_id: Option<&[u8]>,
    ) -> Option<kallsyms::PendingKallsyms> {
        match self.kernel_pending.take() {
            Some((bid, pending)) if bid.as_deref() == build_id => Some(pending),
            other => {
                self.kernel_pending = other;
                None
            }
        }
    }

    /// Where the kernel's symbols come from, in [`Symbolizer::kernel`]'s order, and the file's bytes.
    pub fn kallsyms_source(&self, build_id: Option<&[u8]>) -> Option<(PathBuf, FileBytes)> {
        if let Some(found) = self.kallsyms_cached(build_id) {
            return Some(found);
        }
        if self.running_kallsyms_matches(build_id) {
            let p = PathBuf::from("/proc/kallsyms");
            return self.lookup.read(&p).map(|b| (p, b));
        }
        None
    }

    /// `--kallsyms`, or the build-id cache's copy for `build_id`, read.
    fn kallsyms_cached(&self, build_id: Option<&[u8]>) -> Option<(PathBuf, FileBytes)> {
        let read = |p: PathBuf| self.lookup.read(&p).map(|b| (p, b));
        if let Some(p) = &self.options.kallsyms {
            return read(p.clone());
        }
        if self.options.kallsyms.is_none() {
            if let (Some(bid), Some(home)) = (build_id, &self.options.home) {
                let base = home.join(".debug/.build-id").join(build_id_link(bid));
                let direct = home
                    .join(".debug/[kernel.kallsyms]")
                    .join(hex(bid))
                    .join("kallsyms");
                if let Some(found) = read(base.join("kallsyms")).or_else(|| read(direct)) {
                    return Some(found);
                }
            }
        }
        None
    }

    /// The build-id cache's copy of the running kernel's kallsyms, when it provably stands for `/proc/kallsyms`
    /// (same build-id, same first lines: [`kallsyms::head_matches`]); the table built from it reads the live
    /// file for any address the copy cannot vouch for. perf 6.1 reads `/proc/kallsyms` whole for a file without
    /// a kernel build-id; the symbols printed are the same.
    fn running_snapshot(&self, build_id: Option<&[u8]>) -> Option<FileBytes> {
        if self.kallsyms_cached(build_id).is_some() || !self.running_kallsyms_matches(build_id) {
            return None;
        }
        let running = self
            .lookup
            .read(Path::new("/sys/kernel/notes"))
            .and_then(|n| kallsyms::build_id_from_notes((*n).as_ref()))?;
        let (_, snapshot) = self.kallsyms_cached(Some(&running))?;
        // ~400 lines: enough to hold the image's first symbols, cheap for the kernel to format.
        let head = self
            .lookup
            .read_head(Path::new("/proc/kallsyms"), 16 << 10)?;
        kallsyms::head_matches((*snapshot).as_ref(), &head).then_some(snapshot)
    }

    fn live_kallsyms_reader(&self) -> kallsyms::LiveReader {
        let path = Path::new("/proc/kallsyms");
        match self.lookup.background_reader(path) {
            Some(reader) => reader,
            None => {
                let bytes = self.lookup.read(path);
                Box::new(move || bytes)
            }
        }
    }

    /// Whether `/proc/kallsyms` may stand for the recorded kernel: allowed, and the running kernel's build-id
    /// is `build_id` (or either is unknown). Never with `--kallsyms` or `--symfs`.
    fn running_kallsyms_matches(&self, build_id: Option<&[u8]>) -> bool {
        // perf 6.1's dso__load_kernel_sym: "do not try local files if a symfs was given". Pipe-mode files carry
        // no build-id table, so without this the running kernel's symbols named every kernel address of a file
        // from another machine (`srso_alias_return_thunk+0xa524d` where perf prints `[unknown]`).
        if self.options.kallsyms.is_some()
            || !self.options.running_kernel
            || self.options.symfs.is_some()
        {
            return false;
        }
        let running = self
            .lookup
            .read(Path::new("/sys/kernel/notes"))
            .and_then(|n| kallsyms::build_id_from_notes((*n).as_ref()));
        match (build_id, running) {
            (Some(want), Some(have)) => want == have.as_slice(),
            _ => true,
        }
    }

    /// The JIT map `/tmp/perf-PID.map` of a process, loaded once.
    pub fn perf_map(&mut self, pid: u32) -> Option<&PerfMap> {
        if !self.perf_maps.contains_key(&pid) {
            let path = self.with_symfs(Path::new(&format!("/tmp/perf-{pid}.map")));
            let map = self
                .lookup
                .read(&path)
                .map(|b| PerfMap::parse(&String::from_utf8_lossy((*b).as_ref())));
            self.perf_maps.insert(pid, map);
        }
        self.perf_maps.get(&pid).and_then(Option::as_ref)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::workloads::Build;

    fn options(home: &str) -> SymbolizerOptions {
        SymbolizerOptions {
            demangle: true,
            symfs: None,
            home: Some(PathBuf::from(home)),
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            kallsyms: None,
            running_kernel: false,
        }
    }

    #[test]
    fn a_symfs_keeps_the_running_kernels_symbols_out() {
        let mut files = MemLookup::new();
        files.insert("/proc/kallsyms", b"ffffffff81000000 T _text\n");
        let mut o = options("/home/u");
        o.running_kernel = true;
        let s = Symbolizer::new(files.clone(), o.clone());
        assert_eq!(
            s.kallsyms_source(None).map(|(p, _)| p),
            Some(PathBuf::from("/proc/kallsyms"))
        );
        o.symfs = Some(PathBuf::from("/empty"));
        let s = Symbolizer::new(files, o);
        assert!(s.kallsyms_source(None).is_none());
    }

    /// A `-z` or pipe file has no kernel build-id: perf reads `/proc/kallsyms` whole. The build-id cache's copy
    /// for the running kernel stands for it when its first lines are the live ones, and only for addresses
    /// inside the kernel image; the rest (modules come and go) is looked up in the live table.
    #[test]
    fn a_current_snapshot_stands_for_proc_kallsyms_within_the_image() {
        let bid = [0xcd_u8; 20];
        let mut notes = Vec::new();
        for word in [4u32, 20, 3] {
            notes.extend_from_slice(&word.to_ne_bytes());
        }
        notes.extend_from_slice(b"GNU\0");
        notes.extend_from_slice(&bid);
        // Past the 16 KB head the snapshot is trusted, not compared: fillers push `first` and `second` there.
        let mut image = String::from("ffffffff81000000 T _text\n");
        for i in 1..2000u64 {
            image += &format!(
                "{:016x} T filler_{i}\n",
                0xffff_ffff_8000_0000 + 0x100_0000 + i * 0x10
            );
        }
        image += "ffffffff81010000 T first\nffffffff81010100 T second\n";
        assert!(image.len() > 2 * (16 << 10));
        let snapshot =
            format!("{image}ffffffffc0001000 t old_fn\t[old]\nffffffffc0002000 t old_end\t[old]\n");
        let live =
            format!("{image}ffffffffc0001000 t new_fn\t[new]\nffffffffc0002000 t new_end\t[new]\n");
        let cached = format!("/home/u/.debug/[kernel.kallsyms]/{}/kallsyms", hex(&bid));
        let mut o = options("/home/u");
        o.running_kernel = true;
        let table = |live_text: &str, with_snapshot: bool| {
            let mut files = MemLookup::new();
            files.insert("/sys/kernel/notes", notes.clone());
            files.insert("/proc/kallsyms", live_text.as_bytes().to_vec());
            if with_snapshot {
                files.insert(cached.clone(), snapshot.as_bytes().to_vec());
            }
            let mut s = Symbolizer::new(files, o.clone());
            s.prefetch_kernel(None);
            s.kernel(None)
        };
        let name = |k: &Kallsyms, addr| k.lookup_start(addr).map(|(n, _)| n.to_string());

        // Same head: the image's symbols come from the snapshot (a live table that differs past the head, which
        // a real kernel's never does, shows which table answered), a module address from the live table.
        let doctored = live
            .replace(" first\n", " first_live\n")
            .replace(" second\n", " second_live\n");
        let k = table(&doctored, true);
        assert_eq!(name(&k, 0xffff_ffff_8101_0004).as_deref(), Some("first"));
        assert_eq!(name(&k, 0xffff_ffff_c000_1010).as_deref(), Some("new_fn"));
        // The last symbol of the image ends at the next symbol, a module's: not provable, so live.
        assert_eq!(
            name(&k, 0xffff_ffff_8101_0104).as_deref(),
            Some("second_live")
        );
        // Below every symbol: live (another architecture's modules may sit there).
        assert_eq!(name(&k, 0xffff_ffff_8000_0000), None);

        // Another KASLR offset (or a zeroed, unprivileged read): the head differs, the snapshot is not used.
        let moved = live.replace("ffffffff81", "ffffffff82");
        let k = table(&moved, true);
        assert_eq!(name(&k, 0xffff_ffff_8101_0004), None);
        assert_eq!(name(&k, 0xffff_ffff_8201_0004).as_deref(), Some("first"));
        let zeros = "0000000000000000 T _text\n0000000000000000 T first\n";
        assert!(!kallsyms::head_matches(zeros.as_bytes(), zeros.as_bytes()));
        assert!(!kallsyms::head_matches(
            image.as_bytes(),
            b"ffffffff81000000 T _te"
        ));

        // No snapshot: the live table, as before.
        let k = table(&doctored, false);
        assert_eq!(name(&k, 0xffff_ffff_c000_1010).as_deref(), Some("new_fn"));
        assert_eq!(
            name(&k, 0xffff_ffff_8101_0004).as_deref(),
            Some("first_live")
        );
    }

    #[test]
    fn loads_from_path_and_checks_build_id() {
        let fp = Build::FramePointer.bytes();
        let bid = elf::build_id(fp).unwrap();
        let mut files = MemLookup::new();
        files.insert("/w/chain", fp);
        let mut s = Symbolizer::new(files, options("/home/u"));
        let dso = s.dso("/w/chain", Some(&bid));
        assert_eq!(dso.problem, None);
        assert_eq!(dso.symbols_file.as_deref(), Some(Path::new("/w/chain")));
        // Mapping of the text segment at its link address: bias 0.
        assert_eq!(dso.bias(0x40_1000, 0x1000), Some(0));
        let info = dso.info.as_ref().unwrap();
        let chain_c = info
            .symbols
            .iter()
            .find(|s| info.raw_name(s) == "chain_c")
            .unwrap();
        assert_eq!(
            dso.symbolize(chain_c.start + 4)
                .map(|h| (h.name.to_string(), h.offset)),
            Some(("chain_c".to_owned(), 4))
        );
        // Cached: the same Arc comes back.
        assert!(Rc::ptr_eq(&dso, &s.dso("/w/chain", Some(&bid))));
        assert_eq!(dso.runtime_image(), Some(fp));
    }

    #[test]
    fn build_id_mismatch_is_reported_and_the_file_not_used() {
        let mut files = MemLookup::new();
        files.insert("/w/chain", Build::NoFramePointer.bytes());
        let mut s = Symbolizer::new(files, options("/home/u"));
        let recorded = elf::build_id(Build::FramePointer.bytes()).unwrap();
        let dso = s.dso("/w/chain", Some(&recorded));
        assert!(dso.info.is_none());
        assert_eq!(
            dso.problem,
            Some(DsoProblem::BuildIdMismatch {
                expected: hex(&recorded),
                rejected: vec![(
                    PathBuf::from("/w/chain"),
                    hex(&elf::build_id(Build::NoFramePointer.bytes()).unwrap())
                )],
            })
        );
        assert_eq!(
            s.dso("/w/missing", None).problem,
            Some(DsoProblem::NotFound)
        );
    }

    #[test]
    fn build_id_cache_wins_over_a_changed_file() {
        let fp = Build::FramePointer.bytes();
        let bid = elf::build_id(fp).unwrap();
        let mut files = MemLookup::new();
        // The file on disk changed since recording; the cache holds the recorded one.
        files.insert("/w/chain", Build::NoFramePointer.bytes());
        files.insert(
            format!("/home/u/.debug/.build-id/{}/elf", build_id_link(&bid)),
            fp,
        );
        let mut s = Symbolizer::new(files, options("/home/u"));
        let dso = s.dso("/w/chain", Some(&bid));
        assert_eq!(dso.problem, None);
        assert_eq!(
            dso.symbols_file,
            Some(PathBuf::from(format!(
                "/home/u/.debug/.build-id/{}/elf",
                build_id_link(&bid)
            )))
        );
    }

    #[test]
    fn symbolizes_the_test_binary_itself() {
        // addr2line-style self test: a function of this very binary resolves to its own (demangled) name.
        let exe = std::env::current_exe().unwrap();
        let mut s = Symbolizer::new(FsLookup, options("/nonexistent"));
        let dso = s.dso(exe.to_str().unwrap(), None);
        let info = dso.info.as_ref().expect("test binary has symbols");
        let want = "bport::perf::symbols::hex";
        let sym = info
            .symbols
            .iter()
            .find(|s| &*info.symbol_name(s) == want)
            .expect("hex() is in the test binary");
        assert_eq!(
            dso.symbolize(sym.start + 1)
                .map(|h| (h.name.to_string(), h.offset)),
            Some((want.to_owned(), 1))
        );
        assert_eq!(hex(&[0xab, 0x01]), "ab01");
    }

    #[test]
    fn symfs_prefix_and_separate_debug_file_by_build_id() {
        let fp = Build::FramePointer.bytes();
        let bid = elf::build_id(fp).unwrap();
        // --symfs: the recorded path is looked up under the given root.
        let mut files = MemLookup::new();
        files.insert("/sysroot/w/chain", fp);
        let mut opts = options("/home/u");
        opts.symfs = Some(PathBuf::from("/sysroot"));
        let mut s = Symbolizer::new(files, opts);
        let dso = s.dso("/w/chain", Some(&bid));
        assert_eq!(dso.symbols_file, Some(PathBuf::from("/sysroot/w/chain")));
        // The binary is gone but its debug file is installed under /usr/lib/debug/.build-id.
        let mut files = MemLookup::new();
        let debug = format!("/usr/lib/debug/.build-id/{}.debug", build_id_link(&bid));
        files.insert(debug.clone(), fp);
        let mut s = Symbolizer::new(files, options("/home/u"));
        let dso = s.dso("/w/gone", Some(&bid));
        assert_eq!(dso.problem, None);
        assert_eq!(dso.symbols_file, Some(PathBuf::from(debug)));
        assert_eq!(dso.runtime_file, None);
        assert_eq!(
            dso.runtime_image(),
            Some(fp),
            "CFI from the debug file when no runtime image exists"
        );
    }

    /// Symbols from a separate debug file, PLT symbols from the runtime image: perf synthesizes `NAME@plt` from
    /// the runtime file (`dso__synthesize_plt_symbols(dso, runtime_ss)`), whose `.plt` the debug file lacks.
    /// The test binary stands for both; its debug copy has its `.rela.plt` renamed so it cannot give them.
    #[test]
    fn plt_symbols_come_from_the_runtime_image_when_a_debug_file_gives_the_symbols() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let own = ElfInfo::parse(&exe).unwrap();
        assert!(
            !own.plt_symbols.is_empty(),
            "the test binary calls through a PLT"
        );
        let bid = elf::build_id(&exe).expect("the test binary has a build-id");
        let names = {
            use object::{Object, ObjectSection};
            let file = object::File::parse(&*exe).unwrap();
            let (at, len) = file
                .section_by_name(".shstrtab")
                .unwrap()
                .file_range()
                .unwrap();
            at as usize..(at + len) as usize
        };
        let at = names.start
            + exe[names]
                .windows(10)
                .position(|w| w == b".rela.plt\0")
                .expect("the section's name");
        let mut debug = exe.clone();
        debug[at + 1] = b'X';
        // Another length: a file of the same length and build-id as one already read counts as that file.
        debug.push(0);
        assert!(ElfInfo::parse(&debug).unwrap().plt_symbols.is_empty());
        let debug_path = format!("/usr/lib/debug/.build-id/{}.debug", build_id_link(&bid));
        let mut files = MemLookup::new();
        files.insert(debug_path.clone(), debug);
        files.insert("/w/exe", exe);
        let mut s = Symbolizer::new(files, options("/home/u"));
        let dso = s.dso("/w/exe", Some(&bid));
        assert_eq!(dso.symbols_file, Some(PathBuf::from(debug_path)));
        assert_eq!(dso.runtime_file, Some(PathBuf::from("/w/exe")));
        let info = dso.info.as_ref().unwrap();
        let starts = |i: &ElfInfo| i.plt_symbols.iter().map(|p| p.start).collect::<Vec<_>>();
        assert_eq!(starts(info), starts(&own));
        assert_eq!(info.symbols.len(), own.symbols.len());
    }

    #[test]
    fn kernel_from_explicit_kallsyms_and_perf_map() {
        let mut files = MemLookup::new();
        files.insert(
            "/k/kallsyms",
            "ffffffff81000000 T _stext\nffffffff81000100 T next\n",
        );
        files.insert("/tmp/perf-42.map", "1000 10 jitted\n");
        let mut opts = options("/home/u");
        opts.kallsyms = Some(PathBuf::from("/k/kallsyms"));
        let mut s = Symbolizer::new(files, opts);
        let k = s.kernel(None);
        assert_eq!(
            k.lookup(0xffffffff81000010)
                .map(|s| s.name.to_string())
                .as_deref(),
            Some("_stext")
        );
        assert_eq!(
            s.perf_map(42)
                .and_then(|m| m.lookup(0x1008))
                .map(|(a, n)| (a, n.to_string())),
            Some((0x1000, "jitted".to_owned()))
        );
        assert!(s.perf_map(43).is_none());
    }
}
