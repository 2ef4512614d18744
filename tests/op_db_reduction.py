"""Op database entries of the 'reduction' family (collected into op_db.OP_DB).

Ties appear only where central differences still hold: a two-way tie of a max/min reduction that shares
the gradient evenly (amax, amin, aminmax, max(), the inf-norm) has the one-sided slopes 1 and 0, whose mean
is PyTorch's 1/2. Selections that give a tie's whole gradient to one index (max(dim), cummax) are checked
at ties in tests/test_ties.py-style cases, not here.
"""
from __future__ import annotations

import math

import numpy as np  # noqa: F401

from op_db import (ALL, BINARY, FLOAT, INT, UNARY, OpInfo, Sample, XFail, binary, draw,  # noqa: F401
                   scalar_samples, unary)

INF = math.inf

# Shapes x dims: all, int dims (negative too), tuples, keepdim, 0-d, size 1, empty.
DIMS = [((3, 4), {}), ((2, 3, 4), {"dim": 1}), ((2, 3, 4), {"dim": (0, 2)}), ((3, 4), {"dim": -1, "keepdim": True}),
        ((2, 3, 4), {"dim": (-1, 0), "keepdim": True}), ((), {}), ((), {"dim": 0}), ((2, 1, 3), {"dim": 1}),
        ((0, 3), {"dim": 1}), ((2, 0), {"dim": 0, "keepdim": True})]
# Reductions over empty dims: PyTorch's values (0, nan, -inf, 1) or errors; forward only (nan/inf outputs have
# no central differences).
EMPTY = [((0, 3), {}), ((0, 3), {"dim": 0}), ((2, 0), {"dim": (0, 1), "keepdim": True})]
ONE_DIM = [((3, 4), {"dim": 1}), ((2, 3, 4), {"dim": 0}), ((3, 4), {"dim": -1}), ((5,), {"dim": 0}), ((), {"dim": 0}),
           ((2, 1, 3), {"dim": 1}), ((0, 3), {"dim": 1}), ((2, 0), {"dim": 0})]
NO_GRAD = dict(supports_grad=False, supports_gradgrad=False, supports_fwd=False)
TIES = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])


def _samples(entries, domain="real", extra=()):
    """Samples from (shape, kwargs) pairs, plus fixed arrays ``extra`` (array, kwargs)."""
    def make(rng):
        out = [Sample((draw(rng, s, domain),), dict(k)) for s, k in entries]
        out += [Sample((np.array(a, dtype=np.float64),), dict(k)) for a, k in extra]
        return out
    return make


def _kw_call(fn):
    def op(m, a, dim=None, **kw):
        return fn(m, a, **kw) if dim is None else fn(m, a, dim=dim, **kw)
    return op


def _nan(m, a, mask):
    return m.where(m.tensor(mask), float("nan"), a)


def _nan_samples(rng):
    out = []
    for shape, kw in [((3, 4), {}), ((3, 4), {"dim": 1}), ((2, 3, 4), {"dim": (0, 2), "keepdim": True}),
                      ((4,), {"dim": 0})]:
        mask = rng.random(shape) < 0.3
        mask[..., -1] = False   # no slice of NaNs only (nanmean is nan there: see _all_nan_samples)
        mask.flat[0] = True
        out.append(Sample((draw(rng, shape),), dict(kw, mask=mask)))
    return out


def _all_nan_samples(rng):
    # a row of NaNs only: nanmean is nan there (forward only: no central differences through nan)
    return [Sample((draw(rng, (2, 3)),), {"dim": 1, "mask": np.array([[True] * 3, [False, True, False]])}),
            Sample((draw(rng, (2, 3)),), {"mask": np.ones((2, 3), bool)})]


def _prod_samples(rng):
    out = [Sample((draw(rng, s),), dict(k)) for s, k in
           [((3, 4), {}), ((3, 4), {"dim": 1}), ((2, 3, 4), {"dim": -2, "keepdim": True}), ((), {}), ((), {"dim": 0}),
            ((2, 1, 3), {"dim": 1}), ((0, 3), {"dim": 1}), ((0, 3), {}), ((5,), {"dim": 0})]]
    one_zero = draw(rng, (3, 4))
    one_zero[1, 2] = 0.0
    two_zeros = draw(rng, (3, 4))
    two_zeros[1, 0] = two_zeros[1, 3] = 0.0
    spread = draw(rng, (3, 4))
    spread[0, 1] = spread[2, 2] = 0.0
    for a in (one_zero, two_zeros, spread):
        out += [Sample((a,), {}), Sample((a,), {"dim": 1}), Sample((a,), {"dim": 0, "keepdim": True})]
    three = draw(rng, (5,))
    three[[0, 2, 4]] = 0.0
    out.append(Sample((three,), {}))
    return out


def _cumprod_samples(rng):
    out = [Sample((draw(rng, s),), {"dim": d}) for s, d in
           [((3, 4), 1), ((2, 3, 4), 0), ((3, 4), -1), ((5,), 0), ((), 0), ((2, 1, 3), 1), ((0, 3), 1)]]
    z = draw(rng, (3, 5))
    z[0, 2] = 0.0
    z[1, 1] = z[1, 3] = 0.0
    z[2, 4] = 0.0
    out += [Sample((z,), {"dim": 1}), Sample((z,), {"dim": 0}), Sample((z.T.copy(),), {"dim": 0})]
    return out


def _vector_norm(m, a, ord=2, **kw):
    if "dtype" in kw:
        kw["dtype"] = getattr(m, kw["dtype"])
    return m.linalg.vector_norm(a, ord, **kw)


def _norm_samples(ords, shapes):
    return [(s, dict(k, ord=o)) for o in ords for s, k in shapes]


NORM_SHAPES = [((3, 4), {}), ((2, 3, 4), {"dim": 1}), ((2, 3, 4), {"dim": (0, 2), "keepdim": True}), ((), {}),
               ((2, 1, 3), {"dim": -1})]


def _two(entries, doms=("real", "real")):
    def make(rng):
        return [Sample((draw(rng, a, doms[0]), draw(rng, b, doms[1])), dict(k)) for (a, b), k in entries]
    return make


def _diff(m, a, n=1, dim=-1, prepend=None, append=None):
    pre = None if prepend is None else m.tensor(prepend)
    app = None if append is None else m.tensor(append)
    return m.diff(a, n, dim, pre, app)


def _diff_samples(rng):
    out = [Sample((draw(rng, s),), dict(k)) for s, k in
           [((5,), {}), ((3, 4), {"dim": 0}), ((3, 4), {"n": 2}), ((2, 3, 4), {"dim": 1, "n": 2}),
            ((3, 4), {"n": 5}), ((0, 3), {"dim": 0}), ((1,), {})]]
    out.append(Sample((draw(rng, (3, 4)),), {"prepend": rng.uniform(-2, 2, (3, 1)), "append": rng.uniform(-2, 2, (3, 2))}))
    out.append(Sample((draw(rng, (3, 4)),), {"dim": 0, "n": 2, "append": rng.uniform(-2, 2, (1, 4))}))
    return out


def _diff_error_samples(rng):
    return [Sample((draw(rng, (3, 4)),), {"prepend": rng.uniform(-2, 2, (4,))}), Sample((draw(rng, (3,)),), {"n": -1}),
            Sample((draw(rng, ()),), {}), Sample((draw(rng, (3, 4)),), {"dim": 2})]


def _cdist_samples(rng, errors=None):
    out = []
    for (a, b), p in [(((3, 4), (5, 4)), 2.0), (((3, 4), (5, 4)), 1.0), (((2, 3, 4), (2, 5, 4)), 2.0),
                      (((2, 3, 4), (5, 4)), 3.0), (((3, 4), (2, 5, 4)), 0.5), (((3, 2), (4, 2)), INF),
                      (((3, 2), (4, 2)), 1.5), (((3, 2), (4, 2)), 0.0), (((0, 3), (2, 3)), 2.0),
                      (((1, 1), (1, 1)), 2.0)] + (errors or []):
        out.append(Sample((draw(rng, a), draw(rng, b)), {"p": p}))
    return out


OPS: list = [
    # --- sums and means --------------------------------------------------------------------------------------
    OpInfo("sum_dtype", lambda m, a, **kw: m.sum(a, dtype=m.float64, **kw),
           _samples([((3, 4), {}), ((2, 3, 4), {"dim": (0, 2)}), ((), {})]), dtypes=ALL),
    OpInfo("sum_dims", _kw_call(lambda m, a, **kw: a.sum(**kw)), _samples(DIMS + EMPTY), dtypes=ALL),
    OpInfo("nansum", _kw_call(lambda m, a, **kw: m.nansum(a, **kw)), _samples(DIMS), dtypes=ALL),
    OpInfo("nansum_nan", lambda m, a, mask, **kw: m.nansum(_nan(m, a, mask), **kw), _nan_samples),
    OpInfo("mean_dims", _kw_call(lambda m, a, **kw: m.mean(a, **kw)), _samples(DIMS), dtypes=ALL),
    OpInfo("mean_empty", _kw_call(lambda m, a, **kw: m.mean(a, **kw)), _samples(EMPTY), dtypes=ALL, **NO_GRAD),
    OpInfo("mean_dtype", lambda m, a, **kw: a.mean(dtype=m.float64, **kw), _samples([((3, 4), {}), ((3, 4), {"dim": 0})]),
           dtypes=ALL),
    OpInfo("nanmean", _kw_call(lambda m, a, **kw: a.nanmean(**kw)), _samples(DIMS), dtypes=ALL),
    OpInfo("nanmean_empty", _kw_call(lambda m, a, **kw: a.nanmean(**kw)), _samples(EMPTY), dtypes=ALL, **NO_GRAD),
    OpInfo("nanmean_nan", lambda m, a, mask, **kw: m.nanmean(_nan(m, a, mask), **kw), _nan_samples),
    OpInfo("nanmean_all_nan", lambda m, a, mask, **kw: m.nanmean(_nan(m, a, mask), **kw), _all_nan_samples, **NO_GRAD),
    OpInfo("nansum_all_nan", lambda m, a, mask, **kw: m.nansum(_nan(m, a, mask), **kw), _all_nan_samples),
    # --- prod, with zeros (one, two in a slice, spread) --------------------------------------------------------
    OpInfo("prod", _kw_call(lambda m, a, **kw: m.prod(a, **kw)), _prod_samples, dtypes=ALL),
    OpInfo("prod_dtype", lambda m, a: a.prod(0, dtype=m.float64), [((3, 4),)], dtypes=ALL),
    # --- variance ----------------------------------------------------------------------------------------------
    OpInfo("var", _kw_call(lambda m, a, **kw: a.var(**kw)),
           _samples([((3, 4), {}), ((2, 3, 4), {"dim": 1}), ((2, 3, 4), {"dim": (0, 2), "keepdim": True}),
                     ((5,), {"correction": 0}), ((3, 4), {"dim": 0, "unbiased": False}),
                     ((3, 4), {"dim": 1, "correction": 2}), ((2, 1, 3), {"dim": -1})]), dtypes=ALL),
    # no degrees of freedom: nan (and PyTorch's warning)
    OpInfo("var_dof0", _kw_call(lambda m, a, **kw: a.var(**kw)),
           _samples([((), {}), ((1, 3), {"dim": 0}), ((3,), {"correction": 3}), ((0, 3), {})]), dtypes=ALL, **NO_GRAD),
    # ... and their gradients with no dim given: PyTorch's grad * where(x == mean, nan, inf)
    OpInfo("var_dof0_grad", _kw_call(lambda m, a, **kw: (a.var(**kw), a.std(**kw))),
           _samples([((), {}), ((2,), {"correction": 2}), ((2,), {"correction": 3}), ((), {"dim": 0, "correction": 2}),
                     ((2,), {"dim": 0, "correction": 2})]),
           supports_gradgrad=False, supports_fwd=False),   # (inf/nan values: no central differences of tangents)
    OpInfo("var_positional", lambda m, a: m.var(a, 1, False, True), [((3, 4),)]),
    OpInfo("std_legacy", lambda m, a: m.std(a, False), [((3, 4),), ((5,),)]),
    OpInfo("std_mean", _kw_call(lambda m, a, **kw: m.std_mean(a, **kw)),
           _samples([((3, 4), {}), ((2, 3, 4), {"dim": 1, "keepdim": True}),
                     ((3, 4), {"dim": (0, 1), "correction": 0}), ((4,), {"dim": 0})]), dtypes=ALL),
    OpInfo("var_mean", _kw_call(lambda m, a, **kw: m.var_mean(a, **kw)),
           _samples([((3, 4), {}), ((2, 3, 4), {"dim": -1}),
                     ((3, 4), {"dim": 0, "unbiased": False, "keepdim": True})]), dtypes=ALL),
    # --- norms -------------------------------------------------------------------------------------------------
    OpInfo("vector_norm", _vector_norm, _samples(_norm_samples((2, 3, 1.5), NORM_SHAPES) +
           [((0, 3), {"ord": 2, "dim": 1}), ((0, 3), {"ord": 1}), ((3, 4), {"ord": 2, "dtype": "float64"})]),
           dtypes=FLOAT + ("int64",)),
    OpInfo("vector_norm_errors", _vector_norm,
           _samples([((0, 3), {"ord": INF}), ((0, 3), {"ord": -1, "dim": 0}), ((3, 4), {"ord": "fro"}),
                     ((0, 3), {"ord": -INF, "dim": 1}), ((3, 4), {"ord": 2, "dtype": "float32"}),
                     ((3, 4), {"dim": 2})]), dtypes=("float64",), **NO_GRAD),
    OpInfo("vector_norm_kinks", _vector_norm, _samples(_norm_samples((1, 0.5, -1, 0), NORM_SHAPES), "nonzero")),
    OpInfo("vector_norm_inf", _vector_norm,
           _samples([(s, dict(k, ord=o)) for o in (INF, -INF) for s, k in NORM_SHAPES], "distinct",
                    extra=[(TIES, {"ord": INF}), (TIES, {"ord": INF, "dim": 1}), (-TIES, {"ord": -INF, "dim": 0})])),
    OpInfo("norm_p", lambda m, a, p="fro", **kw: m.norm(a, p, **kw),
           _samples([((3, 4), {}), ((3, 4), {"p": 2, "dim": 1}), ((3, 4), {"p": 3}),
                     ((2, 3, 4), {"p": "fro", "dim": (0, 2)}), ((2, 3, 4), {"p": 1, "dim": -1, "keepdim": True}),
                     ((3, 4), {"p": 2.5, "dim": 0}), ((), {"p": 2}), ((3, 4), {"p": "fro", "dim": (0, 1), "keepdim": True}),
                     ], "nonzero"), dtypes=FLOAT + ("int64",)),
    OpInfo("norm_errors", lambda m, a, p="fro", **kw: m.norm(a, p, **kw),
           _samples([((2, 3, 4), {"p": "fro", "dim": (0, 1, 2)}), ((3, 4), {"p": "foo"}), ((2, 3, 4), {"p": "nuc"}),
                     ((3, 4), {"p": "fro", "dim": (0, 0)})]), **NO_GRAD),
    OpInfo("norm_method_dtype", lambda m, a: a.norm(3, dim=1, dtype=m.float64), [((3, 4),)]),
    OpInfo("matrix_norm", lambda m, a, ord="fro", **kw: m.linalg.matrix_norm(a, ord, **kw),
           _samples([(s, dict(k, ord=o)) for o in ("fro", 1, -1, INF, -INF) for s, k in
                     [((3, 4), {}), ((2, 3, 4), {"keepdim": True}), ((3, 2, 4), {"dim": (0, 2)}),
                      ((2, 3, 4), {"dim": (-1, 0)})]]), dtypes=FLOAT + ("int64",)),
    # the singular-value norms (through linalg.svdvals): distinct singular values
    OpInfo("matrix_norm_svd", lambda m, a, ord="fro", **kw: m.linalg.matrix_norm(a, ord, **kw),
           _samples([(s, dict(k, ord=o)) for o in ("nuc", 2, -2) for s, k in
                     [((3, 4), {}), ((2, 3, 4), {"keepdim": True}), ((3, 2, 4), {"dim": (0, 2)})]])),
    OpInfo("norm_nuc", lambda m, a, **kw: m.norm(a, "nuc", **kw),
           _samples([((3, 4), {}), ((2, 3, 4), {"dim": (2, 0), "keepdim": True})])),
    OpInfo("matrix_norm_errors", lambda m, a, ord="fro", **kw: m.linalg.matrix_norm(a, ord, **kw),
           _samples([((3, 4), {"ord": 3}), ((3,), {}), ((3, 4), {"ord": "foo"}), ((3, 4), {"dim": (1, 1)}),
                     ((3, 4), {"dim": (0, 1, 1)}), ((3, 4), {"ord": 1, "dim": (0, 2)})]), **NO_GRAD),
    OpInfo("dist", lambda m, a, b, p=2: m.dist(a, b, p),
           _two([(((3, 4), (3, 4)), {}), (((3, 4), (4,)), {"p": 1}), (((2, 3), ()), {"p": 3}),
                 (((3, 4), (3, 4)), {"p": INF}), (((4,), (4,)), {"p": 0.5}), (((), ()), {})],
                ("distinct", "grid_b")), dtypes=FLOAT + ("int64",)),
    # p=0: PyTorch's backward fails on its undefined gradient, so forward only
    OpInfo("dist_nograd", lambda m, a, b, p=2: m.dist(a, b, p),
           _two([(((3, 4), (2, 4)), {}), (((3,), (3,)), {"p": "a"}), (((3, 4), (3, 4)), {"p": 0})]),
           dtypes=FLOAT + ("int64",), **NO_GRAD),
    # PyTorch has no second derivative of cdist (_cdist_backward is not differentiable); ember's exists.
    OpInfo("cdist", lambda m, a, b, p: m.cdist(a, b, p), _cdist_samples, supports_gradgrad=False,
           dtypes=FLOAT + ("int64",)),
    OpInfo("cdist_errors", lambda m, a, b, p: m.cdist(a, b, p),
           lambda rng: _cdist_samples(rng, [(((3,), (4, 3)), 2.0), (((3, 2), (4, 3)), 2.0), (((3, 2), (4, 2)), -1.0),
                                            (((2, 3, 2), (3, 4, 2)), 2.0)])[-4:], **NO_GRAD),
    # --- logsumexp ---------------------------------------------------------------------------------------------
    OpInfo("logsumexp", lambda m, a, dim, **kw: m.logsumexp(a, dim, **kw),
           _samples([((3, 4), {"dim": 1}), ((2, 3, 4), {"dim": (0, 2)}), ((3, 4), {"dim": -1, "keepdim": True}),
                     ((), {"dim": 0}), ((2, 1, 3), {"dim": (0, 1, 2)}), ((0, 3), {"dim": 1}),
                     ((2, 3), {"dim": (), "keepdim": True}), ((), {"dim": ()})]),
           dtypes=ALL),
    # dim=() without keepdim: torch 2.13 reduces over every dim, then fails to fit the 0-d result (RuntimeError)
    OpInfo("logsumexp_no_dims", lambda m, a, dim, **kw: m.logsumexp(a, dim, **kw),
           _samples([((2, 3), {"dim": ()}), ((1,), {"dim": []})]), **NO_GRAD),
    OpInfo("logsumexp_empty", lambda m, a, dim, **kw: m.logsumexp(a, dim, **kw),
           _samples([((0, 3), {"dim": 0}), ((2, 0), {"dim": 1}), ((2, 0), {"dim": (0, 1), "keepdim": True})]),
           **NO_GRAD),
    OpInfo("logsumexp_large", lambda m, a, dim: (a * 500).logsumexp(dim), _samples([((3, 4), {"dim": 1})])),
    # --- max / min reductions ----------------------------------------------------------------------------------
    OpInfo("amax_dims", lambda m, a, **kw: m.amax(a, **kw),
           _samples([((2, 3, 4), {"dim": (0, 1)}), ((3, 4), {"dim": -1}), ((2, 1, 3), {"dim": 1, "keepdim": True}),
                     ((), {"dim": 0}), ((0, 3), {"dim": 1})], "distinct",
                    extra=[(TIES, {}), (TIES, {"dim": 1}), (TIES, {"dim": 0, "keepdim": True})]),
           "distinct", dtypes=ALL),
    OpInfo("amax_errors", lambda m, a, **kw: m.amax(a, **kw), _samples(EMPTY), dtypes=ALL, **NO_GRAD),
    OpInfo("amin_ties", lambda m, a, **kw: m.amin(a, **kw), _samples([], extra=[(TIES, {"dim": 1}), (TIES, {})]),
           dtypes=ALL),
    OpInfo("aminmax", lambda m, a, **kw: m.aminmax(a, **kw),
           _samples([((3, 4), {}), ((3, 4), {"dim": 1}), ((2, 3, 4), {"dim": -1, "keepdim": True}), ((), {}),
                     ((), {"dim": 0}), ((3, 4), {"keepdim": True}), ((0, 3), {"dim": 1})], "distinct",
                    extra=[(TIES, {"dim": 1}), (TIES, {})]), "distinct", dtypes=ALL),
    OpInfo("aminmax_errors", lambda m, a, **kw: m.aminmax(a, **kw),
           _samples([((0, 3), {}), ((0, 3), {"dim": 0}), ((3, 4), {"dim": 2}), ((3, 4), {"dim": (0,)})]),
           dtypes=ALL, **NO_GRAD),
    OpInfo("max_dim_values", lambda m, a, dim, **kw: a.max(dim, **kw).values,
           _samples([((3, 4), {"dim": 1}), ((2, 3, 4), {"dim": -2, "keepdim": True}), ((), {"dim": -1})], "distinct"),
           dtypes=ALL),
    OpInfo("argmax", lambda m, a, **kw: m.argmax(a, **kw),
           _samples([((3, 4), {}), ((3, 4), {"dim": 1}), ((2, 3, 4), {"dim": 0, "keepdim": True}), ((), {}),
                     ((), {"dim": 0}), ((3, 4), {"keepdim": True}), ((0, 3), {"dim": 1}), ((0, 3), {}),
                     ((0, 3), {"dim": 0})], "distinct"), dtypes=ALL, **NO_GRAD),
    OpInfo("argmin", lambda m, a, **kw: a.argmin(**kw),
           _samples([((3, 4), {"dim": 0}), ((5,), {})], "distinct", extra=[(TIES, {"dim": 1}), (TIES, {})]),
           "distinct", dtypes=ALL, **NO_GRAD),
    OpInfo("hash_tensor", lambda m, a, **kw: m.hash_tensor(a, **kw),
           _samples([((3, 4), {}), ((3, 4), {"dim": 1}), ((2, 3, 4), {"dim": (0, 2), "keepdim": True}), ((), {}),
                     ((), {"dim": 0}), ((0, 3), {"dim": 1}), ((0, 3), {}), ((0, 3), {"dim": 0}),
                     ((3, 4), {"mode": 1}), ((3, 4), {"dim": (1, 1)})]), dtypes=ALL, **NO_GRAD),
    # --- scans -------------------------------------------------------------------------------------------------
    OpInfo("cumsum", lambda m, a, dim: m.cumsum(a, dim), _samples(ONE_DIM), dtypes=ALL),
    OpInfo("cumsum_dtype", lambda m, a, dim: a.cumsum(dim, dtype=m.float64), _samples([((3, 4), {"dim": 0})]),
           dtypes=ALL),
    OpInfo("cumprod", lambda m, a, dim: a.cumprod(dim), _cumprod_samples, dtypes=ALL),
    OpInfo("cumsum_", lambda m, a, dim: (a * 1).cumsum_(dim), _samples(ONE_DIM[:5]), dtypes=ALL),
    OpInfo("cumprod_", lambda m, a, dim: a.clone().cumprod_(dim), _cumprod_samples),
    OpInfo("cummax", lambda m, a, dim: m.cummax(a, dim), _samples(ONE_DIM, "distinct"), dtypes=ALL),
    OpInfo("cummin", lambda m, a, dim: a.cummin(dim), _samples(ONE_DIM[:5], "distinct"), dtypes=ALL),
    OpInfo("logcumsumexp", lambda m, a, dim: m.logcumsumexp(a, dim), _samples(ONE_DIM), dtypes=ALL),
    OpInfo("logcumsumexp_large", lambda m, a, dim: (a * 300).logcumsumexp(dim), _samples([((3, 4), {"dim": 1})])),
    OpInfo("diff", _diff, _diff_samples, dtypes=ALL),
    OpInfo("diff_errors", _diff, _diff_error_samples, dtypes=ALL, **NO_GRAD),
    OpInfo("sum_to_size", lambda m, a, size: a.sum_to_size(*size),
           _samples([((2, 3, 4), {"size": (3, 1)}), ((3, 4), {"size": (1, 4)}), ((), {"size": ((),)}),
                     ((3, 4), {"size": ((3, 4),)}), ((0, 3), {"size": (1, 3)})]), dtypes=ALL),
    OpInfo("sum_to_size_errors", lambda m, a, size: a.sum_to_size(*size),
           _samples([((2, 3), {"size": (4,)}), ((3,), {"size": (2, 3)}), ((3,), {"size": ()}), ((), {"size": (1,)})]),
           **NO_GRAD),
    # --- all / any ---------------------------------------------------------------------------------------------
    OpInfo("any", lambda m, a, **kw: m.any(a, **kw),
           _samples([((3, 4), {}), ((3, 4), {"dim": 1}), ((2, 3, 4), {"dim": (0, 2), "keepdim": True}), ((), {}),
                     ((), {"dim": 0}), ((0, 3), {"dim": 0}), ((0, 3), {}), ((2, 3), {"dim": ()}),
                     ((0, 3), {"dim": [], "keepdim": True})]), dtypes=ALL, supports_grad=False),
    OpInfo("all", lambda m, a, **kw: a.all(**kw),
           _samples([((3, 4), {}), ((3, 4), {"dim": -1}), ((2, 3, 4), {"dim": (1,), "keepdim": True}),
                     ((0, 3), {"dim": 1}), ((2, 3), {"dim": ()}), ((), {"dim": ()})]), dtypes=ALL,
           supports_grad=False),
]
HYP_UNARY: list = []    # names of entries whose single input hypothesis draws shapes for
HYP_BINARY: list = []   # names of entries whose two broadcasting inputs hypothesis draws shapes for

# ----- issue 18: trapezoid, trapz, cumulative_trapezoid, cov, corrcoef ----------------------------------------------

def _multi(cases):
    def gen(rng):
        return [Sample(tuple(draw(rng, sh) for sh in shapes), dict(kw)) for shapes, kw in cases]
    return gen


def _counts(m, w):
    """Frequency weights 1, 2, ... on w's device."""
    return m.ones_like(w, dtype=m.int64).cumsum(0)


OPS += [
    OpInfo("trapezoid", lambda m, y: (m.trapezoid(y), m.trapezoid(y, dx=0.5, dim=0), m.trapz(y), m.trapz(y, dx=2),
                                      m.cumulative_trapezoid(y), m.cumulative_trapezoid(y, dx=0.25, dim=0)),
           _samples([((3, 4), {}), ((5,), {}), ((2, 1), {})]), dtypes=ALL[:-1]),
    # no samples: zeros (PyTorch's zeros_like_except: no graph) and an empty cumulative integral
    OpInfo("trapezoid_empty", lambda m, y: (m.trapezoid(y), m.cumulative_trapezoid(y)), _samples([((2, 0), {})]),
           supports_grad=False, supports_gradgrad=False, supports_fwd=False),
    OpInfo("trapezoid_x", lambda m, y, x: (m.trapezoid(y, x), m.trapz(y, x), m.cumulative_trapezoid(y, x),
                                           m.trapezoid(y, x=x, dim=-1)),
           _multi([(((3, 4), (4,)), {}), (((3, 4), (3, 4)), {}), (((2, 3, 4), (3, 4)), {})])),
    OpInfo("cov", lambda m, a: (m.cov(a), a.cov(correction=0), m.cov(a, correction=2), m.corrcoef(a), a.corrcoef()),
           _samples([((3, 5), {}), ((5,), {}), ((1, 4), {})]), dtypes=ALL[:-1]),
    OpInfo("cov_weights", lambda m, a, w: (m.cov(a, fweights=_counts(m, w), aweights=w.abs() + 0.1),
                                           m.cov(a, aweights=w.abs() + 0.1, correction=0),
                                           m.cov(a, fweights=_counts(m, w) % 3)),
           _multi([(((3, 5), (5,)), {}), (((5,), (5,)), {})])),
]


# ----- segment_reduce: first-order gradients only (PyTorch's _segment_reduce_backward has no derivative, and no
# forward mode: both refusals are compared in segment_reduce_errors). Empty segments only with an initial value
# (else mean gives NaN, max/min -inf/inf, which central differences cannot take).

def _segment_reduce(m, a, reduce, lengths=None, offsets=None, **kw):
    return m.segment_reduce(a, reduce, lengths=None if lengths is None else m.tensor(lengths),
                            offsets=None if offsets is None else m.tensor(offsets), **kw)


def _segment_samples(rng):
    L = np.array([2, 3, 1, 1])
    L0 = np.array([2, 0, 3, 2])
    out = []
    for red in ("sum", "mean", "prod", "max", "min"):
        out.append(Sample((draw(rng, (7,), "distinct"),), {"reduce": red, "lengths": L}))
        out.append(Sample((draw(rng, (7, 2), "distinct"),), {"reduce": red, "lengths": L0, "initial": 0.5}))
    out += [Sample((draw(rng, (2, 5, 3), "distinct"),), {"reduce": "sum", "lengths": np.array([[2, 3], [4, 1]]),
                                                         "axis": 1}),
            Sample((draw(rng, (2, 5), "distinct"),), {"reduce": "amax", "lengths": np.array([[1, 4], [5, 0]]),
                                                      "axis": 1, "initial": -1.0}),
            Sample((draw(rng, (6,), "distinct"),), {"reduce": "mean", "offsets": np.array([0, 2, 6])}),
            Sample((draw(rng, (6,), "distinct"),), {"reduce": "amin", "offsets": np.array([0, 1, 3, 6]),
                                                    "axis": -1}),
            Sample((draw(rng, (5,), "distinct"),), {"reduce": "sum", "lengths": np.array([2, 2]), "unsafe": True}),
            Sample((np.array([1.0, 2.0, 0.0, 4.0, 0.0, 0.0, 3.0]),), {"reduce": "prod", "lengths": np.array([2, 2, 3]),
                                                                      "initial": 2.0})]
    return out


def _segment_errors(rng):
    return [Sample((draw(rng, (5,)),), {"case": c}) for c in
            ("reduce", "none", "indices", "negative", "total", "int_data", "float_lengths", "0d", "gradgrad",
             "fwd_ad")]


def _segment_error_call(m, a, case):
    t = m.tensor

    def gradgrad():
        x = a.detach().double().requires_grad_()
        y = m.segment_reduce(x, "prod", lengths=t([2, 3]))
        g, = m.autograd.grad(y.sum(), x, create_graph=True)
        return m.autograd.grad(g.sum(), x)

    def fwd_ad():
        fa = m.autograd.forward_ad
        with fa.dual_level():
            return m.segment_reduce(fa.make_dual(a, m.ones_like(a)), "sum", lengths=t([2, 3]))
    return {"reduce": lambda: m.segment_reduce(a, "foo", lengths=t([5])),
            "none": lambda: m.segment_reduce(a, "sum"),
            "indices": lambda: m.segment_reduce(a, "sum", indices=t([0, 1])),
            "negative": lambda: m.segment_reduce(a, "sum", lengths=t([-1, 6])),
            "total": lambda: m.segment_reduce(a, "sum", lengths=t([2, 2])),
            "int_data": lambda: m.segment_reduce(a.int(), "sum", lengths=t([5])),
            "float_lengths": lambda: m.segment_reduce(a, "sum", lengths=t([5.0])),
            "0d": lambda: m.segment_reduce(a[0], "sum", lengths=t([1])),
            "gradgrad": gradgrad, "fwd_ad": fwd_ad}[case]()


OPS += [
    OpInfo("segment_reduce", _segment_reduce, _segment_samples, supports_gradgrad=False, supports_fwd=False),
    OpInfo("segment_reduce_errors", _segment_error_call, _segment_errors, supports_grad=False,
           supports_gradgrad=False, supports_fwd=False),
]
