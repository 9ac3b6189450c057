//! `HostArray` ⇄ `ndarray` conversions (feature `ndarray`), and an ndarray as a computation's
//! input.
#![cfg(feature = "ndarray")]

mod common;
use common::*;
use weft::prelude::*;

#[test]
fn host_arrays_convert_to_and_from_ndarray() {
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let m = ndarray::array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let h = HostArray::from_ndarray(Axes::new([a, b]).unwrap(), &m).unwrap();
    assert_eq!(h.shape(), &[2, 3]);
    assert_eq!(f32s(&h), vec![1., 2., 3., 4., 5., 6.]);
    assert_eq!(h.to_ndarray::<f32>().unwrap(), m.clone().into_dyn());
    // A column-major ndarray converts by logical index, not memory order.
    let t = m.clone().reversed_axes();
    let ht = HostArray::from_ndarray(Axes::new([b, a]).unwrap(), &t).unwrap();
    assert_eq!(f32s(&ht), vec![1., 4., 2., 5., 3., 6.]);
    // Every dtype, and the wrong element type is an error.
    let i = HostArray::from_ndarray(Axes::new([a]).unwrap(), &ndarray::array![7i64, -8]).unwrap();
    assert_eq!(
        i.to_ndarray::<i64>().unwrap(),
        ndarray::array![7i64, -8].into_dyn()
    );
    assert!(i.to_ndarray::<f64>().is_err());
    let bl =
        HostArray::from_ndarray(Axes::new([a]).unwrap(), &ndarray::array![true, false]).unwrap();
    assert_eq!(bools(&bl), vec![true, false]);
    // A shape that does not match the axes is an error.
    assert!(HostArray::from_ndarray(Axes::new([a]).unwrap(), &m).is_err());
}

#[test]
fn ndarray_inputs_to_a_computation() {
    let g = GraphBuilder::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let x = g.placeholder("x", &[a, b], DType::F64).unwrap();
    let s = x.sum(&[b]).unwrap().id();
    let x = x.id();
    let t = Transformer::new(g.finish(), Backend::Interpreter).unwrap();
    let c = t.computation(&[s], &[x]).unwrap();
    // Given as (B, A): transposed on the way in.
    let bt = ndarray::array![[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]];
    let input = HostArray::from_ndarray(Axes::new([b, a]).unwrap(), &bt).unwrap();
    let out = c.call(&[input]).unwrap();
    assert_eq!(
        out[0].to_ndarray::<f64>().unwrap(),
        ndarray::array![6.0, 15.0].into_dyn()
    );
}

#[test]
fn ndarray_views_are_borrowed_not_copied() {
    let g = GraphBuilder::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let x = g.placeholder("x", &[a, b], DType::F64).unwrap();
    let s = x.sum(&[b]).unwrap().id();
    let x = x.id();
    let t = Transformer::new(g.finish(), Backend::Jit).unwrap();
    let c = t.computation(&[s], &[x]).unwrap();
    let m = ndarray::array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let (ab, ba) = (Axes::new([a, b]).unwrap(), Axes::new([b, a]).unwrap());
    let view = m.view();
    let out = c
        .call(&[HostView::from_ndarray(&ab, &view).unwrap()])
        .unwrap();
    assert_eq!(
        out[0].to_ndarray::<f64>().unwrap(),
        ndarray::array![6.0, 15.0].into_dyn()
    );
    // A transposed view is not row-major: refused with a way out, not copied silently.
    let transposed = m.t();
    let err = HostView::from_ndarray(&ba, &transposed).unwrap_err();
    assert!(matches!(err, weft::HostError::Layout), "{err}");
    let standard = transposed.as_standard_layout();
    let std_view = standard.view();
    let out = c
        .call(&[HostView::from_ndarray(&ba, &std_view).unwrap()])
        .unwrap();
    assert_eq!(
        out[0].to_ndarray::<f64>().unwrap(),
        ndarray::array![6.0, 15.0].into_dyn()
    );
}
