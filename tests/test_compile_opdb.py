"""ember.compile over the op database: every entry's programs compiled vs eager, forward values and gradients
bit-identical, on the trace call, a replay, and a replay with other values of the same shapes.

Three sweeps: each sample in its own dtype (mostly float64), the same samples made complex128 (op_db.complex_args,
as tests/test_complex_sweep.py makes them), and in bfloat16 (every entry that runs in float32, as
tests/test_ops.py::test_forward_bf16 does). Where ember raises, compiled must raise the same error.
"""
from __future__ import annotations

import os
import sys
from collections import Counter

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from op_db import OP_DB, complex_args, to_dtype  # noqa: E402
from op_db_bf16 import BF16_SKIP  # noqa: E402

import ember  # noqa: E402
from ember.compiler import _EAGER  # noqa: E402

N_SAMPLES = 2
N_SAMPLES_OTHER = 2   # complex128 and bfloat16 sweeps (run time: about 32 s on one core)
REPORT = Counter()

# entries whose compiled programs differ from eager: {op name: reason} (strict xfails)
COMPLEX_DIFFERS: dict[str, str] = {}
BF16_DIFFERS: dict[str, str] = {}


def _flat(x):
    if isinstance(x, ember.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _flat(v)]
    return []


def _run(fn, arrays, grad, upstream):
    ember.manual_seed(0)
    ts = [ember.tensor(a, requires_grad=grad) for a in arrays]
    try:
        out = fn(*ts)
    except Exception as e:   # noqa: BLE001  (the same error is expected from both)
        return ("error", type(e).__name__, str(e)), None
    outs = _flat(out)
    vals = [o._data.copy() for o in outs]
    grads = None
    if grad:
        roots = [(o, u) for o, u in zip(outs, upstream)
                 if o.requires_grad and (o.dtype.is_floating_point or o.dtype.is_complex)]
        if roots:
            try:
                ember.autograd.backward([o for o, _ in roots], [ember.tensor(u.astype(o._data.dtype).reshape(
                    o.shape)) for o, u in roots])
                grads = [None if t.grad is None else t.grad._data.copy() for t in ts]
            except Exception as e:   # noqa: BLE001
                grads = ("error", type(e).__name__, str(e))
    return vals, grads


def _same(a, b) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    if a is None or b is None:
        return a is b
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x is None or y is None:
            if x is not y:
                return False
            continue
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            return False
    return True


def _perturbed(a: np.ndarray, rng) -> np.ndarray:
    """Other values of the same shape; floating and complex inputs keep their dtype (a bfloat16 sum would be
    float64). bfloat16 moves by more: a relative 1e-3 is under half its ulp and would mostly round back."""
    bf16 = a.dtype.name == "bfloat16"
    step = rng.standard_normal(a.shape) + (1j * rng.standard_normal(a.shape) if a.dtype.kind == "c" else 0)
    b = a + step * (2e-2 if bf16 else 1e-3) * (np.abs(a) + 1)
    return b.astype(a.dtype) if a.dtype.kind in "fc" or bf16 else b


def _upstream(rng, probe) -> list:
    if isinstance(probe, tuple):
        return []
    return [rng.standard_normal(v.shape) + (1j * rng.standard_normal(v.shape) if v.dtype.kind == "c" else 0)
            for v in probe]


def _check(info, samples) -> None:
    """Each (sample, input arrays) of ``samples`` compiled vs eager on three calls: values and gradients equal."""
    rng = np.random.default_rng(0)
    for sample, args in samples:
        kwargs = sample.kwargs

        def prog(*ts, _op=info.op, _kw=kwargs):
            return _op(ember, *ts, **_kw)
        cf = ember.compile(prog)
        grad = info.supports_grad
        for call in range(3):
            arrays = [a if call < 2 else _perturbed(a, rng) for a in args]
            probe = _run(prog, arrays, False, [])[0]
            upstream = _upstream(rng, probe)
            want = _run(prog, arrays, grad, upstream)
            got = _run(cf, arrays, grad, upstream)
            assert _same(want[0], got[0]), f"{info.name} {sample.desc} call {call}: forward differs"
            assert _same(want[1], got[1]), f"{info.name} {sample.desc} call {call}: gradients differ"
        replayed = any(r is not _EAGER for r in cf._cache.values())
        REPORT["replayed" if replayed else "eager"] += 1
        REPORT["replays sent to eager by a check on values"] += cf._guard_fallbacks
        for _, reason in cf._reasons:
            REPORT[reason.split(":")[0][:70]] += 1


def _params(entries, differs):
    return [pytest.param(o, id=o.name, marks=[pytest.mark.xfail(strict=True, reason=differs[o.name])]
                         if o.name in differs else []) for o in entries]


@pytest.mark.parametrize("info", OP_DB, ids=lambda o: o.name)
def test_compiled_matches_eager(info):
    _check(info, [(s, s.args) for s in info.sample_inputs()[:N_SAMPLES]])


@pytest.mark.parametrize("info", _params(OP_DB, COMPLEX_DIFFERS))
def test_compiled_matches_eager_complex128(info):
    """The samples' float inputs as complex128: complex forward values and complex gradients (PyTorch's conjugate
    Wirtinger convention, as eager computes them), or the same error where ember refuses complex."""
    _check(info, [(s, complex_args(info, s)) for s in info.sample_inputs()[:N_SAMPLES_OTHER]])


@pytest.mark.skipif(ember.bfloat16.np.__class__.__name__ == "_Missing", reason="needs ml_dtypes")
@pytest.mark.parametrize("info", _params([o for o in OP_DB if "float32" in o.dtypes and o.name not in BF16_SKIP],
                                         BF16_DIFFERS))
def test_compiled_matches_eager_bfloat16(info):
    _check(info, [(s, [to_dtype(a, "bfloat16") if a.dtype.kind == "f" else a for a in s.args])
                  for s in info.sample_inputs()[:N_SAMPLES_OTHER]])


def teardown_module(module):
    if os.environ.get("EMBER_COMPILE_REPORT"):
        for k, v in REPORT.most_common():
            print(f"{v:5d}  {k}")
