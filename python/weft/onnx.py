"""ONNX models on weft: import a model, compile it, call it with NumPy arrays::

    import numpy as np
    import weft.onnx

    model = weft.onnx.load("model.onnx")              # or the model's bytes
    model.input_names, model.output_names             # ['x'], ['y']
    (y,) = model(np.ones((2, 3), np.float32))         # positional, in input order
    (y,) = model(x=np.ones((2, 3), np.float32))       # or by input name

Inputs are the model's inputs (initializers excluded), outputs its outputs, in ONNX's order and
dim order; a symbolic dim (``dim_param``) takes its length from each call's inputs. Calls go
through the same path as every weft computation: arrays of the input's dtype read in place, the
GIL released. A model weft cannot read raises ``weft.errors.OnnxImportError`` naming the node,
its op and opset (``SUPPORTED_OPS``: the ops weft imports).

``Backend`` is a backend for ONNX's test runner (``onnx.backend.test``) and for
``onnx.backend.base`` users: it needs the ``onnx`` package, which nothing else here does
(``import weft`` and ``weft.onnx.load`` work without it).
"""

import os
import tempfile

from . import _weft
from .errors import CallError, OnnxImportError

__all__ = ["load", "Model", "Backend", "BackendRep", "SUPPORTED_OPS", "OPSETS"]

#: Every ONNX op weft imports (default domain), sorted.
SUPPORTED_OPS = tuple(_weft.ONNX_SUPPORTED_OPS)
#: The default-domain opsets weft reads: ``(first, last)``.
OPSETS = tuple(_weft.ONNX_OPSETS)

def load(source, backend="jit", threads=None, known_inputs=None):
    """The ONNX model ``source`` — the path of a ``.onnx`` file (``str`` or ``os.PathLike``;
    external data is read from beside it) or the model's bytes — imported and compiled for
    ``backend`` (``"jit"``, ``"unfused"``, ``"interp"``; ``threads``: the JIT's thread
    count, default the machine's cores), as a callable ``Model``.

    ``known_inputs``: a dict of input name → array fixing those inputs' values at import
    (they become constants and are no longer inputs of the ``Model``): for an ``axes``,
    ``shape`` or ``pads`` input weft needs known when it compiles."""
    import numpy as np
    if isinstance(source, (bytearray, memoryview)):
        source = bytes(source)
    elif not isinstance(source, bytes):
        source = os.fspath(source)
    known = []
    for name, value in (known_inputs or {}).items():
        a = np.asarray(value)
        known.append((name, list(a.shape), a.dtype.name, a.ravel().tolist()))
    return Model(_weft.onnx_load(source, backend, threads, known), backend)


class Model:
    """An ONNX model compiled by weft. Call it with one NumPy array per input — positional in
    ``input_names`` order, or by name as keywords — for a list of arrays, one per output in
    ``output_names`` order."""

    def __init__(self, native, backend="jit"):
        self._native = native
        self._computation = native.computation
        self.backend = backend
        #: The model's inputs (initializers excluded), in order.
        self.input_names = list(native.input_names)
        #: The model's outputs, in order.
        self.output_names = list(native.output_names)
        #: The default-domain opset the model imports.
        self.opset = native.opset

    def __repr__(self):
        return (f"<weft.onnx.Model inputs={self.input_names} outputs={self.output_names} "
                f"opset={self.opset} backend={self.backend!r}>")

    def __call__(self, *args, **kwargs):
        return self._computation.call(self._arrange(args, kwargs))

    def _arrange(self, args, kwargs):
        """The inputs ``args`` (positional) and ``kwargs`` (by name) in input order."""
        names = self.input_names
        if len(args) > len(names):
            raise CallError(f"{len(args)} inputs given, but the model takes {len(names)} "
                            f"({', '.join(names) or 'none'})")
        if not kwargs:
            if len(args) < len(names):
                missing = ", ".join(f"`{n}`" for n in names[len(args):])
                raise CallError(f"no value given for input {missing}")
            return list(args)
        values = list(args) + [None] * (len(names) - len(args))
        given = [True] * len(args) + [False] * (len(names) - len(args))
        index = {n: i for i, n in enumerate(names)}
        for name, value in kwargs.items():
            if name not in index:
                raise CallError(f"the model has no input `{name}` (its inputs: "
                                f"{', '.join(names) or 'none'})")
            i = index[name]
            if given[i]:
                raise CallError(f"input `{name}` given twice (positional and by name)")
            values[i], given[i] = value, True
        missing = [f"`{n}`" for n, g in zip(names, given) if not g]
        if missing:
            raise CallError(f"no value given for input {', '.join(missing)}")
        return values

    def run(self, inputs):
        """The outputs for ``inputs``: a list in input order, or a dict by input name."""
        if isinstance(inputs, dict):
            return self(**inputs)
        return self(*inputs)

    @property
    def computation(self):
        """The compiled ``weft._weft.Computation`` (``plan()``, ``dumps()``,
        ``compilations``, ...)."""
        return self._computation

    def graph_text(self):
        """The imported graph in weft's text form (what ``weft import`` prints)."""
        return self._native.graph_text()

    def explain(self):
        """``weft explain`` of the compiled model: kernels, loops, the cost model's figures;
        None when it does not run on the JIT or binds lengths at call time."""
        return self._computation.explain()


# ---- onnx.backend ------------------------------------------------------------------------------
# Classes over the onnx package's base classes, made on first use so that `import weft.onnx`
# works without onnx.

_made = {}


def _model_bytes_or_path(model, tmp):
    """What ``_weft.onnx_load`` reads for ``model`` (a ModelProto): its bytes, or — for a
    model too large for one protobuf message — the path of a copy saved in ``tmp`` with its
    tensors as external data."""
    try:
        return model.SerializeToString()
    except ValueError:  # past protobuf's 2 GB
        import onnx
        path = os.path.join(tmp, "model.onnx")
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data")
        return path


def _make_backend_classes():
    import onnx
    import onnx.backend.base as base

    class BackendRep(base.BackendRep):
        """A model prepared by ``Backend``: ``run(inputs)`` returns its outputs.

        A model that reads an input weft needs known when it compiles (an ``axes``, ``shape``
        or ``pads`` input) is compiled at ``run``, its int64 inputs fixed to the values given
        (``load(..., known_inputs=...)``), once per distinct set of those values."""

        def __init__(self, model, deferred=None):
            self.model = model
            # (source, backend, threads, the model's input names) when compiled per value.
            self.deferred = deferred
            self.specialized = {}

        def run(self, inputs, **kwargs):
            """The outputs (a list, in output order) for ``inputs``: a list or tuple in input
            order, a dict by input name, or one array for a one-input model."""
            if self.deferred is not None:
                return self._run_specialized(inputs)
            if isinstance(inputs, dict):
                return self.model(**inputs)
            if not isinstance(inputs, (list, tuple)):
                inputs = [inputs]
            return self.model(*inputs)

        def _run_specialized(self, inputs):
            import numpy as np
            source, backend, threads, names = self.deferred
            if not isinstance(inputs, dict):
                if not isinstance(inputs, (list, tuple)):
                    inputs = [inputs]
                inputs = dict(zip(names, inputs))
            arrays = {n: np.asarray(v) for n, v in inputs.items()}
            known = {n: a for n, a in arrays.items()
                     if a.dtype == np.int64 or (a.dtype == np.bool_ and a.ndim == 0)}
            key = tuple((n, a.shape, a.tobytes()) for n, a in sorted(known.items()))
            if key not in self.specialized:
                self.specialized[key] = load(source, backend, threads, known_inputs=known)
            model = self.specialized[key]
            return model(**{n: arrays[n] for n in model.input_names})

    class Backend(base.Backend):
        """weft as an ONNX backend (``onnx.backend.base.Backend``): models are imported and
        compiled by weft (``prepare(model, device, backend="jit")``) and run on the CPU."""

        @classmethod
        def is_compatible(cls, model, device="CPU", **kwargs):
            return cls.supports_device(device)

        @classmethod
        def prepare(cls, model, device="CPU", backend="jit", threads=None, **kwargs):
            """``model`` (a ModelProto, or the path of a model file, or its bytes) imported
            and compiled: a ``BackendRep``. Keywords the test runner passes (tolerances) are
            ignored."""
            if not cls.supports_device(device):
                raise ValueError(f"weft runs ONNX models on the CPU, not {device!r}")
            if isinstance(model, onnx.ModelProto):
                with tempfile.TemporaryDirectory(prefix="weft-onnx-") as tmp:
                    source = _model_bytes_or_path(model, tmp)
                    if not isinstance(source, bytes):
                        return BackendRep(load(source, backend, threads))
                    return cls._prepare(source, backend, threads)
            return cls._prepare(model, backend, threads)

        @classmethod
        def _prepare(cls, source, backend, threads):
            try:
                return BackendRep(load(source, backend, threads))
            except OnnxImportError as e:
                if "known when the model is imported" not in str(e):
                    raise
                # An input weft needs known: compiled at run, for the values given then.
                if not isinstance(source, bytes):
                    with open(source, "rb") as f:
                        source = f.read()
                g = onnx.load_from_string(source).graph
                inits = {t.name for t in g.initializer}
                names = [i.name for i in g.input if i.name not in inits]
                return BackendRep(None, deferred=(source, backend, threads, names))

        @classmethod
        def run_model(cls, model, inputs, device="CPU", **kwargs):
            return cls.prepare(model, device, **kwargs).run(inputs)

        @classmethod
        def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
            """One node run on ``inputs`` (arrays, in the node's input order): a model of the
            node alone is made, prepared and run. ``opset_version`` (a keyword) is the opset
            the model imports (default: the newest weft reads)."""
            import numpy as np
            from onnx import helper
            opset = kwargs.pop("opset_version", OPSETS[1])
            if isinstance(inputs, dict):
                inputs = [inputs[name] for name in node.input if name]
            arrays = [np.asarray(x) for x in inputs]
            names = [name for name in node.input if name]
            graph_inputs = [
                helper.make_tensor_value_info(
                    name, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
                for name, x in zip(names, arrays)
            ]
            graph_outputs = []
            for i, name in enumerate(node.output):
                if outputs_info is not None and i < len(outputs_info):
                    dtype, shape = outputs_info[i]
                    graph_outputs.append(helper.make_tensor_value_info(
                        name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape))
                else:
                    graph_outputs.append(helper.make_empty_tensor_value_info(name))
            graph = helper.make_graph([node], f"weft_run_node_{node.op_type}", graph_inputs,
                                      graph_outputs)
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
            return cls.prepare(model, device, **kwargs).run(arrays)

        @classmethod
        def supports_device(cls, device):
            return base.Device(device).type == base.DeviceType.CPU

    return {"Backend": Backend, "BackendRep": BackendRep}


def __getattr__(name):
    # `Backend` and `BackendRep` subclass the onnx package's classes: made on first use.
    if name in ("Backend", "BackendRep"):
        if not _made:
            _made.update(_make_backend_classes())
        return _made[name]
    raise AttributeError(f"module 'weft.onnx' has no attribute {name!r}")
