"""Small programs written as a new user writes them (tests/usage_programs/), under real torch and under ember.

Each program uses the everyday toolbox the way tutorials do (distributions in a VAE step, REINFORCE, a mixture
fit, Bayesian regression, a flow; checkpoints resumed with ``torch.load``; whole-model pickles; the profiler;
TensorBoard; pruning; ``torch.testing``; print options; ONNX export run in onnxruntime).  Each runs in a fresh
process through tests/programs/_as_torch.py (``import torch`` gives ember there) and what it prints must agree
with real torch's output line by line: the same text, and every number equal or within the program's tolerance.

Masked before comparing: memory addresses (``0x...``) and the package name in reprs of classes
(``ember.nn.utils.prune.L1Unstructured`` is PyTorch's ``torch.nn.utils.prune.L1Unstructured``).

Tolerances (``TOL``, relative) where a program prints float32 results of many steps: ember's float32 sums run in
NumPy's pairwise order and PyTorch's in its vectorised order, and PyTorch's float32 ``log``/``exp`` are its SIMD
(Sleef) functions, 1 ulp from the correctly rounded value in places where NumPy's are correctly rounded (PyTorch's
``log(exp(1.0f))`` is ``1.0``, NumPy's ``0.99999994``); after tens of optimiser steps the last printed digits
of a float32 loss can differ.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "usage_programs"
RUNNER = ROOT / "tests" / "programs" / "_as_torch.py"
NAMES = sorted(p.stem for p in PROGRAMS.glob("*.py") if not p.name.startswith("_"))

# relative tolerance for printed numbers, per program (0: the same text); absolute floor 1e-7 (a number near zero)
TOL = {"gmm": 2e-6, "flow": 2e-6}
_NUM = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _mask(text: str) -> list:
    text = re.sub(r"0x[0-9a-fA-F]+", "0xADDR", text)
    text = re.sub(r"\bember\.", "torch.", text)
    return text.splitlines()


def _run(lib: str, name: str, tmp: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = "1"
    env["PYTHONHASHSEED"] = "0"
    run_dir = tmp / lib
    run_dir.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, str(RUNNER), lib, str(PROGRAMS / f"{name}.py")], cwd=run_dir, env=env,
                          capture_output=True, text=True, timeout=240)


def _same_number(a: str, b: str, rel: float) -> bool:
    x, y = float(a), float(b)
    return abs(x - y) <= max(rel * max(abs(x), abs(y)), 1e-7 if rel else 0.0)


@pytest.mark.parametrize("name", NAMES)
def test_usage_program(name, tmp_path):
    with ThreadPoolExecutor(2) as pool:
        t, e = pool.map(lambda lib: _run(lib, name, tmp_path), ("torch", "ember"))
    assert t.returncode == 0, f"torch's run failed:\n{t.stderr[-3000:]}"
    assert e.returncode == 0, f"ember's run failed:\n{e.stderr[-4000:]}"
    t_lines, e_lines = _mask(t.stdout), _mask(e.stdout)
    assert len(e_lines) == len(t_lines), "\n".join(e_lines)
    rel = TOL.get(name, 0.0)
    for tl, el in zip(t_lines, e_lines):
        if tl == el:
            continue
        assert rel and _NUM.sub("#", tl) == _NUM.sub("#", el), f"\ntorch: {tl}\nember: {el}"
        for a, b in zip(_NUM.findall(tl), _NUM.findall(el)):
            assert _same_number(a, b, rel), f"\ntorch: {tl}\nember: {el}\n{a} vs {b} beyond {rel}"
