//! The message of a picked commit: the original, plus `-x` and `-s` lines placed as git's sequencer places them.
//!
//! git appends a line to the trailer block when the message ends in one, and after a blank line otherwise
//! (`has_conforming_footer` in sequencer.c); a `Signed-off-by` already last is not repeated.

/// The message for picking a commit whose message is `original` (`oid_hex` = its full id).
pub fn picked_message(
    original: &str,
    oid_hex: &str,
    record_origin: bool,
    signoff: Option<&str>,
) -> String {
    let mut msg = original.to_owned();
    if record_origin {
        complete_line(&mut msg);
        if !ends_in_trailer_block(&msg) {
            msg.push('\n');
        }
        msg.push_str(&format!("(cherry picked from commit {oid_hex})\n"));
    }
    if let Some(sob) = signoff {
        add_signoff(&mut msg, sob);
    }
    msg
}

/// Appends `sob` (a whole `Signed-off-by: Name <email>` line) unless it is already the message's last line.
pub fn add_signoff(msg: &mut String, sob: &str) {
    complete_line(msg);
    let last = msg.trim_end_matches('\n').rsplit('\n').next().unwrap_or("");
    if last == sob && ends_in_trailer_block(msg) {
        return;
    }
    if !ends_in_trailer_block(msg) {
        msg.push('\n');
    }
    msg.push_str(sob);
    msg.push('\n');
}

fn complete_line(msg: &mut String) {
    if !msg.is_empty() && !msg.ends_with('\n') {
        msg.push('\n');
    }
}

/// Whether the last paragraph (not the subject paragraph) consists of trailer lines.
fn ends_in_trailer_block(msg: &str) -> bool {
    let paragraphs: Vec<&str> = msg
        .trim_end_matches('\n')
        .split("\n\n")
        .filter(|p| !p.trim().is_empty())
        .collect();
    if paragraphs.len() < 2 {
        return false;
    }
    let last = paragraphs[paragraphs.len() - 1];
    last.lines().all(|line| {
        line.starts_with("(cherry picked from commit ")
            || line.starts_with(char::is_whitespace)
            || line.split_once(':').is_some_and(|(token, _)| {
                !token.is_empty() && token.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const X: &str = "0123456789abcdef0123456789abcdef01234567";
    const SOB: &str = "Signed-off-by: A U Thor <a@example.com>";

    #[test]
    fn origin_goes_after_a_blank_line_or_into_the_trailer_block() {
        assert_eq!(
            picked_message("subject\n\nbody\n", X, true, None),
            format!("subject\n\nbody\n\n(cherry picked from commit {X})\n")
        );
        assert_eq!(
            picked_message("subject\n\nbody\n\nSigned-off-by: B <b@x>\n", X, true, None),
            format!("subject\n\nbody\n\nSigned-off-by: B <b@x>\n(cherry picked from commit {X})\n")
        );
        assert_eq!(
            picked_message("subject", X, true, None),
            format!("subject\n\n(cherry picked from commit {X})\n")
        );
    }

    #[test]
    fn signoff_is_not_repeated_when_last() {
        let once = picked_message("s\n", X, false, Some(SOB));
        assert_eq!(once, format!("s\n\n{SOB}\n"));
        assert_eq!(picked_message(&once, X, false, Some(SOB)), once);
        assert_eq!(
            picked_message("s\n", X, true, Some(SOB)),
            format!("s\n\n(cherry picked from commit {X})\n{SOB}\n")
        );
    }
}
