//! Earlier packs of a run copied whole into its next pack, so that a long run with stops leaves a few packs
//! instead of one a call.
//!
//! Each `bport apply` call writes its objects as one pack; a backport that stops 47 times left ~80, and every
//! object lookup that misses (most do: the blobs are in the clone's big pack) tried each of them, libgit2 listed
//! and mapped each at start and unmapped each at exit. A pack's entries are self-contained (bport writes deltas only
//! against an earlier object of the same pack, by offset), so an earlier pack's entries are copied byte for byte,
//! their offsets shifted and their CRCs taken from its index: nothing is inflated or compressed again.

use git2::Oid;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// An earlier pack read for copying: its entries' bytes and, per object, (id, offset in those bytes, crc32).
pub(super) struct OldPack {
    pub(super) path: PathBuf,
    pub(super) body: Vec<u8>,
    pub(super) entries: Vec<(Oid, u64, u32)>,
}

impl OldPack {
    /// Reads `pack` (`…/pack-<sha>.pack`) and its index, or `None` when it is gone, is not a version 2 pack whose
    /// index names it, or carries a file git keeps beside a pack it treats specially (`.keep`, `.promisor`, …).
    pub(super) fn read(pack: &Path) -> Option<OldPack> {
        for ext in ["keep", "promisor", "bitmap", "rev", "mtimes"] {
            if pack.with_extension(ext).exists() {
                return None;
            }
        }
        let idx = std::fs::read(pack.with_extension("idx")).ok()?;
        let bytes = std::fs::read(pack).ok()?;
        let entries = parse_index(&idx)?;
        let trailer = idx.len().checked_sub(40)?;
        if bytes.len() < 32
            || &bytes[..4] != b"PACK"
            || bytes[4..8] != 2u32.to_be_bytes()
            || u32::from_be_bytes(bytes[8..12].try_into().ok()?) as usize != entries.len()
            || bytes[bytes.len() - 20..] != idx[trailer..trailer + 20]
        {
            return None;
        }
        let body = bytes[12..bytes.len() - 20].to_vec();
        let entries = entries
            .into_iter()
            .map(|(oid, offset, crc)| {
                Some((
                    oid,
                    offset.checked_sub(12).filter(|&o| o < body.len() as u64)?,
                    crc,
                ))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(OldPack {
            path: pack.to_path_buf(),
            body,
            entries,
        })
    }
}

/// The packs of `paths` that can be copied, each object once: a pack holding an object an earlier one of the list
/// holds, or one of `new`, is left out (a pack must not list an object twice).
pub(super) fn readable(paths: &[PathBuf], new: &[(Oid, Option<Oid>)]) -> Vec<OldPack> {
    let mut seen: HashSet<Oid> = new.iter().map(|(oid, _)| *oid).collect();
    let mut out = Vec::new();
    for path in paths {
        let Some(old) = OldPack::read(path) else {
            continue;
        };
        if old.entries.iter().any(|(oid, _, _)| seen.contains(oid)) {
            continue;
        }
        seen.extend(old.entries.iter().map(|(oid, _, _)| *oid));
        out.push(old);
    }
    out
}

/// A version 2 pack index's entries: (id, offset, crc32), or `None` when it is malformed.
fn parse_index(idx: &[u8]) -> Option<Vec<(Oid, u64, u32)>> {
    let be32 = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(idx.get(at..at + 4)?.try_into().ok()?))
    };
    if idx.get(..4)? != b"\xfftOc" || be32(4)? != 2 {
        return None;
    }
    let n = be32(8 + 255 * 4)? as usize;
    let oids: usize = 8 + 256 * 4;
    let crcs = oids.checked_add(n.checked_mul(20)?)?;
    let offsets = crcs + n * 4;
    let large = offsets + n * 4;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let oid = Oid::from_bytes(idx.get(oids + i * 20..oids + i * 20 + 20)?).ok()?;
        let crc = be32(crcs + i * 4)?;
        let small = be32(offsets + i * 4)?;
        let offset = if small & 0x8000_0000 == 0 {
            u64::from(small)
        } else {
            let at = large + (small & 0x7fff_ffff) as usize * 8;
            u64::from_be_bytes(idx.get(at..at + 8)?.try_into().ok()?)
        };
        out.push((oid, offset, crc));
    }
    Some(out)
}
