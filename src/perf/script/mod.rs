//! perf-script-compatible text output of a perf.data file.
