//! Probes on a binary without debug information, from its symbol table, as perf probes them
//! (probe-event.c's `find_probe_trace_events_from_map`): a function's entry (`FUNC`), an offset into it
//! (`FUNC+OFFS`) or its return (`FUNC%return`), with raw fetchargs (`%di`, `+8(%si):u32`, `@+0x4010`) and
//! `$retval` on a return probe. What needs DWARF (variables, `$vars`, `$params`, lines, source files) is
//! refused with the reason, as perf refuses it.
//!
//! Symbols come from the first `.symtab` among the places perf looks (debuglink, build-id cache, distribution
//! debug files, the binary), else the binary's `.dynsym`. Without DWARF every function symbol of the name is
//! probed (perf's map walk), as probes of one event; where DWARF exists but has no function of the name, the
//! first symbol of that exact name is (perf asks libdw).

use super::dwarf::{file_bytes, Segment};
use super::location::TraceArg;
use super::spec::{Arg, Spec};
use super::{tracefs, user_group, Error, Plan, Probe};
use object::{Object, ObjectSegment, ObjectSymbol};
use std::path::{Path, PathBuf};

/// A function symbol: its name and svma.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FuncSym {
    name: String,
    address: u64,
    size: u64,
}

/// Which symbols of a name are probed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Every function symbol of the name, versions cut off (perf's map walk, `find_probe_functions`, when the
    /// binary has no DWARF).
    All,
    /// The first symbol of exactly that name in symbol-table order (perf's DWARF path, which asks libdw for the
    /// symbol's address when no DWARF function has the name: glibc's `malloc`, `memcpy`).
    First,
}

/// The function symbols of `file`'s `.symtab` (or, without one, `.dynsym`), in table order.
fn function_symbols(file: &object::File, pick: Pick) -> Vec<FuncSym> {
    let has_symtab = file.symbols().next().is_some();
    let table: Vec<object::Symbol> = if has_symtab {
        file.symbols().collect()
    } else {
        file.dynamic_symbols().collect()
    };
    let mut out: Vec<FuncSym> = Vec::new();
    for s in table {
        // Text is STT_FUNC and STT_GNU_IFUNC, perf's elf_sym__is_function.
        if s.kind() != object::SymbolKind::Text || s.is_undefined() || s.address() == 0 {
            continue;
        }
        let Ok(name) = s.name() else { continue };
        // perf's map walk compares names with their `@VERSION` cut off; libdw compares them whole.
        let name = match pick {
            Pick::All => name.split('@').next().unwrap_or(name).to_string(),
            Pick::First => name.to_string(),
        };
        let sym = FuncSym {
            name,
            address: s.address(),
            size: s.size(),
        };
        if !out.contains(&sym) {
            out.push(sym);
        }
    }
    out
}

/// Where perf looks for a binary's symbols (dso__load's order, for a user binary): the `.gnu_debuglink`
/// target, the build-id cache's copy and debug file, the distributions' debug files, then the binary itself.
/// The first of these with a `.symtab` and the binary's build-id gives the symbols.
fn symbol_sources(binary: &Path, file: &object::File) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let dir = binary.parent().unwrap_or(Path::new("/"));
    if let Ok(Some((name, _crc))) = file.gnu_debuglink() {
        let name = String::from_utf8_lossy(name).into_owned();
        out.push(dir.join(&name));
        out.push(dir.join(".debug").join(&name));
        out.push(
            Path::new("/usr/lib/debug")
                .join(dir.strip_prefix("/").unwrap_or(dir))
                .join(&name),
        );
    }
    let hex = build_id_hex(file);
    if let (Some(hex), Some(home)) = (&hex, std::env::var_os("HOME")) {
        let link = Path::new(&home)
            .join(".debug/.build-id")
            .join(&hex[..2])
            .join(&hex[2..]);
        out.push(link.join("elf"));
        out.push(link.join("debug"));
    }
    let rel = binary.strip_prefix("/").unwrap_or(binary);
    let mut fedora = Path::new("/usr/lib/debug").join(rel).into_os_string();
    fedora.push(".debug");
    out.push(PathBuf::from(fedora));
    out.push(Path::new("/usr/lib/debug").join(rel));
    if let Some(hex) = &hex {
        out.push(PathBuf::from(format!(
            "/usr/lib/debug/.build-id/{}/{}.debug",
            &hex[..2],
            &hex[2..]
        )));
    }
    out
}

fn build_id_hex(file: &object::File) -> Option<String> {
    let id = file.build_id().ok().flatten()?;
    (id.len() >= 2).then(|| id.iter().map(|b| format!("{b:02x}")).collect())
}

/// The symbols of the first source with a `.symtab` and a matching build-id, else the binary's own.
fn load_symbols(binary: &Path, file: &object::File, pick: Pick) -> Vec<FuncSym> {
    let want = build_id_hex(file);
    for cand in symbol_sources(binary, file) {
        if !cand.is_file() {
            continue;
        }
        let Ok(bytes) = file_bytes(&cand) else {
            continue;
        };
        let Ok(other) = object::File::parse(&*bytes) else {
            continue;
        };
        let id = build_id_hex(&other);
        if want.is_some() && id.is_some() && id != want {
            continue;
        }
        if other.symbols().next().is_some() {
            return function_symbols(&other, pick);
        }
    }
    function_symbols(file, pick)
}

fn segments(file: &object::File) -> Vec<Segment> {
    file.segments()
        .map(|s| {
            let (offset, _) = s.file_range();
            Segment {
                vaddr: s.address(),
                memsz: s.size(),
                offset,
                exec: matches!(s.flags(), object::SegmentFlags::Elf { p_flags, .. } if p_flags.0 & 1 != 0),
            }
        })
        .collect()
}

/// What a spec asks that only DWARF answers, as the refusal's words (perf's `perf_probe_event_need_dwarf`:
/// a file, a line, a lazy pattern, a variable, `$vars` or `$params`; raw fetchargs and `$retval` are not).
pub(crate) fn needs_dwarf(spec: &Spec) -> Option<String> {
    symbol_table_args(spec).err()
}

/// An argument the symbol table can take.
enum SymbolArg<'a> {
    /// `$retval`, with its name and type.
    Retval(&'a Option<String>, &'a Option<String>),
    /// A raw fetcharg, with its name.
    Raw(&'a Option<String>, &'a str),
}

/// A spec's arguments, when the symbol table can place the spec; else what only DWARF answers (see
/// [`needs_dwarf`]).
fn symbol_table_args(spec: &Spec) -> Result<Vec<SymbolArg<'_>>, String> {
    let p = &spec.point;
    if p.function.is_none() || p.file.is_some() {
        return Err("a source file".into());
    }
    if p.line.is_some() || p.lazy.is_some() {
        return Err("a source line".into());
    }
    let mut args = Vec::new();
    for a in &spec.args {
        match a {
            Arg::Var(v) => return Err(format!("the variable `{}`", v.var)),
            Arg::Vars => return Err("`$vars`".into()),
            Arg::Params => return Err("`$params`".into()),
            Arg::Retval { name, ty } => args.push(SymbolArg::Retval(name, ty)),
            Arg::Raw { name, text } => args.push(SymbolArg::Raw(name, text)),
        }
    }
    Ok(args)
}

/// Plans uprobes on `binary` from its symbol table. `no_dwarf` is the error that says the binary has no debug
/// information, returned as the reason when a spec needs it.
pub fn plan(
    binary: &Path,
    specs: &[Spec],
    taken: &[String],
    pick: Pick,
    no_dwarf: &dyn Fn() -> Error,
) -> Result<Plan, Error> {
    let bytes = file_bytes(binary)?;
    let file = object::File::parse(&*bytes).map_err(|e| Error::NotElf {
        path: binary.to_path_buf(),
        reason: e.to_string(),
    })?;
    if file.architecture() != object::Architecture::X86_64 {
        return Err(Error::Architecture {
            path: binary.to_path_buf(),
            arch: format!("{:?}", file.architecture()),
        });
    }
    let image = Image {
        binary,
        text: binary.to_string_lossy().into_owned(),
        symbols: load_symbols(binary, &file, pick),
        segments: segments(&file),
        pick,
    };
    let mut plan = Plan::default();
    for spec in specs {
        let args = symbol_table_args(spec).map_err(|what| Error::NeedsDebugInfo {
            spec: spec.text.clone(),
            what,
            source: Box::new(no_dwarf()),
        })?;
        image.plan_spec(spec, &args, taken, &mut plan)?;
    }
    Ok(plan)
}

/// A binary as its symbol table and program headers describe it.
struct Image<'a> {
    binary: &'a Path,
    /// The binary's path, as the probe places name it.
    text: String,
    symbols: Vec<FuncSym>,
    segments: Vec<Segment>,
    pick: Pick,
}

impl Image<'_> {
    /// Adds a spec's probes to `plan`: one per address of its function, as one event.
    fn plan_spec(
        &self,
        spec: &Spec,
        args: &[SymbolArg<'_>],
        taken: &[String],
        plan: &mut Plan,
    ) -> Result<(), Error> {
        let func = spec.point.function.as_deref().unwrap_or_default();
        let offset = spec.point.offset.unwrap_or(0);
        let found = self.functions(func)?;
        if spec.point.retprobe && offset != 0 {
            return Err(Error::Spec {
                spec: spec.text.clone(),
                reason: "%return takes no offset".into(),
            });
        }
        let args = symbol_args(spec, args)?;
        let group = spec
            .group
            .clone()
            .unwrap_or_else(|| user_group(self.binary));
        let base = event_base(spec, func);
        for (i, sym) in found.iter().enumerate() {
            if sym.size != 0 && offset >= sym.size {
                return Err(Error::Spec {
                    spec: spec.text.clone(),
                    reason: format!("+{offset} is beyond {func}'s {} bytes", sym.size),
                });
            }
            let svma = sym.address + offset;
            let file_offset = self.file_offset(func, svma)?;
            // Every address has the same arguments, so the kernel takes them as one event with several probes
            // (as the DWARF planner does for a function's copies).
            if i == 0 {
                let full = format!("{group}:{base}");
                // perf adds no suffix to a name of the user's or its own first choice: it refuses.
                if taken.contains(&full) || plan.events().contains(&full) {
                    return Err(Error::EventExists(full));
                }
            }
            let event = base.clone();
            plan.probes.push(Probe {
                retprobe: spec.point.retprobe,
                group: group.clone(),
                event,
                place: format!("{}:{file_offset:#x}", self.text),
                args: args.clone(),
                address: svma,
                kind: tracefs::Kind::Uprobe,
            });
        }
        Ok(())
    }

    /// The symbols of `func` probed, by address, each address once.
    fn functions(&self, func: &str) -> Result<Vec<&FuncSym>, Error> {
        let mut found: Vec<&FuncSym> = self.symbols.iter().filter(|s| s.name == func).collect();
        if self.pick == Pick::First {
            found.truncate(1);
        }
        found.sort_by_key(|s| s.address);
        found.dedup_by_key(|s| s.address);
        if found.is_empty() {
            return Err(Error::SymbolNotFound {
                function: func.to_string(),
                path: self.binary.to_path_buf(),
            });
        }
        Ok(found)
    }

    /// The file offset of `svma` (in `func`), which an executable segment must hold.
    fn file_offset(&self, func: &str, svma: u64) -> Result<u64, Error> {
        self.segments
            .iter()
            .find(|s| s.exec && svma >= s.vaddr && svma < s.vaddr + s.memsz)
            .map(|s| svma - s.vaddr + s.offset)
            .ok_or_else(|| {
                Error::Unsupported(format!(
                    "{func}: address {svma:#x} is in no executable segment of {}",
                    self.text
                ))
            })
    }
}

/// The fetchargs of a spec's arguments: `$retval` (on a return probe only) and raw ones.
fn symbol_args(spec: &Spec, args: &[SymbolArg<'_>]) -> Result<Vec<TraceArg>, Error> {
    let mut out = Vec::new();
    for a in args {
        match *a {
            SymbolArg::Retval(name, ty) => {
                if !spec.point.retprobe {
                    return Err(Error::Spec {
                        spec: spec.text.clone(),
                        reason: "$retval is only on a return probe (FUNC%return)".into(),
                    });
                }
                out.push(TraceArg {
                    name: name.clone().unwrap_or_default(),
                    fetch: "$retval".into(),
                    ty: ty.clone(),
                });
            }
            SymbolArg::Raw(name, text) => out.push(super::raw_arg(name, text)),
        }
    }
    Ok(out)
}

/// The event's name: the user's, else the function's without its suffixes; `__return` added for a return
/// probe.
fn event_base(spec: &Spec, func: &str) -> String {
    let base = spec.event.clone().unwrap_or_else(|| {
        // `foo.isra.0` → `foo`, as perf cuts a symbol's suffixes off event names.
        match func.find(['.', '@']) {
            Some(p) if p > 0 => func[..p].to_string(),
            _ => func.to_string(),
        }
    });
    if spec.point.retprobe {
        format!("{base}__return")
    } else {
        base
    }
}
