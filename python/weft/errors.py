"""The exceptions weft raises. Every message is weft's own and names the op, axis, tensor or
input at fault; none of them means a crash (weft never panics on bad input)."""


class WeftError(Exception):
    """Base class of every error weft raises."""


class GraphError(WeftError, ValueError):
    """An op cannot be built: wrong operands, unknown names, a gradient that does not exist."""


class AxisError(GraphError):
    """Axes do not fit: a repeated axis, a reduction over an axis the tensor lacks, lengths
    that differ, an unbound length where one is needed."""


class DTypeError(WeftError, TypeError):
    """A dtype does not fit: an op over a dtype it does not take, an input array of another
    dtype than its placeholder's."""


class CompileError(WeftError):
    """The graph cannot be compiled (for instance a size past the memory budget)."""


class CallError(WeftError, ValueError):
    """A computation cannot be called with these arrays: their number, shapes or layout."""


class ParseError(WeftError, ValueError):
    """A `.weft` program does not parse; the message gives file:line:col."""


class OnnxImportError(WeftError, ValueError):
    """An ONNX model cannot be imported: an op weft does not import, a malformed or truncated
    file, shapes that do not agree. The message names the node, its op and opset."""


class AxisNameWarning(UserWarning):
    """Two different axes with one label met in an elementwise op: weft pairs axes by identity
    (each ``make_axis`` call makes a new axis), so the result has both, where nGraph paired
    axes by name."""
