//! Test support: the built binary, the external oracles (git, perf) and the missing-tool policy, throwaway
//! repositories and the conflict scenarios built in them.

// Helpers are shared by every test module; not every module uses every helper.
#![allow(dead_code)]

/// Ends the test here unless `$ready` holds: the guard every test that needs an external tool starts with
/// (`skip_unless!(oracle::has_perf());`). [`require::require`] (and [`oracle::require`] for tools) prints the loud
/// SKIPPED line, or fails under CI.
macro_rules! skip_unless {
    ($ready:expr) => {
        if !$ready {
            return;
        }
    };
}

pub mod bport;
pub mod compare;
pub mod machine;
pub mod oracle;
pub mod repo;
pub mod require;
pub mod scenario;
