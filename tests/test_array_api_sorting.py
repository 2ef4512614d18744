"""The 'sorting' family's array-API kernels (ember/devices/common/sorting.py) against the CPU's, kernel by kernel.

The op database runs the public ops on device 'strict' (tests/test_array_api_device.py); this file adds what its
samples do not reach: many ties and NaN in every dtype, slices long enough for every branch of PyTorch's C++
algorithms (partial_sort from 64 * k elements on), and a small ``limit``, past which the ties keep the stable
order (and mode takes its stable fallback). Results must equal the CPU kernel's exactly, dtype and shape included.
"""
from __future__ import annotations

import numpy as np
import pytest

array_api_strict = pytest.importorskip("array_api_strict")

from ember import devices  # noqa: E402
from ember.devices.cpu import namespace as CPU  # noqa: E402

DTYPES = ("float32", "float64", "int64", "int32", "uint8", "bool")


@pytest.fixture(scope="module")
def ns():
    return devices.register("strict", array_api_strict)


def _on(ns, x):
    return ns.backend.asarray(x) if isinstance(x, np.ndarray) else x


def _host(r):
    if isinstance(r, tuple):
        return tuple(_host(i) for i in r)
    return r.host() if hasattr(r, "host") else r


def _same(got, ref, what):
    if isinstance(ref, tuple):
        assert isinstance(got, tuple) and len(got) == len(ref), what
        for g, r in zip(got, ref):
            _same(g, r, what)
        return
    if ref is None:
        assert got is None, what
        return
    got, ref = np.asarray(got), np.asarray(ref)
    assert (got.dtype, got.shape) == (ref.dtype, ref.shape), what
    assert np.array_equal(got, ref, equal_nan=ref.dtype.kind == "f"), f"{what}: {got} != {ref}"


def _check(ns, name, *args):
    ref = getattr(CPU, name)(*args)
    got = _host(getattr(ns, name)(*(_on(ns, a) for a in args)))
    _same(got, ref, f"{name}{tuple(getattr(a, 'shape', a) for a in args)}")


def _draw(rng, shape, dtype, tied: bool):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if not tied:
        return rng.permutation(int(np.prod(shape))).reshape(shape).astype(dtype)
    x = rng.integers(-3, 4, shape).astype(dtype) if dtype != "uint8" else rng.integers(0, 4, shape).astype(dtype)
    if dtype.startswith("float"):   # NaN among the ties, and -0.0 tied with 0.0
        x = np.where(x == 1, np.nan, np.where(x == 2, -0.0, x)).astype(dtype)
    return x


@pytest.mark.parametrize("dtype", DTYPES)
def test_orders_and_unique_values_match_the_cpu(ns, dtype):
    rng = np.random.default_rng(DTYPES.index(dtype))
    for trial in range(12):
        nd = int(rng.integers(1, 4))
        shape = [int(s) for s in rng.integers(1, 4, nd)]
        d = int(rng.integers(0, nd))
        shape[d] = int(rng.choice([1, 2, 5, 17, 40, 70, 130]))
        a = _draw(rng, tuple(shape), dtype, tied=trial % 4 != 0)
        n = shape[d]
        for limit in (0, 60, 1 << 16):
            for descending in (False, True):
                for stable in (False, True):
                    _check(ns, "sort_indices", a, d, descending, stable, limit)
            _check(ns, "mode_indices", a, d, limit)
            if dtype == "bool":
                continue
            for k in sorted({0, 1, min(3, n), n}):
                for largest in (True, False):
                    for sorted_ in (True, False):
                        _check(ns, "topk_indices", a, k, d, largest, sorted_, limit)
            for k in sorted({1, (n + 1) // 2, n}):
                _check(ns, "kthvalue_indices", a, k, d, limit)
        if dtype != "bool":
            for ignore_nan in (False, True):
                _check(ns, "median_indices", a, d, ignore_nan)
        _check(ns, "unique_values", a)
        _check(ns, "unique_runs", a, None)
        _check(ns, "unique_runs", a, d)
        if not (dtype.startswith("float") and np.isnan(a).any()):   # NaN slices: NumPy's quicksort orders them
            _check(ns, "unique_slices", a, d)


def test_counts_searches_and_quantile_positions_match_the_cpu(ns):
    rng = np.random.default_rng(7)
    for _ in range(20):
        for dtype in ("int64", "int32", "uint8"):
            x = rng.integers(0, 9, int(rng.integers(0, 12))).astype(dtype)
            minlength = int(rng.integers(0, 12))
            _check(ns, "bin_counts", x, None, minlength)
            for wdtype in ("float32", "float64", "int64"):
                _check(ns, "bin_counts", x, (rng.standard_normal(x.shape[0]) * 3).astype(wdtype), minlength)
        for dtype in ("float32", "float64"):
            x = (rng.standard_normal(int(rng.integers(0, 30))) * 2).astype(dtype)
            if x.size:
                x[rng.integers(0, x.size)] = rng.choice([np.nan, np.inf, -np.inf, 0.5])
            lo = float(rng.choice([-1, -0.3, 0, 0.1]))
            _check(ns, "histc_counts", x, int(rng.integers(1, 9)), lo, lo + float(rng.choice([0.7, 1, 2.5, 1e-3])))
            ranks = np.concatenate([np.sort(rng.standard_normal(9) * 5), [0.5, 1.5, 2.5]]).astype(dtype)
            for interpolation in ("linear", "lower", "higher", "midpoint", "nearest"):
                _check(ns, "quantile_positions", ranks, interpolation)
        for bdtype in ("float32", "float64", "int64", "int32"):
            for vdtype in ("float32", "float64", "int64"):
                nb = int(rng.integers(0, 8))
                b = np.sort(rng.integers(-4, 5, nb) * 0.5).astype(bdtype)
                if bdtype.startswith("float") and nb and rng.integers(0, 3) == 0:
                    b[-1] = np.nan
                shape = tuple(int(s) for s in rng.integers(0, 4, int(rng.integers(0, 3))))
                v = np.asarray(rng.integers(-5, 6, shape) * 0.5).astype(vdtype)
                if vdtype.startswith("float") and v.size:
                    v.reshape(-1)[0] = np.nan
                for right in (False, True):
                    _check(ns, "binary_search", b, v, right, None, bool(rng.integers(0, 2)))
                    if nb:
                        _check(ns, "binary_search", b, v, right, rng.permutation(nb).astype(np.int64), False)
                b2 = np.sort(rng.integers(-4, 5, (2, 3, nb)) * 0.5, axis=-1).astype(bdtype)
                v2 = (rng.integers(-5, 6, (2, 3, 4)) * 0.5).astype(vdtype)
                _check(ns, "binary_search", b2, v2, False, None, False)
                _check(ns, "binary_search", b2, v2, True, np.argsort(b2, axis=-1, kind="stable").astype(np.int64),
                       True)
