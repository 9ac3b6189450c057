"""Bad input raises a ``weft.errors`` exception naming the op, axis or input at fault; it never
crashes the interpreter, and never computes something else silently."""

import numpy as np
import pytest

import weft as ng
import weft.transformers as ngt

from conftest import BACKENDS


@pytest.fixture
def HW():
    return ng.make_axis(length=2, name="H"), ng.make_axis(length=3, name="W")


@pytest.fixture
def x(HW):
    return ng.placeholder(list(HW), name="x")


def test_exception_hierarchy():
    assert issubclass(ng.AxisError, ng.GraphError)
    assert issubclass(ng.GraphError, ng.WeftError) and issubclass(ng.GraphError, ValueError)
    assert issubclass(ng.DTypeError, ng.WeftError) and issubclass(ng.DTypeError, TypeError)
    assert issubclass(ng.CallError, ng.WeftError) and issubclass(ng.CallError, ValueError)
    assert issubclass(ng.ParseError, ng.WeftError) and issubclass(ng.ParseError, ValueError)
    assert issubclass(ng.CompileError, ng.WeftError)


# ---- axes ----------------------------------------------------------------------------------

def test_repeated_axis(HW):
    H, W = HW
    for make in (lambda: ng.placeholder([H, H]),
                 lambda: ng.constant(np.ones((2, 2)), [H, H]),
                 lambda: ng.variable([H, W, H]),
                 lambda: ng.make_axes([W, H, W]),
                 lambda: ng.make_axes([H]) + [H]):
        with pytest.raises(ng.AxisError, match="more than once"):
            make()


def test_reduction_over_an_axis_the_tensor_lacks(x):
    N = ng.make_axis(length=4, name="N")
    with pytest.raises(ng.AxisError, match=r"sum\(x\).*`N`.*not an axis"):
        ng.sum(x, reduction_axes=[N])
    with pytest.raises(ng.AxisError, match=r"max\(x\)"):
        ng.max(x, reduction_axes=[N])


def test_out_axes_that_are_not_the_remaining_axes(x, HW):
    H, W = HW
    N = ng.make_axis(length=4, name="N")
    with pytest.raises(ng.AxisError, match=r"out_axes \(N\).*remaining axes \(H\)"):
        ng.sum(x, reduction_axes=[W], out_axes=[N])
    with pytest.raises(ng.AxisError, match="out_axes"):
        ng.mean(x, reduction_axes=[W], out_axes=[W])


def test_cast_axes_with_wrong_lengths_or_count(x, HW):
    H, W = HW
    N = ng.make_axis(length=4, name="N")
    with pytest.raises(ng.AxisError, match=r"cast_axes\(x\).*`W` has length 3 but `N` has length 4"):
        ng.cast_axes(x, [H, N])
    with pytest.raises(ng.AxisError, match=r"cast_axes\(x\)"):
        ng.cast_axes(x, [H])


def test_broadcast_and_reorder_need_the_right_axes(x, HW):
    H, W = HW
    N = ng.make_axis(length=4, name="N")
    with pytest.raises(ng.AxisError, match=r"broadcast\(x\).*missing \(W\)"):
        ng.broadcast(x, [H, N])
    with pytest.raises(ng.AxisError, match=r"axes_with_order\(x\)"):
        ng.axes_with_order(x, [H, N])
    with pytest.raises(ng.AxisError, match=r"axes_with_order\(x\)"):
        ng.axes_with_order(x, [H])


def test_slices_and_pads_out_of_range(x, HW):
    H, W = HW
    N = ng.make_axis(length=4, name="N")
    with pytest.raises(ng.GraphError, match=r"slice\(x\): axis `W`: index 5 is out of range"):
        ng.slice_along_axis(x, W, 5)
    with pytest.raises(ng.GraphError, match=r"slice\(x\): axis `W`: 0:7 is out of range"):
        ng.slice_along_axis(x, W, slice(0, 7))
    with pytest.raises(ng.GraphError, match="step is 0"):
        ng.slice_along_axis(x, W, slice(0, 3, 0))
    with pytest.raises(ng.AxisError, match=r"`N` is not an axis"):
        ng.slice_along_axis(x, N, 0)
    with pytest.raises(ng.AxisError, match="1 slices for the 2 axes"):
        ng.tensor_slice(x, [0])
    with pytest.raises(ng.GraphError, match="not a slice or an index"):
        ng.tensor_slice(x, [0, "a"])
    with pytest.raises(ng.AxisError, match="1 paddings for the 2 axes"):
        ng.pad(x, [1])


def test_structure_errors_name_the_op(x, HW):
    H, W = HW
    N = ng.make_axis(length=4, name="N")
    with pytest.raises(ng.AxisError, match=r"unflatten\(x\): axis `H` is not a flattened axis"):
        ng.unflatten(x, H)
    y = ng.placeholder([H], name="y")
    with pytest.raises(ng.AxisError, match=r"concat_along_axis: <placeholder y: .* has no axis "
                                           r"labelled `W`"):
        ng.concat_along_axis([x, y], W)
    with pytest.raises(ng.AxisError, match=r"expand_dims\(x\): axis `H` occurs more than once"):
        ng.expand_dims(x, H, 0)
    with pytest.raises(ng.AxisError, match=r"expand_dims\(x\): position 7"):
        ng.expand_dims(x, N, 7)


def test_ambiguous_dot_pairing(HW):
    H, _ = HW
    a = ng.placeholder([H, H + 1], name="a")
    b = ng.placeholder([H], name="b")
    with pytest.raises(ng.AxisError, match=r"dot\(a, b\): right axis `H` would pair with both"):
        ng.dot(a, b)


def test_make_axis_with_an_existing_name_and_another_length_is_another_axis(HW):
    H5 = ng.make_axis(length=5, name="H")
    assert H5 not in HW and H5.length == 5 and HW[0].length == 2


@pytest.mark.parametrize("length", [-1, 2.5, float("nan"), "3"])
def test_make_axis_with_a_length_that_is_not_a_whole_number(length):
    with pytest.raises(ng.AxisError, match="`A`: the length .* is not a whole number"):
        ng.make_axis(length=length, name="A")
    assert ng.make_axis(length=3.0, name="B").length == 3


def test_negative_paddings_and_positions(x, HW):
    with pytest.raises(ng.AxisError, match="pad: a negative padding .* axis `H`"):
        ng.pad(x, [(-1, 0), 0])
    with pytest.raises(ng.AxisError, match="expand_dims: a negative position -1"):
        ng.expand_dims(x, ng.make_axis(length=4, name="N"), -1)


def test_not_an_axis(x):
    with pytest.raises(ng.AxisError, match="not an axis: 'H'"):
        ng.placeholder(["H"])
    with pytest.raises(ng.AxisError, match="not an axis: 'W'"):
        ng.sum(x, reduction_axes=["W"])


def test_empty_max_has_no_value():
    Z, W = ng.make_axis(length=0, name="Z"), ng.make_axis(length=3, name="W")
    z = ng.placeholder([Z, W], name="z")
    with pytest.raises(ng.GraphError, match=r"max\(z\): reduction axis `Z` has length 0"):
        ng.max(z, reduction_axes=[Z])


# ---- shapes --------------------------------------------------------------------------------

def test_constant_and_variable_values_of_the_wrong_shape(HW):
    with pytest.raises(ng.AxisError, match=r"shape \(3, 2\).*lengths \(2, 3\)"):
        ng.constant(np.ones((3, 2)), list(HW))
    with pytest.raises(ng.AxisError, match=r"variable v: a value of shape \(6,\)"):
        ng.variable(list(HW), initial_value=np.ones(6), name="v")


@pytest.mark.parametrize("backend", BACKENDS)
def test_input_of_the_wrong_shape(x, backend):
    comp = ngt.make_transformer(backend).computation(x * 2.0, x)
    with pytest.raises(ng.CallError, match="`x`.*length 3 along axis `H`, which has length 2"):
        comp(np.ones((3, 2), np.float32))
    with pytest.raises(ng.CallError, match="input `x`: 2 axes but a shape of rank 1"):
        comp(np.ones(6, np.float32))
    with pytest.raises(ng.CallError, match="`x`"):
        comp(np.float32(1.0))
    with pytest.raises(ng.CallError, match="`x`"):
        comp([[1, 2], [3, 4]])


# ---- dtypes --------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_float64_array_for_a_float32_placeholder(x, backend):
    comp = ngt.make_transformer(backend).computation(x * 2.0, x)
    with pytest.raises(ng.DTypeError, match="input `x` is float64 but the placeholder is float32"):
        comp(np.ones((2, 3)))
    with pytest.raises(TypeError):        # DTypeError is a TypeError too
        comp(np.ones((2, 3), np.int32))
    for dtype in (np.float16, np.complex64, ">f4"):
        with pytest.raises(ng.DTypeError, match="input `x`"):
            comp(np.ones((2, 3), dtype))
    with pytest.raises(ng.DTypeError, match="input `x`"):
        comp(x=np.ones((2, 3), np.int64))


def test_op_dtype_errors_name_the_op(HW):
    H, _ = HW
    i = ng.placeholder([H], dtype=np.int32, name="i")
    f = ng.placeholder([H], name="f")
    d = ng.placeholder([H], dtype=np.float64, name="d")
    with pytest.raises(ng.DTypeError, match=r"log\(i\): dtype i32 is not accepted"):
        ng.log(i)
    with pytest.raises(ng.DTypeError, match=r"mean\(i\)"):
        ng.mean(i, reduction_axes=[H])
    with pytest.raises(ng.DTypeError, match=r"add\(f, d\): operands have dtypes f32 and f64"):
        f + d
    with pytest.raises(ng.DTypeError, match=r"select\(f, f, f\).*bool"):
        ng.select(f, f, f)
    with pytest.raises(ng.DTypeError, match=r"one_hot\(f\)"):
        ng.one_hot(f, H)
    b = ng.placeholder([H], dtype=np.bool_, name="b")
    with pytest.raises(ng.DTypeError, match=r"add\(b, "):
        b + 1


def test_unsupported_dtypes(HW):
    H, _ = HW
    for dtype in (np.float16, np.complex64, np.uint8, "float16"):
        with pytest.raises(ng.DTypeError, match="weft has no dtype"):
            ng.placeholder([H], dtype=dtype)
    with pytest.raises(ng.DTypeError, match="not a dtype"):
        ng.placeholder([H], dtype="no such dtype")


def test_a_float_number_is_not_silently_truncated_for_an_int_tensor(HW):
    H, _ = HW
    i = ng.placeholder([H], dtype=np.int32, name="i")
    with pytest.raises(ng.DTypeError, match=r"1\.5 is not a value of .*int32"):
        i + 1.5
    with pytest.raises(ng.DTypeError):
        ng.select(i > 0, i, 0.25)
    assert (i * 2.0).dtype == np.int32      # an integral float is fine


# ---- calls ---------------------------------------------------------------------------------

@pytest.fixture
def two_inputs(HW):
    a = ng.placeholder(list(HW), name="a")
    b = ng.placeholder(list(HW), name="b")
    return a, b, ngt.make_transformer().computation(a - b, a, b)


def test_wrong_number_of_inputs(two_inputs):
    _, _, comp = two_inputs
    one = np.ones((2, 3), np.float32)
    with pytest.raises(ng.CallError, match=r"takes 2 input arrays \(one per placeholder, in "
                                           r"order: a, b\) but 3 were given"):
        comp(one, one, one)
    with pytest.raises(ng.CallError, match=r"takes 2 input arrays .* but 1 was given"):
        comp(one)
    with pytest.raises(ng.CallError, match="but 0 were given"):
        comp()


def test_wrong_keyword_inputs(two_inputs):
    _, _, comp = two_inputs
    one = np.ones((2, 3), np.float32)
    with pytest.raises(ng.CallError, match="`c` is not a placeholder of the computation"):
        comp(a=one, c=one)
    with pytest.raises(ng.CallError, match="no value given for placeholder `a`"):
        comp(b=one)
    with pytest.raises(ng.CallError, match="`a` given twice"):
        comp(one, a=one, b=one)


@pytest.mark.parametrize("bad", [object(), {"a": 1}, "abc", [[1, 2, 3], [4, 5]]],
                         ids=["object", "dict", "str", "ragged"])
def test_a_non_array_input(two_inputs, bad):
    _, _, comp = two_inputs
    with pytest.raises(ng.DTypeError, match="input `a`: not convertible to a float32 array"):
        comp(bad, np.ones((2, 3), np.float32))


def test_none_is_no_input(HW):
    # Not NumPy's reading of None as NaN: a scalar float placeholder would compute with it.
    s = ng.placeholder([], name="s")
    comp = ngt.make_transformer().computation(s * 2.0, s)
    with pytest.raises(ng.CallError, match="no value given for placeholder `s`"):
        comp(None)
    with pytest.raises(ng.CallError, match="no value given for placeholder `s`"):
        comp(s=None)
    assert comp(3.0) == 6.0


def test_a_misaligned_input_is_copied(HW):
    H, _ = HW
    x = ng.placeholder([H], name="x")
    raw = np.zeros(2 * 4 + 1, np.uint8)
    misaligned = raw[1:].view(np.float32)
    misaligned[:] = [1.5, 2.5]
    assert misaligned.flags.c_contiguous and not misaligned.flags.aligned
    got = ngt.make_transformer().computation(x * 2.0, x)(misaligned)
    np.testing.assert_array_equal(got, [3.0, 5.0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_contiguous_inputs_are_copied_and_give_correct_results(backend, HW):
    a = ng.placeholder(list(HW), name="a")
    comp = ngt.make_transformer(backend).computation(ng.sum(a * a, reduction_axes=[HW[1]]), a)
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for view in (base[::2, ::2],                      # strided
                 base[:3, :2].T,                     # transposed
                 base[1:3, 5:2:-1],                  # negative strides
                 np.asfortranarray(base[:2, :3])):   # Fortran order
        assert view.shape == (2, 3) and not view.flags.c_contiguous
        kept = view.copy()
        np.testing.assert_array_equal(comp(view), (kept * kept).sum(1))
        np.testing.assert_array_equal(view, kept)     # the input is untouched


def test_out_arrays_that_do_not_fit(x):
    comp = ngt.make_transformer().computation(x * 2.0, x)
    one = np.ones((2, 3), np.float32)
    with pytest.raises(ng.CallError, match="out: 2 arrays for 1 values"):
        comp(one, out=[np.empty((2, 3), np.float32)] * 2)
    with pytest.raises(ng.CallError, match=r"out\[0\] has shape \[3, 2\]"):
        comp(one, out=np.empty((3, 2), np.float32))
    with pytest.raises(ng.DTypeError, match=r"out\[0\]"):
        comp(one, out=np.empty((2, 3), np.float64))
    frozen = np.empty((2, 3), np.float32)
    frozen.setflags(write=False)
    with pytest.raises(ng.WeftError, match=r"out\[0\]"):
        comp(one, out=frozen)
    # The same checks where a call computes more than it returns (a sequential's first ops).
    seq = ngt.make_transformer().computation(ng.sequential([x * 3.0, x * 2.0]), x)
    with pytest.raises(ng.DTypeError, match=r"out\[1\]"):
        seq(one, out=np.empty((2, 3), np.float64))


def test_computation_arguments(x, HW):
    tr = ngt.make_transformer()
    with pytest.raises(ng.GraphError, match="is not a placeholder"):
        tr.computation(x * 2.0, x * 2.0)
    with pytest.raises(ng.GraphError, match="not an op"):
        tr.computation([x, 3.0], x)
    with pytest.raises(ValueError, match="need placeholder `x`, which is not among"):
        tr.computation(x * 2.0)
    with pytest.raises(ValueError, match="no backend `tpu`"):
        ngt.make_transformer("tpu")


def test_assign_needs_a_variable(x, HW):
    with pytest.raises(ng.GraphError, match="`x` is a placeholder, not a variable"):
        ng.assign(x, x)
    with pytest.raises(ng.GraphError, match="is a constant, not a variable"):
        ng.assign(ng.constant(1.0, list(HW)), x)


def test_value_of_and_set_value_errors(x, HW):
    v = ng.variable(list(HW), name="v")
    tr = ngt.make_transformer()
    with pytest.raises(ng.GraphError, match="no computation yet"):
        tr.value_of(v)
    tr.computation(v * 1.0)
    # A transformer compiles only the ops its computations need.
    with pytest.raises(ng.GraphError, match="not part of this transformer's graph"):
        tr.value_of(x)
    tr.computation(v * x, x)
    with pytest.raises(ng.WeftError, match="`x` is a placeholder, not a variable"):
        tr.value_of(x)
    with pytest.raises(ng.CallError, match="`v`: the array has length 4 along axis `H`"):
        tr.set_value(v, np.zeros((4, 3), np.float32))
    with pytest.raises(ng.DTypeError, match="is float32 but the value is a float64 array"):
        tr.set_value(v, np.zeros((2, 3)))


def test_names_are_labels(x, HW):
    # A second `x` is another op: named `x` for the user, `x_2` in the graph's text.
    again = ng.placeholder(list(HW), name="x")
    assert again.name == "x" and again is not x and "placeholder x_2" in ng.text()
    doubled = (x * 2.0).named("x")
    assert doubled.name == "x" and "x_3 = multiply" in ng.text()


def test_too_large(HW):
    big = ng.make_axis(length=2**40, name="big")
    with pytest.raises(ng.CompileError, match="memory budget"):
        ngt.make_transformer().computation(ng.constant(1.0, [big]) * 2.0)


def test_ops_of_an_old_graph(x):
    ng.reset_default_graph()
    with pytest.raises(ng.GraphError, match="another graph"):
        x * 2.0
    with pytest.raises(ng.GraphError, match="another graph"):
        ng.exp(x)


# ---- deriv ---------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_deriv_with_respect_to_something_the_cost_does_not_depend_on(x, HW, backend):
    H, W = HW
    cost = ng.sum(x * x, reduction_axes=x.axes)
    other = ng.placeholder([W, H], name="other")
    unused_op = x * 3.0      # computed from x, but not on the way to the cost
    tr = ngt.make_transformer(backend)
    for wrt in (other, unused_op):
        g = ng.deriv(cost, wrt)
        assert g.axes == wrt.axes
        np.testing.assert_array_equal(tr.computation(g)(), np.zeros(wrt.axes.lengths))


def test_deriv_errors(x):
    with pytest.raises(ng.GraphError, match="must be a float scalar.*axes \\(H, W\\)"):
        ng.deriv(x * 2.0, x)
    with pytest.raises(ng.GraphError, match="must be a float scalar"):
        ng.deriv(ng.sum(ng.cast(x, np.int32), reduction_axes=x.axes), x)
    with pytest.raises(ng.GraphError, match="argmax.*not differentiable"):
        ng.deriv(ng.sum(ng.cast(ng.argmax(x, reduction_axes=[x.axes[1]]), np.float32),
                        reduction_axes=[x.axes[0]]), x)
    with pytest.raises(ng.GraphError, match="error"):
        ng.deriv(ng.sum(x, reduction_axes=x.axes), x, error=x)


# ---- values that are legal but awkward: no crash, the same on every backend ------------------

def test_integer_division_by_zero_and_overflow_do_not_crash(HW):
    H, _ = HW
    i = ng.placeholder([H], dtype=np.int32, name="i")
    results = []
    for backend in BACKENDS:
        comp = ngt.make_transformer(backend).computation([i / 0, i / -1], i)
        results.append(comp(np.array([-2**31, 7], np.int32)))
    for r in results[1:]:
        for got, want in zip(r, results[0]):
            np.testing.assert_array_equal(got, want)


def test_one_hot_of_labels_out_of_range(HW):
    H, W = HW
    labels = ng.placeholder([H], dtype=np.int64, name="labels")
    for backend in BACKENDS:
        # Given as an input: an error naming the input, the label and the axis.
        f = ngt.make_transformer(backend).computation(ng.one_hot(labels, W), labels)
        with pytest.raises(ng.CallError, match=r"`labels` holds the label 5, outside 0\.\.2"):
            f(np.array([5, 0]))
        with pytest.raises(ng.CallError, match="label -1"):
            f(np.array([0, -1]))
        # Computed inside the graph: a row of zeros, no crash.
        g = ngt.make_transformer(backend).computation(ng.one_hot(labels + 4, W), labels)
        np.testing.assert_array_equal(g(np.array([1, -5])), np.zeros((2, 3)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_and_inf_inputs_flow_through(x, backend):
    comp = ngt.make_transformer(backend).computation(
        [ng.exp(x), ng.max(x, reduction_axes=[x.axes[1]])], x)
    xv = np.array([[np.nan, 0.0, 1.0], [np.inf, -np.inf, 0.0]], np.float32)
    e, m = comp(xv)
    np.testing.assert_allclose(e, np.exp(xv), rtol=2e-6)   # NaN where NaN, inf where inf
    np.testing.assert_array_equal(m, [np.nan, np.inf])


# ---- .weft files -----------------------------------------------------------------------------

@pytest.mark.parametrize("text,where,what", [
    ("axis N = 4\nplaceholder x: f32[N]\ny = frobnicate(x)\noutput y\n", "3:5",
     "expected an op name"),
    ("axis N = 4\nplaceholder x: f32[M]\noutput x\n", "2:20", "`M`, which is not declared"),
    ("axis N = 4\nplaceholder x f32[N]\n", "2:15", "expected `:`"),
], ids=["unknown op", "undeclared axis", "missing colon"])
def test_parse_errors_give_file_line_column(tmp_path, text, where, what):
    path = tmp_path / "bad.weft"
    path.write_text(text)
    with pytest.raises(ng.ParseError) as info:
        ng.load(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{where}: "), message
    assert what in message


def test_load_of_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        ng.load(tmp_path / "missing.weft")


def test_loaded_graph_lookups(tmp_path):
    path = tmp_path / "g.weft"
    path.write_text("axis N = 2\nplaceholder x: f32[N]\ny = exp(x)\noutput y\n")
    graph = ng.load(path)
    with pytest.raises(ng.GraphError, match="no op named `nope`"):
        graph["nope"]
    with pytest.raises(ng.DTypeError, match="input `x` is float64"):
        graph.computation()(np.ones(2))


# ---- one module graph: what one computation cannot use must not break another --------------

def test_an_unused_unbound_axis_does_not_break_other_computations(backend):
    U = ng.make_axis(name="U")                 # unbound
    ng.placeholder([U], name="unused")
    A = ng.make_axis(length=2, name="A")
    q = ng.placeholder([A], name="q")
    comp = ngt.make_transformer(backend).computation(q * 2.0, q)
    np.testing.assert_array_equal(comp(np.ones(2, np.float32)), [2.0, 2.0])


def test_an_unused_too_large_op_does_not_break_other_computations():
    B, C = ng.make_axis(length=2**31, name="B"), ng.make_axis(length=2**31, name="C")
    huge = ng.placeholder([B, C], name="huge")
    with pytest.raises(ng.GraphError, match="`huge`.*larger than"):
        ngt.make_transformer().computation(huge * 2.0, huge)
    A = ng.make_axis(length=2, name="A")
    q = ng.placeholder([A], name="q")
    comp = ngt.make_transformer().computation(q * 2.0, q)
    np.testing.assert_array_equal(comp(np.ones(2, np.float32)), [2.0, 2.0])


# ---- one class per weft error variant (docs/python.md, "weft error → Python exception") ----

def test_an_axis_error_is_a_graph_error_and_a_value_error(x):
    N = ng.make_axis(length=4, name="N")
    with pytest.raises(ng.AxisError) as info:
        ng.sum(x, reduction_axes=[N])
    assert isinstance(info.value, ng.GraphError) and isinstance(info.value, ValueError)


def test_a_dtype_error_is_a_type_error(HW):
    i = ng.placeholder([HW[0]], dtype=np.int32, name="i")
    with pytest.raises(ng.DTypeError) as info:
        ng.exp(i)
    assert isinstance(info.value, TypeError) and not isinstance(info.value, ValueError)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_memory_budget_is_a_compile_error_on_every_backend(backend):
    big = ng.make_axis(length=2**40, name="big")
    with pytest.raises(ng.CompileError, match="memory budget") as info:
        ngt.make_transformer(backend).computation(ng.constant(1.0, [big]) * 2.0)
    assert not isinstance(info.value, (ng.CallError, ng.GraphError))


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unbound_axis_is_an_axis_error_on_every_backend(backend):
    U = ng.make_axis(name="U")
    v = ng.variable([U], name="v")
    with pytest.raises(ng.AxisError, match="`v` keeps its value across calls.*`U`"):
        ngt.make_transformer(backend).computation(v * 2.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_wrong_input_count_is_a_call_error(two_inputs, backend):
    a, b, _ = two_inputs
    comp = ngt.make_transformer(backend).computation(a - b, a, b)
    one = np.ones((2, 3), np.float32)
    for args in ((one,), (one, one, one)):
        with pytest.raises(ng.CallError, match=r"in order: a, b\) but") as info:
            comp(*args)
        assert isinstance(info.value, ValueError) and not isinstance(info.value, ng.GraphError)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_wrong_shape_is_a_call_error(x, backend):
    comp = ngt.make_transformer(backend).computation(x * 2.0, x)
    with pytest.raises(ng.CallError, match="`x`: the array has length 3 along axis `H`") as info:
        comp(np.ones((3, 3), np.float32))
    assert isinstance(info.value, ValueError) and not isinstance(info.value, ng.GraphError)


def test_value_of_a_placeholder_is_a_graph_error(x):
    v = ng.variable(list(x.axes), name="v")
    tr = ngt.make_transformer()
    tr.computation(v * x, x)
    with pytest.raises(ng.GraphError, match="`x` is a placeholder, not a variable"):
        tr.value_of(x)


def test_a_parse_error_is_a_value_error(tmp_path):
    path = tmp_path / "bad.weft"
    path.write_text("axis N = 4\nplaceholder x f32[N]\n")
    with pytest.raises(ng.ParseError) as info:
        ng.load(path)
    assert isinstance(info.value, ValueError) and not isinstance(info.value, ng.GraphError)
