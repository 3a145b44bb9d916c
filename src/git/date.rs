//! `GIT_COMMITTER_DATE` read as git's `parse_date` reads it (date.c `parse_date_basic`), so that the commits
//! bport makes under a set date have git's ids. gitoxide's parser reads the forms; this module narrows and adjusts
//! it where it and git 2.47 disagree:
//!
//! - relative dates (`now`, `yesterday`, `2 hours ago`) and a date without a time of day: git refuses them;
//! - epoch seconds: git reads a bare number only from 100000000 up and a `@<seconds> <zone>` stamp only when it is
//!   not negative;
//! - no zone given (`2026-01-01T10:00:00`, a bare epoch): git takes the local zone at that time (its `mktime` with
//!   `TZ`), gitoxide UTC.
//!
//! Forms only git reads (zone names such as `CET`, `12/31/2025`, `PM`, out-of-range fields it rolls over) are
//! refused: bport never records a date that differs from git's.

use std::borrow::Cow;

use gix_date::Time;

/// The date `value` names, or `None` where git would die with "invalid date format".
pub(crate) fn parse(value: &str) -> Option<git2::Time> {
    if date_only(value) || numeric_outside_git(value) {
        return None;
    }
    let value = &*without_fraction(value);
    let as_given = absolute(value);
    // A zone appended to a value that has none parses, and moves the time by the zone; appended to a value that
    // has one, it does not parse. An epoch keeps its seconds whatever the zone.
    let utc = absolute(&format!("{value} +0000"));
    let east = absolute(&format!("{value} +0100"));
    let (seconds, offset_minutes) = match (utc, east) {
        (Some(u), Some(e))
            if u.offset == 0 && e.offset == 3600 && as_given.is_none_or(|t| t == u) =>
        {
            if u.seconds == e.seconds {
                (u.seconds, local_offset_minutes(u.seconds)?)
            } else if u.seconds - e.seconds == 3600 {
                let offset = local_offset_minutes(u.seconds)?;
                (u.seconds - i64::from(offset) * 60, offset)
            } else {
                return None;
            }
        }
        _ => {
            let t = as_given?;
            (t.seconds, t.offset / 60)
        }
    };
    Some(git2::Time::new(seconds, offset_minutes))
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

/// Epoch seconds git does not read: a bare number below 100000000 (a date to git, `20260101`), a negative one, and
/// `@<seconds> <zone>` with negative seconds; gitoxide reads them all.
fn numeric_outside_git(value: &str) -> bool {
    let (at, rest) = match value.strip_prefix('@') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let mut words = rest.split_whitespace();
    let Some(first) = words.next() else {
        return false;
    };
    let Ok(seconds) = first.parse::<i64>() else {
        return false;
    };
    let zoned = match (words.next(), words.next()) {
        (None, _) => false,
        (Some(zone), None) if zone.starts_with(['+', '-']) => true,
        // More words: not a form gitoxide reads as a number.
        _ => return false,
    };
    let digits = first.bytes().all(|b| b.is_ascii_digit());
    !(digits && (seconds >= 100_000_000 || (at && zoned)))
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

/// The local zone's offset at the wall-clock time `wall` (seconds as if it were UTC), as git's `parse_date_basic`
/// finds it: `mktime` of that time with DST left to the C library, under `TZ`.
// `time_t` is 64 bits here but 32 bits on some targets.
#[allow(clippy::useless_conversion)]
fn local_offset_minutes(wall: i64) -> Option<i32> {
    let t: libc::time_t = wall.try_into().ok()?;
    // SAFETY: `tm` is a plain C struct that gmtime_r fills; both calls only read and write the pointers given.
    let local = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::gmtime_r(&t, &mut tm).is_null() {
            return None;
        }
        tm.tm_isdst = -1;
        libc::mktime(&mut tm)
    };
    if local == -1 {
        return None;
    }
    i32::try_from((wall - i64::from(local)) / 60).ok()
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
        ] {
            assert_eq!(at(value), Some(expected), "{value}");
        }
    }

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
        ] {
            assert_eq!(at(value), None, "{value}");
        }
    }
}
