//! Iteration over the indices of a box in lexicographic order ([`Indices`]), and over any
//! shape's indices relative to its origin ([`Offsets`]).

/// The indices of a box `[lower, upper)` in lexicographic order (an odometer).
///
/// As an [`Iterator`] it yields one `Vec` per index; [`advance`](Indices::advance) steps without
/// allocating, for hot loops.
///
/// ```
/// use weft::ir::shape::{Shape, ShapeBase};
///
/// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
/// let s = Shape::with_origin([2, 2], [10, 10])?;
/// let mut it = s.indices();
/// let mut seen = Vec::new();
/// while let Some(index) = it.advance() {
///     seen.push(index[0] * 100 + index[1]);
/// }
/// assert_eq!(seen, [1010, 1011, 1110, 1111]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Indices {
    lower: Vec<usize>,
    upper: Vec<usize>,
    current: Vec<usize>,
    state: OdometerState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OdometerState {
    Fresh,
    Running,
    Done,
}

impl Indices {
    /// Iterates the box `[lower, upper)`; the caller guarantees equal lengths.
    pub(crate) fn new(lower: Vec<usize>, upper: Vec<usize>) -> Self {
        debug_assert_eq!(lower.len(), upper.len());
        let empty = lower.iter().zip(&upper).any(|(lo, hi)| lo >= hi);
        Indices {
            current: lower.clone(),
            lower,
            upper,
            state: if empty {
                OdometerState::Done
            } else {
                OdometerState::Fresh
            },
        }
    }

    /// Iterates nothing (the null shape).
    pub(crate) fn none() -> Self {
        Indices {
            lower: Vec::new(),
            upper: Vec::new(),
            current: Vec::new(),
            state: OdometerState::Done,
        }
    }

    /// Steps to the next index and lends it, or returns `None` when all are visited.
    pub fn advance(&mut self) -> Option<&[usize]> {
        match self.state {
            OdometerState::Done => return None,
            OdometerState::Fresh => {
                self.state = OdometerState::Running;
                return Some(&self.current);
            }
            OdometerState::Running => {}
        }
        for mode in (0..self.current.len()).rev() {
            self.current[mode] += 1;
            if self.current[mode] < self.upper[mode] {
                return Some(&self.current);
            }
            self.current[mode] = self.lower[mode];
        }
        self.state = OdometerState::Done;
        None
    }
}

impl Iterator for Indices {
    type Item = Vec<usize>;

    fn next(&mut self) -> Option<Vec<usize>> {
        self.advance().map(<[usize]>::to_vec)
    }
}

/// Indices of an underlying iterator made relative to an origin.
///
/// ```
/// use weft::ir::shape::{Shape, ShapeBase};
///
/// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
/// let s = Shape::with_origin([1, 2], [4, 7])?;
/// assert_eq!(s.offsets().collect::<Vec<_>>(), [[0, 0], [0, 1]]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Offsets<I> {
    inner: I,
    origin: Vec<usize>,
}

impl<I> Offsets<I> {
    /// Yields each index of `inner` minus `origin`; every index must be at or past `origin`.
    pub(crate) fn new(inner: I, origin: Vec<usize>) -> Self {
        Offsets { inner, origin }
    }
}

impl<I: Iterator<Item = Vec<usize>>> Iterator for Offsets<I> {
    type Item = Vec<usize>;

    fn next(&mut self) -> Option<Vec<usize>> {
        let mut index = self.inner.next()?;
        for (value, origin) in index.iter_mut().zip(&self.origin) {
            *value -= origin;
        }
        Some(index)
    }
}
