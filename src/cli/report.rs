//! `bport report`: the overhead table of a perf.data file by comm, pid, dso and sym, as `perf report --stdio`
//! (Children and Self columns and the call graph under each row when the samples carry callchains, as perf's
//! default).

use super::script::{input_or_stdin, open};
use super::CliResult;
use crate::perf::script::Options;
use crate::perf::tools::report::{self, ReportOptions, SortKey};
use std::path::PathBuf;

/// Arguments of `bport report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The perf.data file to read; `-` reads stdin. Default: stdin when it is a pipe, else perf.data (as perf).
    #[arg(short, long, value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Sort keys (columns), comma-separated: comm, pid, dso, sym (default comm,dso,sym); in branch mode comm,
    /// dso_from, symbol_from, symbol_to, cycles (the default).
    #[arg(short, long, value_delimiter = ',')]
    pub sort: Option<Vec<SortKey>>,

    /// Only samples in these DSOs (short or full names), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub dsos: Option<Vec<String>>,

    /// Text output (the only kind; accepted for perf compatibility).
    #[arg(long)]
    pub stdio: bool,

    /// Kernel symbols from this kallsyms file instead of the build-id cache or /proc/kallsyms.
    #[arg(long, value_name = "PATH")]
    pub kallsyms: Option<PathBuf>,

    /// Look for every DSO under this directory (perf's --symfs).
    #[arg(long, value_name = "DIR")]
    pub symfs: Option<PathBuf>,

    /// Children and Self columns: each entry also counts the samples whose callchain passes through it (perf's
    /// default when the samples carry callchains).
    #[arg(long, overrides_with = "no_children")]
    pub children: bool,

    /// One Overhead column: only the samples whose IP is in the entry.
    #[arg(long, overrides_with = "children")]
    pub no_children: bool,

    /// A row per branch of the samples' branch stacks (perf's default when the file records branch stacks).
    #[arg(short = 'b', long, overrides_with = "no_branch_stack")]
    pub branch_stack: bool,

    /// Rows by the samples' IPs even when the file records branch stacks.
    #[arg(long, overrides_with = "branch_stack")]
    pub no_branch_stack: bool,

    /// Call-graph text under each row: `graph` (perf's default, `graph,0.5,caller,function,percent` with
    /// children) or `none`.
    #[arg(short = 'g', long = "call-graph", value_parser = ["none", "graph"])]
    pub call_graph: Option<String>,
}

pub fn run(args: ReportArgs) -> CliResult {
    let input = input_or_stdin(args.input.clone());
    let file = open(&input)?;
    let mut script = Options::default();
    script.symbolizer.kallsyms = args.kallsyms.clone();
    script.symbolizer.symfs = args.symfs.clone();

    let modes = report::FileModes::of(&file);
    if args.branch_stack && !modes.branch_data {
        // builtin-report.c's answer too.
        return Err(super::error::CliError::user(format!(
            "--branch-stack: {} has no branch data (record with `-b` or `-j any`)",
            input.display()
        )));
    }
    // Branch mode turns cumulation and the call graph off.
    let branch = args.branch_stack || modes.branch_default && !args.no_branch_stack;
    let has_callchains = modes.callchains;
    let sort = match args.sort {
        Some(s) => s,
        None if branch => report::BRANCH_SORT.to_vec(),
        None if modes.tracepoints_only => vec![SortKey::Trace],
        None => vec![SortKey::Comm, SortKey::Dso, SortKey::Sym],
    };
    if let Some(k) = sort
        .iter()
        .find(|k| k.is_branch() != branch && **k != SortKey::Comm)
    {
        return Err(super::error::CliError::user(format!(
            "sort key `{}` needs {} (branch mode sorts by comm, dso_from, symbol_from, symbol_to, cycles; \
             otherwise by comm, pid, dso, sym, trace)",
            k.name(),
            if branch {
                "the sample mode; this file's report is in branch mode (--no-branch-stack leaves it)"
            } else {
                "branch mode (--branch-stack, on a file with branch stacks)"
            }
        )));
    }
    let options = ReportOptions {
        script,
        sort: sort.clone(),
        dsos: args.dsos,
        children: has_callchains && !args.no_children && !branch,
        graph: (has_callchains || modes.pipe_callchains)
            && args.call_graph.as_deref() != Some("none")
            && !branch,
        caller: !args.no_children,
        branch,
    };
    let tables = report::report(&file, &options)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    report::write_report(&mut out, &sort, &tables)?;
    std::io::Write::flush(&mut out)?;
    Ok(())
}
