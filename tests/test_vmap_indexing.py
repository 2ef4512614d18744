"""vmap over indexing, gather/scatter, sorting and the reductions over every dim: each op with its input batched,
its index batched, both, and other in_dims, against torch.func.vmap on the same inputs (values and dtypes), and
with no per-example fallback (PyTorch's "There is a performance drop" warning) where ember has a batching rule.
What PyTorch refuses under vmap, ember refuses with the same exception type. Where torch 2.13's own batching rule
gives a wrong answer (noted), the reference is a Python loop over the examples."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

B = 3
RNG = np.random.default_rng(0)
X = RNG.standard_normal((B, 4, 5))            # examples (4, 5)
XT = np.ascontiguousarray(X.transpose(1, 0, 2))   # the same, batched along dim 1
I = RNG.integers(0, 4, (B, 2, 5))            # gather/scatter index into dim 0 of an example
IV = RNG.integers(0, 4, (B, 2))              # vector index into dim 0
IV1 = RNG.integers(0, 5, (B, 3))             # vector index into dim 1
S = RNG.standard_normal((B, 2, 5))           # scatter source
FLAT = RNG.integers(-20, 20, (B, 6))         # take/put positions (negative from the end)
M = RNG.random((B, 4, 5)) > 0.5              # masks
SEQ = np.sort(RNG.standard_normal((B, 6)), -1)
TIES = np.round(RNG.standard_normal((B, 4, 5)))   # sorting with ties


def _set(x, index, value):
    x[index] = value
    return x


def _t(m, a):
    return m.tensor(a)


# (id, f(m, *mapped), arrays, in_dims, has_rule, reference): f builds the unmapped inputs itself (from X[0], I[0], ...)
CASES = [
    # gather / scatter
    ("gather-in", lambda m, x: m.gather(x, 0, _t(m, I[0])), (X,), 0, True),
    ("gather-index", lambda m, i: m.gather(_t(m, X[0]), 0, i), (I,), 0, True),
    ("gather-both", lambda m, x, i: x.gather(1, i), (X, I[:, :, :3]), 0, True),
    ("gather-in_dims1", lambda m, x, i: m.gather(x, -1, i), (XT, I), (1, 0), True),
    ("gather-0d", lambda m, x, i: m.gather(x, 0, i), (X[:, 0, 0], I[:, 0, 0] * 0), 0, True),
    ("scatter-value-in", lambda m, x: m.scatter(x, 0, _t(m, I[0]), 2.5), (X,), 0, True),
    ("scatter-src-index", lambda m, i: m.scatter(_t(m, X[0]), 0, i, _t(m, S[0])), (I,), 0, True),
    ("scatter-src-all", lambda m, x, i, s: x.scatter(0, i, s), (X, I, S), 0, True),
    ("scatter-reduce-add", lambda m, x, i, s: x.scatter(0, i, s, reduce="add"), (X, I, S), 0, True),
    ("scatter_-inplace", lambda m, x, i: x.clone().scatter_(0, i, 1.0), (X, I), 0, True),
    ("scatter_add-all", lambda m, x, i, s: m.scatter_add(x, 0, i, s), (X, I, S), 0, True),
    ("scatter_add-src", lambda m, s: m.scatter_add(_t(m, X[0]), 0, _t(m, I[0]), s), (S,), 0, True),
    ("scatter_add_-inplace", lambda m, x, s: x.clone().scatter_add_(0, _t(m, I[0]), s), (X, S), 0, True),
    ("scatter_reduce-amax", lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "amax"), (X, I, S), 0, True),
    ("scatter_reduce-mean-noself", lambda m, x, i, s: x.scatter_reduce(0, i, s, "mean", include_self=False),
     (X, I, S), 0, True),
    ("scatter_reduce_-inplace", lambda m, x, i, s: x.clone().scatter_reduce_(0, i, s, "prod"), (X, I, S), 0, True),
    ("take_along_dim-both", lambda m, x, i: m.take_along_dim(x, i, 0), (X, I), 0, True),
    ("take_along_dim-none", lambda m, x, i: m.take_along_dim(x, i), (X, FLAT % 20), 0, True),
    # index_*
    ("index_select-in", lambda m, x: m.index_select(x, 1, _t(m, IV1[0])), (X,), 0, True),
    ("index_select-index", lambda m, i: m.index_select(_t(m, X[0]), 1, i), (IV1,), 0, True),
    ("index_select-both-in_dims", lambda m, x, i: x.index_select(0, i), (XT, IV), (1, 0), True),
    ("index_add-index", lambda m, i, s: m.index_add(_t(m, X[0]), 0, i, s), (IV, X[:, :2]), 0, True),
    ("index_add-in-alpha", lambda m, x: x.index_add(1, _t(m, IV1[0]), _t(m, X[0, :, :3]), alpha=2.0), (X,), 0, True),
    ("index_add_-inplace", lambda m, x, i, s: x.clone().index_add_(0, i, s), (X, IV, X[:, :2]), 0, True),
    ("index_copy-all", lambda m, x, i, s: m.index_copy(x, 0, i, s), (X, np.stack([[0, 2], [1, 3], [3, 0]]),
                                                                       X[:, :2]), 0, True),
    ("index_copy_-inplace", lambda m, x, s: x.clone().index_copy_(1, _t(m, np.array([4, 0])), s), (X, X[:, :, :2]),
     0, True),
    ("index_fill-index", lambda m, i: m.index_fill(_t(m, X[0]), 1, i, -1.5), (IV1,), 0, True),
    ("index_fill-negative", lambda m, i: m.index_fill(_t(m, X[0]), 1, i, -1.5), (IV1 - 2,), 0, "loop"),
    # (torch 2.13 wraps a batched negative index across the examples)
    ("index_fill-in", lambda m, x: x.index_fill(0, _t(m, IV[0]), 7.0), (X,), 0, True),
    ("index_fill_-inplace", lambda m, x, i: x.clone().index_fill_(0, i, 0.0), (X, IV), 0, True),
    ("index_fill-tensor-value", lambda m, x, v: x.index_fill(0, _t(m, IV[0]), v), (X, X[:, 0, 0]), 0, "loop"),
    # (torch 2.13 fills every example with the last example's value)
    ("index_reduce-index", lambda m, i, s: m.index_reduce(_t(m, X[0]), 0, i, s, "amax"), (IV, X[:, :2]), 0, True),
    ("index_reduce-in-mean", lambda m, x: x.index_reduce(1, _t(m, IV1[0]), _t(m, X[0, :, :3]), "mean",
                                                         include_self=False), (X,), 0, True),
    ("index_reduce_-inplace", lambda m, x, i, s: x.clone().index_reduce_(0, i, s, "prod"), (X, IV, X[:, :2]), 0,
     True),
    ("fill_diagonal_", lambda m, x: x[:, :4].clone().fill_diagonal_(2.0), (X,), 0, True),
    ("getitem-ellipses", lambda m, x: x[..., ...], (X,), 0, True),
    ("index_put-both", lambda m, x, i, v: m.index_put(x, (i,), v), (X, IV, X[:, :2]), 0, True),
    ("index_put-accumulate", lambda m, x, i: m.index_put(x, (i, _t(m, IV1[0, :2])), _t(m, np.array(1.0)),
                                                         accumulate=True), (X, IV), 0, True),
    ("index_put_-inplace", lambda m, x, i: x.clone().index_put_((i,), _t(m, np.array(3.0))), (X, IV), 0, True),
    # take / put
    ("take-in", lambda m, x: m.take(x, _t(m, FLAT[0])), (X,), 0, True),
    ("take-index", lambda m, i: m.take(_t(m, X[0]), i), (FLAT,), 0, True),
    ("put-all", lambda m, x, i, s: m.put(x, i, s), (X, np.stack([RNG.permutation(20)[:6] for _ in range(B)]),
                                                       S[:, 0, :3].repeat(2, 1)), 0, True),
    ("put_-accumulate", lambda m, x, i: x.clone().put_(i, _t(m, X[0, :2].reshape(-1)[:6].copy()), accumulate=True), (X, FLAT),
     0, True),
    # x[index], x[index] = value
    ("getitem-index", lambda m, i: _t(m, X[0])[i], (IV,), 0, True),
    ("getitem-in", lambda m, x: x[_t(m, IV[0])], (X,), 0, True),
    ("getitem-both-slice", lambda m, x, i: x[:, i], (X, IV1), 0, True),
    ("getitem-separated", lambda m, x, i: x[i, _t(m, IV1[0, :2])], (X, IV), 0, True),
    ("getitem-int-tensor", lambda m, x, i: x[i[0], 1:4], (X, IV), 0, True),
    ("getitem-mask-in", lambda m, x: x[_t(m, M[0])], (X,), 0, True),
    ("getitem-none", lambda m, i: _t(m, X[0])[None, :, i], (IV1,), 0, True),
    ("getitem-basic-in_dims", lambda m, x: x[1:3, 0], (XT,), 1, True),
    ("setitem-scalar", lambda m, x, i: _set(x.clone(), i, 0.0), (X, IV), 0, True),
    ("setitem-value-batched", lambda m, x, v: _set(x.clone(), _t(m, IV[0]), v), (X, X[:, :2]), 0, True),
    ("setitem-basic", lambda m, x, v: _set(x.clone(), (slice(1, 3), 0), v), (X, X[:, :2, 0]), 0, True),
    ("setitem-mask", lambda m, x: _set(x.clone(), _t(m, M[0]), 1.0), (X,), 0, True),
    ("setitem-slice-index", lambda m, x, i, v: _set(x.clone(), (slice(None), i), v), (X, IV1, X[:, 0, :3]), 0,
     "loop"),   # torch 2.13's index_put_ rule: "shape mismatch" for a value of the region's trailing shape
    ("copy_", lambda m, x, v: x.clone().copy_(v), (X, X[:, 0]), 0, True),
    ("t_", lambda m, x: x.clone().t_() * 1, (X,), 0, True),
    ("view-copies", lambda m, x: (m.narrow_copy(x, 1, 1, 2), m.diagonal_copy(x), *m.unsafe_split(x, 2, 1),
                                  *m.unsafe_chunk(x, 2)), (X,), 0, True),
    ("combinations", lambda m, x: (m.combinations(x), m.combinations(x, 3, with_replacement=True)),
     (X[:, 0],), 0, True),
    ("swapaxes_-in_dims", lambda m, x: x.clone().swapaxes_(0, 1).unsqueeze_(0).squeeze_(0) + 1, (XT,), 1, True),
    # masks
    ("masked_fill-in", lambda m, x: m.masked_fill(x, _t(m, M[0]), -1.0), (X,), 0, True),
    ("masked_fill-mask", lambda m, k: m.masked_fill(_t(m, X[0]), k, 2.0), (M,), 0, True),
    ("masked_fill-value", lambda m, x, k, v: x.masked_fill(k, v), (X, M, X[:, 0, 0]), 0, True),
    ("masked_fill_-inplace", lambda m, x, k: x.clone().masked_fill_(k, 0.5), (X, M), 0, True),
    ("masked_scatter-all", lambda m, x, k, s: m.masked_scatter(x, k, s), (X, M, X), 0, True),
    ("masked_scatter-mask", lambda m, k: m.masked_scatter(_t(m, X[0]), k, _t(m, X[1])), (M,), 0, True),
    ("masked_select-in", lambda m, x: m.masked_select(x, _t(m, M[0])), (X,), 0, True),
    ("where-cond", lambda m, c: m.where(c, _t(m, X[0]), 0.0), (M,), 0, True),
    ("where-all", lambda m, c, x, y: m.where(c, x, y), (M[:, 0], X, X[:, 0, 0]), 0, True),
    # comparisons and logical ops (masks)
    ("compare", lambda m, x, y: (x > 0, m.eq(x, y), m.le(y, x), 0.1 >= x, m.ne(x, 0.5)), (X, X[:, 0]), 0, True),
    ("compare-in_dims", lambda m, x, y: m.lt(x, y), (X[0], X[:, 0]), (None, 0), True),
    ("compare-0d-promotion", lambda m, x, y: x[0, 0] < y, (X, X[:, 0].astype(np.float32)), 0, "loop"),
    # (torch 2.13 compares the batched 0-d float64 operand in float64; each example compares in float32)
    ("compare-inplace", lambda m, x, y: x.clone().gt_(y), (X, X[:, 0]), 0, True),
    ("logical", lambda m, x, k: (m.logical_and(x, k), m.logical_or(k, x[0]), m.logical_xor(x, k[0]),
                                 m.logical_not(k)), (X, M), 0, True),
    # sorting, selections
    ("sort", lambda m, x: tuple(m.sort(x, 1, descending=True)), (TIES,), 0, True),
    ("sort-stable-in_dims", lambda m, x: tuple(m.sort(x, dim=0, stable=True)), (np.round(XT),), 1, True),
    ("argsort", lambda m, x: m.argsort(x), (X,), 0, True),
    ("msort", lambda m, x: m.msort(x), (X,), 0, True),
    ("topk", lambda m, x: tuple(m.topk(x, 2, 0)), (X,), 0, True),
    ("kthvalue", lambda m, x: tuple(m.kthvalue(x, 2, -1, keepdim=True)), (X,), 0, True),
    ("median-dim", lambda m, x: tuple(m.median(x, 0)), (X,), 0, True),
    ("nanmedian-dim", lambda m, x: tuple(m.nanmedian(x, 1)), (X,), 0, True),
    ("mode", lambda m, x: tuple(m.mode(x, 1)), (TIES,), 0, True),
    ("max-dim", lambda m, x: tuple(m.max(x, 1, keepdim=True)), (X,), 0, True),
    ("min-dim-in_dims", lambda m, x: tuple(x.min(0)), (XT,), 1, True),
    ("cummax", lambda m, x: tuple(m.cummax(x, 0)), (TIES,), 0, True),
    ("cummin", lambda m, x: tuple(m.cummin(x, 1)), (TIES,), 0, True),
    ("sort-0d", lambda m, x: tuple(m.sort(x)), (X[:, 0, 0],), 0, True),
    ("max-all", lambda m, x: m.max(x), (X,), 0, True),
    ("min-all", lambda m, x: x.min(), (XT,), 1, True),
    ("median-all", lambda m, x: m.median(x), (TIES,), 0, True),
    ("nanmedian-all", lambda m, x: m.nanmedian(x), (X,), 0, True),
    ("any-all", lambda m, x: (x.any(), m.all(x, dim=(0, 1), keepdim=True), (x * 0).any(-1)),
     (np.where(M, X, 0.0),), 0, True),
    ("argmax-argmin", lambda m, x: (x.argmax(), x.argmax(1), m.argmin(x, -1, keepdim=True), x[0, 0].argmax()),
     (TIES,), 0, True),
    ("argmax-keepdim-all", lambda m, x: m.argmax(x, keepdim=True), (X,), 0, "loop"),
    # (torch 2.13's rule returns shape [1] per example here, argmax(x, keepdim=True) alone [1, 1])
    ("count_nonzero", lambda m, x: (m.count_nonzero(x), m.count_nonzero(x, dim=(0, -1))), (np.where(M, X, 0.0),),
     0, True),
    ("trace", lambda m, x: m.trace(x), (X,), 0, True),
    ("dist", lambda m, x, y: m.dist(x, y, 3), (X, X[:, 0]), 0, True),
    ("dist-one-batched", lambda m, x: m.dist(x, _t(m, X[1])), (X,), 0, True),
    ("diag_embed", lambda m, x: m.diag_embed(x, 1, 0, 2), (X,), 0, True),
    ("diagflat", lambda m, x: m.diagflat(x), (X[:, 0],), 0, True),
    ("trace-int", lambda m, x: m.trace(x), (I,), 0, True),
    ("roll-flat", lambda m, x: m.roll(x, 3), (X,), 0, True),
    ("quantile", lambda m, x: m.quantile(x, 0.3), (X,), 0, True),
    ("quantile-dim-vector-q", lambda m, x: m.quantile(x, _t(m, np.array([0.2, 0.9])), dim=1, keepdim=True),
     (X,), 0, True),
    ("nanquantile-keepdim", lambda m, x: m.nanquantile(x, _t(m, np.array([0.5, 0.1])), keepdim=True,
                                                       interpolation="midpoint"), (X,), 0, True),
    ("searchsorted-both", lambda m, s, v: m.searchsorted(s, v), (SEQ, X[:, 0]), 0, True),
    ("searchsorted-values", lambda m, v: m.searchsorted(_t(m, SEQ[0]), v, right=True), (X,), 0, True),
    ("searchsorted-seq-scalar", lambda m, s: m.searchsorted(s, _t(m, np.array([0.0, 0.5]))), (SEQ,), 0, True),
    ("bucketize-values", lambda m, v: m.bucketize(v, _t(m, SEQ[0])), (X,), 0, True),
    ("bucketize-boundaries", lambda m, b: m.bucketize(_t(m, X[0]), b, out_int32=True), (SEQ,), 0, True),
    ("one_hot", lambda m, i: m.nn.functional.one_hot(i, 4), (IV,), 0, True),
]

# what PyTorch refuses under vmap: the same exception type
REFUSED = [
    ("masked_select-mask", lambda m, k: m.masked_select(_t(m, X[0]), k), (M,), 0),
    ("one_hot-no-classes", lambda m, i: m.nn.functional.one_hot(i), (IV,), 0),
    ("scatter_-unbatched-self", lambda m, i: _t(m, X[0]).scatter_(0, i, 1.0), (I,), 0),
    ("index_add_-unbatched-self", lambda m, s: _t(m, X[0]).index_add_(0, _t(m, IV[0]), s), (X[:, :2],), 0),
    ("setitem-unbatched-self", lambda m, i: _set(_t(m, X[0]), i, 1.0), (IV,), 0),
    ("copy_-unbatched-self", lambda m, v: _t(m, X[0]).copy_(v), (X,), 0),
    ("unique", lambda m, i: m.unique(i), (IV,), 0),
    ("unique-dim", lambda m, i: m.unique(i, dim=0), (IV,), 0),
    ("unique_consecutive", lambda m, i: m.unique_consecutive(i), (IV,), 0),
    ("nonzero", lambda m, i: m.nonzero(i), (IV,), 0),
    ("where-one-argument", lambda m, k: m.where(k)[0], (M,), 0),
]


def _flat(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _vmap(m, f, arrays, in_dims):
    xs = [m.tensor(a) for a in arrays]
    return _flat(m.func.vmap(lambda *a: f(m, *a), in_dims=in_dims)(*xs))


def _loop(f, arrays, in_dims):
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(arrays)
    xs = [ember.tensor(a) for a in arrays]
    rows = [_flat(f(ember, *[x.select(d, b) for x, d in zip(xs, dims)])) for b in range(B)]
    return [ember.stack([r[k] for r in rows]) for k in range(len(rows[0]))]


def _same(got, ref, what):
    assert len(got) == len(ref), what
    for k, (g, r) in enumerate(zip(got, ref)):
        assert str(g.dtype) == str(r.dtype), f"{what} output {k}: dtype {g.dtype} vs {r.dtype}"
        a, b = g.detach().numpy(), r.detach().numpy()
        assert a.shape == b.shape, f"{what} output {k}: shape {a.shape} vs {b.shape}"
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=f"{what} output {k}")


@pytest.mark.parametrize("name,f,arrays,in_dims,rule", CASES, ids=[c[0] for c in CASES])
def test_vmap_matches_torch(name, f, arrays, in_dims, rule):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _vmap(ember, f, arrays, in_dims)
    drops = [str(w.message) for w in caught if "There is a performance drop" in str(w.message)]
    assert not drops, drops
    if rule == "loop":
        _same(got, _loop(f, arrays, in_dims), "vs the loop")
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = _vmap(torch, f, arrays, in_dims)
    _same(got, ref, "vs torch.func.vmap")


@pytest.mark.parametrize("name,f,arrays,in_dims", REFUSED, ids=[c[0] for c in REFUSED])
def test_vmap_refuses_as_torch(name, f, arrays, in_dims):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as texc:
            _vmap(torch, f, arrays, in_dims)
        with pytest.raises(texc.type):
            _vmap(ember, f, arrays, in_dims)


def test_gradients_through_batched_gather_and_sort():
    """grad of a vmapped gather/sort/max chain: the physical graph gives each example's gradient."""
    def f(m, x, i):
        return (m.gather(x, 1, i).sum() + m.sort(x, 0).values[0].sum() + m.max(x, 1).values.sum()
                + x[i[0], 1:].sum())
    x, i = X, I[:, :, :3]
    ge = ember.func.vmap(ember.func.grad(lambda a, b: f(ember, a, b)))(ember.tensor(x), ember.tensor(i))
    gt = torch.func.vmap(torch.func.grad(lambda a, b: f(torch, a, b)))(torch.tensor(x), torch.tensor(i))
    np.testing.assert_allclose(ge.numpy(), gt.numpy(), rtol=1e-12)


def test_nested_vmap_gather_index_batched_at_both_levels():
    x = RNG.standard_normal((2, B, 4, 5))
    i = RNG.integers(0, 4, (2, B, 2, 5))
    got = ember.func.vmap(ember.func.vmap(lambda a, b: ember.gather(a, 0, b)))(ember.tensor(x), ember.tensor(i))
    ref = torch.func.vmap(torch.func.vmap(lambda a, b: torch.gather(a, 0, b)))(torch.tensor(x), torch.tensor(i))
    np.testing.assert_array_equal(got.numpy(), ref.numpy())


@pytest.mark.parametrize("name,f,arrays,in_dims", [
    ("slice_scatter", lambda m, x, s: m.slice_scatter(x, s, 1, 0, 4, 2), (X, X[:, :, :2]), 0),
    ("slice_scatter-default-dim", lambda m, x, s: m.slice_scatter(x, s, start=1, end=3), (X, X[:, :2]), 0),
    ("select_scatter", lambda m, s: m.select_scatter(_t(m, X[0]), s, 0, -1), (X[:, 0],), 0),
    ("diagonal_scatter", lambda m, x, s: m.diagonal_scatter(x, s, 1), (X, X[:, 0, :4]), 0),
], ids=lambda v: v if isinstance(v, str) else "")
def test_view_scatters(name, f, arrays, in_dims):
    test_vmap_matches_torch(name, f, arrays, in_dims, True)


X2 = RNG.standard_normal((2, B, 4, 5))
I2 = RNG.integers(0, 4, (2, B, 2))


def _set_copy(x, index, value):
    x = x.clone()
    x[index] = value
    return x


@pytest.mark.parametrize("name,f,arrays,outer,inner", [
    ("getitem", lambda m, x, i: x[i], (X2, I2), (0, 0), (0, 0)),
    ("getitem-index-outer-only", lambda m, x, i: x[:, i], (X2, IV), (0, None), (0, 0)),
    ("setitem-value", lambda m, x, i, v: _set_copy(x, i, v), (X2, I2, X2[:, :, :2]), (0, 0, 0), (0, 0, 0)),
    ("index_select", lambda m, x, i: m.index_select(x, 1, i), (X2, IV), (0, None), (0, 0)),
    ("index_put-accumulate", lambda m, x, i: m.index_put(x, (i,), x[:2] * 2, accumulate=True), (X2, I2), (0, 0),
     (0, 0)),
    ("take", lambda m, x, i: m.take(x, i), (X2, I2), (0, 0), (0, 0)),
    ("sort-median", lambda m, x, i: m.sort(x, 1)[1] + m.median(x).to(m.int64), (X2, I2), (0, 0), (0, 0)),
    ("where-masked_fill", lambda m, x, i, k: m.where(k, x, i[0] * 1.0).masked_fill(k[0], 0.0),
     (X2, I2, RNG.random((2, B, 4, 5)) > 0.5), (0, 0, 0), (0, 0, 0)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_nested_vmap(name, f, arrays, outer, inner):
    def run(m):
        xs = [m.tensor(a) for a in arrays]
        return m.func.vmap(m.func.vmap(lambda *a: f(m, *a), in_dims=inner), in_dims=outer)(*xs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = run(ember)
    assert not [w for w in caught if "There is a performance drop" in str(w.message)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = run(torch)
    _same([got], [ref], "nested vs torch.func.vmap")


def test_gradients_through_batched_writes():
    """vmap(grad) through scatter_add, index_put, x[i] = v, take, masked_fill, where and median(): each example's
    gradient, as torch.func's."""
    def f(m, x, i, v):
        y = m.scatter_add(x, 0, i[:, None].expand(2, 5), v) + m.index_put(x, (i,), v * 3, accumulate=True)
        y = y.clone()
        y[i, 1:] = v[:, 1:] ** 2
        y = m.where(y > 0, y, y * 0.5).masked_fill(x < -1.5, 0.0)
        return (y ** 2).sum() + m.take(x, i).sum() + m.median(x * v.sum())
    args = (X, IV, X[:, :2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (the comparisons fall back; torch's take/put too)
        ge = ember.func.vmap(ember.func.grad(lambda *a: f(ember, *a), argnums=(0, 2)))(*[ember.tensor(a) for a in args])
        gt = torch.func.vmap(torch.func.grad(lambda *a: f(torch, *a), argnums=(0, 2)))(*[torch.tensor(a) for a in args])
    for a, b in zip(ge, gt):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("op", ["max", "min", "median", "nanmedian"])
def test_reductions_over_every_dim_keep_each_examples_gradient(op):
    """max()/min()/median() share the gradient evenly among ties (all NaNs for a NaN result): under vmap too, as
    each example's torch.func.grad (torch 2.13's own vmap gives one index's gradient here)."""
    x = np.array([[1., 3., 2., 3., 2.], [1., 2., 2., 3., 3.], [np.nan, 1, np.nan, 0, 1]])
    got = ember.func.vmap(ember.func.grad(getattr(ember, op)))(ember.tensor(x))
    ref = torch.stack([torch.func.grad(getattr(torch, op))(torch.tensor(r)) for r in x])
    np.testing.assert_array_equal(got.numpy(), ref.numpy())
