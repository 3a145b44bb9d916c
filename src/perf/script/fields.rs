//! `-F` field selection: the fields `perf script` can print, perf's `+`/`-` syntax, and the default set per
//! event (a leaf: the sample formatter and the memory columns both read it).

/// One selectable output field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// Thread's command name.
    Comm,
    /// Thread id.
    Tid,
    /// Process id.
    Pid,
    /// CPU.
    Cpu,
    /// Timestamp.
    Time,
    /// Event name.
    Event,
    /// Addresses.
    Ip,
    /// Symbol names.
    Sym,
    /// `+0x` offsets into symbols.
    SymOff,
    /// DSO names.
    Dso,
    /// Sample period.
    Period,
    /// The sampled data address (`PERF_SAMPLE_ADDR`, `perf mem`).
    Addr,
    /// The data source of a memory access, raw and decoded (`|OP LOAD|LVL L1 hit|…`).
    DataSrc,
    /// The sample's weight (a memory access's latency).
    Weight,
    /// The instruction latency of a `PERF_SAMPLE_WEIGHT_STRUCT` weight.
    InsLat,
    /// A tracepoint's trace line (the event's print fmt over its RAW data).
    Trace,
}

impl Field {
    const ALL: [(Field, &'static str); 16] = [
        (Field::Comm, "comm"),
        (Field::Tid, "tid"),
        (Field::Pid, "pid"),
        (Field::Cpu, "cpu"),
        (Field::Time, "time"),
        (Field::Event, "event"),
        (Field::Ip, "ip"),
        (Field::Sym, "sym"),
        (Field::SymOff, "symoff"),
        (Field::Dso, "dso"),
        (Field::Period, "period"),
        (Field::Addr, "addr"),
        (Field::DataSrc, "data_src"),
        (Field::Weight, "weight"),
        (Field::InsLat, "ins_lat"),
        (Field::Trace, "trace"),
    ];

    fn bit(self) -> u32 {
        1 << (self as u32)
    }

    fn parse(name: &str) -> Option<Field> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(f, _)| *f)
    }
}

/// A `-F` request: replace the default fields, or add/remove some.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldSpec {
    /// `-F comm,tid,…`: exactly these.
    Exactly(u32),
    /// `-F +pid,-time`: perf's defaults for the file with these changes.
    Modify {
        /// Fields added.
        add: u32,
        /// Fields removed.
        remove: u32,
    },
}

/// A `-F` value perf would reject.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldError {
    /// A field name bport does not know.
    #[error(
        "unknown field `{0}` (known: comm, tid, pid, cpu, time, event, ip, sym, symoff, dso, period, trace, \
         addr, data_src, weight, ins_lat)"
    )]
    Unknown(String),
    /// Both a plain list and `+`/`-` changes.
    #[error(
        "cannot mix +-field with overridden fields (as in perf: use either `-F a,b` or `-F +a,-b`)"
    )]
    Mixed,
}

impl std::str::FromStr for FieldSpec {
    type Err = FieldError;

    fn from_str(s: &str) -> Result<Self, FieldError> {
        let (mut exact, mut add, mut remove) = (0u32, 0u32, 0u32);
        let (mut plain, mut modified) = (false, false);
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            // perf allows a `type:` prefix (`sw:comm`); the type is not distinguished here.
            let item = item.rsplit(':').next().unwrap_or(item);
            let (sign, name) = match item.as_bytes()[0] {
                b'+' => (Some(true), &item[1..]),
                b'-' => (Some(false), &item[1..]),
                _ => (None, item),
            };
            let field = Field::parse(name).ok_or_else(|| FieldError::Unknown(name.to_owned()))?;
            match sign {
                Some(true) => (add, modified) = (add | field.bit(), true),
                Some(false) => (remove, modified) = (remove | field.bit(), true),
                None => (exact, plain) = (exact | field.bit(), true),
            }
        }
        if plain && modified {
            return Err(FieldError::Mixed);
        }
        Ok(if plain {
            FieldSpec::Exactly(exact)
        } else {
            FieldSpec::Modify { add, remove }
        })
    }
}

/// The fields to print for one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields(u32);

impl Fields {
    /// perf's default fields for an event of `attr_type` (`output[]` of builtin-script.c: the memory fields only
    /// for PERF_TYPE_RAW), less the fields its `sample_type` lacks (`evsel__check_attr` drops them silently
    /// unless the user asked for them). The period stays: without PERF_SAMPLE_PERIOD perf prints the event's
    /// configured period (`evsel__parse_sample` starts from `attr.sample_period`).
    pub fn for_event(spec: Option<&FieldSpec>, attr_type: u32, sample_type: u64) -> Fields {
        use crate::perf::abi::{
            PERF_SAMPLE_ADDR, PERF_SAMPLE_CPU, PERF_SAMPLE_DATA_SRC, PERF_SAMPLE_TIME,
            PERF_SAMPLE_WEIGHT, PERF_SAMPLE_WEIGHT_STRUCT, PERF_TYPE_RAW,
        };
        let mut default = [
            Field::Comm,
            Field::Tid,
            Field::Cpu,
            Field::Time,
            Field::Event,
            Field::Ip,
            Field::Sym,
            Field::SymOff,
            Field::Dso,
            Field::Period,
        ]
        .iter()
        .fold(0, |acc, f| acc | f.bit());
        if attr_type == PERF_TYPE_RAW {
            default |= Field::Addr.bit()
                | Field::DataSrc.bit()
                | Field::Weight.bit()
                | Field::InsLat.bit();
        }
        let mut bits = match spec {
            None => default,
            Some(FieldSpec::Exactly(b)) => *b,
            Some(FieldSpec::Modify { add, remove }) => (default | add) & !remove,
        };
        for (sampled, field) in [
            (PERF_SAMPLE_CPU, Field::Cpu),
            (PERF_SAMPLE_TIME, Field::Time),
            (PERF_SAMPLE_ADDR, Field::Addr),
            (PERF_SAMPLE_DATA_SRC, Field::DataSrc),
            (
                PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT,
                Field::Weight,
            ),
            (PERF_SAMPLE_WEIGHT_STRUCT, Field::InsLat),
        ] {
            if sample_type & sampled == 0 {
                bits &= !field.bit();
            }
        }
        Fields(bits)
    }

    /// perf's default for tracepoints (`output[PERF_TYPE_TRACEPOINT]`: comm, tid, cpu, time, event, trace),
    /// with IP, symbol+offset and DSO added when the event samples callchains (perf shows the chain under the trace
    /// line), then the `-F` changes.
    pub fn for_tracepoint(spec: Option<&FieldSpec>, has_callchain: bool) -> Fields {
        let mut default = [
            Field::Comm,
            Field::Tid,
            Field::Cpu,
            Field::Time,
            Field::Event,
            Field::Trace,
        ]
        .iter()
        .fold(0, |acc, f| acc | f.bit());
        if has_callchain {
            default |= Field::Ip.bit() | Field::Sym.bit() | Field::SymOff.bit() | Field::Dso.bit();
        }
        Fields(match spec {
            None => default,
            Some(FieldSpec::Exactly(b)) => *b,
            Some(FieldSpec::Modify { add, remove }) => (default | add) & !remove,
        })
    }

    /// Whether `field` is printed.
    pub fn has(self, field: Field) -> bool {
        self.0 & field.bit() != 0
    }
}
