//! Host arrays: tensors in host memory, carrying their axes, dtype and row-major data, with
//! conversions from and to `Vec`, `ndarray` (feature `ndarray`) and `.npy` files; their
//! elements owned ([`ArrayData`]) or borrowed ([`DataRef`], what a `HostView` holds).

use crate::axis::Axes;
use crate::dtype::DType;
use std::fmt;
use std::path::Path;

/// A single value of any dtype, as given for `fill` initial values.
///
/// ```
/// use weft::ir::{DType, Graph, Scalar, TensorInit};
/// let mut g = Graph::new();
/// let n = g.axis("N", 3)?;
/// let v = g.variable("v", &[n], DType::F32, TensorInit::Fill(Scalar::Float(0.5)))?;
/// assert_eq!(g.node(v).dtype, DType::F32);
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A floating-point value.
    Float(f64),
    /// An integer value.
    Int(i64),
    /// A boolean.
    Bool(bool),
}

impl Scalar {
    /// Zero of `dtype`.
    pub fn zero(dtype: DType) -> Scalar {
        match dtype {
            DType::F32 | DType::F64 => Scalar::Float(0.0),
            DType::I32 | DType::I64 => Scalar::Int(0),
            DType::Bool => Scalar::Bool(false),
        }
    }

    /// The canonical form of this value for `dtype`: floats hold `Float` (an `Int` converts,
    /// and f32 rounds), integers hold `Int` in range, bools hold `Bool`.
    pub fn to_dtype(self, dtype: DType) -> Result<Scalar, String> {
        match (dtype, self) {
            (DType::F32, Scalar::Float(v)) => Ok(Scalar::Float(v as f32 as f64)),
            (DType::F32, Scalar::Int(v)) => Ok(Scalar::Float(v as f32 as f64)),
            (DType::F64, Scalar::Float(v)) => Ok(Scalar::Float(v)),
            (DType::F64, Scalar::Int(v)) => Ok(Scalar::Float(v as f64)),
            (DType::I64, Scalar::Int(v)) => Ok(Scalar::Int(v)),
            (DType::I32, Scalar::Int(v)) if i32::try_from(v).is_ok() => Ok(Scalar::Int(v)),
            (DType::Bool, Scalar::Bool(b)) => Ok(Scalar::Bool(b)),
            (d, s) => Err(format!("value {s} does not fit dtype {d}")),
        }
    }

    /// The value as f64 (bools are 0 and 1).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Float(v) => v,
            Scalar::Int(v) => v as f64,
            Scalar::Bool(b) => b as u8 as f64,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Float(v) => write_float(f, *v),
            Scalar::Int(v) => write!(f, "{v}"),
            Scalar::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// Writes a float so that it reads back exactly and never looks like an integer.
pub fn write_float(f: &mut impl fmt::Write, v: f64) -> fmt::Result {
    if v.is_nan() {
        f.write_str("nan")
    } else if v.is_infinite() {
        f.write_str(if v > 0.0 { "inf" } else { "-inf" })
    } else if v == v.trunc() && v.abs() < 1e16 {
        write!(f, "{v:.1}")
    } else {
        write!(f, "{v:?}")
    }
}

/// Row-major element data of one dtype.
///
/// ```
/// use weft::ir::{ArrayData, DType};
/// let d = ArrayData::F32(vec![1.0, 2.0]);
/// assert_eq!((d.dtype(), d.len()), (DType::F32, 2));
/// assert_eq!(ArrayData::zeros(DType::I64, 3)?, ArrayData::I64(vec![0; 3]));
/// # Ok::<(), weft::ir::HostError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum ArrayData {
    /// f32 elements.
    F32(Vec<f32>),
    /// f64 elements.
    F64(Vec<f64>),
    /// i32 elements.
    I32(Vec<i32>),
    /// i64 elements.
    I64(Vec<i64>),
    /// bool elements.
    Bool(Vec<bool>),
}

impl ArrayData {
    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        match self {
            ArrayData::F32(_) => DType::F32,
            ArrayData::F64(_) => DType::F64,
            ArrayData::I32(_) => DType::I32,
            ArrayData::I64(_) => DType::I64,
            ArrayData::Bool(_) => DType::Bool,
        }
    }
    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            ArrayData::F32(v) => v.len(),
            ArrayData::F64(v) => v.len(),
            ArrayData::I32(v) => v.len(),
            ArrayData::I64(v) => v.len(),
            ArrayData::Bool(v) => v.len(),
        }
    }
    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A digest of the dtype and every element's bits (floats by their bit patterns: `-0.0`
    /// and `0.0` differ, a NaN is its payload), for finding equal data among many arrays
    /// without comparing each pair; equal digests still need [`ArrayData::same_bits`].
    pub fn bits_digest(&self) -> u64 {
        // FNV-style mixing of 64-bit words: cheap, and collisions are checked anyway.
        fn mix(h: u64, w: u64) -> u64 {
            (h.rotate_left(5) ^ w).wrapping_mul(0x0100_0000_01b3)
        }
        /// The words of `v` (`per_word` elements each, `word` packing them) in four lanes
        /// mixed independently: one chain's multiply latency bounded the digest of a
        /// 2²⁰-element constant at 2 ms, half of that graph's passes.
        fn fold<T: Copy + Default>(
            seed: u64,
            v: &[T],
            per_word: usize,
            word: fn(&[T]) -> u64,
        ) -> u64 {
            let mut h = [seed; 4];
            let mut chunks = v.chunks_exact(4 * per_word);
            for c in &mut chunks {
                for (lane, w) in h.iter_mut().zip(c.chunks_exact(per_word)) {
                    *lane = mix(*lane, word(w));
                }
            }
            // The rest padded with zero elements (the length is in the seed).
            for (i, w) in chunks.remainder().chunks(per_word).enumerate() {
                let mut padded = [T::default(); 2];
                padded[..w.len()].copy_from_slice(w);
                h[i] = mix(h[i], word(&padded[..per_word]));
            }
            h.iter().fold(seed, |acc, &x| mix(acc, x))
        }
        let seed = mix(
            0xcbf2_9ce4_8422_2325 ^ self.dtype() as u64,
            self.len() as u64,
        );
        match self {
            ArrayData::F32(v) => fold(seed, v, 2, |w| {
                u64::from(w[0].to_bits()) | u64::from(w[1].to_bits()) << 32
            }),
            ArrayData::F64(v) => fold(seed, v, 1, |w| w[0].to_bits()),
            ArrayData::I32(v) => fold(seed, v, 2, |w| {
                u64::from(w[0] as u32) | u64::from(w[1] as u32) << 32
            }),
            ArrayData::I64(v) => fold(seed, v, 1, |w| w[0] as u64),
            ArrayData::Bool(v) => fold(seed, v, 1, |w| u64::from(w[0])),
        }
    }
    /// Whether `other` holds the same elements bit for bit, with the same dtype.
    pub fn same_bits(&self, other: &ArrayData) -> bool {
        match (self, other) {
            (ArrayData::F32(a), ArrayData::F32(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (ArrayData::F64(a), ArrayData::F64(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (ArrayData::I32(a), ArrayData::I32(b)) => a == b,
            (ArrayData::I64(a), ArrayData::I64(b)) => a == b,
            (ArrayData::Bool(a), ArrayData::Bool(b)) => a == b,
            _ => false,
        }
    }
    /// `n` copies of `value`, which must fit `dtype` (see [`Scalar::to_dtype`]). The allocation
    /// is fallible: a size the system refuses is [`HostError::Alloc`], never an abort.
    pub fn filled(dtype: DType, value: Scalar, n: usize) -> Result<ArrayData, HostError> {
        let value = value
            .to_dtype(dtype)
            .map_err(|message| HostError::Value { message })?;
        Ok(match value {
            Scalar::Float(v) if dtype == DType::F32 => ArrayData::F32(try_vec(v as f32, n)?),
            Scalar::Float(v) => ArrayData::F64(try_vec(v, n)?),
            Scalar::Int(v) if dtype == DType::I32 => ArrayData::I32(try_vec(v as i32, n)?),
            Scalar::Int(v) => ArrayData::I64(try_vec(v, n)?),
            Scalar::Bool(b) => ArrayData::Bool(try_vec(b, n)?),
        })
    }
    /// `n` zeros of `dtype` (false for bool), or [`HostError::Alloc`] when the system would not
    /// give the memory. Zeroed allocation: large arrays get fresh zero pages from the system
    /// instead of being written element by element.
    pub fn zeros(dtype: DType, n: usize) -> Result<ArrayData, HostError> {
        check_alloc(n.saturating_mul(dtype.size_bytes()))?;
        Ok(match dtype {
            DType::F32 => ArrayData::F32(vec![0.0; n]),
            DType::F64 => ArrayData::F64(vec![0.0; n]),
            DType::I32 => ArrayData::I32(vec![0; n]),
            DType::I64 => ArrayData::I64(vec![0; n]),
            DType::Bool => ArrayData::Bool(vec![false; n]),
        })
    }
    /// Element `i` as a [`Scalar`], if in range.
    pub fn get(&self, i: usize) -> Option<Scalar> {
        Some(match self {
            ArrayData::F32(v) => Scalar::Float(*v.get(i)? as f64),
            ArrayData::F64(v) => Scalar::Float(*v.get(i)?),
            ArrayData::I32(v) => Scalar::Int(*v.get(i)? as i64),
            ArrayData::I64(v) => Scalar::Int(*v.get(i)?),
            ArrayData::Bool(v) => Scalar::Bool(*v.get(i)?),
        })
    }
    /// The elements reordered by `perm`: element `k` of the result is element `perm[k]` here.
    pub fn gather(&self, perm: &[usize]) -> ArrayData {
        fn g<T: Copy>(v: &[T], p: &[usize]) -> Vec<T> {
            p.iter().map(|&i| v[i]).collect()
        }
        match self {
            ArrayData::F32(v) => ArrayData::F32(g(v, perm)),
            ArrayData::F64(v) => ArrayData::F64(g(v, perm)),
            ArrayData::I32(v) => ArrayData::I32(g(v, perm)),
            ArrayData::I64(v) => ArrayData::I64(g(v, perm)),
            ArrayData::Bool(v) => ArrayData::Bool(g(v, perm)),
        }
    }
}

/// Borrowed row-major elements of one dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DataRef<'a> {
    /// 32-bit floats.
    F32(&'a [f32]),
    /// 64-bit floats.
    F64(&'a [f64]),
    /// 32-bit integers.
    I32(&'a [i32]),
    /// 64-bit integers.
    I64(&'a [i64]),
    /// Booleans.
    Bool(&'a [bool]),
}

impl DataRef<'_> {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            DataRef::F32(_) => DType::F32,
            DataRef::F64(_) => DType::F64,
            DataRef::I32(_) => DType::I32,
            DataRef::I64(_) => DType::I64,
            DataRef::Bool(_) => DType::Bool,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            DataRef::F32(v) => v.len(),
            DataRef::F64(v) => v.len(),
            DataRef::I32(v) => v.len(),
            DataRef::I64(v) => v.len(),
            DataRef::Bool(v) => v.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An owned copy.
    pub fn to_owned_data(&self) -> ArrayData {
        match self {
            DataRef::F32(v) => ArrayData::F32(v.to_vec()),
            DataRef::F64(v) => ArrayData::F64(v.to_vec()),
            DataRef::I32(v) => ArrayData::I32(v.to_vec()),
            DataRef::I64(v) => ArrayData::I64(v.to_vec()),
            DataRef::Bool(v) => ArrayData::Bool(v.to_vec()),
        }
    }
}

impl<'a> DataRef<'a> {
    /// The elements of `data`, borrowed.
    pub fn of(data: &'a ArrayData) -> DataRef<'a> {
        match data {
            ArrayData::F32(v) => DataRef::F32(v),
            ArrayData::F64(v) => DataRef::F64(v),
            ArrayData::I32(v) => DataRef::I32(v),
            ArrayData::I64(v) => DataRef::I64(v),
            ArrayData::Bool(v) => DataRef::Bool(v),
        }
    }

    /// The elements as a slice of `T`, if they are of that type.
    pub fn as_slice<T: Element>(&self) -> Option<&'a [T]> {
        T::from_ref(*self)
    }
}

/// Mutably borrowed row-major elements of one dtype: memory a call writes an output into.
#[derive(Debug, PartialEq)]
pub enum DataMut<'a> {
    /// 32-bit floats.
    F32(&'a mut [f32]),
    /// 64-bit floats.
    F64(&'a mut [f64]),
    /// 32-bit integers.
    I32(&'a mut [i32]),
    /// 64-bit integers.
    I64(&'a mut [i64]),
    /// Booleans.
    Bool(&'a mut [bool]),
}

impl<'a> DataMut<'a> {
    /// The elements of `data`, borrowed mutably.
    pub fn of(data: &'a mut ArrayData) -> DataMut<'a> {
        match data {
            ArrayData::F32(v) => DataMut::F32(v),
            ArrayData::F64(v) => DataMut::F64(v),
            ArrayData::I32(v) => DataMut::I32(v),
            ArrayData::I64(v) => DataMut::I64(v),
            ArrayData::Bool(v) => DataMut::Bool(v),
        }
    }

    /// The same elements, reborrowed for a shorter time.
    pub fn reborrow(&mut self) -> DataMut<'_> {
        match self {
            DataMut::F32(v) => DataMut::F32(v),
            DataMut::F64(v) => DataMut::F64(v),
            DataMut::I32(v) => DataMut::I32(v),
            DataMut::I64(v) => DataMut::I64(v),
            DataMut::Bool(v) => DataMut::Bool(v),
        }
    }

    /// The elements, read-only.
    pub fn as_ref(&self) -> DataRef<'_> {
        match self {
            DataMut::F32(v) => DataRef::F32(v),
            DataMut::F64(v) => DataRef::F64(v),
            DataMut::I32(v) => DataRef::I32(v),
            DataMut::I64(v) => DataRef::I64(v),
            DataMut::Bool(v) => DataRef::Bool(v),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.as_ref().dtype()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.as_ref().len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies `src`'s elements in: [`HostError::Size`] unless the lengths match,
    /// [`HostError::DType`] unless the dtypes do.
    pub fn copy_from(&mut self, src: DataRef<'_>) -> Result<(), HostError> {
        if src.len() != self.len() {
            return Err(HostError::Size {
                shape: vec![self.len()],
                expected: self.len(),
                got: src.len(),
            });
        }
        match (self, src) {
            (DataMut::F32(d), DataRef::F32(s)) => d.copy_from_slice(s),
            (DataMut::F64(d), DataRef::F64(s)) => d.copy_from_slice(s),
            (DataMut::I32(d), DataRef::I32(s)) => d.copy_from_slice(s),
            (DataMut::I64(d), DataRef::I64(s)) => d.copy_from_slice(s),
            (DataMut::Bool(d), DataRef::Bool(s)) => d.copy_from_slice(s),
            (d, s) => {
                return Err(HostError::DType {
                    requested: s.dtype(),
                    actual: d.dtype(),
                })
            }
        }
        Ok(())
    }
}

/// `n` copies of `value`, allocated fallibly: [`HostError::Alloc`] when the bytes overflow or
/// the system refuses them.
pub fn try_vec<T: Clone>(value: T, n: usize) -> Result<Vec<T>, HostError> {
    let bytes = n.saturating_mul(std::mem::size_of::<T>());
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| HostError::Alloc { bytes })?;
    v.resize(n, value);
    Ok(v)
}

/// Checks that `bytes` can be allocated now, by reserving and releasing them: for code that
/// allocates through infallible paths (`collect`), so that a size the system refuses is
/// [`HostError::Alloc`] rather than an abort. A check, not a reservation: memory may still run
/// out later, as with any allocation.
pub fn check_alloc(bytes: usize) -> Result<(), HostError> {
    Vec::<u8>::new()
        .try_reserve_exact(bytes)
        .map_err(|_| HostError::Alloc { bytes })
}

/// A Rust element type that a host array can hold.
pub trait Element: Copy + 'static {
    /// The matching dtype.
    const DTYPE: DType;
    /// Wraps a vector.
    fn wrap(v: Vec<Self>) -> ArrayData;
    /// The elements, if `d` holds this type.
    fn unwrap(d: &ArrayData) -> Option<&[Self]>;
    /// The elements, mutably, if `d` holds this type.
    fn unwrap_mut(d: &mut ArrayData) -> Option<&mut [Self]>;
    /// A slice of this type as borrowed data.
    fn to_ref(v: &[Self]) -> DataRef<'_>;
    /// The borrowed elements as a slice of this type, if they are.
    fn from_ref(d: DataRef<'_>) -> Option<&[Self]>;
    /// A mutable slice of this type as mutably borrowed data.
    fn to_mut(v: &mut [Self]) -> DataMut<'_>;
}

macro_rules! element {
    ($t:ty, $v:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$v;
            fn wrap(v: Vec<Self>) -> ArrayData {
                ArrayData::$v(v)
            }
            fn unwrap(d: &ArrayData) -> Option<&[Self]> {
                match d {
                    ArrayData::$v(v) => Some(v),
                    _ => None,
                }
            }
            fn unwrap_mut(d: &mut ArrayData) -> Option<&mut [Self]> {
                match d {
                    ArrayData::$v(v) => Some(v),
                    _ => None,
                }
            }
            fn to_ref(v: &[Self]) -> DataRef<'_> {
                DataRef::$v(v)
            }
            fn from_ref(d: DataRef<'_>) -> Option<&[Self]> {
                match d {
                    DataRef::$v(v) => Some(v),
                    _ => None,
                }
            }
            fn to_mut(v: &mut [Self]) -> DataMut<'_> {
                DataMut::$v(v)
            }
        }
    };
}
element!(f32, F32);
element!(f64, F64);
element!(i32, I32);
element!(i64, I64);
element!(bool, Bool);

/// An error about a host array: its shape, dtype or file.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The data does not have as many elements as the shape.
    #[error("shape {shape:?} has {expected} elements but {got} values were given")]
    Size {
        /// The shape.
        shape: Vec<usize>,
        /// Elements the shape has.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// A shape with more elements than `usize` counts.
    #[error("shape {shape:?} has more elements than memory can address")]
    Overflow {
        /// The shape.
        shape: Vec<usize>,
    },
    /// Memory for host data could not be allocated.
    #[error("cannot allocate {bytes} bytes")]
    Alloc {
        /// The bytes requested.
        bytes: usize,
    },
    /// A value that does not fit the dtype asked for.
    #[error("{message}")]
    Value {
        /// What is wrong.
        message: String,
    },
    /// Shape and axes of different rank.
    #[error("{} but a shape of rank {rank} ({shape:?})", crate::size::count(*.axes, "axis", "axes"))]
    Rank {
        /// The number of axes.
        axes: usize,
        /// The shape's rank.
        rank: usize,
        /// The shape.
        shape: Vec<usize>,
    },
    /// An `ndarray` view to be borrowed is not in standard (row-major, contiguous) layout.
    #[error("the ndarray view is not in standard (row-major, contiguous) layout: borrow `.as_standard_layout()` of it")]
    Layout,
    /// The array holds another dtype than asked for.
    #[error("the array holds {actual}, not {requested}")]
    DType {
        /// The dtype asked for.
        requested: DType,
        /// The dtype held.
        actual: DType,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A `.npy` file weft cannot read.
    #[error("{path}: {message}")]
    Npy {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// A tensor in host memory: axes, their lengths, and row-major data in that axis order.
///
/// ```
/// use weft::ir::{Axes, Graph, HostArray};
/// let mut g = Graph::new();
/// let (r, c) = (g.axis("R", 2)?, g.axis("C", 3)?);
/// let a = HostArray::from_vec(Axes::new([r, c])?, vec![2, 3], vec![1f32, 2., 3., 4., 5., 6.])?;
/// // The same values with the axes in another order (a transposed copy).
/// let t = a.with_axes_order(&Axes::new([c, r])?).unwrap();
/// assert_eq!(t.to_vec::<f32>()?, vec![1., 4., 2., 5., 3., 6.]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct HostArray {
    axes: Axes,
    shape: Vec<usize>,
    data: ArrayData,
}

impl HostArray {
    /// An array over `axes` with lengths `shape` and row-major `data`.
    pub fn new(axes: Axes, shape: Vec<usize>, data: ArrayData) -> Result<HostArray, HostError> {
        if axes.len() != shape.len() {
            return Err(HostError::Rank {
                axes: axes.len(),
                rank: shape.len(),
                shape,
            });
        }
        let Some(expected) = crate::size::element_count(&shape) else {
            return Err(HostError::Overflow { shape });
        };
        if expected != data.len() {
            return Err(HostError::Size {
                shape,
                expected,
                got: data.len(),
            });
        }
        Ok(HostArray { axes, shape, data })
    }

    /// Whether `other` has the same axes (in order), lengths and dtype.
    pub fn same_shape(&self, other: &HostArray) -> bool {
        self.axes == other.axes && self.shape == other.shape && self.dtype() == other.dtype()
    }

    /// An array from a `Vec` of elements.
    pub fn from_vec<T: Element>(
        axes: Axes,
        shape: Vec<usize>,
        data: Vec<T>,
    ) -> Result<HostArray, HostError> {
        HostArray::new(axes, shape, T::wrap(data))
    }

    /// A rank-0 array.
    pub fn scalar<T: Element>(v: T) -> HostArray {
        HostArray {
            axes: Axes::scalar(),
            shape: Vec::new(),
            data: T::wrap(vec![v]),
        }
    }

    /// The axes, in the data's order.
    pub fn axes(&self) -> &Axes {
        &self.axes
    }
    /// The lengths of the axes.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }
    /// The row-major data.
    pub fn data(&self) -> &ArrayData {
        &self.data
    }
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }
    /// True for an array without elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
    /// The elements, if they are of type `T`.
    pub fn as_slice<T: Element>(&self) -> Result<&[T], HostError> {
        T::unwrap(&self.data).ok_or(HostError::DType {
            requested: T::DTYPE,
            actual: self.dtype(),
        })
    }
    /// The elements, mutably, if they are of type `T` (the length is fixed: axes and shape
    /// stay as they are). Lets a caller-owned output array be overwritten in place.
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T], HostError> {
        let actual = self.dtype();
        T::unwrap_mut(&mut self.data).ok_or(HostError::DType {
            requested: T::DTYPE,
            actual,
        })
    }
    /// Axes, lengths and the elements, the elements mutably (the length is fixed).
    pub(crate) fn parts_mut(&mut self) -> (&Axes, &[usize], &mut ArrayData) {
        (&self.axes, &self.shape, &mut self.data)
    }
    /// The elements, to write (the length is fixed: axes and shape stay as they are).
    pub fn data_mut(&mut self) -> DataMut<'_> {
        DataMut::of(&mut self.data)
    }
    /// The elements as a `Vec<T>`.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, HostError> {
        self.as_slice().map(|s| s.to_vec())
    }
    /// Consumes the array, returning axes, shape and data.
    pub fn into_parts(self) -> (Axes, Vec<usize>, ArrayData) {
        (self.axes, self.shape, self.data)
    }

    /// The same tensor with its axes in the order `order`, a permutation of these axes: the
    /// data is transposed so that it stays row-major. `None` if `order` is not a permutation.
    pub fn with_axes_order(&self, order: &Axes) -> Option<HostArray> {
        if order == &self.axes {
            return Some(self.clone());
        }
        if !order.is_equal_set(&self.axes) {
            return None;
        }
        let perm: Vec<usize> = order
            .iter()
            .map(|a| self.axes.position(*a))
            .collect::<Option<_>>()?;
        let shape: Vec<usize> = perm.iter().map(|&p| self.shape[p]).collect();
        let src_strides = crate::size::row_major_strides(&self.shape)?;
        let n = self.len();
        let mut index = Vec::with_capacity(n);
        let mut idx = vec![0usize; shape.len()];
        for _ in 0..n {
            index.push(
                idx.iter()
                    .zip(&perm)
                    .map(|(i, &p)| i * src_strides[p])
                    .sum(),
            );
            for d in (0..shape.len()).rev() {
                idx[d] += 1;
                if idx[d] < shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        Some(HostArray {
            axes: order.clone(),
            shape,
            data: self.data.gather(&index),
        })
    }

    /// Reads a `.npy` file (C or Fortran order) as an array over `axes`, whose count must be
    /// the file's rank. Lengths are checked later, against the graph.
    pub fn read_npy(path: &Path, axes: Axes) -> Result<HostArray, HostError> {
        let p = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| HostError::Io {
            path: p.clone(),
            source,
        })?;
        let npy_err = |message: String| HostError::Npy {
            path: p.clone(),
            message,
        };
        let file = npyz::NpyFile::new(&bytes[..]).map_err(|e| npy_err(e.to_string()))?;
        let shape: Vec<usize> = file.shape().iter().map(|&s| s as usize).collect();
        let fortran = file.order() == npyz::Order::Fortran;
        let descr = match file.dtype() {
            npyz::DType::Plain(ts) => ts.to_string(),
            other => return Err(npy_err(format!("unsupported .npy dtype {other:?}"))),
        };
        let data = match &descr[1..] {
            "f4" => ArrayData::F32(file.into_vec().map_err(|e| npy_err(e.to_string()))?),
            "f8" => ArrayData::F64(file.into_vec().map_err(|e| npy_err(e.to_string()))?),
            "i4" => ArrayData::I32(file.into_vec().map_err(|e| npy_err(e.to_string()))?),
            "i8" => ArrayData::I64(file.into_vec().map_err(|e| npy_err(e.to_string()))?),
            "b1" => ArrayData::Bool(file.into_vec().map_err(|e| npy_err(e.to_string()))?),
            _ => {
                return Err(npy_err(format!(
                    "unsupported .npy dtype `{descr}` (weft reads f4, f8, i4, i8 and b1)"
                )))
            }
        };
        if axes.len() != shape.len() {
            return Err(npy_err(format!(
                "the file has rank {} (shape {shape:?}) but the tensor has {}",
                shape.len(),
                crate::size::count(axes.len(), "axis", "axes")
            )));
        }
        if !fortran {
            return HostArray::new(axes, shape, data);
        }
        // Column-major data of shape s is row-major data of reversed s over reversed axes.
        let rev_axes = Axes::new(axes.iter().rev().copied()).expect("reversal keeps axes distinct");
        let rev_shape: Vec<usize> = shape.iter().rev().copied().collect();
        let arr = HostArray::new(rev_axes, rev_shape, data)?;
        Ok(arr
            .with_axes_order(&axes)
            .expect("axes are a permutation of themselves"))
    }

    /// Writes the array to a `.npy` file in C order (bools as `|b1`).
    pub fn write_npy(&self, path: &Path) -> Result<(), HostError> {
        let p = path.display().to_string();
        let io = |source: std::io::Error| HostError::Io {
            path: p.clone(),
            source,
        };
        let shape: Vec<u64> = self.shape.iter().map(|&s| s as u64).collect();
        let mut out = Vec::new();
        fn write<T: npyz::Serialize + npyz::AutoSerialize + Copy>(
            out: &mut Vec<u8>,
            shape: &[u64],
            v: &[T],
        ) -> std::io::Result<()> {
            use npyz::WriterBuilder;
            let mut w = npyz::WriteOptions::new()
                .default_dtype()
                .shape(shape)
                .writer(out)
                .begin_nd()?;
            w.extend(v.iter().copied())?;
            w.finish()
        }
        match &self.data {
            ArrayData::F32(v) => write(&mut out, &shape, v),
            ArrayData::F64(v) => write(&mut out, &shape, v),
            ArrayData::I32(v) => write(&mut out, &shape, v),
            ArrayData::I64(v) => write(&mut out, &shape, v),
            ArrayData::Bool(v) => write(&mut out, &shape, v),
        }
        .map_err(io)?;
        std::fs::write(path, out).map_err(io)
    }
}

#[cfg(feature = "ndarray")]
mod nd {
    use super::*;

    impl HostArray {
        /// An array over `axes` from an `ndarray` array (any memory order).
        ///
        /// ```
        /// use weft::ir::{graph::GraphBuilder, Axes, HostArray};
        /// let b = GraphBuilder::new();
        /// let (r, c) = (b.axis("R", 2)?, b.axis("C", 3)?);
        /// let a = ndarray::Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f32);
        /// let h = HostArray::from_ndarray(Axes::new([r, c])?, &a)?;
        /// assert_eq!(h.shape(), &[2, 3]);
        /// assert_eq!(h.to_vec::<f32>()?, vec![0., 1., 2., 3., 4., 5.]);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn from_ndarray<T: Element, D: ndarray::Dimension>(
            axes: Axes,
            a: &ndarray::Array<T, D>,
        ) -> Result<HostArray, HostError> {
            let shape = a.shape().to_vec();
            HostArray::from_vec(axes, shape, a.iter().copied().collect())
        }

        /// The array as a dynamic-rank `ndarray` array of `T`.
        pub fn to_ndarray<T: Element>(&self) -> Result<ndarray::ArrayD<T>, HostError> {
            let v = self.to_vec::<T>()?;
            ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&self.shape), v).map_err(|e| {
                HostError::Npy {
                    path: "ndarray".into(),
                    message: e.to_string(),
                }
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ArrayData;

    /// Equal bits give equal digests; the usual near misses (a trailing zero element, the
    /// sign of a zero, a NaN's payload, the dtype) give different ones.
    #[test]
    fn digests_follow_the_bits() {
        let xs: Vec<f32> = (0..1001).map(|i| i as f32 * 0.37 - 50.0).collect();
        let a = ArrayData::F32(xs.clone());
        assert_eq!(a.bits_digest(), ArrayData::F32(xs.clone()).bits_digest());
        let mut longer = xs.clone();
        longer.push(0.0);
        let mut zero_sign = xs.clone();
        zero_sign[3] = -0.0;
        let mut nan = xs.clone();
        nan[7] = f32::NAN;
        let mut other_nan = xs.clone();
        other_nan[7] = f32::from_bits(0x7fc0_0001);
        let different = [
            ArrayData::F32(longer),
            ArrayData::F32(zero_sign),
            ArrayData::F32(nan.clone()),
            ArrayData::I32(xs.iter().map(|x| x.to_bits() as i32).collect()),
        ];
        for d in &different {
            assert_ne!(a.bits_digest(), d.bits_digest(), "{:?}", d.dtype());
        }
        assert_ne!(
            ArrayData::F32(nan).bits_digest(),
            ArrayData::F32(other_nan).bits_digest()
        );
        assert_ne!(
            ArrayData::F32(vec![1.0]).bits_digest(),
            ArrayData::F32(vec![1.0, 0.0]).bits_digest()
        );
    }
}
