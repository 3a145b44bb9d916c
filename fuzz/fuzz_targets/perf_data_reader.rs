//! Any byte string given to the perf.data reader gives an error, warnings or records — never a panic, a hang or
//! an allocation the input did not pay for — and `bport script` and `buildid-list` over it (symbols from an
//! empty file system) end the same way. Every error and warning is a plain sentence: a garbage length or offset
//! is called garbage, never printed as a 20-digit number.

#![no_main]

use bport::perf::data::{PerfFile, Record};
use bport::perf::script::{write_script_with, Options};
use bport::perf::symbols::MemLookup;
use libfuzzer_sys::fuzz_target;

/// No number of a terabyte or more and no 16-digit hex offset in a message meant for people.
fn assert_plain(msg: &str) {
    let long_number = msg
        .split(|c: char| !c.is_ascii_digit())
        .any(|run| run.len() >= 13);
    let long_hex = msg
        .split(|c: char| !c.is_ascii_hexdigit() && c != 'x')
        .any(|run| run.starts_with("0x") && run.len() > 2 + 12);
    assert!(!long_number && !long_hex, "not a plain sentence: {msg}");
}

fuzz_target!(|data: &[u8]| {
    let file = match PerfFile::from_bytes(data.to_vec()) {
        Ok(file) => file,
        Err(e) => return assert_plain(&e.to_string()),
    };
    let _ = file.attrs();
    let _ = file.features();
    for w in file.warnings() {
        assert_plain(&w.to_string());
    }
    for mut records in [file.records(), file.records_in_file_order()] {
        for r in records.by_ref() {
            match r {
                // Touch the lazily read parts of samples too.
                Ok(Record::Sample(s)) => {
                    if let Some(c) = s.callchain {
                        let _ = c.iter().count();
                    }
                    if let Some(b) = s.branch_stack {
                        let _ = b.iter().count();
                    }
                    if let Some(r) = s.regs_user {
                        let _ = r.get(7);
                    }
                    if let Some(st) = s.stack_user {
                        let _ = st.valid().len();
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    assert_plain(&e.to_string());
                    break;
                }
            }
        }
        for w in records.warnings() {
            assert_plain(&w.to_string());
        }
    }
    let options = Options::default();
    match write_script_with(&file, &options, MemLookup::new(), &mut std::io::sink()) {
        Ok(outcome) => outcome.warnings.iter().for_each(|w| assert_plain(w)),
        Err(e) => assert_plain(&e.to_string()),
    }
    if let Err(e) = bport::perf::tools::archive::buildid_list(&file, &options, false) {
        assert_plain(&e.to_string());
    }
});
