"""Mixing torch.autograd with torch.func's transforms (issue 20), differential against torch 2.13.

PyTorch's rules (functorch's levels): inside ``grad(f)`` / ``vjp(f)``, ``f``'s inputs are leaves of the transform's
level, and tensors captured from outside (or computed from captured tensors only) are constants there, so
``autograd.grad`` inside differentiates only through what depends on the inputs; inside ``jvp`` nothing has a reverse
graph; ``backward()`` and ``requires_grad_()`` are refused inside every transform; ``no_grad`` outside a transform is
ignored by it and inside is honoured; in-place writes into the transform's inputs are writes into a leaf that
requires grad, and into a captured tensor are refused. Each case runs with ``L`` = torch and ``L`` = ember on the same
float64 inputs; values (dtype, shape, requires_grad, values) or exception types and messages must agree (the
comparison of tests/test_func_api.py).
"""
from __future__ import annotations

from typing import Any, Callable

import pytest

from test_func_api import _run, _same

torch = pytest.importorskip("torch")

CASES: dict[str, tuple[Callable, str, Any]] = {}


def value(name: str, fn: Callable) -> None:
    assert name not in CASES, name
    CASES[name] = (fn, "value", None)


def raises(name: str, fn: Callable, match: Any = None) -> None:
    assert name not in CASES, name
    CASES[name] = (fn, "raises", match)


def x3(L):
    return L.tensor([0.3, -1.2, 2.0], dtype=L.float64)


def y3(L):
    return L.tensor([0.5, -1.0, 1.5], dtype=L.float64)


def w3(L):
    """A captured tensor that requires grad."""
    return y3(L).requires_grad_()


def batch(L):
    return L.stack([x3(L), x3(L) * 2])


def grad(L, f, *args, **kw):
    return L.func.grad(f, **kw)(*args)


# ----- autograd.grad inside grad: captured tensors are constants of the level ---------------------------------------
def _captured(L, create_graph=True, allow_unused=None, nonleaf=False, materialize=False):
    w = w3(L)
    c = w * 3 if nonleaf else w
    kw = {} if allow_unused is None else {"allow_unused": allow_unused}
    if materialize:
        kw["materialize_grads"] = True
    seen = []

    def f(a):
        gs = L.autograd.grad((a * c).sum() ** 2, c, create_graph=create_graph, **kw)
        seen.append(gs[0] is None)
        return a.sum() if gs[0] is None else gs[0].sum() + a.sum()
    return grad(L, f, x3(L)), seen


raises("captured-leaf-create_graph", lambda L: _captured(L))
raises("captured-leaf", lambda L: _captured(L, create_graph=False))
raises("captured-nonleaf", lambda L: _captured(L, nonleaf=True))
raises("captured-leaf-allow_unused-False", lambda L: _captured(L, allow_unused=False))
value("captured-leaf-allow_unused-gives-None", lambda L: _captured(L, allow_unused=True))
value("captured-nonleaf-allow_unused-gives-None", lambda L: _captured(L, allow_unused=True, nonleaf=True))
value("captured-leaf-materialize_grads-zeros", lambda L: _captured(L, materialize=True))


def _captured_only_output(L, cg):
    w = w3(L)
    return grad(L, lambda a: L.autograd.grad((w * w).sum() ** 2, w, create_graph=cg)[0].sum() * a.sum(), x3(L))


raises("captured-only-output-create_graph", lambda L: _captured_only_output(L, True))
raises("captured-only-output-no-create_graph", lambda L: _captured_only_output(L, False))


def _own_and_captured(L, wrt, cg=True, allow_unused=False):
    w = w3(L)

    def f(a):
        ins = {"a": a, "w": w, "aw": (a, w), "wa": (w, a)}[wrt]
        gs = L.autograd.grad((a * w).sum() ** 2, ins, create_graph=cg, allow_unused=allow_unused)
        return sum(g.sum() for g in gs if g is not None) + a.sum() * 0
    g = grad(L, f, x3(L))
    return g, L.autograd.grad(g.sum(), w, allow_unused=True)   # the result still depends on w below the level


value("own-input-create_graph", lambda L: _own_and_captured(L, "a"))
raises("own-input-no-create_graph", lambda L: _own_and_captured(L, "a", cg=False))
raises("own-and-captured", lambda L: _own_and_captured(L, "aw"))
raises("captured-and-own", lambda L: _own_and_captured(L, "wa"))
value("own-and-captured-allow_unused", lambda L: _own_and_captured(L, "aw", allow_unused=True))


def _wrt_intermediate(L):
    def f(a):
        b = a * 2
        return L.autograd.grad((b ** 2).sum(), b, create_graph=True)[0].sum()
    return grad(L, f, x3(L))


value("wrt-intermediate", _wrt_intermediate)
value("wrt-output-itself", lambda L: grad(L, lambda a: L.autograd.grad(a, a, L.ones(3, dtype=L.float64))[0].sum()
                                          + a.sum(), x3(L)))


def _wrt_captured_made_inside(L):
    w = w3(L)

    def f(a):
        ww = w * w   # computed inside from captured tensors only: a constant of the level
        return L.autograd.grad((a * ww).sum(), ww)[0].sum()
    return grad(L, f, x3(L))


raises("wrt-constant-made-inside", _wrt_captured_made_inside)
raises("wrt-captured-not-requiring-grad", lambda L: grad(
    L, lambda a: L.autograd.grad((a * y3(L)).sum(), [y3(L)][0])[0].sum(), x3(L)))


def _nested(L, wrt_outer):
    def outer(x):
        def inner(y):
            r = L.autograd.grad((x * y).sum() ** 2, x if wrt_outer else y, create_graph=True)[0]
            return r.sum() * x.sum()
        return grad(L, inner, x * 1).sum()
    return grad(L, outer, x3(L))


raises("nested-wrt-outer-input", lambda L: _nested(L, True))
value("nested-wrt-own-input", lambda L: _nested(L, False))


def _fresh_leaf(L, how):
    def f(a):
        if how == "factory":
            t = L.ones(3, dtype=L.float64, requires_grad=True)
        elif how == "tensor":
            t = L.tensor([1.0, 2.0, 3.0], dtype=L.float64, requires_grad=True)
        else:
            t = L.ones(3, dtype=L.float64)
            t.requires_grad = True
        g = L.autograd.grad((a * t * t).sum(), t, create_graph=True)[0]
        return g.sum(), L.tensor([t.requires_grad, (t * 2).requires_grad])
    return L.func.grad(f, has_aux=True)(x3(L))


value("fresh-leaf-factory-requires_grad", lambda L: _fresh_leaf(L, "factory"))
value("fresh-leaf-tensor-requires_grad", lambda L: _fresh_leaf(L, "tensor"))
value("fresh-leaf-requires_grad-setter", lambda L: _fresh_leaf(L, "setter"))


def _fresh_leaf_unused_product(L):
    def f(a):
        t = L.ones(3, dtype=L.float64, requires_grad=True)
        g = L.autograd.grad((a * t * t).sum(), t * t, allow_unused=True)[0]
        return a.sum() * float(g is None)
    return grad(L, f, x3(L))


value("fresh-leaf-product-unused", _fresh_leaf_unused_product)
value("requires_grad-setter-on-input", lambda L: grad(L, lambda a: (setattr(a, "requires_grad", True), a.sum())[1],
                                                      x3(L)))

# ----- requires_grad as the level sees it ---------------------------------------------------------------------------


def _flags(L, how):
    w = w3(L)
    seen = []

    def flags(a, extra=()):
        ww, aw, c = w * w, a * w, x3(L) * 2
        seen.append(L.tensor([w.requires_grad, ww.requires_grad, aw.requires_grad, a.requires_grad, c.requires_grad,
                              ww.detach().requires_grad, (ww + aw).requires_grad, w[0].requires_grad, *extra]))
        return a.sum()
    ones = L.ones(2, 3, dtype=L.float64)
    if how == "grad":
        L.func.grad(flags)(x3(L))
    elif how == "vjp":
        L.func.vjp(flags, x3(L))
    elif how == "jvp":
        L.func.jvp(flags, (x3(L),), (x3(L),))
    elif how == "vmap(grad)":
        L.func.vmap(L.func.grad(flags))(ones)
    elif how == "grad(grad)":
        L.func.grad(lambda b: L.func.grad(lambda a: flags(a, (b.requires_grad, (b * 2).requires_grad)) * b.sum())(
            b * 1).sum())(x3(L))
    else:   # grad(vmap)
        L.func.grad(lambda b: L.func.vmap(lambda a: flags(a, (b.requires_grad, (b * 2).requires_grad)) * b.sum())(
            ones).sum())(x3(L))
    return seen


for _how in ("grad", "vjp", "jvp", "vmap(grad)", "grad(grad)", "grad(vmap)"):
    value(f"requires_grad-inside-{_how}", lambda L, h=_how: _flags(L, h))

# ----- vjp and jvp --------------------------------------------------------------------------------------------------
raises("vjp-captured", lambda L: L.func.vjp(lambda a: L.autograd.grad((a * w3(L)).sum(), [w3(L)][0])[0], x3(L)))


def _vjp_own(L):
    w = w3(L)
    out, fn = L.func.vjp(lambda a: L.autograd.grad((a * w).sum() ** 2, a, create_graph=True)[0], x3(L))
    return out, fn(x3(L))


value("vjp-own-input", _vjp_own)


def _jvp_inside(L, own):
    w = w3(L)
    if own:
        return L.func.jvp(lambda a: L.autograd.grad((w * a).sum(), w, create_graph=True)[0] * a, (x3(L),), (x3(L),))
    return L.func.jvp(lambda a: L.autograd.grad((w * w).sum(), w)[0] * a, (x3(L),), (x3(L),))


raises("jvp-autograd.grad-of-own-input", lambda L: _jvp_inside(L, True))
raises("jvp-autograd.grad-of-captured", lambda L: _jvp_inside(L, False))

# ----- Jacobians of functions that call autograd.grad ---------------------------------------------------------------


def _cube_grad(L):
    return lambda a: L.autograd.grad((a ** 3).sum(), a, create_graph=True)[0]


value("jacrev-of-autograd.grad", lambda L: L.func.jacrev(_cube_grad(L))(x3(L)))
raises("jacfwd-of-autograd.grad", lambda L: L.func.jacfwd(_cube_grad(L))(x3(L)))
value("hessian-of-autograd.grad", lambda L: L.func.hessian(lambda a: _cube_grad(L)(a).sum())(x3(L)))
value("vmap(jacrev)-of-autograd.grad", lambda L: L.func.vmap(L.func.jacrev(_cube_grad(L)))(batch(L)))
raises("jacrev-autograd.grad-of-captured", lambda L: (lambda w: L.func.jacrev(
    lambda a: L.autograd.grad((a * w).sum(), w, create_graph=True)[0])(x3(L)))(w3(L)))

# ----- with vmap ----------------------------------------------------------------------------------------------------


def _vmap_grad_autograd(L, go):
    def f(a, v):
        if go == "none":
            return L.autograd.grad((a ** 3).sum(), a, create_graph=True)[0].sum()
        g = L.ones(3, dtype=L.float64) * 2 if go == "plain" else v
        return L.autograd.grad(a ** 3, a, g, create_graph=True)[0].sum()
    return L.func.vmap(L.func.grad(f))(batch(L), batch(L) * 3)


value("vmap(grad)-autograd.grad-implicit", lambda L: _vmap_grad_autograd(L, "none"))
value("vmap(grad)-autograd.grad-plain-grad_outputs", lambda L: _vmap_grad_autograd(L, "plain"))
value("vmap(grad)-autograd.grad-batched-grad_outputs", lambda L: _vmap_grad_autograd(L, "batched"))
raises("grad(vmap)-autograd.grad-inside-vmap", lambda L: L.func.grad(lambda x: L.func.vmap(
    lambda a: L.autograd.grad((a ** 3).sum(), a, create_graph=True)[0])(x).sum())(batch(L)))
raises("vmap-autograd.grad-of-batched-input", lambda L: L.func.vmap(
    lambda a: L.autograd.grad((a ** 3).sum(), a))(batch(L).requires_grad_()))

# ----- backward() inside the transforms -----------------------------------------------------------------------------


def _backward_inside(L, where):
    w = w3(L)

    def f(a):
        (w * w).sum().backward()
        return a.sum()
    try:
        if where == "grad":
            L.func.grad(f)(x3(L))
        elif where == "vjp":
            L.func.vjp(f, x3(L))
        elif where == "jvp":
            L.func.jvp(f, (x3(L),), (x3(L),))
        else:
            L.func.vmap(f)(batch(L))
    finally:
        assert w.grad is None   # refused before anything accumulated
    return None


for _where in ("grad", "vjp", "jvp", "vmap"):
    raises(f"backward-inside-{_where}", lambda L, w=_where: _backward_inside(L, w))
raises("backward-of-own-input-inside-grad", lambda L: grad(L, lambda a: ((a * a).sum().backward(), a.sum())[1],
                                                           x3(L)))

# ----- grad modes ---------------------------------------------------------------------------------------------------


def _no_grad(L, where):
    w = w3(L)
    seen = []

    def f(a):
        seen.append(L.is_grad_enabled())
        if where == "inside":
            with L.no_grad():
                c = a * w
                seen.append((c.requires_grad, L.is_grad_enabled()))
        else:
            c = a * w
        return (c * a).sum()
    if where == "outside":
        with L.no_grad():
            r = grad(L, f, x3(L))
            seen.append(L.is_grad_enabled())
    else:
        r = grad(L, f, x3(L))
    return r, seen


value("no_grad-inside-grad", lambda L: _no_grad(L, "inside"))
value("no_grad-outside-grad-is-ignored", lambda L: _no_grad(L, "outside"))


def _no_grad_outside_vjp(L):
    w = w3(L)
    with L.no_grad():
        out, fn = L.func.vjp(lambda a: (a * w).sin(), x3(L))
        return out, fn(y3(L))


value("no_grad-outside-vjp", _no_grad_outside_vjp)


def _enable_grad_inside(L):
    w = w3(L)

    def f(a):
        with L.enable_grad():
            return (a * w).sum() * a.sum()
    with L.no_grad():
        return grad(L, f, x3(L))


value("enable_grad-inside-grad-under-no_grad", _enable_grad_inside)
value("set_grad_enabled-False-inside-grad", lambda L: (lambda w: grad(
    L, lambda a: (L.set_grad_enabled(False), (a * w).sum() * a.sum())[1], x3(L)))(w3(L)))

# ----- requires_grad_() inside the transforms -----------------------------------------------------------------------
raises("requires_grad_-False-on-input", lambda L: grad(L, lambda a: a.requires_grad_(False).sum(), x3(L)))
raises("requires_grad_-on-input", lambda L: grad(L, lambda a: a.requires_grad_().sum(), x3(L)))
raises("requires_grad_-on-intermediate", lambda L: grad(L, lambda a: (a * 2).requires_grad_().sum(), x3(L)))
raises("requires_grad_-on-integer-tensor", lambda L: grad(
    L, lambda a: (L.ones(3, dtype=L.long).requires_grad_() * a).sum(), x3(L)))
raises("requires_grad_-non-bool", lambda L: grad(L, lambda a: a.requires_grad_("no").sum(), x3(L)))
raises("requires_grad_-False-inside-vmap", lambda L: L.func.vmap(lambda a: a.requires_grad_(False))(batch(L)))
raises("requires_grad_-inside-jvp", lambda L: L.func.jvp(
    lambda a: a * L.ones(3, dtype=L.float64).requires_grad_(), (x3(L),), (x3(L),)))
value("factory-requires_grad-inside-grad", lambda L: grad(
    L, lambda a: (L.ones(3, dtype=L.float64, requires_grad=True) * a).sum(), x3(L)))

value("Parameter-inside-grad", lambda L: grad(
    L, lambda a: (L.nn.Parameter(L.ones(3, dtype=L.float64)) * a).sum(), x3(L)))
value("Parameter-requires_grad-False-inside-grad", lambda L: grad(
    L, lambda a: (L.nn.Parameter(L.ones(3, dtype=L.float64), requires_grad=False) * a).sum(), x3(L)))
value("Parameter-inside-vmap", lambda L: L.func.vmap(lambda a: L.nn.Parameter(L.ones(3, dtype=L.float64)) * a)(
    batch(L)))
value("Linear-made-inside-grad", lambda L: L.tensor(grad(
    L, lambda a: L.nn.Linear(3, 1, dtype=L.float64)(a).sum(), x3(L)).shape))
raises("Buffer-inside-grad", lambda L: grad(L, lambda a: (L.nn.Buffer(L.ones(3, dtype=L.float64)) * a).sum(), x3(L)))
for _fname, _make in {"arange": lambda L: L.arange(3.0, dtype=L.float64, requires_grad=True),
                      "linspace": lambda L: L.linspace(0, 1, 3, dtype=L.float64, requires_grad=True),
                      "asarray": lambda L: L.asarray([1.0, 2.0, 3.0], dtype=L.float64, requires_grad=True),
                      "tensor-of-a-float": lambda L: L.tensor(2.0, dtype=L.float64, requires_grad=True)}.items():
    value(f"factory-{_fname}-requires_grad-inside-grad", lambda L, m=_make: grad(
        L, lambda a: (m(L) * a).sum(), x3(L)))
raises("retain_grad-of-input-inside-grad", lambda L: grad(L, lambda a: (a.retain_grad(), a.sum())[1], x3(L)))
raises("retain_grad-of-computed-inside-grad", lambda L: grad(L, lambda a: ((a * 2).retain_grad(), a.sum())[1],
                                                             x3(L)))
raises("retain_grad-of-captured-leaf-inside-grad", lambda L: (lambda w: grad(
    L, lambda a: (w.retain_grad(), a.sum())[1], x3(L)))(w3(L)))
raises("retain_grad-of-constant-inside-grad", lambda L: grad(
    L, lambda a: (L.ones(2).retain_grad(), a.sum())[1], x3(L)))
raises("retain_grad-inside-vmap", lambda L: L.func.vmap(lambda a: ((a * 2).retain_grad(), a)[1])(
    batch(L).requires_grad_()))

# ----- in-place writes into the transform's inputs ------------------------------------------------------------------


def _no_grad_write(L, setitem):
    def f(a):
        with L.no_grad():
            if setitem:
                a[0] = 5.0
            else:
                a.mul_(2)
        return (a * a).sum()
    x = x3(L)
    return grad(L, f, x), x


value("no_grad-inplace-on-input", lambda L: _no_grad_write(L, False))
value("no_grad-setitem-on-input", lambda L: _no_grad_write(L, True))


def _no_grad_write_captured(L):
    w = y3(L)

    def f(a):
        with L.no_grad():
            w.mul_(2)
        return (a * w).sum()
    return grad(L, f, x3(L))


raises("no_grad-inplace-on-captured", _no_grad_write_captured)
INPLACE_ON_INPUT: dict[str, Callable] = {
    "mul_": lambda L, a: a.mul_(2).sum(),
    "add_-then-use": lambda L, a: (a.add_(1) * a).sum(),
    "exp_": lambda L, a: a.exp_().sum(),
    "copy_-captured-into-input": lambda L, a: (a.copy_(y3(L)) * 2).sum(),
    "setitem": lambda L, a: (a.__setitem__(0, 5.0), (a * a).sum())[1],
    "view-add_": lambda L, a: (a[:2].add_(1), (a * a).sum())[1],
    "iadd": lambda L, a: (a.__iadd__(1) * 2).sum(),
    "clamp_": lambda L, a: a.clamp_(0, 1).sum(),
}


def _inplace_input(L, op, rg, how="grad"):
    x = x3(L).requires_grad_() if rg else x3(L)
    f = INPLACE_ON_INPUT[op]
    if how == "grad":
        r = grad(L, lambda a: f(L, a), x)
    elif how == "vjp":
        r = L.func.vjp(lambda a: f(L, a), x)[0]
    elif how == "vmap(grad)":
        r = L.func.vmap(L.func.grad(lambda a: f(L, a)))(L.stack([x.detach(), x.detach()]))
    else:   # grad(grad): the inner input is computed from the outer one
        r = grad(L, lambda b: grad(L, lambda a: f(L, a) * b.sum(), b * 1).sum(), x)
    return r, x


for _op in INPLACE_ON_INPUT:
    for _rg in (False, True):
        raises(f"inplace-{_op}-on-input{'-requiring-grad' if _rg else ''}",
               lambda L, op=_op, rg=_rg: _inplace_input(L, op, rg))
for _how in ("vjp", "vmap(grad)", "grad(grad)"):
    raises(f"inplace-mul_-on-input-{_how}", lambda L, h=_how: _inplace_input(L, "mul_", False, h))


def _jvp_inplace(L, rg):
    x = x3(L).requires_grad_() if rg else x3(L)
    return L.func.jvp(lambda a: a.mul_(2), (x,), (L.ones(3, dtype=L.float64),)), x


value("jvp-inplace-on-input-writes-the-primal", lambda L: _jvp_inplace(L, False))
raises("jvp-inplace-on-input-requiring-grad", lambda L: _jvp_inplace(L, True))

# ----- in-place writes into captured tensors ------------------------------------------------------------------------
INPLACE_ON_CAPTURED: dict[str, Callable] = {
    "copy_": lambda L, c, a: c.copy_(a),
    "mul_-constant": lambda L, c, a: c.mul_(2),
    "add_": lambda L, c, a: c.add_(a),
    "add_-scalar": lambda L, c, a: c.add_(2),
    "sub_": lambda L, c, a: c.sub_(a),
    "zero_": lambda L, c, a: c.zero_(),
    "exp_": lambda L, c, a: c.exp_(),
    "fill_": lambda L, c, a: c.fill_(1.0),
    "clamp_": lambda L, c, a: c.clamp_(0, 1),
    "normal_": lambda L, c, a: c.normal_(),
    "iadd": lambda L, c, a: c.__iadd__(a),
    "setitem-basic": lambda L, c, a: c.__setitem__(0, 1.0),
    "setitem-advanced": lambda L, c, a: c.__setitem__(c.new_tensor([0, 1]).long(), a[:2]),
    "view-add_": lambda L, c, a: c[:2].add_(a[:2]),
    "contiguous-mul_": lambda L, c, a: c.contiguous().mul_(2),
    "relu-inplace=True": lambda L, c, a: L.nn.functional.relu(c, inplace=True),
}


def _inplace_captured(L, op, how="grad", rg=False):
    c = y3(L).requires_grad_() if rg else y3(L)
    f = INPLACE_ON_CAPTURED[op]
    try:
        if how == "grad":
            return grad(L, lambda a: (f(L, c, a), (a * c).sum())[1], x3(L))
        if how == "vjp":
            return L.func.vjp(lambda a: (f(L, c, a), a * c)[1], x3(L))[0]
        if how == "jvp":
            return L.func.jvp(lambda a: (f(L, c, a), a * c)[1], (x3(L),), (x3(L),))
        return grad(L, lambda a: L.func.vmap(lambda r: (f(L, c, r), r * 2)[1])(a.reshape(1, 3)).sum(), x3(L))
    finally:
        assert (c.detach() == y3(L)).all()   # refused before the write


for _op in INPLACE_ON_CAPTURED:
    raises(f"captured-{_op}-inside-grad", lambda L, op=_op: _inplace_captured(L, op))
for _how in ("vjp", "jvp", "grad(vmap)"):
    raises(f"captured-add_-inside-{_how}", lambda L, h=_how: _inplace_captured(L, "add_", h))
raises("captured-requiring-grad-add_-inside-grad", lambda L: _inplace_captured(L, "add_", rg=True))


def _nested_captured(L, outer_input):
    def outer(a):
        t = a if outer_input else a * 3
        return grad(L, lambda b: (t.mul_(2) * b).sum(), a).sum()
    return grad(L, outer, x3(L))


raises("nested-inner-writes-outer-made-tensor", lambda L: _nested_captured(L, False))
raises("nested-inner-writes-outer-input", lambda L: _nested_captured(L, True))

# ----- in-place writes that are allowed -----------------------------------------------------------------------------
ALLOWED: dict[str, Callable] = {
    "factory-made-inside": lambda L, a, c: (L.zeros(3, dtype=L.float64).add_(a) * a).sum(),
    "factory-made-inside-constant-write": lambda L, a, c: (L.zeros(3, dtype=L.float64).mul_(2) * a).sum(),
    "computed-from-captured": lambda L, a, c: ((c * 2).add_(a) * a).sum(),
    "clone-of-captured": lambda L, a, c: (c.clone().mul_(2) * a).sum(),
    "computed-from-input": lambda L, a, c: a.sin().mul_(a).sum(),
    "view-of-computed": lambda L, a, c: (lambda t: (t[:2].mul_(a[:2]), t.sum())[1])(a * 1),
    "setitem-of-computed": lambda L, a, c: (lambda t: (t.__setitem__(0, a[1]), (t * a).sum())[1])(a * 1),
    "iadd-of-computed": lambda L, a, c: (lambda t: (t.__iadd__(a) * a).sum())(a * 3),
    "relu-inplace=True-of-computed": lambda L, a, c: (L.nn.functional.relu(a * 1, inplace=True) * a).sum(),
    "into-an-inner-grad-result": lambda L, a, c: L.func.grad(lambda b: (b ** 3).sum())(a).add_(1).mul(a).sum(),
    "into-an-inner-vjp-output": lambda L, a, c: L.func.vjp(lambda b: b.sin(), a)[0].add_(1).mul(a).sum(),
    "into-an-inner-jvp-output": lambda L, a, c: L.func.jvp(lambda b: b.sin(), (a,), (a,))[1].add_(1).mul(a).sum(),
    "into-an-inner-vmap-output": lambda L, a, c: L.func.vmap(lambda r: r * 2)(a.reshape(3, 1)).add_(1).sum(),
}


for _name, _f in ALLOWED.items():
    value(f"allowed-inplace-{_name}", lambda L, f=_f: grad(L, lambda a: f(L, a, y3(L)), x3(L)))
value("vmap-only-writes-captured-with-unbatched-value", lambda L: (lambda c: (
    L.func.vmap(lambda r: (c.mul_(2), r * 2)[1])(batch(L)), c))(y3(L)))


@pytest.mark.parametrize("name", list(CASES))
def test_mix(name):
    fn, kind, detail = CASES[name]
    rt, re_ = _run(fn, torch), _run(fn, __import__("ember"))
    if kind == "raises":
        assert rt[0] == "err", f"(test bug) torch returned {rt[1]!r}"
        assert re_[0] == "err", f"torch raises {rt[1].__name__}: {rt[2]}\nember returned {re_[1]!r}"
        assert re_[1] is rt[1], f"exception type: torch {rt[1].__name__}: {rt[2]}\nember {re_[1].__name__}: {re_[2]}"
        if detail is None:
            assert re_[2] == rt[2], f"message:\ntorch: {rt[2]}\nember: {re_[2]}"
        return
    assert rt[0] == "ok", f"(test bug) torch raised {rt[1].__name__}: {rt[2]}"
    assert re_[0] == "ok", f"valid call refused: ember raised {re_[1].__name__}: {re_[2]}"
    _same(rt[1], re_[1], "result", exact=False)
