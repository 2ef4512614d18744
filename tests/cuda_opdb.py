"""The op database on device 'cuda' against the CPU: shared by tests/test_cuda.py (a real GPU, CuPy) and
tests/test_cuda_standin.py (tests/cupy_standin.py on the CPU, which checks ember's CuPy adapter, not CuPy).

Each entry runs on the CPU and on 'cuda' (inputs made on the CPU and moved with ``.to('cuda')``) for its dtypes
that both have: outputs and first derivatives (``second=True``: second derivatives too, of float64 samples) must
stay on the GPU and match the CPU's to the tolerances below; an entry that raises on the CPU must raise the same
exception type on 'cuda'. Forward mode: ``forward_mode(op)``.
"""
from __future__ import annotations

import types
import warnings

import numpy as np

import ember
from op_db import to_dtype
from parity import assert_same_run

DTYPES = ("float32", "float64", "int64", "int32", "bool")
# what a GPU's float32 may differ by (other summation orders, fused multiply-adds, its own libm)
TOL = {np.dtype(np.float32): (1e-4, 1e-5), np.dtype(np.float64): (1e-9, 1e-11)}


def to_cuda(t):
    if isinstance(t, ember.Tensor) and t.device.type == "cpu":
        d = t.detach().to("cuda")
        return d.requires_grad_() if t.requires_grad else d
    return t


class _OnCuda(types.ModuleType):
    """``ember`` as the op database's lambdas see it: creation functions make on the CPU and move."""

    def __getattr__(self, name):
        return getattr(ember, name)


ON_CUDA = _OnCuda("ember_on_cuda")
for _name in ("tensor", "as_tensor", "zeros", "ones", "full", "empty", "arange", "eye", "linspace", "randn", "rand",
              "zeros_like", "ones_like", "full_like", "empty_like", "randn_like", "rand_like", "randint"):
    setattr(ON_CUDA, _name, (lambda f: lambda *a, **k: to_cuda(f(*a, **k)))(getattr(ember, _name)))


def _outputs(res) -> list:
    return list(res) if isinstance(res, (tuple, list)) else [res]


def run(op, sample, dtype, on_cuda: bool, second: bool = False):
    """(outputs, gradients [+ second-order gradients]) or the exception the op raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xs = [ember.tensor(to_dtype(a, dtype)) for a in sample.args]
    grad = op.supports_grad and dtype in ("float32", "float64")
    if on_cuda:
        xs = [x.to("cuda") for x in xs]
    if grad:
        for x in xs:
            x.requires_grad_()
    ember.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outs = _outputs(op.op(ON_CUDA if on_cuda else ember, *xs, **sample.kwargs))
            diff = [o for o in outs if isinstance(o, ember.Tensor) and o.requires_grad and o.grad_fn is not None]
            grads = list(ember.autograd.grad([o.sum() for o in diff], xs, allow_unused=True,
                                             create_graph=second)) if diff else []
            if second and dtype == "float64":
                live = [g for g in grads if g is not None and g.requires_grad]
                if live:
                    grads += list(ember.autograd.grad([g.sum() for g in live], xs, allow_unused=True))
    except Exception as e:  # noqa: BLE001  (compared with the CPU's)
        return e
    return outs, grads


def same(got, ref, what):
    if not isinstance(ref, ember.Tensor):
        assert not isinstance(got, ember.Tensor) and got == ref, f"{what}: {got!r} != {ref!r}"
        return
    assert isinstance(got, ember.Tensor), what
    assert got.device.type == "cuda", f"{what} left the GPU ({got.device})"
    assert got.dtype == ref.dtype and tuple(got.shape) == tuple(ref.shape), \
        f"{what}: {got.dtype}{tuple(got.shape)} != {ref.dtype}{tuple(ref.shape)}"
    a, b = got.detach().cpu().numpy(), ref.detach().numpy()
    if a.dtype.kind in "fc":
        rtol, atol = TOL.get(np.dtype(a.real.dtype), (1e-4, 1e-5))
        ok = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    else:
        ok = a == b
    if not np.all(ok):
        bad = np.argwhere(~np.asarray(ok))[:3].tolist()
        raise AssertionError(f"{what}: values differ at {bad}: {a[~ok][:3]} (cuda) != {b[~ok][:3]} (cpu)")


def check_entry(op, second: bool = False, samples: int | None = None) -> None:
    """Every sample (or the first ``samples``) of an op-database entry, on 'cuda' against the CPU."""
    for k, sample in enumerate(op.sample_inputs()):
        if samples is not None and k >= samples:
            break
        for dtype in (d for d in op.dtypes if d in DTYPES):
            where = f"{op.name} [{sample.desc}, {dtype}]"
            ref = run(op, sample, dtype, on_cuda=False, second=second)
            got = run(op, sample, dtype, on_cuda=True, second=second)
            assert_same_run(got, ref, where, same, "cuda")


def forward_mode(op) -> None:
    """The first float64 sample's forward-mode tangents (all-ones) on 'cuda' against the CPU's."""
    import ember.autograd.forward_ad as fwAD
    if not op.supports_grad or "float64" not in op.dtypes:
        return
    sample = next(iter(op.sample_inputs()))
    res = []
    for on_cuda in (False, True):
        xs = [ember.tensor(to_dtype(a, "float64")) for a in sample.args]
        xs = [x.to("cuda") if on_cuda else x for x in xs]
        try:
            with warnings.catch_warnings(), fwAD.dual_level():
                warnings.simplefilter("ignore")
                duals = [fwAD.make_dual(x, ember.ones_like(x)) if x.is_floating_point() else x for x in xs]
                outs = _outputs(op.op(ON_CUDA if on_cuda else ember, *duals, **sample.kwargs))
                tans = [fwAD.unpack_dual(o).tangent if isinstance(o, ember.Tensor) else None for o in outs]
                res.append(([fwAD.unpack_dual(o).primal if isinstance(o, ember.Tensor) else o for o in outs], tans))
        except Exception as e:  # noqa: BLE001
            res.append(e)
    ref, got = res
    if isinstance(ref, Exception):
        assert isinstance(got, Exception), f"{op.name}: forward mode raised {ref!r} on the CPU only"
        return
    if isinstance(got, Exception):
        raise AssertionError(f"{op.name}: forward mode: {type(got).__name__}: {got} on cuda only") from None
    for t, r in zip(got[1], ref[1]):
        assert (t is None) == (r is None), f"{op.name}: forward-mode tangent"
        if t is not None:
            same(t, r, f"{op.name}: forward-mode tangent")


# Entries that cannot pass on 'cuda', and why (strict xfails in tests/test_cuda.py and tests/test_cuda_standin.py).
LIMITS = {
    "cast_bfloat16": "CuPy has no bfloat16",
    "linalg_eig": "no general (non-symmetric) eigensolver in CuPy or the array API standard",
    "linalg_eigvals": "no general (non-symmetric) eigensolver in CuPy or the array API standard",
    "view_dtype": "reinterpreting bits (Tensor.view(dtype)) has no common kernel yet (CuPy's ndarray.view would do)",
    "hash_tensor": "reinterpreting bits (Tensor.view(dtype)) has no common kernel yet (CuPy's ndarray.view would do)",
}


def params():
    """The op database's names, the LIMITS as strict xfails."""
    import pytest
    from op_db import OP_DB
    return [pytest.param(op.name, marks=pytest.mark.xfail(strict=True, reason=LIMITS[op.name]))
            if op.name in LIMITS else op.name for op in OP_DB]
