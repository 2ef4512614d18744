"""bench/compile.py's workloads compute what they claim: ``ember.compile``'s gradients are eager ember's bit for
bit, eager ember's are torch's and the hand-written NumPy's (so the benchmark's four columns time the same maths).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

_PATH = Path(__file__).resolve().parent.parent / "bench" / "compile.py"
_spec = importlib.util.spec_from_file_location("bench_compile", _PATH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

# max relative difference from eager ember (to the largest gradient): float32 on both sides; the scalar MLP's
# by-hand column computes in Python floats (float64), the MLP step's NumPy sums in another order
_TOL = {"torch": 1e-5, "numpy": 1e-5}


@pytest.mark.parametrize("name", ["chain1", "chain64", "scalar", "mlp", "mlp_adam"])
def test_columns_agree(name):
    cols, flat, _ = bench.workload(name)
    assert set(cols) >= {"ember", "compiled", "torch", "numpy"}
    outs = bench.gradients(cols, flat)
    ref = outs["ember"]
    assert np.isfinite(ref).all() and np.abs(ref).max() > 0
    assert outs["compiled"].dtype == ref.dtype and np.array_equal(outs["compiled"], ref)
    for col, tol in _TOL.items():
        assert outs[col].shape == ref.shape
        assert np.abs(outs[col] - ref).max() <= tol * np.abs(ref).max(), col
    # a second call of the compiled column (a replay once the compiler traces) gives the same gradients
    assert np.array_equal(bench.gradients({"compiled": cols["compiled"]}, flat)["compiled"], ref)
