//! Kernel symbols from `/proc/kallsyms` text (or a copy in the build-id cache), and the running kernel's
//! build-id from `/sys/kernel/notes`.
//!
//! Follows perf's kallsyms loading (tools/lib/symbol/kallsyms.c, tools/perf/util/symbol.c): text and data
//! symbols (`T`, `W`, `D`, `B`, either case), each ending where the next one starts (`symbols__fixup_end` with
//! `is_kallsyms`); a `[module]` suffix puts the symbol in that module's DSO, named `[module]`.

/// One kernel symbol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSymbol {
    /// Start address.
    pub start: u64,
    /// One past the end.
    pub end: u64,
    /// Name.
    pub name: std::rc::Rc<str>,
    /// `None` for the kernel image, else the module name without brackets.
    pub module: Option<String>,
}

/// A parsed kallsyms table, sorted by address.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    symbols: Vec<KernelSymbol>,
}

impl Kallsyms {
    /// Parses kallsyms text (`ADDR TYPE NAME [MODULE]` lines). Malformed lines are skipped; a table whose
    /// addresses are all zero (read without privilege, `kptr_restrict`) gives an empty table.
    pub fn parse(text: &str) -> Self {
        let mut symbols = Vec::new();
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let Ok(start) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            let kind = kind.chars().next().map(|c| c.to_ascii_uppercase());
            if !matches!(kind, Some('T' | 'W' | 'D' | 'B')) || start == 0 {
                continue;
            }
            let module = parts
                .next()
                .and_then(|m| m.strip_prefix('[')?.strip_suffix(']'))
                .map(str::to_owned);
            symbols.push(KernelSymbol {
                start,
                end: start,
                name: std::rc::Rc::from(name),
                module,
            });
        }
        symbols.sort_by_key(|s| s.start);
        // Of several symbols at one address perf keeps the last listed: its fixup_end gives every earlier one
        // zero size, and choose_best_symbol prefers a sized symbol.
        let mut deduped: Vec<KernelSymbol> = Vec::with_capacity(symbols.len());
        for sym in symbols {
            match deduped.last_mut() {
                Some(last) if last.start == sym.start => *last = sym,
                _ => deduped.push(sym),
            }
        }
        let mut symbols = deduped;
        for i in 0..symbols.len() {
            let end = symbols
                .get(i + 1)
                .map_or(symbols[i].start.saturating_add(0x1000) & !0xfff, |n| {
                    n.start
                });
            symbols[i].end = end.max(symbols[i].start + 1);
        }
        Kallsyms { symbols }
    }

    /// Whether the table has no symbols.
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// The symbol containing `addr`.
    pub fn lookup(&self, addr: u64) -> Option<&KernelSymbol> {
        let pos = self.symbols.partition_point(|s| s.start <= addr);
        let sym = self.symbols.get(pos.checked_sub(1)?)?;
        (addr < sym.end).then_some(sym)
    }
}

/// The GNU build-id from an ELF note blob such as `/sys/kernel/notes`.
pub fn build_id_from_notes(notes: &[u8]) -> Option<Vec<u8>> {
    let mut rest = notes;
    let word = |b: &[u8], at: usize| -> Option<usize> {
        Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize)
    };
    let align4 = |n: usize| n.checked_add(3).map(|v| v & !3);
    while rest.len() >= 12 {
        let namesz = word(rest, 0)?;
        let descsz = word(rest, 4)?;
        let kind = word(rest, 8)?;
        let name_end = 12usize.checked_add(align4(namesz)?)?;
        let desc_end = name_end.checked_add(align4(descsz)?)?;
        let name = rest.get(12..12 + namesz)?;
        if kind == 3 && name.starts_with(b"GNU") {
            return rest.get(name_end..name_end + descsz).map(<[u8]>::to_vec);
        }
        rest = rest.get(desc_end..)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_looks_up() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81000100 t helper\n\
             ffffffff81000100 T helper_alias\n\
             ffffffff81000200 r not_text\n\
             garbage\n\
             ffffffffc0000000 t kvm_fn\t[kvm]\n",
        );
        let hit = |a| {
            k.lookup(a)
                .map(|s| (&*s.name, s.start, s.module.as_deref()))
        };
        assert_eq!(
            hit(0xffffffff81000050),
            Some(("_stext", 0xffffffff81000000, None))
        );
        assert_eq!(
            hit(0xffffffff81000300),
            Some(("helper_alias", 0xffffffff81000100, None))
        );
        assert_eq!(
            hit(0xffffffffc0000010),
            Some(("kvm_fn", 0xffffffffc0000000, Some("kvm")))
        );
        assert_eq!(hit(0x1000), None);
        assert!(Kallsyms::parse("0000000000000000 T _stext\n").is_empty());
    }

    #[test]
    fn notes_build_id() {
        let mut notes = Vec::new();
        // A non-GNU note first, then the build-id.
        for (name, kind, desc) in [
            (&b"Xen\0"[..], 1u32, &[1u8, 2, 3][..]),
            (b"GNU\0", 3, &[0xab; 20]),
        ] {
            notes.extend_from_slice(&(name.len() as u32).to_ne_bytes());
            notes.extend_from_slice(&(desc.len() as u32).to_ne_bytes());
            notes.extend_from_slice(&kind.to_ne_bytes());
            notes.extend_from_slice(name);
            notes.extend_from_slice(desc);
            while notes.len() % 4 != 0 {
                notes.push(0);
            }
        }
        assert_eq!(build_id_from_notes(&notes), Some(vec![0xab; 20]));
        assert_eq!(build_id_from_notes(&notes[..10]), None);
    }
}
