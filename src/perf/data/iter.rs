//! Iterating a file's records: file order, or time order as perf's ordered-events queue delivers them (see the
//! [`super::reader`] docs for the FINISHED_ROUND rule).

use super::raw::{kind, raw_at, records_lost, type_label, RawRec};
use super::records::Record;
use super::source::RecordSource;
use super::{ReadError, Warning, WarningLog};
use crate::perf::abi::*;
use object::endian::{BigEndian, Endian, Endianness, LittleEndian};
use std::collections::{BinaryHeap, HashSet, VecDeque};

/// How many distinct unknown record types an iterator remembers (each is warned about once).
const MAX_UNKNOWN_TYPES: usize = 4096;

/// A queued record's sort key; the record itself waits in `Records::waiting` (heap moves stay 24 bytes, not a
/// whole `Record`).
struct Queued {
    time: u64,
    seq: u64,
    slot: usize,
}

impl PartialEq for Queued {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.seq) == (o.time, o.seq)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Queued {
    // Reversed: BinaryHeap is a max-heap and we pop the oldest first; ties keep file order.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// Iterator over a file's records; see [`super::PerfFile::records`]. Stops after the first framing error (yielded after
/// every record before it). A record whose body cannot be parsed is skipped with a warning.
pub struct Records<'a> {
    file: &'a RecordSource,
    pos: usize,
    sorted: bool,
    /// The time queue in two parts: `in_order` holds the records that came no earlier than every record
    /// queued before them (most of a file: each CPU's buffer is in time order), ascending, at O(1) a record;
    /// `queue` the rest. Handing out takes the earlier front of the two, so the order is the one heap's.
    in_order: VecDeque<Queued>,
    queue: BinaryHeap<Queued>,
    /// Records handed out as soon as they are read (no time to sort by): a few at a time.
    slots: Vec<Option<Record<'a>>>,
    free_slots: Vec<usize>,
    /// The records waiting in the time queue, unparsed until their turn comes (see `deliver`).
    waiting: Vec<Option<Waiting<'a>>>,
    free_waiting: Vec<usize>,
    /// The records to hand out, in order.
    ready: VecDeque<Slot>,
    seq: u64,
    next_flush: u64,
    max_time: u64,
    done: bool,
    error: Option<ReadError>,
    warnings: WarningLog,
    unknown_types: HashSet<u32>,
    /// Inside a COMPRESSED record: position and end in the file's decompressed records, and the record's file
    /// offset.
    inner: Option<(usize, usize, u64)>,
    /// Whether the zstd warnings were copied into `warnings`.
    decomp_warned: bool,
    /// The page prefetcher of a large mapped file, told how far this iterator got and which records it may
    /// still hand out.
    prefetch: Option<&'a super::prefetch::Prefetch>,
    /// Where the records this iterator still holds, or handed out last, start at the earliest. Sorted, that is
    /// the FINISHED_ROUND before the last one: a round's flush hands out everything up to the previous round's
    /// newest time, so every record read before the previous round is gone once a round ends.
    held_from: usize,
    /// The last FINISHED_ROUND (sorted) or the last record read (unsorted).
    last_record: usize,
}

impl<'a> Records<'a> {
    pub(super) fn new(file: &'a RecordSource, sorted: bool) -> Self {
        Records {
            file,
            pos: file.data_start,
            sorted,
            in_order: VecDeque::new(),
            queue: BinaryHeap::new(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            waiting: Vec::new(),
            free_waiting: Vec::new(),
            ready: VecDeque::new(),
            seq: 0,
            next_flush: 0,
            max_time: 0,
            done: false,
            error: None,
            warnings: WarningLog::new(),
            unknown_types: HashSet::new(),
            inner: None,
            decomp_warned: false,
            prefetch: file.start_prefetch(),
            held_from: file.data_start,
            last_record: file.data_start,
        }
    }

    /// Warnings so far: unknown record types (one each), records skipped because their body was corrupt; at
    /// most [`super::WARNING_EXAMPLES`] of each kind, and once the iterator has ended, how many more there were.
    pub fn warnings(&self) -> &[Warning] {
        self.warnings.as_slice()
    }

    /// Every warning so far, in a log that counts them by kind.
    pub fn warning_log(&self) -> &WarningLog {
        &self.warnings
    }

    fn flush_up_to(&mut self, limit: u64) {
        loop {
            // `Queued`'s order is reversed (the heap pops its greatest): the earlier record is the greater.
            let from_heap = match (self.in_order.front(), self.queue.peek()) {
                (Some(a), Some(b)) => b > a,
                (a, _) => a.is_none(),
            };
            let head = if from_heap {
                self.queue.peek()
            } else {
                self.in_order.front()
            };
            if head.is_none_or(|q| q.time > limit) {
                break;
            }
            let q = if from_heap {
                self.queue.pop()
            } else {
                self.in_order.pop_front()
            };
            let Some(q) = q else { break };
            self.ready.push_back(Slot::Waiting(q.slot));
        }
    }

    fn step<E: Endian>(&mut self, endian: E) {
        let file = self.file;
        if let Some((at, end, outer)) = self.inner {
            let decomp = &file.decompressed(endian).bytes;
            match raw_at(decomp, end, at, endian) {
                Ok(Some(h)) => {
                    self.inner = Some((h.next, end, outer));
                    self.deliver(outer as usize, h, endian);
                }
                // The ranges hold only complete records, so this ends the inner stream.
                Ok(None) | Err(_) => self.inner = None,
            }
            return;
        }
        let pos = self.pos;
        let h = match file.raw_at(pos, endian) {
            Ok(Some(r)) => r,
            Ok(None) => {
                self.done = true;
                self.flush_up_to(u64::MAX);
                return;
            }
            Err(e) => {
                self.done = true;
                self.flush_up_to(u64::MAX);
                let data = file.data_start..file.data_end;
                match records_lost(file.data_bytes(), data, file.stated_data_end, pos, e) {
                    // Text after the records (perf's stderr in the file): nothing of the recording is lost.
                    Ok(text) => self.warnings.push(kind::TEXT, text),
                    Err(e) => self.error = Some(e),
                }
                return;
            }
        };
        self.pos = h.next;
        if !self.sorted {
            // The caller may still hold the record handed out before this one.
            self.held_from = std::mem::replace(&mut self.last_record, pos);
        }
        if let Some(progress) = &self.prefetch {
            progress.advance(h.next, self.held_from);
        }
        warm_up(file.data_bytes(), h.next, endian);
        if matches!(h.ty, PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2) {
            let d = file.decompressed(endian);
            if !self.decomp_warned {
                self.decomp_warned = true;
                for w in d.warnings.as_slice() {
                    self.warnings.push(kind::COMPRESSED, w.clone());
                }
            }
            if let Some(range) = d.ranges.get(&(pos as u64)) {
                self.inner = Some((range.start, range.end, pos as u64));
            }
        }
        self.deliver(pos, h, endian);
    }

    fn deliver<E: Endian>(&mut self, pos: usize, h: RawRec<'a>, endian: E) {
        if self.sorted && h.ty != PERF_RECORD_FINISHED_ROUND {
            // Queued by its time alone, as perf's `perf_session__queue_event` does with the timestamp
            // `evlist__parse_sample_timestamp` reads, and parsed when its turn comes: a parsed `Record` is ~600
            // bytes, and a round of a few thousand samples held parsed was a third of `bport script`'s page
            // faults.
            if let Some(time) = self.file.time_of(&h, endian) {
                // No earlier than any record queued so far (`max_time` only grows), and later in `seq`: later
                // than all of them.
                let in_order = time >= self.max_time;
                self.max_time = self.max_time.max(time);
                self.seq += 1;
                let waiting = Waiting { pos, time, h };
                let slot = park(&mut self.waiting, &mut self.free_waiting, waiting);
                let queued = Queued {
                    time,
                    seq: self.seq,
                    slot,
                };
                if in_order {
                    self.in_order.push_back(queued);
                } else {
                    self.queue.push(queued);
                }
                return;
            }
        }
        let Some(record) = self.parse(pos, &h, endian) else {
            return;
        };
        if !self.sorted {
            let slot = park(&mut self.slots, &mut self.free_slots, record);
            self.ready.push_back(Slot::Parsed(slot));
            return;
        }
        if h.ty == PERF_RECORD_FINISHED_ROUND {
            self.held_from = std::mem::replace(&mut self.last_record, pos);
            self.flush_up_to(self.next_flush);
            self.next_flush = self.max_time;
        }
        let slot = park(&mut self.slots, &mut self.free_slots, record);
        self.ready.push_back(Slot::Parsed(slot));
    }

    /// The record at `pos`, or `None` after a warning when its body does not parse.
    fn parse<E: Endian>(&mut self, pos: usize, h: &RawRec<'a>, endian: E) -> Option<Record<'a>> {
        let file = self.file;
        let record = match file.parse_record(pos, h, endian) {
            Ok(r) => r,
            Err(e) => {
                self.warnings.push_with(kind::SKIPPED, || {
                    // Inside a record whose frame is intact, a field that runs past its end is a corrupt
                    // length, not a file cut short.
                    let why = match e {
                        ReadError::Truncated {
                            what,
                            needed,
                            available,
                            ..
                        } if needed <= u64::from(u16::MAX) => format!(
                            "its {what} needs {needed} bytes but the record has only {available} left"
                        ),
                        ReadError::Truncated { what, .. } => {
                            format!("its {what} states a length larger than any record")
                        }
                        other => other.to_string(),
                    };
                    Warning {
                        offset: Some(pos as u64),
                        message: format!(
                            "{} record at byte {pos} skipped: {why}",
                            type_label(h.ty)
                        ),
                    }
                });
                return None;
            }
        };
        if let Record::Unknown(_) = record {
            // One warning per type; past a few thousand types (only a hostile file has them) every further
            // record of a type not yet seen is counted without growing the set.
            let new = if self.unknown_types.len() < MAX_UNKNOWN_TYPES {
                self.unknown_types.insert(h.ty)
            } else {
                !self.unknown_types.contains(&h.ty)
            };
            if new {
                let who = if h.ty >= PERF_RECORD_USER_TYPE_START {
                    "perf"
                } else {
                    "kernel"
                };
                self.warnings.push(
                    kind::UNKNOWN,
                    Warning {
                        offset: Some(pos as u64),
                        message: format!("unknown record type {} skipped (from a newer {who}?); further records of this type are skipped silently", h.ty),
                    },
                );
            }
        }
        Some(record)
    }
}

/// A record in the time queue: as read, with the offset `parse_record` numbers it by and the time it was queued
/// by.
struct Waiting<'a> {
    pos: usize,
    time: u64,
    h: RawRec<'a>,
}

/// Where a record to hand out waits: parsed in `Records::slots`, or unparsed in `Records::waiting`.
#[derive(Clone, Copy)]
enum Slot {
    Parsed(usize),
    Waiting(usize),
}

/// Puts `item` in a free slot of `slots` and says which.
fn park<T>(slots: &mut Vec<Option<T>>, free: &mut Vec<usize>, item: T) -> usize {
    match free.pop() {
        Some(i) => {
            slots[i] = Some(item);
            i
        }
        None => {
            slots.push(Some(item));
            slots.len() - 1
        }
    }
}

/// Starts the memory loads of the records after `next` while this one is parsed: in a DWARF recording every
/// record is a new 8 KB stretch of the file whose header, registers, first stack bytes and trailing `dyn_size`
/// each miss every cache. The loads' results are not waited for (`black_box` only keeps them), so they overlap
/// with the work on the current record instead of stalling the parser one after another. The next record's
/// header was warmed up by the previous call, so reading its size here is cheap; the one after it is warmed up
/// for the next call.
fn warm_up<E: Endian>(bytes: &[u8], next: usize, endian: E) {
    let Some(size) = super::cursor::u16_at(bytes, next + 6, endian).map(usize::from) else {
        return;
    };
    let end = next + size;
    let mut line = next + 64;
    while line < end.min(next + 512) {
        if let Some(&b) = bytes.get(line) {
            std::hint::black_box(b);
        }
        line += 64;
    }
    if let Some(&b) = bytes.get(end.wrapping_sub(8)) {
        std::hint::black_box(b);
    }
    if let Some(&b) = bytes.get(end) {
        std::hint::black_box(b);
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(slot) = self.ready.pop_front() {
                let record = match slot {
                    Slot::Parsed(i) => {
                        self.free_slots.push(i);
                        self.slots[i].take()
                    }
                    Slot::Waiting(i) => {
                        self.free_waiting.push(i);
                        self.waiting[i].take().and_then(|w| {
                            let r = match self.file.endian {
                                Endianness::Little => self.parse(w.pos, &w.h, LittleEndian),
                                Endianness::Big => self.parse(w.pos, &w.h, BigEndian),
                            };
                            debug_assert!(r.as_ref().is_none_or(|r| r.time() == Some(w.time)));
                            r
                        })
                    }
                };
                // `None`: a record whose body did not parse (warned about), skipped as it comes.
                if let Some(r) = record {
                    return Some(Ok(r));
                }
                continue;
            }
            if self.done {
                self.warnings.finish();
                return self.error.take().map(Err);
            }
            match self.file.endian {
                Endianness::Little => self.step(LittleEndian),
                Endianness::Big => self.step(BigEndian),
            }
        }
    }
}

// After the end or the first framing error, `next` keeps returning `None`.
impl std::iter::FusedIterator for Records<'_> {}
