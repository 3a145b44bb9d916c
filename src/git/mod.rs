//! Thin adapter over git2: the one place that opens repositories and speaks git2 broadly.
//!
//! `backport` and `rerere` reach git through here so that error context and object ids stay consistent, and so
//! that the rule "no shelling out to git" has a single home.
