//! `bport lock contention -i FILE`: the report from `lock:contention_begin` / `lock:contention_end` samples in a
//! perf.data file (perf's `perf lock record`, or `bport lock record`).
//!
//! Follows perf's record mode (tools/perf/builtin-lock.c, `report_lock_contention_begin_event` / `_end_event`):
//! samples in time order; per (thread, lock) a state — a begin while contended is a nested begin (a mutex's
//! spinning then sleeping phase) and keeps the first timestamp; an end of a contended lock adds the wait; an end
//! without its begin (before the window) is ignored. The contention count is of begins, the average is the
//! total wait over the ends. Entries are keyed by the thread (`-t`), the lock address (`-l`) or the caller: with
//! `--stack-skip` exactly as perf keys them (its 32-bit `callchain_id` of begin and end stacks alike); by default
//! by the call stack outside the lock functions and the lock's type, an end going to its begin's entry (as the
//! live mode's stack ids keep a spinlock inside an rwsem's slow path apart from the rwsem).
//!
//! Naming. perf 6.1 skips `--stack-skip` (default 3) callchain entries before it looks for the first frame
//! outside the lock functions; which frame that lands on depends on whether another probe sits on the tracepoint
//! (then `__traceiter_contention_begin` is the first entry), so the same kernel path is named `__vm_munmap+0xa7`
//! or `__x64_sys_munmap+0x17`. bport by default drops the tracepoint glue and skips only the lock functions, so
//! the caller is the function that took the lock, whatever else was attached. `--stack-skip N` gives perf's
//! behaviour exactly.

use std::collections::{HashMap, HashSet};

use super::report::{finish, Contention, Report, ReportOptions, Symbolizer};
use super::{progs::Aggr, Error};
use crate::perf::abi::{HEADER_TRACING_DATA, PERF_CONTEXT_MAX, PERF_TYPE_TRACEPOINT};
use crate::perf::data::{Endianness, PerfFile, Record, SampleRecord};
use crate::perf::trace::decode::decode;
use crate::perf::trace::format::Field;
use crate::perf::trace::tracing_data::TracingData;

/// Filters of the file report (`-Y`, `-L`).
#[derive(Clone, Debug, Default)]
pub struct FileFilters {
    /// Only these lock flags.
    pub types: Vec<u32>,
    /// Only these lock addresses.
    pub addrs: Vec<u64>,
    /// Only these processes (`-p`).
    pub pids: Vec<u32>,
    /// Only these threads (`--tid`).
    pub tids: Vec<u32>,
    /// Only contentions that begin on these CPUs (`-C`; a sample without a CPU never matches).
    pub cpus: Vec<u32>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Begin,
    End,
}

struct EventFields {
    kind: Kind,
    lock: Field,
    flags: Option<Field>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Since this time, in the entry at this index of the report's order.
    Contended(u64, usize),
    Acquired,
}

#[derive(Hash, PartialEq, Eq, Clone)]
enum Key {
    /// bport's naming: the frames outside the lock functions, and the lock's flags (so a spinlock taken inside
    /// an rwsem's slow path is not the rwsem's entry, as in the live mode's stack ids).
    Stack(Vec<u64>, u32),
    /// perf's own caller key (`--stack-skip`, perf's naming): builtin-lock.c `callchain_id` XORs
    /// `hash_long(ip, 64)` over the frames, so stacks whose frames cancel or reorder fall into one entry, and
    /// so do stacks whose hashes differ only above bit 31 (see [`perf_callchain_id`]).
    PerfHash(u32),
    Task(u32),
    Addr(u64),
}

struct Stat {
    entry: Contention,
    acquired: u64,
    /// Where its key is in the report's order.
    index: usize,
}

/// perf's `callchain_id` of the frames it hashes: the XOR of `hash_long(ip, 64)`. That is a multiply by
/// GOLDEN_RATIO_64, but `hash_64_generic` returns `u32` (include/linux/hash.h and tools/include/linux/hash.h), so
/// only the low 32 bits of each product count: two stacks whose last user frames differ in high bits only
/// (a garbage frame 0x3030310000000000 against 0, seen in a system-wide recording) are one entry in perf.
fn perf_callchain_id(frames: impl Iterator<Item = u64>) -> u32 {
    frames.fold(0, |h, ip| h ^ ip.wrapping_mul(0x61c8_8646_80b5_83eb) as u32)
}

/// The key perf files an entry under in its lock hash table (`lock_stat_findnew`): the caller's `callchain_id`,
/// the thread id or the lock address.
fn perf_table_key(key: &Key) -> Option<u64> {
    match *key {
        Key::PerfHash(h) => Some(u64::from(h)),
        Key::Task(tid) => Some(u64::from(tid)),
        Key::Addr(addr) => Some(addr),
        Key::Stack(..) => None,
    }
}

/// The bucket of perf's lock hash table for a key: `hash_long(key, LOCKHASH_BITS)` with 12 bits, the top bits
/// of the product with GOLDEN_RATIO_64.
fn perf_bucket(key: u64) -> u64 {
    key.wrapping_mul(0x61c8_8646_80b5_83eb) >> 52
}

/// The lock events of a file: each attr index's kind and fields.
fn lock_events(file: &PerfFile) -> Result<HashMap<usize, EventFields>, Error> {
    let bytes = file
        .features()
        .other
        .iter()
        .find(|(id, _)| *id == HEADER_TRACING_DATA)
        .map(|(_, b)| b.as_slice())
        .ok_or(Error::NoLockEvents)?;
    let (td, _) = TracingData::parse(bytes).map_err(|e| Error::File(e.to_string()))?;
    let formats = td.formats().map_err(|e| Error::File(e.to_string()))?;
    let mut out = HashMap::new();
    for (i, a) in file.attrs().iter().enumerate() {
        if a.attr.type_ != PERF_TYPE_TRACEPOINT {
            continue;
        }
        let Some((_, f)) = formats
            .iter()
            .find(|(sys, f)| sys == "lock" && f.id == a.attr.config)
        else {
            continue;
        };
        let kind = match f.name.as_str() {
            "contention_begin" => Kind::Begin,
            "contention_end" => Kind::End,
            _ => continue,
        };
        let field = |n: &str| f.field(n).cloned();
        let lock = field("lock_addr")
            .ok_or_else(|| Error::File(format!("lock:{} has no lock_addr field", f.name)))?;
        out.insert(
            i,
            EventFields {
                kind,
                lock,
                flags: field("flags"),
            },
        );
    }
    if !out.values().any(|e| e.kind == Kind::Begin) || !out.values().any(|e| e.kind == Kind::End) {
        return Err(Error::NoLockEvents);
    }
    Ok(out)
}

/// The report of a file.
pub fn from_file(
    file: &PerfFile,
    sym: &Symbolizer,
    options: &ReportOptions,
    filters: &FileFilters,
    perf_skip: Option<usize>,
) -> Result<Report, Error> {
    let events = lock_events(file)?;
    let endian = file.endian();
    let mut tally = Tally::new(sym, options, filters, perf_skip);
    for record in file.records() {
        let record = record.map_err(|e| Error::File(e.to_string()))?;
        tally.losses.count(&record);
        match record {
            Record::Comm(c) => tally.comm(c.tid, c.comm),
            Record::Sample(s) => {
                let Some(ev) = events.get(&s.attr_index) else {
                    continue;
                };
                if let Some(sample) = tally.decode(ev, &s, endian) {
                    match ev.kind {
                        Kind::Begin => tally.begin(&sample),
                        Kind::End => tally.end(&sample),
                    }
                }
            }
            _ => {}
        }
    }
    Ok(tally.report())
}

/// A lock sample of the file, decoded and keyed: what a begin or an end needs.
struct LockSample {
    tid: u32,
    time: u64,
    cpu: Option<u32>,
    /// The lock's address.
    addr: u64,
    /// The lock's flags (0 when the event has none, as an end).
    flags: u32,
    /// The callchain's addresses (context markers dropped), as perf's cursor holds them, max_stack deep.
    frames: Vec<u64>,
    /// Where in `frames` the caller is looked for: after `--stack-skip` frames, or after the tracepoint glue.
    stack_from: usize,
    /// The entry the sample counts in, by its own key.
    key: Key,
}

/// One pass over a file's records, in perf's record mode: the entries in the order they first appeared, each
/// (thread, lock)'s sequence state, the threads that began a counted contention, and the tasks' names.
struct Tally<'a> {
    sym: &'a Symbolizer,
    options: &'a ReportOptions,
    filters: &'a FileFilters,
    perf_skip: Option<usize>,
    max_stack: usize,
    comms: HashMap<u32, String>,
    stats: HashMap<Key, Stat>,
    order: Vec<Key>,
    seqs: HashMap<(u32, u64), State>,
    threads: HashSet<u32>,
    losses: Losses,
}

impl<'a> Tally<'a> {
    fn new(
        sym: &'a Symbolizer,
        options: &'a ReportOptions,
        filters: &'a FileFilters,
        perf_skip: Option<usize>,
    ) -> Self {
        Tally {
            sym,
            options,
            filters,
            perf_skip,
            max_stack: options.max_stack.max(1),
            comms: HashMap::new(),
            stats: HashMap::new(),
            order: Vec::new(),
            seqs: HashMap::new(),
            threads: HashSet::new(),
            losses: Losses::default(),
        }
    }

    fn comm(&mut self, tid: u32, comm: &[u8]) {
        self.comms.insert(
            tid,
            String::from_utf8_lossy(comm)
                .trim_end_matches('\0')
                .to_string(),
        );
    }

    /// A sample of a lock event decoded, or `None` when it lacks a field, or `-p`/`--tid` leave it out.
    fn decode(
        &self,
        ev: &EventFields,
        s: &SampleRecord<'_>,
        endian: Endianness,
    ) -> Option<LockSample> {
        let (Some(raw), Some(tid), Some(time)) = (s.raw, s.tid, s.time) else {
            return None;
        };
        let filters = self.filters;
        if (!filters.pids.is_empty() && !s.pid.is_some_and(|p| filters.pids.contains(&p)))
            || (!filters.tids.is_empty() && !filters.tids.contains(&tid))
        {
            return None;
        }
        let value = |f: &Field| decode(f, raw, endian).map(|v| v.as_u64()).ok();
        let addr = value(&ev.lock)?;
        let flags = ev.flags.as_ref().and_then(value).unwrap_or(0) as u32;
        let frames: Vec<u64> = s
            .callchain
            .map(|c| {
                c.iter()
                    .filter(|&ip| ip < PERF_CONTEXT_MAX)
                    .take(self.max_stack)
                    .collect()
            })
            .unwrap_or_default();
        let stack = match self.perf_skip {
            Some(n) => &frames[n.min(frames.len())..],
            None => self.sym.strip_glue(&frames),
        };
        let stack_from = frames.len() - stack.len();
        let key = self.key(stack, tid, addr, flags);
        Some(LockSample {
            tid,
            time,
            cpu: s.cpu,
            addr,
            flags,
            frames,
            stack_from,
            key,
        })
    }

    /// The key of a sample's entry: its caller (perf's hash with `--stack-skip`, else bport's frames and flags),
    /// thread or lock.
    fn key(&self, stack: &[u64], tid: u32, addr: u64, flags: u32) -> Key {
        let sym = self.sym;
        match self.options.aggr {
            Aggr::Caller if self.perf_skip.is_some() => Key::PerfHash(perf_callchain_id(
                stack
                    .iter()
                    .copied()
                    .filter(|&ip| !sym.is_lock_function(ip)),
            )),
            Aggr::Caller => Key::Stack(
                stack
                    .iter()
                    .copied()
                    // A zero entry (where a user unwind stopped) is no frame; perf's XOR hash of the frames
                    // gives it no weight either.
                    .filter(|&ip| ip != 0 && !sym.is_lock_function(ip))
                    .collect(),
                flags,
            ),
            Aggr::Task => Key::Task(tid),
            Aggr::Addr => Key::Addr(addr),
        }
    }

    /// A `contention_begin`: its entry made when new (filtered or not, as perf does), then, when the filters
    /// keep it and the thread is not contended on the lock already, counted and its time kept.
    fn begin(&mut self, s: &LockSample) {
        let filters = self.filters;
        if !self.stats.contains_key(&s.key) {
            self.new_entry(s);
        }
        if (!filters.types.is_empty() && !filters.types.contains(&s.flags))
            || (!filters.addrs.is_empty() && !filters.addrs.contains(&s.addr))
            || (!filters.cpus.is_empty() && !s.cpu.is_some_and(|c| filters.cpus.contains(&c)))
            || !self.sym.callstack_matches(
                &s.frames,
                self.max_stack,
                &self.options.callstack_filter,
            )
        {
            return;
        }
        self.threads.insert(s.tid);
        let seq = self.seqs.entry((s.tid, s.addr)).or_insert(State::Acquired);
        if let State::Contended(..) = seq {
            // A nested begin (a mutex spins, then sleeps): the first one's time stands.
            return;
        }
        if let Some(st) = self.stats.get_mut(&s.key) {
            *seq = State::Contended(s.time, st.index);
            st.entry.count += 1;
        }
    }

    /// The entry a begin opens, named by its caller, nobody (tasks are named at the end) or its lock.
    fn new_entry(&mut self, s: &LockSample) {
        let sym = self.sym;
        let name = match self.options.aggr {
            Aggr::Caller => sym.caller_named(&s.frames[s.stack_from..]),
            Aggr::Task => String::new(),
            Aggr::Addr => sym.lock_name(s.addr),
        };
        self.stats.insert(
            s.key.clone(),
            Stat {
                entry: Contention {
                    count: 0,
                    total: 0,
                    max: 0,
                    min: u64::MAX,
                    flags: s.flags,
                    name,
                    tid: s.tid,
                    lock: s.addr,
                    acquired: 0,
                    callstack: s
                        .frames
                        .iter()
                        .take_while(|&&ip| ip != 0)
                        .map(|&ip| (ip, sym.frame_name(ip)))
                        .collect(),
                },
                acquired: 0,
                index: self.order.len(),
            },
        );
        self.order.push(s.key.clone());
    }

    /// A `contention_end`: the wait since its begin added to the begin's entry.
    fn end(&mut self, s: &LockSample) {
        let (tid, addr) = (s.tid, s.addr);
        // bport's naming: the end belongs to its begin's entry (an end has no flags, and its stack differs
        // inside the lock functions). perf's keys: the end's own key finds the entry, as in perf.
        let key = match (&s.key, self.seqs.get(&(tid, addr)).copied()) {
            (Key::Stack(..), Some(State::Contended(_, at))) => &self.order[at],
            (Key::Stack(..), Some(State::Acquired)) => {
                self.seqs.remove(&(tid, addr));
                return;
            }
            (Key::Stack(..), None) => return,
            _ => &s.key,
        };
        let Some(st) = self.stats.get_mut(key) else {
            return;
        };
        if !self.threads.contains(&tid) {
            return;
        }
        match self.seqs.get(&(tid, addr)).copied() {
            Some(State::Contended(start, _)) => {
                let wait = s.time.saturating_sub(start);
                st.entry.total += wait;
                st.entry.min = st.entry.min.min(wait);
                st.entry.max = st.entry.max.max(wait);
                st.acquired += 1;
                st.entry.acquired = st.acquired;
                self.seqs.insert((tid, addr), State::Acquired);
            }
            Some(State::Acquired) => {
                // A broken sequence (an end after an end): perf drops the thread's state for the lock.
                self.seqs.remove(&(tid, addr));
            }
            None => {}
        }
    }

    /// The entries that waited, in perf's order, tasks named by their COMM; and what the file lost.
    fn report(mut self) -> Report {
        let mut order: Vec<(usize, Key)> = std::mem::take(&mut self.order)
            .into_iter()
            .enumerate()
            .collect();
        // Equal values print in perf's order: `sort_result` walks its lock hash table bucket by bucket, each
        // bucket newest first (`hlist_add_head`), and the result tree keeps equal entries in that order. bport's
        // own stack keys have no perf counterpart: those keep the order they first appeared in.
        order.sort_by_key(|(at, key)| match perf_table_key(key) {
            Some(k) => (perf_bucket(k), std::cmp::Reverse(*at)),
            None => (0, std::cmp::Reverse(usize::MAX - *at)),
        });
        let entries = order
            .into_iter()
            .filter_map(|(_, k)| self.stats.remove(&k))
            .map(|s| {
                let mut e = s.entry;
                if self.options.aggr == Aggr::Task {
                    // No COMM record ever names the idle task; perf's machine__init calls it `swapper`.
                    e.name = match self.comms.get(&e.tid) {
                        Some(c) => c.clone(),
                        None if e.tid == 0 => "swapper".to_owned(),
                        None => format!(":{}", e.tid as i32),
                    };
                }
                e
            })
            // perf prints only entries that waited.
            .filter(|e| e.total > 0)
            .collect();
        let mut report = finish(entries, self.options);
        report.warning = self.losses.warning();
        report
    }
}

/// What a file says it lost, counted as perf's session does (util/session.c: every record read counts as an
/// event, `PERF_RECORD_LOST` records as chunks, `PERF_RECORD_LOST_SAMPLES` by the samples they name).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Losses {
    /// Records read, of every type.
    pub events: u64,
    /// `PERF_RECORD_LOST` records.
    pub lost_chunks: u64,
    /// `PERF_RECORD_SAMPLE` records.
    pub samples: u64,
    /// The samples `PERF_RECORD_LOST_SAMPLES` records say were dropped.
    pub lost_samples: u64,
}

impl Losses {
    fn count(&mut self, record: &Record<'_>) {
        self.events += 1;
        match record {
            Record::Lost(_) => self.lost_chunks += 1,
            Record::LostSamples(r) => {
                self.lost_samples = self.lost_samples.saturating_add(r.fields[0])
            }
            Record::Sample(_) => self.samples += 1,
            _ => {}
        }
    }

    /// perf's warnings at the end of a session (`perf_session__warn_about_errors`), same text: any lost chunk;
    /// dropped samples above 5% of the samples read and dropped.
    pub fn warning(&self) -> Option<String> {
        let mut out = String::new();
        if self.lost_chunks != 0 {
            // perf prints both counts as C ints.
            out.push_str(&format!(
                "Warning:\nProcessed {} events and lost {} chunks!\n\nCheck IO/CPU overload!\n\n",
                self.events as u32 as i32, self.lost_chunks as u32 as i32
            ));
        }
        let total = self.samples.saturating_add(self.lost_samples);
        if self.lost_samples != 0 {
            let rate = self.lost_samples as f64 / total as f64;
            if rate > 0.05 {
                out.push_str(&format!(
                    "Warning:\nProcessed {total} samples and lost {:3.2}%!\n\n",
                    rate * 100.0
                ));
            }
        }
        (!out.is_empty()).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::{perf_bucket, perf_callchain_id, perf_table_key, Key, Losses};

    #[test]
    fn losses_warn_in_perfs_words_and_thresholds() {
        // perf 6.1 on a `perf lock record` file with one PERF_RECORD_LOST record added (348 records in all).
        let chunks = Losses {
            events: 348,
            lost_chunks: 1,
            samples: 24,
            lost_samples: 0,
        };
        assert_eq!(
            chunks.warning().as_deref(),
            Some("Warning:\nProcessed 348 events and lost 1 chunks!\n\nCheck IO/CPU overload!\n\n")
        );
        // The same file with a PERF_RECORD_LOST_SAMPLES of 50 instead.
        let samples = Losses {
            events: 348,
            lost_chunks: 0,
            samples: 24,
            lost_samples: 50,
        };
        assert_eq!(
            samples.warning().as_deref(),
            Some("Warning:\nProcessed 74 samples and lost 67.57%!\n\n")
        );
        // perf is silent at 5% and below.
        let few = Losses {
            events: 300,
            lost_chunks: 0,
            samples: 95,
            lost_samples: 5,
        };
        assert_eq!(few.warning(), None);
        assert_eq!(Losses::default().warning(), None);
    }

    #[test]
    fn perfs_lock_hash_buckets_are_the_top_12_bits_of_the_golden_ratio_product() {
        // hash_long(key, 12): (key * 0x61c8864680b583eb) >> 52.
        assert_eq!(perf_bucket(0), 0);
        assert_eq!(perf_bucket(1), 0x61c);
        assert_eq!(perf_bucket(2), 0xc39);
        // Keys print in bucket order, whatever their value: tid 2 (bucket 0xc39) after tid 3 (0x255).
        assert_eq!(perf_bucket(3), 0x255);
        assert_eq!(perf_table_key(&Key::Task(3)), Some(3));
        assert_eq!(perf_table_key(&Key::PerfHash(7)), Some(7));
        assert_eq!(perf_table_key(&Key::Stack(vec![1], 0)), None);
    }

    #[test]
    fn perfs_callchain_id_keeps_32_bits_of_each_frame_hash() {
        // Two stacks of one system-wide `perf lock record` (frames after perf's --stack-skip 3, lock functions
        // dropped): perf 6.1 printed one entry of 5 contentions where a 64-bit XOR gave two of 3 and 2.
        let common = [
            0xffff_ffff_8226_01f0,
            0xffff_ffff_8100_0c82,
            0x7f01_4cfd_6b75,
        ];
        let with = |last: u64| perf_callchain_id(common.iter().copied().chain([last]));
        assert_eq!(with(0x3030_3100_0000_0000), with(0));
        // A frame that differs in the low bits still separates the stacks.
        assert_ne!(with(0x8f7e_6223_c28a_453d), with(0));
        // The same frame twice cancels out, as in perf.
        assert_eq!(
            perf_callchain_id([1u64, 2, 2].into_iter()),
            perf_callchain_id([1u64].into_iter())
        );
    }
}
