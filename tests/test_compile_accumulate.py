"""ember.compile's backward node adds into its leaves' .grad itself where the engine would run only their
AccumulateGrad nodes after it (and no hook is there to see them run); everywhere else the engine runs them. Every
case compares the compiled model with the same model run eagerly, bit for bit, and says which path it took, so that
a direct accumulation that skipped a hook, summed in another order or touched the wrong leaf fails here."""
from __future__ import annotations

import numpy as np
import pytest

import ember as torch
from ember.autograd import graph
from ember.devices.cpu.namespace import backend as cpu_backend

F32 = np.float32


class _Model(torch.nn.Module):
    """0-d parameters (the compiled program runs them on NumPy scalars) beside a vector and a matrix."""

    def __init__(self, vals):
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(vals[0]))
        self.b = torch.nn.Parameter(torch.tensor(vals[1]))
        self.w = torch.nn.Parameter(torch.tensor(vals[2]))
        self.m = torch.nn.Parameter(torch.tensor(vals[3]))

    def forward(self, x0, v):
        s = (self.a * x0 + self.b).relu() * 1.7 - 0.5
        y = torch.tanh(self.m @ (v * self.w)) * s
        return y.sum() + s * 0.25


def _vals(seed=0):
    rng = np.random.default_rng(seed)
    return [F32(rng.standard_normal()), F32(rng.standard_normal()), rng.standard_normal(3).astype(F32),
            rng.standard_normal((2, 3)).astype(F32)]


def _data(rng):
    return torch.tensor(F32(rng.standard_normal() + 1.0)), torch.tensor(rng.standard_normal(3).astype(F32))


def _pair(seed=0, cls=_Model, warm=True):
    """The eager model, its twin and the twin compiled (called once first unless ``warm`` is False: the call that
    traces runs eagerly, its graph is eager's)."""
    vals = _vals(seed)
    eager, comp = cls(vals), cls(vals)
    cm = torch.compile(comp)
    if warm:
        x0, v = _data(np.random.default_rng(99))
        cm(x0, v)
        cm(x0.clone().requires_grad_(), v)   # (the key with an input that requires grad)
    return eager, comp, cm


def _same(a, b):
    if a is None or b is None:
        assert a is None and b is None
        return
    assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
    assert a.detach().numpy().tobytes() == b.detach().numpy().tobytes()


def _same_grads(m1, m2):
    for (n, p1), (_, p2) in zip(m1.named_parameters(), m2.named_parameters()):
        _same(p1.grad, p2.grad)
        if p1.grad is not None:
            assert p1.grad._version == p2.grad._version, n


class _EngineRuns:
    """Counts AccumulateGrad nodes the engine runs (none when the compiled node accumulated itself)."""

    def __init__(self, monkeypatch):
        self.n = 0
        orig = graph.AccumulateGrad.apply

        def apply(node, grads, create_graph, needed):
            self.n += 1
            return orig(node, grads, create_graph, needed)
        monkeypatch.setattr(graph.AccumulateGrad, "apply", apply)


def _steps(eager, cm, n=3, seed=1, before=None, loss_fn=None):
    """n forward + backward steps on the same data; the grads compared after each."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x0, v = _data(rng)
        outs = []
        for f in (eager, cm):
            loss = f(x0, v) if loss_fn is None else loss_fn(f, x0, v)
            if before is not None:
                before(f, loss)
            outs.append(loss)
        for loss in outs:
            loss.backward()
        _same(outs[0], outs[1])
        yield outs


def test_direct_accumulation_matches_eager(monkeypatch):
    eager, comp, cm = _pair()
    runs = _EngineRuns(monkeypatch)
    first = {}
    for k, _ in enumerate(_steps(eager, cm, n=4)):
        _same_grads(eager, comp)
        for m in (eager, comp):
            for n, p in m.named_parameters():
                first.setdefault((id(m), n), p.grad)
                assert p.grad is first[(id(m), n)]   # accumulated in place, as eager's AccumulateGrad does
    before = runs.n
    for _ in _steps(eager, cm, n=2, seed=5):
        pass
    assert runs.n - before == 2 * 4   # eager's 4 leaves per step; the compiled node's ran none
    _same_grads(eager, comp)


def test_tensor_hook_on_a_parameter(monkeypatch):
    eager, comp, cm = _pair()
    runs = _EngineRuns(monkeypatch)
    seen = {id(eager): [], id(comp): []}
    for m in (eager, comp):
        m.b.register_hook(lambda g, m=m: (seen[id(m)].append(g.clone()), g * 3)[1])
    for _ in _steps(eager, cm):
        _same_grads(eager, comp)
    assert runs.n == 2 * 3 * 4
    assert len(seen[id(comp)]) == 3
    for a, b in zip(*seen.values()):
        _same(a, b)


def test_hook_registered_after_direct_replays(monkeypatch):
    eager, comp, cm = _pair()
    for _ in _steps(eager, cm, n=2):
        pass
    runs = _EngineRuns(monkeypatch)
    for m in (eager, comp):
        m.w.register_hook(lambda g: g * -2)
    for _ in _steps(eager, cm, n=2, seed=2):
        _same_grads(eager, comp)
    assert runs.n == 2 * 2 * 4


def test_post_accumulate_hooks_run_in_eager_order():
    eager, comp, cm = _pair()
    order = {id(eager): [], id(comp): []}
    for m in (eager, comp):
        for n, p in m.named_parameters():
            # reads another leaf's .grad: what it sees depends on the order the leaves accumulate in
            p.register_post_accumulate_grad_hook(
                lambda t, m=m, n=n: order[id(m)].append((n, None if m.a.grad is None else float(m.a.grad))))
    for _ in _steps(eager, cm):
        _same_grads(eager, comp)
    assert order[id(eager)] == order[id(comp)] and len(order[id(eager)]) == 12


def _acc_of(loss, p):
    todo, seen = [loss.grad_fn], set()
    while todo:
        n = todo.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        if getattr(n, "variable", None) is p:
            return n
        todo.extend(f for f, _ in n.next_functions)
    raise AssertionError("no AccumulateGrad node for the parameter")


@pytest.mark.parametrize("kind", ["prehook", "hook"])
def test_hooks_on_a_leafs_accumulate_grad_node(kind, monkeypatch):
    eager, comp, cm = _pair()
    for _ in _steps(eager, cm, n=1):   # (a clean replay first: the hook count must move the node off it)
        pass
    runs = _EngineRuns(monkeypatch)
    calls = {id(eager): [], id(comp): []}

    def before(f, loss):
        m = eager if f is eager else comp
        acc = _acc_of(loss, m.a)
        if kind == "prehook":
            acc.register_prehook(lambda gs: (calls[id(m)].append(1), (gs[0] * 5,))[1])
        else:
            acc.register_hook(lambda gi, go: calls[id(m)].append(1))
    for _ in _steps(eager, cm, before=before):
        _same_grads(eager, comp)
    # (a step's graph lives on while the next step runs: its node, hooks included, is the leaf's node again)
    assert runs.n == 2 * 3 * 4 and calls[id(eager)] == calls[id(comp)] and len(calls[id(comp)]) >= 3


def test_retain_grad_and_hook_on_the_output(monkeypatch):
    eager, comp, cm = _pair()
    runs = _EngineRuns(monkeypatch)
    outs = []

    def before(f, loss):
        loss.retain_grad()
        loss.register_hook(lambda g: g * 0.5)
        outs.append(loss)
    for _ in _steps(eager, cm, before=before):
        _same_grads(eager, comp)
        _same(outs[-2].grad, outs[-1].grad)
    assert runs.n == 2 * 3 * 4


def test_existing_grads_of_other_layouts_and_dtypes(monkeypatch):
    eager, comp, cm = _pair()
    runs = _EngineRuns(monkeypatch)
    rng = np.random.default_rng(3)
    gm = rng.standard_normal((3, 2)).astype(F32)
    ga = rng.standard_normal()
    held = []
    for m in (eager, comp):
        m.m.grad = torch.tensor(gm).t()            # a transposed (non-contiguous) .grad, added into in place
        m.a.grad_dtype = None                      # any dtype allowed: a float64 .grad takes float32 gradients
        m.a.grad = torch.tensor(ga, dtype=torch.float64)
        m.w.grad_dtype = torch.float64             # gradients cast to float64 first
        held.append((m.m.grad, m.a.grad))
    for _ in _steps(eager, cm):
        _same_grads(eager, comp)
    assert runs.n == 3 * 4   # eager's only
    for m, (gm_, ga_) in zip((eager, comp), held):
        assert m.m.grad is gm_ and m.a.grad is ga_ and not m.m.grad.is_contiguous()
        assert m.w.grad.dtype == torch.float64 and m.a.grad.dtype == torch.float64


def test_grad_and_backward_with_inputs():
    eager, comp, cm = _pair()
    rng = np.random.default_rng(4)
    for _ in range(2):
        x0, v = _data(rng)
        xs = [x0.clone().requires_grad_(), x0.clone().requires_grad_()]
        l1, l2 = eager(xs[0], v), cm(xs[1], v)
        g1 = torch.autograd.grad(l1, [eager.a, eager.m, xs[0]], retain_graph=True)
        g2 = torch.autograd.grad(l2, [comp.a, comp.m, xs[1]], retain_graph=True)
        for a, b in zip(g1, g2):
            _same(a, b)
        _same_grads(eager, comp)
        assert comp.a.grad is None and xs[1].grad is None
        l1.backward(inputs=[eager.b, xs[0]])
        l2.backward(inputs=[comp.b, xs[1]])
        _same_grads(eager, comp)
        _same(xs[0].grad, xs[1].grad)
        assert comp.a.grad is None and comp.b.grad is not None


def test_create_graph_raises_and_accumulates_nothing():
    _, comp, cm = _pair()
    x0, v = _data(np.random.default_rng(5))
    loss = cm(x0, v)
    with pytest.raises(RuntimeError, match="double backward"):
        loss.backward(create_graph=True)
    assert all(p.grad is None for p in comp.parameters())


@pytest.mark.parametrize("where", ["after", "before", "input"])
def test_a_leaf_fed_by_compiled_and_eager_parts(where, monkeypatch):
    """The same parameter also gets a gradient from eager ops: the engine sums them in its order, then accumulates."""
    eager, comp, cm = _pair()
    runs = _EngineRuns(monkeypatch)

    def loss_fn(f, x0, v):
        m = eager if f is eager else comp
        if where == "after":
            return f(x0, v) + (m.a * 3.3 + m.w.sum() * 0.7) * m.b
        if where == "before":
            t = m.b * 1.9 + m.a
            return f(x0, v) * 1.1 + t
        return f(x0 * m.a, v * m.w)   # the input comes from the parameters: an edge into eager's graph
    for _ in _steps(eager, cm, loss_fn=loss_fn, n=4):
        _same_grads(eager, comp)
    assert runs.n > 4 * 4


class _Twice(_Model):
    def forward(self, x0, v):
        return ((self.a * x0 * 1e-3 + self.a * self.b * 3.7) * (v * self.w).sum() + (self.m * self.a).sum() +
                x0 * x0 * 0.3)


def test_leaves_read_by_several_ops_sum_in_engine_order(monkeypatch):
    """a gets three gradients, x0 two: summed as the engine's buffer sums them, then accumulated once."""
    eager, comp, cm = _pair(cls=_Twice)
    runs = _EngineRuns(monkeypatch)
    rng = np.random.default_rng(11)
    xg = []
    for _ in range(6):
        x0, v = _data(rng)
        xs = [x0.clone().requires_grad_(), x0.clone().requires_grad_()]
        for x, f in zip(xs, (eager, cm)):
            f(x, v).backward()
        _same_grads(eager, comp)
        _same(*[x.grad for x in xs])
        xg.append(xs)
    assert runs.n == 6 * 5   # eager's; the compiled node summed and accumulated itself


def test_input_leaves_are_checked_at_each_call(monkeypatch):
    """The captured leaves' check is kept while no hook is registered anywhere; inputs are new tensors each call."""
    eager, comp, cm = _pair()
    rng = np.random.default_rng(6)
    hooked = []
    for k in range(4):
        x0, v = _data(rng)
        xs = [x0.clone().requires_grad_(), x0.clone().requires_grad_()]
        if k == 0:   # hooked before any call, on tensors that are inputs only later
            later = [torch.tensor(F32(0.3)).requires_grad_(), torch.tensor(F32(0.3)).requires_grad_()]
            for t in later:
                t.register_hook(lambda g: (hooked.append(1), g * 7)[1])
        if k == 3:
            xs = later
        l1, l2 = eager(xs[0], v), cm(xs[1], v)
        l1.backward()
        l2.backward()
        _same(xs[0].grad, xs[1].grad)
        _same_grads(eager, comp)
    assert len(hooked) == 2


def test_anomaly_mode_and_retain_graph(monkeypatch):
    eager, comp, cm = _pair()
    x0, v = _data(np.random.default_rng(7))
    l1, l2 = eager(x0, v), cm(x0, v)
    runs = _EngineRuns(monkeypatch)
    with torch.autograd.set_detect_anomaly(True):
        l1.backward(retain_graph=True)
        l2.backward(retain_graph=True)
    assert runs.n == 2 * 4
    _same_grads(eager, comp)
    l1.backward()
    l2.backward()
    assert runs.n == 3 * 4
    _same_grads(eager, comp)


def test_calling_the_node_by_hand_accumulates_nothing():
    _, comp, cm = _pair()
    x0, v = _data(np.random.default_rng(8))
    loss = cm(x0, v)
    other = torch.tensor(F32(2.0), requires_grad=True)
    got = []
    # inside another backward, from a post-accumulate hook of its last node: the engine's heap is empty there
    other.register_post_accumulate_grad_hook(lambda t: got.append(loss.grad_fn(torch.ones(()))))
    (other * 3).backward()
    assert len(got) == 1 and len(got[0]) == 4 and all(g is not None for g in got[0])
    assert all(p.grad is None for p in comp.parameters())
    loss.backward()
    for p, g in zip((comp.a, comp.b, comp.w, comp.m), _node_order(loss, comp, got[0])):
        _same(p.grad, g)


def _node_order(loss, comp, grads):
    by_var = {id(f.variable): g for (f, _), g in zip(loss.grad_fn.next_functions, grads)}
    return [by_var[id(p)] for p in (comp.a, comp.b, comp.w, comp.m)]


def _nan(bits):
    return np.array(bits, np.uint32).view(F32)[()]


def test_nan_payloads_of_scalar_chains_are_eagers():
    """0-d chains run on NumPy scalars in the compiled program: with two NaNs of different payloads in one op, the
    result keeps the payload the ufunc keeps (the operand order matters there, and only there)."""
    def f(a, b, c):
        ab = a * b
        d = ab + c
        return ab, d, b - a, d * (b - a) + a * 1.5, c + 0.5

    cf = torch.compile(f)
    payloads = [0x7FC00001, 0xFFC00123, 0x7FC0BEEF, 0x3F800000, 0xFFC00042]
    for k in range(len(payloads)):
        vals = [_nan(payloads[(k + i) % len(payloads)]) for i in range(3)]
        ins = [[torch.tensor(v, requires_grad=True) for v in vals] for _ in range(2)]
        y1, y2 = f(*ins[0]), cf(*ins[1])
        for a, b in zip(y1, y2):
            _same(a, b)
        g = torch.tensor(_nan(0xFFC0CAFE))
        y1[3].backward(g)
        y2[3].backward(g)
        for a, b in zip(*ins):
            _same(a.grad, b.grad)
    assert sum(r != "eager" for r in cf._cache.values()) == 1


def test_add_into_all_is_add_into():
    """The CPU's batched add (0-d floats as NumPy scalars) against NumPy's ufunc into the same arrays: random bits,
    NaN payloads, signed zeros, subnormals, other dtypes and shapes."""
    rng = np.random.default_rng(9)
    for dt, ut in ((np.float32, np.uint32), (np.float64, np.uint64)):
        bits = rng.integers(0, np.iinfo(ut).max, (4000, 2), dtype=ut, endpoint=True)
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.finfo(dt).smallest_subnormal, 1.0], dt).view(ut)
        nans = np.array([0x7FC00001, 0xFFC00123] if dt is np.float32 else
                        [0x7FF8000000000001, 0xFFF8000000000123], ut)
        extra = np.array([(a, b) for a in np.concatenate([special, nans]) for b in np.concatenate([special, nans])],
                         ut)
        pairs = np.concatenate([bits, extra]).view(dt)
        dsts = [np.array(a, dt) for a in pairs[:, 0]]
        want = [np.array(a, dt) for a in pairs[:, 0]]
        srcs = [np.array(b, dt) if k % 2 else pairs[k, 1] for k, b in enumerate(pairs[:, 1])]
        with np.errstate(all="ignore"):
            for w, s in zip(want, srcs):
                np.add(w, s, out=w, casting="unsafe")
        cpu_backend.add_into_all(dsts, srcs)
        assert all(d.tobytes() == w.tobytes() for d, w in zip(dsts, want))
    mixed = [np.zeros((), np.float64), np.zeros(3, np.float32), np.zeros((), np.float32)]
    cpu_backend.add_into_all(mixed, [np.float32(0.1), np.ones(3, np.float32), np.float64(0.1)])
    assert mixed[0] == np.float64(np.float32(0.1)) and mixed[2] == np.float32(0.1) and mixed[1].sum() == 3
