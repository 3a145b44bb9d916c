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

/// One parsed line, names kept as ranges into the text (a kernel has ~200,000 symbols; a run looks up a few
/// hundred, so names become strings only when looked up).
#[derive(Clone, Copy, Debug)]
struct Entry {
    start: u64,
    name: (u32, u32),
    /// Empty (length 0) for the kernel image: a module's name is never empty.
    module: (u32, u32),
}

/// A parsed kallsyms table, sorted by address.
#[derive(Clone, Default)]
pub struct Kallsyms {
    /// The text the lines are in, shared with the file's bytes (a kernel's table is ~10 MB: no copy).
    text: Option<super::FileBytes>,
    /// Where each symbol's line starts, in address order (equal addresses in listed order). A line is parsed
    /// again when a lookup reads it: 4 bytes a symbol, where the parsed entries took 24, and the table is
    /// allocated, so faulted in page by page, at the start of every run (a 120,000-line table: 2.9 MB of entries,
    /// ~700 page faults, a tenth of `bport script` on a small fp recording).
    lines: Vec<u32>,
    names: std::cell::RefCell<std::collections::HashMap<usize, std::rc::Rc<str>>>,
    /// Set when this table is a snapshot standing for `/proc/kallsyms` ([`PendingKallsyms::snapshot`]): the
    /// live table, read only when an address is one the snapshot cannot vouch for.
    live: Option<std::rc::Rc<Live>>,
}

/// A reader of the live table, run at most once.
pub type LiveReader = Box<dyn FnOnce() -> Option<super::FileBytes> + Send + 'static>;

/// The live kernel table behind a snapshot, read on first need.
struct Live {
    read: std::cell::RefCell<Option<LiveReader>>,
    table: std::cell::OnceCell<Kallsyms>,
}

impl Live {
    fn table(&self) -> &Kallsyms {
        self.table.get_or_init(|| {
            self.read
                .borrow_mut()
                .take()
                .and_then(|read| read())
                .map(Kallsyms::from_bytes)
                .unwrap_or_default()
        })
    }
}

/// Whether the start of a live `/proc/kallsyms` (`head`, the first bytes read of it) is the start of `snapshot`:
/// every complete line of the head, and at least one, byte for byte. With the same kernel build-id this proves
/// the same image at the same KASLR offset, so every symbol of the image itself (not of modules, BPF programs or
/// trampolines, which come and go) has the same address, name and order in both.
pub fn head_matches(snapshot: &[u8], head: &[u8]) -> bool {
    let Some(last_newline) = head.iter().rposition(|&b| b == b'\n') else {
        return false;
    };
    let lines = &head[..=last_newline];
    // A head whose addresses read as zeros (no privilege, kptr_restrict) proves nothing about any address.
    let has_address = lines.split(|&b| b == b'\n').any(|l| {
        l.split(|&b| b == b' ')
            .next()
            .is_some_and(|a| !a.is_empty() && a.iter().any(|&d| d != b'0'))
    });
    has_address && snapshot.starts_with(lines)
}

impl std::fmt::Debug for Kallsyms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kallsyms")
            .field("symbols", &self.lines.len())
            .finish()
    }
}

/// Each byte's value as a hex digit, 0xff for bytes that are not one.
const HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Eight ASCII hex digits, the first the most significant (a little-endian load of the text), as a number; `None`
/// when any byte is not a hex digit. A 64-bit kernel's addresses are 16 digits on every one of its ~150,000
/// lines, and this takes a few dozen instructions where a loop over the digits took over a hundred.
fn hex8(word: u64) -> Option<u32> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = ONES * 0x80;
    if word & HIGHS != 0 {
        return None;
    }
    // Bytes below 0x80 plus at most 0x50 stay below 0x100, so no byte carries into the next: each byte's high
    // bit then says whether the byte was at least `lo`.
    let at_least = |x: u64, lo: u8| x + ONES * u64::from(0x80 - lo);
    let digit = at_least(word, b'0') & !at_least(word, b'9' + 1);
    let lower = word | (ONES * 0x20);
    let letter = at_least(lower, b'a') & !at_least(lower, b'f' + 1);
    if (digit | letter) & HIGHS != HIGHS {
        return None;
    }
    // '0'..'9' are 0x30..0x39, 'a'..'f' and 'A'..'F' end in 1..6 with bit 6 set: add 9 for those.
    let v = (word & (ONES * 0x0f)) + ((word >> 6) & ONES) * 9;
    // Pack the eight nibbles, first byte highest: pairs, then quads, then the two halves.
    let v = ((v << 4) | (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    let v = ((v << 8) | (v >> 16)) & 0x0000_ffff_0000_ffff;
    let v = ((v << 16) | (v >> 32)) & 0xffff_ffff;
    Some(v as u32)
}

/// The 16 hex digits at the start of `head` (at least 16 bytes) as a number, like [`parse_hex`].
fn parse_hex16(head: &[u8]) -> Option<u64> {
    let word = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
    Some(u64::from(hex8(word(0))?) << 32 | u64::from(hex8(word(8))?))
}

/// Parses a hex number the way `from_str_radix(_, 16)` does for kallsyms addresses (no sign, no prefix), without
/// the UTF-8 round trip: this runs once per line of a ~150,000-line file.
fn parse_hex(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    let mut bad = 0u8;
    for &d in digits {
        let n = HEX[usize::from(d)];
        bad |= n;
        v = (v << 4) | u64::from(n & 0xf);
    }
    // Only an invalid digit has the high bits set.
    (bad & 0xf0 == 0).then_some(v)
}

impl Kallsyms {
    /// Parses kallsyms text (`ADDR TYPE NAME [MODULE]` lines). Malformed lines are skipped; a table whose
    /// addresses are all zero (read without privilege, `kptr_restrict`) gives an empty table.
    pub fn parse(text: &str) -> Self {
        Self::from_bytes(std::sync::Arc::new(text.as_bytes().to_vec()))
    }

    /// Like [`Kallsyms::parse`], over a file's bytes as they were read or mapped (names that are not UTF-8 are
    /// shown lossily).
    pub fn from_bytes(text: super::FileBytes) -> Self {
        let lines = parse_lines((*text).as_ref());
        Self::from_parts(text, lines)
    }

    /// Starts parsing `text` on another thread (a kernel's table is ~150,000 lines: a fifth of `bport script`
    /// on a medium-sized file); [`PendingKallsyms::wait`] gives the table.
    pub fn parse_in_background(text: super::FileBytes) -> PendingKallsyms {
        let theirs = text.clone();
        let handle = std::thread::Builder::new()
            .name("kallsyms".into())
            .spawn(move || parse_lines((*theirs).as_ref()))
            .ok();
        PendingKallsyms {
            source: Pending::Parse(text, handle),
            live: None,
        }
    }

    fn from_parts(text: super::FileBytes, lines: Vec<u32>) -> Self {
        Kallsyms {
            text: Some(text),
            lines,
            names: Default::default(),
            live: None,
        }
    }

    /// The live table when this is a snapshot and `addr` is not one it vouches for: an address resolves from the
    /// snapshot only when the symbol containing it and the next one (which ends it) both belong to the kernel
    /// image. Anything near a module, a BPF program, a trampoline, or outside every symbol is looked up live.
    fn live_for(&self, addr: u64) -> Option<&Kallsyms> {
        let live = self.live.as_deref()?;
        let pos = self.upper_bound(addr);
        let image = |i: usize| self.entry(i).is_some_and(|e| e.module.1 == 0);
        if pos > 0 && image(pos - 1) && image(pos) {
            return None;
        }
        Some(live.table())
    }

    fn bytes(&self) -> &[u8] {
        self.text.as_ref().map_or(&[][..], |t| (**t).as_ref())
    }

    /// The symbol of the `i`th line in address order, parsed from its line.
    fn entry(&self, i: usize) -> Option<Entry> {
        let at = *self.lines.get(i)? as usize;
        parse_line(self.bytes(), at).0
    }

    /// The start address of the `i`th line in address order.
    fn start_of(&self, i: usize) -> u64 {
        self.entry(i).map_or(0, |e| e.start)
    }

    /// How many lines have a start at or below `addr`: the last of them is the symbol perf keeps for the
    /// address (of several at one address, the last listed), and the next one ends it.
    fn upper_bound(&self, addr: u64) -> usize {
        let bytes = self.bytes();
        let want = key_of(addr);
        self.lines.partition_point(|&at| {
            let at = at as usize;
            let key = bytes
                .get(at..at + 16)
                .and_then(lower_hex_key)
                .or_else(|| parse_line(bytes, at).0.map(|e| key_of(e.start)));
            key.is_some_and(|k| k <= want)
        })
    }

    fn slice(&self, (off, len): (u32, u32)) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(
            self.bytes()
                .get(off as usize..(off + len) as usize)
                .unwrap_or(&[]),
        )
    }

    /// Whether the table has no symbols.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The symbol containing `addr`.
    pub fn lookup(&self, addr: u64) -> Option<KernelSymbol> {
        if let Some(live) = self.live_for(addr) {
            return live.lookup(addr);
        }
        let (e, end, name) = self.lookup_name(addr)?;
        Some(KernelSymbol {
            start: e.start,
            end,
            name,
            module: (e.module.1 > 0).then(|| self.slice(e.module).into_owned()),
        })
    }

    /// Where the symbol of line `index` (the last at its address) ends: at the next line's start, the last one
    /// at the next page boundary, as perf's `symbols__fixup_end` has it.
    fn end_of(&self, index: usize, start: u64) -> u64 {
        let end = if index + 1 < self.lines.len() {
            self.start_of(index + 1)
        } else {
            start.saturating_add(0x1000) & !0xfff
        };
        end.max(start + 1)
    }

    /// The name and start address of the symbol containing `addr`: [`Kallsyms::lookup`] without building the
    /// module name, for the once-per-frame path.
    pub fn lookup_start(&self, addr: u64) -> Option<(std::rc::Rc<str>, u64)> {
        if let Some(live) = self.live_for(addr) {
            return live.lookup_start(addr);
        }
        let (e, _, name) = self.lookup_name(addr)?;
        Some((name, e.start))
    }

    fn lookup_name(&self, addr: u64) -> Option<(Entry, u64, std::rc::Rc<str>)> {
        let index = self.upper_bound(addr).checked_sub(1)?;
        let e = self.entry(index)?;
        let end = self.end_of(index, e.start);
        if addr >= end {
            return None;
        }
        let name = self
            .names
            .borrow_mut()
            .entry(index)
            .or_insert_with(|| std::rc::Rc::from(self.slice(e.name)))
            .clone();
        Some((e, end, name))
    }

    /// The symbols as perf keeps them: (start, end, name, module), in address order, one per address.
    #[cfg(test)]
    fn symbols(&self) -> Vec<(u64, u64, String, Option<String>)> {
        (0..self.lines.len())
            .filter_map(|i| {
                let e = self.entry(i)?;
                (i + 1 == self.lines.len() || self.start_of(i + 1) != e.start).then(|| {
                    (
                        e.start,
                        self.end_of(i, e.start),
                        self.slice(e.name).into_owned(),
                        (e.module.1 > 0).then(|| self.slice(e.module).into_owned()),
                    )
                })
            })
            .collect()
    }
}

/// The symbol of the line at `pos` of kallsyms text (`None` for a line perf does not keep: another type, a
/// zero address, no name, a malformed line), and where the next line starts.
///
/// Runs at the start of every `bport script` on a file with kernel samples, over ~150,000 lines, so each line
/// is looked at about once: the address of a 64-bit kernel is taken at its fixed width with a table lookup per
/// digit, and one word-at-a-time scan from the name finds where the name ends (space, tab) or the line does.
fn parse_line(bytes: &[u8], pos: usize) -> (Option<Entry>, usize) {
    let rest = bytes.get(pos..).unwrap_or_default();
    // ADDR ' ' TYPE ' ' NAME [ '\t' '[' MODULE ']' ]
    // A 64-bit kernel's line: 16 hex digits (which cannot hide a newline), its type, the name from byte 19.
    let fast = match rest.get(..19) {
        Some(head) if head[16] == b' ' && head[18] == b' ' && head[17] != b'\n' => {
            parse_hex16(head).map(|start| (start, 16usize))
        }
        _ => None,
    };
    let (start, sp) = match fast {
        Some(found) => found,
        None => {
            let line_len = memchr_newline(rest).unwrap_or(rest.len());
            let line = &rest[..line_len];
            let parsed = line
                .iter()
                .position(|&b| b == b' ')
                .filter(|&sp| sp + 3 <= line_len && line[sp + 2] == b' ')
                .and_then(|sp| Some((parse_hex(&line[..sp])?, sp)));
            match parsed {
                Some(found) => found,
                None => return (None, pos + line_len + 1),
            }
        }
    };
    let line_start = pos;
    // The name ends at the first space, tab or newline.
    let name_off = line_start + sp + 3;
    let name_len = first_blank(&bytes[name_off..]).unwrap_or(bytes.len() - name_off);
    let name_end = name_off + name_len;
    let line_end = if bytes.get(name_end).is_none_or(|&b| b == b'\n') {
        name_end
    } else {
        memchr_newline(&bytes[name_end..]).map_or(bytes.len(), |i| name_end + i)
    };
    let next = line_end + 1;
    let kind = bytes[line_start + sp + 1].to_ascii_uppercase();
    if !matches!(kind, b'T' | b'W' | b'D' | b'B') || start == 0 || name_len == 0 {
        return (None, next);
    }
    let after = &bytes[name_end..line_end];
    let module = if after.is_empty() {
        None
    } else {
        after.iter().position(|&b| b == b'[').and_then(|open| {
            let close = after.iter().rposition(|&b| b == b']')?;
            (close > open + 1).then(|| {
                let off = name_end + open + 1;
                (off as u32, (close - open - 1) as u32)
            })
        })
    };
    let entry = Entry {
        start,
        name: (name_off as u32, name_len as u32),
        module: module.unwrap_or((0, 0)),
    };
    (Some(entry), next)
}

/// Where the symbols' lines of kallsyms text start, sorted by address (stable: equal addresses keep their
/// listed order). A table is read up to 4 GB (offsets are 32-bit); a kernel's is about 10 MB.
fn parse_lines(bytes: &[u8]) -> Vec<u32> {
    let bytes = &bytes[..bytes.len().min(u32::MAX as usize)];
    let mut lines = Vec::with_capacity(bytes.len() / 40);
    let mut sorted = true;
    let mut last = 0u128;
    let mut pos = 0usize;
    // A 64-bit kernel's line is kept or not from its fixed columns alone, as `parse_line` would decide (its
    // name is empty exactly when the byte after the type's space is blank), and it ends at the first newline
    // after them (an address or a type never holds one). Its address is only checked and compared here, as
    // 16 lowercase hex digits read as one big-endian number (which orders them as their values): a table is
    // searched as it is when its addresses ascend, and only a lookup parses the addresses it meets. Other
    // lines are parsed whole.
    while pos < bytes.len() {
        if let Some(head) = bytes.get(pos..pos + 20) {
            let key = u128::from_be_bytes(head[..16].try_into().expect("16 bytes"));
            if head[16] == b' ' && head[18] == b' ' && head[17] != b'\n' && is_lower_hex(key) {
                let kind = head[17] | 0x20;
                let kept = matches!(kind, b't' | b'w' | b'd' | b'b') && head[19] > b' ';
                if kept && key != ZERO_KEY {
                    sorted &= key >= last;
                    last = key;
                    lines.push(pos as u32);
                }
                pos = line_end(bytes, pos + 19) + 1;
                continue;
            }
        }
        let (entry, next) = parse_line(bytes, pos);
        if let Some(e) = entry {
            let key = key_of(e.start);
            sorted &= key >= last;
            last = key;
            lines.push(pos as u32);
        }
        pos = next;
    }
    // /proc/kallsyms lists the kernel image sorted; modules, BPF programs and trampolines after it may not be.
    if !sorted {
        let mut keyed: Vec<(u64, u32)> = lines
            .iter()
            .map(|&at| (parse_line(bytes, at as usize).0.map_or(0, |e| e.start), at))
            .collect();
        // (start, place in the text) is unique, so the unstable sort keeps equal starts in listed order.
        keyed.sort_unstable();
        lines = keyed.into_iter().map(|(_, at)| at).collect();
    }
    lines
}

/// Where the line holding `from` ends: its first newline at or after `from`, eight bytes at a time while
/// eight are left (as `memchr_newline`), else the end of `bytes`.
fn line_end(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut at = from;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes")) ^ (ONES * u64::from(b'\n'));
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let rest = bytes.get(at..).unwrap_or_default();
    at + rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())
}

/// [`lower_hex_key`] of sixteen `0`s.
const ZERO_KEY: u128 = u128::from_be_bytes(*b"0000000000000000");

/// The first 16 bytes of `head` as one big-endian number when they are lowercase hex digits, the form
/// `/proc/kallsyms` writes: such keys order as the addresses they spell, without converting the digits.
fn lower_hex_key(head: &[u8]) -> Option<u128> {
    let w = u128::from_be_bytes(head.get(..16)?.try_into().ok()?);
    is_lower_hex(w).then_some(w)
}

/// Whether each of the 16 bytes of `w` is a lowercase hex digit.
fn is_lower_hex(w: u128) -> bool {
    const ONES: u128 = u128::from_ne_bytes([1; 16]);
    const HIGHS: u128 = ONES * 0x80;
    // As in `hex8`: no byte carries into the next (all are below 0x80, and at most 0x50 is added), so each
    // byte's high bit says whether the byte was at least `lo`.
    // (Wrapping: a byte of 0x80 or more, which the first test rejects, may carry out of the top one.)
    let at_least = |x: u128, lo: u8| x.wrapping_add(ONES * u128::from(0x80 - lo));
    let digit = at_least(w, b'0') & !at_least(w, b'9' + 1);
    let letter = at_least(w, b'a') & !at_least(w, b'f' + 1);
    w & HIGHS == 0 && (digit | letter) & HIGHS == HIGHS
}

/// `start` as [`lower_hex_key`] would read its 16 lowercase digits.
fn key_of(start: u64) -> u128 {
    (0..16).fold(0u128, |key, i| {
        let nibble = (start >> (60 - 4 * i)) & 0xf;
        key << 8 | u128::from(b"0123456789abcdef"[nibble as usize])
    })
}

/// A kallsyms table being parsed on another thread ([`Kallsyms::parse_in_background`]).
pub struct PendingKallsyms {
    source: Pending,
    /// For a snapshot: the reader of the live table it stands for.
    live: Option<LiveReader>,
}

enum Pending {
    /// Bytes in hand, parsed on a thread (`None`: none could be started).
    Parse(super::FileBytes, Option<std::thread::JoinHandle<Vec<u32>>>),
    /// Read and parsed on a thread: `/proc/kallsyms` is generated as it is read, which alone took about a
    /// quarter of `bport script` on a small recording when done on the resolving thread.
    ReadAndParse(std::thread::JoinHandle<Option<(super::FileBytes, Vec<u32>)>>),
}

impl PendingKallsyms {
    /// Reads the file `read` returns and parses it, both on another thread; `None` when no thread could be
    /// started.
    pub fn read_in_background(
        read: impl FnOnce() -> Option<super::FileBytes> + Send + 'static,
    ) -> Option<PendingKallsyms> {
        let handle = std::thread::Builder::new()
            .name("kallsyms".into())
            .spawn(move || {
                let text = read()?;
                let lines = parse_lines((*text).as_ref());
                Some((text, lines))
            })
            .ok()?;
        Some(PendingKallsyms {
            source: Pending::ReadAndParse(handle),
            live: None,
        })
    }

    /// Parses `snapshot` (a copy of `/proc/kallsyms` whose [`head_matches`] the live one, for the running
    /// kernel's build-id) on another thread; the table answers from it what it can prove and reads the live table
    /// through `live` for the rest ([`Kallsyms`]'s `live_for`). Reading `/proc/kallsyms` costs 40–80 ms of kernel
    /// time (the kernel formats ~120,000 lines as they are read), most of a `bport script` on a small `-z` or
    /// pipe-mode file, which has no build-id table and so no cached copy of its own.
    pub fn snapshot(snapshot: super::FileBytes, live: LiveReader) -> PendingKallsyms {
        let mut pending = Kallsyms::parse_in_background(snapshot);
        pending.live = Some(live);
        pending
    }

    /// The parsed table; parsed here when no thread could be started. An empty table when the file could not
    /// be read.
    pub fn wait(self) -> Kallsyms {
        let PendingKallsyms { source, live } = self;
        let mut table = Self::join(source);
        table.live = live.map(|read| {
            std::rc::Rc::new(Live {
                read: std::cell::RefCell::new(Some(read)),
                table: std::cell::OnceCell::new(),
            })
        });
        table
    }

    fn join(source: Pending) -> Kallsyms {
        match source {
            Pending::Parse(text, handle) => {
                let lines = match handle.map(std::thread::JoinHandle::join) {
                    Some(Ok(lines)) => lines,
                    // The parser does not panic on any input; if it did, parsing here reports it where it
                    // belongs.
                    Some(Err(_)) | None => parse_lines((*text).as_ref()),
                };
                Kallsyms::from_parts(text, lines)
            }
            Pending::ReadAndParse(handle) => match handle.join() {
                Ok(Some((text, lines))) => Kallsyms::from_parts(text, lines),
                Ok(None) | Err(_) => Kallsyms::default(),
            },
        }
    }
}

/// The first byte at or below `b' '` (a space, tab or newline ends a kallsyms name), eight bytes at a time (the
/// "has a byte less than n" test).
fn first_blank(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in chunks.by_ref() {
        let x = u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
        // Flags bytes below 0x21, and bytes of 0x80 and above (not ASCII); the latter are checked one by one.
        let found = x.wrapping_sub(ONES * 0x21) & !x & HIGHS;
        if found != 0 {
            let first = at + (found.trailing_zeros() / 8) as usize;
            if let Some(i) = bytes[first..at + 8].iter().position(|&b| b <= b' ') {
                return Some(first + i);
            }
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b <= b' ')
        .map(|i| at + i)
}

/// The first `\n` in `bytes`, eight bytes at a time (the classic "has a zero byte" test on `word ^ 0x0a…`): the
/// line scan was the largest part of parsing a kernel's ~10 MB table byte by byte.
fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in chunks.by_ref() {
        let x =
            u64::from_le_bytes(chunk.try_into().expect("8-byte chunk")) ^ (ONES * u64::from(b'\n'));
        // Borrows only run upward, so the lowest flagged byte is the first real match.
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| at + i)
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

    /// The table rules stated plainly, line by line, to check the fast parser against.
    fn reference(text: &str) -> Vec<(u64, u64, String, Option<String>)> {
        let mut v: Vec<(u64, String, Option<String>)> = Vec::new();
        for line in text.split('\n') {
            let Some((addr, rest)) = line.split_once(' ') else {
                continue;
            };
            let rest = rest.as_bytes();
            if rest.len() < 3 || rest[1] != b' ' {
                continue;
            }
            if !matches!(rest[0].to_ascii_uppercase(), b'T' | b'W' | b'D' | b'B') {
                continue;
            }
            let Some(start) = (addr.len() <= 16 && !addr.is_empty())
                .then(|| u64::from_str_radix(addr, 16).ok())
                .flatten()
                .filter(|a| *a != 0 && !addr.starts_with('+'))
            else {
                continue;
            };
            let name_and_after = std::str::from_utf8(&rest[2..]).unwrap();
            let name_len = name_and_after
                .find(['\t', ' '])
                .unwrap_or(name_and_after.len());
            if name_len == 0 {
                continue;
            }
            let after = &name_and_after[name_len..];
            let module = after.find('[').and_then(|open| {
                let close = after.rfind(']')?;
                (close > open + 1).then(|| after[open + 1..close].to_string())
            });
            v.push((start, name_and_after[..name_len].to_string(), module));
        }
        v.sort_by_key(|e| e.0);
        let mut d: Vec<(u64, String, Option<String>)> = Vec::new();
        for e in v {
            match d.last_mut() {
                Some(l) if l.0 == e.0 => *l = e,
                _ => d.push(e),
            }
        }
        (0..d.len())
            .map(|i| {
                let end = d.get(i + 1).map_or((d[i].0 + 0x1000) & !0xfff, |n| n.0);
                (d[i].0, end.max(d[i].0 + 1), d[i].1.clone(), d[i].2.clone())
            })
            .collect()
    }

    #[test]
    fn fast_parser_agrees_with_the_rules_on_odd_input() {
        let mut text = String::new();
        // Well-formed lines, then every kind of damage, shuffled deterministically into one table.
        let pieces = [
            "ffffffff81000000 T _stext\n",
            "ffffffff81000010 t a_much_longer_symbol_name_than_eight_bytes\n",
            "ffffffff81000010 W alias_after\n",
            "ffffffff81000020 r rodata_is_skipped\n",
            "ffffffffc0001000 t mod_fn\t[ext4]\n",
            "ffffffffc0001040 t mod_fn2 [xfs]\n",
            "ffffffffc0001080 T x\t[]\n",
            "ffffffff81000030 b\n",
            "x\n",
            "\n",
            "ffffffff81000040\n",
            "ffffffff81000050 T\n",
            "ffffffff8100006g T bad_hex\n",
            "1234 T short_address\n",
            "0000000000000000 T zero_is_skipped\n",
            "ffffffff81000070 T  two_spaces\n",
            "ffffffff81000080 D data_sym\n",
            "ffffffff81000090 T nameé_utf8\n",
            "12345678901234567 T too_long_address\n",
            "12345 T abcdefgh T hex_then_columns\n",
            "FFFFFFFF810000C0 T upper_case_address\n",
            "ffffffff810000b0 t \u{e9}t\u{e9}_high_first_byte\n",
            "ffffffff810000a0 T last_without_newline",
        ];
        let mut order: Vec<usize> = (0..pieces.len() - 1).collect();
        let mut seed = 7u64;
        for i in (1..order.len()).rev() {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            order.swap(i, (seed >> 33) as usize % (i + 1));
        }
        for i in order {
            text.push_str(pieces[i]);
        }
        text.push_str(pieces[pieces.len() - 1]);
        let k = Kallsyms::parse(&text);
        let got = k.symbols();
        assert_eq!(got, reference(&text));
        assert_eq!(got.len(), 12, "{got:?}");
    }

    /// Lookups read the lines in place: at every symbol's first and last address, and just past it, they give
    /// the rules' symbol, on a sorted table (searched as it is) and on one whose tail is out of order.
    #[test]
    fn lookups_in_place_agree_with_the_rules() {
        let sorted = "0000000000001000 D percpu_first\n\
                      ffffffff81000000 T _stext\n\
                      ffffffff81000000 t _stext_alias\n\
                      ffffffff81000010 r rodata_between\n\
                      ffffffff81000020 t after_rodata\n\
                      ffffffff81000020 r same_address_rodata\n\
                      ffffffff81000040 T  two_spaces\n\
                      ffffffff81000050 W weak_one\n";
        let unsorted = format!(
            "{sorted}ffffffffc0002000 t mod_b\t[b]\nffffffffc0001000 t mod_a\t[a]\n\
             ffffffff81000030 T late_core\n1234 T short_address\nffffffffc0001000 T mod_a_alias\t[a]\n"
        );
        for text in [sorted.to_owned(), unsorted] {
            let want = reference(&text);
            let k = Kallsyms::parse(&text);
            assert_eq!(k.symbols(), want);
            let found = |a: u64| {
                k.lookup(a)
                    .map(|s| (s.start, s.end, s.name.to_string(), s.module))
            };
            for (start, end, name, module) in &want {
                for addr in [*start, end - 1] {
                    let hit = (*start, *end, name.clone(), module.clone());
                    assert_eq!(found(addr), Some(hit), "{addr:#x} in {text}");
                }
                if !want.iter().any(|w| w.0 == *end) {
                    assert_eq!(found(*end), None, "{end:#x} in {text}");
                }
            }
            assert_eq!(found(0xfff), None);
        }
    }

    #[test]
    fn background_parse_gives_the_same_table() {
        let text = "ffffffff81000000 T _stext\n\
                    ffffffff81000100 t helper\n\
                    ffffffff81000100 T helper_alias\n\
                    ffffffffc0000000 t mod_fn\t[ext4]\n";
        let bytes: crate::perf::symbols::FileBytes = std::sync::Arc::new(text.as_bytes().to_vec());
        let inline = Kallsyms::from_bytes(bytes.clone());
        let background = Kallsyms::parse_in_background(bytes).wait();
        for addr in [
            0xffffffff81000010,
            0xffffffff81000180,
            0xffffffffc0000004,
            0x10,
        ] {
            assert_eq!(background.lookup(addr), inline.lookup(addr), "{addr:#x}");
        }
        assert_eq!(
            background
                .lookup(0xffffffff81000180)
                .map(|s| s.name.to_string()),
            Some("helper_alias".into())
        );
    }

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
        let hit = |a| k.lookup(a).map(|s| (s.name.to_string(), s.start, s.module));
        let own = |n: &str, a: u64, m: Option<&str>| Some((n.to_owned(), a, m.map(str::to_owned)));
        assert_eq!(
            hit(0xffffffff81000050),
            own("_stext", 0xffffffff81000000, None)
        );
        assert_eq!(
            hit(0xffffffff81000300),
            own("helper_alias", 0xffffffff81000100, None)
        );
        assert_eq!(
            hit(0xffffffffc0000010),
            own("kvm_fn", 0xffffffffc0000000, Some("kvm"))
        );
        assert_eq!(hit(0x1000), None);
        assert!(Kallsyms::parse("0000000000000000 T _stext\n").is_empty());
    }

    #[test]
    fn hex_keys_order_as_their_addresses() {
        let addrs = [
            0u64,
            1,
            0x9,
            0xa,
            0xf,
            0x10,
            0xffff_ffff_8100_0000,
            0xffff_ffff_c000_0000,
            u64::MAX,
        ];
        for w in addrs.windows(2) {
            assert!(key_of(w[0]) < key_of(w[1]), "{:#x} {:#x}", w[0], w[1]);
        }
        for a in addrs {
            let text = format!("{a:016x}");
            assert_eq!(lower_hex_key(text.as_bytes()), Some(key_of(a)), "{text}");
            assert_eq!(
                lower_hex_key(text.to_uppercase().as_bytes()).is_some(),
                !text.bytes().any(|b| b.is_ascii_alphabetic())
            );
        }
        for bad in [
            b"ffffffff8100000g",
            b"ffffffff8100000 ",
            b"ffffffff81000/00",
            b"\xf0fffffff81000000",
            b"ffffffff8100000\xf0",
            b"ffffffff81000:00",
        ] {
            assert_eq!(lower_hex_key(bad), None);
        }
        assert_eq!(key_of(0), ZERO_KEY);
    }

    #[test]
    fn sixteen_digit_parse_matches_from_str_radix() {
        let base = *b"0123456789abcdef";
        let check = |digits: &[u8; 16]| {
            let want = std::str::from_utf8(digits)
                .ok()
                .filter(|s| !s.starts_with('+'))
                .and_then(|s| u64::from_str_radix(s, 16).ok());
            assert_eq!(
                parse_hex16(digits),
                want,
                "{:?}",
                String::from_utf8_lossy(digits)
            );
        };
        // Every byte value at every position, around valid digits of both cases.
        for upper in [false, true] {
            let mut digits = base;
            if upper {
                digits.make_ascii_uppercase();
            }
            check(&digits);
            for at in 0..16 {
                for b in 0..=255u8 {
                    let mut d = digits;
                    d[at] = b;
                    check(&d);
                }
            }
        }
        check(b"ffffffff81000000");
        check(b"0000000000000000");
        check(b"FFFFFFFFFFFFFFFF");
        check(b"fFfFfFfF0a0B0c0D");
    }

    #[test]
    fn newline_search_matches_a_plain_scan() {
        let text = b"abcdefgh\nijklmnopqrstuvwxyz\n\n0123456789abcdef0123\nxy";
        for start in 0..text.len() {
            let rest = &text[start..];
            assert_eq!(
                memchr_newline(rest),
                rest.iter().position(|&b| b == b'\n'),
                "from {start}"
            );
        }
        // High bytes (UTF-8 names) next to a newline must not hide it or be taken for it.
        assert_eq!(
            memchr_newline(b"\xff\x8b\x0b\x09\xe2\x80\x8a\x0b\n"),
            Some(8)
        );
        assert_eq!(
            memchr_newline(b"\x0b\x8a\xff\xff\xff\xff\xff\xff\x0a"),
            Some(8)
        );
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
