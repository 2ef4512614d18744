"""The misuse catalogue (``misuse_cases.py``), each case run under real torch and under ember.

Both raise: the same exception type, and ember's message is non-empty and free of NumPy wording.
Both return: the same values, dtypes and shapes. torch raises and ember returns: bad input accepted.
ember raises AttributeError, a NumPy exception, or from inside NumPy: an internal error leaked.
"""
import os
import traceback
import warnings

import numpy as np
import pytest

import ember
from misuse_cases import CASES, xfail_reason
from parity import _norm, assert_same

torch = pytest.importorskip("torch")

NUMPY_WORDS = ("ndarray", "numpy", "axis ", "broadcast together", "operands could not", "array")
_NUMPY_DIR = os.path.dirname(np.__file__)


def _restore(lib):
    """Undo global state a case may leave behind (grad mode, default dtype, the CPU autocast state: PyTorch keeps
    ``set_autocast_dtype('cpu', torch.int64)``, which would turn later autocast regions' results into int64)."""
    lib.set_grad_enabled(True)
    lib.set_default_dtype(lib.float32)
    lib.set_autocast_dtype("cpu", lib.bfloat16)
    lib.set_autocast_enabled("cpu", False)
    if hasattr(lib, "_C") and hasattr(lib._C, "_set_grad_enabled"):
        lib._C._set_grad_enabled(True)


def _run(fn, lib):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", _norm(fn(lib)), None
    except Exception as e:  # noqa: BLE001 - compared below
        return "err", e, traceback.extract_tb(e.__traceback__)
    finally:
        _restore(lib)


def _from_numpy(tb) -> bool:
    """The exception was raised inside NumPy's own code (a leaked internal error)."""
    return bool(tb) and tb[-1].filename.startswith(_NUMPY_DIR)


def _params():
    out = []
    for c in CASES:
        reason = xfail_reason(c.id)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


def verdict(case):
    """None when ember agrees with torch on ``case``, else what is wrong (one paragraph)."""
    kt, rt, _ = _run(case.fn, torch)
    ke, re_, tb = _run(case.fn, ember)
    if ke == "err":
        name = type(re_).__name__
        if isinstance(re_, AttributeError) and not (kt == "err" and isinstance(rt, AttributeError)):
            return f"internal AttributeError leaked: {re_}"
        if type(re_).__module__.startswith("numpy"):
            return f"NumPy exception leaked: {name}: {re_}"
        if _from_numpy(tb):
            return f"error raised inside NumPy leaked: {name}: {re_}"
    if kt == "err" and ke == "ok":
        return f"bad input accepted: torch raises {type(rt).__name__}: {rt}\nember returned {re_!r}"
    if kt == "ok" and ke == "err":
        return f"valid input refused: torch returned {rt!r}\nember raised {type(re_).__name__}: {re_}"
    if kt == "err":
        msg, tmsg = str(re_), str(rt)
        # torch.norm and a few other Python-level torch functions leak AttributeError themselves;
        # ember's TypeError naming the argument is the better answer there.
        if type(re_) is not type(rt) and not (isinstance(rt, AttributeError) and type(re_) is TypeError):
            return f"exception type: torch {type(rt).__name__}: {tmsg}\nember {type(re_).__name__}: {msg}"
        if not msg.strip():
            return f"ember's {type(re_).__name__} has an empty message (torch: {tmsg})"
        for w in NUMPY_WORDS:
            if w in msg.lower() and w not in tmsg.lower():
                return f"NumPy wording {w!r} in ember's message: {msg}"
        if case.op is not None and case.op in tmsg and case.op not in msg:
            return f"ember's message does not name {case.op!r}: {msg}\n(torch: {tmsg})"
        if case.msg is not None and case.msg not in tmsg:
            return f"(catalogue bug) torch message lacks {case.msg!r}: {tmsg}"
        if case.msg is not None and case.msg not in msg:
            return f"ember message lacks {case.msg!r}: {msg}\n(torch: {tmsg})"
        return None
    try:
        assert_same(rt, re_, rtol=case.rtol)
    except AssertionError as e:
        return f"different result: {e}"
    return None


@pytest.mark.parametrize("case", _params())
def test_misuse(case):
    problem = verdict(case)
    if problem is not None:
        pytest.fail(problem, pytrace=False)


def test_catalogue_size():
    assert len(CASES) >= 300
    assert len({c.id for c in CASES}) == len(CASES)
