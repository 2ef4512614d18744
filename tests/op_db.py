"""The op database: every public op ember implements, described once, run against torch and ember.

Each ``OpInfo`` has
  * ``op(m, *tensors, **kwargs)``: the call, written against a module ``m`` (``torch`` or ``ember``), so
    the very same lambda runs on both libraries. ``tensors`` are the differentiable inputs; ``kwargs``
    carry everything else (dims, exponents, index arrays, masks) as plain Python / NumPy values.
  * ``samples``: a list of ``(shapes, kwargs)`` (or a callable returning ``Sample``s): shapes cover 0-d
    scalars, broadcasting pairs, size-1 dims and empty dims wherever the op allows them.
  * ``domain``: how input values are drawn (one name, or one per input), e.g. ``positive`` for log/sqrt,
    ``nonzero`` for abs/relu/sign kinks, ``grid_a``/``grid_b`` for maximum/minimum (never tie),
    ``distinct`` for max/min reductions (no ties, so the arg-extremum is stable under perturbation).
  * ``dtypes``: the dtypes of the forward/value test (float32 and float64, plus int/bool where the op
    takes them: torch either accepts them or raises, and ember must do the same).
  * flags ``supports_grad``, ``supports_gradgrad``, ``supports_fwd``.
  * ``xfails``: known ember defects, as ``XFail(test, reason, sample=None)``; the test file turns each into
    ``pytest.mark.xfail(strict=True)`` on the matching (test, sample) cases only.
"""
from __future__ import annotations

import importlib
import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

FLOAT = ("float32", "float64")
INT = ("int64", "int32")
ALL = FLOAT + INT + ("bool",)


@dataclass
class Sample:
    args: tuple                 # float64 NumPy arrays: the (differentiable) tensor inputs
    kwargs: dict = field(default_factory=dict)
    desc: str = ""


@dataclass
class XFail:
    test: str                   # the test key: forward, grad, gradcheck, gradgrad, fwd_ad, grad_fn, ...
    reason: str
    sample: str | None = None   # a substring of the sample id; None: every sample


@dataclass
class OpInfo:
    name: str
    op: Callable
    samples: list | Callable
    domain: str | tuple = "real"
    dtypes: tuple = FLOAT
    supports_grad: bool = True
    supports_gradgrad: bool = True
    supports_fwd: bool = True
    xfails: tuple = ()
    eps: float = 1e-6           # central-difference step (larger for ops whose output is float32)
    _cache: list | None = field(default=None, repr=False)

    def sample_inputs(self) -> list:
        if self._cache is None:
            rng = np.random.default_rng(zlib.crc32(self.name.encode()))
            if callable(self.samples):
                out = self.samples(rng)
            else:
                out = []
                for entry in self.samples:
                    shapes, kwargs = entry if isinstance(entry, tuple) and len(entry) == 2 and \
                        isinstance(entry[1], dict) else (entry, {})
                    doms = self.domain if isinstance(self.domain, tuple) else (self.domain,) * len(shapes)
                    args = tuple(draw(rng, s, d) for s, d in zip(shapes, doms))
                    out.append(Sample(args, kwargs))
            for i, s in enumerate(out):
                if not s.desc:
                    s.desc = describe(s)
                s.desc = f"{i}:{s.desc}"
            self._cache = out
        return self._cache

    def xfail_reason(self, test: str, sample_desc: str = "") -> str | None:
        for x in self.xfails:
            if x.test == test and (x.sample is None or sample_desc.startswith(x.sample)):
                return x.reason
        return None


def describe(s: Sample) -> str:
    shapes = "x".join("(" + ",".join(map(str, a.shape)) + ")" for a in s.args)
    kw = ",".join(f"{k}={_short(v)}" for k, v in s.kwargs.items())
    return shapes + ("|" + kw if kw else "")


def _short(v) -> str:
    if isinstance(v, np.ndarray):
        return f"arr{list(v.shape)}{v.dtype.kind}".replace(" ", "")
    if isinstance(v, tuple):
        return "(" + ",".join(_short(x) for x in v) + ")"
    if isinstance(v, slice):
        return f"{v.start}:{v.stop}:{v.step}"
    return repr(v).replace(" ", "")


# ----- input domains ----------------------------------------------------------------------------

CLAMP_LO, CLAMP_HI = -0.5, 0.8


def _away(x, points, gap=0.05):
    for p in points:
        near = np.abs(x - p) < gap
        x = np.where(near, x + 2 * gap, x)
    return x


def draw(rng, shape, domain="real"):
    """Float64 values of ``shape`` from ``domain`` (every domain keeps central differences exact enough)."""
    n = int(np.prod(shape))
    if domain == "real":
        x = rng.uniform(-2, 2, shape)
    elif domain == "positive":
        x = rng.uniform(0.5, 2.5, shape)
    elif domain == "nonzero":          # away from the kink of abs/relu/sign at 0
        x = rng.choice([-1.0, 1.0], shape) * rng.uniform(0.25, 2, shape)
    elif domain == "clamp":            # away from the clamp bounds
        x = _away(rng.uniform(-2, 2, shape), (CLAMP_LO, CLAMP_HI))
    elif domain == "round":            # away from the jumps of round at k + 0.5
        x = rng.integers(-3, 4, shape) + rng.uniform(-0.4, 0.4, shape)
    elif domain in ("grid_a", "grid_b", "grid_c"):
        # Points of three interleaved grids: values of different grids never tie (gap >= 0.05).
        off = {"grid_a": 0.05, "grid_b": 0.15, "grid_c": 0.10}[domain]
        x = rng.integers(-10, 10, shape) * 0.2 + off
    elif domain == "distinct":         # pairwise distinct values, 0.3 apart
        x = (rng.permutation(n) * 0.3 - 0.15 * n + rng.uniform(0, 0.05)).reshape(shape)
    else:
        raise ValueError(domain)
    return np.asarray(x, dtype=np.float64)


def to_dtype(a: np.ndarray, dtype: str) -> np.ndarray:
    """``a`` (float64 from a domain) as ``dtype``. Integer casts keep the sign and never make a zero out of a
    nonzero value (ceil away from 0 of 2x), so positive/nonzero domains stay valid."""
    with np.errstate(over="ignore", invalid="ignore"):   # samples with inf/nan on purpose
        if dtype in FLOAT + ("float16", "bfloat16"):   # (NumPy knows "bfloat16" once ml_dtypes is imported)
            return a.astype(dtype)
        if dtype == "bool":
            return a > 0
        return np.where(a >= 0, np.ceil(a * 2), np.floor(a * 2)).astype(dtype)


def complex_args(op: "OpInfo", sample: Sample) -> list:
    """The sample's float inputs as complex128, ``a + i b`` with a small imaginary part (so that the domain stays
    valid near the real axis); drawn from the op's name and the sample, so every run sees the same values."""
    rng = np.random.default_rng(zlib.crc32("/".join((op.name, sample.desc, "cx")).encode()))
    return [a + 1j * (0.25 * rng.uniform(-1, 1, a.shape)) if a.dtype.kind == "f" else a for a in sample.args]


# ----- shapes ------------------------------------------------------------------------------------

UNARY = [((),), ((5,),), ((3, 4),), ((2, 1, 3),), ((0,),), ((2, 0, 3),)]
BINARY = [((), ()), ((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)),
          ((), (2, 3)), ((2, 3), ()), ((1,), (2, 1, 3)), ((0, 3), (3,)), ((1, 0), (4, 1))]
# In-place: the second operand must broadcast to the first one's shape.
INPLACE = [((), ()), ((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 4), ()), ((2, 3, 4), (3, 1)), ((0, 3), (3,))]


def unary(name, op, domain="real", dtypes=ALL, **kw):
    return OpInfo(name, op, UNARY, domain, dtypes, **kw)


def binary(name, op, domain="real", dtypes=ALL, shapes=BINARY, **kw):
    return OpInfo(name, op, shapes, domain, dtypes, **kw)


def scalar_samples(shapes, **kwargs_list):
    """Unary samples, crossed with each value of one keyword (e.g. the scalar operand)."""
    ((key, values),) = kwargs_list.items()
    return [(s, {key: v}) for v in values for s in shapes]


def _ix(m, index):
    """An index for module ``m``: NumPy arrays become ``m.tensor``s, lists and the rest stay as they are."""
    if isinstance(index, tuple):
        return tuple(_ix(m, i) for i in index)
    if isinstance(index, np.ndarray):
        return m.tensor(index)
    return index


def _setitem(m, a, v, index):
    y = a.clone()
    y[_ix(m, index)] = v
    return y


def _setitem_scalar(m, a, index, value):
    y = a * 1
    y[_ix(m, index)] = value
    return y


def _reduce_shapes(op_kw, extra=()):
    """Shapes x dims for the reductions: all, int dims (negative too), tuples, keepdim, 0-d, size 1, empty."""
    base = [((3, 4),), ((2, 3, 4),), ((5,),), ((2, 1, 3),)]
    out = [(s, {}) for s in base] + [(((),), {})]
    out += [(((3, 4),), {"dim": 1}), (((3, 4),), {"dim": -2, "keepdim": True}),
            (((2, 3, 4),), {"dim": (0, 2)}), (((2, 3, 4),), {"dim": (-1, 0), "keepdim": True}),
            (((2, 1, 3),), {"dim": 1}), (((4,),), {"dim": 0})]
    out += list(extra)
    return [(s, dict(op_kw, **k)) for s, k in out]


def _std_samples():
    shapes = [(((3, 4),), {}), (((2, 3, 4),), {"dim": 1}), (((2, 3, 4),), {"dim": (0, 2)}),
              (((3, 4),), {"dim": -1, "keepdim": True}), (((5,),), {"correction": 0}),
              (((3, 4),), {"dim": 0, "unbiased": False}), (((3, 4),), {"dim": 1, "correction": 2}),
              (((2, 1, 3),), {"dim": 2, "keepdim": True, "correction": 0})]
    return shapes


def _std(m, a, dim=None, **kw):
    return a.std(dim, **kw) if dim is not None else a.std(**kw)


def _sum(m, a, dim=None, keepdim=False):
    return m.sum(a) if dim is None else m.sum(a, dim, keepdim=keepdim)


def _mean(m, a, dim=None, keepdim=False):
    return a.mean() if dim is None else a.mean(dim, keepdim=keepdim)


def _norm(m, a, dim=None, keepdim=False):
    return a.norm() if dim is None else m.norm(a, dim=dim, keepdim=keepdim)


def _cat_samples(rng):
    cases = [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 2)], 1), ([(2, 3), (2, 3)], -1),
             ([(3,), (0,), (2,)], 0), ([(2, 0, 3), (2, 2, 3)], 1), ([(1, 2, 3), (1, 2, 3)], 2),
             ([(2, 3), (0,)], 0), ([(4,)], 0)]
    return [Sample(tuple(draw(rng, s) for s in shapes), {"dim": d}) for shapes, d in cases]


def _stack_samples(rng):
    cases = [([(2, 3), (2, 3)], 0), ([(2, 3), (2, 3), (2, 3)], 1), ([(3,), (3,)], -1), ([(), ()], 0),
             ([(0, 2), (0, 2)], 1), ([(4,)], 0)]
    return [Sample(tuple(draw(rng, s) for s in shapes), {"dim": d}) for shapes, d in cases]


def _where_samples(rng):
    out = []
    for sa, sb, sc in [((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)), ((), (), ()), ((2, 3), (), (3,)),
                       ((0, 3), (3,), (1, 3)), ((3, 1), (1, 4), (3, 4))]:
        out.append(Sample((draw(rng, sa), draw(rng, sb)), {"cond": rng.random(sc) > 0.5}))
    return out


def _where_scalar_samples(rng):
    return [Sample((draw(rng, s),), {"cond": rng.random(s) > 0.5, "other": v})
            for s, v in [((3, 4), 0.0), ((2, 3), 1.5), ((), -1.0), ((0, 2), 2.0)]]


def _getitem_samples(rng):
    idx = [0, -1, slice(1, None), slice(None, None, 2), slice(0, 3, 2), (Ellipsis, 1), (None, 1),
           (slice(None), None, 0), (1, slice(None, 2)), [0, 2, 2], np.array([2, 0, 0, 1]),
           (slice(None), [0, 3]), (np.array([[0, 1], [2, 2]]),), ([0, 2], [1, 3]), (Ellipsis, None),
           (1, Ellipsis, 2)]
    out = [Sample((draw(rng, (3, 4)),), {"index": i}) for i in idx]
    out.append(Sample((draw(rng, (3, 4)),), {"index": rng.random((3, 4)) > 0.5}))
    out.append(Sample((draw(rng, (3, 4)),), {"index": np.array([True, False, True])}))
    out.append(Sample((draw(rng, (2, 3, 4)),), {"index": (0, slice(None), np.array([1, 1, 3]))}))
    out.append(Sample((draw(rng, (2, 3, 4)),), {"index": (slice(None), 1, slice(None, None, 3))}))
    out.append(Sample((draw(rng, ()),), {"index": None}))
    out.append(Sample((draw(rng, ()),), {"index": Ellipsis}))
    out.append(Sample((draw(rng, (0, 3)),), {"index": (slice(None), 1)}))
    out.append(Sample((draw(rng, (5,)),), {"index": slice(1, 1)}))
    return out


def _setitem_samples(rng):
    cases = [((3, 4), (4,), 0), ((3, 4), (2, 4), slice(1, None)), ((3, 4), (), (1, 2)),
             ((3, 4), (3, 2), (slice(None), slice(None, None, 2))), ((3, 4), (4,), np.array([0, 2])),
             ((3, 4), (3,), (slice(None), -1)), ((2, 3), (), np.array([[True, False, True], [False, True, True]])),
             ((3, 4), (1, 4), slice(0, 2)), ((2, 3, 4), (3, 3), (0, slice(None), np.array([1, 0, 3])))]
    return [Sample((draw(rng, sa), draw(rng, sv)), {"index": i}) for sa, sv, i in cases]


def _matmul_shapes():
    return [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
            ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((1, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (3, 4, 2)),
            ((4,), (2, 4, 5)), ((2, 3, 4), (4,)), ((3, 0), (0, 4)), ((0, 4), (4, 2)), ((1, 1), (1, 1)),
            ((2, 3, 0), (0, 4)), ((0,), (0,)), ((2, 3, 0), (0,)), ((0,), (2, 0, 3)), ((2, 1, 3, 0), (4, 0, 5))]


def _clamp_tensor_samples(rng):
    out = []
    for sx, slo, shi in [((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)), ((), (), ()), ((2, 3), (), (3,)),
                         ((0, 3), (3,), (3,))]:
        out.append(Sample((draw(rng, sx, "grid_a"), draw(rng, slo, "grid_b"), draw(rng, shi, "grid_c"))))
    return out


def _clamp_tensor_one_samples(rng):
    return [Sample((draw(rng, sx, "grid_a"), draw(rng, sb, "grid_b")), {"which": w})
            for sx, sb in [((3, 4), (3, 4)), ((3, 4), (4,)), ((), ())] for w in ("min", "max")]


def _clamp_tensor_one(m, a, b, which):
    return m.clamp(a, **{which: b})


# ----- the database --------------------------------------------------------------------------------

OP_DB = [
    # --- binary arithmetic, tensor (op) tensor, broadcasting ----------------------------------------
    binary("add", lambda m, a, b: a + b),
    binary("add_fn", lambda m, a, b: m.add(a, b)),
    binary("sub", lambda m, a, b: a - b),
    binary("mul", lambda m, a, b: a * b),
    binary("div", lambda m, a, b: a / b, ("real", "nonzero")),
    binary("pow", lambda m, a, b: a ** b, ("positive", "real"), dtypes=FLOAT),
    binary("pow_int", lambda m, a, b: m.pow(a, b), ("positive", "positive"), dtypes=INT, supports_grad=False,
           supports_gradgrad=False, supports_fwd=False),
    binary("maximum", lambda m, a, b: m.maximum(a, b), ("grid_a", "grid_b")),
    binary("minimum", lambda m, a, b: m.minimum(a, b), ("grid_a", "grid_b")),
    # --- with a Python scalar operand (both sides) --------------------------------------------------
    OpInfo("add_scalar", lambda m, a, s: a + s, scalar_samples(UNARY, s=[2.5, 3, True]), dtypes=ALL),
    OpInfo("radd_scalar", lambda m, a, s: s + a, scalar_samples(UNARY, s=[2.5, -2]), dtypes=ALL),
    OpInfo("sub_scalar", lambda m, a, s: a - s, scalar_samples(UNARY, s=[1.5, 2]), dtypes=ALL),
    OpInfo("rsub_scalar", lambda m, a, s: s - a, scalar_samples(UNARY, s=[1.5, 2]), dtypes=ALL),
    OpInfo("mul_scalar", lambda m, a, s: a * s, scalar_samples(UNARY, s=[-2.0, 3, False]), dtypes=ALL),
    OpInfo("rmul_scalar", lambda m, a, s: s * a, scalar_samples(UNARY, s=[0.5, 3]), dtypes=ALL),
    OpInfo("div_scalar", lambda m, a, s: a / s, scalar_samples(UNARY, s=[4.0, -3]), dtypes=ALL),
    OpInfo("rdiv_scalar", lambda m, a, s: s / a, scalar_samples(UNARY, s=[3.0, 2]), "nonzero", dtypes=ALL),
    OpInfo("pow_scalar", lambda m, a, p: a ** p, scalar_samples(UNARY, p=[2, 3, 2.0, 0, 1]), dtypes=ALL),
    OpInfo("pow_scalar_frac", lambda m, a, p: a.pow(p), scalar_samples(UNARY, p=[0.5, -1.5, -1.0, 2.5]),
           "positive", dtypes=FLOAT),
    OpInfo("rpow_scalar", lambda m, a, s: s ** a, scalar_samples(UNARY, s=[2.0, 0.5, 3]), dtypes=FLOAT + INT),
    # --- unary ----------------------------------------------------------------------------------------
    unary("neg", lambda m, a: -a),
    unary("neg_fn", lambda m, a: m.neg(a), dtypes=FLOAT + INT),
    unary("abs", lambda m, a: m.abs(a), "nonzero"),
    unary("sign", lambda m, a: a.sign(), "nonzero"),
    unary("exp", lambda m, a: m.exp(a)),
    unary("log", lambda m, a: m.log(a), "positive"),
    unary("sqrt", lambda m, a: a.sqrt(), "positive"),
    unary("sin", lambda m, a: m.sin(a)),
    unary("cos", lambda m, a: a.cos()),
    unary("tanh", lambda m, a: m.tanh(a)),
    unary("sigmoid", lambda m, a: m.sigmoid(a)),
    unary("relu", lambda m, a: m.relu(a), "nonzero"),
    unary("round", lambda m, a: m.round(a), "round"),
    OpInfo("clamp", lambda m, a, **kw: m.clamp(a, **kw),
           [(s, k) for k in ({"min": CLAMP_LO, "max": CLAMP_HI}, {"min": CLAMP_LO}, {"max": CLAMP_HI})
            for s in UNARY] + [(((3, 4),), {"min": -1, "max": 1})], "clamp", dtypes=ALL),
    OpInfo("clamp_tensor", lambda m, a, lo, hi: m.clamp(a, lo, hi), _clamp_tensor_samples, dtypes=FLOAT),
    OpInfo("clamp_tensor_one", _clamp_tensor_one, _clamp_tensor_one_samples, dtypes=FLOAT),
    OpInfo("where", lambda m, a, b, cond: m.where(m.tensor(cond), a, b), _where_samples, dtypes=ALL),
    OpInfo("where_scalar", lambda m, a, cond, other: m.where(m.tensor(cond), a, other), _where_scalar_samples,
           dtypes=ALL),
    # --- linear algebra -------------------------------------------------------------------------------
    OpInfo("matmul", lambda m, a, b: a @ b, _matmul_shapes(), dtypes=FLOAT + ("int64",)),
    OpInfo("matmul_fn", lambda m, a, b: m.matmul(a, b), [((3, 4), (4, 2)), ((2, 3, 4), (4,))]),
    OpInfo("outer", lambda m, a, b: m.outer(a, b), [((3,), (4,)), ((1,), (2,)), ((0,), (3,))]),
    # --- reductions -----------------------------------------------------------------------------------
    OpInfo("sum", _sum, _reduce_shapes({}, [(((0, 3),), {}), (((0, 3),), {"dim": 0})]), dtypes=ALL),
    OpInfo("mean", _mean, _reduce_shapes({}, [(((0, 3),), {"dim": 1})]), dtypes=ALL),
    OpInfo("std", _std, _std_samples(), dtypes=ALL),
    OpInfo("norm", _norm, _reduce_shapes({}), dtypes=FLOAT + ("int64",)),
    OpInfo("max_all", lambda m, a: m.max(a), [((3, 4),), ((5,),), ((),), ((2, 1, 3),)], "distinct", dtypes=ALL),
    OpInfo("min_all", lambda m, a: a.min(), [((3, 4),), ((5,),), ((),), ((2, 1, 3),)], "distinct", dtypes=ALL),
    OpInfo("max_dim", lambda m, a, dim, keepdim=False: m.max(a, dim, keepdim=keepdim),
           [(((3, 4),), {"dim": 1}), (((3, 4),), {"dim": 0, "keepdim": True}), (((2, 3, 4),), {"dim": -1}),
            (((),), {"dim": 0}), (((2, 1, 3),), {"dim": 1}), (((0, 3),), {"dim": 1})], "distinct", dtypes=ALL),
    OpInfo("min_dim", lambda m, a, dim, keepdim=False: a.min(dim, keepdim),
           [(((3, 4),), {"dim": 1}), (((3, 4),), {"dim": -2, "keepdim": True}), (((2, 3, 4),), {"dim": 0}),
            (((),), {"dim": -1, "keepdim": True})], "distinct", dtypes=ALL),
    OpInfo("amax", lambda m, a, **kw: m.amax(a, **kw),
           [(((3, 4),), {"dim": 1}), (((3, 4),), {}), (((2, 3, 4),), {"dim": (0, 2), "keepdim": True}),
            (((),), {})], "distinct", dtypes=ALL),
    OpInfo("amin", lambda m, a, **kw: a.amin(**kw),
           [(((3, 4),), {"dim": 0}), (((2, 3, 4),), {"dim": -1, "keepdim": True})], "distinct", dtypes=ALL),
    # --- shape ----------------------------------------------------------------------------------------
    OpInfo("reshape", lambda m, a, shape: a.reshape(shape),
           [(((3, 4),), {"shape": (4, 3)}), (((3, 4),), {"shape": (-1,)}), (((2, 3, 4),), {"shape": (6, -1)}),
            (((),), {"shape": (1, 1)}), (((1,),), {"shape": ()}), (((0, 3),), {"shape": (3, 0)}),
            (((2, 1, 3),), {"shape": (3, 2)})], dtypes=ALL),
    OpInfo("reshape_noncontig", lambda m, a, shape: a.t().reshape(shape),
           [(((3, 4),), {"shape": (-1,)}), (((3, 4),), {"shape": (2, 6)})], dtypes=FLOAT),
    OpInfo("view", lambda m, a, shape: a.view(*shape),
           [(((3, 4),), {"shape": (4, 3)}), (((3, 4),), {"shape": (2, -1, 2)}), (((),), {"shape": (1,)}),
            (((0, 3),), {"shape": (-1,)})], dtypes=ALL),
    OpInfo("transpose", lambda m, a, d0, d1: a.transpose(d0, d1),
           [(((3, 4),), {"d0": 0, "d1": 1}), (((2, 3, 4),), {"d0": -1, "d1": 0}), (((3, 4),), {"d0": 1, "d1": 1}),
            (((),), {"d0": 0, "d1": -1}), (((0, 3),), {"d0": 0, "d1": 1})], dtypes=ALL),
    OpInfo("permute", lambda m, a, dims: a.permute(dims),
           [(((2, 3, 4),), {"dims": (2, 0, 1)}), (((3, 4),), {"dims": (-1, 0)}), (((),), {"dims": ()}),
            (((2, 1, 3),), {"dims": (1, 2, 0)})], dtypes=ALL),
    OpInfo("T", lambda m, a: a.T, [((3, 4),), ((),), ((1, 5),)], dtypes=ALL),
    OpInfo("mT", lambda m, a: a.mT, [((3, 4),), ((2, 3, 4),)], dtypes=ALL),
    OpInfo("t", lambda m, a: a.t(), [((3, 4),), ((5,),), ((),)], dtypes=ALL),
    OpInfo("squeeze", lambda m, a, **kw: a.squeeze(**kw),
           [(((2, 1, 3),), {}), (((2, 1, 3),), {"dim": 1}), (((2, 1, 3),), {"dim": 0}),
            (((1, 1),), {"dim": -1}), (((),), {}), (((1, 0, 1),), {})], dtypes=ALL),
    OpInfo("unsqueeze", lambda m, a, dim: m.unsqueeze(a, dim),
           [(((3, 4),), {"dim": 0}), (((3, 4),), {"dim": -1}), (((3, 4),), {"dim": 1}), (((),), {"dim": 0}),
            (((0,),), {"dim": -2})], dtypes=ALL),
    OpInfo("expand", lambda m, a, shape: a.expand(*shape),
           [(((3, 1),), {"shape": (2, 3, 4)}), (((3, 1),), {"shape": (-1, 5)}), (((),), {"shape": (3,)}),
            (((1,),), {"shape": (2, 0)}), (((3, 4),), {"shape": (3, 4)})], dtypes=ALL),
    OpInfo("getitem", lambda m, a, index: a[_ix(m, index)], _getitem_samples, dtypes=ALL),
    OpInfo("cat", lambda m, *ts, dim: m.cat(ts, dim), _cat_samples, dtypes=ALL),
    OpInfo("stack", lambda m, *ts, dim: m.stack(ts, dim=dim), _stack_samples, dtypes=ALL),
    unary("clone", lambda m, a: a.clone()),
    # float64 -> float32 is linear: a large step keeps float32 rounding out of the central differences.
    OpInfo("to_float32", lambda m, a: a.to(m.float32), UNARY, dtypes=ALL, eps=0.1),
    OpInfo("to_float64", lambda m, a: a.to(dtype=m.float64), UNARY, dtypes=ALL),
    OpInfo("double", lambda m, a: a.double() * 2, UNARY, dtypes=ALL),
    OpInfo("to_int64", lambda m, a: a.to(m.int64), UNARY, dtypes=ALL, supports_grad=False,
           supports_gradgrad=False, supports_fwd=False),
    # --- in place, on non-leaf tensors ----------------------------------------------------------------
    binary("add_", lambda m, a, b: a.clone().add_(b), shapes=INPLACE),
    binary("sub_", lambda m, a, b: (a * 1).sub_(b), shapes=INPLACE),
    binary("mul_", lambda m, a, b: a.clone().mul_(b), shapes=INPLACE),
    binary("imul", lambda m, a, b: _imul(a.clone(), b), shapes=INPLACE),
    binary("div_", lambda m, a, b: a.clone().div_(b), ("real", "nonzero"), shapes=INPLACE),
    binary("pow_", lambda m, a, b: a.clone().pow_(b), ("positive", "real"), dtypes=FLOAT, shapes=INPLACE),
    OpInfo("pow_scalar_", lambda m, a, p: a.clone().pow_(p), scalar_samples(UNARY, p=[2, 0.5]), "positive",
           dtypes=FLOAT),
    OpInfo("add_scalar_", lambda m, a, s: a.clone().add_(s), scalar_samples(UNARY, s=[2, 1.5]), dtypes=ALL),
    OpInfo("mul_scalar_", lambda m, a, s: (a + 0).mul_(s), scalar_samples(UNARY, s=[-2.0, 3]), dtypes=ALL),
    OpInfo("div_scalar_", lambda m, a, s: a.clone().div_(s), scalar_samples(UNARY, s=[4.0, 2]), dtypes=ALL),
    OpInfo("clamp_", lambda m, a, **kw: a.clone().clamp_(**kw),
           [(s, k) for k in ({"min": CLAMP_LO, "max": CLAMP_HI}, {"max": CLAMP_HI}) for s in UNARY], "clamp",
           dtypes=ALL),
    unary("zero_", lambda m, a: a.clone().zero_()),
    OpInfo("fill_", lambda m, a, v: a.clone().fill_(v), scalar_samples(UNARY, v=[2.5, 3])),
    OpInfo("fill_diagonal_", lambda m, a, v, wrap=False: (a * 1).fill_diagonal_(v, wrap),
           [(((3, 3),), {"v": 2.5}), (((2, 4),), {"v": -1}), (((7, 3),), {"v": 2.5, "wrap": True}),
            (((7, 3),), {"v": 0}), (((5, 2),), {"v": 1.5, "wrap": True}), (((3, 3, 3),), {"v": True}),
            (((0, 0),), {"v": 1.0}), (((3, 0),), {"v": 1.0}), (((4, 3),), {"v": 2, "wrap": True})], dtypes=ALL),
    OpInfo("fill_diagonal_errors", lambda m, a, v, wrap=False: (a * 1).fill_diagonal_(v, wrap),
           [(((3,),), {"v": 1.0}), (((2, 3, 3),), {"v": 1.0}), (((3, 3),), {"v": 1.0, "wrap": 1}),
            (((3, 3),), {"v": "a"}), (((2, 2),), {"v": 1e300})], dtypes=ALL, supports_grad=False,
           supports_gradgrad=False, supports_fwd=False),
    binary("copy_", lambda m, a, b: (a * 2).copy_(b), shapes=INPLACE),
    OpInfo("setitem", lambda m, a, v, index: _setitem(m, a, v, index), _setitem_samples, dtypes=ALL),
    OpInfo("setitem_scalar", lambda m, a, index, value: _setitem_scalar(m, a, index, value),
           [(((3, 4),), {"index": i, "value": 1.5}) for i in (0, (slice(None), 1), np.array([2, 0]),
                                                            (Ellipsis,))], dtypes=FLOAT),
]


def _imul(a, b):
    a *= b
    return a


def _inplace_through_view(m, a, b, index):
    y = a.clone()
    y[_ix(m, index)].mul_(b)            # CopySlices on y's history
    return y


def _stale_view(m, a, b, index):
    y = a * 1
    v = y[_ix(m, index)]
    y.mul_(b)                          # v's base changed in place: v's history is rebuilt (AsStridedBackward0)
    return v * 2


def _view_samples(rng):
    cases = [((3, 4), (4,), 0), ((3, 4), (2, 1), (slice(1, None), slice(None, 1))),
             ((2, 3, 4), (), (Ellipsis, 1)), ((3, 4), (2,), (slice(None, None, 2), 1))]
    return [Sample((draw(rng, sa), draw(rng, sb)), {"index": i}) for sa, sb, i in cases]


def _stale_view_samples(rng):
    cases = [((3, 4), (3, 4), 0), ((3, 4), (), (slice(None), slice(1, 3))), ((2, 3), (3,), (1,))]
    return [Sample((draw(rng, sa), draw(rng, sb)), {"index": i}) for sa, sb, i in cases]


OP_DB += [
    OpInfo("inplace_through_view", _inplace_through_view, _view_samples),
    OpInfo("stale_view", _stale_view, _stale_view_samples),
    # conversions that make new tensors from a tensor's dtype
    OpInfo("type_as", lambda m, a, b: a.type_as(b.double()) * b, BINARY[:4], dtypes=ALL),
    OpInfo("new_tensor", lambda m, a: a + a.new_tensor([[1.5]]), UNARY[:3], dtypes=ALL, supports_grad=False,
           supports_gradgrad=False, supports_fwd=False),
    OpInfo("new_full", lambda m, a: a.new_full((2, 1), 2.5) * a.sum(), UNARY[1:4], dtypes=FLOAT),
]


# Each op family keeps its own entries in tests/op_db_<family>.py.
for _family in ("elementwise", "reduction", "shape", "indexing", "linalg", "sorting", "nn_activation", "nn_loss",
                "nn_norm", "nn_conv", "nn_rnn", "complex", "fft", "names"):
    _mod = importlib.import_module(f"op_db_{_family}")
    OP_DB += _mod.OPS

OPS = {op.name: op for op in OP_DB}
assert len(OPS) == len(OP_DB), "op names must be unique"

# The elementwise ops the hypothesis tests draw shapes for.
HYP_BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum"]
HYP_UNARY = ["neg", "abs", "sign", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "round",
             "clamp", "clone"]
for _family in ("elementwise", "reduction", "shape", "indexing", "linalg", "sorting", "nn_activation", "nn_loss",
                "nn_norm", "nn_conv", "nn_rnn", "complex", "fft", "names"):
    _mod = importlib.import_module(f"op_db_{_family}")
    HYP_BINARY += _mod.HYP_BINARY
    HYP_UNARY += _mod.HYP_UNARY
