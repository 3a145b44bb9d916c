//! `bport probe`: define, list and delete uprobe/kprobe events with variables, with perf probe's flags.

use super::ui::Ui;
use super::{CliError, CliResult};
use crate::perf::probe::{self, dwarf::DebugInfo, filter::Filter, spec, target::Target, tracefs};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `bport probe`.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// The user binary (or library) to probe: uprobes with variables from its DWARF.
    #[arg(
        short = 'x',
        long = "exec",
        value_name = "BINARY",
        conflicts_with = "vmlinux"
    )]
    pub exec: Option<PathBuf>,

    /// The kernel image with DWARF; without it kernel probes take their arguments from BTF
    /// (/sys/kernel/btf/vmlinux).
    #[arg(short = 'k', long = "vmlinux", value_name = "VMLINUX")]
    pub vmlinux: Option<PathBuf>,

    /// Directory the sources are under (for -L and lazy patterns), when DWARF's paths are not where they are now.
    #[arg(short = 's', long = "source", value_name = "SRCDIR")]
    pub source: Option<PathBuf>,

    /// Print the tracefs definitions instead of writing them.
    #[arg(short = 'n', long = "dry-run")]
    pub dry_run: bool,

    /// List the probe events defined now (all, or those matching the glob), including those a crashed run left.
    #[arg(short = 'l', long = "list", value_name = "EVENT", num_args = 0..=1, default_missing_value = "*")]
    pub list: Option<String>,

    /// Delete probe events: GROUP:EVENT or EVENT, globs allowed.
    #[arg(short = 'd', long = "del", value_name = "EVENT")]
    pub del: Vec<String>,

    /// Show the source lines of FUNC[:START[-END]] that can be probed, numbered relative to the function.
    #[arg(short = 'L', long = "line", value_name = "FUNC[:RANGE]")]
    pub line: Option<String>,

    /// Show the variables that can be fetched at a probe point (a SPEC's point).
    #[arg(short = 'V', long = "vars", value_name = "POINT")]
    pub vars: Option<String>,

    /// With -V: global variables too.
    #[arg(long)]
    pub externs: bool,

    /// List the functions (and data symbols) of the binary that can be probed; FILTER (perf's globs with &, |,
    /// !) picks the names, `!_*` when none is given.
    #[arg(short = 'F', long = "funcs", value_name = "FILTER", num_args = 0..=1, default_missing_value = "!_*")]
    pub funcs: Option<String>,

    /// With -F or -V: the names to show (perf's filter: globs joined by &, |, !); ORed with -F's own FILTER.
    /// -V's default is `!__k???tab_* & !__crc_*`.
    #[arg(long = "filter", value_name = "FILTER")]
    pub filter: Vec<String>,

    /// With -V: also the variables located only elsewhere in the function; each marked `[VAL]` (can be fetched
    /// at the point) or `[INV]` (can't), with the address ranges of its locations.
    #[arg(long)]
    pub range: bool,

    /// Print the tracefs definitions of SPEC (as -a SPEC -n does).
    #[arg(short = 'D', long = "definition", value_name = "SPEC")]
    pub definition: Vec<String>,

    /// An event name already taken gets a numbered name (NAME_1, NAME_2, ...) instead of an error.
    #[arg(short = 'f', long = "force")]
    pub force: bool,

    /// Probe a function's out-of-line bodies only, not its inlined copies.
    #[arg(long = "no-inlines")]
    pub no_inlines: bool,

    /// Refuse a probe point that has more than N places (perf's default: 128).
    #[arg(long = "max-probes", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_probes: Option<u64>,

    /// Demangle C++ and Rust names in -F (the default).
    #[arg(long = "demangle", overrides_with = "no_demangle")]
    pub demangle: bool,

    /// Print -F's names as the symbol table has them.
    #[arg(long = "no-demangle", overrides_with = "demangle")]
    pub no_demangle: bool,

    /// Refused: see the error for what to use instead.
    #[arg(long = "symfs", value_name = "DIR", hide = true)]
    pub symfs: Option<String>,

    /// Refused: see the error for what to use instead.
    #[arg(short = 'm', long = "module", value_name = "MODULE", hide = true)]
    pub module: Option<String>,

    /// Refused: see the error for what to use instead.
    #[arg(long = "target-ns", value_name = "PID", hide = true)]
    pub target_ns: Option<String>,

    /// Refused: see the error for what to use instead.
    #[arg(long = "cache", hide = true)]
    pub cache: bool,

    /// Refused: see the error for what to use instead.
    #[arg(long = "bootconfig", hide = true)]
    pub bootconfig: bool,

    /// Refused: see the error for what to use instead.
    #[arg(long = "demangle-kernel", hide = true)]
    pub demangle_kernel: bool,

    /// Probe definitions: `[[GROUP:]EVENT=]FUNC[@SRC][:RELLINE|+OFFS|%return|;PATTERN] [ARG ...]` or
    /// `SRC:LINE [ARG ...]`; an ARG is `[NAME=]VAR[->MEMBER|.MEMBER]...[:TYPE]`, `$vars`, `$params`, `$retval`.
    ///
    /// The words form one definition, as perf reads them (`bport probe -x BIN work a b` probes `work` with `a`
    /// and `b`); give several probes with -a each.
    #[arg(value_name = "SPEC")]
    pub specs: Vec<String>,

    /// Add a probe: one SPEC per -a, as many as wanted (perf's --add).
    #[arg(short = 'a', long = "add", value_name = "SPEC")]
    pub add: Vec<String>,
}

/// perf 6.1's options bport does not take, each with why and what to use instead.
fn refused(args: &ProbeArgs) -> Option<CliError> {
    let (opt, why, instead) = if args.symfs.is_some() {
        (
            "--symfs",
            "bport reads a binary and its debug files where they are, not under another root (perf 6.1 does not look under it for -x either)",
            "give the binary itself to -x; its debug file is found through .gnu_debuglink, /usr/lib/debug and the build-id cache (~/.debug)",
        )
    } else if args.module.is_some() {
        (
            "-m/--module",
            "a module's DWARF is not read (its lines and locals need the module's debug file and relocation)",
            "probe a module function's entry by name without -m (e.g. `bport probe 'ext4_file_read_iter %di'`), its arguments as raw fetchargs",
        )
    } else if args.target_ns.is_some() {
        (
            "--target-ns",
            "binaries are not looked up in another mount namespace",
            "give -x the binary's path as this namespace sees it (/proc/PID/root/PATH)",
        )
    } else if args.cache {
        (
            "--cache",
            "bport keeps no probe cache (perf's ~/.debug/*/probes)",
            "keep the SPECs in a script and run bport probe -a SPEC again",
        )
    } else if args.bootconfig {
        (
            "--bootconfig",
            "bootconfig output (ftrace.event.* keys) is not written",
            "use -D SPEC for the tracefs definitions and translate them",
        )
    } else if args.demangle_kernel {
        (
            "--demangle-kernel",
            "kernel symbols are probed by their plain names (Rust kernel symbols are not demangled)",
            "give the mangled kernel symbol",
        )
    } else {
        return None;
    };
    Some(CliError::user(format!("{opt} is not supported: {why}")).hint(instead))
}

pub fn run(args: ProbeArgs, ui: &Ui) -> CliResult {
    if let Some(e) = refused(&args) {
        return Err(e);
    }
    if let Some(pattern) = &args.list {
        return list(pattern);
    }
    if !args.del.is_empty() {
        return delete(&args.del, ui);
    }
    if let Some(own) = &args.funcs {
        return show_functions(&args, own);
    }
    if let Some(line) = &args.line {
        return show_lines(&debuginfo(&args)?, line, args.source.as_deref());
    }
    if let Some(point) = &args.vars {
        return show_vars(&args, point);
    }
    add(&args, ui)
}

/// The DWARF of `-x` or `-k`, which -F, -L and -V read.
fn debuginfo(args: &ProbeArgs) -> CliResult<DebugInfo> {
    let Some(x) = args.exec.as_ref().or(args.vmlinux.as_ref()) else {
        return Err(CliError::user(
            "this needs -x BINARY or -k VMLINUX (lines and variables need DWARF)",
        ));
    };
    DebugInfo::open(&absolute(x)?).map_err(CliError::from)
}

/// `-F`: the functions (and data symbols) that can be probed.
fn show_functions(args: &ProbeArgs, own: &str) -> CliResult {
    // perf ORs -F's FILTER (or its default) with every --filter.
    let mut texts = vec![own.to_string()];
    texts.extend(args.filter.iter().cloned());
    let filter = parse_names_filter(&texts)?;
    let di = debuginfo(args)?;
    // Tens of thousands of lines on a big binary: one write per buffer, not per line.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for f in probe::functions(&di, &filter, !args.no_demangle) {
        writeln!(out, "{f}")?;
    }
    out.flush()?;
    Ok(())
}

/// `-V POINT`: the variables that can be fetched at each of a point's places.
fn show_vars(args: &ProbeArgs, point: &str) -> CliResult {
    let di = debuginfo(args)?;
    let mut spec = spec::parse(point).map_err(CliError::from)?;
    spec.point.no_inlines = args.no_inlines;
    spec.point.max_probes = args.max_probes.map(|n| n as usize);
    let filter = if args.filter.is_empty() {
        parse_names_filter(&[probe::DEFAULT_VAR_FILTER.to_string()])?
    } else {
        parse_names_filter(&args.filter)?
    };
    let sites =
        probe::available_vars(&di, &spec, args.externs, args.range).map_err(CliError::from)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "Available variables at {}", probe::point_text(&spec))?;
    for (at, vars) in sites {
        writeln!(out, "\t@<{at}>")?;
        let shown: Vec<String> = vars
            .iter()
            .filter(|v| filter.matches(&v.filter_text()))
            .map(|v| v.text())
            .collect();
        if shown.is_empty() {
            writeln!(out, "\t\t(No matched variables)")?;
        }
        for v in shown {
            writeln!(out, "\t\t{v}")?;
        }
    }
    Ok(())
}

/// The probe definitions given: every -a is one, -D's too, and the positional words together one more (perf).
fn specs_given(args: &ProbeArgs) -> CliResult<Vec<spec::Spec>> {
    let mut texts = args.add.clone();
    texts.extend(args.definition.iter().cloned());
    if !args.specs.is_empty() {
        texts.push(args.specs.join(" "));
    }
    if texts.is_empty() {
        return Err(
            CliError::user("no probe given").hint("e.g. bport probe -x ./prog 'work:4 a i acc'")
        );
    }
    let mut specs = texts
        .iter()
        .map(|s| spec::parse(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::from)?;
    for s in &mut specs {
        s.point.no_inlines = args.no_inlines;
        s.point.max_probes = args.max_probes.map(|n| n as usize);
    }
    Ok(specs)
}

/// Plans the probes given and writes their definitions to tracefs, or prints them (`-n`, `-D`).
fn add(args: &ProbeArgs, ui: &Ui) -> CliResult {
    let specs = specs_given(args)?;
    let destination = if args.dry_run || !args.definition.is_empty() {
        Destination::Print {
            taken_in: tracefs::Tracefs::open().ok(),
        }
    } else {
        Destination::Tracefs(tracefs::Tracefs::open().map_err(CliError::from)?)
    };
    let taken = match destination.tracefs() {
        Some(fs) => fs.event_names().map_err(CliError::from)?,
        None => Vec::new(),
    };
    let exec = args.exec.as_deref().map(absolute).transpose()?;
    let vmlinux = match exec {
        Some(_) => None,
        None => args.vmlinux.as_deref().map(absolute).transpose()?,
    };
    let target = match (&exec, &vmlinux) {
        (Some(x), _) => Target::Program(x),
        (None, Some(k)) => Target::Vmlinux(k),
        (None, None) => Target::RunningKernel,
    };
    // With --force the plan is made as if nothing were taken, then the taken names are numbered as perf does.
    let mut plan = probe::target::plan(target, &specs, if args.force { &[] } else { &taken })
        .map_err(|e| {
            let exists = matches!(e, probe::Error::EventExists(_));
            let err = CliError::from(e);
            if exists {
                err.hint("or let -f/--force number the new name (NAME_1, NAME_2, ...) as perf does")
            } else {
                err
            }
        })?;
    if args.force {
        probe::force_names(&mut plan, &taken);
    }
    for note in &plan.notes {
        ui.warn(note);
    }
    let defs: Vec<String> = plan.probes.iter().map(|p| p.definition()).collect();
    let fs = match destination {
        Destination::Print { .. } => {
            let mut out = std::io::stdout().lock();
            for d in &defs {
                writeln!(out, "{d}")?;
            }
            return Ok(());
        }
        Destination::Tracefs(fs) => fs,
    };
    fs.add(target.kind(), &defs).map_err(CliError::from)?;
    report_added(&plan, &specs, ui);
    Ok(())
}

/// perf's report of the events added, and how to record them.
fn report_added(plan: &probe::Plan, specs: &[spec::Spec], ui: &Ui) {
    let events = plan.events();
    ui.status(format!(
        "Added new event{}:",
        if events.len() > 1 { "s" } else { "" }
    ));
    for (event, spec) in events.iter().zip(specs.iter().cycle()) {
        let args: Vec<String> = spec
            .args
            .iter()
            .map(|a| match a {
                spec::Arg::Var(v) => match &v.name {
                    Some(n) => format!("{n}={}", v.text()),
                    None if !v.fields.is_empty() => format!("{}={}", v.trace_name(), v.text()),
                    None => v.text(),
                },
                spec::Arg::Vars => "$vars".into(),
                spec::Arg::Params => "$params".into(),
                spec::Arg::Retval { .. } => "$retval".into(),
                spec::Arg::Raw { text, .. } => text.clone(),
            })
            .collect();
        let mut line = format!(
            "  {event:<20} (on {}",
            spec.text.split_whitespace().next().unwrap_or("")
        );
        if let Some(x) = &args_exec(&args_path(plan, event)) {
            line.push_str(&format!(" in {x}"));
        }
        if !args.is_empty() {
            line.push_str(&format!(" with {}", args.join(" ")));
        }
        line.push(')');
        ui.status(line);
    }
    ui.status("");
    ui.status("You can now use it in all perf tools, such as:");
    ui.status("");
    ui.status(format!("\tbport record -e {} -- COMMAND", events[0]));
}

/// Where the definitions go.
enum Destination {
    /// Printed (`--dry-run`); tracefs, when it opens, only names the events already taken.
    Print { taken_in: Option<tracefs::Tracefs> },
    /// Written to tracefs.
    Tracefs(tracefs::Tracefs),
}

impl Destination {
    fn tracefs(&self) -> Option<&tracefs::Tracefs> {
        match self {
            Destination::Print { taken_in } => taken_in.as_ref(),
            Destination::Tracefs(fs) => Some(fs),
        }
    }
}

fn args_path(plan: &probe::Plan, event: &str) -> Option<String> {
    plan.probes
        .iter()
        .find(|p| format!("{}:{}", p.group, p.event) == event)
        .map(|p| p.place.clone())
}

fn args_exec(place: &Option<String>) -> Option<String> {
    let place = place.as_ref()?;
    let (path, _) = place.rsplit_once(':')?;
    path.starts_with('/').then(|| path.to_string())
}

fn absolute(path: &Path) -> CliResult<PathBuf> {
    std::fs::canonicalize(path)
        .map_err(|e| CliError::file(&e, format!("can't open {}: {e}", path.display())))
}

fn list(pattern: &str) -> CliResult {
    let filter = parse_filter(&[pattern.to_string()])?;
    let fs = tracefs::Tracefs::open().map_err(CliError::from)?;
    let mut out = std::io::stdout().lock();
    for kind in [tracefs::Kind::Kprobe, tracefs::Kind::Uprobe] {
        let mut lines = fs.read(kind).map_err(CliError::from)?;
        // perf lists the events sorted by name (an event's several probes stay in their order).
        lines.sort_by_key(|l| l.full_name());
        for line in lines {
            if !filter.matches_event(&line.group, &line.event) {
                continue;
            }
            writeln!(
                out,
                "  {:<20} ({})",
                line.full_name(),
                probe::describe(&line)
            )?;
        }
    }
    Ok(())
}

/// perf's name filter of `-F` and `-V`: several are ORed, as perf's strfilter__or does.
fn parse_names_filter(texts: &[String]) -> CliResult<Filter> {
    let mut filters = Vec::new();
    for t in texts {
        filters.push(Filter::parse(t).map_err(|source| {
            CliError::from(probe::Error::Filter {
                filter: t.clone(),
                source,
            })
            .hint("a filter is globs joined by & (and), | (or) and ! (not), e.g. 'work*|show' or '!_*'")
        })?);
    }
    Filter::any(filters).ok_or_else(|| CliError::user("an empty filter"))
}

/// perf's filter of `-l` and `-d` (globs with `&`, `|`, `!`, parentheses); repeated `-d` are ORed as perf does.
fn parse_filter(patterns: &[String]) -> CliResult<Filter> {
    let mut filters = Vec::new();
    for p in patterns {
        filters.push(Filter::parse(p).map_err(|source| {
            CliError::from(probe::Error::Filter {
                filter: p.clone(),
                source,
            })
            .hint("a filter is globs joined by & (and), | (or) and ! (not), e.g. 'probe_prog:*' or 'work*&!*return'")
        })?);
    }
    Filter::any(filters).ok_or_else(|| CliError::user("no event given to -d"))
}

/// Deletes every event the filters match, kprobes then uprobes, each kind in name order, as perf does; an
/// error only when nothing at all matched (perf: "does not hit any event").
fn delete(patterns: &[String], ui: &Ui) -> CliResult {
    let filter = parse_filter(patterns)?;
    let fs = tracefs::Tracefs::open().map_err(CliError::from)?;
    let mut found = false;
    for kind in [tracefs::Kind::Kprobe, tracefs::Kind::Uprobe] {
        let mut names: Vec<(String, String)> = (fs.read(kind).map_err(CliError::from)?)
            .into_iter()
            .filter(|l| filter.matches_event(&l.group, &l.event))
            .map(|l| (l.group, l.event))
            .collect();
        names.sort_by_key(|(g, e)| format!("{g}:{e}"));
        names.dedup();
        for (group, event) in names {
            fs.delete(kind, &group, &event).map_err(|e| {
                CliError::from(e).hint("an event that a recording still uses can't be deleted; stop the recording first")
            })?;
            ui.status(format!("Removed event: {group}:{event}"));
            found = true;
        }
    }
    if !found {
        return Err(CliError::from(probe::Error::NoMatch(patterns.join(" | ")))
            .hint("list the events with `bport probe -l`"));
    }
    Ok(())
}

fn show_lines(di: &DebugInfo, text: &str, source_dir: Option<&Path>) -> CliResult {
    let (func, range) = match text.split_once(':') {
        Some((f, r)) => (f, Some(r)),
        None => (text, None),
    };
    let bad = || {
        CliError::user(format!(
            "bad line range `{text}`: expected FUNC[:START[-END]]"
        ))
    };
    let (start, end) = match range {
        None => (None, None),
        Some(r) => match r.split_once('-') {
            Some((s, e)) => (
                Some(s.parse().map_err(|_| bad())?),
                Some(e.parse().map_err(|_| bad())?),
            ),
            None => match r.split_once('+') {
                Some((s, n)) => {
                    let s: u64 = s.parse().map_err(|_| bad())?;
                    let n: u64 = n.parse().map_err(|_| bad())?;
                    (Some(s), Some(s + n.saturating_sub(1)))
                }
                None => (Some(r.parse().map_err(|_| bad())?), None),
            },
        },
    };
    let lr = probe::line_range(di, func, start, end).map_err(CliError::from)?;
    let path = find_source(&lr.path, source_dir);
    let source = std::fs::read_to_string(&path).map_err(|e| {
        CliError::file(&e, format!("can't read the source {}: {e}", path.display()))
            .hint("give the directory the sources are under with -s SRCDIR")
    })?;
    let mut out = std::io::stdout().lock();
    probe::write_line_range(&lr, &source, &mut out)?;
    Ok(())
}

/// perf's get_real_path: the DWARF path, else SRCDIR joined with it or with shorter and shorter tails of it.
fn find_source(path: &str, source_dir: Option<&Path>) -> PathBuf {
    let Some(dir) = source_dir else {
        return PathBuf::from(path);
    };
    let rel = path.trim_start_matches('/');
    let mut tail = rel;
    loop {
        let candidate = dir.join(tail);
        if candidate.exists() {
            return candidate;
        }
        match tail.split_once('/') {
            Some((_, t)) => tail = t,
            None => return PathBuf::from(path),
        }
    }
}
