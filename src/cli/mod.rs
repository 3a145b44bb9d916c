//! The command-line layer: clap definitions (one file per command), rendering, prompts, progress and exit codes.
//!
//! This is the only layer that prints, prompts or exits. Each command file converts its arguments into the
//! library's options, calls the library, and renders the outcome.
//! Which exit code a library error gets is decided in one place, `error/` (a `From` impl per library error
//! type); command files pass errors on with `?` and may add a hint, and use `CliError::user` only for their own
//! argument checks.

mod apply;
mod archive;
mod buildid_list;
mod completions;
mod dump;
pub(crate) mod error;
mod fixes;
mod flamegraph;
mod list;
mod lock;
mod plan_json;
mod probe;
mod record;
mod report;
mod rerere;
mod rules;
mod script;
mod status;
pub(crate) mod ui;
mod verify;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub use error::{CliError, CliResult, Kind};
use ui::Ui;

/// Backport patch series with git-compatible rerere, and keep perf callchains working on old kernels.
///
/// Exit codes: 0 done, 1 stopped for the user (a conflict), 2 usage or bad input, 3 verify found a failing
/// check, 4 the environment lacks something needed (the message says what to do), 70 internal error.
#[derive(Debug, Parser)]
#[command(
    name = "bport",
    version,
    propagate_version = true,
    max_term_width = 110
)]
pub struct Cli {
    /// No status messages or progress on stderr (data on stdout and errors are still written).
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// More detail on stderr for developers (-v info, -vv debug, -vvv trace; also BPORT_LOG=debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write the patch list for a revision range (as `git log --reverse --oneline`).
    ///
    /// Example: bport list v6.1..perf-fixes > perf-fixes.txt
    List(list::ListArgs),
    /// Cherry-pick a patch list onto the current branch; resumable at conflicts.
    ///
    /// Each patch is picked in memory, or skipped because the branch already carries it (by upstream trailer,
    /// subject or patch-id; the rule is named), or skipped as empty. At a conflict bport stops with exit code 1,
    /// leaving git's conflict markers in the files and the conflict stages in the index; resolve, `git add`, then
    /// `bport apply --continue` (or `--skip` / `--abort`).
    ///
    /// Example: bport list v6.1..perf-fixes > fixes.txt && bport apply -x fixes.txt
    Apply(apply::ApplyArgs),
    /// List upstream fixes and reverts a branch lacks for what it carries.
    ///
    /// Reads `Fixes: <sha> ("subject")` lines and git's `This reverts commit <sha>` in the upstream range, follows
    /// them transitively, and leaves out what the branch carries under any id. Each entry follows a `# fixes …`
    /// line saying why; the output is ready for `bport apply`.
    ///
    /// Example: bport fixes --upstream origin/master > follow-ups.txt && bport apply follow-ups.txt
    Fixes(fixes::FixesArgs),
    /// Show the bport apply run in progress: the plan, the position and the stop.
    ///
    /// Example: bport status
    Status(status::StatusArgs),
    /// Recorded conflict resolutions, compatible with git's rerere.
    ///
    /// Without a subcommand, runs the rerere step on the current conflicts as `git rerere` does: records
    /// preimages, replays recorded resolutions (.git/rr-cache, then rerere-cache/) and records resolutions.
    ///
    /// Example: bport rerere train v4.1..vendor-4.1
    Rerere(rerere::RerereArgs),
    /// Record a profile into perf.data with perf's flags (fp, DWARF or LBR callchains).
    ///
    /// Example: bport record -F 999 -g -- ./my-program args
    Record(record::RecordArgs),
    /// Print a perf.data file's samples as `perf script` does, with full callchains.
    ///
    /// The callchain mode follows each event's sample type: REGS_USER+STACK_USER → DWARF unwinding,
    /// BRANCH_STACK with call stack → LBR, else the kernel's frame-pointer chain.
    ///
    /// Example: bport script -i perf.data | inferno-collapse-perf | inferno-flamegraph > flame.svg
    Script(script::ScriptArgs),
    /// Print the overhead table of a perf.data file by comm, dso and symbol, as `perf report --stdio`.
    ///
    /// Counts each sample's own IP (perf's --no-children -g none view).
    ///
    /// Example: bport report -i perf.data --sort comm,dso,sym --stdio
    Report(report::ReportArgs),
    /// List the build-ids a perf.data file recorded, as `perf buildid-list` does.
    ///
    /// Example: bport buildid-list -i perf.data --with-hits
    BuildidList(buildid_list::BuildidListArgs),
    /// Bundle the DSOs a recording's samples hit, in build-id cache layout.
    ///
    /// The tar holds each hit DSO (and kallsyms) as ~/.debug keeps them, so the recording symbolizes on another
    /// machine once the bundle is unpacked into its ~/.debug.
    ///
    /// Example: bport archive -i perf.data -o perf.data.tar && tar xf perf.data.tar -C ~/.debug
    Archive(archive::ArchiveArgs),
    /// Draw a flame graph (SVG) of a perf.data file, or print its folded stacks.
    ///
    /// Example: bport flamegraph -i perf.data -o flame.svg
    Flamegraph(flamegraph::FlamegraphArgs),
    /// Print every record of a perf.data file, one line each, for debugging.
    ///
    /// Like `perf report -D`: the header, attrs and features, then each record with its file offset and parsed
    /// fields, then the count of records per type.
    ///
    /// Example: bport dump -i perf.data --header-only
    Dump(dump::DumpArgs),
    /// Kernel lock contention (Linux 5.19+) through BPF, as `perf lock contention -b`.
    ///
    /// Example: bport lock contention -a --duration 5 -E 10
    Lock(lock::LockArgs),
    /// Define uprobe/kprobe events with DWARF or BTF variables, as perf probe does.
    ///
    /// Variables come from the binary's DWARF (locals, parameters, globals, struct members, strings), or for
    /// kernel function arguments from BTF. A value is fetched right or refused with the reason (computed values,
    /// entry values, pieces, optimized out). The events work with `bport record -e` and `perf record -e`.
    ///
    /// Example: bport probe -x ./prog 'work:4 a i acc' && bport record -e probe_prog:work_L4 -- ./prog
    #[command(disable_version_flag = true)]
    Probe(probe::ProbeArgs),
    /// Prove complete callchains on a target kernel, and the perf fixes on its branch.
    ///
    /// Example: bport verify --kernel 4.1
    Verify(verify::VerifyArgs),
    /// The verify VM's init (internal: run by `bport verify --kernel-image`).
    #[command(name = "verify-guest", hide = true)]
    VerifyGuest(verify::GuestArgs),
    /// Print shell completions for bash, zsh, fish, elvish or powershell.
    ///
    /// Example: bport completions bash > /etc/bash_completion.d/bport
    Completions(completions::CompletionsArgs),
    /// Write the bport(1) man page (roff) to stdout or a directory.
    ///
    /// Example: bport man --dir /usr/local/share/man/man1
    Man(completions::ManArgs),
}

/// Parses the command line, runs the command and maps the result to an exit code.
pub fn main() -> ExitCode {
    error::end_quietly_on_a_closed_stdout();
    let cli = Cli::parse();
    ui::init_logging(cli.verbose);
    let ui = Ui {
        quiet: cli.quiet,
        verbose: cli.verbose,
    };
    match run(cli.command, &ui) {
        Ok(code) => code,
        Err(err) => {
            if !err.is_broken_pipe() {
                let _ = err.render(&mut std::io::stderr().lock());
            }
            err.exit_code()
        }
    }
}

fn run(command: Command, ui: &Ui) -> CliResult<ExitCode> {
    match command {
        Command::Rerere(args) => return rerere::run(args, ui),
        Command::Verify(args) => return verify::run(args, ui),
        Command::VerifyGuest(args) => return verify::run_guest(args),
        Command::Apply(args) => return apply::run(args, ui),
        Command::List(args) => list::run(args, ui),
        Command::Fixes(args) => fixes::run(args, ui),
        Command::Status(args) => status::run(args, ui),
        Command::Completions(args) => completions::run_completions(args),
        Command::Man(args) => completions::run_man(args),
        Command::Record(args) => record::run(args, ui),
        Command::Script(args) => script::run(args, ui),
        Command::BuildidList(args) => buildid_list::run(args),
        Command::Archive(args) => archive::run(args, ui),
        Command::Flamegraph(args) => flamegraph::run(args, ui),
        Command::Report(args) => report::run(args),
        Command::Probe(args) => probe::run(args, ui),
        Command::Dump(args) => dump::run(args, ui),
        Command::Lock(args) => lock::run(args, ui),
    }
    .map(|()| ExitCode::SUCCESS)
}
