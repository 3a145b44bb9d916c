//! Recorded conflict resolutions, compatible with git's rerere (rerere.c): the conflict id, the rr-cache layout in
//! `.git/rr-cache` and the shared `rerere-cache/`, replay by three-way merge, and training from an earlier port.

pub mod conflict_id;
pub mod xdiff;
