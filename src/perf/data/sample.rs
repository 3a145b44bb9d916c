//! The layout of `PERF_RECORD_SAMPLE` bodies and of the `sample_id` trailer, computed once per attr, and the
//! parse/encode pair for both (perf_event.h, "struct { struct perf_event_header header; ... }").

use super::cursor::Cursor;
use super::records::{BranchStack, RecordMeta, Regs, SampleId, SampleRecord, StackUser, U64s};
use super::{PerfEventAttr, ReadError};
use crate::perf::abi::*;
use object::endian::{Endian, Endianness};

/// What one attr's samples and trailers contain, derived from `sample_type`, `read_format`, `branch_sample_type`,
/// the register masks and `sample_id_all`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleLayout {
    /// `sample_type`.
    pub sample_type: u64,
    /// `read_format`.
    pub read_format: u64,
    /// `sample_regs_user`.
    pub regs_user_mask: u64,
    /// `sample_regs_intr`.
    pub regs_intr_mask: u64,
    /// Branch stacks carry `hw_idx`.
    pub branch_hw_index: bool,
    /// Branch stacks carry counters.
    pub branch_counters: bool,
    /// Non-sample records end in a `sample_id` trailer.
    pub sample_id_all: bool,
}

/// Trailer fields in order (perf_event.h `struct sample_id`).
const TRAILER_BITS: [u64; 6] = [
    PERF_SAMPLE_TID,
    PERF_SAMPLE_TIME,
    PERF_SAMPLE_ID,
    PERF_SAMPLE_STREAM_ID,
    PERF_SAMPLE_CPU,
    PERF_SAMPLE_IDENTIFIER,
];

impl SampleLayout {
    /// The layout of `attr`'s records.
    pub fn of(attr: &PerfEventAttr) -> Self {
        SampleLayout {
            sample_type: attr.sample_type,
            read_format: attr.read_format,
            regs_user_mask: attr.sample_regs_user,
            regs_intr_mask: attr.sample_regs_intr,
            branch_hw_index: attr.branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX != 0,
            branch_counters: attr.branch_sample_type & PERF_SAMPLE_BRANCH_COUNTERS != 0,
            sample_id_all: attr.sample_id_all(),
        }
    }

    fn has(&self, bit: u64) -> bool {
        self.sample_type & bit != 0
    }

    /// Size of the `sample_id` trailer on non-sample records (0 without `sample_id_all`).
    pub fn trailer_size(&self) -> usize {
        if !self.sample_id_all {
            return 0;
        }
        TRAILER_BITS.iter().filter(|&&b| self.has(b)).count() * 8
    }

    /// Byte position of the event id in a sample body, if the sample has one at a fixed place.
    pub fn sample_id_pos(&self) -> Option<usize> {
        if self.has(PERF_SAMPLE_IDENTIFIER) {
            return Some(0);
        }
        if !self.has(PERF_SAMPLE_ID) {
            return None;
        }
        let before = [
            PERF_SAMPLE_IP,
            PERF_SAMPLE_TID,
            PERF_SAMPLE_TIME,
            PERF_SAMPLE_ADDR,
        ];
        Some(before.iter().filter(|&&b| self.has(b)).count() * 8)
    }

    /// Byte position of the event id counted back from the end of a non-sample record, if it has one.
    pub fn trailer_id_pos_from_end(&self) -> Option<usize> {
        if !self.sample_id_all {
            return None;
        }
        if self.has(PERF_SAMPLE_IDENTIFIER) {
            return Some(8);
        }
        if !self.has(PERF_SAMPLE_ID) {
            return None;
        }
        let after = [PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU];
        Some((1 + after.iter().filter(|&&b| self.has(b)).count()) * 8)
    }

    /// The time of a record of type `ty` (a sample, or a kernel record with a `sample_id` trailer) read alone, as
    /// perf's `evlist__parse_sample_timestamp` reads it to queue the record; `None` where parsing the record
    /// would give none.
    pub(crate) fn time_of<E: Endian>(&self, ty: u32, body: &[u8], endian: E) -> Option<u64> {
        if !self.has(PERF_SAMPLE_TIME) || ty >= PERF_RECORD_USER_TYPE_START {
            return None;
        }
        let words_before = |bits: &[u64]| bits.iter().filter(|&&b| self.has(b)).count() * 8;
        let at = if ty == PERF_RECORD_SAMPLE {
            words_before(&[PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP, PERF_SAMPLE_TID])
        } else {
            let n = self.trailer_size();
            if n == 0 {
                return None;
            }
            body.len().checked_sub(n)? + words_before(&[PERF_SAMPLE_TID])
        };
        super::cursor::u64_at(body, at, endian)
    }

    fn read_values_len(&self) -> Result<u64, u64> {
        let f = self.read_format;
        let per_value =
            1 + u64::from(f & PERF_FORMAT_ID != 0) + u64::from(f & PERF_FORMAT_LOST != 0);
        let times = u64::from(f & PERF_FORMAT_TOTAL_TIME_ENABLED != 0)
            + u64::from(f & PERF_FORMAT_TOTAL_TIME_RUNNING != 0);
        if f & PERF_FORMAT_GROUP != 0 {
            Err(per_value) // caller reads `nr` first: 1 + times + nr * per_value
        } else {
            Ok(per_value + times)
        }
    }

    /// Parses the trailer at the end of a non-sample record body; returns it and the body without it.
    pub(crate) fn parse_trailer<'a, E: Endian>(
        &self,
        body: &'a [u8],
        offset: u64,
        endian: E,
    ) -> Result<(SampleId, &'a [u8]), ReadError> {
        let n = self.trailer_size();
        if n == 0 {
            return Ok((SampleId::default(), body));
        }
        if body.len() < n {
            return Err(ReadError::Truncated {
                what: "sample_id trailer",
                offset,
                needed: n as u64,
                available: body.len() as u64,
            });
        }
        let (rest, trailer) = body.split_at(body.len() - n);
        let mut c = Cursor::new(
            trailer,
            offset + rest.len() as u64,
            endian,
            "sample_id trailer",
        );
        let mut s = SampleId::default();
        if self.has(PERF_SAMPLE_TID) {
            s.pid = Some(c.u32()?);
            s.tid = Some(c.u32()?);
        }
        if self.has(PERF_SAMPLE_TIME) {
            s.time = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_ID) {
            s.id = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_STREAM_ID) {
            s.stream_id = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_CPU) {
            s.cpu = Some(c.u32()?);
            c.u32()?;
        }
        if self.has(PERF_SAMPLE_IDENTIFIER) {
            s.id = Some(c.u64()?);
        }
        Ok((s, rest))
    }

    /// Encodes a trailer for `s` (absent fields as zero, as perf's synthesized records have).
    pub(crate) fn write_trailer<E: Endian>(&self, s: &SampleId, endian: E, out: &mut Vec<u8>) {
        if !self.sample_id_all {
            return;
        }
        if self.has(PERF_SAMPLE_TID) {
            out.extend_from_slice(&endian.write_u32(s.pid.unwrap_or(0)));
            out.extend_from_slice(&endian.write_u32(s.tid.unwrap_or(0)));
        }
        if self.has(PERF_SAMPLE_TIME) {
            out.extend_from_slice(&endian.write_u64(s.time.unwrap_or(0)));
        }
        if self.has(PERF_SAMPLE_ID) {
            out.extend_from_slice(&endian.write_u64(s.id.unwrap_or(0)));
        }
        if self.has(PERF_SAMPLE_STREAM_ID) {
            out.extend_from_slice(&endian.write_u64(s.stream_id.unwrap_or(0)));
        }
        if self.has(PERF_SAMPLE_CPU) {
            out.extend_from_slice(&endian.write_u32(s.cpu.unwrap_or(0)));
            out.extend_from_slice(&endian.write_u32(0));
        }
        if self.has(PERF_SAMPLE_IDENTIFIER) {
            out.extend_from_slice(&endian.write_u64(s.id.unwrap_or(0)));
        }
    }

    /// Parses a sample body (after the 8-byte header).
    pub(crate) fn parse_sample<'a, E: Endian>(
        &self,
        body: &'a [u8],
        meta: RecordMeta,
        attr_index: usize,
        endian: E,
        runtime: Endianness,
    ) -> Result<SampleRecord<'a>, ReadError> {
        let mut c = Cursor::new(body, meta.offset + 8, endian, "sample");
        let mut s = SampleRecord {
            meta,
            attr_index,
            ..SampleRecord::default()
        };
        let u64s = |b: &'a [u8]| U64s::new(b, runtime);
        if self.has(PERF_SAMPLE_IDENTIFIER) {
            s.id = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_IP) {
            s.ip = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_TID) {
            s.pid = Some(c.u32()?);
            s.tid = Some(c.u32()?);
        }
        if self.has(PERF_SAMPLE_TIME) {
            s.time = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_ADDR) {
            s.addr = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_ID) {
            s.id = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_STREAM_ID) {
            s.stream_id = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_CPU) {
            s.cpu = Some(c.u32()?);
            c.u32()?;
        }
        if self.has(PERF_SAMPLE_PERIOD) {
            s.period = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_READ) {
            let n = match self.read_values_len() {
                Ok(n) => n,
                Err(per_value) => {
                    let mut peek = c;
                    let nr = peek.u64()?;
                    let times = u64::from(self.read_format & PERF_FORMAT_TOTAL_TIME_ENABLED != 0)
                        + u64::from(self.read_format & PERF_FORMAT_TOTAL_TIME_RUNNING != 0);
                    nr.checked_mul(per_value)
                        .and_then(|v| v.checked_add(1 + times))
                        .ok_or_else(|| {
                            ReadError::invalid("sample read values", c.offset(), "count overflows")
                        })?
                }
            };
            s.read = Some(u64s(c.u64s(n)?));
        }
        if self.has(PERF_SAMPLE_CALLCHAIN) {
            let nr = c.u64()?;
            s.callchain = Some(u64s(c.u64s(nr)?));
        }
        if self.has(PERF_SAMPLE_RAW) {
            let size = c.u32()?;
            s.raw = Some(c.take(u64::from(size))?);
        }
        if self.has(PERF_SAMPLE_BRANCH_STACK) {
            let nr = c.u64()?;
            let hw_idx = if self.branch_hw_index {
                Some(c.u64()?)
            } else {
                None
            };
            let entries = nr
                .checked_mul(3)
                .ok_or_else(|| ReadError::invalid("branch stack", c.offset(), "count overflows"))?;
            let entries = u64s(c.u64s(entries)?);
            let counters = if self.branch_counters {
                Some(u64s(c.u64s(nr)?))
            } else {
                None
            };
            s.branch_stack = Some(BranchStack {
                hw_idx,
                entries,
                counters,
            });
        }
        if self.has(PERF_SAMPLE_REGS_USER) {
            s.regs_user = Some(parse_regs(&mut c, self.regs_user_mask, runtime)?);
        }
        if self.has(PERF_SAMPLE_STACK_USER) {
            let size = c.u64()?;
            let data = c.take(size)?;
            // The kernel writes dyn_size only when it wrote a stack (perf_output_sample_ustack).
            let dyn_size = if size != 0 { c.u64()? } else { 0 };
            s.stack_user = Some(StackUser { data, dyn_size });
        }
        if self.has(PERF_SAMPLE_WEIGHT) || self.has(PERF_SAMPLE_WEIGHT_STRUCT) {
            s.weight = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_DATA_SRC) {
            s.data_src = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_TRANSACTION) {
            s.transaction = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_REGS_INTR) {
            s.regs_intr = Some(parse_regs(&mut c, self.regs_intr_mask, runtime)?);
        }
        if self.has(PERF_SAMPLE_PHYS_ADDR) {
            s.phys_addr = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_CGROUP) {
            s.cgroup = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_DATA_PAGE_SIZE) {
            s.data_page_size = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_CODE_PAGE_SIZE) {
            s.code_page_size = Some(c.u64()?);
        }
        if self.has(PERF_SAMPLE_AUX) {
            let size = c.u64()?;
            s.aux = Some(c.take(size)?);
        }
        s.meta.sample_id = SampleId {
            pid: s.pid,
            tid: s.tid,
            time: s.time,
            id: s.id,
            stream_id: s.stream_id,
            cpu: s.cpu,
        };
        Ok(s)
    }

    /// Encodes the body of `s` for this layout (fields the layout has but `s` lacks are written as zero).
    pub(crate) fn write_sample<E: Endian>(
        &self,
        s: &SampleRecord<'_>,
        endian: E,
        out: &mut Vec<u8>,
    ) {
        let w64 = |out: &mut Vec<u8>, v: u64| out.extend_from_slice(&endian.write_u64(v));
        let w32 = |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&endian.write_u32(v));
        let wu64s = |out: &mut Vec<u8>, v: &U64s<'_>| {
            for x in v.iter() {
                out.extend_from_slice(&endian.write_u64(x));
            }
        };
        if self.has(PERF_SAMPLE_IDENTIFIER) {
            w64(out, s.id.unwrap_or(0));
        }
        if self.has(PERF_SAMPLE_IP) {
            w64(out, s.ip.unwrap_or(0));
        }
        if self.has(PERF_SAMPLE_TID) {
            w32(out, s.pid.unwrap_or(0));
            w32(out, s.tid.unwrap_or(0));
        }
        if self.has(PERF_SAMPLE_TIME) {
            w64(out, s.time.unwrap_or(0));
        }
        if self.has(PERF_SAMPLE_ADDR) {
            w64(out, s.addr.unwrap_or(0));
        }
        if self.has(PERF_SAMPLE_ID) {
            w64(out, s.id.unwrap_or(0));
        }
        if self.has(PERF_SAMPLE_STREAM_ID) {
            w64(out, s.stream_id.unwrap_or(0));
        }
        if self.has(PERF_SAMPLE_CPU) {
            w32(out, s.cpu.unwrap_or(0));
            w32(out, 0);
        }
        if self.has(PERF_SAMPLE_PERIOD) {
            w64(out, s.period.unwrap_or(0));
        }
        if self.has(PERF_SAMPLE_READ) {
            match &s.read {
                Some(v) => wu64s(out, v),
                None => {
                    let n = match self.read_values_len() {
                        Ok(n) => n,
                        Err(_) => {
                            1 + u64::from(self.read_format & PERF_FORMAT_TOTAL_TIME_ENABLED != 0)
                                + u64::from(self.read_format & PERF_FORMAT_TOTAL_TIME_RUNNING != 0)
                        }
                    };
                    for _ in 0..n {
                        w64(out, 0);
                    }
                }
            }
        }
        if self.has(PERF_SAMPLE_CALLCHAIN) {
            let chain = s.callchain.unwrap_or_default();
            w64(out, chain.len() as u64);
            wu64s(out, &chain);
        }
        if self.has(PERF_SAMPLE_RAW) {
            let raw = s.raw.unwrap_or(&[]);
            w32(out, raw.len() as u32);
            out.extend_from_slice(raw);
        }
        if self.has(PERF_SAMPLE_BRANCH_STACK) {
            let b = s.branch_stack.unwrap_or_default();
            let nr = b.len() as u64;
            w64(out, nr);
            if self.branch_hw_index {
                w64(out, b.hw_idx.unwrap_or(0));
            }
            wu64s(out, &b.entries);
            if self.branch_counters {
                match &b.counters {
                    Some(c) => wu64s(out, c),
                    None => (0..nr).for_each(|_| w64(out, 0)),
                }
            }
        }
        if self.has(PERF_SAMPLE_REGS_USER) {
            write_regs(s.regs_user.as_ref(), self.regs_user_mask, endian, out);
        }
        if self.has(PERF_SAMPLE_STACK_USER) {
            let st = s.stack_user.unwrap_or_default();
            w64(out, st.data.len() as u64);
            out.extend_from_slice(st.data);
            if !st.data.is_empty() {
                w64(out, st.dyn_size);
            }
        }
        if self.has(PERF_SAMPLE_WEIGHT) || self.has(PERF_SAMPLE_WEIGHT_STRUCT) {
            w64(out, s.weight.unwrap_or(0));
        }
        if self.has(PERF_SAMPLE_DATA_SRC) {
            w64(out, s.data_src.unwrap_or(0));
        }
        if self.has(PERF_SAMPLE_TRANSACTION) {
            w64(out, s.transaction.unwrap_or(0));
        }
        if self.has(PERF_SAMPLE_REGS_INTR) {
            write_regs(s.regs_intr.as_ref(), self.regs_intr_mask, endian, out);
        }
        for (bit, v) in [
            (PERF_SAMPLE_PHYS_ADDR, s.phys_addr),
            (PERF_SAMPLE_CGROUP, s.cgroup),
            (PERF_SAMPLE_DATA_PAGE_SIZE, s.data_page_size),
            (PERF_SAMPLE_CODE_PAGE_SIZE, s.code_page_size),
        ] {
            if self.has(bit) {
                w64(out, v.unwrap_or(0));
            }
        }
        if self.has(PERF_SAMPLE_AUX) {
            let aux = s.aux.unwrap_or(&[]);
            w64(out, aux.len() as u64);
            out.extend_from_slice(aux);
        }
    }
}

fn parse_regs<'a, E: Endian>(
    c: &mut Cursor<'a, E>,
    mask: u64,
    runtime: Endianness,
) -> Result<Regs<'a>, ReadError> {
    let abi = c.u64()?;
    // With abi NONE (a kernel thread, or no user context) the kernel writes no values.
    let values = if abi == PERF_SAMPLE_REGS_ABI_NONE {
        c.u64s(0)?
    } else {
        c.u64s(u64::from(mask.count_ones()))?
    };
    Ok(Regs {
        abi,
        mask,
        values: U64s::new(values, runtime),
    })
}

fn write_regs<E: Endian>(regs: Option<&Regs<'_>>, mask: u64, endian: E, out: &mut Vec<u8>) {
    match regs {
        Some(r) if r.abi != PERF_SAMPLE_REGS_ABI_NONE => {
            out.extend_from_slice(&endian.write_u64(r.abi));
            let n = mask.count_ones() as usize;
            for i in 0..n {
                out.extend_from_slice(&endian.write_u64(r.values.get(i).unwrap_or(0)));
            }
        }
        _ => out.extend_from_slice(&endian.write_u64(PERF_SAMPLE_REGS_ABI_NONE)),
    }
}
