//! The backport engine: parse a patch list, decide what is already applied, and cherry-pick the rest in memory,
//! stopping at conflicts with resumable state.
