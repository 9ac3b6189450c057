"""weft.onnx: ONNX models loaded, compiled and called from Python, and ONNX's own conformance
suite (onnx.backend.test) run on weft.onnx.Backend.

Conformance cases, one test each, named ``<category>/<case>``:

- ``node/…``: ONNX's node tests (made in memory by ``load_model_tests(kind="node")``) whose ops
  are all in ``weft.onnx.SUPPORTED_OPS``; the rest are skipped as "not imported";
- ``simple/…``, ``pytorch-converted/…``, ``pytorch-operator/…``: the model tests of those data
  directories (a model using an op weft does not import is skipped as "not imported");
- ``light/…``: the nine light models (``data/light``: real networks with small weights), each
  compared with its reference output on the runner's inputs. They take seconds to a minute
  each to compile; ``-k 'not light/'`` leaves them out.

``real`` (downloads) is not run. Cases weft gets wrong are listed, with the reason, in
onnx_expected_failures.txt and marked strict xfail: one that passes fails the suite, so the
list stays true. ``python python/tests/test_onnx.py --record`` runs every case and writes the
list again (docs/onnx.md, "Conformance").
"""

import glob
import json
import os
import re
import sys
import warnings

import numpy as np
import pytest

import weft
import weft.onnx
from weft.errors import CallError, OnnxImportError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED_FAILURES = os.path.join(HERE, "onnx_expected_failures.txt")


# ---- small models --------------------------------------------------------------------------

def _model(nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, "test", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _gemm_relu():
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10 - 0.5
    b = np.array([0.5, -0.5, 0.25, 0.0], np.float32)
    model = _model(
        [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc"),
         helper.make_node("Relu", ["y"], ["r"], name="act"),
         helper.make_node("Neg", ["x"], ["n"], name="neg")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 4]),
         helper.make_tensor_value_info("n", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return model, lambda x: [np.maximum(x @ w + b, 0), -x]


def _two_inputs():
    model = _model(
        [helper.make_node("Sub", ["a", "b"], ["d"], name="sub"),
         helper.make_node("MatMul", ["d", "m"], ["y"], name="mm")],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("m", TensorProto.FLOAT, [3, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])])
    return model, lambda a, b, m: [(a - b) @ m]


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_supported_ops_are_listed():
    assert "Conv" in weft.onnx.SUPPORTED_OPS and "Gemm" in weft.onnx.SUPPORTED_OPS
    assert list(weft.onnx.SUPPORTED_OPS) == sorted(weft.onnx.SUPPORTED_OPS)
    assert weft.onnx.OPSETS[0] <= 13 <= weft.onnx.OPSETS[1]


def test_load_from_path_and_bytes(tmp_path):
    model, want = _gemm_relu()
    path = tmp_path / "gemm.onnx"
    onnx.save(model, str(path))
    x = _rand(2, 3)
    for source in (path, str(path), model.SerializeToString(),
                   bytearray(model.SerializeToString())):
        m = weft.onnx.load(source)
        assert m.input_names == ["x"] and m.output_names == ["r", "n"]
        assert m.opset == 13
        got = m(x)
        assert isinstance(got, list) and len(got) == 2
        for g, w in zip(got, want(x)):
            assert g.dtype == np.float32 and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_external_data_is_read_from_beside_the_model(tmp_path):
    model, want = _gemm_relu()
    path = tmp_path / "ext.onnx"
    onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.data", size_threshold=0)
    assert (tmp_path / "ext.data").exists()
    x = _rand(2, 3, seed=5)
    for g, w in zip(weft.onnx.load(path)(x), want(x)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    # From bytes there is no directory to read it from.
    with pytest.raises(OnnxImportError):
        weft.onnx.load(path.read_bytes())
    # Backend.prepare of the model loaded with its data: the data travels in the bytes.
    rep = weft.onnx.Backend.prepare(onnx.load(str(path)))
    for g, w in zip(rep.run([x]), want(x)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["jit", "unfused", "interp"])
def test_backends_agree(backend):
    model, want = _gemm_relu()
    x = _rand(2, 3, seed=1)
    got = weft.onnx.load(model.SerializeToString(), backend=backend)(x)
    for g, w in zip(got, want(x)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_call_positional_and_by_name():
    model, want = _two_inputs()
    m = weft.onnx.load(model.SerializeToString())
    assert m.input_names == ["a", "b", "m"]
    a, b, w = _rand(4, 3, seed=1), _rand(4, 3, seed=2), _rand(3, 2, seed=3)
    expected = want(a, b, w)[0]
    for got in (m(a, b, w), m(m=w, b=b, a=a), m(a, m=w, b=b), m.run({"a": a, "b": b, "m": w}),
                m.run([a, b, w])):
        np.testing.assert_allclose(got[0], expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(CallError, match="`m`"):
        m(a, b)
    with pytest.raises(CallError, match="no input `c`"):
        m(a, b, w, c=w)
    with pytest.raises(CallError, match="`a` given twice"):
        m(a, b, w, a=a)
    with pytest.raises(CallError):
        m(a, b, w, w)


def test_dim_param_takes_each_calls_batch():
    model, want = _two_inputs()
    m = weft.onnx.load(model.SerializeToString())
    w = _rand(3, 2, seed=3)
    for n in (1, 5, 2):
        a, b = _rand(n, 3, seed=n), _rand(n, 3, seed=n + 10)
        (y,) = m(a, b, w)
        assert y.shape == (n, 2)
        np.testing.assert_allclose(y, want(a, b, w)[0], rtol=1e-5, atol=1e-6)
    # The two inputs share the dim_param: different batches do not fit.
    with pytest.raises(weft.WeftError):
        m(_rand(2, 3), _rand(3, 3), w)


def test_graph_text_and_explain():
    model, _ = _gemm_relu()
    m = weft.onnx.load(model.SerializeToString())
    text = m.graph_text()
    assert "placeholder x" in text and "output r" in text
    # explain reads the JIT's plan: a model of fixed lengths on the JIT has one; a model with
    # a dim_param (compiled per binding) and the interpreter have none.
    assert "materialised tensors" in m.explain()
    assert weft.onnx.load(_two_inputs()[0].SerializeToString()).explain() is None
    assert weft.onnx.load(model.SerializeToString(), backend="interp").explain() is None


def test_unknown_op_is_an_import_error_naming_the_node():
    model = _model(
        [helper.make_node("Relu", ["x"], ["r"], name="act"),
         helper.make_node("FancyOp", ["r"], ["y"], name="the_fancy_node")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(OnnxImportError, match="the_fancy_node") as e:
        weft.onnx.load(model.SerializeToString())
    assert "FancyOp" in str(e.value)
    assert isinstance(e.value, weft.WeftError)


def test_truncated_bytes_and_missing_file_are_import_errors(tmp_path):
    model, _ = _gemm_relu()
    data = model.SerializeToString()
    with pytest.raises(OnnxImportError):
        weft.onnx.load(data[: len(data) // 2])
    with pytest.raises(OnnxImportError, match="nowhere.onnx"):
        weft.onnx.load(tmp_path / "nowhere.onnx")
    with pytest.raises(TypeError):
        weft.onnx.load(3)
    with pytest.raises(ValueError, match="backend"):
        weft.onnx.load(data, backend="gpu")


def test_backend_prepare_and_run_node():
    model, want = _gemm_relu()
    Backend = weft.onnx.Backend
    assert issubclass(Backend, onnx.backend.base.Backend)
    assert Backend.supports_device("CPU") and not Backend.supports_device("CUDA")
    x = _rand(2, 3, seed=4)
    rep = Backend.prepare(model, "CPU")
    assert isinstance(rep, onnx.backend.base.BackendRep)
    for g, w in zip(rep.run([x]), want(x)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    (y,) = Backend.run_node(helper.make_node("Relu", ["x"], ["y"]), [x])
    np.testing.assert_allclose(y, np.maximum(x, 0))


# ---- conformance: onnx.backend.test --------------------------------------------------------

CATEGORIES = ("node", "simple", "pytorch-converted", "pytorch-operator", "light")


class Case:
    """One conformance case: ``name`` (``<category>/<case>``), how to get its model and data
    sets, and the ops it uses that weft does not import (empty: in scope)."""

    def __init__(self, category, name, rtol, atol, model=None, model_path=None, data_sets=None,
                 data_dir=None, light_output=None):
        self.category, self.name = category, f"{category}/{name}"
        self.rtol, self.atol = rtol, atol
        self._model, self.model_path = model, model_path
        self._data_sets, self.data_dir, self.light_output = data_sets, data_dir, light_output
        self.unsupported = sorted(_unsupported_ops(self.model))

    @property
    def model(self):
        if self._model is None:
            self._model = onnx.load(self.model_path)
        return self._model

    def data_sets(self):
        """``[(inputs, reference outputs)]``, arrays."""
        if self._data_sets is not None:
            return [([_array(x) for x in ins], [_array(y) for y in outs])
                    for ins, outs in self._data_sets]
        if self.light_output is not None:
            return [self._light_data()]
        sets = []
        for d in sorted(glob.glob(os.path.join(self.data_dir, "test_data_set*"))):
            ins = [_read_tensor(os.path.join(d, f"input_{i}.pb"))
                   for i in range(len(glob.glob(os.path.join(d, "input_*.pb"))))]
            outs = [_read_tensor(os.path.join(d, f"output_{i}.pb"))
                    for i in range(len(glob.glob(os.path.join(d, "output_*.pb"))))]
            sets.append((ins, outs))
        return sets

    def _light_data(self):
        # As the runner does for data/light (without writing under ~/.onnx): the inputs its
        # generate_dummy_data makes, the output stored beside the model.
        from onnx.backend.test.runner import Runner
        model = self.model
        inits = {i.name for i in model.graph.initializer}
        ins = [Runner.generate_dummy_data(x, seed=0, name=self.name, random=False)
               for x in model.graph.input if x.name not in inits]
        return ins, [_read_tensor(self.light_output)]


def _array(x):
    return numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else x


def _read_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def _unsupported_ops(model):
    """The ops of ``model`` (subgraphs and local functions included) weft does not import."""
    supported = set(weft.onnx.SUPPORTED_OPS)
    found = set()

    def visit(graph):
        for node in graph.node:
            if node.domain not in ("", "ai.onnx"):
                found.add(f"{node.domain}.{node.op_type}")
            elif node.op_type not in supported:
                found.add(node.op_type)
            for attr in node.attribute:
                if attr.HasField("g"):
                    visit(attr.g)
                for g in attr.graphs:
                    visit(g)

    visit(model.graph)
    return found


def _data_dir():
    from onnx.backend.test.loader import DATA_DIR
    return DATA_DIR


def load_cases():
    """Every conformance case of ``CATEGORIES``, by name."""
    from onnx.backend.test.loader import load_model_tests
    cases = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the node cases' generators warn about NaN casts
        for t in load_model_tests(kind="node"):
            cases.append(Case("node", t.name, t.rtol, t.atol, model=t.model,
                              data_sets=t.data_sets))
    for category in ("simple", "pytorch-converted", "pytorch-operator"):
        for t in load_model_tests(kind=category):
            cases.append(Case(category, t.name, t.rtol, t.atol,
                              model_path=os.path.join(t.model_dir, "model.onnx"),
                              data_dir=t.model_dir))
    light = os.path.join(_data_dir(), "light")
    for t in load_model_tests(kind="real"):
        if not (t.url or "").startswith("onnx/backend/test/data/light/"):
            continue
        model_path = os.path.join(light, os.path.basename(t.url))
        cases.append(Case("light", t.name, t.rtol, t.atol, model_path=model_path,
                          light_output=model_path[: -len(".onnx")] + "_output_0.pb"))
    return sorted(cases, key=lambda c: (CATEGORIES.index(c.category), c.name))


def run_case(case):
    """Runs ``case`` on weft.onnx.Backend, comparing as ONNX's runner does (its rtol/atol)."""
    from onnx.backend.test.runner import Runner
    rep = weft.onnx.Backend.prepare(case.model, "CPU")
    for inputs, ref_outputs in case.data_sets():
        outputs = rep.run(inputs)
        Runner.assert_similar_outputs(ref_outputs, outputs, rtol=case.rtol, atol=case.atol)


def read_expected_failures(path=EXPECTED_FAILURES):
    """``{case name: reason}`` from the expected-failures file (``name  # reason`` lines)."""
    expected = {}
    if not os.path.exists(path):
        return expected
    with open(path) as f:
        for line in f:
            name, _, reason = line.partition("#")
            if name.strip():
                expected[name.strip()] = reason.strip()
    return expected


def one_line_reason(e):
    """What went wrong, on one line: weft's message, or the comparison's figures."""
    text = str(e)
    if isinstance(e, AssertionError):
        figures = re.findall(r"(Mismatched elements: [^\n]*|Max absolute difference[^\n]*|"
                             r"Max relative difference[^\n]*|Output \d+ has incorrect shape|"
                             r"\(shapes [^\n]*\)|\(mismatch [^\n]*\))", text)
        if figures:
            return "mismatch: " + "; ".join(f.strip() for f in figures)
    first = " ".join(text.split())
    return f"{type(e).__name__}: {first}"[:240]


_CASES = load_cases()
_EXPECTED = read_expected_failures()


def _param(case):
    if case.unsupported:
        mark = pytest.mark.skip(reason=f"not imported: {', '.join(case.unsupported)}")
        return pytest.param(case, marks=mark, id=case.name)
    if case.name in _EXPECTED:
        mark = pytest.mark.xfail(reason=_EXPECTED[case.name], strict=True)
        return pytest.param(case, marks=mark, id=case.name)
    return pytest.param(case, id=case.name)


@pytest.mark.parametrize("case", [_param(c) for c in _CASES])
def test_conformance(case):
    run_case(case)


def test_expected_failures_name_cases_in_scope():
    """Every line of onnx_expected_failures.txt names a case that runs (a stale line — a
    case renamed, removed or now out of scope — fails here)."""
    runs = {c.name for c in _CASES if not c.unsupported}
    stale = sorted(set(_EXPECTED) - runs)
    assert not stale, f"onnx_expected_failures.txt names cases that do not run: {stale}"


def record(path=EXPECTED_FAILURES):
    """Runs every in-scope case and writes the expected-failures file; prints counts by
    category (passed / expected failures / not imported)."""
    import time
    counts = {c: [0, 0, 0] for c in CATEGORIES}
    failures = []
    for case in _CASES:
        if case.unsupported:
            counts[case.category][2] += 1
            continue
        start = time.perf_counter()
        try:
            run_case(case)
            counts[case.category][0] += 1
        except Exception as e:  # noqa: BLE001 — every failure is recorded with its reason
            counts[case.category][1] += 1
            failures.append((case.name, one_line_reason(e)))
        took = time.perf_counter() - start
        print(f"{case.name}: {took:.2f} s", file=sys.stderr, flush=True)
    with open(path, "w") as f:
        f.write("# ONNX conformance cases weft.onnx fails (python/tests/test_onnx.py runs them as\n"
                "# strict xfail): `<category>/<case>  # reason`. Written by\n"
                "# `python python/tests/test_onnx.py --record`.\n")
        for name, reason in failures:
            f.write(f"{name}  # {reason}\n")
    for category, (passed, failed, skipped) in counts.items():
        print(f"{category}: {passed} passed, {failed} expected failures, "
              f"{skipped} not imported")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python test_onnx.py --record")
    record()
