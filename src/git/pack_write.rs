//! Writes objects out of memory as one pack with its index, without a delta search, as git's `fast-import` and
//! `index-pack` lay them out (Documentation/gitformat-pack.txt: pack version 2, index version 2).
//!
//! A backport run creates its objects in a mempack and writes them out at the end (or at a stop). libgit2's
//! packbuilder searches deltas for every object (`git_delta_create_from_index` takes 37% of a real-history
//! run), and its indexer then inflates and re-hashes each object to build the index. Neither is needed
//! here: the ids are known, and the caller knows each object's likely delta base (the version it replaced at
//! the same path), so a new object is either stored whole or as a prefix/suffix delta against that one, deflated
//! once, its CRC taken as it is written, and the index built from the ids we already have. A later `git gc`
//! finds better deltas. Objects the object database already holds (a merge whose result is the picked commit's
//! own blob, a tree equal to the original commit's) are left out, as git's `write_object_file` leaves them out.

use super::{Context, Error};
use git2::{ObjectType, Odb, Oid};
use sha1::{Digest, Sha1};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// New objects held in memory beside libgit2's object database, for [`write_pack`] to write: the blobs a run's
/// merges create, and the trees and commits of its picks.
///
/// libgit2 hashes every object it stores with collision-detecting SHA-1 (sha1dc) and copies it through an odb
/// stream: for the merged files of a real-history run that is 11% of all instructions. Here an
/// object's id is plain SHA-1 (the `sha1` crate, SHA-NI where the CPU has it) over git's `<type> <size>\0` header
/// and the bytes; it equals git's id for every input except a deliberate SHA-1 collision, which sha1dc would
/// reject. Trees and commits may name these objects (strict object creation is off during a run); readers look
/// here first, and libgit2 sees them only once they are in a pack.
#[derive(Debug, Default)]
pub struct MemoryObjects {
    objects: HashMap<Oid, (ObjectType, Rc<[u8]>)>,
}

impl MemoryObjects {
    /// An empty store.
    pub fn new() -> MemoryObjects {
        MemoryObjects::default()
    }

    /// Stores blob `content` and returns its git blob id with the shared bytes.
    pub fn insert(&mut self, content: Vec<u8>) -> (Oid, Rc<[u8]>) {
        let oid = blob_id(&content);
        let bytes = self
            .objects
            .entry(oid)
            .or_insert_with(|| (ObjectType::Blob, Rc::from(content)))
            .1
            .clone();
        (oid, bytes)
    }

    /// Stores an object whose id the caller computed (with [`super::object_id`]) from `kind` and `bytes`.
    pub fn insert_object(&mut self, kind: ObjectType, oid: Oid, bytes: Vec<u8>) {
        self.objects
            .entry(oid)
            .or_insert_with(|| (kind, Rc::from(bytes)));
    }

    /// The bytes of a blob stored here.
    pub fn get(&self, oid: Oid) -> Option<&Rc<[u8]>> {
        match self.objects.get(&oid) {
            Some((ObjectType::Blob, bytes)) => Some(bytes),
            _ => None,
        }
    }

    /// An object stored here, with its type.
    pub fn get_object(&self, oid: Oid) -> Option<(ObjectType, &[u8])> {
        self.objects
            .get(&oid)
            .map(|(kind, bytes)| (*kind, &bytes[..]))
    }

    /// Forgets every object (a dry run's predictions, or after they went into a pack and are read from there).
    pub fn clear(&mut self) {
        self.objects.clear();
    }
}

/// git's id of a blob with these bytes (`git hash-object`).
pub fn blob_id(content: &[u8]) -> Oid {
    super::object_id("blob", content)
}

/// An object's bytes, from libgit2's object database or from [`MemoryObjects`].
enum Object<'o> {
    Odb(git2::OdbObject<'o>),
    Memory(ObjectType, &'o [u8]),
}

impl Object<'_> {
    fn read<'o>(
        source: &'o Odb<'_>,
        memory: &'o MemoryObjects,
        oid: Oid,
        what: &str,
    ) -> Result<Object<'o>, Error> {
        match memory.get_object(oid) {
            Some((kind, bytes)) => Ok(Object::Memory(kind, bytes)),
            None => Ok(Object::Odb(
                source
                    .read(oid)
                    .context_git(|| format!("reading {what} {oid}"))?,
            )),
        }
    }

    fn kind(&self) -> ObjectType {
        match self {
            Object::Odb(o) => o.kind(),
            Object::Memory(kind, _) => *kind,
        }
    }

    fn data(&self) -> &[u8] {
        match self {
            Object::Odb(o) => o.data(),
            Object::Memory(_, b) => b,
        }
    }
}

/// What [`write_pack`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// How many objects went into the pack (0: nothing new, no pack written).
    pub objects: usize,
    /// How many of them are stored as deltas against an earlier object of the pack.
    pub deltas: usize,
    /// The pack file (`objects/pack/pack-<sha>.pack`), when one was written.
    pub pack: Option<PathBuf>,
    /// The earlier packs whose objects it holds too (see [`write_pack_absorbing`]).
    pub absorbed: Vec<PathBuf>,
}

/// Writes every object of `objects` that `disk` does not hold yet, read from `memory` or `source` (the odb holding
/// the new objects), as one pack plus index under `pack_dir`, and refreshes `disk` so that it sees them. Each object
/// comes with the object it replaced at the same path, if any: when that one is in the pack too (written
/// earlier), the object is stored as a delta against it. Duplicates are written once, in first-seen order.
pub fn write_pack(
    source: &Odb<'_>,
    memory: &MemoryObjects,
    disk: &Odb<'_>,
    pack_dir: &Path,
    objects: &[(Oid, Option<Oid>)],
) -> Result<Written, Error> {
    write_pack_absorbing(source, memory, disk, pack_dir, objects, &[])
}

/// As [`write_pack`], with the entries of the earlier packs `absorb` (packs bport wrote) copied in first; the ones
/// it copied are named in [`Written::absorbed`], for the caller to delete once it has recorded the new pack. A pack
/// of `absorb` that is gone, malformed, marked by git (`.keep`, …) or shares an object with another is left alone.
/// Nothing is absorbed when there is nothing new to write.
pub fn write_pack_absorbing(
    source: &Odb<'_>,
    memory: &MemoryObjects,
    disk: &Odb<'_>,
    pack_dir: &Path,
    objects: &[(Oid, Option<Oid>)],
    absorb: &[PathBuf],
) -> Result<Written, Error> {
    let todo = new_objects(disk, objects)?;
    if todo.is_empty() {
        return Ok(Written::default());
    }
    let old = super::pack_absorb::readable(absorb, &todo);
    let old_count: usize = old.iter().map(|p| p.entries.len()).sum();

    let tmp_pack = pack_dir.join(format!("tmp_pack_bport_{}", std::process::id()));
    let tmp_idx = pack_dir.join(format!("tmp_idx_bport_{}", std::process::id()));
    // On any error the temp files go; after the renames below there is nothing left to remove.
    let _cleanup = RemoveOnDrop([tmp_pack.clone(), tmp_idx.clone()]);
    let mut pack = PackFile::create(&tmp_pack).map_err(io(&tmp_pack))?;
    pack.write(b"PACK").map_err(io(&tmp_pack))?;
    pack.write(&2u32.to_be_bytes()).map_err(io(&tmp_pack))?;
    pack.write(&((todo.len() + old_count) as u32).to_be_bytes())
        .map_err(io(&tmp_pack))?;

    let mut packing = Packing::new(todo.len() + old_count);
    // Earlier packs first, whole: their deltas name bases by distance, which copying keeps.
    for p in &old {
        let start = pack.len;
        pack.write(&p.body).map_err(io(&tmp_pack))?;
        packing.entries.extend(
            p.entries
                .iter()
                .map(|&(oid, at, crc)| (oid, start + at, crc)),
        );
    }
    for &(oid, base) in &todo {
        packing.add(&mut pack, &tmp_pack, source, memory, oid, base)?;
    }
    let Packing {
        mut entries,
        deltas,
        ..
    } = packing;
    entries.sort_unstable_by_key(|e| e.0);
    let checksum = pack.finish().map_err(io(&tmp_pack))?;
    let pack_path = install(pack_dir, &tmp_pack, &tmp_idx, &entries, &checksum)?;
    disk.refresh()
        .context_git(|| format!("reading the new pack {}", pack_path.display()))?;
    Ok(Written {
        objects: entries.len(),
        deltas,
        pack: Some(pack_path),
        absorbed: old.into_iter().map(|p| p.path).collect(),
    })
}

/// An I/O error at `path`, as this module's error.
fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_path_buf();
    move |source| Error::Io { path, source }
}

/// The objects of `objects` that `disk` lacks, each once, in first-seen order.
fn new_objects(
    disk: &Odb<'_>,
    objects: &[(Oid, Option<Oid>)],
) -> Result<Vec<(Oid, Option<Oid>)>, Error> {
    let mut seen = HashSet::with_capacity(objects.len());
    let mut todo: Vec<(Oid, Option<Oid>)> = objects
        .iter()
        .copied()
        .filter(|(oid, _)| seen.insert(*oid))
        .collect();
    // One refresh, then lookups that do not rescan objects/pack on every miss (most of these are misses).
    disk.refresh()
        .context_git(|| "reading the object database")?;
    todo.retain(|(oid, _)| !disk.exists_ext(*oid, git2::OdbLookupFlags::NO_REFRESH));
    Ok(todo)
}

/// The pack's type number of an object (commit 1, tree 2, blob 3, tag 4).
fn type_code(oid: Oid, kind: ObjectType) -> Result<u8, Error> {
    match kind {
        ObjectType::Commit => Ok(1),
        ObjectType::Tree => Ok(2),
        ObjectType::Blob => Ok(3),
        ObjectType::Tag => Ok(4),
        other => Err(Error::Git {
            context: format!("packing {oid}"),
            source: git2::Error::from_str(&format!("unexpected object type {other:?}")),
        }),
    }
}

/// The pack's entries as they are written.
struct Packing {
    /// (oid, offset, crc32) per object; sorted by id for the index at the end.
    entries: Vec<(Oid, u64, u32)>,
    /// Offset and delta depth of what is already in this pack, for delta bases.
    placed: HashMap<Oid, (u64, u32)>,
    deflated: Vec<u8>,
    /// One compressor for the whole pack, reset per object: a fresh one allocates and zeroes its window and hash
    /// tables each time, which is most of the write time for thousands of small trees.
    z: flate2::Compress,
    deltas: usize,
}

impl Packing {
    fn new(objects: usize) -> Packing {
        Packing {
            entries: Vec::with_capacity(objects),
            placed: HashMap::with_capacity(objects),
            deflated: Vec::new(),
            z: flate2::Compress::new(flate2::Compression::fast(), true),
            deltas: 0,
        }
    }

    /// Appends object `oid` to the pack (at `path`), as a delta against `base` when that is in the pack.
    fn add(
        &mut self,
        pack: &mut PackFile,
        path: &Path,
        source: &Odb<'_>,
        memory: &MemoryObjects,
        oid: Oid,
        base: Option<Oid>,
    ) -> Result<(), Error> {
        let object = Object::read(source, memory, oid, "the new object")?;
        let kind = type_code(oid, object.kind())?;
        let data = object.data();
        let offset = pack.len;
        // A delta against the version this object replaced, when that is in the pack already and the two share
        // most of their bytes (a pick changes a few lines of a big file): deflating whole merged files is the
        // largest cost of writing, and their deltas are a few hundred bytes.
        let delta = match base.and_then(|b| Some((b, *self.placed.get(&b)?))) {
            Some((b, (base_offset, depth))) if depth < MAX_DEPTH => {
                let base_object = Object::read(source, memory, b, "the delta base")?;
                // A delta takes its base's type.
                (base_object.kind() == object.kind())
                    .then(|| prefix_suffix_delta(base_object.data(), data))
                    .flatten()
                    .map(|d| (d, offset - base_offset, depth + 1))
            }
            _ => None,
        };
        let (header, body, depth) = match &delta {
            Some((d, distance, depth)) => {
                self.deltas += 1;
                let mut h = entry_header(OFS_DELTA, d.len() as u64);
                h.extend_from_slice(&ofs_distance(*distance));
                (h, &d[..], *depth)
            }
            None => (entry_header(kind, data.len() as u64), data, 0),
        };
        // Level 1: these objects are written once and repacked by the next `git gc`. Small ones are stored: a
        // compressor reset zeroes its hash table whatever the input size, which cost more than compressing
        // (8% of a real-history run's instructions), for a few hundred bytes saved an object.
        if body.len() < STORED_BELOW {
            stored(body, &mut self.deflated);
        } else {
            deflate(&mut self.z, body, &mut self.deflated).map_err(io(path))?;
        }
        let mut crc = flate2::Crc::new();
        crc.update(&header);
        crc.update(&self.deflated);
        pack.write(&header).map_err(io(path))?;
        pack.write(&self.deflated).map_err(io(path))?;
        self.entries.push((oid, offset, crc.sum()));
        self.placed.insert(oid, (offset, depth));
        Ok(())
    }
}

/// Writes the index of the finished pack and renames both into place under their checksum's name; returns the
/// pack's path.
fn install(
    pack_dir: &Path,
    tmp_pack: &Path,
    tmp_idx: &Path,
    entries: &[(Oid, u64, u32)],
    checksum: &[u8; 20],
) -> Result<PathBuf, Error> {
    let name = hex(checksum);
    let index = index_bytes(entries, checksum);
    write_synced(tmp_idx, &index).map_err(io(tmp_idx))?;

    // The pack first: an index is what makes a pack visible, and it must never name a missing pack.
    let pack_path = pack_dir.join(format!("pack-{name}.pack"));
    let idx_path = pack_dir.join(format!("pack-{name}.idx"));
    std::fs::rename(tmp_pack, &pack_path).map_err(io(&pack_path))?;
    std::fs::rename(tmp_idx, &idx_path).map_err(io(&idx_path))?;
    sync_dir(pack_dir).map_err(io(pack_dir))?;
    Ok(pack_path)
}

/// Deflates `body` whole into `out` (cleared first) as one zlib stream, and resets `z` for the next object.
fn deflate(z: &mut flate2::Compress, body: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    out.clear();
    // Deflate's worst case is a few bytes per 16 KB block over the input; this always fits in one call.
    out.reserve(body.len() + body.len() / 1000 + 64);
    loop {
        let before = z.total_in() as usize;
        let status = z
            .compress_vec(&body[before..], out, flate2::FlushCompress::Finish)
            .map_err(std::io::Error::other)?;
        if status == flate2::Status::StreamEnd {
            break;
        }
        out.reserve(out.capacity().max(64));
    }
    z.reset();
    Ok(())
}

/// Bodies shorter than this go into the pack as stored (uncompressed) zlib streams.
const STORED_BELOW: usize = 4096;

/// `body` as a zlib stream of stored deflate blocks (RFC 1950 and RFC 1951 section 3.2.4): what any inflater
/// reads, at no compression cost.
fn stored(body: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(body.len() + body.len() / 65535 * 5 + 11);
    // CMF 0x78 (deflate, 32 KB window), FLG 0x01: the header's check bits, no dictionary, "fastest" level.
    out.extend_from_slice(&[0x78, 0x01]);
    let mut chunks = body.chunks(0xffff).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        let len = chunk.len() as u16;
        out.push(u8::from(last));
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&adler32(body).to_be_bytes());
}

/// The Adler-32 checksum zlib streams end with (RFC 1950 section 8).
fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    // The largest run of bytes before the sums must be reduced to stay within 32 bits (zlib's NMAX).
    const NMAX: usize = 5552;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(NMAX) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

/// `OBJ_OFS_DELTA`: a delta whose base is named by its distance back in the same pack.
const OFS_DELTA: u8 = 6;

/// Delta chains stay short so that reading the newest version of a file (the checkout at the end reads all of
/// them) applies at most this many deltas; git's own default is 50.
const MAX_DEPTH: u32 = 10;

/// A git delta (pack-format.txt, "Deltified representation") rebuilding `target` from `base` by copying their
/// common prefix and suffix and inserting the middle; `None` when they share less than half of `target`.
fn prefix_suffix_delta(base: &[u8], target: &[u8]) -> Option<Vec<u8>> {
    let max = base.len().min(target.len());
    let prefix = base.iter().zip(target).take_while(|(a, b)| a == b).count();
    let suffix = base[prefix..]
        .iter()
        .rev()
        .zip(target[prefix..].iter().rev())
        .take(max - prefix)
        .take_while(|(a, b)| a == b)
        .count();
    if target.len() < 64 || (prefix + suffix) * 2 < target.len() {
        return None;
    }
    let middle = &target[prefix..target.len() - suffix];
    let mut out = Vec::with_capacity(middle.len() + middle.len() / 127 + 32);
    delta_size(&mut out, base.len() as u64);
    delta_size(&mut out, target.len() as u64);
    delta_copy(&mut out, 0, prefix as u64);
    for chunk in middle.chunks(127) {
        out.push(chunk.len() as u8);
        out.extend_from_slice(chunk);
    }
    delta_copy(&mut out, (base.len() - suffix) as u64, suffix as u64);
    Some(out)
}

/// The delta header's sizes: 7 bits a byte, least significant first.
fn delta_size(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Copy instructions for `len` bytes of the base from `offset`: 0x80 plus a bit per present byte of a 32-bit
/// offset and a 24-bit size (at most 0xffffff a copy; a size of 0 would mean 0x10000, so none is written).
fn delta_copy(out: &mut Vec<u8>, mut offset: u64, mut len: u64) {
    while len > 0 {
        let n = len.min(0xff_ffff);
        let at = out.len();
        out.push(0x80);
        for i in 0..4 {
            let byte = (offset >> (8 * i)) as u8;
            if byte != 0 {
                out[at] |= 1 << i;
                out.push(byte);
            }
        }
        for i in 0..3 {
            let byte = (n >> (8 * i)) as u8;
            if byte != 0 {
                out[at] |= 0x10 << i;
                out.push(byte);
            }
        }
        offset += n;
        len -= n;
    }
}

/// The distance back to an `OFS_DELTA` base, in git's offset encoding (each continuation adds one before the
/// shift, so that no value has two spellings).
fn ofs_distance(mut distance: u64) -> Vec<u8> {
    let mut out = vec![(distance & 0x7f) as u8];
    distance >>= 7;
    while distance != 0 {
        distance -= 1;
        out.push(0x80 | (distance & 0x7f) as u8);
        distance >>= 7;
    }
    out.reverse();
    out
}

/// The pack entry header: type and size, 4 bits of size in the first byte, then 7 bits a byte (pack-format.txt).
fn entry_header(kind: u8, mut size: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(10);
    let mut byte = (kind << 4) | (size & 0x0f) as u8;
    size >>= 4;
    while size != 0 {
        out.push(byte | 0x80);
        byte = (size & 0x7f) as u8;
        size >>= 7;
    }
    out.push(byte);
    out
}

/// Index version 2 for `entries` (oid, offset, crc32; sorted by oid) in the pack with `checksum`.
fn index_bytes(entries: &[(Oid, u64, u32)], checksum: &[u8; 20]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 256 * 4 + entries.len() * 28 + 40);
    out.extend_from_slice(b"\xfftOc");
    out.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for (oid, _, _) in entries {
        fanout[oid.as_bytes()[0] as usize] += 1;
    }
    let mut total = 0u32;
    for n in fanout {
        total += n;
        out.extend_from_slice(&total.to_be_bytes());
    }
    for (oid, _, _) in entries {
        out.extend_from_slice(oid.as_bytes());
    }
    for (_, _, crc) in entries {
        out.extend_from_slice(&crc.to_be_bytes());
    }
    // Offsets of 2 GiB and beyond go to the 64-bit table, named by index with the top bit set.
    let mut large = Vec::new();
    for (_, offset, _) in entries {
        if *offset < 0x8000_0000 {
            out.extend_from_slice(&(*offset as u32).to_be_bytes());
        } else {
            out.extend_from_slice(&(0x8000_0000 | large.len() as u32).to_be_bytes());
            large.push(*offset);
        }
    }
    for offset in large {
        out.extend_from_slice(&offset.to_be_bytes());
    }
    out.extend_from_slice(checksum);
    let own: [u8; 20] = Sha1::digest(&out).into();
    out.extend_from_slice(&own);
    out
}

/// Removes the temp files of a pack write that did not finish.
struct RemoveOnDrop([PathBuf; 2]);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A pack being written: buffered, hashed as it goes, its length known for the entry offsets.
struct PackFile {
    file: std::io::BufWriter<std::fs::File>,
    hash: Sha1,
    len: u64,
}

impl PackFile {
    fn create(path: &Path) -> std::io::Result<PackFile> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .or_else(|e| {
                // A temp file left by a run that crashed in the same process id slot: it is ours to replace.
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    std::fs::File::create(path)
                } else {
                    Err(e)
                }
            })?;
        Ok(PackFile {
            file: std::io::BufWriter::with_capacity(1 << 16, file),
            hash: Sha1::new(),
            len: 0,
        })
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.hash.update(bytes);
        self.len += bytes.len() as u64;
        self.file.write_all(bytes)
    }

    /// Appends the trailing checksum, syncs, and returns the checksum (the pack's name).
    fn finish(mut self) -> std::io::Result<[u8; 20]> {
        let checksum: [u8; 20] = self.hash.finalize().into();
        self.file.write_all(&checksum)?;
        let file = self.file.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(checksum)
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_streams_inflate_to_their_input() {
        for len in [0usize, 1, 100, 65535, 65536, 200_000] {
            let body: Vec<u8> = (0..len).map(|i| (i * 31 % 253) as u8).collect();
            let mut out = Vec::new();
            stored(&body, &mut out);
            let mut back = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(&out[..]), &mut back)
                .unwrap();
            assert_eq!(back, body, "length {len}");
            // zlib's own checksum of the same bytes, through a compressed stream's trailer.
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut z, &body).unwrap();
            let compressed = z.finish().unwrap();
            assert_eq!(out[out.len() - 4..], compressed[compressed.len() - 4..]);
        }
    }

    #[test]
    fn entry_header_matches_the_pack_format_examples() {
        // A 100-byte blob: type 3, size 100 = 0b110_0100 -> low nibble 0100, then 110.
        assert_eq!(entry_header(3, 100), vec![0x80 | 0x30 | 0x04, 0x06]);
        assert_eq!(entry_header(1, 15), vec![0x1f]);
        assert_eq!(entry_header(2, 16), vec![0xa0, 0x01]);
        // 1 MiB + 1: 0x100001 -> nibble 1, then 0x10000 >> 0 in 7-bit groups.
        assert_eq!(entry_header(3, 0x10_0001), vec![0xb1, 0x80, 0x80, 0x04]);
    }

    /// Objects written through a mempack come out as a pack libgit2 reads back, byte for byte, from a fresh
    /// handle; objects the repository already had are not written again.
    #[test]
    fn mempack_objects_round_trip_through_the_written_pack() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let existing = repo.blob(b"already on disk\n").unwrap();
        let work = git2::Repository::open(dir.path()).unwrap();
        let odb = work.odb().unwrap();
        let mempack = odb.add_new_mempack_backend(1000).unwrap();
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let small = work.blob(b"new\n").unwrap();
        let large = work.blob(&big).unwrap();
        let mut tb = work.treebuilder(None).unwrap();
        tb.insert("a", small, 0o100644).unwrap();
        tb.insert("big", large, 0o100755).unwrap();
        tb.insert("old", existing, 0o100644).unwrap();
        let tree = tb.write().unwrap();
        let disk = repo.odb().unwrap();
        assert!(!disk.exists(small), "the new blob is only in memory");

        let pack_dir = dir.path().join(".git/objects/pack");
        // A new version of the big blob with a few bytes changed in the middle: stored as a delta against it.
        let mut big2 = big.clone();
        big2[1_500_000..1_500_010].copy_from_slice(b"0123456789");
        let large2 = work.blob(&big2).unwrap();
        let mut blobs = MemoryObjects::new();
        let mut big3 = big2.clone();
        big3[10..20].copy_from_slice(b"abcdefghij");
        let (large3, _) = blobs.insert(big3.clone());
        let (tiny, _) = blobs.insert(b"held by bport\n".to_vec());
        assert_eq!(
            tiny,
            git2::Oid::hash_object(git2::ObjectType::Blob, b"held by bport\n").unwrap()
        );
        let written = write_pack(
            &odb,
            &blobs,
            &disk,
            &pack_dir,
            &[
                (small, None),
                (large, None),
                (tree, None),
                (existing, None),
                (small, None),
                (large2, Some(large)),
                (large3, Some(large2)),
                (tiny, None),
            ],
        )
        .unwrap();
        assert_eq!((written.objects, written.deltas), (6, 2));
        mempack.reset().unwrap();

        let fresh = git2::Repository::open(dir.path()).unwrap();
        assert_eq!(fresh.find_blob(small).unwrap().content(), b"new\n");
        assert_eq!(fresh.find_blob(large).unwrap().content(), &big[..]);
        assert_eq!(fresh.find_blob(large2).unwrap().content(), &big2[..]);
        assert_eq!(fresh.find_blob(large3).unwrap().content(), &big3[..]);
        assert_eq!(fresh.find_blob(tiny).unwrap().content(), b"held by bport\n");
        let t = fresh.find_tree(tree).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t.get_name("big").unwrap().filemode(), 0o100755);
        // libgit2's indexer (index-pack) on the same pack bytes: it inflates and hashes every object and checks
        // the trailer; its index must be ours byte for byte.
        let pack = written.pack.unwrap();
        let ours = std::fs::read(pack.with_extension("idx")).unwrap();
        let other = tempfile::tempdir().unwrap();
        let mut indexer = git2::Indexer::new(None, other.path(), 0, false).unwrap();
        indexer.write_all(&std::fs::read(&pack).unwrap()).unwrap();
        let name = indexer.commit().unwrap();
        assert_eq!(
            pack.file_name().unwrap().to_str().unwrap(),
            format!("pack-{name}.pack")
        );
        let theirs = std::fs::read(other.path().join(format!("pack-{name}.idx"))).unwrap();
        assert_eq!(ours, theirs);
        let again = write_pack(
            &odb,
            &blobs,
            &disk,
            &pack_dir,
            &[(small, None), (large2, Some(large))],
        )
        .unwrap();
        assert_eq!(again, Written::default(), "nothing new: nothing written");
    }

    /// A pack that absorbs an earlier one holds both packs' objects (deltas included) in bytes libgit2's indexer
    /// reads as a valid pack; the earlier pack can go, and one git marks is left alone.
    #[test]
    fn a_pack_absorbs_earlier_packs_whole() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let disk = repo.odb().unwrap();
        let pack_dir = dir.path().join(".git/objects/pack");
        let big: Vec<u8> = (0..200_000u32).map(|i| (i * 13 % 251) as u8).collect();
        let mut big2 = big.clone();
        big2[100_000..100_004].copy_from_slice(b"edit");
        let mut blobs = MemoryObjects::new();
        let (b1, _) = blobs.insert(big.clone());
        let (b2, _) = blobs.insert(big2.clone());
        let (b3, _) = blobs.insert(b"third\n".to_vec());
        let (b4, _) = blobs.insert(b"fourth\n".to_vec());
        let first = write_pack(
            &disk,
            &blobs,
            &disk,
            &pack_dir,
            &[(b1, None), (b2, Some(b1))],
        )
        .unwrap();
        assert_eq!(first.deltas, 1);
        let first = first.pack.unwrap();
        let second = write_pack(&disk, &blobs, &disk, &pack_dir, &[(b3, None)])
            .unwrap()
            .pack
            .unwrap();
        // A marked pack is not absorbed; nor is one that is gone.
        std::fs::write(second.with_extension("keep"), b"").unwrap();
        let gone = pack_dir.join("pack-0000000000000000000000000000000000000000.pack");
        let both = write_pack_absorbing(
            &disk,
            &blobs,
            &disk,
            &pack_dir,
            &[(b4, None)],
            &[first.clone(), second.clone(), gone],
        )
        .unwrap();
        assert_eq!(both.absorbed, vec![first.clone()]);
        assert_eq!(both.objects, 3);
        std::fs::remove_file(first.with_extension("idx")).unwrap();
        std::fs::remove_file(&first).unwrap();
        let fresh = git2::Repository::open(dir.path()).unwrap();
        assert_eq!(fresh.find_blob(b1).unwrap().content(), &big[..]);
        assert_eq!(fresh.find_blob(b2).unwrap().content(), &big2[..]);
        assert_eq!(fresh.find_blob(b4).unwrap().content(), b"fourth\n");
        let pack = both.pack.unwrap();
        let other = tempfile::tempdir().unwrap();
        let mut indexer = git2::Indexer::new(None, other.path(), 0, false).unwrap();
        indexer.write_all(&std::fs::read(&pack).unwrap()).unwrap();
        let name = indexer.commit().unwrap();
        let theirs = std::fs::read(other.path().join(format!("pack-{name}.idx"))).unwrap();
        assert_eq!(std::fs::read(pack.with_extension("idx")).unwrap(), theirs);
    }
}
