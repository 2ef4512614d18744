"""Coverage checks itself: every registered primitive, every public op (module function, Tensor method,
operator) and every VJP and JVP rule the op table declares must be exercised by the op database, so no op
or rule can be added untested.

The op database is run once on ember with every primitive's forward and rules and every public function
wrapped by a recorder (swapped in only for that run: the op table carries no recording hook): forward,
backward with create_graph (which reaches the primitives that gradients are made of) and a second backward,
forward mode, and forward-over-reverse. Names tested elsewhere are exempt below, each with the reason, and so
are the few rules the run cannot reach (UNREACHABLE).
"""
from __future__ import annotations

import contextlib
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
    **{n: "the storage side of a tensor (metadata, no values to differentiate): tests/test_storage.py" for n in (
        "is_pinned", "is_set_to", "is_shared", "itemsize", "nbytes", "new", "pin_memory", "resize", "resize_",
        "resize_as_", "set_", "share_memory_", "storage", "storage_offset", "storage_type", "untyped_storage",
        "resize_as", "const_data_ptr", "dim_order")},
    **{n: "removed from PyTorch: raises its removal error (tests/test_torch_names.py)" for n in (
        "lstsq", "solve", "symeig", "eig")},
}

# Rules the op database's run does not reach, and why: (primitive name, "VJP" | "JVP", input index) -> reason.
UNREACHABLE = {
    ("lu_solve", "VJP", 1): "the pivots: an integer tensor, never differentiated (the rule only returns None)",
    **{("grad_link_zero", "JVP", i): "grid_sample has no forward AD (nor has PyTorch's), so its input and grid "
       "never carry a tangent into its double backward's link node (the rule only returns None)" for i in (1, 2)},
    **{(n, "VJP", 0): "linalg.svd's three outputs share one node (LinalgSvdBackward0, ops/linalg/decompositions."
       "py _SvdNode), which runs svd_backward on gU, gS, gVh together (its phase check needs them together): "
       "the per-output rules of U and Vh are that joint rule with one gradient" for n in ("svd_U", "svd_Vh")},
}


def _op(f):
    """The op itself, without the registry's argument-error wrapper (one per public name); a Tensor method
    whose schema numbers positions after self (ember/ops/_schema.py) is the function it was made for."""
    f = f.__wrapped__ if getattr(f, "_ember_public", None) is not None else f
    return getattr(f, "_ember_function", f)


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
            every = range(len(s.args))
            _run_backward(op, s, every if op.supports_grad else (), op.supports_gradgrad)
            if not op.supports_gradgrad:
                # Differentiated anyway, so that the rules raising PyTorch's "not implemented" are reached; input
                # by input too, since the first rule to raise ends the loop over a node's inputs.
                _run_backward(op, s, every, True)
                for j in every:
                    _run_backward(op, s, (j,), True, grad_outputs_grad=False)
            _run_forward_mode(op, s, every)
            if not op.supports_fwd:
                for j in every:
                    _run_forward_mode(op, s, (j,))


def _run_backward(op, s, wrt, gradgrad: bool, grad_outputs_grad: bool = True):
    """Backward through the sample with the inputs at ``wrt`` requiring grad; with ``gradgrad``, a create_graph
    backward and a second one, the incoming gradients requiring grad too (as in gradgradcheck: the second
    backward then reaches the rules for a backward node's incoming gradient) unless ``grad_outputs_grad`` is
    False."""
    xs = [ember.tensor(a, requires_grad=j in wrt) for j, a in enumerate(s.args)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = op.op(ember, *xs, **s.kwargs)
            outs = [o for o in (res if isinstance(res, tuple) else (res,))
                    if isinstance(o, ember.Tensor) and o.requires_grad]
            if not outs:
                return
            vs = [ember.ones((), requires_grad=gradgrad and grad_outputs_grad) for _ in outs]
            wrt_xs = [x for x in xs if x.requires_grad]
            gs = ember.autograd.grad([o.sum() for o in outs], wrt_xs, vs, allow_unused=True, create_graph=gradgrad)
            if gradgrad:
                total = sum((g * g).sum() for g in gs if g is not None and g.requires_grad)
                if isinstance(total, ember.Tensor):
                    ember.autograd.grad(total, wrt_xs + [v for v in vs if v.requires_grad], allow_unused=True)
    except Exception:  # noqa: BLE001 - samples that must raise are part of the database
        pass


def _run_forward_mode(op, s, duals):
    """Forward mode with tangents on the inputs at ``duals``, then forward-over-reverse: the tangent of a
    create_graph backward, which reaches the JVP rules of the primitives that gradients are made of. Tangents
    on both the inputs and the incoming gradients, and on the incoming gradients alone (the one way in for an
    op without forward AD); for an op without double backward, on the inputs alone too (its backward node's
    first JVP rule raises, ending the loop over the node's inputs)."""
    import ember.autograd.forward_ad as fwAD

    def dual(a):
        return fwAD.make_dual(ember.tensor(a), ember.tensor(np.ones_like(a)))

    def inputs(at, requires_grad):
        return [(dual(a) if j in at else ember.tensor(a)).requires_grad_(requires_grad) for j, a in enumerate(s.args)]
    try:
        with fwAD.dual_level(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            op.op(ember, *inputs(duals, False), **s.kwargs)
    except Exception:  # noqa: BLE001
        pass
    variants = [((), True)]
    if op.supports_fwd:
        variants.append((duals, True))
        if not op.supports_gradgrad:
            variants.append((duals, False))
    for at, dual_grad_outputs in variants:
        try:
            with fwAD.dual_level(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                xs = inputs(at, True)
                res = op.op(ember, *xs, **s.kwargs)
                outs = [o for o in (res if isinstance(res, tuple) else (res,))
                        if isinstance(o, ember.Tensor) and o.requires_grad]
                if outs:
                    vs = [dual(np.ones(())) if dual_grad_outputs else ember.ones(()) for _ in outs]
                    ember.autograd.grad([o.sum() for o in outs], xs, vs, allow_unused=True, create_graph=True)
        except Exception:  # noqa: BLE001
            pass


def _bincount_weights_backward(m):
    w = m.ones(5, dtype=m.float64, requires_grad=True)
    m.bincount(m.tensor([0, 1, 1, 3, 0]), weights=w).sum().backward()


def _bincount_weights_forward_ad(m):
    import importlib
    fw = importlib.import_module(f"{m.__name__}.autograd.forward_ad")
    with fw.dual_level():
        w = fw.make_dual(m.ones(5, dtype=m.float64), m.ones(5, dtype=m.float64))
        m.bincount(m.tensor([0, 1, 1, 3, 0]), weights=w)


def _ldl_solve_factor_forward_ad(m):
    import importlib
    fw = importlib.import_module(f"{m.__name__}.autograd.forward_ad")
    a = m.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=m.float64)
    ld, piv = m.linalg.ldl_factor(a)
    with fw.dual_level():   # a tangent on LD itself (ldl_factor's own JVP raises first in the database)
        m.linalg.ldl_solve(fw.make_dual(ld, m.ones_like(ld)), piv, a)


def _vmap_reductions_over_every_dim(m):
    """max()/min()/median() of each example under vmap run primitives of their own (extremum_rows, median_rows):
    their values, per-example gradients and tangents."""
    x = m.tensor([[1.0, 3.0, 3.0], [2.0, 0.5, 4.0]], dtype=m.float64)
    for f in (m.max, m.min, m.median):
        m.func.vmap(f)(x)
        m.func.vmap(m.func.grad(f))(x)
        m.func.vmap(lambda v: m.func.jvp(f, (v,), (m.ones_like(v),))[1])(x)


# Programs for rules the op database cannot reach, run under the recorders too; each must do what it does in
# torch (test_programs_beyond_the_database_match_torch).
BEYOND_DATABASE = {
    # the database's bincount_recorded entry detaches bincount's outputs (it compares node names only)
    "bincount(weights=w).backward()": _bincount_weights_backward,
    "bincount(weights=dual)": _bincount_weights_forward_ad,
    "ldl_solve(dual LD, ...)": _ldl_solve_factor_forward_ad,
    "vmap(max/min/median), their grad and jvp": _vmap_reductions_over_every_dim,
}


def _outcome(fn, m) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(m)
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"
    return "ok"


class Reached:
    """What a recording saw: primitives whose forward ran, public functions called, and rules run, as
    ``(id(primitive), "VJP" | "JVP", input index)`` (``"*"`` for the per-input rules of cat and stack)."""

    def __init__(self):
        self.prims, self.funcs, self.rules = set(), set(), set()
        self.beyond = {}   # BEYOND_DATABASE's outcomes on ember


class _RecordingPerInput(tuple):
    """Stands in for a variadic op's ``_PerInput`` rules (made per input on demand): records each one's use."""

    def __new__(cls, rules, note):
        self = super().__new__(cls)
        self._rules, self._note = rules, note
        return self

    def __getitem__(self, i):
        rule = self._rules[i]
        note = self._note

        def recorded(*args, **kwargs):
            note()
            return rule(*args, **kwargs)
        return recorded


def _recording_rules(p, rules, kind, seen):
    """``rules`` (a primitive's vjps or jvps) with each rule wrapped to add ``(id(p), kind, i)`` to ``seen``."""
    if type(rules) is not tuple:   # rules made per input on demand (cat, stack)
        return _RecordingPerInput(rules, lambda: seen.add((id(p), kind, "*")))

    def recorder(i, rule):
        def recorded(*args, **kwargs):
            seen.add((id(p), kind, i))
            return rule(*args, **kwargs)
        return recorded
    return tuple(None if r is None else recorder(i, r) for i, r in enumerate(rules))


def declared_rules():
    """``(primitive, kind, index)`` for every VJP and JVP rule the op table declares (JVP kinds "linear" and
    "multilinear" declare none: their tangent is the primitive itself)."""
    out = []
    for p in DECLARED:
        for kind, rules in (("VJP", p.vjps), ("JVP", p.jvps)):
            if rules is None:
                continue
            if type(rules) is not tuple:
                out.append((p, kind, "*"))
            else:
                out += [(p, kind, i) for i, r in enumerate(rules) if r is not None]
    return out


@contextlib.contextmanager
def recording():
    """Wrap every primitive's forward and rules, and every public function, with recorders for the duration.

    Swapped in only here (the op table's hot paths carry no recording hook)."""
    seen = Reached()
    saved_prims = [(p, p.forward, p.vjps, p.jvps) for p in DECLARED]

    def prim_recorder(p, fwd):
        def forward(*args, **kwargs):
            seen.prims.add(id(p))
            return fwd(*args, **kwargs)
        return forward

    patched = []

    def func_recorder(f):
        def wrapper(*args, **kwargs):
            seen.funcs.add(id(f))
            return f(*args, **kwargs)
        return wrapper

    try:
        for p, fwd, vjps, jvps in saved_prims:
            p.forward = prim_recorder(p, fwd)
            p.vjps = _recording_rules(p, vjps, "VJP", seen.rules)
            if jvps is not None:
                p.jvps = _recording_rules(p, jvps, "JVP", seen.rules)
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
        yield seen
    finally:
        for obj, name, orig in reversed(patched):
            setattr(obj, name, orig)
        for p, fwd, vjps, jvps in saved_prims:
            p.forward, p.vjps, p.jvps = fwd, vjps, jvps


@pytest.fixture(scope="module")
def reached():
    """Run the database with recorders around every primitive, rule and public function."""
    with recording() as seen:
        _run_database()
        seen.beyond = {name: _outcome(fn, ember) for name, fn in BEYOND_DATABASE.items()}
    return seen


def test_every_primitive_is_exercised(reached):
    # (primitives made on first use, as cat's for each number of inputs, are exercised by being made)
    missing = sorted({f"{p.name} ({p.node_cls.__name__})" for p in DECLARED if id(p) not in reached.prims
                      and p.name not in ("random_fill", "random_sample")})
    assert not missing, f"{len(missing)} primitives never run by the op database: {missing}"


def test_every_public_op_is_exercised(reached):
    missing = sorted({f"{kind}.{name}" for kind, name, f in _public_functions()
                      if id(f) not in reached.funcs and name not in EXEMPT})
    assert not missing, f"{len(missing)} public ops never called by the op database: {missing}"


def test_the_recorders_see_calls():
    # the tests above must be able to fail: the recorders see what runs while they are in place (a forward, a
    # public function, a VJP rule, a JVP rule), nothing that does not run, and nothing once they are gone
    import ember.autograd.forward_ad as fwAD
    exp_p, sin_p = (next(p for p in DECLARED if p.name == n) for n in ("exp", "sin"))
    exp_f, vjps, jvps = ember.exp, exp_p.vjps, exp_p.jvps
    with recording() as seen:
        x = ember.tensor(1.0, requires_grad=True)
        ember.exp(x).backward()
        with fwAD.dual_level():
            y = ember.exp(fwAD.make_dual(ember.tensor(0.0), ember.tensor(2.0)))
            tangent = fwAD.unpack_dual(y).tangent
    assert x.grad.item() == np.float32(np.exp(1.0)) and tangent.item() == 2.0
    assert id(exp_p) in seen.prims and id(_op(EXPORTS["exp"])) in seen.funcs
    assert {(id(exp_p), "VJP", 0), (id(exp_p), "JVP", 0)} <= seen.rules
    assert id(sin_p) not in seen.prims and id(_op(EXPORTS["sin"])) not in seen.funcs
    assert not any(k[0] == id(sin_p) for k in seen.rules)
    # put back as they were: nothing recorded after the block
    assert ember.exp is exp_f and exp_p.vjps is vjps and exp_p.jvps is jvps
    before = (len(seen.prims), len(seen.funcs), len(seen.rules))
    ember.exp(ember.tensor(1.0, requires_grad=True)).backward()
    assert (len(seen.prims), len(seen.funcs), len(seen.rules)) == before


def test_every_rule_is_reached(reached):
    rules = declared_rules()
    missing = sorted(f"{p.name} ({p.node_cls.__name__}) {kind} {i}" for p, kind, i in rules
                     if (id(p), kind, i) not in reached.rules and (p.name, kind, i) not in UNREACHABLE)
    assert not missing, f"{len(missing)} rules never run by the op database: {missing}"
    # the list of exceptions stays honest: each names a declared rule that is indeed never reached
    stale = sorted(str(key) for key in UNREACHABLE
                   if not any((p.name, kind, i) == key for p, kind, i in rules)
                   or any((p.name, kind, i) == key and (id(p), kind, i) in reached.rules for p, kind, i in rules))
    assert not stale, f"UNREACHABLE lists rules that are reached or not declared: {stale}"


def test_programs_beyond_the_database_match_torch(reached):
    torch = pytest.importorskip("torch")
    assert reached.beyond == {name: _outcome(fn, torch) for name, fn in BEYOND_DATABASE.items()}
