//! Symbolization over ELF files (object), the build-id cache, kallsyms and perf maps; pure over a file lookup.
