"""float8 dtypes (issue 18): torch.float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu.

PyTorch's CPU has kernels for them in few ops: creation, casts, copies, views, indexing, cat, eq/ne, mul of two
tensors, abs, printing; every other op raises NotImplementedError, and no promotion involves them. ember's arrays
are ml_dtypes' (an optional dependency, as for bfloat16). Casts are checked value for value against torch over
many float32 bit patterns, doubles, integers and all 256 codes of each type.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytest.importorskip("ml_dtypes")

NAMES = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")


def bytes_of(e, t):
    """The bytes of an ember and a torch float8 tensor."""
    return e.view(ember.uint8).numpy(), t.view(torch.uint8).numpy()


def _float32_samples() -> np.ndarray:
    rng = np.random.default_rng(0)
    bits = np.concatenate([rng.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32),
                           np.arange(0, 2 ** 32, 2 ** 32 // 2 ** 17 + 1, dtype=np.uint64).astype(np.uint32)])
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 240, 241, 247, 248, 448, 449, 464, 465, 480, 57344,
             61439, 61440, 2 ** -6, 2 ** -7, 2 ** -9, 2 ** -10, 3 * 2 ** -11, 2 ** -14, 2 ** -16, 2 ** -17, 1e30,
             -1e30, 2.0 ** 127, 1.5 * 2.0 ** 127, 2.0 ** -127, 2.0 ** -128, 0.75 * 2.0 ** -126, 1.5, 2.5, 3.0, -0.3]
    return np.concatenate([bits.view(np.float32), np.array(edges, np.float32)])


X32 = _float32_samples()


# ----- the dtypes -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_dtype_attributes(name):
    e, t = getattr(ember, name), getattr(torch, name)
    assert repr(e) == repr(t)
    assert (e.itemsize, e.is_floating_point, e.is_signed, e.is_complex) == \
        (t.itemsize, t.is_floating_point, t.is_signed, t.is_complex)
    x = ember.zeros(2, dtype=e)
    assert x.element_size() == 1 and x.is_floating_point() and x.is_signed() == t.is_signed


@pytest.mark.parametrize("name", NAMES)
def test_finfo(name):
    e, t = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
    assert repr(e) == repr(t)
    for a in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(e, a) == getattr(t, a), a


def test_promotion_is_refused():
    others = ("bool", "uint8", "int8", "int64", "float16", "bfloat16", "float32", "float64", "complex64") + NAMES
    for a in NAMES:
        for b in others:
            ea, eb, ta, tb = getattr(ember, a), getattr(ember, b), getattr(torch, a), getattr(torch, b)
            for x, y, u, v in ((ea, eb, ta, tb), (eb, ea, tb, ta)):
                try:
                    want = torch.promote_types(u, v)
                except RuntimeError as err:
                    with pytest.raises(RuntimeError) as got:
                        ember.promote_types(x, y)
                    assert str(got.value) == str(err)
                else:
                    assert repr(ember.promote_types(x, y)) == repr(want)
    x = ember.zeros(2, dtype=ember.float8_e4m3fn)
    with pytest.raises(RuntimeError, match="Promotion for Float8 Types is not supported"):
        x + ember.ones(2)
    assert ember.result_type(x, 1.0) is ember.float8_e4m3fn   # a number keeps the tensor's dtype, as torch


# ----- casts, value for value ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_cast_from_float32(name):
    a, b = bytes_of(ember.from_numpy(X32).to(getattr(ember, name)), torch.from_numpy(X32).to(getattr(torch, name)))
    bad = a != b
    assert not bad.any(), (X32[bad][:8], a[bad][:8], b[bad][:8])


@pytest.mark.parametrize("name", NAMES)
def test_cast_from_float64_int_half(name):
    rng = np.random.default_rng(1)
    x64 = np.concatenate([rng.standard_normal(50_000) * rng.choice([1e-9, 1e-4, 1e-2, 1, 30, 400, 1e5, 1e40], 50_000),
                          X32[:50_000].astype(np.float64), [1e300, -1e300, 1e-300, 448.00000001, 464.0000001]])
    ints = np.concatenate([np.arange(-70_000, 70_000), [2 ** 40 + 1, -2 ** 62, 2 ** 63 - 1]]).astype(np.int64)
    for arr in (x64, ints, ints.astype(np.int32), ints.astype(np.int16), ints.astype(np.uint8), X32.astype(np.float16),
                np.array([True, False])):
        e = ember.from_numpy(arr).to(getattr(ember, name))
        t = torch.from_numpy(arr).to(getattr(torch, name))
        a, b = bytes_of(e, t)
        assert (a == b).all(), (arr.dtype, arr[a != b][:8], a[a != b][:8], b[a != b][:8])
    tb = torch.from_numpy(X32).to(torch.bfloat16)   # the same bfloat16 bits in both (NaN signs differ in ember's)
    eb = ember.from_numpy(tb.view(torch.int16).numpy().copy()).view(ember.bfloat16)
    a, b = bytes_of(eb.to(getattr(ember, name)), tb.to(getattr(torch, name)))
    assert (a == b).all(), (a[a != b][:8], b[a != b][:8])


@pytest.mark.parametrize("name", NAMES)
def test_cast_from_float8(name):
    """Every code of the type to every dtype (NaN's payload aside: NumPy's quiet NaN)."""
    c = np.arange(256, dtype=np.uint8)
    e, t = ember.from_numpy(c).view(getattr(ember, name)), torch.from_numpy(c).view(getattr(torch, name))
    for target in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool") \
            + NAMES:
        a, b = e.to(getattr(ember, target)), t.to(getattr(torch, target))
        assert repr(a.dtype) == repr(b.dtype)
        if target in NAMES:
            x, y = bytes_of(a, b)
        elif target in ("float16", "bfloat16"):
            x, y = a.float().numpy(), b.float().numpy()
        else:
            x, y = a.numpy(), b.numpy()
        same = (x == y) | (np.isnan(x) & np.isnan(y)) if x.dtype.kind == "f" else x == y
        if x.dtype.kind == "f" and target != "bfloat16":   # the sign of a NaN too (bfloat16's own casts differ)
            same &= np.signbit(x) == np.signbit(y)
        assert same.all(), (target, c[~same][:8], x[~same][:8], y[~same][:8])


@pytest.mark.parametrize("name", NAMES)
def test_creation(name):
    e, t = getattr(ember, name), getattr(torch, name)
    data = [1.0, 2.5, -3.0, 0.3, 1e6, float("inf"), float("nan"), -0.0, 1e-3, 1e300]
    pairs = [(ember.tensor(data, dtype=e), torch.tensor(data, dtype=t)),
             (ember.zeros(3, dtype=e), torch.zeros(3, dtype=t)), (ember.ones(3, dtype=e), torch.ones(3, dtype=t)),
             (ember.full((2,), 3.0, dtype=e), torch.full((2,), 3.0, dtype=t)),
             (ember.ones(3, dtype=e).fill_(0.25), torch.ones(3, dtype=t).fill_(0.25)),
             (ember.zeros_like(ember.ones(2, dtype=e)), torch.zeros_like(torch.ones(2, dtype=t))),
             (ember.full_like(ember.ones(2, dtype=e), 7), torch.full_like(torch.ones(2, dtype=t), 7)),
             (ember.eye(2, dtype=e), torch.eye(2, dtype=t))]
    for a, b in pairs:
        x, y = bytes_of(a, b)
        assert x.shape == y.shape and (x == y).all(), (x, y)
    for v in (1e6, float("inf"), 1e39, 500.0, -1e5, float("nan"), 0.0, -0.3, 2.0 ** -127, 2.0 ** -128):   # (PyTorch skips its check at numel 1)
        try:
            want = torch.full((2,), v, dtype=t)
        except RuntimeError as err:
            with pytest.raises(RuntimeError) as got:
                ember.full((2,), v, dtype=e)
            assert str(got.value) == str(err)
        else:
            x, y = bytes_of(ember.full((2,), v, dtype=e), want)
            assert x.tolist() == y.tolist(), v


# ----- the ops PyTorch has and the ones it refuses ---------------------------------------------------------

def _ops(T, d):
    x = T.tensor([1.0, 2.0, 0.5, 3.0]).to(d)
    m = T.tensor([[1.0, 2.0], [0.25, 4.0]]).to(d)
    B = T.tensor([True, False, True, False])
    return {
        "clone": lambda: x.clone(), "cat": lambda: T.cat([x, x]), "stack": lambda: T.stack([x, x]),
        "reshape": lambda: x.reshape(2, 2), "view": lambda: x.view(4, 1), "t": lambda: m.t(),
        "contiguous": lambda: m.t().contiguous(), "permute": lambda: m.permute(1, 0), "slice": lambda: x[1:3],
        "select": lambda: m[1], "index": lambda: x[T.tensor([0, 2])], "bool index": lambda: x[B],
        "index_select": lambda: x.index_select(0, T.tensor([3, 0])), "masked_select": lambda: x.masked_select(B),
        "expand": lambda: x[:1].expand(3).clone(), "repeat": lambda: x.repeat(2), "roll": lambda: x.roll(1),
        "diag": lambda: x.diag(), "split": lambda: x.split(3)[1], "narrow": lambda: x.narrow(0, 1, 2),
        "unbind": lambda: m.unbind()[0], "where": lambda: T.where(B, x, x.flip(0) if False else x[T.tensor([3, 2, 1, 0])]),
        "fill_": lambda: x.clone().fill_(2.5), "zero_": lambda: x.clone().zero_(),
        "setitem": lambda: _set(x.clone(), 0, 5.0), "index_put": lambda: x.clone().index_put_((T.tensor([1]),), x[:1]),
        "copy_": lambda: T.zeros(4, dtype=d).copy_(T.tensor([1.0, 500.0, -1e9, 0.1])),
        "mul": lambda: x * x, "mul big": lambda: m * T.tensor([[300.0, 1.0], [2.0, 2.0]]).to(d), "abs": lambda: (x * x).abs(),
        "eq": lambda: x == x[T.tensor([0, 0, 2, 2])], "ne": lambda: x != 2.0, "eq number": lambda: x == 2,
        "lt": lambda: x < x, "ge number": lambda: x >= 1, "add": lambda: x + x, "sub": lambda: x - x, "neg": lambda: -x,
        "mul number": lambda: x * 2, "mul 0-d": lambda: x * T.tensor(2.0).to(d), "div": lambda: x / x,
        "exp": lambda: x.exp(), "sqrt": lambda: x.sqrt(), "sum": lambda: x.sum(), "mean": lambda: x.mean(),
        "prod": lambda: x.prod(), "cumsum": lambda: x.cumsum(0), "max": lambda: x.max(), "amax": lambda: x.amax(),
        "argmax": lambda: x.argmax(), "min": lambda: x.min(), "sort": lambda: x.sort()[0], "unique": lambda: x.unique(),
        "topk": lambda: x.topk(1)[0], "matmul": lambda: m @ m, "vecmat": lambda: x[:2] @ m,
        "batch matmul": lambda: T.stack([m, m]) @ m, "matvec": lambda: m @ x[:2], "dot": lambda: x @ x,
        "bmm": lambda: T.stack([m, m]) @ T.stack([m, m]), "relu": lambda: x.relu(), "clamp": lambda: x.clamp(0, 1),
        "maximum": lambda: T.maximum(x, x), "flip": lambda: x.flip(0), "tril": lambda: m.tril(),
        "gather": lambda: x.gather(0, T.tensor([0])), "scatter": lambda: x.clone().scatter_(0, T.tensor([0]), x),
        "masked_fill": lambda: x.masked_fill(B, 1.0), "nonzero": lambda: x.nonzero(),
        "count_nonzero": lambda: x.count_nonzero(), "equal": lambda: T.equal(x, x), "allclose": lambda: T.allclose(x, x),
        "isnan": lambda: x.isnan(), "isinf": lambda: x.isinf(), "isfinite": lambda: x.isfinite(),
        "any": lambda: x.any(), "all": lambda: x.all(), "nan_to_num": lambda: x.nan_to_num(),
        "arange": lambda: T.arange(3, dtype=d), "linspace": lambda: T.linspace(0, 1, 3, dtype=d),
        "rand": lambda: T.rand(2, dtype=d), "randn": lambda: T.randn(2, dtype=d),
        "randint": lambda: T.randint(0, 3, (2,), dtype=d), "randperm": lambda: T.randperm(3, dtype=d),
        "numpy": lambda: x.numpy(), "item": lambda: x[1].item(), "tolist": lambda: m.tolist(),
        "float()": lambda: float(x[2]), "bool()": lambda: bool(x[0]), "repr": lambda: repr(m), "str": lambda: str(x),
        "view uint8": lambda: x.view(ember.uint8 if T is ember else torch.uint8),
        "requires_grad": lambda: T.ones(2, dtype=d, requires_grad=True).requires_grad,
    }


def _set(x, i, v):
    x[i] = v
    return x


def _outcome(fn):
    try:
        r = fn()
    except Exception as err:   # noqa: BLE001 - the exception itself is compared
        return type(err), str(err)
    if hasattr(r, "dtype") and hasattr(r, "view") and not isinstance(r, np.ndarray):
        if r.element_size() == 1 and r.dtype.is_floating_point:
            lib = torch if isinstance(r, torch.Tensor) else ember
            return repr(r.dtype), tuple(r.shape), r.view(lib.uint8).tolist()
        return repr(r.dtype), tuple(r.shape), r.tolist()
    return r


@pytest.mark.parametrize("name", NAMES)
def test_ops_as_torch(name):
    """Each op computes what torch computes, or raises torch's exception with its message (ember names its own
    primitive in the NotImplementedError where PyTorch names its kernel, as for complex)."""
    ours, theirs = _ops(ember, getattr(ember, name)), _ops(torch, getattr(torch, name))
    for op, fn in theirs.items():
        want, got = _outcome(fn), _outcome(ours[op])
        if isinstance(want, tuple) and len(want) == 2 and isinstance(want[0], type):
            assert isinstance(got, tuple) and got[0] is want[0], (op, want, got)
            if want[0] is NotImplementedError:
                assert got[1].endswith(f" not implemented for '{want[1].rsplit(chr(39), 2)[1]}'"), (op, want, got)
            elif op in ("numpy",) or "Promotion" in want[1]:
                assert got[1] == want[1], (op, want, got)
        else:
            assert got == want, (op, want, got)


def test_without_ml_dtypes(monkeypatch):
    """Without ml_dtypes the dtypes exist (programs name them) and making a tensor says what is missing."""
    import subprocess
    import sys
    code = ("import sys; sys.modules['ml_dtypes'] = None\n"
            "import ember\n"
            "d = ember.float8_e4m3fn\n"
            "assert repr(d) == 'torch.float8_e4m3fn' and d.itemsize == 1 and ember.finfo(d).max == 448\n"
            "try:\n    ember.zeros(2, dtype=d)\nexcept RuntimeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "need the ml_dtypes package" in out.stdout, out.stdout + out.stderr
