"""vmap over every op of the op database: each tensor input mapped over (alone, then all of them), against a
Python loop over the examples (ember) and against torch.func.vmap on the same inputs (values and dtypes).

Every primitive has a batching rule or is on the explicit fallback list (``_batching.FALLBACK``, each with its
reason), which runs it once per example and warns as PyTorch's fallback does. The default run takes the first
samples of each op; ``EMBER_SLOW=1`` sweeps them all.
"""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import ember  # noqa: E402
from ember.autograd import _batching  # noqa: E402
from ember.autograd._primitive import PRIMITIVES  # noqa: E402
from op_db import OP_DB  # noqa: E402

try:
    import torch
    import torch.func
except ImportError:   # the loop comparison needs no PyTorch
    torch = None

SLOW = os.environ.get("EMBER_SLOW") == "1"
B = 3
PER_OP = 2


def test_every_primitive_has_a_rule_or_an_explicit_fallback():
    # (ember's own primitives, those made on first use included; a test may declare one of its own in this process)
    ours = [p for p in PRIMITIVES if getattr(p.forward, "__module__", "").startswith("ember")]
    missing = [p.name for p in ours if p.vmap is None and p.name not in _batching.FALLBACK]
    assert not missing, f"primitives with no batching rule and not on the fallback list: {missing}"
    for name, why in _batching.FALLBACK.items():
        assert why and len(why) > 10, f"{name}: a fallback needs its reason"


def _cases():
    out = []
    for op in OP_DB:
        if "float64" not in op.dtypes:
            continue
        for k, s in enumerate(op.sample_inputs()):
            if not (SLOW or k < PER_OP):
                continue
            n = len(s.args)
            for which in list(range(n)) + (["all"] if n > 1 else []):
                out.append(pytest.param(op, s, which, id=f"{op.name}-{s.desc}-in{which}"))
    return out


def _batch(a: np.ndarray) -> np.ndarray:
    """B examples near ``a`` (scaled, so signs and zeros stay: most domains keep their samples)."""
    return np.stack([a * (1 + 0.05 * j) for j in range(B)])


def _flat(res):
    if isinstance(res, (tuple, list)):
        return [x for r in res for x in _flat(r)]
    return [res]


def _run(lib, op, sample, which, vmapped: bool):
    mod = ember if lib == "ember" else torch
    args = [np.array(a) for a in sample.args]
    mapped = range(len(args)) if which == "all" else [which]
    batched = {i: _batch(args[i]) for i in mapped}

    def f(*xs):
        full = list(args_t)
        for i, x in zip(mapped, xs):
            full[i] = x
        return op.op(mod, *full, **sample.kwargs)
    args_t = [mod.tensor(a) for a in args]
    xs = [mod.tensor(batched[i]) for i in mapped]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if vmapped:
            vm = ember.func.vmap if lib == "ember" else torch.func.vmap
            return _flat(vm(f)(*xs))
        rows = [_flat(f(*[x[j] for x in xs])) for j in range(B)]
    return [mod.stack([r[k] for r in rows]) if isinstance(rows[0][k], mod.Tensor) else rows[0][k]
            for k in range(len(rows[0]))]


def _outcome(fn):
    try:
        return fn(), None
    except Exception as e:   # noqa: BLE001  (compared by type below)
        return None, e


def _np(t):
    if not hasattr(t, "detach"):
        return np.asarray(t)
    t = t.detach()
    if str(t.dtype).endswith("bfloat16"):   # (torch's numpy() has no bfloat16)
        t = t.float()
    return t.numpy()


def _close(a, b, what):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}"
    if a.dtype.kind in "fc":
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


# Not built yet under vmap (each case named by the op database's name, with the reason)
NOT_YET: dict = {}

# Where ember's vmap gives what torch.func.vmap gives but a loop over the examples differs by the op's meaning:
# compared with torch only (reason)
LOOP_DIFFERS = {
    **{name: "as_strided's storage_offset is absolute: a loop's example (a slice of the batch) reads the storage from "
             "the batch's start, so every example reads the first one's memory; torch.func takes each example's view "
             "at its own place in the batch (the offset plus the example's index times the batch stride)"
       for name in ("as_strided", "as_strided_copy")},
}


# Where ember's vmap gives what a loop gives but PyTorch's vmap differs: (reason)
TORCH_DIFFERS = {
    "as_strided_inplace": "torch 2.13's vmap runs as_strided_ in its per-example fallback on slices of the physical "
                          "tensor, which leaves the batched tensor as it was; ember's example becomes the view, as in "
                          "a loop",
    "linalg_qr_forward": "mode='r': PyTorch's vmap returns the empty Q unbatched, shape (0,); ember stacks the examples' "
                         "(0,) as a loop does, (B, 0)",
    "index_fill_tensor": "a batched 0-d value: PyTorch 2.13's vmap fills every example with the last example's "
                         "value (vmap(lambda s: x.index_fill(0, i, s))(tensor([1., 2., 3.])) gives 3, 3, 3); ember "
                         "gives what a loop gives",
    "special_shifted_chebyshev_polynomial_v_large_n": "values past float64's range: the op itself puts its nans "
                                                      "elsewhere than PyTorch's (its forward is compared in test_ops)",
}


@pytest.mark.parametrize("op,sample,which", _cases())
def test_vmap_op(op, sample, which):
    if op.name in NOT_YET:
        pytest.xfail(NOT_YET[op.name])
    if op.name.endswith("_recorded"):
        pytest.skip("its extra outputs are the names of autograd nodes: inside vmap the graph is the physical one")
    loop, err = _outcome(lambda: _run("ember", op, sample, which, False))
    got, verr = _outcome(lambda: _run("ember", op, sample, which, True))
    if err is not None:
        pytest.skip(f"the op refuses these examples: {type(err).__name__}")
    if verr is not None:
        # PyTorch refuses some of these too (an in-place op writing a batched value into an unbatched input)
        if torch is not None:
            _, terr = _outcome(lambda: _run("torch", op, sample, which, True))
            if terr is not None and type(terr) is type(verr):
                return
        raise verr
    assert len(got) == len(loop)
    for k, (g, l) in enumerate(zip(got, [] if op.name in LOOP_DIFFERS else loop)):
        if isinstance(l, ember.Tensor):
            assert g.dtype == l.dtype, f"output {k}: dtype {g.dtype} vs the loop's {l.dtype}"
        _close(g, l, f"output {k} vs the loop")
    if torch is None:
        return
    ref, terr = _outcome(lambda: _run("torch", op, sample, which, True))
    if terr is not None:
        assert op.name not in LOOP_DIFFERS, f"torch.func.vmap refuses it ({terr!r}), and a loop gives other values"
        return   # torch's vmap refuses it (no batching rule and no fallback for it in torch)
    if op.name in TORCH_DIFFERS or op.xfail_reason("forward", f"{sample.desc}|float64"):
        return   # (the op's own forward differs from PyTorch's on this sample: tests/test_ops.py says why)
    for k, (g, r) in enumerate(zip(got, ref)):
        if isinstance(r, torch.Tensor):
            assert str(g.dtype) == str(r.dtype), f"output {k}: dtype {g.dtype} vs torch's {r.dtype}"
        _close(g, r, f"output {k} vs torch.func.vmap")
