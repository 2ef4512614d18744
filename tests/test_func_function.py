"""torch.autograd.Function under torch.func's transforms (grad, vjp, jvp, jacrev, jacfwd, vmap and their
compositions), ember against torch 2.13 on the same programs: values, and the exception types and messages of
what PyTorch refuses (a Function without setup_context, without a vmap rule, with both rules, a vmap
staticmethod returning the wrong things, kwarg-only tensors)."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import ember  # noqa: E402


@functools.lru_cache(maxsize=None)
def fns(m):
    """The Functions, defined against module ``m``."""
    F = m.autograd.Function

    class Exp(F):                         # setup_context, backward and jvp, no vmap rule
        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)
            ctx.save_for_forward(output)

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

        @staticmethod
        def jvp(ctx, t):
            y, = ctx.saved_tensors
            return t * y

    class ExpV(Exp):                      # a vmap staticmethod calling the Function on the physical tensors
        @staticmethod
        def vmap(info, in_dims, x):
            return ExpV.apply(x), in_dims[0]

    class ExpG(Exp):                      # generate_vmap_rule; jvp reads an output kept on ctx
        generate_vmap_rule = True

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)
            ctx.out = output

        @staticmethod
        def jvp(ctx, t):
            return t * ctx.out

    class ExpBoth(ExpV):
        generate_vmap_rule = True

    class Old(F):                         # forward(ctx, ...): refused under every transform
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Sum(F):                         # backward expands to a shape saved on ctx (per example under vmap)
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.sum()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.shape = inputs[0].shape

        @staticmethod
        def backward(ctx, g):
            return g.expand(ctx.shape)

        @staticmethod
        def jvp(ctx, t):
            return t.sum()

    class MulAdd(F):                      # two tensor inputs, a number, two outputs; broadcasting
        generate_vmap_rule = True

        @staticmethod
        def forward(x, w, k):
            return x * w + k, (x * w).sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, w, k = inputs
            ctx.save_for_backward(x, w)

        @staticmethod
        def backward(ctx, g1, g2):
            x, w = ctx.saved_tensors
            c = (x * w).cos()
            return g1 * w + g2 * c * w, g1 * x + g2 * c * x, None

        @staticmethod
        def jvp(ctx, tx, tw, tk):
            raise RuntimeError("not used")

    class ScaleV(F):                      # vmap staticmethod with two outputs, one of them unbatched
        @staticmethod
        def forward(x, s):
            return x * s, s * 1

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.s = inputs[1]

        @staticmethod
        def backward(ctx, g, gs):
            return g * ctx.s, None

        @staticmethod
        def vmap(info, in_dims, x, s):
            out = ScaleV.apply(x, s)
            return out, (in_dims[0], None)

    class InfoV(F):                       # reports what the vmap staticmethod got
        @staticmethod
        def forward(x):
            return x + 0

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def vmap(info, in_dims, x):
            return x * 0 + info.batch_size, in_dims[0]

    class BadV(Exp):
        @staticmethod
        def vmap(info, in_dims, x):
            return Exp.apply(x)

    class BadV3(Exp):
        @staticmethod
        def vmap(info, in_dims, x):
            return Exp.apply(x), 0, 0

    class BadV2(Exp):
        @staticmethod
        def vmap(info, in_dims, x):
            return Exp.apply(x), (0, 1)

    class KwOnly(F):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, *, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g

    class TwoOut(F):                      # an integer output marked non-differentiable
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x * 2, x.argmax()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_non_differentiable(output[1])

        @staticmethod
        def backward(ctx, g, gi):
            return g * 2

    class Ident(F):                       # returns its input
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 5

    class Power(F):                       # a number input kept on ctx
        generate_vmap_rule = True

        @staticmethod
        def forward(x, n):
            return x ** n

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.n = inputs[1]

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * ctx.n * x ** (ctx.n - 1), None

    class BadMean(F):                     # its gradient is smaller than the input: refused example by example
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.mean(0)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.n = inputs[0].shape[0]

        @staticmethod
        def backward(ctx, g):
            return (g / ctx.n).unsqueeze(0)

    return {k: v for k, v in locals().items() if isinstance(v, type)}


def _x(m):
    return m.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, -0.6]], dtype=m.float64)


def _w(m):
    return m.tensor([0.7, -0.8, 0.9], dtype=m.float64)


def _programs():
    """name -> program(m): each a composition of transforms over a custom Function."""
    def g(m, name):
        return fns(m)[name].apply

    P = {}
    for name in ("Exp", "ExpV", "ExpG", "ExpBoth", "Old", "Sum", "BadV", "BadV2", "BadV3"):
        def add(label, prog, name=name):
            P[f"{name}-{label}"] = lambda m, prog=prog, name=name: prog(m, g(m, name))
        add("plain", lambda m, f: f(_x(m)))
        add("grad", lambda m, f: m.func.grad(lambda a: f(a).sum())(_x(m)))
        add("vjp", lambda m, f: m.func.vjp(f, _x(m))[1](m.ones_like(f(_x(m))))[0])
        add("jvp", lambda m, f: m.func.jvp(f, (_x(m),), (m.ones_like(_x(m)),))[1])
        add("jacrev", lambda m, f: m.func.jacrev(f)(_x(m)[0]))
        add("jacfwd", lambda m, f: m.func.jacfwd(f)(_x(m)[0]))
        add("vmap", lambda m, f: m.func.vmap(f)(_x(m)))
        add("vmap_dim1", lambda m, f: m.func.vmap(f, in_dims=1)(_x(m)))
        add("vmap_vmap", lambda m, f: m.func.vmap(m.func.vmap(f))(_x(m).reshape(2, 3, 1)))
        add("vmap_grad", lambda m, f: m.func.vmap(m.func.grad(lambda a: f(a).sum()))(_x(m)))
        add("grad_vmap", lambda m, f: m.func.grad(lambda a: m.func.vmap(f)(a).sum())(_x(m)))
        add("grad_vmap_dim1", lambda m, f: m.func.grad(lambda a: (m.func.vmap(f, 1, 1)(a) * _x(m)).sum())(_x(m)))
        add("hessian", lambda m, f: m.func.hessian(lambda a: f(a).sum())(_x(m)[1]))
        add("vmap_unbatched_input", lambda m, f: m.func.vmap(lambda a: f(_w(m)) * a)(_x(m)))
        add("backward_after_vmap", lambda m, f: _backward_after_vmap(m, f))

    def muladd(m, in_dims, wrt):
        f = g(m, "MulAdd")

        def loss(x, w):
            a, b = m.func.vmap(f, in_dims=in_dims)(x, w, 0.5)
            return (a * b).sum() + a.sum()
        return m.func.grad(loss, argnums=wrt)(_x(m), _w(m) if in_dims[1] is None else _x(m) * 2)
    P["MulAdd-vmap"] = lambda m: m.func.vmap(g(m, "MulAdd"), in_dims=(0, None, None))(_x(m), _w(m), 0.5)
    P["MulAdd-grad_vmap_unbatched_w"] = lambda m: muladd(m, (0, None, None), (0, 1))
    P["MulAdd-grad_vmap_both"] = lambda m: muladd(m, (0, 0, None), (0, 1))
    P["MulAdd-grad_vmap_w_bcast"] = lambda m: m.func.grad(
        lambda w: m.func.vmap(g(m, "MulAdd"), in_dims=(0, None, None))(_x(m)[:, :1] * 1, w, 0.5)[0].sum())(_w(m))
    P["ScaleV-vmap"] = lambda m: m.func.vmap(g(m, "ScaleV"), in_dims=(0, None))(_x(m), _w(m))
    P["ScaleV-grad_vmap"] = lambda m: m.func.grad(
        lambda x: m.func.vmap(g(m, "ScaleV"), in_dims=(0, None))(x, _w(m))[0].sum())(_x(m))
    P["InfoV-vmap"] = lambda m: m.func.vmap(g(m, "InfoV"), randomness="same")(_x(m))
    P["InfoV-vmap_dim1"] = lambda m: m.func.vmap(g(m, "InfoV"), in_dims=1)(_x(m))
    P["TwoOut-vmap"] = lambda m: m.func.vmap(g(m, "TwoOut"))(_x(m))
    P["TwoOut-grad_vmap"] = lambda m: m.func.grad(lambda a: m.func.vmap(g(m, "TwoOut"))(a)[0].sum())(_x(m))
    P["TwoOut-vmap_grad"] = lambda m: m.func.vmap(m.func.grad(lambda a: g(m, "TwoOut")(a)[0].sum()))(_x(m))
    P["Ident-vmap"] = lambda m: m.func.vmap(g(m, "Ident"))(_x(m))
    P["Ident-grad_vmap"] = lambda m: m.func.grad(lambda a: m.func.vmap(g(m, "Ident"))(a).sum())(_x(m))
    P["Power-grad_vmap"] = lambda m: m.func.grad(
        lambda a: m.func.vmap(g(m, "Power"), in_dims=(0, None))(a, 3).sum())(_x(m))
    P["Power-grad_vmap_negative_dim"] = lambda m: m.func.grad(
        lambda a: m.func.vmap(g(m, "Power"), in_dims=(-1, None))(a, 2).sum())(_x(m))
    P["BadMean-grad_vmap"] = lambda m: m.func.grad(
        lambda a: m.func.vmap(g(m, "BadMean"), in_dims=1)(a).sum())(_x(m))
    P["KwOnly-vmap"] = lambda m: m.func.vmap(lambda a: g(m, "KwOnly")(a, y=_w(m)))(_x(m))
    P["KwOnly-grad"] = lambda m: m.func.grad(lambda a: g(m, "KwOnly")(a, y=_w(m)).sum())(_x(m))
    return P


def _backward_after_vmap(m, f):
    x = _x(m).requires_grad_()
    m.func.vmap(f)(x).sum().backward()
    return x.grad


PROGRAMS = _programs()


def _run(m, prog):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = prog(m)
        except Exception as e:   # noqa: BLE001  (the exception is the result compared)
            msg = str(e).replace("ember.Tensor", "torch.Tensor").split(" For more details")[0]
            return ("raises", type(e).__name__, msg)
    return ("value", r)


def _flat(r):
    if isinstance(r, (tuple, list)):
        return [y for x in r for y in _flat(x)]
    return [r]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_torch(name):
    prog = PROGRAMS[name]
    want = _run(torch, prog)
    got = _run(ember, prog)
    if want[0] == "raises" or got[0] == "raises":
        if name in _EMBER_RUNS_VMAP_RULE:
            assert got == _run(ember, PROGRAMS[name.rsplit("-", 1)[0] + "-vmap"])
            return
        assert got == want
        return
    tw, te = _flat(want[1]), _flat(got[1])
    assert len(tw) == len(te)
    for a, b in zip(tw, te):
        if isinstance(a, torch.Tensor):
            assert tuple(b.shape) == tuple(a.shape)
            assert b.dtype.__repr__().split(".")[-1] == str(a.dtype).split(".")[-1]
            np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-12, atol=1e-14)
        else:
            assert a == b


# Under jacfwd/hessian (vmap over jvp), ember's jvp batches the primal with its tangent (one physical dual
# tensor), so a Function's vmap staticmethod runs where PyTorch's skips it (the primal is not batched there):
# a correct rule gives the same values; a broken one (these) raises where PyTorch computes.
_EMBER_RUNS_VMAP_RULE = {f"{n}-{t}" for n in ("BadV", "BadV2", "BadV3") for t in ("jacfwd", "hessian")}


def test_every_program_ran_both():
    """The program list covers each kind of outcome (a guard against a table that only compares errors)."""
    kinds = {_run(torch, p)[0] for p in PROGRAMS.values()}
    assert kinds == {"value", "raises"}


def test_vmap_info_is_a_named_tuple():
    seen = []

    class Look(ember.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 1

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def vmap(info, in_dims, x):
            seen.append((info, in_dims, tuple(x.shape)))
            return Look.apply(x), in_dims[0]
    ember.func.vmap(Look.apply, in_dims=1, randomness="different")(ember.zeros(2, 5))
    info, in_dims, shape = seen[0]
    assert (info.batch_size, info.randomness, in_dims, shape) == (5, "different", (1,), (2, 5))
    assert type(info).__name__ == "VmapInfo" and info == (5, "different")


def test_mark_dirty_under_vmap_keeps_the_input():
    """An in-place Function whose vmap staticmethod returns its (physical) input: the caller gets its own
    tensor back, modified, as PyTorch keeps the input's identity."""
    for m in (torch, ember):
        class AddOne(m.autograd.Function):
            @staticmethod
            def forward(x):
                return x.add_(1)

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.mark_dirty(inputs[0])

            @staticmethod
            def backward(ctx, g):
                return g

            @staticmethod
            def vmap(info, in_dims, x):
                return AddOne.apply(x), in_dims[0]

        def f(a):
            b = a * 1
            out = AddOne.apply(b)
            return out is b, out
        x = m.zeros(3, 2)
        same, out = m.func.vmap(f, out_dims=(None, 0))(x)
        assert same is True
        assert out.tolist() == [[1.0, 1.0]] * 3


def _grad_of_cotangents(m, nest):
    """vmap over ``autograd.grad`` of plain (unbatched) outputs with a batch of cotangents: PyTorch's idiom for
    Jacobian rows, and the check gradcheck(check_batched_grad=True) makes."""
    x = _x(m).requires_grad_()
    w = _w(m).requires_grad_()
    y = (x * w).sin().sum(0)

    def vjp(v):
        return m.autograd.grad(y, (x, w), v, retain_graph=True)
    eye = m.eye(3, dtype=m.float64)
    if nest:
        return m.func.vmap(m.func.vmap(vjp))(m.stack([eye, 2 * eye]))
    return m.func.vmap(vjp, in_dims=1)(eye * m.arange(1.0, 4.0, dtype=m.float64))


@pytest.mark.parametrize("nest", [False, True])
def test_vmap_over_autograd_grad_of_cotangents(nest):
    want = _grad_of_cotangents(torch, nest)
    got = _grad_of_cotangents(ember, nest)
    for a, b in zip(want, got):
        assert tuple(b.shape) == tuple(a.shape)
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12, atol=1e-14)
