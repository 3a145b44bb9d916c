//! Event groups (perf 6.1's group view): the file's GROUP_DESC feature read into groups, and the tables of a
//! group's members folded into one table with a column per member.
//!
//! Owns which of the file's GROUP_DESC groups report shows (the feature itself is parsed in
//! `perf::data::features`) and the fold; the member columns are printed by `write_report` in `mod.rs`, and
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

/// The event groups of a file, from its GROUP_DESC feature (parsed in `perf::data`): groups of one member and
/// descriptions that do not fit the file's attrs are left out, and perf's `{anon_group}` is a group without a
/// name.
pub fn event_groups(file: &PerfFile) -> Vec<EventGroup> {
    let Some(groups) = &file.features().group_desc else {
        return Vec::new();
    };
    groups
        .iter()
        .filter_map(|g| {
            let (leader, members) = (g.leader_idx as usize, g.nr_members as usize);
            (members > 1 && leader.checked_add(members)? <= file.attrs().len()).then(|| {
                EventGroup {
                    name: (g.name != "{anon_group}").then(|| g.name.clone()),
                    leader,
                    members,
                }
            })
        })
        .collect()
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
