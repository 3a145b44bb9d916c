//! The perf.data format, read and write, mirrored (tools/perf/Documentation/perf.data-file-format.txt).
