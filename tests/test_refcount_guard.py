"""AccumulateGrad's reference-count shortcut (a first gradient that only the engine holds becomes ``.grad``
without a copy) is decided once at import, and is off where counts do not mean ownership: free-threaded
CPython and PyPy. Off, every first gradient is copied and the values are the same."""
import platform
import sys
import sysconfig

import pytest

import ember
from ember.autograd import graph


@pytest.fixture
def spy(monkeypatch):
    """Records (owned, array) for each accumulate_grad call made by AccumulateGrad.apply."""
    calls = []
    real = graph.accumulate_grad

    def accumulate_grad(t, g, create_graph, owned=False):
        calls.append((owned, g))
        return real(t, g, create_graph, owned)

    monkeypatch.setattr(graph, "accumulate_grad", accumulate_grad)
    return calls


def _backward():
    x = ember.ones(2, 3, requires_grad=True)
    w = ember.full((2, 3), 0.5, requires_grad=True)
    (x * 2 + w * x).sum().backward()
    return x, w


@pytest.mark.parametrize("steal", [True, False])
def test_gradients_are_right_either_way(monkeypatch, spy, steal):
    if steal and not graph.STEAL_SOLE_GRADIENT:
        pytest.skip("this interpreter's reference counts do not mean ownership")
    monkeypatch.setattr(graph, "STEAL_SOLE_GRADIENT", steal)
    x, w = _backward()
    assert x.grad.tolist() == [[2.5] * 3] * 2 and w.grad.tolist() == [[1.0] * 3] * 2
    assert len(spy) == 2
    if steal:   # the engine's fresh arrays are taken as they are
        assert any(owned for owned, _ in spy)
        assert any(leaf.grad._data is g for leaf in (x, w) for _, g in spy)
    else:       # the fallback: never claimed, always copied
        assert not any(owned for owned, _ in spy)
        assert not any(leaf.grad._data is g for leaf in (x, w) for _, g in spy)
    x.grad.add_(1)   # each .grad is its own buffer, writable, and accumulates
    (x * 2).sum().backward()
    assert x.grad.tolist() == [[5.5] * 3] * 2


def test_decision(monkeypatch):
    decide = graph._refcounts_mean_ownership
    if platform.python_implementation() == "CPython" and not sysconfig.get_config_var("Py_GIL_DISABLED"):
        assert decide() and graph.STEAL_SOLE_GRADIENT   # the interpreter the suite runs on
    # free-threaded CPython, GIL off (3.13t, 3.14t)
    monkeypatch.setattr(sys, "_is_gil_enabled", lambda: False, raising=False)
    assert not decide()
    # free-threaded build with the GIL re-enabled at run time (PYTHON_GIL=1): counts are still split
    monkeypatch.setattr(sys, "_is_gil_enabled", lambda: True, raising=False)
    monkeypatch.setattr(sysconfig, "get_config_var", lambda name: 1 if name == "Py_GIL_DISABLED" else None)
    assert not decide()
    monkeypatch.undo()
    # PyPy (and any other implementation)
    monkeypatch.setattr(platform, "python_implementation", lambda: "PyPy")
    assert not decide()
