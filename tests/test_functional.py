"""``ember.autograd.functional`` against ``torch.autograd.functional`` on the same programs: the nesting of the
results (Tensor vs tuple, per output and per input), shapes, dtypes, values, ``requires_grad``, second
derivatives through ``create_graph=True``, and the errors (types and messages)."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
MODS = (torch, ember)
# torch's forward mode (vmap) warns about torch.jit.script internally
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def _rng(*keys):
    return np.random.default_rng(zlib.crc32("/".join(map(str, keys)).encode()))


def assert_same(e, t, path="result", rtol=1e-10):
    """``e`` (ember) has ``t``'s (torch) nesting, and equal tensors at the leaves."""
    if isinstance(t, (tuple, list)):
        assert type(e) is type(t) and len(e) == len(t), f"{path}: {type(e).__name__} vs torch {type(t).__name__}"
        for i, (a, b) in enumerate(zip(e, t)):
            assert_same(a, b, f"{path}[{i}]", rtol)
        return
    assert isinstance(t, torch.Tensor)
    assert isinstance(e, ember.Tensor), f"{path}: {type(e).__name__}, torch gives a Tensor"
    assert tuple(e.shape) == tuple(t.shape), f"{path}: shape {tuple(e.shape)} vs torch {tuple(t.shape)}"
    assert str(e.dtype) == str(t.dtype), f"{path}: dtype"
    assert e.requires_grad == t.requires_grad, f"{path}: requires_grad {e.requires_grad} vs {t.requires_grad}"
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=1e-12, err_msg=path)


def both(program, *shapes, seed="x", requires_grad=False):
    """``program(m, *inputs)`` run by torch and by ember on the same float64 inputs."""
    rng = _rng(seed, *shapes)
    arrays = [rng.uniform(-1, 1, s) for s in shapes]
    out = []
    for m in MODS:
        xs = [m.tensor(a, requires_grad=requires_grad) for a in arrays]
        out.append(program(m, *xs))
    return out


def F(m):
    return m.autograd.functional


# functions of (m, inputs...) -> outputs, covering single/tuple in and out
FUNCS = {
    "tensor_to_tensor": (lambda m: lambda x: m.tanh(x) * x.sum(), [(3,)]),
    "matrix_to_tensor": (lambda m: lambda x: (x @ x.T).exp(), [(2, 3)]),
    "tuple_to_tensor": (lambda m: lambda x, y: x[:, None] * y.sin(), [(2,), (3,)]),
    "tensor_to_tuple": (lambda m: lambda x: (x.exp(), x.pow(2).sum()), [(3,)]),
    "tuple_to_tuple": (lambda m: lambda x, y: (x * y[0], (x.sum() * y).cos(), y.prod()), [(2,), (2,)]),
    "scalar_in": (lambda m: lambda x: m.stack([x, x * x, x.exp()]), [()]),
    "scalar_out": (lambda m: lambda x, y: (x * y).sum(), [(2, 2), (2, 2)]),
    "independent_output": (lambda m: lambda x, y: (x * 2, m.ones(2, dtype=m.float64)), [(2,), (2,)]),
}


def _inputs(m, xs, n):
    return xs[0] if n == 1 else tuple(xs)


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", FUNCS)
def test_jacobian(name, create_graph, vectorize):
    make, shapes = FUNCS[name]
    if name == "independent_output" and create_graph:
        pass   # a constant output: still a zero Jacobian
    t, e = both(lambda m, *xs: F(m).jacobian(make(m), _inputs(m, xs, len(shapes)), create_graph=create_graph,
                                             vectorize=vectorize), *shapes)
    assert_same(e, t)


@pytest.mark.parametrize("name", [n for n in FUNCS if n != "independent_output"])
def test_jacobian_forward_mode(name):
    make, shapes = FUNCS[name]
    t, e = both(lambda m, *xs: F(m).jacobian(make(m), _inputs(m, xs, len(shapes)), vectorize=True,
                                             strategy="forward-mode"), *shapes)
    assert_same(e, t)


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", FUNCS)
def test_vjp_and_jvp(name, create_graph):
    make, shapes = FUNCS[name]

    def vjp(m, *xs):
        inp = _inputs(m, xs, len(shapes))
        outs = make(m)(*xs)
        r = _rng(name, "v")
        v = tuple(m.tensor(r.standard_normal(tuple(o.shape))) for o in (outs if isinstance(outs, tuple) else (outs,)))
        return F(m).vjp(make(m), inp, v if isinstance(outs, tuple) else v[0], create_graph=create_graph)

    def jvp(m, *xs):
        inp = _inputs(m, xs, len(shapes))
        r = _rng(name, "u")
        v = tuple(m.tensor(r.standard_normal(s)) for s in shapes)
        return F(m).jvp(make(m), inp, v if len(shapes) > 1 else v[0], create_graph=create_graph)
    for prog in (vjp, jvp):
        t, e = both(prog, *shapes)
        assert_same(e, t, prog.__name__)


HESS = {
    "one_input": (lambda m: lambda x: (m.tanh(x) ** 2).sum() + x.prod(), [(4,)]),
    "matrix_input": (lambda m: lambda x: (x @ x.T).sin().sum(), [(2, 3)]),
    "two_inputs": (lambda m: lambda x, y: (x.exp() * y[:, None]).sum() * y.sum(), [(3,), (2,)]),
    "scalar_input": (lambda m: lambda x: x.exp() * x, [()]),
    "linear_in_y": (lambda m: lambda x, y: (x ** 3).sum() + y.sum(), [(2,), (2,)]),
}


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", HESS)
def test_hessian(name, create_graph, vectorize):
    make, shapes = HESS[name]
    t, e = both(lambda m, *xs: F(m).hessian(make(m), _inputs(m, xs, len(shapes)), create_graph=create_graph,
                                            vectorize=vectorize), *shapes)
    assert_same(e, t)


HESS_FWD = {
    "one_input": (lambda m: lambda x: (x ** 3).sum() + x[0] * x[1] * x[2], [(4,)]),
    "two_inputs": (lambda m: lambda x, y: (x * y[:, None]).sum() * (y ** 2).sum(), [(3,), (2,)]),
    # forward-over-reverse through a rule that reads the op's saved output (tanh, exp, prod)
    "saved_output": (lambda m: lambda x: (m.tanh(x) ** 2).sum(), [(4,)]),
}


@pytest.mark.parametrize("make,shapes", HESS_FWD.values(), ids=HESS_FWD.keys())
def test_hessian_outer_forward_mode(make, shapes):
    t, e = both(lambda m, *xs: F(m).hessian(make(m), _inputs(m, xs, len(shapes)), vectorize=True,
                                            outer_jacobian_strategy="forward-mode"), *shapes)
    assert_same(e, t)


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", HESS)
def test_hvp_and_vhp(name, create_graph):
    make, shapes = HESS[name]

    def run(fn_name):
        def prog(m, *xs):
            r = _rng(name, "v")
            v = tuple(m.tensor(r.standard_normal(s)) for s in shapes)
            return getattr(F(m), fn_name)(make(m), _inputs(m, xs, len(shapes)), v if len(shapes) > 1 else v[0],
                                          create_graph=create_graph)
        return prog
    for fn_name in ("hvp", "vhp"):
        t, e = both(run(fn_name), *shapes)
        assert_same(e, t, fn_name)


def test_create_graph_then_differentiate_again():
    """Results made with create_graph=True stay attached to the caller's inputs."""
    def prog(m, x, y):
        jac = F(m).jacobian(lambda a, b: (a * b).exp(), (x, y), create_graph=True, vectorize=True)
        hess = F(m).hessian(lambda a: (a ** 4).sum(), x, create_graph=True)
        _, h = F(m).hvp(lambda a: (a.sin() * y).sum(), x, y, create_graph=True)
        _, j = F(m).jvp(lambda a: a.exp() * y, x, y, create_graph=True)
        s = sum(t.sum() for t in jac) + (hess ** 2).sum() + (h * h).sum() + j.pow(3).sum()
        return m.autograd.grad(s, (x, y))
    t, e = both(prog, (3,), (3,), requires_grad=True)
    assert_same(e, t)


def test_results_detached_without_create_graph():
    def prog(m, x):
        return (F(m).jacobian(lambda a: a * 2 + a.exp(), x), F(m).hessian(lambda a: (a ** 3).sum(), x),
                F(m).vjp(lambda a: a.exp(), x, m.ones(3, dtype=m.float64)),
                F(m).jvp(lambda a: a.exp(), x, m.ones(3, dtype=m.float64)))
    t, e = both(prog, (3,), requires_grad=True)
    assert_same(e, t)   # requires_grad compared leaf by leaf: all False


def test_vectorize_matches_loop_and_uses_one_pass(monkeypatch):
    from ember.autograd import engine
    calls = []
    real = engine.run_backward

    def spy(*a, **k):
        calls.append(k.get("batched", False))
        return real(*a, **k)
    monkeypatch.setattr(engine, "run_backward", spy)
    x = ember.tensor(_rng("vec").uniform(-1, 1, 6))
    W = ember.tensor(_rng("W").uniform(-1, 1, (5, 6)))
    loop = F(ember).jacobian(lambda a: ember.tanh(W @ a), x)
    assert calls == [False] * 5
    calls.clear()
    vec = F(ember).jacobian(lambda a: ember.tanh(W @ a), x, vectorize=True)
    assert calls == [True]
    np.testing.assert_allclose(vec.numpy(), loop.numpy(), rtol=1e-12)


# ----- errors ---------------------------------------------------------------------------------------

ERRORS = {
    "hessian_non_scalar": lambda m, x: F(m).hessian(lambda a: a * 2, x),
    "hessian_tuple_out": lambda m, x: F(m).hessian(lambda a: (a.sum(), a.sum()), x),
    "output_not_tensor": lambda m, x: F(m).jacobian(lambda a: 3.0, x),
    "output_tuple_not_tensor": lambda m, x: F(m).vjp(lambda a: (a, 3.0), x, (x, x)),
    "input_list": lambda m, x: F(m).jacobian(lambda a: a, [x]),
    "input_tuple_not_tensor": lambda m, x: F(m).jacobian(lambda a, b: a, (x, 2)),
    "strict_independent": lambda m, x: F(m).jacobian(lambda a: m.ones(3, dtype=m.float64), x, strict=True),
    "strict_unused_input": lambda m, x: F(m).jacobian(lambda a, b: a * 2, (x, x.clone()), strict=True),
    "strict_vjp_unused": lambda m, x: F(m).vjp(lambda a, b: a * 2, (x, x.clone()), x, strict=True),
    "strict_jvp_unused": lambda m, x: F(m).jvp(lambda a, b: a * 2, (x, x.clone()), (x, x), strict=True),
    "strict_hessian_linear": lambda m, x: F(m).hessian(lambda a: a.sum(), x, strict=True),
    "strict_hvp_linear": lambda m, x: F(m).hvp(lambda a: (a * 2).sum(), x, x, strict=True),
    "strict_vhp_unused": lambda m, x: F(m).vhp(lambda a, b: (a * a).sum(), (x, x.clone()), (x, x), strict=True),
    "strict_vectorize": lambda m, x: F(m).jacobian(lambda a: a * a, x, strict=True, vectorize=True),
    "strict_forward_mode": lambda m, x: F(m).jacobian(lambda a: a * a, x, strict=True, vectorize=True,
                                                      strategy="forward-mode"),
    "forward_mode_loop": lambda m, x: F(m).jacobian(lambda a: a * a, x, strategy="forward-mode"),
    "forward_mode_create_graph": lambda m, x: F(m).jacobian(lambda a: a * a, x, create_graph=True,
                                                            vectorize=True, strategy="forward-mode"),
    "bad_strategy": lambda m, x: F(m).jacobian(lambda a: a * a, x, strategy="sideways"),
    "hessian_bad_strategy": lambda m, x: F(m).hessian(lambda a: a.sum(), x, outer_jacobian_strategy="up"),
    "v_wrong_size": lambda m, x: F(m).vjp(lambda a: a * 2, x, m.ones(2, dtype=m.float64)),
    "v_wrong_size_tuple": lambda m, x: F(m).jvp(lambda a, b: a * b, (x, x), (x, m.ones(2, dtype=m.float64))),
    "v_wrong_length": lambda m, x: F(m).jvp(lambda a, b: a * b, (x, x), (x,)),
    "v_single_for_tuple": lambda m, x: F(m).vjp(lambda a: a * 2, x, (x, x)),
    "v_none_non_scalar": lambda m, x: F(m).vjp(lambda a: a * 2, x),
    "v_none_jvp": lambda m, x: F(m).jvp(lambda a: a * 2, x),
    "v_none_hvp": lambda m, x: F(m).hvp(lambda a: (a * 2).sum(), x),
    "hvp_non_scalar": lambda m, x: F(m).hvp(lambda a: a * 2, x, x),
    "vhp_tuple_out": lambda m, x: F(m).vhp(lambda a: (a.sum(),), x, x),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_as_torch(name):
    errs = []
    for m in MODS:
        x = m.tensor([0.5, -1.0, 2.0], dtype=m.float64)
        with pytest.raises(Exception) as info:
            ERRORS[name](m, x)
        errs.append(info.value)
    t, e = errs
    assert type(e) is type(t), f"ember raised {type(e).__name__}: {e}; torch {type(t).__name__}: {t}"
    # the same message, with the library's own names (class names of Tensor types differ)
    norm = [str(x).replace("torch._tensor.Tensor", "T").replace("ember._tensor.Tensor", "T") for x in (t, e)]
    norm[0] = norm[0].replace("Hessian isonly", "Hessian is only")   # (a missing space in PyTorch's text)
    assert norm[1] == norm[0]


def test_v_none_for_single_element():
    for m in MODS:
        x = m.tensor(2.0, dtype=m.float64)
        _, g = F(m).vjp(lambda a: a ** 3, x)
        _, h = F(m).hvp(lambda a: a ** 3, x)
        assert float(g) == 12.0 and float(h) == 12.0


def test_import_paths():
    import importlib
    mod = importlib.import_module("ember.autograd.functional")
    assert ember.autograd.functional is mod
    from ember.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp  # noqa: F401
    assert set(mod.__all__) == set(torch.autograd.functional.__all__)
