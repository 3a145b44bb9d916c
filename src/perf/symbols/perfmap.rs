//! JIT symbol maps, `/tmp/perf-PID.map` (tools/perf/Documentation/jit-interface.txt): one `START SIZE name` line
//! per symbol, addresses in hex, for anonymous executable memory.

/// A parsed perf map, sorted by start.
#[derive(Clone, Debug, Default)]
pub struct PerfMap {
    symbols: Vec<(u64, u64, std::rc::Rc<str>)>,
}

impl PerfMap {
    /// Parses the map text; malformed lines are skipped (a JIT may be writing the file while we read it).
    pub fn parse(text: &str) -> Self {
        let mut symbols = Vec::new();
        for line in text.lines() {
            let mut parts = line.splitn(3, ' ');
            let (Some(start), Some(size), Some(name)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let parse = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
            let (Some(start), Some(size)) = (parse(start), parse(size)) else {
                continue;
            };
            symbols.push((
                start,
                start.saturating_add(size),
                std::rc::Rc::from(name.trim_end()),
            ));
        }
        symbols.sort_by_key(|s| s.0);
        PerfMap { symbols }
    }

    /// The `(start, name)` of the symbol containing `addr`.
    pub fn lookup(&self, addr: u64) -> Option<(u64, &std::rc::Rc<str>)> {
        let pos = self.symbols.partition_point(|s| s.0 <= addr);
        let (start, end, name) = self.symbols.get(pos.checked_sub(1)?)?;
        (addr < *end).then_some((*start, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_jit_map() {
        let m = PerfMap::parse(
            "7f0000001000 40 LazyCompile:~foo bar.js:1\nbad line\n0x7f0000002000 0x10 stub\n",
        );
        let hit = |a| m.lookup(a).map(|(s, n)| (s, n.to_string()));
        assert_eq!(
            hit(0x7f00_0000_1010),
            Some((0x7f00_0000_1000, "LazyCompile:~foo bar.js:1".to_owned()))
        );
        assert_eq!(
            hit(0x7f00_0000_2008),
            Some((0x7f00_0000_2000, "stub".to_owned()))
        );
        assert_eq!(hit(0x7f00_0000_1040), None);
    }
}
