"""Reverse mode over forward mode on every op of the op database: the gradient, with respect to the inputs, of a
weighted sum of the forward-mode tangent (what ``grad(jvp(f))``, ``jacrev(jacfwd(f))`` and a hessian by
forward-over-... compute), against PyTorch on the same inputs. The tangent's rules read the op's output and inputs;
their gradient must flow through both (tanh's tangent t * (1 - y^2) depends on x through y). Where PyTorch's answer
is wrong (TORCH_WRONG) or PyTorch refuses, ember's is checked against central differences of its own tangent.
First sample of each op by default; every sample with EMBER_SLOW=1."""
from __future__ import annotations

import os
import sys
import warnings
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import ember  # noqa: E402
from op_db import OP_DB  # noqa: E402

torch = pytest.importorskip("torch")
SLOW = os.environ.get("EMBER_SLOW") == "1"

# Ops whose tangent rules still compute part of the tangent outside the graph (raw arrays, or a node of their own
# whose forward-mode tangent is not recorded), so reverse over forward misses that part: to fix, op by op.
NOT_YET: dict = {}

# Ops whose reverse over forward PyTorch 2.13 gets wrong: name -> (why, the sample indices, or None for all). For
# these ember is compared with central differences of its own tangent (whose values tests/test_ops.py::test_fwd_ad
# checks against central differences of the op), and PyTorch's answer on the listed samples (on the first one for
# None) must differ from them (an entry whose PyTorch agrees must go). Samples past the first run with EMBER_SLOW=1.
_NONDIFF = ("PyTorch's tangent formula reads {}, outputs it marks non-differentiable, so its gradient misses how they "
            "depend on the input")
_LU = _NONDIFF.format("the LU factorization (LU, pivots)"), None
_STATS = _NONDIFF.format("the saved mean and rstd/invstd"), None
_TRIANGLE = ("PyTorch's first-order tangent uses the whole tangent of the triangular factor, though the op reads only "
             "its triangle (ember's tangent is the op's derivative), so the two tangents differ"), None
_CUMPROD_ZEROS = "PyTorch's gradient is NaN where the input has zeros", (7, 8, 9)
TORCH_WRONG = {
    **dict.fromkeys(("linalg_det", "det_neg"), _LU),
    **dict.fromkeys(("linalg_solve", "linalg_solve_ex", "linalg_tensorsolve", "tensorsolve_dims"), _LU),
    **dict.fromkeys(("nn_layer_norm", "native_layer_norm_out", "nn_batch_norm", "batch_norm_aten",
                     "native_batch_norm_out", "nn_instance_norm", "instance_norm_aten", "norm_aten_single_value"),
                    _STATS),
    **dict.fromkeys(("triangular_solve", "cholesky_inverse"), _TRIANGLE),
    "linalg_eigh": ("PyTorch's gradient of the eigenvectors' tangent is NaN", None),
    **dict.fromkeys(("linalg_householder_product", "orgqr"),
                    ("PyTorch's gradient differs from central differences of the tangent (measured; the cause inside "
                     "its householder_product_jvp not traced)", None)),
    **dict.fromkeys(("cumprod", "cumprod_"), _CUMPROD_ZEROS),
    "nn_mish": ("PyTorch's gradient is NaN for large inputs (sample 'big')", (6,)),
}


# Samples where central differences of the tangent mean nothing (PyTorch refuses them, so only they could check
# ember): name -> (why, sample indices)
NO_CENTRAL = {"vector_norm_inf": ("ties of the largest |x|: the tangent jumps there", (10, 11, 12))}


def _index(op, sample) -> int:
    return next(k for k, s in enumerate(op.sample_inputs()) if s is sample)


def _torch_wrong(op, sample) -> tuple[bool, bool]:
    """(compare with central differences, PyTorch must differ) for this sample."""
    if op.name not in TORCH_WRONG:
        return False, False
    k = _index(op, sample)
    which = TORCH_WRONG[op.name][1]
    if which is None:
        return True, k == 0
    return k in which, k in which


def _cases():
    out = []
    for op in OP_DB:
        if not (op.supports_fwd and op.supports_grad and op.supports_gradgrad) or "float64" not in op.dtypes:
            continue
        for k, s in enumerate(op.sample_inputs()):
            if SLOW or k < 1:
                marks = [pytest.mark.xfail(strict=not SLOW, reason=NOT_YET[op.name])] if op.name in NOT_YET else []
                out.append(pytest.param(op, s, id=f"{op.name}-{s.desc}", marks=marks))
    return out


def _tangents(m, op, sample, xs):
    """The tangents of the op's floating outputs at ``xs`` (tensors or arrays) along the test's directions."""
    rng = np.random.default_rng(zlib.crc32(op.name.encode()))
    us = [m.tensor(rng.standard_normal(np.shape(a))) for a in sample.args]
    fwAD = m.autograd.forward_ad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fwAD.dual_level():
            duals = [fwAD.make_dual(x if isinstance(x, m.Tensor) else m.tensor(x), u) for x, u in zip(xs, us)]
            res = op.op(m, *duals, **sample.kwargs)
            outs = list(res) if isinstance(res, tuple) else [res]
            return [fwAD.unpack_dual(o).tangent for o in outs if isinstance(o, m.Tensor) and o.is_floating_point()]


def _weighted(m, tangents):
    total = 0
    for t in tangents:
        if t is not None:
            w = m.tensor(np.random.default_rng(1).standard_normal(tuple(t.shape)))
            total = total + (t * w).sum()
    return total


def _rev_over_fwd(m, op, sample):
    xs = [m.tensor(np.array(a)).requires_grad_() for a in sample.args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        total = _weighted(m, [t for t in _tangents(m, op, sample, xs) if t is not None and t.requires_grad])
        if not isinstance(total, m.Tensor):
            return None
        gs = m.autograd.grad(total, xs, allow_unused=True)
    return [None if g is None else g.detach().numpy() for g in gs]


def _central_differences(op, sample, h=1e-6):
    """d/dx of the weighted tangent sum, by central differences of ember's tangent."""
    def value(xs):
        total = _weighted(ember, _tangents(ember, op, sample, xs))
        return float(total) if isinstance(total, ember.Tensor) else 0.0
    x0 = [np.array(a, dtype=np.float64) for a in sample.args]
    out = []
    for i, x in enumerate(x0):
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            up, down = [y.copy() for y in x0], [y.copy() for y in x0]
            up[i][idx] += h
            down[i][idx] -= h
            g[idx] = (value(up) - value(down)) / (2 * h)
        out.append(g)
    return out


@pytest.mark.parametrize("op,sample", _cases())
def test_reverse_over_forward(op, sample):
    numeric, differs = _torch_wrong(op, sample)
    try:
        ref = _rev_over_fwd(torch, op, sample)
    except Exception:   # noqa: BLE001  (torch has no forward AD or double backward for it)
        # ember's answer, where it gives one, is checked against central differences all the same
        ref, numeric, differs = None, True, False
        if op.name in NO_CENTRAL and _index(op, sample) in NO_CENTRAL[op.name][1]:
            pytest.skip(f"PyTorch refuses it; no central differences: {NO_CENTRAL[op.name][0]}")
        try:
            got = _rev_over_fwd(ember, op, sample)
        except Exception:   # noqa: BLE001
            pytest.skip("PyTorch and ember refuse it")
    else:
        got = _rev_over_fwd(ember, op, sample)
    if numeric:
        num = _central_differences(op, sample)
        scale = max([1.0] + [float(np.abs(n).max()) for n in num if n.size])
        if differs:
            assert ref is None or any(r is not None and not np.allclose(r, n, rtol=1e-5, atol=1e-6 * scale)
                                      for r, n in zip(ref, num)), "PyTorch agrees now: remove the TORCH_WRONG entry"
        for i, n in enumerate(num):
            g = np.zeros_like(n) if got is None or got[i] is None else got[i]
            np.testing.assert_allclose(g, n, rtol=1e-5, atol=1e-6 * scale, err_msg=f"input {i} vs central differences")
        return
    if ref is None:
        return
    if got is None:
        # PyTorch's tangent may be recorded though it does not depend on the inputs (a zero tangent multiplied
        # by a primal): then its gradient is zero (up to rounding), as ember's absent one
        for i, r in enumerate(ref):
            if r is not None:
                np.testing.assert_allclose(r, 0.0, atol=1e-8, err_msg=f"input {i}: ember's tangent does not depend "
                                           "on the inputs; PyTorch's does")
        return
    for i, (g, r) in enumerate(zip(got, ref)):
        if r is None or not np.any(r):
            continue
        assert g is not None, f"input {i}: no gradient through the tangent; PyTorch's is nonzero"
        np.testing.assert_allclose(g, r, rtol=1e-6, atol=1e-8, err_msg=f"input {i}")


# Compositions whose input's tangent depends on the inputs (the op database's samples feed dual inputs directly, so
# their tangents are constants there): a tangent copied or clamped off the graph loses that dependence
COMPOSED = {
    "gaussian_nll_loss(var=exp(v))": (lambda m, a, b, v: m.nn.functional.gaussian_nll_loss(a, b, v.exp()),
                                      ((3, 4), (3, 4), (3, 4))),
    "cosine_similarity(tanh(a), b)": (lambda m, a, b: m.nn.functional.cosine_similarity(a.tanh(), b),
                                      ((3, 4), (3, 4))),
    # the *_copy ops copy their view's tangent
    "view_copy(tanh(a))": (lambda m, a: m.view_copy(a.tanh(), (12,)), ((3, 4),)),
    "unsafe_split(tanh(a))": (lambda m, a: m.unsafe_split(a.tanh(), 2, 1), ((3, 4),)),
    # slice_inverse's tangent outside the slice comes from src's tangent
    "slice_inverse(tanh(a))": (lambda m, a: (lambda b: m.slice_inverse(b[:, 1:3], b, 1, 1, 3))(a.tanh()), ((3, 4),)),
    # polar's tangent for abs may be negative
    "polar(exp(a), b)": (lambda m, a, b: m.view_as_real(m.polar(a.exp(), b)), ((3, 4), (3, 4))),
}


@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_composed(name):
    from op_db import Sample
    fn, shapes = COMPOSED[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    op = type("Op", (), {"name": name, "op": staticmethod(fn)})
    sample = Sample(tuple(rng.standard_normal(s) for s in shapes), {})
    got, ref = _rev_over_fwd(ember, op, sample), _rev_over_fwd(torch, op, sample)
    assert got is not None
    for i, (g, r) in enumerate(zip(got, ref)):
        np.testing.assert_allclose(g, r, rtol=1e-6, atol=1e-8, err_msg=f"input {i}")
