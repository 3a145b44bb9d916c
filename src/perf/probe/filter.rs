//! perf's string filter (tools/perf/util/strfilter.c), which `perf probe -d` and `-l` take: globs joined by
//! `&` (and), `|` (or) and `!` (not), grouped with parentheses; `&` binds tighter than `|`. An event matches
//! when the filter accepts its name alone or `GROUP:EVENT` (perf's `filter_probe_trace_event` and
//! `probe_file__get_events`), so `probe_prog*` deletes every event of the group `probe_prog`.

use super::tracefs::glob_match;

/// A parsed filter.
#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    /// A glob (perf's `strglobmatch`).
    Glob(String),
    /// Both sides.
    And(Box<Filter>, Box<Filter>),
    /// Either side.
    Or(Box<Filter>, Box<Filter>),
    /// Not the inner filter.
    Not(Box<Filter>),
}

/// Why a filter does not parse (perf: "Filter parse error at N").
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("filter parse error at character {at}")]
pub struct ParseError {
    /// The 0-based character offset of the token perf stops at.
    pub at: usize,
}

const OPERATORS: [char; 5] = ['&', '|', '!', '(', ')'];

/// The token starting at or after `i` (perf's `get_token`): an operator alone, or a run of other non-space
/// characters. Returns its start and end; at the end of the text both are `s.len()`.
fn token(s: &[char], mut i: usize) -> (usize, usize) {
    while i < s.len() && s[i].is_whitespace() {
        i += 1;
    }
    if i == s.len() {
        return (i, i);
    }
    let mut e = i + 1;
    if !OPERATORS.contains(&s[i]) {
        while e < s.len() && !OPERATORS.contains(&s[e]) && !s[e].is_whitespace() {
            e += 1;
        }
    }
    (i, e)
}

/// An expression being built: perf keeps the root and the last operator whose right side takes the next
/// operand; `&` replaces that right side, `|` the whole root, `!` waits for its operand.
#[derive(Default)]
struct Builder {
    /// The filter so far; `None` before the first operand.
    root: Option<Filter>,
    /// Pending binary operators and nots, innermost last, waiting for their right operand.
    pending: Vec<Pending>,
    /// Whether the last thing read was an operand (so a binary operator may follow).
    have_operand: bool,
}

enum Pending {
    /// `left |` waiting for its right side; the right side is then the root's right.
    Or(Filter),
    /// `left &` waiting for its right side.
    And(Filter),
    /// `!` waiting for its operand.
    Not,
}

impl Builder {
    /// Attaches an operand to the innermost pending operator (nots first, then one binary operator).
    fn operand(&mut self, mut f: Filter) -> bool {
        if self.have_operand {
            return false;
        }
        while let Some(Pending::Not) = self.pending.last() {
            self.pending.pop();
            f = Filter::Not(Box::new(f));
        }
        f = match self.pending.pop() {
            Some(Pending::And(l)) => Filter::And(Box::new(l), Box::new(f)),
            Some(Pending::Or(l)) => {
                // `a | b`: the right side stays open to a following `&` (which binds tighter).
                self.pending.push(Pending::Or(l));
                self.root = Some(f);
                self.have_operand = true;
                return true;
            }
            Some(Pending::Not) | None => f,
        };
        self.root = Some(f);
        self.have_operand = true;
        true
    }

    fn and(&mut self) -> bool {
        match (self.have_operand, self.root.take()) {
            (true, Some(left)) => {
                self.pending.push(Pending::And(left));
                self.have_operand = false;
                true
            }
            _ => false,
        }
    }

    fn or(&mut self) -> bool {
        match (self.have_operand, self.finish()) {
            (true, Some(left)) => {
                self.pending.push(Pending::Or(left));
                self.have_operand = false;
                true
            }
            _ => false,
        }
    }

    fn not(&mut self) -> bool {
        if self.have_operand {
            return false;
        }
        self.pending.push(Pending::Not);
        true
    }

    /// Closes every pending `|` around the current operand.
    fn finish(&mut self) -> Option<Filter> {
        let mut f = self.root.take()?;
        while let Some(p) = self.pending.pop() {
            f = match p {
                Pending::Or(l) => Filter::Or(Box::new(l), Box::new(f)),
                Pending::And(_) | Pending::Not => return None,
            };
        }
        Some(f)
    }
}

/// Parses from `i` to the end or to a `)`; returns the filter and where it stopped.
fn parse_from(s: &[char], i: usize) -> Result<(Filter, usize), ParseError> {
    let mut b = Builder::default();
    let (mut start, mut end) = token(s, i);
    while start < s.len() && s[start] != ')' {
        let ok = match s[start] {
            '&' => b.and(),
            '|' => b.or(),
            '!' => b.not(),
            '(' => {
                let (inner, close) = parse_from(s, start + 1)?;
                if close >= s.len() || s[close] != ')' {
                    return Err(ParseError { at: close });
                }
                end = close + 1;
                b.operand(inner)
            }
            _ => b.operand(Filter::Glob(s[start..end].iter().collect())),
        };
        if !ok {
            return Err(ParseError { at: start });
        }
        (start, end) = token(s, end);
    }
    if !b.have_operand {
        return Err(ParseError { at: start });
    }
    b.finish()
        .map(|f| (f, start))
        .ok_or(ParseError { at: start })
}

impl Filter {
    /// Parses perf's filter syntax; a stray `)` or a missing operand is an error, as in perf.
    pub fn parse(text: &str) -> Result<Filter, ParseError> {
        let s: Vec<char> = text.chars().collect();
        let (f, stop) = parse_from(&s, 0)?;
        if stop != s.len() {
            return Err(ParseError { at: stop });
        }
        Ok(f)
    }

    /// Several filters (repeated `-d`), any of which may match: perf ORs them.
    pub fn any(filters: Vec<Filter>) -> Option<Filter> {
        filters
            .into_iter()
            .reduce(|a, b| Filter::Or(Box::new(a), Box::new(b)))
    }

    /// Whether the filter accepts `text`.
    pub fn matches(&self, text: &str) -> bool {
        match self {
            Filter::Glob(g) => glob_match(g, text),
            Filter::And(a, b) => a.matches(text) && b.matches(text),
            Filter::Or(a, b) => a.matches(text) || b.matches(text),
            Filter::Not(a) => !a.matches(text),
        }
    }

    /// Whether the filter accepts a probe event: its name alone, or `GROUP:EVENT`.
    pub fn matches_event(&self, group: &str, event: &str) -> bool {
        self.matches(event) || self.matches(&format!("{group}:{event}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(filter: &str, text: &str) -> bool {
        Filter::parse(filter).unwrap().matches(text)
    }

    #[test]
    fn globs_and_operators_as_perf_reads_them() {
        assert!(m("probe_prog*", "probe_prog:work"));
        assert!(m("work|nothere", "work"));
        assert!(m("nothere|work", "work"));
        assert!(!m("!work", "work"));
        assert!(m("!work", "main"));
        assert!(m("w* & !*return", "work"));
        assert!(!m("w* & !*return", "work__return"));
        // `&` binds tighter than `|`: a | (b & c).
        assert!(m("main | w* & *return", "main"));
        assert!(!m("main | w* & *return", "work"));
        assert!(m("(main | w*) & !*return", "work"));
        assert!(!m("(main | w*) & !*return", "work__return"));
        assert!(m("!!work", "work"));
        assert!(m("a|b|c", "c"));
        assert!(m("a&b|c", "c"));
        assert!(!m("a&b|c", "a"));
    }

    #[test]
    fn malformed_filters_are_refused() {
        for bad in ["", "a|", "|a", "a&&b", "a b", "(a", "a)", "()", "a!", "!"] {
            assert!(Filter::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn events_match_by_name_or_group_and_name() {
        let f = Filter::parse("probe_prog*").unwrap();
        assert!(f.matches_event("probe_prog", "work"));
        assert!(!f.matches_event("probe_libc", "malloc"));
        let f = Filter::parse("probe*work").unwrap();
        assert!(f.matches_event("probe_prog", "work"));
        let f = Filter::parse("probe_prog:w*").unwrap();
        assert!(f.matches_event("probe_prog", "work__return"));
        assert!(!f.matches_event("probe_prog", "main"));
        let f = Filter::any(vec![
            Filter::parse("main").unwrap(),
            Filter::parse("nothere").unwrap(),
        ])
        .unwrap();
        assert!(f.matches_event("probe_prog", "main"));
    }
}
