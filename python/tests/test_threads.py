"""Python threads call one computation concurrently (calls release the GIL); every result is
right."""

import threading

import numpy as np
import pytest

import weft as ng
import weft.transformers as ngt

from conftest import BACKENDS

THREADS = 8


def run_threads(work):
    """Runs ``work(i)`` on THREADS threads started together; re-raises the first failure."""
    errors = []
    start = threading.Barrier(THREADS)

    def body(i):
        try:
            start.wait()
            work(i)
        except BaseException as e:  # noqa: BLE001 — reported to the main thread
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


def np_softmax(v):
    e = np.exp(v - v.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("backend", ["jit", "unfused"])
def test_threads_share_one_softmax_computation(backend):
    R = ng.make_axis(length=256, name="R")
    C = ng.make_axis(length=1024, name="C")
    a = ng.placeholder([R, C], name="a")
    comp = ngt.make_transformer(backend).computation(ng.softmax(a, normalization_axes=[C]), a)
    results = {}

    def work(i):
        rng = np.random.default_rng(1000 + i)
        for k in range(6):
            x = (rng.standard_normal((256, 1024)) * 3).astype(np.float32)
            r = comp(x)
            # exp by a vectorised routine and sums in another order: a few float32 ulp.
            np.testing.assert_allclose(r, np_softmax(x.astype(np.float64)), rtol=1e-5,
                                       atol=1e-9)
            results[i, k] = (x, r)

    run_threads(work)
    assert len(results) == THREADS * 6
    # Every result held by the test is still its own: no later call wrote into it.
    for x, r in results.values():
        np.testing.assert_allclose(r, np_softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-9)


def test_threads_with_lengths_bound_at_call_time():
    # N is unbound: threads calling with different batch lengths compile and run each
    # binding concurrently.
    N = ng.make_axis(name="N")
    C = ng.make_axis(length=64, name="C")
    x = ng.placeholder([N, C], name="x")
    comp = ngt.make_transformer().computation(ng.sum(ng.tanh(x) * 2.0, reduction_axes=[C]), x)

    def work(i):
        rng = np.random.default_rng(2000 + i)
        for k in range(6):
            n = 1 + (i * 5 + k) % 7
            xv = rng.standard_normal((n, 64)).astype(np.float32)
            r = comp(xv)
            assert r.shape == (n,)
            np.testing.assert_allclose(r, (np.tanh(xv.astype(np.float64)) * 2).sum(1),
                                       rtol=1e-5, atol=1e-5)

    run_threads(work)


@pytest.mark.parametrize("backend", BACKENDS)
def test_concurrent_assignments_are_not_lost(backend):
    # Calls that assign a variable are serialised on it: 8 threads x 50 increments.
    A = ng.make_axis(length=1000, name="A")
    v = ng.variable([A], initial_value=0.0, name="v")
    tr = ngt.make_transformer(backend)
    inc = tr.computation(ng.assign(v, v + 1.0))

    def work(i):
        for _ in range(50):
            inc()

    run_threads(work)
    np.testing.assert_array_equal(tr.value_of(v), np.full(1000, THREADS * 50.0))
