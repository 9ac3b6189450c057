//! Label expressions: combining shapes by naming their modes, as in TensorWrapper.

use std::fmt;
use std::ops::{Add, Mul, Sub};
use std::str::FromStr;

use super::base::ShapeBase;
use super::error::ShapeError;

/// The parsed labels of an index string such as `"i, j, k"`: comma-separated labels of one or
/// more characters, whitespace ignored, case-sensitive. `""` labels a scalar; an empty label
/// (`"i,,j"`) and a repeated label (`"i,i"`) are errors.
///
/// ```
/// use weft::ir::shape::Labels;
///
/// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
/// let labels = Labels::parse(" i , jk,K ")?;
/// assert_eq!(labels.iter().collect::<Vec<_>>(), ["i", "jk", "K"]);
/// assert_eq!(labels.to_string(), "i,jk,K");
/// assert!(Labels::parse("")?.is_empty());
/// assert!(Labels::parse("i,").is_err());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Labels {
    labels: Vec<String>,
}

impl Labels {
    /// Parses an index string.
    ///
    /// ```
    /// use weft::ir::shape::{Labels, ShapeError};
    ///
    /// assert_eq!(Labels::parse("i,j").map(|l| l.len()), Ok(2));
    /// assert_eq!(
    ///     Labels::parse("i,j,i"),
    ///     Err(ShapeError::DuplicateLabel { labels: "i,j,i".into(), label: "i".into() })
    /// );
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::EmptyLabel`] for an empty label, [`ShapeError::DuplicateLabel`] for a
    /// label given twice.
    pub fn parse(text: &str) -> Result<Labels, ShapeError> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        if compact.is_empty() {
            return Ok(Labels::default());
        }
        let mut labels: Vec<String> = Vec::new();
        for (position, label) in compact.split(',').enumerate() {
            if label.is_empty() {
                return Err(ShapeError::EmptyLabel {
                    labels: text.to_string(),
                    position,
                });
            }
            if labels.iter().any(|seen| seen == label) {
                return Err(ShapeError::DuplicateLabel {
                    labels: text.to_string(),
                    label: label.to_string(),
                });
            }
            labels.push(label.to_string());
        }
        Ok(Labels { labels })
    }

    /// Labels already known to be distinct and non-empty.
    pub(crate) fn from_distinct(labels: Vec<String>) -> Labels {
        Labels { labels }
    }

    /// The number of labels.
    ///
    /// ```
    /// use weft::ir::shape::Labels;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert_eq!(Labels::parse("i,j,k")?.len(), 3);
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no labels (a scalar's index string).
    ///
    /// ```
    /// use weft::ir::shape::Labels;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert!(Labels::parse(" ")?.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The labels in order.
    ///
    /// ```
    /// use weft::ir::shape::Labels;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert_eq!(Labels::parse("a,b")?.iter().last(), Some("b"));
    /// # Ok(()) }
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.labels.iter().map(String::as_str)
    }

    /// The labels as a slice.
    ///
    /// ```
    /// use weft::ir::shape::Labels;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert_eq!(Labels::parse("a,b")?.as_slice(), ["a", "b"]);
    /// # Ok(()) }
    /// ```
    pub fn as_slice(&self) -> &[String] {
        &self.labels
    }

    /// The mode labelled `label`, if any.
    ///
    /// ```
    /// use weft::ir::shape::Labels;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let labels = Labels::parse("i,j")?;
    /// assert_eq!((labels.position("j"), labels.position("J")), (Some(1), None));
    /// # Ok(()) }
    /// ```
    pub fn position(&self, label: &str) -> Option<usize> {
        self.labels.iter().position(|own| own == label)
    }

    /// Whether `label` is one of the labels.
    ///
    /// ```
    /// use weft::ir::shape::Labels;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert!(Labels::parse("i,j")?.contains("i"));
    /// # Ok(()) }
    /// ```
    pub fn contains(&self, label: &str) -> bool {
        self.position(label).is_some()
    }

    /// Whether both hold the same labels, in any order.
    pub(crate) fn is_permutation_of(&self, other: &Labels) -> bool {
        self.len() == other.len() && self.iter().all(|label| other.contains(label))
    }

    /// The mode of each of `wanted` in `self`.
    ///
    /// # Errors
    /// [`ShapeError::UnknownResultLabel`] for a wanted label that `self` lacks.
    pub(crate) fn positions_of(&self, wanted: &Labels) -> Result<Vec<usize>, ShapeError> {
        wanted
            .iter()
            .map(|label| {
                self.position(label)
                    .ok_or_else(|| ShapeError::UnknownResultLabel {
                        label: label.to_string(),
                        available: self.to_string(),
                    })
            })
            .collect()
    }
}

impl FromStr for Labels {
    type Err = ShapeError;

    /// Parses an index string, as [`Labels::parse`].
    fn from_str(text: &str) -> Result<Labels, ShapeError> {
        Labels::parse(text)
    }
}

impl fmt::Display for Labels {
    /// The labels joined by commas: `i,j,k`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.labels.join(","))
    }
}

/// Shapes that label expressions can combine: the operations behind `+`, `-`, `*` and
/// assignment to result labels.
///
/// The operations act on the shapes' offsets: results start at the zero index. Modes that are
/// added, multiplied element-wise (Hadamard) or contracted must match in extent; a mismatch is
/// an error naming the label and both extents.
///
/// ```
/// use weft::ir::shape::{LabelAlgebra, Shape};
///
/// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
/// let s0 = Shape::new([10, 20, 30])?;
/// // Direct product.
/// let s1 = (s0.idx("i,j,k")? * s0.idx("i,j,l")?).to("i,j,k,l")?;
/// assert_eq!(s1, Shape::new([10, 20, 30, 30])?);
/// // Contraction over j.
/// let s2 = (s0.idx("i,j,k")? * s0.idx("i,j,k")?).to("k,i")?;
/// assert_eq!(s2, Shape::new([30, 10])?);
/// # Ok(()) }
/// ```
pub trait LabelAlgebra: ShapeBase {
    /// The shape with modes `result`, taken from this shape's modes `labels`: permutes them,
    /// and sums out the modes `result` omits.
    ///
    /// ```
    /// use weft::ir::shape::{LabelAlgebra, Labels, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::new([10, 20, 30])?;
    /// let (ijk, ki) = (Labels::parse("i,j,k")?, Labels::parse("k,i")?);
    /// assert_eq!(s.assign(&ijk, &ki)?, Shape::new([30, 10])?);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::LabelCount`] if `labels` do not label every mode,
    /// [`ShapeError::UnknownResultLabel`] if `result` is not a subset of `labels`, and for
    /// jagged shapes [`ShapeError::NotContiguous`] if the result is not a jagged shape.
    fn assign(&self, labels: &Labels, result: &Labels) -> Result<Self, ShapeError>;

    /// The shape of the sum (or difference) of this shape labelled `labels` and `rhs` labelled
    /// `rhs_labels`, with modes in the order of `labels`.
    ///
    /// ```
    /// use weft::ir::shape::{LabelAlgebra, Labels, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let (a, b) = (Shape::new([2, 3])?, Shape::new([3, 2])?);
    /// let (ij, ji) = (Labels::parse("i,j")?, Labels::parse("j,i")?);
    /// assert_eq!(a.sum(&ij, &b, &ji)?, a);
    /// assert!(a.sum(&ij, &b, &ij).is_err());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::LabelCount`] if the labels do not fit the shapes,
    /// [`ShapeError::NotAPermutation`] if the label sets differ,
    /// [`ShapeError::ExtentMismatch`] if the shapes differ once aligned, and for nested shapes
    /// [`ShapeError::LayerCountMismatch`] or [`ShapeError::LayerMismatch`] if the layers do.
    fn sum(&self, labels: &Labels, rhs: &Self, rhs_labels: &Labels) -> Result<Self, ShapeError>;

    /// The shape of the product of this shape labelled `labels` and `rhs` labelled
    /// `rhs_labels`, with modes `result`: labels in both operands and in `result` are
    /// multiplied element-wise, labels in both but not in `result` are contracted, labels in
    /// one operand only form a direct product (or are summed out if `result` omits them).
    ///
    /// ```
    /// use weft::ir::shape::{LabelAlgebra, Labels, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let (a, b) = (Shape::new([2, 3])?, Shape::new([3, 4])?);
    /// let (ij, jk, ik) = (Labels::parse("i,j")?, Labels::parse("j,k")?, Labels::parse("i,k")?);
    /// assert_eq!(a.product(&ij, &b, &jk, &ik)?, Shape::new([2, 4])?);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::LabelCount`] if the labels do not fit the shapes,
    /// [`ShapeError::UnknownResultLabel`] if a result label is in neither operand,
    /// [`ShapeError::ExtentMismatch`] if shared modes differ, and for jagged shapes
    /// [`ShapeError::RaggedContraction`] or [`ShapeError::NotContiguous`]; for nested shapes
    /// [`ShapeError::LayerCountMismatch`] or [`ShapeError::LayerOrder`].
    fn product(
        &self,
        labels: &Labels,
        rhs: &Self,
        rhs_labels: &Labels,
        result: &Labels,
    ) -> Result<Self, ShapeError>;

    /// Labels this shape's modes (the reference's `s("i,j,k")`), starting an expression.
    ///
    /// ```
    /// use weft::ir::shape::{LabelAlgebra, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::new([10, 20])?;
    /// assert_eq!(s.idx("i,j")?.to("j,i")?, Shape::new([20, 10])?);
    /// assert!(s.idx("i").is_err());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Errors of [`Labels::parse`], [`ShapeError::NullShapeIndexed`] for the null shape,
    /// [`ShapeError::LabelCount`] if the number of labels is not the rank.
    fn idx(&self, labels: &str) -> Result<ShapeExpr<Self>, ShapeError> {
        ShapeExpr::new(self.clone(), Labels::parse(labels)?)
    }
}

/// Checks that `labels` label every mode of `shape`.
pub(crate) fn check_labels<S: ShapeBase>(shape: &S, labels: &Labels) -> Result<(), ShapeError> {
    if shape.is_null() {
        return Err(ShapeError::NullShapeIndexed);
    }
    if labels.len() != shape.rank() {
        return Err(ShapeError::LabelCount {
            labels: labels.to_string(),
            count: labels.len(),
            rank: shape.rank(),
        });
    }
    Ok(())
}

/// A label expression over shapes (the reference's `IndexedShape` and the expressions built
/// from it): labelled shapes combined by `+`, `-` and `*`, evaluated by
/// [`to`](ShapeExpr::to) into the shape with the requested result labels.
///
/// Which shared labels are contracted depends on the result labels, so evaluation waits for
/// them. Inside a product, a label survives if the result or the other operand needs it.
///
/// ```
/// use weft::ir::shape::{LabelAlgebra, Shape};
///
/// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
/// let a = Shape::new([4, 5])?;
/// let b = Shape::new([5, 6])?;
/// let c = Shape::new([4, 6])?;
/// // (a * b) contracts j; the sum then checks it against c.
/// let expr = a.idx("i,j")? * b.idx("j,k")? + c.idx("i,k")?;
/// assert_eq!(expr.to("k,i")?, Shape::new([6, 4])?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeExpr<S> {
    node: ExprNode<S>,
}

#[derive(Debug, Clone, PartialEq)]
enum ExprNode<S> {
    Leaf { shape: S, labels: Labels },
    Sum(Box<ShapeExpr<S>>, Box<ShapeExpr<S>>),
    Difference(Box<ShapeExpr<S>>, Box<ShapeExpr<S>>),
    Product(Box<ShapeExpr<S>>, Box<ShapeExpr<S>>),
}

impl<S: LabelAlgebra> ShapeExpr<S> {
    /// The expression that is just `shape` with its modes labelled `labels`.
    ///
    /// ```
    /// use weft::ir::shape::{Labels, Shape, ShapeExpr};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let expr = ShapeExpr::new(Shape::new([3])?, Labels::parse("i")?)?;
    /// assert_eq!(expr.to("i")?, Shape::new([3])?);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::NullShapeIndexed`] for the null shape, [`ShapeError::LabelCount`] if the
    /// number of labels is not the rank.
    pub fn new(shape: S, labels: Labels) -> Result<Self, ShapeError> {
        check_labels(&shape, &labels)?;
        Ok(ShapeExpr {
            node: ExprNode::Leaf { shape, labels },
        })
    }

    /// Every label the expression's operands use, in order of first use.
    ///
    /// ```
    /// use weft::ir::shape::{LabelAlgebra, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::new([2, 3])?;
    /// let expr = s.idx("i,j")? * s.idx("k,i")?;
    /// assert_eq!(expr.labels().to_string(), "i,j,k");
    /// # Ok(()) }
    /// ```
    pub fn labels(&self) -> Labels {
        let mut labels = Vec::new();
        self.collect_labels(&mut labels);
        Labels::from_distinct(labels)
    }

    fn collect_labels(&self, out: &mut Vec<String>) {
        match &self.node {
            ExprNode::Leaf { labels, .. } => {
                for label in labels.iter() {
                    if !out.iter().any(|seen| seen == label) {
                        out.push(label.to_string());
                    }
                }
            }
            ExprNode::Sum(lhs, rhs)
            | ExprNode::Difference(lhs, rhs)
            | ExprNode::Product(lhs, rhs) => {
                lhs.collect_labels(out);
                rhs.collect_labels(out);
            }
        }
    }

    /// Evaluates the expression into the shape whose modes are labelled `result` (the
    /// reference's assignment `s1("i,k") = ...`).
    ///
    /// ```
    /// use weft::ir::shape::{LabelAlgebra, Shape, ShapeError};
    ///
    /// # fn main() -> Result<(), ShapeError> {
    /// let s0 = Shape::new([10, 20, 30])?;
    /// let permuted = (s0.idx("i,j,k")? + s0.idx("i,j,k")?).to("j,i,k")?;
    /// assert_eq!(permuted, Shape::new([20, 10, 30])?);
    ///
    /// let err = (s0.idx("j,i,k")? * s0.idx("i,j,k")?).to("i,k").unwrap_err();
    /// assert_eq!(err, ShapeError::ExtentMismatch { label: "j".into(), lhs: 10, rhs: 20 });
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Errors of [`Labels::parse`] for `result`, [`ShapeError::UnknownResultLabel`] if a result
    /// label names no mode, and the errors of the [`LabelAlgebra`] operations.
    pub fn to(&self, result: &str) -> Result<S, ShapeError> {
        self.to_labels(&Labels::parse(result)?)
    }

    /// Like [`to`](ShapeExpr::to), with the result labels already parsed.
    ///
    /// ```
    /// use weft::ir::shape::{LabelAlgebra, Labels, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::new([2, 3])?;
    /// let result = Labels::parse("j")?;
    /// assert_eq!(s.idx("i,j")?.to_labels(&result)?, Shape::new([3])?);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As for [`to`](ShapeExpr::to).
    pub fn to_labels(&self, result: &Labels) -> Result<S, ShapeError> {
        let needed: Vec<String> = result.as_slice().to_vec();
        let (shape, labels) = self.evaluate(&needed)?;
        shape.assign(&labels, result)
    }

    /// Evaluates into a shape whose labels include every label of `needed` that the
    /// expression provides.
    fn evaluate(&self, needed: &[String]) -> Result<(S, Labels), ShapeError> {
        match &self.node {
            ExprNode::Leaf { shape, labels } => Ok((shape.clone(), labels.clone())),
            ExprNode::Sum(lhs, rhs) | ExprNode::Difference(lhs, rhs) => {
                let (lhs_shape, lhs_labels) = lhs.evaluate(&widen(needed, rhs))?;
                let (rhs_shape, rhs_labels) = rhs.evaluate(&widen(needed, lhs))?;
                let shape = lhs_shape.sum(&lhs_labels, &rhs_shape, &rhs_labels)?;
                Ok((shape, lhs_labels))
            }
            ExprNode::Product(lhs, rhs) => {
                let (lhs_shape, lhs_labels) = lhs.evaluate(&widen(needed, rhs))?;
                let (rhs_shape, rhs_labels) = rhs.evaluate(&widen(needed, lhs))?;
                let kept: Vec<String> = lhs_labels
                    .iter()
                    .chain(
                        rhs_labels
                            .iter()
                            .filter(|label| !lhs_labels.contains(label)),
                    )
                    .filter(|label| needed.iter().any(|n| n == label))
                    .map(str::to_string)
                    .collect();
                let result = Labels::from_distinct(kept);
                let shape = lhs_shape.product(&lhs_labels, &rhs_shape, &rhs_labels, &result)?;
                Ok((shape, result))
            }
        }
    }
}

/// `needed` plus every label `other` uses.
fn widen<S: LabelAlgebra>(needed: &[String], other: &ShapeExpr<S>) -> Vec<String> {
    let mut widened = needed.to_vec();
    for label in other.labels().iter() {
        if !widened.iter().any(|seen| seen == label) {
            widened.push(label.to_string());
        }
    }
    widened
}

impl<S> Add for ShapeExpr<S> {
    type Output = ShapeExpr<S>;

    /// The sum; the operands' labels must be permutations of each other.
    fn add(self, rhs: ShapeExpr<S>) -> ShapeExpr<S> {
        ShapeExpr {
            node: ExprNode::Sum(Box::new(self), Box::new(rhs)),
        }
    }
}

impl<S> Sub for ShapeExpr<S> {
    type Output = ShapeExpr<S>;

    /// The difference; the operands' labels must be permutations of each other.
    fn sub(self, rhs: ShapeExpr<S>) -> ShapeExpr<S> {
        ShapeExpr {
            node: ExprNode::Difference(Box::new(self), Box::new(rhs)),
        }
    }
}

impl<S> Mul for ShapeExpr<S> {
    type Output = ShapeExpr<S>;

    /// The product: Hadamard, contraction or direct product per label, decided by the result
    /// labels.
    fn mul(self, rhs: ShapeExpr<S>) -> ShapeExpr<S> {
        ShapeExpr {
            node: ExprNode::Product(Box::new(self), Box::new(rhs)),
        }
    }
}
