//! The names `{:?}` of an [`Axis`] shows (issue 47): an axis is only a table index, a dual
//! degree and a table number, so its `Debug` looks its name up here, in a process-wide registry
//! of the names in every live graph's axis table. The registry knows tables and entries by
//! their numbers only (table number, entry index), so it names no axis type.
//!
//! A graph holds its table's [`TableNames`] in an `Arc` (its clones share it, as they share the
//! table number) and registers each entry it declares, derives or renames. The registry maps a
//! table number to a weak reference only; the last graph of a table to drop removes the table,
//! so the registry holds the live tables, however many graphs a process makes and drops.
//!
//! Clones of a graph share a table number but may then grow different entries at one index:
//! an index given two names is marked ambiguous and shows as the index (`axis3`), never as a
//! name another graph of the table may not mean. A graph that alone holds its table replaces
//! an entry instead (its own rename, or an index reused after a dropped clone's).
//!
//! [`Axis`]: crate::axis::Axis

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// One table's names, indexed by entry (an `AxisId`'s number).
#[derive(Default)]
struct Entries {
    names: Vec<Entry>,
    /// How many declared (not derived) entries carry each name: a name declared twice shows
    /// as `name@index`, as `Graph::axis_name` and the text form write it.
    declared: HashMap<String, u32>,
}

#[derive(Clone, PartialEq)]
enum Entry {
    Vacant,
    Name {
        name: String,
        declared: bool,
    },
    /// Two names registered at this index by graphs sharing the table.
    Ambiguous,
}

/// The names of one axis table, shared by a graph and its clones; dropping the last removes
/// the table from the registry.
pub(crate) struct TableNames {
    table: u32,
    entries: Mutex<Entries>,
    /// Whether the registry lists this table (from its first name on).
    listed: AtomicBool,
}

impl std::fmt::Debug for TableNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TableNames({})", self.table)
    }
}

fn registry() -> MutexGuard<'static, HashMap<u32, Weak<TableNames>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<u32, Weak<TableNames>>>> = OnceLock::new();
    REGISTRY
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The number of axis tables the registry lists: those of live graphs with at least one axis.
#[cfg(test)]
fn registered_tables() -> usize {
    registry().len()
}

impl TableNames {
    pub(crate) fn new(table: u32) -> Arc<TableNames> {
        Arc::new(TableNames {
            table,
            entries: Mutex::default(),
            listed: AtomicBool::new(false),
        })
    }

    /// Records `name` for entry `index` (`declared`: a declared, not a derived, axis), by a
    /// graph holding `self`: set when the entry is new or when that graph alone holds the
    /// table, kept when it is the same, otherwise ambiguous.
    pub(crate) fn set(self: &Arc<Self>, index: u32, name: &str, declared: bool) {
        if self.table == 0 {
            return;
        }
        if !self.listed.swap(true, Ordering::AcqRel) {
            registry().insert(self.table, Arc::downgrade(self));
        }
        let alone = Arc::strong_count(self) == 1;
        let mut e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let i = index as usize;
        if e.names.len() <= i {
            e.names.resize(i + 1, Entry::Vacant);
        }
        let new = Entry::Name {
            name: name.to_string(),
            declared,
        };
        let next = match &e.names[i] {
            old if *old == new => return,
            Entry::Vacant => new,
            _ if alone => new,
            _ => Entry::Ambiguous,
        };
        let old = std::mem::replace(&mut e.names[i], next.clone());
        if let Entry::Name {
            name,
            declared: true,
        } = old
        {
            if let Some(n) = e.declared.get_mut(&name) {
                *n -= 1;
                if *n == 0 {
                    e.declared.remove(&name);
                }
            }
        }
        if let Entry::Name {
            name,
            declared: true,
        } = next
        {
            *e.declared.entry(name).or_insert(0) += 1;
        }
    }

    /// The name of entry `index` as `Graph::axis_name` shows it at degree 0, if known and
    /// unique.
    fn name(&self, index: u32) -> Option<String> {
        let e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match e.names.get(index as usize)? {
            Entry::Name {
                name,
                declared: true,
            } if e.declared.get(name).is_some_and(|n| *n > 1) => Some(format!("{name}@{index}")),
            Entry::Name { name, .. } => Some(name.clone()),
            Entry::Vacant | Entry::Ambiguous => None,
        }
    }
}

impl Drop for TableNames {
    fn drop(&mut self) {
        if !*self.listed.get_mut() {
            return;
        }
        let mut r = registry();
        // Remove the table only if it is this one (a table number reused after 2^32 graphs
        // may list a newer table).
        if r.get(&self.table)
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), self))
        {
            r.remove(&self.table);
        }
    }
}

thread_local! {
    static BY_INDEX: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with `{:?}` of every [`Axis`](crate::axis::Axis) on this thread in its index form
/// (`axis3*`), the form that tells axes apart by identity and takes no lock: for text used as
/// a key (the compiler's common-subexpression keys), where two axes of one name must not meet.
pub fn debug_axes_by_index<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            BY_INDEX.with(|b| b.set(self.0));
        }
    }
    let _restore = Restore(BY_INDEX.with(|b| b.replace(true)));
    f()
}

/// The registered name of entry `index` of axis table `table` (degree 0), if the table is live
/// and the name unambiguous, and `{:?}` is not in index form on this thread.
pub(crate) fn name_of(table: u32, index: u32) -> Option<String> {
    if table == 0 || BY_INDEX.with(|b| b.get()) {
        return None;
    }
    // The registry's lock is released before the table's is taken, and before `names` (maybe
    // the last reference, whose drop takes the registry's lock) drops.
    let weak = registry().get(&table)?.clone();
    let names = weak.upgrade()?;
    let name = names.name(index);
    drop(names);
    name
}

#[cfg(test)]
mod tests;
