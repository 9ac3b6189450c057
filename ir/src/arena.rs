//! Typed arenas: entities are dense `u32` indices into a `Vec`, in the manner of Cranelift's
//! `PrimaryMap` and `entity_impl!`.
//!
//! Assumes nothing about the stored values. Guarantees that an entity created by
//! [`Arena::push`] indexes exactly the value pushed, and that entities of different kinds cannot
//! be confused because each kind is its own type (made with [`entity!`](crate::entity) or
//! [`entity_impl!`](crate::entity_impl)). Indexing with an entity from another arena panics, as
//! with a slice; code that reads untrusted IR uses [`Arena::get`] instead (the loop-IR verifier
//! does so before anything else indexes).

use std::fmt;
use std::marker::PhantomData;

/// A typed index into an [`Arena`].
pub trait EntityRef: Copy + Eq + Ord + std::hash::Hash + fmt::Debug {
    /// The index as a `usize`.
    fn index(self) -> usize;
    /// The entity at `index`.
    fn new(index: usize) -> Self;
}

/// Makes `$entity` (a `u32` newtype declared by the caller) an [`EntityRef`] displayed as
/// `$prefix` followed by its index, e.g. `v3`.
#[macro_export]
macro_rules! entity_impl {
    ($entity:ident, $prefix:expr) => {
        impl $crate::arena::EntityRef for $entity {
            fn index(self) -> usize {
                self.0 as usize
            }
            fn new(index: usize) -> Self {
                $entity(u32::try_from(index).expect("arena holds at most u32::MAX entities"))
            }
        }

        impl $entity {
            /// The raw index.
            pub fn as_u32(self) -> u32 {
                self.0
            }
            /// The entity with raw index `i`.
            pub fn from_u32(i: u32) -> Self {
                $entity(i)
            }
        }

        impl ::std::fmt::Display for $entity {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, "{}{}", $prefix, self.0)
            }
        }
    };
}

/// Declares a `u32` entity type with a display prefix, e.g. `entity!(NodeId, "%")`; its
/// `Debug` is its `Display`.
#[macro_export]
macro_rules! entity {
    ($(#[$attr:meta])* $name:ident, $prefix:expr) => {
        $(#[$attr])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(u32);

        $crate::entity_impl!($name, $prefix);

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(self, f)
            }
        }
    };
}

/// A vector of `V` indexed by the entity type `K`; entities are only ever appended.
#[derive(Clone, PartialEq)]
pub struct Arena<K: EntityRef, V> {
    items: Vec<V>,
    unused: PhantomData<K>,
}

impl<K: EntityRef, V> Default for Arena<K, V> {
    fn default() -> Self {
        Arena {
            items: Vec::new(),
            unused: PhantomData,
        }
    }
}

impl<K: EntityRef, V: fmt::Debug> fmt::Debug for Arena<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: EntityRef, V> Arena<K, V> {
    /// An empty arena.
    pub fn new() -> Self {
        Self::default()
    }
    /// Appends `v` and returns its entity.
    pub fn push(&mut self, v: V) -> K {
        let k = K::new(self.items.len());
        self.items.push(v);
        k
    }
    /// The number of entities.
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// True if the arena holds no entity.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// The value of `k`, if `k` belongs to this arena.
    pub fn get(&self, k: K) -> Option<&V> {
        self.items.get(k.index())
    }
    /// True if `k` belongs to this arena.
    pub fn is_valid(&self, k: K) -> bool {
        k.index() < self.items.len()
    }
    /// The value of `k`, mutably, if `k` belongs to this arena.
    pub fn get_mut(&mut self, k: K) -> Option<&mut V> {
        self.items.get_mut(k.index())
    }
    /// Entities and values in creation order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (K, &V)> + ExactSizeIterator {
        self.items.iter().enumerate().map(|(i, v)| (K::new(i), v))
    }
    /// Entities in creation order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = K> + ExactSizeIterator {
        (0..self.items.len()).map(K::new)
    }
    /// Values in creation order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator {
        self.items.iter()
    }
}

/// The name Cranelift gives the same structure; the loop IR uses it.
pub type PrimaryMap<K, V> = Arena<K, V>;

impl<K: EntityRef, V> std::ops::Index<K> for Arena<K, V> {
    type Output = V;
    fn index(&self, k: K) -> &V {
        &self.items[k.index()]
    }
}

impl<K: EntityRef, V> std::ops::IndexMut<K> for Arena<K, V> {
    fn index_mut(&mut self, k: K) -> &mut V {
        &mut self.items[k.index()]
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
