//! Test support: the built binary, the external oracles (git, perf) and the missing-tool policy.

// Helpers are shared by every test module; not every module uses every helper.
#![allow(dead_code)]

pub mod bport;
pub mod compare;
pub mod oracle;
pub mod repo;
