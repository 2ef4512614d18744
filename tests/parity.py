"""Run the same code with real PyTorch and with ember, and compare what comes out.

Tests are written once as ``fn(lib)``; ``same(fn)`` runs it with ``lib = torch`` and ``lib = ember``
and compares the results (tensor values, dtypes and shapes, Python values) or, when both raise,
the exception types (and a message fragment where one is given).
"""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _is_tensor(x):
    return isinstance(x, (torch.Tensor, ember.Tensor))


def _norm(x):
    """A library-independent description of a result."""
    if _is_tensor(x):
        return ("T", str(x.dtype), tuple(x.shape), x.detach().resolve_conj().numpy().copy())   # (torch: a lazy conj)
    if isinstance(x, (torch.Size, ember.Size)):
        return ("size", tuple(x))
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(_norm(v) for v in x))
    if isinstance(x, dict):
        return ("dict", tuple((k, _norm(v)) for k, v in x.items()))
    if isinstance(x, (torch.dtype, ember.dtype)):
        return ("dtype", str(x))
    if isinstance(x, np.ndarray):
        return ("nd", str(x.dtype), x.shape, x.copy())
    return x


def run(fn, lib):
    try:
        return ("ok", _norm(fn(lib)))
    except Exception as e:  # noqa: BLE001 - compared by the caller
        return ("err", type(e), str(e))


def _as_float(a):
    return a if a.dtype == bool else a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def assert_same(a, b, path="result", rtol=1e-5, atol=1e-6):
    if isinstance(a, tuple) and a and a[0] in ("T", "nd"):
        assert isinstance(b, tuple) and b and b[0] == a[0], f"{path}: torch {a!r}, ember {b!r}"
        assert a[1] == b[1], f"{path}: dtype {a[1]} (torch) != {b[1]} (ember)"
        assert a[2] == b[2], f"{path}: shape {a[2]} (torch) != {b[2]} (ember)"
        np.testing.assert_allclose(_as_float(b[3]), _as_float(a[3]), rtol=rtol, atol=atol, err_msg=path,
                                   equal_nan=True)
        return
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), f"{path}: {a!r} (torch) != {b!r} (ember)"
        for i, (u, v) in enumerate(zip(a, b)):
            assert_same(u, v, f"{path}[{i}]", rtol, atol)
        return
    if isinstance(a, float) and isinstance(b, float):
        assert b == pytest.approx(a, rel=rtol, abs=atol, nan_ok=True), f"{path}: {a} (torch) != {b} (ember)"
        return
    assert type(a) is type(b) and a == b, f"{path}: {a!r} (torch) != {b!r} (ember)"


def same(fn, *, msg=None, exact_msg=False, rtol=1e-5, atol=1e-6):
    """Run ``fn`` with torch and with ember; both results (or both exceptions) must agree."""
    rt, re_ = run(fn, torch), run(fn, ember)
    if rt[0] == "err" or re_[0] == "err":
        assert rt[0] == re_[0] == "err", f"torch: {rt[:3]!r}\nember: {re_[:3]!r}"
        assert re_[1] is rt[1], f"exception type: torch {rt[1].__name__}, ember {re_[1].__name__}: {re_[2]}"
        if msg is not None:
            assert msg in rt[2], f"(test bug) torch message lacks {msg!r}: {rt[2]}"
            assert msg in re_[2], f"ember message lacks {msg!r}: {re_[2]}"
        if exact_msg:
            assert re_[2] == rt[2]
        return rt
    assert_same(rt[1], re_[1], rtol=rtol, atol=atol)
    return rt


def raises_same(fn, msg=None, exact_msg=False):
    r = same(fn, msg=msg, exact_msg=exact_msg)
    assert r[0] == "err", f"expected an exception, torch returned {r[1]!r}"


def assert_same_run(got, ref, where: str, same, device: str) -> None:
    """One op-database run on a device (``got``) against the CPU's (``ref``), each ``(outputs, gradients)`` or the
    exception raised: the same exception type, or the same outputs and gradients, each pair compared by
    ``same(device_tensor, cpu_tensor, what)`` (tests/test_backend.py, tests/test_array_api_device.py)."""
    if isinstance(ref, Exception):
        assert isinstance(got, Exception), f"{where}: the CPU raised {ref!r}, {device} did not"
        assert type(got) is type(ref), f"{where}: {got!r} on {device}, {ref!r} on the CPU"
        return
    if isinstance(got, Exception):
        raise AssertionError(f"{where}: {type(got).__name__}: {got} on {device} only") from None
    (outs, grads), (ref_outs, ref_grads) = got, ref
    assert len(outs) == len(ref_outs), where
    for i, (o, r) in enumerate(zip(outs, ref_outs)):
        same(o, r, f"{where}: output {i}")
    assert len(grads) == len(ref_grads), where
    for i, (g, r) in enumerate(zip(grads, ref_grads)):
        assert (g is None) == (r is None), f"{where}: gradient {i}"
        if g is not None:
            same(g, r, f"{where}: gradient of input {i}")
