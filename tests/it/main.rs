//! The one integration test binary: every module here shares one link of git2, gimli and object.

#[macro_use]
mod support;

mod apply;
mod architecture;
mod archive;
mod ci;
mod cli_edges;
mod cli_help;
mod corpus;
mod exit_codes;
mod fixes;
mod hostile;
mod lock;
mod mail;
mod perf_data;
mod pipe;
mod probe;
mod readme;
mod real_programs;
mod real_symbols;
mod record;
mod report_live;
mod rerere;
mod script;
mod trace;
mod unwind;
mod verify;
