//! Field values from a sample's `PERF_SAMPLE_RAW` bytes (the tracepoint record: common fields, then the event's
//! own, then the dynamic area `__data_loc` fields point into), in either byte order.

use object::endian::Endianness;

use crate::perf::data::{u16_at, u32_at, u64_at};

use super::format::Field;
use super::Error;

/// A decoded field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// An integer or pointer, sign-extended from its size when the field is signed.
    Int(i64),
    /// An unsigned integer or pointer.
    UInt(u64),
    /// A char array or `__data_loc char[]`, up to its first NUL.
    Str(Vec<u8>),
    /// Any other array: its elements, each read at the element size.
    Array(Vec<u64>),
}

impl Value {
    /// The value as the 64-bit pattern C would use in an expression (sign-extended for signed fields).
    pub fn as_u64(&self) -> u64 {
        match self {
            Value::Int(v) => *v as u64,
            Value::UInt(v) => *v,
            Value::Str(_) | Value::Array(_) => 0,
        }
    }
}

fn read_uint(bytes: &[u8], size: u32, endian: Endianness) -> Option<u64> {
    Some(match size {
        1 => u64::from(*bytes.first()?),
        2 => u64::from(u16_at(bytes, 0, endian)?),
        4 => u64::from(u32_at(bytes, 0, endian)?),
        8 => u64_at(bytes, 0, endian)?,
        _ => return None,
    })
}

fn sign_extend(v: u64, size: u32) -> i64 {
    let bits = size * 8;
    if bits >= 64 {
        v as i64
    } else {
        ((v << (64 - bits)) as i64) >> (64 - bits)
    }
}

/// Where a `__data_loc`/`__rel_loc` field's bytes are: (offset, length) in the record.
pub fn dynamic_range(
    field: &Field,
    raw: &[u8],
    endian: Endianness,
) -> Result<(usize, usize), Error> {
    let at = field.offset as usize;
    let desc = u32_at(raw, at, endian).ok_or_else(|| short(field, raw))?;
    let mut offset = (desc & 0xffff) as usize;
    let len = (desc >> 16) as usize;
    if field.rel_loc {
        offset += at + 4;
    }
    if offset + len > raw.len() {
        return Err(Error::Decode {
            field: field.name.clone(),
            reason: format!(
                "dynamic data at {offset}+{len} is past the {}-byte record",
                raw.len()
            ),
        });
    }
    Ok((offset, len))
}

fn short(field: &Field, raw: &[u8]) -> Error {
    Error::Decode {
        field: field.name.clone(),
        reason: format!(
            "offset {} size {} is past the {}-byte record",
            field.offset,
            field.size,
            raw.len()
        ),
    }
}

fn until_nul(b: &[u8]) -> Vec<u8> {
    b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())].to_vec()
}

/// Decodes `field` from a raw record written in `endian`.
pub fn decode(field: &Field, raw: &[u8], endian: Endianness) -> Result<Value, Error> {
    if field.data_loc || field.rel_loc {
        let (off, len) = dynamic_range(field, raw, endian)?;
        let bytes = &raw[off..off + len];
        if field.is_string() {
            return Ok(Value::Str(until_nul(bytes)));
        }
        let elem = elem_size(&field.type_name);
        return Ok(Value::Array(
            bytes
                .chunks_exact(elem as usize)
                .filter_map(|c| read_uint(c, elem, endian))
                .collect(),
        ));
    }
    let at = field.offset as usize;
    let bytes = raw
        .get(at..at + field.size as usize)
        .ok_or_else(|| short(field, raw))?;
    if field.is_string() {
        return Ok(Value::Str(until_nul(bytes)));
    }
    if field.array_len.is_some() {
        let elem = field.element_size();
        return Ok(Value::Array(
            bytes
                .chunks_exact(elem.max(1) as usize)
                .filter_map(|c| read_uint(c, elem, endian))
                .collect(),
        ));
    }
    let v = read_uint(bytes, field.size, endian).ok_or_else(|| Error::Decode {
        field: field.name.clone(),
        reason: format!("an integer of size {} is not supported", field.size),
    })?;
    Ok(if field.signed {
        Value::Int(sign_extend(v, field.size))
    } else {
        Value::UInt(v)
    })
}

/// Element size of a dynamic array's type (`u32[]`, `unsigned long[]`); 1 when unknown, so the bytes show.
fn elem_size(type_name: &str) -> u32 {
    let t = type_name.trim_end_matches("[]").trim();
    match t {
        "u16" | "s16" | "short" | "unsigned short" => 2,
        "u32" | "s32" | "int" | "unsigned int" | "unsigned" => 4,
        "u64" | "s64" | "long" | "unsigned long" | "long long" | "unsigned long long" => 8,
        _ if t.ends_with('*') => 8,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::endian::Endian;

    fn field(decl: &str, offset: u32, size: u32, signed: bool) -> Field {
        let text = format!(
            "name: t\nID: 1\nformat:\n\tfield:{decl};\toffset:{offset};\tsize:{size};\tsigned:{};\n\nprint fmt: \"\"\n",
            u8::from(signed)
        );
        super::super::EventFormat::parse(&text, "t")
            .unwrap()
            .fields
            .remove(0)
    }

    #[test]
    fn integers_of_each_size_and_sign_in_both_byte_orders() {
        for endian in [Endianness::Little, Endianness::Big] {
            let mut raw = vec![0u8; 32];
            raw[1] = 0xff; // s8 at 1
            raw[2..4].copy_from_slice(&endian.write_u16(0xfffe)); // s16 at 2
            raw[4..8].copy_from_slice(&endian.write_u32(0x8000_0000)); // u32 at 4
            raw[8..16].copy_from_slice(&endian.write_u64(u64::MAX - 2)); // s64 at 8
            raw[16..24].copy_from_slice(&endian.write_u64(0xffff_8881_0000_1234));
            assert_eq!(
                decode(&field("s8 a", 1, 1, true), &raw, endian).unwrap(),
                Value::Int(-1)
            );
            assert_eq!(
                decode(&field("u8 a", 1, 1, false), &raw, endian).unwrap(),
                Value::UInt(255)
            );
            assert_eq!(
                decode(&field("short a", 2, 2, true), &raw, endian).unwrap(),
                Value::Int(-2)
            );
            assert_eq!(
                decode(&field("int a", 4, 4, true), &raw, endian).unwrap(),
                Value::Int(i64::from(i32::MIN))
            );
            assert_eq!(
                decode(&field("unsigned int a", 4, 4, false), &raw, endian).unwrap(),
                Value::UInt(0x8000_0000)
            );
            assert_eq!(
                decode(&field("long a", 8, 8, true), &raw, endian).unwrap(),
                Value::Int(-3)
            );
            let p = field("void * p", 16, 8, false);
            assert!(p.is_pointer());
            assert_eq!(
                decode(&p, &raw, endian).unwrap(),
                Value::UInt(0xffff_8881_0000_1234)
            );
        }
    }

    #[test]
    fn strings_fixed_and_dynamic_and_a_descriptor_past_the_end() {
        for endian in [Endianness::Little, Endianness::Big] {
            let mut raw = vec![0u8; 8];
            raw.extend_from_slice(b"bash\0\0\0\0");
            let desc_at = raw.len();
            raw.extend_from_slice(&[0; 4]);
            let data_at = raw.len() as u32;
            raw.extend_from_slice(b"/usr/bin/ls\0");
            let desc = (12u32 << 16) | data_at;
            raw[desc_at..desc_at + 4].copy_from_slice(&endian.write_u32(desc));
            let comm = field("char comm[8]", 8, 8, false);
            assert_eq!(
                decode(&comm, &raw, endian).unwrap(),
                Value::Str(b"bash".to_vec())
            );
            let loc = field("__data_loc char[] filename", desc_at as u32, 4, true);
            assert_eq!(
                decode(&loc, &raw, endian).unwrap(),
                Value::Str(b"/usr/bin/ls".to_vec())
            );
            let err = decode(&loc, &raw[..raw.len() - 1], endian).unwrap_err();
            assert!(err.to_string().contains("past the"), "{err}");
            let err = decode(&field("u64 x", 100, 8, false), &raw, endian).unwrap_err();
            assert!(err.to_string().contains("past the"), "{err}");
        }
    }
}
