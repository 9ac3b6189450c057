"""weft as nGraph-python users write it (issue 59): the scenarios a new user coming from nGraph
met on their first afternoon, each a case that failed before its fix.

These tests deliberately do *not* rely on the autouse fresh graph between the steps of one
scenario: a notebook or a script with several models shares one module-level graph.
"""

import re

import numpy as np
import pytest

import weft as ng
import weft.transformers as ngt


# ---- axes are objects; names are labels ---------------------------------------------------

def _model_a():
    N = ng.make_axis(length=8, name="N")
    C = ng.make_axis(length=3, name="C")
    x = ng.placeholder([N, C], name="x")
    return ngt.make_transformer().computation(ng.sum(x, reduction_axes=[C]), x)(
        np.ones((8, 3), np.float32))


def _model_b():
    N = ng.make_axis(length=4, name="N")
    C = ng.make_axis(length=5, name="C")
    x = ng.placeholder([N, C], name="x")
    return ngt.make_transformer().computation(ng.sum(x, reduction_axes=[C]), x)(
        np.ones((4, 5), np.float32))


def test_same_axis_and_op_names_in_two_functions():
    np.testing.assert_array_equal(_model_a(), np.full(8, 3.0))
    np.testing.assert_array_equal(_model_b(), np.full(4, 5.0))
    # and the first again: a re-run cell
    np.testing.assert_array_equal(_model_a(), np.full(8, 3.0))


def test_a_cell_run_twice():
    for _ in range(2):
        H = ng.make_axis(length=2, name="H")
        x = ng.placeholder([H], name="x")
        w = ng.variable([H], initial_value=np.array([1, 2], np.float32), name="w")
        f = ngt.make_transformer().computation(x * w, x)
        np.testing.assert_array_equal(f(x=np.array([3, 4], np.float32)), [3, 8])


def test_two_make_axis_calls_are_two_axes():
    a = ng.make_axis(length=4, name="N")
    b = ng.make_axis(length=4, name="N")
    assert a != b and a.name == b.name == "N"
    # where the two meet in one printout, it tells them apart
    t = ng.placeholder([a]) + ng.placeholder([b])
    shown = repr(t)
    assert shown.count("N") == 2 and len(set(str(x) for x in t.axes)) == 2, shown
    assert len(t.axes) == 2


def test_same_named_axes_meeting_warn():
    a = ng.make_axis(length=4, name="N")
    b = ng.make_axis(length=4, name="N")
    with pytest.warns(ng.AxisNameWarning, match="N"):
        ng.placeholder([a]) * ng.placeholder([b])


# ---- computations of one transformer are independent ------------------------------------

def test_an_unbound_axis_does_not_poison_a_transformer():
    C = ng.make_axis(length=3, name="C")
    N = ng.make_axis(name="N")                   # bound at call time
    x = ng.placeholder([C])
    y = ng.placeholder([N, C])
    t = ngt.make_transformer()
    f = t.computation(x * 2, x)
    np.testing.assert_array_equal(f(np.ones(3, np.float32)), [2, 2, 2])
    g = t.computation(ng.sum(y, reduction_axes=[C]), y)
    np.testing.assert_array_equal(g(np.ones((5, 3), np.float32)), np.full(5, 3.0))
    # the one that already ran, and a new one, still work
    np.testing.assert_array_equal(f(np.ones(3, np.float32)), [2, 2, 2])
    h = t.computation(x + 1, x)
    np.testing.assert_array_equal(h(np.ones(3, np.float32)), [2, 2, 2])


def test_unbound_length_error_names_python_calls():
    N = ng.make_axis(name="N")
    v = ng.placeholder([N])
    w = ng.variable([N], initial_value=0.0)
    with pytest.raises(ng.AxisError) as e:
        ngt.make_transformer().computation(ng.assign(w, v), v)
    msg = str(e.value)
    assert "N.length = n" in msg and "Graph::bind" not in msg and "--bind" not in msg, msg


# ---- sequential as nGraph ran it --------------------------------------------------------

def test_sequential_op_after_assign_reads_the_new_value(backend):
    H = ng.make_axis(length=2, name="H")
    x = ng.placeholder([H])
    w = ng.variable([H], initial_value=np.array([1, 2], np.float32))
    f = ngt.make_transformer(backend).computation(
        ng.sequential([ng.assign(w, w + x), w * 1]), x)
    np.testing.assert_array_equal(f(np.array([10, 20], np.float32)), [11, 22])
    np.testing.assert_array_equal(f(np.array([10, 20], np.float32)), [21, 42])


def test_sequential_op_the_assign_needs_is_computed_before_it(backend):
    # The gradient of exp(s) reads exp(s) itself: the update needs the loss, so the loss is
    # computed before the update, from the old weights.
    H = ng.make_axis(length=2, name="H")
    x = ng.placeholder([H])
    w = ng.variable([H], initial_value=np.array([1, 2], np.float32))
    loss = ng.exp(ng.sum(w * x, reduction_axes=[H]) * 0.1)
    update = ng.assign(w, w - 0.5 * ng.deriv(loss, w))
    f = ngt.make_transformer(backend).computation(ng.sequential([update, loss]), x)
    xs = np.array([2, 4], np.float32)
    assert f(xs) == pytest.approx(np.exp(1.0), rel=1e-6)
    w1 = np.array([1, 2]) - 0.5 * np.exp(1.0) * 0.1 * xs
    assert f(xs) == pytest.approx(np.exp(0.1 * (w1 @ xs)), rel=1e-5)


def test_sequential_op_listed_after_an_update_not_needing_it_reads_the_new_state(backend):
    # The gradient of a linear loss does not read the loss: as in nGraph, the loss listed
    # after the update is not needed by it and reads the updated weights.
    H = ng.make_axis(length=2, name="H")
    x = ng.placeholder([H])
    w = ng.variable([H], initial_value=np.array([1, 2], np.float32))
    loss = ng.sum(w * x, reduction_axes=[H])
    update = ng.assign(w, w - 0.5 * ng.deriv(loss, w))
    f = ngt.make_transformer(backend).computation(ng.sequential([update, loss]), x)
    xs = np.array([2, 4], np.float32)
    assert f(xs) == pytest.approx(0.0)                      # w = [1 - 1, 2 - 2]
    assert f(xs) == pytest.approx(-1 * 2 + -2 * 4)


def test_nGraph_test_sequential(backend):
    # tests/transformer_dependent/test_op_graph_transformer_dependent.py::test_sequential
    N = ng.make_axis(length=1)
    x = ng.variable([N], initial_value=0)
    x0 = x + x
    x1 = x + x
    p = ng.sequential([x0, ng.assign(x, 2), x1, x0])
    x0_val, x1_val, p_val = ngt.make_transformer(backend).computation([x0, x1, p])()
    assert x0_val == 0 and x1_val == 4 and p_val == 0


def test_nGraph_test_modify_state(backend):
    # tests/transformer_dependent/test_ssa.py::test_modify_state
    N = ng.make_axis(length=3, name="N")
    x_np = np.ones(3, np.float32) * 4
    x = ng.variable([N], initial_value=x_np).named("x")
    val = ng.sequential([ng.assign(x, x + x), x])
    np.testing.assert_array_equal(ngt.make_transformer(backend).computation(val)(), x_np * 2)


def test_nGraph_docs_assign_then_read(backend):
    # doc/source/building_graphs.rst: sequential([assign(x, 5), x + 1]) assigns, then reads
    N = ng.make_axis(length=1)
    x = ng.variable([N], initial_value=0.0)
    z = ng.sequential([ng.assign(x, 5), x + 1])
    np.testing.assert_array_equal(ngt.make_transformer(backend).computation(z)(), [6])


def test_nGraph_test_sequential_side(backend):
    # test_op_graph_transformer_dependent.py::test_sequential_side: value_of snapshots before
    # the assigns; x * 2 reads nothing they set
    A = ng.make_axis(length=3, name="A")
    x = ng.variable([A], initial_value=np.array([1, 2, 3], np.float32))
    S = ng.make_axis(length=1, name="S")
    x1 = ng.variable([S], initial_value=2.0)
    x2 = ng.variable([S], initial_value=3.0)
    x1_vo, x2_vo = ng.value_of(x1), ng.value_of(x2)
    y = ng.sequential([
        x1_vo, x2_vo,
        ng.assign(x1, ng.sum(x, out_axes=()) + x1 * 1.0 + (1 - 1.0)),
        ng.assign(x2, ng.mean(x, out_axes=()) + x2 * 1.0 + (1 - 1.0)),
        x * 2])
    t = ngt.make_transformer(backend)
    f = t.computation([y, x1_vo, x2_vo, x1, x2])
    y_val, a, b, c, d = f()
    np.testing.assert_array_equal(y_val, [2, 4, 6])
    assert (a, b) == (2, 3)
    np.testing.assert_array_equal(t.value_of(x1), [8])
    np.testing.assert_array_equal(t.value_of(x2), [5])
    _, a, b, _, _ = f()
    assert (a, b) == (8, 5)
    np.testing.assert_array_equal(t.value_of(x1), [14])
    np.testing.assert_array_equal(t.value_of(x2), [7])


def test_sequential_value_computed_once_before_an_assign_is_kept(backend):
    # nGraph computes every op once: `s` is needed by the first assign, so the later
    # `s * 1 + w` uses the value `s` had then, and the new w.
    H = ng.make_axis(length=2, name="H")
    w = ng.variable([H], initial_value=np.array([1, 2], np.float32))
    s = w * 10
    t = ngt.make_transformer(backend)
    f = t.computation(ng.sequential([ng.assign(w, s), s * 1 + w]))
    np.testing.assert_array_equal(f(), [20, 40])      # 10 + 10, 20 + 20
    np.testing.assert_array_equal(t.value_of(w), [10, 20])


def test_sequential_two_assigns_chain(backend):
    # an optimizer's velocity, then the weights read the new velocity
    H = ng.make_axis(length=2, name="H")
    g = ng.placeholder([H])
    v = ng.variable([H], initial_value=0.0)
    w = ng.variable([H], initial_value=1.0)
    t = ngt.make_transformer(backend)
    step = t.computation(
        ng.sequential([ng.assign(v, 0.5 * v + g), ng.assign(w, w - v), w + 0]), g)
    np.testing.assert_array_equal(step(np.array([1, 2], np.float32)), [0, -1])
    np.testing.assert_array_equal(step(np.array([1, 2], np.float32)), [-1.5, -4])


def test_outside_sequential_state_is_read_at_call_start(backend):
    H = ng.make_axis(length=2, name="H")
    w = ng.variable([H], initial_value=np.array([1, 2], np.float32))
    t = ngt.make_transformer(backend)
    f = t.computation([ng.assign(w, w + 1), w * 1])
    _, old = f()
    np.testing.assert_array_equal(old, [1, 2])


# ---- dtypes ---------------------------------------------------------------------------------

def test_variable_takes_its_dtype_from_initial_value():
    H = ng.make_axis(length=2, name="H")
    w = ng.variable([H], initial_value=np.array([1, 2], np.float64))
    assert w.dtype == np.float64
    assert ng.variable([H], initial_value=0.5).dtype == np.float32
    with pytest.raises(ng.DTypeError):
        ng.variable([H], dtype=np.float32, initial_value=np.array([1, 2], np.float64))


def test_set_value_refuses_another_dtype():
    H = ng.make_axis(length=2, name="H")
    w = ng.variable([H], initial_value=np.zeros(2, np.float32))
    t = ngt.make_transformer()
    t.computation(w * 1)
    with pytest.raises(ng.DTypeError):
        t.set_value(w, np.array([1, 2], np.float64))
    t.set_value(w, np.array([1, 2], np.float32))
    np.testing.assert_array_equal(t.value_of(w), [1, 2])


def test_f64_model_with_one_hot_and_cross_entropy():
    N = ng.make_axis(length=3, name="N")
    Y = ng.make_axis(length=4, name="Y")
    logits = ng.placeholder([N, Y], dtype=np.float64)
    labels = ng.placeholder([N], dtype=np.int64)
    loss = ng.cross_entropy_multi(ng.softmax(logits), ng.one_hot(labels, axis=Y))
    assert loss.dtype == np.float64
    out = ngt.make_transformer().computation(loss, logits, labels)(
        np.zeros((3, 4)), np.array([0, 1, 3]))
    np.testing.assert_allclose(out, np.full(3, np.log(4.0)), rtol=1e-12)


def test_one_hot_dtype():
    N = ng.make_axis(length=2, name="N")
    Y = ng.make_axis(length=3, name="Y")
    labels = ng.placeholder([N], dtype=np.int64)
    assert ng.one_hot(labels, axis=Y, dtype=np.float64).dtype == np.float64


def test_one_hot_out_of_range_label_is_an_error(backend):
    N = ng.make_axis(length=2, name="N")
    Y = ng.make_axis(length=5, name="Y")
    labels = ng.placeholder([N], dtype=np.int64)
    f = ngt.make_transformer(backend).computation(ng.one_hot(labels, axis=Y), labels)
    np.testing.assert_array_equal(f(np.array([0, 4])), np.eye(5, dtype=np.float32)[[0, 4]])
    for bad in ([0, 7], [-1, 0]):
        with pytest.raises(ng.CallError, match="one_hot"):
            f(np.array(bad))


def test_messages_name_no_internal_ids():
    N = ng.make_axis(length=3, name="N")
    a = ng.placeholder([N], dtype=np.float64, name="a")
    b = ng.placeholder([N], dtype=np.float32, name="b")
    with pytest.raises(ng.DTypeError) as e:
        a * b
    msg = str(e.value)
    assert "multiply(a, b)" in msg and "use ng.cast" in msg and "use convert" not in msg, msg
    with pytest.raises(ng.DTypeError) as e:
        ng.exp(a) * b
    msg = str(e.value)
    assert not re.search(r"%\d", msg), msg
    assert "an unnamed exp" in msg, msg


# ---- arguments checked where they are given ------------------------------------------------

def test_transformer_arguments_checked_at_once():
    with pytest.raises(ValueError, match="gpu"):
        ngt.make_transformer(backend="gpu")
    with pytest.raises(ValueError, match="threads"):
        ngt.make_transformer(threads=0)
    with pytest.raises(TypeError, match="threads"):
        ngt.make_transformer(threads="two")


def test_a_placeholder_not_listed_is_a_value_error():
    H = ng.make_axis(length=2, name="H")
    x = ng.placeholder([H], name="x")
    y = ng.placeholder([H], name="y")
    with pytest.raises(ValueError, match="`y`"):
        ngt.make_transformer().computation(x + y, x)


def test_unbound_size_is_an_axis_error():
    N = ng.make_axis(name="N")
    with pytest.raises(ng.AxisError, match="N"):
        ng.make_axes([N]).size


def test_deriv_of_a_list_says_so():
    H = ng.make_axis(length=2, name="H")
    w = ng.variable([H], initial_value=1.0)
    cost = ng.sum(w * w, reduction_axes=[H])
    with pytest.raises(TypeError, match="deriv"):
        ng.deriv(cost, [w])


def test_close_closes():
    H = ng.make_axis(length=2, name="H")
    x = ng.placeholder([H])
    t = ngt.make_transformer()
    f = t.computation(x * 2, x)
    f(np.ones(2, np.float32))
    t.close()
    with pytest.raises(ng.CallError, match="closed"):
        f(np.ones(2, np.float32))
    with pytest.raises(ng.WeftError, match="closed"):
        t.computation(x * 3, x)


def test_binding_capacity_settable():
    N = ng.make_axis(name="N")
    x = ng.placeholder([N])
    f = ngt.make_transformer().computation(x * 2, x)
    f.binding_capacity = 32
    assert f.binding_capacity == 32
    for n in range(1, 17):
        f(np.ones(n, np.float32))
    for n in range(1, 17):
        f(np.ones(n, np.float32))
    assert f.compilations == 16
    with pytest.raises(ValueError):
        f.binding_capacity = 0


# ---- nGraph's missing pieces ---------------------------------------------------------------

def test_variance_squared_l2_stack(compute, rng):
    N = ng.make_axis(length=3, name="N")
    C = ng.make_axis(length=4, name="C")
    x = ng.placeholder([N, C])
    xs = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(compute(ng.variance(x, out_axes=[N]), {x: xs}),
                               xs.var(axis=1), rtol=1e-5)
    np.testing.assert_allclose(compute(ng.variance(x, reduction_axes=[N]), {x: xs}),
                               xs.var(axis=0), rtol=1e-5)
    np.testing.assert_allclose(compute(ng.squared_L2(x), {x: xs}),
                               (xs ** 2).sum(axis=1), rtol=1e-5)
    K = ng.make_axis(length=2, name="K")
    y = ng.placeholder([N, C])
    ys = rng.standard_normal((3, 4)).astype(np.float32)
    s = ng.stack([x, y], K, pos=1)
    assert list(s.axes) == [N, K, C]
    np.testing.assert_array_equal(compute(s, {x: xs, y: ys}), np.stack([xs, ys], axis=1))


def test_stop_gradient(compute):
    H = ng.make_axis(length=2, name="H")
    w = ng.variable([H], initial_value=np.array([1, 3], np.float32))
    cost = ng.sum(w * ng.stop_gradient(w), reduction_axes=[H])
    np.testing.assert_array_equal(compute(ng.deriv(cost, w)), [1, 3])


def test_tensor_indexing(compute):
    H = ng.make_axis(length=5, name="H")
    W = ng.make_axis(length=2, name="W")
    x = ng.placeholder([H, W])
    xs = np.arange(10, dtype=np.float32).reshape(5, 2)
    np.testing.assert_array_equal(compute(x[1:3], {x: xs}), xs[1:3])
    np.testing.assert_array_equal(compute(x[1:3, 0], {x: xs}), xs[1:3, 0])
    np.testing.assert_array_equal(compute(x[4], {x: xs}), xs[4])


def test_batch_and_recurrent_axis():
    N = ng.make_axis(length=2, name="N")
    REC = ng.make_axis(length=3, name="REC")
    F = ng.make_axis(length=4, name="F")
    axes = ng.make_axes([F, REC, N])
    assert axes.batch_axis() == N
    assert axes.recurrent_axis() == REC
    assert ng.make_axes([F]).batch_axis() is None


def test_transformer_factory():
    factory = ngt.make_transformer_factory("cpu")
    ngt.set_transformer_factory(factory)
    H = ng.make_axis(length=2, name="H")
    x = ng.placeholder([H])
    t = ngt.make_transformer()
    np.testing.assert_array_equal(t.computation(x * 2, x)(np.ones(2, np.float32)), [2, 2])
    ngt.set_transformer_factory(ngt.make_transformer_factory("jit"))
    with pytest.raises(ValueError, match="gpu"):
        ngt.make_transformer_factory("gpu")


def test_concat_of_two_slices_of_one_axis(compute):
    H = ng.make_axis(length=5, name="H")
    x = ng.placeholder([H])
    xs = np.arange(5, dtype=np.float32)
    y = ng.concat_along_axis([x[0:2], x[3:5]], H)
    np.testing.assert_array_equal(compute(y, {x: xs}), [0, 1, 3, 4])


def test_nGraph_keywords_accepted():
    H = ng.make_axis(length=2, name="H")
    ng.variable([H], initial_value=0.0, scope="layer1", metadata={"label": "w"})
    ng.placeholder([H], dtype=np.float32, name="x")


def test_derived_axis_names_after_conv_and_pool():
    C = ng.make_axis(length=1, name="C", roles=[ng.roles.Channel])
    H = ng.make_axis(length=8, name="H", roles=[ng.roles.Height])
    W = ng.make_axis(length=8, name="W", roles=[ng.roles.Width])
    N = ng.make_axis(length=2, name="N")
    R = ng.make_axis(length=3, name="R", roles=[ng.roles.Height])
    S = ng.make_axis(length=3, name="S", roles=[ng.roles.Width])
    K = ng.make_axis(length=4, name="K", roles=[ng.roles.Channelout])
    x = ng.placeholder([C, H, W, N])
    f = ng.variable([C, R, S, K], initial_value=0.1)
    y = ng.convolution({"pad_h": 1, "pad_w": 1}, x, f)
    p = ng.pooling({"op": "max", "R": 2, "S": 2, "str_h": 2, "str_w": 2}, y)
    assert [a.name for a in p.axes] == ["K", "H", "W", "N"]
    assert p.axes.spatial_axes().names == ("H", "W") and p.axes.channel_axis().name == "K"
    assert p.axes.find_by_name("H")[0].derivation.endswith("~R+pad(1,1)~2/2")
    dense = ng.flatten(p, p.axes.sample_axes())     # a dense head without filtering by name
    assert dense.axes[0].length == 4 * 4 * 4


def test_norms_sizes_and_as_op(compute, rng):
    N = ng.make_axis(length=3, name="N")
    C = ng.make_axis(length=4, name="C")
    x = ng.placeholder([N, C])
    xs = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(compute(ng.L2_norm(x), {x: xs}),
                               np.sqrt(1e-8 + (xs ** 2).sum(axis=1)), rtol=1e-5)
    np.testing.assert_allclose(compute(ng.L1_norm(x, reduction_axes=[N]), {x: xs}),
                               np.abs(xs).sum(axis=0), rtol=1e-5)
    assert compute(ng.tensor_size(x)) == 4
    assert compute(ng.tensor_size(x, reduction_axes=[N, C])) == 12
    assert compute(ng.batch_size(x)) == 3
    assert compute(ng.batch_size(ng.placeholder([C]))) == 4     # no N: its size, as nGraph
    two = ng.as_op(2.0)
    assert ng.as_op(x) is x and two.axes == ()
    assert ng.as_ops([x, two]) == (x, two)
    np.testing.assert_array_equal(compute(x * two, {x: xs}), xs * 2)
