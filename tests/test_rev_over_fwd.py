"""Reverse mode over forward mode on every op of the op database: the gradient, with respect to the inputs, of a
weighted sum of the forward-mode tangent (what ``grad(jvp(f))``, ``jacrev(jacfwd(f))`` and a hessian by
forward-over-... compute), against PyTorch on the same inputs. The tangent's rules read the op's output and inputs;
their gradient must flow through both (tanh's tangent t * (1 - y^2) depends on x through y)."""
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
_RAW_TANGENT = ("reverse over forward: part of this op's tangent is computed outside the autograd graph, so its "
                "gradient misses that part")
NOT_YET = {name: _RAW_TANGENT for name in """batch_norm_aten cholesky_inverse det_neg fft.fft fft.fft2 fft.fftn fft.ifft
    fft.ifft2 fft.ifftn fft.ihfft fft.ihfft2 fft.ihfftn fft.rfft fft.rfft2 fft.rfftn instance_norm_aten linalg_det
    linalg_eigh linalg_householder_product linalg_solve linalg_solve_ex linalg_tensorsolve nanmean_nan nanquantile
    native_batch_norm_out native_layer_norm_out new_full nn_batch_norm nn_cosine_similarity nn_instance_norm
    nn_layer_norm norm_aten_single_value orgqr quantile tensorsolve_dims triangular_solve""".split()}


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


def _rev_over_fwd(m, op, sample):
    rng = np.random.default_rng(zlib.crc32(op.name.encode()))
    xs = [m.tensor(np.array(a)).requires_grad_() for a in sample.args]
    us = [m.tensor(rng.standard_normal(np.shape(a))) for a in sample.args]
    fwAD = m.autograd.forward_ad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fwAD.dual_level():
            duals = [fwAD.make_dual(x, u) for x, u in zip(xs, us)]
            res = op.op(m, *duals, **sample.kwargs)
            outs = list(res) if isinstance(res, tuple) else [res]
            tangents = [fwAD.unpack_dual(o).tangent for o in outs
                        if isinstance(o, m.Tensor) and o.is_floating_point()]
        total = 0
        for t in tangents:
            if t is not None and t.requires_grad:
                w = m.tensor(np.random.default_rng(1).standard_normal(tuple(t.shape)))
                total = total + (t * w).sum()
        if not isinstance(total, m.Tensor):
            return None
        gs = m.autograd.grad(total, xs, allow_unused=True)
    return [None if g is None else g.detach().numpy() for g in gs]


@pytest.mark.parametrize("op,sample", _cases())
def test_reverse_over_forward(op, sample):
    try:
        ref = _rev_over_fwd(torch, op, sample)
    except Exception:   # noqa: BLE001  (torch has no forward AD or double backward for it)
        pytest.skip("PyTorch refuses it")
    got = _rev_over_fwd(ember, op, sample)
    if ref is None:
        return
    assert got is not None, "ember's tangent does not depend on the inputs; PyTorch's does"
    for i, (g, r) in enumerate(zip(got, ref)):
        if r is None or not np.any(r):
            continue
        assert g is not None, f"input {i}: no gradient through the tangent; PyTorch's is nonzero"
        np.testing.assert_allclose(g, r, rtol=1e-6, atol=1e-8, err_msg=f"input {i}")
