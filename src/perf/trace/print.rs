//! Rendering an event's `print fmt:` over a record, as `perf script` prints the trace line (perf hands this to
//! libtraceevent's `tep_print_event`).
//!
//! Supported: the `"format", arg, ...` form with C-like arguments: `REC->field`, integer and string literals,
//! casts, unary `- ~ !`, the binary operators of C, `?:`, and the helpers `__get_str`, `__get_rel_str`,
//! `__print_flags`, `__print_symbolic`. Conversions: `%d %i %u %x %X %o %c %s %p %%` with flags, width, precision
//! and the length modifiers `hh h l ll L z j t`.
//!
//! Anything else (`__print_hex`, `__get_dynamic_array`, `%pS`-style pointer extensions, `sizeof`) makes the event
//! print in perf's fallback for a print fmt libtraceevent could not parse: `[FAILED TO PARSE]` followed by
//! ` name=value` for every field (libtraceevent `tep_print_fields`: signed ints in decimal, `long` types and
//! pointers in hex, strings as text, other arrays as `ARRAY[xx, yy]`). libtraceevent parses more than this module,
//! so for those events bport's line differs from perf's; the fields are all there.

use object::endian::Endianness;

use super::decode::{self, Value};
use super::format::{EventFormat, Field};

/// A parsed print fmt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrintFmt {
    /// The format string with C escapes resolved.
    format: Vec<u8>,
    args: Vec<Expr>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Expr {
    Num(u64),
    Str(Vec<u8>),
    Field(String),
    Unary(u8, Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast {
        bits: u32,
        signed: bool,
        inner: Box<Expr>,
    },
    Call(String, Vec<Expr>),
    Brace(Vec<Expr>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Num(u64),
    Str(Vec<u8>),
    Punct(&'static str),
}

const PUNCTS: [&str; 28] = [
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "{", "}", "[", "]", ",", "?",
    ":", "+", "-", "*", "/", "%", "<", ">", "&", "|", "^",
];
const PUNCTS1: [&str; 3] = ["~", "!", "."];

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    'outer: while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' {
            let mut v = Vec::new();
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err("unterminated string".into()),
                    Some(b'"') => break,
                    Some(b'\\') => {
                        i += 1;
                        v.push(match b.get(i) {
                            Some(b'n') => b'\n',
                            Some(b't') => b'\t',
                            Some(b'0') => 0,
                            Some(&o) => o,
                            None => return Err("unterminated string".into()),
                        });
                    }
                    Some(&o) => v.push(o),
                }
                i += 1;
            }
            i += 1;
            // Adjacent literals concatenate, as in C.
            if let Some(Tok::Str(prev)) = out.last_mut() {
                prev.extend_from_slice(&v);
            } else {
                out.push(Tok::Str(v));
            }
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            let text = s[start..i].trim_end_matches(['u', 'U', 'l', 'L']);
            let v = if let Some(h) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
                u64::from_str_radix(h, 16)
            } else if text.len() > 1 && text.starts_with('0') {
                u64::from_str_radix(&text[1..], 8)
            } else {
                text.parse()
            };
            out.push(Tok::Num(
                v.map_err(|_| format!("bad number {:?}", &s[start..i]))?,
            ));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(s[start..i].to_string()));
        } else if c == b'\'' && b.get(i + 2) == Some(&b'\'') {
            out.push(Tok::Num(u64::from(b[i + 1])));
            i += 3;
        } else {
            for p in PUNCTS.iter().chain(&PUNCTS1) {
                if s[i..].starts_with(p) {
                    out.push(Tok::Punct(p));
                    i += p.len();
                    continue 'outer;
                }
            }
            return Err(format!("unexpected character {:?}", c as char));
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

const TYPE_WORDS: [&str; 22] = [
    "unsigned", "signed", "int", "long", "short", "char", "void", "const", "struct", "u8", "u16",
    "u32", "u64", "s8", "s16", "s32", "s64", "size_t", "pid_t", "bool", "__u64", "__u32",
];

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }
    fn eat(&mut self, p: &str) -> bool {
        let yes = self.is(p);
        if yes {
            self.pos += 1;
        }
        yes
    }
    fn expect(&mut self, p: &str) -> Result<(), String> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(format!("expected `{p}` at {:?}", self.peek()))
        }
    }

    fn expr(&mut self) -> Result<Expr, String> {
        let c = self.binary(0)?;
        if self.eat("?") {
            let a = self.expr()?;
            self.expect(":")?;
            let b = self.expr()?;
            return Ok(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)));
        }
        Ok(c)
    }

    fn binary(&mut self, min: u8) -> Result<Expr, String> {
        let mut lhs = self.unary()?;
        while let Some(Tok::Punct(op)) = self.peek() {
            let op = *op;
            let prec = match op {
                "||" => 1,
                "&&" => 2,
                "|" => 3,
                "^" => 4,
                "&" => 5,
                "==" | "!=" => 6,
                "<" | ">" | "<=" | ">=" => 7,
                "<<" | ">>" => 8,
                "+" | "-" => 9,
                "*" | "/" | "%" => 10,
                _ => break,
            };
            if prec < min {
                break;
            }
            self.pos += 1;
            let rhs = self.binary(prec + 1)?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        for (p, c) in [("-", b'-'), ("~", b'~'), ("!", b'!')] {
            if self.eat(p) {
                return Ok(Expr::Unary(c, Box::new(self.unary()?)));
            }
        }
        if self.is("(") {
            if let Some((bits, signed, end)) = self.cast_at(self.pos) {
                self.pos = end;
                let inner = self.unary()?;
                return Ok(Expr::Cast {
                    bits,
                    signed,
                    inner: Box::new(inner),
                });
            }
        }
        self.primary()
    }

    /// `(type words and *)` at `at`: the cast's width, signedness and the position after `)`.
    fn cast_at(&self, at: usize) -> Option<(u32, bool, usize)> {
        let mut i = at + 1;
        let mut words = Vec::new();
        let mut pointer = false;
        loop {
            match self.toks.get(i)? {
                Tok::Ident(w) => words.push(w.as_str()),
                Tok::Punct("*") => pointer = true,
                Tok::Punct(")") => break,
                _ => return None,
            }
            i += 1;
        }
        let first = *words.first()?;
        if !TYPE_WORDS.contains(&first) && !first.ends_with("_t") {
            return None;
        }
        let has = |w: &str| words.contains(&w);
        let bits =
            if pointer || has("long") || words.iter().any(|w| w.ends_with("64")) || has("size_t") {
                64
            } else if has("char") || words.iter().any(|w| w.ends_with('8')) || has("bool") {
                8
            } else if has("short") || words.iter().any(|w| w.ends_with("16")) {
                16
            } else {
                32
            };
        let signed = !pointer
            && !has("unsigned")
            && !first.starts_with('u')
            && !first.starts_with("__u")
            && first != "size_t"
            && first != "bool";
        Some((bits, signed, i + 1))
    }

    fn primary(&mut self) -> Result<Expr, String> {
        let tok = self.peek().cloned().ok_or("unexpected end of arguments")?;
        self.pos += 1;
        match tok {
            Tok::Num(n) => Ok(Expr::Num(n)),
            Tok::Str(s) => Ok(Expr::Str(s)),
            Tok::Punct("(") => {
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Punct("{") => {
                let mut items = Vec::new();
                while !self.eat("}") {
                    items.push(self.expr()?);
                    if !self.eat(",") {
                        self.expect("}")?;
                        break;
                    }
                }
                Ok(Expr::Brace(items))
            }
            Tok::Ident(w) if w == "REC" => {
                if !self.eat("->") {
                    self.expect(".")?;
                }
                match self.peek().cloned() {
                    Some(Tok::Ident(f)) => {
                        self.pos += 1;
                        Ok(Expr::Field(f))
                    }
                    t => Err(format!("expected a field name after REC->, found {t:?}")),
                }
            }
            Tok::Ident(w) if self.is("(") => {
                self.pos += 1;
                let mut args = Vec::new();
                if !self.eat(")") {
                    loop {
                        args.push(self.expr()?);
                        if self.eat(")") {
                            break;
                        }
                        self.expect(",")?;
                    }
                }
                Ok(Expr::Call(w, args))
            }
            // A bare name is a field, as in `__get_str(filename)`.
            Tok::Ident(w) => Ok(Expr::Field(w)),
            t => Err(format!("unsupported token {t:?}")),
        }
    }
}

impl PrintFmt {
    /// Parses the text after `print fmt: `.
    pub fn parse(text: &str) -> Result<PrintFmt, String> {
        let toks = tokenize(text)?;
        let mut p = Parser { toks, pos: 0 };
        let format = match p.peek() {
            Some(Tok::Str(s)) => s.clone(),
            _ => return Err("print fmt does not start with a string".into()),
        };
        p.pos += 1;
        let mut args = Vec::new();
        while p.eat(",") {
            args.push(p.expr()?);
        }
        if p.pos != p.toks.len() {
            return Err(format!("trailing tokens at {:?}", p.peek()));
        }
        Ok(PrintFmt { format, args })
    }

    /// Renders over one record, or says why it cannot (the caller then prints the fallback).
    pub fn render(
        &self,
        event: &EventFormat,
        raw: &[u8],
        endian: Endianness,
    ) -> Result<String, String> {
        let ctx = Ctx { event, raw, endian };
        let f = &self.format;
        let mut out = Vec::new();
        let mut args = self.args.iter();
        let mut i = 0;
        while i < f.len() {
            if f[i] != b'%' {
                out.push(f[i]);
                i += 1;
                continue;
            }
            i += 1;
            if f.get(i) == Some(&b'%') {
                out.push(b'%');
                i += 1;
                continue;
            }
            let mut star = || -> Result<usize, String> {
                let a = args.next().ok_or("too few arguments for `*`")?;
                Ok(ctx.eval(a)?.num() as usize)
            };
            let spec = Spec::parse(f, &mut i, &mut star)?;
            let bits = length_bits(f, &mut i);
            let conv = *f.get(i).ok_or("format ends inside a conversion")?;
            i += 1;
            if conv == b'p' && f.get(i).is_some_and(|c| c.is_ascii_alphanumeric()) {
                return Err(format!("pointer extension %p{}", f[i] as char));
            }
            let arg = args.next().ok_or("too few arguments")?;
            let v = ctx.eval(arg)?;
            out.extend(spec.convert(conv, bits, &v)?);
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

fn pad_digits(digits: &mut Vec<u8>, precision: Option<usize>) {
    if let Some(p) = precision {
        if digits.len() < p {
            let mut v = vec![b'0'; p - digits.len()];
            v.append(digits);
            *digits = v;
        }
    }
}

#[derive(Default)]
struct Spec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    alt: bool,
    width: usize,
    precision: Option<usize>,
}

impl Spec {
    /// Reads a conversion's flags, width and precision from `f` at `*i` (after the `%`), moving `*i` past
    /// them; `star` takes the next argument as a `*` width or precision.
    fn parse(
        f: &[u8],
        i: &mut usize,
        star: &mut dyn FnMut() -> Result<usize, String>,
    ) -> Result<Spec, String> {
        let mut spec = Spec::default();
        while let Some(&c) = f.get(*i) {
            match c {
                b'-' => spec.left = true,
                b'0' => spec.zero = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                _ => break,
            }
            *i += 1;
        }
        if f.get(*i) == Some(&b'*') {
            spec.width = star()?;
            *i += 1;
        }
        while let Some(d) = f.get(*i).filter(|c| c.is_ascii_digit()) {
            spec.width = spec.width * 10 + usize::from(d - b'0');
            *i += 1;
        }
        if f.get(*i) == Some(&b'.') {
            *i += 1;
            let mut p = 0;
            if f.get(*i) == Some(&b'*') {
                p = star()?;
                *i += 1;
            }
            while let Some(d) = f.get(*i).filter(|c| c.is_ascii_digit()) {
                p = p * 10 + usize::from(d - b'0');
                *i += 1;
            }
            spec.precision = Some(p);
        }
        Ok(spec)
    }

    /// The text of conversion `conv` of a value `bits` wide (its length modifier's) under this spec, padded.
    fn convert(&self, conv: u8, bits: u32, v: &V) -> Result<Vec<u8>, String> {
        let text = match conv {
            b's' => match v {
                V::Str(s) => self
                    .precision
                    .map_or(s.clone(), |p| s[..p.min(s.len())].to_vec()),
                V::Int(..) => return Err("%s of a number".into()),
            },
            b'c' => vec![v.num() as u8],
            b'd' | b'i' => {
                let n = truncate(v.num(), bits, true) as i64;
                let mut digits = n.unsigned_abs().to_string().into_bytes();
                pad_digits(&mut digits, self.precision);
                let sign: &[u8] = if n < 0 {
                    b"-"
                } else if self.plus {
                    b"+"
                } else if self.space {
                    b" "
                } else {
                    b""
                };
                return Ok(self.pad(sign, &digits));
            }
            b'u' | b'x' | b'X' | b'o' | b'p' => {
                let n = if conv == b'p' {
                    v.num()
                } else {
                    truncate(v.num(), bits, false)
                };
                let mut digits = match conv {
                    b'u' => n.to_string(),
                    b'x' | b'p' => format!("{n:x}"),
                    b'X' => format!("{n:X}"),
                    _ => format!("{n:o}"),
                }
                .into_bytes();
                pad_digits(&mut digits, self.precision);
                // libtraceevent turns %p into 0x%lx (glibc would print (nil) for 0).
                let prefix: &[u8] = match conv {
                    b'p' => b"0x",
                    b'x' if self.alt && n != 0 => b"0x",
                    b'X' if self.alt && n != 0 => b"0X",
                    _ => b"",
                };
                return Ok(self.pad(prefix, &digits));
            }
            c => return Err(format!("unsupported conversion %{}", c as char)),
        };
        Ok(self.pad(b"", &text))
    }

    fn pad(&self, prefix: &[u8], body: &[u8]) -> Vec<u8> {
        let len = prefix.len() + body.len();
        let fill = self.width.saturating_sub(len);
        let mut v = Vec::with_capacity(len + fill);
        if self.left {
            v.extend_from_slice(prefix);
            v.extend_from_slice(body);
            v.resize(v.len() + fill, b' ');
        } else if self.zero && self.precision.is_none() {
            v.extend_from_slice(prefix);
            v.resize(v.len() + fill, b'0');
            v.extend_from_slice(body);
        } else {
            v.resize(fill, b' ');
            v.extend_from_slice(prefix);
            v.extend_from_slice(body);
        }
        v
    }
}

/// The width in bits a conversion's length modifier (`h`, `hh`, `l`, `ll`, `z`, ...) gives its argument, read
/// from `f` at `*i`, moving `*i` past it; 32 without one.
fn length_bits(f: &[u8], i: &mut usize) -> u32 {
    let mut bits = 32;
    while let Some(&c) = f.get(*i) {
        match c {
            b'h' => bits = if bits == 16 { 8 } else { 16 },
            b'l' | b'L' | b'z' | b'j' | b't' | b'q' => bits = 64,
            _ => break,
        }
        *i += 1;
    }
    bits
}

fn truncate(v: u64, bits: u32, signed: bool) -> u64 {
    if bits >= 64 {
        return v;
    }
    let shift = 64 - bits;
    if signed {
        (((v << shift) as i64) >> shift) as u64
    } else {
        (v << shift) >> shift
    }
}

#[derive(Clone, Debug)]
enum V {
    /// The 64-bit pattern and whether C would treat it as signed.
    Int(u64, bool),
    Str(Vec<u8>),
}

impl V {
    fn num(&self) -> u64 {
        match self {
            V::Int(v, _) => *v,
            V::Str(_) => 0,
        }
    }
}

struct Ctx<'a> {
    event: &'a EventFormat,
    raw: &'a [u8],
    endian: Endianness,
}

impl Ctx<'_> {
    fn field(&self, name: &str) -> Result<&Field, String> {
        self.event
            .field(name)
            .ok_or_else(|| format!("no field {name:?} in {}", self.event.name))
    }

    fn eval(&self, e: &Expr) -> Result<V, String> {
        Ok(match e {
            Expr::Num(n) => V::Int(*n, false),
            Expr::Str(s) => V::Str(s.clone()),
            Expr::Field(name) => {
                let f = self.field(name)?;
                match decode::decode(f, self.raw, self.endian).map_err(|e| e.to_string())? {
                    Value::Int(v) => V::Int(v as u64, true),
                    Value::UInt(v) => V::Int(v, false),
                    Value::Str(s) => V::Str(s),
                    // An array used as a value is its address in C; libtraceevent prints its offset. Not needed
                    // by the events seen, so it is a fallback case.
                    Value::Array(_) => return Err(format!("array field {name} used as a value")),
                }
            }
            Expr::Unary(op, inner) => {
                let (v, s) = self.int(inner)?;
                match op {
                    b'-' => V::Int(v.wrapping_neg(), true),
                    b'~' => V::Int(!v, s),
                    _ => V::Int(u64::from(v == 0), true),
                }
            }
            Expr::Cast {
                bits,
                signed,
                inner,
            } => {
                let (v, _) = self.int(inner)?;
                V::Int(truncate(v, *bits, *signed), *signed)
            }
            Expr::Cond(c, a, b) => {
                if self.int(c)?.0 != 0 {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Expr::Binary(op, a, b) => {
                let (x, sx) = self.int(a)?;
                let (y, sy) = self.int(b)?;
                let signed = sx && sy;
                let cmp = |o: std::cmp::Ordering| -> std::cmp::Ordering { o };
                let ord = if signed {
                    cmp((x as i64).cmp(&(y as i64)))
                } else {
                    x.cmp(&y)
                };
                use std::cmp::Ordering::*;
                let r = match *op {
                    "+" => x.wrapping_add(y),
                    "-" => x.wrapping_sub(y),
                    "*" => x.wrapping_mul(y),
                    "/" | "%" if y == 0 => return Err("division by zero".into()),
                    "/" if signed => (x as i64).wrapping_div(y as i64) as u64,
                    "/" => x / y,
                    "%" if signed => (x as i64).wrapping_rem(y as i64) as u64,
                    "%" => x % y,
                    "<<" => x.wrapping_shl(y as u32),
                    ">>" if sx => ((x as i64).wrapping_shr(y as u32)) as u64,
                    ">>" => x.wrapping_shr(y as u32),
                    "&" => x & y,
                    "|" => x | y,
                    "^" => x ^ y,
                    "&&" => u64::from(x != 0 && y != 0),
                    "||" => u64::from(x != 0 || y != 0),
                    "==" => u64::from(x == y),
                    "!=" => u64::from(x != y),
                    "<" => u64::from(ord == Less),
                    ">" => u64::from(ord == Greater),
                    "<=" => u64::from(ord != Greater),
                    ">=" => u64::from(ord != Less),
                    o => return Err(format!("operator {o}")),
                };
                V::Int(r, signed)
            }
            Expr::Call(name, args) => self.call(name, args)?,
            Expr::Brace(_) => {
                return Err("a { } list outside __print_flags/__print_symbolic".into())
            }
        })
    }

    fn int(&self, e: &Expr) -> Result<(u64, bool), String> {
        match self.eval(e)? {
            V::Int(v, s) => Ok((v, s)),
            V::Str(_) => Err("a string used as a number".into()),
        }
    }

    fn pairs(&self, items: &[Expr]) -> Result<Vec<(u64, Vec<u8>)>, String> {
        items
            .iter()
            .map(|e| match e {
                Expr::Brace(kv) if kv.len() == 2 => match self.eval(&kv[1])? {
                    V::Str(s) => Ok((self.int(&kv[0])?.0, s)),
                    V::Int(..) => Err("a flag name that is not a string".into()),
                },
                _ => Err("a flag entry that is not { value, \"name\" }".into()),
            })
            .collect()
    }

    fn call(&self, name: &str, args: &[Expr]) -> Result<V, String> {
        match (name, args) {
            ("__get_str" | "__get_rel_str", [Expr::Field(f)]) => {
                let field = self.field(f)?;
                match decode::decode(field, self.raw, self.endian).map_err(|e| e.to_string())? {
                    Value::Str(s) => Ok(V::Str(s)),
                    _ => Err(format!("{f} is not a string field")),
                }
            }
            ("__print_flags", [val, delim, flags @ ..]) => {
                let (mut v, _) = self.int(val)?;
                let delim = match self.eval(delim)? {
                    V::Str(s) => s,
                    V::Int(..) => return Err("__print_flags delimiter is not a string".into()),
                };
                let mut out = Vec::new();
                let mut printed = false;
                for (fval, fname) in self.pairs(flags)? {
                    if v == 0 && fval == 0 {
                        out.extend_from_slice(&fname);
                        break;
                    }
                    if fval != 0 && v & fval == fval {
                        if printed {
                            out.extend_from_slice(&delim);
                        }
                        out.extend_from_slice(&fname);
                        printed = true;
                        v &= !fval;
                    }
                }
                if v != 0 {
                    if printed {
                        out.extend_from_slice(&delim);
                    }
                    out.extend_from_slice(format!("0x{v:x}").as_bytes());
                }
                Ok(V::Str(out))
            }
            ("__print_symbolic", [val, syms @ ..]) => {
                let (v, _) = self.int(val)?;
                for (sval, sname) in self.pairs(syms)? {
                    if sval == v {
                        return Ok(V::Str(sname));
                    }
                }
                Ok(V::Str(format!("0x{v:x}").into_bytes()))
            }
            _ => Err(format!("unsupported helper {name}()")),
        }
    }
}

/// perf's fallback when the print fmt cannot be used: `[FAILED TO PARSE]` and ` name=value` per own field.
pub fn render_fields(event: &EventFormat, raw: &[u8], endian: Endianness) -> String {
    let mut s = String::from("[FAILED TO PARSE]");
    for f in &event.fields {
        s.push(' ');
        s.push_str(&f.name);
        s.push('=');
        s.push_str(&field_text(f, raw, endian));
    }
    s
}

/// One field as libtraceevent's raw field printer writes it.
pub fn field_text(f: &Field, raw: &[u8], endian: Endianness) -> String {
    match decode::decode(f, raw, endian) {
        Ok(Value::Str(s)) => String::from_utf8_lossy(&s).into_owned(),
        Ok(Value::Array(items)) => {
            let elem = f.element_size().max(1) as usize;
            let bytes: Vec<String> = items
                .iter()
                .flat_map(|v| {
                    let b = if endian == Endianness::Big {
                        v.to_be_bytes()[8 - elem..].to_vec()
                    } else {
                        v.to_le_bytes()[..elem].to_vec()
                    };
                    b.into_iter()
                        .map(|x| format!("{x:02x}"))
                        .collect::<Vec<_>>()
                })
                .collect();
            format!("ARRAY[{}]", bytes.join(", "))
        }
        Ok(Value::Int(v)) if f.is_pointer() => format!("0x{:x}", v as u64),
        Ok(Value::UInt(v)) if f.is_pointer() => format!("0x{v:x}"),
        Ok(Value::Int(v)) => match f.size {
            4 if f.type_name.contains("long") => format!("0x{:x}", v as i32),
            _ => v.to_string(),
        },
        Ok(Value::UInt(v)) if f.type_name.contains("long") => format!("0x{v:x}"),
        Ok(Value::UInt(v)) => v.to_string(),
        Err(e) => format!("<{e}>"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_concatenate_and_escape() {
        let p = PrintFmt::parse(r#""a=%d " "b\"%s\"", 1 + 2 * 3, "x""#).unwrap();
        assert_eq!(p.format, b"a=%d b\"%s\"");
        assert_eq!(p.args.len(), 2);
    }

    #[test]
    fn damaged_print_fmts_are_errors() {
        for bad in [
            "",
            "REC->x",
            r#""%d", REC->"#,
            r#""%d", (1"#,
            r#""x", 1 2"#,
            r#""unterminated"#,
            r#""a", @"#,
        ] {
            assert!(PrintFmt::parse(bad).is_err(), "{bad:?}");
        }
    }
}
