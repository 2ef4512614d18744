"""uint16, uint32, uint64 (issue 18): PyTorch's "shell" dtypes with few CPU kernels, and torch.hash_tensor.

PyTorch has them for creation, casts, copies, views, indexing, eq/ne, and/or/xor, mul, sum/prod/cumsum (to int64),
sort/unique, and for ops that compute in a floating dtype (exp, div, sqrt of an integer: float32); every other op
raises NotImplementedError, and they promote with floating dtypes only.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from test_float8 import _outcome

torch = pytest.importorskip("torch")

NAMES = ("uint16", "uint32", "uint64")
OTHERS = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64") + NAMES


@pytest.mark.parametrize("name", NAMES)
def test_dtype(name):
    e, t = getattr(ember, name), getattr(torch, name)
    assert repr(e) == repr(t)
    assert (e.itemsize, e.is_floating_point, e.is_signed, e.is_complex) == \
        (t.itemsize, t.is_floating_point, t.is_signed, t.is_complex)
    assert repr(ember.iinfo(e)) == repr(torch.iinfo(t))
    assert (ember.iinfo(e).min, ember.iinfo(e).max, ember.iinfo(e).bits) == \
        (torch.iinfo(t).min, torch.iinfo(t).max, torch.iinfo(t).bits)
    x = ember.zeros(2, dtype=e)
    assert x.element_size() == t.itemsize and not x.is_floating_point() and not x.is_signed()


def test_promotion():
    for a in NAMES:
        for b in OTHERS:
            for x, y in ((a, b), (b, a)):
                try:
                    want = torch.promote_types(getattr(torch, x), getattr(torch, y))
                except RuntimeError as err:
                    with pytest.raises(RuntimeError) as got:
                        ember.promote_types(getattr(ember, x), getattr(ember, y))
                    assert str(got.value) == str(err)
                else:
                    assert repr(ember.promote_types(getattr(ember, x), getattr(ember, y))) == repr(want), (x, y)


@pytest.mark.parametrize("name", NAMES)
def test_casts(name):
    rng = np.random.default_rng(0)
    info = np.iinfo(name)
    ints = np.concatenate([rng.integers(0, info.max, 1000, dtype=name, endpoint=True),
                           np.array([0, 1, info.max, info.max - 1, 2 ** 24 + 1, 2 ** 53 + 1], dtype=np.uint64)
                           .astype(name)])
    e, t = ember.from_numpy(ints), torch.from_numpy(ints)
    for target in ("float32", "float64", "float16", "int64", "int32", "int8", "uint8", "bool") + NAMES:
        a, b = e.to(getattr(ember, target)), t.to(getattr(torch, target))
        assert repr(a.dtype) == repr(b.dtype)
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=target)
    for src in (np.arange(-5, 70_000, dtype=np.int64), np.array([0.5, 1.9, 3e4, 65535.0]),
                np.arange(300, dtype=np.int32), np.array([True, False])):
        a, b = ember.from_numpy(src).to(getattr(ember, name)), torch.from_numpy(src).to(getattr(torch, name))
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=str(src.dtype))


def _ops(T, d):
    x = T.tensor([1, 2, 5, 7], dtype=d)
    m = T.tensor([[3, 1], [60000, 2]], dtype=d)
    B = T.tensor([True, False, True, False])
    T.manual_seed(0)
    return {
        "repr": lambda: repr(m), "tolist": lambda: m.tolist(), "item": lambda: x[2].item(),
        "zeros": lambda: T.zeros(2, dtype=d), "ones": lambda: T.ones(2, dtype=d), "full": lambda: T.full((2,), 7, dtype=d),
        "full big": lambda: T.full((2,), 2 ** 40, dtype=d), "tensor": lambda: T.tensor([0, 65535, 3], dtype=d),
        "randint": lambda: T.randint(0, 1000, (5,), dtype=d), "arange": lambda: T.arange(3, dtype=d),
        "eye": lambda: T.eye(2, dtype=d), "linspace": lambda: T.linspace(0, 5, 3, dtype=d),
        "clone": lambda: x.clone(), "cat": lambda: T.cat([x, x]), "stack": lambda: T.stack([x, x]),
        "reshape": lambda: x.reshape(2, 2), "t": lambda: m.t().contiguous(), "slice": lambda: x[1:3],
        "index": lambda: x[T.tensor([3, 0])], "bool index": lambda: x[B], "setitem": lambda: _set(x.clone(), 0, 9),
        "fill_": lambda: x.clone().fill_(4), "zero_": lambda: x.clone().zero_(), "where": lambda: T.where(B, x, x * x),
        "copy_": lambda: T.zeros(4, dtype=d).copy_(T.tensor([1.5, 2.0, 70000.0, 3.0])),
        "roll": lambda: x.roll(1), "repeat": lambda: x.repeat(2), "diag": lambda: x.diag(),
        "eq": lambda: x == x.flip(0) if False else x == T.tensor([1, 0, 5, 0], dtype=d), "ne number": lambda: x != 2,
        "eq big": lambda: x == 2 ** 40, "eq neg": lambda: x == -1,
        "and": lambda: x & m.reshape(4), "or": lambda: x | 6, "xor": lambda: x ^ x, "not": lambda: ~x,
        "lshift": lambda: x << 1, "mul": lambda: x * x, "mul number": lambda: x * 3, "mul wraps": lambda: m * m,
        "add": lambda: x + x, "sub": lambda: x - x, "add number": lambda: x + 1, "add float": lambda: x + 1.5,
        "add float32": lambda: x + T.ones(4), "add int64": lambda: x + T.ones(4, dtype=T.int64),
        "neg": lambda: -x, "abs": lambda: x.abs(), "div": lambda: x / 2, "floordiv": lambda: x // x,
        "rem": lambda: x % 3, "pow": lambda: x ** 2, "exp": lambda: x.exp(), "sqrt": lambda: x.sqrt(),
        "sum": lambda: x.sum(), "sum dim": lambda: m.sum(0), "prod": lambda: x.prod(), "cumsum": lambda: x.cumsum(0),
        "cumprod": lambda: x.cumprod(0), "mean": lambda: x.mean(), "max": lambda: x.max(), "amax": lambda: x.amax(),
        "argmax": lambda: x.argmax(), "min": lambda: x.min(), "minimum": lambda: T.minimum(x, x),
        "lt": lambda: x < x, "ge number": lambda: x >= 2, "sort": lambda: m.sort(dim=1), "argsort": lambda: x.argsort(),
        "unique": lambda: T.tensor([3, 1, 3], dtype=d).unique(), "topk": lambda: x.topk(1),
        "gather": lambda: x.gather(0, T.tensor([0])), "scatter": lambda: x.clone().scatter_(0, T.tensor([0]), x),
        "index_select": lambda: x.index_select(0, T.tensor([0])), "masked_select": lambda: x.masked_select(B),
        "index_put": lambda: x.clone().index_put_((T.tensor([1]),), x[:1]), "masked_fill": lambda: x.masked_fill(B, 1),
        "nonzero": lambda: x.nonzero(), "isnan": lambda: x.isnan(), "isinf": lambda: x.isinf(),
        "nan_to_num": lambda: x.nan_to_num(), "clamp": lambda: x.clamp(0, 3), "flip": lambda: x.flip(0),
        "matmul": lambda: m @ m, "equal": lambda: T.equal(x, x), "any": lambda: x.any(), "all": lambda: x.all(),
        "bincount": lambda: x.bincount(), "numpy": lambda: x.numpy().tolist(),
        "requires_grad": lambda: T.ones(2, dtype=d, requires_grad=True),
        "hash_tensor": lambda: T.hash_tensor(x),
    }


def _set(x, i, v):
    x[i] = v
    return x


@pytest.mark.parametrize("name", NAMES)
def test_ops_as_torch(name):
    """Each op computes what torch computes, or raises torch's exception (ember names its own primitive in the
    NotImplementedError where PyTorch names its kernel)."""
    ours, theirs = _ops(ember, getattr(ember, name)), _ops(torch, getattr(torch, name))
    for op, fn in theirs.items():
        want, got = _outcome(fn), _outcome(ours[op])
        if isinstance(want, tuple) and len(want) == 2 and isinstance(want[0], type):
            assert isinstance(got, tuple) and got[0] is want[0], (op, want, got)
            if want[0] is NotImplementedError:
                assert got[1].endswith(f" not implemented for '{want[1].rsplit(chr(39), 2)[1]}'"), (op, want, got)
        elif isinstance(want, tuple) and len(want) == 2 and hasattr(want[0], "dtype"):   # (values, indices)
            assert [_outcome(lambda v=v: v) for v in got] == [_outcome(lambda v=v: v) for v in want], op
        else:
            assert got == want, (op, want, got)


# ----- hash_tensor -----------------------------------------------------------------------------------------

def test_hash_tensor():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    x[0, 0, :3] = (np.nan, np.inf, -0.0)
    for arr in (x, x.astype(np.float64), x.astype(np.float16), (x * 100).astype(np.int64), (x * 100).astype(np.int8),
                (x * 100).astype(np.uint8), x > 0):
        for dim in (None, 0, -1, (0, 2), [1], (0, 1, 2)):
            for keepdim in (False, True):
                a = ember.hash_tensor(ember.tensor(arr), dim, keepdim=keepdim)
                b = torch.hash_tensor(torch.tensor(arr), dim, keepdim=keepdim)
                assert a.dtype is ember.uint64 and a.shape == b.shape
                np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=f"{arr.dtype} {dim} {keepdim}")
    t = torch.tensor(x).bfloat16()
    e = ember.tensor(x).bfloat16()
    assert ember.hash_tensor(e[1:]).item() == torch.hash_tensor(t[1:]).item()   # (NaN payloads aside)
    assert ember.tensor(x).hash_tensor().item() == torch.tensor(x).hash_tensor().item()
    for bad in (lambda m: m.hash_tensor(m.ones(2), mode=1), lambda m: m.hash_tensor(m.empty(0)),
                lambda m: m.hash_tensor(m.empty(0, 3), 0), lambda m: m.hash_tensor(m.ones(2, dtype=m.uint32)),
                lambda m: m.hash_tensor(m.ones(2, dtype=m.complex64)), lambda m: m.hash_tensor(m.ones(2), 1)):
        with pytest.raises(Exception) as want:
            bad(torch)
        with pytest.raises(type(want.value)) as got:
            bad(ember)
        if want.type is not NotImplementedError:
            assert str(got.value) == str(want.value)
