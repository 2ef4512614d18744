"""Op database entries of the rest of the tensor API (issue 18, tools/api_coverage.py): positive, ldexp, nextafter,
frexp, fill, renorm, histogram/histogramdd, cholesky_inverse, orgqr/ormqr, the byte/char casts, and the torch-level
spellings of nn.functional ops (ATen's signatures: integer reductions, positional arguments).

Ops composed of other differentiable ops have those ops' nodes where PyTorch has a fused one; each such entry says
so with an XFail of the grad_fn test.
"""
from __future__ import annotations

import numpy as np

from op_db import ALL, BINARY, FLOAT, INPLACE, INT, UNARY, OpInfo, XFail, binary, unary
from op_db_linalg import _shapes, _spd

NO_GRAD = dict(supports_grad=False, supports_gradgrad=False, supports_fwd=False)


def _composite(node: str, ember_node: str) -> tuple:
    why = f"composed of differentiable ops: ember's node is {ember_node}, PyTorch's {node}"
    return XFail("grad_fn", why), XFail("structure", why)


def _renorm_samples(rng):
    from op_db import Sample, draw
    cases = [((3, 4), dict(p=2, dim=0, maxnorm=1.0)), ((3, 4), dict(p=1, dim=1, maxnorm=0.5)),
             ((2, 3, 4), dict(p=3, dim=-1, maxnorm=2.0)), ((3, 4), dict(p=2, dim=0, maxnorm=100.0)),
             ((2, 0), dict(p=2, dim=1, maxnorm=1.0))]
    return [Sample((draw(rng, s),), kw) for s, kw in cases]


def _hist_samples(rng):
    from op_db import Sample, draw
    x = draw(rng, (20,))
    return [Sample((x,), {"bins": 5}), Sample((x,), {"bins": 3, "range": (-1.0, 1.0)}),
            Sample((x,), {"bins": 4, "weight": np.abs(draw(rng, (20,))), "density": True}),
            Sample((np.array([1.0, 2.0, 2.0, 3.5]),), {"bins": 3}), Sample((np.zeros(0),), {"bins": 2}),
            Sample((np.array([3.0, 3.0]),), {"bins": 2}),
            Sample((x,), {"edges": np.array([-2.0, -0.5, 0.0, 0.25, 2.0])})]


def _histogram(m, a, edges=None, weight=None, **kw):
    bins = m.tensor(edges).to(a.dtype) if edges is not None else kw.pop("bins")
    w = None if weight is None else m.tensor(weight).to(a.dtype)
    return tuple(m.histogram(a, bins, weight=w, **kw))


def _histdd_samples(rng):
    from op_db import Sample, draw
    x = draw(rng, (15, 2))
    return [Sample((x,), {"bins": [3, 4]}), Sample((x,), {"bins": 2, "range": [-1.0, 1.0, 0.0, 2.0]}),
            Sample((x,), {"bins": [2, 2], "weight": np.abs(draw(rng, (15,))), "density": True}),
            Sample((draw(rng, (4, 3, 3)),), {"bins": 2})]


def _histogramdd(m, a, weight=None, **kw):
    w = None if weight is None else m.tensor(weight).to(a.dtype)
    hist, edges = m.histogramdd(a, weight=w, **kw)
    return (hist, *edges)


def _ormqr(m, a, c, k=None, **kw):
    k = a.shape[-1] if k is None else k
    return m.ormqr(a, a[..., 0, :k] * 0.5, c, **kw)


OPS = [
    unary("positive", lambda m, a: m.positive(a), dtypes=ALL),
    binary("ldexp", lambda m, a, b: m.ldexp(a, b), dtypes=FLOAT + INT),
    OpInfo("ldexp_int_exponent", lambda m, a, e: m.ldexp(a, m.tensor(e)),
           [(((3, 4),), {"e": np.array([-3, 0, 2, 5])}), (((),), {"e": np.array(-1)})], dtypes=FLOAT + INT,
           xfails=tuple(XFail(t, "PyTorch's gradient grad * pow(2, other) is integer arithmetic for an integer "
                                 "exponent tensor: 0 where other < 0; ember's is 2**other") for t in ("grad", "gradgrad"))),
    binary("ldexp_", lambda m, a, b: a.clone().ldexp_(b), dtypes=FLOAT + INT, shapes=INPLACE),
    binary("nextafter", lambda m, a, b: m.nextafter(a, b), ("grid_a", "grid_b"), dtypes=ALL),
    OpInfo("nextafter_equal", lambda m, a: m.nextafter(a, a * 1), UNARY[:3],   # equal: no gradient to self
           xfails=tuple(XFail(t, "PyTorch's formula gives no gradient where input == other, where the function "
                                 "moves with its arguments") for t in ("gradcheck", "fwd_ad"))),
    binary("nextafter_", lambda m, a, b: a.clone().nextafter_(b), ("grid_a", "grid_b"), dtypes=FLOAT,
           shapes=INPLACE),
    unary("frexp", lambda m, a: tuple(m.frexp(a)), "nonzero", dtypes=ALL),
    OpInfo("frexp_special", lambda m, a: tuple(m.frexp(a * m.tensor([0.0, 1.0, float("inf"), -1e-30, 0.5],
                                                                    dtype=a.dtype))),
           [((5,),)], dtypes=FLOAT, **NO_GRAD),
    unary("fill", lambda m, a: m.fill(a, 3), dtypes=ALL),
    OpInfo("fill_tensor_value", lambda m, a: m.fill(a, m.tensor(2.5)), UNARY[:3], dtypes=FLOAT,
           xfails=tuple(XFail(t, "a tensor value is read as a number: the node is FillBackward0 (PyTorch's "
                                 "FillBackward1, which passes the value the gradient's sum)")
                        for t in ("grad_fn", "structure"))),
    OpInfo("renorm", lambda m, a, **kw: m.renorm(a, **kw), _renorm_samples, xfails=_composite(
        "RenormBackward0", "MulBackward0")),
    OpInfo("renorm_", lambda m, a, **kw: a.clone().renorm_(**kw), _renorm_samples, xfails=_composite(
        "RenormBackward1", "CopyBackwards")),
    OpInfo("renorm_errors", lambda m, a, **kw: m.renorm(a, **kw),
           [(((3,),), dict(p=2, dim=0, maxnorm=1.0)), (((2, 3),), dict(p=0, dim=0, maxnorm=1.0)),
            (((2, 3),), dict(p=2, dim=0, maxnorm=-1.0)), (((2, 3),), dict(p=2, dim=2, maxnorm=1.0))],
           dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("histogram", _histogram, _hist_samples, dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("histogramdd", _histogramdd, _histdd_samples, dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("casts_byte_char", lambda m, a: (a.byte(), a.char()), UNARY, "positive", dtypes=ALL, **NO_GRAD),
    OpInfo("cholesky_inverse", lambda m, a, upper=False: m.cholesky_inverse(
        m.linalg.cholesky(_spd(m, a), upper=upper), upper=upper),
        _shapes(((3, 3),), ((2, 4, 4),), (((3, 3),), {"upper": True}), ((1, 1),)),
        xfails=_composite("CholeskyInverseBackward0", "CholeskySolveBackward0")),
    OpInfo("cholesky_inverse_errors", lambda m, a: m.cholesky_inverse(a), _shapes(((3,),), ((2, 3),)),
           dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("orgqr", lambda m, a: m.orgqr(a, a[..., 0, :] * 0.5), _shapes(((4, 3),), ((3, 3),), ((2, 4, 2),))),
    OpInfo("ormqr", _ormqr, _shapes(((4, 3), (4, 2)), (((4, 3), (2, 4)), {"left": False}),
                                    (((4, 3), (4, 2)), {"transpose": True}),
                                    (((3, 3), (2, 3)), {"left": False, "transpose": True}),
                                    (((2, 4, 2), (2, 4, 3)), {}), (((3, 4), (3, 2)), {"k": 3})),
           xfails=_composite("OrmqrBackward0", "MmBackward0")),
    OpInfo("ormqr_errors", _ormqr, _shapes(((4, 3), (3, 2)), ((4, 3), (4,)), (((4, 3), (4, 2)), {"k": 2}),
                                           ((4, 3), (2, 4, 2))), **NO_GRAD),
]

HYP_BINARY: list = []
HYP_UNARY: list = []
