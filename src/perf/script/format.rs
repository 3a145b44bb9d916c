//! The `perf script` text format (perf 6.1 tools/perf/builtin-script.c `perf_sample__fprintf_start`,
//! `process_event`; util/evsel_fprintf.c `sample__fprintf_callchain`, `sample__fprintf_sym`) and `-F` field
//! selection with perf's `+`/`-` syntax.

pub use super::fields::{Field, FieldError, FieldSpec, Fields};
use super::{Frame, SampleInfo};

/// Writes one sample as `perf script` does. `name_width` is the longest event name in the file (perf aligns
/// event names to it); `callchain_shown` is whether perf would print the frames on their own lines (the event
/// samples a callchain).
///
/// Appends to `out`, which the caller reuses and writes out in large pieces: built by hand, not with `write!`
/// (the formatting machinery was 9% of `bport script` on fp files), and without a writer call per piece.
pub fn write_sample(
    out: &mut Vec<u8>,
    fields: Fields,
    name_width: usize,
    columns: &mut super::mem::Columns,
    info: &SampleInfo,
    frames: &[Frame],
) {
    let mut mem = Vec::new();
    super::mem::write(&mut mem, fields, &info.mem, columns);
    let mut head = Head::of(info);
    head.mem = &mem;
    head.trace = info.trace.as_deref().map(str::as_bytes);
    if write_head(out, fields, name_width, &head) {
        for f in frames {
            write_frame_line(out, fields, f);
        }
    } else {
        write_ip_only(out, fields, info.ip, frames.first());
    }
    out.push(b'\n');
}

pub(crate) fn write_frame_line(out: &mut Vec<u8>, fields: Fields, f: &Frame) {
    out.push(b'\t');
    write_frame(out, fields, f);
    out.push(b'\n');
}

/// A sample without a callchain: perf prints its own IP (not the map-relative address) on the sample line.
pub(crate) fn write_ip_only(out: &mut Vec<u8>, fields: Fields, ip: u64, first: Option<&Frame>) {
    if !fields.has(Field::Ip) {
        return;
    }
    out.push(b' ');
    let f = first.cloned().unwrap_or(Frame {
        addr: ip,
        sym: None,
        offset: 0,
        dso: None,
        inlined: false,
    });
    let f = Frame { addr: ip, ..f };
    write_frame(out, fields, &f);
}

/// The sample line up to its frames; returns whether the frames follow on their own lines (the event samples a
/// callchain and addresses are shown).
/// What a sample's line shows, with its strings borrowed from wherever they live (the output thread of
/// `write_script` receives them as bytes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Head<'a> {
    pub(crate) comm: &'a str,
    pub(crate) pid: i32,
    pub(crate) tid: i32,
    pub(crate) cpu: Option<u32>,
    pub(crate) time: Option<u64>,
    pub(crate) period: Option<u64>,
    pub(crate) event: &'a str,
    pub(crate) has_callchain: bool,
    /// The memory fields, formatted ([`super::mem::write`]): they go between the event and the IP.
    pub(crate) mem: &'a [u8],
    /// A tracepoint's trace line, printed after the event name when the `trace` field is on.
    pub(crate) trace: Option<&'a [u8]>,
}

impl<'a> Head<'a> {
    pub(crate) fn of(info: &'a SampleInfo) -> Self {
        Head {
            comm: &info.comm,
            pid: info.pid,
            tid: info.tid,
            cpu: info.cpu,
            time: info.time,
            period: info.period,
            event: &info.event,
            has_callchain: info.has_callchain,
            mem: &[],
            trace: None,
        }
    }
}

pub(crate) fn write_head(
    out: &mut Vec<u8>,
    fields: Fields,
    name_width: usize,
    info: &Head<'_>,
) -> bool {
    let callchain_shown = info.has_callchain && fields.has(Field::Ip);
    // Widths count chars, as `{:>N}` does.
    let head = out;
    if fields.has(Field::Comm) {
        if callchain_shown {
            head.extend_from_slice(info.comm.as_bytes());
        } else {
            pad_left(head, info.comm.as_bytes(), info.comm.chars().count(), 16);
        }
        head.push(b' ');
    }
    let mut num = [0u8; 24];
    match (fields.has(Field::Pid), fields.has(Field::Tid)) {
        (true, true) => {
            let pid = decimal(i64::from(info.pid), &mut num);
            pad_left(head, pid, pid.len(), 5);
            head.push(b'/');
            let tid = decimal(i64::from(info.tid), &mut num);
            head.extend_from_slice(tid);
            head.resize(head.len() + 5usize.saturating_sub(tid.len()), b' ');
            head.push(b' ');
        }
        (true, false) | (false, true) => {
            let id = if fields.has(Field::Pid) {
                info.pid
            } else {
                info.tid
            };
            let id = decimal(i64::from(id), &mut num);
            pad_left(head, id, id.len(), 5);
            head.push(b' ');
        }
        (false, false) => {}
    }
    if fields.has(Field::Cpu) {
        let cpu = decimal(i64::from(info.cpu.unwrap_or(0)), &mut num);
        head.push(b'[');
        head.resize(head.len() + 3usize.saturating_sub(cpu.len()), b'0');
        head.extend_from_slice(cpu);
        head.extend_from_slice(b"] ");
    }
    if fields.has(Field::Time) {
        let t = info.time.unwrap_or(0);
        let mut stamp = [0u8; 32];
        let secs = udecimal(t / 1_000_000_000, &mut num);
        let n = secs.len();
        stamp[..n].copy_from_slice(secs);
        stamp[n] = b'.';
        let mut micros = ((t % 1_000_000_000) / 1000) as usize;
        for i in [4, 2, 0] {
            let pair = micros % 100 * 2;
            micros /= 100;
            stamp[n + 1 + i..n + 3 + i].copy_from_slice(&PAIRS[pair..pair + 2]);
        }
        pad_left(head, &stamp[..n + 7], n + 7, 12);
        head.extend_from_slice(b": ");
    }
    if fields.has(Field::Period) {
        let p = udecimal(info.period.unwrap_or(0), &mut num);
        pad_left(head, p, p.len(), 10);
        head.push(b' ');
    }
    if fields.has(Field::Event) {
        pad_left(
            head,
            info.event.as_bytes(),
            info.event.chars().count(),
            name_width,
        );
        head.extend_from_slice(b": ");
    }
    // perf's process_event order: the trace line, then the memory fields.
    if let Some(trace) = info.trace.filter(|_| fields.has(Field::Trace)) {
        head.extend_from_slice(trace);
    }
    head.extend_from_slice(info.mem);
    if callchain_shown {
        head.push(b'\n');
    }
    callchain_shown
}

fn write_frame(out: &mut Vec<u8>, fields: Fields, f: &Frame) {
    let mut hex = [0u8; 16];
    let digits = hex_digits(f.addr, &mut hex);
    out.resize(out.len() + 16usize.saturating_sub(digits.len()), b' ');
    out.extend_from_slice(digits);
    if fields.has(Field::Sym) {
        out.push(b' ');
        match &f.sym {
            Some(name) => {
                out.extend_from_slice(name.as_bytes());
                if fields.has(Field::SymOff) {
                    out.extend_from_slice(b"+0x");
                    out.extend_from_slice(hex_digits(f.offset, &mut hex));
                }
            }
            None => out.extend_from_slice(b"[unknown]"),
        }
    }
    if fields.has(Field::Dso) && !f.inlined {
        out.extend_from_slice(b" (");
        out.extend_from_slice(f.dso_name().as_bytes());
        out.push(b')');
    }
    if f.inlined {
        out.extend_from_slice(b" (inlined)");
    }
}

/// Appends `bytes` (`chars` characters) right-aligned in `width`, as `{:>width}` does.
fn pad_left(out: &mut Vec<u8>, bytes: &[u8], chars: usize, width: usize) {
    out.resize(out.len() + width.saturating_sub(chars), b' ');
    out.extend_from_slice(bytes);
}

/// "00" to "99", for writing decimals two digits per division (every sample line has four to six numbers).
const PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// Decimal of `v`, written into `buf`.
fn udecimal(mut v: u64, buf: &mut [u8; 24]) -> &[u8] {
    let mut i = buf.len();
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        let pair = v as usize * 2;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + v as u8;
    }
    &buf[i..]
}

/// Decimal of `v` with a leading `-` when negative (pid −1 of kernel samples), written into `buf`.
fn decimal(v: i64, buf: &mut [u8; 24]) -> &[u8] {
    let len = udecimal(v.unsigned_abs(), buf).len();
    if v < 0 {
        let i = buf.len() - len - 1;
        buf[i] = b'-';
        &buf[i..]
    } else {
        &buf[buf.len() - len..]
    }
}

/// Lower-case hex of `v` without leading zeros (`0` for zero), written into `buf`.
fn hex_digits(mut v: u64, buf: &mut [u8; 16]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b"0123456789abcdef"[(v & 0xf) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::abi::{PERF_SAMPLE_CPU, PERF_SAMPLE_PERIOD, PERF_SAMPLE_TIME};
    use crate::perf::script::CallchainMode;
    use std::rc::Rc;

    const ALL: u64 = PERF_SAMPLE_CPU | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD;

    fn info(has_callchain: bool) -> SampleInfo {
        SampleInfo {
            attr_index: 0,
            event: Rc::from("cpu-clock:ppp"),
            comm: Rc::from("chain-fp"),
            pid: 9616,
            tid: 9616,
            cpu: None,
            time: Some(410_728_510_123),
            period: Some(250000),
            ip: 0x40_1724,
            cpumode: 2,
            mode: CallchainMode::Fp,
            has_callchain,
            mem: Default::default(),
            trace: None,
        }
    }

    fn frames() -> Vec<Frame> {
        vec![
            Frame {
                addr: 0x1724,
                sym: Some(Rc::from("chain_c")),
                offset: 0x24,
                dso: Some(Rc::from("/tmp/uw/chain-fp")),
                inlined: false,
            },
            Frame {
                addr: 0,
                sym: None,
                offset: 0,
                dso: None,
                inlined: false,
            },
        ]
    }

    #[test]
    fn decimals_match_display() {
        let mut buf = [0u8; 24];
        let mut check = |v: u64| assert_eq!(udecimal(v, &mut buf), v.to_string().as_bytes(), "{v}");
        for v in (0..1000).chain([9_999, 10_000, 99_999, 123_456_789, u64::MAX / 10, u64::MAX]) {
            check(v);
        }
        assert_eq!(decimal(-1, &mut [0u8; 24]), b"-1");
        assert_eq!(
            decimal(i64::MIN, &mut [0u8; 24]),
            i64::MIN.to_string().as_bytes()
        );
    }

    #[test]
    fn callchain_sample_matches_perf_6_1() {
        let mut out = Vec::new();
        let fields = Fields::for_event(None, 1, PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD);
        write_sample(
            &mut out,
            fields,
            13,
            &mut Default::default(),
            &info(true),
            &frames(),
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "chain-fp  9616   410.728510:     250000 cpu-clock:ppp: \n\
             \t            1724 chain_c+0x24 (/tmp/uw/chain-fp)\n\
             \t               0 [unknown] ([unknown])\n\n"
        );
    }

    #[test]
    fn plain_sample_and_field_selection() {
        let mut out = Vec::new();
        let fields = Fields::for_event(Some(&"+pid,-period".parse().unwrap()), 1, ALL);
        let mut i = info(false);
        i.cpu = Some(1);
        write_sample(&mut out, fields, 15, &mut Default::default(), &i, &frames());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "        chain-fp  9616/9616  [001]   410.728510:   cpu-clock:ppp:            401724 chain_c+0x24 (/tmp/uw/chain-fp)\n"
        );
        assert_eq!("comm,+tid".parse::<FieldSpec>(), Err(FieldError::Mixed));
        assert_eq!(
            "comm,bogus".parse::<FieldSpec>(),
            Err(FieldError::Unknown("bogus".into()))
        );
        let only = Fields::for_event(Some(&"comm,ip,sym".parse().unwrap()), 1, ALL);
        let mut out = Vec::new();
        write_sample(
            &mut out,
            only,
            13,
            &mut Default::default(),
            &info(true),
            &frames()[..1],
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "chain-fp \n\t            1724 chain_c\n\n"
        );
    }
}
