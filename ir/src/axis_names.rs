//! The names `{:?}` of an [`Axis`] shows (issue 47): an axis is only a table index, a dual
//! degree and a table number, so its `Debug` looks its name up here, in a process-wide registry
//! of the names in every live graph's axis table.
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

use crate::axis::{Axis, AxisId};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// One table's names, indexed by `AxisId`.
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

    /// Records `name` for entry `id` (`declared`: a declared, not a derived, axis), by a graph
    /// holding `self`: set when the entry is new or when that graph alone holds the table,
    /// kept when it is the same, otherwise ambiguous.
    pub(crate) fn set(self: &Arc<Self>, id: AxisId, name: &str, declared: bool) {
        if self.table == 0 {
            return;
        }
        if !self.listed.swap(true, Ordering::AcqRel) {
            registry().insert(self.table, Arc::downgrade(self));
        }
        let alone = Arc::strong_count(self) == 1;
        let mut e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let i = id.as_u32() as usize;
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

    /// The name of entry `id` as `Graph::axis_name` shows it at degree 0, if known and unique.
    fn name(&self, id: AxisId) -> Option<String> {
        let e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match e.names.get(id.as_u32() as usize)? {
            Entry::Name {
                name,
                declared: true,
            } if e.declared.get(name).is_some_and(|n| *n > 1) => {
                Some(format!("{name}@{}", id.as_u32()))
            }
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

/// Runs `f` with `{:?}` of every [`Axis`] on this thread in its index form (`axis3*`), the
/// form that tells axes apart by identity and takes no lock: for text used as a key (the
/// compiler's common-subexpression keys), where two axes of one name must not meet.
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

/// The registered name of `axis`'s table entry (degree 0), if its table is live and the name
/// unambiguous, and `{:?}` is not in index form on this thread.
pub(crate) fn name_of(axis: Axis) -> Option<String> {
    if axis.table() == 0 || BY_INDEX.with(|b| b.get()) {
        return None;
    }
    // The registry's lock is released before the table's is taken, and before `names` (maybe
    // the last reference, whose drop takes the registry's lock) drops.
    let weak = registry().get(&axis.table())?.clone();
    let names = weak.upgrade()?;
    let name = names.name(axis.id);
    drop(names);
    name
}

#[cfg(test)]
mod tests {
    use crate::graph::Graph;
    use crate::{Axes, Axis, AxisDef, AxisId, SliceRange};

    #[test]
    fn debug_shows_names_duals_and_axes() {
        let mut g = Graph::new();
        let n = g.axis("N", 2).unwrap();
        let c = g.axis("C", 3).unwrap();
        assert_eq!(format!("{n:?}"), "N");
        assert_eq!(format!("{:?}", n.dual()), "N*");
        assert_eq!(format!("{:?}", n.dual().dual()), "N**");
        assert_eq!(format!("{:?}", n.undual()), "N^-1*");
        assert_eq!(format!("{:?}", n.with_dual(5)), "N^5*");
        let axes = Axes::new([n, c.dual()]).unwrap();
        assert_eq!(format!("{axes:?}"), "Axes([N, C*])");
        let s = g.derived_axis(AxisDef::Slice {
            of: n,
            range: SliceRange::range(0, 1),
        });
        assert_eq!(format!("{s:?}"), g.axis_name(s));
        g.rename_axis(s.id, "S");
        assert_eq!(format!("{s:?}"), "S");
        // Every Debug name is the graph's own display name.
        for (id, _) in g.axis_table() {
            let a = g.axis_of(id).with_dual(-1);
            assert_eq!(format!("{a:?}"), g.axis_name(a));
        }
    }

    #[test]
    fn an_axis_of_no_table_and_the_index_form_show_indices() {
        let mut g = Graph::new();
        let n = g.axis("N", 2).unwrap();
        assert_eq!(format!("{:?}", Axis::new(n.id)), "axis0");
        assert_eq!(
            format!("{:?}", Axis::new(AxisId::from_u32(7)).dual()),
            "axis7*"
        );
        let by_index = super::debug_axes_by_index(|| format!("{:?}", n.dual()));
        assert_eq!(by_index, "axis0*");
        assert_eq!(
            format!("{n:?}"),
            "N",
            "the index form ends with the closure"
        );
        // An index the table does not have yet.
        assert_eq!(format!("{:?}", g.axis_of(AxisId::from_u32(9))), "axis9");
    }

    #[test]
    fn two_declared_axes_of_one_name_show_their_indices() {
        let mut g = Graph::new();
        let a = g.declare_axis("N", Some(2), Vec::new());
        let b = g.declare_axis("N", Some(3), Vec::new());
        assert_eq!(format!("{a:?} {b:?}"), "N@0 N@1");
        assert_eq!(format!("{a:?}"), g.axis_name(a));
    }

    #[test]
    fn clones_that_diverge_show_the_index_never_the_other_name() {
        let mut g = Graph::new();
        let n = g.axis("N", 2).unwrap();
        let mut h = g.clone();
        let x = g.axis("X", 3).unwrap();
        let y = h.axis("Y", 4).unwrap();
        assert_eq!((x.id, x.table()), (y.id, y.table()), "one index, one table");
        assert_eq!(format!("{x:?}"), format!("{}", x.id));
        assert_eq!(format!("{y:?}"), format!("{}", y.id));
        // Entries both share keep their names; a new one only one clone has is named.
        assert_eq!(format!("{n:?}"), "N");
        let z = h.axis("Z", 5).unwrap();
        assert_eq!(format!("{z:?}"), "Z");
        // A rename by one clone of a shared entry: ambiguous too.
        h.rename_axis(n.id, "M");
        assert_eq!(format!("{n:?}"), "axis0");
        // The same declaration in both clones keeps its name.
        let mut g2 = Graph::new();
        g2.axis("A", 1).unwrap();
        let mut h2 = g2.clone();
        let (b1, b2) = (g2.axis("B", 2).unwrap(), h2.axis("B", 2).unwrap());
        assert_eq!(format!("{b1:?} {b2:?}"), "B B");
        // Alone again, a graph names its entries anew.
        drop(h);
        g.rename_axis(x.id, "X2");
        assert_eq!(format!("{x:?}"), "X2");
    }

    #[test]
    fn a_dropped_graphs_axes_show_their_indices() {
        let mut g = Graph::new();
        let n = g.axis("N", 2).unwrap();
        let h = g.clone();
        drop(g);
        assert_eq!(format!("{n:?}"), "N", "a clone keeps the table");
        drop(h);
        assert_eq!(format!("{n:?}"), "axis0");
        assert_eq!(format!("{:?}", n.dual()), "axis0*");
    }

    #[test]
    fn the_registry_holds_only_live_tables() {
        let live: Vec<Graph> = (0..10)
            .map(|_| {
                let mut g = Graph::new();
                g.axis("N", 1).unwrap();
                g
            })
            .collect();
        for i in 0..100_000 {
            let mut g = Graph::new();
            let n = g.axis("N", i).unwrap();
            let h = g.clone();
            g.derived_axis(AxisDef::Slice {
                of: n,
                range: SliceRange::range(0, 1),
            });
            drop(h);
        }
        // Other tests of this binary make graphs on other threads at the same time; a few
        // hundred at once at most, not 100 000.
        let n = super::registered_tables();
        assert!((10..10_000).contains(&n), "{n} tables listed");
        drop(live);
    }
}
