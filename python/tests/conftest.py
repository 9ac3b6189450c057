"""Shared fixtures of weft's Python tests.

- Every test starts on a fresh module-level graph (``ng.reset_default_graph()``), so op and
  axis names never leak between tests and an unbound axis of one test never reaches another's
  computations.
- ``compute`` runs a computation on each backend (the test is parametrized over them);
  ``compute_on(backend, ...)`` does it on a backend chosen by the test.
"""

import numpy as np
import pytest

import weft as ng
import weft.transformers as ngt

BACKENDS = ("jit", "unfused", "interpreter")


@pytest.fixture(autouse=True)
def fresh_graph():
    ng.reset_default_graph()
    yield
    ng.reset_default_graph()


def compute_on(backend, results, feed=None):
    """The value of ``results`` (an op, a list of ops or a ``sequential``) computed by a new
    transformer on ``backend``; ``feed`` maps each placeholder to its array (in order)."""
    feed = dict(feed or {})
    comp = ngt.make_transformer(backend).computation(results, *feed.keys())
    return comp(*feed.values())


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def compute(backend):
    """``compute(results, {placeholder: array})`` on the test's backend."""
    def run(results, feed=None):
        return compute_on(backend, results, feed)
    return run


@pytest.fixture
def rng():
    return np.random.default_rng(20161129)
