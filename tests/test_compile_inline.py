"""ember.compile's generated programs inline a device kernel's own expression template (float32 tanh and its
backward below _EXACT_MAX elements): compiled equals eager bit for bit on both sides of the algorithm switch, for
every dtype, and the kernels equal their reference formulas on random bits and special values."""
from __future__ import annotations

import numpy as np
import pytest

import ember as torch
from ember.devices.cpu import elementwise as E


def _chain(x):
    for _ in range(4):
        x = torch.tanh(x * 1.01 + 0.1)
    return x


def _bits(t):
    return t.detach().numpy().tobytes()


@pytest.mark.parametrize("shape", [(), (1,), (64,), (E._EXACT_MAX - 1,), (E._EXACT_MAX,), (E._EXACT_MAX + 5,)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_tanh_chain_compiled_is_eager(shape, dtype):
    if dtype != "float32" and len(shape) == 1 and shape[0] > 64:
        pytest.skip("the switch is float32's")
    dt = getattr(torch, dtype)
    cf = torch.compile(_chain)
    rng = np.random.default_rng(len(shape) and shape[0])
    for k in range(3):
        a = rng.standard_normal(shape) * 3
        if a.size > 4:   # special values among them
            a.flat[:5] = [0.0, -0.0, np.inf, -np.inf, np.nan]
        x1 = torch.tensor(a, dtype=dt, requires_grad=True)
        x2 = torch.tensor(a, dtype=dt, requires_grad=True)
        y1, y2 = _chain(x1), cf(x2)
        assert _bits(y1) == _bits(y2)
        g = torch.tensor(rng.standard_normal(shape), dtype=dt)
        y1.backward(g)
        y2.backward(g)
        assert _bits(x1.grad) == _bits(x2.grad)
    assert sum(r != "eager" for r in cf._cache.values()) == 1


def test_templates_are_the_kernels():
    """Each template filled in and evaluated equals the kernel call (it is the kernel's own float32 path)."""
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2 ** 32, 30000, dtype=np.uint64).astype(np.uint32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, -1e-45, 1e-38, 3.4e38], np.float32)
    x = np.concatenate([bits.view(np.float32), specials])
    g = rng.standard_normal(x.size).astype(np.float32)
    for size in (1, 7, 64, x.size):
        xs, gs = x[:size], g[:size]
        for kernel, args in ((E.tanh, (xs,)), (E.tanh_backward, (gs, np.tanh(xs)))):
            template, names = kernel.inline(np.dtype(np.float32), size)
            ns = {f"N{k}": v for k, v in enumerate(names.values())}
            src = template.format(*[f"A{k}" for k in range(len(args))],
                                  **{k: f"N{i}" for i, k in enumerate(names)})
            env = dict(ns, **{f"A{k}": a for k, a in enumerate(args)})
            with np.errstate(all="ignore"):
                got = eval(src, env)
                want = kernel(*args)
            assert got.tobytes() == want.tobytes()
    assert E.tanh.inline(np.dtype(np.float32), E._EXACT_MAX) is None
    assert E.tanh_backward.inline(np.dtype(np.float64), 3) is None


def test_tanh_backward_subtracts_from_one():
    """1 - out^2 from a 0-d float64 1.0 is the subtraction from the Python float 1.0: every float32 out of a random
    million and the specials, and float16 / bfloat16 exhaustively."""
    rng = np.random.default_rng(1)

    def reference(g, out):   # the kernel as it was, with the Python float
        dt = out.dtype
        if (dt is E._F32 or dt in E._REDUCED) and out.size < E._EXACT_MAX:
            o = out.astype(np.float64)
            t = (1.0 - o * o).astype(np.float32)
            return g * t if dt is E._F32 else (np.asarray(g).astype(np.float32) * t).astype(dt)
        return g * (1 - out * out)
    out = rng.integers(0, 2 ** 32, 1_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    out = np.concatenate([out, np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45], np.float32)])
    g = rng.standard_normal(out.size).astype(np.float32)
    with np.errstate(all="ignore"):
        for k in range(0, out.size, E._EXACT_MAX - 1):
            sl = slice(k, k + E._EXACT_MAX - 1)
            assert E.tanh_backward(g[sl], out[sl]).tobytes() == reference(g[sl], out[sl]).tobytes()
        for dt in (np.float16, torch.bfloat16.np):
            o = np.arange(2 ** 16, dtype=np.uint16).view(dt)
            gg = rng.standard_normal(o.size).astype(dt)
            for sl in (slice(0, 32767), slice(32767, 65534), slice(65534, None)):
                assert E.tanh_backward(gg[sl], o[sl]).tobytes() == reference(gg[sl], o[sl]).tobytes()
