"""ONNX translations of the recorded ops (ember's 'symbolic' functions).

Each translation is ``fn(b, o) -> list of output names`` (one per tensor result of the op): ``b`` is the graph
builder (``_export.Builder``: ``b.node(op_type, inputs, **attrs)``, ``b.const``, ``b.ints``), ``o`` the op in
context (``_export.OpView``: its inputs as names, its parameters, its input and output shapes and dtypes, and what
changed in the second trace when axes are dynamic). PRIMS is keyed by primitive name, FUNCTIONS by the name of a
wrapped function, MODULES by module class name.
"""
from __future__ import annotations

import math

from .. import _dtype as D
from ..ops import creation as C
from ..ops.shape import stack
from ._trace import CRef, VRef
from .errors import OnnxExporterError

INT64_MAX = 2 ** 63 - 1

PRIMS: dict = {}
FUNCTIONS: dict = {}
MODULES: dict = {}


def _reg(table: dict, *names):
    def deco(fn):
        for n in names:
            table[n] = fn
        return fn
    return deco


# ----- elementwise ------------------------------------------------------------------------------------------

_UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log", "sin": "Sin",
          "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh",
          "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh", "abs": "Abs", "sqrt": "Sqrt",
          "neg": "Neg", "floor": "Floor", "ceil": "Ceil", "reciprocal": "Reciprocal", "erf": "Erf",
          "sign": "Sign", "round": "Round", "clone": "Identity", "hardswish": "HardSwish", "mish": "Mish"}


def _unary(op_type):
    def fn(b, o):
        if o.kwargs:   # a form with parameters this translation does not know
            raise o.unsupported()
        return [b.node(op_type, [o.x(0)])]
    return fn


for _n, _t in _UNARY.items():
    PRIMS[_n] = _unary(_t)


@_reg(PRIMS, "round")
def _round(b, o):   # round(x, decimals): x * 10^d rounded half to even, / 10^d (PyTorch's formula)
    d = o.p("decimals") or 0
    if not d:
        return [b.node("Round", [o.x(0)])]
    dt = o.out_dtype()
    scale = b.scalar(10.0 ** d, dt) if d > 0 else b.scalar(10.0 ** -d, dt)
    x = o.x(0)
    if d > 0:
        return [b.node("Div", [b.node("Round", [b.node("Mul", [x, scale])]), scale])]
    return [b.node("Mul", [b.node("Round", [b.node("Div", [x, scale])]), scale])]


@_reg(PRIMS, "trunc")
def _trunc(b, o):
    x = o.x(0)   # trunc(x) = sign(x) * floor(|x|)
    return [b.node("Mul", [b.node("Sign", [x]), b.node("Floor", [b.node("Abs", [x])])])]


@_reg(PRIMS, "rsqrt")
def _rsqrt(b, o):
    return [b.node("Reciprocal", [b.node("Sqrt", [o.x(0)])])]


@_reg(PRIMS, "log1p")
def _log1p(b, o):
    return [b.node("Log", [b.node("Add", [o.x(0), b.scalar(1, o.out_dtype())])])]


@_reg(PRIMS, "expm1")
def _expm1(b, o):
    return [b.node("Sub", [b.node("Exp", [o.x(0)]), b.scalar(1, o.out_dtype())])]


@_reg(PRIMS, "log2", "log10")
def _log_base(b, o):
    base = 2.0 if o.name == "log2" else 10.0
    return [b.node("Div", [b.node("Log", [o.x(0)]), b.scalar(math.log(base), o.out_dtype())])]


@_reg(PRIMS, "silu")
def _silu(b, o):
    x = o.x(0)
    return [b.node("Mul", [x, b.node("Sigmoid", [x])])]


@_reg(PRIMS, "gelu")
def _gelu(b, o):
    x, dt = o.x(0), o.out_dtype()
    if b.opset >= 20:
        return [b.node("Gelu", [x], approximate=o.p("approximate"))]
    half = b.node("Mul", [x, b.scalar(0.5, dt)])
    if o.p("approximate") == "tanh":   # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = b.node("Mul", [b.node("Mul", [x, x]), x])
        inner = b.node("Add", [x, b.node("Mul", [cube, b.scalar(0.044715, dt)])])
        t = b.node("Tanh", [b.node("Mul", [inner, b.scalar(math.sqrt(2 / math.pi), dt)])])
    else:                              # 0.5 x (1 + erf(x / sqrt 2))
        t = b.node("Erf", [b.node("Div", [x, b.scalar(math.sqrt(2.0), dt)])])
    return [b.node("Mul", [half, b.node("Add", [t, b.scalar(1, dt)])])]


@_reg(PRIMS, "elu")
def _elu(b, o):
    if o.p("scale") == 1 and o.p("input_scale") == 1:
        return [b.node("Elu", [o.x(0)], alpha=float(o.p("alpha")))]
    if o.p("alpha") == 1.6732632423543772 and o.p("scale") == 1.0507009873554805 and o.p("input_scale") == 1:
        return [b.node("Selu", [o.x(0)])]
    raise o.unsupported()


@_reg(PRIMS, "celu")
def _celu(b, o):
    return [b.node("Celu", [o.x(0)], alpha=float(o.p("alpha")))]


@_reg(PRIMS, "leaky_relu")
def _leaky_relu(b, o):
    return [b.node("LeakyRelu", [o.x(0)], alpha=float(o.p("negative_slope")))]


@_reg(PRIMS, "hardtanh")
def _hardtanh(b, o):
    dt = o.out_dtype()
    return [b.node("Clip", [o.x(0), b.scalar(o.p("min_val"), dt), b.scalar(o.p("max_val"), dt)])]


@_reg(PRIMS, "hardsigmoid")
def _hardsigmoid(b, o):
    return [b.node("HardSigmoid", [o.x(0)], alpha=1.0 / 6, beta=0.5)]


@_reg(PRIMS, "softplus")
def _softplus(b, o):
    beta, threshold = o.p("beta"), o.p("threshold")
    x, dt = o.x(0), o.out_dtype()
    if beta == 1:
        sp = b.node("Softplus", [x])
    else:
        sp = b.node("Div", [b.node("Softplus", [b.node("Mul", [x, b.scalar(beta, dt)])]), b.scalar(beta, dt)])
    # PyTorch returns x itself where beta * x > threshold
    big = b.node("Greater", [b.node("Mul", [x, b.scalar(beta, dt)]), b.scalar(threshold, dt)])
    return [b.node("Where", [big, x, sp])]


@_reg(PRIMS, "log_sigmoid")
def _log_sigmoid(b, o):
    return [b.node("Log", [b.node("Sigmoid", [o.x(0)])])]


@_reg(PRIMS, "threshold")
def _threshold(b, o):
    x, dt = o.x(0), o.out_dtype()
    keep = b.node("Greater", [x, b.scalar(o.p("threshold"), dt)])
    return [b.node("Where", [keep, x, b.scalar(o.p("value"), dt)])]


@_reg(PRIMS, "glu")
def _glu(b, o):
    a, g = b.node("Split", [o.x(0)], n=2, axis=o.p("dim"), num_outputs=2)
    return [b.node("Mul", [a, b.node("Sigmoid", [g])])]


_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max",
           "minimum": "Min", "add_scalar": "Add", "mul_scalar": "Mul", "div_scalar": "Div", "fmod": "Mod"}


def _binary(op_type):
    def fn(b, o):
        dt = o.out_dtype()
        if o.name == "div" and o.p("mode") is not None:
            return [_div_rounded(b, o, dt, o.p("mode"))]
        if o.kwargs:
            raise o.unsupported()
        if o.name == "pow":   # ONNX Pow keeps the base's type; the exponent may be of another
            return [b.node("Pow", [o.x(0, dt), o.x(1, o.dtype_in(1) or dt)])]
        attrs = {"fmod": 1} if o.name == "fmod" else {}
        return [b.node(op_type, [o.x(0, dt), o.x(1, dt)], **attrs)]
    return fn


for _n, _t in _BINARY.items():
    PRIMS[_n] = _binary(_t)


def _div_rounded(b, o, dt, mode):
    """div(a, b, rounding_mode='floor' | 'trunc'): computed in the float type (integers in float64), rounded."""
    ct = dt if dt.is_floating_point else D.float64
    q = b.node("Div", [o.x(0, ct), o.x(1, ct)])
    if mode == "floor":
        q = b.node("Floor", [q])
    else:   # trunc: sign(q) * floor(|q|)
        q = b.node("Mul", [b.node("Sign", [q]), b.node("Floor", [b.node("Abs", [q])])])
    return q if ct is dt else b.node("Cast", [q], to=b.onnx_type(dt))


@_reg(PRIMS, "rsub")
def _rsub(b, o):
    dt = o.out_dtype()
    return [b.node("Sub", [o.x(0, dt), o.x(1, dt)])]


@_reg(PRIMS, "floor_divide")
def _floor_divide(b, o):
    dt = o.out_dtype()
    if dt.is_floating_point:
        return [b.node("Floor", [b.node("Div", [o.x(0, dt), o.x(1, dt)])])]
    # integers: floor (ONNX Div truncates), computed in float64 as PyTorch rounds the quotient down
    q = b.node("Floor", [b.node("Div", [o.x(0, "float64"), o.x(1, "float64")])])
    return [b.node("Cast", [q], to=b.onnx_type(dt))]


@_reg(PRIMS, "remainder")
def _remainder(b, o):
    dt = o.out_dtype()
    x, y = o.x(0, dt), o.x(1, dt)
    if not dt.is_floating_point:
        return [b.node("Mod", [x, y])]   # integer Mod: the divisor's sign, as Python's %
    r = b.node("Mod", [x, y], fmod=1)    # C's fmod, then moved to the divisor's sign
    zero = b.scalar(0, dt)
    fix = b.node("And", [b.node("Not", [b.node("Equal", [r, zero])]),
                         b.node("Xor", [b.node("Less", [r, zero]), b.node("Less", [y, zero])])])
    return [b.node("Where", [fix, b.node("Add", [r, y]), r])]


@_reg(PRIMS, "where")
def _where(b, o):   # where(cond, a, b): the condition comes as a parameter (a value's array, or a constant)
    dt = o.out_dtype()
    return [b.node("Where", [o.name_of(o.p("cond"), "bool"), o.x(0, dt), o.x(1, dt)])]


@_reg(FUNCTIONS, "masked_fill", "masked_fill_")
def _masked_fill(b, o):
    dt = o.out_dtype()
    return [b.node("Where", [o.x(1, "bool"), o.x(2, dt), o.x(0, dt)])]


@_reg(PRIMS, "clamp")
def _clamp(b, o):
    dt = o.out_dtype()
    x = o.x(0, dt)
    lo, hi = o.args[1], o.args[2]
    if lo is not None:
        x = b.node("Max", [x, o.x(1, dt)])
    if hi is not None:
        x = b.node("Min", [x, o.x(2, dt)])
    return [x]


@_reg(PRIMS, "to")
def _to(b, o):
    return [b.node("Cast", [o.x(0)], to=b.onnx_type(o.out_dtype()))]


@_reg(PRIMS, "fill")
def _fill(b, o):   # x.fill_(v), zero_(): a tensor of x's shape
    dt = o.out_dtype()
    shape = b.node("Shape", [o.x(0)])
    return [b.node("Expand", [b.scalar(o.p("value"), dt), shape])]


# ----- matrix products -----------------------------------------------------------------------------------------

@_reg(PRIMS, "matmul")
def _matmul(b, o):
    dt = o.out_dtype()
    return [b.node("MatMul", [o.x(0, dt), o.x(1, dt)])]


@_reg(PRIMS, "addprod")
def _addprod(b, o):
    """beta * c + alpha * einsum(eq, a, b): F.linear, addmm, baddbmm."""
    eq, beta, alpha = o.p("eq"), o.p("beta"), o.p("alpha")
    dt = o.out_dtype()
    if eq == "ij,jk->ik" and o.args[0] is not None:
        a = o.x(1, dt)
        src = b.producer_of(o.args[2])   # F.linear: the weight's transpose: Gemm with transB, as PyTorch exports
        if src is not None and src.name == "permute" and tuple(src.p("dims")) == (1, 0):
            return [b.node("Gemm", [a, src.x(0, dt), o.x(0, dt)], alpha=float(alpha), beta=float(beta),
                           transB=1)]
        return [b.node("Gemm", [a, o.x(2, dt), o.x(0, dt)], alpha=float(alpha), beta=float(beta))]
    prod = b.node("Einsum", [o.x(1, dt), o.x(2, dt)], equation=eq)
    if alpha != 1:
        prod = b.node("Mul", [prod, b.scalar(alpha, dt)])
    if o.args[0] is None or beta == 0:
        return [prod]
    c = o.x(0, dt)
    if beta != 1:
        c = b.node("Mul", [c, b.scalar(beta, dt)])
    return [b.node("Add", [c, prod])]


# ----- reductions -------------------------------------------------------------------------------------------------

def _axes(o, key="dims"):
    d = o.p(key)
    nd = len(o.shape_in(0))
    if d is None:
        return list(range(nd))
    d = [d] if isinstance(d, int) else list(d)
    return [a % nd if nd else 0 for a in d]


def _reduce(b, op_type, x, axes, keepdim):
    if op_type == "ReduceSum" or b.opset >= 18:
        return b.node(op_type, [x, b.ints(axes)], keepdims=int(bool(keepdim)))
    return b.node(op_type, [x], axes=axes, keepdims=int(bool(keepdim)))


_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "amax": "ReduceMax", "amin": "ReduceMin",
           "logsumexp": "ReduceLogSumExp"}


def _reduction(op_type):
    def fn(b, o):
        dt = o.out_dtype()
        return [_reduce(b, op_type, o.x(0, dt), _axes(o), o.p("keepdim"))]
    return fn


for _n, _t in _REDUCE.items():
    PRIMS[_n] = _reduction(_t)


@_reg(PRIMS, "prod")
def _prod(b, o):
    return [_reduce(b, "ReduceProd", o.x(0, o.out_dtype()), _axes(o, "dim"), o.p("keepdim"))]


@_reg(PRIMS, "max", "min")
def _max(b, o):   # x.max(): every element; x.max(dim) (values): its indices come as a parameter, unused here
    op_type = "ReduceMax" if o.name == "max" else "ReduceMin"
    if "dim" in o.kwargs:
        o.dyn_p("indices")   # (they change with the input's values; the translation does not use them)
        return [_reduce(b, op_type, o.x(0), [o.p("dim") % len(o.shape_in(0))], o.p("keepdim"))]
    return [_reduce(b, op_type, o.x(0), _axes(o, None), False)]


@_reg(PRIMS, "var", "std")
def _var(b, o):
    x, dt = o.x(0), o.out_dtype()
    axes, keep = _axes(o), o.p("keepdim")
    corr = o.p("correction")
    shape, shape2 = o.shape_in(0), o.shape_in2(0)
    mean = _reduce(b, "ReduceMean", x, axes, True)
    d = b.node("Sub", [x, mean])
    ss = _reduce(b, "ReduceSum", b.node("Mul", [d, d]), axes, keep)
    if shape2 is None or all(shape[a] == shape2[a] for a in axes):
        n = 1
        for a in axes:
            n *= shape[a]
        denom = b.scalar(max(n - corr, 0), dt)
    else:   # the count follows a dynamic axis: read it from the shape
        count = b.node("ReduceProd", [b.node("Gather", [b.node("Shape", [x]), b.ints(axes)], axis=0)], keepdims=0)
        denom = b.node("Max", [b.node("Sub", [b.node("Cast", [count], to=b.onnx_type(dt)), b.scalar(corr, dt)]),
                               b.scalar(0, dt)])
    v = b.node("Div", [ss, denom])
    return [b.node("Sqrt", [v]) if o.name == "std" else v]


@_reg(PRIMS, "vector_norm")
def _vector_norm(b, o):
    ord_, x = o.p("ord"), o.x(0)
    axes, keep = _axes(o), o.p("keepdim")
    if ord_ == 2:
        return [_reduce(b, "ReduceL2", x, axes, keep)]
    if ord_ == 1:
        return [_reduce(b, "ReduceL1", x, axes, keep)]
    if ord_ == math.inf:
        return [_reduce(b, "ReduceMax", b.node("Abs", [x]), axes, keep)]
    raise o.unsupported()


@_reg(PRIMS, "cumsum")
def _cumsum(b, o):
    return [b.node("CumSum", [o.x(0, o.out_dtype()), b.ints([o.p("dim")], scalar=True)])]


@_reg(PRIMS, "softmax", "_safe_softmax")
def _softmax(b, o):
    return [b.node("Softmax", [o.x(0, o.out_dtype())], axis=o.p("dim"))]


@_reg(PRIMS, "log_softmax")
def _log_softmax(b, o):
    return [b.node("LogSoftmax", [o.x(0, o.out_dtype())], axis=o.p("dim"))]


# ----- shapes ----------------------------------------------------------------------------------------------------

@_reg(PRIMS, "permute")
def _permute(b, o):
    return [b.node("Transpose", [o.x(0)], perm=list(o.p("dims")))]


def dynamic_shape(o, shape, shape2, in_shape, in_shape2, what: str):
    """The target shape of a reshape as ONNX Reshape reads it when some sizes change with the dynamic axes:
    a size equal to the input's at the same position (in both traces) is 0 (copy it); one other changing size is
    -1 (inferred); with more, each changing size is read from a value of the graph that has it (in both traces)
    along some axis: Shape, Gather, Concat. Returns a list of ints or the name of the shape tensor."""
    if shape2 is None:
        return list(shape)
    out = list(shape)
    changing = [i for i, (s1, s2) in enumerate(zip(shape, shape2)) if s1 != s2]
    rest = []
    for i in changing:
        if i < len(in_shape) and in_shape[i] == shape[i] and in_shape2[i] == shape2[i]:
            out[i] = 0
        else:
            rest.append(i)
    if len(rest) == 1:
        out[rest[0]] = -1
        return out
    if not rest:
        return out
    b = o.b
    pieces = []
    for i, s in enumerate(out):
        if i in rest:
            size = b.size_of(shape[i], shape2[i])
            if size is None:
                raise OnnxExporterError(
                    f"ember.onnx.export: '{what}' to {list(shape)}: size {shape[i]} (dimension {i}) changes with "
                    "the dynamic axes and no value of the graph has it; export without dynamic_axes, or reshape "
                    "with -1 for one size.")
            pieces.append(size)
        else:
            pieces.append(b.node("Gather", [b.node("Shape", [o.x(0)]), b.ints([i])], axis=0) if s == 0
                          else b.ints([s]))
    return b.node("Concat", pieces, axis=0)


@_reg(PRIMS, "reshape")
def _reshape(b, o):
    shape = o.p("shape")
    target = dynamic_shape(o, shape, o.dyn_p("shape"), o.shape_in(0), o.shape_in2(0), "reshape")
    if isinstance(target, str):
        return [b.node("Reshape", [o.x(0), target])]
    return [b.node("Reshape", [o.x(0), b.ints(target)])]


@_reg(PRIMS, "expand")
def _expand(b, o):
    shape = list(o.p("shape"))
    shape2 = o.dyn_p("shape")
    ins, ins2 = o.shape_in(0), o.shape_in2(0)
    lead = len(shape) - len(ins)
    target = list(shape)
    for i in range(len(shape)):   # a size the input already has: 1 (ONNX Expand broadcasts)
        j = i - lead
        if j >= 0 and ins[j] == shape[i] and (shape2 is None or ins2[j] == shape2[i]):
            target[i] = 1
        elif shape2 is not None and shape2[i] != shape[i]:
            raise OnnxExporterError("ember.onnx.export: 'expand' to a size that changes with the dynamic axes "
                                    "is not supported")
    return [b.node("Expand", [o.x(0), b.ints(target)])]


@_reg(PRIMS, "repeat")
def _repeat(b, o):
    sizes = list(o.p("sizes"))
    sizes2 = o.dyn_p("sizes")
    x = o.x(0)
    nd = len(o.shape_in(0))
    if len(sizes) > nd:
        x = b.node("Reshape", [x, b.ints([1] * (len(sizes) - nd) + [0] * nd)])
    return [b.node("Tile", [x, _sizes(b, o, sizes, sizes2)])]


@_reg(PRIMS, "flip")
def _flip(b, o):
    x = o.x(0)
    nd = len(o.shape_in(0))
    axes = [d % nd for d in o.p("dims")]
    n = len(axes)
    return [b.node("Slice", [x, b.ints([-1] * n), b.ints([-INT64_MAX] * n), b.ints(axes), b.ints([-1] * n)])]


@_reg(PRIMS, "select")
def _select(b, o):
    dim, index, index2 = o.p("dim"), o.p("index"), o.dyn_p("index")
    if index2 is not None and index2 != index:   # x[-1] on a dynamic axis: counted from the end
        size, size2 = o.shape_in(0)[dim], o.shape_in2(0)[dim]
        if index - size != index2 - size2:
            raise OnnxExporterError("ember.onnx.export: select with an index that changes with the input is not "
                                    "supported")
        index -= size
    return [b.node("Gather", [o.x(0), b.ints([index], scalar=True)], axis=dim)]


@_reg(PRIMS, "slice")
def _slice(b, o):
    dim, start, stop, step = o.p("dim"), o.p("start"), o.p("stop"), o.p("step")
    return [_slice_node(b, o, o.x(0), dim, start, stop, step, o.shape_in(0), o.shape_in2(0),
                        o.dyn_p("start"), o.dyn_p("stop"))]


def _slice_node(b, o, x, dim, start, stop, step, shape, shape2, start2=None, stop2=None):
    size = shape[dim]
    size2 = size if shape2 is None else shape2[dim]
    starts = _bound(b, o, start, start2, size, size2, 0, "start")
    ends = _bound(b, o, stop, stop2, size, size2, INT64_MAX, "end")
    return b.node("Slice", [x, starts, ends, b.ints([dim]), b.ints([step])])


def _bound(b, o, v, v2, size, size2, default, what):
    """A slice bound as a 1-element tensor: a constant; "to the end" (INT64_MAX) where it is the axis's end in
    both traces; counted from the end where it keeps its distance to it; else a size of the graph (Shape) that
    has its values in both traces."""
    if v is None:
        return b.ints([default])
    if v2 is None:
        v2 = v
    if what == "end" and v >= size and v2 >= size2:
        return b.ints([INT64_MAX])
    if v == v2 and (size == size2 or 0 <= v < min(size, size2)):
        return b.ints([v])
    if v - size == v2 - size2:
        return b.ints([v - size])   # so many from the end
    found = b.size_of(v, v2)
    if found is None:
        raise OnnxExporterError(f"ember.onnx.export: '{o.name}': a slice {what} ({v}) that changes with the dynamic "
                                "axes, and no value of the graph has that size")
    return found


@_reg(PRIMS, "index", "getitem")
def _index(b, o):
    """x[index] with ints, slices, None and Ellipsis (basic indexing) or one integer index array."""
    index, index2 = o.p("index"), o.dyn_p("index")
    if not isinstance(index, tuple):
        index = (index,)
    if index2 is not None and not isinstance(index2, tuple):
        index2 = (index2,)
    if index2 is not None and (len(index2) != len(index) or any(
            type(i) is not type(j) or (not isinstance(i, (int, slice)) and i is not None and i is not Ellipsis)
            for i, j in zip(index, index2))):
        raise OnnxExporterError("ember.onnx.export: an index that changes with the input (an index tensor computed "
                                "from it, or another form of index) is not supported")
    shape = list(o.shape_in(0))
    shape2 = o.shape_in2(0)
    nd = len(shape)
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    def expand(index):
        expanded = []
        for i in index:
            if i is Ellipsis:
                expanded.extend([slice(None)] * (nd - n_real))
            else:
                expanded.append(i)
        return expanded + [slice(None)] * (nd - sum(1 for i in expanded if i is not None))
    expanded = expand(index)
    expanded2 = expanded if index2 is None else expand(index2)
    x = o.x(0)
    dim = 0          # the input's dimension the next index entry reads
    out_dim = 0      # where it sits in the result so far
    arrays = [i for i in expanded if not isinstance(i, (int, slice)) and i is not None]
    if arrays:
        if len(arrays) > 1 or len(expanded) > nd:
            raise OnnxExporterError("ember.onnx.export: indexing with more than one index tensor (or with None "
                                    "beside one) is not supported")
        pos = next(k for k, i in enumerate(expanded) if i is arrays[0])
        if any(not (isinstance(i, slice) and i == slice(None)) for k, i in enumerate(expanded) if k != pos):
            raise OnnxExporterError("ember.onnx.export: an index tensor together with other indices is not "
                                    "supported")
        arr = arrays[0]
        if getattr(arr, "dtype", None) is not None and arr.dtype.kind == "b":
            raise OnnxExporterError("ember.onnx.export: boolean mask indexing (a data-dependent shape) is not "
                                    "supported")
        return [b.node("Gather", [x, b.const_array(arr, "int64")], axis=pos)]
    for i, i2 in zip(expanded, expanded2):
        if i is None:
            x = b.node("Unsqueeze", [x, b.ints([out_dim])])
            out_dim += 1
        elif isinstance(i, int):
            if i != i2 and not (i < 0 and i2 < 0):
                raise OnnxExporterError("ember.onnx.export: an integer index that changes with the dynamic axes "
                                        "is not supported")
            x = b.node("Gather", [x, b.ints([i], scalar=True)], axis=out_dim)
            dim += 1
        else:
            if not (i.start in (None, 0) and i.stop is None and i.step in (None, 1)) or i2 != i:
                size = shape[dim]
                size2 = size if shape2 is None else shape2[dim]
                if (i.step or 1) < 0:
                    raise OnnxExporterError("ember.onnx.export: a negative slice step is not supported")
                st = _bound(b, o, _pos(i.start, size), _pos(i2.start, size2), size, size2, 0, "start")
                sp = _bound(b, o, _pos(i.stop, size), _pos(i2.stop, size2), size, size2, INT64_MAX, "end")
                x = b.node("Slice", [x, st, sp, b.ints([out_dim]), b.ints([i.step or 1])])
            dim += 1
            out_dim += 1
    return [x]


def _pos(v, size):
    """A Python slice bound as a position in 0..size (None stays None)."""
    if v is None:
        return None
    return min(max(v + size if v < 0 else v, 0), size)


@_reg(PRIMS, "cat")
def _cat(b, o):
    dt = o.out_dtype()
    ins = [o.x(i, dt) for i, a in enumerate(o.args) if not (o.shape_in(i) == (0,))]
    return [b.node("Concat", ins, axis=o.p("dim") % len(o.out_shape()))]


@_reg(PRIMS, "stack")
def _stack(b, o):
    dt = o.out_dtype()
    d = o.p("dim") % len(o.out_shape())
    ins = [b.node("Unsqueeze", [o.x(i, dt), b.ints([d])]) for i in range(len(o.args))]
    return [b.node("Concat", ins, axis=d)]


@_reg(PRIMS, "gather")
def _gather(b, o):
    return [b.node("GatherElements", [o.x(0), o.name_of(o.p("indices"), "int64")], axis=o.p("dim"))]


@_reg(PRIMS, "tril", "triu")
def _trilu(b, o):
    return [b.node("Trilu", [o.x(0), b.ints([o.p("diagonal")], scalar=True)], upper=int(o.name == "triu"))]


@_reg(PRIMS, "constant_pad_nd")
def _constant_pad(b, o):
    pads = o.p("pads")   # ((before, after), ...) per trailing dimension
    pads = ((0, 0),) * (len(o.shape_in(0)) - len(pads)) + tuple(pads)
    if any(p < 0 for pr in pads for p in pr):
        raise OnnxExporterError("ember.onnx.export: negative padding is not supported")
    begins, ends = [int(p[0]) for p in pads], [int(p[1]) for p in pads]
    return [b.node("Pad", [o.x(0), b.ints(begins + ends), b.scalar(o.p("value"), o.out_dtype())], mode="constant")]


@_reg(PRIMS, "pad")
def _pad_gather(b, o):
    """reflect / replicate / circular padding: a gather of the source positions along each padded dimension."""
    idx = o.p("idx")
    x = o.x(0)
    nd = len(o.shape_in(0))
    for k, ix in enumerate(idx):
        x = b.node("Gather", [x, b.const_array(ix, "int64")], axis=nd - len(idx) + k)
    return [x]


@_reg(PRIMS, "resample", "dim_matrices")
def _resample(b, o):
    """Interpolation (nearest, linear, ...) as ember computes it: one matrix per spatial dimension, contracted
    with the input along it (Einsum)."""
    mats = o.p("mats")
    x = o.x(0)
    nd = len(o.shape_in(0))
    k = len(mats)
    letters = "abcdefghijklmnopqrstuvwxyz"
    ins = letters[:nd]
    outs = list(ins)
    terms = [ins]
    inputs = [x]
    for j, m in enumerate(mats):
        d = nd - k + j
        new = letters[nd + j]
        terms.append(new + ins[d])
        outs[d] = new
        inputs.append(b.const_array(m, o.out_dtype()))
    return [b.node("Einsum", inputs, equation=",".join(terms) + "->" + "".join(outs))]


@_reg(PRIMS, "prelu")
def _prelu(b, o):
    dt = o.out_dtype()
    return [b.node("PRelu", [o.x(0, dt), o.x(1, dt)])]


@_reg(PRIMS, "native_batch_norm")
def _batch_norm_stats(b, o):
    """Batch norm from the batch's own statistics (training mode; InstanceNorm always): biased variance."""
    if o.p("view") is not None:
        raise o.unsupported()
    dt = o.out_dtype()
    x = o.x(0)
    axes = list(o.p("axes"))
    mean = _reduce(b, "ReduceMean", x, axes, True)
    d = b.node("Sub", [x, mean])
    var = _reduce(b, "ReduceMean", b.node("Mul", [d, d]), axes, True)
    y = b.node("Div", [d, b.node("Sqrt", [b.node("Add", [var, b.scalar(float(o.p("eps")), dt)])])])
    wshape, wshape2 = list(o.p("wshape")), o.dyn_p("wshape")
    if wshape2 is not None:   # (InstanceNorm: batch x channels) one size follows the batch: -1
        wshape = [s if s == s2 else -1 for s, s2 in zip(wshape, wshape2)]
        if wshape.count(-1) > 1:
            raise OnnxExporterError("ember.onnx.export: batch norm statistics over dynamic axes are not supported")
    if o.args[1] is not None:
        y = b.node("Mul", [y, b.node("Reshape", [o.x(1), b.ints(wshape)])])
    if o.args[2] is not None:
        y = b.node("Add", [y, b.node("Reshape", [o.x(2), b.ints(wshape)])])
    return [y]


@_reg(PRIMS, "conv_transpose")
def _conv_transpose(b, o):
    pads = o.p("pads")
    stride, dilation = list(o.p("stride")), list(o.p("dilation"))
    ins = [o.x(0), o.x(1)] + ([o.x(2)] if o.args[2] is not None else [])
    kernel = list(o.shape_in(1)[2:])
    spatial = o.shape_in(0)[2:]
    out = list(o.out_shape()[2:])
    extra = [out[i] - ((spatial[i] - 1) * stride[i] - pads[i][0] - pads[i][1] + dilation[i] * (kernel[i] - 1) + 1)
             for i in range(len(out))]
    return [b.node("ConvTranspose", ins, strides=stride, dilations=dilation, group=int(o.p("groups")),
                   kernel_shape=kernel, pads=[int(p[0]) for p in pads] + [int(p[1]) for p in pads],
                   output_padding=extra)]


# ----- layers ----------------------------------------------------------------------------------------------------

@_reg(PRIMS, "convolution")
def _convolution(b, o):
    pads = o.p("pads")
    ins = [o.x(0), o.x(1)] + ([o.x(2)] if o.args[2] is not None else [])
    kernel = list(o.shape_in(1)[2:])
    return [b.node("Conv", ins, strides=list(o.p("stride")), dilations=list(o.p("dilation")),
                   group=int(o.p("groups")), kernel_shape=kernel,
                   pads=[int(p[0]) for p in pads] + [int(p[1]) for p in pads])]


@_reg(PRIMS, "native_batch_norm_eval")
def _batch_norm(b, o):
    c = o.shape_in(0)[1]
    dt = o.out_dtype()
    w = o.x(1) if o.args[1] is not None else b.const_full([c], 1.0, dt)
    bias = o.x(2) if o.args[2] is not None else b.const_full([c], 0.0, dt)
    return [b.node("BatchNormalization", [o.x(0), w, bias, o.x(3), o.x(4)], epsilon=float(o.p("eps")))]


@_reg(PRIMS, "native_layer_norm")
def _layer_norm(b, o):
    axes = o.p("axes")
    nd = len(o.shape_in(0))
    first = min(a % nd for a in axes)
    dt = o.out_dtype()
    norm = list(o.shape_in(0)[first:])
    ins = [o.x(0), o.x(1) if o.args[1] is not None else b.const_full(norm, 1.0, dt)]
    if o.args[2] is not None:
        ins.append(o.x(2))
    if o.p("view") is not None:
        raise o.unsupported()
    return [b.node("LayerNormalization", ins, axis=first, epsilon=float(o.p("eps")))]


@_reg(PRIMS, "native_group_norm")
def _group_norm(b, o):
    """x viewed as (N, G, rest), normalised over the rest, viewed back, then the per-channel affine."""
    view, eps = o.p("view"), float(o.p("eps"))
    view2 = o.dyn_p("view")
    if view2 is not None and tuple(view2[1:]) != tuple(view[1:]):
        raise OnnxExporterError("ember.onnx.export: group_norm over a dynamic axis other than the batch is not "
                                "supported")
    dt = o.out_dtype()
    x = o.x(0)
    shape = o.shape_in(0)
    v = b.node("Reshape", [x, b.ints([0] + list(view[1:2]) + [-1])])
    mean = _reduce(b, "ReduceMean", v, [2], True)
    d = b.node("Sub", [v, mean])
    var = _reduce(b, "ReduceMean", b.node("Mul", [d, d]), [2], True)
    y = b.node("Div", [d, b.node("Sqrt", [b.node("Add", [var, b.scalar(eps, dt)])])])
    y = b.node("Reshape", [y, b.node("Shape", [x])])
    wshape = [shape[1]] + [1] * (len(shape) - 2)
    if o.args[1] is not None:
        y = b.node("Mul", [y, b.node("Reshape", [o.x(1), b.ints(wshape)])])
    if o.args[2] is not None:
        y = b.node("Add", [y, b.node("Reshape", [o.x(2), b.ints(wshape)])])
    return [y]


# ----- wrapped functions: comparisons, argmax, embedding, pooling --------------------------------------------------

_COMPARE = {"gt": "Greater", "lt": "Less", "ge": "GreaterOrEqual", "le": "LessOrEqual", "eq": "Equal"}


def _compare(name):
    def fn(b, o):
        dt = o.common_dtype()
        out = b.node(_COMPARE.get(name, "Equal"), [o.x(0, dt), o.x(1, dt)])
        return [b.node("Not", [out]) if name == "ne" else out]
    return fn


for _n in ("gt", "lt", "ge", "le", "eq", "ne"):
    FUNCTIONS[_n] = _compare(_n)


@_reg(FUNCTIONS, "logical_not")
def _logical_not(b, o):
    return [b.node("Not", [o.x(0, "bool")])]


@_reg(FUNCTIONS, "logical_and", "logical_or")
def _logical(b, o):
    return [b.node("And" if o.name == "logical_and" else "Or", [o.x(0, "bool"), o.x(1, "bool")])]


@_reg(FUNCTIONS, "bitwise_or", "bitwise_and", "bitwise_xor", "bitwise_not")
def _bitwise(b, o):
    dt = o.out_dtype()
    kind = o.name.split("_")[1]
    if dt is D.bool:
        op_type = {"or": "Or", "and": "And", "xor": "Xor", "not": "Not"}[kind]
    else:
        op_type = "Bitwise" + kind.capitalize()
    return [b.node(op_type, [o.x(i, dt) for i in range(1 if kind == "not" else 2)])]


@_reg(FUNCTIONS, "argmax", "argmin")
def _argmax(b, o):
    dim, keepdim = o.a(1, "dim"), o.a(2, "keepdim", False)
    x = o.x(0)
    if dim is None:
        x = b.node("Reshape", [x, b.ints([-1])])
        dim = 0
    return [b.node("ArgMax" if o.name == "argmax" else "ArgMin", [x], axis=int(dim), keepdims=int(bool(keepdim)))]


@_reg(FUNCTIONS, "scaled_dot_product_attention")
def _sdpa(b, o):
    """softmax(q k^T * scale + mask) v, the causal mask made from the sizes in the graph (Trilu)."""
    attn_mask, dropout_p, is_causal = o.a(3, "attn_mask"), o.a(4, "dropout_p", 0.0), o.a(5, "is_causal", False)
    scale, gqa = o.a(6, "scale"), o.a(7, "enable_gqa", False)
    if dropout_p or gqa:
        raise OnnxExporterError("ember.onnx.export: scaled_dot_product_attention with dropout_p > 0 or enable_gqa "
                                "is not supported")
    dt = o.out_dtype()
    q, k, v = o.x(0), o.x(1), o.x(2)
    nd = len(o.shape_in(0))
    if scale is None:
        scale = 1.0 / math.sqrt(o.shape_in(0)[-1])
    perm = list(range(nd - 2)) + [nd - 1, nd - 2]
    s = b.node("Mul", [b.node("MatMul", [q, b.node("Transpose", [k], perm=perm)]), b.scalar(scale, dt)])
    if is_causal:
        qs, ks = b.node("Shape", [q]), b.node("Shape", [k])
        size = b.node("Concat", [b.node("Gather", [qs, b.ints([nd - 2])], axis=0),
                                 b.node("Gather", [ks, b.ints([nd - 2])], axis=0)], axis=0)
        ones = b.node("Expand", [b.scalar(1, "int64"), size])
        keep = b.node("Cast", [b.node("Trilu", [ones], upper=0)], to=b.onnx_type("bool"))
        s = b.node("Where", [keep, s, b.scalar(float("-inf"), dt)])
    if attn_mask is not None:
        if o.dtype_in(3) is D.bool:
            s = b.node("Where", [o.x(3), s, b.scalar(float("-inf"), dt)])
        else:
            s = b.node("Add", [s, o.x(3, dt)])
    return [b.node("MatMul", [b.node("Softmax", [s], axis=-1), v])]


@_reg(FUNCTIONS, "new_zeros", "new_ones", "new_full", "new_empty", "zeros_like", "ones_like", "full_like",
      "empty_like")
def _filled(b, o):
    """A tensor of one value whose shape is the input's (``*_like``) or given (``new_*``): ConstantOfShape, each
    size that follows the dynamic axes read from the graph."""
    dt = o.out_dtype()
    like = o.name.endswith("_like")
    if like:
        shape = b.node("Shape", [o.x(0)])
        value = o.a(1, "fill_value") if o.name == "full_like" else None
    else:
        if o.name == "new_full":
            size, size2, value = o.a(1, "size"), o.dyn_a(1, "size"), o.a(2, "fill_value")
        else:
            size = o.args[1:] if len(o.args) > 1 else o.kwargs.get("size", ())
            size2 = None
            if len(o.args) > 1:
                changed = [o.dyn_a(i, "") for i in range(1, len(o.args))]
                size2 = None if all(c is None for c in changed) else tuple(
                    c if c is not None else a for c, a in zip(changed, o.args[1:]))
            value = None
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            size = size[0]
            size2 = None if size2 is None else size2[0]
        elif size2 is not None and len(size2) == 1 and isinstance(size2[0], (tuple, list)):
            size2 = size2[0]
        shape = _sizes(b, o, list(size), None if size2 is None else list(size2))
    if value is None:
        value = 1 if o.name in ("new_ones", "ones_like") else 0
    fill = b.onnx.helper.make_tensor("value", b.onnx_type(dt), [1], [bool(value) if dt is D.bool else value])
    return [b.node("ConstantOfShape", [shape], value=fill)]


def _sizes(b, o, size: list, size2) -> str:
    """A 1-D int64 shape tensor: constants, and the sizes that change in the second trace read from the graph."""
    if size2 is None or list(size2) == list(size):
        return b.ints(size)
    pieces = []
    for s1, s2 in zip(size, size2):
        if s1 == s2:
            pieces.append(b.ints([s1]))
            continue
        found = b.size_of(int(s1), int(s2))
        if found is None:
            raise OnnxExporterError(f"ember.onnx.export: '{o.name}': size {s1} changes with the input and no value "
                                    "of the graph has it")
        pieces.append(found)
    return b.node("Concat", pieces, axis=0)


@_reg(FUNCTIONS, "arange")
def _arange(b, o):
    """arange(end) / arange(start, end, step): Range, with a bound that follows a dynamic size read from the
    graph (Shape)."""
    n = len(o.args) if len(o.args) <= 3 else 3
    keys = ["start", "end", "step"] if n + ("end" in o.kwargs) >= 2 else ["end"]
    vals = {k: o.a(i, k) for i, k in enumerate(keys)}
    vals.setdefault("start", 0)
    vals.setdefault("step", 1)
    for k in ("start", "end", "step"):
        if vals.get(k) is None:
            vals[k] = {"start": 0, "step": 1}.get(k)
    dt = o.out_dtype()
    names = []
    for k in ("start", "end", "step"):
        v = vals[k]
        v2 = o.dyn_a(keys.index(k), k) if k in keys else None
        if v2 is not None and v2 != v:
            found = b.size_of(int(v), int(v2)) if float(v).is_integer() and float(v2).is_integer() else None
            if found is None:
                raise OnnxExporterError(f"ember.onnx.export: arange's {k} ({v}) changes with the input and no "
                                        "value of the graph has that size")
            name = b.node("Squeeze", [found, b.ints([0])])
            names.append(name if dt is D.int64 else b.node("Cast", [name], to=b.onnx_type(dt)))
        else:
            names.append(b.scalar(v, dt))
    return [b.node("Range", names)]


@_reg(FUNCTIONS, "embedding")
def _embedding(b, o):
    if o.a(3, "max_norm") is not None:
        raise OnnxExporterError("ember.onnx.export: embedding with max_norm (it renormalises the weight in place) "
                                "is not supported")
    return [b.node("Gather", [o.x(1), o.x(0, "int64")], axis=0)]


def _tup(v, n):
    return [int(v)] * n if isinstance(v, int) else [int(e) for e in v]


def _ndim(name: str) -> int:
    return int(name[-2])


@_reg(FUNCTIONS, "max_pool1d", "max_pool2d", "max_pool3d")
def _max_pool(b, o):
    n = _ndim(o.name)
    k = _tup(o.a(1, "kernel_size"), n)
    stride = o.a(2, "stride")
    s = k if stride is None or stride == [] or stride == () else _tup(stride, n)
    p = _tup(o.a(3, "padding", 0), n)
    d = _tup(o.a(4, "dilation", 1), n)
    ceil = bool(o.a(5, "ceil_mode", False))
    if o.a(6, "return_indices", False):
        raise OnnxExporterError("ember.onnx.export: max pooling with return_indices=True is not supported")
    return [b.node("MaxPool", [o.x(0)], kernel_shape=k, strides=s, pads=p + p, dilations=d, ceil_mode=int(ceil))]


@_reg(FUNCTIONS, "avg_pool1d", "avg_pool2d", "avg_pool3d")
def _avg_pool(b, o):
    n = _ndim(o.name)
    k = _tup(o.a(1, "kernel_size"), n)
    stride = o.a(2, "stride")
    s = k if stride is None or stride == [] or stride == () else _tup(stride, n)
    p = _tup(o.a(3, "padding", 0), n)
    ceil = bool(o.a(4, "ceil_mode", False))
    include = bool(o.a(5, "count_include_pad", True))
    if n >= 2 and o.a(6, "divisor_override") is not None:
        raise OnnxExporterError("ember.onnx.export: avg_pool2d with divisor_override is not supported")
    return [b.node("AveragePool", [o.x(0)], kernel_shape=k, strides=s, pads=p + p, ceil_mode=int(ceil),
                   count_include_pad=int(include))]


@_reg(FUNCTIONS, "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
      "adaptive_max_pool2d", "adaptive_max_pool3d")
def _adaptive_pool(b, o):
    n = _ndim(o.name)
    out = _tup(o.a(1, "output_size"), n) if not isinstance(o.a(1, "output_size"), (list, tuple)) else \
        [None if v is None else int(v) for v in o.a(1, "output_size")]
    ins = o.shape_in(0)[-n:]
    avg = "avg" in o.name
    if "max" in o.name and o.a(2, "return_indices", False):
        raise OnnxExporterError("ember.onnx.export: adaptive max pooling with return_indices=True is not supported")
    if all(v == 1 for v in out):
        return [b.node("GlobalAveragePool" if avg else "GlobalMaxPool", [o.x(0)])]
    out = [i if v is None else v for v, i in zip(out, ins)]
    ins2 = ins if o.shape_in2(0) is None else o.shape_in2(0)[-n:]
    if all(i % v == 0 for i, v in zip(ins, out)) and tuple(ins2) == tuple(ins):
        k = [i // v for i, v in zip(ins, out)]   # equal windows: an ordinary pool
        return [b.node("AveragePool" if avg else "MaxPool", [o.x(0)], kernel_shape=k, strides=k)]
    raise OnnxExporterError(f"ember.onnx.export: '{o.name}' to output size {out} from {list(ins)} (unequal "
                            "windows) is not supported")


# ----- recurrent layers: one ONNX op per layer --------------------------------------------------------------------

# PyTorch's gate blocks, in the order ONNX wants them: LSTM i f g o -> i o f c; GRU r z n -> z r h
_GATES = {"LSTM": (0, 3, 1, 2), "GRU": (1, 0, 2), "RNN": (0,)}


@_reg(MODULES, "LSTM", "GRU", "RNN")
def _rnn(b, o):
    m = o.module
    kind = type(m).__name__ if type(m).__name__ in _GATES else o.name
    if getattr(m, "proj_size", 0):
        raise OnnxExporterError("ember.onnx.export: LSTM with proj_size is not supported")
    x = o.x(0)
    unbatched = len(o.shape_in(0)) == 2   # (L, H_in): a batch of one, taken away again at the end
    H, layers, dirs = m.hidden_size, m.num_layers, 2 if m.bidirectional else 1
    hx = o.args[1] if len(o.args) > 1 else o.kwargs.get("hx")
    if unbatched:
        x = b.node("Unsqueeze", [x, b.ints([1])])
    elif m.batch_first:
        x = b.node("Transpose", [x], perm=[1, 0, 2])
    gates = _GATES[kind]
    attrs = {"hidden_size": H, "direction": "bidirectional" if dirs == 2 else "forward"}
    if kind == "GRU":
        attrs["linear_before_reset"] = 1
    if kind == "RNN":
        attrs["activations"] = ["Relu" if m.nonlinearity == "relu" else "Tanh"] * dirs
    hs, cs = [], []
    for layer in range(layers):
        W, R, B = [], [], []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            W.append(_blocks(b, m, "weight_ih" + sfx, gates, H))
            R.append(_blocks(b, m, "weight_hh" + sfx, gates, H))
            if m.bias:
                B.append(b.node("Concat", [_blocks(b, m, "bias_ih" + sfx, gates, H),
                                           _blocks(b, m, "bias_hh" + sfx, gates, H)], axis=1))
        ins = [x, _cat0(b, W), _cat0(b, R), _cat0(b, B) if B else ""]
        if hx is not None:
            h0, c0 = (hx[0], hx[1]) if kind == "LSTM" else (hx, None)
            ins += ["", _layer_state(b, o, h0, layer, dirs, unbatched)]
            if c0 is not None:
                ins.append(_layer_state(b, o, c0, layer, dirs, unbatched))
        n_out = 3 if kind == "LSTM" else 2
        outs = b.node(kind, ins, n=n_out, **attrs)
        y = outs[0]   # (seq, dirs, batch, H) -> (seq, batch, dirs * H)
        if dirs == 1:
            x = b.node("Squeeze", [y, b.ints([1])])
        else:
            x = b.node("Reshape", [b.node("Transpose", [y], perm=[0, 2, 1, 3]), b.ints([0, 0, -1])])
        hs.append(outs[1])
        if kind == "LSTM":
            cs.append(outs[2])
    res = [x, _cat0(b, hs)] + ([_cat0(b, cs)] if kind == "LSTM" else [])
    if unbatched:
        return [b.node("Squeeze", [r, b.ints([1])]) for r in res]
    if m.batch_first:
        res[0] = b.node("Transpose", [x], perm=[1, 0, 2])
    return res


def _blocks(b, m, pname: str, gates, H: int) -> str:
    """A weight (or bias) of the layer with its gate blocks in ONNX's order, and a leading direction axis."""
    w = b.param_name(getattr(m, pname))
    if gates != tuple(range(len(gates))):
        w = b.node("Concat", [b.node("Slice", [w, b.ints([g * H]), b.ints([(g + 1) * H]), b.ints([0])])
                              for g in gates], axis=0)
    return b.node("Unsqueeze", [w, b.ints([0])])


def _cat0(b, names: list) -> str:
    return names[0] if len(names) == 1 else b.node("Concat", names, axis=0)


def _layer_state(b, o, h, layer: int, dirs: int, unbatched: bool) -> str:
    h = o.name_of(h)
    if unbatched:   # (layers * dirs, H) -> (layers * dirs, 1, H)
        h = b.node("Unsqueeze", [h, b.ints([1])])
    return b.node("Slice", [h, b.ints([layer * dirs]), b.ints([(layer + 1) * dirs]), b.ints([0])])


# ----- more elementwise: closed forms ------------------------------------------------------------------------------

@_reg(PRIMS, "erfc")
def _erfc(b, o):
    return [b.node("Sub", [b.scalar(1, o.out_dtype()), b.node("Erf", [o.x(0)])])]


@_reg(PRIMS, "logit")
def _logit(b, o):
    dt, x = o.out_dtype(), o.x(0)
    eps = o.p("eps")
    if eps is not None:
        x = b.node("Clip", [x, b.scalar(eps, dt), b.scalar(1 - eps, dt)])
    return [b.node("Log", [b.node("Div", [x, b.node("Sub", [b.scalar(1, dt), x])])])]


@_reg(PRIMS, "lerp")
def _lerp(b, o):   # start + weight * (end - start)
    dt = o.out_dtype()
    a, e, w = o.x(0, dt), o.x(1, dt), o.x(2, dt)
    return [b.node("Add", [a, b.node("Mul", [w, b.node("Sub", [e, a])])])]


@_reg(PRIMS, "xlogy")
def _xlogy(b, o):   # 0 where x == 0 (unless y is NaN), else x * log(y)
    dt = o.out_dtype()
    x, y = o.x(0, dt), o.x(1, dt)
    zero = b.node("And", [b.node("Equal", [x, b.scalar(0, dt)]), b.node("Not", [b.node("IsNaN", [y])])])
    return [b.node("Where", [zero, b.scalar(0, dt), b.node("Mul", [x, b.node("Log", [y])])])]


@_reg(PRIMS, "hardshrink", "softshrink")
def _shrink(b, o):
    lambd = float(o.p("lambd"))
    return [b.node("Shrink", [o.x(0)], lambd=lambd, bias=lambd if o.name == "softshrink" else 0.0)]


@_reg(PRIMS, "logaddexp")
def _logaddexp(b, o):   # max + log(1 + exp(-|a - b|))
    dt = o.out_dtype()
    x, y = o.x(0, dt), o.x(1, dt)
    m = b.node("Max", [x, y])
    d = b.node("Neg", [b.node("Abs", [b.node("Sub", [x, y])])])
    return [b.node("Add", [m, b.node("Log", [b.node("Add", [b.scalar(1, dt), b.node("Exp", [d])])])])]


@_reg(PRIMS, "fmin", "fmax")
def _fmin(b, o):   # NaN-ignoring min / max
    dt = o.out_dtype()
    x, y = o.x(0, dt), o.x(1, dt)
    m = b.node("Min" if o.name == "fmin" else "Max", [x, y])
    return [b.node("Where", [b.node("IsNaN", [x]), y, b.node("Where", [b.node("IsNaN", [y]), x, m])])]


@_reg(PRIMS, "nan_to_num")
def _nan_to_num(b, o):
    dt = o.out_dtype()
    if not dt.is_floating_point:
        return [b.node("Identity", [o.x(0)])]
    fi = D.finfo(dt)
    nan, pos, neg = o.p("nan"), o.p("posinf"), o.p("neginf")
    x = o.x(0)
    y = b.node("Where", [b.node("IsNaN", [x]), b.scalar(0.0 if nan is None else nan, dt), x])
    y = b.node("Where", [b.node("IsInf", [x], detect_negative=0), b.scalar(fi.max if pos is None else pos, dt), y])
    y = b.node("Where", [b.node("IsInf", [x], detect_positive=0), b.scalar(fi.min if neg is None else neg, dt), y])
    return [y]


@_reg(PRIMS, "einsum")
def _einsum(b, o):
    if o.p("sizes") is not None:
        raise o.unsupported()
    dt = o.out_dtype()
    return [b.node("Einsum", [o.x(i, dt) for i in range(len(o.args))], equation=o.p("eq").replace(" ", ""))]


@_reg(PRIMS, "roll")
def _roll(b, o):   # per dimension: the last `shift` elements first (Slice, Concat)
    x = o.x(0)
    shape = o.shape_in(0)
    shifts, dims = o.p("shifts"), o.p("dims")
    if o.shape_in2(0) is not None and tuple(o.shape_in2(0)) != tuple(shape):
        raise OnnxExporterError("ember.onnx.export: roll over a dynamic axis is not supported")
    if dims is None or len(dims) == 0:
        raise o.unsupported()
    for sh, d in zip(shifts, dims):
        n = shape[d]
        k = sh % n if n else 0
        if k:
            tail = b.node("Slice", [x, b.ints([n - k]), b.ints([n]), b.ints([d])])
            head = b.node("Slice", [x, b.ints([0]), b.ints([n - k]), b.ints([d])])
            x = b.node("Concat", [tail, head], axis=d)
    return [x]


@_reg(PRIMS, "pixel_shuffle")
def _pixel_shuffle(b, o):
    if len(o.shape_in(0)) != 4:
        raise o.unsupported()
    return [b.node("DepthToSpace", [o.x(0)], blocksize=int(o.p("upscale_factor")), mode="CRD")]


# ----- max / min with indices, topk, sort ------------------------------------------------------------------------

@_reg(FUNCTIONS, "max", "min")
def _max_fn(b, o):
    """x.max() (every element), x.max(dim) (values and indices), x.max(other) (elementwise)."""
    big = o.name == "max"
    other = o.a(1, "dim") if len(o.args) > 1 else o.kwargs.get("other", o.kwargs.get("dim"))
    if isinstance(other, (VRef, CRef)):
        dt = o.out_dtype()
        return [b.node("Max" if big else "Min", [o.x(0, dt), o.name_of(other, dt)])]
    x = o.x(0)
    if other is None:
        return [_reduce(b, "ReduceMax" if big else "ReduceMin", x, list(range(len(o.shape_in(0)))), False)]
    dim = int(other) % max(len(o.shape_in(0)), 1)
    keep = bool(o.a(2, "keepdim", False))
    values = _reduce(b, "ReduceMax" if big else "ReduceMin", x, [dim], keep)
    indices = b.node("ArgMax" if big else "ArgMin", [x], axis=dim, keepdims=int(keep))
    return [values, indices]


@_reg(FUNCTIONS, "topk")
def _topk(b, o):
    k, dim = o.a(1, "k"), o.a(2, "dim", -1)
    largest = o.a(3, "largest", True)
    if o.dyn_a(1, "k") is not None:
        raise OnnxExporterError("ember.onnx.export: topk with a k that changes with the input is not supported")
    axis = int(dim) % len(o.shape_in(0))
    values, indices = b.node("TopK", [o.x(0), b.ints([k])], n=2, axis=axis, largest=int(bool(largest)), sorted=1)
    return [values, indices]


@_reg(FUNCTIONS, "sort")
def _sort(b, o):
    dim = o.a(1, "dim", -1)
    descending = o.a(2, "descending", False)
    if isinstance(dim, bool):   # sort(stable, dim=..., descending=...) forms: keywords only here
        raise o.unsupported()
    axis = int(dim) % len(o.shape_in(0))
    x = o.x(0)
    n = b.node("Gather", [b.node("Shape", [x]), b.ints([axis])], axis=0)
    values, indices = b.node("TopK", [x, n], n=2, axis=axis, largest=int(bool(descending)), sorted=1)
    return [values, indices]


@_reg(FUNCTIONS, "isnan", "isinf", "isfinite", "isposinf", "isneginf")
def _isnan(b, o):
    x = o.x(0)
    if not o.dtype_in(0).is_floating_point:   # integers are never NaN or infinite: all True or all False
        same = b.node("Equal", [x, x])
        return [same if o.name == "isfinite" else b.node("Not", [same])]
    if o.name == "isnan":
        return [b.node("IsNaN", [x])]
    if o.name == "isfinite":
        return [b.node("Not", [b.node("Or", [b.node("IsNaN", [x]), b.node("IsInf", [x])])])]
    kw = {"isposinf": {"detect_negative": 0}, "isneginf": {"detect_positive": 0}}.get(o.name, {})
    return [b.node("IsInf", [x], **kw)]


@_reg(FUNCTIONS, "where")
def _where_fn(b, o):
    if len(o.args) + len(o.kwargs) < 3:   # where(cond): nonzero's tuple, a data-dependent shape
        raise OnnxExporterError("ember.onnx.export: where(condition) (the indices of True elements, a "
                                "data-dependent shape) is not supported")
    dt = o.out_dtype()
    cond = o.a(0, "condition")
    x, y = o.a(1, "input"), o.a(2, "other")
    return [b.node("Where", [o.name_of(cond, "bool"), o.name_of(x, dt), o.name_of(y, dt)])]


@_reg(FUNCTIONS, "setitem")
def _setitem(b, o):
    """x[index] = value with basic indexing (ints, slices with positive steps, None, Ellipsis) on a tensor whose
    shape does not change with the dynamic axes: ScatterND at the region's positions (constants, found by indexing a
    tensor of positions the same way), the value broadcast to the region."""
    index = o.args[1]
    parts = index if isinstance(index, tuple) else (index,)
    for i in parts:
        if not (i is None or i is Ellipsis or isinstance(i, int) or
                isinstance(i, slice) and (i.step is None or i.step > 0)):
            raise OnnxExporterError("ember.onnx.export: x[index] = value with an index other than ints, slices with "
                                    "positive steps, None and ... is not supported")
    shape = o.shape_in(0)
    if o.shape_in2(0) is not None and tuple(o.shape_in2(0)) != tuple(shape):
        raise OnnxExporterError("ember.onnx.export: x[index] = value on a tensor whose shape follows the dynamic "
                                "axes is not supported")
    n = 1
    for d in shape:
        n *= d
    positions = C.arange(n).reshape(shape)[index]
    region = list(positions.shape)
    flat = positions.reshape(-1)
    coords = []
    for d in reversed(shape):   # the flat positions as coordinates, last dimension first
        coords.append(flat % d)
        flat = flat // d
    idx = stack(list(reversed(coords)), 1) if shape else C.zeros((1, 0), dtype=D.int64)
    dt = o.out_dtype()
    value = o.x(2, dt)
    updates = b.node("Reshape", [b.node("Expand", [value, b.ints(region)]), b.ints([-1])])
    return [b.node("ScatterND", [o.x(0), b.const_tensor(idx), updates])]
