//! Recording: perf_event_open, ring buffers, /proc synthesis; writes perf.data through `perf::data`.

pub mod attr;
pub mod dsos;
pub mod ring;
pub mod synth;
pub mod sys;
