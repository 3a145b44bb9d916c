//! Any byte string given to the perf.data reader gives an error, warnings or records — never a panic, a hang or
//! an allocation the input did not pay for.

#![no_main]

use bport::perf::data::{PerfFile, Record};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = PerfFile::from_bytes(data.to_vec()) else {
        return;
    };
    let _ = file.attrs();
    let _ = file.features();
    for records in [file.records(), file.records_in_file_order()] {
        for r in records {
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
                Err(_) => break,
            }
        }
    }
});
