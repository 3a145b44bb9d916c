//! The tracefs `format` file of one event (`events/<sys>/<name>/format`): its id, fields and `print fmt:` text.
//!
//! The layout is the kernel's `trace_format_open`/`f_show` output (kernel/trace/trace_events.c):
//!
//! ```text
//! name: sched_switch
//! ID: 372
//! format:
//! \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
//! ...(common fields, then a blank line, then the event's own fields)
//! print fmt: "prev_comm=%s ...", REC->prev_comm, ...
//! ```
//!
//! Old kernels write `field special:` for some fields and omit `signed:`; both are accepted. The same text is what
//! perf stores per event in the tracing-data feature section, so this parser also reads those.

use super::Error;

/// One field of an event record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The C type as the kernel wrote it, without the array part (`unsigned int`, `char`, `void *`,
    /// `char[]` for `__data_loc char[]`).
    pub type_name: String,
    /// The field name.
    pub name: String,
    /// Byte offset in the record (from `common_type`).
    pub offset: u32,
    /// Size in bytes (of the whole array for arrays; 4 for a `__data_loc` descriptor).
    pub size: u32,
    /// `signed:1`.
    pub signed: bool,
    /// `name[N]`: a fixed array of N elements.
    pub array_len: Option<u32>,
    /// `__data_loc`: a u32 descriptor `(len << 16) | offset` pointing into the record's dynamic area.
    pub data_loc: bool,
    /// `__rel_loc`: like `__data_loc`, with the offset relative to the end of the descriptor (Linux 5.18).
    pub rel_loc: bool,
}

impl Field {
    /// Whether the field prints as text: a char array or a dynamic char array.
    pub fn is_string(&self) -> bool {
        let t = self.type_name.trim_end_matches("[]").trim();
        (self.array_len.is_some() || self.data_loc || self.rel_loc)
            && matches!(t, "char" | "unsigned char" | "signed char" | "const char")
    }

    /// Whether the field is a pointer (`void *`, `char *`).
    pub fn is_pointer(&self) -> bool {
        self.type_name.contains('*')
    }

    /// Whether the field is a `long` (printed in hex by perf's raw fallback, as libtraceevent's
    /// `TEP_FIELD_IS_LONG`).
    pub fn is_long(&self) -> bool {
        let t = self.type_name.as_str();
        t == "long" || t == "unsigned long" || t.ends_with(" long") && !t.ends_with("long long")
    }

    /// Element size of an array (`size / array_len`), or the size itself.
    pub fn element_size(&self) -> u32 {
        match self.array_len {
            Some(n) if n > 0 => self.size / n,
            _ => self.size,
        }
    }
}

/// A parsed `format` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// The event name (`sched_switch`).
    pub name: String,
    /// The event's id (`PERF_TYPE_TRACEPOINT` config, and `common_type` in its records).
    pub id: u64,
    /// The fields before the blank line: `common_type`, `common_flags`, `common_preempt_count`, `common_pid`.
    pub common_fields: Vec<Field>,
    /// The event's own fields, in file order.
    pub fields: Vec<Field>,
    /// The text after `print fmt: ` (the format string and its arguments), kept as written.
    pub print_fmt: String,
}

impl EventFormat {
    /// Parses a `format` file. `what` names it in errors (`lock:contention_begin`, a path).
    pub fn parse(text: &str, what: &str) -> Result<EventFormat, Error> {
        let bad = |line: usize, reason: String| Error::Format {
            what: what.to_string(),
            line,
            reason,
        };
        let mut name = None;
        let mut id = None;
        let mut common_fields = Vec::new();
        let mut fields = Vec::new();
        let mut print_fmt: Option<String> = None;
        // The blank line after the common fields switches to the event's own fields; in files without one (old
        // kernels put none when there are no common fields), names decide.
        let mut in_common = true;
        let mut seen_format = false;
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            if let Some(p) = print_fmt.as_mut() {
                // The print fmt is the rest of the file: some carry a literal newline inside their format string
                // (ext4:ext4_fc_stats on 6.18).
                p.push('\n');
                p.push_str(raw);
                continue;
            }
            if let Some(rest) = raw.strip_prefix("name:") {
                name = Some(rest.trim().to_string());
            } else if let Some(rest) = raw.strip_prefix("ID:") {
                id = Some(
                    rest.trim()
                        .parse::<u64>()
                        .map_err(|_| bad(n, format!("ID {:?} is not a number", rest.trim())))?,
                );
            } else if raw.starts_with("format:") {
                seen_format = true;
            } else if let Some(rest) = raw.strip_prefix("print fmt:") {
                print_fmt = Some(rest.trim().to_string());
            } else if line.is_empty() {
                if seen_format && !common_fields.is_empty() {
                    in_common = false;
                }
            } else if line.starts_with("field") {
                let f = parse_field(line).map_err(|r| bad(n, r))?;
                if in_common && f.name.starts_with("common_") {
                    common_fields.push(f);
                } else {
                    in_common = false;
                    fields.push(f);
                }
            } else {
                return Err(bad(n, format!("unexpected line {line:?}")));
            }
        }
        Ok(EventFormat {
            name: name.ok_or_else(|| bad(0, "no `name:` line".into()))?,
            id: id.ok_or_else(|| bad(0, "no `ID:` line".into()))?,
            common_fields,
            fields,
            print_fmt: print_fmt
                .map(|p| p.trim_end().to_string())
                .ok_or_else(|| bad(0, "no `print fmt:` line".into()))?,
        })
    }

    /// A field by name, the event's own first, then the common ones.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields
            .iter()
            .chain(&self.common_fields)
            .find(|f| f.name == name)
    }
}

/// `field:TYPE NAME[N];\toffset:O;\tsize:S;\tsigned:0|1;`
fn parse_field(line: &str) -> Result<Field, String> {
    let mut parts = line.split(';').map(str::trim).filter(|p| !p.is_empty());
    let decl = parts.next().ok_or("empty field line")?;
    let decl = decl
        .strip_prefix("field special:")
        .or_else(|| decl.strip_prefix("field:"))
        .ok_or_else(|| format!("{decl:?} does not start with `field:`"))?
        .trim();
    let (mut offset, mut size, mut signed) = (None, None, false);
    for p in parts {
        let (k, v) = p
            .split_once(':')
            .ok_or_else(|| format!("{p:?} is not `key:value`"))?;
        let num = || {
            v.trim()
                .parse::<u32>()
                .map_err(|_| format!("{k} {:?} is not a number", v.trim()))
        };
        match k.trim() {
            "offset" => offset = Some(num()?),
            "size" => size = Some(num()?),
            "signed" => signed = num()? != 0,
            _ => {} // newer kernels may add keys; they do not change the layout
        }
    }
    let (mut data_loc, mut rel_loc) = (false, false);
    let mut decl = decl;
    if let Some(rest) = decl.strip_prefix("__data_loc ") {
        data_loc = true;
        decl = rest.trim();
    } else if let Some(rest) = decl.strip_prefix("__rel_loc ") {
        rel_loc = true;
        decl = rest.trim();
    }
    // The name is the last identifier, optionally followed by `[N]`.
    // `name[]`: a flexible array at the end of the record (ftrace's own events); its length is the rest.
    let (decl, flexible) = match decl.strip_suffix("[]") {
        Some(d) => (d.trim_end(), true),
        None => (decl, false),
    };
    let (head, array_len) = match decl.strip_suffix(']') {
        Some(d) if !d.ends_with('[') => {
            let open = d
                .rfind('[')
                .ok_or_else(|| format!("unbalanced `]` in {decl:?}"))?;
            let len = d[open + 1..].trim();
            // `[N]` with a macro-expanded length (`[TASK_COMM_LEN]`) on old kernels: the size still says it.
            (&d[..open], Some(len.parse::<u32>().unwrap_or(0)))
        }
        _ => (decl, None),
    };
    let split = head
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let name = &head[split..];
    let type_name = head[..split].trim();
    if name.is_empty() || type_name.is_empty() {
        return Err(format!("no type and name in {decl:?}"));
    }
    let size = size.ok_or_else(|| format!("field {name} has no size"))?;
    let array_len = match array_len {
        _ if flexible => Some(0),
        Some(0) => Some(size),
        n => n,
    };
    Ok(Field {
        type_name: type_name.to_string(),
        name: name.to_string(),
        offset: offset.ok_or_else(|| format!("field {name} has no offset"))?,
        size,
        signed,
        array_len,
        data_loc,
        rel_loc,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declaration_splits_into_type_name_and_array() {
        let f = parse_field("field:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;").unwrap();
        assert_eq!(
            (
                f.type_name.as_str(),
                f.name.as_str(),
                f.array_len,
                f.is_string()
            ),
            ("char", "prev_comm", Some(16), true)
        );
        let f =
            parse_field("field:__data_loc char[] str;\toffset:28;\tsize:4;\tsigned:1;").unwrap();
        assert!(f.data_loc && f.is_string() && f.array_len.is_none());
        assert_eq!((f.type_name.as_str(), f.name.as_str()), ("char[]", "str"));
        let f = parse_field("field:void * lock_addr;\toffset:8;\tsize:8;\tsigned:0;").unwrap();
        assert!(f.is_pointer() && !f.is_string());
        let f = parse_field("field special:struct x *p;\toffset:8;\tsize:8;").unwrap();
        assert_eq!((f.type_name.as_str(), f.signed), ("struct x *", false));
    }

    #[test]
    fn damaged_lines_are_errors_naming_the_line() {
        for (text, want) in [
            ("name: x\nID: y\n", "line 2"),
            (
                "name: x\nID: 1\nformat:\n\tfield:int a;\tsize:4;\n",
                "no offset",
            ),
            (
                "name: x\nID: 1\nformat:\n\tfield:int a;\toffset:zz;\tsize:4;\n",
                "not a number",
            ),
            (
                "name: x\nID: 1\nformat:\n\tfield:a;\toffset:0;\tsize:4;\n",
                "no type and name",
            ),
            ("name: x\nID: 1\nformat:\n\tgarbage\n", "unexpected line"),
            ("name: x\nID: 1\nformat:\n", "print fmt"),
            ("", "name:"),
            (
                "name: x\nID: 1\nformat:\n\tfield:int a];\toffset:0;\tsize:4;\n",
                "unbalanced",
            ),
        ] {
            let err = EventFormat::parse(text, "t:x").unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
