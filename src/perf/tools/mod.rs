//! The tools that read a recording and print or bundle something from it, each one file on top of `script`'s
//! session (samples resolved to frames and symbols) or of `data` directly: `report` (perf report's overhead
//! table), `archive` (buildid-list and the build-id cache bundle), `flame` (folded stacks and the SVG) and `dump`
//! (every record as the reader sees it).
//!
//! Each takes a `PerfFile` and options and writes to a writer or returns what it found; the CLI only parses
//! arguments and renders. Nothing else under `perf` imports these modules (tests/it/architecture/): they are the
//! top of the profiler, beside `lock` and `probe`, which own their own recording and reporting.

pub mod archive;
pub mod dump;
pub mod flame;
pub mod report;
