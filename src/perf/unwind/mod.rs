//! Unwinding as pure functions over registers and stack bytes: frame pointer, DWARF CFI (gimli), LBR.
