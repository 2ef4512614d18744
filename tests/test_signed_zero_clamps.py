"""Signed zeros through relu and the clamp family with number bounds: PyTorch keeps x where it ties a bound
(relu(-0.0) is -0.0 and prints `-0.`), at every size and dtype; NumPy's maximum/minimum keep their second operand
on a tie and np.clip keeps the bound, so ember's CPU kernels put x second. (Clamps with tensor bounds are left out:
PyTorch's vectorised loop and its scalar tail break those ties differently, so its answer depends on the size.)"""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _ops(lib):
    F = lib.nn.functional
    return {
        "relu": lambda x: lib.relu(x),
        "F.relu": lambda x: F.relu(x),
        "relu_": lambda x: x.clone().relu_(),
        "clamp(min=0)": lambda x: lib.clamp(x, min=0),
        "clamp(max=0)": lambda x: lib.clamp(x, max=0),
        "clamp(min=-0.0)": lambda x: lib.clamp(x, min=-0.0),
        "clamp(-0.0, 0.0)": lambda x: lib.clamp(x, -0.0, 0.0),
        "clamp_(min=0)": lambda x: x.clone().clamp_(min=0),
        "clamp_min": lambda x: lib.clamp_min(x, 0),
        "clamp_max": lambda x: lib.clamp_max(x, 0.0),
        "hardtanh(0, 1)": lambda x: F.hardtanh(x, 0.0, 1.0),
        "hardtanh(-1, 0)": lambda x: F.hardtanh(x, -1.0, 0.0),
        "relu6": lambda x: F.relu6(x),
    }


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("n", [5, 64, 1001])
@pytest.mark.parametrize("op", list(_ops(ember)))
def test_ties_keep_x_as_pytorch(op, n, dtype):
    pattern = np.zeros(n)
    pattern[::2] = -0.0
    pattern[1::5] = -1.5
    pattern[3::7] = 2.0
    pattern[4::11] = np.nan
    want = _ops(torch)[op](torch.tensor(pattern).to(getattr(torch, dtype))).float().numpy()
    got = _ops(ember)[op](ember.tensor(pattern).to(getattr(ember, dtype))).float().numpy()
    np.testing.assert_array_equal(got, want)   # (NaN where NaN)
    finite = ~np.isnan(want)   # (a NaN's sign is not compared: PyTorch's bfloat16 conversion sets it)
    assert np.array_equal(np.signbit(got[finite]), np.signbit(want[finite])), op
