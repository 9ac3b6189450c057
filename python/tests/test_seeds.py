"""The nGraph-python examples of the design notes (/work/shared/seeds), written as nGraph-python
wrote them with ``import weft as ng`` and ``import weft.transformers as ngt``.

Seed 003 is nGraph's axes page; seeds 000 and 002 (tensor notes) hold the NumPy L2 functions
and the table of tensor kinds. Where weft reads a passage differently (docs/axes.md, "Where the
design notes contradict themselves"), the test says so and checks weft's reading.
"""

from types import SimpleNamespace as Namespace

import numpy as np
import pytest

import weft as ng
import weft.transformers as ngt


def names(axes):
    return tuple(a.name for a in axes)


# ---- seed 003: Axis and Axes -------------------------------------------------------------

def test_axis_and_axes():
    H = ng.make_axis(length=3, name='height')
    W = ng.make_axis(length=4, name='width')
    axes = ng.make_axes([H, W])
    image = ng.placeholder(axes)
    assert image.axes == (H, W)
    assert axes.lengths == (3, 4) and names(axes) == ('height', 'width')


def test_delayed_axis_length_as_ngraph_wrote_it():
    H = ng.make_axis(length=3, name='height')
    W = ng.make_axis(length=4, name='width')
    image = ng.placeholder([H, W])
    H.length = 3
    W.length = 4
    assert image.axes.lengths == (3, 4)


def test_a_delayed_length_is_given_by_setting_it():
    # What the seed means by delaying: an axis made without a length gets one later.
    H = ng.make_axis(name='height')
    W = ng.make_axis(name='width')
    image = ng.placeholder([H, W])
    assert image.axes.lengths == (None, None)
    H.length = 3
    W.length = 4
    assert image.axes.lengths == (3, 4)
    comp = ngt.make_transformer().computation(ng.sum(image, reduction_axes=[W]), image)
    np.testing.assert_array_equal(comp(np.ones((3, 4), np.float32)), [4.0, 4.0, 4.0])
    with pytest.raises(ng.CallError):
        comp(np.ones((2, 4), np.float32))  # bound: the length is no longer the call's
    H.length = 2                           # rebinding: transformers made after see it
    np.testing.assert_array_equal(comp(np.ones((3, 4), np.float32)), [4.0, 4.0, 4.0])
    again = ngt.make_transformer().computation(ng.sum(image, reduction_axes=[W]), image)
    np.testing.assert_array_equal(again(np.ones((2, 4), np.float32)), [4.0, 4.0])


def test_delayed_axis_length_as_weft_reads_it():
    # "We can also delay the specification of the axis length": an axis made without a
    # length is bound by the arrays of each call.
    H = ng.make_axis(name='height')
    W = ng.make_axis(name='width')
    image = ng.placeholder([H, W])
    assert image.axes.lengths == (None, None)
    comp = ngt.make_transformer().computation(ng.sum(image, reduction_axes=[W]), image)
    np.testing.assert_array_equal(comp(np.ones((3, 4), np.float32)), [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(comp(np.ones((2, 5), np.float32)), [5.0, 5.0])


# ---- seed 003: properties ------------------------------------------------------------------

def test_order_of_axes_does_not_matter_equal():
    np.random.seed(3)     # the example draws from NumPy's global generator

    H = ng.make_axis(length=2)
    W = ng.make_axis(length=3)
    np_val = np.random.rand(2, 3)
    x = ng.constant(np_val, [H, W])
    y = ng.constant(np_val.T, [W, H])
    z = ng.equal(x, y)

    trans = ngt.make_transformer()
    comp = trans.computation([z])
    z_val = comp()[0]
    print(z_val)
    # [[ True  True  True]
    #  [ True  True  True]]
    assert z_val.dtype == np.bool_
    np.testing.assert_array_equal(z_val, np.ones((2, 3), bool))


def test_order_of_axes_does_not_matter_not_equal_sees_a_difference():
    # The counterpart that can fail: a different value at one place is seen at that place.
    H = ng.make_axis(length=2)
    W = ng.make_axis(length=3)
    np_val = np.arange(6.0).reshape(2, 3)
    other = np_val.T.copy()
    other[2, 1] = -1.0
    z = ng.equal(ng.constant(np_val, [H, W]), ng.constant(other, [W, H]))
    want = np.ones((2, 3), bool)
    want[1, 2] = False
    np.testing.assert_array_equal(ngt.make_transformer().computation([z])()[0], want)


def test_an_axis_occurs_at_most_once():
    H = ng.make_axis(length=2)
    W = ng.make_axis(length=2)
    with pytest.raises(ng.AxisError):
        x = ng.constant(np.ones((2, 2)), [H, H])  # throws exception
    x = ng.constant(np.ones((2, 2)), [H, W])  # good
    assert x.axes == (H, W)


def test_axes_roles():
    ar = Namespace()
    ar.Height = ng.make_axis_role()
    ar.Width = ng.make_axis_role()
    ar.Depth = ng.make_axis_role()
    ar.Channel = ng.make_axis_role()
    ar.Channelout = ng.make_axis_role()
    ar.Time = ng.make_axis_role()

    ax = Namespace()
    ax.N = ng.make_axis(name='N', docstring="minibatch size")
    ax.C = ng.make_axis(roles=[ar.Channel], docstring="number of input feature maps")
    ax.D = ng.make_axis(roles=[ar.Depth], docstring="input image depth")
    ax.H = ng.make_axis(roles=[ar.Height], docstring="input image height")
    ax.W = ng.make_axis(roles=[ar.Width], docstring="input image width")

    ax.R = ng.make_axis(roles=[ar.Height], docstring="filter height")
    ax.S = ng.make_axis(roles=[ar.Width], docstring="filter width")
    ax.T = ng.make_axis(roles=[ar.Depth], docstring="filter depth")
    ax.J = ng.make_axis(roles=[ar.Channel], docstring="filter channel size (for crossmap pooling)")
    ax.K = ng.make_axis(roles=[ar.Channelout], docstring="number of output feature maps")

    ax.M = ng.make_axis(roles=[ar.Depth], docstring="output image depth")
    ax.P = ng.make_axis(roles=[ar.Height], docstring="output image height")
    ax.Q = ng.make_axis(roles=[ar.Width], docstring="output image width")

    ax.REC = ng.make_axis(name='R', roles=[ar.Time], docstring="recurrent axis")

    ax.Y = ng.make_axis(docstring="target")

    made = list(vars(ax).values())
    assert len(set(made)) == len(made) == 15       # fifteen distinct axes
    assert ax.N.name == 'N' and ax.REC.name == 'R'
    assert all(a.length is None for a in made)     # lengths left to the calls


# ---- seed 003: Axes operations -----------------------------------------------------------

def test_axes_operations():
    H, W, N, C = (ng.make_axis(length=n, name=s) for s, n in
                  [('H', 2), ('W', 3), ('N', 4), ('C', 5)])
    a = ng.make_axes([H, W])
    b = ng.make_axes([W, N])
    # __add__: list operation, concatenated axes, throws exception on duplications
    assert a + ng.make_axes([N]) == ng.make_axes([H, W, N])
    with pytest.raises(ng.AxisError):
        a + b
    # __sub__, __or__, __and__: ordered set operations
    assert a - b == ng.make_axes([H])
    assert a | b == ng.make_axes([H, W, N])
    assert a & b == ng.make_axes([W])
    # __eq__ / __ne__: list operations
    assert a == ng.make_axes([H, W]) and not (a == ng.make_axes([W, H]))
    assert a != ng.make_axes([W, H]) and not (a != ng.make_axes([H, W]))
    # set operations
    assert a.is_sub_set(ng.make_axes([N, W, H])) and not a.is_sub_set(b)
    assert ng.make_axes([N, W, H]).is_super_set(a) and not b.is_super_set(a)
    assert a.is_equal_set(ng.make_axes([W, H])) and not a.is_equal_set(b)
    assert a.is_not_equal_set(b) and not a.is_not_equal_set(ng.make_axes([W, H]))


# ---- seed 003: elementwise binary ops ------------------------------------------------------

@pytest.fixture
def CHWN():
    return [ng.make_axis(length=n, name=s) for s, n in [('C', 2), ('H', 3), ('W', 4), ('N', 5)]]


TABLE = [
    # When matches, output the same axis.
    ("H", "H", "H"), ("HW", "HW", "HW"),
    # Automatic broadcasting / dim shuffle.
    ("HW", "H", "HW"), ("HW", "W", "HW"), ("HW", "WN", "HWN"), ("HW", "NW", "HWN"),
    ("CH", "WHN", "CHWN"),
    # The three rules.
    ("HWN", "NH", "HWN"), ("HW", "NHW", "NHW"), ("HW", "NWH", "NWH"), ("CHW", "NWH", "CHWN"),
    ("NCHW", "CHWN", "NCHW"),
    # Commutative property: equivalent tensors, different orders.
    ("H", "W", "HW"), ("W", "H", "WH"), ("C", "HW", "CHW"), ("HW", "C", "HWC"),
]


@pytest.mark.parametrize("left,right,result", TABLE, ids=[f"{l}+{r}" for l, r, _ in TABLE])
def test_elementwise_axis_order(CHWN, left, right, result):
    by = dict(zip("CHWN", CHWN))
    rng = np.random.default_rng(len(left) * 7 + len(right))
    lx = ng.placeholder([by[c] for c in left])
    rx = ng.placeholder([by[c] for c in right])
    z = lx + rx
    assert names(z.axes) == tuple(result)
    # And the values: NumPy's einsum broadcasts by letter just as weft pairs by axis.
    lv = rng.standard_normal(tuple(by[c].length for c in left)).astype(np.float32)
    rv = rng.standard_normal(tuple(by[c].length for c in right)).astype(np.float32)
    ones = np.ones(tuple(by[c].length for c in result), np.float32)
    want = (np.einsum(f"{left},{result}->{result}", lv, ones)
            + np.einsum(f"{right},{result}->{result}", rv, ones))
    got = ngt.make_transformer().computation(z, lx, rx)(lv, rv)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_equivalent_tensors_in_different_orders():
    H = ng.make_axis(length=2)
    W = ng.make_axis(length=3)

    x = ng.constant(np.ones((2, 3)), [H, W])
    y = ng.constant(np.ones((3, 2)), [W, H])
    z = x + y

    trans = ngt.make_transformer()
    comp = trans.computation([z])
    z_val = comp()[0]
    print(z_val)
    print(z_val.shape)
    np.testing.assert_array_equal(z_val, np.full((2, 3), 2.0))
    assert z_val.shape == (2, 3)

    z = y + x  # <== changed order

    trans = ngt.make_transformer()
    comp = trans.computation([z])
    z_val = comp()[0]
    print(z_val)
    print(z_val.shape)
    np.testing.assert_array_equal(z_val, np.full((3, 2), 2.0))
    assert z_val.shape == (3, 2)


def test_associative_and_distributive(CHWN):
    _, H, W, N = CHWN
    rng = np.random.default_rng(7)
    h, w, n = ng.placeholder([H]), ng.placeholder([W]), ng.placeholder([N])
    assert names(((h + w) + n).axes) == ('H', 'W', 'N')
    assert names((h + (w + n)).axes) == ('H', 'W', 'N')
    assert names((h * (w + n)).axes) == ('H', 'W', 'N')
    assert names((h * w + h * n).axes) == ('H', 'W', 'N')
    hv, wv, nv = (rng.standard_normal(k).astype(np.float32) for k in (3, 4, 5))
    comp = ngt.make_transformer().computation([(h + w) + n, h + (w + n), h * (w + n),
                                               h * w + h * n], h, w, n)
    left_sum, right_sum, product, expanded = comp(hv, wv, nv)
    np.testing.assert_allclose(left_sum, right_sum, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(product, expanded, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(product, hv[:, None, None] * (wv[:, None] + nv[None, :]),
                               rtol=1e-6, atol=1e-6)


# ---- seed 003: dot -------------------------------------------------------------------------

def test_dot_pairs_axes():
    M, C, H, W, N = (ng.make_axis(length=n, name=s) for s, n in
                     [('M', 2), ('C', 3), ('H', 4), ('W', 5), ('N', 6)])
    rng = np.random.default_rng(11)
    # 2d dot: (H, W) • (W, N) -> (H, N)
    a, b = ng.placeholder([H, W], dtype=np.float64), ng.placeholder([W, N], dtype=np.float64)
    assert ng.dot(a, b).axes == (H, N)
    av, bv = rng.standard_normal((4, 5)), rng.standard_normal((5, 6))
    np.testing.assert_allclose(ngt.make_transformer().computation(ng.dot(a, b), a, b)(av, bv),
                               av @ bv, rtol=1e-12)
    # 4d dot: (M, C, H, W) • (C, H, W, N) -> (M, N); swapping the order is allowed.
    right = ng.placeholder([C, H, W, N], dtype=np.float64)
    rv = rng.standard_normal((3, 4, 5, 6))
    for order in ("MCHW", "MWHC"):
        by = dict(zip("MCHWN", (M, C, H, W, N)))
        left = ng.placeholder([by[c] for c in order], dtype=np.float64)
        lv = rng.standard_normal(tuple(by[c].length for c in order))
        d = ng.dot(left, right)
        assert d.axes == (M, N)
        got = ngt.make_transformer().computation(d, left, right)(lv, rv)
        np.testing.assert_allclose(got, np.einsum(f"{order.lower()},chwn->mn", lv, rv),
                                   rtol=1e-12)


# ---- seed 003: reductions, casting, broadcasting -------------------------------------------

@pytest.fixture
def ax():
    # nGraph's `from ngraph.frontends.neon.axis import ax`: axes without lengths.
    return Namespace(C=ng.make_axis(name='C'), H=ng.make_axis(name='H'),
                     W=ng.make_axis(name='W'))


def test_axes_reduction(ax):
    x = ng.placeholder([ax.C, ax.H, ax.W])
    assert ng.sum(x, reduction_axes=[]).axes == (ax.C, ax.H, ax.W)
    assert ng.sum(x, reduction_axes=[ax.C]).axes == (ax.H, ax.W)
    assert ng.sum(x, reduction_axes=[ax.C, ax.W]).axes == (ax.H,)
    assert ng.sum(x, reduction_axes=[ax.W, ax.C]).axes == (ax.H,)
    assert ng.sum(x, reduction_axes=x.axes).axes == ()
    # The lengths come with the call.
    xv = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    comp = ngt.make_transformer().computation(
        [ng.sum(x, reduction_axes=[]), ng.sum(x, reduction_axes=[ax.C]),
         ng.sum(x, reduction_axes=[ax.C, ax.W]), ng.sum(x, reduction_axes=[ax.W, ax.C]),
         ng.sum(x, reduction_axes=x.axes)], x)
    for got, want in zip(comp(xv), [xv, xv.sum(0), xv.sum((0, 2)), xv.sum((0, 2)), xv.sum()]):
        np.testing.assert_array_equal(got, want)


def test_axes_casting():
    C1 = ng.make_axis(length=100, name='C1')
    C2 = ng.make_axis(length=100, name='C2')
    N = ng.make_axis(length=128, name='N')
    # assume C1.length == C2.length == 100
    hidden_1 = ng.constant(np.ones((100, 128)), [C1, N])
    hidden_2 = ng.constant(np.ones((100, 128)), [C2, N])

    # if we add directly without casting
    sum_direct = hidden_1 + hidden_2
    # The page's comment says [C1, C2, N]; its own rule 3 (left axes, then the right's new
    # ones) and every table above give (C1, N, C2), which weft follows (docs/axes.md).
    assert sum_direct.axes == (C1, N, C2)

    # cast before sum
    hidden_2_cast = ng.cast_axes(hidden_2, [C1, N])
    sum_cast = hidden_1 + hidden_2_cast  # sum_cast has axes: [C1, N]
    assert sum_cast.axes == (C1, N)
    direct, cast = ngt.make_transformer().computation([sum_direct, sum_cast])()
    assert direct.shape == (100, 128, 100)
    np.testing.assert_array_equal(cast, np.full((100, 128), 2.0))


def test_axes_broadcasting(ax):
    x = ng.placeholder([ax.C, ax.H])
    assert ng.broadcast(x, [ax.C, ax.H, ax.W]).axes == (ax.C, ax.H, ax.W)
    assert ng.broadcast(x, [ax.W, ax.H, ax.C]).axes == (ax.W, ax.H, ax.C)


def test_axes_broadcasting_values():
    C, H, W = (ng.make_axis(length=n, name=s) for s, n in [('C', 2), ('H', 3), ('W', 4)])
    x = ng.placeholder([C, H])
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    a, b = ngt.make_transformer().computation(
        [ng.broadcast(x, [C, H, W]), ng.broadcast(x, [W, H, C])], x)(xv)
    np.testing.assert_array_equal(a, np.broadcast_to(xv[:, :, None], (2, 3, 4)))
    np.testing.assert_array_equal(b, np.broadcast_to(xv.T[None, :, :], (4, 3, 2)))


def test_axes_reordering(ax):
    x = ng.placeholder([ax.C, ax.H, ax.W])
    assert ng.axes_with_order(x, [ax.H, ax.W, ax.C]).axes == (ax.H, ax.W, ax.C)
    xv = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    got = ngt.make_transformer().computation(ng.axes_with_order(x, [ax.H, ax.W, ax.C]), x)(xv)
    np.testing.assert_array_equal(got, xv.transpose(1, 2, 0))


# ---- seeds 000 and 002: the L2 norm --------------------------------------------------------

def L2_numpy(x, y):
    t = x - y
    return np.dot(t.T, t)


def L2_loop(x, y):
    # The notes' loop, with Python's syntax fixed (`range(len(x))`, `** 2` for `^2`).
    s = 0
    for i in range(len(x)):
        s = s + (x[i] - y[i]) ** 2
    return s


@pytest.mark.parametrize("backend", ["jit", "unfused", "interpreter"])
def test_l2_norm(backend):
    N = ng.make_axis(length=64, name='N')
    x, y = ng.placeholder([N], dtype=np.float64), ng.placeholder([N], dtype=np.float64)
    t = x - y
    s = ng.dot(t.T, t)
    rng = np.random.default_rng(0)
    xv, yv = rng.standard_normal(64), rng.standard_normal(64)
    got = ngt.make_transformer(backend).computation(s, x, y)(xv, yv)
    np.testing.assert_allclose(got, L2_numpy(xv, yv), rtol=1e-12)
    np.testing.assert_allclose(got, L2_loop(xv, yv), rtol=1e-12)


def test_tensor_kinds():
    # Seed 002's table: constant (constant, persistent), placeholder (persistent, input),
    # persistent_tensor (persistent), variable (persistent, trainable).
    A = ng.make_axis(length=2, name='A')
    c = ng.constant(np.array([1.0, 2.0]), [A])
    p = ng.placeholder([A])
    pt = ng.persistent_tensor([A])
    # (float32 values: weft keeps an initial array's dtype, where nGraph made it float32)
    v = ng.variable([A], initial_value=np.array([3.0, 4.0], np.float32))
    assert (c.kind, p.kind, pt.kind, v.kind) == (
        "constant", "placeholder", "persistent_tensor", "variable")
    with pytest.raises(ng.GraphError):
        ng.assign(c, p)            # a constant is immutable
    with pytest.raises(ng.GraphError):
        ng.assign(p, c)            # an input is given by each call
    t = ngt.make_transformer()
    step = t.computation(ng.sequential([ng.assign(pt, pt + p), ng.assign(v, v - p), pt]), p)
    step(np.ones(2, np.float32))
    step(np.ones(2, np.float32))
    # Both kept their values across calls, and across computations of the transformer.
    np.testing.assert_array_equal(t.computation([pt, v, c])()[0], [2.0, 2.0])
    np.testing.assert_array_equal(t.value_of(v), [1.0, 2.0])
    # v is trainable: it has a gradient.
    g = ng.deriv(ng.sum(v * v, reduction_axes=[A]), v)
    np.testing.assert_array_equal(t.computation(g)(), [2.0, 4.0])
