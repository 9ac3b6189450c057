//! Typed arenas: dense `u32` entity indices and the maps that own what they name.
//!
//! Assumes nothing about the stored values. Guarantees that an entity created by
//! [`PrimaryMap::push`] indexes exactly the value pushed, and that entities of different kinds
//! cannot be confused because each kind is its own type (made with [`entity_impl!`](crate::entity_impl)). Indexing
//! with an entity from another map panics, as with a slice; code that reads untrusted IR uses
//! [`PrimaryMap::get`] instead (the loop-IR verifier does so before anything else indexes).

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// A typed index into a [`PrimaryMap`].
pub trait EntityRef: Copy + Eq + Ord + std::hash::Hash + fmt::Debug {
    /// The entity with the given dense index.
    ///
    /// # Panics
    /// If `index` does not fit in `u32` (an arena never grows that large).
    fn new(index: usize) -> Self;
    /// The dense index of this entity.
    fn index(self) -> usize;
}

/// Declares `$entity` (a `u32` newtype) to be an [`EntityRef`] displayed as `$prefix` followed
/// by its index, e.g. `v3`.
#[macro_export]
macro_rules! entity_impl {
    ($entity:ident, $prefix:expr) => {
        impl $crate::arena::EntityRef for $entity {
            fn new(index: usize) -> Self {
                $entity(u32::try_from(index).expect("arena index exceeds u32"))
            }
            fn index(self) -> usize {
                self.0 as usize
            }
        }
        impl ::std::fmt::Display for $entity {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, "{}{}", $prefix, self.0)
            }
        }
        impl $entity {
            /// The entity with dense index `index`.
            pub fn from_u32(index: u32) -> Self {
                $entity(index)
            }
            /// The dense index of this entity.
            pub fn as_u32(self) -> u32 {
                self.0
            }
        }
    };
}

/// A vector of values owned by the map and named by typed entities `K`.
#[derive(Clone, PartialEq)]
pub struct PrimaryMap<K: EntityRef, V> {
    elems: Vec<V>,
    unused: PhantomData<K>,
}

impl<K: EntityRef, V> PrimaryMap<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Self {
            elems: Vec::new(),
            unused: PhantomData,
        }
    }

    /// Stores `value` and returns the new entity naming it.
    pub fn push(&mut self, value: V) -> K {
        let key = K::new(self.elems.len());
        self.elems.push(value);
        key
    }

    /// The value of `key`, or `None` if `key` was not created by this map.
    pub fn get(&self, key: K) -> Option<&V> {
        self.elems.get(key.index())
    }

    /// The value of `key`, mutably, or `None` if `key` was not created by this map.
    pub fn get_mut(&mut self, key: K) -> Option<&mut V> {
        self.elems.get_mut(key.index())
    }

    /// Whether `key` names a value of this map.
    pub fn is_valid(&self, key: K) -> bool {
        key.index() < self.elems.len()
    }

    /// The number of entities created.
    pub fn len(&self) -> usize {
        self.elems.len()
    }

    /// Whether no entity was created.
    pub fn is_empty(&self) -> bool {
        self.elems.is_empty()
    }

    /// All entities with their values, in creation order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (K, &V)> + '_ {
        self.elems.iter().enumerate().map(|(i, v)| (K::new(i), v))
    }

    /// All entities, in creation order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = K> + use<K, V> {
        (0..self.elems.len()).map(K::new)
    }

    /// All values, in creation order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &V> + '_ {
        self.elems.iter()
    }
}

impl<K: EntityRef, V> Default for PrimaryMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: EntityRef, V: fmt::Debug> fmt::Debug for PrimaryMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: EntityRef, V> Index<K> for PrimaryMap<K, V> {
    type Output = V;
    fn index(&self, key: K) -> &V {
        &self.elems[key.index()]
    }
}

impl<K: EntityRef, V> IndexMut<K> for PrimaryMap<K, V> {
    fn index_mut(&mut self, key: K) -> &mut V {
        &mut self.elems[key.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
    struct Thing(u32);
    entity_impl!(Thing, "t");

    #[test]
    fn push_returns_dense_typed_keys() {
        let mut map: PrimaryMap<Thing, &str> = PrimaryMap::new();
        let a = map.push("a");
        let b = map.push("b");
        assert_eq!((a.index(), b.index()), (0, 1));
        assert_eq!(map[b], "b");
        assert_eq!(b.to_string(), "t1");
        assert_eq!((Thing::from_u32(1), b.as_u32()), (b, 1));
        assert!(map.get(Thing(2)).is_none());
        assert_eq!(map.keys().collect::<Vec<_>>(), vec![a, b]);
    }
}
