"""Transformers: compile ops into computations and call them (nGraph's ``ngraph.transformers``).

``make_transformer()`` gives a transformer; ``transformer.computation(results, *parameters)``
compiles the ops ``results`` needs given the placeholders ``parameters`` (the GIL released
while it compiles) and returns a callable. Computations of one transformer share its variables
and persistent tensors.

A transformer compiles the part of the graph its computations reach; when a later computation
needs ops it does not hold, it takes the graph again, carries the values of its variables over
and compiles its earlier computations again, so all of them keep sharing one state.
"""

import builtins
import numbers
import weakref

import numpy as np

from . import _weft
from .errors import CallError, CompileError, DTypeError, GraphError


def _graph():
    from . import _graph as g
    return g


_BACKENDS = {"jit": "jit", "cpu": "jit", "unfused": "unfused", "jit-unfused": "unfused",
             "interpreter": "interpreter", "interp": "interpreter"}


def _backend(backend):
    """weft's name of ``backend``, or a ValueError naming the choices."""
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string, not {backend!r}")
    if backend not in _BACKENDS:
        raise ValueError(f"no backend `{backend}`: weft has \"jit\" (also \"cpu\"), "
                         "\"unfused\" and \"interpreter\"")
    return _BACKENDS[backend]


def _threads(threads):
    """``threads`` checked: None (the machine's cores) or a whole number >= 1."""
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral):
        raise TypeError(f"threads must be a whole number or None, not {threads!r}")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, not {threads}")
    return int(threads)


class _Segment:
    """One native computation of a ``Computation``: the ops of a ``sequential`` between two
    points where a later op reads state an earlier ``assign`` set (``_plan``)."""

    __slots__ = ("outputs", "cuts", "native")

    def __init__(self, outputs, cuts):
        self.outputs = outputs    # graph op ids it returns, in order
        self.cuts = cuts          # [(placeholder op id, (segment, output position))]
        self.native = None


def _flatten(results):
    """``(entries, shape)``: ``entries`` the ops in order, each ``(op id, in_sequential)``;
    ``shape`` how to give values back: ``("one"|"many", [op id per value])``."""
    from . import TensorOp, _Sequential
    single = not isinstance(results, (list, tuple))
    items = [results] if single else list(results)
    entries, values = [], []

    def ops_of(seq):
        out = []
        for o in seq.ops:
            out.extend(ops_of(o) if isinstance(o, _Sequential) else [o])
        return out

    for r in items:
        if isinstance(r, _Sequential):
            entries.extend((o, True) for o in ops_of(r))
            values.append(r.value)
        elif isinstance(r, TensorOp):
            entries.append((r, False))
            values.append(r)
        else:
            raise GraphError(f"computation: not an op: {r!r}")
    return entries, ("one" if single else "many", values)


class _Planner:
    """Splits a computation into segments so that it runs as nGraph ran ``sequential``: each
    op once, in order; an op listed after an ``assign`` (and not needed by it) reads the
    assigned value; an op computed before keeps the value it had then (docs/python.md,
    "sequential").

    Ops go into the current segment until one of them would read a variable or persistent
    tensor an ``assign`` of that segment sets (or set one twice): then a new segment starts,
    which runs after the first's assigns commit. An op a later segment reads that an earlier
    one computed is passed to it as an input (a placeholder standing for it), never computed
    again. Ops outside any ``sequential`` read the state at the call's start (the first
    segment), unless they read a value a later segment computes."""

    def __init__(self, graph):
        self.graph = graph
        self.operands = graph.operands()
        self.where = {}          # op id -> the segment that computes it
        self.outputs = [[]]      # per segment, the op ids it returns
        self.assigned = [set()]  # per segment, the state ops its assigns set
        self.leaf_where = {}     # stored tensor -> the segment whose read of it is the value
        self._targets = {}

    def target(self, n):
        if n not in self._targets:
            self._targets[n] = self.graph.assign_target(n)
        return self._targets[n]

    def new_ops(self, op):
        """The ops ``op`` needs that no segment computes yet (``op`` included), and the
        segments of the computed ones it reads, and the stored tensors it reads."""
        new, leaves, reads, stack = set(), set(), set(), [op]
        while stack:
            n = stack.pop()
            if n in self.where:
                reads.add(self.where[n])
            elif not self.operands[n]:
                leaves.add(n)
            elif n not in new:
                new.add(n)
                stack.extend(self.operands[n])
        return new, leaves, reads

    def place(self, op, in_sequential):
        """Puts ``op`` (and what it needs) into a segment, unless one computes it already."""
        if not self.operands[op]:
            if in_sequential:   # a stored tensor read here: after the assigns before it
                seg = len(self.outputs) - 1
                if op in self.assigned[seg]:
                    self.outputs.append([])
                    self.assigned.append(set())
                    seg += 1
                self.leaf_where[op] = seg
                if op not in self.outputs[seg]:
                    self.outputs[seg].append(op)
            return
        if op in self.where:    # computed already: its value is that segment's output
            if op not in self.outputs[self.where[op]]:
                self.outputs[self.where[op]].append(op)
            return
        new, leaves, reads = self.new_ops(op)
        targets = {t for t in (self.target(n) for n in new) if t is not None}
        if in_sequential:
            seg = len(self.outputs) - 1
            if leaves & self.assigned[seg] or targets & self.assigned[seg]:
                self.outputs.append([])
                self.assigned.append(set())
                seg += 1
        else:
            seg = max(reads, default=0)
        for n in new:
            self.where[n] = seg
        self.assigned[seg] |= targets
        self.outputs[seg].append(op)

    def add_cut_sources(self):
        """Each segment's outputs extended by the ops later segments read from it (last
        segment first, so a source a later one adds is seen when its own segment's turn
        comes)."""
        for j in range(len(self.outputs) - 1, 0, -1):
            for n in self.boundary(j):
                if n not in self.outputs[self.where[n]]:
                    self.outputs[self.where[n]].append(n)

    def boundary(self, j):
        """The ops segment ``j`` reads from earlier segments, in a fixed order."""
        found, seen, stack = [], set(), list(self.outputs[j])
        while stack:
            n = stack.pop()
            if n in seen or not self.operands[n]:
                continue
            seen.add(n)
            if self.where[n] < j:
                found.append(n)
            else:
                stack.extend(self.operands[n])
        return sorted(found)

    def reached(self):
        """Every op some segment's outputs reach (stored tensors included)."""
        return set(self.graph.ancestors([o for out in self.outputs for o in out]))

    def build(self, fresh_name):
        """The segments, their outputs rewritten to read their cuts' placeholders."""
        positions = [{n: k for k, n in enumerate(out)} for out in self.outputs]
        segments = []
        for j, outs in enumerate(self.outputs):
            cuts, stand_in = [], {}
            for n in self.boundary(j):
                p = self.graph.placeholder(fresh_name(), self.graph.axes_of(n),
                                           self.graph.dtype_of(n))
                stand_in[n] = p
                cuts.append((p, (self.where[n], positions[self.where[n]][n])))
            done = {}   # one memo a segment: an op its outputs share is copied once
            segments.append(_Segment([self.rewrite(o, stand_in, done) for o in outs], cuts))
        return segments

    def rewrite(self, op, stand_in, done):
        """``op`` reading ``stand_in``'s placeholders for the ops earlier segments computed:
        itself when it reads none of them, else a copy (iterative: graphs run to thousands of
        ops in a chain); ``done`` holds what the segment's other outputs rewrote."""
        stack = [op]
        while stack:
            n = stack[-1]
            if n in done:
                stack.pop()
                continue
            if not self.operands[n]:
                done[n] = n
            elif n in stand_in:
                done[n] = stand_in[n]
            else:
                todo = [m for m in self.operands[n] if m not in done]
                if todo:
                    stack.extend(todo)
                    continue
                new = [done[m] for m in self.operands[n]]
                done[n] = (n if new == list(self.operands[n])
                           else self.graph.clone_reading(n, new))
            stack.pop()
        return done[op]


class Computation:
    """A compiled computation: call it with one array per placeholder (C-contiguous arrays of
    the placeholder's dtype are read in place; others are converted by one documented copy, see
    ``__call__``). Returns the result's value, or a tuple of values when the results were given
    as a list or tuple. Calls release the GIL: Python threads may call one computation
    concurrently."""

    def __init__(self, transformer, segments, parameters, shape, label_checks):
        self._transformer = transformer
        self._segments = segments
        self._parameters = parameters    # placeholder ops
        self._shape = shape              # ("one"|"many", [(segment, output position)])
        self._label_checks = label_checks
        self._capacity = _weft.DEFAULT_BINDING_CAPACITY

    @property
    def parameters(self):
        return tuple(self._parameters)

    @property
    def binding_capacity(self):
        """How many bindings of call-time lengths (``make_axis(length=None)``) it keeps
        compiled; a new binding beyond them evicts the least recently used one, which
        compiles again when seen again (``compilations`` counts). Default
        ``DEFAULT_BINDING_CAPACITY`` (8); a loop over more batch sizes than this recompiles at
        every call unless it is raised."""
        return self._capacity

    @binding_capacity.setter
    def binding_capacity(self, capacity):
        if isinstance(capacity, bool) or not isinstance(capacity, numbers.Integral):
            raise TypeError(f"binding_capacity must be a whole number, not {capacity!r}")
        if capacity < 1:
            raise ValueError(f"binding_capacity must be at least 1, not {capacity}")
        self._capacity = int(capacity)
        for seg in self._segments:
            seg.native.set_binding_capacity(self._capacity)

    @property
    def compilations(self):
        """How many times it has compiled (once, or once per binding of call-time lengths
        first seen)."""
        return builtins.sum(seg.native.compilations for seg in self._segments)

    def _compile(self, native):
        """Its segments compiled on the native transformer ``native``."""
        params = [p._id for p in self._parameters]
        for seg in self._segments:
            seg.native = native.computation(seg.outputs, params + [c for c, _ in seg.cuts])
            if self._capacity != _weft.DEFAULT_BINDING_CAPACITY:
                seg.native.set_binding_capacity(self._capacity)

    def _inputs(self, args, kwargs):
        """The arrays in placeholder order, from positional and keyword arguments (the native
        call converts and checks them: see ``__call__``)."""
        if not kwargs:
            return list(args)
        by_name = {}
        for i, p in enumerate(self._parameters):
            by_name.setdefault(p.name, []).append(i)
        full = list(args) + [None] * (len(self._parameters) - len(args))
        for name, value in kwargs.items():
            if name not in by_name:
                raise CallError(f"`{name}` is not a placeholder of the computation "
                                f"(its placeholders: {', '.join(by_name)})")
            if len(by_name[name]) > 1:
                raise CallError(f"two placeholders of the computation are named `{name}`: "
                                "give their inputs by position")
            if full[by_name[name][0]] is not None:
                raise CallError(f"placeholder `{name}` given twice")
            full[by_name[name][0]] = value
        for p, a in zip(self._parameters, full):
            if a is None:
                raise CallError(f"no value given for placeholder `{p.name}`")
        return full

    def _check_labels(self, inputs):
        for i, length, what in self._label_checks:
            labels = np.asarray(inputs[i])
            if labels.size and labels.dtype.kind in "iu":
                low, high = labels.min(), labels.max()
                if low < 0 or high >= length:
                    bad = low if low < 0 else high
                    raise CallError(f"one_hot: input `{self._parameters[i].name}` holds the "
                                    f"label {bad}, outside 0..{length - 1} (axis {what})")

    def __call__(self, *args, out=None, **kwargs):
        """Runs the computation. Inputs: one array per placeholder, positionally in the order
        given to ``computation`` or by placeholder name. A non-contiguous array is copied once
        into a contiguous one; an array of another dtype than its placeholder's raises
        ``DTypeError``; Python numbers and lists are converted to the placeholder's dtype.
        ``out``: arrays to write the values into (one per value), returned."""
        if self._transformer._closed:
            raise CallError("the transformer of this computation was closed")
        inputs = self._inputs(args, kwargs)
        if self._label_checks:
            self._check_labels(inputs)
        kind, slots = self._shape
        if len(self._segments) == 1:
            return self._call_one(inputs, out, kind, slots)
        values = []
        for seg in self._segments:
            fed = inputs + [values[s][k] for _, (s, k) in seg.cuts]
            values.append(seg.native.call(fed))
        results = [values[s][k] for s, k in slots]
        if out is not None:
            outs = self._outs(out)
            for i, (target, value) in enumerate(zip(outs, results)):
                if not isinstance(target, np.ndarray) or target.shape != value.shape:
                    raise CallError(f"out[{i}] is not an array of the value's shape "
                                    f"{value.shape}")
                if target.dtype != value.dtype:
                    raise DTypeError(f"out[{i}] is {target.dtype}, the value {value.dtype}")
                np.copyto(target, value)
            return out
        return results[0] if kind == "one" else tuple(results)

    def _outs(self, out):
        outs = [out] if isinstance(out, np.ndarray) else list(out)
        if len(outs) != len(self._shape[1]):
            raise CallError(f"out: {len(outs)} arrays for {len(self._shape[1])} values")
        return outs

    def _call_one(self, inputs, out, kind, slots):
        native = self._segments[0].native
        if out is not None:
            full = [None] * len(self._segments[0].outputs)  # None: an output not asked for
            for (_, k), array in zip(slots, self._outs(out)):
                full[k] = array
            native.call_into(inputs, full)
            return out
        values = native.call(inputs)
        if kind == "one":
            return values[slots[0][1]]
        return tuple(values[k] for _, k in slots)

    def _each_segment(self, what, own):
        """Per segment, ``own(its native computation)`` — read from the computation itself —
        or, where that is ``None`` (a computation the JIT did not compile: the interpreter),
        ``what(transformer, outputs, placeholders)`` of a JIT compile of it."""
        params = [p._id for p in self._parameters]
        native = self._transformer._live()
        results = []
        for seg in self._segments:
            mine = own(seg.native)
            if mine is None:
                mine = what(native, seg.outputs, params + [c for c, _ in seg.cuts])
            results.append(mine)
        return results

    def dump(self, directory=None):
        """Every IR stage of this computation (``weft compile --dump-dir``): the graph after
        each pass, fusion's groups, kernels, loop IR, Cranelift IR and machine code, as
        ``{file name: text}`` in pipeline order; written into ``directory`` when given. A
        computation a ``sequential`` splits into segments has each segment's files under
        ``segment-<k>/``."""
        per = self._each_segment(lambda n, o, p: n.dumps(o, p), lambda c: c.dumps())
        files = {}
        for k, seg_files in enumerate(per):
            prefix = "" if len(per) == 1 else f"segment-{k}/"
            for name, _stage, text in seg_files:
                files[prefix + name] = text
        if directory is not None:
            import pathlib
            root = pathlib.Path(directory)
            for name, text in files.items():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_text(text, encoding="utf-8")
        return files

    def plan(self):
        """The program the runtime runs for this computation, as text (``weft compile
        --dump-dir``'s ``program`` stage): every storage a call's workspace allocates, every
        kernel with its argument storages, the steps in order, and how each input, output,
        variable read and assign moves (``in place`` or ``copy (why)``); read from the
        computation itself, per segment where a ``sequential`` splits it; ``None`` for a
        computation the JIT did not compile (the interpreter)."""
        per = [seg.native.plan() for seg in self._segments]
        if any(p is None for p in per):
            return None
        if len(per) == 1:
            return per[0]
        return "\n".join(f"== segment {k} of {len(per)} ==\n{text}"
                         for k, text in enumerate(per))

    def explain(self):
        """What the compiler made of this computation (``weft explain``): first the machine
        it compiled for (``# target: ...``: ISA level, f32 lanes, caches, model), then the
        materialised tensors and why, fusion's cost model, and each kernel's loops (which run
        as assembled leaf loops at full width, which on native routines, which on Cranelift's
        4-lane code and, for those, the one reason: ``not an assembled leaf loop: ...``), per
        segment where a ``sequential`` splits it."""
        per = self._each_segment(lambda n, o, p: n.explain(o, p), lambda c: c.explain())
        if len(per) == 1:
            return per[0]
        return "\n".join(f"== segment {k} of {len(per)} (runs after the assigns of the ones "
                          f"before commit) ==\n{text}" for k, text in enumerate(per))


class Transformer:
    """Compiles computations over the module-level graph; ``backend``: ``"jit"`` (fused native
    kernels, the default; ``"cpu"`` is nGraph's name for it), ``"unfused"`` (one kernel per op)
    or ``"interpreter"`` (the reference); ``threads``: the JIT's thread count (None: the
    machine's cores). Both are checked here."""

    def __init__(self, backend="jit", graph=None, threads=None):
        self.backend = _backend(backend)
        self.threads = _threads(threads)
        if self.backend == "interpreter" and self.threads is not None:
            raise ValueError("threads: the interpreter runs on one thread")
        self._graph = graph
        self._native = None
        self._made_with = None
        self._roots = []          # every op id a computation of this transformer needs
        self._computations = weakref.WeakSet()
        self._closed = False

    def _current_graph(self):
        return self._graph if self._graph is not None else _graph()

    def _live(self):
        if self._closed:
            raise CompileError("this transformer was closed")
        return self._native

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
                comp._compile(native)
        else:
            self._computations = weakref.WeakSet()
        self._native, self._made_with, self._roots = native, g, roots
        return native

    def computation(self, results, *parameters):
        """The computation of ``results`` (an op, or a list or tuple of ops — ``sequential``
        included) given the placeholders ``parameters``: a callable returning the value of
        ``results`` (a tuple for a list or tuple)."""
        from . import TensorOp, _fresh
        if self._closed:
            raise CompileError("this transformer was closed: make a new one")
        entries, (kind, values) = _flatten(results)
        params = []
        for p in parameters:
            if not isinstance(p, TensorOp) or p.kind != "placeholder":
                raise GraphError(f"computation: {p!r} is not a placeholder")
            params.append(p)
        # Node ids mean something only in their own graph: ops of another graph (made before
        # reset_default_graph) would silently name other ops of this one.
        ops = [o for o, _ in entries] + params
        graphs = {id(o._graph): o._graph for o in ops}
        if len(graphs) > 1:
            raise GraphError("computation: the ops belong to different graphs (some were made "
                             "before ng.reset_default_graph())")
        (graph,) = graphs.values()
        if self._graph is not None and graph is not self._graph:
            raise GraphError("computation: the ops do not belong to this transformer's graph")
        planner = _Planner(graph)
        for op, in_sequential in entries:
            if in_sequential:
                planner.place(op._id, True)
        for op, in_sequential in entries:
            if not in_sequential:
                planner.place(op._id, False)
        reached = planner.reached()
        label_checks = self._checks(graph, params, reached, planner.operands)
        planner.add_cut_sources()
        segments = planner.build(lambda: _fresh("sequential_value", graph.has_name))
        positions = [{n: k for k, n in enumerate(out)} for out in planner.outputs]
        slots = []
        for v in values:
            if v._id in planner.where or v._id in planner.leaf_where:
                seg = planner.where.get(v._id, planner.leaf_where.get(v._id))
                slots.append((seg, positions[seg][v._id]))
            else:   # a stored tensor or placeholder returned as it is: the first segment's
                if v._id not in positions[0]:
                    planner.outputs[0].append(v._id)
                    segments[0].outputs.append(v._id)
                    positions[0][v._id] = len(planner.outputs[0]) - 1
                slots.append((0, positions[0][v._id]))
        needed = [n for seg in segments for n in seg.outputs + [c for c, _ in seg.cuts]]
        native = self._native_for(needed + [p._id for p in params], graph)
        comp = Computation(self, segments, params, (kind, slots), label_checks)
        comp._compile(native)
        self._computations.add(comp)
        return comp

    @staticmethod
    def _checks(graph, params, reached, operands):
        """A ValueError for a placeholder the results need that is not among ``params``; the
        one_hot label checks of the inputs (``operands``: the planner's view of the edges)."""
        from . import TensorOp, _one_hots
        given = {p._id for p in params}
        for n in sorted(reached):
            if not operands[n] and n not in given and graph.kind_of(n) == "placeholder":
                missing = TensorOp(n, graph)
                raise GraphError(f"computation: the results need placeholder "
                                 f"`{missing.name or n}`, which is not among the placeholders "
                                 f"given ({', '.join(str(p.name) for p in params) or 'none'})")
        checks = []
        if graph is _graph():
            for hot, (labels, axis) in _one_hots.items():
                if hot in reached and labels in given and axis.length is not None:
                    i = [p._id for p in params].index(labels)
                    checks.append((i, axis.length, f"`{axis.name}`"))
        return checks

    def value_of(self, op):
        """The current value of a variable or persistent tensor."""
        if self._live() is None:
            raise GraphError("the transformer has made no computation yet")
        self._check_graph(op)
        return self._native.value_of(op._id)

    def _check_graph(self, op):
        if op._graph is not self._made_with:
            raise GraphError(f"{op!r} does not belong to the graph this transformer compiled "
                             "(made before ng.reset_default_graph()?)")

    def set_value(self, op, value):
        """Sets a variable's or persistent tensor's value: an array of its dtype in its axes'
        order (an array of another dtype is refused, as a call's inputs are), or a number or
        list, converted."""
        if self._live() is None:
            self._native_for([op._id], op._graph)
        self._check_graph(op)
        if isinstance(value, np.ndarray) and value.dtype != op.dtype:
            raise DTypeError(f"set_value: {op!r} is {op.dtype} but the value is a "
                             f"{value.dtype} array (weft never converts behind your back: "
                             f".astype({op.dtype.name}) it)")
        self._native.set_value(op._id, np.ascontiguousarray(value, dtype=op.dtype))

    def close(self):
        """Releases the compiled code (nGraph's ``close``): its computations and the
        transformer itself refuse to run or compile afterwards."""
        self._native = None
        self._made_with = None
        self._roots = []
        for comp in list(self._computations):
            for seg in comp._segments:
                seg.native = None
        self._computations = weakref.WeakSet()
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_factory = None


def make_transformer(backend=None, threads=None):
    """A transformer over the module-level graph (nGraph's ``make_transformer``): ``backend``
    ``"jit"`` (fused native kernels; nGraph's ``"cpu"``), ``"unfused"`` (one kernel per op) or
    ``"interpreter"`` (the reference); ``threads``, the JIT's thread count (default: the
    machine's cores). Without arguments, the factory ``set_transformer_factory`` set, if any."""
    if backend is None and threads is None and _factory is not None:
        return _factory()
    return Transformer("jit" if backend is None else backend, threads=threads)


def transformer_choices():
    """The backend names ``make_transformer`` and ``make_transformer_factory`` take."""
    return sorted(_BACKENDS)


def make_transformer_factory(name="jit", **kwargs):
    """A function of no arguments that makes a new transformer of backend ``name`` with
    ``kwargs`` (``threads=``) each time it is called (nGraph's ``make_transformer_factory``;
    an unknown name is a ValueError here, where nGraph waited for the call)."""
    backend = _backend(name)
    unknown = set(kwargs) - {"threads"}
    if unknown:
        raise TypeError(f"make_transformer_factory: no argument {sorted(unknown)[0]!r} "
                        "(threads=)")
    threads = _threads(kwargs.get("threads"))

    def factory():
        return Transformer(backend, threads=threads)
    factory.name = name
    return factory


def set_transformer_factory(factory):
    """Makes ``make_transformer()`` (without arguments) call ``factory`` (nGraph's
    ``set_transformer_factory``); None restores the default, the JIT."""
    global _factory
    if factory is not None and not callable(factory):
        raise TypeError(f"set_transformer_factory: {factory!r} is not callable")
    _factory = factory


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
