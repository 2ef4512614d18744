"""torch.from_file: a file's bytes mapped as a 1-d CPU tensor (shared=True writes back), against torch."""
from __future__ import annotations

import os

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _file(tmp_path, name, values=np.arange(10, dtype=np.float32)):
    p = str(tmp_path / name)
    values.tofile(p)
    return p


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)


@pytest.mark.parametrize("kw", [{"size": 10}, {"size": 4, "dtype": "float32"}, {"size": 5, "dtype": "float64"},
                                {"size": 40, "dtype": "uint8"}, {"size": 6, "dtype": "int16"}, {"size": 3,
                                "dtype": "bfloat16"}, {}, {"size": 0}, {"size": 3, "shared": False},
                                {"size": 11}, {"size": -1}])
def test_values_dtypes_and_errors_as_torch(tmp_path, kw):
    p = _file(tmp_path, "a.bin")
    res = []
    for m in (torch, ember):
        args = dict(kw)
        if "dtype" in args:
            args["dtype"] = getattr(m, args["dtype"])
        res.append(_outcome(lambda: (str(m.from_file(p, **args).dtype).replace("torch.", ""),
                                     m.from_file(p, **args).float().tolist())))
    assert res[0] == res[1]


def test_missing_file_as_torch(tmp_path):
    p = str(tmp_path / "missing.bin")
    assert _outcome(lambda: ember.from_file(p, size=1)) == _outcome(lambda: torch.from_file(p, size=1))


@pytest.mark.parametrize("shared", [True, False, None])
def test_writes_reach_the_file_only_when_shared(tmp_path, shared):
    after = []
    for m in (torch, ember):
        p = _file(tmp_path, f"{m.__name__}.bin")
        t = m.from_file(p, shared=shared, size=10)
        t[0] = 100
        t.add_(1)
        del t
        after.append(np.fromfile(p, dtype=np.float32).tolist())
    assert after[0] == after[1]


def test_shared_creates_and_extends_the_file(tmp_path):
    res = []
    for m in (torch, ember):
        p = _file(tmp_path, f"{m.__name__}.bin", np.arange(4, dtype=np.float32))
        t = m.from_file(p, shared=True, size=6)
        q = str(tmp_path / f"{m.__name__}_new.bin")
        u = m.from_file(q, shared=True, size=3)
        res.append((t.tolist(), os.path.getsize(p), u.tolist(), os.path.getsize(q)))
        del t, u
    assert res[0] == res[1]


def test_requires_grad_and_views():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "g.bin")
        np.arange(6, dtype=np.float32).tofile(p)
        t = ember.from_file(p, size=6, requires_grad=True)
        (t * 3).sum().backward()
        assert t.grad.tolist() == [3.0] * 6
        v = t.detach()[2:]
        assert v.storage_offset() == 2 and v.data_ptr() - t.data_ptr() == 8
