//! The memory-access fields of a sample line (`perf mem` / load-latency samples): data address, data source and
//! weight, as perf 6.1 prints them (builtin-script.c `process_event`, `data_src__fprintf`; util/mem-events.c
//! `perf_script__meminfo_scnprintf` and the `perf_mem__*_scnprintf` decoders; the bit layout of
//! `union perf_mem_data_src` in include/uapi/linux/perf_event.h).

use super::fields::{Field, Fields};
use crate::perf::abi::{
    PERF_MEM_BLK_ADDR, PERF_MEM_BLK_BITS, PERF_MEM_BLK_DATA, PERF_MEM_BLK_NA, PERF_MEM_BLK_SHIFT,
    PERF_MEM_HOPS_BITS, PERF_MEM_HOPS_SHIFT, PERF_MEM_LOCK_BITS, PERF_MEM_LOCK_LOCKED,
    PERF_MEM_LOCK_NA, PERF_MEM_LOCK_SHIFT, PERF_MEM_LVLNUM_BITS, PERF_MEM_LVLNUM_SHIFT,
    PERF_MEM_LVL_BITS, PERF_MEM_LVL_HIT, PERF_MEM_LVL_MISS, PERF_MEM_LVL_SHIFT, PERF_MEM_OP_BITS,
    PERF_MEM_OP_SHIFT, PERF_MEM_REMOTE_BITS, PERF_MEM_REMOTE_SHIFT, PERF_MEM_SNOOPX_BITS,
    PERF_MEM_SNOOPX_SHIFT, PERF_MEM_SNOOP_BITS, PERF_MEM_SNOOP_SHIFT, PERF_MEM_TLB_BITS,
    PERF_MEM_TLB_HIT, PERF_MEM_TLB_MISS, PERF_MEM_TLB_SHIFT,
};

/// Column state carried from line to line: perf pads the data source to the longest one printed so far
/// (a `static int maxlen` in `data_src__fprintf`), so a line's padding depends on the lines before it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Columns {
    data_src: usize,
}

/// The memory fields of one sample, as sampled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemFields {
    /// PERF_SAMPLE_ADDR.
    pub addr: Option<u64>,
    /// PERF_SAMPLE_DATA_SRC.
    pub data_src: Option<u64>,
    /// The weight (the whole PERF_SAMPLE_WEIGHT, or the low 32 bits of PERF_SAMPLE_WEIGHT_STRUCT).
    pub weight: Option<u64>,
    /// The instruction latency (bits 32..48 of PERF_SAMPLE_WEIGHT_STRUCT).
    pub ins_lat: Option<u16>,
}

impl MemFields {
    /// Splits a raw weight word as `evsel__parse_sample` does.
    pub fn weight_of(raw: Option<u64>, is_struct: bool) -> (Option<u64>, Option<u16>) {
        match raw {
            Some(w) if is_struct => (Some(w & 0xffff_ffff), Some((w >> 32) as u16)),
            w => (w, None),
        }
    }
}

/// Appends the fields `fields` selects, between the event name and the IP: `%16lx` address, `%16lx` data
/// source with its decoding padded to the longest so far, `%16` weight, `%16` instruction latency.
pub fn write(out: &mut Vec<u8>, fields: Fields, mem: &MemFields, columns: &mut Columns) {
    use std::io::Write as _;
    if fields.has(Field::Addr) {
        let _ = write!(out, "{:16x}", mem.addr.unwrap_or(0));
    }
    if fields.has(Field::DataSrc) {
        let v = mem.data_src.unwrap_or(0);
        let text = format!("{v:16x} {}", decode(v));
        columns.data_src = columns.data_src.max(text.len());
        let _ = write!(out, "{text:<width$}", width = columns.data_src);
    }
    if fields.has(Field::Weight) {
        let _ = write!(out, "{:16}", mem.weight.unwrap_or(0));
    }
    if fields.has(Field::InsLat) {
        let _ = write!(out, "{:16}", mem.ins_lat.unwrap_or(0));
    }
}

/// The bit fields of `union perf_mem_data_src` (little-endian layout).
struct DataSrc(u64);

impl DataSrc {
    fn bits(&self, shift: u32, width: u32) -> u64 {
        (self.0 >> shift) & ((1 << width) - 1)
    }
    fn op(&self) -> u64 {
        self.bits(PERF_MEM_OP_SHIFT, PERF_MEM_OP_BITS)
    }
    fn lvl(&self) -> u64 {
        self.bits(PERF_MEM_LVL_SHIFT, PERF_MEM_LVL_BITS)
    }
    fn snoop(&self) -> u64 {
        self.bits(PERF_MEM_SNOOP_SHIFT, PERF_MEM_SNOOP_BITS)
    }
    fn lock(&self) -> u64 {
        self.bits(PERF_MEM_LOCK_SHIFT, PERF_MEM_LOCK_BITS)
    }
    fn dtlb(&self) -> u64 {
        self.bits(PERF_MEM_TLB_SHIFT, PERF_MEM_TLB_BITS)
    }
    fn lvl_num(&self) -> u64 {
        self.bits(PERF_MEM_LVLNUM_SHIFT, PERF_MEM_LVLNUM_BITS)
    }
    fn remote(&self) -> bool {
        self.bits(PERF_MEM_REMOTE_SHIFT, PERF_MEM_REMOTE_BITS) != 0
    }
    fn snoopx(&self) -> u64 {
        self.bits(PERF_MEM_SNOOPX_SHIFT, PERF_MEM_SNOOPX_BITS)
    }
    fn blk(&self) -> u64 {
        self.bits(PERF_MEM_BLK_SHIFT, PERF_MEM_BLK_BITS)
    }
    fn hops(&self) -> u64 {
        self.bits(PERF_MEM_HOPS_SHIFT, PERF_MEM_HOPS_BITS)
    }
}

/// `|OP …|LVL …|SNP …|TLB …|LCK …|BLK …`, perf 6.1's `perf_script__meminfo_scnprintf`.
pub fn decode(data_src: u64) -> String {
    let d = DataSrc(data_src);
    format!(
        "|OP {}|LVL {}|SNP {}|TLB {}|LCK {}|BLK {}",
        op(&d),
        lvl(&d),
        snoop(&d),
        tlb(&d),
        lock(&d),
        blk(&d)
    )
}

fn op(d: &DataSrc) -> &'static str {
    let op = d.op();
    // LOAD, STORE, PFETCH, EXEC: the first set bit wins.
    ["N/A", "LOAD", "STORE", "PFETCH", "EXEC"]
        .iter()
        .enumerate()
        .find(|(i, _)| op & (1 << i) != 0)
        .map_or("No", |(_, s)| s)
}

/// The names of the set bits of `m`, ` or `-separated.
fn bit_names(m: u64, names: &[&str], out: &mut String) {
    for (i, name) in names.iter().enumerate() {
        if m & (1 << i) != 0 {
            if !out.is_empty() {
                out.push_str(" or ");
            }
            out.push_str(name);
        }
    }
}

/// perf 6.1's `perf_mem__lvl_scnprintf`: `Remote `, the hops or the PERF_MEM_LVL bits, then the level number
/// (both namespaces are printed when both are set: `L1 or L1 hit`), then ` hit`/` miss`.
fn lvl(d: &DataSrc) -> String {
    const LVL: [&str; 14] = [
        "N/A",
        "HIT",
        "MISS",
        "L1",
        "LFB/MAB",
        "L2",
        "L3",
        "Local RAM",
        "Remote RAM (1 hop)",
        "Remote RAM (2 hops)",
        "Remote Cache (1 hop)",
        "Remote Cache (2 hops)",
        "I/O",
        "Uncached",
    ];
    const HOPS: [&str; 5] = [
        "N/A",
        "core, same node",
        "node, same socket",
        "socket, same board",
        "board",
    ];
    let m = d.lvl();
    let mut out = String::new();
    if d.remote() {
        out.push_str("Remote ");
    }
    let mut listed = String::new();
    if d.hops() != 0 {
        out.push_str(HOPS.get(d.hops() as usize).copied().unwrap_or(""));
        out.push(' ');
    } else {
        bit_names(
            m & !(PERF_MEM_LVL_HIT | PERF_MEM_LVL_MISS),
            &LVL,
            &mut listed,
        );
    }
    let num = d.lvl_num();
    if num != 0 {
        if !listed.is_empty() {
            listed.push_str(" or ");
        }
        // mem_lvlnum[] of perf 6.1; the others print as `L<n>`.
        match num {
            0x09 => listed.push_str("Extension mem"),
            0x0a => listed.push_str("I/O"),
            0x0b => listed.push_str("Any cache"),
            0x0c => listed.push_str("LFB/MAB"),
            0x0d => listed.push_str("RAM"),
            0x0e => listed.push_str("PMEM"),
            0x0f => listed.push_str("N/A"),
            n => listed.push_str(&format!("L{n}")),
        }
    }
    out.push_str(&listed);
    if out.is_empty() {
        out.push_str("N/A");
    }
    if m & PERF_MEM_LVL_HIT != 0 {
        out.push_str(" hit");
    }
    if m & PERF_MEM_LVL_MISS != 0 {
        out.push_str(" miss");
    }
    out
}

fn snoop(d: &DataSrc) -> String {
    let mut out = String::new();
    bit_names(d.snoop(), &["N/A", "None", "Hit", "Miss", "HitM"], &mut out);
    bit_names(d.snoopx(), &["Fwd", "Peer"], &mut out);
    if out.is_empty() {
        out.push_str("N/A");
    }
    out
}

fn tlb(d: &DataSrc) -> String {
    let m = d.dtlb();
    let mut out = String::new();
    bit_names(
        m & !(PERF_MEM_TLB_HIT | PERF_MEM_TLB_MISS),
        &["N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault"],
        &mut out,
    );
    if out.is_empty() {
        out.push_str("N/A");
    }
    if m & PERF_MEM_TLB_HIT != 0 {
        out.push_str(" hit");
    }
    if m & PERF_MEM_TLB_MISS != 0 {
        out.push_str(" miss");
    }
    out
}

fn lock(d: &DataSrc) -> &'static str {
    match d.lock() {
        m if m & PERF_MEM_LOCK_NA != 0 => "N/A",
        m if m & PERF_MEM_LOCK_LOCKED != 0 => "Yes",
        _ => "No",
    }
}

fn blk(d: &DataSrc) -> &'static str {
    // Leading spaces as perf prints them (`|BLK  N/A`).
    match d.blk() {
        m if m == 0 || m & PERF_MEM_BLK_NA != 0 => " N/A",
        m if m == PERF_MEM_BLK_DATA | PERF_MEM_BLK_ADDR => " Data Addr",
        PERF_MEM_BLK_DATA => " Data",
        _ => " Addr",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_sources_of_a_public_load_latency_file_decode_as_perf_6_1() {
        // Values and perf 6.1's text from perf_data_converter's perf.data.weight_struct (tests/fixtures/quipper).
        for (v, want) in [
            (
                0x11868100242,
                "|OP LOAD|LVL LFB/MAB or LFB/MAB hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A",
            ),
            (
                0x10268100142,
                "|OP LOAD|LVL L1 or L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A",
            ),
            (
                0x1026a100142,
                "|OP LOAD|LVL L1 or L1 hit|SNP None|TLB L1 or L2 hit|LCK Yes|BLK  N/A",
            ),
            (
                0x10650100842,
                "|OP LOAD|LVL L3 or L3 hit|SNP None|TLB L2 miss|LCK No|BLK  N/A",
            ),
            (0, "|OP No|LVL N/A|SNP N/A|TLB N/A|LCK No|BLK  N/A"),
        ] {
            assert_eq!(decode(v), want, "{v:#x}");
        }
    }

    #[test]
    fn data_source_column_grows_with_the_longest_so_far() {
        let fields = Fields::for_event(
            None,
            4,
            crate::perf::abi::PERF_SAMPLE_DATA_SRC | crate::perf::abi::PERF_SAMPLE_WEIGHT,
        );
        let mut columns = Columns::default();
        let mut line = |v| {
            let mut out = Vec::new();
            let mem = MemFields {
                data_src: Some(v),
                weight: Some(7),
                ..MemFields::default()
            };
            write(&mut out, fields, &mem, &mut columns);
            String::from_utf8(out).unwrap()
        };
        let long = line(0x11868100242);
        let short = line(0x10268100142);
        // The shorter decoding is padded to the longer one before it.
        assert_eq!(long.len(), short.len());
        assert_eq!(
            short,
            format!(
                "     10268100142 |OP LOAD|LVL L1 or L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A{}{}7",
                " ".repeat(10),
                " ".repeat(15)
            )
        );
    }
}
