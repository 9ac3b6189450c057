"""Transformers: compile ops into computations and call them (nGraph's ``ngraph.transformers``).

``make_transformer()`` gives a transformer; ``transformer.computation(results, *parameters)``
compiles the ops ``results`` needs given the placeholders ``parameters`` (the GIL released
while it compiles) and returns a callable. Computations of one transformer share its variables
and persistent tensors.

A transformer compiles the part of the graph its computations reach; when a later computation
needs ops it does not hold, it takes the graph again, carries the values of its variables over
and compiles its earlier computations again, so all of them keep sharing one state.
"""

import weakref

import numpy as np

from . import _weft
from .errors import CallError, GraphError


def _graph():
    from . import _graph as g
    return g


class Computation:
    """A compiled computation: call it with one array per placeholder (C-contiguous arrays of
    the placeholder's dtype are read in place; others are converted by one documented copy, see
    ``__call__``). Returns the result's value, or a tuple of values when the results were given
    as a list or tuple. Calls release the GIL: Python threads may call one computation
    concurrently."""

    def __init__(self, transformer, native, outputs, parameters, shape):
        self._transformer = transformer
        self._native = native
        self._outputs = outputs          # node ids, in the order the native call returns them
        self._parameters = parameters    # placeholder ops
        self._shape = shape              # how to give the values back

    @property
    def parameters(self):
        return tuple(self._parameters)

    def _inputs(self, args, kwargs):
        """The arrays in placeholder order, from positional and keyword arguments (the native
        call converts and checks them: see ``__call__``)."""
        if not kwargs:
            return args
        by_name = {p.name: i for i, p in enumerate(self._parameters)}
        full = list(args) + [None] * (len(self._parameters) - len(args))
        for name, value in kwargs.items():
            if name not in by_name:
                raise CallError(f"`{name}` is not a placeholder of the computation "
                                f"(its placeholders: {', '.join(by_name)})")
            if full[by_name[name]] is not None:
                raise CallError(f"placeholder `{name}` given twice")
            full[by_name[name]] = value
        for p, a in zip(self._parameters, full):
            if a is None:
                raise CallError(f"no value given for placeholder `{p.name}`")
        return full

    def __call__(self, *args, out=None, **kwargs):
        """Runs the computation. Inputs: one array per placeholder, positionally in the order
        given to ``computation`` or by placeholder name. A non-contiguous array is copied once
        into a contiguous one; an array of another dtype than its placeholder's raises
        ``DTypeError``; Python numbers and lists are converted to the placeholder's dtype.
        ``out``: arrays to write the values into (one per value), returned."""
        inputs = self._inputs(args, kwargs)
        if out is not None:
            outs = [out] if isinstance(out, np.ndarray) else list(out)
            if len(outs) != len(self._shape[1]):
                raise CallError(f"out: {len(outs)} arrays for {len(self._shape[1])} values")
            full = [None] * len(self._outputs)  # None: an output not asked for (an assign)
            for slot, array in zip(self._shape[1], outs):
                full[slot] = array
            self._native.call_into(inputs, full)
            return out
        values = self._native.call(inputs)
        kind, slots = self._shape
        if kind == "one":
            return values[slots[0]]
        return tuple(values[s] for s in slots)

    def dump(self, directory=None):
        """Every IR stage of this computation (``weft compile --dump-dir``): the graph after
        each pass, fusion's groups, kernels, loop IR, Cranelift IR and machine code, as
        ``{file name: text}`` in pipeline order; written into ``directory`` when given."""
        files = self._transformer._native.dumps(self._outputs, [p._id for p in self._parameters])
        if directory is not None:
            import pathlib
            root = pathlib.Path(directory)
            root.mkdir(parents=True, exist_ok=True)
            for name, _stage, text in files:
                (root / name).write_text(text, encoding="utf-8")
        return {name: text for name, _stage, text in files}

    def explain(self):
        """What the compiler made of this computation (``weft explain``): materialised
        tensors and why, fusion's cost model, each kernel's loops."""
        return self._transformer._native.explain(self._outputs,
                                                 [p._id for p in self._parameters])


class Transformer:
    """Compiles computations over the module-level graph; ``backend``: ``"jit"`` (fused native
    kernels, the default), ``"unfused"`` (one kernel per op) or ``"interpreter"`` (the
    reference)."""

    def __init__(self, backend="jit", graph=None, threads=None):
        self.backend = backend
        self.threads = threads
        self._graph = graph
        self._native = None
        self._made_with = None
        self._roots = []          # every op id a computation of this transformer needs
        self._computations = weakref.WeakSet()

    def _current_graph(self):
        return self._graph if self._graph is not None else _graph()

    def _native_for(self, nodes, g=None):
        """The native transformer over the part of graph ``g`` that this transformer's
        computations and ``nodes`` need: the current one if it has them all; else a new one,
        the values of variables carried over and every earlier computation compiled again on
        it, so all of them keep sharing one state."""
        g = self._current_graph() if g is None else g
        if self._native is not None and self._made_with is g and all(
                self._native.has(n) for n in nodes):
            return self._native
        old, old_graph = self._native, self._made_with
        roots = list(dict.fromkeys((self._roots if old_graph is g else []) + list(nodes)))
        native = _weft.Transformer(g, roots, self.backend, self.threads)
        if old is not None and old_graph is g:
            for node in old.state_ops():
                if native.has(node):
                    native.set_value(node, old.value_of(node))
            for comp in list(self._computations):
                comp._native = native.computation(comp._outputs,
                                                  [p._id for p in comp._parameters])
        else:
            self._computations = weakref.WeakSet()
        self._native, self._made_with, self._roots = native, g, roots
        return native

    def computation(self, results, *parameters):
        """The computation of ``results`` (an op, or a list or tuple of ops — ``sequential``
        included) given the placeholders ``parameters``: a callable returning the value of
        ``results`` (a tuple for a list or tuple)."""
        from . import TensorOp, _Sequential
        single = not isinstance(results, (list, tuple))
        items = [results] if single else list(results)
        outputs, slots, ops = [], [], []

        def flat(r):
            return [o for x in r.ops for o in flat(x)] if isinstance(r, _Sequential) else [r]

        for r in items:
            if isinstance(r, _Sequential):
                nodes = r.nodes()
                value = r.value._id
            elif isinstance(r, TensorOp):
                nodes, value = [r._id], r._id
            else:
                raise GraphError(f"computation: not an op: {r!r}")
            ops.extend(flat(r))
            for n in nodes:
                if n not in outputs:
                    outputs.append(n)
            slots.append(outputs.index(value))
        params = []
        for p in parameters:
            if not isinstance(p, TensorOp) or p.kind != "placeholder":
                raise GraphError(f"computation: {p!r} is not a placeholder")
            params.append(p)
        # Node ids mean something only in their own graph: ops of another graph (made before
        # reset_default_graph) would silently name other ops of this one.
        graphs = {id(o._graph): o._graph for o in ops + params}
        if len(graphs) > 1:
            raise GraphError("computation: the ops belong to different graphs (some were made "
                             "before ng.reset_default_graph())")
        (graph,) = graphs.values()
        if self._graph is not None and graph is not self._graph:
            raise GraphError("computation: the ops do not belong to this transformer's graph")
        native = self._native_for(outputs + [p._id for p in params], graph)
        compiled = native.computation(outputs, [p._id for p in params])
        comp = Computation(self, compiled, outputs, params, ("one" if single else "many", slots))
        self._computations.add(comp)
        return comp

    def value_of(self, op):
        """The current value of a variable or persistent tensor."""
        if self._native is None:
            raise GraphError("the transformer has made no computation yet")
        self._check_graph(op)
        return self._native.value_of(op._id)

    def _check_graph(self, op):
        if op._graph is not self._made_with:
            raise GraphError(f"{op!r} does not belong to the graph this transformer compiled "
                             "(made before ng.reset_default_graph()?)")

    def set_value(self, op, value):
        """Sets a variable's or persistent tensor's value (an array in its axes' order)."""
        if self._native is None:
            self._native_for([op._id], op._graph)
        self._check_graph(op)
        self._native.set_value(op._id, np.ascontiguousarray(value, dtype=op.dtype))

    def close(self):
        """Releases the compiled code (nGraph's ``close``); the transformer can compile again."""
        self._native = None
        self._made_with = None
        self._roots = []
        self._computations = weakref.WeakSet()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def make_transformer(backend="jit", threads=None):
    """A transformer over the module-level graph (nGraph's ``make_transformer``): ``backend``
    ``"jit"`` (fused native kernels), ``"unfused"`` (one kernel per op) or ``"interpreter"``
    (the reference); ``threads``, the JIT's thread count (default: the machine's cores)."""
    return Transformer(backend, threads=threads)


def bench(results, parameters, inputs, runs=10, warmup=2, backends=("jit", "unfused"),
          graph=None):
    """Times whole calls of the computation of ``results`` given ``parameters`` on ``inputs``
    on each backend, interleaved (each round calls every backend once, so a slow spell of a
    shared machine hits them alike), after ``warmup`` untimed rounds: ``{backend: {"median_ms",
    "min_ms", "max_ms"}}`` — the Python counterpart of ``weft bench`` (fused against unfused)."""
    import statistics
    import time
    comps = {b: Transformer(b, graph=graph).computation(results, *parameters) for b in backends}
    times = {b: [] for b in backends}
    for r in range(warmup + runs):
        for b, comp in comps.items():
            start = time.perf_counter()
            comp(*inputs)
            if r >= warmup:
                times[b].append((time.perf_counter() - start) * 1e3)
    return {b: {"median_ms": statistics.median(t), "min_ms": min(t), "max_ms": max(t)}
            for b, t in times.items()}


class LoadedGraph:
    """A graph read from a ``.weft`` program: its ops by name (``graph["x"]``), its
    placeholders and outputs, and ``computation()`` of its outputs."""

    def __init__(self, native):
        self._native = native

    def __getitem__(self, name):
        from . import TensorOp
        node = self._native.find(name)
        if node is None:
            raise GraphError(f"no op named `{name}`")
        return TensorOp(node, self._native)

    @property
    def placeholders(self):
        from . import TensorOp
        return [TensorOp(n, self._native) for n in self._native.placeholders()]

    @property
    def outputs(self):
        from . import TensorOp
        return [TensorOp(n, self._native) for n in self._native.outputs()]

    def text(self):
        """The program in weft's text form, as parsed."""
        return self._native.text()

    def computation(self, backend="jit", threads=None):
        """The computation of the program's outputs given its placeholders, in declaration
        order: ``comp(*arrays)`` returns a tuple of the outputs."""
        return Transformer(backend, graph=self._native, threads=threads).computation(
            self.outputs, *self.placeholders)

    def bench(self, inputs, **kwargs):
        """``weft.bench`` of the program's outputs given its placeholders."""
        return bench(self.outputs, self.placeholders, inputs, graph=self._native, **kwargs)


def load(path):
    """The graph of a ``.weft`` program file (errors give file:line:col)."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    return LoadedGraph(_weft.parse(source, str(path)))
