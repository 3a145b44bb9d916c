//! `bport script`'s text formatted and written on its own thread.
//!
//! Resolving samples (parsing, unwinding, symbol lookups) is the run's bottleneck; formatting the sample lines and
//! writing them out was about a sixth of that thread's work. Here the resolving thread sends each sample to an
//! output thread as plain data: its head fields, its comm as bytes, and its frames as ids of lines the output
//! thread already holds (each cached frame's line is formatted once, by the resolving thread, and sent the first
//! time it is used) or as the text of a frame that is not cached. The output thread formats the heads and copies
//! the lines, so the text is exactly what [`super::format::write_sample`] gives. Events differ only in the
//! head's fields (one did not sample CPU or period); a frame's line (address, symbol, offset, DSO) is the same
//! for every event, since one `-F` applies to all of them.

use super::format::{self, Field, Fields, Head};
use super::machine::IdMap;
use super::resolve::FrameRef;
use super::session::{Samples, ScriptError};
use super::{Frame, SampleInfo};
use crate::perf::symbols::kallsyms::{Kallsyms, PendingKallsyms};
use crate::perf::symbols::FileLookup;
use std::io::Write;
use std::sync::mpsc;

/// Samples per message: large enough that the channel is not the cost, small enough to keep both threads busy.
const BATCH_SAMPLES: usize = 512;
/// Batches in flight. The output thread waits for the kernel's symbol table at the first kernel frame (a few ms
/// into a run); with 4 batches the resolving thread then stalled too, for 3-5 ms of a 30 ms run (measured with
/// timestamps on chain-dwarf-medium). 32 batches (16,384 samples, at most ~13 MB at their usual size) cover
/// that wait, and a slow reader of the output still bounds the memory held.
const BATCHES_IN_FLIGHT: usize = 32;
/// Output is written in pieces of this size.
const WRITE_AT: usize = 1 << 16;

/// One sample, as the output thread formats it.
struct SampleRec {
    event: u32,
    pid: i32,
    tid: i32,
    cpu: Option<u32>,
    time: Option<u64>,
    period: Option<u64>,
    has_callchain: bool,
    /// The comm, in `Batch::text`.
    comm: (u32, u32),
    /// The formatted memory fields, in `Batch::text` (formatted on the resolving side, which sees the samples
    /// in order as perf's growing data-source column needs).
    mem: (u32, u32),
    /// A tracepoint's trace line, in `Batch::text` (empty range: none).
    trace: (u32, u32),
    /// The frames, in `Batch::items`.
    items: (u32, u32),
    /// The id of the repeated chain these frames are, sent whole for the first time ([`NO_CHAIN`] if none):
    /// the output thread keeps their text for the samples that name it by [`Item::Chain`].
    defines_chain: u32,
}

const NO_CHAIN: u32 = u32::MAX;

/// What follows a sample's head.
enum Item {
    /// The line of a cached frame, by its id ([`FrameRef::Cached`]).
    Line(u32),
    /// Text in `Batch::text`: a frame that is not cached, or the tail of a sample without a callchain.
    Text(u32, u32),
    /// A kernel frame for this thread to symbolize: its map's id, address and DSO name (in `Batch::text`).
    Kernel {
        map: u64,
        addr: u64,
        dso: (u32, u32),
    },
    /// All the frame lines of a chain an earlier sample defined ([`SampleRec::defines_chain`]): samples of a
    /// hot loop repeat their chain, and one copy of its text replaces a line-by-line copy on this thread and
    /// the per-frame encoding on the resolving one.
    Chain(u32),
}

struct Batch {
    samples: Vec<SampleRec>,
    items: Vec<Item>,
    text: Vec<u8>,
    /// Lines of cached frames used for the first time: (id, range in `text`).
    new_lines: Vec<(u32, u32, u32)>,
}

impl Batch {
    /// A batch sized for [`BATCH_SAMPLES`] typical samples: growing each new batch from empty (up to 32 are
    /// new while the output thread waits for the kernel's symbols) copied its vectors over and over, 3% of the
    /// resolving thread's instructions on chain-dwarf-medium.
    fn sized() -> Self {
        Batch {
            samples: Vec::with_capacity(BATCH_SAMPLES),
            items: Vec::with_capacity(BATCH_SAMPLES * 16),
            text: Vec::with_capacity(2 * WRITE_AT),
            new_lines: Vec::new(),
        }
    }

    fn clear(&mut self) {
        self.samples.clear();
        self.items.clear();
        self.text.clear();
        self.new_lines.clear();
    }
}

fn offset(v: &[u8]) -> u32 {
    // Batches are sent long before 4 GB of text.
    u32::try_from(v.len()).unwrap_or(u32::MAX)
}

/// The fields and event-name width event `event` prints with (the first event's for an unknown index).
fn layout_of(layouts: &[(Fields, usize)], event: u32) -> (Fields, usize) {
    layouts
        .get(event as usize)
        .or(layouts.first())
        .copied()
        .unwrap_or_else(|| (Fields::for_event(None, 0, 0), 0))
}

/// Formats every sample of `it` (event `i` with `layouts[i]`: its fields and event-name width) and writes the
/// text to `out` from another thread; `kernel` is the kernel symbol table `it` defers kernel frames to. Returns
/// the number of samples.
pub(super) fn write_threaded<L: FileLookup>(
    it: &mut Samples<'_, L>,
    layouts: &[(Fields, usize)],
    event_names: Vec<String>,
    kernel: Option<PendingKallsyms>,
    out: &mut (impl Write + Send),
) -> Result<u64, ScriptError> {
    let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(BATCHES_IN_FLIGHT);
    let (empty_tx, empty_rx) = mpsc::channel::<Batch>();
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || {
            OutputSide::new(layouts, event_names, kernel).run(full_rx, empty_tx, out)
        });
        let resolved = resolve_samples(it, layouts, &full_tx, &empty_rx);
        drop(full_tx);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the output thread panicked")));
        match (resolved, written) {
            (Err(e), _) => Err(e),
            (Ok(_), Err(e)) => Err(ScriptError::Io(e)),
            (Ok(n), Ok(())) => Ok(n),
        }
    })
}

/// The output thread: the lines and chains it was sent, and the text waiting to be written.
struct OutputSide<'a> {
    layouts: &'a [(Fields, usize)],
    event_names: Vec<String>,
    /// Per cached frame: its line's range in `lines_text`.
    lines: Vec<(u32, u32)>,
    lines_text: Vec<u8>,
    /// Kernel frames: the table is waited for at the first one, each line formatted once.
    kernel: KernelLines,
    /// Per chain id: its text's range in `chains_text`.
    chains: Vec<(u32, u32)>,
    chains_text: Vec<u8>,
    text: Vec<u8>,
    last_comm: String,
}

impl<'a> OutputSide<'a> {
    fn new(
        layouts: &'a [(Fields, usize)],
        event_names: Vec<String>,
        kernel: Option<PendingKallsyms>,
    ) -> Self {
        OutputSide {
            layouts,
            event_names,
            lines: Vec::new(),
            lines_text: Vec::new(),
            kernel: KernelLines {
                pending: kernel,
                table: None,
                lines: IdMap::default(),
            },
            chains: Vec::new(),
            chains_text: Vec::new(),
            text: Vec::with_capacity(2 * WRITE_AT),
            last_comm: String::new(),
        }
    }

    /// Formats every batch received and hands each back for reuse; the text is written in [`WRITE_AT`] pieces.
    fn run(
        mut self,
        full_rx: mpsc::Receiver<Batch>,
        empty_tx: mpsc::Sender<Batch>,
        out: &mut impl Write,
    ) -> std::io::Result<()> {
        for mut batch in full_rx {
            self.keep_new_lines(&batch);
            for s in &batch.samples {
                self.format_sample(&batch, s);
                if self.text.len() >= WRITE_AT {
                    out.write_all(&self.text)?;
                    self.text.clear();
                }
            }
            batch.clear();
            // The resolving side may be gone already (an error ended it); the batch is then dropped.
            let _ = empty_tx.send(batch);
        }
        out.write_all(&self.text)?;
        out.flush()
    }

    /// Keeps the lines of cached frames `batch` uses for the first time.
    fn keep_new_lines(&mut self, batch: &Batch) {
        for &(id, a, b) in &batch.new_lines {
            let id = id as usize;
            if self.lines.len() <= id {
                self.lines.resize(id + 1, (0, 0));
            }
            let start = offset(&self.lines_text);
            self.lines_text
                .extend_from_slice(&batch.text[a as usize..b as usize]);
            self.lines[id] = (start, offset(&self.lines_text));
        }
    }

    /// Appends sample `s`'s head, frames and newline to the text.
    fn format_sample(&mut self, batch: &Batch, s: &SampleRec) {
        let comm = &batch.text[s.comm.0 as usize..s.comm.1 as usize];
        // Runs of samples share a comm: checked as UTF-8 once per run, not per sample.
        if self.last_comm.as_bytes() != comm {
            self.last_comm.clear();
            self.last_comm
                .push_str(std::str::from_utf8(comm).unwrap_or(""));
        }
        let head = Head {
            comm: &self.last_comm,
            pid: s.pid,
            tid: s.tid,
            cpu: s.cpu,
            time: s.time,
            period: s.period,
            event: self
                .event_names
                .get(s.event as usize)
                .map_or("", String::as_str),
            has_callchain: s.has_callchain,
            mem: &batch.text[s.mem.0 as usize..s.mem.1 as usize],
            trace: (s.trace.1 > s.trace.0)
                .then(|| &batch.text[s.trace.0 as usize..s.trace.1 as usize]),
        };
        let (fields, width) = layout_of(self.layouts, s.event);
        format::write_head(&mut self.text, fields, width, &head);
        let frames_from = self.text.len();
        for item in &batch.items[s.items.0 as usize..s.items.1 as usize] {
            let (a, b, from) = match *item {
                Item::Chain(id) => {
                    let (a, b) = self.chains.get(id as usize).copied().unwrap_or((0, 0));
                    (a, b, &self.chains_text)
                }
                Item::Line(id) => {
                    let (a, b) = self.lines.get(id as usize).copied().unwrap_or((0, 0));
                    (a, b, &self.lines_text)
                }
                Item::Text(a, b) => (a, b, &batch.text),
                Item::Kernel { map, addr, dso } => {
                    let dso = &batch.text[dso.0 as usize..dso.1 as usize];
                    let (a, b) = self
                        .kernel
                        .line(map, addr, dso, fields, &mut self.lines_text);
                    (a, b, &self.lines_text)
                }
            };
            self.text.extend_from_slice(&from[a as usize..b as usize]);
        }
        if s.defines_chain != NO_CHAIN {
            let id = s.defines_chain as usize;
            if self.chains.len() <= id {
                self.chains.resize(id + 1, (0, 0));
            }
            let start = offset(&self.chains_text);
            self.chains_text
                .extend_from_slice(&self.text[frames_from..]);
            self.chains[id] = (start, offset(&self.chains_text));
        }
        self.text.push(b'\n');
    }
}

/// The resolving side: encodes each sample into batches for the output thread.
fn resolve_samples<L: FileLookup>(
    it: &mut Samples<'_, L>,
    layouts: &[(Fields, usize)],
    full_tx: &mpsc::SyncSender<Batch>,
    empty_rx: &mpsc::Receiver<Batch>,
) -> Result<u64, ScriptError> {
    let mut n = 0;
    let mut refs = Vec::new();
    let mut encoder = Encoder::default();
    let mut batch = Batch::sized();
    while let Some(item) = it.next_sample_refs(&mut refs) {
        let info = match item {
            Ok(info) => info,
            Err(e) => {
                // A damaged file: what was read before the damage is printed before the error is reported.
                if !batch.samples.is_empty() {
                    let _ = full_tx.send(batch);
                }
                return Err(e);
            }
        };
        encoder.encode(&mut batch, it, layouts, &info, &refs);
        n += 1;
        if batch.samples.len() >= BATCH_SAMPLES || batch.text.len() >= WRITE_AT {
            let fresh = empty_rx.try_recv().unwrap_or_else(|_| Batch::sized());
            if full_tx.send(std::mem::replace(&mut batch, fresh)).is_err() {
                // The output thread stopped on an error, which its join reports.
                return Ok(n);
            }
        }
    }
    if !batch.samples.is_empty() {
        let _ = full_tx.send(batch);
    }
    Ok(n)
}

/// What the resolving side remembers of what it sent.
#[derive(Default)]
struct Encoder {
    /// Per cached frame: whether its line was sent.
    sent: Vec<bool>,
    /// Per chain id: whether its text was.
    chains_sent: Vec<bool>,
    columns: super::mem::Columns,
}

impl Encoder {
    /// Adds the sample `info` with frames `refs` to `batch`.
    fn encode<L: FileLookup>(
        &mut self,
        batch: &mut Batch,
        it: &mut Samples<'_, L>,
        layouts: &[(Fields, usize)],
        info: &SampleInfo,
        refs: &[FrameRef],
    ) {
        let event = u32::try_from(info.attr_index).unwrap_or(u32::MAX);
        let (fields, _) = layout_of(layouts, event);
        let shows_ip = fields.has(Field::Ip);
        let comm_start = offset(&batch.text);
        batch.text.extend_from_slice(info.comm.as_bytes());
        let comm = (comm_start, offset(&batch.text));
        super::mem::write(&mut batch.text, fields, &info.mem, &mut self.columns);
        let mem = (comm.1, offset(&batch.text));
        let trace_start = offset(&batch.text);
        if let Some(t) = &info.trace {
            batch.text.extend_from_slice(t.as_bytes());
        }
        let trace = (trace_start, offset(&batch.text));
        let items_start = offset_items(&batch.items);
        let shows_chain = info.has_callchain && shows_ip;
        let mut defines_chain = NO_CHAIN;
        // A repeated chain is named by its id once the output thread has its text; the first time, its frames
        // are sent one by one and the output thread keeps the text they make.
        let named = match it.last_chain() {
            Some(id) if shows_chain => {
                let i = id as usize;
                if self.chains_sent.len() <= i {
                    self.chains_sent.resize(i + 1, false);
                }
                let sent = std::mem::replace(&mut self.chains_sent[i], true);
                if sent {
                    batch.items.push(Item::Chain(id));
                } else {
                    defines_chain = id;
                }
                sent
            }
            _ => false,
        };
        if shows_chain && !named {
            self.frames(batch, it, fields, refs);
        } else if !shows_chain {
            // The sample's own IP on its line; a kernel one is symbolized here (files without callchains).
            let first = refs.first().cloned().map(|r| it.materialize(r));
            let a = offset(&batch.text);
            format::write_ip_only(&mut batch.text, fields, info.ip, first.as_ref());
            batch.items.push(Item::Text(a, offset(&batch.text)));
        }
        batch.samples.push(SampleRec {
            event,
            pid: info.pid,
            tid: info.tid,
            cpu: info.cpu,
            time: info.time,
            period: info.period,
            has_callchain: info.has_callchain,
            comm,
            mem,
            trace,
            items: (items_start, offset_items(&batch.items)),
            defines_chain,
        });
    }

    /// Adds the frames `refs` to `batch` one by one: cached frames by id (their line sent the first time),
    /// others as text, kernel frames for the output thread to symbolize.
    fn frames<L: FileLookup>(
        &mut self,
        batch: &mut Batch,
        it: &Samples<'_, L>,
        fields: Fields,
        refs: &[FrameRef],
    ) {
        for r in refs {
            match r {
                FrameRef::Cached(id) => {
                    let i = *id as usize;
                    if self.sent.len() <= i {
                        self.sent.resize(i + 1, false);
                    }
                    if !self.sent[i] {
                        let a = offset(&batch.text);
                        let frame = &it.cached_frames()[i];
                        format::write_frame_line(&mut batch.text, fields, frame);
                        batch.new_lines.push((*id, a, offset(&batch.text)));
                        self.sent[i] = true;
                    }
                    batch.items.push(Item::Line(*id));
                }
                FrameRef::Owned(f) => {
                    let a = offset(&batch.text);
                    format::write_frame_line(&mut batch.text, fields, f);
                    batch.items.push(Item::Text(a, offset(&batch.text)));
                }
                FrameRef::Kernel { map, addr, dso } => {
                    let a = offset(&batch.text);
                    batch.text.extend_from_slice(dso.as_bytes());
                    batch.items.push(Item::Kernel {
                        map: *map,
                        addr: *addr,
                        dso: (a, offset(&batch.text)),
                    });
                }
            }
        }
    }
}

fn offset_items(v: &[Item]) -> u32 {
    u32::try_from(v.len()).unwrap_or(u32::MAX)
}

/// The output thread's kernel symbols: the table handed over by the resolving side, waited for at the first
/// kernel frame, and the line of each (map, address) formatted once.
struct KernelLines {
    pending: Option<PendingKallsyms>,
    table: Option<Kallsyms>,
    /// By (map id, address).
    lines: IdMap<(u64, u64), (u32, u32)>,
}

impl KernelLines {
    /// The range in `store` of the line for `addr` in kernel map `map` named `dso`.
    fn line(
        &mut self,
        map: u64,
        addr: u64,
        dso: &[u8],
        fields: Fields,
        store: &mut Vec<u8>,
    ) -> (u32, u32) {
        if let Some(&span) = self.lines.get(&(map, addr)) {
            return span;
        }
        let table = self.table.get_or_insert_with(|| {
            self.pending
                .take()
                .map(PendingKallsyms::wait)
                .unwrap_or_default()
        });
        let dso = std::rc::Rc::from(String::from_utf8_lossy(dso).as_ref());
        let frame = match table.lookup_start(addr) {
            Some((name, start)) => Frame {
                addr,
                sym: Some(name),
                offset: addr - start,
                dso: Some(dso),
                inlined: false,
            },
            None => Frame::unsymbolized(addr, &dso),
        };
        let a = offset(store);
        format::write_frame_line(store, fields, &frame);
        let span = (a, offset(store));
        self.lines.insert((map, addr), span);
        span
    }
}
