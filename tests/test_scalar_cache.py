"""Tensor OP Python float: the number goes to NumPy as a cached 0-d array of the tensor's dtype (a speed-up,
ops/elementwise.py ``_WEAK``); the results must stay PyTorch's bit for bit, cached or not."""
import math
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(7)
SCALARS = ([float(v) for v in _rng.standard_normal(60) * 10.0 ** _rng.integers(-44, 39, 60)]
           + [1.01, 0.1, -2.5, 0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 1e-45, 3.4e38, 1e39, -1e39,
              5e-324, 1e300, 16777217.0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_arithmetic_with_python_floats_matches_torch_bitwise(dtype):
    v = (_rng.standard_normal(64) * 10.0 ** _rng.integers(-30, 30, 64)).astype(dtype)
    v[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40]
    e, t = ember.tensor(v), torch.tensor(v)
    for _ in range(2):   # the second round reads the cache
        for s in SCALARS:
            for name, f in (("mul", lambda a: a * s), ("rmul", lambda a: s * a), ("add", lambda a: a + s),
                            ("radd", lambda a: s + a), ("sub", lambda a: a - s)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")   # (NumPy's overflow warnings: ember lets them through)
                    got = f(e).numpy()
                want = f(t).numpy()
                ok = ~np.isnan(want)   # (NaN's sign bit differs between NumPy's and torch's kernels, cache or not)
                assert got.dtype == want.dtype and np.array_equal(np.isnan(got), ~ok), (dtype, name, s)
                assert got[ok].tobytes() == want[ok].tobytes(), (dtype, name, s)


def test_gradient_through_cached_scalars_matches_torch():
    for lib in (ember, torch):
        x = lib.tensor([0.3, -1.7, 2.2], requires_grad=True)
        y = ((x * 1.37 + 0.25) * 0.5 - 0.125).sum()
        y.backward()
        if lib is torch:
            assert ember_grad.tobytes() == x.grad.numpy().tobytes()
        ember_grad = x.grad.numpy()
