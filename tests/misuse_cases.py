"""The misuse catalogue of issue 5: bad input must get PyTorch's exception type, never a wrong answer.

Each case is a small function ``fn(lib)`` run once with ``lib = torch`` and once with ``lib = ember``
(``tests/test_misuse.py`` compares them). Most cases are generated from tables: every public function
and Tensor method that ember has is called with ``None``, a list, a string or a dtype where a tensor
goes, with dims out of range, mismatched shapes, bad keywords and wrong argument counts. Hand-written
cases cover creation arguments, autograd misuse and indexing, and valid-but-unusual calls PyTorch
accepts (their values and gradients must match).

A case whose fix lies in a file being rewritten by someone else is marked in ``XFAIL`` (strict) with a
reason saying where the fix belongs, so it flips to a failure (and must be unmarked) once fixed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import ember


@dataclass
class Case:
    id: str
    fn: Callable
    msg: str | None = None          # a fragment both messages must contain (checks that ember names the op)
    op: str | None = None           # where torch's message names this op, ember's must name it too
    rtol: float = 1e-5
    tags: tuple = field(default_factory=tuple)


CASES: list[Case] = []


def case(id_: str, fn: Callable, msg: str | None = None, rtol: float = 1e-5, op: str | None = None) -> None:
    assert all(c.id != id_ for c in CASES), f"duplicate case id {id_}"
    CASES.append(Case(id_, fn, msg=msg, op=op, rtol=rtol))


def has(name: str, obj=ember) -> bool:
    """Skip what ember does not expose yet (others are adding functions in parallel)."""
    return hasattr(obj, name)


# ----- operands ------------------------------------------------------------------------------------

def m22(L, rg=False):
    return L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=rg)


def v2(L):
    return L.tensor([1.0, 2.0])


def b3(L):
    return L.ones(2, 2, 2)


def s0(L):
    return L.tensor(2.0)


def i22(L):
    return L.tensor([[1, 2], [3, 4]])


def bool2(L):
    return L.tensor([True, False])


BAD = {   # what is passed where a tensor goes
    "None": lambda L: None,
    "list": lambda L: [1.0, 2.0],
    "str": lambda L: "a",
    "dtype": lambda L: L.float32,
}

# name: (valid positional arguments, positions that hold tensors)
UNARY = ["abs", "absolute", "cos", "exp", "log", "neg", "negative", "relu", "round", "sigmoid", "sign", "sin",
         "sqrt", "tanh", "isfinite", "isinf", "isnan", "logical_not", "clone", "flatten", "t", "sum", "mean",
         "std", "norm", "amax", "amin", "argmax", "argmin", "max", "min", "any", "all", "squeeze", "numel",
         "is_floating_point", "clamp_min", "clamp_max"]
BINARY = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder",
          "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "equal", "allclose", "isclose", "matmul",
          "mm", "dot", "outer"]
SIGS: dict[str, tuple[Callable, tuple]] = {n: ((lambda L: [m22(L)]), (0,)) for n in UNARY}
SIGS.update({n: ((lambda L: [m22(L), m22(L)]), (0, 1)) for n in BINARY})
SIGS["clamp_min"] = (lambda L: [m22(L), 1.0], (0,))
SIGS["clamp_max"] = (lambda L: [m22(L), 1.0], (0,))
SIGS["dot"] = (lambda L: [v2(L), v2(L)], (0, 1))
SIGS["outer"] = (lambda L: [v2(L), v2(L)], (0, 1))
SIGS.update({
    "mv": (lambda L: [m22(L), v2(L)], (0, 1)),
    "bmm": (lambda L: [b3(L), b3(L)], (0, 1)),
    "where": (lambda L: [m22(L) > 2, m22(L), m22(L)], (0, 1, 2)),
    "clamp": (lambda L: [m22(L), 0.0, 1.0], (0,)),
    "bitwise_and": (lambda L: [i22(L), i22(L)], (0, 1)),
    "bitwise_or": (lambda L: [i22(L), i22(L)], (0, 1)),
    "bitwise_not": (lambda L: [i22(L)], (0,)),
    "reshape": (lambda L: [m22(L), (4,)], (0,)),
    "permute": (lambda L: [m22(L), (1, 0)], (0,)),
    "transpose": (lambda L: [m22(L), 0, 1], (0,)),
    "unsqueeze": (lambda L: [m22(L), 0], (0,)),
    "broadcast_to": (lambda L: [v2(L), (2, 2)], (0,)),
    "zeros_like": (lambda L: [m22(L)], (0,)),
    "ones_like": (lambda L: [m22(L)], (0,)),
    "empty_like": (lambda L: [m22(L)], (0,)),
    "full_like": (lambda L: [m22(L), 7.0], (0,)),
    "rand_like": (lambda L: [m22(L)], (0,)),
    "randn_like": (lambda L: [m22(L)], (0,)),
})


# Aliases may name their canonical op in messages (abs for absolute): PyTorch's own kernels do too.
def _aliases() -> set:
    """Registered names whose function is registered under another name first: its messages name that op."""
    from ember.ops._registry import EXPORTS, SUBMODULES
    first: dict = {}
    out = set()
    for table in [EXPORTS] + list(SUBMODULES.values()):
        for n, f in table.items():
            if getattr(f, "_ember_public", None) is not None:   # the registry's copy or wrapper for this name
                f = f.__wrapped__
            if getattr(f, "__name__", n) != n or first.setdefault(id(f), n) != n:
                out.add(n)
    return out


ALIASES = _aliases()


def _call(name, build, pos, bad):
    def fn(L):
        args = build(L)
        args[pos] = BAD[bad](L)
        return getattr(L, name)(*args)
    return fn


for _name, (_build, _pos) in SIGS.items():
    if not has(_name):
        continue
    for _p in _pos:
        for _bad in BAD:
            case(f"badarg-{_name}-{_p}-{_bad}", _call(_name, _build, _p, _bad),
                 op=None if _name in ALIASES else f"{_name}(")


def _seq_call(name, bad, elem):
    def fn(L):
        seq = [m22(L), BAD[bad](L)] if elem else BAD[bad](L)
        return getattr(L, name)(seq)
    return fn


for _name in ("cat", "stack", "concat"):
    if has(_name):
        for _bad in BAD:
            case(f"badarg-{_name}-elem-{_bad}", _seq_call(_name, _bad, True))
        case(f"badarg-{_name}-None", _seq_call(_name, "None", False))
        case(f"badarg-{_name}-tensor", lambda L, n=_name: getattr(L, n)(m22(L)))
        case(f"badarg-{_name}-empty", lambda L, n=_name: getattr(L, n)([]))

# Tensor methods: bad values where the other operand goes.
METHOD_BINARY = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "pow", "maximum", "minimum",
                 "eq", "ne", "lt", "le", "gt", "ge", "equal", "allclose", "isclose", "matmul", "mm", "dot", "outer",
                 "bmm", "mv", "expand_as", "view_as", "reshape_as", "copy_", "add_", "sub_", "mul_", "div_", "pow_",
                 "__add__", "__mul__", "__matmul__", "__lt__", "__iadd__"]


def _meth_call(name, bad):
    def fn(L):
        x = b3(L) if name == "bmm" else v2(L) if name in ("dot", "outer") else m22(L)
        return getattr(x, name)(BAD[bad](L))
    return fn


for _name in METHOD_BINARY:
    if has(_name, ember.Tensor):
        for _bad in BAD:
            case(f"badmeth-{_name}-{_bad}", _meth_call(_name, _bad))

# Scalars where a tensor goes: some ops take them (weak scalars), others refuse.
for _name in ("add", "mul", "maximum", "matmul", "mm", "dot", "where", "eq", "pow", "clamp", "equal", "isclose"):
    if has(_name):
        case(f"scalar-{_name}-other", lambda L, n=_name: getattr(L, n)(*([m22(L) > 2, m22(L), 2.0] if n == "where"
                                                                          else [m22(L), 2.0])))
        case(f"scalar-{_name}-self", lambda L, n=_name: getattr(L, n)(*([m22(L) > 2, 2.0, m22(L)] if n == "where"
                                                                         else [2.0, m22(L)])))

# ----- dtypes ----------------------------------------------------------------------------------------
# Integer / bool / half inputs: PyTorch either promotes (values must match) or refuses (same type).
DTYPE_INPUTS = {
    "int": lambda L: L.tensor([[1, 2], [3, 4]]),
    "bool": lambda L: L.tensor([[True, False], [True, True]]),
    "half": lambda L: L.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=L.float16),
    "int32": lambda L: L.tensor([[1, 2], [3, 4]], dtype=L.int32),
}
DTYPE_OPS = {
    "sqrt": lambda L, x: L.sqrt(x), "exp": lambda L, x: L.exp(x), "sigmoid": lambda L, x: L.sigmoid(x),
    "tanh": lambda L, x: L.tanh(x), "neg": lambda L, x: L.neg(x), "abs": lambda L, x: L.abs(x),
    "relu": lambda L, x: L.relu(x), "sign": lambda L, x: L.sign(x), "round": lambda L, x: L.round(x),
    "sum": lambda L, x: L.sum(x), "mean": lambda L, x: L.mean(x), "mean_dim": lambda L, x: x.mean(0),
    "std": lambda L, x: L.std(x), "norm": lambda L, x: L.norm(x), "amax": lambda L, x: L.amax(x, 0),
    "max": lambda L, x: L.max(x), "argmax": lambda L, x: L.argmax(x), "matmul": lambda L, x: L.matmul(x, x),
    "mm_mixed": lambda L, x: L.mm(x, m22(L)), "dot": lambda L, x: L.dot(x[0], x[1]),
    "bitwise_and": lambda L, x: L.bitwise_and(x, x), "bitwise_not": lambda L, x: L.bitwise_not(x),
    "div": lambda L, x: L.div(x, x), "floor_divide": lambda L, x: L.floor_divide(x, x),
    "remainder": lambda L, x: L.remainder(x, 2), "pow_neg": lambda L, x: L.pow(x, -1),
    "sub": lambda L, x: L.sub(x, x), "clamp": lambda L, x: L.clamp(x, 0, 2),
    "requires_grad_": lambda L, x: x.requires_grad_(), "isnan": lambda L, x: L.isnan(x),
    "logical_not": lambda L, x: L.logical_not(x), "sum_dtype": lambda L, x: L.sum(x, dtype=L.float64),
    "cumulative_add_": lambda L, x: x.add_(1.5), "mul_float_": lambda L, x: x.mul_(0.5),
    "div_": lambda L, x: x.div_(2), "sub_bool": lambda L, x: x - x,
}
for _dn, _mk in DTYPE_INPUTS.items():
    for _on, _op in DTYPE_OPS.items():
        case(f"dtype-{_on}-{_dn}", lambda L, mk=_mk, op=_op: op(L, mk(L)), rtol=1e-3)
case("dtype-mm-float-double", lambda L: L.mm(m22(L), m22(L).double()))
case("dtype-matmul-float-int", lambda L: L.matmul(m22(L), i22(L)))
case("dtype-dot-mixed", lambda L: L.dot(v2(L), L.tensor([1, 2])))
case("dtype-where-cond-float", lambda L: L.where(m22(L), m22(L), m22(L)))
case("dtype-where-cond-int", lambda L: L.where(i22(L), m22(L), m22(L)))
case("dtype-bitwise-float", lambda L: L.bitwise_or(m22(L), m22(L)))
case("dtype-bitwise-not-float", lambda L: L.bitwise_not(m22(L)))
case("dtype-inplace-float-into-int", lambda L: i22(L).add_(m22(L)))
case("dtype-inplace-float-into-bool", lambda L: L.tensor([True]).mul_(2.5))
case("dtype-copy_-double-into-float", lambda L: m22(L).copy_(m22(L).double()))
case("dtype-sub-bool-fn", lambda L: L.sub(bool2(L), bool2(L)))
case("dtype-neg-op-bool", lambda L: -bool2(L))
case("dtype-tensor-sub-bool-scalar", lambda L: v2(L) - True)

# ----- dims out of range -----------------------------------------------------------------------------
DIM_OPS = {
    "sum": lambda L, x, d: L.sum(x, d), "sum.m": lambda L, x, d: x.sum(d),
    "mean": lambda L, x, d: L.mean(x, d), "mean.m": lambda L, x, d: x.mean(d),
    "std": lambda L, x, d: L.std(x, d), "norm": lambda L, x, d: L.norm(x, dim=d),
    "amax": lambda L, x, d: L.amax(x, d), "amin.m": lambda L, x, d: x.amin(d),
    "argmax": lambda L, x, d: L.argmax(x, d), "argmin.m": lambda L, x, d: x.argmin(d),
    "max": lambda L, x, d: L.max(x, d), "min.m": lambda L, x, d: x.min(d),
    "any": lambda L, x, d: L.any(x, d), "all.m": lambda L, x, d: x.all(d),
    "squeeze": lambda L, x, d: L.squeeze(x, d), "unsqueeze": lambda L, x, d: L.unsqueeze(x, d),
    "flatten": lambda L, x, d: L.flatten(x, d), "transpose": lambda L, x, d: L.transpose(x, d, 0),
    "transpose.m": lambda L, x, d: x.transpose(0, d), "cat": lambda L, x, d: L.cat([x, x], d),
    "stack": lambda L, x, d: L.stack([x, x], d), "size": lambda L, x, d: x.size(d),
    "stride": lambda L, x, d: x.stride(d), "permute": lambda L, x, d: x.permute(d, 0),
}
DIMS_2D = {"pos": 2, "neg": -3, "far": 100, "str": "a", "float": 1.0, "bool": True, "last": -1}
DIMS_0D = {"pos": 1, "neg": -2, "zero": 0, "minus1": -1}
for _on, _op in DIM_OPS.items():
    for _dn, _d in DIMS_2D.items():
        case(f"dim-{_on}-2d-{_dn}", lambda L, op=_op, d=_d: op(L, m22(L), d))
    for _dn, _d in DIMS_0D.items():
        if _on in ("permute",):
            continue
        case(f"dim-{_on}-0d-{_dn}", lambda L, op=_op, d=_d: op(L, s0(L), d))
for _on in ("sum", "mean", "amax", "std", "norm"):
    _f = DIM_OPS[_on]
    case(f"dim-{_on}-list-dup", lambda L, op=_f: op(L, m22(L), [0, 0]))
    case(f"dim-{_on}-list-dup-neg", lambda L, op=_f: op(L, m22(L), [1, -1]))
    case(f"dim-{_on}-list-oor", lambda L, op=_f: op(L, m22(L), [0, 2]))
    case(f"dim-{_on}-list-str", lambda L, op=_f: op(L, m22(L), [0, "a"]))
    case(f"dim-{_on}-list-float", lambda L, op=_f: op(L, m22(L), [0.0]))
    case(f"dim-{_on}-0d-list", lambda L, op=_f: op(L, s0(L), [0]))
    case(f"dim-{_on}-0d-list-oor", lambda L, op=_f: op(L, s0(L), [1]))
case("dim-permute-dup", lambda L: m22(L).permute(0, 0))
case("dim-permute-short", lambda L: m22(L).permute(0))
case("dim-permute-long", lambda L: m22(L).permute(0, 1, 2))
case("dim-flatten-start-after-end", lambda L: L.ones(2, 3, 4).flatten(2, 1))
case("dim-squeeze-tuple-oor", lambda L: L.ones(1, 2).squeeze((0, 5)))
case("dim-cat-0d", lambda L: L.cat([s0(L), s0(L)]))
case("dim-stack-0d", lambda L: L.stack([s0(L), s0(L)]))

# ----- shape mismatches -------------------------------------------------------------------------------
SHAPES = {
    "add": lambda L: L.ones(2, 3) + L.ones(4),
    "mul-3d": lambda L: L.ones(2, 3, 4) * L.ones(3, 3, 4),
    "maximum": lambda L: L.maximum(L.ones(2, 3), L.ones(2)),
    "where": lambda L: L.where(L.ones(3) > 0, L.ones(2), L.ones(3)),
    "eq": lambda L: L.ones(3) == L.ones(2),
    "mm": lambda L: L.mm(L.ones(2, 3), L.ones(2, 3)),
    "mm-1d": lambda L: L.mm(L.ones(2, 3), L.ones(3)),
    "mm-3d": lambda L: L.mm(L.ones(2, 2, 2), L.ones(2, 2)),
    "mv": lambda L: L.mv(L.ones(2, 3), L.ones(2)),
    "mv-2d": lambda L: L.mv(L.ones(2, 3), L.ones(3, 1)),
    "dot-len": lambda L: L.dot(L.ones(3), L.ones(2)),
    "dot-2d": lambda L: L.dot(L.ones(2, 2), L.ones(2, 2)),
    "bmm-batch": lambda L: L.bmm(L.ones(2, 2, 3), L.ones(3, 3, 2)),
    "bmm-broadcast-1": lambda L: L.bmm(L.ones(1, 2, 3), L.ones(4, 3, 2)),
    "bmm-inner": lambda L: L.bmm(L.ones(2, 2, 3), L.ones(2, 2, 2)),
    "bmm-2d": lambda L: L.bmm(L.ones(2, 3), L.ones(3, 2)),
    "matmul-inner": lambda L: L.matmul(L.ones(2, 3), L.ones(4, 5)),
    "matmul-batched": lambda L: L.matmul(L.ones(5, 2, 3), L.ones(5, 4, 2)),
    "matmul-batch": lambda L: L.matmul(L.ones(5, 2, 3), L.ones(4, 3, 2)),
    "matmul-0d": lambda L: L.matmul(s0(L), L.ones(2)),
    "matmul-vec-mat": lambda L: L.matmul(L.ones(3), L.ones(2, 4)),
    "outer-2d": lambda L: L.outer(L.ones(2, 2), L.ones(2)),
    "cat-sizes": lambda L: L.cat([L.ones(2, 3), L.ones(2, 4)]),
    "cat-ndim": lambda L: L.cat([L.ones(2, 3), L.ones(3)]),
    "stack-sizes": lambda L: L.stack([L.ones(2), L.ones(3)]),
    "reshape-size": lambda L: L.ones(6).reshape(4, 2),
    "reshape-two-minus1": lambda L: L.ones(6).reshape(-1, -1),
    "reshape-neg2": lambda L: L.ones(6).reshape(-2, 3),
    "reshape-minus1-nodiv": lambda L: L.ones(7).reshape(-1, 2),
    "reshape-float": lambda L: L.ones(6).reshape(2.0, 3),
    "reshape-str": lambda L: L.ones(6).reshape("a"),
    "reshape-none": lambda L: L.ones(6).reshape(None),
    "view-size": lambda L: L.ones(6).view(4, 2),
    "view-noncontig": lambda L: L.ones(2, 3).t().view(6),
    "expand-shrink": lambda L: L.ones(3).expand(2),
    "expand-non1": lambda L: L.ones(2, 3).expand(4, 3),
    "expand-fewer": lambda L: L.ones(2, 3).expand(3),
    "expand-neg-new": lambda L: L.ones(3).expand(-1, 3),
    "broadcast_to": lambda L: L.broadcast_to(L.ones(3), (2, 2)),
    "sum_to_size": lambda L: L.ones(2, 3).sum_to_size(4),
    "inplace-broadcast-out": lambda L: L.ones(3).add_(L.ones(2, 3)),
    "iadd-broadcast-out": lambda L: L.ones(3).__iadd__(L.ones(2, 3)),
    "copy_-shape": lambda L: L.ones(3).copy_(L.ones(2)),
    "isclose": lambda L: L.isclose(L.ones(3), L.ones(2)),
    "allclose": lambda L: L.allclose(L.ones(3), L.ones(2)),
    "equal-shape": lambda L: L.equal(L.ones(3), L.ones(2)),
}
for _n, _f in SHAPES.items():
    case(f"shape-{_n}", _f)

# ----- bad keyword names / wrong number of arguments ------------------------------------------------
KW = {
    "sum-dimm": lambda L: L.sum(m22(L), dimm=0), "sum.m-dimm": lambda L: m22(L).sum(dimm=0),
    "add-beta": lambda L: L.add(m22(L), m22(L), beta=2), "mean-axes": lambda L: L.mean(m22(L), axes=0),
    "reshape-shap": lambda L: m22(L).reshape(shap=(4,)), "ones-dtyp": lambda L: L.ones(2, dtyp=L.float32),
    "tensor-require_grad": lambda L: L.tensor([1.0], require_grad=True),
    "zeros-foo": lambda L: L.zeros(2, foo=1), "full-size-kw": lambda L: L.full(size=(2,), fill_value=1.0),
    "arange-stop": lambda L: L.arange(stop=3), "clamp-minimum": lambda L: L.clamp(m22(L), minimum=0),
    "transpose-d0": lambda L: L.transpose(m22(L), d0=0, d1=1), "backward-grad": lambda L: m22(L, True).sum().backward(grad=1),
    "max-axis-and-dim": lambda L: L.max(m22(L), 0, axis=0), "matmul-out-bad": lambda L: L.matmul(m22(L), m22(L), o=1),
    "to-foo": lambda L: m22(L).to(L.float64, foo=1), "sum-two-dims": lambda L: m22(L).sum(0, dim=1),
    "squeeze-axis": lambda L: L.ones(1, 2).squeeze(axis=0), "unsqueeze-axis": lambda L: L.unsqueeze(m22(L), axis=0),
    "cat-axis": lambda L: L.cat([m22(L), m22(L)], axis=1), "stack-axis": lambda L: L.stack([v2(L), v2(L)], axis=1),
    "eye-n-kw": lambda L: L.eye(n=2), "linspace-num": lambda L: L.linspace(0, 1, num=3),
    "view-size-kw": lambda L: m22(L).view(size=(4,)), "tensor-data-kw": lambda L: L.tensor(data=[1.0]),
}
for _n, _f in KW.items():
    case(f"kw-{_n}", _f)
NARGS = {
    "add-1": lambda L: L.add(m22(L)), "add-5": lambda L: L.add(m22(L), m22(L), 1, 2, 3),
    "mm-1": lambda L: L.mm(m22(L)), "mm-3": lambda L: L.mm(m22(L), m22(L), m22(L)),
    "matmul-0": lambda L: L.matmul(), "neg-2": lambda L: L.neg(m22(L), m22(L)),
    "exp-0": lambda L: L.exp(), "reshape-0": lambda L: m22(L).reshape(), "view-0": lambda L: m22(L).view(),
    "permute-0": lambda L: m22(L).permute(), "transpose-1": lambda L: m22(L).transpose(0),
    "transpose.f-1": lambda L: L.transpose(m22(L), 0), "cat-0": lambda L: L.cat(),
    "zeros-0": lambda L: L.zeros(), "ones-0": lambda L: L.ones(), "tensor-0": lambda L: L.tensor(),
    "eye-0": lambda L: L.eye(), "full-1": lambda L: L.full((2,)), "arange-0": lambda L: L.arange(),
    "linspace-2": lambda L: L.linspace(0, 1), "expand-0": lambda L: L.ones(1).expand(),
    "where-2": lambda L: L.where(m22(L) > 1, m22(L)), "where-1-value": lambda L: L.where(m22(L) > 1),
    "unsqueeze-0": lambda L: m22(L).unsqueeze(), "sum.m-4": lambda L: m22(L).sum(0, True, None, 1),
    "item-1": lambda L: s0(L).item(0), "clamp-0": lambda L: L.clamp(), "size-2": lambda L: m22(L).size(0, 1),
    "zeros_like-0": lambda L: L.zeros_like(), "flatten-3": lambda L: L.flatten(m22(L), 0, 1, 2),
    "add_-0": lambda L: m22(L).add_(), "fill_-0": lambda L: m22(L).fill_(),
}
for _n, _f in NARGS.items():
    case(f"nargs-{_n}", _f)

# ----- other bad argument values ---------------------------------------------------------------------
VALS = {
    "clamp-min-str": lambda L: L.clamp(m22(L), min="a"), "clamp-max-list": lambda L: m22(L).clamp(max=[1.0]),
    "clamp-none-none": lambda L: L.clamp(m22(L)), "clamp-min-gt-max": lambda L: L.clamp(m22(L), 3.0, 1.0),
    "clamp_min-str": lambda L: L.clamp_min(m22(L), "a"), "add-alpha-str": lambda L: L.add(m22(L), 1, alpha="a"),
    "add-alpha-float-int": lambda L: L.add(i22(L), i22(L), alpha=0.5), "pow-str": lambda L: L.pow(m22(L), "a"),
    "pow-none": lambda L: m22(L) ** None, "add-str": lambda L: m22(L) + "a", "radd-str": lambda L: "a" + m22(L),
    "mul-list": lambda L: m22(L) * [1.0, 2.0], "rmul-list": lambda L: [1.0, 2.0] * m22(L),
    "matmul-list": lambda L: m22(L) @ [1.0, 2.0], "truediv-none": lambda L: m22(L) / None,
    "lt-str": lambda L: m22(L) < "a", "eq-str": lambda L: m22(L) == "a", "eq-none": lambda L: m22(L) == None,  # noqa: E711
    "fill_-str": lambda L: m22(L).fill_("a"), "fill_-tensor-1d": lambda L: m22(L).fill_(v2(L)),
    "to-str": lambda L: m22(L).to("float32"), "to-int": lambda L: m22(L).to(3), "to-gpu": lambda L: m22(L).to("gpu"),
    "type-str": lambda L: m22(L).type("torch.DoubleTensor"), "type-bad": lambda L: m22(L).type("foo"),
    "sum-dtype-str": lambda L: L.sum(m22(L), dtype="float64"), "mean-dtype-int": lambda L: m22(L).mean(dtype=L.int64),
    "std-correction-str": lambda L: L.std(m22(L), correction="a"), "norm-p-str": lambda L: L.norm(m22(L), p="nuc"),
    "norm-p-str-bad": lambda L: L.norm(m22(L), p="foo"), "max-dim-tensor-other": lambda L: L.max(m22(L), m22(L)),
    "max-keepdim-str": lambda L: L.max(m22(L), 0, keepdim="yes"), "sum-keepdim-str": lambda L: m22(L).sum(0, keepdim="yes"),
    "sum-keepdim-int": lambda L: m22(L).sum(0, keepdim=1), "squeeze-str": lambda L: m22(L).squeeze("a"),
    "expand-str": lambda L: m22(L).expand("a"), "view-dtype": lambda L: m22(L).view(L.int32),
    "new_zeros-str": lambda L: m22(L).new_zeros("a"), "new_ones-neg": lambda L: m22(L).new_ones(-1),
    "size-str": lambda L: m22(L).size("a"), "isclose-rtol-str": lambda L: L.isclose(v2(L), v2(L), rtol="a"),
    "round-decimals-str": lambda L: L.round(m22(L), decimals="a"), "where-cond-list": lambda L: L.where([True, False], v2(L), v2(L)),
    "requires_grad_-str": lambda L: m22(L).requires_grad_("yes"), "requires_grad_-none": lambda L: m22(L).requires_grad_(None),
    "requires_grad_-int": lambda L: m22(L).requires_grad_(1), "requires_grad-attr-str": lambda L: _setattr(m22(L), "requires_grad", "yes"),
    "requires_grad-attr-int": lambda L: _setattr(m22(L), "requires_grad", 1),
    "requires_grad-attr-none": lambda L: _setattr(m22(L), "requires_grad", None),
    "requires_grad-attr-int-tensor": lambda L: _setattr(i22(L), "requires_grad", True),
    "requires_grad_-int-tensor": lambda L: i22(L).requires_grad_(),
    "requires_grad_-false-int": lambda L: i22(L).requires_grad_(False),
    "grad-attr-list": lambda L: _setattr(m22(L, True), "grad", [1.0]),
    "grad-attr-shape": lambda L: _setattr(m22(L, True), "grad", v2(L)),
    "grad-attr-dtype": lambda L: _setattr(m22(L, True), "grad", m22(L).double()),
    "data-attr-list": lambda L: _setattr(m22(L), "data", [1.0]),
    "item-multi": lambda L: m22(L).item(), "float-multi": lambda L: float(m22(L)), "int-multi": lambda L: int(v2(L)),
    "bool-multi": lambda L: bool(v2(L)), "bool-empty": lambda L: bool(L.ones(0)), "index-float": lambda L: [1, 2][s0(L)],
    "len-0d": lambda L: len(s0(L)), "iter-0d": lambda L: iter(s0(L)), "numpy-requires-grad": lambda L: m22(L, True).numpy(),
    "numpy-force": lambda L: m22(L, True).numpy(force=True), "array-requires-grad": lambda L: __import__("numpy").asarray(m22(L, True)),
    "float-requires-grad": lambda L: float(s0(L).requires_grad_()), "tolist-0d": lambda L: s0(L).tolist(),
    "format-1d": lambda L: format(v2(L), ".2f"), "format-0d": lambda L: format(s0(L), ".2f"),
}


def _setattr(obj, name, value):
    setattr(obj, name, value)
    return obj


for _n, _f in VALS.items():
    case(f"val-{_n}", _f)

# ----- creation functions ----------------------------------------------------------------------------
CREATE = {
    "zeros": lambda L, **kw: L.zeros(2, **kw), "ones": lambda L, **kw: L.ones((2, 2), **kw),
    "empty": lambda L, **kw: L.empty(2, **kw).zero_(), "full": lambda L, **kw: L.full((2,), 1.5, **kw),
    "tensor": lambda L, **kw: L.tensor([1.0, 2.0], **kw), "arange": lambda L, **kw: L.arange(3.0, **kw),
    "linspace": lambda L, **kw: L.linspace(0, 1, 3, **kw), "eye": lambda L, **kw: L.eye(2, **kw),
    "zeros_like": lambda L, **kw: L.zeros_like(v2(L), **kw), "ones_like": lambda L, **kw: L.ones_like(v2(L), **kw),
    "full_like": lambda L, **kw: L.full_like(v2(L), 3.0, **kw),
    "empty_like": lambda L, **kw: L.empty_like(v2(L), **kw).zero_(),
    "as_tensor": lambda L, **kw: L.as_tensor([1.0, 2.0], **kw),
}
CREATE_KW = {
    "dtype-str": {"dtype": "float32"}, "dtype-int": {"dtype": 3}, "dtype-pytype": {"dtype": float},
    "dtype-np": {"dtype": __import__("numpy").float32}, "device-gpu": {"device": "gpu"},
    "device-int": {"device": 1.5}, "device-cpu0": {"device": "cpu:0"}, "device-list": {"device": ["cpu"]},
    "rg-str": {"requires_grad": "yes"}, "rg-int": {"requires_grad": 1}, "rg-none": {"requires_grad": None},
    "rg-int-dtype": {"requires_grad": True, "dtype": ember.int64}, "rg-bool-dtype": {"requires_grad": True, "dtype": ember.bool},
    "rg-true": {"requires_grad": True}, "dtype-float64": {"dtype": ember.float64}, "dtype-int32": {"dtype": ember.int32},
    "dtype-bool": {"dtype": ember.bool}, "dtype-half": {"dtype": ember.float16},
}


def _create(fn, kw):
    def f(L):
        # an ember dtype in the table stands for the same dtype of the library under test
        kw2 = {k: (getattr(L, str(v).split(".")[-1]) if isinstance(v, ember.dtype) else v) for k, v in kw.items()}
        return fn(L, **kw2)
    return f


for _cn, _cf in CREATE.items():
    if not has(_cn):
        continue
    for _kn, _kw in CREATE_KW.items():
        if _cn == "as_tensor" and _kn.startswith("rg"):
            continue
        case(f"create-{_cn}-{_kn}", _create(_cf, _kw), op=f"{_cn}(")

CREATE_VALS = {
    "zeros-neg": lambda L: L.zeros(-1), "zeros-neg-2d": lambda L: L.zeros(2, -3), "zeros-float": lambda L: L.zeros(2.5),
    "zeros-str": lambda L: L.zeros("a"), "zeros-none": lambda L: L.zeros(None), "zeros-tuple-none": lambda L: L.zeros((2, None)),
    "zeros-nested": lambda L: L.zeros((2, (3,))), "zeros-tuple-and-int": lambda L: L.zeros((2,), 3),
    "zeros-bool": lambda L: L.zeros(True), "zeros-size": lambda L: L.zeros(L.Size([2, 3])),
    "zeros-list": lambda L: L.zeros([2, 3]), "zeros-tensor-size": lambda L: L.zeros(L.tensor(2)),
    "zeros-np-int": lambda L: L.zeros(__import__("numpy").int64(2)), "ones-empty-tuple": lambda L: L.ones(()),
    "ones-float-tensor": lambda L: L.ones(L.tensor(2.0)),
    "eye-neg": lambda L: L.eye(-1), "eye-m-neg": lambda L: L.eye(2, -1), "eye-float": lambda L: L.eye(2.5),
    "eye-str": lambda L: L.eye("a"), "eye-none": lambda L: L.eye(None), "eye-0": lambda L: L.eye(0),
    "eye-nm": lambda L: L.eye(2, 3), "eye-m-none": lambda L: L.eye(2, None),
    "full-str": lambda L: L.full((2,), "a"), "full-none": lambda L: L.full((2,), None),
    "full-list": lambda L: L.full((2,), [1.0]), "full-int": lambda L: L.full((2,), 3),
    "full-bool": lambda L: L.full((2,), True), "full-size-int": lambda L: L.full(2, 1.0),
    "full-size-neg": lambda L: L.full((-1,), 1.0), "full-tensor-0d": lambda L: L.full((2,), s0(L)),
    "full-tensor-1d": lambda L: L.full((2,), v2(L)), "full-int-dtype-float": lambda L: L.full((2,), 1.5, dtype=L.int64),
    "full-big-int": lambda L: L.full((2,), 2 ** 70),
    "full_like-str": lambda L: L.full_like(v2(L), "a"), "full_like-none": lambda L: L.full_like(v2(L), None),
    "arange-step0": lambda L: L.arange(0, 5, 0), "arange-wrong-sign": lambda L: L.arange(5, 0, 1),
    "arange-str": lambda L: L.arange("a"), "arange-none": lambda L: L.arange(None), "arange-neg": lambda L: L.arange(-3),
    "arange-float": lambda L: L.arange(0, 1, 0.25), "arange-mixed": lambda L: L.arange(1, 2.5),
    "arange-inf": lambda L: L.arange(0, float("inf")), "arange-nan": lambda L: L.arange(0, float("nan")),
    "arange-tensor": lambda L: L.arange(L.tensor(3)), "arange-bool": lambda L: L.arange(True),
    "arange-list": lambda L: L.arange([3]), "arange-neg-step": lambda L: L.arange(5, 0, -2),
    "linspace-neg": lambda L: L.linspace(0, 1, -1), "linspace-float-steps": lambda L: L.linspace(0, 1, 2.5),
    "linspace-str": lambda L: L.linspace("a", 1, 3), "linspace-none-steps": lambda L: L.linspace(0, 1, None),
    "linspace-0": lambda L: L.linspace(0, 1, 0), "linspace-1": lambda L: L.linspace(0, 1, 1),
    "linspace-int-dtype": lambda L: L.linspace(0, 10, 4, dtype=L.int64), "linspace-tensor": lambda L: L.linspace(s0(L), 5, 3),
    "tensor-str": lambda L: L.tensor("a"), "tensor-list-str": lambda L: L.tensor(["a"]), "tensor-ragged": lambda L: L.tensor([[1], [1, 2]]),
    "tensor-mixed-nest": lambda L: L.tensor([1, [2]]), "tensor-none": lambda L: L.tensor(None),
    "tensor-list-none": lambda L: L.tensor([1.0, None]), "tensor-dict": lambda L: L.tensor({1: 2}),
    "tensor-set": lambda L: L.tensor({1, 2}), "tensor-object": lambda L: L.tensor(object()),
    "tensor-overflow": lambda L: L.tensor([2 ** 64]), "tensor-empty": lambda L: L.tensor([]),
    "tensor-empty-nested": lambda L: L.tensor([[], []]), "tensor-bool-int-mix": lambda L: L.tensor([True, 2]),
    "tensor-gen": lambda L: L.tensor(x for x in [1, 2]),
    "tensor-range": lambda L: L.tensor(range(3)), "tensor-list-of-tensors": lambda L: L.tensor([v2(L), v2(L)]),
    "tensor-list-of-1d-and-scalar": lambda L: L.tensor([v2(L), 1.0]), "tensor-0d-tensors": lambda L: L.tensor([s0(L), s0(L)]),
    "tensor-np-object": lambda L: L.tensor(__import__("numpy").array(["a"], dtype=object)),
    "tensor-np-str": lambda L: L.tensor(__import__("numpy").array(["a"])),
    "tensor-np-f32": lambda L: L.tensor(__import__("numpy").array([1.5], dtype="float32")),
    "tensor-int-dtype-float-data": lambda L: L.tensor([1.7], dtype=L.int64),
    "tensor-rg-tensor-data": lambda L: L.tensor([m22(L, True)]),
    "as_tensor-str": lambda L: L.as_tensor("a"), "as_tensor-none": lambda L: L.as_tensor(None),
    "as_tensor-dtype-str": lambda L: L.as_tensor(v2(L), dtype="float64"),
    "as_tensor-np-dtype-str": lambda L: L.as_tensor(__import__("numpy").ones(2), dtype="float64"),
    "as_tensor-device-gpu": lambda L: L.as_tensor(v2(L), device="gpu"),
    "from_numpy-list": lambda L: L.from_numpy([1.0]), "from_numpy-tensor": lambda L: L.from_numpy(v2(L)),
    "from_numpy-object": lambda L: L.from_numpy(__import__("numpy").array([1, "a"], dtype=object)),
    "from_numpy-str": lambda L: L.from_numpy(__import__("numpy").array(["a"])),
    "from_numpy-scalar": lambda L: L.from_numpy(__import__("numpy").float64(1.0)),
    "Tensor-str": lambda L: L.Tensor("a"), "Tensor-neg": lambda L: L.Tensor(-1), "Tensor-list": lambda L: L.Tensor([1, 2]),
    "FloatTensor-neg": lambda L: L.FloatTensor(-2), "LongTensor-floats": lambda L: L.LongTensor([1.5]),
    "ones_like-list": lambda L: L.ones_like([1.0, 2.0]), "zeros_like-none": lambda L: L.zeros_like(None),
    "zeros_like-np": lambda L: L.zeros_like(__import__("numpy").ones(2)),
    "like-dtype-str": lambda L: L.zeros_like(v2(L), dtype="float64"),
    "like-rg-int": lambda L: L.ones_like(i22(L), requires_grad=True),
    "like-keeps-dtype": lambda L: L.ones_like(i22(L)), "like-positional-dtype": lambda L: L.zeros_like(v2(L), L.float64),
    "ones-positional-dtype": lambda L: L.ones(2, L.float64), "new_ones-list": lambda L: m22(L).new_ones([2, 3]),
    "new_zeros-dtype-str": lambda L: m22(L).new_zeros(2, dtype="float64"),
    "set_default_dtype-int": lambda L: L.set_default_dtype(L.int64), "set_default_dtype-str": lambda L: L.set_default_dtype("float64"),
    "promote_types-str": lambda L: L.promote_types("a", L.float32), "result_type-none": lambda L: L.result_type(None, v2(L)),
}
for _n, _f in CREATE_VALS.items():
    case(f"createval-{_n}", _f, op=_n.split("-")[0] + "(")

# Messages as informative as PyTorch's: the op, the argument, the shapes.
MSGS = {
    "mm-None": (lambda L: L.mm(L.ones(2, 2), None), "mm(): argument 'mat2' (position 2) must be Tensor, not NoneType"),
    "dot-list": (lambda L: L.dot([1.0, 2.0], L.ones(2)), "dot(): argument 'input' (position 1) must be Tensor"),
    "ones_like-list": (lambda L: L.ones_like([1.0, 2.0]), "ones_like(): argument 'input' (position 1) must be Tensor"),
    "tensor-dtype-str": (lambda L: L.tensor([1.0], dtype="float32"), "tensor(): argument 'dtype' must be torch.dtype"),
    "zeros-size-float": (lambda L: L.zeros(2.5), "zeros(): argument 'size' (position 1) must be tuple of ints"),
    "eye-neg": (lambda L: L.eye(-1), "n must be greater or equal to 0, got -1"),
    "full-str": (lambda L: L.full((2,), "a"), "full(): argument 'fill_value' (position 2) must be Number"),
    "set_grad_enabled-str": (lambda L: L.set_grad_enabled("no"), "argument 'enabled' (position 1) must be bool"),
    "requires_grad_-str": (lambda L: m22(L).requires_grad_("yes"), "argument 'requires_grad' (position 1) must be bool"),
    "matmul-batched": (lambda L: L.matmul(L.ones(5, 2, 3), L.ones(5, 4, 2)), "[5, 3] but got: [5, 4]"),
    "reshape-neg2": (lambda L: L.ones(6).reshape(-2, 3), "at index 0 of shape [-2, 3]"),
    "index-1d-two-ints": (lambda L: L.ones(2)[0, 0], "too many indices for tensor of dimension 1"),
    "sum-0d-dim": (lambda L: L.tensor(2.0).sum(dim=1), "expected to be in range of [-1, 0], but got 1"),
    "add-shapes": (lambda L: L.ones(2, 3) + L.ones(4), "The size of tensor a (3) must match the size of tensor b (4)"),
    "cat-sizes": (lambda L: L.cat([L.ones(2, 3), L.ones(2, 4)]), "Expected size 3 but got size 4 for tensor number 1"),
    "function-grad-shape": (lambda L: _func(L, backward=lambda L, g: L.ones(3)),
                            "returned an invalid gradient at index 0 - got [3] but expected shape compatible with [2, 2]"),
}
for _n, (_f, _m) in MSGS.items():
    case(f"msg-{_n}", _f, msg=_m)

# ----- grad modes --------------------------------------------------------------------------------------
# The test runner restores grad mode after every case, so a case that leaks a mode cannot spoil others.
GRADMODE = {
    "set_grad_enabled-str": lambda L: (L.set_grad_enabled("no"), L.is_grad_enabled())[1],
    "set_grad_enabled-none": lambda L: (L.set_grad_enabled(None), L.is_grad_enabled())[1],
    "set_grad_enabled-int": lambda L: (L.set_grad_enabled(0), L.is_grad_enabled())[1],
    "set_grad_enabled-tensor": lambda L: (L.set_grad_enabled(L.tensor(True)), L.is_grad_enabled())[1],
    "set_grad_enabled-0args": lambda L: L.set_grad_enabled(),
    "set_grad_enabled-false": lambda L: (L.set_grad_enabled(False), L.is_grad_enabled())[1],
    "set_grad_enabled-ctx": lambda L: _in_ctx(L, L.set_grad_enabled(False)),
    "inference_mode-str": lambda L: _in_ctx(L, L.inference_mode("no")),
    "inference_mode-none": lambda L: _in_ctx(L, L.inference_mode(None)),
    "inference_mode-false": lambda L: _in_ctx(L, L.inference_mode(False)),
    "no_grad-decorator": lambda L: L.no_grad()(lambda: m22(L, True) * 2)(),
    "no_grad-bare-decorator": lambda L: L.no_grad(lambda: m22(L, True) * 2)(),
    "set_grad_enabled-decorator": lambda L: L.set_grad_enabled(False)(lambda: m22(L, True) * 2)(),
}


def _in_ctx(L, ctx):
    x = m22(L, True)
    with ctx:
        y = x * 2
    return y.requires_grad, L.is_grad_enabled()


for _n, _f in GRADMODE.items():
    case(f"gradmode-{_n}", _f)

# ----- autograd misuse -----------------------------------------------------------------------------------


def _twice(L, retain=False):
    x = m22(L, True)
    y = (x * x).sum()
    y.backward(retain_graph=retain)
    y.backward()
    return x.grad


def _hook(L, ret):
    x = m22(L, True)
    x.register_hook(lambda g: ret(L))
    (x * 2).sum().backward()
    return x.grad


def _nonleaf_hook(L, ret):
    x = m22(L, True)
    y = x * 2
    y.register_hook(lambda g: ret(L))
    y.sum().backward()
    return x.grad


HOOK_RETURNS = {"str": lambda L: "a", "list": lambda L: [1.0], "shape": lambda L: v2(L),
                "dtype": lambda L: m22(L).double(), "int": lambda L: 1, "none": lambda L: None,
                "tensor": lambda L: L.ones(2, 2)}


def _func(L, backward, forward=None, nargs=1, scalar_arg=False, wrong_out=None):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, *rest):
            return forward(L, x) if forward else x * 2

        @staticmethod
        def backward(ctx, g):
            return backward(L, g)

    x = m22(L, True)
    args = (x, 3.0) if scalar_arg else (x,) * nargs
    F.apply(*args).sum().backward()
    return x.grad


FUNCS = {
    "too-many-grads": dict(backward=lambda L, g: (g, g)),
    "too-many-grads-none": dict(backward=lambda L, g: (g, None)),
    "too-few-grads": dict(backward=lambda L, g: (g,), nargs=2),
    "grad-str": dict(backward=lambda L, g: "a"),
    "grad-list": dict(backward=lambda L, g: [1.0]),
    "grad-wrong-shape": dict(backward=lambda L, g: L.ones(3)),
    "grad-broadcastable-shape": dict(backward=lambda L, g: L.ones(2)),
    "grad-wrong-dtype": dict(backward=lambda L, g: g.double()),
    "grad-int-dtype": dict(backward=lambda L, g: L.ones(2, 2, dtype=L.int64)),
    "grad-for-scalar-input": dict(backward=lambda L, g: (g, g), scalar_arg=True),
    "grad-for-scalar-input-none": dict(backward=lambda L, g: (g, None), scalar_arg=True),
    "forward-returns-list": dict(backward=lambda L, g: g, forward=lambda L, x: [x * 2]),
    "forward-returns-float": dict(backward=lambda L, g: g, forward=lambda L, x: 2.0),
    "forward-returns-none": dict(backward=lambda L, g: g, forward=lambda L, x: None),
    "backward-returns-none": dict(backward=lambda L, g: None),
}


def _func_ctx(L, which):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if which == "save-str":
                ctx.save_for_backward("a")
            elif which == "save-list":
                ctx.save_for_backward([x])
            else:
                ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2

    x = m22(L, True)
    y = F.apply(x)
    if which == "modified":
        with L.no_grad():
            x.mul_(2)
    y.sum().backward()
    if which == "twice":
        y.sum().backward()
    return x.grad


def _inference(L, which):
    with L.inference_mode():
        t = m22(L)
    x = m22(L, True)
    if which == "mul":
        return (x * t).sum().backward()
    if which == "inplace":
        return t.add_(1)
    if which == "requires_grad":
        return t.requires_grad_()
    if which == "view-inplace-outside":
        return t.view(4).mul_(2)
    if which == "save-matmul":
        return L.mm(x, t).sum().backward()
    if which == "add-no-save":
        y = x + t
        y.sum().backward()
        return x.grad
    if which == "is_inference":
        return t.is_inference(), x.is_inference()
    return None


AUTOGRAD = {
    "backward-nonscalar": lambda L: (m22(L, True) * 2).backward(),
    "backward-no-grad": lambda L: m22(L).sum().backward(),
    "backward-leaf-no-grad": lambda L: m22(L).backward(),
    "backward-twice": lambda L: _twice(L),
    "backward-twice-retained": lambda L: _twice(L, True),
    "backward-gradient-list": lambda L: (m22(L, True) * 2).backward([1.0, 1.0]),
    "backward-gradient-float": lambda L: (m22(L, True) * 2).sum().backward(1.0),
    "backward-gradient-str": lambda L: (m22(L, True) * 2).backward("a"),
    "backward-gradient-shape": lambda L: (m22(L, True) * 2).backward(v2(L)),
    "backward-gradient-dtype": lambda L: (m22(L, True) * 2).backward(L.ones(2, 2, dtype=L.float64)),
    "backward-gradient-int": lambda L: (m22(L, True) * 2).backward(L.ones(2, 2, dtype=L.int64)),
    "backward-gradient-scalar-shape": lambda L: (m22(L, True) * 2).sum().backward(L.ones(2)),
    "backward-inputs-list-nontensor": lambda L: (m22(L, True) * 2).sum().backward(inputs=[1.0]),
    "backward-inputs-empty": lambda L: (m22(L, True) * 2).sum().backward(inputs=[]),
    "backward-inputs-no-grad": lambda L: (m22(L, True) * 2).sum().backward(inputs=[m22(L)]),
    "backward-retain-str": lambda L: (m22(L, True) * 2).sum().backward(retain_graph="yes"),
    "grad-no-grad-output": lambda L: L.autograd.grad(m22(L).sum(), m22(L, True)),
    "grad-no-grad-input": lambda L: (lambda x: L.autograd.grad((x * 2).sum(), m22(L)))(m22(L, True)),
    "grad-unused": lambda L: (lambda x, y: L.autograd.grad((x * 2).sum(), y))(m22(L, True), m22(L, True)),
    "grad-unused-allowed": lambda L: (lambda x, y: L.autograd.grad((x * 2).sum(), y, allow_unused=True))(m22(L, True),
                                                                                                       m22(L, True)),
    "grad-nonscalar": lambda L: (lambda x: L.autograd.grad(x * 2, x))(m22(L, True)),
    "grad-inputs-list-float": lambda L: (lambda x: L.autograd.grad((x * 2).sum(), [1.0]))(m22(L, True)),
    "grad-outputs-list-float": lambda L: (lambda x: L.autograd.grad([1.0], x))(m22(L, True)),
    "grad-outputs-none": lambda L: (lambda x: L.autograd.grad(None, x))(m22(L, True)),
    "grad-grad_outputs-wrong-shape": lambda L: (lambda x: L.autograd.grad(x * 2, x, v2(L)))(m22(L, True)),
    "grad-grad_outputs-list": lambda L: (lambda x: L.autograd.grad(x * 2, x, [1.0]))(m22(L, True)),
    "grad-empty-inputs": lambda L: (lambda x: L.autograd.grad((x * 2).sum(), []))(m22(L, True)),
    "autograd.backward-list-float": lambda L: L.autograd.backward([1.0]),
    "autograd.backward-nograd": lambda L: L.autograd.backward(m22(L).sum()),
    "retain_grad-no-grad": lambda L: m22(L).retain_grad(),
    "register_hook-no-grad": lambda L: m22(L).register_hook(lambda g: g),
    "register_hook-not-callable": lambda L: (lambda x: (x.register_hook(3), (x * 2).sum().backward()))(m22(L, True)),
    "post_acc_hook-nonleaf": lambda L: (m22(L, True) * 2).register_post_accumulate_grad_hook(lambda t: None),
    "inplace-leaf": lambda L: m22(L, True).add_(1),
    "inplace-leaf-view": lambda L: m22(L, True)[0].mul_(2),
    "inplace-leaf-setitem": lambda L: m22(L, True).__setitem__(0, 1.0),
    "inplace-leaf-iadd": lambda L: m22(L, True).__iadd__(1),
    "inplace-leaf-zero_": lambda L: m22(L, True).zero_(),
    "inplace-leaf-fill_": lambda L: m22(L, True).fill_(1),
    "inplace-leaf-copy_": lambda L: m22(L, True).copy_(m22(L)),
    "inplace-leaf-nograd-ok": lambda L: (lambda x: (L.no_grad().__enter__(), x.add_(1), L.set_grad_enabled(True))[1])(
        m22(L, True)),
    "inplace-modified-saved": lambda L: (lambda x: (lambda y: (y.add_(1), (y * 0 + x).sum().backward()))(L.exp(x)))(
        m22(L, True)) and None,
    "inplace-saved-input": lambda L: (lambda x: (lambda a: (lambda y: (a.mul_(2), y.sum().backward()))(a * a))(x * 1))(
        m22(L, True)),
    "requires_grad-nonleaf-false": lambda L: _setattr(m22(L, True) * 2, "requires_grad", False),
    "requires_grad_-nonleaf-false": lambda L: (m22(L, True) * 2).requires_grad_(False),
    "detach_-view": lambda L: (m22(L, True) * 1)[0].detach_(),
    "deepcopy-nonleaf": lambda L: __import__("copy").deepcopy(m22(L, True) * 2),
    "grad-of-nonleaf-warns": lambda L: (lambda y: (y.sum().backward(), y.grad)[1])(m22(L, True) * 2),
    "leaf-int-backward": lambda L: L.tensor([1, 2]).sum().backward(),
    "sum-bool-backward": lambda L: (m22(L, True) > 1).sum().backward(),
    "argmax-backward": lambda L: L.argmax(m22(L, True)).backward(),
    "floor_divide-backward": lambda L: L.floor_divide(m22(L, True), 2).sum().backward(),
    "eq-backward": lambda L: (m22(L, True) == 1).float().sum().backward(),
}
for _hn, _hr in HOOK_RETURNS.items():
    AUTOGRAD[f"hook-returns-{_hn}"] = lambda L, r=_hr: _hook(L, r)
    AUTOGRAD[f"nonleaf-hook-returns-{_hn}"] = lambda L, r=_hr: _nonleaf_hook(L, r)
for _fn, _kw in FUNCS.items():
    AUTOGRAD[f"function-{_fn}"] = lambda L, kw=_kw: _func(L, **kw)
for _w in ("save-str", "save-list", "modified", "twice", "ok"):
    AUTOGRAD[f"function-ctx-{_w}"] = lambda L, w=_w: _func_ctx(L, w)
for _w in ("mul", "inplace", "requires_grad", "view-inplace-outside", "save-matmul", "add-no-save", "is_inference"):
    AUTOGRAD[f"inference-{_w}"] = lambda L, w=_w: _inference(L, w)
AUTOGRAD["function-no-forward"] = lambda L: type("F", (L.autograd.Function,), {}).apply(m22(L, True))
for _n, _f in AUTOGRAD.items():
    case(f"autograd-{_n}", _f)

# ----- indexing --------------------------------------------------------------------------------------
INDEX = {
    "str": lambda L, x: x["a"], "none-ok": lambda L, x: x[None], "float": lambda L, x: x[1.5],
    "too-many": lambda L, x: x[0, 0, 0], "oor": lambda L, x: x[5], "oor-neg": lambda L, x: x[-3],
    "oor-dim1": lambda L, x: x[:, 2], "list-oor": lambda L, x: x[[0, 5]], "list-float": lambda L, x: x[[0.5]],
    "list-str": lambda L, x: x[["a"]], "tensor-float": lambda L, x: x[L.tensor([0.0])],
    "tensor-oor": lambda L, x: x[L.tensor([3])], "mask-shape": lambda L, x: x[L.tensor([True, False, True])],
    "mask-2d-shape": lambda L, x: x[L.ones(3, 3) > 0], "two-ellipsis": lambda L, x: x[..., ...],
    "dict": lambda L, x: x[{}], "step0": lambda L, x: x[::0], "step-neg": lambda L, x: x[::-1],
    "slice-str": lambda L, x: x["a":], "slice-float": lambda L, x: x[0.5:], "set": lambda L, x: x[{0}],
    "tuple-list-mix": lambda L, x: x[[0, 1], [0]], "broadcast-adv": lambda L, x: x[[0, 1], [0, 1, 0]],
    "bool-scalar": lambda L, x: x[True], "bool-false": lambda L, x: x[False], "tensor-2d-int": lambda L, x: x[L.tensor([[0, 1]])],
    "0d-tensor-index": lambda L, x: x[L.tensor(1)], "0d-float-tensor-index": lambda L, x: x[L.tensor(1.0)],
    "empty-list": lambda L, x: x[[]], "nested-empty": lambda L, x: x[[[]]], "big-int": lambda L, x: x[2 ** 70],
    "neg-slice": lambda L, x: x[-10:10], "ellipsis-none": lambda L, x: x[..., None, 0],
}
for _n, _f in INDEX.items():
    case(f"index-{_n}", lambda L, f=_f: f(L, m22(L)))
case("index-1d-two-ints", lambda L: v2(L)[0, 0])
case("index-0d-int", lambda L: s0(L)[0])
case("index-0d-ellipsis", lambda L: s0(L)[...])
case("index-0d-none", lambda L: s0(L)[None])
case("index-0d-slice", lambda L: s0(L)[:])
case("index-ones3-str", lambda L: L.ones(3)["a"])
SETITEM = {
    "value-shape": lambda L, x: x.__setitem__(0, L.ones(3)), "value-str": lambda L, x: x.__setitem__(0, "a"),
    "value-none": lambda L, x: x.__setitem__(0, None), "value-list": lambda L, x: x.__setitem__(0, [5.0, 6.0]),
    "value-list-bad": lambda L, x: x.__setitem__(0, [5.0, 6.0, 7.0]), "index-oor": lambda L, x: x.__setitem__(5, 1.0),
    "index-str": lambda L, x: x.__setitem__("a", 1.0), "mask-shape": lambda L, x: x.__setitem__(L.tensor([True]), 1.0),
    "value-double": lambda L, x: x.__setitem__(0, L.ones(2, dtype=L.float64)),
    "value-int-into-float": lambda L, x: x.__setitem__(0, L.tensor([7, 8])),
    "int-tensor-float-value": lambda L, x: i22(L).__setitem__(0, 2.7),
    "value-requires-grad-into-leaf": lambda L, x: x.__setitem__(0, v2(L).requires_grad_()),
}
for _n, _f in SETITEM.items():
    case(f"setitem-{_n}", lambda L, f=_f: (lambda x: (f(L, x), x)[1])(m22(L)))


def u8(L, *rows):
    return L.tensor(list(rows), dtype=L.uint8)


# uint8 masks (deprecated, with PyTorch's warning): a one-element value written through one is masked_fill_'s,
# which refuses uint8; a 0-d uint8 index is a bool
BYTE_MASK = {
    "get": lambda L, x: x[u8(L, 1, 0)], "get-int": lambda L, x: x[u8(L, 0, 1), 0],
    "get-0d": lambda L, x: x[L.tensor(1, dtype=L.uint8)], "get-0d-zero": lambda L, x: x[L.tensor(0, dtype=L.uint8)],
    "set-scalar": lambda L, x: x.__setitem__(u8(L, 1, 0), 5.0), "set-int": lambda L, x: x.__setitem__((u8(L, 1, 0), 0), 5.0),
    "set-1-element": lambda L, x: x.__setitem__(u8(L, 1, 1), L.tensor([5.0])),
    "set-row": lambda L, x: x.__setitem__(u8(L, 1, 0), L.tensor([5.0, 6.0])),
    "set-with-list": lambda L, x: x.__setitem__((u8(L, 1, 1), [0, 1]), 5.0),
    "set-2d": lambda L, x: x.__setitem__(u8(L, [1, 0], [0, 1]), 5.0),
    "set-0d": lambda L, x: x.__setitem__(L.tensor(1, dtype=L.uint8), 5.0),
    "index_put-0d-value": lambda L, x: x.index_put((u8(L, 1, 0),), L.tensor(5.0)),
    "index_put-row": lambda L, x: x.index_put_((u8(L, 0, 1),), L.tensor([5.0, 6.0])),
}
for _n, _f in BYTE_MASK.items():
    case(f"byte-mask-{_n}", lambda L, f=_f: (lambda x: (f(L, x), x)[1])(m22(L)))

# sort/argsort(stable=...) is PyTorch's keyword-only overload: dim and descending by position do not bind
SORT_STABLE = {
    "sort-dim": lambda L: L.sort(m22(L), 1, stable=True), "sort-method-dim": lambda L: m22(L).sort(0, stable=False),
    "sort-four": lambda L: L.sort(m22(L), 0, False, True), "argsort-dim": lambda L: L.argsort(m22(L), 1, stable=True),
    "argsort-method-dim": lambda L: m22(L).argsort(1, stable=True),
    "sort-keywords": lambda L: L.sort(m22(L), stable=True, dim=1, descending=True),
    "argsort-keywords": lambda L: m22(L).argsort(stable=True, dim=0), "sort-positional": lambda L: L.sort(m22(L), 1, True),
}
for _n, _f in SORT_STABLE.items():
    case(f"sort-stable-{_n}", _f, msg="received an invalid combination of arguments" if _n in (
        "sort-dim", "sort-method-dim", "sort-four", "argsort-dim", "argsort-method-dim") else None)


def _ldl_backward(L, solve: bool):
    a = L.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=L.float64, requires_grad=True)
    ld, piv = L.linalg.ldl_factor(a)
    out = L.linalg.ldl_solve(ld.detach(), piv, a) if solve else ld
    assert out.requires_grad and not piv.requires_grad
    out.sum().backward()


# PyTorch records ldl_factor's LD and ldl_solve's result under NotImplemented nodes whose backward raises
case("ldl_factor-backward", lambda L: _ldl_backward(L, False), msg="derivative for aten::linalg_ldl_factor_ex")
case("ldl_solve-backward", lambda L: _ldl_backward(L, True), msg="derivative for aten::linalg_ldl_solve")

# ----- valid but unusual calls PyTorch accepts: values (and gradients) must match ------------------------


def _with_grad(L, f, x=None):
    x = m22(L, True) if x is None else x
    y = f(L, x)
    (y if y.dim() == 0 else y.sum()).backward()
    return y.detach(), x.grad


VALID = {
    "sum-axis": lambda L, x: x.sum(axis=0), "sum-axis-fn": lambda L, x: L.sum(x, axis=1),
    "sum-keepdims": lambda L, x: x.sum(0, keepdims=True), "sum-dim-empty-list": lambda L, x: x.sum(dim=[]),
    "sum-dim-empty-tuple": lambda L, x: L.sum(x, ()), "sum-dim-tuple": lambda L, x: x.sum(dim=(0, 1)),
    "sum-dim-neg-list": lambda L, x: x.sum([-1, 0]), "sum-dtype": lambda L, x: x.sum(dtype=L.float64),
    "mean-axis": lambda L, x: x.mean(axis=-1), "mean-keepdims": lambda L, x: L.mean(x, 1, keepdims=True),
    "mean-dim-list": lambda L, x: x.mean([0]), "std-axis": lambda L, x: x.std(axis=0),
    "std-unbiased-false": lambda L, x: x.std(unbiased=False), "std-positional-unbiased": lambda L, x: L.std(x, False),
    "std-correction": lambda L, x: x.std(0, correction=0), "norm-dim": lambda L, x: x.norm(dim=1),
    "norm-p2": lambda L, x: L.norm(x, 2), "norm-fro": lambda L, x: L.norm(x, "fro"),
    "amax-dims": lambda L, x: x.amax((0, 1)), "amax-axis": lambda L, x: L.amax(x, axis=0),
    "max-axis": lambda L, x: L.max(x, axis=0)[0], "max-dim-kw": lambda L, x: L.max(x, dim=1, keepdim=True).values,
    "max-keepdims": lambda L, x: x.max(0, keepdims=True)[0], "min-other": lambda L, x: L.min(x, L.ones(2, 2) * 2),
    "add-alpha": lambda L, x: L.add(x, 1, alpha=2), "add-alpha-tensor": lambda L, x: L.add(x, x, alpha=2),
    "sub-alpha": lambda L, x: L.sub(x, x * 3, alpha=0.5), "add-method-alpha": lambda L, x: x.add(x, alpha=-1),
    "add-int-scalar-first": lambda L, x: 1 + x, "rsub": lambda L, x: 1 - x, "rdiv": lambda L, x: 2 / x,
    "rpow": lambda L, x: 2 ** x, "pow-tensor-exp": lambda L, x: L.pow(2.0, x), "div-mode": lambda L, x: L.div(x, 3, rounding_mode=None),
    "clamp-tensor-min": lambda L, x: L.clamp(x, min=L.ones(2, 2) * 2), "clamp-only-max": lambda L, x: x.clamp(max=2.5),
    "clip": lambda L, x: L.clip(x, 1.5, 3.5), "clamp-int-bounds": lambda L, x: x.clamp(1, 3),
    "reshape-tuple": lambda L, x: x.reshape((4,)), "reshape-list": lambda L, x: x.reshape([1, 4]),
    "reshape-minus1": lambda L, x: L.reshape(x, (-1,)), "view-minus1": lambda L, x: x.view(-1, 1),
    "view-size": lambda L, x: x.view(L.Size([4])), "reshape-size": lambda L, x: x.reshape(x.shape[::-1]),
    "permute-tuple": lambda L, x: x.permute((1, 0)), "permute-neg": lambda L, x: x.permute(-1, -2),
    "permute-fn-list": lambda L, x: L.permute(x, [1, 0]), "transpose-neg": lambda L, x: x.transpose(-1, -2),
    "T": lambda L, x: x.T, "mT": lambda L, x: x.mT, "t-1d": lambda L, x: x[0].t(),
    "squeeze-noop": lambda L, x: x.squeeze(0), "squeeze-tuple": lambda L, x: x.reshape(1, 4, 1).squeeze((0, 2)),
    "unsqueeze-neg": lambda L, x: x.unsqueeze(-1), "flatten-dims": lambda L, x: x.flatten(0, -1),
    "expand-minus1": lambda L, x: x[:1].expand(-1, 2), "expand-tuple": lambda L, x: x[0].expand((3, 2)),
    "expand-new-dim": lambda L, x: x.expand(3, 2, 2), "broadcast_to-list": lambda L, x: L.broadcast_to(x[0], [3, 2]),
    "cat-tuple": lambda L, x: L.cat((x, x)), "cat-dim-neg": lambda L, x: L.cat([x, x], -1),
    "cat-empty-1d": lambda L, x: L.cat([x, L.tensor([])]), "stack-dim-neg": lambda L, x: L.stack([x, x], -1),
    "concat": lambda L, x: L.concat([x, x], dim=1), "where-scalars": lambda L, x: L.where(x > 2, x, 0.0),
    "matmul-1d-2d": lambda L, x: L.matmul(x[0], x), "matmul-2d-1d": lambda L, x: x @ x[0],
    "matmul-batched-broadcast": lambda L, x: L.matmul(x.expand(3, 2, 2), x),
    "getitem-ellipsis": lambda L, x: x[..., 0], "getitem-none": lambda L, x: x[None, :, None],
    "getitem-neg": lambda L, x: x[-1], "getitem-list": lambda L, x: x[[1, 0, 1]],
    "getitem-tensor-idx": lambda L, x: x[L.tensor([1, 1])], "getitem-mask": lambda L, x: x[x > 2],
    "getitem-slice-oor": lambda L, x: x[1:100], "getitem-step": lambda L, x: x[::2],
    "getitem-bool-true": lambda L, x: x[True], "getitem-tuple-adv": lambda L, x: x[[0, 1], [1, 0]],
    "size-neg": lambda L, x: x * x.size(-1), "numpy-scalar-other": lambda L, x: x * __import__("numpy").float64(2.0),
    "np-int-scalar": lambda L, x: x + __import__("numpy").int64(1), "sum-to-size": lambda L, x: x.sum_to_size(1, 2),
    "relu-method": lambda L, x: (x - 2).relu(), "outer-fn": lambda L, x: L.outer(x[0], x[1]),
    "to-dtype-kw": lambda L, x: x.to(dtype=L.float64), "to-device": lambda L, x: x.to("cpu"),
    "to-tensor": lambda L, x: x.to(L.ones(1, dtype=L.float64)), "double": lambda L, x: x.double(),
    "type-dtype": lambda L, x: x.type(L.float64), "round-decimals": lambda L, x: L.round(x / 3, decimals=2),
    "pow-int-exp": lambda L, x: x ** 2, "pow-float-exp": lambda L, x: x ** 0.5, "sqrt-method": lambda L, x: x.sqrt(),
}
for _n, _f in VALID.items():
    case(f"valid-{_n}", lambda L, f=_f: _with_grad(L, f))
VALID_NOGRAD = {
    "sum-int": lambda L: i22(L).sum(), "sum-bool": lambda L: bool2(L).sum(), "sum-bool-dim": lambda L: bool2(L).sum(0),
    "mean-int-dtype": lambda L: i22(L).mean(dtype=L.float32), "argmax-keepdim": lambda L: L.argmax(m22(L), 1, keepdim=True),
    "argmax-0d": lambda L: L.argmax(s0(L)), "argmax-0d-dim": lambda L: L.argmax(s0(L), 0),
    "max-0d-dim": lambda L: L.max(s0(L), 0), "sum-0d-dim": lambda L: s0(L).sum(0), "sum-0d-dim-neg": lambda L: s0(L).sum(-1),
    "any": lambda L: L.any(m22(L)), "all-dim": lambda L: L.all(m22(L) > 1, 1), "any-keepdim": lambda L: (m22(L) > 1).any(0, True),
    "eq-scalar": lambda L: m22(L) == 2, "eq-none-false": lambda L: (m22(L) == None) is False,  # noqa: E711
    "ne-none": lambda L: m22(L) != None, "equal": lambda L: L.equal(m22(L), m22(L)),  # noqa: E711
    "allclose-kw": lambda L: L.allclose(m22(L), m22(L) + 1e-3, atol=1e-2), "isclose-nan": lambda L: L.isclose(
        L.tensor([float("nan")]), L.tensor([float("nan")]), equal_nan=True),
    "bitwise_and-bool": lambda L: L.bitwise_and(bool2(L), bool2(L)), "bitwise_not-bool": lambda L: ~bool2(L),
    "int-floordiv": lambda L: i22(L) // 3, "int-truediv": lambda L: i22(L) / 3, "int-remainder-neg": lambda L: -i22(L) % 3,
    "int-pow": lambda L: i22(L) ** 2, "int-mul-float": lambda L: i22(L) * 1.5, "bool-add": lambda L: bool2(L) + bool2(L),
    "bool-mul-int": lambda L: bool2(L) * 3, "0d-int-float-promote": lambda L: L.tensor(3) * v2(L),
    "zeros-size-tuple": lambda L: L.zeros((2, 3)), "zeros-0": lambda L: L.zeros(0), "zeros-empty-dims": lambda L: L.zeros(2, 0),
    "ones-Size": lambda L: L.ones(m22(L).shape), "full-bool-dtype": lambda L: L.full((2,), True),
    "full-int-dtype": lambda L: L.full((2,), 1), "eye-rect": lambda L: L.eye(2, 3, dtype=L.int64),
    "arange-int": lambda L: L.arange(5), "arange-neg-step-float": lambda L: L.arange(1.0, 0.0, -0.25),
    "arange-dtype": lambda L: L.arange(0, 3, dtype=L.float64), "linspace-dtype": lambda L: L.linspace(0, 1, 5, dtype=L.float64),
    "tensor-np-scalar": lambda L: L.tensor(__import__("numpy").float32(1.5)),
    "tensor-bool-list": lambda L: L.tensor([True, False]), "tensor-nested-tuple": lambda L: L.tensor(((1, 2), (3, 4))),
    "tensor-int-to-float": lambda L: L.tensor([1, 2], dtype=L.float64), "as_tensor-same": lambda L: L.as_tensor(v2(L)),
    "as_tensor-dtype": lambda L: L.as_tensor([1, 2], dtype=L.float32), "from_numpy-int32": lambda L: L.from_numpy(
        __import__("numpy").array([1, 2], dtype="int32")), "Tensor-sizes": lambda L: L.Tensor(2, 3).zero_(),
    "FloatTensor-list": lambda L: L.FloatTensor([1, 2]), "LongTensor-list": lambda L: L.LongTensor([1, 2]),
    "item-0d": lambda L: s0(L).item(), "item-1elem": lambda L: L.ones(1, 1).item(), "int-1elem": lambda L: int(L.ones(1)),
    "index-int-tensor": lambda L: [10, 20, 30][L.tensor(1)], "float-0d": lambda L: float(s0(L)),
    "bool-1elem": lambda L: bool(L.ones(1)), "len": lambda L: len(m22(L)), "list": lambda L: list(v2(L)),
    "tolist": lambda L: m22(L).tolist(), "size-int": lambda L: m22(L).size(1), "stride": lambda L: m22(L).stride(),
    "dim": lambda L: m22(L).dim(), "numel": lambda L: L.numel(m22(L)), "is_floating_point": lambda L: L.is_floating_point(i22(L)),
    "requires_grad_-false": lambda L: m22(L, True).requires_grad_(False).requires_grad,
    "requires_grad-attr": lambda L: _setattr(m22(L), "requires_grad", True).requires_grad,
    "nonleaf-requires_grad_-true": lambda L: (m22(L, True) * 2).requires_grad_(True).requires_grad,
    "set_grad_enabled-ctx-true": lambda L: _in_ctx(L, L.set_grad_enabled(True)),
    "no_grad-ctx": lambda L: _in_ctx(L, L.no_grad()), "inference-ctx": lambda L: _in_ctx(L, L.inference_mode()),
    "backward-gradient-tensor": lambda L: (lambda x: ((x * 2).backward(L.ones(2, 2)), x.grad)[1])(m22(L, True)),
    "backward-scalar-gradient-0d": lambda L: (lambda x: ((x * 2).sum().backward(L.tensor(3.0)), x.grad)[1])(m22(L, True)),
    "grad-allow-unused-none": lambda L: (lambda x, y: L.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)[1] is None)(
        m22(L, True), m22(L, True)),
    "backward-inputs": lambda L: (lambda x, y: ((x * y).sum().backward(inputs=[x]), x.grad, y.grad)[1:])(m22(L, True),
                                                                                                        m22(L, True)),
    "hook-returns-none-keeps": lambda L: _hook(L, lambda L: None),
    "function-none-for-scalar": lambda L: _func(L, backward=lambda L, g: (g * 2, None), scalar_arg=True),
    "function-broadcastable": lambda L: _func(L, backward=lambda L, g: L.ones(1, 2)),
}
for _n, _f in VALID_NOGRAD.items():
    case(f"validv-{_n}", _f)


# ----- strides and storage (issue 18): as_strided's layout checks, strided creation, set_/resize_ ---------------

case("as_strided-out-of-storage", lambda L: L.as_strided(m22(L), (5,), (1,)))
case("as_strided-negative-stride", lambda L: m22(L).as_strided((2,), (-1,)))
case("as_strided-rank-mismatch", lambda L: L.as_strided(m22(L), (2, 2), (1,)))
case("as_strided-negative-size", lambda L: L.as_strided(m22(L), (-1,), (1,)))
case("as_strided-negative-offset", lambda L: L.as_strided(m22(L), (1,), (1,), -1))
case("as_strided-size-not-ints", lambda L: L.as_strided(m22(L), 2, (1,)))
case("as_strided-offset-too-far", lambda L: m22(L).as_strided((2,), (1,), 3))
case("as_strided_-leaf", lambda L: m22(L, rg=True).as_strided_((2,), (1,)))
case("as_strided-overlap-write", lambda L: m22(L).as_strided((2, 2), (0, 1)).add_(1))
case("empty_strided-rank-mismatch", lambda L: L.empty_strided((2, 3), (1,)))
case("empty_permuted-duplicate", lambda L: L.empty_permuted((2, 3), (0, 0)))
case("slice_scatter-size", lambda L: L.slice_scatter(m22(L), L.zeros(3, 2), 0, 0, 1))
case("select_scatter-size", lambda L: m22(L).select_scatter(L.zeros(3), 0, 0))
case("diagonal_scatter-size", lambda L: L.diagonal_scatter(m22(L), L.zeros(3)))
case("set_-leaf", lambda L: m22(L, rg=True).set_(m22(L)))
case("resize_-requires-grad", lambda L: m22(L, rg=True).resize_(5))
case("pin_memory-no-accelerator", lambda L: m22(L).pin_memory())


# ----- every registered op, from the registry: a non-tensor where the first tensor goes ----------------------
# (so that an op added later is in the catalogue without anyone listing it)

def _registered():
    from ember.ops._registry import EXPORTS, SUBMODULES
    out = [("", n) for n in EXPORTS]
    out += [(f"{m}.", n) for m, table in SUBMODULES.items() for n in table]
    return out


def _resolve(L, prefix, name):
    obj = L
    for part in (prefix + name).split("."):
        obj = getattr(obj, part)
    return obj


for _prefix, _name in _registered():
    try:
        _torch_has = _resolve(__import__("torch"), _prefix, _name) is not None
    except (AttributeError, ImportError):
        _torch_has = False
    if not _torch_has or isinstance(_resolve(ember, _prefix, _name), type) or _name.endswith("_"):
        continue
    _op = None if _name in ALIASES else _name
    for _bad in ("None", "str"):
        case(f"registry-{_prefix}{_name}-{_bad}",
             lambda L, p=_prefix, n=_name, b=_bad: _resolve(L, p, n)(BAD[b](L)), op=_op)
        case(f"registry-{_prefix}{_name}-tensor-{_bad}",
             lambda L, p=_prefix, n=_name, b=_bad: _resolve(L, p, n)(m22(L), BAD[b](L)), op=_op)


# ----- autocast and GradScaler ---------------------------------------------------------------------------------

def _scaler_steps(L, steps, **kw):
    """A GradScaler('cpu') driven through ``steps`` (names of its methods, in order) on one parameter."""
    p = L.ones(2, requires_grad=True)
    opt = L.optim.SGD([p], lr=0.1)
    s = L.amp.GradScaler("cpu", **kw)
    for step in steps:
        if step == "scale":
            s.scale((p * 2).sum()).backward()
        elif step == "fp16":
            p.grad = p.grad.half()
        elif step == "update":
            s.update()
        else:
            getattr(s, step)(opt)
    return s.state_dict(), p


def _in_autocast(L, fn, **kw):
    with L.autocast("cpu", dtype=L.float16, **kw):
        return fn(L)


AMP = {
    "autocast-device-int": lambda L: L.autocast(0),
    "autocast-device-unknown": lambda L: L.autocast("gpu"),
    "autocast-device-meta": lambda L: L.autocast("meta"),
    "autocast-call-non-callable": lambda L: L.autocast("cpu", dtype=L.float16)(1),
    "autocast-set-enabled-int": lambda L: L.set_autocast_enabled("cpu", 1),
    "autocast-set-dtype-str": lambda L: L.set_autocast_dtype("cpu", "float16"),
    "autocast-get-dtype-none": lambda L: L.get_autocast_dtype(None),
    "autocast-cache-int": lambda L: L.set_autocast_cache_enabled(1),
    "autocast-custom-fwd-device-int": lambda L: L.amp.custom_fwd(device_type=1),
    "autocast-mm-mixed-double": lambda L: _in_autocast(L, lambda L: L.mm(m22(L).double(), m22(L))),
    "autocast-cat-f16-f32": lambda L: _in_autocast(L, lambda L: L.cat([m22(L), m22(L).half()])),
    "autocast-linear-shapes": lambda L: _in_autocast(L, lambda L: L.nn.functional.linear(m22(L), L.ones(3, 3))),
    "autocast-mse-f16-grad": lambda L: _in_autocast(L, lambda L: L.nn.functional.mse_loss(
        L.mm(m22(L, True), m22(L)), m22(L))),
    "autocast-disabled-mm": lambda L: _in_autocast(L, lambda L: L.mm(m22(L), m22(L)), enabled=False),
    "scaler-growth-factor": lambda L: L.amp.GradScaler("cpu", growth_factor=1.0),
    "scaler-backoff-factor": lambda L: L.amp.GradScaler("cpu", backoff_factor=1.0),
    "scaler-step-before-scale": lambda L: _scaler_steps(L, ["step"]),
    "scaler-update-before-scale": lambda L: L.amp.GradScaler("cpu").update(),
    "scaler-unscale-twice": lambda L: _scaler_steps(L, ["scale", "unscale_", "unscale_"]),
    "scaler-step-twice": lambda L: _scaler_steps(L, ["scale", "step", "step"]),
    "scaler-unscale-after-step": lambda L: _scaler_steps(L, ["scale", "step", "unscale_"]),
    "scaler-fp16-grads": lambda L: _scaler_steps(L, ["scale", "fp16", "unscale_"]),
    "scaler-load-empty": lambda L: L.amp.GradScaler("cpu").load_state_dict({}),
    "scaler-scale-not-tensor": lambda L: L.amp.GradScaler("cpu").scale([m22(L), 3]),
    "scaler-step-closure": lambda L: L.amp.GradScaler("cpu").step(L.optim.SGD([L.ones(1, requires_grad=True)]),
                                                                  closure=lambda: 0),
    "scaler-valid-loop": lambda L: _scaler_steps(L, ["scale", "unscale_", "step", "update", "scale", "step"]),
    "scaler-new-scale-requires-grad": lambda L: (lambda s: (s.scale(L.ones(1)), s.update(
        L.ones(1, requires_grad=True))))(L.amp.GradScaler("cpu")),
    "scaler-new-scale-two-elements": lambda L: (lambda s: (s.scale(L.ones(1)), s.update(L.ones(2))))(
        L.amp.GradScaler("cpu")),
}
if has("autocast"):
    for _n, _f in AMP.items():
        case(_n, _f)


# ----- issue 18: the new dtypes and ops ----------------------------------------------------------------------------
# Complex where PyTorch's CPU kernel refuses complex, bfloat16 where it has no bfloat16 kernel (PyTorch's exception
# type; ember's refusals are in the ops' wrappers), then torch.fft, view_as_complex, polar/complex, as_strided,
# autocast and GradScaler misuse.

def cz(L):
    return L.tensor([[1 + 2j, 3 - 1j], [0.5j, -2 + 0j]])


def bf(L):
    return L.tensor([[1.0, 2.0], [3.0, 4.5]], dtype=L.bfloat16)


def _refusal(name: str, base: Callable) -> Callable:
    """``name`` called on ``base(L)``: 'op' alone, 'op:x' with a second operand like the first, 'op:t' with its first
    row, 'op:decimals' / 'op:floor' with that keyword, 'op:<args>' with those arguments after it."""
    fname, _, extra = name.partition(":")

    def fn(L):
        x, f = base(L), L
        for part in fname.split("."):
            f = getattr(f, part)
        if not extra:
            return f(x)
        if extra == "x":
            return f(x, base(L))
        if extra == "t":
            return f(x, base(L)[0])
        if extra == "decimals":
            return f(x, decimals=1)
        if extra == "floor":
            return f(x, x, rounding_mode="floor")
        if extra == "None,2":
            return f(x[None], None, 2)
        return f(x, *eval("(" + extra + ",)"))   # noqa: S307  (the literals of this table)
    return fn


COMPLEX_REFUSED = [
    'sort', 'argsort', 'argmax', 'argmin', 'max', 'min', 'amax', 'amin', 'aminmax', 'topk:1', 'kthvalue:1', 'median',
    'nanmedian', 'msort', 'floor', 'ceil', 'round', 'trunc', 'frac', 'sign', 'signbit', 'relu', 'clamp:0.0',
    'clamp_min:0.0', 'erf', 'erfc', 'erfinv', 'lgamma', 'digamma', 'i0', 'logit', 'rad2deg', 'deg2rad', 'isposinf',
    'isneginf', 'heaviside:x', 'atan2:x', 'fmod:x', 'remainder:x', 'floor_divide:x', 'maximum:x', 'minimum:x',
    'fmax:x', 'fmin:x', 'lt:x', 'gt:x', 'le:x', 'ge:x', 'copysign:x', 'nextafter:x', 'hypot:x', 'logaddexp2:x',
    'xlogy:x', 'gcd:x', 'bitwise_and:x', 'histc', 'bincount', 'unique', 'quantile:0.5', 'nanquantile:0.5', 'nanmean',
    'nansum', 'special.erfcx', 'special.ndtr', 'special.i0e', 'special.i1', 'special.entr', 'special.log_ndtr',
    'special.gammaln', 'special.xlog1py:x', 'special.zeta:x', 'special.bessel_j0', 'cdist:x', 'fft.rfft',
    'fft.ihfft', 'fft.rfft2', 'polar:x', 'complex:x', 'view_as_complex', 'nn.functional.relu', 'nn.functional.gelu',
    'nn.functional.softplus', 'nn.functional.elu', 'nn.functional.leaky_relu', 'nn.functional.hardtanh',
    'nn.functional.hardsigmoid', 'nn.functional.softmax:0', 'nn.functional.log_softmax:0',
    'nn.functional.mse_loss:x', 'nn.functional.max_pool1d:1', 'nn.functional.avg_pool1d:1',
    'nn.functional.layer_norm:(2,)', 'nn.functional.dropout', 'nn.functional.pdist',
    'nn.functional.cosine_similarity:x', 'nn.functional.interpolate:None,2', 'nn.functional.glu',
    'nn.functional.logsigmoid', 'nn.functional.mish', 'nn.functional.selu', 'nn.functional.celu',
    'nn.functional.rrelu', 'nn.functional.threshold:0.1,0.0', 'nn.functional.hardswish', 'searchsorted:x', 'isin:x',
    'clamp_max:0.0', 'histogram', 'bernoulli', 'multinomial:1', 'poisson', 'normal:x', 'round:decimals', 'frexp',
    'special.logit', 'special.round', 'bitwise_not', 'fmod:2', 'remainder:2', 'div:floor',
]
BF16_REFUSED = [
    'gcd:x', 'bitwise_and:x', 'bincount', 'quantile:0.5', 'nanquantile:0.5', 'special.erfcx', 'special.log_ndtr',
    'special.zeta:x', 'special.bessel_j0', 'linalg.cholesky', 'linalg.inv', 'linalg.det', 'linalg.eigh',
    'linalg.svd', 'linalg.qr', 'linalg.cond', 'linalg.slogdet', 'linalg.pinv', 'linalg.lu_factor', 'linalg.eig',
    'linalg.eigvals', 'linalg.solve:x', 'linalg.lstsq:x', 'linalg.matrix_rank', 'linalg.svdvals',
    'linalg.householder_product:t', 'linalg.inv_ex', 'linalg.cholesky_ex', 'linalg.ldl_factor', 'cdist:x', 'fft.fft',
    'fft.rfft', 'fft.ihfft', 'fft.hfft', 'fft.irfft', 'fft.rfft2', 'polar:x', 'complex:x', 'view_as_complex',
    'view_as_real', 'nn.functional.pdist', 'histogram', 'logdet', 'det', 'inverse', 'cholesky', 'pinverse',
    'bitwise_not',
]
for _n in COMPLEX_REFUSED:
    case(f"complex-refused-{_n}", _refusal(_n, cz))
for _n in BF16_REFUSED:
    case(f"bf16-refused-{_n}", _refusal(_n, bf))


def r8(L): return L.arange(8.0)
def c4(L): return L.tensor([1 + 1j, 2 - 1j, 0.5j, 3 + 0j])
def ac(L, dt, fn=lambda L: L.mm(m22(L), m22(L)).dtype, **kw):
    with L.autocast("cpu", dtype=dt, **kw):
        return fn(L)

def _ac_state(a):
    return a._enabled, str(a.fast_dtype), a.device


def _scaler_state(s):
    return s.is_enabled(), s.get_growth_interval(), s.get_scale()


def _scaler_update(L, new_scale):
    s = L.amp.GradScaler("cpu")
    s.scale(L.ones(1))
    s.update(new_scale(L) if callable(new_scale) else new_scale)
    return s.get_scale()


# torch.fft, stft/windows, view_as_complex/real, polar/complex, complex scalars, as_strided, autocast, GradScaler
ISSUE18 = {
    "bf16-bernoulli-p-out-of-range": lambda L: L.bernoulli(bf(L)),
    "bf16-bernoulli-p-int": lambda L: L.empty(2).bernoulli_(L.ones(2, dtype=L.int64)),
    "fft-n-zero": lambda L: L.fft.fft(r8(L), n=0),
    "fft-n-negative": lambda L: L.fft.fft(r8(L), n=-2),
    "fft-n-float": lambda L: L.fft.fft(r8(L), n=2.5),
    "fft-dim-out-of-range": lambda L: L.fft.fft(r8(L), dim=1),
    "fft-norm-bad": lambda L: L.fft.fft(r8(L), norm="half"),
    "fft-norm-int": lambda L: L.fft.fft(r8(L), norm=1),
    "fft-scalar-input": lambda L: L.fft.fft(L.tensor(1.0)),
    "fft-str-input": lambda L: L.fft.fft("a"),
    "fft-bool-input": lambda L: L.fft.fft(L.tensor([True, False])),
    "fft-int-input": lambda L: L.fft.fft(L.arange(4)),
    "fft2-1d-input": lambda L: L.fft.fft2(r8(L)),
    "fftn-s-dim-mismatch": lambda L: L.fft.fftn(m22(L), s=(2,), dim=(0, 1)),
    "fftn-dim-repeated": lambda L: L.fft.fftn(m22(L), dim=(0, 0)),
    "fftn-s-zero": lambda L: L.fft.fftn(m22(L), s=(0, 2)),
    "fftn-s-too-long": lambda L: L.fft.fftn(r8(L), s=(2, 2)),
    "rfft-complex-input": lambda L: L.fft.rfft(c4(L)),
    "rfftn-complex-input": lambda L: L.fft.rfftn(c4(L)),
    "ihfft-complex-input": lambda L: L.fft.ihfft(c4(L)),
    "ihfft2-complex-input": lambda L: L.fft.ihfft2(c4(L).reshape(2, 2)),
    "irfft-n-zero": lambda L: L.fft.irfft(c4(L), n=0),
    "irfft-n-one": lambda L: L.fft.irfft(c4(L), n=1),
    "irfft-empty": lambda L: L.fft.irfft(L.zeros(0, dtype=L.complex64)),
    "hfft-n-zero": lambda L: L.fft.hfft(c4(L), n=0),
    "irfftn-s-zero": lambda L: L.fft.irfftn(c4(L).reshape(2, 2), s=(2, 0)),
    "fftshift-dim-out-of-range": lambda L: L.fft.fftshift(r8(L), dim=2),
    "fftfreq-negative": lambda L: L.fft.fftfreq(-1),
    "fftfreq-float-n": lambda L: L.fft.fftfreq(2.5),
    "fftfreq-zero": lambda L: L.fft.fftfreq(0),
    "rfftfreq-d-zero": lambda L: L.fft.rfftfreq(4, d=0.0),
    "fft-out-wrong-dtype": lambda L: L.fft.fft(r8(L), out=L.empty(8)),
    "fft-out-wrong-shape": lambda L: L.fft.fft(r8(L), out=L.empty(3, dtype=L.complex64)),
    "rfft-half": lambda L: L.fft.rfft(r8(L).half()),
    "fft-half-odd": lambda L: L.fft.fft(L.arange(6.0).half()),
    "fft-bf16": lambda L: L.fft.fft(r8(L).bfloat16()),
    "fft-float64-complex64-out": lambda L: L.fft.fft(r8(L).double(), out=L.empty(8, dtype=L.complex64)),
    "stft-no-return-complex": lambda L: L.stft(L.arange(16.0), 4),
    "stft-nfft-too-large": lambda L: L.stft(L.arange(8.0), 16, return_complex=True),
    "stft-hop-zero": lambda L: L.stft(L.arange(16.0), 4, hop_length=0, return_complex=True),
    "stft-window-size": lambda L: L.stft(L.arange(16.0), 4, window=L.ones(3), return_complex=True),
    "stft-win-length-big": lambda L: L.stft(L.arange(16.0), 4, win_length=5, return_complex=True),
    "stft-3d-input": lambda L: L.stft(L.ones(2, 2, 16), 4, return_complex=True),
    "stft-complex-onesided": lambda L: L.stft(c4(L).repeat(4), 4, onesided=True, return_complex=True),
    "istft-real-input": lambda L: L.istft(L.ones(3, 5), 4),
    "istft-window-size": lambda L: L.istft(L.ones(3, 5, dtype=L.complex64), 4, window=L.ones(3)),
    "istft-nfft-mismatch": lambda L: L.istft(L.ones(3, 5, dtype=L.complex64), 8),
    "hann-window-negative": lambda L: L.hann_window(-1),
    "hann-window-int-dtype": lambda L: L.hann_window(4, dtype=L.int64),
    "kaiser-window-negative": lambda L: L.kaiser_window(-2),
    "vac-last-dim-3": lambda L: L.view_as_complex(L.ones(2, 3)),
    "vac-last-dim-1": lambda L: L.view_as_complex(L.ones(4, 1)),
    "vac-scalar": lambda L: L.view_as_complex(L.tensor(1.0)),
    "vac-last-stride": lambda L: L.view_as_complex(L.ones(2, 2).t()),
    "vac-stride-odd": lambda L: L.view_as_complex(L.ones(3, 3)[:, :2]),
    "vac-offset-odd": lambda L: L.view_as_complex(L.ones(5)[1:].reshape(2, 2)),
    "vac-int": lambda L: L.view_as_complex(L.ones(2, 2, dtype=L.int64)),
    "vac-double": lambda L: L.view_as_complex(L.ones(2, 2, dtype=L.float64)),
    "vac-bf16": lambda L: L.view_as_complex(L.ones(2, 2, dtype=L.bfloat16)),
    "var-real-input": lambda L: L.view_as_real(L.ones(2)),
    "var-scalar-complex": lambda L: L.view_as_real(L.tensor(1 + 2j)),
    "polar-float-double": lambda L: L.polar(L.ones(2), L.ones(2, dtype=L.float64)),
    "polar-int": lambda L: L.polar(L.ones(2, dtype=L.int64), L.ones(2, dtype=L.int64)),
    "polar-complex": lambda L: L.polar(c4(L), c4(L)),
    "polar-shapes": lambda L: L.polar(L.ones(2), L.ones(3)),
    "polar-scalar-arg": lambda L: L.polar(L.ones(2), 1.0),
    "polar-out-real": lambda L: L.polar(L.ones(2), L.ones(2), out=L.empty(2)),
    "complex-float-double": lambda L: L.complex(L.ones(2), L.ones(2, dtype=L.float64)),
    "complex-int": lambda L: L.complex(L.ones(2, dtype=L.int32), L.ones(2, dtype=L.int32)),
    "complex-bool": lambda L: L.complex(L.ones(2, dtype=L.bool), L.ones(2, dtype=L.bool)),
    "complex-shapes": lambda L: L.complex(L.ones(2), L.ones(3)),
    "complex-none": lambda L: L.complex(L.ones(2), None),
    "complex-out-wrong": lambda L: L.complex(L.ones(2), L.ones(2), out=L.empty(2, dtype=L.complex128)),
    "complex-to-int-cast": lambda L: c4(L).to(L.int64),
    "complex-to-float-cast": lambda L: c4(L).float(),
    "complex-item-int": lambda L: int(c4(L)[0]),
    "complex-float-call": lambda L: float(c4(L)[0]),
    "complex-bool-index": lambda L: r8(L)[c4(L)],
    "complex-requires-grad-int": lambda L: L.ones(2, dtype=L.int64).requires_grad_(),
    "complex-backward-no-grad-output": lambda L: (c4(L).requires_grad_() * 2).sum().backward(),
    "complex-real-setitem-complex": lambda L: r8(L).__setitem__(0, 1 + 2j),
    "complex-fill-real": lambda L: L.ones(2).fill_(1j),
    "complex-arange": lambda L: L.arange(0, 4, 1j),
    "complex-linspace-steps": lambda L: L.linspace(0, 1j, -1),
    "strided-out-of-bounds": lambda L: L.ones(4).as_strided((3,), (2,)),
    "strided-offset-out-of-bounds": lambda L: L.ones(4).as_strided((2,), (1,), 3),
    "strided-negative-stride": lambda L: L.ones(4).as_strided((2,), (-1,)),
    "strided-negative-offset": lambda L: L.ones(4).as_strided((2,), (1,), -1),
    "strided-negative-size": lambda L: L.ones(4).as_strided((-1,), (1,)),
    "strided-length-mismatch": lambda L: L.ones(4).as_strided((2, 2), (1,)),
    "strided-float-size": lambda L: L.ones(4).as_strided((2.0,), (1,)),
    "strided-valid-overlap": lambda L: L.arange(4.0).as_strided((3, 2), (1, 1)),
    "strided-zero-stride": lambda L: L.arange(4.0).as_strided((2, 3), (0, 1), 1),
    "strided-empty-any": lambda L: L.ones(4).as_strided((0, 5), (100, 100)),
    "strided-view-oob": lambda L: L.ones(6)[2:].as_strided((4,), (1,), 3),
    "strided-inplace-oob": lambda L: L.ones(4).as_strided_((5,), (1,)),
    "empty-strided-negative": lambda L: L.empty_strided((2,), (-1,)),
    "empty-strided-mismatch": lambda L: L.empty_strided((2, 2), (1,)),
    "amp-autocast-int-dtype": lambda L: ac(L, L.int32),
    "amp-autocast-complex-dtype": lambda L: ac(L, L.complex64),
    "amp-autocast-float64": lambda L: ac(L, L.float64),
    "amp-autocast-str-dtype": lambda L: ac(L, "float16"),
    "amp-autocast-device-none": lambda L: L.autocast(None),
    "amp-autocast-device-cuda0": lambda L: ac_dev(L, "cuda:0"),
    "amp-autocast-device-cpu0": lambda L: ac_dev(L, "cpu:0"),
    "amp-autocast-enabled-str": lambda L: ac(L, L.bfloat16, enabled="yes"),
    "amp-autocast-enabled-int": lambda L: ac(L, L.bfloat16, enabled=1),
    "amp-autocast-cache-int": lambda L: ac(L, L.bfloat16, cache_enabled=1),
    "amp-autocast-unknown-kw": lambda L: L.autocast("cpu", dtyp=L.float16),
    "amp-autocast-positional-dtype": lambda L: _ac_state(L.autocast("cpu", L.float16)),
    "amp-autocast-exit-without-enter": lambda L: L.autocast("cpu").__exit__(None, None, None),
    "amp-cuda-autocast-args": lambda L: _ac_state(L.cuda.amp.autocast(True, L.float32)),
    "amp-set-autocast-dtype-int": lambda L: L.set_autocast_dtype("cpu", L.int64),
    "amp-get-autocast-dtype-bad": lambda L: L.get_autocast_dtype("gpu"),
    "amp-is-autocast-available-int": lambda L: L.amp.is_autocast_available(1),
    "amp-custom-fwd-no-device": lambda L: L.amp.custom_fwd(lambda ctx, x: x),
    "amp-custom-fwd-cast-int": lambda L: cf(L, L.int64),
    "scaler-unscale-before-scale": lambda L: _scaler_steps(L, ["unscale_"]),
    "scaler-scale-int": lambda L: L.amp.GradScaler("cpu").scale(3),
    "scaler-scale-none": lambda L: L.amp.GradScaler("cpu").scale(None),
    "scaler-scale-int-tensor": lambda L: L.amp.GradScaler("cpu").scale(L.ones(2, dtype=L.int64)),
    "scaler-update-float": lambda L: _scaler_update(L, 2.0),
    "scaler-update-str": lambda L: _scaler_update(L, "a"),
    "scaler-update-int-tensor": lambda L: _scaler_update(L, lambda L: L.ones(1, dtype=L.int64)),
    "scaler-update-double-tensor": lambda L: _scaler_update(L, lambda L: L.ones(1, dtype=L.float64)),
    "scaler-update-0d-tensor": lambda L: _scaler_update(L, lambda L: L.tensor(4.0)),
    "scaler-device-int": lambda L: _scaler_state(L.amp.GradScaler(1)),
    "scaler-device-bad": lambda L: _scaler_state(L.amp.GradScaler("gpu")),
    "scaler-cuda-disabled": lambda L: L.amp.GradScaler("cuda").is_enabled(),
    "scaler-enabled-int": lambda L: L.amp.GradScaler("cpu", enabled=1).is_enabled(),
    "scaler-growth-interval-zero": lambda L: _scaler_state(L.amp.GradScaler("cpu", growth_interval=0)),
    "scaler-growth-interval-float": lambda L: _scaler_state(L.amp.GradScaler("cpu", growth_interval=2.5)),
    "scaler-init-scale-negative": lambda L: L.amp.GradScaler("cpu", init_scale=-1.0).scale(L.ones(1)),
    "scaler-load-wrong-keys": lambda L: L.amp.GradScaler("cpu").load_state_dict({"scale": 1.0}),
    "scaler-load-disabled-state": lambda L: L.amp.GradScaler("cpu").load_state_dict({}),
    "scaler-load-into-disabled": lambda L: L.amp.GradScaler("cpu", enabled=False).load_state_dict({"scale": 2.0}),
    "scaler-state-dict-disabled": lambda L: L.amp.GradScaler("cpu", enabled=False).state_dict(),
    "scaler-step-not-optimizer": lambda L: (lambda s: (s.scale(L.ones(1)), s.step(3)))(L.amp.GradScaler("cpu")),
    "scaler-unscale-not-optimizer": lambda L: (lambda s: (s.scale(L.ones(1)), s.unscale_(3)))(L.amp.GradScaler("cpu")),
    "scaler-get-scale-before": lambda L: L.amp.GradScaler("cpu").get_scale(),
    "scaler-set-growth-factor": lambda L: (lambda s: (s.set_growth_factor(3.0), s.get_growth_factor()))(
        L.amp.GradScaler("cpu")),
    "scaler-two-iterations": lambda L: _scaler_steps(L, ["scale", "step", "update", "scale", "unscale_", "step",
                                                         "update"]),
    "scaler-update-twice": lambda L: _scaler_steps(L, ["scale", "step", "update", "update"]),
    "scaler-scale-complex": lambda L: L.amp.GradScaler("cpu").scale(c4(L)),
    "scaler-scale-bf16": lambda L: L.amp.GradScaler("cpu").scale(L.ones(2, dtype=L.bfloat16)).dtype,
}
def ac_dev(L, dev):
    with L.autocast(dev):
        return L.mm(m22(L), m22(L)).dtype
def cf(L, dt):
    class F(L.autograd.Function):
        @staticmethod
        @L.amp.custom_fwd(device_type="cpu", cast_inputs=dt)
        def forward(ctx, x):
            return x * 2
        @staticmethod
        def backward(ctx, g):
            return g
    with L.autocast("cpu"):
        return F.apply(m22(L))


for _n, _f in ISSUE18.items():
    case(_n, _f)


# ----- expected failures ----------------------------------------------------------------------------------
# Known defects, as {regex on the case id: reason naming the file where the fix belongs}; each becomes a strict
# xfail, so that a fix shows up as a failure until its line here is removed.
XFAIL_PATTERNS: dict[str, str] = {
}


def xfail_reason(case_id: str) -> str | None:
    for pat, reason in XFAIL_PATTERNS.items():
        if re.fullmatch(pat, case_id):
            return reason
    return None
