//! Arrays shown with their graph's names: `f32 (R=2, C=3) = [[1, 2, 3], [4, 5, 6]]` rather than
//! the axis-table indices a `HostArray` holds (it knows no names). What `weft run` prints, and
//! what a host program prints with `println!("{}", array.display(&graph))`.

use crate::host::write_float;
use crate::{Axes, Graph, HostArray, Scalar};
use std::fmt::{self, Write};

/// A [`HostArray`] with the names of its graph's axes: [`HostArray::display`].
pub struct ArrayDisplay<'a> {
    value: &'a HostArray,
    graph: &'a Graph,
}

impl HostArray {
    /// This array shown with `graph`'s axis names: dtype, axes with lengths, the values nested
    /// by axis when there are at most 64, else the first values and min / max / mean.
    ///
    /// ```
    /// use weft::ir::{Axes, Graph, HostArray};
    /// let mut g = Graph::new();
    /// let (r, c) = (g.axis("R", 2)?, g.axis("C", 2)?);
    /// let a = HostArray::from_vec(Axes::new([r, c])?, vec![2, 2], vec![1f32, 2., 3., 4.])?;
    /// assert_eq!(a.display(&g).to_string(), "f32 (R=2, C=2) =\n  [[1, 2],\n   [3, 4]]");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn display<'a>(&'a self, graph: &'a Graph) -> ArrayDisplay<'a> {
        ArrayDisplay { value: self, graph }
    }
}

impl fmt::Display for ArrayDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&describe(self.graph, self.value))
    }
}

impl Graph {
    /// Axes with lengths: `(H=2, W=3)`; unbound lengths print as `?`.
    pub fn axes_with_lengths(&self, axes: &Axes) -> String {
        let parts: Vec<String> = axes
            .iter()
            .map(|a| match self.axis_len(*a) {
                Some(n) => format!("{}={n}", self.axis_name(*a)),
                None => format!("{}=?", self.axis_name(*a)),
            })
            .collect();
        format!("({})", parts.join(", "))
    }
}

fn scalar_text(v: Scalar) -> String {
    let mut s = String::new();
    match v {
        Scalar::Float(f) => {
            if f.is_finite() && f != 0.0 && (f.abs() >= 1e6 || f.abs() < 1e-4) {
                let _ = write!(s, "{f:.6e}");
            } else if f.is_finite() {
                let _ = write!(s, "{}", trim_float(f));
            } else {
                let _ = write_float(&mut s, f);
            }
        }
        other => s = other.to_string(),
    }
    s
}

fn trim_float(f: f64) -> String {
    let t = format!("{f:.6}");
    let t = t.trim_end_matches('0');
    let t = t.strip_suffix('.').unwrap_or(t);
    if t == "-0" {
        "0".into()
    } else {
        t.to_string()
    }
}

/// [`ArrayDisplay`]'s text.
fn describe(graph: &Graph, value: &HostArray) -> String {
    let mut s = format!(
        "{} {}",
        value.dtype(),
        graph.axes_with_lengths(value.axes())
    );
    let data = value.data();
    let n = data.len();
    if n == 0 {
        // No elements: the nesting of an empty axis inside long ones would be all brackets.
        s.push_str(" = []");
    } else if n <= 64 {
        s.push_str(" =\n  ");
        s.push_str(&nested(value.shape(), &|i| {
            scalar_text(data.get(i).unwrap_or(Scalar::Float(f64::NAN)))
        }));
    } else {
        let first: Vec<String> = (0..8)
            .filter_map(|i| data.get(i).map(scalar_text))
            .collect();
        let vals: Vec<f64> = (0..n)
            .filter_map(|i| data.get(i).map(|v| v.as_f64()))
            .collect();
        let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = vals.iter().sum::<f64>() / n as f64;
        let _ = write!(
            s,
            "\n  first: [{}, ...]\n  min {}  max {}  mean {}",
            first.join(", "),
            scalar_text(Scalar::Float(min)),
            scalar_text(Scalar::Float(max)),
            scalar_text(Scalar::Float(mean))
        );
    }
    s
}

fn nested(shape: &[usize], item: &dyn Fn(usize) -> String) -> String {
    fn go(shape: &[usize], base: usize, item: &dyn Fn(usize) -> String, depth: usize) -> String {
        match shape.split_first() {
            None => item(base),
            Some((&n, rest)) => {
                let inner: usize = rest.iter().product();
                let sep = if rest.is_empty() {
                    ", ".to_string()
                } else {
                    format!(",\n{}", " ".repeat(depth + 3))
                };
                let parts: Vec<String> = (0..n)
                    .map(|i| go(rest, base + i * inner, item, depth + 1))
                    .collect();
                format!("[{}]", parts.join(&sep))
            }
        }
    }
    go(shape, 0, item, 0)
}
