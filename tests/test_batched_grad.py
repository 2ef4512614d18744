"""``autograd.grad(..., is_grads_batched=True)``: B vector-Jacobian products in one backward pass.

* every op-database sample: the batched result equals the B row-by-row results stacked (plain backward,
  ``create_graph=True``, and a batched backward through a first-order gradient's graph, which runs the
  second-order rules), and every primitive declared batch-safe is exercised by some sample;
* the batch really is one pass: the programs of bench/functional.py run no node row by row;
* against torch: values, ``create_graph`` then differentiate again, hooks, custom Functions, errors.

The default run takes the first samples of each op; ``EMBER_SLOW=1`` sweeps them all.
"""
from __future__ import annotations

import os
import sys
import warnings
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import ember  # noqa: E402
from ember.autograd import engine  # noqa: E402
from ember.autograd._primitive import PRIMITIVES, PrimNode  # noqa: E402
from op_db import OP_DB  # noqa: E402

SLOW = os.environ.get("EMBER_SLOW") == "1"
B = 3


# ----- the op-database sweep ---------------------------------------------------------------------------

def _cases(per_op):
    out = []
    for op in OP_DB:
        if not op.supports_grad:
            continue
        for k, s in enumerate(op.sample_inputs()):
            if SLOW or k < per_op:
                out.append(pytest.param(op, s, id=f"{op.name}-{s.desc}"))
    return out


def _call(op, sample):
    xs = [ember.tensor(np.array(a)).requires_grad_() for a in sample.args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = op.op(ember, *xs, **sample.kwargs)
    outs = list(res) if isinstance(res, tuple) else [res]
    outs = [o for o in outs if isinstance(o, ember.Tensor) and o.requires_grad and o.is_floating_point()]
    return xs, outs


def _rng(*keys):
    return np.random.default_rng(zlib.crc32("/".join(map(str, keys)).encode()))


def _batched_vs_rows(outs, inputs, gos, create_graph):
    """grad(is_grads_batched=True) against the B single-row calls stacked (an error must be the same)."""
    try:
        want_rows = [ember.autograd.grad(outs, inputs, [g[b] for g in gos], retain_graph=True, allow_unused=True)
                     for b in range(B)]
    except Exception as e:  # noqa: BLE001  (the op's backward raises: the batched call must raise the same)
        with pytest.raises(type(e)):
            ember.autograd.grad(outs, inputs, gos, retain_graph=True, allow_unused=True, is_grads_batched=True,
                                create_graph=create_graph)
        return
    got = ember.autograd.grad(outs, inputs, gos, retain_graph=True, allow_unused=True, is_grads_batched=True,
                              create_graph=create_graph)
    assert len(got) == len(inputs)
    for i, (g, x) in enumerate(zip(got, inputs)):
        rows = [r[i] for r in want_rows]
        if g is None:
            assert all(r is None for r in rows), f"input {i}: batched gradient is None, rows are not"
            continue
        assert g.shape == (B,) + tuple(x.shape), f"input {i}: shape {tuple(g.shape)}"
        assert g.requires_grad == (create_graph and g.grad_fn is not None)
        want = np.stack([np.zeros(tuple(x.shape)) if r is None else r.detach().numpy() for r in rows])
        assert g.dtype == x.dtype
        np.testing.assert_allclose(g.detach().numpy(), want, rtol=1e-10, atol=1e-12, equal_nan=True,
                                   err_msg=f"input {i}")


@pytest.mark.parametrize("create_graph", [False, True], ids=["plain", "create_graph"])
@pytest.mark.parametrize("op,sample", _cases(2))
def test_op_db_batched(op, sample, create_graph):
    xs, outs = _call(op, sample)
    if not outs:
        pytest.skip("no differentiable floating output")
    rng = _rng(op.name, sample.desc)
    gos = [ember.tensor(rng.standard_normal((B,) + tuple(o.shape)), dtype=o.dtype) for o in outs]
    _batched_vs_rows(outs, xs, gos, create_graph)


@pytest.mark.parametrize("op,sample", _cases(1))
def test_op_db_batched_through_a_gradient(op, sample):
    """Batched backward through the graph of a first-order gradient (the second-order rules; hessian)."""
    if not op.supports_gradgrad:
        pytest.skip("no second derivative")
    xs, outs = _call(op, sample)
    if not outs:
        pytest.skip("no differentiable floating output")
    rng = _rng(op.name, sample.desc, "gg")
    vs = [ember.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype).requires_grad_() for o in outs]
    try:
        grads = ember.autograd.grad(outs, xs, vs, create_graph=True, allow_unused=True)
    except Exception:  # noqa: BLE001  (test_ops covers the op's own errors)
        pytest.skip("first-order backward raises")
    pairs = [(g, x) for g, x in zip(grads, xs) if g is not None and g.requires_grad]
    if not pairs:
        pytest.skip("the gradient is constant")
    gos = [ember.tensor(rng.standard_normal((B,) + tuple(g.shape)), dtype=g.dtype) for g, _ in pairs]
    _batched_vs_rows([g for g, _ in pairs], xs + vs, gos, False)


def _graph_prims(outs):
    seen, stack, prims = set(), [o.grad_fn for o in outs if o.grad_fn is not None], set()
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, PrimNode):
            prims.add(n._prim)
        stack.extend(nxt for nxt, _ in n.next_functions)
    return prims


def test_every_batch_safe_primitive_is_exercised():
    """A primitive declared batch-safe is only as proven as the samples that reach it (first order, and
    second order for the rules the double backward runs)."""
    seen = set()
    for op in OP_DB:
        if not op.supports_grad:
            continue
        for s in op.sample_inputs():
            try:
                xs, outs = _call(op, s)
            except Exception:  # noqa: BLE001
                continue
            seen |= _graph_prims(outs)
            if op.supports_gradgrad and outs:
                try:
                    grads = ember.autograd.grad(outs, xs, [ember.ones_like(o).requires_grad_() for o in outs],
                                                create_graph=True,
                                                allow_unused=True)
                except Exception:  # noqa: BLE001
                    continue
                seen |= _graph_prims([g for g in grads if g is not None])
    declared = [p for p in PRIMITIVES if p.batch is not False]
    assert len(declared) > 100
    missing = [f"{p.name} ({p.node_cls.__name__})" for p in declared if p not in seen]
    assert not missing, f"declared batch-safe but no op-database sample reaches them: {missing}"


# ----- one pass, not a loop ----------------------------------------------------------------------------

@pytest.fixture
def row_nodes(monkeypatch):
    """The names of the primitive nodes run by ``apply`` (in a batched backward: row by row)."""
    names = []
    real = PrimNode.apply

    def spy(self, grads, create_graph, needed):
        names.append(self.name())
        return real(self, grads, create_graph, needed)
    monkeypatch.setattr(PrimNode, "apply", spy)
    return names


def test_bench_programs_run_no_node_row_by_row(row_nodes):
    rng = np.random.default_rng(0)
    W = ember.tensor(rng.standard_normal((8, 8)) / 3)
    x = ember.tensor(rng.standard_normal(8), requires_grad=True)
    y = ember.tanh(W @ x)
    (jac,) = ember.autograd.grad(y, x, ember.eye(8, dtype=ember.float64), is_grads_batched=True)
    assert row_nodes == []
    # the Hessian's batched pass runs through the graph of the gradient
    A = ember.tensor(rng.standard_normal((5, 8)))
    (g,) = ember.autograd.grad((ember.tanh(A @ x) ** 2).sum(), x, create_graph=True)
    row_nodes.clear()
    (hess,) = ember.autograd.grad(g, x, ember.eye(8, dtype=ember.float64), is_grads_batched=True)
    assert row_nodes == []
    # and a node with no batched rule of its own (cumprod) runs its rules once, under vmap (every operation in
    # them batched by its vmap rule), not row by row
    eye = ember.eye(8, dtype=ember.float64)
    p = ember.cumprod(x, 0).exp()
    (c,) = ember.autograd.grad(p, x, eye, is_grads_batched=True, retain_graph=True)
    assert row_nodes == ["CumprodBackward0"]
    rows = [ember.autograd.grad(p, x, eye[i], retain_graph=True)[0].numpy() for i in range(8)]
    np.testing.assert_allclose(c.numpy(), np.stack(rows), rtol=1e-12)
    np.testing.assert_allclose(jac.numpy(), (1 - y.detach().numpy() ** 2)[:, None] * W.numpy(), rtol=1e-12)


# ----- against torch ----------------------------------------------------------------------------------

torch = pytest.importorskip("torch")


def _both(fn, *arrays, requires_grad=True):
    out = []
    for m in (torch, ember):
        xs = [m.tensor(a, requires_grad=requires_grad) for a in arrays]
        out.append((m, xs, fn(m, *xs)))
    return out


def _close(e, t, **kw):
    assert (e is None) == (t is None)
    if e is None:
        return
    assert tuple(e.shape) == tuple(t.shape) and str(e.dtype) == str(t.dtype)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **({"rtol": 1e-12} | kw))


PROGRAMS = {
    "mlp": (lambda m, x, W: m.tanh(x @ W).sum(-1), [(4, 3), (3, 3)]),
    "two_outputs": (lambda m, x, y: ((x * y).exp(), (x[:, None] - y).pow(2).mean(0)), [(3,), (3,)]),
    "dot": (lambda m, x, y: m.dot(x, y), [(4,), (4,)]),
    "reductions": (lambda m, x: (x.sum(1), x.permute(1, 0).reshape(-1), x.cumsum(0)), [(2, 3)]),
    "indexing": (lambda m, x: (x[1], x[:, 1:], m.cat([x, x * 2], 1), m.stack([x, x], 0)), [(2, 3)]),
}


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", PROGRAMS)
def test_matches_torch(name, create_graph):
    fn, shapes = PROGRAMS[name]
    rng = _rng(name)
    arrays = [rng.standard_normal(s) for s in shapes]
    res = {}
    for m, xs, outs in _both(fn, *arrays):
        outs = outs if isinstance(outs, tuple) else (outs,)
        r = _rng(name, "v")
        gos = [m.tensor(r.standard_normal((5,) + tuple(o.shape)), requires_grad=create_graph) for o in outs]
        grads = m.autograd.grad(outs, xs, gos, is_grads_batched=True, create_graph=create_graph)
        second = None
        if create_graph:   # differentiate the batched gradients again
            s = sum((g * g).sum() for g in grads)
            second = m.autograd.grad(s, xs + gos, allow_unused=True)
        res[m] = (grads, second)
    (tg, t2), (eg, e2) = res[torch], res[ember]
    for e, t in zip(eg, tg):
        _close(e, t)
        assert e.requires_grad == t.requires_grad
    if create_graph:
        for e, t in zip(e2, t2):
            _close(e, t, rtol=1e-10)


def test_hooks_and_custom_functions_see_one_row():
    seen = {}
    res = {}
    for m in (torch, ember):
        class Twice(m.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                seen.setdefault((m.__name__, "fn"), set()).add(tuple(g.shape))
                return g * 2
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        z = Twice.apply(x) * x

        def hook(g, m=m):
            seen.setdefault((m.__name__, "hook"), set()).add(tuple(g.shape))
            return g * m.tensor([1.0, 0.0, 2.0])
        z.register_hook(hook)
        res[m] = m.autograd.grad(z * 3, x, m.arange(12.0).reshape(4, 3), is_grads_batched=True)[0]
    _close(res[ember], res[torch])
    assert seen[("ember", "hook")] == seen[("torch", "hook")] == {(3,)}
    assert seen[("ember", "fn")] == seen[("torch", "fn")] == {(3,)}


def test_materialize_and_unused_as_torch():
    for m in (torch, ember):
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = m.tensor([1.0, 2.0], requires_grad=True)
        gx, gy = m.autograd.grad(x * 2, (x, y), m.ones(4, 3), is_grads_batched=True, allow_unused=True)
        assert gy is None and tuple(gx.shape) == (4, 3)
        # PyTorch materializes an unused input's gradient unbatched, with the input's shape
        gx, gy = m.autograd.grad(x * 2, (x, y), m.ones(4, 3), is_grads_batched=True, materialize_grads=True)
        assert tuple(gy.shape) == (2,)


ERRORS = {
    "wrong_shape": lambda m, x: m.autograd.grad(x * 2, x, m.ones(4, 2), is_grads_batched=True),
    "unbatched": lambda m, x: m.autograd.grad(x * 2, x, m.ones(3), is_grads_batched=True),
    "zero_dim": lambda m, x: m.autograd.grad(x.sum(), x, m.ones(()), is_grads_batched=True),
    "implicit_scalar": lambda m, x: m.autograd.grad(x.sum(), x, is_grads_batched=True),
    "implicit_nonscalar": lambda m, x: m.autograd.grad(x * 2, x, is_grads_batched=True),
    "batch_sizes": lambda m, x: m.autograd.grad((x * 2, x * 3), x, (m.ones(4, 3), m.ones(5, 3)),
                                                is_grads_batched=True),
    "empty_batch": lambda m, x: m.autograd.grad(x * 2, x, m.ones(0, 3), is_grads_batched=True),
    "not_tensor": lambda m, x: m.autograd.grad(x * 2, x, [[1.0, 2.0, 3.0]], is_grads_batched=True),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_as_torch(name):
    errs = []
    for m in (torch, ember):
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with pytest.raises(Exception) as info:
            ERRORS[name](m, x)
        errs.append(info.value)
    t, e = errs
    assert type(e) is type(t), f"ember raised {type(e).__name__}: {e}; torch {type(t).__name__}: {t}"
    if name in ("batch_sizes", "implicit_scalar", "zero_dim", "empty_batch"):
        assert str(e) == str(t)
    if name == "wrong_shape":
        assert str(e).startswith("If `is_grads_batched=True`, we interpret the first dimension")
        assert "grad_output[0] has a shape of torch.Size([2]) and output[0] has a shape of torch.Size([3])" \
            in str(e)


def test_backward_has_no_is_grads_batched():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError):
        ember.autograd.backward((x * 2).sum(), is_grads_batched=True)
    with pytest.raises(TypeError):
        (x * 2).sum().backward(is_grads_batched=True)


def test_node_hooks_see_one_row():
    res, seen = {}, {}
    for m in (torch, ember):
        shapes = seen.setdefault(m.__name__, set())
        x = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
        z = x.exp() * 2
        z.grad_fn.register_prehook(lambda go, s=shapes: s.add(("pre", tuple(go[0].shape))) or (go[0] * 3,))
        z.grad_fn.register_hook(lambda gi, go, s=shapes: s.add(("post", tuple(gi[0].shape))) or (gi[0] + 1, None))
        res[m] = m.autograd.grad(z, x, m.arange(6.0, dtype=m.float64).reshape(2, 3), is_grads_batched=True)[0]
    _close(res[ember], res[torch])
    assert seen["ember"] == seen["torch"] == {("pre", (3,)), ("post", (3,))}


def test_custom_function_rows_under_create_graph():
    """A custom Function runs row by row; with create_graph its rows stack into a differentiable result."""
    res = {}
    for m in (torch, ember):
        class Cube(m.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a ** 3

            @staticmethod
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                return 3 * a * a * g
        x = m.tensor([0.5, -1.0, 2.0], dtype=m.float64, requires_grad=True)
        v = m.tensor(_rng("cube").standard_normal((4, 3)), requires_grad=True)
        (g,) = m.autograd.grad(Cube.apply(x).sin(), x, v, is_grads_batched=True, create_graph=True)
        res[m] = (g,) + m.autograd.grad((g ** 2).sum(), (x, v))
    for e, t in zip(res[ember], res[torch]):
        _close(e, t, rtol=1e-10)
