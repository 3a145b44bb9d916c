//! Demangling as perf 6.1 prints names (tools/perf/util/symbol-elf.c `demangle_sym`): C++ names without
//! parameter lists (perf passes no `DMGL_PARAMS` unless verbose), Rust legacy names without the hash, anything
//! else unchanged.

/// Demangles `name` the way `perf script` shows it, or returns it unchanged.
pub fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        // `{:#}` drops the `::h<hash>` suffix, as perf's rust_demangle_sym does.
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            let options = cpp_demangle::DemangleOptions::new()
                .no_params()
                .no_return_type();
            if let Ok(d) = sym.demangle_with_options(&options) {
                return d;
            }
        }
    }
    name.to_owned()
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn cpp_rust_and_c() {
        // Checked against perf 6.1 (Debian): `ns::K::spin(unsigned long)` is shown as `ns::K::spin`.
        assert_eq!(demangle("_ZN2ns1K4spinEm"), "ns::K::spin");
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE"),
            "core::fmt::write"
        );
        assert_eq!(demangle("chain_c"), "chain_c");
        assert_eq!(demangle("_Znot_mangled"), "_Znot_mangled");
    }
}
