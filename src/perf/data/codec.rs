//! Record bodies from and to bytes: every record type parsed into the borrowed structs of [`super::records`] and
//! encoded back by the same module, so reader and writer cannot drift apart.
//!
//! Owns: `parse_body` and `encode`. Does not own: record framing ([`super::raw`]) or the sample layout
//! ([`super::sample`], which this module calls for PERF_RECORD_SAMPLE and the `sample_id` trailer).

use super::cursor::{align8, Cursor};
use super::records::*;
use super::sample::SampleLayout;
use super::{ReadError, WriteError};
use crate::perf::abi::*;
use object::endian::{Endian, Endianness};

fn string_field<'a, E: Endian>(c: &Cursor<'a, E>) -> &'a [u8] {
    c.c_str_in_rest()
}

/// Parses the body (after the header) of a record of type `meta.ty`. `layout` is the attr's layout for kernel
/// records (`None` for user records).
pub(crate) fn parse_body<'a, E: Endian>(
    mut meta: RecordMeta,
    body: &'a [u8],
    layout: Option<&SampleLayout>,
    endian: E,
    runtime: Endianness,
) -> Result<Record<'a>, ReadError> {
    let ty = meta.ty;
    if ty == PERF_RECORD_SAMPLE {
        let layout = layout.ok_or_else(|| {
            ReadError::invalid(
                "sample",
                meta.offset,
                "no event (attr) describes this sample",
            )
        })?;
        let attr_index = meta.attr_index.unwrap_or(0);
        return layout
            .parse_sample(body, meta, attr_index, endian, runtime)
            .map(Record::Sample);
    }
    if ty >= PERF_RECORD_USER_TYPE_START {
        let raw = RawRecord { meta, body };
        return Ok(match ty {
            PERF_RECORD_FINISHED_ROUND => Record::FinishedRound(meta),
            PERF_RECORD_FINISHED_INIT => Record::FinishedInit(meta),
            _ if is_known_type(ty) => Record::User(raw),
            _ => Record::Unknown(raw),
        });
    }
    if !is_known_type(ty) {
        // An unknown kernel type may still carry a trailer, but its body layout is unknown: keep it whole.
        return Ok(Record::Unknown(RawRecord { meta, body }));
    }
    let (sample_id, rest) = match layout {
        Some(l) => l.parse_trailer(body, meta.offset + 8, endian)?,
        None => (SampleId::default(), body),
    };
    meta.sample_id = sample_id;
    let mut c = Cursor::new(rest, meta.offset + 8, endian, "record body");
    let fixed = |fields: [u64; 3]| FixedRecord { meta, fields };
    Ok(match ty {
        PERF_RECORD_MMAP => {
            let (pid, tid) = (c.u32()?, c.u32()?);
            let (addr, len, pgoff) = (c.u64()?, c.u64()?, c.u64()?);
            Record::Mmap(MmapRecord {
                meta,
                pid,
                tid,
                addr,
                len,
                pgoff,
                filename: string_field(&c),
            })
        }
        PERF_RECORD_MMAP2 => {
            let (pid, tid) = (c.u32()?, c.u32()?);
            let (addr, len, pgoff) = (c.u64()?, c.u64()?, c.u64()?);
            let inode = if meta.misc & PERF_RECORD_MISC_MMAP_BUILD_ID != 0 {
                let id = c.take(24)?;
                let n = usize::from(id[0]).min(20);
                Mmap2Inode::BuildId(&id[4..4 + n])
            } else {
                Mmap2Inode::Inode {
                    maj: c.u32()?,
                    min: c.u32()?,
                    ino: c.u64()?,
                    ino_generation: c.u64()?,
                }
            };
            let (prot, flags) = (c.u32()?, c.u32()?);
            Record::Mmap2(Mmap2Record {
                meta,
                pid,
                tid,
                addr,
                len,
                pgoff,
                inode,
                prot,
                flags,
                filename: string_field(&c),
            })
        }
        PERF_RECORD_COMM => {
            let (pid, tid) = (c.u32()?, c.u32()?);
            Record::Comm(CommRecord {
                meta,
                pid,
                tid,
                comm: string_field(&c),
            })
        }
        PERF_RECORD_FORK | PERF_RECORD_EXIT => {
            let r = ForkRecord {
                meta,
                pid: c.u32()?,
                ppid: c.u32()?,
                tid: c.u32()?,
                ptid: c.u32()?,
                time: c.u64()?,
            };
            if ty == PERF_RECORD_FORK {
                Record::Fork(r)
            } else {
                Record::Exit(r)
            }
        }
        PERF_RECORD_LOST => Record::Lost(LostRecord {
            meta,
            id: c.u64()?,
            lost: c.u64()?,
        }),
        PERF_RECORD_THROTTLE | PERF_RECORD_UNTHROTTLE => {
            let r = ThrottleRecord {
                meta,
                time: c.u64()?,
                id: c.u64()?,
                stream_id: c.u64()?,
            };
            if ty == PERF_RECORD_THROTTLE {
                Record::Throttle(r)
            } else {
                Record::Unthrottle(r)
            }
        }
        PERF_RECORD_LOST_SAMPLES => Record::LostSamples(fixed([c.u64()?, 0, 0])),
        PERF_RECORD_ITRACE_START => {
            Record::ItraceStart(fixed([u64::from(c.u32()?), u64::from(c.u32()?), 0]))
        }
        PERF_RECORD_SWITCH => Record::Switch(fixed([0, 0, 0])),
        PERF_RECORD_SWITCH_CPU_WIDE => {
            Record::SwitchCpuWide(fixed([u64::from(c.u32()?), u64::from(c.u32()?), 0]))
        }
        PERF_RECORD_AUX => Record::Aux(fixed([c.u64()?, c.u64()?, c.u64()?])),
        PERF_RECORD_AUX_OUTPUT_HW_ID => Record::AuxOutputHwId(fixed([c.u64()?, 0, 0])),
        PERF_RECORD_BPF_EVENT => Record::BpfEvent(RawRecord { meta, body: rest }),
        _ => Record::OtherKernel(RawRecord { meta, body: rest }),
    })
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s);
    let padded = align8(s.len() as u64 + 1) as usize;
    out.resize(out.len() + padded - s.len(), 0);
}

/// Encodes `rec` as a complete record (header included) in byte order `endian`. Kernel records get a `sample_id`
/// trailer per `layout`. The header's type and misc come from `rec.meta()`.
pub(crate) fn encode<E: Endian>(
    rec: &Record<'_>,
    layout: Option<&SampleLayout>,
    endian: E,
) -> Result<Vec<u8>, WriteError> {
    let meta = rec.meta();
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&[0; 8]);
    let w32 = |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&endian.write_u32(v));
    let w64 = |out: &mut Vec<u8>, v: u64| out.extend_from_slice(&endian.write_u64(v));
    let mut kernel_trailer = true;
    match rec {
        Record::Sample(s) => {
            let layout = layout.ok_or_else(|| {
                WriteError::Usage("a sample needs an attr (add_attr first)".into())
            })?;
            layout.write_sample(s, endian, &mut out);
            kernel_trailer = false;
        }
        Record::Mmap(r) => {
            w32(&mut out, r.pid);
            w32(&mut out, r.tid);
            w64(&mut out, r.addr);
            w64(&mut out, r.len);
            w64(&mut out, r.pgoff);
            put_str(&mut out, r.filename);
        }
        Record::Mmap2(r) => {
            w32(&mut out, r.pid);
            w32(&mut out, r.tid);
            w64(&mut out, r.addr);
            w64(&mut out, r.len);
            w64(&mut out, r.pgoff);
            match r.inode {
                Mmap2Inode::Inode {
                    maj,
                    min,
                    ino,
                    ino_generation,
                } => {
                    w32(&mut out, maj);
                    w32(&mut out, min);
                    w64(&mut out, ino);
                    w64(&mut out, ino_generation);
                }
                Mmap2Inode::BuildId(id) => {
                    let n = id.len().min(20);
                    out.push(n as u8);
                    out.extend_from_slice(&[0; 3]);
                    out.extend_from_slice(&id[..n]);
                    out.resize(out.len() + 20 - n, 0);
                }
            }
            w32(&mut out, r.prot);
            w32(&mut out, r.flags);
            put_str(&mut out, r.filename);
        }
        Record::Comm(r) => {
            w32(&mut out, r.pid);
            w32(&mut out, r.tid);
            put_str(&mut out, r.comm);
        }
        Record::Fork(r) | Record::Exit(r) => {
            for v in [r.pid, r.ppid, r.tid, r.ptid] {
                w32(&mut out, v);
            }
            w64(&mut out, r.time);
        }
        Record::Lost(r) => {
            w64(&mut out, r.id);
            w64(&mut out, r.lost);
        }
        Record::Throttle(r) | Record::Unthrottle(r) => {
            for v in [r.time, r.id, r.stream_id] {
                w64(&mut out, v);
            }
        }
        Record::LostSamples(r) | Record::AuxOutputHwId(r) => w64(&mut out, r.fields[0]),
        Record::ItraceStart(r) | Record::SwitchCpuWide(r) => {
            w32(&mut out, r.fields[0] as u32);
            w32(&mut out, r.fields[1] as u32);
        }
        Record::Switch(_) => {}
        Record::Aux(r) => {
            for v in r.fields {
                w64(&mut out, v);
            }
        }
        Record::BpfEvent(r) | Record::OtherKernel(r) => out.extend_from_slice(r.body),
        Record::FinishedRound(_) | Record::FinishedInit(_) => kernel_trailer = false,
        Record::User(r) | Record::Unknown(r) => {
            out.extend_from_slice(r.body);
            kernel_trailer = false;
        }
    }
    if kernel_trailer {
        if let Some(l) = layout {
            l.write_trailer(&meta.sample_id, endian, &mut out);
        }
    }
    let size = u16::try_from(out.len()).map_err(|_| {
        WriteError::Usage(format!(
            "record of type {} is {} bytes; records are at most 65535",
            meta.ty,
            out.len()
        ))
    })?;
    out[0..4].copy_from_slice(&endian.write_u32(meta.ty));
    out[4..6].copy_from_slice(&endian.write_u16(meta.misc));
    out[6..8].copy_from_slice(&endian.write_u16(size));
    Ok(out)
}
