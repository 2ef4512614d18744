"""Coverage checks itself: every registered primitive and every public op (module function, Tensor
method, operator) must be exercised by the op database, so no op can be added untested.

The op database is run once on ember with every primitive's forward and every public function wrapped
by a recorder: forward, backward with create_graph (which reaches the primitives that gradients are made
of) and a second backward. Names tested elsewhere are exempt below, each with the reason.
"""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import ember  # noqa: E402
from ember.ops import EXPORTS, METHODS  # noqa: E402
from ember.ops import DECLARED  # noqa: E402
from ember.ops._registry import SUBMODULES  # noqa: E402
from op_db import OP_DB  # noqa: E402

# Public names whose tests live outside the op database, and why.
EXEMPT = {
    **{n: "random sampling: tests/test_random.py checks PyTorch's exact stream" for n in (
        "uniform_", "normal_", "bernoulli_", "exponential_", "random_", "geometric_", "cauchy_", "log_normal_",
        "bernoulli", "multinomial")},
    "__iter__": "iteration: tests/test_tensor.py",
    "layout": "a property, always torch.strided: tests/test_argument_errors.py",
    "LinAlgError": "an exception class (ember.linalg.LinAlgError), not an op",
}


def _op(f):
    """The op itself, without the registry's argument-error wrapper (one per public name)."""
    return f.__wrapped__ if getattr(f, "_ember_public", None) is not None else f


def _public_functions():
    """(kind, name, function) for every registered public op."""
    out = [("ember", n, _op(f)) for n, f in EXPORTS.items()]
    out += [("Tensor", n, _op(f)) for n, f in METHODS.items() if callable(f)]
    out += [("Tensor", n, f.fget) for n, f in METHODS.items() if isinstance(f, property)]
    out += [(f"ember.{m}", n, _op(f)) for m, table in SUBMODULES.items() for n, f in table.items()]
    return out


def _run_database():
    for op in OP_DB:
        for s in op.sample_inputs():
            xs = [ember.tensor(a, requires_grad=op.supports_grad) for a in s.args]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = op.op(ember, *xs, **s.kwargs)
                    outs = [o for o in (res if isinstance(res, tuple) else (res,))
                            if isinstance(o, ember.Tensor) and o.requires_grad]
                    if not outs:
                        continue
                    gs = ember.autograd.grad([o.sum() for o in outs], xs, allow_unused=True,
                                             create_graph=op.supports_gradgrad)
                    if op.supports_gradgrad:
                        total = sum((g * g).sum() for g in gs if g is not None and g.requires_grad)
                        if isinstance(total, ember.Tensor):
                            ember.autograd.grad(total, xs, allow_unused=True)
            except Exception:  # noqa: BLE001 - samples that must raise are part of the database
                pass
            if op.supports_fwd:
                _run_forward_mode(op, s)


def _run_forward_mode(op, s):
    import ember.autograd.forward_ad as fwAD
    try:
        with fwAD.dual_level(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            xs = [fwAD.make_dual(ember.tensor(a), ember.tensor(np.ones_like(a))) for a in s.args]
            op.op(ember, *xs, **s.kwargs)
    except Exception:  # noqa: BLE001
        pass


@pytest.fixture(scope="module")
def reached():
    """Run the database with recorders around every primitive and public function."""
    prims, funcs = set(), set()
    # the op table's primitives (tests declare some of their own, which are not part of it)
    saved_prims = [(p, p.forward) for p in DECLARED]

    def prim_recorder(p, fwd):
        def forward(*args, **kwargs):
            prims.add(id(p))
            return fwd(*args, **kwargs)
        return forward

    for p, fwd in saved_prims:
        p.forward = prim_recorder(p, fwd)
    patched = []

    def func_recorder(f):
        def wrapper(*args, **kwargs):
            funcs.add(id(f))
            return f(*args, **kwargs)
        return wrapper

    for kind, name, f in _public_functions():
        if kind == "Tensor":
            orig = ember.Tensor.__dict__[name]
            new = property(func_recorder(f)) if isinstance(orig, property) else func_recorder(f)
            patched.append((ember.Tensor, name, orig))
            setattr(ember.Tensor, name, new)
        else:
            mod = sys.modules[kind] if kind != "ember" else ember
            patched.append((mod, name, getattr(mod, name)))
            setattr(mod, name, func_recorder(f))
    try:
        _run_database()
    finally:
        for obj, name, orig in reversed(patched):
            setattr(obj, name, orig)
        for p, fwd in saved_prims:
            p.forward = fwd
    return prims, funcs, saved_prims


def test_every_primitive_is_exercised(reached):
    # (primitives made on first use, as cat's for each number of inputs, are exercised by being made)
    prims, _, declared = reached
    missing = sorted({f"{p.name} ({p.node_cls.__name__})" for p, _ in declared if id(p) not in prims
                      and p.name not in ("random_fill", "random_sample")})
    assert not missing, f"{len(missing)} primitives never run by the op database: {missing}"


def test_every_public_op_is_exercised(reached):
    _, funcs, _ = reached
    missing = sorted({f"{kind}.{name}" for kind, name, f in _public_functions()
                      if id(f) not in funcs and name not in EXEMPT})
    assert not missing, f"{len(missing)} public ops never called by the op database: {missing}"


def test_the_recorders_see_calls():
    # the test above must be able to fail: a call outside the database is not recorded as database coverage
    assert callable(ember.exp) and np.isfinite(ember.exp(ember.tensor(1.0)).item())
