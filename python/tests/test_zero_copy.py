"""Arrays cross the boundary without copies: ``ng.host_copy_bytes()`` (bytes weft's runtime
copied between host arrays and its buffers, process-wide) does not move for a warm JIT call
whose inputs are C-contiguous arrays of their placeholders' dtypes, and the outputs are NumPy
arrays over memory weft wrote, handed over rather than copied.

What the counter reports, measured (and what the assertions below rely on):

- a warm call's inputs that are C-contiguous arrays of the right dtype: 0 bytes (read in place);
- its outputs: 0 bytes too — the kernels write each output into the buffer that becomes the
  returned array (on the first call as on later ones);
- an output that is an input unchanged (``computation(x, x)``) must be a new array, so it is
  copied: on the JIT, 2 x its size (into weft's storage and out again). This is the test's
  proof that the counter counts at all.
- ``out=`` arrays of a computation whose shapes are fixed: 0 bytes — the kernels write them in
  place, as they do their own buffers.
- Not counted: the conversions the binding makes on the caller's behalf before weft sees an
  array (``np.ascontiguousarray`` of a non-contiguous input) and, with axes bound at call
  time, the copy of a result into ``out=`` arrays; the interpreter backend does not count its
  copies either. Nothing here asserts on those.
"""

import gc

import numpy as np
import pytest

import weft as ng
import weft.transformers as ngt

SHAPE = (256, 1024)


@pytest.fixture
def softmax():
    R = ng.make_axis(length=SHAPE[0], name="R")
    C = ng.make_axis(length=SHAPE[1], name="C")
    a = ng.placeholder([R, C], name="a")
    tr = ngt.make_transformer("jit")
    return a, tr, tr.computation(ng.softmax(a, normalization_axes=[C]), a)


def np_softmax(v):
    e = np.exp(v - v.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def inputs(seed):
    return np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)


def test_a_warm_jit_call_copies_nothing(softmax):
    _, _, comp = softmax
    x = inputs(1)
    comp(x)                                    # warm up (compilation, first buffers)
    before = ng.host_copy_bytes()
    r = comp(x)
    assert ng.host_copy_bytes() - before == 0
    np.testing.assert_allclose(r, np_softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-9)
    # Also with several inputs and a variable (state is read in place too).
    C = ng.make_axis(length=SHAPE[1], name="C")
    R = ng.make_axis(length=SHAPE[0], name="R")
    a, b = ng.placeholder([R, C], name="p"), ng.placeholder([C], name="q")
    w = ng.variable([C], initial_value=2.0)
    comp2 = ngt.make_transformer("jit").computation([a * w + b, ng.sum(a, reduction_axes=[C])],
                                                     a, b)
    bv = inputs(2)[0].copy()
    comp2(x, bv)
    before = ng.host_copy_bytes()
    y, s = comp2(x, bv)
    assert ng.host_copy_bytes() - before == 0
    np.testing.assert_allclose(y, x * 2 + bv, rtol=1e-6)
    np.testing.assert_allclose(s, x.astype(np.float64).sum(1), rtol=1e-4, atol=1e-4)


def test_the_counter_counts(softmax):
    # The positive control: an output that is an input must be copied at least once.
    a, tr, _ = softmax
    same = tr.computation(a, a)
    x = inputs(3)
    same(x)
    before = ng.host_copy_bytes()
    r = same(x)
    assert ng.host_copy_bytes() - before >= x.nbytes
    np.testing.assert_array_equal(r, x)
    assert not np.shares_memory(r, x)


def test_outputs_are_handed_over_not_copied():
    R = ng.make_axis(length=SHAPE[0], name="R")
    C = ng.make_axis(length=SHAPE[1], name="C")
    a = ng.placeholder([R, C], name="a")
    tr = ngt.make_transformer("jit")
    comp = tr.computation(ng.softmax(a, normalization_axes=[C]), a)
    x = inputs(4)
    before = ng.host_copy_bytes()
    r = comp(x)                       # the first call: its output is written in place too
    assert ng.host_copy_bytes() - before == 0
    assert isinstance(r, np.ndarray) and r.shape == SHAPE and r.dtype == np.float32
    assert r.flags.writeable and r.flags.c_contiguous and r.flags.aligned
    assert not np.shares_memory(r, x)
    # The memory's owner is not a NumPy array (NumPy allocated no buffer to copy into): the
    # base chain ends in weft's own object, which holds the buffer the kernels wrote.
    root = r
    while isinstance(root.base, np.ndarray):
        assert not root.flags.owndata
        root = root.base
    assert not root.flags.owndata
    assert root.base is not None and not isinstance(root.base, np.ndarray)
    # The array holds its data: it outlives the computation and the transformer, and later
    # calls never write into it.
    want = np_softmax(x.astype(np.float64))
    later = [comp(inputs(5 + k)) for k in range(3)]
    del comp, tr
    gc.collect()
    np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-9)
    for k, other in enumerate(later):
        assert not np.shares_memory(r, other)
        np.testing.assert_allclose(other, np_softmax(inputs(5 + k).astype(np.float64)),
                                   rtol=1e-5, atol=1e-9)


def test_writing_into_an_output_does_not_change_the_next_result(softmax):
    _, _, comp = softmax
    x = inputs(9)
    r = comp(x)
    r[:] = -1.0
    del r
    gc.collect()
    again = comp(x)          # may reuse the dropped array's memory: it is fully rewritten
    np.testing.assert_allclose(again, np_softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-9)


def test_inputs_are_not_modified(softmax):
    _, _, comp = softmax
    x = inputs(10)
    kept = x.copy()
    x.setflags(write=False)          # a read-only input is fine: weft only reads it
    comp(x)
    np.testing.assert_array_equal(x, kept)


def test_an_output_given_back_is_written_again_in_place(softmax):
    # A dropped output's memory goes back to its computation (at most two spares an output),
    # and the next call writes into it: no fresh pages for the OS to zero.
    _, _, comp = softmax
    x = inputs(5)
    first = comp(x)
    address = first.__array_interface__["data"][0]
    del first
    gc.collect()
    second = comp(x)
    assert second.__array_interface__["data"][0] == address
    # An output still held is never written by a later call.
    held = second.copy()
    third = comp(inputs(6))
    assert third.__array_interface__["data"][0] != address
    np.testing.assert_array_equal(second, held)
    np.testing.assert_allclose(third, np_softmax(inputs(6).astype(np.float64)), rtol=1e-5,
                               atol=1e-9)


def test_out_arrays_are_written_in_place(softmax):
    a, _, comp = softmax
    x = inputs(6)
    out = np.full(SHAPE, np.nan, np.float32)
    assert comp(x, out=out) is out
    before = ng.host_copy_bytes()
    out.fill(np.nan)
    assert comp(x, out=out) is out
    assert ng.host_copy_bytes() - before == 0
    np.testing.assert_allclose(out, np_softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-9)
    # The same memory as input and out is refused, never read while written.
    with pytest.raises(ng.CallError, match="shares memory with an out array"):
        comp(x, out=x)
    view = out[:, :]                  # another view of out's memory, as a second out
    both = ngt.make_transformer("jit").computation([a * 2.0, a * 3.0], a)
    with pytest.raises(ng.CallError, match=r"out\[1\] shares memory"):
        both(x, out=[out, view])
