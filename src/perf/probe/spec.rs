//! perf probe's SPEC syntax (tools/perf/util/probe-event.c, `parse_perf_probe_command`):
//!
//! ```text
//! [[GROUP:]EVENT=]FUNC[@SRC][:RELLINE|+OFFS|%return|;PATTERN] [ARG ...]
//! [[GROUP:]EVENT=]SRC:ABSLINE [ARG ...]        SRC;PATTERN
//! ARG: [NAME=]VAR[->MEMBER|.MEMBER]...[:TYPE] | $vars | $params | $retval | a raw tracefs fetcharg
//! ```
//!
//! The point is a file (not a function) exactly when perf thinks so: it holds none of `+@%`, holds one of `:;`,
//! and has a `.` before that `:`/`;`.

use super::Error;

/// Where a probe goes, as the user wrote it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Point {
    /// `FUNC` (absent for `SRC:LINE`).
    pub function: Option<String>,
    /// `@SRC` or the `SRC` of `SRC:LINE` (matched against the tail of DWARF file names).
    pub file: Option<String>,
    /// Line: relative to the function's declaration line with a function, absolute without.
    pub line: Option<u64>,
    /// `+OFFS` bytes from the function's entry.
    pub offset: Option<u64>,
    /// `;PATTERN`: lines whose source text matches this glob.
    pub lazy: Option<String>,
    /// `%return`.
    pub retprobe: bool,
    /// `--no-inlines`: the function's inlined copies are left out (perf's probe_conf.no_inlines).
    pub no_inlines: bool,
    /// `--max-probes N`: more places than this is an error (perf's default is 128).
    pub max_probes: Option<usize>,
}

/// One argument of a probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A variable, with member accesses and a type.
    Var(VarArg),
    /// `$vars`: every local variable and parameter whose location can be fetched there.
    Vars,
    /// `$params`: every parameter whose location can be fetched there.
    Params,
    /// `$retval` on a return probe.
    Retval {
        /// `NAME=` given by the user.
        name: Option<String>,
        /// `:TYPE` given by the user.
        ty: Option<String>,
    },
    /// A fetcharg in tracefs syntax (`%ax`, `+8(%sp):u32`, `@+0x4010`), passed through as perf does.
    Raw {
        /// `NAME=` given by the user.
        name: Option<String>,
        /// The fetcharg text, type included.
        text: String,
    },
}

/// `var->member.member:type`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarArg {
    /// `NAME=` given by the user.
    pub name: Option<String>,
    /// The variable.
    pub var: String,
    /// Member accesses, in order.
    pub fields: Vec<Field>,
    /// `:TYPE` given by the user (`s8..s64`, `u8..u64`, `x8..x64`, `string`, ...).
    pub ty: Option<String>,
}

/// One member access.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// `->` (through a pointer) rather than `.`.
    pub arrow: bool,
    /// The member's name.
    pub name: String,
}

impl VarArg {
    /// The argument as the user wrote it (without `NAME=`), as perf prints it in `-l` and messages.
    pub fn text(&self) -> String {
        let mut s = self.var.clone();
        for f in &self.fields {
            s.push_str(if f.arrow { "->" } else { "." });
            s.push_str(&f.name);
        }
        if let Some(ty) = &self.ty {
            s.push(':');
            s.push_str(ty);
        }
        s
    }

    /// The name of the fetcharg in tracefs: the user's `NAME=`, else the last member, else the variable with its
    /// type (`name:string` → `name_string`), as perf names it.
    pub fn trace_name(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        if let Some(f) = self.fields.last() {
            return f.name.clone();
        }
        match &self.ty {
            Some(ty) => format!("{}_{}", self.var, ty),
            None => self.var.clone(),
        }
    }
}

/// A parsed SPEC.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spec {
    /// `GROUP:` of `GROUP:EVENT=`.
    pub group: Option<String>,
    /// `EVENT` of `EVENT=`.
    pub event: Option<String>,
    /// Where.
    pub point: Point,
    /// What.
    pub args: Vec<Arg>,
    /// The SPEC as given, for messages.
    pub text: String,
}

fn bad(spec: &str, reason: impl Into<String>) -> Error {
    Error::Spec {
        spec: spec.to_string(),
        reason: reason.into(),
    }
}

fn is_c_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses one SPEC (point and arguments, separated by blanks; several SPEC words may come as separate argv items).
pub fn parse(text: &str) -> Result<Spec, Error> {
    let mut words = text.split_whitespace();
    let Some(point_word) = words.next() else {
        return Err(bad(text, "empty probe definition"));
    };
    let mut spec = Spec {
        text: text.to_string(),
        ..Spec::default()
    };
    let mut rest = point_word;
    // `GROUP:EVENT=` comes first when the first of `;=@+%` is `=`.
    if let Some(pos) = rest.find([';', '=', '@', '+', '%']) {
        if rest.as_bytes()[pos] == b'=' {
            let name = &rest[..pos];
            rest = &rest[pos + 1..];
            let (group, event) = match name.split_once(':') {
                Some((g, e)) => (Some(g), e),
                None => (None, name),
            };
            if let Some(g) = group {
                if !is_c_ident(g) {
                    return Err(bad(text, format!("group name `{g}` is not a C identifier")));
                }
                spec.group = Some(g.to_string());
            }
            if !is_c_ident(event) {
                return Err(bad(
                    text,
                    format!("event name `{event}` is not a C identifier"),
                ));
            }
            spec.event = Some(event.to_string());
        }
    }
    spec.point = parse_point(text, rest)?;
    for word in words {
        spec.args.push(parse_arg(text, word)?);
    }
    if spec.args.iter().any(|a| matches!(a, Arg::Retval { .. })) && !spec.point.retprobe {
        return Err(bad(
            text,
            "$retval is only available on a return probe (FUNC%return)",
        ));
    }
    Ok(spec)
}

fn parse_point(spec: &str, arg: &str) -> Result<Point, Error> {
    let mut pp = Point::default();
    let file_spec = !arg.contains(['+', '@', '%'])
        && arg
            .find([';', ':'])
            .is_some_and(|pos| arg[..pos].contains('.'));
    let (head, mut tail) = match arg.find([';', ':', '+', '@', '%']) {
        Some(pos) => (&arg[..pos], Some(&arg[pos..])),
        None => (arg, None),
    };
    if !head.is_empty() {
        if file_spec {
            pp.file = Some(head.to_string());
        } else {
            pp.function = Some(head.to_string());
        }
    }
    while let Some(t) = tail {
        let c = t.as_bytes()[0];
        let body = &t[1..];
        if c == b';' {
            // A lazy pattern is the last part and may itself hold any character.
            pp.lazy = Some(body.to_string());
            break;
        }
        let (part, next) = match body.find([';', ':', '+', '@', '%']) {
            Some(pos) => (&body[..pos], Some(&body[pos..])),
            None => (body, None),
        };
        tail = next;
        match c {
            b':' => {
                pp.line = Some(part.parse().map_err(|_| {
                    bad(
                        spec,
                        format!("line number `{part}` is not a decimal number"),
                    )
                })?)
            }
            b'+' => {
                let n = match part.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16),
                    None => part.parse(),
                };
                pp.offset =
                    Some(n.map_err(|_| bad(spec, format!("offset `{part}` is not a number")))?);
            }
            b'@' => {
                if pp.file.is_some() {
                    return Err(bad(spec, "SRC@SRC is not allowed"));
                }
                pp.file = Some(part.to_string());
            }
            b'%' => {
                if part != "return" {
                    return Err(bad(
                        spec,
                        format!("%{part} is not supported (only %return)"),
                    ));
                }
                pp.retprobe = true;
            }
            _ => unreachable!("split at one of ;:+@%"),
        }
    }
    // perf keeps the line as a number where 0 means none: FUNC:0 is FUNC's entry (the line `-L FUNC` numbers 0,
    // the declaration, which has no code of its own).
    if pp.function.is_some() && pp.line == Some(0) {
        pp.line = None;
    }
    if pp.lazy.is_some() && pp.line.is_some() {
        return Err(bad(spec, "a lazy pattern can't be used with a line number"));
    }
    if pp.lazy.is_some() && pp.offset.is_some() {
        return Err(bad(spec, "a lazy pattern can't be used with an offset"));
    }
    if pp.line.is_some() && pp.offset.is_some() {
        return Err(bad(spec, "an offset can't be used with a line number"));
    }
    if pp.line.is_none() && pp.lazy.is_none() && pp.file.is_some() && pp.function.is_none() {
        return Err(bad(
            spec,
            "a source file needs a line number or a lazy pattern (SRC:LINE)",
        ));
    }
    if pp.offset.is_some() && pp.function.is_none() {
        return Err(bad(spec, "an offset needs a function (FUNC+OFFS)"));
    }
    if (pp.offset.is_some() || pp.line.is_some() || pp.lazy.is_some()) && pp.retprobe {
        return Err(bad(
            spec,
            "%return can't be used with a line, an offset or a lazy pattern",
        ));
    }
    if pp.function.is_none() && pp.file.is_none() {
        return Err(bad(spec, "no function or source file to probe"));
    }
    Ok(pp)
}

fn parse_arg(spec: &str, word: &str) -> Result<Arg, Error> {
    // `NAME=` before the argument (not the `=` inside a raw fetcharg such as `+0(%di)`, which has none).
    let (name, body) = match word.split_once('=') {
        Some((n, b)) if is_c_ident(n) => (Some(n.to_string()), b),
        _ => (None, word),
    };
    match body {
        "$vars" | "$params" if name.is_some() => {
            return Err(bad(spec, format!("{body} can't be renamed")));
        }
        "$vars" => return Ok(Arg::Vars),
        "$params" => return Ok(Arg::Params),
        _ => {}
    }
    if let Some(ty) = body.strip_prefix("$retval") {
        let ty = match ty.strip_prefix(':') {
            Some(t) => Some(t.to_string()),
            None if ty.is_empty() => None,
            None => return Err(bad(spec, format!("unknown special variable `{body}`"))),
        };
        return Ok(Arg::Retval { name, ty });
    }
    let first = body.chars().next().unwrap_or(' ');
    if !(first.is_ascii_alphabetic() || first == '_') {
        if first == '$' {
            return Err(bad(
                spec,
                format!("unknown special variable `{body}` ($vars, $params, $retval)"),
            ));
        }
        return Ok(Arg::Raw {
            name,
            text: body.to_string(),
        });
    }
    // VAR[->M|.M]...[:TYPE]
    let (path, ty) = match body.rsplit_once(':') {
        Some((p, t)) => (p, Some(t.to_string())),
        None => (body, None),
    };
    if let Some(t) = &ty {
        check_type(spec, t)?;
    }
    let mut fields = Vec::new();
    let end = path.find(['-', '.', '[']).unwrap_or(path.len());
    let var = &path[..end];
    let mut rest = &path[end..];
    while !rest.is_empty() {
        let (arrow, after) = if let Some(a) = rest.strip_prefix("->") {
            (true, a)
        } else if let Some(a) = rest.strip_prefix('.') {
            (false, a)
        } else if rest.starts_with('[') {
            return Err(bad(
                spec,
                format!("array index in `{body}` is not supported; use a member or a raw fetcharg"),
            ));
        } else {
            return Err(bad(
                spec,
                format!("can't parse `{rest}` in `{body}` (expected ->MEMBER or .MEMBER)"),
            ));
        };
        let end = after.find(['-', '.', '[']).unwrap_or(after.len());
        let member = &after[..end];
        if !is_c_ident(member) {
            return Err(bad(
                spec,
                format!("member `{member}` in `{body}` is not a C identifier"),
            ));
        }
        fields.push(Field {
            arrow,
            name: member.to_string(),
        });
        rest = &after[end..];
    }
    if !is_c_ident(var) {
        return Err(bad(spec, format!("`{var}` is not a variable name")));
    }
    Ok(Arg::Var(VarArg {
        name,
        var: var.to_string(),
        fields,
        ty,
    }))
}

/// The types tracefs fetchargs take (Documentation/trace/kprobetrace.rst), plus perf's `s`/`u`/`x` (signedness
/// or hex at the variable's own size).
fn check_type(spec: &str, ty: &str) -> Result<(), Error> {
    let ok = match ty {
        "string" | "ustring" | "s" | "u" | "x" => true,
        _ => {
            let (prefix, bits) = ty.split_at(1);
            matches!(prefix, "s" | "u" | "x") && matches!(bits, "8" | "16" | "32" | "64")
        }
    };
    if ok {
        Ok(())
    } else {
        Err(bad(
            spec,
            format!("unknown type `{ty}` (s8..s64, u8..u64, x8..x64, string, or s/u/x)"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(name: Option<&str>, v: &str, fields: &[(bool, &str)], ty: Option<&str>) -> Arg {
        Arg::Var(VarArg {
            name: name.map(String::from),
            var: v.into(),
            fields: fields
                .iter()
                .map(|(arrow, n)| Field {
                    arrow: *arrow,
                    name: (*n).into(),
                })
                .collect(),
            ty: ty.map(String::from),
        })
    }

    #[test]
    fn points_as_perf_reads_them() {
        // Line 0 of a function is no line, as in perf: its entry.
        let s = parse("work:0 a").unwrap();
        assert_eq!(
            (s.point.function.as_deref(), s.point.line),
            (Some("work"), None)
        );
        let s = parse("work:4 a i acc").unwrap();
        assert_eq!(s.point.function.as_deref(), Some("work"));
        assert_eq!(s.point.line, Some(4));
        assert_eq!(s.args.len(), 3);

        let s = parse("grp:ev=show@src/prog.c:2").unwrap();
        assert_eq!(
            (s.group.as_deref(), s.event.as_deref()),
            (Some("grp"), Some("ev"))
        );
        assert_eq!(s.point.file.as_deref(), Some("src/prog.c"));
        assert_eq!(
            (s.point.function.as_deref(), s.point.line),
            (Some("show"), Some(2))
        );

        let s = parse("prog.c:27").unwrap();
        assert_eq!(
            (s.point.file.as_deref(), s.point.function, s.point.line),
            (Some("prog.c"), None, Some(27))
        );

        let s = parse("work%return $retval").unwrap();
        assert!(s.point.retprobe);
        assert_eq!(
            s.args,
            vec![Arg::Retval {
                name: None,
                ty: None
            }]
        );

        let s = parse("work;acc +=*").unwrap();
        assert_eq!(s.point.lazy.as_deref(), Some("acc"));
        let s = parse("work+0x10").unwrap();
        assert_eq!(s.point.offset, Some(16));
    }

    #[test]
    fn arguments() {
        let s =
            parse("show p->next->x lbl=p->label:string name:string q.y:x64 $vars %di +8(%sp):u32")
                .unwrap();
        assert_eq!(
            s.args,
            vec![
                var(None, "p", &[(true, "next"), (true, "x")], None),
                var(Some("lbl"), "p", &[(true, "label")], Some("string")),
                var(None, "name", &[], Some("string")),
                var(None, "q", &[(false, "y")], Some("x64")),
                Arg::Vars,
                Arg::Raw {
                    name: None,
                    text: "%di".into()
                },
                Arg::Raw {
                    name: None,
                    text: "+8(%sp):u32".into()
                },
            ]
        );
        let Arg::Var(v) = &s.args[0] else {
            unreachable!()
        };
        assert_eq!(
            (v.trace_name(), v.text()),
            ("x".into(), "p->next->x".into())
        );
        let Arg::Var(v) = &s.args[2] else {
            unreachable!()
        };
        assert_eq!(v.trace_name(), "name_string");
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        for (spec, reason) in [
            ("work:4x", "line number `4x` is not a decimal number"),
            (
                "work:4%return",
                "%return can't be used with a line, an offset or a lazy pattern",
            ),
            ("GRP:=work", "event name `` is not a C identifier"),
            ("work%entry", "%entry is not supported (only %return)"),
            (
                "work a:s3",
                "unknown type `s3` (s8..s64, u8..u64, x8..x64, string, or s/u/x)",
            ),
            (
                "work $retval",
                "$retval is only available on a return probe (FUNC%return)",
            ),
            ("work:3+4", "an offset can't be used with a line number"),
            ("1ev=work", "event name `1ev` is not a C identifier"),
        ] {
            match parse(spec) {
                Err(Error::Spec { reason: r, .. }) => assert_eq!(r, reason, "{spec}"),
                other => panic!("{spec}: {other:?}"),
            }
        }
    }
}
