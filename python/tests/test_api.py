"""Every public function of ``weft`` (``weft.__all__``) against NumPy, on each backend.

Tolerances (measured on all three backends before choosing them):

- ``EW``: weft's elementwise functions (exp, log, tanh, sigmoid, sin, cos, sqrt, ...) came within
  2 ulp of NumPy's float64 result on every backend. ``rtol`` 2e-6 (about 16 float32 ulp) and
  1e-14 (about 45 float64 ulp) leave headroom yet fail for a wrong function, a float32 routine
  used for float64, or a dropped term. ``atol`` covers results near 0 (sin, cos, x - y).
- ``RED``: reductions and contractions add in another order than NumPy (vectorised partial sums,
  docs/numerics.md); over at most a few dozen O(1) terms the difference is a few dozen ulp of the
  largest partial sum, hence rtol/atol 1e-5 (float32) and 1e-12 (float64).
- Integer, bool, copy and layout ops (slices, pads, casts to int, one-hot, ...) are exact.
"""

import pathlib
import re

import numpy as np
import pytest

import weft as ng
import weft.transformers as ngt

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

FLOATS = [np.float32, np.float64]
EW = {np.float32: dict(rtol=2e-6, atol=1e-6), np.float64: dict(rtol=1e-14, atol=1e-14)}
RED = {np.float32: dict(rtol=1e-5, atol=1e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


def axes(*spec):
    """Axes named and sized by ``("H", 2), ("W", 3), ...``."""
    return [ng.make_axis(length=n, name=name) for name, n in spec]


def names(op):
    return tuple(a.name for a in op.axes)


def check(result, expected, dtype=None, **tol):
    """``result`` is an ndarray of ``expected``'s shape (and ``dtype``) with its values."""
    assert isinstance(result, np.ndarray), type(result)
    expected = np.asarray(expected)
    assert result.shape == expected.shape, (result.shape, expected.shape)
    if dtype is not None:
        assert result.dtype == np.dtype(dtype), (result.dtype, dtype)
    if tol:
        np.testing.assert_allclose(result, expected, **tol)
    else:
        np.testing.assert_array_equal(result, expected)


# ---- elementwise ---------------------------------------------------------------------------

UNARY = [
    ("negative", np.negative, "any"),
    ("absolute", np.abs, "any"),
    ("exp", np.exp, "any"),
    ("log", np.log, "positive"),
    ("safelog", np.log, "positive"),
    ("sqrt", np.sqrt, "positive"),
    ("square", np.square, "any"),
    ("reciprocal", np.reciprocal, "nonzero"),
    ("sign", np.sign, "any"),
    ("tanh", np.tanh, "any"),
    ("sigmoid", lambda v: 1.0 / (1.0 + np.exp(-v)), "any"),
    ("sin", np.sin, "any"),
    ("cos", np.cos, "any"),
    ("relu", lambda v: np.maximum(v, 0.0), "any"),
]


def sample(rng, shape, domain, dtype):
    if domain == "positive":
        v = rng.uniform(0.05, 5.0, shape)
    elif domain == "nonzero":
        v = rng.uniform(0.05, 5.0, shape) * rng.choice([-1.0, 1.0], shape)
    else:
        v = rng.standard_normal(shape) * 2.0
    return v.astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,ref,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary(compute, rng, name, ref, domain, dtype):
    H, W = axes(("H", 3), ("W", 4))
    x = ng.placeholder([H, W], dtype=dtype)
    xv = sample(rng, (3, 4), domain, dtype)
    y = getattr(ng, name)(x)
    assert y.axes == (H, W) and y.dtype == dtype
    check(compute(y, {x: xv}), ref(xv.astype(np.float64)), dtype, **EW[dtype])


def test_safelog_is_finite_at_zero(compute):
    (A,) = axes(("A", 3))
    x = ng.placeholder([A])
    r = compute(ng.safelog(x), {x: np.array([0.0, 1.0, np.e], np.float32)})
    # nGraph's safelog: log(max(x, exp(-50))), so log 0 becomes -50.
    check(r, [-50.0, 0.0, 1.0], np.float32, rtol=1e-6)


def test_unary_of_ints(compute):
    (A,) = axes(("A", 5))
    x = ng.placeholder([A], dtype=np.int32)
    xv = np.array([-3, -1, 0, 2, 7], np.int32)
    r = compute([ng.negative(x), ng.absolute(x), ng.sign(x), ng.square(x), ng.relu(x)], {x: xv})
    for got, want in zip(r, [-xv, np.abs(xv), np.sign(xv), xv * xv, np.maximum(xv, 0)]):
        check(got, want, np.int32)


BINARY = [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
    ("divide", np.divide), ("maximum", np.maximum), ("minimum", np.minimum),
    ("power", np.power),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary_broadcasts_by_axis(compute, rng, name, ref, dtype):
    H, W = axes(("H", 2), ("W", 3))
    x = ng.placeholder([H, W], dtype=dtype)
    y = ng.placeholder([W], dtype=dtype)
    positive = name in ("power", "divide")
    xv = sample(rng, (2, 3), "positive" if positive else "any", dtype)
    yv = sample(rng, (3,), "nonzero" if name == "divide" else "any", dtype)
    z = getattr(ng, name)(x, y)
    assert z.axes == (H, W)
    check(compute(z, {x: xv, y: yv}), ref(xv.astype(np.float64), yv.astype(np.float64)[None, :]),
          dtype, **EW[dtype])


def test_binary_pairs_axes_by_identity_not_position(compute, rng):
    # x[H, W] + y[W, H]: the same set of axes, so y is paired by axis (transposed), and the
    # result keeps the left operand's order.
    H, W = axes(("H", 2), ("W", 3))
    x, y = ng.placeholder([H, W]), ng.placeholder([W, H])
    xv, yv = sample(rng, (2, 3), "any", np.float32), sample(rng, (3, 2), "any", np.float32)
    check(compute(x - y, {x: xv, y: yv}), xv - yv.T, np.float32, **EW[np.float32])
    check(compute(y - x, {x: xv, y: yv}), yv - xv.T, np.float32, **EW[np.float32])


def test_binary_outer_product_of_disjoint_axes(compute, rng):
    H, W = axes(("H", 2), ("W", 3))
    h, w = ng.placeholder([H]), ng.placeholder([W])
    hv, wv = sample(rng, (2,), "any", np.float32), sample(rng, (3,), "any", np.float32)
    z = h * w
    assert z.axes == (H, W)
    check(compute(z, {h: hv, w: wv}), hv[:, None] * wv[None, :], np.float32, **EW[np.float32])
    assert (w * h).axes == (W, H)


def test_binary_of_ints_is_exact(compute):
    (A,) = axes(("A", 4))
    x, y = ng.placeholder([A], dtype=np.int64), ng.placeholder([A], dtype=np.int64)
    xv, yv = np.array([-5, 0, 7, 2**40], np.int64), np.array([3, -2, 7, 1], np.int64)
    got = compute([x + y, x - y, x * y, ng.maximum(x, y), ng.minimum(x, y)], {x: xv, y: yv})
    for g, want in zip(got, [xv + yv, xv - yv, xv * yv, np.maximum(xv, yv), np.minimum(xv, yv)]):
        check(g, want, np.int64)


COMPARE = [
    ("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less),
    ("less_equal", np.less_equal), ("greater", np.greater), ("greater_equal", np.greater_equal),
]


@pytest.mark.parametrize("dtype", FLOATS + [np.int32])
@pytest.mark.parametrize("name,ref", COMPARE, ids=[c[0] for c in COMPARE])
def test_compare(compute, rng, name, ref, dtype):
    H, W = axes(("H", 3), ("W", 4))
    x, y = ng.placeholder([H, W], dtype=dtype), ng.placeholder([W], dtype=dtype)
    # Small integers, so that ties (where == and <= differ from <) occur.
    xv = rng.integers(-2, 3, (3, 4)).astype(dtype)
    yv = rng.integers(-2, 3, (4,)).astype(dtype)
    z = getattr(ng, name)(x, y)
    assert z.dtype == np.bool_
    check(compute(z, {x: xv, y: yv}), ref(xv, yv[None, :]), np.bool_)


OPERATORS = [
    ("x + y", lambda x, y: x + y), ("x - y", lambda x, y: x - y),
    ("x * y", lambda x, y: x * y), ("x / y", lambda x, y: x / y),
    ("x ** y", lambda x, y: x ** y), ("-x", lambda x, y: -x), ("abs(-x)", lambda x, y: abs(-x)),
    ("x < y", lambda x, y: x < y), ("x <= y", lambda x, y: x <= y),
    ("x > y", lambda x, y: x > y), ("x >= y", lambda x, y: x >= y),
    ("x + 2", lambda x, y: x + 2), ("2 + x", lambda x, y: 2 + x),
    ("x - 0.5", lambda x, y: x - 0.5), ("0.5 - x", lambda x, y: 0.5 - x),
    ("x * 3", lambda x, y: x * 3), ("3 * x", lambda x, y: 3 * x),
    ("x / 4", lambda x, y: x / 4), ("4 / x", lambda x, y: 4 / x),
    ("x ** 2", lambda x, y: x ** 2), ("2 ** x", lambda x, y: 2 ** x),
    ("x < 1", lambda x, y: x < 1), ("1 < x", lambda x, y: 1 < x),
    ("x <= 1", lambda x, y: x <= 1), ("x > 1.5", lambda x, y: x > 1.5),
    ("1.5 >= x", lambda x, y: 1.5 >= x),
    ("(x + y) * x - y / 2", lambda x, y: (x + y) * x - y / 2),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("expr,f", OPERATORS, ids=[o[0] for o in OPERATORS])
def test_operators(compute, rng, expr, f, dtype):
    # The same Python expression on ops and on NumPy arrays; numbers take the tensor's dtype,
    # as Python numbers do for NumPy arrays.
    H, W = axes(("H", 2), ("W", 3))
    x, y = ng.placeholder([H, W], dtype=dtype), ng.placeholder([H, W], dtype=dtype)
    # Positive (for **) small integers and halves, so that comparisons meet ties.
    xv = (rng.integers(1, 7, (2, 3)) / 2).astype(dtype)
    yv = (rng.integers(1, 7, (2, 3)) / 2).astype(dtype)
    z = f(x, y)
    want = f(xv, yv)
    assert z.axes == (H, W)
    check(compute(z, {x: xv, y: yv}), want, want.dtype, **({} if want.dtype == bool else EW[dtype]))


def test_numpy_scalars_take_the_tensors_dtype(compute):
    (A,) = axes(("A", 3))
    x = ng.placeholder([A])
    xv = np.array([1.0, 2.0, 3.0], np.float32)
    for z in (np.float32(2) * x, np.float64(2) * x, x * np.float64(2), np.int64(2) * x):
        assert z.dtype == np.float32
        check(compute(z, {x: xv}), 2 * xv, np.float32)


def test_select(compute, rng):
    H, W = axes(("H", 3), ("W", 4))
    x, y = ng.placeholder([H, W]), ng.placeholder([W])
    xv, yv = sample(rng, (3, 4), "any", np.float32), sample(rng, (4,), "any", np.float32)
    check(compute(ng.select(x > y, x, y), {x: xv, y: yv}),
          np.where(xv > yv, xv, yv), np.float32)
    check(compute(ng.select(x > 0, x, 0.0), {x: xv}), np.where(xv > 0, xv, 0), np.float32)


@pytest.mark.parametrize("src,dst", [
    (np.float32, np.int32), (np.float64, np.int64), (np.float64, np.float32),
    (np.float32, np.float64), (np.int64, np.float64), (np.int32, np.int64),
    (np.bool_, np.float32), (np.float32, np.bool_),
])
def test_cast(compute, src, dst):
    (A,) = axes(("A", 7))
    x = ng.placeholder([A], dtype=src)
    xv = np.array([-2.75, -1.5, -0.25, 0.0, 0.5, 1.0, 3.25]).astype(src)
    z = ng.cast(x, dst)
    assert z.dtype == dst
    # Float to int truncates toward zero, as NumPy's astype does.
    check(compute(z, {x: xv}), xv.astype(dst), dst)


# ---- reductions ----------------------------------------------------------------------------

REDUCTIONS = [
    ("sum", np.sum), ("prod", np.prod), ("max", np.max), ("min", np.min), ("mean", np.mean),
    ("argmax", np.argmax), ("argmin", np.argmin),
]


def np_reduce(name, ref, v, axis):
    if name.startswith("arg"):
        return ref(v, axis=axis)
    return ref(v.astype(np.float64), axis=axis)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,ref", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reduction_over_one_axis(compute, rng, name, ref, dtype):
    H, W, K = axes(("H", 2), ("W", 5), ("K", 3))
    x = ng.placeholder([H, W, K], dtype=dtype)
    xv = sample(rng, (2, 5, 3), "any", dtype)
    z = getattr(ng, name)(x, reduction_axes=[W])
    assert z.axes == (H, K)
    want = np_reduce(name, ref, xv, 1)
    out_dtype = np.int64 if name.startswith("arg") else dtype
    assert z.dtype == out_dtype
    tol = {} if name.startswith("arg") else RED[dtype]
    check(compute(z, {x: xv}), want, out_dtype, **tol)


@pytest.mark.parametrize("name,ref", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reduction_with_out_axes_orders_the_result(compute, rng, name, ref):
    H, W, K = axes(("H", 2), ("W", 5), ("K", 3))
    x = ng.placeholder([H, W, K], dtype=np.float64)
    xv = sample(rng, (2, 5, 3), "any", np.float64)
    want = np_reduce(name, ref, xv, 1).T          # (K, H): out_axes' order, not x's
    tol = {} if name.startswith("arg") else RED[np.float64]
    z = getattr(ng, name)(x, reduction_axes=[W], out_axes=[K, H])
    assert z.axes == (K, H)
    check(compute(z, {x: xv}), want, **tol)
    # out_axes alone: every other axis is reduced.
    z = getattr(ng, name)(x, out_axes=[K, H])
    assert z.axes == (K, H)
    check(compute(z, {x: xv}), want, **tol)


@pytest.mark.parametrize("name,ref", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reduction_over_every_axis_is_a_0d_array(compute, rng, name, ref):
    H, W = axes(("H", 3), ("W", 4))
    x = ng.placeholder([H, W], dtype=np.float64)
    xv = sample(rng, (3, 4), "any", np.float64)
    z = getattr(ng, name)(x, reduction_axes=x.axes)
    assert z.axes == ()
    r = compute(z, {x: xv})
    # argmax/argmin over several axes: the row-major flat index over the axes in the order given.
    check(r, ref(xv, axis=None), **({} if name.startswith("arg") else RED[np.float64]))


def test_argmax_over_two_axes_in_the_order_given(compute, rng):
    H, W, N = axes(("H", 2), ("W", 3), ("N", 4))
    x = ng.placeholder([H, W, N])
    xv = sample(rng, (2, 3, 4), "any", np.float32)
    # Over [W, H]: flat index w * len(H) + h.
    want = np.argmax(xv.transpose(1, 0, 2).reshape(6, 4), axis=0)
    check(compute(ng.argmax(x, reduction_axes=[W, H]), {x: xv}), want, np.int64)
    want = np.argmin(xv.reshape(6, 4), axis=0)
    check(compute(ng.argmin(x, reduction_axes=[H, W]), {x: xv}), want, np.int64)


def test_reduction_axes_in_any_order_and_empty(compute, rng):
    C, H, W = axes(("C", 2), ("H", 3), ("W", 4))
    x = ng.placeholder([C, H, W])
    xv = sample(rng, (2, 3, 4), "any", np.float32)
    assert ng.sum(x, reduction_axes=[]).axes == (C, H, W)
    assert ng.sum(x, reduction_axes=[C]).axes == (H, W)
    assert ng.sum(x, reduction_axes=[W, C]).axes == (H,)
    check(compute(ng.sum(x, reduction_axes=[]), {x: xv}), xv, np.float32)
    check(compute(ng.sum(x, reduction_axes=[W, C]), {x: xv}), xv.sum((0, 2)), np.float32,
          **RED[np.float32])


def test_reduction_default_keeps_the_batch_axis(compute, rng):
    C, N = axes(("C", 3), ("N", 4))
    x = ng.placeholder([C, N])
    xv = sample(rng, (3, 4), "any", np.float32)
    z = ng.sum(x)
    assert z.axes == (N,)
    check(compute(z, {x: xv}), xv.sum(0), np.float32, **RED[np.float32])


def test_reductions_of_ints(compute):
    H, W = axes(("H", 2), ("W", 3))
    x = ng.placeholder([H, W], dtype=np.int32)
    xv = np.array([[4, -2, 9], [0, 7, -7]], np.int32)
    got = compute([ng.sum(x, reduction_axes=[W]), ng.max(x, reduction_axes=[W]),
                   ng.min(x, reduction_axes=[H]), ng.prod(x, reduction_axes=[H])], {x: xv})
    for g, want in zip(got, [xv.sum(1), xv.max(1), xv.min(0), xv.prod(0)]):
        check(g, want.astype(np.int32), np.int32)


# ---- dot -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
def test_dot_matrix_vector(compute, rng, dtype):
    H, W = axes(("H", 3), ("W", 5))
    x, v = ng.placeholder([H, W], dtype=dtype), ng.placeholder([W], dtype=dtype)
    xv, vv = sample(rng, (3, 5), "any", dtype), sample(rng, (5,), "any", dtype)
    z = ng.dot(x, v)
    assert z.axes == (H,)
    check(compute(z, {x: xv, v: vv}), xv.astype(np.float64) @ vv, dtype, **RED[dtype])


@pytest.mark.parametrize("dtype", FLOATS)
def test_dot_matrix_matrix(compute, rng, dtype):
    H, W, K = axes(("H", 3), ("W", 5), ("K", 4))
    x, m = ng.placeholder([H, W], dtype=dtype), ng.placeholder([W, K], dtype=dtype)
    xv, mv = sample(rng, (3, 5), "any", dtype), sample(rng, (5, 4), "any", dtype)
    z = ng.dot(x, m)
    assert z.axes == (H, K)
    check(compute(z, {x: xv, m: mv}), xv.astype(np.float64) @ mv, dtype, **RED[dtype])


@pytest.mark.parametrize("dtype", FLOATS)
def test_dot_contracts_two_shared_axes(compute, rng, dtype):
    M, H, W, N = axes(("M", 3), ("H", 2), ("W", 4), ("N", 5))
    # The right operand has the shared axes in another order: pairing is by axis.
    a, b = ng.placeholder([M, W, H], dtype=dtype), ng.placeholder([H, W, N], dtype=dtype)
    av, bv = sample(rng, (3, 4, 2), "any", dtype), sample(rng, (2, 4, 5), "any", dtype)
    z = ng.dot(a, b)
    assert z.axes == (M, N)
    check(compute(z, {a: av, b: bv}), np.einsum("mwh,hwn->mn", av.astype(np.float64), bv),
          dtype, **RED[dtype])


def test_dot_of_transpose_is_the_squared_norm(compute, rng):
    # weft's duals: t.T has N*, which dot pairs with t's N (docs/axes.md): the l2 example.
    (N,) = axes(("N", 16))
    x, y = ng.placeholder([N]), ng.placeholder([N])
    xv, yv = sample(rng, (16,), "any", np.float32), sample(rng, (16,), "any", np.float32)
    t = x - y
    s = ng.dot(t.T, t)
    assert s.axes == ()
    check(compute(s, {x: xv, y: yv}), ((xv - yv).astype(np.float64) ** 2).sum(), np.float32,
          **RED[np.float32])


# ---- structure -----------------------------------------------------------------------------

def test_broadcast(compute, rng):
    H, W, N = axes(("H", 2), ("W", 3), ("N", 4))
    v = ng.placeholder([W])
    vv = sample(rng, (3,), "any", np.float32)
    z = ng.broadcast(v, [N, W, H])
    assert z.axes == (N, W, H)
    check(compute(z, {v: vv}), np.broadcast_to(vv[None, :, None], (4, 3, 2)), np.float32)


def test_axes_with_order(compute, rng):
    H, W, N = axes(("H", 2), ("W", 3), ("N", 4))
    x = ng.placeholder([H, W, N])
    xv = sample(rng, (2, 3, 4), "any", np.float32)
    z = ng.axes_with_order(x, [N, H, W])
    assert z.axes == (N, H, W)
    check(compute(z, {x: xv}), xv.transpose(2, 0, 1), np.float32)


def test_cast_axes_renames_position_by_position(compute, rng):
    C1, C2, N = axes(("C1", 3), ("C2", 3), ("N", 2))
    a, b = ng.placeholder([C1, N]), ng.placeholder([C2, N])
    av, bv = sample(rng, (3, 2), "any", np.float32), sample(rng, (3, 2), "any", np.float32)
    cast = ng.cast_axes(b, [C1, N])
    assert cast.axes == (C1, N)
    check(compute(cast, {b: bv}), bv, np.float32)
    # After the cast the two tensors pair elementwise; without it, they broadcast.
    check(compute(a + cast, {a: av, b: bv}), av + bv, np.float32, **EW[np.float32])
    assert (a + b).axes == (C1, N, C2)


def test_transpose_and_T(compute, rng):
    H, W, N = axes(("H", 2), ("W", 3), ("N", 4))
    x = ng.placeholder([H, W, N])
    xv = sample(rng, (2, 3, 4), "any", np.float32)
    for z in (ng.transpose(x), x.T):
        # Reversed, each axis turned into its transpose A -> A* (dual degree 1).
        assert z.axes == (N.T, W.T, H.T) == (N + 1, W + 1, H + 1)
        assert [a.dual_degree for a in z.axes] == [1, 1, 1]
        check(compute(z, {x: xv}), xv.T, np.float32)
    assert x.T.T.axes == x.axes
    check(compute(x.T.T, {x: xv}), xv, np.float32)


@pytest.mark.parametrize("slices", [
    (1, slice(0, 4, 2)),
    (slice(None), slice(None, None, -1)),
    (slice(1, 3), 2),
    (-1, slice(1, None)),
    (slice(None, None, 2), slice(4, 0, -2)),
], ids=str)
def test_tensor_slice(compute, rng, slices):
    H, W = axes(("H", 4), ("W", 5))
    x = ng.placeholder([H, W])
    xv = sample(rng, (4, 5), "any", np.float32)
    z = ng.tensor_slice(x, list(slices))
    assert len(z.axes) == sum(isinstance(s, slice) for s in slices)
    check(compute(z, {x: xv}), xv[slices], np.float32)


def test_slice_along_axis(compute, rng):
    H, W = axes(("H", 4), ("W", 5))
    x = ng.placeholder([H, W])
    xv = sample(rng, (4, 5), "any", np.float32)
    z = ng.slice_along_axis(x, W, 3)
    assert z.axes == (H,)
    check(compute(z, {x: xv}), xv[:, 3], np.float32)
    z = ng.slice_along_axis(x, H, slice(1, 3))
    assert z.axes[1] == W and z.axes.lengths == (2, 5)
    check(compute(z, {x: xv}), xv[1:3], np.float32)


def test_pad(compute, rng):
    H, W = axes(("H", 2), ("W", 3))
    x = ng.placeholder([H, W])
    xv = sample(rng, (2, 3), "any", np.float32)
    z = ng.pad(x, [(1, 0), 2])
    assert z.axes.lengths == (3, 7)
    check(compute(z, {x: xv}), np.pad(xv, [(1, 0), (2, 2)]), np.float32)


def test_flatten_and_unflatten(compute, rng):
    H, W, N = axes(("H", 2), ("W", 3), ("N", 4))
    x = ng.placeholder([H, W, N])
    xv = sample(rng, (2, 3, 4), "any", np.float32)
    f = ng.flatten(x)
    assert f.axes.lengths == (24,)
    check(compute(f, {x: xv}), xv.reshape(-1), np.float32)
    u = ng.unflatten(f)
    assert u.axes == (H, W, N)
    check(compute(u, {x: xv}), xv, np.float32)
    f = ng.flatten(x, [H, W])
    assert f.axes.lengths == (6, 4) and f.axes[1] == N
    check(compute(f, {x: xv}), xv.reshape(6, 4), np.float32)
    assert ng.unflatten(f, f.axes[0]).axes == (H, W, N)
    check(compute(ng.unflatten(f, f.axes[0]), {x: xv}), xv, np.float32)
    f = ng.flatten_at(x, 1)
    assert f.axes[0] == H and f.axes.lengths == (2, 12)
    check(compute(f, {x: xv}), xv.reshape(2, 12), np.float32)


@pytest.mark.parametrize("along", ["H", "W"])
def test_concat_along_axis(compute, rng, along):
    H, W = axes(("H", 2), ("W", 3))
    x, y = ng.placeholder([H, W]), ng.placeholder([H, W])
    xv, yv = sample(rng, (2, 3), "any", np.float32), sample(rng, (2, 3), "any", np.float32)
    axis = {"H": H, "W": W}[along]
    z = ng.concat_along_axis([x, y, x], axis)
    i = 0 if along == "H" else 1
    assert z.axes.lengths[i] == 3 * axis.length
    check(compute(z, {x: xv, y: yv}), np.concatenate([xv, yv, xv], axis=i), np.float32)


def test_expand_dims(compute, rng):
    H, W, N = axes(("H", 2), ("W", 3), ("N", 4))
    x = ng.placeholder([H, W])
    xv = sample(rng, (2, 3), "any", np.float32)
    z = ng.expand_dims(x, N, 1)
    assert z.axes == (H, N, W)
    check(compute(z, {x: xv}), np.broadcast_to(xv[:, None, :], (2, 4, 3)), np.float32)


# ---- neural-network functions --------------------------------------------------------------

def np_softmax(v, axis):
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax(compute, rng, dtype):
    C, N = axes(("C", 5), ("N", 3))
    x = ng.placeholder([C, N], dtype=dtype)
    xv = sample(rng, (5, 3), "any", dtype) * 4
    want = np_softmax(xv.astype(np.float64), 0)
    # Default: every axis but the batch axis N.
    check(compute(ng.softmax(x), {x: xv}), want, dtype, **RED[dtype])
    check(compute(ng.softmax(x, normalization_axes=[C]), {x: xv}), want, dtype, **RED[dtype])
    check(compute(ng.softmax(x, normalization_axes=[N]), {x: xv}),
          np_softmax(xv.astype(np.float64), 1), dtype, **RED[dtype])


@pytest.mark.parametrize("usebits", [False, True])
def test_cross_entropy_multi(compute, rng, usebits):
    C, N = axes(("C", 4), ("N", 3))
    y, t = ng.placeholder([C, N], dtype=np.float64), ng.placeholder([C, N], dtype=np.float64)
    yv = np_softmax(rng.standard_normal((4, 3)), 0)
    tv = np.eye(4)[:, [2, 0, 3]]
    log = np.log2 if usebits else np.log
    z = ng.cross_entropy_multi(y, t, usebits=usebits)
    assert z.axes == (N,)
    check(compute(z, {y: yv, t: tv}), -(tv * log(yv)).sum(0), np.float64, **RED[np.float64])
    z = ng.cross_entropy_multi(y, t, usebits=usebits, out_axes=[C])
    check(compute(z, {y: yv, t: tv}), -(tv * log(yv)).sum(1), np.float64, **RED[np.float64])


def test_cross_entropy_binary(compute, rng):
    C, N = axes(("C", 4), ("N", 3))
    y, t = ng.placeholder([C, N], dtype=np.float64), ng.placeholder([C, N], dtype=np.float64)
    yv = rng.uniform(0.05, 0.95, (4, 3))
    tv = rng.integers(0, 2, (4, 3)).astype(np.float64)
    z = ng.cross_entropy_binary(y, t)
    assert z.axes == (N,)
    want = -(tv * np.log(yv) + (1 - tv) * np.log(1 - yv)).sum(0)
    check(compute(z, {y: yv, t: tv}), want, np.float64, **RED[np.float64])


@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", FLOATS)
def test_one_hot(compute, label_dtype, dtype):
    N, C = axes(("N", 5), ("C", 4))
    labels = ng.placeholder([N], dtype=label_dtype)
    lv = np.array([3, 0, 1, 3, 2], label_dtype)
    z = ng.one_hot(labels, C, dtype=dtype)
    assert z.axes == (N, C) and z.dtype == dtype
    check(compute(z, {labels: lv}), np.eye(4, dtype=dtype)[lv], dtype)


# ---- convolution and pooling (paired by axis role) ------------------------------------------

def conv_axes():
    r = ng.roles
    return dict(
        C=ng.make_axis(length=3, name="C", roles=[r.Channel]),
        H=ng.make_axis(length=6, name="H", roles=[r.Height]),
        W=ng.make_axis(length=5, name="W", roles=[r.Width]),
        N=ng.make_axis(length=2, name="N"),
        Cf=ng.make_axis(length=3, name="Cf", roles=[r.Channel]),
        R=ng.make_axis(length=3, name="R", roles=[r.Height]),
        S=ng.make_axis(length=2, name="S", roles=[r.Width]),
        K=ng.make_axis(length=4, name="K", roles=[r.Channelout]),
    )


def np_conv(xv, fv, str_h=1, str_w=1, pad_h=0, pad_w=0, dil_h=1, dil_w=1):
    """Cross-correlation of x[C, H, W, N] with f[C, R, S, K]: [K, P, Q, N]."""
    _, R, S, K = fv.shape
    xp = np.pad(xv, [(0, 0), (pad_h, pad_h), (pad_w, pad_w), (0, 0)])
    P = (xp.shape[1] - dil_h * (R - 1) - 1) // str_h + 1
    Q = (xp.shape[2] - dil_w * (S - 1) - 1) // str_w + 1
    out = np.zeros((K, P, Q, xv.shape[3]))
    for p in range(P):
        for q in range(Q):
            patch = xp[:, p * str_h:p * str_h + dil_h * (R - 1) + 1:dil_h,
                       q * str_w:q * str_w + dil_w * (S - 1) + 1:dil_w, :]
            out[:, p, q, :] = np.einsum("crsn,crsk->kn", patch, fv)
    return out


@pytest.mark.parametrize("params", [
    {}, {"str_h": 2}, {"pad_h": 1, "pad_w": 1}, {"dil_h": 2}, {"str_w": 2, "pad_w": 1},
], ids=str)
def test_convolution(compute, rng, params):
    a = conv_axes()
    x = ng.placeholder([a["C"], a["H"], a["W"], a["N"]], name="x")
    f = ng.placeholder([a["Cf"], a["R"], a["S"], a["K"]], name="f")
    y = ng.convolution(params, x, f)
    # x's axis order, the channels replaced by the filter's K (as K'), each spatial axis by
    # its window axis, which keeps its role; the batch axis N is kept.
    assert [r for ax in y.axes for r in ax.roles] == ["Channel", "Height", "Width"]
    assert y.axes[0].length == 4 and y.axes[3] == a["N"]
    xv, fv = sample(rng, (3, 6, 5, 2), "any", np.float32), sample(rng, (3, 3, 2, 4), "any",
                                                                   np.float32)
    check(compute(y, {x: xv, f: fv}), np_conv(xv.astype(np.float64), fv, **params),
          np.float32, **RED[np.float32])


def np_pool(xv, op, R, S, str_h, str_w, pad_h=0, pad_w=0):
    # Padding is never a tap: -inf for a max, left out of an average.
    xp = np.pad(xv, [(0, 0), (pad_h, pad_h), (pad_w, pad_w), (0, 0)],
                constant_values=-np.inf if op == "max" else np.nan)
    P = (xp.shape[1] - R) // str_h + 1
    Q = (xp.shape[2] - S) // str_w + 1
    out = np.zeros((xv.shape[0], P, Q, xv.shape[3]))
    for p in range(P):
        for q in range(Q):
            win = xp[:, p * str_h:p * str_h + R, q * str_w:q * str_w + S, :]
            out[:, p, q, :] = win.max((1, 2)) if op == "max" else np.nanmean(win, (1, 2))
    return out


@pytest.mark.parametrize("params", [
    {"op": "max", "R": 2, "S": 2, "str_h": 2, "str_w": 2},
    {"op": "avg", "R": 3, "S": 2, "str_h": 1, "str_w": 1},
    {"op": "max", "R": 3, "S": 3, "str_h": 2, "str_w": 2, "pad_h": 1, "pad_w": 1},
    {"op": "avg", "R": 3, "S": 3, "str_h": 1, "str_w": 1, "pad_h": 1, "pad_w": 1},
], ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_pooling(compute, rng, params):
    a = conv_axes()
    x = ng.placeholder([a["C"], a["H"], a["W"], a["N"]], name="x")
    y = ng.pooling(params, x)
    assert y.axes[0] == a["C"] and y.axes[3] == a["N"]
    xv = sample(rng, (3, 6, 5, 2), "any", np.float32)
    want = np_pool(xv.astype(np.float64), params["op"], params["R"], params["S"],
                   params["str_h"], params["str_w"], params.get("pad_h", 0),
                   params.get("pad_w", 0))
    check(compute(y, {x: xv}), want, np.float32, **RED[np.float32])


def test_deriv_through_convolution_and_pooling(backend, rng):
    r = ng.roles
    C = ng.make_axis(length=2, name="C", roles=[r.Channel])
    H = ng.make_axis(length=5, name="H", roles=[r.Height])
    N = ng.make_axis(length=2, name="N")
    Cf = ng.make_axis(length=2, name="Cf", roles=[r.Channel])
    R = ng.make_axis(length=3, name="R", roles=[r.Height])
    K = ng.make_axis(length=2, name="K", roles=[r.Channelout])
    x = ng.placeholder([C, H, N], dtype=np.float64)
    f = ng.placeholder([Cf, R, K], dtype=np.float64)
    p = ng.pooling({"op": "max", "R": 2, "str_h": 1}, ng.convolution({}, x, f))
    cost = ng.sum(p * p, reduction_axes=p.axes)
    tr = ngt.make_transformer(backend)
    cost_of = tr.computation(cost, x, f)
    grad_of = tr.computation(ng.deriv(cost, f), x, f)
    xv, fv = rng.standard_normal((2, 5, 2)), rng.standard_normal((2, 3, 2))
    eps, numeric = 1e-6, np.zeros_like(fv)
    for i in np.ndindex(fv.shape):
        up, down = fv.copy(), fv.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (float(cost_of(xv, up)) - float(cost_of(xv, down))) / (2 * eps)
    check(grad_of(xv, fv), numeric, np.float64, rtol=1e-6, atol=1e-6)


def test_axis_roles():
    assert isinstance(ng.roles.Height, ng.AxisRole) and ng.roles.Height == "Height"
    assert ng.make_axis_role("Width") == ng.roles.Width
    mine, other = ng.make_axis_role(), ng.make_axis_role()
    assert isinstance(mine, ng.AxisRole) and mine != other
    H = ng.make_axis(length=4, name="H", roles=[ng.roles.Height, mine])
    assert set(H.roles) == {"Height", str(mine)}
    # A name is a label: another H is another axis, with roles of its own.
    W = ng.make_axis(length=4, name="H", roles=[ng.roles.Width])
    assert W != H and W.roles == ["Width"] and set(H.roles) == {"Height", str(mine)}
    assert ng.make_axis(length=2, name="plain").roles == []


# ---- tooling: threads, dumps, bench ----------------------------------------------------------

def test_transformer_threads_and_dump(rng, tmp_path):
    R, C = axes(("R", 64), ("C", 32))
    a = ng.placeholder([R, C], name="a")
    y = ng.softmax(a, normalization_axes=[C])
    av = sample(rng, (64, 32), "any", np.float32)
    one = ngt.make_transformer(threads=1).computation(y, a)
    many = ngt.make_transformer(threads=4).computation(y, a)
    check(one(av), np_softmax(av.astype(np.float64), 1), np.float32, **RED[np.float32])
    check(many(av), one(av), np.float32, **RED[np.float32])
    files = one.dump(tmp_path / "dump")
    assert list(files)[0].startswith("00-") and any(n.endswith(".s") for n in files)
    assert sorted(p.name for p in (tmp_path / "dump").iterdir()) == sorted(files)
    assert "placeholder a: f32[R, C]" in files[list(files)[0]]


def test_bench():
    (N,) = axes(("N", 16))
    x, y = ng.placeholder([N], name="x"), ng.placeholder([N], name="y")
    t = x - y
    inputs = [np.ones(16, np.float32), np.zeros(16, np.float32)]
    times = ng.bench([ng.dot(t.T, t)], [x, y], inputs, runs=3, warmup=1)
    assert set(times) == {"jit", "unfused"}
    for t in times.values():
        assert 0 < t["min_ms"] <= t["median_ms"] <= t["max_ms"]
    loaded = ng.load(EXAMPLES / "l2.weft").bench(inputs, runs=2, warmup=0,
                                                 backends=("interpreter",))
    assert set(loaded) == {"interpreter"}


# ---- deriv ---------------------------------------------------------------------------------

def test_deriv_analytic(backend, rng):
    # cost = sum_N (x·w - t)^2, so d cost / dw = 2 xᵀ (x w - t).
    N, C = axes(("N", 6), ("C", 3))
    x, t = ng.placeholder([N, C], dtype=np.float64), ng.placeholder([N], dtype=np.float64)
    w0 = rng.standard_normal(3)
    w = ng.variable([C], dtype=np.float64, initial_value=w0)
    cost = ng.sum(ng.square(ng.dot(x, w) - t), reduction_axes=[N])
    g = ng.deriv(cost, w)
    assert g.axes == (C,)
    xv, tv = rng.standard_normal((6, 3)), rng.standard_normal(6)
    comp = ngt.make_transformer(backend).computation(g, x, t)
    check(comp(xv, tv), 2 * xv.T @ (xv @ w0 - tv), np.float64, **RED[np.float64])


def test_deriv_with_an_upstream_error_is_the_vector_jacobian_product(backend, rng):
    # cost = tanh(x·w) over [N]; with error e over [N]: d/dw Σ e·cost = xᵀ (e ⊙ (1 − cost²)).
    N, C = axes(("N", 5), ("C", 3))
    x, e = ng.placeholder([N, C], dtype=np.float64), ng.placeholder([N], dtype=np.float64)
    w0 = rng.standard_normal(3)
    w = ng.variable([C], dtype=np.float64, initial_value=w0)
    cost = ng.tanh(ng.dot(x, w))
    g = ng.deriv(cost, w, error=e)
    assert g.axes == (C,)
    xv, ev = rng.standard_normal((5, 3)), rng.standard_normal(5)
    comp = ngt.make_transformer(backend).computation(g, x, e)
    y = np.tanh(xv @ w0)
    check(comp(xv, ev), xv.T @ (ev * (1 - y * y)), np.float64, **RED[np.float64])
    with pytest.raises(ng.GraphError, match="depends on"):
        ng.deriv(cost, w, error=cost * 2.0)        # an upstream gradient is held constant
    with pytest.raises(ng.AxisError, match="not the cost's"):
        ng.deriv(cost, w, error=ng.placeholder([C], dtype=np.float64))


DERIV_CASES = {
    "tanh": lambda v: ng.tanh(v),
    "sigmoid": lambda v: ng.sigmoid(v),
    "exp_log": lambda v: ng.log(ng.exp(v) + 1.0),
    "sqrt_recip": lambda v: ng.sqrt(v + 3.0) * ng.reciprocal(v + 4.0),
    "sin_cos": lambda v: ng.sin(v) * ng.cos(2.0 * v),
    "power": lambda v: (v + 3.0) ** 2.5,
    "max": lambda v: ng.max(v, reduction_axes=[v.axes[1]]),
    "softmax": lambda v: ng.softmax(v, normalization_axes=[v.axes[1]]) ** 2.0,
    "dot_T": lambda v: ng.dot(v.T, v),
    "slice_pad": lambda v: ng.pad(ng.slice_along_axis(v, v.axes[1], slice(1, 3)), [0, 1]) ** 2.0,
    "select_relu": lambda v: ng.select(v > 0.0, v * v, ng.relu(v) - v),
}


@pytest.mark.parametrize("case", sorted(DERIV_CASES))
def test_deriv_matches_finite_differences(backend, rng, case):
    N, C = axes(("N", 3), ("C", 4))
    x = ng.placeholder([N, C], dtype=np.float64)
    f = DERIV_CASES[case](x)
    cost = ng.sum(f, reduction_axes=f.axes)
    grad = ng.deriv(cost, x)
    assert grad.axes == x.axes and grad.dtype == np.float64
    tr = ngt.make_transformer(backend)
    cost_of, grad_of = tr.computation(cost, x), tr.computation(grad, x)
    # Away from 0, where relu, select and max would have kinks.
    xv = rng.uniform(0.2, 1.0, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))
    eps = 1e-6
    numeric = np.zeros_like(xv)
    for i in np.ndindex(xv.shape):
        up, down = xv.copy(), xv.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (float(cost_of(up)) - float(cost_of(down))) / (2 * eps)
    # Central differences in float64 are accurate to about eps² + 1e-16 / eps: 1e-7 is ample.
    check(grad_of(xv), numeric, np.float64, rtol=1e-6, atol=1e-7)


# ---- state ---------------------------------------------------------------------------------

def test_variable_assign_sequential_state_persists(backend):
    (A,) = axes(("A", 3))
    v = ng.variable([A], initial_value=np.array([1.0, 2.0, 3.0], np.float32), name="v")
    inc = ng.placeholder([A], name="inc")
    tr = ngt.make_transformer(backend)
    step = tr.computation(ng.sequential([ng.assign(v, v + inc), v * 10.0]), inc)
    one = np.ones(3, np.float32)
    # v * 10 comes after the assign in the sequential, and reads the assigned v (nGraph's
    # order).
    check(step(one), [20.0, 30.0, 40.0], np.float32)
    check(step(one), [30.0, 40.0, 50.0], np.float32)
    check(step(2 * one), [50.0, 60.0, 70.0], np.float32)
    check(tr.value_of(v), [5.0, 6.0, 7.0], np.float32)
    # Another computation of the same transformer shares the variable.
    check(tr.computation(v + 0.0)(), [5.0, 6.0, 7.0], np.float32)
    # A new transformer starts from the initial value.
    check(ngt.make_transformer(backend).computation(v + 0.0)(), [1.0, 2.0, 3.0], np.float32)


def test_assignments_read_the_values_from_the_start_of_the_call(backend):
    (A,) = axes(("A", 2))
    v = ng.variable([A], initial_value=np.array([1.0, 2.0], np.float32))
    w = ng.variable([A], initial_value=np.array([10.0, 20.0], np.float32))
    tr = ngt.make_transformer(backend)
    # Outside a sequential both assignments read the old values, so they swap v and w.
    swap = tr.computation([ng.assign(v, w), ng.assign(w, v), v + w])
    check(swap()[2], [11.0, 22.0], np.float32)
    check(tr.value_of(v), [10.0, 20.0], np.float32)
    check(tr.value_of(w), [1.0, 2.0], np.float32)
    swap()
    check(tr.value_of(v), [1.0, 2.0], np.float32)
    # In a sequential they run in order: w takes the v just assigned, v + w reads both new.
    chain = tr.computation(ng.sequential([ng.assign(v, w), ng.assign(w, v), v + w]))
    check(chain(), [20.0, 40.0], np.float32)
    check(tr.value_of(w), [10.0, 20.0], np.float32)
    # Two assignments of one target in a sequential: the later one wins (it runs after).
    twice = tr.computation(ng.sequential([ng.assign(v, w * 3.0), ng.assign(v, w * 5.0)]))
    twice()
    check(tr.value_of(v), [50.0, 100.0], np.float32)


def test_assign_value_is_the_new_value(backend):
    (A,) = axes(("A", 2))
    v = ng.variable([A], initial_value=1.0)
    tr = ngt.make_transformer(backend)
    new, old = tr.computation([ng.assign(v, v * 3.0), v])()
    check(new, [3.0, 3.0], np.float32)
    check(old, [1.0, 1.0], np.float32)


def test_persistent_tensor(backend):
    (A,) = axes(("A", 3))
    zeros = ng.persistent_tensor([A])
    start = ng.persistent_tensor([A], initial_value=np.array([1.0, 2.0, 3.0]))
    tr = ngt.make_transformer(backend)
    count = tr.computation(ng.sequential([ng.assign(zeros, zeros + 1.0), zeros]))
    assert [float(count()[0]) for _ in range(4)] == [1.0, 2.0, 3.0, 4.0]
    check(tr.value_of(zeros), [4.0, 4.0, 4.0], np.float32)
    # (start is float64: its initial array's dtype)
    snap = start * 1.0
    before = tr.computation(ng.sequential([snap, ng.assign(start, start * 2.0), snap]))
    check(before(), [1.0, 2.0, 3.0], np.float64)   # computed before the assign: kept
    double = tr.computation(ng.sequential([ng.assign(start, start * 2.0), start]))
    check(double(), [4.0, 8.0, 12.0], np.float64)
    # The first computation's state survived the rebuild the second one needed.
    check(tr.value_of(zeros), [4.0, 4.0, 4.0], np.float32)


def test_variable_initial_values(compute):
    H, W = axes(("H", 2), ("W", 3))
    a = ng.variable([H, W], initial_value=2.5)
    b = ng.variable([H, W], initial_value=np.arange(6.0).reshape(2, 3))
    c = ng.variable([H, W], initial_value=lambda lengths: np.full(lengths, 7.0))
    d = ng.variable([W], dtype=np.int64, initial_value=np.array([1, 2, 3]))
    got = compute([a, b, c, d])
    check(got[0], np.full((2, 3), 2.5), np.float32)
    check(got[1], np.arange(6.0).reshape(2, 3), np.float64)   # the array's dtype, kept
    check(got[2], np.full((2, 3), 7.0), np.float64)
    check(got[3], [1, 2, 3], np.int64)


def test_value_of_and_set_value(backend):
    H, W = axes(("H", 2), ("W", 3))
    v = ng.variable([H, W], initial_value=0.0)
    tr = ngt.make_transformer(backend)
    # set_value before any computation compiles the graph first.
    tr.set_value(v, np.arange(6, dtype=np.float32).reshape(2, 3))
    total = tr.computation(ng.sum(v, reduction_axes=v.axes))
    check(total(), 15.0, np.float32)
    tr.set_value(v, [[1, 1, 1], [1, 1, 1]])       # a list has no dtype: converted
    check(total(), 6.0, np.float32)
    got = tr.value_of(v)
    check(got, np.ones((2, 3)), np.float32)
    got[:] = 9.0                                   # a copy: the variable is unchanged
    check(tr.value_of(v), np.ones((2, 3)), np.float32)


# ---- computations --------------------------------------------------------------------------

def test_results_single_list_tuple_sequential(backend):
    (A,) = axes(("A", 3))
    x = ng.placeholder([A])
    xv = np.array([1.0, 2.0, 3.0], np.float32)
    tr = ngt.make_transformer(backend)
    single = tr.computation(x * 2.0, x)(xv)
    assert isinstance(single, np.ndarray)
    check(single, 2 * xv, np.float32)
    for results in ([x * 2.0, x + 1.0], (x * 2.0, x + 1.0)):
        got = tr.computation(results, x)(xv)
        assert isinstance(got, tuple) and len(got) == 2
        check(got[0], 2 * xv, np.float32)
        check(got[1], xv + 1, np.float32)
    got = tr.computation([x - 1.0], x)(xv)
    assert isinstance(got, tuple) and len(got) == 1
    check(got[0], xv - 1, np.float32)
    got = tr.computation(ng.sequential([x * 2.0, x * 3.0]), x)(xv)
    assert isinstance(got, np.ndarray)
    check(got, 3 * xv, np.float32)
    assert tr.computation(x * 2.0, x).parameters[0] is x


def test_inputs_by_keyword(backend):
    (A,) = axes(("A", 3))
    a, b = ng.placeholder([A], name="a"), ng.placeholder([A], name="b")
    comp = ngt.make_transformer(backend).computation(a - b, a, b)
    av, bv = np.array([5.0, 6.0, 7.0], np.float32), np.array([1.0, 1.0, 2.0], np.float32)
    check(comp(a=av, b=bv), av - bv, np.float32)
    check(comp(b=bv, a=av), av - bv, np.float32)
    check(comp(av, b=bv), av - bv, np.float32)
    check(comp([1, 2, 3], [3, 2, 1]), [-2.0, 0.0, 2.0], np.float32)   # lists are converted


def test_out_arrays(backend):
    (A,) = axes(("A", 4))
    x = ng.placeholder([A])
    xv = np.arange(4, dtype=np.float32)
    tr = ngt.make_transformer(backend)
    comp = tr.computation(x * 2.0, x)
    out = np.full(4, -1.0, np.float32)
    assert comp(xv, out=out) is out
    check(out, 2 * xv, np.float32)
    both = tr.computation([x + 1.0, ng.sum(x, reduction_axes=[A])], x)
    outs = [np.empty(4, np.float32), np.empty((), np.float32)]
    assert both(xv, out=outs) is outs
    check(outs[0], xv + 1, np.float32)
    check(outs[1], 6.0, np.float32)
    seq = tr.computation(ng.sequential([x * 5.0, x * 7.0]), x)
    out = np.empty(4, np.float32)
    seq(xv, out=out)
    check(out, 7 * xv, np.float32)


def test_load_l2_example(backend, rng):
    graph = ng.load(EXAMPLES / "l2.weft")
    assert [p.name for p in graph.placeholders] == ["x", "y"]
    assert [o.name for o in graph.outputs] == ["s"]
    assert graph["t"].kind == "subtract" and graph["x"].axes.lengths == (16,)
    xv, yv = sample(rng, (16,), "any", np.float32), sample(rng, (16,), "any", np.float32)
    (s,) = graph.computation(backend)(xv, yv)
    check(s, ((xv - yv).astype(np.float64) ** 2).sum(), np.float32, **RED[np.float32])
    assert "s = dot(tt, t)" in graph.text()


def test_load_layernorm_example_and_text_round_trip(backend, rng, tmp_path):
    graph = ng.load(EXAMPLES / "layernorm.weft")
    a, g, b = (sample(rng, s, "any", np.float32) for s in [(4, 8), (8,), (8,)])
    mu = a.astype(np.float64).mean(1, keepdims=True)
    var = ((a - mu) ** 2).mean(1, keepdims=True)
    want = (a - mu) / np.sqrt(var + 1e-5) * g + b
    (out,) = graph.computation(backend)(a, g, b)
    check(out, want, np.float32, **RED[np.float32])
    # The printed text parses back to a graph that computes the same.
    path = tmp_path / "again.weft"
    path.write_text(graph.text())
    (again,) = ng.load(path).computation(backend)(a, g, b)
    check(again, out, np.float32)


def test_text_of_the_module_graph(compute, tmp_path):
    H, W = axes(("H", 2), ("W", 3))
    x = ng.placeholder([H, W], name="x")
    y = ng.sum(ng.exp(x), reduction_axes=[W]).named("y")
    text = ng.text()
    assert "axis H = 2" in text and "axis W = 3" in text
    assert "placeholder x: f32[H, W]" in text
    assert re.search(r"^y = sum\(%\d+, \[W\]\)$", text, re.M), text
    # weft's text form: the same program, read back with load.
    path = tmp_path / "module.weft"
    path.write_text(text + "\noutput y\n")
    xv = np.arange(6, dtype=np.float32).reshape(2, 3) / 6
    (loaded,) = ng.load(path).computation()(xv)
    check(loaded, compute(y, {x: xv}), np.float32, **RED[np.float32])


def test_explain_mentions_kernels():
    R, C = axes(("R", 8), ("C", 16))
    a = ng.placeholder([R, C], name="a")
    comp = ngt.make_transformer().computation(ng.softmax(a, normalization_axes=[C]), a)
    text = comp.explain()
    assert isinstance(text, str)
    # The machine first, so every figure quoted from it names the machine.
    assert text.startswith("# target: "), text
    assert re.search(r"^kernel @k\d+", text, re.M), text
    assert re.search(r"^input\s+a\s", text, re.M), text
    # Rows of 16: each vector loop says in one line why it is not a leaf loop.
    assert "not an assembled leaf loop: " in text, text


def test_plan_is_the_program_the_computation_runs():
    R, C = axes(("R", 8), ("C", 16))
    a = ng.placeholder([R, C], name="a")
    comp = ngt.make_transformer().computation(ng.softmax(a, normalization_axes=[C]), a)
    plan = comp.plan()
    for section in ("# storages", "# kernels", "# steps", "# inputs", "# outputs"):
        assert section in plan, plan
    assert re.search(r"^a \[8, 16\] -> s\d+: in place$", plan, re.M), plan
    # explain reads the same computation: its calls section matches the plan's bindings.
    assert re.search(r"^input\s+a\s+read in place$", comp.explain(), re.M)
    # The interpreter compiles no program.
    interp = ngt.make_transformer(backend="interpreter").computation(ng.exp(a), a)
    assert interp.plan() is None


def test_digits():
    images, labels = ng.digits()
    assert images.shape == (1797, 64) and images.dtype == np.float32
    assert labels.shape == (1797,) and labels.dtype == np.int64
    assert set(np.unique(labels)) == set(range(10))
    # The 0-16 pixel counts over 16.
    assert images.min() == 0.0 and images.max() == 1.0
    np.testing.assert_array_equal(images * 16, np.round(images * 16))


# ---- axes and ops --------------------------------------------------------------------------

def test_make_axis_makes_a_new_axis_whatever_its_name():
    H = ng.make_axis(length=2, name="H")
    again = ng.make_axis(length=2, name="H")
    assert again != H and again.name == H.name == "H" and again.length == 2
    # Two axes, so a tensor can have both; its printout tells them apart.
    both = ng.placeholder([H, again])
    shown = [repr(a) for a in both.axes]
    assert len(set(shown)) == 2 and all(r.startswith("Axis(H@") for r in shown), shown
    # Unnamed axes are distinct, even of one length, and named apart.
    a, b = ng.make_axis(length=2), ng.make_axis(length=2)
    assert a != b and a.name != b.name
    assert ng.make_axis(name="U").length is None


def test_axes_operations():
    H, W, N, C = axes(("H", 2), ("W", 3), ("N", 4), ("C", 5))
    x = ng.make_axes([H, W])
    assert isinstance(x, ng.Axes) and x == (H, W) and x != ng.make_axes([W, H])
    assert x + [N] == (H, W, N)
    assert ng.make_axes([H, W, N]) - [W] == (H, N)
    assert x | [N, W] == (H, W, N)
    assert ng.make_axes([H, W, N]) & [N, H] == (H, N)
    assert x.lengths == (2, 3) and x.names == ("H", "W") and x.size == 6
    xn = ng.make_axes([C, N, H])
    assert xn.batch_axes() == (N,) and xn.sample_axes() == (C, H)
    assert xn.find_by_name("H") == (H,)
    assert x.is_sub_set([W, H, N]) and not x.is_sub_set([H])
    assert x.is_super_set([W]) and not x.is_super_set([N])
    assert x.is_equal_set([W, H]) and x.is_not_equal_set([W])
    with pytest.raises(ng.AxisError):
        x + [W]


def test_tensor_op_properties():
    H, W = axes(("H", 2), ("W", 3))
    x = ng.placeholder([H, W], dtype=np.float64, name="x")
    assert x.axes == (H, W) and x.dtype == np.float64 and x.name == "x"
    assert x.kind == "placeholder"
    y = (x * 2.0).named("twice")
    assert y.name == "twice" and y.kind == "multiply"
    assert repr(y).startswith("<multiply twice: float64 [") and "Axis(W, length=3)" in repr(y)
    assert ng.constant(1.0, [H]).kind == "constant"
    assert ng.variable([H]).kind == "variable"
    assert ng.persistent_tensor([H]).kind == "persistent_tensor"


def test_constant(compute):
    H, W = axes(("H", 2), ("W", 3))
    got = compute([ng.constant(2.5, [H, W]), ng.constant(np.arange(6).reshape(2, 3), [H, W],
                                                         dtype=np.int64), ng.constant(3.0)])
    check(got[0], np.full((2, 3), 2.5), np.float32)
    check(got[1], np.arange(6).reshape(2, 3), np.int64)
    check(got[2], 3.0, np.float32)


def test_reset_default_graph(backend):
    (A,) = axes(("A", 3))
    x = ng.placeholder([A], name="x")
    y = x * 2.0
    old = ngt.make_transformer(backend).computation(y, x)
    ng.reset_default_graph()
    assert ng.text() == ""
    # Names are free again, even for an axis of another length.
    (B,) = axes(("A", 5))
    p = ng.placeholder([B], name="x")
    q = (p + 100.0) * 5.0
    xv = np.ones(3, np.float32)
    check(old(xv), 2 * xv, np.float32)          # a computation made before keeps working
    # A new computation of an old op is compiled on the old graph, not on the new one (whose
    # node ids are other ops).
    check(ngt.make_transformer(backend).computation(y, x)(xv), 2 * xv, np.float32)
    check(ngt.make_transformer(backend).computation(q, p)(np.ones(5, np.float32)),
          np.full(5, 505.0), np.float32)
    # Old and new ops do not mix.
    with pytest.raises(ng.GraphError, match="another graph"):
        x + p
    with pytest.raises(ng.GraphError, match="another graph"):
        ng.dot(x, p)
    with pytest.raises(ng.AxisError, match="another graph"):
        ng.placeholder([A])


def test_every_public_function_is_tested_here():
    # Each name of weft.__all__ appears in these tests as `ng.<name>` or in a table of names
    # the tests look up with getattr(ng, name), so a new public function fails this test
    # until it has one.
    here = pathlib.Path(__file__).resolve().parent
    source = "\n".join(p.read_text() for p in sorted(here.glob("test_*.py")))
    used = set(re.findall(r"\bng\.(\w+)", source)) | set(re.findall(r"\bngt\.(\w+)", source))
    used |= {name for table in (UNARY, BINARY, COMPARE, REDUCTIONS) for name, *_ in table}
    exempt = {"Axis", "TensorOp", "Computation", "Transformer"}   # types, used throughout
    missing = sorted(set(ng.__all__) - used - exempt)
    assert not missing, missing
    for name in ng.__all__:
        assert hasattr(ng, name), name
