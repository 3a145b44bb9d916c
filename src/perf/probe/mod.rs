//! `bport probe`: dynamic probes (uprobes, kprobes) with variables, as `perf probe` defines them
//! (tools/perf/util/probe-event.c, probe-finder.c), but right or refused where perf 6.1 writes wrong fetches.
//!
//! Owns the SPEC syntax (`spec`), the DWARF questions (`dwarf`), the location → fetcharg translation
//! (`location`), the kernel's BTF for function-entry arguments without vmlinux DWARF (`btf`), and the
//! `uprobe_events`/`kprobe_events` files (`tracefs`). Recording and printing the events belong to `record` and
//! `script` (they are tracepoints once defined).

pub mod btf;
pub mod dwarf;
pub mod filter;
pub mod location;
mod show;
pub mod spec;
pub mod symtab;
pub mod target;
pub mod tracefs;

use dwarf::{DebugInfo, Instance};
use location::{Space, TraceArg, VarDie};
pub use show::{
    available_vars, describe, functions, line_range, point_text, write_line_range, AvailableVar,
    LineRange, Mark, DEFAULT_VAR_FILTER,
};
use spec::{Arg, Spec};
use std::path::{Path, PathBuf};

/// What went wrong, in terms of the user's input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The SPEC does not parse.
    #[error("bad probe `{spec}`: {reason}")]
    Spec {
        /// The SPEC.
        spec: String,
        /// What is wrong.
        reason: String,
    },
    /// A file can't be read.
    #[error("can't read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Not an ELF file.
    #[error("{path} is not an ELF file: {reason}")]
    NotElf {
        /// The file.
        path: PathBuf,
        /// object's reason.
        reason: String,
    },
    /// An architecture whose registers we don't name.
    #[error("{path} is built for {arch}; bport probe names x86-64 registers only")]
    Architecture {
        /// The file.
        path: PathBuf,
        /// Its architecture.
        arch: String,
    },
    /// No DWARF in the binary nor in a build-id debug file.
    #[error("{path} has no debug information (.debug_info){}", if *stripped { " and no symbol table: it is stripped" } else { "" })]
    NoDebugInfo {
        /// The binary.
        path: PathBuf,
        /// It has no symbol table either.
        stripped: bool,
        /// Its build-id, to find the debug file.
        build_id: Option<String>,
    },
    /// The DWARF does not read.
    #[error("can't read the DWARF of {path}: {reason}")]
    Dwarf {
        /// The binary.
        path: PathBuf,
        /// gimli's reason.
        reason: String,
    },
    /// No such function.
    #[error("function `{function}` is not in the debug information of {path}")]
    FunctionNotFound {
        /// The function.
        function: String,
        /// The binary.
        path: PathBuf,
    },
    /// A binary without DWARF has no function symbol of the name.
    #[error(
        "function `{function}` is not in the symbol table of {path} (it has no debug information)"
    )]
    SymbolNotFound {
        /// The function.
        function: String,
        /// The binary.
        path: PathBuf,
    },
    /// A line with no code.
    #[error("no code at {place} (no line-table row for line {line} of {file})")]
    NoCode {
        /// The place as given.
        place: String,
        /// The absolute line.
        line: u64,
        /// The source file.
        file: String,
    },
    /// All the line's rows are another line's too.
    #[error(
        "{place}: every address of line {line} also starts another line; {}",
        match suggestion {
            Some(s) => format!("try {s} instead"),
            None => "no place holds code of this line alone (see the lines that can be probed with -L)".into(),
        }
    )]
    SharedLine {
        /// The place as given.
        place: String,
        /// The absolute line.
        line: u64,
        /// A place, different from the one typed, that maps to its address and can be probed.
        suggestion: Option<String>,
    },
    /// A variable not visible at the probe.
    #[error("variable `{var}` is not in scope at {place} ({address:#x})")]
    VariableNotFound {
        /// The variable.
        var: String,
        /// The probe place.
        place: String,
        /// The probe address.
        address: u64,
    },
    /// An argument a fetcharg can't express.
    #[error("can't fetch `{arg}` at {place}: {reason}")]
    Refused {
        /// The argument.
        arg: String,
        /// The probe place.
        place: String,
        /// Why, with the DWARF location.
        reason: String,
    },
    /// More places than `--max-probes` allows.
    #[error("{place}: {found} places found, more than the {limit} allowed (--max-probes)")]
    TooManyPlaces {
        /// The place as given.
        place: String,
        /// How many places it has.
        found: usize,
        /// The limit.
        limit: usize,
    },
    /// Not supported (yet), said plainly.
    #[error("{0}")]
    Unsupported(String),
    /// The event name is already defined.
    #[error("event `{0}` already exists")]
    EventExists(String),
    /// tracefs can't be found or mounted.
    #[error("tracefs is not available at {path}: {reason}")]
    TracefsUnavailable {
        /// Where it was looked for.
        path: PathBuf,
        /// Why not.
        reason: String,
    },
    /// The kernel lacks a probe file.
    #[error("{path} does not exist: this kernel was built without this kind of probe")]
    NoProbeFile {
        /// The file.
        path: PathBuf,
    },
    /// A tracefs file can't be read.
    #[error("can't read {path}")]
    Tracefs {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The kernel refused a definition.
    #[error("the kernel refused `{definition}`: {source}{}", detail.as_ref().map(|d| format!("\n{d}")).unwrap_or_default())]
    Write {
        /// The line written.
        definition: String,
        /// The write's error.
        source: std::io::Error,
        /// The kernel's error_log entry.
        detail: Option<String>,
    },
    /// A probe on a binary without debug information asks for what only DWARF gives.
    #[error("`{spec}` needs {what}, which only debug information gives")]
    NeedsDebugInfo {
        /// The SPEC.
        spec: String,
        /// What it asks for (a variable, a line, ...).
        what: String,
        /// Why there is no debug information.
        source: Box<Error>,
    },
    /// `-d` matched nothing.
    #[error("no probe event matches `{0}`")]
    NoMatch(String),
    /// A `-d`/`-l` filter that does not parse.
    #[error("bad event filter `{filter}`: {source}")]
    Filter {
        /// The filter as given.
        filter: String,
        /// Where it stops parsing.
        source: filter::ParseError,
    },
    /// BTF errors.
    #[error(transparent)]
    Btf(#[from] btf::Error),
}

/// One probe: an address and the fetchargs there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// `p` or `r`.
    pub retprobe: bool,
    /// Group of the event.
    pub group: String,
    /// Name of the event.
    pub event: String,
    /// `PATH:0xOFFSET` or `SYMBOL+OFFSET`.
    pub place: String,
    /// The fetchargs.
    pub args: Vec<TraceArg>,
    /// The probe's svma (uprobes) for messages.
    pub address: u64,
    /// Which file it goes to.
    pub kind: tracefs::Kind,
}

impl Probe {
    /// The tracefs definition line.
    pub fn definition(&self) -> String {
        let mut s = format!(
            "{}:{}/{} {}",
            if self.retprobe { 'r' } else { 'p' },
            self.group,
            self.event,
            self.place
        );
        for a in &self.args {
            s.push(' ');
            s.push_str(&a.to_string());
        }
        s
    }
}

/// The events a set of specs defines: one event per spec (more only when addresses need different arguments).
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Every probe, in order.
    pub probes: Vec<Probe>,
    /// What `$vars`/`$params` left out and why (perf leaves them out silently).
    pub notes: Vec<String>,
}

impl Plan {
    /// `GROUP:EVENT` of each event, in order, once each.
    pub fn events(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.probes {
            let n = format!("{}:{}", p.group, p.event);
            if !out.contains(&n) {
                out.push(n);
            }
        }
        out
    }
}

/// `--force`: every event of the plan whose `GROUP:EVENT` is taken gets perf's numbered name instead
/// (get_new_event_name: `NAME_1`, `NAME_2`, ... with `__return` dropped, the first not taken), the probes of one
/// event keeping one name.
pub fn force_names(plan: &mut Plan, taken: &[String]) {
    let mut used: Vec<String> = taken.to_vec();
    let mut renamed: Vec<(String, String)> = Vec::new();
    for event in plan.events() {
        let Some((group, name)) = event.split_once(':') else {
            continue;
        };
        if !used.contains(&event) {
            used.push(event.clone());
            continue;
        }
        let stem = name.strip_suffix("__return").unwrap_or(name);
        let mut i = 1;
        while used.contains(&format!("{group}:{stem}_{i}")) {
            i += 1;
        }
        let new = format!("{stem}_{i}");
        used.push(format!("{group}:{new}"));
        renamed.push((event.clone(), new));
    }
    for p in &mut plan.probes {
        let full = format!("{}:{}", p.group, p.event);
        if let Some((_, new)) = renamed.iter().find(|(old, _)| *old == full) {
            p.event = new.clone();
        }
    }
}

/// perf's group for a binary's uprobes: `probe_` and the file name up to its first character that is not
/// alphanumeric or `_` (`libc.so.6` → `probe_libc`).
pub fn user_group(binary: &Path) -> String {
    let base = binary
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cut: String = base
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    format!("probe_{cut}")
}

/// One address to probe, with where it is in the DWARF.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Site {
    pub unit: usize,
    /// The out-of-line function containing the address.
    pub function: usize,
    pub address: u64,
    /// For a probe at a function's entry, the instance probed (the body or an inlined copy): perf takes the
    /// variables of that scope first (its `call_probe_finder(sp_die)`), not those of a copy inlined at the
    /// same address.
    pub entry_of: Option<usize>,
    /// perf's scope DIE (`sc_die`) of the site: the function or inlined copy whose variables (and those of the
    /// scopes inside it holding the address) the site sees, and whose name a `SRC:LINE` event takes.
    pub scope: usize,
}

impl Site {
    /// The scopes whose variables the site sees, in the order they are searched: for a function entry the
    /// probed instance, then the scopes inside it holding the address (outer first), then those around it; else
    /// innermost first.
    fn search_order(&self, chain: &[usize]) -> Vec<usize> {
        match self
            .entry_of
            .and_then(|s| chain.iter().position(|&c| c == s))
        {
            Some(p) => chain[p..]
                .iter()
                .chain(chain[..p].iter().rev())
                .copied()
                .collect(),
            None => chain.iter().rev().copied().collect(),
        }
    }
}

fn place_text(spec: &Spec) -> String {
    spec.text
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// The sites of a spec's point.
pub(crate) fn sites(
    di: &DebugInfo,
    spec: &Spec,
    user: bool,
) -> Result<(Vec<Site>, Option<String>), Error> {
    sites_with(di, spec, user, true)
}

/// `sites`; `suggest` says whether a refused line looks for another place to suggest (not when checking that
/// a suggestion itself works).
fn sites_with(
    di: &DebugInfo,
    spec: &Spec,
    user: bool,
    suggest: bool,
) -> Result<(Vec<Site>, Option<String>), Error> {
    let found = sites_of(di, spec, user, suggest)?;
    let limit = spec.point.max_probes.unwrap_or(MAX_PROBES);
    if found.0.len() > limit {
        return Err(Error::TooManyPlaces {
            place: place_text(spec),
            found: found.0.len(),
            limit,
        });
    }
    Ok(found)
}

/// perf's MAX_PROBES: the default of `--max-probes`.
pub const MAX_PROBES: usize = 128;

fn sites_of(
    di: &DebugInfo,
    spec: &Spec,
    user: bool,
    suggest: bool,
) -> Result<(Vec<Site>, Option<String>), Error> {
    let place = place_text(spec);
    if let Some(func) = &spec.point.function {
        return function_sites(di, spec, func, &place, user, suggest)
            .map(|s| (s, Some(func.clone())));
    }
    let pp = &spec.point;
    let file = pp.file.clone().unwrap_or_default();
    let line = pp.line.unwrap_or(0);
    // The file table first, so that the rows of units that can't hold the file are never built.
    let units: Vec<usize> = (0..di.unit_count())
        .filter(|&u| {
            di.unit_mentions_file(u, &file)
                && di
                    .rows(u)
                    .iter()
                    .any(|r| dwarf::tail_matches(&r.file, &file))
        })
        .collect();
    if units.is_empty() {
        return Err(Error::Unsupported(format!(
            "source file `{file}` is not in the debug information of {}",
            di.path.display()
        )));
    }
    Ok((
        line_sites(di, &units, &file, line, &place, None, suggest)?,
        None,
    ))
}

/// The sites of a point in function `func`: a line relative to its declaration, a lazy pattern in it, or its
/// entries (an offset into them, or their returns).
fn function_sites(
    di: &DebugInfo,
    spec: &Spec,
    func: &str,
    place: &str,
    user: bool,
    suggest: bool,
) -> Result<Vec<Site>, Error> {
    let pp = &spec.point;
    let instances = function_instances(di, pp, func)?;
    if let Some(rel) = pp.line {
        let inst = instances
            .iter()
            .find(|i| !i.inlined)
            .unwrap_or(&instances[0]);
        let decl = di.decl_line(inst.unit, inst.die).unwrap_or(0);
        let file = di
            .file_attr(inst.unit, inst.die, gimli::DW_AT_decl_file)
            .unwrap_or_default();
        return line_sites(
            di,
            &[inst.unit],
            &file,
            decl + rel,
            place,
            Some(func),
            suggest,
        );
    }
    if let Some(pattern) = &pp.lazy {
        return lazy_sites(di, &instances, pattern, place, func);
    }
    let has_var_args = spec
        .args
        .iter()
        .any(|a| !matches!(a, Arg::Raw { .. } | Arg::Retval { .. }));
    let mut out = Vec::new();
    for inst in &instances {
        if let Some(site) = entry_site(di, pp, inst, place, func, user && has_var_args)? {
            out.push(site);
        }
    }
    if out.is_empty() {
        return Err(Error::Unsupported(format!(
            "`{func}` exists only inlined; a return probe needs an out-of-line copy"
        )));
    }
    Ok(out)
}

/// The copies of `func` the point takes (never none): with `--no-inlines` only the out-of-line ones.
fn function_instances(
    di: &DebugInfo,
    pp: &spec::Point,
    func: &str,
) -> Result<Vec<Instance>, Error> {
    let mut instances = di.instances(func, pp.file.as_deref());
    if pp.no_inlines && !instances.is_empty() {
        instances.retain(|i| !i.inlined);
        if instances.is_empty() {
            return Err(Error::Unsupported(format!(
                "`{func}` exists only inlined, and --no-inlines leaves its inlined copies out"
            )));
        }
    }
    if instances.is_empty() {
        return Err(Error::FunctionNotFound {
            function: func.to_string(),
            path: di.path.clone(),
        });
    }
    Ok(instances)
}

/// The site of a point at a copy's entry (with its offset), or `None` for a copy perf skips: one without an
/// entry, or an inlined one under a return probe. `user_vars`: a user program's variables are fetched there,
/// so an -O0 function's prologue is skipped first.
fn entry_site(
    di: &DebugInfo,
    pp: &spec::Point,
    inst: &Instance,
    place: &str,
    func: &str,
    user_vars: bool,
) -> Result<Option<Site>, Error> {
    // perf skips an instance whose entry is 0 ("has no entry PC"): code the linker dropped (an unused generic's
    // copy) keeps its DWARF with addresses relocated to 0.
    let Some(entry) = di.entry_pc(inst.unit, inst.die).filter(|&e| e != 0) else {
        return Ok(None);
    };
    if pp.retprobe && inst.inlined {
        // An inlined copy has no return instruction to probe.
        return Ok(None);
    }
    let mut address = entry;
    if user_vars && !inst.inlined && !di.optimized(inst.unit) && !pp.retprobe && pp.offset.is_none()
    {
        // perf's skip_prologue: at -O0 the arguments are in their stack slots only after it.
        address = di.skip_prologue(inst.unit, inst.die, entry);
    }
    address += pp.offset.unwrap_or(0);
    if pp.offset.is_some_and(|o| o > 0) && !di.contains(inst.unit, inst.die, address) {
        // perf: "Specified offset is out of FUNC".
        let size: u64 = di
            .ranges(inst.unit, inst.die)
            .iter()
            .map(|r| r.1 - r.0)
            .sum();
        return Err(Error::Unsupported(format!(
            "{place}: the offset is out of `{func}` (its code is {size} bytes)"
        )));
    }
    let function = if inst.inlined {
        di.real_function_at(inst.unit, address).unwrap_or(inst.die)
    } else {
        inst.die
    };
    Ok(Some(Site {
        unit: inst.unit,
        function,
        address,
        entry_of: pp.offset.is_none().then_some(inst.die),
        scope: inst.die,
    }))
}

fn line_sites(
    di: &DebugInfo,
    units: &[usize],
    file: &str,
    line: u64,
    place: &str,
    function: Option<&str>,
    suggest: bool,
) -> Result<Vec<Site>, Error> {
    let mut out: Vec<Site> = Vec::new();
    let mut shared = Vec::new();
    for &u in units {
        for row in di.rows(u) {
            if !row.is_stmt
                || row.end_sequence
                || row.line != line
                || !dwarf::tail_matches(&row.file, file)
            {
                continue;
            }
            if out.iter().any(|s| s.address == row.address) {
                continue;
            }
            // perf's verify_representive_line: an address that maps back to another line is that line's.
            match di.line_at(u, row.address) {
                Some((f, l)) if l == line && *f == *row.file => {}
                _ => {
                    if !shared.contains(&(u, row.address)) {
                        shared.push((u, row.address));
                    }
                    continue;
                }
            }
            let Some(real) = di.real_function_at(u, row.address) else {
                continue;
            };
            let scope = best_scope(di, u, real, row.address, function, &row.file, line);
            out.push(Site {
                unit: u,
                function: real,
                address: row.address,
                entry_of: None,
                scope,
            });
        }
    }
    if out.is_empty() {
        if !shared.is_empty() {
            return Err(Error::SharedLine {
                place: place.into(),
                line,
                suggestion: if suggest {
                    suggestion(di, &shared, place)
                } else {
                    None
                },
            });
        }
        return Err(Error::NoCode {
            place: place.into(),
            line,
            file: file.into(),
        });
    }
    Ok(out)
}

/// A place to suggest for a line whose addresses all belong to other lines: the first of those addresses'
/// own points (`FUNC:LINE`, or `FUNC+OFFS`) that differs from what was typed and that bport then takes.
fn suggestion(di: &DebugInfo, shared: &[(usize, u64)], place: &str) -> Option<String> {
    let mut tried: Vec<String> = Vec::new();
    for &(u, addr) in shared {
        let mut candidates = Vec::new();
        if let Some(p) = show::point_of(di, u, addr) {
            candidates.push(p.split('@').next().unwrap_or_default().to_string());
        }
        // The same address by offset: always its own place.
        if let Some(f) = di.real_function_at(u, addr) {
            if let (Some(name), Some(entry)) = (di.name(u, f), di.entry_pc(u, f)) {
                candidates.push(match addr - entry {
                    0 => name,
                    off => format!("{name}+{off}"),
                });
            }
        }
        for c in candidates {
            if c == place || tried.contains(&c) {
                continue;
            }
            tried.push(c.clone());
            let Ok(spec) = spec::parse(&c) else { continue };
            if sites_with(di, &spec, true, false).is_ok() {
                return Some(c);
            }
        }
    }
    None
}

/// perf's find_best_scope: among the function and the inlined copies holding `addr` (outer first), the first
/// named `function` when a function was given; else the one declared in `file` nearest above `line`; else the
/// out-of-line function (perf's fallback stops at the first scope of its walk).
fn best_scope(
    di: &DebugInfo,
    unit: usize,
    real: usize,
    addr: u64,
    function: Option<&str>,
    file: &str,
    line: u64,
) -> usize {
    let instances: Vec<usize> = di
        .scopes_at(unit, real, addr)
        .into_iter()
        .filter(|&s| {
            matches!(
                di.dies(unit)[s].tag,
                gimli::DW_TAG_subprogram | gimli::DW_TAG_inlined_subroutine
            )
        })
        .collect();
    let mut best = None;
    let mut diff = u64::MAX;
    for &s in &instances {
        if di.file_attr(unit, s, gimli::DW_AT_decl_file).as_deref() != Some(file) {
            continue;
        }
        match function {
            Some(f) => {
                // perf's die_match_name: the name, or the name with a suffix such as `.isra.0`.
                if di.name(unit, s).is_some_and(|n| {
                    n == f || n.strip_prefix(f).is_some_and(|r| r.starts_with('.'))
                }) {
                    return s;
                }
            }
            None => {
                if let Some(d) = di.decl_line(unit, s).filter(|&d| d < line) {
                    if line - d < diff {
                        diff = line - d;
                        best = Some(s);
                    }
                }
            }
        }
    }
    // perf's fallback (find_inner_scope_cb) takes the first scope its walk visits: the outermost.
    best.unwrap_or(real)
}

fn lazy_sites(
    di: &DebugInfo,
    instances: &[Instance],
    pattern: &str,
    place: &str,
    function: &str,
) -> Result<Vec<Site>, Error> {
    let mut out: Vec<Site> = Vec::new();
    let pat: String = pattern.chars().filter(|c| !c.is_whitespace()).collect();
    for inst in instances.iter().filter(|i| !i.inlined) {
        let Some(file) = di.file_attr(inst.unit, inst.die, gimli::DW_AT_decl_file) else {
            continue;
        };
        let source = std::fs::read_to_string(&file).map_err(|source| Error::Read {
            path: file.clone().into(),
            source,
        })?;
        let lines: Vec<&str> = source.lines().collect();
        for row in di.rows(inst.unit) {
            if !row.is_stmt
                || row.end_sequence
                || *row.file != *file
                || !di.contains(inst.unit, inst.die, row.address)
            {
                continue;
            }
            let Some(text) = lines.get(row.line as usize - 1) else {
                continue;
            };
            let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            if tracefs::glob_match(&pat, &text) && !out.iter().any(|s| s.address == row.address) {
                out.push(Site {
                    unit: inst.unit,
                    function: inst.die,
                    address: row.address,
                    entry_of: None,
                    scope: best_scope(
                        di,
                        inst.unit,
                        inst.die,
                        row.address,
                        Some(function),
                        &file,
                        row.line,
                    ),
                });
            }
        }
    }
    if out.is_empty() {
        return Err(Error::Unsupported(format!(
            "{place}: no line matches the pattern `{pattern}`"
        )));
    }
    Ok(out)
}

fn find_var(di: &DebugInfo, unit: usize, order: &[usize], name: &str) -> Option<VarDie> {
    for &scope in order {
        for c in di.children(unit, scope) {
            let tag = di.dies(unit)[c].tag;
            if (tag == gimli::DW_TAG_variable || tag == gimli::DW_TAG_formal_parameter)
                && di.name(unit, c).as_deref() == Some(name)
            {
                return Some(VarDie { unit, die: c });
            }
        }
    }
    // Globals: this unit first, then the others; a definition with a location over a declaration.
    let units = std::iter::once(unit).chain((0..di.unit_count()).filter(|&u| u != unit));
    let mut declared = None;
    let key = di.name_key(name);
    for u in units {
        for c in di.top_level_named(u, gimli::DW_TAG_variable, &key) {
            let e = di.entry(u, c);
            if e.attr_value(gimli::DW_AT_location).is_some()
                || e.attr_value(gimli::DW_AT_const_value).is_some()
            {
                return Some(VarDie { unit: u, die: c });
            }
            declared.get_or_insert(VarDie { unit: u, die: c });
        }
    }
    declared
}

/// Variables and parameters visible at a site, in DIE order (perf's `copy_variables_cb` and
/// `collect_variables_cb` walk): the children of the site's scope, and of every DIE inside it whose code holds
/// the address (lexical blocks, inlined copies), depth first.
pub(crate) fn visible_vars(di: &DebugInfo, site: Site, params_only: bool) -> Vec<VarDie> {
    let mut out = Vec::new();
    walk_vars(
        di,
        site.unit,
        site.scope,
        site.address,
        params_only,
        &mut out,
    );
    out
}

fn walk_vars(
    di: &DebugInfo,
    unit: usize,
    scope: usize,
    address: u64,
    params_only: bool,
    out: &mut Vec<VarDie>,
) {
    for c in di.children(unit, scope).collect::<Vec<_>>() {
        let tag = di.dies(unit)[c].tag;
        if tag == gimli::DW_TAG_formal_parameter || (tag == gimli::DW_TAG_variable && !params_only)
        {
            out.push(VarDie { unit, die: c });
        } else if di.contains(unit, c, address) {
            walk_vars(di, unit, c, address, params_only, out);
        }
    }
}

/// Translates the arguments of `spec` at one site.
fn site_args(
    di: &DebugInfo,
    spec: &Spec,
    site: Site,
    place: &str,
    space: Space,
    notes: &mut Vec<String>,
) -> Result<Vec<TraceArg>, Error> {
    let chain = di.scopes_at(site.unit, site.function, site.address);
    let function = Some((site.unit, site.function));
    let mut out = Vec::new();
    for arg in &spec.args {
        match arg {
            Arg::Var(v) => {
                let var = find_var(di, site.unit, &site.search_order(&chain), &v.var).ok_or_else(
                    || Error::VariableNotFound {
                        var: v.var.clone(),
                        place: place.into(),
                        address: site.address,
                    },
                )?;
                let t = location::translate_arg(di, var, function, site.address, v, space)
                    .map_err(|reason| Error::Refused {
                        arg: v.text(),
                        place: place.into(),
                        reason,
                    })?;
                out.push(t);
            }
            Arg::Vars | Arg::Params => {
                let arg_text = if matches!(arg, Arg::Vars) {
                    "$vars"
                } else {
                    "$params"
                };
                let mut seen: Vec<String> = Vec::new();
                for var in visible_vars(di, site, matches!(arg, Arg::Params)) {
                    let Some(name) = di.name(var.unit, var.die) else {
                        continue;
                    };
                    // An inlined copy's parameter can share a name with the caller's: one fetcharg per name (the
                    // kernel refuses two of the same name).
                    if seen.contains(&name) {
                        continue;
                    }
                    seen.push(name.clone());
                    let va = spec::VarArg {
                        name: None,
                        var: name,
                        fields: Vec::new(),
                        ty: None,
                    };
                    // As perf: a variable that can't be fetched here is left out of $vars; unlike perf, the
                    // user hears why.
                    match location::translate_arg(di, var, function, site.address, &va, space) {
                        Ok(t) => out.push(t),
                        Err(reason) => {
                            let note =
                                format!("{place}: {arg_text} leaves out `{}`: {reason}", va.var);
                            if !notes.contains(&note) {
                                notes.push(note);
                            }
                        }
                    }
                }
            }
            Arg::Retval { name, ty } => out.push(TraceArg {
                name: name.clone().unwrap_or_default(),
                fetch: "$retval".into(),
                ty: ty.clone(),
            }),
            Arg::Raw { name, text } => out.push(raw_arg(name, text)),
        }
    }
    Ok(out)
}

/// Plans uprobes as perf does when the DWARF may not answer: each spec from `di` when there is DWARF and it
/// finds the function, else, for a spec that needs no DWARF (an entry, offset or return with raw fetchargs or
/// `$retval`), from the symbol table (perf's "Trying to use symbols", e.g. glibc's `malloc`, which its DWARF
/// names `__libc_malloc`). `no_dwarf` says why there is no DWARF when `di` is `None`.
pub fn plan_user_or_symbols(
    di: Option<&DebugInfo>,
    no_dwarf: &dyn Fn() -> Error,
    binary: &Path,
    specs: &[Spec],
    taken: &[String],
) -> Result<Plan, Error> {
    let mut plan = Plan::default();
    for spec in specs {
        let mut taken_now = taken.to_vec();
        taken_now.extend(plan.events());
        let one = std::slice::from_ref(spec);
        let part = match di {
            Some(di) => match plan_dwarf(di, Some(binary), one, &taken_now) {
                Err(
                    e @ (Error::FunctionNotFound { .. }
                    | Error::Dwarf { .. }
                    | Error::NoCode { .. }),
                ) if symtab::needs_dwarf(spec).is_none() => {
                    // Not in the symbol table either: the DWARF's answer is the one to give.
                    match symtab::plan(binary, one, &taken_now, symtab::Pick::First, no_dwarf) {
                        Err(Error::SymbolNotFound { .. }) => Err(e),
                        other => other,
                    }
                }
                other => other,
            },
            None => symtab::plan(binary, one, &taken_now, symtab::Pick::All, no_dwarf),
        }?;
        plan.probes.extend(part.probes);
        for n in part.notes {
            if !plan.notes.contains(&n) {
                plan.notes.push(n);
            }
        }
    }
    Ok(plan)
}

/// Plans kprobes from a kernel image's DWARF (`-k VMLINUX`): places are `FUNC+OFFSET`, globals `@SYMBOL`, the
/// group `probe`, and no prologue skipping (perf skips it for uprobes only).
pub fn plan_vmlinux(di: &DebugInfo, specs: &[Spec], taken: &[String]) -> Result<Plan, Error> {
    plan_dwarf(di, None, specs, taken)
}

fn plan_dwarf(
    di: &DebugInfo,
    binary: Option<&Path>,
    specs: &[Spec],
    taken: &[String],
) -> Result<Plan, Error> {
    let mut plan = Plan::default();
    let binary_text = binary
        .map(|b| b.to_string_lossy().into_owned())
        .unwrap_or_default();
    let space = if binary.is_some() {
        Space::User
    } else {
        Space::Kernel
    };
    for spec in specs {
        let place = place_text(spec);
        let (sites, function) = sites(di, spec, binary.is_some())?;
        let group = spec.group.clone().unwrap_or_else(|| match binary {
            Some(b) => user_group(b),
            None => "probe".into(),
        });
        let mut signatures: Vec<(String, Vec<TraceArg>, String)> = Vec::new();
        for (i, site) in sites.iter().enumerate() {
            let site = *site;
            let base = event_base(di, spec, function.as_deref(), &site);
            let args = site_args(di, spec, site, &place, space, &mut plan.notes)?;
            let probe_place = if binary.is_some() {
                let offset = di.file_offset(site.address).ok_or_else(|| {
                    Error::Unsupported(format!(
                        "{place}: address {:#x} is in no executable segment of {binary_text}",
                        site.address
                    ))
                })?;
                format!("{binary_text}:{offset:#x}")
            } else {
                let name = di.name(site.unit, site.function).unwrap_or_default();
                let entry = di
                    .entry_pc(site.unit, site.function)
                    .unwrap_or(site.address);
                format!("{name}+{}", site.address - entry)
            };
            let taken_names = EventsTaken {
                group: &group,
                taken,
                plan: &plan,
            };
            let event = site_event(&mut signatures, &base, &args, i == 0, &taken_names)?;
            plan.probes.push(Probe {
                retprobe: spec.point.retprobe,
                group: group.clone(),
                event,
                place: probe_place,
                args,
                address: site.address,
                kind: if binary.is_some() {
                    tracefs::Kind::Uprobe
                } else {
                    tracefs::Kind::Kprobe
                },
            });
        }
    }
    Ok(plan)
}

/// The event name a site's probe would take before numbering: the user's, else `FUNC` (`FUNC_L{line}` for a
/// function's line), else the site's own scope's name, suffixes cut and `__return` added for a return probe.
/// perf names a SRC:LINE probe after each address's own scope (tev->point.realname): an inlined function's name
/// inside its copies, the caller's elsewhere.
fn event_base(di: &DebugInfo, spec: &Spec, function: Option<&str>, site: &Site) -> String {
    let base = match (&spec.event, function) {
        (Some(e), _) => e.clone(),
        (None, Some(f)) => match spec.point.line {
            Some(l) if spec.point.lazy.is_none() && spec.point.offset.is_none() => {
                format!("{f}_L{l}")
            }
            _ => f.to_string(),
        },
        (None, None) => di
            .name(site.unit, site.scope)
            .or_else(|| di.name(site.unit, site.function))
            .unwrap_or_else(|| "probe".into()),
    };
    // `foo.isra.0` → `foo`, as perf cuts a symbol's suffixes off event names.
    let mut base = match base.find(['.', '@']) {
        Some(p) if p > 0 => base[..p].to_string(),
        _ => base,
    };
    if spec.point.retprobe {
        base.push_str("__return");
    }
    base
}

/// The `GROUP:EVENT` names a new event may not take: those defined already and those of the plan so far.
struct EventsTaken<'a> {
    group: &'a str,
    taken: &'a [String],
    plan: &'a Plan,
}

impl EventsTaken<'_> {
    fn contains(&self, name: &str) -> bool {
        let full = format!("{}:{name}", self.group);
        self.taken.contains(&full) || self.plan.events().contains(&full)
    }
}

/// The event of a spec's site with arguments `args`. The kernel appends a probe to an event only when its
/// arguments are the same; addresses whose arguments differ get perf's `_1`, `_2` events. `signatures` holds
/// the spec's events so far (base, arguments, name); `first`: the spec's first site, whose name perf never
/// numbers (it refuses a taken one).
fn site_event(
    signatures: &mut Vec<(String, Vec<TraceArg>, String)>,
    base: &str,
    args: &[TraceArg],
    first: bool,
    taken: &EventsTaken<'_>,
) -> Result<String, Error> {
    let key: Vec<(String, Option<String>)> = args
        .iter()
        .map(|a| (a.name.clone(), a.ty.clone()))
        .collect();
    if let Some((_, _, e)) = signatures.iter().find(|(b, a, _)| {
        *b == base
            && a.iter()
                .map(|a| (a.name.clone(), a.ty.clone()))
                .collect::<Vec<_>>()
                == key
    }) {
        return Ok(e.clone());
    }
    let mut name = base.to_string();
    let same_base = signatures.iter().filter(|(b, _, _)| *b == base).count();
    if first {
        // perf adds no suffix to a name of the user's or its own first choice: it refuses.
        if taken.contains(&name) {
            return Err(Error::EventExists(format!("{}:{name}", taken.group)));
        }
    } else if same_base > 0 || taken.contains(&name) {
        let mut n = same_base.max(1);
        name = format!("{base}_{n}");
        while taken.contains(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
    }
    signatures.push((base.to_string(), args.to_vec(), name.clone()));
    Ok(name)
}

/// Plans kprobes at kernel function entries (or returns) with arguments from BTF. Lines, lazy patterns and local
/// variables need the kernel's DWARF (`-k VMLINUX`).
pub fn plan_kernel(btf: &btf::Btf, specs: &[Spec], taken: &[String]) -> Result<Plan, Error> {
    let mut plan = Plan::default();
    for spec in specs {
        let place = place_text(spec);
        let pp = &spec.point;
        let Some(func) = pp.function.clone() else {
            return Err(Error::Unsupported(format!(
                "{place}: a source line in the kernel needs its DWARF; give -k VMLINUX (from the -dbg/debuginfo package)"
            )));
        };
        if pp.line.is_some() || pp.lazy.is_some() || pp.file.is_some() {
            return Err(Error::Unsupported(format!(
                "{place}: lines and source files in the kernel need its DWARF; give -k VMLINUX (from the -dbg/debuginfo package)"
            )));
        }
        let group = spec.group.clone().unwrap_or_else(|| "probe".into());
        let mut event = spec.event.clone().unwrap_or_else(|| func.clone());
        if let Some(p) = event.find(['.', '@']).filter(|&p| p > 0) {
            event.truncate(p);
        }
        if pp.retprobe {
            event.push_str("__return");
        }
        let full = format!("{group}:{event}");
        if taken.contains(&full) || plan.events().contains(&full) {
            return Err(Error::EventExists(full));
        }
        let args = kernel_args(btf, spec, &func, &place)?;
        plan.probes.push(Probe {
            retprobe: pp.retprobe,
            group,
            event,
            place: format!("{func}+{}", pp.offset.unwrap_or(0)),
            args,
            address: 0,
            kind: tracefs::Kind::Kprobe,
        });
    }
    Ok(plan)
}

/// The fetchargs of a kernel probe on `func`: variables (at the entry only) and `$vars`/`$params` from BTF's
/// parameters, `$retval`, and raw fetchargs as given.
fn kernel_args(
    btf: &btf::Btf,
    spec: &Spec,
    func: &str,
    place: &str,
) -> Result<Vec<TraceArg>, Error> {
    let pp = &spec.point;
    let not_found = || Error::FunctionNotFound {
        function: func.to_string(),
        path: "/sys/kernel/btf/vmlinux".into(),
    };
    let mut args = Vec::new();
    for arg in &spec.args {
        match arg {
            Arg::Var(v) => {
                if pp.retprobe || pp.offset.is_some_and(|o| o > 0) {
                    return Err(Error::Refused {
                        arg: v.text(),
                        place: place.to_string(),
                        reason: "BTF gives the argument registers at function entry only".into(),
                    });
                }
                if btf.function_params(func).is_none() {
                    return Err(not_found());
                }
                args.push(
                    btf::translate_arg(btf, func, v).map_err(|reason| Error::Refused {
                        arg: v.text(),
                        place: place.to_string(),
                        reason,
                    })?,
                );
            }
            Arg::Vars | Arg::Params => {
                let Some(params) = btf.function_params(func) else {
                    return Err(not_found());
                };
                for (name, _) in params {
                    let va = spec::VarArg {
                        name: None,
                        var: name,
                        fields: Vec::new(),
                        ty: None,
                    };
                    if let Ok(t) = btf::translate_arg(btf, func, &va) {
                        args.push(t);
                    }
                }
            }
            Arg::Retval { name, ty } => args.push(TraceArg {
                name: name.clone().unwrap_or_default(),
                fetch: "$retval".into(),
                ty: ty.clone(),
            }),
            Arg::Raw { name, text } => args.push(raw_arg(name, text)),
        }
    }
    Ok(args)
}

/// A fetcharg given as the kernel spells it (`%di`, `+8(%si):u32`): its type is what follows the last `:` outside
/// a dereference.
fn raw_arg(name: &Option<String>, text: &str) -> TraceArg {
    let (fetch, ty) = match text.rsplit_once(':') {
        Some((f, t)) if !t.contains(')') => (f.to_string(), Some(t.to_string())),
        _ => (text.to_string(), None),
    };
    TraceArg {
        name: name.clone().unwrap_or_default(),
        fetch,
        ty,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(event: &str, retprobe: bool) -> Probe {
        Probe {
            retprobe,
            group: "probe_x".into(),
            event: event.into(),
            place: "/x:0x10".into(),
            args: Vec::new(),
            address: 0x10,
            kind: tracefs::Kind::Uprobe,
        }
    }

    #[test]
    fn force_numbers_taken_names_as_perf_does() {
        let mut plan = Plan {
            probes: vec![
                probe("walk", false),
                probe("walk", false),
                probe("walk__return", true),
                probe("free", false),
            ],
            notes: Vec::new(),
        };
        let taken = [
            "probe_x:walk",
            "probe_x:walk_1",
            "probe_x:walk__return",
            "probe_y:free",
        ];
        force_names(&mut plan, &taken.map(String::from));
        let events: Vec<&str> = plan.probes.iter().map(|p| p.event.as_str()).collect();
        // One event's probes keep one name; `__return` is dropped from the numbered name, as perf's
        // get_new_event_name does; a name taken in another group is free here.
        assert_eq!(events, ["walk_2", "walk_2", "walk_3", "free"]);
    }

    #[test]
    fn points_print_back_as_perf_synthesizes_them() {
        let cases = [
            ("walk", "walk"),
            ("walk+0", "walk"),
            ("walk+12", "walk+12"),
            ("walk:4", "walk:4"),
            ("walk%return", "walk%return"),
            ("walk@inl.c", "walk@inl.c"),
            ("inl.c:9", "@inl.c:9"),
            ("walk;printf*", "walk"),
            (
                "/very/long/directory/name/for/the/source/inl.c:9",
                "@name/for/the/source/inl.c:9",
            ),
        ];
        for (text, perf) in cases {
            let spec = spec::parse(text).unwrap();
            assert_eq!(point_text(&spec), perf, "{text}");
        }
    }
}
