//! Demangling as perf 6.1 prints names (tools/perf/util/symbol-elf.c `demangle_sym`): C++ names without
//! parameter lists (perf passes no `DMGL_PARAMS` unless verbose), Rust legacy names without the hash, anything
//! else unchanged.

/// Demangles `name` the way `perf script` shows it, or returns it unchanged.
pub fn demangle(name: &str) -> String {
    if let Some(base) = name.strip_suffix("@plt") {
        // perf demangles the target's name, then appends `@plt`.
        return format!("{}@plt", demangle(base));
    }
    if let Some(d) = demangle_rust(name) {
        return d;
    }
    if name.starts_with("_Z") {
        if let Some(d) = demangle_cpp(name) {
            return d;
        }
    }
    name.to_owned()
}

/// Rust names as perf 6.1 (libiberty's rust-demangle.c, then perf's `rust_demangle_sym`) shows them: without
/// the `::h<hash>` suffix. Legacy names (`_ZN…17h<hash>E`) carry `.` inside their path (`_$LT$core..hash..sip`),
/// so only a compiler suffix after the closing `E` is cut (`.llvm.<n>`, as perf shows
/// `hashbrown::raw::RawTable<T,A>::reserve_rehash` for `…reserve_rehash17h…E.llvm.329…`); v0 names (`_R`) have
/// no `.` of their own.
fn demangle_rust(name: &str) -> Option<String> {
    let base = if name.starts_with("_R") {
        name.split('.').next().unwrap_or(name)
    } else if name.starts_with("_ZN") {
        match name.find(".llvm.") {
            Some(i) => &name[..i],
            None if name.ends_with('E') => name,
            None => name.rfind("E.").map_or(name, |i| &name[..=i]),
        }
    } else {
        return None;
    };
    let d = rustc_demangle::try_demangle(base).ok()?;
    // `{:#}` drops the `::h<hash>` suffix, as perf's rust_demangle_sym does.
    Some(format!("{d:#}"))
}

/// A C++ name without its parameter list, as libiberty's `cplus_demangle(name, DMGL_NO_OPTS)` writes it.
fn demangle_cpp(name: &str) -> Option<String> {
    if let Some(d) = demangle_thunk(name) {
        return Some(d);
    }
    let options = cpp_demangle::DemangleOptions::new()
        .no_params()
        .no_return_type();
    let demangle = |n: &str| {
        cpp_demangle::Symbol::new(n)
            .ok()
            .and_then(|sym| sym.demangle_with_options(&options).ok())
            .map(|d| libiberty_style(d, true))
            .map(|d| {
                // A function type as a template argument (`IF…E`, `function_ref<R(A)>`).
                if name.contains("IF") {
                    space_function_types(&d)
                } else {
                    d
                }
            })
    };
    if let Some(d) = demangle(name) {
        return Some(d);
    }
    // cpp_demangle rejects some of what g++ writes into return types and parameters (`sr` with a qualified
    // type, as in gcc's own `wi::bit_and<…>` or libstdc++'s `std::swap<Widget>`, whose `enable_if` return type
    // is such an expression). perf prints neither, so the name alone, closed by a made-up `void` return type
    // and parameter list, demangles to what perf shows. The function's name ends at an `E` (closing its
    // template arguments or nested name); the shortest prefix that parses is that end, since a shorter one
    // leaves a bracket open.
    name.match_indices('E')
        .map(|(i, _)| &name[..=i])
        .find_map(|prefix| {
            ["v", "vv"]
                .iter()
                .find_map(|tail| demangle(&format!("{prefix}{tail}")))
        })
}

/// Thunks and transaction clones (`_ZTh`, `_ZTv`, `_ZTc`, `_ZGTt`): libiberty names the function they stand
/// for as an inner, not top-level, encoding, so its parameters are written even without DMGL_PARAMS
/// (`non-virtual thunk to std::iostream::~basic_iostream()`); cpp_demangle writes its own `{…thunk…}` form.
fn demangle_thunk(name: &str) -> Option<String> {
    // A call offset: `h <number> _` or `v <number> _ <number> _`, numbers with an optional `n` sign.
    fn skip_offset(s: &str) -> Option<&str> {
        fn number(s: &str) -> Option<&str> {
            let s = s.strip_prefix('n').unwrap_or(s);
            let digits = s.bytes().take_while(u8::is_ascii_digit).count();
            (digits > 0).then(|| &s[digits..])?.strip_prefix('_')
        }
        match s.as_bytes().first()? {
            b'h' => number(&s[1..]),
            b'v' => number(number(&s[1..])?),
            _ => None,
        }
    }
    let (prefix, inner) = if let Some(rest) = name.strip_prefix("_ZGTt") {
        ("transaction clone for ", rest)
    } else if let Some(rest) = name.strip_prefix("_ZTc") {
        (
            "covariant return thunk to ",
            skip_offset(skip_offset(rest)?)?,
        )
    } else if let Some(rest) = name.strip_prefix("_ZT") {
        let kind = match rest.as_bytes().first()? {
            b'h' => "non-virtual thunk to ",
            b'v' => "virtual thunk to ",
            _ => return None,
        };
        (kind, skip_offset(rest)?)
    } else {
        return None;
    };
    let sym = cpp_demangle::Symbol::new(format!("_Z{inner}")).ok()?;
    let d = sym
        .demangle_with_options(&cpp_demangle::DemangleOptions::new().no_return_type())
        .ok()?;
    Some(format!("{prefix}{}", libiberty_style(d, false)))
}

/// Rewrites the spots where cpp_demangle's text differs from libiberty's (which perf 6.1 uses) without
/// parameters: the function's cv-qualifiers go with the (omitted) parameter list, and integer template
/// arguments are written `8u`, `8ul`, not `(unsigned int)8`.
fn libiberty_style(mut d: String, top_level: bool) -> String {
    while let Some(len) = [" const", " volatile", " &&", " &"]
        .iter()
        .find_map(|q| d.strip_suffix(q).map(str::len))
        .filter(|_| top_level)
    {
        d.truncate(len);
    }
    // Empty template parameter packs: cpp_demangle writes `<T, >` (`<T, , >` for two, `<, T>` for a first),
    // libiberty `<T>`.
    if d.contains(", >") || d.contains(", , ") || d.contains("<, ") {
        loop {
            let next = d
                .replace(", , ", ", ")
                .replace(", >", ">")
                .replace("<, ", "<");
            if next == d {
                break;
            }
            d = next;
        }
    }
    d = standard_abbreviations(d);
    if d.contains("std::nullptr_t") {
        // `Dn`: libiberty writes `decltype(nullptr)`.
        d = d.replace("std::nullptr_t", "decltype(nullptr)");
    }
    if d.contains('&') {
        d = parenthesize_function_addresses(&d);
    }
    integer_literals(d)
}

/// The standard abbreviations (`Ss`, `Si`, `So`, `Sd`): libiberty without DMGL_VERBOSE writes the short name
/// (cpp_demangle only does for `Ss`), but the full expansion when a constructor or destructor follows
/// (cp-demangle.c `d_substitution` peeks at `C`/`D`), whose name is then the template's.
fn standard_abbreviations(mut d: String) -> String {
    const EXPANSIONS: [(&str, &str, &str); 4] = [
        (
            "std::string",
            "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
            "basic_string",
        ),
        (
            "std::istream",
            "std::basic_istream<char, std::char_traits<char> >",
            "basic_istream",
        ),
        (
            "std::ostream",
            "std::basic_ostream<char, std::char_traits<char> >",
            "basic_ostream",
        ),
        (
            "std::iostream",
            "std::basic_iostream<char, std::char_traits<char> >",
            "basic_iostream",
        ),
    ];
    // Cheap guards first: this runs for every symbol a run hits.
    let standard = d.contains("std::") && (d.contains("string") || d.contains("stream"));
    for (short, full, base) in EXPANSIONS.iter().filter(|_| standard) {
        if d.contains(full) {
            d = d.replace(full, short);
        }
        if !d.contains(short) {
            continue;
        }
        let last = &short["std::".len()..];
        for name in [last, base] {
            for tilde in ["", "~"] {
                let from = format!("{short}::{tilde}{name}");
                d = replace_whole(&d, &from, &format!("{full}::{tilde}{base}"));
            }
        }
    }
    d
}

/// Integer literals in template arguments: cpp_demangle writes a cast (`(unsigned long)3`), libiberty a suffix
/// (`3ul`; nothing for `int`).
fn integer_literals(mut d: String) -> String {
    const LITERALS: [(&str, &str); 6] = [
        ("(unsigned int)", "u"),
        ("(unsigned long)", "ul"),
        ("(unsigned long long)", "ull"),
        ("(long)", "l"),
        ("(long long)", "ll"),
        ("(int)", ""),
    ];
    let casts = d.contains(')');
    for (cast, suffix) in LITERALS.iter().filter(|_| casts) {
        if !d.contains(cast) {
            continue;
        }
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

/// libiberty writes a function type with a space before its parameter list, whatever its return type
/// (`llvm::function_ref<llvm::PrevailingType (unsigned long)>`), cpp_demangle only after a builtin one (`void
/// (int)`, but `llvm::StringRef(llvm::StringRef)`): inside template arguments, a `(` right after a name or a `>`
/// gets the space, unless it opens `operator()`, `decltype(…)`, a lambda's parameters and the like, or is the
/// parameter list of a function a local entity is named by (`f(int)::$_0`).
fn space_function_types(d: &str) -> String {
    const KEYWORDS: [&str; 8] = [
        "operator", "decltype", "lambda", "noexcept", "sizeof", "alignof", "typeid", "throw",
    ];
    // Whether the parameter list opening at byte `at` belongs to a function a local entity names
    // (`f(int)::$_0`, `g() const::{lambda()#1}`: libiberty writes no space there).
    let encloses = |at: usize| {
        let mut level = 0usize;
        for (i, b) in d.bytes().enumerate().skip(at) {
            match b {
                b'(' => level += 1,
                b')' => {
                    level -= 1;
                    if level == 0 {
                        let mut rest = &d[i + 1..];
                        while let Some(r) = [" const", " volatile", " &&", " &"]
                            .iter()
                            .find_map(|q| rest.strip_prefix(q))
                        {
                            rest = r;
                        }
                        return rest.starts_with("::");
                    }
                }
                _ => {}
            }
        }
        false
    };
    let mut out = String::with_capacity(d.len() + 4);
    let mut depth = 0usize;
    for (at, ch) in d.char_indices() {
        match ch {
            '<' if !out.ends_with("operator") && !out.ends_with("operator<") => depth += 1,
            '>' if !out.ends_with("operator")
                && !out.ends_with("operator>")
                && !out.ends_with('-') =>
            {
                depth = depth.saturating_sub(1);
            }
            '(' if depth > 0 => {
                let after_name = out
                    .bytes()
                    .last()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'>');
                if after_name && !KEYWORDS.iter().any(|k| out.ends_with(k)) && !encloses(at) {
                    out.push(' ');
                }
            }
            _ => {}
        }
        out.push(ch);
    }
    out
}

/// `s` with every `from` that does not continue into a longer identifier replaced by `to`.
fn replace_whole(s: &str, from: &str, to: &str) -> String {
    if !s.contains(from) {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + to.len());
    let mut rest = s;
    while let Some(pos) = rest.find(from) {
        let after = &rest[pos + from.len()..];
        let whole = !after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        out.push_str(&rest[..pos]);
        out.push_str(if whole { to } else { from });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A template argument that is a function's address: cpp_demangle writes `&f(int)`, libiberty `&(f(int))`
/// (gcc's `hash_table<…>::traverse<void*, &(reset_indirect_string(indirect_string_node**, void*))>`).
fn parenthesize_function_addresses(d: &str) -> String {
    let bytes = d.as_bytes();
    let mut out = String::with_capacity(d.len() + 8);
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let starts_argument = i > 0 && matches!(bytes[i - 1], b'<' | b' ');
        let next_is_name = bytes
            .get(i + 1)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_');
        if bytes[i] == b'&' && starts_argument && next_is_name {
            // The name (with any template arguments), then its parameter list.
            let mut j = i + 1;
            let mut angle = 0usize;
            while j < bytes.len() {
                match bytes[j] {
                    b'<' => angle += 1,
                    b'>' if angle > 0 => angle -= 1,
                    b'(' if angle == 0 => break,
                    b',' | b'>' if angle == 0 => break,
                    _ => {}
                }
                j += 1;
            }
            if bytes.get(j) == Some(&b'(') {
                let mut depth = 0usize;
                let mut k = j;
                while k < bytes.len() {
                    match bytes[k] {
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    k += 1;
                }
                if k < bytes.len() {
                    out.push_str(&d[copied..=i]);
                    out.push('(');
                    out.push_str(&d[i + 1..=k]);
                    out.push(')');
                    copied = k + 1;
                    i = k + 1;
                    continue;
                }
            }
        }
        i += 1;
    }
    out.push_str(&d[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn function_types_in_template_arguments_are_spaced_as_in_libiberty() {
        // Seen in perf 6.1's script of a system-wide recording (LLVM in librustc_driver), c++filt -p alike.
        assert_eq!(
            demangle("_ZN4llvm12function_refIFNS_14PrevailingTypeEmEE11callback_fnIZ25LLVMRustCreateThinLTODataE3$_0EES1_lm"),
            "llvm::function_ref<llvm::PrevailingType (unsigned long)>::callback_fn<LLVMRustCreateThinLTOData::$_0>"
        );
        // The parameters of the function a local entity is named by take no space.
        assert_eq!(
            demangle("_ZN4llvm23SmallVectorTemplateBaseINS_15unique_functionIFvNS_9StringRefENS_3AnyEEEELb0EE18growAndEmplaceBackIJZ34LLVMSelfProfileInitializeCallbacksRNS_28PassInstrumentationCallbacksEPvPFvSA_PKcSC_EPFvSA_EE3$_0EEERS5_DpOT_"),
            "llvm::SmallVectorTemplateBase<llvm::unique_function<void (llvm::StringRef, llvm::Any)>, false>::growAndEmplaceBack<LLVMSelfProfileInitializeCallbacks(llvm::PassInstrumentationCallbacks&, void*, void (*)(void*, char const*, char const*), void (*)(void*))::$_0>"
        );
    }

    #[test]
    fn empty_template_packs_vanish_as_in_libiberty() {
        // g++'s inlined `std::pair` piecewise constructor: packs [string&&], [0ul], [], [] (`JE` twice), seen
        // as an `(inlined)` frame of the template test program; `c++filt -p` prints no trace of the empty ones.
        assert_eq!(
            demangle(
                "_ZNSt4pairIKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEElEC2IJOS5_EJLm0EEJEJEEERSt5tupleIJDpT_EERSA_IJDpT1_EESt12_Index_tupleIJXspT0_EEESJ_IJXspT2_EEE"
            ),
            "std::pair<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const, long>::pair<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >&&, 0ul>"
        );
    }

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

    #[test]
    fn rust_legacy_names_with_dots_and_suffixes() {
        // perf 6.1 on a rustc 1.95 binary built with -C symbol-mangling-version=legacy.
        assert_eq!(
            demangle("_ZN71_$LT$core..hash..sip..Hasher$LT$S$GT$$u20$as$u20$core..hash..Hasher$GT$5write17h3d3250e3e202ededE"),
            "<core::hash::sip::Hasher<S> as core::hash::Hasher>::write"
        );
        assert_eq!(
            demangle("_ZN9hashbrown3raw21RawTable$LT$T$C$A$GT$14reserve_rehash17hf8b5b9d04be6436fE.llvm.3294895243709954340"),
            "hashbrown::raw::RawTable<T,A>::reserve_rehash"
        );
    }

    #[test]
    fn cpp_names_cpp_demangle_rejects_or_writes_differently() {
        // perf 6.1 (libstdc++ 12, inlined in a g++ -O2 program): the return type is an `sr` expression.
        assert_eq!(
            demangle("_ZSt4swapI6WidgetENSt9enable_ifIXsrSt6__and_IJSt6__not_ISt15__is_tuple_likeIT_EESt21is_move_constructibleIS5_ESt18is_move_assignableIS5_EEE5valueEvE4typeERS5_SF_"),
            "std::swap<Widget>"
        );
        // gcc 12's cc1plus, checked with c++filt -p.
        assert_eq!(
            demangle("_ZN2wi3absI16generic_wide_intI20wide_int_ref_storageILb0ELb0EEEEENS_13binary_traitsIT_S6_XsrNS_10int_traitsIS6_EE14precision_typeEXsrS8_14precision_typeEE11result_typeERKS6_"),
            "wi::abs<generic_wide_int<wide_int_ref_storage<false, false> > >"
        );
        assert_eq!(
            demangle("_ZN10hash_tableI13cselib_hasherLb0E11xcallocatorE8traverseIP8_IO_FILEXadL_Z15dump_cselib_valPP10cselib_valS5_EEEEvT_"),
            "hash_table<cselib_hasher, false, xcallocator>::traverse<_IO_FILE*, &(dump_cselib_val(cselib_val**, _IO_FILE*))>"
        );
        // libstdc++: abbreviations, constructors of them, thunks.
        assert_eq!(demangle("_ZNSi6gcountEv"), "std::istream::gcount");
        assert_eq!(
            demangle("_ZNSsC1Ev"),
            "std::basic_string<char, std::char_traits<char>, std::allocator<char> >::basic_string"
        );
        assert_eq!(
            demangle("_ZThn16_NSdD1Ev"),
            "non-virtual thunk to std::basic_iostream<char, std::char_traits<char> >::~basic_iostream()"
        );
    }
}
