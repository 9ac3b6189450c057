//! Borrowed host arrays: what a call reads its inputs from without taking or copying them.
//!
//! A [`HostView`] is axes, lengths and row-major elements that the caller owns — a
//! [`HostArray`] it keeps ([`HostArray::view`]), a plain slice with its axes
//! ([`HostView::new`]), or an `ndarray` view in standard layout (feature `ndarray`). Making one
//! allocates nothing. [`AsHostView`] is what a call accepts per input, so `&[HostArray]`,
//! `&[&HostArray]` and `&[HostView]` all work; [`Inputs`] is the object-safe list of them an
//! executable reads.
//!
//! Guarantees: a view's lengths match its axes in number and its element count (checked,
//! overflow is [`HostError::Overflow`]), so code reading it by row-major index stays in bounds.

use crate::axis::Axes;
use crate::dtype::DType;
use crate::host::{DataMut, DataRef, Element, HostArray, HostError};

/// A borrowed array: axes, lengths and row-major elements the caller owns.
///
/// ```
/// use weft::ir::{Axes, Graph, HostView};
/// let mut g = Graph::new();
/// let n = g.axis("N", 3)?;
/// let axes = Axes::new([n])?;
/// let mine = vec![1.0f64, 2.0, 3.0];
/// let v = HostView::new(&axes, &[3], &mine)?; // borrows `mine`, copies nothing
/// assert_eq!(v.shape(), &[3]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct HostView<'a> {
    axes: &'a Axes,
    shape: &'a [usize],
    data: DataRef<'a>,
}

impl<'a> HostView<'a> {
    /// A view of `data` (row-major) over `axes` with lengths `shape`.
    pub fn new<T: Element>(
        axes: &'a Axes,
        shape: &'a [usize],
        data: &'a [T],
    ) -> Result<HostView<'a>, HostError> {
        HostView::of_data(axes, shape, T::to_ref(data))
    }

    /// A view of borrowed elements of any dtype.
    pub fn of_data(
        axes: &'a Axes,
        shape: &'a [usize],
        data: DataRef<'a>,
    ) -> Result<HostView<'a>, HostError> {
        if axes.len() != shape.len() {
            return Err(HostError::Rank {
                axes: axes.len(),
                rank: shape.len(),
                shape: shape.to_vec(),
            });
        }
        let Some(expected) = crate::size::element_count(shape) else {
            return Err(HostError::Overflow {
                shape: shape.to_vec(),
            });
        };
        if expected != data.len() {
            return Err(HostError::Size {
                shape: shape.to_vec(),
                expected,
                got: data.len(),
            });
        }
        Ok(HostView { axes, shape, data })
    }

    /// The axes.
    pub fn axes(&self) -> &'a Axes {
        self.axes
    }
    /// The lengths, one per axis.
    pub fn shape(&self) -> &'a [usize] {
        self.shape
    }
    /// The elements.
    pub fn data(&self) -> DataRef<'a> {
        self.data
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }
    /// An owned copy.
    pub fn to_owned_array(&self) -> HostArray {
        HostArray::new(
            self.axes.clone(),
            self.shape.to_vec(),
            self.data.to_owned_data(),
        )
        .expect("a view's lengths match its elements")
    }
}

impl HostArray {
    /// The array, borrowed.
    pub fn view(&self) -> HostView<'_> {
        HostView {
            axes: self.axes(),
            shape: self.shape(),
            data: DataRef::of(self.data()),
        }
    }
}

/// A mutably borrowed array: axes, lengths and row-major elements the caller owns, for a call
/// to write an output into ([`OutputArrays::Borrowed`]).
///
/// ```
/// use weft::ir::{Axes, Graph, HostViewMut};
/// let mut g = Graph::new();
/// let n = g.axis("N", 3)?;
/// let axes = Axes::new([n])?;
/// let mut mine = vec![0.0f32; 3];
/// let v = HostViewMut::new(&axes, &[3], &mut mine)?; // borrows `mine`, copies nothing
/// assert_eq!(v.view().shape(), &[3]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct HostViewMut<'a> {
    axes: &'a Axes,
    shape: &'a [usize],
    data: DataMut<'a>,
}

impl<'a> HostViewMut<'a> {
    /// A view of `data` (row-major) over `axes` with lengths `shape`.
    pub fn new<T: Element>(
        axes: &'a Axes,
        shape: &'a [usize],
        data: &'a mut [T],
    ) -> Result<HostViewMut<'a>, HostError> {
        HostViewMut::of_data(axes, shape, T::to_mut(data))
    }

    /// A view of mutably borrowed elements of any dtype.
    pub fn of_data(
        axes: &'a Axes,
        shape: &'a [usize],
        data: DataMut<'a>,
    ) -> Result<HostViewMut<'a>, HostError> {
        // The same checks as a shared view's.
        HostView::of_data(axes, shape, data.as_ref())?;
        Ok(HostViewMut { axes, shape, data })
    }

    /// The array, read-only.
    pub fn view(&self) -> HostView<'_> {
        HostView {
            axes: self.axes,
            shape: self.shape,
            data: self.data.as_ref(),
        }
    }

    /// The elements, to write.
    pub fn data_mut(&mut self) -> DataMut<'_> {
        self.data.reborrow()
    }
}

impl HostArray {
    /// The array, borrowed to write into.
    pub fn view_mut(&mut self) -> HostViewMut<'_> {
        let (axes, shape, data) = self.parts_mut();
        HostViewMut {
            axes,
            shape,
            data: DataMut::of(data),
        }
    }
}

/// The arrays one call writes its outputs into, in output order: owned arrays (which a
/// backend may also replace) or borrowed memory (which it can only write).
#[derive(Debug)]
pub enum OutputArrays<'a, 'v> {
    /// Arrays the caller owns.
    Owned(&'a mut [HostArray]),
    /// Memory the caller lends.
    Borrowed(&'a mut [HostViewMut<'v>]),
}

impl<'v> OutputArrays<'_, 'v> {
    /// How many.
    pub fn len(&self) -> usize {
        match self {
            OutputArrays::Owned(a) => a.len(),
            OutputArrays::Borrowed(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Output `i` (`i < len()`), read-only.
    pub fn view(&self, i: usize) -> HostView<'_> {
        match self {
            OutputArrays::Owned(a) => a[i].view(),
            OutputArrays::Borrowed(v) => v[i].view(),
        }
    }

    /// Every output's elements, to write, in order (borrowed apart, so all at once).
    pub fn data_mut(&mut self) -> impl Iterator<Item = DataMut<'_>> + use<'_, 'v> {
        let (owned, borrowed) = match self {
            OutputArrays::Owned(a) => (Some(a.iter_mut()), None),
            OutputArrays::Borrowed(v) => (None, Some(v.iter_mut())),
        };
        let owned = owned.into_iter().flatten().map(HostArray::data_mut);
        let borrowed = borrowed.into_iter().flatten().map(|v| v.data_mut());
        owned.chain(borrowed)
    }

    /// Makes output `i` hold `value` (its axes, lengths and dtype, as the caller checked):
    /// moved in where the array is owned, copied into borrowed memory.
    pub fn put(&mut self, i: usize, value: HostArray) -> Result<(), HostError> {
        match self {
            OutputArrays::Owned(a) => {
                a[i] = value;
                Ok(())
            }
            OutputArrays::Borrowed(v) => v[i].data_mut().copy_from(value.view().data()),
        }
    }

    /// The same arrays, reborrowed for a shorter time.
    pub fn reborrow(&mut self) -> OutputArrays<'_, 'v> {
        match self {
            OutputArrays::Owned(a) => OutputArrays::Owned(a),
            OutputArrays::Borrowed(v) => OutputArrays::Borrowed(v),
        }
    }
}

/// What a call accepts for one input: anything that lends a [`HostView`].
///
/// ```
/// use weft::ir::{AsHostView, Axes, Graph, HostArray};
/// let mut g = Graph::new();
/// let n = g.axis("N", 2)?;
/// let a = HostArray::from_vec(Axes::new([n])?, vec![2], vec![1i32, 2])?;
/// // An owned array, a reference to one and a view all lend a view.
/// assert_eq!(a.host_view().shape(), (&a).host_view().shape());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait AsHostView {
    /// The input, borrowed.
    fn host_view(&self) -> HostView<'_>;
}

impl AsHostView for HostArray {
    fn host_view(&self) -> HostView<'_> {
        self.view()
    }
}

impl AsHostView for HostView<'_> {
    fn host_view(&self) -> HostView<'_> {
        *self
    }
}

impl<T: AsHostView + ?Sized> AsHostView for &T {
    fn host_view(&self) -> HostView<'_> {
        (**self).host_view()
    }
}

/// The inputs of one call, in placeholder order: object-safe, so executables behind
/// `dyn Executable` read any list of [`AsHostView`]s without it being collected first.
pub trait Inputs {
    /// How many.
    fn count(&self) -> usize;
    /// Input `i` (`i < count()`).
    fn input(&self, i: usize) -> HostView<'_>;
}

impl<T: AsHostView> Inputs for [T] {
    fn count(&self) -> usize {
        self.len()
    }
    fn input(&self, i: usize) -> HostView<'_> {
        self[i].host_view()
    }
}

/// A borrowed list is a list (so `&inputs`, a sized value, makes a `&dyn Inputs`).
impl<T: AsHostView> Inputs for &[T] {
    fn count(&self) -> usize {
        self.len()
    }
    fn input(&self, i: usize) -> HostView<'_> {
        self[i].host_view()
    }
}

impl<T: AsHostView> Inputs for Vec<T> {
    fn count(&self) -> usize {
        self.len()
    }
    fn input(&self, i: usize) -> HostView<'_> {
        self[i].host_view()
    }
}

#[cfg(feature = "ndarray")]
mod nd {
    use super::*;

    impl<'a> HostView<'a> {
        /// A view of an `ndarray` view over `axes`, without copying: the view must be in
        /// standard (row-major, contiguous) layout — `.as_standard_layout()` makes one that is —
        /// else [`HostError::Layout`].
        pub fn from_ndarray<T: Element, D: ndarray::Dimension>(
            axes: &'a Axes,
            view: &'a ndarray::ArrayView<'a, T, D>,
        ) -> Result<HostView<'a>, HostError> {
            let data = view.as_slice().ok_or(HostError::Layout)?;
            HostView::new(axes, view.shape(), data)
        }
    }
}
