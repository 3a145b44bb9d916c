//! Demangling as perf 6.1 prints names (tools/perf/util/symbol-elf.c `demangle_sym`): C++ names without
//! parameter lists (perf passes no `DMGL_PARAMS` unless verbose), Rust legacy names without the hash, anything
//! else unchanged.

/// Demangles `name` the way `perf script` shows it, or returns it unchanged.
pub fn demangle(name: &str) -> String {
    if let Some(base) = name.strip_suffix("@plt") {
        // perf demangles the target's name, then appends `@plt`.
        return format!("{}@plt", demangle(base));
    }
    if name.starts_with("_R") || name.starts_with("_ZN") {
        // Compiler suffixes (`.warm`, `.cold`, `.llvm.123`) are dropped from Rust names, as perf shows them.
        let base = name.split('.').next().unwrap_or(name);
        if let Ok(d) = rustc_demangle::try_demangle(base) {
            // `{:#}` drops the `::h<hash>` suffix, as perf's rust_demangle_sym does.
            return format!("{d:#}");
        }
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            let options = cpp_demangle::DemangleOptions::new()
                .no_params()
                .no_return_type();
            if let Ok(d) = sym.demangle_with_options(&options) {
                return libiberty_style(d);
            }
        }
    }
    name.to_owned()
}

/// Rewrites the spots where cpp_demangle's text differs from libiberty's (which perf 6.1 uses) without
/// parameters: the function's cv-qualifiers go with the (omitted) parameter list, and integer template
/// arguments are written `8u`, `8ul`, not `(unsigned int)8`.
fn libiberty_style(mut d: String) -> String {
    while let Some(len) = [" const", " volatile", " &&", " &"]
        .iter()
        .find_map(|q| d.strip_suffix(q).map(str::len))
    {
        d.truncate(len);
    }
    // An empty template parameter pack: cpp_demangle writes `<T, >`, libiberty `<T>`.
    d = d.replace(", >", ">");
    const LITERALS: [(&str, &str); 6] = [
        ("(unsigned int)", "u"),
        ("(unsigned long)", "ul"),
        ("(unsigned long long)", "ull"),
        ("(long)", "l"),
        ("(long long)", "ll"),
        ("(int)", ""),
    ];
    for (cast, suffix) in LITERALS {
        let mut out = String::with_capacity(d.len());
        let mut rest = d.as_str();
        while let Some(pos) = rest.find(cast) {
            let after = &rest[pos + cast.len()..];
            let digits = after
                .char_indices()
                .take_while(|(i, c)| c.is_ascii_digit() || (*i == 0 && *c == '-'))
                .count();
            out.push_str(&rest[..pos]);
            if digits > 0 {
                out.push_str(&after[..digits]);
                out.push_str(suffix);
            } else {
                out.push_str(cast);
            }
            rest = &after[digits..];
        }
        out.push_str(rest);
        d = out;
    }
    d
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
        assert_eq!(demangle("_ZN2ns1K4spinEm@plt"), "ns::K::spin@plt");
        assert_eq!(demangle("_Znot_mangled"), "_Znot_mangled");
        // Seen in perf 6.1 output on rustc's and LLVM's libraries.
        assert_eq!(
            demangle("_RNvNtCs5wPqZkVjkEZ_18rustc_monomorphize12partitioning7collect.warm"),
            "rustc_monomorphize::partitioning::collect"
        );
        assert_eq!(
            demangle("_ZZN4llvm17nameUnamedGlobalsERNS_6ModuleEENK3$_0clEv"),
            "llvm::nameUnamedGlobals(llvm::Module&)::$_0::operator()"
        );
        assert_eq!(
            demangle("_ZN4llvm11SmallVectorIPiLj8EE4growEv"),
            "llvm::SmallVector<int*, 8u>::grow"
        );
    }
}
