//! `bport verify`: per backport target, prove that record and script deliver complete callchains under that
//! kernel's perf ABI, and that the target branch carries the required perf fixes.

pub mod workloads;
