//! `perf_event_attr`, read by its own `size` field and written at the size a target ABI accepts.
//!
//! Fields beyond the stated size default to zero; bytes beyond the newest layout bport knows are skipped (their
//! count is kept in `size`). The bitfield word is stored by the C compiler's bitfield order: LSB-first on
//! little-endian writers, MSB-first on big-endian ones, so a big-endian word is bit-reversed (perf commit
//! e108c66e2c45), and the two-bit `precise_ip` field is reversed back inside itself.

use super::cursor::Cursor;
use super::ReadError;
use crate::perf::abi::*;
use object::endian::Endian;

/// A parsed `perf_event_attr` with every field of layouts VER0–VER8.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerfEventAttr {
    /// `type` (PERF_TYPE_*).
    pub type_: u32,
    /// `size` as stated in the file (may exceed what bport knows).
    pub size: u32,
    /// `config`.
    pub config: u64,
    /// `sample_period`, or `sample_freq` when the `freq` flag is set.
    pub sample_period_or_freq: u64,
    /// `sample_type` (PERF_SAMPLE_*).
    pub sample_type: u64,
    /// `read_format` (PERF_FORMAT_*).
    pub read_format: u64,
    /// The bitfield word (`ATTR_FLAG_*`, `precise_ip`) in little-endian bit numbering.
    pub flags: u64,
    /// `wakeup_events` or `wakeup_watermark`.
    pub wakeup_events_or_watermark: u32,
    /// `bp_type`.
    pub bp_type: u32,
    /// `config1` (`bp_addr`, `kprobe_func`, `uprobe_path`).
    pub config1: u64,
    /// `config2` (`bp_len`, …) — VER1.
    pub config2: u64,
    /// `branch_sample_type` — VER2.
    pub branch_sample_type: u64,
    /// `sample_regs_user` — VER3.
    pub sample_regs_user: u64,
    /// `sample_stack_user` — VER3.
    pub sample_stack_user: u32,
    /// `clockid` — in VER3's tail, used since 4.1.
    pub clockid: i32,
    /// `sample_regs_intr` — VER4.
    pub sample_regs_intr: u64,
    /// `aux_watermark` — VER5.
    pub aux_watermark: u32,
    /// `sample_max_stack` — in VER5's tail, used since 4.8.
    pub sample_max_stack: u16,
    /// `__reserved_2`.
    pub reserved_2: u16,
    /// `aux_sample_size` — VER6.
    pub aux_sample_size: u32,
    /// `aux_action` (formerly `__reserved_3`).
    pub aux_action: u32,
    /// `sig_data` — VER7.
    pub sig_data: u64,
    /// `config3` — VER8.
    pub config3: u64,
}

fn flags_from_disk<E: Endian>(raw: [u8; 8], endian: E) -> u64 {
    if endian.is_big_endian() {
        swap_precise_ip(u64::from_be_bytes(raw).reverse_bits())
    } else {
        u64::from_le_bytes(raw)
    }
}

fn flags_to_disk<E: Endian>(flags: u64, endian: E) -> [u8; 8] {
    if endian.is_big_endian() {
        swap_precise_ip(flags).reverse_bits().to_be_bytes()
    } else {
        flags.to_le_bytes()
    }
}

/// Reversing the whole word also reverses the two bits of `precise_ip`; put them back.
fn swap_precise_ip(flags: u64) -> u64 {
    let p = (flags & ATTR_PRECISE_IP_MASK) >> ATTR_PRECISE_IP_SHIFT;
    let p = ((p & 1) << 1) | (p >> 1);
    (flags & !ATTR_PRECISE_IP_MASK) | (p << ATTR_PRECISE_IP_SHIFT)
}

impl PerfEventAttr {
    /// Reads an attr from the start of `data` (file offset `offset`), by its own size field. Returns the attr and
    /// the number of bytes it occupies (its stated size, or VER0 for the legacy size 0).
    pub fn parse<E: Endian>(
        data: &[u8],
        offset: u64,
        endian: E,
    ) -> Result<(Self, usize), ReadError> {
        let mut c = Cursor::new(data, offset, endian, "perf_event_attr");
        let type_ = c.u32()?;
        let stated = c.u32()?;
        // size 0 is the kernel's "ABI compatibility quirk" for VER0 (perf_copy_attr).
        let size = if stated == 0 {
            PERF_ATTR_SIZE_VER0
        } else {
            stated
        };
        if size < PERF_ATTR_SIZE_VER0 {
            return Err(ReadError::invalid(
                "perf_event_attr",
                offset,
                format!("size {size} is below the smallest layout ({PERF_ATTR_SIZE_VER0} bytes)"),
            ));
        }
        if size as usize > data.len() {
            return Err(ReadError::Truncated {
                what: "perf_event_attr",
                offset,
                needed: u64::from(size),
                available: data.len() as u64,
            });
        }
        let known = &data[..(size.min(PERF_ATTR_SIZE_NEWEST)) as usize];
        let mut c = Cursor::new(known, offset, endian, "perf_event_attr");
        c.take(8)?;
        let mut a = PerfEventAttr {
            type_,
            size,
            config: c.u64()?,
            sample_period_or_freq: c.u64()?,
            sample_type: c.u64()?,
            read_format: c.u64()?,
            ..Default::default()
        };
        let raw: [u8; 8] = c.take(8)?.try_into().expect("took 8 bytes");
        a.flags = flags_from_disk(raw, endian);
        a.wakeup_events_or_watermark = c.u32()?;
        a.bp_type = c.u32()?;
        a.config1 = c.u64()?;
        // Each later field exists only if the stated size reaches it.
        if c.remaining() >= 8 {
            a.config2 = c.u64()?;
        }
        if c.remaining() >= 8 {
            a.branch_sample_type = c.u64()?;
        }
        if c.remaining() >= 16 {
            a.sample_regs_user = c.u64()?;
            a.sample_stack_user = c.u32()?;
            a.clockid = c.i32()?;
        }
        if c.remaining() >= 8 {
            a.sample_regs_intr = c.u64()?;
        }
        if c.remaining() >= 8 {
            a.aux_watermark = c.u32()?;
            a.sample_max_stack = c.u16()?;
            a.reserved_2 = c.u16()?;
        }
        if c.remaining() >= 8 {
            a.aux_sample_size = c.u32()?;
            a.aux_action = c.u32()?;
        }
        if c.remaining() >= 8 {
            a.sig_data = c.u64()?;
        }
        if c.remaining() >= 8 {
            a.config3 = c.u64()?;
        }
        Ok((a, size as usize))
    }

    /// The smallest layout (`PERF_ATTR_SIZE_VER*`) that holds every non-zero field.
    pub fn min_size(&self) -> u32 {
        if self.config3 != 0 {
            PERF_ATTR_SIZE_VER8
        } else if self.sig_data != 0 {
            PERF_ATTR_SIZE_VER7
        } else if self.aux_sample_size != 0 || self.aux_action != 0 {
            PERF_ATTR_SIZE_VER6
        } else if self.aux_watermark != 0 || self.sample_max_stack != 0 || self.reserved_2 != 0 {
            PERF_ATTR_SIZE_VER5
        } else if self.sample_regs_intr != 0 {
            PERF_ATTR_SIZE_VER4
        } else if self.sample_regs_user != 0 || self.sample_stack_user != 0 || self.clockid != 0 {
            PERF_ATTR_SIZE_VER3
        } else if self.branch_sample_type != 0 {
            PERF_ATTR_SIZE_VER2
        } else if self.config2 != 0 {
            PERF_ATTR_SIZE_VER1
        } else {
            PERF_ATTR_SIZE_VER0
        }
    }

    /// Encodes the attr with `attr.size = size` (a multiple of 8, at least VER0); fields past `size` are left out
    /// and bytes past the newest known layout are zero. The caller checks that nothing set is left out
    /// ([`PerfEventAttr::min_size`]).
    pub fn write<E: Endian>(&self, size: u32, endian: E, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&endian.write_u32(self.type_));
        out.extend_from_slice(&endian.write_u32(size));
        for v in [
            self.config,
            self.sample_period_or_freq,
            self.sample_type,
            self.read_format,
        ] {
            out.extend_from_slice(&endian.write_u64(v));
        }
        out.extend_from_slice(&flags_to_disk(self.flags, endian));
        out.extend_from_slice(&endian.write_u32(self.wakeup_events_or_watermark));
        out.extend_from_slice(&endian.write_u32(self.bp_type));
        out.extend_from_slice(&endian.write_u64(self.config1));
        out.extend_from_slice(&endian.write_u64(self.config2));
        out.extend_from_slice(&endian.write_u64(self.branch_sample_type));
        out.extend_from_slice(&endian.write_u64(self.sample_regs_user));
        out.extend_from_slice(&endian.write_u32(self.sample_stack_user));
        out.extend_from_slice(&endian.write_u32(self.clockid as u32));
        out.extend_from_slice(&endian.write_u64(self.sample_regs_intr));
        out.extend_from_slice(&endian.write_u32(self.aux_watermark));
        out.extend_from_slice(&endian.write_u16(self.sample_max_stack));
        out.extend_from_slice(&endian.write_u16(self.reserved_2));
        out.extend_from_slice(&endian.write_u32(self.aux_sample_size));
        out.extend_from_slice(&endian.write_u32(self.aux_action));
        out.extend_from_slice(&endian.write_u64(self.sig_data));
        out.extend_from_slice(&endian.write_u64(self.config3));
        out.resize(start + size as usize, 0);
    }

    /// Drops every attr bit the target ABI lacks (flags, sample_type, read_format, branch_sample_type) and
    /// returns what was dropped, as `(field, bits)`, so the caller can log or refuse it. Fields past the target's
    /// attr size are not touched: [`super::PerfFileWriter::add_attr`] refuses those.
    pub fn cap_to(&mut self, abi: &KernelAbi) -> Vec<(&'static str, u64)> {
        let mut dropped = Vec::new();
        for (what, field, allowed) in [
            ("flags", &mut self.flags, abi.attr_flags),
            ("sample_type", &mut self.sample_type, abi.sample_types),
            ("read_format", &mut self.read_format, abi.read_formats),
            (
                "branch_sample_type",
                &mut self.branch_sample_type,
                abi.branch_sample_types,
            ),
        ] {
            let extra = *field & !allowed;
            if extra != 0 {
                *field &= allowed;
                dropped.push((what, extra));
            }
        }
        dropped
    }

    /// Whether flag bit(s) `bits` are set.
    pub fn has_flag(&self, bits: u64) -> bool {
        self.flags & bits == bits
    }

    /// Whether non-sample records carry a `sample_id` trailer.
    pub fn sample_id_all(&self) -> bool {
        self.has_flag(ATTR_FLAG_SAMPLE_ID_ALL)
    }

    /// Whether `sample_period_or_freq` is a frequency.
    pub fn freq(&self) -> bool {
        self.has_flag(ATTR_FLAG_FREQ)
    }

    /// `precise_ip` (0–3).
    pub fn precise_ip(&self) -> u8 {
        ((self.flags & ATTR_PRECISE_IP_MASK) >> ATTR_PRECISE_IP_SHIFT) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::endian::{BigEndian, LittleEndian};

    fn full() -> PerfEventAttr {
        PerfEventAttr {
            type_: PERF_TYPE_SOFTWARE,
            size: PERF_ATTR_SIZE_VER8,
            config: 1,
            sample_period_or_freq: 4000,
            sample_type: PERF_SAMPLE_IP | PERF_SAMPLE_TID,
            read_format: PERF_FORMAT_ID,
            flags: ATTR_FLAG_DISABLED
                | ATTR_FLAG_FREQ
                | ATTR_FLAG_SAMPLE_ID_ALL
                | (1 << ATTR_PRECISE_IP_SHIFT),
            wakeup_events_or_watermark: 3,
            bp_type: 4,
            config1: 5,
            config2: 6,
            branch_sample_type: 7,
            sample_regs_user: 0xff,
            sample_stack_user: 8192,
            clockid: -1,
            sample_regs_intr: 9,
            aux_watermark: 10,
            sample_max_stack: 11,
            reserved_2: 0,
            aux_sample_size: 12,
            aux_action: 13,
            sig_data: 14,
            config3: 15,
        }
    }

    /// The attr as it reads back after being cut to `size` bytes.
    fn cut(mut a: PerfEventAttr, size: u32) -> PerfEventAttr {
        a.size = size;
        if size < PERF_ATTR_SIZE_VER8 {
            a.config3 = 0;
        }
        if size < PERF_ATTR_SIZE_VER7 {
            a.sig_data = 0;
        }
        if size < PERF_ATTR_SIZE_VER6 {
            a.aux_sample_size = 0;
            a.aux_action = 0;
        }
        if size < PERF_ATTR_SIZE_VER5 {
            a.aux_watermark = 0;
            a.sample_max_stack = 0;
        }
        if size < PERF_ATTR_SIZE_VER4 {
            a.sample_regs_intr = 0;
        }
        if size < PERF_ATTR_SIZE_VER3 {
            a.sample_regs_user = 0;
            a.sample_stack_user = 0;
            a.clockid = 0;
        }
        if size < PERF_ATTR_SIZE_VER2 {
            a.branch_sample_type = 0;
        }
        if size < PERF_ATTR_SIZE_VER1 {
            a.config2 = 0;
        }
        a
    }

    #[test]
    fn every_size_round_trips_in_both_byte_orders() {
        for size in [64, 72, 80, 96, 104, 112, 120, 128, 136] {
            let want = cut(full(), size);
            assert_eq!(want.min_size(), size, "min_size at {size}");
            let mut le = Vec::new();
            want.write(size, LittleEndian, &mut le);
            let mut be = Vec::new();
            want.write(size, BigEndian, &mut be);
            assert_eq!(le.len(), size as usize);
            assert_eq!(be.len(), size as usize);
            assert_eq!(
                PerfEventAttr::parse(&le, 0, LittleEndian).unwrap(),
                (want.clone(), size as usize)
            );
            assert_eq!(
                PerfEventAttr::parse(&be, 0, BigEndian).unwrap(),
                (want.clone(), size as usize)
            );
            // Big-endian really is big-endian: type and size fields.
            assert_eq!(&be[0..8], &[0, 0, 0, 1, 0, 0, 0, size as u8]);
        }
    }

    #[test]
    fn big_endian_bitfield_is_msb_first() {
        // On a big-endian writer `disabled` (the first bitfield) is the top bit of the first byte, and
        // precise_ip=1 keeps its value.
        let a = PerfEventAttr {
            size: 64,
            flags: ATTR_FLAG_DISABLED | (1 << ATTR_PRECISE_IP_SHIFT),
            ..Default::default()
        };
        let mut be = Vec::new();
        a.write(64, BigEndian, &mut be);
        assert_eq!(be[40], 0x80);
        // bits 15 and 16 in MSB-first order: byte 1 bit 0 (pos 15) is precise_ip's high bit, byte 2 bit 7 its low
        // bit; value 1 sets only the low bit.
        assert_eq!(be[41], 0x00);
        assert_eq!(be[42], 0x80);
        assert_eq!(
            PerfEventAttr::parse(&be, 0, BigEndian)
                .unwrap()
                .0
                .precise_ip(),
            1
        );
    }

    #[test]
    fn cap_to_drops_what_the_target_lacks() {
        let mut a = PerfEventAttr {
            flags: ATTR_FLAG_SAMPLE_ID_ALL
                | ATTR_FLAG_MMAP2
                | ATTR_FLAG_KSYMBOL
                | ATTR_FLAG_BPF_EVENT,
            sample_type: PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER,
            read_format: PERF_FORMAT_ID | PERF_FORMAT_LOST,
            ..Default::default()
        };
        let abi = KernelAbi::for_version(&"3.10".parse().unwrap());
        let dropped = a.cap_to(&abi);
        assert_eq!(
            dropped,
            [
                (
                    "flags",
                    ATTR_FLAG_MMAP2 | ATTR_FLAG_KSYMBOL | ATTR_FLAG_BPF_EVENT
                ),
                ("read_format", PERF_FORMAT_LOST)
            ]
        );
        assert_eq!(a.flags, ATTR_FLAG_SAMPLE_ID_ALL);
        assert_eq!(a.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER);
        assert!(a.cap_to(&abi).is_empty());
    }

    #[test]
    fn larger_than_known_attr_is_read_and_its_tail_skipped() {
        let mut bytes = Vec::new();
        let a = cut(full(), 136);
        a.write(136, LittleEndian, &mut bytes);
        bytes.extend_from_slice(&[0xaa; 32]);
        bytes[4..8].copy_from_slice(&168u32.to_le_bytes());
        let (got, used) = PerfEventAttr::parse(&bytes, 0, LittleEndian).unwrap();
        assert_eq!(used, 168);
        assert_eq!(got, PerfEventAttr { size: 168, ..a });
    }

    #[test]
    fn size_zero_means_ver0_and_small_sizes_are_rejected() {
        let mut bytes = Vec::new();
        PerfEventAttr::default().write(64, LittleEndian, &mut bytes);
        bytes[4..8].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(PerfEventAttr::parse(&bytes, 0, LittleEndian).unwrap().1, 64);
        bytes[4..8].copy_from_slice(&48u32.to_le_bytes());
        let e = PerfEventAttr::parse(&bytes, 0x100, LittleEndian).unwrap_err();
        assert_eq!(e.offset(), Some(0x100));
        bytes[4..8].copy_from_slice(&96u32.to_le_bytes());
        assert!(matches!(
            PerfEventAttr::parse(&bytes, 0, LittleEndian),
            Err(ReadError::Truncated {
                needed: 96,
                available: 64,
                ..
            })
        ));
    }
}
