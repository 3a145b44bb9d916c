//! Event groups (perf 6.1's group view): the file's GROUP_DESC feature read into groups, and the tables of a
//! group's members folded into one table with a column per member.
//!
//! Owns the feature's parsing and the fold; the member columns are printed by `write_report` in `mod.rs`, and
//! the rows' order is `order.rs`'s.

use super::{EventTable, Row, SortKey, Staged};
use crate::perf::data::PerfFile;
use std::collections::HashMap;
use std::rc::Rc;

/// An event group of the file's GROUP_DESC feature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventGroup {
    /// The group's name; `None` for an anonymous group (perf writes `{anon_group}`).
    pub name: Option<String>,
    /// The leader's attr index.
    pub leader: usize,
    /// Members, the leader included (attrs `leader..leader + members`).
    pub members: usize,
}

/// The event groups of a file (header.c `process_group_desc`): a u32 count, then per group its name (a u32
/// length and the NUL-padded text), the leader's index and the member count, in the file's byte order.
/// Groups of one member and descriptions that do not fit the file's attrs are left out.
pub fn event_groups(file: &PerfFile) -> Vec<EventGroup> {
    use object::endian::Endian;
    let Some((_, data)) = file
        .features()
        .other
        .iter()
        .find(|(id, _)| *id == crate::perf::abi::HEADER_GROUP_DESC)
    else {
        return Vec::new();
    };
    let e = file.endian();
    let mut at = 0usize;
    let u32_at = |at: &mut usize| -> Option<u32> {
        let b: [u8; 4] = data.get(*at..*at + 4)?.try_into().ok()?;
        *at += 4;
        Some(e.read_u32(b))
    };
    let Some(nr) = u32_at(&mut at) else {
        return Vec::new();
    };
    let mut groups = Vec::new();
    for _ in 0..nr {
        let Some(len) = u32_at(&mut at) else { break };
        let Some(text) = data.get(at..at + len as usize) else {
            break;
        };
        at += len as usize;
        let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
        let name = String::from_utf8_lossy(&text[..end]).into_owned();
        let (Some(leader), Some(members)) = (u32_at(&mut at), u32_at(&mut at)) else {
            break;
        };
        let (leader, members) = (leader as usize, members as usize);
        if members > 1 && leader + members <= file.attrs().len() {
            groups.push(EventGroup {
                name: (name != "{anon_group}").then_some(name),
                leader,
                members,
            });
        }
    }
    groups
}

/// Folds the tables of group `g`'s members into one, in the leader's place (hist.c `hists__link`: an entry
/// of a member that the leader lacks joins as a row with the leader's share 0). Its header counts every
/// member's samples and period (builtin-report.c `hists__fprintf_nr_sample_events`) and names the group as
/// `evsel__group_desc` does.
pub(super) fn group_tables(
    staged: Vec<Staged>,
    g: &EventGroup,
    sort: &[SortKey],
    name_of: impl Fn(usize) -> Option<Rc<str>>,
) -> Vec<Staged> {
    let in_group = |i: usize| (g.leader..g.leader + g.members).contains(&i);
    if !staged.iter().any(|s| in_group(s.attr_index)) {
        return staged;
    }
    let n = g.members - 1;
    let names: Vec<String> = (g.leader..g.leader + g.members)
        .map(|i| name_of(i).map(|n| n.to_string()).unwrap_or_default())
        .collect();
    let mut merged = Staged {
        attr_index: g.leader,
        table: EventTable {
            event: format!(
                "{} {{ {} }}",
                g.name.as_deref().unwrap_or("anon group"),
                names.join(", ")
            ),
            group_totals: vec![0; g.members],
            ..EventTable::default()
        },
        rows: Vec::new(),
    };
    // Entries match as `hist_entry__cmp` compares them: by every key, a symbol without its level.
    let key_of = |r: &Row| -> Vec<String> {
        r.keys
            .iter()
            .zip(sort)
            .map(|(v, k)| match k {
                SortKey::Sym => v.get(4..).unwrap_or_default().to_owned(),
                _ => v.clone(),
            })
            .collect()
    };
    let mut index: HashMap<Vec<String>, usize> = HashMap::new();
    let mut rest = Vec::new();
    let mut members: Vec<Staged> = Vec::new();
    for st in staged {
        if in_group(st.attr_index) {
            members.push(st);
        } else {
            rest.push(st);
        }
    }
    members.sort_by_key(|m| m.attr_index);
    for m in members {
        let slot = m.attr_index - g.leader;
        let t = &mut merged.table;
        t.samples += m.table.samples;
        t.total_period += m.table.total_period;
        t.group_totals[slot] = m.table.total_period;
        t.comm_width = t.comm_width.max(m.table.comm_width);
        t.children = m.table.children;
        for mut r in m.rows {
            let key = key_of(&r.row);
            let period = r.row.period;
            match index.get(&key) {
                Some(&i) => {
                    let row = &mut merged.rows[i].row;
                    if slot == 0 {
                        row.period = period;
                        row.children = r.row.children;
                    } else {
                        row.members[slot - 1] = period;
                        row.members_children[slot - 1] = r.row.children;
                    }
                }
                None => {
                    r.row.members = vec![0; n];
                    r.row.members_children = vec![0; n];
                    // A member's entry the leader lacks has no callchain of the leader's to print.
                    if slot > 0 {
                        r.row.period = 0;
                        r.row.members[slot - 1] = period;
                        r.row.members_children[slot - 1] = r.row.children;
                        r.row.children = 0;
                        r.row.graph.clear();
                        r.depth = 0;
                    }
                    index.insert(key, merged.rows.len());
                    merged.rows.push(r);
                }
            }
        }
    }
    rest.push(merged);
    rest.sort_by_key(|s| s.attr_index);
    rest
}
