//! `bport completions` and `bport man`: generated from the clap definitions, so they never drift from `--help`.

use super::{Cli, CliError, CliResult};
use clap::CommandFactory;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `bport completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to generate completions for.
    pub shell: clap_complete::Shell,
}

/// Arguments of `bport man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write bport.1 and one page per subcommand (bport-apply.1, …) into this directory instead of bport.1 to stdout.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

pub fn run_completions(args: CompletionsArgs) -> CliResult {
    let mut cmd = Cli::command();
    // Generated into memory: clap_complete panics when its writer fails, and a closed stdout is normal use.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "bport", &mut script);
    std::io::stdout().lock().write_all(&script)?;
    Ok(())
}

pub fn run_man(args: ManArgs) -> CliResult {
    let cmd = Cli::command();
    match args.dir {
        None => clap_mangen::Man::new(cmd).render(&mut std::io::stdout().lock())?,
        Some(dir) => {
            std::fs::create_dir_all(&dir).map_err(|e| {
                CliError::file(
                    &e,
                    format!("cannot create man page directory {}: {e}", dir.display()),
                )
            })?;
            clap_mangen::generate_to(cmd, &dir).map_err(|e| {
                CliError::file(
                    &e,
                    format!("cannot write man pages into {}: {e}", dir.display()),
                )
            })?;
        }
    }
    Ok(())
}
