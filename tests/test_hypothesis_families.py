"""Hypothesis-drawn shapes *and structural arguments* for every op family, checked against torch.

``tests/test_ops.py`` draws shapes for the elementwise ops only. Here each family has strategies that draw
a shape together with the arguments that must fit it (dims, permutations, split sizes, indices, batch
shapes, ``k`` ...), then compare ember with torch:

  * forward: values, shapes and dtypes of every output, in the drawn dtype (float32, float64, and int64
    where the family takes integers); when torch raises for a draw, ember must raise the same exception type
    (out-of-range dims, too-long narrows, one-past-the-end selects and topk's k are drawn on purpose);
  * inputs of 2 or more dims are drawn contiguous or not (a transposed view of a transposed copy);
  * gradients: first-order VJP vs torch in float64 with a random upstream gradient;
  * central differences: the ember VJP vs numeric differences of ember's own forward, on small inputs.

Values come from domains where the gradient is well defined (distinct values for max/sort/topk, values
away from zero for norms ...). ``@settings(max_examples=15, derandomize=True)`` keeps the default run short
and reproducible; ``EMBER_SLOW=1`` draws 200 examples per test; ``EMBER_HYP_LOG=<file>`` appends every drawn
case to ``<file>`` (to see what the strategies reach).

A draw that reaches a known ember bug is left out of its hypothesis test (``assume``) and reproduced once in
``test_known_bug`` as a strict xfail naming the bug (see ``KNOWN_BUGS`` at the end).

Run: ``python -m pytest -q tests/test_hypothesis_families.py``
"""
from __future__ import annotations

import math
import os
import sys
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis.errors import InvalidArgument  # noqa: E402
from hypothesis import assume, given, note, settings, strategies as st  # noqa: E402
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import ember  # noqa: E402
from op_db import draw as draw_values, to_dtype  # noqa: E402
from test_ops import GRADCHECK_TOL, assert_close, is_float, mk, needs_torch, npy, outs_of, torch  # noqa: E402

SLOW = os.environ.get("EMBER_SLOW") == "1"
HYP = settings(max_examples=200 if SLOW else 15, deadline=None, derandomize=True, database=None)
GC_LIMIT = 30           # central differences only when the inputs hold at most this many elements
EPS = 1e-6

pytestmark = needs_torch


# ----- the case a strategy draws, and the one check every test runs ----------------------------------------

@dataclass
class Case:
    fn: Callable                 # fn(m, *tensors): the call, written against torch or ember
    arrays: list                 # float64 (or bool/int) NumPy arrays: the tensor inputs
    desc: str = ""
    grad: bool = True            # compare first-order gradients with torch
    gradcheck: bool = True       # and with central differences (small inputs only)
    dtypes: tuple = ("float32", "float64")
    torch_grad_wrong: bool = False    # torch's backward raises or is wrong here (a torch bug): differences only
    tag: str = ""                # known ember bugs this draw may reach, comma-separated (see KNOWN_BUGS)
    noncontig: bool = False      # the op sees its (2-d or more) inputs in a non-contiguous layout


def _as(a: np.ndarray, dtype: str) -> np.ndarray:
    return to_dtype(a, dtype) if a.dtype.kind == "f" else a      # int: sign kept, no new zeros


def _strided(x):
    """``x``'s values in a non-contiguous layout: a transposed view of a transposed copy (gradient: identity)."""
    return x.transpose(-1, -2).contiguous().transpose(-1, -2) if x.ndim >= 2 and is_float(x) else x


def _run(m, case, arrays, requires_grad=False):
    xs = [mk(m, a, requires_grad and a.dtype.kind == "f") for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = case.fn(m, *([_strided(x) for x in xs] if case.noncontig else xs))
    return xs, outs_of(res) if not isinstance(res, list) else res


def _forward(case, dtype):
    arrays = [_as(a, dtype) for a in case.arrays]
    t_err = e_err = None
    try:
        _, t_outs = _run(torch, case, arrays)
    except Exception as e:  # noqa: BLE001
        t_err = e
    try:
        _, e_outs = _run(ember, case, arrays)
    except Exception as e:  # noqa: BLE001
        e_err = e
    if t_err is not None:
        assert e_err is not None, f"torch raised {type(t_err).__name__}: {t_err}; ember returned a result"
        assert type(e_err) is type(t_err), f"ember raised {type(e_err).__name__}: {e_err}; " \
                                           f"torch raised {type(t_err).__name__}: {t_err}"
        return False
    assert e_err is None, f"ember raised {type(e_err).__name__}: {e_err}; torch did not"
    assert len(e_outs) == len(t_outs), f"{len(e_outs)} outputs, torch {len(t_outs)}"
    for i, (e, t) in enumerate(zip(e_outs, t_outs)):
        assert_close(e, t, f"{dtype} output {i}")
    return True


def _grads(m, case, vs):
    xs, outs = _run(m, case, case.arrays, requires_grad=True)
    pairs = [(o, v) for o, v in zip(outs, vs) if v is not None]
    diff = [x for x in xs if x.requires_grad]
    if not pairs or not diff:
        return None
    gs = m.autograd.grad([o for o, _ in pairs], diff, [mk(m, v) for _, v in pairs], allow_unused=True)
    return [np.zeros(x.shape) if g is None else npy(g) for g, x in zip(gs, diff)], gs


def _values(case, arrays):
    with ember.no_grad():
        _, outs = _run(ember, case, arrays)
    return [npy(o).astype(np.float64) if is_float(o) else None for o in outs]


def check(case: Case, seed: int, dtype: str = "float64", noncontig: bool = False) -> None:
    """Forward in ``dtype`` vs torch; then float64 gradients vs torch and vs central differences."""
    case.noncontig = noncontig
    try:
        note(f"{case.desc} noncontig={noncontig}")
    except InvalidArgument:   # outside a @given test: the KNOWN_BUGS reproducers
        pass
    if os.environ.get("EMBER_HYP_LOG"):
        with open(os.environ["EMBER_HYP_LOG"], "a") as f:
            f.write(f"{case.desc} | {dtype} noncontig={noncontig}\n")
    if not _forward(case, dtype) or not case.grad:
        return
    if dtype != "float64" and not _forward(case, "float64"):
        return
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        _, t_outs = _run(torch, case, case.arrays)
    vs = [rng.standard_normal(tuple(o.shape)) if is_float(o) else None for o in t_outs]
    e_res = _grads(ember, case, vs)
    # torch's own backward fails or is wrong for some inputs (Case.torch_grad_wrong): central differences only
    t_res = None if case.torch_grad_wrong else _grads(torch, case, vs)
    if t_res is None and not case.torch_grad_wrong:
        return
    assert e_res is not None, "ember: no differentiable output"
    for i, (eg, tg) in enumerate(zip(e_res[1], t_res[1] if t_res else ())):
        if tg is not None and eg is not None:
            assert_close(eg, tg, f"grad of input {i}")
        else:   # one side says "unused": the other must be all zeros
            got = npy(eg if eg is not None else tg)
            assert not got.any(), f"grad of input {i}: torch {tg}, ember {eg}"
    # central differences, no torch: only on small inputs with finite outputs
    diff = [i for i, a in enumerate(case.arrays) if a.dtype.kind == "f"]
    limit = 4 * GC_LIMIT if case.torch_grad_wrong else GC_LIMIT     # the only gradient check there
    if not case.gradcheck or sum(case.arrays[i].size for i in diff) > limit:
        return
    base = _values(case, case.arrays)
    if not all(b is None or np.isfinite(b).all() for b in base):
        return
    for k, i in enumerate(diff):
        num = np.zeros_like(case.arrays[i])
        for idx in np.ndindex(case.arrays[i].shape):
            fs = []
            for sgn in (1, -1):
                xs = [a.copy() for a in case.arrays]
                xs[i][idx] += sgn * EPS
                fs.append(_values(case, xs))
            num[idx] = sum(np.sum((p - q) * v) for p, q, v in zip(*fs, vs) if v is not None) / (2 * EPS)
        np.testing.assert_allclose(e_res[0][k], num, err_msg=f"analytic vs numeric grad of input {i}",
                                   **GRADCHECK_TOL)


def skip_known_bugs(name: str, case: Case, noncontig: bool, dtype: str) -> None:
    """Leave out the draws that reach a known ember bug (each has a strict-xfail reproducer in KNOWN_BUGS):
    keys ``op:tag``, ``op:tag+noncontig`` (only with non-contiguous inputs), ``op:tag+<dtype>``."""
    keys = set()
    for t in filter(None, case.tag.split(",")):
        keys |= {f"{name}:{t}", f"{name}:{t}+{dtype}"} | ({f"{name}:{t}+noncontig"} if noncontig else set())
    assume(not keys & set(KNOWN_BUGS))


def xfail(reason):
    return pytest.mark.xfail(strict=True, reason=reason)


# ----- drawing helpers ---------------------------------------------------------------------------------------

SEEDS = st.integers(0, 2 ** 32 - 1)
DTYPES = st.sampled_from(["float32", "float64"])
DTYPES_INT = st.sampled_from(["float32", "float64", "int64"])   # int64: values, dtypes and errors only


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    return array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def values(rng, shape, domain="real"):
    """Float64 values of ``shape``: op_db's domains plus a few for this file."""
    shape = tuple(shape)
    if domain == "with_zeros":           # exact zeros, sometimes two in a row (prod/cumprod's special cases)
        x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
        return np.where(rng.uniform(size=shape) < 0.2, 0.0, x)
    if domain == "distinct_abs":          # nonzero, pairwise distinct |x| (inf-norms, p < 1)
        n = int(np.prod(shape))
        mags = (rng.permutation(n) + 1) * 0.25 + rng.uniform(0, 0.05)
        return (mags * rng.choice([-1.0, 1.0], n)).reshape(shape)
    if domain == "with_nans":
        x = rng.uniform(-2, 2, shape)
        return np.where(rng.uniform(size=shape) < 0.25, np.nan, x)
    return draw_values(rng, shape, domain)


def one_dim(draw, n, spill=0):
    """A dim of an ``n``-d tensor, negative or not (0-d tensors take 0 and -1); ``spill`` widens the range."""
    lo, hi = (-1, 0) if n == 0 else (-n, n - 1)
    return draw(st.integers(lo - spill, hi + spill))


def dim_tuple(draw, n, min_size=0):
    """Distinct dims of an ``n``-d tensor, each written negative or not."""
    idx = draw(st.lists(st.integers(0, max(n - 1, 0)), unique=True, min_size=min_size, max_size=max(n, 1)))
    return tuple(d - max(n, 1) if draw(st.booleans()) else d for d in idx)


def size_at(shape, d):
    return shape[d] if shape else 1


def meth_or_fn(m, name, x, *args, method, **kwargs):
    """Call ``name`` as a Tensor method or as a module function (both exist in torch for these ops)."""
    return getattr(x, name)(*args, **kwargs) if method else getattr(m, name)(x, *args, **kwargs)


# ----- reductions --------------------------------------------------------------------------------------------

REDUCTIONS = {
    # name: (dim kind, value domain); dim kinds: multi = None | int | tuple, int = None | int, req = int
    "sum": ("multi", "real"), "mean": ("multi", "real"), "nansum": ("multi", "with_nans"),
    "amax": ("multi", "distinct"), "amin": ("multi", "distinct"), "logsumexp": ("multi_req", "real"),
    "std": ("multi", "real"), "var": ("multi", "real"), "prod": ("int", "with_zeros"),
    "norm": ("multi", "distinct_abs"), "cumsum": ("req", "real"), "cumprod": ("req", "with_zeros"),
    "max": ("int", "distinct"), "min": ("int", "distinct"), "argmax": ("int", "distinct"),
    "argmin": ("int", "distinct"), "all": ("multi", "bool"), "any": ("multi", "bool"),
}


@st.composite
def reduction_cases(draw, name):
    kind, domain = REDUCTIONS[name]
    shape = draw(shapes())
    n = len(shape)
    rng = np.random.default_rng(draw(SEEDS))
    keepdim = draw(st.booleans())
    method = draw(st.booleans())
    if kind in ("multi", "multi_req"):
        choices = ["int", "tuple"] + (["none"] if kind == "multi" else [])
        how = draw(st.sampled_from(choices))
        dim = None if how == "none" else one_dim(draw, n, spill=1) if how == "int" else dim_tuple(draw, n)
    elif kind == "int":
        dim = None if draw(st.booleans()) else one_dim(draw, n, spill=1)
    else:
        dim = one_dim(draw, n, spill=1)      # one past either end now and then: torch's IndexError
    if domain == "bool":
        x = rng.uniform(size=shape) < draw(st.sampled_from([0.1, 0.5, 0.9]))
    else:
        x = values(rng, shape, domain)
    kw = {}
    if name in ("std", "var"):
        kw["correction"] = draw(st.sampled_from([0, 1, 2]))
    if name == "norm":
        kw["p"] = draw(st.sampled_from([1, 2, 3, 0.5, math.inf, -math.inf]))
    if name in ("cumsum", "cumprod"):
        fn = lambda m, a: meth_or_fn(m, name, a, dim, method=method)  # noqa: E731
    elif name in ("max", "min", "prod") and dim is None:
        fn = lambda m, a: meth_or_fn(m, name, a, method=method)  # noqa: E731
    elif dim is None and name in ("sum", "mean", "nansum", "amax", "amin", "std", "var", "all", "any") \
            and not keepdim:
        fn = lambda m, a: meth_or_fn(m, name, a, method=method, **kw)  # noqa: E731
    else:
        fn = lambda m, a: meth_or_fn(m, name, a, dim=dim, keepdim=keepdim, method=method, **kw)  # noqa: E731
    tags = []
    # torch 2.13's var_backward/std_backward with dim=() (all dims) divide by 1 - correction instead of
    # numel - correction (its _safe_size of no dims is 1): torch's gradient is wrong there, check ember's by
    # central differences only.
    return Case(fn, [x], f"{name}{shape} dim={dim} keepdim={keepdim} {kw} method={method}",
                dtypes=("bool",) if domain == "bool" else ("float32", "float64") if domain == "with_nans"
                else ("float32", "float64", "int64"), tag=",".join(tags),
                torch_grad_wrong=name in ("std", "var") and dim == ())


@pytest.mark.parametrize("name", list(REDUCTIONS))
@HYP
@given(data=st.data(), seed=SEEDS, noncontig=st.booleans())
def test_reduction(name, data, seed, noncontig):
    case = data.draw(reduction_cases(name))
    dtype = data.draw(st.sampled_from(case.dtypes))
    skip_known_bugs(name, case, noncontig, dtype)
    check(case, seed, dtype, noncontig)


# ----- shape ops ---------------------------------------------------------------------------------------------

def _factor_shape(draw, numel, ndim):
    """A shape of ``ndim`` dims and ``numel`` elements (``numel`` > 0)."""
    primes, k, p = [], numel, 2
    while k > 1:
        while k % p == 0:
            primes.append(p)
            k //= p
        p += 1
    out = [1] * ndim
    for q in primes:
        out[draw(st.integers(0, ndim - 1))] *= q
    return out


@st.composite
def reshape_cases(draw, name):
    shape = draw(shapes())
    numel = int(np.prod(shape))
    ndim = draw(st.integers(0 if numel == 1 else 1, 4))
    if numel == 0:
        target = list(draw(st.lists(st.integers(0, 3), min_size=max(ndim, 1), max_size=max(ndim, 1))))
        target[draw(st.integers(0, len(target) - 1))] = 0
    else:
        target = _factor_shape(draw, numel, ndim)
    if target and draw(st.booleans()):
        target[draw(st.integers(0, len(target) - 1))] = -1    # an inferred dim (torch refuses it for 0 elements)
    noncontig = len(shape) >= 2 and draw(st.booleans())
    x = values(np.random.default_rng(draw(SEEDS)), shape[::-1] if noncontig else shape)
    pre = (lambda a: a.mT) if noncontig else (lambda a: a)   # a transposed input: view() must refuse some
    how = draw(st.sampled_from(["tuple", "varargs"]))
    t = tuple(target)
    if name == "reshape":
        fn = lambda m, a: pre(a).reshape(t) if how == "tuple" else pre(a).reshape(*t)  # noqa: E731
    elif name == "reshape_fn":
        fn = lambda m, a: m.reshape(pre(a), t)  # noqa: E731
    else:
        fn = lambda m, a: pre(a).view(t) if how == "tuple" else pre(a).view(*t)  # noqa: E731
    return Case(fn, [x], f"{name} {shape} noncontig={noncontig} -> {t}")


@st.composite
def permute_cases(draw, name):
    shape = tuple(draw(shapes(max_dims=4)))
    n = len(shape)
    rng = np.random.default_rng(draw(SEEDS))
    x = values(rng, shape)
    method = draw(st.booleans())
    if name == "permute":
        perm = tuple(d - n if draw(st.booleans()) else d for d in draw(st.permutations(range(n))))
        fn = lambda m, a: a.permute(*perm) if method else m.permute(a, perm)  # noqa: E731
        desc = perm
    elif name == "transpose":
        d0, d1 = one_dim(draw, n), one_dim(draw, n)
        fn = lambda m, a: meth_or_fn(m, "transpose", a, d0, d1, method=method)  # noqa: E731
        desc = (d0, d1)
    else:   # movedim: distinct sources and destinations, as ints or tuples
        src = dim_tuple(draw, n)
        dst = tuple(draw(st.permutations(range(max(n, 1)))))[:len(src)]
        dst = tuple(d - max(n, 1) if draw(st.booleans()) else d for d in dst)
        if len(src) == 1:       # ints, or one int and one tuple (torch's TypeError)
            src = src[0] if draw(st.booleans()) else src
            dst = dst[0] if draw(st.booleans()) else dst
        fn = lambda m, a: meth_or_fn(m, "movedim", a, src, dst, method=method)  # noqa: E731
        desc = (src, dst)
    return Case(fn, [x], f"{name}{shape} {desc} method={method}")


@st.composite
def flip_roll_cases(draw, name):
    shape = tuple(draw(shapes()))
    n = len(shape)
    x = values(np.random.default_rng(draw(SEEDS)), shape)
    method = draw(st.booleans())
    if name == "flip":
        dims = dim_tuple(draw, n)
        fn = lambda m, a: meth_or_fn(m, "flip", a, dims, method=method)  # noqa: E731
        desc = dims
    else:
        if draw(st.booleans()):     # flattened roll
            shifts, dims = draw(st.integers(-7, 7)), None
        else:
            dims = dim_tuple(draw, n, min_size=1)
            shifts = tuple(draw(st.integers(-7, 7)) for _ in dims)
            if len(dims) == 1 and draw(st.booleans()):
                shifts, dims = shifts[0], dims[0]
        fn = lambda m, a: meth_or_fn(m, "roll", a, shifts, dims, method=method)  # noqa: E731
        desc = (shifts, dims)
    return Case(fn, [x], f"{name}{shape} {desc} method={method}")


@st.composite
def squeeze_cases(draw, name):
    shape = tuple(draw(shapes(max_side=2, max_dims=4)))    # many size-1 dims
    n = len(shape)
    x = values(np.random.default_rng(draw(SEEDS)), shape)
    method = draw(st.booleans())
    if name == "unsqueeze":
        d = draw(st.integers(-n - 1, n))
        fn = lambda m, a: meth_or_fn(m, "unsqueeze", a, d, method=method)  # noqa: E731
    else:
        how = draw(st.sampled_from(["all", "int", "tuple"]))
        d = None if how == "all" else one_dim(draw, n) if how == "int" else dim_tuple(draw, n)
        fn = lambda m, a: meth_or_fn(m, "squeeze", a, *(() if d is None else (d,)), method=method)  # noqa: E731
    return Case(fn, [x], f"{name}{shape} dim={d} method={method}")


@st.composite
def expand_cases(draw, name):
    shape = tuple(draw(shapes(max_side=3)))
    x = values(np.random.default_rng(draw(SEEDS)), shape)
    lead = draw(st.lists(st.integers(0, 3), max_size=2))
    tail = [draw(st.sampled_from([1, 2, 3])) if s == 1 else draw(st.sampled_from([s, -1])) for s in shape]
    target = tuple(lead + tail)
    if name == "expand":
        how = draw(st.booleans())
        fn = lambda m, a: a.expand(target) if how else a.expand(*target)  # noqa: E731
    elif name == "expand_as":
        tgt = np.zeros([t if t >= 0 else s for t, s in zip(target[len(lead):], shape)])
        full = tuple(lead) + tgt.shape
        fn = lambda m, a: a.expand_as(m.zeros(full, dtype=a.dtype))  # noqa: E731
    elif name == "broadcast_to":
        fn = lambda m, a: m.broadcast_to(a, target)  # noqa: E731
    return Case(fn, [x], f"{name}{shape} -> {target}")


@st.composite
def cat_cases(draw, name):
    shape = list(draw(shapes(min_dims=1 if name == "cat" else 0)))
    n = len(shape)
    rng = np.random.default_rng(draw(SEEDS))
    k = draw(st.integers(1, 3))
    if name == "cat":
        d = one_dim(draw, n)
        arrays = []
        for _ in range(k):
            s = list(shape)
            s[d] = draw(st.integers(0, 3))
            arrays.append(values(rng, s))
        fn = lambda m, *xs: m.cat(list(xs), d)  # noqa: E731
    else:
        d = draw(st.integers(-n - 1, n))
        arrays = [values(rng, shape) for _ in range(k)]
        fn = lambda m, *xs: m.stack(xs, dim=d)  # noqa: E731
    return Case(fn, arrays, f"{name} {[a.shape for a in arrays]} dim={d}")


@st.composite
def split_cases(draw, name):
    shape = tuple(draw(shapes(min_dims=1, max_side=5)))
    n = len(shape)
    d = one_dim(draw, n)
    size = shape[d]
    x = values(np.random.default_rng(draw(SEEDS)), shape)
    method = draw(st.booleans())
    if name == "split":
        if draw(st.booleans()):
            arg = draw(st.integers(1 if size else 0, 4))
        else:       # sections summing to the size
            cuts = sorted(draw(st.lists(st.integers(0, size), max_size=3)))
            arg = [b - a for a, b in zip([0] + cuts, cuts + [size])]
        fn = lambda m, a: meth_or_fn(m, "split", a, arg, d, method=method)  # noqa: E731
    elif name == "chunk":
        arg = draw(st.integers(1, 6))
        fn = lambda m, a: meth_or_fn(m, "chunk", a, arg, d, method=method)  # noqa: E731
    else:   # unbind
        arg = None
        fn = lambda m, a: meth_or_fn(m, "unbind", a, d, method=method)  # noqa: E731
    return Case(fn, [x], f"{name}{shape} {arg} dim={d} method={method}")


@st.composite
def narrow_select_cases(draw, name):
    shape = tuple(draw(shapes(min_dims=1)))
    n = len(shape)
    d = one_dim(draw, n)
    size = shape[d]
    x = values(np.random.default_rng(draw(SEEDS)), shape)
    method = draw(st.booleans())
    if name == "narrow":
        start = draw(st.integers(-size, size))
        length = draw(st.integers(0, size - (start % size if size and start < 0 else start) + 1))  # +1: too long
        fn = lambda m, a: meth_or_fn(m, "narrow", a, d, start, length, method=method)  # noqa: E731
        desc = (d, start, length)
    else:
        idx = draw(st.integers(-size - 1, size))   # one past either end: torch's IndexError
        fn = lambda m, a: meth_or_fn(m, "select", a, d, idx, method=method)  # noqa: E731
        desc = (d, idx)
    return Case(fn, [x], f"{name}{shape} {desc} method={method}")


@st.composite
def diag_cases(draw, name):
    shape = tuple(draw(shapes(min_dims=2 if name != "diagonal" else 2, max_dims=4)))
    n = len(shape)
    x = values(np.random.default_rng(draw(SEEDS)), shape)
    method = draw(st.booleans())
    offset = draw(st.integers(-4, 4))
    if name == "diagonal":
        d1, d2 = draw(st.permutations(range(n)))[:2]
        d1, d2 = (d - n if draw(st.booleans()) else d for d in (d1, d2))
        fn = lambda m, a: meth_or_fn(m, "diagonal", a, offset=offset,  # noqa: E731
                                     dim1=d1, dim2=d2, method=method)
        desc = (offset, d1, d2)
    else:
        fn = lambda m, a: meth_or_fn(m, name, a, offset, method=method)  # noqa: E731
        desc = offset
    return Case(fn, [x], f"{name}{shape} {desc} method={method}")


@st.composite
def repeat_cases(draw, name):
    shape = tuple(draw(shapes(max_side=3)))
    n = len(shape)
    x = values(np.random.default_rng(draw(SEEDS)), shape)
    if name == "repeat":
        reps = tuple(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n + 2)))
        how = draw(st.booleans())
        fn = lambda m, a: a.repeat(reps) if how else a.repeat(*reps)  # noqa: E731
    else:
        reps = tuple(draw(st.lists(st.integers(0, 3), max_size=n + 2)))
        method = draw(st.booleans())
        fn = lambda m, a: meth_or_fn(m, "tile", a, reps, method=method)  # noqa: E731
    return Case(fn, [x], f"{name}{shape} {reps}")


SHAPE_OPS = {
    "reshape": reshape_cases, "reshape_fn": reshape_cases, "view": reshape_cases,
    "permute": permute_cases, "transpose": permute_cases, "movedim": permute_cases,
    "flip": flip_roll_cases, "roll": flip_roll_cases, "squeeze": squeeze_cases, "unsqueeze": squeeze_cases,
    "expand": expand_cases, "expand_as": expand_cases, "broadcast_to": expand_cases,
    "cat": cat_cases, "stack": cat_cases, "split": split_cases, "chunk": split_cases, "unbind": split_cases,
    "narrow": narrow_select_cases, "select": narrow_select_cases,
    "diagonal": diag_cases, "tril": diag_cases, "triu": diag_cases, "repeat": repeat_cases, "tile": repeat_cases,
}


@pytest.mark.parametrize("name", list(SHAPE_OPS))
@HYP
@given(data=st.data(), seed=SEEDS, dtype=DTYPES_INT, noncontig=st.booleans())
def test_shape(name, data, seed, dtype, noncontig):
    case = data.draw(SHAPE_OPS[name](name))
    skip_known_bugs(name, case, noncontig, dtype)
    check(case, seed, dtype, noncontig)


# ----- indexing ------------------------------------------------------------------------------------------------

@st.composite
def basic_index(draw, shape, rng=None):
    """A basic index: ints, slices (with steps), None and at most one Ellipsis, fitting ``shape``. With ``rng``:
    mixed, some of the ints and slices become integer arrays (broadcasting together) and a bool scalar may
    appear, so that basic and advanced indices interleave."""
    n = len(shape)
    kinds = draw(st.lists(st.sampled_from(["int", "slice", "none", "ellipsis"] + (["bool"] if rng else [])),
                          max_size=5))
    if rng is not None:
        base = tuple(draw(shapes(max_dims=2, min_side=1, max_side=3)))
    out, consuming, seen_ellipsis = [], 0, False
    for k in kinds:
        if k == "ellipsis" and seen_ellipsis or k in ("int", "slice") and consuming == n:
            k = "none"
        seen_ellipsis |= k == "ellipsis"
        consuming += k in ("int", "slice")
        out.append(k)
    # the dim each consuming component indexes: from the front before the Ellipsis, from the back after it
    cut = out.index("ellipsis") if seen_ellipsis else len(out)
    front = sum(k in ("int", "slice") for k in out[:cut])
    back = consuming - front
    dims = iter(list(range(front)) + list(range(n - back, n)))
    idx = []
    for k in out:
        if k == "none":
            idx.append(None)
        elif k == "bool":
            idx.append(draw(st.booleans()))
        elif k == "ellipsis":
            idx.append(Ellipsis)
        else:
            s = shape[next(dims)]
            if rng is not None and draw(st.booleans()):     # an int array, its shape broadcasting to base
                ashape = tuple(b if draw(st.booleans()) else 1 for b in base)[draw(st.integers(0, len(base))):]
                arr = rng.integers(-s, s, ashape) if s else np.zeros(ashape, dtype=np.int64)
                # out of bounds on an empty dim (torch's IndexError) unless the array is empty too
                idx.append(("arr" if s or not arr.size else "arr_oob", arr.astype(np.int64)))
            elif k == "int" and s > 0:
                idx.append(draw(st.integers(-s, s - 1)))
            else:
                bound = st.one_of(st.none(), st.integers(-s - 2, s + 2))
                idx.append(slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, 3]))))
    if len(idx) == 1 and draw(st.booleans()):
        return idx[0]
    return tuple(idx)


@st.composite
def advanced_index(draw, shape, rng, mask):
    """Integer arrays on one or two dims (broadcast together, repeated and negative indices) with slices
    elsewhere, or a boolean mask over some consecutive dims."""
    n = len(shape)
    if mask:                        # a bool mask over dims [d, d + k), mostly k >= 1
        d = draw(st.integers(0, max(n - 1, 0)))
        k = draw(st.integers(1 if n else 0, n - d))
        mask = rng.uniform(size=shape[d:d + k]) < 0.5
        return (slice(None),) * d + (("mask", mask),), f"mask{mask.shape} at {d}"
    dims = draw(st.lists(st.integers(0, n - 1), unique=True, min_size=1, max_size=min(n, 2))) if n else []
    if not dims:
        return (("arr", np.array([0, 0, -1])),), "arr on 0-d"
    bshape = draw(mutually_broadcastable_shapes(num_shapes=len(dims), max_dims=2, max_side=3))
    idx = [slice(None)] * (max(dims) + 1)
    for d, s in zip(dims, bshape.input_shapes):
        size = shape[d]
        arr = rng.integers(-size, size, s) if size else np.zeros(s, dtype=np.int64)
        idx[d] = ("arr", arr.astype(np.int64))
    if draw(st.booleans()) and idx[0] == slice(None):
        idx[0] = slice(None, None, 2)
    return tuple(idx), f"arrays on dims {dims} of shapes {bshape.input_shapes}"


def _materialize(m, idx):
    if isinstance(idx, tuple) and len(idx) == 2 and isinstance(idx[0], str):
        return m.tensor(idx[1])
    if isinstance(idx, tuple):
        return tuple(_materialize(m, i) for i in idx)
    return idx


@st.composite
def getitem_cases(draw, name):
    shape = tuple(draw(shapes(max_dims=4)))
    rng = np.random.default_rng(draw(SEEDS))
    x = values(rng, shape)
    if name in ("getitem_basic", "getitem_mixed"):
        idx = draw(basic_index(shape, rng if name == "getitem_mixed" else None))
        desc = idx
    else:
        idx, desc = draw(advanced_index(shape, rng, mask=name == "getitem_mask"))
    fn = lambda m, a: a[_materialize(m, idx)]  # noqa: E731
    return Case(fn, [x], f"{name} x{shape}[{desc}]")


@st.composite
def gather_cases(draw, name):
    shape = tuple(draw(shapes(max_dims=3)))
    n = len(shape)
    rng = np.random.default_rng(draw(SEEDS))
    x = values(rng, shape)
    d = one_dim(draw, n)
    size = size_at(shape, d)
    dn = d % max(n, 1)
    method = draw(st.booleans())

    def index_in(ishape):     # repeated indices are likely: few values, many draws
        return rng.integers(0, size, ishape) if size else np.zeros(ishape, dtype=np.int64)

    if name in ("gather", "scatter_add"):
        ishape = tuple(draw(st.integers(0, 3)) if i == dn else draw(st.integers(0, shape[i]))
                       for i in range(n))
        if size == 0 and n:
            ishape = tuple(0 if i == dn else s for i, s in enumerate(ishape))
        index = index_in(ishape)
        if name == "gather":
            fn = lambda m, a: meth_or_fn(m, "gather", a, d, m.tensor(index), method=method)  # noqa: E731
            return Case(fn, [x], f"gather x{shape} dim={d} index{ishape}")
        sshape = tuple(s + draw(st.integers(0, 1)) for s in ishape)
        src = values(rng, sshape)
        fn = lambda m, a, s: meth_or_fn(m, "scatter_add", a, d, m.tensor(index), s, method=method)  # noqa: E731
        # torch 2.13's ScatterAddBackward0 returns gather(grad, dim, index), of index's shape, and its engine
        # then rejects it when src is larger than index; ember pads it with zeros (checked by differences).
        return Case(fn, [x, src], f"scatter_add x{shape} dim={d} index{ishape} src{sshape}",
                    torch_grad_wrong=sshape != ishape)
    if name in ("index_select", "index_add"):
        k = draw(st.integers(0, 4)) if size else 0
        index = index_in((k,) if n or draw(st.booleans()) else ())
        if name == "index_select":
            fn = lambda m, a: meth_or_fn(m, "index_select", a, d, m.tensor(index), method=method)  # noqa: E731
            return Case(fn, [x], f"index_select x{shape} dim={d} index{index.shape}")
        sshape = tuple(index.size if i == dn else s for i, s in enumerate(shape))
        src = values(rng, sshape)
        alpha = draw(st.sampled_from([1, 2.5, -1]))
        fn = lambda m, a, s: meth_or_fn(m, "index_add", a, d, m.tensor(index), s, alpha=alpha,  # noqa: E731
                                        method=method)
        return Case(fn, [x, src], f"index_add x{shape} dim={d} index{index.shape} alpha={alpha}")
    # take_along_dim: indices broadcast against x in every dim but d; or d=None on the flattened input
    if draw(st.booleans()):
        numel = x.size
        ishape = tuple(draw(shapes(max_dims=2, max_side=3)))
        index = rng.integers(0, numel, ishape) if numel else np.zeros((0,), dtype=np.int64)
        fn = lambda m, a: meth_or_fn(m, "take_along_dim", a, m.tensor(index), method=method)  # noqa: E731
        return Case(fn, [x], f"take_along_dim x{shape} flat index{index.shape}")
    ishape = tuple((draw(st.integers(0, 3)) if size else 0) if i == dn else
                   draw(st.sampled_from([shape[i], 1])) for i in range(n))
    index = index_in(ishape)
    fn = lambda m, a: meth_or_fn(m, "take_along_dim", a, m.tensor(index), d, method=method)  # noqa: E731
    return Case(fn, [x], f"take_along_dim x{shape} dim={d} index{ishape}")


INDEX_OPS = {"getitem_basic": getitem_cases, "getitem_mixed": getitem_cases, "getitem_int_arrays": getitem_cases,
             "getitem_mask": getitem_cases, "gather": gather_cases, "scatter_add": gather_cases,
             "index_select": gather_cases, "index_add": gather_cases, "take_along_dim": gather_cases}


@pytest.mark.parametrize("name", list(INDEX_OPS))
@HYP
@given(data=st.data(), seed=SEEDS, dtype=DTYPES_INT, noncontig=st.booleans())
def test_indexing(name, data, seed, dtype, noncontig):
    case = data.draw(INDEX_OPS[name](name))
    skip_known_bugs(name, case, noncontig, dtype)
    check(case, seed, dtype, noncontig)


# ----- linalg ------------------------------------------------------------------------------------------------

def well_conditioned(rng, batch, n):
    """Diagonally dominant matrices (random signs on the diagonal, so determinants of both signs)."""
    a = rng.uniform(-0.5, 0.5, tuple(batch) + (n, n))
    sign = rng.choice([-1.0, 1.0], tuple(batch) + (n,))
    return a + np.eye(n) * (sign * (0.5 * n + 1))[..., None]


EINSUM = ["ij,jk->ik", "...ij,...jk->...ik", "bij,bjk->bik", "i,i->", "ij->ji", "ii->i", "ii->", "ij,j->i",
          "i,j->ij", "bi,bi->b", "ijk->kji", "ij,ij->", "...i,...i->...", "ij,kj->ik", "iij->j"]


@st.composite
def linalg_cases(draw, name):
    rng = np.random.default_rng(draw(SEEDS))
    if name == "matmul":
        sh = draw(mutually_broadcastable_shapes(signature="(m?,n),(n,p?)->(m?,p?)", max_dims=2,
                                                min_side=0, max_side=3))
        a, b = (values(rng, s) for s in sh.input_shapes)
        how = draw(st.sampled_from(["fn", "op"]))
        fn = (lambda m, x, y: m.matmul(x, y)) if how == "fn" else (lambda m, x, y: x @ y)
        return Case(fn, [a, b], f"matmul {a.shape} @ {b.shape}")
    if name == "bmm":
        bb, i, j, k = (draw(st.integers(0, 3)) for _ in range(4))
        a, b = values(rng, (bb, i, j)), values(rng, (bb, j, k))
        return Case(lambda m, x, y: m.bmm(x, y), [a, b], f"bmm {a.shape} {b.shape}")
    if name == "einsum":
        eq = draw(st.sampled_from(EINSUM))
        sizes = {c: draw(st.integers(0, 3)) for c in "ijkb"}
        ins = eq.split("->")[0].split(",")
        batch = draw(mutually_broadcastable_shapes(num_shapes=len(ins), max_dims=2, max_side=3)).input_shapes
        arrays = [values(rng, (tuple(bs) if s.startswith("...") else ()) + tuple(sizes[c] for c in
                                                                             s.replace("...", "")))
                  for s, bs in zip(ins, batch)]
        return Case(lambda m, *xs: m.einsum(eq, *xs), arrays, f"einsum {eq} {[a.shape for a in arrays]}")
    if name == "tensordot":
        k = draw(st.integers(0, 2))
        c = [draw(st.integers(0, 3)) for _ in range(k)]
        fa = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 2)))]
        fb = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 2)))]
        if draw(st.booleans()):         # dims=int: the last k of a against the first k of b
            a, b = values(rng, fa + c), values(rng, c + fb)
            dims = k
        else:
            core_a, core_b = fa + c, c + fb
            pa = draw(st.permutations(range(len(core_a))))
            pb = draw(st.permutations(range(len(core_b))))
            a, b = values(rng, [core_a[i] for i in pa]), values(rng, [core_b[i] for i in pb])
            dims = ([pa.index(len(fa) + t) for t in range(k)], [pb.index(t) for t in range(k)])
        return Case(lambda m, x, y: m.tensordot(x, y, dims=dims), [a, b],
                    f"tensordot {a.shape} {b.shape} dims={dims}")
    # det / inv / solve / slogdet on batches of well-conditioned matrices
    batch = tuple(draw(shapes(max_dims=2, max_side=3)))
    n = draw(st.integers(0 if name != "slogdet" else 1, 3))
    a = well_conditioned(rng, batch, n)
    if name == "det":
        method = draw(st.booleans())
        return Case(lambda m, x: x.det() if method else m.linalg.det(x), [a], f"det {a.shape}")
    if name == "inv":
        how = draw(st.sampled_from(["linalg", "inverse", "method"]))
        fn = {"linalg": lambda m, x: m.linalg.inv(x), "inverse": lambda m, x: m.inverse(x),
              "method": lambda m, x: x.inverse()}[how]
        return Case(fn, [a], f"inv({how}) {a.shape}")
    if name == "slogdet":
        return Case(lambda m, x: tuple(m.linalg.slogdet(x)), [a], f"slogdet {a.shape}")
    # solve: B a batch of matrices broadcasting against A's batch, or a batch of vectors shaped A.shape[:-1]
    if draw(st.booleans()):
        bb = draw(mutually_broadcastable_shapes(num_shapes=1, base_shape=batch, max_dims=2, min_side=0,
                                                max_side=3)).input_shapes[0]
        b = values(rng, tuple(bb) + (n, draw(st.integers(0, 2))))
    else:
        b = values(rng, batch + (n,))
    return Case(lambda m, x, y: m.linalg.solve(x, y), [a, b], f"solve {a.shape} {b.shape}")


LINALG_OPS = ["matmul", "bmm", "einsum", "tensordot", "det", "inv", "slogdet", "solve"]


@pytest.mark.parametrize("name", LINALG_OPS)
@HYP
@given(data=st.data(), seed=SEEDS, dtype=DTYPES_INT, noncontig=st.booleans())
def test_linalg(name, data, seed, dtype, noncontig):
    case = data.draw(linalg_cases(name))
    skip_known_bugs(name, case, noncontig, dtype)
    check(case, seed, dtype, noncontig)


# ----- sorting -----------------------------------------------------------------------------------------------

@st.composite
def sorting_cases(draw, name):
    shape = tuple(draw(shapes(max_side=5)))
    n = len(shape)
    x = values(np.random.default_rng(draw(SEEDS)), shape, "distinct")
    d = one_dim(draw, n)
    size = size_at(shape, d)
    method = draw(st.booleans())
    if name == "sort":
        kw = dict(dim=d, descending=draw(st.booleans()), stable=draw(st.booleans()))
    elif name == "sort_stable_ties":    # ties: a stable sort's permutation (and so its gradient) is still unique
        x = np.random.default_rng(draw(SEEDS)).integers(-2, 3, shape).astype(np.float64)
        kw = dict(dim=d, descending=draw(st.booleans()), stable=True)
        fn = lambda m, a: tuple(meth_or_fn(m, "sort", a, method=method, **kw))  # noqa: E731
        return Case(fn, [x], f"sort{shape} ties {kw} method={method}", gradcheck=False)
    elif name == "argsort":
        kw = dict(dim=d, descending=draw(st.booleans()))
    elif name == "topk":
        kw = dict(k=draw(st.integers(0, size + 1)), dim=d, largest=draw(st.booleans()))   # k = size + 1: error
    elif name == "kthvalue":
        kw = dict(k=draw(st.integers(1 if size else 0, size)), dim=d, keepdim=draw(st.booleans()))
    elif name in ("median", "msort"):
        kw = {} if name == "msort" else dict(dim=d, keepdim=draw(st.booleans()))
    else:   # cummax / cummin
        kw = dict(dim=d)
    fn = lambda m, a: tuple(r for r in outs_of(meth_or_fn(m, name, a, method=method, **kw)))  # noqa: E731
    return Case(fn, [x], f"{name}{shape} {kw} method={method}")


SORTING_OPS = ["sort", "sort_stable_ties", "argsort", "topk", "kthvalue", "median", "msort", "cummax", "cummin"]


@pytest.mark.parametrize("name", SORTING_OPS)
@HYP
@given(data=st.data(), seed=SEEDS, dtype=DTYPES, noncontig=st.booleans())
def test_sorting(name, data, seed, dtype, noncontig):
    case = data.draw(sorting_cases(name))
    skip_known_bugs(name, case, noncontig, dtype)
    check(case, seed, dtype, noncontig)


# ----- known ember bugs: the draws that reach them, as strict xfails ---------------------------------------------
# The hypothesis tests skip these draws (``assume``), so they keep checking the rest of each op; the reproducers
# below fail until the bug is fixed, then the strict xfail turns red and the entry goes.

KNOWN_BUGS = {
}


@pytest.mark.parametrize("key", [pytest.param(k, marks=xfail(v[0]), id=k) for k, v in KNOWN_BUGS.items()])
def test_known_bug(key):
    reason, fn, arrays = KNOWN_BUGS[key]
    check(Case(fn, arrays, reason), seed=0)
