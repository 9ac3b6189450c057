//! Data sets shipped inside the library, for examples and tests that train something.
//!
//! Assumes nothing at run time: each data set's file is embedded with `include_bytes!`, so no
//! path, network or download is involved. Guarantees: the same data on every call and machine;
//! a file that does not read as expected (it cannot, unless the repository's copy is damaged)
//! is an [`Error::Dataset`] naming the row and field, never a panic; splits are deterministic
//! in their seed.
//!
//! [`digits`]: the UCI optical recognition of handwritten digits test set, as scikit-learn
//! ships it (`data/digits/`, whose README gives its provenance, citation and licence —
//! scikit-learn's BSD 3-Clause, the UCI data set's CC BY 4.0).
//!
//! ```
//! use weft::datasets::{digits, DIGITS_CLASSES, DIGITS_PIXELS};
//! let (train, test) = digits()?.split(0.2, 7)?;
//! assert_eq!(train.len() + test.len(), 1797);
//! let first = train.image(0).unwrap();
//! assert_eq!(first.len(), DIGITS_PIXELS);
//! assert!(first.iter().all(|p| (0.0..=1.0).contains(p)));
//! assert!(train.labels().iter().all(|l| (0..DIGITS_CLASSES as i64).contains(l)));
//! # Ok::<(), weft::Error>(())
//! ```

use crate::error::{Error, Result};
use weft_ir::perturb::SplitMix;
use weft_ir::{Axes, Axis, HostArray};

/// `data/digits/digits.csv.gz`: 1,797 rows of 64 pixels (0..=16) and a class (0..=9).
const DIGITS_GZ: &[u8] = include_bytes!("../data/digits/digits.csv.gz");

/// Images in the digits data set.
pub const DIGITS_ROWS: usize = 1797;
/// Pixels per digits image (8 × 8, row-major).
pub const DIGITS_PIXELS: usize = 64;
/// Classes (the digits 0 to 9).
pub const DIGITS_CLASSES: usize = 10;
/// The largest pixel value in the file; images are divided by it.
const DIGITS_MAX_PIXEL: u8 = 16;

/// Labelled 8×8 digit images: pixels as f32 in `[0, 1]` (the file's counts 0..=16 divided by
/// 16), row-major, one row of [`DIGITS_PIXELS`] per image, and one i64 class per image.
///
/// ```
/// use weft::datasets::{digits, DIGITS_PIXELS};
/// let d = digits()?;
/// assert_eq!(d.len(), 1797);
/// assert_eq!(d.images().len(), d.len() * DIGITS_PIXELS);
/// assert_eq!(d.labels()[0], 0);
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Digits {
    images: Vec<f32>,
    labels: Vec<i64>,
}

/// The digits data set (all 1,797 images, in the file's order), decoded from the copy embedded
/// in the library.
///
/// ```
/// let d = weft::datasets::digits()?;
/// let counts = d.class_counts();
/// assert_eq!(counts, [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]);
/// # Ok::<(), weft::Error>(())
/// ```
pub fn digits() -> Result<Digits> {
    let text = gunzip(DIGITS_GZ)?;
    let mut images = Vec::with_capacity(DIGITS_ROWS * DIGITS_PIXELS);
    let mut labels = Vec::with_capacity(DIGITS_ROWS);
    for (row, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let fields: Vec<&str> = line.trim().split(',').collect();
        if fields.len() != DIGITS_PIXELS + 1 {
            return Err(bad(format!(
                "row {} has {} fields, not {} pixels and a class",
                row + 1,
                fields.len(),
                DIGITS_PIXELS
            )));
        }
        for (col, f) in fields[..DIGITS_PIXELS].iter().enumerate() {
            let p = parse_field(f, DIGITS_MAX_PIXEL, row, col)?;
            images.push(f32::from(p) / f32::from(DIGITS_MAX_PIXEL));
        }
        let class = parse_field(fields[DIGITS_PIXELS], 9, row, DIGITS_PIXELS)?;
        labels.push(i64::from(class));
    }
    if labels.len() != DIGITS_ROWS {
        return Err(bad(format!("{} rows, not {DIGITS_ROWS}", labels.len())));
    }
    Ok(Digits { images, labels })
}

fn bad(message: String) -> Error {
    Error::Dataset {
        name: "digits",
        message,
    }
}

fn gunzip(bytes: &[u8]) -> Result<String> {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_string(&mut text)
        .map_err(|e| {
            bad(format!(
                "the embedded digits.csv.gz does not decompress: {e}"
            ))
        })?;
    Ok(text)
}

/// Field `col` of `row` (both from 0) as an integer in `0..=max`.
fn parse_field(f: &str, max: u8, row: usize, col: usize) -> Result<u8> {
    match f.trim().parse::<u8>() {
        Ok(v) if v <= max => Ok(v),
        _ => Err(bad(format!(
            "row {}, field {}: `{f}` is not an integer in 0..={max}",
            row + 1,
            col + 1
        ))),
    }
}

impl Digits {
    /// The number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// True if there are no images (an empty side of a split).
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Every image's pixels, row-major: image `i` is `images()[64 i .. 64 (i + 1)]`.
    pub fn images(&self) -> &[f32] {
        &self.images
    }

    /// Every image's class, 0..=9.
    pub fn labels(&self) -> &[i64] {
        &self.labels
    }

    /// The pixels of image `i` (8 rows of 8), if there is one.
    pub fn image(&self, i: usize) -> Option<&[f32]> {
        let start = i.checked_mul(DIGITS_PIXELS)?;
        self.images.get(start..start.checked_add(DIGITS_PIXELS)?)
    }

    /// How many images of each class.
    pub fn class_counts(&self) -> [usize; DIGITS_CLASSES] {
        let mut counts = [0; DIGITS_CLASSES];
        for &l in &self.labels {
            if let Some(c) = usize::try_from(l).ok().and_then(|l| counts.get_mut(l)) {
                *c += 1;
            }
        }
        counts
    }

    /// The images at `indices`, in that order (repeats allowed); an index past the end is an
    /// error naming it.
    pub fn subset(&self, indices: &[usize]) -> Result<Digits> {
        let mut images = Vec::with_capacity(indices.len() * DIGITS_PIXELS);
        let mut labels = Vec::with_capacity(indices.len());
        for &i in indices {
            let image = self
                .image(i)
                .ok_or_else(|| bad(format!("index {i} is past the end ({} images)", self.len())))?;
            images.extend_from_slice(image);
            labels.push(self.labels[i]);
        }
        Ok(Digits { images, labels })
    }

    /// A deterministic shuffled split into `(train, test)`: the images are permuted by a
    /// Fisher–Yates shuffle drawn from SplitMix64 seeded with `seed`, the first
    /// `round(len · test_fraction)` form the test set and the rest the training set, each in
    /// the shuffled order. `test_fraction` must be in `[0, 1]`.
    ///
    /// ```
    /// let d = weft::datasets::digits()?;
    /// let (train, test) = d.split(0.25, 42)?;
    /// assert_eq!((train.len(), test.len()), (1348, 449));
    /// assert_eq!(d.split(0.25, 42)?, (train, test)); // the same seed, the same split
    /// assert!(d.split(1.5, 42).is_err());
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn split(&self, test_fraction: f64, seed: u64) -> Result<(Digits, Digits)> {
        if !(0.0..=1.0).contains(&test_fraction) {
            return Err(bad(format!(
                "test fraction {test_fraction} is not in [0, 1]"
            )));
        }
        let mut order: Vec<usize> = (0..self.len()).collect();
        let mut rng = SplitMix(seed);
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let n_test = ((self.len() as f64) * test_fraction).round() as usize;
        let (test, train) = order.split_at(n_test.min(order.len()));
        Ok((self.subset(train)?, self.subset(test)?))
    }

    /// The images as a host array over `[sample, pixel]` (lengths `len()` and 64), f32: the
    /// input of a computation whose placeholder has those axes.
    ///
    /// ```
    /// use weft::prelude::*;
    /// let d = weft::datasets::digits()?.subset(&[0, 1, 2])?;
    /// let g = GraphBuilder::new();
    /// let (b, p) = (g.axis("B", 3)?, g.axis("P", 64)?);
    /// let x = d.images_array(b, p)?;
    /// assert_eq!(x.shape(), &[3, 64]);
    /// assert_eq!(d.labels_array(b)?.to_vec::<i64>()?, vec![0, 1, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn images_array(&self, sample: Axis, pixel: Axis) -> Result<HostArray> {
        Ok(HostArray::from_vec(
            Axes::new([sample, pixel])?,
            vec![self.len(), DIGITS_PIXELS],
            self.images.clone(),
        )?)
    }

    /// The labels as an i64 host array over `[sample]`.
    pub fn labels_array(&self, sample: Axis) -> Result<HostArray> {
        Ok(HostArray::from_vec(
            Axes::new([sample])?,
            vec![self.len()],
            self.labels.clone(),
        )?)
    }
}
