"""weft for Python: nGraph-python's API over weft's compiler.

Code written for nGraph-python runs with ``import weft as ng`` (and ``import weft.transformers
as ngt``)::

    import numpy as np
    import weft as ng

    H = ng.make_axis(length=2, name='H')
    W = ng.make_axis(length=3, name='W')
    x = ng.placeholder([H, W])
    y = ng.placeholder([W])
    z = ng.sum(x * y, reduction_axes=[W])

    comp = ng.make_transformer().computation(z, x, y)
    comp(np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32))   # -> array([3., 3.])

Every op is added to one module-level graph, as in nGraph; a transformer compiles the ops its
computations need into fused native kernels. Where weft's rules differ from nGraph-python's
they win, and docs/python.md says where: axes have an identity (every ``make_axis`` call makes
a new axis; its name is a label, so two models may both call their batch axis ``N``), dual axes
are weft's (``A + 1`` is ``A*``), and outside a ``sequential`` every op of a call reads the
values variables had when the call began (assignments take effect when it ends); a
``sequential`` runs its ops in order, as nGraph's did.
"""

import itertools
import numbers
import warnings

import numpy as np

from . import _weft
from .errors import (AxisError, AxisNameWarning, CallError, CompileError, DTypeError, GraphError,
                     ParseError, WeftError)
# weft.onnx: ONNX models imported, compiled and called (docs/onnx.md); the onnx package is
# needed only by its Backend.
from . import onnx

__version__ = _weft.__version__

__all__ = [
    "Axis", "Axes", "TensorOp", "Computation", "Transformer", "WeftError", "GraphError",
    "AxisError", "DTypeError", "CompileError", "CallError", "ParseError", "AxisNameWarning",
    "make_axis", "make_axes", "placeholder", "constant", "variable", "persistent_tensor",
    "negative", "absolute", "exp", "log", "safelog", "sqrt", "square", "reciprocal", "sign",
    "tanh", "sigmoid", "sin", "cos", "relu", "add", "subtract", "multiply", "divide",
    "maximum", "minimum", "power", "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "select", "cast", "sum", "prod", "max", "min", "mean", "argmax", "argmin",
    "dot", "broadcast", "axes_with_order", "cast_axes", "transpose", "tensor_slice",
    "slice_along_axis", "pad", "flatten", "unflatten", "flatten_at", "concat_along_axis",
    "expand_dims", "convolution", "pooling", "make_axis_role", "roles", "AxisRole", "softmax", "cross_entropy_multi", "cross_entropy_binary", "one_hot",
    "deriv", "assign", "sequential", "make_transformer", "load", "text", "reset_default_graph",
    "bench", "digits", "host_copy_bytes", "variance", "squared_L2", "L2_norm", "L1_norm",
    "stack", "stop_gradient", "tensor_size", "batch_size", "value_of", "as_op", "as_ops",
]

Axis = _weft.Axis

_graph = _weft.Graph()
_names = itertools.count()
# The ops of the module-level graph made by stop_gradient: grad lets no gradient through them.
_stopped = set()
# one_hot ops of the module-level graph: op id -> (labels op id, the hot axis), so a
# computation can check labels it takes as inputs (Computation._label_checks).
_one_hots = {}


def reset_default_graph():
    """Start a new, empty module-level graph (ops and axes made before belong to the old one;
    transformers made before keep working on it). Nothing needs it: names are labels, so a
    cell or a function run again makes new axes and ops beside the old ones."""
    global _graph, _stopped, _one_hots
    _graph = _weft.Graph()
    _stopped = set()
    _one_hots = {}


def _fresh(prefix, taken):
    while True:
        name = f"{prefix}_{next(_names)}"
        if not taken(name):
            return name


# ---- dtypes --------------------------------------------------------------------------------

_DTYPES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64",
           np.dtype(np.int32): "int32", np.dtype(np.int64): "int64", np.dtype(np.bool_): "bool"}


def _dtype_name(dtype):
    try:
        d = np.dtype(dtype)
    except TypeError as e:
        raise DTypeError(f"not a dtype: {dtype!r}") from e
    if d not in _DTYPES:
        raise DTypeError(f"weft has no dtype {d} (float32, float64, int32, int64, bool)")
    return _DTYPES[d]


# ---- axes ----------------------------------------------------------------------------------

class Axes(tuple):
    """An ordered tuple of distinct axes (nGraph's ``Axes``): ``+`` concatenates, ``-`` removes,
    ``&`` intersects, ``|`` unites (keeping the left operand's order)."""

    def __new__(cls, axes=()):
        if isinstance(axes, Axis):
            axes = (axes,)
        axes = tuple(axes)
        for a in axes:
            if not isinstance(a, Axis):
                raise AxisError(f"not an axis: {a!r}")
        if len(set(axes)) != len(axes):
            raise AxisError(f"an axis occurs more than once in {list(axes)}")
        return super().__new__(cls, axes)

    @property
    def lengths(self):
        """Each axis's length (None where unbound)."""
        return tuple(a.length for a in self)

    @property
    def names(self):
        return tuple(a.name for a in self)

    @property
    def size(self):
        """The number of elements: the product of the lengths (1 for no axes)."""
        unbound = [a.name for a in self if a.length is None]
        if unbound:
            raise AxisError(f"Axes.size: axis `{unbound[0]}` has no length yet (give it one "
                            f"with `{unbound[0]}.length = n`, or let a call's inputs give it)")
        size = 1
        for a in self:
            size *= a.length
        return size

    def __add__(self, other):
        return Axes(tuple(self) + tuple(Axes(other)))

    def __sub__(self, other):
        other = set(Axes(other))
        return Axes(a for a in self if a not in other)

    def __and__(self, other):
        other = set(Axes(other))
        return Axes(a for a in self if a in other)

    def __or__(self, other):
        return self + (Axes(other) - self)

    def is_sub_set(self, other):
        """Whether every axis of these is in ``other``."""
        return set(self) <= set(Axes(other))

    def is_super_set(self, other):
        """Whether every axis of ``other`` is in these."""
        return set(self) >= set(Axes(other))

    def is_equal_set(self, other):
        """Whether these and ``other`` are the same axes in any order."""
        return set(self) == set(Axes(other))

    def is_not_equal_set(self, other):
        """Whether these and ``other`` differ as sets."""
        return not self.is_equal_set(other)

    def find_by_name(self, name):
        """The axes of these named ``name``."""
        return Axes(a for a in self if a.name == name)

    def _first_named(self, name):
        found = self.find_by_name(name)
        return found[0] if found else None

    def batch_axes(self):
        """The batch axes: those named ``N`` (nGraph's convention; empty when there is none,
        where nGraph gave None)."""
        return self.find_by_name("N")

    def batch_axis(self):
        """The batch axis (the first named ``N``), or None."""
        return self._first_named("N")

    def recurrent_axis(self):
        """The recurrent axis (the first named ``REC``), or None."""
        return self._first_named("REC")

    def _channels(self):
        return Axes(a for a in self if a.name == "C" or "Channel" in a.roles)

    def channel_axis(self):
        """The channel axis (the first named ``C`` or with the role ``Channel``: a
        convolution's output channels), or None."""
        found = self._channels()
        return found[0] if found else None

    def sample_axes(self):
        """Every axis but the batch axes."""
        return self - self.batch_axes()

    def feature_axes(self):
        """Every axis but the batch and recurrent axes."""
        return self.sample_axes() - self.find_by_name("REC")

    def spatial_axes(self):
        """The feature axes but the channel axes."""
        return self.feature_axes() - self._channels()

    def __repr__(self):
        return f"Axes({', '.join(repr(a) for a in self)})"


class AxisRole(str):
    """An axis role (nGraph's ``make_axis_role``): a name. Convolution and pooling pair axes by
    the roles of ``weft.roles`` (Height, Width, Depth, Channel, Channelout, Time); other roles
    are the user's own."""


class roles:  # noqa: N801 — a namespace, as nGraph's neon front end had
    """The roles convolution and pooling know."""
    Height = AxisRole("Height")
    Width = AxisRole("Width")
    Depth = AxisRole("Depth")
    Channel = AxisRole("Channel")
    Channelout = AxisRole("Channelout")
    Time = AxisRole("Time")


def make_axis_role(name=None, docstring=None):
    """A role for axes: one of ``weft.roles`` by its name, or a new role of the user's own."""
    return AxisRole(name if name is not None else _fresh("role", lambda _: False))


def make_axis(length=None, name=None, roles=None, docstring=None):
    """A new axis: every call makes one, distinct from every other axis whatever its name
    (the name is a label, for printouts, ``find_by_name`` and the batch axis ``N``; two axes
    labelled alike show as ``N@0``, ``N@3`` where both appear). Keep the object to use the axis
    again. ``length`` None leaves it unbound: the inputs of each call give it. ``roles``: how
    convolution and pooling pair it (``weft.roles``). ``docstring`` is accepted for nGraph code
    and not used."""
    roles = [str(r) for r in (roles or [])]
    if length is not None:
        whole = not isinstance(length, bool) and (isinstance(length, numbers.Integral) or (
            isinstance(length, numbers.Real) and float(length).is_integer()))
        if not whole or length < 0:
            raise AxisError(f"axis `{name}`: the length {length!r} is not a whole number >= 0")
        length = int(length)
    if name is None:
        name = _fresh("axis", _graph.has_axis)
    elif not isinstance(name, str):
        raise TypeError(f"make_axis: the name must be a string, not {name!r}")
    return _graph.axis(name, length, roles)


def make_axes(axes=()):
    """Axes from a list of axes."""
    return Axes(axes)


# ---- tensors -------------------------------------------------------------------------------

class TensorOp:
    """An op of the graph: a tensor-valued node with axes and a dtype. Arithmetic operators
    build elementwise ops (operands paired by axis, broadcast by axis); Python numbers become
    scalar constants of the tensor's dtype."""

    __slots__ = ("_id", "_graph", "_label")
    __array_priority__ = 1000  # numpy scalars on the left defer to these operators

    def __init__(self, node, graph=None, label=None):
        self._id = node
        self._graph = _graph if graph is None else graph
        self._label = label

    @property
    def axes(self):
        return Axes(self._graph.axes_of(self._id))

    @property
    def dtype(self):
        return np.dtype(self._graph.dtype_of(self._id))

    @property
    def name(self):
        """The name given (``name=`` or ``named``), else the graph's (None when unnamed)."""
        return self._label if self._label is not None else self._graph.name_of(self._id)

    @name.setter
    def name(self, name):
        if not isinstance(name, str):
            raise TypeError(f"an op's name is a string, not {name!r}")
        if self._graph.name_of(self._id) != name:
            self._graph.set_name(self._id, _unique_name(name, self._graph))
        self._label = name

    def named(self, name):
        """Names the op (for error messages, dumps and calls by name); returns it. A name is
        a label: where another op has it, the graph's name gets a suffix (``x_2``)."""
        self.name = name
        return self

    def __getitem__(self, item):
        """A slice of the tensor, NumPy's way: one index or ``slice`` per axis in order
        (missing trailing ones take the whole axis; an index drops its axis)."""
        if not isinstance(item, tuple):
            item = (item,)
        if len(item) > len(self.axes):
            raise AxisError(f"{len(item)} indices for the {len(self.axes)} axes of {self!r}")
        return tensor_slice(self, item + (slice(None),) * (len(self.axes) - len(item)))

    @property
    def kind(self):
        return self._graph.kind_of(self._id)

    @property
    def T(self):
        return transpose(self)

    def __repr__(self):
        label = self.name or f"#{self._id}"
        return f"<{self.kind} {label}: {self.dtype} {list(self.axes)}>"

    def __add__(self, o): return add(self, o)
    def __radd__(self, o): return add(o, self)
    def __sub__(self, o): return subtract(self, o)
    def __rsub__(self, o): return subtract(o, self)
    def __mul__(self, o): return multiply(self, o)
    def __rmul__(self, o): return multiply(o, self)
    def __truediv__(self, o): return divide(self, o)
    def __rtruediv__(self, o): return divide(o, self)
    def __pow__(self, o): return power(self, o)
    def __rpow__(self, o): return power(o, self)
    def __neg__(self): return negative(self)
    def __abs__(self): return absolute(self)
    def __lt__(self, o): return less(self, o)
    def __le__(self, o): return less_equal(self, o)
    def __gt__(self, o): return greater(self, o)
    def __ge__(self, o): return greater_equal(self, o)
    __hash__ = object.__hash__


def _op(node):
    return TensorOp(node)


def _helper(f):
    """``f``, a function of several ops, with its errors naming it: a message about an op it
    made names the function the user called (``cross_entropy_multi: ...``)."""
    import functools

    @functools.wraps(f)
    def g(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except WeftError as e:
            if str(e).startswith(f"{f.__name__}:"):
                raise
            raise type(e)(f"{f.__name__}: {e}") from None
    return g


def _unique_name(label, graph=None):
    """``label``, or ``label_2``, ``label_3``, ... where the graph already has it: op names
    are labels (a notebook cell run again makes its ``x`` beside the old one)."""
    graph = _graph if graph is None else graph
    name, k = label, 1
    while graph.has_name(name):
        k += 1
        name = f"{label}_{k}"
    return name


def _as_op(x, like=None):
    """``x`` as an op of the default graph: ops pass through; numbers and arrays become
    constants (numbers of ``like``'s dtype, arrays of their own, as 0-d only)."""
    if isinstance(x, TensorOp):
        if x._graph is not _graph:
            raise GraphError(f"{x!r} belongs to another graph (made before reset_default_graph)")
        return x
    if isinstance(x, (numbers.Number, np.number, np.bool_)):
        if like is not None:
            dtype = like.dtype
            if (dtype.kind in "iu" and not isinstance(x, (bool, np.bool_))
                    and not float(x).is_integer()):
                raise DTypeError(f"{x!r} is not a value of {like!r}'s dtype {dtype} "
                                 "(weft never converts implicitly: use ng.cast)")
        elif isinstance(x, (bool, np.bool_)):
            dtype = np.bool_
        elif isinstance(x, numbers.Integral):
            dtype = np.int64
        else:
            dtype = np.float32
        return constant(x, dtype=dtype)
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return constant(x.item(), dtype=x.dtype if like is None else like.dtype)
    raise GraphError(f"not a tensor: {x!r} (give arrays axes with ng.constant(value, axes))")


def _pair(x, y):
    if isinstance(x, TensorOp):
        return _as_op(x), _as_op(y, like=x)
    y = _as_op(y)
    return _as_op(x, like=y), y


def _axes(axes):
    if axes is None:
        return None
    return list(Axes(axes))


def _init_value(value, axes, dtype, what):
    """A number, or a C-contiguous array of ``dtype`` shaped like ``axes``."""
    if isinstance(value, (numbers.Number, np.number, np.bool_)):
        return value
    array = np.ascontiguousarray(value, dtype=dtype)
    lengths = tuple(a.length for a in axes)
    if array.shape != lengths:
        raise AxisError(f"{what}: a value of shape {array.shape} for axes {list(axes)} "
                        f"of lengths {lengths}")
    return array


def _value_dtype(value, dtype, what):
    """The dtype of a tensor made from ``value``: ``dtype`` when given (an array of another
    dtype is refused: weft never converts behind your back), else the array's own, else
    float32 (numbers and lists have none to keep)."""
    own = value.dtype if isinstance(value, np.ndarray) else None
    if dtype is None:
        return own if own is not None and own in _DTYPES else np.dtype(np.float32)
    dtype = np.dtype(_dtype_name(dtype))
    if own is not None and own != dtype:
        raise DTypeError(f"{what}: the initial value is a {own} array but dtype={dtype} was "
                         f"given (convert it with .astype, or leave dtype out to keep {own})")
    return dtype


def _named(prefix, name):
    """A name for a new tensor: ``name`` made unique (a label), or a fresh one."""
    if name is None:
        return _fresh(prefix, _graph.has_name)
    if not isinstance(name, str):
        raise TypeError(f"a tensor's name is a string, not {name!r}")
    return _unique_name(name)


def _tensor(node, name):
    return TensorOp(node, label=name)


def placeholder(axes, dtype=np.float32, name=None, initial_value=None, scope=None,
                metadata=None):
    """An input: each call of a computation gives its value as a NumPy array in the order of
    ``axes`` (C-contiguous arrays of ``dtype`` are read in place). ``name`` labels it (calls
    take inputs by it); ``scope``, ``metadata`` and ``initial_value`` (deprecated in nGraph)
    are accepted for nGraph code and not used."""
    axes = Axes(axes)
    return _tensor(_graph.placeholder(_named("placeholder", name), list(axes),
                                      _dtype_name(dtype)), name)


def constant(const, axes=(), dtype=None, name=None, scope=None, metadata=None):
    """A constant: a number, or an array whose dimensions are ``axes`` in order. Its dtype is
    ``dtype``, else the array's, else float32."""
    axes = Axes(axes)
    dtype = _value_dtype(const, dtype, f"constant {name or ''}".strip())
    value = _init_value(const, axes, dtype, f"constant {name or ''}".strip())
    return _tensor(_graph.constant(name and _unique_name(name), list(axes), _DTYPES[dtype],
                                   value), name)


def variable(axes, dtype=None, name=None, initial_value=0.0, scope=None, metadata=None, **_):
    """A trainable value kept across calls and computations of one transformer, starting at
    ``initial_value`` (a number, an array in the order of ``axes``, or a callable of the
    lengths); ``assign`` updates it. Its dtype is ``dtype``, else the initial array's, else
    float32 (nGraph made every variable float32 unless told). ``scope`` and ``metadata`` are
    accepted for nGraph code and not used (weft's optimizers take their variables as a
    list)."""
    axes = Axes(axes)
    label = name
    name = _named("variable", name)
    if callable(initial_value):
        initial_value = initial_value(axes.lengths)
    dtype = _value_dtype(initial_value, dtype, f"variable {name}")
    value = _init_value(initial_value, axes, dtype, f"variable {name}")
    return _tensor(_graph.variable(name, list(axes), _DTYPES[dtype], value), label)


def persistent_tensor(axes, dtype=None, name=None, initial_value=None, scope=None,
                      metadata=None, **_):
    """A value kept across calls (an optimizer's velocity): zeros unless ``initial_value``.
    Its dtype as a variable's."""
    axes = Axes(axes)
    label = name
    name = _named("persistent", name)
    dtype = _value_dtype(initial_value, dtype, name)
    value = None if initial_value is None else _init_value(initial_value, axes, dtype, name)
    return _tensor(_graph.persistent_tensor(name, list(axes), _DTYPES[dtype], value), label)


# ---- elementwise ---------------------------------------------------------------------------

def _unary(op):
    def f(x, name=None):
        out = _op(_graph.unary(op, _as_op(x)._id))
        return out.named(name) if name else out
    f.__name__ = op
    f.__doc__ = f"Elementwise {op} (weft's `{op}`)."
    return f


negative, absolute, exp, log, sqrt, square, reciprocal, sign, tanh, sigmoid, sin, cos, relu = (
    _unary(op) for op in ("negative", "abs", "exp", "log", "sqrt", "square", "reciprocal",
                          "sign", "tanh", "sigmoid", "sin", "cos", "relu"))
absolute.__name__ = "absolute"


def _warn_same_labels(out, *operands):
    """An ``AxisNameWarning`` when ``out`` has two distinct axes of one label that no operand
    had alone: two axes made by separate ``make_axis`` calls with one name, paired by
    identity (an outer product) where nGraph would have paired them by name."""
    seen = {}
    for a in out.axes:
        key = (a.name, a.dual_degree)
        if key in seen:
            if any(a in o.axes and seen[key] in o.axes for o in operands):
                continue
            warnings.warn(
                f"{seen[key]!r} and {a!r} are different axes labelled `{a.name}` (made by two "
                f"make_axis calls); the result has both. If they are meant to be one axis, "
                f"make it once and use that object for both.", AxisNameWarning, stacklevel=3)
            return
        seen[key] = a


def _binary(op, native):
    def f(x, y, name=None):
        x, y = _pair(x, y)
        out = _op(native(op, x._id, y._id))
        _warn_same_labels(out, x, y)
        return out.named(name) if name else out
    f.__name__ = op
    f.__doc__ = (f"Elementwise {op} of two tensors, paired by axis: the result has the union "
                 "of their axes (each broadcast along the other's).")
    return f


add, subtract, multiply, divide, maximum, minimum, power = (
    _binary(op, lambda *a: _graph.binary(*a)) for op in
    ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power"))
equal, not_equal, less, less_equal, greater, greater_equal = (
    _binary(op, lambda *a: _graph.compare(*a)) for op in
    ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"))


def safelog(x, limit=-50.0):
    """log(x), with x first raised to at least exp(limit) (nGraph's safelog): finite at 0."""
    x = _as_op(x)
    return log(maximum(x, float(np.exp(limit))))


def select(cond, x, y):
    """Elementwise ``x`` where ``cond`` holds, else ``y``."""
    x, y = _pair(x, y)
    return _op(_graph.select(_as_op(cond)._id, x._id, y._id))


def cast(x, dtype):
    """``x`` converted to ``dtype``."""
    return _op(_graph.convert(_as_op(x)._id, _dtype_name(dtype)))


# ---- reductions ----------------------------------------------------------------------------

def _reduction_axes(x, reduction_axes, out_axes):
    if reduction_axes is not None:
        return Axes(reduction_axes)
    if out_axes is not None:
        return x.axes - Axes(out_axes)
    return x.axes.sample_axes()


def _reduce(op):
    def f(x, reduction_axes=None, out_axes=None, name=None):
        x = _as_op(x)
        axes = _reduction_axes(x, reduction_axes, out_axes)
        out = _op(_graph.reduce(op, x._id, list(axes), _axes(out_axes)))
        return out.named(name) if name else out
    f.__name__ = op
    f.__doc__ = (f"The {op} over ``reduction_axes`` (default: every axis but ``out_axes``, "
                 "or, with neither given, every axis but the batch axis ``N``); the result "
                 "has ``out_axes``'s order when given.")
    return f


sum, prod, max, min, mean, argmax, argmin = (  # noqa: A001 — nGraph's names
    _reduce(op) for op in ("sum", "prod", "max", "min", "mean", "argmax", "argmin"))


# ---- structure -----------------------------------------------------------------------------

def dot(x, y, name=None):
    """Contracts the axes ``x`` and ``y`` share (an axis of ``x`` meets its dual in ``y``
    where weft's pairing rules say so: docs/design.md)."""
    x, y = _pair(x, y)
    out = _op(_graph.dot(x._id, y._id))
    return out.named(name) if name else out


def broadcast(x, axes):
    """``x`` broadcast to ``axes`` (a superset of its axes, in that order)."""
    return _op(_graph.broadcast(_as_op(x)._id, _axes(axes)))


def axes_with_order(x, axes):
    """``x`` with its axes in the order ``axes`` gives (the same set)."""
    return _op(_graph.axes_with_order(_as_op(x)._id, _axes(axes)))


def cast_axes(x, axes):
    """``x`` with its axes renamed, position by position, to ``axes`` of the same lengths."""
    return _op(_graph.cast_axes(_as_op(x)._id, _axes(axes)))


def transpose(x):
    """``x`` with its axes reversed and each turned into its transpose (``A`` ↔ ``A*``)."""
    return _op(_graph.transpose(_as_op(x)._id))


def _slice_spec(s):
    if isinstance(s, slice):
        return (s.start, s.stop, s.step)
    if isinstance(s, (numbers.Integral, np.integer)):
        return int(s)
    raise GraphError(f"not a slice or an index: {s!r}")


def tensor_slice(x, slices, axes=None):
    """``x`` sliced: one index or ``slice`` per axis of ``x`` in order (nGraph's form); an
    index drops its axis, a slice leaves a derived axis in its place. Bounds outside the
    axis are errors (weft does not clamp)."""
    x = _as_op(x)
    if axes is not None:
        raise GraphError("tensor_slice: give the result's axes by cast_axes afterwards")
    if len(slices) != len(x.axes):
        raise AxisError(f"tensor_slice: {len(slices)} slices for the {len(x.axes)} axes of {x!r}")
    spec = [(a, _slice_spec(s)) for a, s in zip(x.axes, slices)
            if not (isinstance(s, slice) and s == slice(None))]
    return _op(_graph.slice(x._id, spec)) if spec else x


def slice_along_axis(x, axis, idx):
    """``x`` at index (or ``slice``) ``idx`` along ``axis``."""
    return _op(_graph.slice(_as_op(x)._id, [(axis, _slice_spec(idx))]))


def pad(x, paddings, axes=None):
    """``x`` padded with zeros: ``paddings`` one ``(before, after)`` pair (or one number for
    both) per axis of ``x`` in order."""
    x = _as_op(x)
    if len(paddings) != len(x.axes):
        raise AxisError(f"pad: {len(paddings)} paddings for the {len(x.axes)} axes of {x!r}")
    spec = []
    for a, p in zip(x.axes, paddings):
        before, after = (p, p) if isinstance(p, numbers.Integral) else p
        if before < 0 or after < 0:
            raise AxisError(f"pad: a negative padding {p!r} for axis `{a.name}` of {x!r}")
        if before or after:
            spec.append((a, int(before), int(after)))
    return _op(_graph.pad(x._id, spec)) if spec else x


def flatten(x, axes=None):
    """``x`` with ``axes`` (default: all of them; consecutive, the first major) merged into one
    derived axis."""
    x = _as_op(x)
    return _op(_graph.flatten(x._id, list(x.axes if axes is None else Axes(axes))))


def flatten_at(x, idx):
    """nGraph's ``flatten_at``: the axes before ``idx`` merged, and those from ``idx``."""
    x = _as_op(x)
    axes = list(x.axes)
    for group in (axes[idx:], axes[:idx]):
        if len(group) > 1:
            x = flatten(x, group)
    return x


def unflatten(x, axis=None):
    """``x`` with the derived ``axis`` (default: every derived axis) split back into the axes
    it merged."""
    x = _as_op(x)
    if axis is None:
        for a in x.axes:
            try:
                x = _op(_graph.unflatten(x._id, a))
            except GraphError:
                pass
        return x
    return _op(_graph.unflatten(x._id, axis))


def _axis_like(x, axis, what):
    """``axis`` if ``x`` has it, else the one axis of ``x`` labelled as it is (a slice or pad
    of it keeps its label, as nGraph matched axes by name)."""
    if axis in x.axes:
        return axis
    found = [a for a in x.axes if a.name == axis.name and a.dual_degree == axis.dual_degree]
    if len(found) != 1:
        raise AxisError(f"{what}: {x!r} has {'no' if not found else 'more than one'} axis "
                        f"labelled `{axis.name}`")
    return found[0]


def concat_along_axis(xs, axis):
    """The tensors ``xs`` joined along ``axis``: each has it, or one axis of its label (a
    slice or pad of it: ``concat_along_axis([x[0:2], x[3:5]], H)``); the result's axis is
    derived."""
    xs = [_as_op(x) for x in xs]
    return _op(_graph.concat([(x._id, _axis_like(x, axis, "concat_along_axis")) for x in xs]))


def stack(x_list, axis, pos=0):
    """The tensors of ``x_list`` (all of the first one's axes and dtype) stacked along the new
    ``axis`` (its length, the number of tensors), which lands at position ``pos`` of the
    result (``np.stack(xs, axis=pos)``)."""
    xs = [_as_op(x) for x in x_list]
    if not xs:
        raise GraphError("stack: no tensors")
    if axis.length != len(xs):
        raise AxisError(f"stack: axis `{axis.name}` has length {axis.length}, not the "
                        f"{len(xs)} tensors stacked")
    inner = xs[0].axes
    if not 0 <= int(pos) <= len(inner):
        raise AxisError(f"stack: position {pos} outside 0..{len(inner)}")
    parts = []
    for x in xs:
        one = make_axis(length=1, name=f"{axis.name}_part")
        parts.append((expand_dims(axes_with_order(x, inner), one, 0)._id, one))
    joined = _op(_graph.concat(parts))
    stacked = cast_axes(joined, [axis] + list(inner))
    order = list(inner)
    order.insert(int(pos), axis)
    return axes_with_order(stacked, order)


def expand_dims(x, axis, dim):
    """``x`` with a new axis ``axis`` inserted at position ``dim`` (values repeated along it)."""
    if int(dim) < 0:
        raise AxisError(f"expand_dims: a negative position {dim} for axis `{axis.name}`")
    return _op(_graph.expand_dims(_as_op(x)._id, axis, int(dim)))


# ---- neural-network functions ----------------------------------------------------------------

_CONV_ROLES = {"d": "Depth", "h": "Height", "w": "Width"}


def convolution(conv_params, inputs, filters, axes=None, groups=1, docstring=None):
    """The convolution of ``inputs`` with ``filters``, paired by axis role (``weft.roles``):
    each spatial axis of the input (Depth, Height, Width, Time) slides over the filter's axis of
    the same role, Channel contracts with the filter's Channel, the filter's Channelout becomes
    the output's channels; other input axes (the batch) are kept. ``conv_params`` as nGraph's:
    ``str_h``/``str_w``/``str_d`` strides, ``pad_*`` paddings (both sides), ``dil_*``
    dilations. ``axes``: the output's axes, cast to (same lengths) when given."""
    steps = []
    for suffix, role in _CONV_ROLES.items():
        stride = int(conv_params.get(f"str_{suffix}", 1))
        dilation = int(conv_params.get(f"dil_{suffix}", 1))
        padding = int(conv_params.get(f"pad_{suffix}", 0))
        if (stride, dilation, padding) != (1, 1, 0):
            steps.append((role, stride, dilation, padding, padding))
    out = _op(_graph.convolution(_as_op(inputs)._id, _as_op(filters)._id, steps, int(groups)))
    return out if axes is None else cast_axes(out, axes)


_POOL_ROLES = {"R": ("Height", "h"), "S": ("Width", "w"), "T": ("Depth", "d"),
               "J": ("Channel", "c")}


def pooling(poolparams, inputs, axes=None, docstring=None):
    """A max or average pool of ``inputs`` (``poolparams["op"]``: ``"max"`` or ``"avg"``) with
    nGraph's parameters: window lengths ``R`` (Height), ``S`` (Width), ``T`` (Depth), ``J``
    (Channel), strides ``str_h``/``str_w``/``str_d``/``str_c``, paddings ``pad_*``. The average
    counts only taps inside the input. ``axes``: the output's axes, cast to when given."""
    windows = []
    for key, (role, suffix) in _POOL_ROLES.items():
        taps = int(poolparams.get(key, 1))
        stride = int(poolparams.get(f"str_{suffix}", 1))
        padding = int(poolparams.get(f"pad_{suffix}", 0))
        if (taps, stride, padding) != (1, 1, 0):
            windows.append((role, taps, stride, 1, padding, padding))
    out = _op(_graph.pool(_as_op(inputs)._id, str(poolparams.get("op", "max")), windows))
    return out if axes is None else cast_axes(out, axes)


@_helper
def softmax(x, normalization_axes=None):
    """exp(x − max) / Σ exp(x − max) over ``normalization_axes`` (default: every axis but
    the batch axis ``N``)."""
    x = _as_op(x)
    axes = x.axes.sample_axes() if normalization_axes is None else Axes(normalization_axes)
    e = exp(x - max(x, reduction_axes=axes))
    return e / sum(e, reduction_axes=axes)


def _like_float(t, y):
    """``t`` in ``y``'s float dtype: a target (a ``one_hot``, float32 unless told) follows the
    prediction it is compared with, as nGraph's float32-only graphs never had to say."""
    if t.dtype != y.dtype and y.dtype.kind == "f" and t.dtype.kind in "fiub":
        return cast(t, y.dtype)
    return t


@_helper
def cross_entropy_multi(y, t, usebits=False, out_axes=None, enable_softmax_opt=True,
                        enable_diff_opt=True):
    """−Σ t·log(y) over every axis but ``out_axes`` (default: the batch axis ``N``); in bits
    with ``usebits``. ``t`` takes ``y``'s dtype."""
    y, t = _as_op(y), _as_op(t)
    t = _like_float(t, y)
    out = negative(sum(safelog(y) * t, out_axes=out_axes if out_axes is not None
                       else y.axes.batch_axes()))
    return out * float(1.0 / np.log(2.0)) if usebits else out


@_helper
def cross_entropy_binary(y, t, usebits=False, out_axes=None, enable_sig_opt=True,
                         enable_diff_opt=True):
    """−Σ (t·log(y) + (1 − t)·log(1 − y)) over every axis but ``out_axes`` (default: ``N``);
    in bits with ``usebits``. ``t`` takes ``y``'s dtype."""
    y, t = _as_op(y), _as_op(t)
    t = _like_float(t, y)
    inner = t * safelog(y) + (1.0 - t) * safelog(1.0 - y)
    out = negative(sum(inner, out_axes=out_axes if out_axes is not None
                       else y.axes.batch_axes()))
    return out * float(1.0 / np.log(2.0)) if usebits else out


def one_hot(x, axis, dtype=np.float32):
    """The one-hot encoding of integer ``x`` along the new ``axis`` (one of its length), of
    ``dtype`` (float32 by default, as nGraph's; ``cross_entropy_*`` convert it to the
    prediction's dtype). A label outside ``0..axis.length`` given as a computation's input is
    a ``CallError`` at the call; one computed inside the graph gives a row of zeros."""
    x = _as_op(x)
    out = _op(_graph.one_hot(x._id, axis, _dtype_name(dtype)))
    _one_hots[out._id] = (x._id, axis)
    return out


def stop_gradient(x):
    """``x``'s value, through which no gradient flows: ``deriv`` treats it as a constant
    (nGraph's ``stop_gradient``; a target network's value in a TD loss)."""
    x = _as_op(x)
    out = multiply(x, 1)
    _stopped.add(out._id)
    return out


def deriv(cost, wrt, error=None):
    """The gradient of the scalar ``cost`` with respect to ``wrt`` (one op, as in nGraph;
    weft's reverse mode), no gradient flowing through ``stop_gradient``. With ``error`` (an
    upstream gradient with ``cost``'s axes), the vector-Jacobian product Σ error·∂cost/∂wrt of
    a tensor ``cost``: the gradient of Σ(cost·error), ``error`` held constant — so it must not
    depend on ``wrt`` (a ``GraphError`` otherwise)."""
    if isinstance(wrt, (list, tuple, Axes)):
        raise TypeError("deriv: wrt is one op, as in nGraph; for several, call it once each: "
                        "[ng.deriv(cost, w) for w in ws]")
    if not isinstance(wrt, TensorOp):
        raise TypeError(f"deriv: wrt must be an op (a variable), not {type(wrt).__name__}")
    cost, wrt = _as_op(cost), _as_op(wrt)
    if error is not None:
        error = _as_op(error, like=cost)
        if wrt._id in _graph.ancestors([error._id]):
            raise GraphError(f"deriv: the error {error!r} depends on {wrt!r}; an upstream "
                             "gradient is held constant")
        if not error.axes.is_equal_set(cost.axes):
            raise AxisError(f"deriv: the error's axes {list(error.axes)} are not the cost's "
                            f"{list(cost.axes)}")
        cost = sum(cost * error, reduction_axes=cost.axes)
    return _op(_graph.grad(cost._id, [wrt._id], sorted(_stopped))[0])


# ---- nGraph's reductions written from the others -------------------------------------------

@_helper
def variance(x, out_axes=None, reduction_axes=None):
    """The (biased) variance: the mean of ``(x − mean(x))²`` over ``reduction_axes`` (default
    as ``sum``'s), nGraph's ``variance``."""
    x = _as_op(x)
    axes = _reduction_axes(x, reduction_axes, out_axes)
    centred = x - mean(x, reduction_axes=axes)
    return mean(square(centred), reduction_axes=axes, out_axes=out_axes)


@_helper
def squared_L2(x, out_axes=None, reduction_axes=None):
    """Σ x² over ``reduction_axes`` (default: every axis but ``out_axes``, or but the batch
    axis)."""
    x = _as_op(x)
    return sum(square(x), reduction_axes=_reduction_axes(x, reduction_axes, out_axes),
               out_axes=out_axes)


@_helper
def L2_norm(x, eps=1e-8, out_axes=None, reduction_axes=None):
    """sqrt(eps + Σ x²), nGraph's ``L2_norm``."""
    return sqrt(squared_L2(x, out_axes=out_axes, reduction_axes=reduction_axes) + float(eps))


@_helper
def L1_norm(x, out_axes=None, reduction_axes=None):
    """Σ |x|, nGraph's ``L1_norm``."""
    x = _as_op(x)
    return sum(absolute(x), reduction_axes=_reduction_axes(x, reduction_axes, out_axes),
               out_axes=out_axes)


def tensor_size(x, reduction_axes=None, out_axes=None, dtype=np.float32):
    """The number of elements ``reduction_axes`` span (default: every axis but ``out_axes``,
    or but the batch axis), as a scalar constant."""
    x = _as_op(x)
    return constant(_reduction_axes(x, reduction_axes, out_axes).size, dtype=dtype)


def batch_size(x, dtype=np.float32):
    """The length of ``x``'s batch axis ``N`` (its size when it has none, as nGraph's)."""
    x = _as_op(x)
    axes = x.axes.batch_axes() or x.axes
    return tensor_size(x, reduction_axes=axes, dtype=dtype)


def value_of(x):
    """``x``'s value where it stands in a ``sequential`` (a copy: a later ``assign`` to ``x``
    does not change it)."""
    return multiply(_as_op(x), 1)


def as_op(x):
    """``x`` as an op: ops as they are, numbers and 0-d arrays as scalar constants."""
    return _as_op(x)


def as_ops(xs):
    """``as_op`` of each."""
    return tuple(_as_op(x) for x in xs)


def assign(lvalue, rvalue):
    """Sets the variable or persistent tensor ``lvalue`` to ``rvalue`` (broadcast to its axes
    when it has fewer) when the call that computes this op ends (in a ``sequential``, before
    the ops after it that read ``lvalue``)."""
    lvalue = _as_op(lvalue)
    rvalue = _as_op(rvalue, like=lvalue)
    if rvalue.axes != lvalue.axes and rvalue.axes.is_sub_set(lvalue.axes):
        rvalue = broadcast(rvalue, lvalue.axes)   # nGraph broadcast a value of fewer axes
    return _op(_graph.assign(lvalue._id, rvalue._id))


class _Sequential:
    """``sequential(ops)``: the ops run in order, as nGraph ran them; the value the last
    one's."""

    def __init__(self, ops):
        if isinstance(ops, (TensorOp, _Sequential)) or not hasattr(ops, "__iter__"):
            raise TypeError(f"sequential takes a list of ops, not {ops!r}")
        self.ops = [o if isinstance(o, _Sequential) else _as_op(o) for o in ops]
        if not self.ops:
            raise GraphError("sequential: no ops")

    @property
    def value(self):
        last = self.ops[-1]
        return last.value if isinstance(last, _Sequential) else last

    @property
    def axes(self):
        return self.value.axes

    @property
    def dtype(self):
        return self.value.dtype


def sequential(ops):
    """The ops, run in order by one call (nGraph's ``sequential``); its value is the last
    op's. Each op runs once: one listed after an ``assign`` (and not needed by it) reads the
    assigned value; one an earlier op needed (the loss an update was computed from, in
    ``sequential([update, loss])``) was computed before that op, and keeps that value.
    Outside a ``sequential`` every op of a call reads the state at the call's start."""
    return _Sequential(ops)


def text():
    """The module-level graph in weft's text form (the ``.weft`` language)."""
    return _graph.text()


from .transformers import (Computation, Transformer, bench, load,  # noqa: E402
                           make_transformer)


def host_copy_bytes():
    """Bytes weft has copied between host arrays and its buffers in this process (a call whose
    inputs are C-contiguous arrays of their placeholders' dtype adds none for them)."""
    return _weft.host_copy_bytes()


def digits():
    """The digits data set bundled with weft (the UCI handwritten digits as scikit-learn ships
    them): ``(images, labels)``, float32 [1797, 64] pixels in [0, 1] and int64 labels 0–9."""
    return _weft.digits()
