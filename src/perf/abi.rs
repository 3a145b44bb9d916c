//! The kernel perf ABI by version: the one table every version-dependent decision asks.
