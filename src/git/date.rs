//! `GIT_COMMITTER_DATE` read as git's `parse_date` reads it (date.c `parse_date_basic`), so that the commits
//! bport makes under a set date have git's ids. gitoxide's parser reads the forms; this module narrows and adjusts
//! it where it and git 2.47 disagree (each rule below was found by comparing the two on generated values):
//!
//! - relative dates (`now`, `yesterday`, `2 hours ago`), a date without a time of day, `<date> HH` and
//!   `<date> HHMM` with a space: git refuses them;
//! - epoch seconds: git reads a bare number only from 100000000 up, and any other number only in its own stamp
//!   form `@<seconds> <+-hhmm>`, exactly, never negative;
//! - apart from that stamp, git reads only dates from 1970 to 2099, both as written and in UTC;
//! - no zone given (`2026-01-01T10:00:00`, a bare epoch): git takes the local zone at that time (its `mktime` under
//!   `TZ`), gitoxide UTC; a local time the clock skips or repeats there is refused (see [`local_offset_minutes`]);
//! - `UT` and the military zone letters but `Z`: UTC to gitoxide, no zone to git; refused;
//! - the words `UTC` and `GMT`: git reads them anywhere, gitoxide only at the end of RFC 2822.
//!
//! Forms only git reads (other zone names such as `CET`, `12/31/2025`, `PM`, out-of-range fields it rolls over) are
//! refused: bport never records a date that differs from git's.

use std::borrow::Cow;

use gix_date::{Time, Zoned};

/// 2100-01-01T00:00:00Z: git's `tm_to_time_t` stops at the end of 2099.
const END_OF_2099: i64 = 4_102_444_800;

/// The date `value` names, or `None` where git would die with "invalid date format".
pub(crate) fn parse(value: &str) -> Option<git2::Time> {
    if stamp(value) {
        let t = absolute(value)?;
        return Some(git2::Time::new(t.seconds, t.offset / 60));
    }
    let value = without_fraction(value);
    // git knows `UTC` and `GMT` as a word anywhere (`date`'s `Sun Nov 29 11:12:27 UTC 2026`,
    // `2026-01-01 10:00:00 UTC`); gitoxide only at the end of RFC 2822. Read without the word, the value must have
    // no other zone.
    let utc_word = |w: &str| w.eq_ignore_ascii_case("utc") || w.eq_ignore_ascii_case("gmt");
    let in_utc = value.split_whitespace().any(utc_word);
    let value = &*if in_utc {
        Cow::Owned(
            value
                .split_whitespace()
                .filter(|w| !utc_word(w))
                .collect::<Vec<_>>()
                .join(" "),
        )
    } else {
        value
    };
    if date_only(value)
        || numeric_outside_git(value)
        || spaced_short_time(value)
        || zone_git_ignores(value)
    {
        return None;
    }
    let as_given = absolute(value);
    // A zone appended to a value that has none parses, and moves the time by the zone; appended to a value that
    // has one, it does not parse. An epoch keeps its seconds whatever the zone.
    let utc = absolute(&format!("{value} +0000"));
    let east = absolute(&format!("{value} +0100"));
    // `wall`: the time as written, which git's `tm_to_time_t` converts (UTC for an epoch).
    let (seconds, offset_minutes, wall) = match (utc, east) {
        (Some(u), Some(e))
            if u.offset == 0 && e.offset == 3600 && as_given.is_none_or(|t| t == u) =>
        {
            if in_utc {
                (u.seconds, 0, u.seconds)
            } else if u.seconds == e.seconds {
                (u.seconds, local_offset_minutes(u.seconds)?, u.seconds)
            } else if u.seconds - e.seconds == 3600 {
                let offset = local_offset_minutes(u.seconds)?;
                (u.seconds - i64::from(offset) * 60, offset, u.seconds)
            } else {
                return None;
            }
        }
        _ if in_utc => return None,
        _ => {
            let t = as_given?;
            (t.seconds, t.offset / 60, t.seconds + i64::from(t.offset))
        }
    };
    let years = 0..END_OF_2099;
    (years.contains(&seconds) && years.contains(&wall))
        .then(|| git2::Time::new(seconds, offset_minutes))
}

/// git's own stamp `@<seconds> <+-hhmm>`, which it reads before anything else and without a range check.
fn stamp(value: &str) -> bool {
    let Some(rest) = value.strip_prefix('@') else {
        return false;
    };
    let rest = rest.strip_suffix('\n').unwrap_or(rest);
    let Some((seconds, zone)) = rest.split_once(' ') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(seconds) && zone.len() == 5 && zone.starts_with(['+', '-']) && digits(&zone[1..])
}

/// gitoxide's reading of `value` when it does not depend on the current time (git has no relative dates here).
fn absolute(value: &str) -> Option<Time> {
    // Two readings at different "now"s: a relative date moves with them.
    let at = |secs| Time::new(secs, 0).to_zoned().ok();
    let a = gix_date::parse(value, at(1_000_000_000)).ok()?;
    let b = gix_date::parse(value, at(2_000_000_000)).ok()?;
    (a == b).then_some(a)
}

/// `2026-01-01`: git needs a time of day, gitoxide reads midnight UTC.
fn date_only(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// A number git does not read as epoch seconds outside its stamp: below 100000000 (a date to git, `20260101`) or
/// signed; gitoxide reads them all.
fn numeric_outside_git(value: &str) -> bool {
    let mut words = value.strip_prefix('@').unwrap_or(value).split_whitespace();
    let Some(first) = words.next() else {
        return false;
    };
    let Ok(seconds) = first.parse::<i64>() else {
        return false;
    };
    match (words.next(), words.next()) {
        (None, _) => {}
        (Some(zone), None) if zone.starts_with(['+', '-']) => {}
        // More words: not a form gitoxide reads as a number.
        _ => return false,
    }
    !(first.bytes().all(|b| b.is_ascii_digit()) && seconds >= 100_000_000)
}

/// `2026-01-01 10` and `2026-01-01 1000`: after a space git reads a time only as `HH:MM[:SS]` or `HHMMSS`;
/// gitoxide reads the short forms too (git does after a `T`).
fn spaced_short_time(value: &str) -> bool {
    let b = value.as_bytes();
    if b.len() < 11 || b[10] != b' ' || b[4] != b[7] || !matches!(b[4], b'-' | b'.') {
        return false;
    }
    let digits = b[11..].iter().take_while(|c| c.is_ascii_digit()).count();
    matches!(digits, 2 | 4) && b.get(11 + digits) != Some(&b':')
}

/// A last word that gitoxide (RFC 2822's obsolete zones) reads as UTC and git, not knowing it, skips, taking the
/// local zone: `UT` and the military letters other than `Z`.
fn zone_git_ignores(value: &str) -> bool {
    let Some(last) = value.split_whitespace().next_back() else {
        return false;
    };
    last.eq_ignore_ascii_case("ut")
        || (last.len() == 1
            && last.bytes().all(|b| b.is_ascii_alphabetic())
            && !last.eq_ignore_ascii_case("z"))
}

/// The value without fractional seconds (`10:00:00.123`, `20260101T100000.123`), which git skips. gitoxide skips
/// them too, but cuts the value at the dot, dropping a zone after it when another follows.
fn without_fraction(value: &str) -> Cow<'_, str> {
    let b = value.as_bytes();
    for (i, _) in value.match_indices('.') {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let two_before = i >= 3 && b[i - 1].is_ascii_digit() && b[i - 2].is_ascii_digit();
        let clock = two_before && b[i - 3] == b':';
        let compact = i >= 7 && b[i - 7] == b'T' && b[i - 6..i].iter().all(u8::is_ascii_digit);
        if digits > 0 && (clock || compact) {
            return format!("{}{}", &value[..i], &value[i + 1 + digits..]).into();
        }
    }
    value.into()
}

/// The offset git's `parse_date_basic` gives the wall-clock time `wall` (seconds as if it were UTC) in the local
/// zone (`TZ`): the difference between `wall` and that time read in the zone. A time the clock skips or repeats
/// there is refused: git leaves it to the C library's `mktime`, whose choice differs between zones (glibc took
/// the first of a repeated 01:30 in New York, the second in Lord Howe).
fn local_offset_minutes(wall: i64) -> Option<i32> {
    let civil = Time::new(wall, 0).to_zoned().ok()?.datetime();
    let local = Zoned::now()
        .time_zone()
        .to_ambiguous_zoned(civil)
        .unambiguous()
        .ok()?;
    i32::try_from((wall - local.timestamp().as_second()) / 60).ok()
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn at(value: &str) -> Option<(i64, i32)> {
        parse(value).map(|t| (t.seconds(), t.offset_minutes()))
    }

    #[test]
    fn forms_with_a_zone_read_as_git_reads_them() {
        // Each expected value is what `GIT_COMMITTER_DATE=<value> git var GIT_COMMITTER_IDENT` prints (git 2.47).
        for (value, expected) in [
            ("1700000000 +0130", (1700000000, 90)),
            ("@1700000000 +0130", (1700000000, 90)),
            ("@5 -0800", (5, -480)),
            ("@0 +0000", (0, 0)),
            ("2026-01-01T00:00:00Z", (1767225600, 0)),
            ("2026-01-01T00:00:00+02:00", (1767218400, 120)),
            ("2026-01-01T00:00:00+0200", (1767218400, 120)),
            ("2026-01-01 00:00:00 +0200", (1767218400, 120)),
            ("2026-01-01 00:00:00-05", (1767243600, -300)),
            ("2026-01-01T00:00:00.123+02:00", (1767218400, 120)),
            ("2026-01-01 00:00:00.5 +0200", (1767218400, 120)),
            ("20080214T203045.019-04:00", (1203035445, -240)),
            ("Thu, 07 Apr 2005 22:13:13 +0200", (1112904793, 120)),
            ("Thu, 07 Apr 2005 22:13:13 GMT", (1112911993, 0)),
            ("07 Apr 2005 22:13:13 +0200", (1112904793, 120)),
            ("Thu Apr 7 22:13:13 2005 +0200", (1112904793, 120)),
            ("2005.04.07 22:13:13 +0200", (1112904793, 120)),
            ("2026-01-01 10:00:00 UTC", (1767261600, 0)),
            ("Sun Nov 29 11:12:27 UTC 2026", (1795950747, 0)),
            ("1767225600 GMT", (1767225600, 0)),
            ("@4102444800 +0000", (4102444800, 0)),
            ("2099-12-31T23:59:59Z", (4102444799, 0)),
        ] {
            assert_eq!(at(value), Some(expected), "{value}");
        }
    }

    /// Refused by git, or read by git in a way this module does not reproduce: `UT` and `A` are no zone to git,
    /// which then takes the local one, and `UTC +0200` is +0200 to git.
    #[test]
    fn forms_git_refuses_are_refused() {
        for value in [
            "garbage",
            "now",
            "yesterday",
            "2 hours ago",
            "2 days ago +0000",
            "2026-01-01",
            "@5",
            "@-5",
            "@99999999",
            "99999999",
            "5 +0000",
            "-5 +0000",
            "@-5 +0000",
            "-1700000000 +0000",
            "@0 +0200 ",
            "2026-01-01 10",
            "2026-01-01 1000 +0200",
            "1969-12-31 23:00:00 +0000",
            "1970-01-01 00:30:00 +0100",
            "2100-01-01T00:00:00Z",
            "2099-12-31T20:00:00-0500",
            "4102444800",
            "Thu, 01 Jan 2026 10:00:00 UT",
            "Thu, 01 Jan 2026 10:00:00 A",
            "2026-01-01 10:00:00 UTC +0200",
            "5 UTC",
            "2026-01-01 UTC",
        ] {
            assert_eq!(at(value), None, "{value}");
        }
    }
}
