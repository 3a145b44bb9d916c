//! Patch series as mail: an mbox or concatenated `git format-patch` files (what `b4 am` writes), turned into
//! commits that `bport apply` then picks like any listed commit, so detection, stops, resume and rerere are the
//! same.
//!
//! Each mail becomes what `git am` would commit: the author and date of its `From:`/`Date:` headers (or in-body
//! ones), the message `git mailinfo` makes (the subject without `Re:` and `[…]` prefixes, the body up to the `---`
//! line; `Link:` and other trailers in the body are kept, the `Message-Id` header is not, as `git am` without
//! `-m`). The commits form a chain on the series' `base-commit:` when the repository has it, else on HEAD: each
//! patch is applied to the tree before it, and when it does not apply there, to the tree its `index` lines name
//! (the preimage blobs), which `git am -3` uses for its three-way merge; the pick then merges that with the branch.

use super::Error;
use crate::git::{self, Context};
use git2::{Oid, Repository, Signature, Time};

/// One mail of a series, as parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mail {
    /// 1-based position in the input.
    pub index: usize,
    /// Author name.
    pub name: String,
    /// Author email.
    pub email: String,
    /// Author date.
    pub seconds: i64,
    /// Author time zone, in minutes east of UTC.
    pub offset: i32,
    /// The commit message (subject, blank line, body).
    pub message: String,
    /// The patch text (`diff --git …` to the end, without the signature).
    pub patch: String,
    /// The `base-commit:` line's id, if any.
    pub base: Option<String>,
}

fn bad(index: usize, subject: &str, reason: impl Into<String>) -> Error {
    Error::BadMail {
        index,
        subject: subject.to_owned(),
        reason: reason.into(),
    }
}

/// Splits an mbox (or concatenated format-patch files) into mails and parses each.
pub fn parse(bytes: &[u8]) -> Result<Vec<Mail>, Error> {
    // `git mailsplit` without `--keep-cr` drops the CR of CRLF lines (mail from some clients has them throughout).
    let text = String::from_utf8_lossy(bytes).replace("\r\n", "\n");
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut starts = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let prev_blank = i == 0 || lines[i - 1].trim().is_empty();
        let next_header = lines.get(i + 1).is_some_and(|n| header_name(n).is_some());
        if l.starts_with("From ") && prev_blank && next_header {
            starts.push(i);
        }
    }
    let mut out = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(lines.len());
        out.push(parse_one(k + 1, &lines[s + 1..end])?);
    }
    Ok(out)
}

fn header_name(line: &str) -> Option<&str> {
    let (name, _) = line.split_once(':')?;
    (!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        .then_some(name)
}

fn parse_one(index: usize, lines: &[&str]) -> Result<Mail, Error> {
    let (headers, body_start) = read_headers(lines);
    let get = |n: &str| {
        headers
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.as_str())
    };
    let raw_subject = clean_subject(get("subject").unwrap_or(""));
    let raw_subject = raw_subject.as_str();
    check_headers(index, raw_subject, &headers, get("content-type"))?;
    let mut fields = Fields {
        subject: decode_words(raw_subject),
        from: decode_words(get("from").unwrap_or("")),
        date: get("date").unwrap_or("").to_owned(),
    };
    let body = decode_body(
        index,
        &fields.subject,
        lines[body_start..].concat(),
        get("content-transfer-encoding"),
    )?;
    let mut body_lines: Vec<&str> = body.split_inclusive('\n').collect();
    take_in_body_headers(&mut body_lines, &mut fields);
    let Fields {
        subject,
        from,
        date,
    } = fields;
    let subject = clean_subject(&subject);
    // The message ends at the `---` line (or where the diff starts); the patch starts at `diff --git`.
    let j = body_lines
        .iter()
        .position(|l| l.trim_end() == "---" || l.starts_with("diff -") || l.starts_with("Index: "))
        .unwrap_or(body_lines.len());
    let mut msg: Vec<&str> = body_lines[..j].iter().map(|l| l.trim_end()).collect();
    let rest = &body_lines[j..];
    let Some(d) = rest.iter().position(|l| l.starts_with("diff --git ")) else {
        return Err(bad(index, &subject, "no patch (`diff --git`) in the mail"));
    };
    let mut patch_lines = &rest[d..];
    if let Some(sig) = patch_lines
        .iter()
        .rposition(|l| *l == "-- \n" || *l == "--\n")
    {
        patch_lines = &patch_lines[..sig];
    }
    let base = rest[..d]
        .iter()
        .chain(patch_lines.iter())
        .chain(body_lines.iter())
        .find_map(|l| l.strip_prefix("base-commit: "))
        .map(|s| s.trim().to_owned());
    let patch: String = patch_lines.concat();
    if subject.is_empty() {
        return Err(bad(index, raw_subject, "no subject"));
    }
    let (name, email) = split_address(&from).ok_or_else(|| {
        bad(
            index,
            &subject,
            format!("no author address in From: {from:?}"),
        )
    })?;
    let (seconds, offset) = parse_date(&date)
        .ok_or_else(|| bad(index, &subject, format!("unreadable Date: {date:?}")))?;
    while msg.last().is_some_and(|l| l.is_empty()) {
        msg.pop();
    }
    let first = msg.iter().position(|l| !l.is_empty()).unwrap_or(msg.len());
    let body = msg[first..].join("\n");
    let message = if body.is_empty() {
        format!("{subject}\n")
    } else {
        format!("{subject}\n\n{body}\n")
    };
    Ok(Mail {
        index,
        name,
        email,
        seconds,
        offset,
        message,
        patch,
        base,
    })
}

/// The author, subject and date a mail gives, from its headers or the top of its body.
struct Fields {
    subject: String,
    from: String,
    date: String,
}

/// The mail's headers (names lower-cased, folded lines unfolded) and the index of the first body line.
fn read_headers(lines: &[&str]) -> (Vec<(String, String)>, usize) {
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim_end_matches(['\n', '\r']);
        i += 1;
        if l.is_empty() {
            break;
        }
        if l.starts_with([' ', '\t']) {
            if let Some(last) = headers.last_mut() {
                last.1.push(' ');
                last.1.push_str(l.trim());
            }
            continue;
        }
        if let Some((name, value)) = l.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    (headers, i)
}

/// Refuses what is not read: 8-bit header text and multipart mails.
fn check_headers(
    index: usize,
    raw_subject: &str,
    headers: &[(String, String)],
    content_type: Option<&str>,
) -> Result<(), Error> {
    for (name, value) in headers {
        if !value.is_ascii() || value.contains('\u{fffd}') {
            return Err(bad(
                index,
                raw_subject,
                format!("8-bit text in the {name} header (mail headers must be RFC 2047 encoded)"),
            ));
        }
    }
    if content_type.is_some_and(|c| c.to_ascii_lowercase().starts_with("multipart/")) {
        return Err(bad(
            index,
            raw_subject,
            "a multipart mail (send the patch inline)",
        ));
    }
    Ok(())
}

/// The body with its transfer encoding undone (quoted-printable; base64 is refused).
fn decode_body(
    index: usize,
    subject: &str,
    body: String,
    encoding: Option<&str>,
) -> Result<String, Error> {
    match encoding.map(str::to_ascii_lowercase).as_deref() {
        Some("quoted-printable") => Ok(decode_qp(&body)),
        Some("base64") => Err(bad(
            index,
            subject,
            "a base64-encoded body is not supported",
        )),
        _ => Ok(body),
    }
}

/// In-body headers (`From:`, `Subject:`, `Date:` at the top of the body) override the mail's; they and the
/// blank lines after them leave the body.
fn take_in_body_headers(body_lines: &mut Vec<&str>, fields: &mut Fields) {
    let mut k = 0;
    let mut saw = false;
    while k < body_lines.len() {
        let l = body_lines[k].trim_end();
        if let Some(v) = l.strip_prefix("From: ") {
            fields.from = decode_words(v.trim());
        } else if let Some(v) = l.strip_prefix("Subject: ") {
            fields.subject = decode_words(v.trim());
        } else if let Some(v) = l.strip_prefix("Date: ") {
            fields.date = v.trim().to_owned();
        } else {
            break;
        }
        saw = true;
        k += 1;
    }
    if saw {
        while k < body_lines.len() && body_lines[k].trim().is_empty() {
            k += 1;
        }
        body_lines.drain(..k);
    }
}

/// `git mailinfo`'s subject: `Re:` and leading `[…]` groups removed, whitespace trimmed.
fn clean_subject(s: &str) -> String {
    let mut s = s.trim();
    loop {
        if s.len() >= 3 && s.as_bytes()[..3].eq_ignore_ascii_case(b"re:") {
            s = s[3..].trim_start();
            continue;
        }
        if let Some(rest) = s.strip_prefix('[') {
            if let Some(end) = rest.find(']') {
                s = rest[end + 1..].trim_start();
                continue;
            }
        }
        break;
    }
    s.trim_end().to_owned()
}

/// `Name <email>` (or a bare address).
fn split_address(from: &str) -> Option<(String, String)> {
    if let (Some(a), Some(b)) = (from.rfind('<'), from.rfind('>')) {
        if a < b {
            let name = from[..a].trim().trim_matches('"').to_owned();
            let email = from[a + 1..b].trim().to_owned();
            let name = if name.is_empty() { email.clone() } else { name };
            return Some((name, email));
        }
    }
    let f = from.trim();
    f.contains('@').then(|| (f.to_owned(), f.to_owned()))
}

/// An RFC 2822 date: `[Day, ]DD Mon YYYY HH:MM[:SS] ±HHMM`.
fn parse_date(s: &str) -> Option<(i64, i32)> {
    let s = s.split_once(',').map_or(s, |(_, r)| r).trim();
    let parts: Vec<&str> = s.split_whitespace().collect();
    if parts.len() < 5 {
        return None;
    }
    let day: i64 = parts[0].parse().ok()?;
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let mon = MONTHS
        .iter()
        .position(|m| parts[1].to_ascii_lowercase().starts_with(m))? as i64
        + 1;
    let year: i64 = parts[2].parse().ok()?;
    let hms: Vec<i64> = parts[3]
        .split(':')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let (h, m, sec) = match hms[..] {
        [h, m] => (h, m, 0),
        [h, m, s] => (h, m, s),
        _ => return None,
    };
    let tz = parts[4];
    let sign = match tz.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits = tz.get(1..5)?;
    let hh: i32 = digits.get(..2)?.parse().ok()?;
    let mm: i32 = digits.get(2..)?.parse().ok()?;
    let offset = sign * (hh * 60 + mm);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mon <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mon + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let local = days * 86_400 + h * 3600 + m * 60 + sec;
    Some((local - i64::from(offset) * 60, offset))
}

/// Decodes RFC 2047 encoded words (`=?utf-8?q?…?=`, `=?utf-8?b?…?=`); whitespace between two words is dropped.
fn decode_words(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    let mut last_was_word = false;
    while let Some(start) = rest.find("=?") {
        let before = &rest[..start];
        let Some((word, after)) = encoded_word(&rest[start..]) else {
            out.push_str(&rest[..start + 2]);
            rest = &rest[start + 2..];
            last_was_word = false;
            continue;
        };
        if !(last_was_word && before.trim().is_empty()) {
            out.push_str(before);
        }
        out.push_str(&word);
        rest = after;
        last_was_word = true;
    }
    out.push_str(rest);
    out
}

/// One encoded word at the start of `s`: its text and what follows.
fn encoded_word(s: &str) -> Option<(String, &str)> {
    let inner = s.strip_prefix("=?")?;
    let (charset, inner) = inner.split_once('?')?;
    let (enc, inner) = inner.split_once('?')?;
    let end = inner.find("?=")?;
    let data = &inner[..end];
    let bytes = match enc {
        "q" | "Q" => decode_q(data, true),
        "b" | "B" => decode_b64(data)?,
        _ => return None,
    };
    let text = match charset.to_ascii_lowercase().as_str() {
        "iso-8859-1" | "latin1" => bytes.iter().map(|&b| b as char).collect(),
        _ => String::from_utf8_lossy(&bytes).into_owned(),
    };
    Some((text, &inner[end + 2..]))
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Q (header) or quoted-printable bytes.
fn decode_q(s: &str, underscore_is_space: bool) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'_' if underscore_is_space => out.push(b' '),
            b'=' => {
                if let (Some(h), Some(l)) = (
                    b.get(i + 1).copied().and_then(hex),
                    b.get(i + 2).copied().and_then(hex),
                ) {
                    out.push(h * 16 + l);
                    i += 2;
                } else {
                    out.push(b'=');
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// A quoted-printable body: soft line breaks joined, `=XX` decoded.
fn decode_qp(body: &str) -> String {
    let joined = body.replace("=\r\n", "").replace("=\n", "");
    String::from_utf8_lossy(&decode_q(&joined, false)).into_owned()
}

fn decode_b64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// Makes each mail a commit, chained as described in the module header; returns them in order.
pub fn import(repo: &Repository, head: Oid, mails: &[Mail]) -> Result<Vec<Oid>, Error> {
    let odb = repo.odb().context_git(|| "opening the object database")?;
    let base = mails
        .iter()
        .find_map(|m| m.base.as_deref())
        .and_then(|b| Oid::from_str(b).ok())
        .filter(|&b| repo.find_commit(b).is_ok() && b != head)
        .filter(|&b| repo.graph_descendant_of(head, b).unwrap_or(false))
        .unwrap_or(head);
    let mut parent = repo
        .find_commit(base)
        .context_git(|| format!("reading commit {base}"))?;
    let committer = git::committer(repo)?;
    let mut out = Vec::with_capacity(mails.len());
    for m in mails {
        let subject = git::commit_subject(&m.message);
        let diff = git2::Diff::from_buffer(m.patch.as_bytes()).map_err(|e| {
            bad(
                m.index,
                &subject,
                format!("the patch does not parse: {}", e.message()),
            )
        })?;
        let tree = parent
            .tree()
            .context_git(|| format!("reading the tree of {}", parent.id()))?;
        let author = Signature::new(&m.name, &m.email, &Time::new(m.seconds, m.offset))
            .map_err(|e| bad(m.index, &subject, format!("bad author: {}", e.message())))?;
        let (from, applied) = match repo.apply_to_tree(&tree, &diff, None) {
            Ok(mut index) => (parent.clone(), write_tree(repo, &mut index)?),
            Err(_) => {
                // `git am -3`: rebuild the tree the patch was made against from its preimage blobs.
                let base_tree = preimage_tree(repo, &odb, &tree, &diff).ok_or_else(|| {
                    bad(
                        m.index,
                        &subject,
                        "the patch does not apply, and its index lines name no blobs this repository has for a \
                         three-way merge",
                    )
                })?;
                let base_tree = repo
                    .find_tree(base_tree)
                    .context_git(|| "reading the preimage tree")?;
                let mut index = repo.apply_to_tree(&base_tree, &diff, None).map_err(|e| {
                    bad(
                        m.index,
                        &subject,
                        format!(
                            "the patch does not apply to its own preimage: {}",
                            e.message()
                        ),
                    )
                })?;
                let post = write_tree(repo, &mut index)?;
                let base_commit = repo
                    .commit(
                        None,
                        &author,
                        &committer,
                        "preimage\n",
                        &base_tree,
                        &[&parent],
                    )
                    .context_git(|| "writing the preimage commit")?;
                let base_commit = repo
                    .find_commit(base_commit)
                    .context_git(|| "reading the preimage commit")?;
                (base_commit, post)
            }
        };
        let tree = repo
            .find_tree(applied)
            .context_git(|| "reading the patched tree")?;
        let oid = repo
            .commit(None, &author, &committer, &m.message, &tree, &[&from])
            .context_git(|| format!("writing the commit of mail {}", m.index))?;
        parent = repo
            .find_commit(oid)
            .context_git(|| format!("reading commit {oid}"))?;
        out.push(oid);
    }
    Ok(out)
}

fn write_tree(repo: &Repository, index: &mut git2::Index) -> Result<Oid, Error> {
    index
        .write_tree_to(repo)
        .context_git(|| "writing the patched tree")
        .map_err(Error::from)
}

/// `tree` with every path the patch changes set to the patch's preimage blob (absent for added files); `None` when
/// a preimage blob is not in the repository.
fn preimage_tree(
    repo: &Repository,
    odb: &git2::Odb<'_>,
    tree: &git2::Tree<'_>,
    diff: &git2::Diff<'_>,
) -> Option<Oid> {
    let mut builder = git2::build::TreeUpdateBuilder::new();
    for delta in diff.deltas() {
        let old = delta.old_file();
        let path = old.path()?;
        if delta.status() == git2::Delta::Added {
            builder.remove(path);
            continue;
        }
        let id = old.id();
        let hexlen = id.to_string().trim_end_matches('0').len().max(7);
        let blob = odb.exists_prefix(id, hexlen).ok()?;
        let mode = match old.mode() {
            git2::FileMode::BlobExecutable => git2::FileMode::BlobExecutable,
            git2::FileMode::Link => git2::FileMode::Link,
            _ => git2::FileMode::Blob,
        };
        builder.upsert(path, blob, mode);
    }
    builder.create_updated(repo, tree).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_as_mail_writes_them() {
        // `date -d 'Thu, 1 Jan 2026 10:00:00 +0100' +%s`
        assert_eq!(
            parse_date("Thu, 1 Jan 2026 10:00:00 +0100"),
            Some((1_767_258_000, 60))
        );
        assert_eq!(
            parse_date("1 Mar 2024 00:00 -0530"),
            Some((1_709_271_000, -330))
        );
        assert_eq!(parse_date("yesterday"), None);
        assert_eq!(parse_date("Thu, 1 Foo 2026 10:00:00 +0100"), None);
    }

    #[test]
    fn encoded_words_and_subjects() {
        assert_eq!(
            decode_words("=?UTF-8?q?J=C3=B6hn_D=C5=93?= <j@x>"),
            "Jöhn Dœ <j@x>"
        );
        assert_eq!(
            decode_words("=?utf-8?b?SsO2aG4=?= =?utf-8?q?_D?="),
            "Jöhn D"
        );
        assert_eq!(decode_words("=?iso-8859-1?q?J=F6hn?="), "Jöhn");
        assert_eq!(decode_words("plain =?bogus"), "plain =?bogus");
        assert_eq!(clean_subject("Re: [PATCH v2 1/3] [net] x: y "), "x: y");
        assert_eq!(
            split_address("\"Doe, J\" <j@x>"),
            Some(("Doe, J".into(), "j@x".into()))
        );
    }

    #[test]
    fn odd_text_never_panics() {
        for t in [
            "",
            "From x\n",
            "From x\nSubject: =?utf-8?q?=C3\n\n",
            "From x\nFrom: é\n\n",
            "From x\nDate: Thu, 1 Jan 2026 10:00:00 +01\nSubject: s\nFrom: a@b\n\ndiff --git a/x b/x\n",
        ] {
            let _ = parse(t.as_bytes());
        }
    }
}
