//! Where output goes: data to stdout, messages for people to stderr; progress only on a terminal.

use std::io::{IsTerminal, Write};

/// Output policy shared by every command.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ui {
    /// `--quiet`: no status messages, no progress.
    pub quiet: bool,
    /// `--verbose` count; also enables the developer log.
    pub verbose: u8,
}

impl Ui {
    /// A status line for people (stderr), unless `--quiet`.
    pub fn status(&self, message: impl std::fmt::Display) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr().lock(), "{message}");
        }
    }

    /// A warning (stderr); shown even with `--quiet`, because it says something went wrong.
    pub fn warn(&self, message: impl std::fmt::Display) {
        let _ = writeln!(std::io::stderr().lock(), "warning: {message}");
    }

    /// Whether to draw progress bars and offer prompts: only on a terminal, never with `--quiet`.
    pub fn interactive(&self) -> bool {
        !self.quiet && std::io::stderr().is_terminal() && std::io::stdin().is_terminal()
    }

    /// A progress bar on stderr that draws only on a terminal (indicatif's stderr target checks that), with a
    /// rate limit so it never dominates a fast loop.
    pub fn progress(&self, len: u64) -> indicatif::ProgressBar {
        if self.quiet || !std::io::stderr().is_terminal() {
            return indicatif::ProgressBar::hidden();
        }
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(len),
            indicatif::ProgressDrawTarget::stderr_with_hz(20),
        );
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
                .expect("static template is valid"),
        );
        bar
    }
}

/// Whether stdin is a pipe (a FIFO): the one rule of every command that reads stdin (`apply`'s patch list,
/// `script`'s and the other readers' perf.data), as perf's: `-` names stdin, and without an input a pipe on stdin
/// is read. A terminal or `/dev/null` on stdin is never waited on.
pub fn stdin_is_pipe() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(|fd| std::fs::File::from(fd).metadata())
        .is_ok_and(|m| m.file_type().is_fifo())
}

/// A tiny stderr logger for developers, enabled by `-v` or `BPORT_LOG=debug` (the `log` facade, no extra crate).
struct StderrLogger;

impl log::Log for StderrLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            let _ = writeln!(
                std::io::stderr().lock(),
                "[{} {}] {}",
                record.level(),
                record.target(),
                record.args()
            );
        }
    }

    fn flush(&self) {}
}

static LOGGER: StderrLogger = StderrLogger;

/// Installs the developer logger at the level `-v` (info), `-vv` (debug), `-vvv` (trace) or `BPORT_LOG` asks for.
pub fn init_logging(verbose: u8) {
    let from_env = std::env::var("BPORT_LOG")
        .ok()
        .and_then(|v| v.parse::<log::LevelFilter>().ok());
    let level = match verbose {
        0 => from_env.unwrap_or(log::LevelFilter::Warn),
        1 => log::LevelFilter::Info,
        2 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    };
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level);
    }
}
