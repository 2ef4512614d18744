"""Small batched matrix products bit for bit against torch 2.13.

PyTorch's CPU bmm/baddbmm (``bmm_out_or_baddbmm_`` in aten/src/ATen/native/LinearAlgebra.cpp) skip BLAS when
contraction * rows * cols < 400 and sum each element in a plain loop (``baddbmm_cpu_kernel``): ``acc = 0;
acc += a[i, k] * b[k, j]`` in the op-math type, then ``alpha * acc`` or ``beta * self + alpha * acc``.
matmul reaches that kernel for the batched operands it does not fold into an mm, and so do einsum's batched
contractions and the backward of all of these. ember repeats the loop (ember/devices/cpu/linalg.py,
``_bmm_sums``); larger products and 2-d mm/addmm stay with BLAS, as PyTorch's.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

FLOATS = ("float32", "float64")


def _bits(t) -> np.ndarray:
    t = t.detach()
    if str(t.dtype) in ("torch.bfloat16", "torch.float16"):   # (ember's dtypes print as torch's)
        t = t.float()
    return np.asarray(t.numpy()).view(np.uint8)


def _same(e, t, what="") -> None:
    assert tuple(e.shape) == tuple(t.shape), what
    assert np.array_equal(_bits(e), _bits(t)), what


def _shapes(rng, n: int, small: bool = True):
    """(B, n, k, p) with n * k * p below (or at least) PyTorch's 400."""
    out = []
    while len(out) < n:
        s = tuple(int(v) for v in rng.integers(1, 12, 4))
        if (s[1] * s[2] * s[3] < 400) == small:
            out.append(s)
    return out


def _pair(x: np.ndarray, dtype: str, grad: bool = False):
    e = ember.tensor(x).to(getattr(ember, dtype))
    t = torch.tensor(x).to(getattr(torch, dtype))
    return e.requires_grad_(grad), t.requires_grad_(grad)


@pytest.mark.parametrize("dtype", FLOATS + ("float16", "bfloat16"))
def test_bmm_and_matmul_forward(dtype):
    rng = np.random.default_rng(0)
    for B, n, k, p in _shapes(rng, 60) + [(300, 3, 3, 3), (100, 2, 7, 5), (64, 1, 9, 1)]:   # (many: batch-inner path)
        (ea, ta), (eb, tb) = _pair(rng.standard_normal((B, n, k)), dtype), _pair(rng.standard_normal((B, k, p)), dtype)
        _same(ember.bmm(ea, eb), torch.bmm(ta, tb), ("bmm", B, n, k, p))
        _same(ember.matmul(ea, eb), torch.matmul(ta, tb), ("matmul 3-d", B, n, k, p))
        _same(ea[0] @ eb, ta[0] @ tb, ("2-d @ 3-d", B, n, k, p))   # torch does not fold it: a bmm
        _same(ea[0, 0] @ eb, ta[0, 0] @ tb, ("1-d @ 3-d", B, n, k, p))
        _same(ea.unsqueeze(0) @ eb[:1].unsqueeze(1).expand(2, 1, k, p),
              ta.unsqueeze(0) @ tb[:1].unsqueeze(1).expand(2, 1, k, p), ("broadcast 4-d", B, n, k, p))
        _same(ember.einsum("bij,bjk->bik", ea, eb), torch.einsum("bij,bjk->bik", ta, tb), ("einsum", B, n, k, p))


@pytest.mark.parametrize("dtype", FLOATS + ("float16", "bfloat16"))
def test_baddbmm_alpha_beta(dtype):
    rng = np.random.default_rng(1)
    for i, (B, n, k, p) in enumerate(_shapes(rng, 40)):
        alpha, beta = [(1, 1), (0.3, 0), (-1.7, 0.6), (2, 1), (-1, 0)][i % 5]
        c = rng.standard_normal((B, n, p))
        if beta == 0:
            c[..., 0] = np.nan   # beta == 0 ignores the input
        (ec, tc), (ea, ta), (eb, tb) = (_pair(x, dtype) for x in (c, rng.standard_normal((B, n, k)),
                                                                   rng.standard_normal((B, k, p))))
        _same(ember.baddbmm(ec, ea, eb, beta=beta, alpha=alpha), torch.baddbmm(tc, ta, tb, beta=beta, alpha=alpha),
              ("baddbmm", alpha, beta, B, n, k, p))
        # the input broadcast against the product
        _same(ember.baddbmm(ec[:1, :1], ea, eb, beta=beta, alpha=alpha),
              torch.baddbmm(tc[:1, :1], ta, tb, beta=beta, alpha=alpha), ("baddbmm broadcast", alpha, beta))


def test_signed_zero():
    """acc starts at +0, so a sum of -0 products is +0, and alpha < 0 with beta == 0 gives -0 (as torch)."""
    a = np.zeros((2, 2, 3))
    b = -np.ones((2, 3, 2))
    for dtype in FLOATS:
        (ea, ta), (eb, tb), (ec, tc) = _pair(a, dtype), _pair(b, dtype), _pair(np.ones((2, 2, 2)), dtype)
        _same(ember.bmm(ea, eb), torch.bmm(ta, tb))
        _same(ember.baddbmm(ec, ea, eb, beta=0, alpha=-1), torch.baddbmm(tc, ta, tb, beta=0, alpha=-1))


@pytest.mark.parametrize("dtype", FLOATS)
def test_backward(dtype):
    """The gradients' products are bmm's too (each the same contraction * rows * cols)."""
    rng = np.random.default_rng(2)
    for B, n, k, p in _shapes(rng, 25) + [(100, 3, 4, 2)]:
        a, b = rng.standard_normal((B, n, k)), rng.standard_normal((B, k, p))
        g = rng.standard_normal((B, n, p))
        for name, f, grads in (("bmm", lambda m, x, y: m.bmm(x, y), (True, True)),
                               ("baddbmm", lambda m, x, y: m.baddbmm(m.ones_like(x[:, :, :1]), x, y, alpha=-0.7),
                                (True, True)),
                               ("matmul 2-d @ 3-d", lambda m, x, y: m.matmul(x[0], y), (False, True)),
                               ("einsum", lambda m, x, y: m.einsum("bij,bjk->bik", x, y), (True, True))):
            if name == "einsum" and k == 1:
                continue   # torch's einsum multiplies (no bmm) over a size-1 contraction: its backward sums otherwise
            (ea, ta), (eb, tb) = _pair(a, dtype, grads[0]), _pair(b, dtype, True)
            (eg, tg) = _pair(g, dtype)
            f(ember, ea, eb).backward(eg)
            f(torch, ta, tb).backward(tg)
            if grads[0]:
                _same(ea.grad, ta.grad, (name, "grad a", B, n, k, p))
            _same(eb.grad, tb.grad, (name, "grad b", B, n, k, p))


@pytest.mark.parametrize("dtype", FLOATS)
def test_large_and_2d_stay_blas(dtype):
    """Products at or above 400 and 2-d mm/addmm keep BLAS (NumPy's matmul), as PyTorch keeps its BLAS."""
    rng = np.random.default_rng(3)
    for B, n, k, p in _shapes(rng, 5, small=False):
        a, b = rng.standard_normal((B, n, k)).astype(dtype), rng.standard_normal((B, k, p)).astype(dtype)
        assert np.array_equal(ember.bmm(ember.tensor(a), ember.tensor(b)).numpy(), np.matmul(a, b))
    a, b = rng.standard_normal((3, 4)).astype(dtype), rng.standard_normal((4, 5)).astype(dtype)
    assert np.array_equal(ember.mm(ember.tensor(a), ember.tensor(b)).numpy(), np.matmul(a, b))
    # 3-d @ 2-d: torch folds it into one mm
    a3 = rng.standard_normal((6, 3, 4)).astype(dtype)
    assert np.array_equal((ember.tensor(a3) @ ember.tensor(b)).numpy(), np.matmul(a3, b))


def test_multivariate_normal_samples_bit_exact():
    """MultivariateNormal.sample's matmul of scale_tril by the draws is a small bmm: the samples are torch's."""
    rng = np.random.default_rng(4)
    m = rng.standard_normal((3, 3))
    cov = m @ m.T + 3 * np.eye(3)
    loc = rng.standard_normal(3)
    ember.manual_seed(0)
    torch.manual_seed(0)
    e = ember.distributions.MultivariateNormal(ember.tensor(loc), covariance_matrix=ember.tensor(cov)).sample((1000,))
    t = torch.distributions.MultivariateNormal(torch.tensor(loc), covariance_matrix=torch.tensor(cov)).sample((1000,))
    _same(e, t)
