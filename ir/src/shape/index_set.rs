//! Canonical sets of indices: the machinery behind label expressions on jagged shapes.
//!
//! A jagged shape's elements are a union of smooth boxes. Permuting, projecting and joining
//! modes works on those boxes; the result is normalised into an [`IndexSet`], whose canonical
//! form makes set equality structural equality, and then turned back into a jagged shape.

use super::error::ShapeError;
use super::jagged::JaggedShape;
use super::smooth::Shape;

/// A box of indices: one half-open range `(start, end)` per mode.
pub(crate) type IndexBox = Vec<(usize, usize)>;

/// A set of indices of a fixed rank, stored mode by mode as maximal runs of first-mode values
/// that share the same set of remaining indices.
///
/// Canonical: runs are non-empty, sorted, disjoint, their `rest` is non-empty, and adjacent runs
/// never share an equal `rest`. So two sets are equal exactly when they are `==`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IndexSet {
    /// The rank-0 set holding the empty index.
    Unit,
    /// Runs of the first mode; no runs is the empty set.
    Runs(Vec<Run>),
}

/// The first-mode values `start..end`, each followed by the indices in `rest`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    start: usize,
    end: usize,
    rest: IndexSet,
}

/// Where two index sets first differ: the mode, and how many values each covers there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Difference {
    pub(crate) mode: usize,
    pub(crate) lhs: usize,
    pub(crate) rhs: usize,
}

impl IndexSet {
    /// The union of `boxes`, each of `rank` ranges; boxes may overlap.
    pub(crate) fn from_boxes(boxes: &[IndexBox], rank: usize) -> IndexSet {
        let live: Vec<&IndexBox> = boxes
            .iter()
            .filter(|bx| bx.iter().all(|(start, end)| start < end))
            .collect();
        build(&live, 0, rank)
    }

    /// The set as disjoint boxes, in lexicographic order.
    pub(crate) fn boxes(&self) -> Vec<IndexBox> {
        fn walk(set: &IndexSet, prefix: &mut IndexBox, out: &mut Vec<IndexBox>) {
            match set {
                IndexSet::Unit => out.push(prefix.clone()),
                IndexSet::Runs(runs) => {
                    for run in runs {
                        prefix.push((run.start, run.end));
                        walk(&run.rest, prefix, out);
                        prefix.pop();
                    }
                }
            }
        }
        let mut out = Vec::new();
        walk(self, &mut Vec::new(), &mut out);
        out
    }

    /// Where `self` and `other` (of equal rank) first differ, if they do.
    pub(crate) fn first_difference(&self, other: &IndexSet) -> Option<Difference> {
        first_difference(self, other, 0)
    }

    /// Checks that below every node `outer` modes deep, all subsets `middle` further modes deep
    /// are equal; otherwise returns two that differ.
    pub(crate) fn uniform_below(
        &self,
        outer: usize,
        middle: usize,
    ) -> Result<(), (IndexSet, IndexSet)> {
        let mut nodes = Vec::new();
        subsets_at(self, outer, &mut nodes);
        for node in nodes {
            let mut fibers = Vec::new();
            subsets_at(node, middle, &mut fibers);
            if let Some((first, others)) = fibers.split_first() {
                if let Some(other) = others.iter().find(|fiber| *fiber != first) {
                    return Err(((*first).clone(), (*other).clone()));
                }
            }
        }
        Ok(())
    }

    /// The jagged shape with exactly these indices, one label per mode for error messages.
    ///
    /// Gaps in an unrolled mode become empty slices; a gap in the last mode cannot be
    /// described and is an error.
    pub(crate) fn to_jagged(&self, labels: &[String]) -> Result<JaggedShape, ShapeError> {
        let rank = labels.len();
        let runs = match self {
            IndexSet::Runs(runs) if rank > 0 => runs,
            // Rank 0: a sum over no elements is still a scalar.
            _ => return Ok(JaggedShape::from(Shape::scalar())),
        };
        let (Some(first), Some(last)) = (runs.first(), runs.last()) else {
            return Ok(JaggedShape::from(Shape::new(vec![0; rank])?));
        };
        if rank == 1 {
            if runs.len() > 1 {
                return Err(ShapeError::NotContiguous {
                    label: labels[0].clone(),
                });
            }
            let shape = Shape::with_origin([first.end - first.start], [first.start])?;
            return Ok(JaggedShape::from(shape));
        }
        let empty = JaggedShape::from(Shape::new(vec![0; rank - 1])?);
        let mut slices = Vec::with_capacity(last.end - first.start);
        let mut next = first.start;
        for run in runs {
            let rest = run.rest.to_jagged(&labels[1..])?;
            slices.extend(std::iter::repeat_n(empty.clone(), run.start - next));
            slices.extend(std::iter::repeat_n(rest, run.end - run.start));
            next = run.end;
        }
        JaggedShape::from_slices_with_origin(slices, first.start)
    }
}

/// The set of `boxes` (all non-empty) from mode `depth` on.
fn build(boxes: &[&IndexBox], depth: usize, rank: usize) -> IndexSet {
    if depth == rank {
        return if boxes.is_empty() {
            IndexSet::Runs(Vec::new())
        } else {
            IndexSet::Unit
        };
    }
    let mut points: Vec<usize> = boxes
        .iter()
        .flat_map(|bx| [bx[depth].0, bx[depth].1])
        .collect();
    points.sort_unstable();
    points.dedup();
    let mut by_start: Vec<&IndexBox> = boxes.to_vec();
    by_start.sort_by_key(|bx| bx[depth].0);
    // Sweep the elementary intervals between consecutive breakpoints; no box boundary falls
    // inside one, so the boxes covering it are those started and not yet ended.
    let mut active: Vec<&IndexBox> = Vec::new();
    let mut pending = by_start.into_iter().peekable();
    let mut runs: Vec<Run> = Vec::new();
    for window in points.windows(2) {
        let (start, end) = (window[0], window[1]);
        while let Some(bx) = pending.next_if(|bx| bx[depth].0 <= start) {
            active.push(bx);
        }
        active.retain(|bx| bx[depth].1 > start);
        if active.is_empty() {
            continue;
        }
        let rest = build(&active, depth + 1, rank);
        match runs.last_mut() {
            Some(last) if last.end == start && last.rest == rest => last.end = end,
            _ => runs.push(Run { start, end, rest }),
        }
    }
    IndexSet::Runs(runs)
}

fn first_difference(lhs: &IndexSet, rhs: &IndexSet, mode: usize) -> Option<Difference> {
    let (lhs_runs, rhs_runs) = match (lhs, rhs) {
        (IndexSet::Unit, IndexSet::Unit) => return None,
        (IndexSet::Runs(l), IndexSet::Runs(r)) => (l, r),
        // Sets of different rank; callers compare equal ranks.
        _ => {
            return Some(Difference {
                mode,
                lhs: 0,
                rhs: 0,
            })
        }
    };
    let count = |runs: &[Run]| runs.iter().map(|run| run.end - run.start).sum::<usize>();
    let differs = Difference {
        mode,
        lhs: count(lhs_runs),
        rhs: count(rhs_runs),
    };
    let mut points: Vec<usize> = lhs_runs
        .iter()
        .chain(rhs_runs)
        .flat_map(|run| [run.start, run.end])
        .collect();
    points.sort_unstable();
    points.dedup();
    let covering = |runs: &'_ [Run], at: usize| -> Option<usize> {
        runs.iter().position(|run| run.start <= at && at < run.end)
    };
    for window in points.windows(2) {
        match (covering(lhs_runs, window[0]), covering(rhs_runs, window[0])) {
            (None, None) => {}
            (Some(_), None) | (None, Some(_)) => return Some(differs),
            (Some(l), Some(r)) => {
                if let Some(deeper) =
                    first_difference(&lhs_runs[l].rest, &rhs_runs[r].rest, mode + 1)
                {
                    return Some(deeper);
                }
            }
        }
    }
    None
}

/// Collects every subset `depth` modes below `set`.
fn subsets_at<'a>(set: &'a IndexSet, depth: usize, out: &mut Vec<&'a IndexSet>) {
    if depth == 0 {
        out.push(set);
        return;
    }
    if let IndexSet::Runs(runs) = set {
        for run in runs {
            subsets_at(&run.rest, depth - 1, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_boxes_normalise_to_one_run() {
        let boxes = vec![vec![(0, 5), (0, 2)], vec![(3, 8), (0, 2)]];
        let set = IndexSet::from_boxes(&boxes, 2);
        assert_eq!(set.boxes(), vec![vec![(0, 8), (0, 2)]]);
    }

    #[test]
    fn differing_sets_report_the_first_mode_and_counts() {
        let a = IndexSet::from_boxes(&[vec![(0, 2), (0, 10)]], 2);
        let b = IndexSet::from_boxes(&[vec![(0, 2), (0, 20)]], 2);
        let diff = a.first_difference(&b);
        assert_eq!(
            diff,
            Some(Difference {
                mode: 1,
                lhs: 10,
                rhs: 20
            })
        );
        assert_eq!(a.first_difference(&a.clone()), None);
    }

    #[test]
    fn a_gap_in_the_last_mode_is_not_a_jagged_shape() {
        let set = IndexSet::from_boxes(&[vec![(0, 1)], vec![(2, 3)]], 1);
        let err = set.to_jagged(&["i".to_string()]).unwrap_err();
        assert_eq!(
            err,
            ShapeError::NotContiguous {
                label: "i".to_string()
            }
        );
    }
}
