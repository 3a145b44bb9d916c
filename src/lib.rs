//! bport: keep perf tooling alive on old production kernels.
//!
//! Teams that run vendor kernels keep forward- and back-porting long patch series, and their profiling breaks in
//! quiet ways. bport is one tool with three parts:
//!
//! - [`backport`]: cherry-pick a patch list onto the current branch, skipping what is already applied (by trailer,
//!   subject or patch-id), stopping at conflicts, resumable, with git-compatible recorded resolutions ([`rerere`]).
//! - [`perf`]: record and script the real perf.data format, both ways, with frame-pointer, DWARF and LBR callchains.
//! - [`verify`]: prove, per backport target kernel, that record and script deliver complete callchains under that
//!   kernel's perf ABI, and that the branch carries the required perf fixes.
//!
//! # Design constraints
//!
//! - **Old kernels.** Everything that depends on a kernel or perf version asks one table, [`perf::abi`].
//! - **perf.data both ways.** What bport writes, Linux perf reads; what perf writes, bport reads, from any perf
//!   version, either byte order.
//! - **Nothing is lost on failure.** A half-applied patch list, the user's worktree, a recorded resolution and a
//!   perf.data file survive every error: state is versioned and written atomically.
//! - **No shelling out to git.** All git work goes through git2 behind [`git`]; the `git` binary is only a test
//!   oracle.
//! - **Only [`cli`] prints, prompts or exits.** Library functions take options and writers and return outcomes.

pub mod backport;
pub mod cli;
pub mod git;
pub mod perf;
pub mod rerere;
pub mod verify;

/// The rule for a test whose precondition is missing (loud skip locally, failure under CI), the same file the
/// integration tests use.
#[cfg(test)]
#[path = "../tests/it/support/require.rs"]
pub(crate) mod test_require;
