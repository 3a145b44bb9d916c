//! Recording: perf_event_open, ring buffers, /proc synthesis; writes perf.data through `perf::data`.
