//! The one integration test binary (STYLE 2.10): every module here shares one link of git2, gimli and object.

mod support;

mod apply;
mod archive;
mod cli_help;
mod perf_data;
mod real_programs;
mod record;
mod rerere;
mod rerere_apply;
mod rerere_render;
mod script;
mod unwind;
mod verify;
