//! Any text given to the backport engine's text parsers (patch-list lines, subjects, commit messages with their
//! trailers, diff text for patch-ids) gives a value or an error — never a panic (a subject with a
//! multi-byte character near its start must not panic) — and the values keep their invariants. The property test
//! `backport::patchlist::tests::text_parsers_never_panic_and_keep_their_invariants` checks the same on generated
//! input in every `cargo test`.

#![no_main]

use bport::backport::message::picked_message;
use bport::backport::PatchList;
use bport::git::{commit_subject, normalize_subject, origins, patch_id_of_diff_text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Messages and lists are read as git2 and bport read them: UTF-8, lossily.
    let text = String::from_utf8_lossy(data);
    if let Ok(list) = PatchList::parse(&text) {
        let again = PatchList::parse(&list.to_text()).expect("bport's own list text parses");
        let pairs = |l: &PatchList| -> Vec<(String, String)> {
            l.entries
                .iter()
                .map(|e| (e.sha.clone(), e.subject.clone()))
                .collect()
        };
        assert_eq!(pairs(&again), pairs(&list));
    }
    let norm = normalize_subject(&text);
    assert_eq!(normalize_subject(&norm), norm);
    let subject = commit_subject(&text);
    let _ = normalize_subject(&subject);
    let lower = text.to_ascii_lowercase();
    for o in origins(&text) {
        assert!((7..=40).contains(&o.hex.len()));
        assert!(lower.contains(&o.hex));
        let _ = o.names(&text);
    }
    let msg = picked_message(
        &text,
        "0123456789abcdef0123456789abcdef01234567",
        true,
        Some("Signed-off-by: A <a@b>"),
    );
    assert!(msg.starts_with(&*text));
    let _ = patch_id_of_diff_text(data);
});
