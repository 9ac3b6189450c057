"""The digits MLP of python/examples/digits_mlp.py trains to at least 97 % test accuracy
(issue 42's bar), written against nGraph-python's API."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
import digits_mlp  # noqa: E402


def test_the_digits_mlp_trains_to_97_percent():
    accuracy = digits_mlp.train(log=None)
    assert accuracy >= 0.97, accuracy


@pytest.mark.parametrize("backend", ["unfused", "interpreter"])
def test_every_backend_trains_the_same_model(backend):
    # A few epochs on each backend: the same data and updates, so the same accuracy up to
    # rounding (the backends' sums differ in order: docs/numerics.md).
    jit = digits_mlp.train(epochs=3, log=None)
    other = digits_mlp.train(epochs=3, backend=backend, log=None)
    assert abs(jit - other) <= 0.01, (jit, other)
    assert jit > 0.85
