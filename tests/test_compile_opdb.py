"""ember.compile over the op database: every entry's programs compiled vs eager, forward values and gradients
bit-identical, on the trace call, a replay, and a replay with other values of the same shapes."""
from __future__ import annotations

import os
import sys
from collections import Counter

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from op_db import OP_DB  # noqa: E402

import ember  # noqa: E402
from ember.compiler import _EAGER  # noqa: E402

N_SAMPLES = 2
REPORT = Counter()


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
        roots = [(o, u) for o, u in zip(outs, upstream) if o.requires_grad and o.dtype.is_floating_point]
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


@pytest.mark.parametrize("info", OP_DB, ids=lambda o: o.name)
def test_compiled_matches_eager(info):
    rng = np.random.default_rng(0)
    for sample in info.sample_inputs()[:N_SAMPLES]:
        kwargs = sample.kwargs

        def prog(*ts, _op=info.op, _kw=kwargs):
            return _op(ember, *ts, **_kw)
        cf = ember.compile(prog)
        grad = info.supports_grad
        for call in range(3):
            arrays = [a if call < 2 else a + rng.standard_normal(a.shape) * 1e-3 * (np.abs(a) + 1) for a in sample.args]
            probe = _run(prog, arrays, False, [])[0]
            upstream = [rng.standard_normal(v.shape) for v in probe] if not isinstance(probe, tuple) else []
            want = _run(prog, arrays, grad, upstream)
            got = _run(cf, arrays, grad, upstream)
            assert _same(want[0], got[0]), f"{info.name} {sample.desc} call {call}: forward differs"
            assert _same(want[1], got[1]), f"{info.name} {sample.desc} call {call}: gradients differ"
        replayed = any(r is not _EAGER for r in cf._cache.values())
        REPORT["replayed" if replayed else "eager"] += 1
        REPORT["replays sent to eager by a check on values"] += cf._guard_fallbacks
        for _, reason in cf._reasons:
            REPORT[reason.split(":")[0][:70]] += 1


def teardown_module(module):
    if os.environ.get("EMBER_COMPILE_REPORT"):
        for k, v in REPORT.most_common():
            print(f"{v:5d}  {k}")
