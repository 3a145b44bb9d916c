//! The profiler: the kernel perf ABI table, the perf.data format (read and write), recording, unwinding,
//! symbolization, perf-script-compatible output and the tools that read a recording (`tools`: report, archive,
//! flame graphs, dump).
//!
//! Vocabulary used throughout: an `avma` is an address in the profiled process, an `svma` an address as stated in
//! the ELF file, a `file_offset` a position in the file. A frame is either an instruction pointer (the sampled IP)
//! or a return address (every caller frame), and only return addresses are looked up at `address - 1`.
//!
//! Dependencies point down (ARCHITECTURE.md's table of perf's parts is the rule, and its test): `abi` and `sys`
//! (the system calls) at the bottom; `data` uses only `abi`; `record` writes through `data`; `script` reads
//! through `data` and uses `unwind` and `symbols`; `unwind` and `symbols` never import `record`; `tools` reads
//! through `script` and `data`, and nothing else here imports it. Nothing here imports `backport`, `rerere` or
//! `git`.

pub mod abi;
pub mod bpf;
pub mod data;
pub mod lock;
pub mod probe;
pub(crate) mod rbtree;
pub mod record;
pub mod script;
pub mod symbols;
pub(crate) mod sys;
pub mod tools;
pub mod trace;
pub mod unwind;
pub mod workloads;
