"""Complex inputs through the reduction, sorting and indexing ops, beyond tests/test_complex_sweep.py: the exact
messages of PyTorch's refusals (the sweep compares exception types only), complex64 values and result dtypes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import ember  # noqa: E402

_Z = np.random.default_rng(0).standard_normal((3, 4)) + 1j * np.random.default_rng(1).standard_normal((3, 4))

REFUSED = {
    "sort": lambda t, z: t.sort(z),
    "argsort_stable": lambda t, z: t.argsort(z, stable=True),
    "msort": lambda t, z: t.msort(z),
    "topk": lambda t, z: t.topk(z, 2),
    "kthvalue": lambda t, z: t.kthvalue(z, 1),
    "median": lambda t, z: t.median(z),
    "median_dim": lambda t, z: t.median(z, 0),
    "nanmedian_dim": lambda t, z: t.nanmedian(z, 0),
    "mode": lambda t, z: t.mode(z),
    "unique": lambda t, z: t.unique(z),
    "unique_dim": lambda t, z: t.unique(z, dim=0),
    "unique_consecutive": lambda t, z: t.unique_consecutive(z),
    "histc": lambda t, z: t.histc(z),
    "histc_range": lambda t, z: t.histc(z, 10, 0, 1),
    "searchsorted": lambda t, z: t.searchsorted(z[0], z),
    "searchsorted_real_bounds": lambda t, z: t.searchsorted(z[0].real.contiguous(), z),
    "searchsorted_scalar": lambda t, z: t.searchsorted(z[0], 1.0),
    "bucketize": lambda t, z: t.bucketize(z, z[0]),
    "max": lambda t, z: t.max(z),
    "max_dim": lambda t, z: t.max(z, 0),
    "min_dim": lambda t, z: t.min(z, 1),
    "amax": lambda t, z: t.amax(z),
    "amin": lambda t, z: t.amin(z, 0),
    "aminmax": lambda t, z: t.aminmax(z),
    "argmax": lambda t, z: t.argmax(z),
    "argmin": lambda t, z: t.argmin(z, 0),
    "cummax": lambda t, z: t.cummax(z, 0),
    "cummin": lambda t, z: t.cummin(z, 0),
    "isin": lambda t, z: t.isin(z, z),
    "isin_real_elements": lambda t, z: t.isin(z.real, z),
    "nansum": lambda t, z: t.nansum(z),
    "nanmean": lambda t, z: t.nanmean(z),
    "le": lambda t, z: t.le(z, 1.0),
    "lt_real_tensor": lambda t, z: t.lt(z.real, z),
    "vector_norm_real_dtype": lambda t, z: t.linalg.vector_norm(z, dtype=t.float64),
    "matrix_norm_real_dtype": lambda t, z: t.linalg.matrix_norm(z, dtype=t.float64),
    "scatter_reduce_amax": lambda t, z: z.scatter_reduce(0, t.tensor([[0]]), z, "amax"),
    "index_reduce_amin": lambda t, z: z.index_reduce(0, t.tensor([0, 1, 0]), z, "amin"),
    "index_reduce_exclude_self": lambda t, z: z.index_reduce(0, t.tensor([0, 1, 0]), z, "prod", include_self=False),
    "masked_fill_complex_into_real": lambda t, z: z.real.masked_fill(z.real > 0, 1 + 2j),
    "index_fill_complex_into_real": lambda t, z: z.real.contiguous().index_fill(0, t.tensor([0]), 1 + 2j),
    "scatter_reduce_grad": lambda t, z: z.requires_grad_().scatter_reduce(0, t.tensor([[0]]), z, "sum"),
}


def _run(m, fn, dtype):
    z = m.tensor(_Z.astype(dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(m, z)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusal_message(name, dtype):
    """ember refuses complex inputs where PyTorch does, with its exception type and message."""
    with pytest.raises(Exception) as t:
        _run(torch, REFUSED[name], dtype)
    with pytest.raises(type(t.value)) as e:
        _run(ember, REFUSED[name], dtype)
    assert str(e.value) == str(t.value)


COMPUTED = {
    "mean": lambda t, z: t.mean(z, 1),
    "prod": lambda t, z: t.prod(z, 1),
    "cumprod": lambda t, z: t.cumprod(z, 0),
    "var": lambda t, z: t.var(z, 1),
    "std": lambda t, z: t.std(z),
    "var_mean": lambda t, z: t.var_mean(z, 0, correction=0)[0],
    "vector_norm_2": lambda t, z: t.linalg.vector_norm(z),
    "vector_norm_1": lambda t, z: t.linalg.vector_norm(z, 1, 0),
    "vector_norm_inf": lambda t, z: t.linalg.vector_norm(z, float("inf")),
    "vector_norm_3": lambda t, z: t.linalg.vector_norm(z, 3, 1),
    "vector_norm_complex_dtype": lambda t, z: t.linalg.vector_norm(z, dtype=t.complex128),
    "matrix_norm_1": lambda t, z: t.linalg.matrix_norm(z, 1),
    "dist": lambda t, z: t.dist(z, z[0]),
    "logsumexp": lambda t, z: t.logsumexp(z, 1),
    "logcumsumexp": lambda t, z: t.logcumsumexp(z, 1),
    "cov": lambda t, z: t.cov(z),
    "corrcoef": lambda t, z: t.corrcoef(z),
    "masked_fill": lambda t, z: z.masked_fill(z.real > 0, 1 + 2j),
    "index_fill": lambda t, z: z.index_fill(0, t.tensor([0, 2]), 2 - 1j),
    "scatter_value": lambda t, z: z.scatter(0, t.tensor([[0, 1]]), 1 + 2j),
    "scatter_reduce_mean": lambda t, z: z.scatter_reduce(0, t.tensor([[0, 1]]), z, "mean"),
    "index_reduce_prod": lambda t, z: z.index_reduce(0, t.tensor([0, 1, 0]), z, "prod"),
    "bincount_weights": lambda t, z: t.bincount(t.tensor([0, 1, 1]), z[0, :3]),
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", sorted(COMPUTED))
def test_complex_values(name, dtype):
    """Values and dtypes (complex64 computes in complex64, as PyTorch: equal within a few ulps)."""
    t = _run(torch, COMPUTED[name], dtype)
    e = _run(ember, COMPUTED[name], dtype)
    assert str(e.dtype) == str(t.dtype)
    tol = 2e-6 if dtype == np.complex64 else 1e-13
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=tol, atol=tol)
