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
        if let Some(d) = demangle_plain(name) {
            return d;
        }
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

/// The names of plain C++ functions, without cpp_demangle: `_Z` (or `_ZL`) and one name, or `_ZN` (or `_ZNK`) and
/// two or more names closed by `E`, then parameters made only of builtin types, names and back-references, with
/// pointer, reference and const qualifiers (`_Z9fold_exprP9tree_node`, `_ZN2ns1K4spinEm`). perf shows them as
/// the names joined by `::`, which is what [`demangle_cpp`] gives for them, at a fiftieth of the cost: parsing a
/// name with cpp_demangle took a tenth of `bport script` on gcc's `cc1`, whose functions are nearly all of this
/// shape. `None` for anything else (templates, operators, constructors, `std::`, clones such as `.isra.0`, any
/// back-reference to a component not seen yet), which goes to cpp_demangle.
fn demangle_plain(name: &str) -> Option<String> {
    let mut p = Plain {
        b: name.strip_prefix("_Z")?.as_bytes(),
        at: 0,
        subs: 0,
    };
    let mut out = String::with_capacity(name.len());
    if p.eat(b'N') {
        p.eat(b'K');
        let mut parts = 0usize;
        while !p.eat(b'E') {
            if parts > 0 {
                out.push_str("::");
            }
            out.push_str(p.source_name()?);
            parts += 1;
        }
        if parts < 2 {
            return None;
        }
        // Every prefix of the nested name is a substitution candidate; the function's own name is not.
        p.subs = parts - 1;
    } else {
        p.eat(b'L');
        out.push_str(p.source_name()?);
    }
    p.parameters()?;
    Some(out)
}

/// A reader of the part of the Itanium mangling [`demangle_plain`] takes.
struct Plain<'a> {
    b: &'a [u8],
    at: usize,
    /// How many substitution candidates were seen: `S_` is the first, `S0_` the second, ….
    subs: usize,
}

impl<'a> Plain<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.at += usize::from(hit);
        hit
    }

    /// `<length><identifier>`: an identifier of ASCII letters, digits and `_` not starting with a digit, nor
    /// with `_GLOBAL_` (an anonymous namespace, shown as such).
    fn source_name(&mut self) -> Option<&'a str> {
        let digits = self.b[self.at..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits == 0 || digits > 4 || self.b[self.at] == b'0' {
            return None;
        }
        let len: usize = std::str::from_utf8(&self.b[self.at..self.at + digits])
            .ok()?
            .parse()
            .ok()?;
        let start = self.at + digits;
        let id = self.b.get(start..start + len)?;
        let word = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
        if !id.iter().all(word) || id[0].is_ascii_digit() || id.starts_with(b"_GLOBAL_") {
            return None;
        }
        self.at = start + len;
        std::str::from_utf8(id).ok()
    }

    /// The parameter types, to the end of the name: `v` alone, or one or more types, the last of which may be
    /// `z` (`...`).
    fn parameters(&mut self) -> Option<()> {
        if &self.b[self.at..] == b"v" {
            return Some(());
        }
        let mut count = 0;
        while self.at < self.b.len() {
            if &self.b[self.at..] == b"z" && count > 0 {
                return Some(());
            }
            self.parameter()?;
            count += 1;
        }
        (count > 0).then_some(())
    }

    /// One type: `P`, `R`, `O` and `K` qualifiers on a builtin type (not `void` bare), a name or a
    /// back-reference. Each qualifier makes a substitution candidate, as does a name.
    fn parameter(&mut self) -> Option<()> {
        let mut qualifiers = 0;
        while matches!(self.peek(), Some(b'P' | b'R' | b'O' | b'K')) {
            self.at += 1;
            qualifiers += 1;
        }
        match self.peek()? {
            b'v' if qualifiers > 0 => self.at += 1,
            b'w' | b'b' | b'c' | b'a' | b'h' | b's' | b't' | b'i' | b'j' | b'l' | b'm' | b'x'
            | b'y' | b'n' | b'o' | b'f' | b'd' | b'e' | b'g' => self.at += 1,
            b'1'..=b'9' => {
                self.source_name()?;
                self.subs += 1;
            }
            b'S' => self.back_reference()?,
            _ => return None,
        }
        self.subs += qualifiers;
        Some(())
    }

    /// `S_` or `S<base 36>_`, naming a candidate already seen.
    fn back_reference(&mut self) -> Option<()> {
        self.at += 1;
        let digits = self.b[self.at..]
            .iter()
            .take_while(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
            .count();
        if digits > 4 || self.b.get(self.at + digits) != Some(&b'_') {
            return None;
        }
        let index = match digits {
            0 => 0,
            _ => {
                let text = std::str::from_utf8(&self.b[self.at..self.at + digits]).ok()?;
                usize::from_str_radix(text, 36).ok()? + 1
            }
        };
        self.at += digits + 1;
        (index < self.subs).then_some(())
    }
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
    use super::{demangle, demangle_cpp, demangle_plain};

    /// The plain-name reader either declines or gives what the general path gives.
    fn agrees(name: &str) -> bool {
        match demangle_plain(name) {
            Some(fast) => {
                assert_eq!(Some(&fast), demangle_cpp(name).as_ref(), "{name}");
                true
            }
            None => false,
        }
    }

    #[test]
    fn plain_names_read_without_cpp_demangle_agree_with_it() {
        // Shapes of gcc 12's cc1 (`.dynsym`), then damaged and out-of-reach ones.
        let taken = [
            ("_Z10HONOR_NANSPK9tree_node", "HONOR_NANS"),
            ("_Z10alloc_loopv", "alloc_loop"),
            ("_Z10bitmap_andP11bitmap_headPKS_S2_", "bitmap_and"),
            ("_Z10build_declj9tree_codeP9tree_nodeS1_", "build_decl"),
            ("_Z10build_stmtj9tree_codez", "build_stmt"),
            ("_Z10cmp_countsPKvS0_", "cmp_counts"),
            ("_ZL12fold_bitwiseP9tree_nodeRK8wide_int", "fold_bitwise"),
            ("_ZN2ns1K4spinEm", "ns::K::spin"),
            ("_ZNK2ns1K4spinEv", "ns::K::spin"),
            ("_ZN11bitmap_head4dumpEPS_", "bitmap_head::dump"),
            ("_ZN1a1b1cEPS0_RKS_OS1_", "a::b::c"),
            ("_Z3fooPvRPKcOd", "foo"),
            ("_Z3fooPPPPc", "foo"),
            ("_Z3fooP3barS0_S_", "foo"),
        ];
        for (name, shown) in taken {
            assert!(agrees(name), "{name} not taken");
            assert_eq!(demangle(name), shown);
        }
        let declined = [
            "_Z3foo",
            "_Z3foov.isra.0",
            "_Z3fooP9tree_node.constprop.0",
            "_Z3fooS_",
            "_Z3fooP3barS1_",
            "_Z3fooP3barS0_S2_",
            "_ZN2ns1K4spinES1_",
            "_ZN2ns4spinEPS0_",
            "_ZN3fooEv",
            "_Z3fooiv",
            "_Z3foozi",
            "_Z3fooz",
            "_Z03foov",
            "_Z4foov",
            "_Z99999foov",
            "_Z3f$ov",
            "_Z33abcv",
            "_Z3fooSt",
            "_Z3fooSs",
            "_Z3fooS0",
            "_Z3fooSZZZZZ_",
            "_Z3fooIiEvT_",
            "_ZN2ns1KC1Ev",
            "_ZN2ns1KD2Ev",
            "_ZNSt6vector4sizeEv",
            "_ZN12_GLOBAL__N_13fooEv",
            "_ZNKR2ns1K4spinEv",
            "_Z3fooDn",
            "_Z3fooA3_i",
            "_Z3fooFivE",
            "_Z3fooM1AFivE",
            "_Z3fooU3fooi",
            "_Z",
            "_ZN",
            "_ZNE",
            "_ZN2nsE",
            "_ZL",
            "_Z3fooP",
            "_Z3fooK",
            "_Z1xi",
        ];
        for name in declined.into_iter().filter(|n| *n != "_Z1xi") {
            assert_eq!(demangle_plain(name), None, "{name} taken");
        }
        // Declined or taken, the result is the general path's; the one-letter name is taken.
        for name in declined {
            agrees(name);
        }
        assert!(agrees("_Z1xi"));
    }

    /// Every C++ name of the compiler and the C++ library on this machine, where they are: the plain-name
    /// reader takes most of cc1's and gives what cpp_demangle does for each. (The corpus above runs anyway.)
    #[test]
    fn plain_names_of_real_binaries_agree_with_cpp_demangle() {
        use object::{Object, ObjectSymbol};
        let gcc_cc1 = std::process::Command::new("gcc")
            .arg("-print-prog-name=cc1")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
        let files = gcc_cc1
            .into_iter()
            .chain(["/usr/lib/x86_64-linux-gnu/libstdc++.so.6".to_owned()]);
        for path in files {
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let Ok(file) = object::File::parse(&*bytes) else {
                continue;
            };
            let names: Vec<String> = (file.dynamic_symbols().chain(file.symbols()))
                .filter_map(|s| s.name().ok().map(str::to_owned))
                .filter(|n| n.starts_with("_Z"))
                .collect();
            let taken = names.iter().filter(|n| agrees(n)).count();
            assert!(
                names.is_empty() || taken > 0,
                "{path}: none of {} names taken",
                names.len()
            );
        }
    }

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
