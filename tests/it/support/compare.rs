//! Comparing a tool's text with the oracle's: one failure message shape for every test that wants equal lines.

/// Asserts `ours` (bport's output) equals `perf` (the oracle's), showing the first differing line with five lines
/// of context on both sides when not.
pub fn assert_same_lines(perf: &str, ours: &str, what: &str) {
    if perf == ours {
        return;
    }
    let (p, o): (Vec<&str>, Vec<&str>) = (perf.lines().collect(), ours.lines().collect());
    let first = p
        .iter()
        .zip(&o)
        .position(|(a, b)| a != b)
        .unwrap_or(p.len().min(o.len()));
    let from = first.saturating_sub(5);
    panic!(
        "{what}: bport differs from perf at line {} (perf {} lines, bport {} lines)\n--- perf\n{}\n--- bport\n{}",
        first + 1,
        p.len(),
        o.len(),
        p[from..(first + 5).min(p.len())].join("\n"),
        o[from..(first + 5).min(o.len())].join("\n"),
    );
}
