"""Op database entries of the 'sorting' family (collected into op_db.OP_DB).

Values, indices and gradients use the ``distinct`` domain, where no two values tie, so that central differences
are exact. Ties (and NaN) get their own entries (``*_ties``): forward-only, each returns the op's outputs *and*
the gradient of a weighted sum of its float outputs, so that which tied element PyTorch routes the gradient to
is compared with torch too, in every dtype the op takes. Their slices are longer than 16 elements where
PyTorch's C++ algorithm stops being an insertion sort.
"""
from __future__ import annotations

import numpy as np  # noqa: F401

from op_db import (ALL, BINARY, FLOAT, INT, UNARY, OpInfo, Sample, XFail, binary, draw,  # noqa: F401
                   scalar_samples, unary)

NO_GRAD = dict(supports_grad=False, supports_gradgrad=False, supports_fwd=False)


def _u(entries):
    """Single-input samples: (shape, kwargs) as op_db's ((shape,), kwargs)."""
    return [((shape,), kw) for shape, kw in entries]


def _tied(m, a, nan=True):
    """``a`` with many ties (floats rounded to integers; ints and bools tie already), NaN where it rounds to 1."""
    if not a.is_floating_point():
        return a
    x = a.round()
    return m.where(x == 1, x * float("nan"), x) if nan else x


def _with_grad(fn, nan=True):
    """An op returning ``fn``'s outputs on tied values, plus the gradient of a weighted sum of the float ones."""
    def op(m, a, **kw):
        x = _tied(m, a, nan)
        if not x.is_floating_point():
            return fn(m, x, **kw)
        x = x.detach().requires_grad_()
        res = fn(m, x, **kw)
        outs = list(res) if isinstance(res, tuple) else [res]
        total = 0
        for o in outs:
            if o.is_floating_point() and o.requires_grad:
                w = m.linspace(0.5, 1.5, o.numel(), dtype=o.dtype).reshape(tuple(o.shape))
                total = total + (o * w).sum()
        grads = m.autograd.grad(total, x) if not isinstance(total, int) else (m.zeros_like(x),)
        return tuple(o.detach() for o in outs) + (grads[0],)
    return op


def _node_codes(m, t):
    """The name of ``t``'s grad_fn as a tensor of character codes (compared with torch's by the forward test)."""
    name = type(t.grad_fn).__name__ if t.grad_fn is not None else ""
    return m.tensor([ord(c) for c in name], dtype=m.int64)


def _recorded(fn):
    """An op returning ``fn``'s outputs on an input that requires grad, plus the names of their nodes: for the ops
    whose outputs PyTorch records but cannot differentiate (their gradient tests cannot run)."""
    def op(m, a, **kw):
        res = fn(m, a.detach().requires_grad_(), **kw)
        outs = list(res) if isinstance(res, tuple) else [res]
        return tuple(o.detach() for o in outs) + tuple(_node_codes(m, o) for o in outs)
    return op


def _bincount_weights(m, a, **kw):
    return m.bincount(m.tensor([0, 1, 1, 3, 0])[:a.shape[0]], weights=a, **kw)


def _sort(m, a, **kw):
    return m.sort(a, **kw)


def _topk(m, a, k, **kw):
    return a.topk(k, **kw)


def _kthvalue(m, a, k, **kw):
    return m.kthvalue(a, k, **kw)


def _median(m, a, **kw):
    return m.median(a, **kw) if kw else a.median()


def _nanmedian(m, a, **kw):
    return m.nanmedian(a, **kw) if kw else m.nanmedian(a)


def _mode(m, a, **kw):
    return m.mode(a, **kw)


def _quantile(m, a, q, **kw):
    q = m.tensor(q, dtype=a.dtype) if isinstance(q, np.ndarray) else q
    return m.quantile(a, q, **kw)


def _nanquantile(m, a, q, **kw):
    q = m.tensor(q, dtype=a.dtype) if isinstance(q, np.ndarray) else q
    return a.nanquantile(q, **kw)


TIE_SHAPES = [((20,), {}), ((3, 17), {"dim": 1}), ((17, 2), {"dim": 0}), ((40,), {}), ((6,), {}), ((2, 5), {})]

SORT_SAMPLES = [((5,), {}), ((3, 4), {"dim": 0}), ((3, 4), {"dim": -1, "descending": True}),
                ((2, 3, 4), {"dim": 1, "stable": True}), ((), {}), ((0, 3), {"dim": 0}), ((2, 1, 3), {"dim": 1}),
                ((20,), {"descending": True}), ((), {"dim": -1, "descending": True})]
SORT_ERRORS = [((4,), {"dim": 1}), ((4,), {"dim": -2}), ((), {"dim": 1})]
TOPK_SAMPLES = [((5,), {"k": 2}), ((3, 4), {"k": 3, "dim": 0}), ((3, 4), {"k": 1, "largest": False}),
                ((2, 3, 4), {"k": 4, "dim": -1}), ((), {"k": 1}), ((0, 3), {"k": 2}), ((4,), {"k": 0}),
                ((70,), {"k": 1}), ((20,), {"k": 5, "sorted": True})]
TOPK_ERRORS = [((5,), {"k": 6}), ((5,), {"k": -1}), ((), {"k": 2}), ((3, 4), {"k": 2, "dim": 2})]
KTH_SAMPLES = [((5,), {"k": 2}), ((3, 4), {"k": 3, "dim": 0}), ((3, 4), {"k": 1, "dim": 1, "keepdim": True}),
               ((2, 3, 4), {"k": 4}), ((), {"k": 1}), ((2, 0), {"k": 1, "dim": 0})]
KTH_ERRORS = [((0, 3), {"k": 1, "dim": 0}), ((5,), {"k": 6}), ((5,), {"k": 0}), ((), {"k": 2}), ((3,), {"k": 1, "dim": 1})]
MEDIAN_SAMPLES = [((5,), {}), ((3, 4), {}), ((), {}), ((2, 3, 4), {}), ((4,), {"dim": 0}),
                  ((3, 4), {"dim": 1}), ((3, 4), {"dim": 0, "keepdim": True}), ((2, 3, 4), {"dim": -2}),
                  ((), {"dim": 0}), ((2, 0), {"dim": 0})]
MEDIAN_ERRORS = [((0, 3), {"dim": 0}), ((3,), {"dim": 1}), ((), {"dim": 1}), ((0,), {})]   # (0,): NaN, forward only
MODE_SAMPLES = [((5,), {}), ((3, 4), {"dim": 0}), ((3, 4), {"keepdim": True}), ((), {}), ((2, 3, 4), {"dim": 1}),
                ((2, 0), {"dim": 0})]
MODE_ERRORS = [((0, 3), {"dim": 0}), ((3,), {"dim": 1})]
Q = np.array([0.0, 0.3, 0.5, 1.0])
QUANTILE_SAMPLES = [((5,), {"q": 0.4}), ((3, 4), {"q": 0.5, "dim": 1}), ((3, 4), {"q": Q, "dim": 0}),
                    ((2, 3, 4), {"q": Q[1:3], "dim": -1, "keepdim": True}), ((3, 4), {"q": np.array(0.75)}),
                    ((3, 4), {"q": Q, "keepdim": True}), ((), {"q": 0.3}), ((), {"q": Q, "dim": 0, "keepdim": True})] + [
    ((6,), {"q": Q, "interpolation": i}) for i in ("lower", "higher", "midpoint", "nearest")] + [
    ((2, 5), {"q": np.array([0.125, 0.625]), "dim": 1, "interpolation": "nearest"})]
QUANTILE_ERRORS = [((4,), {"q": 1.5}), ((4,), {"q": np.array([0.5, -0.1])}), ((0,), {"q": 0.5}),
                   ((4,), {"q": np.array([[0.5]])}), ((4,), {"q": 0.5, "interpolation": "cubic"}),
                   ((4,), {"q": 0.5, "dim": 1})]
QUANTILE_TIES = [((20,), {"q": Q}), ((3, 17), {"q": 0.3, "dim": 1}), ((6,), {"q": Q, "interpolation": "lower"}),
                 ((2, 5), {"q": Q, "dim": 0, "interpolation": "midpoint"})]


def _unique(m, a, **kw):
    return m.unique(a, **kw)


def _unique_consecutive(m, a, **kw):
    return a.unique_consecutive(**kw)


UNIQUE_SAMPLES = [((12,), {}), ((3, 4), {"return_inverse": True, "return_counts": True}),
                  ((3, 4), {"sorted": False, "return_inverse": True}), ((), {"return_counts": True}),
                  ((0,), {"return_inverse": True, "return_counts": True}),
                  ((4, 3), {"dim": 0, "return_inverse": True, "return_counts": True}), ((2, 6), {"dim": 1}),
                  ((), {"dim": 0}), ((0, 3), {"dim": 0}), ((0, 3), {"dim": 1})]


def _ints(rng, shape, lo=-2, hi=3):
    return rng.integers(lo, hi, shape).astype(np.float64)


def _unique_samples(rng):
    # few distinct values, so that rows and elements repeat
    return [Sample((_ints(rng, s),), kw) for s, kw in UNIQUE_SAMPLES] + [
        Sample((np.array([[1., 2, 1], [0, 5, 0], [1, 2, 1], [0, 5, 0]]),), {"dim": 0, "return_inverse": True}),
        Sample((np.array([[1., 2], [1, 2], [0, 5], [0, 5], [1, 2]]),), {"dim": 0, "return_counts": True})]


def _consecutive_samples(rng):
    cases = [((12,), {"return_inverse": True, "return_counts": True}), ((3, 4), {}), ((), {"return_counts": True}),
             ((0,), {"return_inverse": True}), ((5, 2), {"dim": 0, "return_inverse": True, "return_counts": True}),
             ((2, 5), {"dim": -1, "return_counts": True}), ((), {"dim": 0})]
    out = [Sample((_ints(rng, s, 0, 2),), kw) for s, kw in cases]
    out.append(Sample((np.array([[1., 1], [1, 1], [2, 3], [2, 3], [1, 1]]),), {"dim": 0, "return_inverse": True}))
    return out


def _nonzero_samples(rng):
    cases = [((3, 4), {}), ((5,), {"as_tuple": True}), ((), {}), ((), {"as_tuple": True}), ((0, 3), {}),
             ((2, 3, 4), {"as_tuple": True}), ((2, 1, 3), {})]
    out = [Sample((_ints(rng, s, -1, 2),), kw) for s, kw in cases]
    out.append(Sample((np.zeros(()),), {}))
    out.append(Sample((np.zeros(()),), {"as_tuple": True}))
    return out


def _count_nonzero_samples(rng):
    cases = [((3, 4), {}), ((3, 4), {"dim": 1}), ((2, 3, 4), {"dim": (0, 2)}), ((), {}), ((), {"dim": 0}),
             ((0, 3), {"dim": 0}), ((3, 4), {"dim": [-1]}), ((3, 4), {"dim": 2}), ((3, 4), {"dim": (0, 0)})]
    return [Sample((_ints(rng, s, -1, 2),), kw) for s, kw in cases]


def _bincount_samples(rng):
    cases = [((8,), {}), ((8,), {"minlength": 10}), ((0,), {}), ((0,), {"minlength": 3}), ((2, 3), {}),
             ((), {}), ((4,), {"minlength": -1}), ((5,), {"weights": rng.standard_normal(5)}),
             ((5,), {"weights": rng.standard_normal(4)}), ((5,), {"weights": np.arange(5)})]
    out = [Sample((rng.integers(0, 5, s).astype(np.float64) / 2,), kw) for s, kw in cases]
    out.append(Sample((np.array([1.0, -1.0]),), {}))
    return out


def _bincount(m, a, weights=None, **kw):
    if weights is not None:
        kw["weights"] = m.tensor(weights)
    return m.bincount(a, **kw)


def _histc_samples(rng):
    cases = [((10,), {"bins": 4, "min": -1, "max": 1}), ((3, 4), {"bins": 5}), ((10,), {}), ((0,), {"bins": 3}),
             ((), {"bins": 2}), ((6,), {"bins": 3, "min": 1, "max": -1}), ((6,), {"bins": 0}),
             ((6,), {"bins": 3, "min": 0.5, "max": 0.5})]
    out = [Sample((draw(rng, s),), kw) for s, kw in cases]
    out.append(Sample((np.array([1.0, 1.0, 1.0]),), {"bins": 4}))
    out.append(Sample((np.array([0.0, 0.25, 0.5, 0.75, 1.0]),), {"bins": 4, "min": 0, "max": 1}))
    return out


def _searchsorted(m, b, v, **kw):
    if "sorter" in kw:
        kw["sorter"] = m.tensor(kw["sorter"])
        return m.searchsorted(b, v, **kw)
    return m.searchsorted(m.sort(b).values, v, **kw)


def _searchsorted_samples(rng):
    def grid(*s):   # values and boundaries on a coarse grid: exact hits on boundaries, and ties among them
        return np.asarray(rng.integers(-4, 5, s) * 0.5)

    out = [Sample((grid(6), grid(5)), {}), Sample((grid(6), grid(5)), {"right": True}),
           Sample((grid(6), grid(2, 3)), {"side": "right"}), Sample((grid(2, 6), grid(2, 3)), {}),
           Sample((grid(6), grid()), {"out_int32": True}), Sample((grid(0), grid(3)), {}),
           Sample((grid(6), grid(0)), {}), Sample((grid(2, 6), grid(3, 3)), {}), Sample((grid(), grid(3)), {}),
           Sample((grid(6), grid(5)), {"side": "left", "right": True}), Sample((grid(6), grid(5)), {"side": "mid"}),
           Sample((np.array([3.0, -1.0, 2.0, 0.5]), grid(5)), {"sorter": np.array([1, 3, 2, 0])}),
           Sample((np.array([3.0, -1.0, 2.0, 0.5]), grid(5)), {"sorter": np.array([1, 3, 2])}),
           Sample((np.array([3.0, -1.0, 2.0, 0.5]), grid(5)), {"sorter": np.array([1, 3, 2, 4])})]
    return out


def _searchsorted_scalar(m, b, value, **kw):
    return m.searchsorted(m.sort(b).values, value, **kw)


def _bucketize(m, v, b, **kw):
    return m.bucketize(v, m.sort(b).values if b.dim() == 1 else b, **kw)


def _bucketize_samples(rng):
    def grid(*s):
        return np.asarray(rng.integers(-4, 5, s) * 0.5)

    return [Sample((grid(3, 4), grid(5)), {}), Sample((grid(6), grid(5)), {"right": True, "out_int32": True}),
            Sample((grid(), grid(4)), {}), Sample((grid(0), grid(4)), {}), Sample((grid(3), grid(2, 2)), {})]


def _bucketize_scalar(m, b, value, **kw):
    return m.bucketize(value, m.sort(b).values, **kw)


OPS: list = [
    # --- sort, argsort, msort ----------------------------------------------------------------------------
    OpInfo("sort", _sort, _u(SORT_SAMPLES), "distinct", dtypes=ALL),
    OpInfo("sort_errors", _sort, _u(SORT_ERRORS), **NO_GRAD),
    OpInfo("sort_method", lambda m, a, **kw: a.sort(**kw), _u([((3, 4), {}), ((2, 3), {"dim": 0, "descending": True})]),
           "distinct"),
    OpInfo("sort_noncontig", lambda m, a: m.sort(a.t(), dim=0, descending=True), [((3, 4),)], "distinct"),
    OpInfo("sort_ties", _with_grad(_sort), _u(TIE_SHAPES + [
        ((20,), {"descending": True}), ((3, 17), {"dim": 1, "stable": True}),
        ((17, 2), {"dim": 0, "descending": True, "stable": True})]), "round", dtypes=ALL, **NO_GRAD),
    OpInfo("argsort", lambda m, a, **kw: m.argsort(a, **kw),
           _u([((5,), {}), ((3, 4), {"dim": 0, "descending": True}), ((), {}), ((0, 2), {})]), "distinct", dtypes=ALL),
    OpInfo("argsort_ties", lambda m, a, **kw: _tied(m, a).argsort(**kw),
           _u([((20,), {}), ((3, 17), {"stable": True}), ((17, 3), {"dim": 0, "descending": True}),
               ((2, 20), {"descending": True, "stable": True})]), "round", dtypes=ALL, **NO_GRAD),
    OpInfo("msort", lambda m, a: m.msort(a), [((5,),), ((3, 4),), ((),), ((0, 3),)], "distinct", dtypes=ALL),
    OpInfo("msort_method", lambda m, a: a.msort(), [((3, 2),)], "distinct"),
    # --- topk, kthvalue ------------------------------------------------------------------------------------
    OpInfo("topk", _topk, _u(TOPK_SAMPLES), "distinct", dtypes=ALL),
    OpInfo("topk_errors", _topk, _u(TOPK_ERRORS), **NO_GRAD),
    OpInfo("topk_unsorted", lambda m, a, **kw: m.topk(a, sorted=False, **kw),
           _u([((6,), {"k": 3}), ((3, 10), {"k": 4, "largest": False}), ((130,), {"k": 2})]), "distinct",
           dtypes=FLOAT),
    OpInfo("topk_ties", _with_grad(_topk), _u([(s, dict(kw, k=3)) for s, kw in TIE_SHAPES] + [
        ((20,), {"k": 7, "largest": False}), ((3, 17), {"k": 10, "dim": 1, "sorted": False}),
        ((130,), {"k": 2}), ((130,), {"k": 2, "largest": False})]), "round", dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("kthvalue", _kthvalue, _u(KTH_SAMPLES), "distinct", dtypes=ALL),
    OpInfo("kthvalue_errors", _kthvalue, _u(KTH_ERRORS), **NO_GRAD),
    OpInfo("kthvalue_ties", _with_grad(_kthvalue), _u([(s, dict(kw, k=2)) for s, kw in TIE_SHAPES] + [
        ((20,), {"k": 11}), ((3, 17), {"k": 17, "dim": 1, "keepdim": True})]), "round", dtypes=FLOAT + INT,
           **NO_GRAD),
    # --- median, nanmedian, mode -------------------------------------------------------------------------
    OpInfo("median", _median, _u(MEDIAN_SAMPLES), "distinct", dtypes=ALL),
    OpInfo("median_errors", _median, _u(MEDIAN_ERRORS), **NO_GRAD),
    OpInfo("median_ties", _with_grad(_median), _u([((20,), {}), ((3, 6), {})] + TIE_SHAPES[:3] + [
        ((2, 6), {"dim": 1, "keepdim": True})]), "round", dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("nanmedian", _nanmedian, _u(MEDIAN_SAMPLES), "distinct", dtypes=ALL),
    OpInfo("nanmedian_errors", _nanmedian, _u(MEDIAN_ERRORS), **NO_GRAD),
    OpInfo("nanmedian_ties", _with_grad(_nanmedian), _u([((20,), {}), ((3, 6), {}), ((2, 2), {})] + TIE_SHAPES[:3]),
           "round", dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("mode", _mode, _u(MODE_SAMPLES), "distinct", dtypes=ALL),
    OpInfo("mode_errors", _mode, _u(MODE_ERRORS), **NO_GRAD),
    OpInfo("mode_ties", _with_grad(_mode), _u(TIE_SHAPES + [((2, 6), {"dim": 0, "keepdim": True})]), "round",
           dtypes=ALL, **NO_GRAD),
    # --- quantile, nanquantile ---------------------------------------------------------------------------
    OpInfo("quantile", _quantile, _u(QUANTILE_SAMPLES), "distinct", dtypes=FLOAT + ("int64",)),
    OpInfo("quantile_errors", _quantile, _u(QUANTILE_ERRORS), **NO_GRAD),
    OpInfo("nanquantile", _nanquantile, _u(QUANTILE_SAMPLES[:8]), "distinct"),
    OpInfo("quantile_ties", _with_grad(_quantile, nan=False), _u(QUANTILE_TIES), "round", **NO_GRAD),
    OpInfo("quantile_nan", _with_grad(_quantile), _u(QUANTILE_TIES), "round", **NO_GRAD),
    OpInfo("nanquantile_nan", _with_grad(_nanquantile), _u(QUANTILE_TIES + [((3, 2), {"q": Q, "dim": 1})]), "round",
           **NO_GRAD),
    # --- unique, unique_consecutive ------------------------------------------------------------------------
    OpInfo("unique", _unique, _unique_samples, dtypes=ALL, **NO_GRAD),
    OpInfo("unique_nan", lambda m, a, **kw: _tied(m, a).unique(**kw),
           _u([((12,), {"return_inverse": True, "return_counts": True})]), "round", **NO_GRAD),
    OpInfo("unique_consecutive", _unique_consecutive, _consecutive_samples, dtypes=ALL, **NO_GRAD),
    OpInfo("unique_recorded", _recorded(_unique),
           lambda rng: [Sample((_ints(rng, (3, 4)),), kw) for kw in ({}, {"return_counts": True}, {"dim": 0})],
           **NO_GRAD),
    OpInfo("unique_consecutive_recorded", _recorded(_unique_consecutive),
           lambda rng: [Sample((_ints(rng, (3, 4), 0, 2),), kw) for kw in ({"return_inverse": True}, {"dim": 1})],
           **NO_GRAD),
    # --- nonzero, argwhere, count_nonzero --------------------------------------------------------------
    OpInfo("nonzero", lambda m, a, **kw: m.nonzero(a, **kw), _nonzero_samples, dtypes=ALL, **NO_GRAD),
    OpInfo("argwhere", lambda m, a: a.argwhere(), lambda rng: [Sample((_ints(rng, s, -1, 2),)) for s in
                                                               ((3, 4), (), (0, 2), (5,))], dtypes=ALL, **NO_GRAD),
    OpInfo("count_nonzero", lambda m, a, **kw: m.count_nonzero(a, **kw), _count_nonzero_samples, dtypes=ALL,
           **NO_GRAD),
    # --- bincount, histc ---------------------------------------------------------------------------------
    OpInfo("bincount", _bincount, _bincount_samples, dtypes=ALL, **NO_GRAD),
    OpInfo("bincount_recorded", _recorded(_bincount_weights), [((5,), {}), ((5,), {"minlength": 6})], **NO_GRAD),
    OpInfo("histc", lambda m, a, **kw: m.histc(a, **kw), _histc_samples, dtypes=ALL, **NO_GRAD),
    OpInfo("histc_recorded", _recorded(lambda m, a, **kw: m.histc(a, **kw)), [((6,), {"bins": 3})], **NO_GRAD),
    OpInfo("histc_nonfinite", lambda m, a, **kw: m.histc(a, **kw),
           lambda rng: [Sample((np.array([1.0, v]),), {"bins": 3}) for v in (np.inf, -np.inf, np.nan)], **NO_GRAD),
    # --- searchsorted, bucketize -------------------------------------------------------------------------
    OpInfo("searchsorted", _searchsorted, _searchsorted_samples, dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("searchsorted_scalar", _searchsorted_scalar,
           _u([((5,), {"value": 0.25}), ((5,), {"value": 1, "right": True}), ((4,), {"value": 0.5, "out_int32": True})]),
           "round", dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("bucketize", _bucketize, _bucketize_samples, dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("bucketize_scalar", _bucketize_scalar, _u([((5,), {"value": 0.25}), ((5,), {"value": 1, "right": True})]),
           "round", dtypes=FLOAT + INT, **NO_GRAD),
]
HYP_UNARY: list = []    # names of entries whose single input hypothesis draws shapes for
HYP_BINARY: list = []   # names of entries whose two broadcasting inputs hypothesis draws shapes for
