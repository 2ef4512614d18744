"""ember.compile: replay equals eager to the bit; guards retrace; fallbacks run eagerly; PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import ember as torch
from ember.compiler import _EAGER


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.detach().numpy().tobytes() == b.detach().numpy().tobytes()


def _chain(x):
    for _ in range(20):
        x = torch.tanh(x * 1.01 + 0.1)
    return x


def _replays(cf):
    return [r for r in cf._cache.values() if r is not _EAGER]


@pytest.mark.parametrize("shape", [(1,), (64,), (3, 5)])
def test_chain_forward_backward(shape):
    cf = torch.compile(_chain)
    rng = np.random.default_rng(0)
    for _ in range(3):
        a = rng.standard_normal(shape)
        x1 = torch.tensor(a, dtype=torch.float32, requires_grad=True)
        x2 = torch.tensor(a, dtype=torch.float32, requires_grad=True)
        y1, y2 = _chain(x1), cf(x2)
        _same(y1, y2)
        g = torch.tensor(rng.standard_normal(shape), dtype=torch.float32)
        y1.backward(g)
        y2.backward(g)
        _same(x1.grad, x2.grad)
    assert len(_replays(cf)) == 1
    assert y2.grad_fn.name() == "CompiledFunctionBackward"


def test_shared_input_sums_in_eager_order():
    def f(x, w):
        a = x * w
        b = torch.exp(x)
        c = (a + b) * x
        return c.sum(), a
    cf = torch.compile(f)
    rng = np.random.default_rng(1)
    for _ in range(3):
        a, w = rng.standard_normal(7), rng.standard_normal(7)
        xs = [torch.tensor(a, requires_grad=True) for _ in range(2)]
        ws = [torch.tensor(w, requires_grad=True) for _ in range(2)]
        outs = [f(xs[0], ws[0]), cf(xs[1], ws[1])]
        for (s, a_), x in zip(outs, xs):
            (s * 2 + (a_ * x).sum()).backward()
        _same(xs[0].grad, xs[1].grad)
        _same(ws[0].grad, ws[1].grad)
        _same(outs[0][0], outs[1][0])


def test_guards_retrace():
    cf = torch.compile(lambda x: (x * 2).sin())
    cf(torch.ones(3))
    cf(torch.ones(3))
    assert len(cf._cache) == 1
    cf(torch.ones(4))
    cf(torch.ones(3, dtype=torch.float64))
    cf(torch.ones(3, requires_grad=True))
    with torch.no_grad():
        y = cf(torch.ones(3, requires_grad=True))
    assert y.grad_fn is None and not y.requires_grad
    assert len(cf._cache) == 5


def test_no_grad_replay_has_no_graph():
    cf = torch.compile(_chain)
    x = torch.randn(4, requires_grad=True)
    with torch.no_grad():
        for _ in range(2):
            y = cf(x)
    assert y.grad_fn is None and not y.requires_grad
    _same(y, _chain(x).detach())


@pytest.mark.parametrize("case", ["item", "print", "escape", "factory_from_data", "seed"])
def test_fallbacks_give_eager_results(case, capsys):
    store = []

    def f(x):
        y = x * 2
        if case == "item":
            return y * 3 if y.sum().item() > 0 else y - 1
        if case == "print":
            print("hello")
        if case == "seed":
            torch.manual_seed(3)
            y = y + torch.rand(5)
        if case == "escape":
            store.append(y)
        if case == "factory_from_data":   # nonzero's shape depends on the values
            return y[torch.nonzero(y > 0).flatten()]
        return y.exp()
    cf = torch.compile(f)
    for k in range(3):
        a = np.random.default_rng(k).standard_normal(5)
        torch.manual_seed(0)
        want = f(torch.tensor(a))
        torch.manual_seed(0)
        got = cf(torch.tensor(a))
        _same(want, got)
    assert not _replays(cf), cf._reasons
    assert cf._reasons


def test_fullgraph_errors():
    def f(x):
        if x.sum().item() > 0:
            return x * 2
        return x
    with pytest.raises(torch._dynamo.exc.UserError):
        torch.compile(f, fullgraph=True)(torch.ones(3))

    def g(x):
        print("x")
        return x * 2
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch.compile(g, fullgraph=True)(torch.ones(3))
    assert issubclass(torch._dynamo.exc.Unsupported, RuntimeError)


def test_double_backward_and_freed_errors():
    cf = torch.compile(lambda x: (x * x).sum())
    x = torch.ones(3, requires_grad=True)
    cf(x)
    y = cf(x)
    with pytest.raises(RuntimeError, match="does not currently support double backward"):
        torch.autograd.grad(y, x, create_graph=True)
    y = cf(x)
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    y = cf(x)
    y.backward(retain_graph=True)
    y.backward()
    _same(x.grad, torch.full((3,), 6.0))


def test_version_counter_error():
    cf = torch.compile(lambda x, w: (x * w).sum())
    w = torch.ones(3, requires_grad=True)
    x = torch.ones(3)
    cf(x, w)
    y = cf(x, w)
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_module_and_optimizer_loop():
    torch.manual_seed(0)
    m1 = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    m2 = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    m2.load_state_dict(m1.state_dict())
    c2 = torch.compile(m2)
    assert type(c2).__name__ == "OptimizedModule" and c2._orig_mod is m2
    assert list(c2.state_dict()) == ["_orig_mod." + k for k in m2.state_dict()]
    o1 = torch.optim.SGD(m1.parameters(), lr=0.1, momentum=0.9)
    o2 = torch.optim.SGD(c2.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = torch.tensor(rng.standard_normal((3, 4)), dtype=torch.float32)
        t = torch.tensor(rng.standard_normal((3, 2)), dtype=torch.float32)
        losses = []
        for m, o in ((m1, o1), (c2, o2)):
            o.zero_grad()
            loss = torch.nn.functional.mse_loss(m(x), t)
            loss.backward()
            o.step()
            losses.append(loss)
        _same(*losses)
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        _same(p1, p2)
    assert _replays(c2._compiled)
    c2.eval()
    c2(x)
    assert len(c2._compiled._cache) == 2   # training flag changed: a new trace


def test_surface():
    assert torch.compiler.is_compiling() is False
    seen = []

    def f(x):
        seen.append(torch.compiler.is_compiling())
        return x + 1
    torch.compile(f)(torch.ones(2))
    assert seen == [True]

    @torch.compile
    def g(x):
        return x * 3
    _same(g(torch.ones(2)), torch.full((2,), 3.0))

    @torch.compile(fullgraph=True)
    def h(x):
        return x * 3
    _same(h(torch.ones(2)), torch.full((2,), 3.0))
    torch.compiler.reset()
    torch._dynamo.reset()
    assert torch._dynamo.config.cache_size_limit == 8
    d = torch.compiler.disable(lambda x: x * 2)
    cf = torch.compile(lambda x: d(x) + 1)
    cf(torch.ones(2))
    assert not _replays(cf)
    out = torch._dynamo.explain(lambda x: x.sin())(torch.ones(2))
    assert out.graph_count == 1 and out.graph_break_count == 0
    with pytest.raises(RuntimeError, match="expected a callable"):
        torch.compile(3)


def test_cache_size_limit():
    cf = torch.compile(lambda x: x + 1)
    for n in range(1, 12):
        _same(cf(torch.ones(n)), torch.full((n,), 2.0))
    assert len(_replays(cf)) == 8


class _TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(11, 8)
        self.ln = torch.nn.LayerNorm(8)
        self.lin = torch.nn.Linear(8, 11)

    def forward(self, idx, tgt):
        h = self.ln(self.emb(idx)).relu()
        return torch.nn.functional.cross_entropy(self.lin(h).view(-1, 11), tgt.view(-1))


def test_index_params_replay_from_their_tensors():
    torch.manual_seed(0)
    m1 = _TinyLM()
    m2 = _TinyLM()
    m2.load_state_dict(m1.state_dict())
    c2 = torch.compile(m2)
    o1 = torch.optim.Adam(m1.parameters(), lr=0.01)
    o2 = torch.optim.Adam(c2.parameters(), lr=0.01)
    for step in range(4):
        idx = torch.randint(0, 11, (2, 5))
        tgt = torch.randint(0, 11, (2, 5))
        for m, o in ((m1, o1), (c2, o2)):
            o.zero_grad()
            loss = m(idx, tgt)
            loss.backward()
            o.step()
            if m is m1:
                l1 = loss
        _same(l1, loss)
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        _same(p1, p2)
    assert _replays(c2._compiled) and not c2._compiled._reasons


def _compare(f, make_args, n=3, backward=True):
    cf = torch.compile(f)
    for k in range(n):
        torch.manual_seed(k)
        a1 = make_args(k)
        torch.manual_seed(k)
        a2 = make_args(k)
        torch.manual_seed(100 + k)
        o1 = f(*a1)
        torch.manual_seed(100 + k)
        o2 = cf(*a2)
        o1 = o1 if isinstance(o1, tuple) else (o1,)
        o2 = o2 if isinstance(o2, tuple) else (o2,)
        for x, y in zip(o1, o2):
            _same(x, y)
            assert x._version == y._version
        if backward:
            sum(o.sum() for o in o1).backward()
            sum(o.sum() for o in o2).backward()
            for x, y in zip(a1, a2):
                if isinstance(x, torch.Tensor) and x.requires_grad:
                    _same(x.grad, y.grad)
    return cf


def test_inplace_steps_replay():
    def f(x, w):
        y = x * w
        y.add_(1)        # in place on an intermediate, under autograd
        h = torch.sin(y)
        h.mul_(2)        # sin saves its input, not h
        with torch.no_grad():
            m = torch.zeros_like(x)
            m.add_(3)    # a constant written into: fresh each call
        return h * m, y
    cf = _compare(f, lambda k: (torch.randn(5, requires_grad=True), torch.randn(5, requires_grad=True)))
    assert _replays(cf) and not cf._reasons


def test_inplace_on_captured_buffer_replays():
    buf = torch.zeros(3)

    def f(x):
        with torch.no_grad():
            buf.mul_(0.9).add_(x.detach() * 0.1)   # a running statistic, as BatchNorm's
        return x * 2
    cf = torch.compile(f)
    ref = torch.zeros(3)
    for k in range(4):
        x = torch.randn(3)
        with torch.no_grad():
            ref.mul_(0.9).add_(x * 0.1)
        cf(x)
        _same(buf, ref)
    assert buf._version == ref._version
    assert _replays(cf)


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_dropout_replays_with_eager_numbers(p):
    drop = torch.nn.Dropout(p)
    lin = torch.nn.Linear(6, 4)

    def f(x):
        return drop(torch.relu(lin(x)))
    cf = _compare(f, lambda k: (torch.randn(3, 6, requires_grad=True),), n=4)
    assert _replays(cf) and not cf._reasons
    drop.eval()
    _compare(f, lambda k: (torch.randn(3, 6, requires_grad=True),), n=2)


def test_saved_tensor_changed_inside_falls_back_and_raises():
    def f(x):
        z = x.exp()      # exp saves its result
        z.add_(1)
        return z
    cf = torch.compile(f)
    for _ in range(2):
        z = cf(torch.ones(3, requires_grad=True))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()
    assert not _replays(cf)


class _RNNModel(torch.nn.Module):
    """word_language_model's model (pytorch/examples), small."""

    def __init__(self, kind, ntoken=40, ninp=12, nhid=12, nlayers=2, dropout=0.2):
        super().__init__()
        self.drop = torch.nn.Dropout(dropout)
        self.encoder = torch.nn.Embedding(ntoken, ninp)
        self.rnn = getattr(torch.nn, kind)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = torch.nn.Linear(nhid, ntoken)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.decoder.out_features)
        return torch.nn.functional.log_softmax(decoded, dim=1), hidden


def _detach(h):
    return tuple(_detach(v) for v in h) if isinstance(h, tuple) else h.detach()


@pytest.fixture
def allow_rnn(request):
    torch._dynamo.config.allow_rnn = request.param
    yield request.param
    torch._dynamo.config.allow_rnn = False


@pytest.mark.parametrize("allow_rnn", [True, False], indirect=True, ids=["traced", "graph_break"])
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_word_language_model_trains_as_eager(kind, allow_rnn):
    torch.manual_seed(0)
    m1 = _RNNModel(kind)
    m2 = _RNNModel(kind)
    m2.load_state_dict(m1.state_dict())
    c2 = torch.compile(m2)
    hz = torch.zeros(2, 4, 12)
    hs = [(hz, hz) if kind == "LSTM" else hz] * 2
    for step in range(3):
        x = torch.randint(0, 40, (5, 4))
        t = torch.randint(0, 40, (20,))
        losses = []
        for i, m in enumerate((m1, c2)):
            torch.manual_seed(step)
            m.zero_grad()
            hs[i] = _detach(hs[i])
            out, hs[i] = m(x, hs[i])
            loss = torch.nn.functional.nll_loss(out, t)
            loss.backward()
            with torch.no_grad():
                for p in m.parameters():
                    p.add_(p.grad, alpha=-0.5)
            losses.append(loss)
        _same(*losses)
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        _same(p1, p2)
    if allow_rnn:   # the step-by-step composite traced and replayed
        assert _replays(c2._compiled) and not c2._compiled._reasons
    else:           # PyTorch's graph break: every call eager, with the fused recurrent nodes
        assert not _replays(c2._compiled)
        assert [r for _, r in c2._compiled._reasons][0].startswith("Attempted to wrap RNN, GRU, or LSTM")


_NANOGPT = r'''
import importlib, os, sys
root, mode = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
sys.path.insert(0, os.path.join(root, "tests", "seed_snippets"))
from _runner import _AliasFinder
sys.modules["torch"] = importlib.import_module("ember")
sys.meta_path.insert(0, _AliasFinder("ember"))
import torch
sys.path.insert(0, os.path.join(root, "tests", "programs", "nanogpt"))
from model import GPTConfig, GPT
torch.manual_seed(0)
m = GPT(GPTConfig(block_size=16, vocab_size=50, n_layer=2, n_head=2, n_embd=16, dropout=0.1, bias=True))
opt = m.configure_optimizers(0.1, 1e-3, (0.9, 0.95), "cpu")
run = torch.compile(m) if mode == "compiled" else m
for it in range(4):
    x = torch.randint(0, 50, (3, 16)); y = torch.randint(0, 50, (3, 16))
    logits, loss = run(x, y)
    loss.backward()
    opt.step(); opt.zero_grad(set_to_none=True)
    print(loss.item().hex())
print(sum(float(p.double().sum()) for p in m.parameters()).hex())
if mode == "compiled":
    print("reasons", run._compiled._reasons)
'''


def test_nanogpt_compiled_same_losses(tmp_path):
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = tmp_path / "gpt.py"
    script.write_text(_NANOGPT)
    outs = [subprocess.run([sys.executable, str(script), root, mode], capture_output=True, text=True, timeout=300)
            for mode in ("eager", "compiled")]
    for o in outs:
        assert o.returncode == 0, o.stderr[-2000:]
    eager = [l for l in outs[0].stdout.splitlines() if l.startswith(("0x", "-0x"))]
    comp = [l for l in outs[1].stdout.splitlines() if l.startswith(("0x", "-0x"))]
    assert eager == comp and len(eager) == 5
    assert "reasons []" in outs[1].stdout


def test_guards_on_aliasing_signed_zero_and_layout():
    cf = torch.compile(lambda a, b: a * 2 + b)
    x = torch.ones(3)
    _same(cf(x, x), torch.full((3,), 3.0))
    _same(cf(x, torch.zeros(3)), torch.full((3,), 2.0))   # no longer the same tensor: another trace
    g = torch.compile(lambda a, c: a * c)
    _same(g(torch.ones(2), 0.0), torch.ones(2) * 0.0)
    _same(g(torch.ones(2), -0.0), torch.ones(2) * -0.0)
    h = torch.compile(lambda a: a.reshape(-1))
    m = torch.arange(6.).reshape(2, 3)
    _same(h(m), m.reshape(-1))
    _same(h(m.t()), m.t().reshape(-1))


def test_compiled_method_guards_its_module():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)
            self.drop = torch.nn.Dropout(0.5)

        @torch.compile
        def forward(self, x):
            return self.drop(self.lin(x))
    m = M()
    x = torch.randn(2, 3)
    m.eval()
    a = m(x)
    _same(m(x), a)
    m.train()
    torch.manual_seed(0)
    b = m(x)
    m.eval()
    _same(m(x), a)
    m.train()
    torch.manual_seed(0)
    _same(m(x), b)


def test_value_checks_replay_as_guards():
    emb = torch.nn.Embedding(5, 3)
    cf = torch.compile(lambda i: emb(i) * 2)
    for _ in range(2):
        _same(cf(torch.tensor([0, 4, 2])), emb(torch.tensor([0, 4, 2])) * 2)
    assert _replays(cf)
    with pytest.raises(IndexError, match="index out of range in self"):
        cf(torch.tensor([0, 5, 2]))   # eager's check, not a wrapped-around row
    _same(cf(torch.tensor([1, 1, 3])), emb(torch.tensor([1, 1, 3])) * 2)


def test_nanogpt_train_script_with_compile(tmp_path):
    """nanoGPT's own train.py with --compile=True prints what --compile=False prints (losses, evals, checkpoint)."""
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import test_programs as tp
    outs = {}
    for comp in ("False", "True"):
        cmd = [a.replace("--compile=False", f"--compile={comp}") for a in tp._NANOGPT_TRAIN] + ["--max_iters=6"]
        d = tmp_path / comp
        d.mkdir()
        out, err, rc, _, _ = tp._leg("ember", "nanogpt", d, tp._nanogpt_data, [cmd])
        assert rc == 0, err[-3000:]
        outs[comp] = [tp._nanogpt_mask(line) for line in out.splitlines() if "compil" not in line.lower()]
    assert outs["True"] == outs["False"] and any("loss" in line for line in outs["True"])


def test_optimized_module_copies_and_pickles():
    import copy
    import pickle
    m = torch.nn.Linear(3, 2)
    c = torch.compile(m)
    x = torch.randn(4, 3)
    c(x)
    c(x)
    for d in (copy.deepcopy(c), pickle.loads(pickle.dumps(c))):
        assert d._orig_mod is not m
        with torch.no_grad():
            d._orig_mod.weight.mul_(2)
        _same(d(x), torch.nn.functional.linear(x, d._orig_mod.weight, d._orig_mod.bias))
        _same(c(x), m(x))


def test_outputs_that_are_views_of_inputs():
    def f(x):
        return x.t(), (x * 2).sum(), x[1:]
    cf = torch.compile(f)
    for k in range(3):
        a = torch.randn(3, 4, requires_grad=True)
        b = a.detach().clone().requires_grad_()
        o1, o2 = f(a), cf(b)
        for u, v in zip(o1, o2):
            _same(u, v)
        assert o2[0]._base is b and o2[2]._base is b
        (o1[0].sum() * 3 + o1[1] + o1[2].sum()).backward()
        (o2[0].sum() * 3 + o2[1] + o2[2].sum()).backward()
        _same(a.grad, b.grad)
    assert _replays(cf) and not cf._reasons


def test_scalar_values_replay_without_guards():
    cf = torch.compile(lambda x: torch.tanh(x * 2) + x.exp())
    for v in (0.5, 0.7, -0.9, 2.0):
        x = torch.tensor(v)
        _same(cf(x), torch.tanh(x * 2) + x.exp())
    assert cf._guard_fallbacks == 0 and len(_replays(cf)) == 1


def test_a_raising_trace_restores_everything():
    from ember.autograd import _primitive
    result, ns_tanh, fwd = _primitive._result, _primitive._NP_NS.tanh, _primitive.PRIMITIVES[0].forward

    def f(x):
        y = torch.tanh(x)
        raise ValueError("boom")
    cf = torch.compile(f)
    with pytest.raises(ValueError, match="boom"):
        cf(torch.ones(2))
    assert _primitive._result is result and _primitive._NP_NS.tanh is ns_tanh
    assert _primitive.PRIMITIVES[0].forward is fwd and torch.Tensor.item.__name__ == "item"
    assert not torch.compiler.is_compiling()


def test_hooks_and_retain_grad_on_outputs():
    def f(x):
        return x * 3, (x * x).sum()
    cf = torch.compile(f)
    seen = []
    for k in range(3):
        xs = [torch.randn(4, requires_grad=True)]
        xs.append(xs[0].detach().clone().requires_grad_())
        grads = []
        for fn, x in zip((f, cf), xs):
            a, s = fn(x)
            a.retain_grad()
            a.register_hook(lambda g: seen.append(g.clone()) or g * 2)
            (a.sum() + s).backward()
            grads.append(a.grad)
        _same(*grads)
        _same(xs[0].grad, xs[1].grad)
    assert len(seen) == 6 and _replays(cf)


def test_autocast_regions_replay_one_recording():
    """A compiled model called in a new autocast region each step replays one recording (the autocast state is in
    the guard key, not the count of regions entered); its weights' casts come from the region's cache as eager's
    (a second call in the same region shares them), so losses and updated weights equal eager's to the bit."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    m2 = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    m2.load_state_dict(m.state_dict())
    cm = torch.compile(m2)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1), torch.optim.SGD(m2.parameters(), lr=0.1)]
    x = torch.randn(3, 4)
    for step in range(12):
        losses = []
        for model, o in zip((m, cm), opts):
            o.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                y = model(x)
                y2 = model(x * 2)
                loss = (y.float() ** 2).sum() + y2.float().sum()
            loss.backward()
            o.step()
            losses.append(loss)
        _same(losses[0], losses[1])
        if step == 5:   # outside autocast: another key (float32 all through), then back
            _same(m(x), cm(x))
    for p, q in zip(m.parameters(), m2.parameters()):
        _same(p, q)
    cf = cm._compiled
    assert cf._n_traces == 2 and len(_replays(cf)) == 2, cf._reasons
    assert sum(bool(r.cache_casts) for r in _replays(cf)) == 1   # (the autocast one: 4 weight casts)


@pytest.mark.parametrize("kind,dtype", [("batch1d", torch.float32), ("batch1d", torch.bfloat16),
                                        ("batch2d", torch.float64), ("instance", torch.float32),
                                        ("instance", torch.bfloat16)])
def test_norm_training_replays_running_stats(kind, dtype):
    """BatchNorm / InstanceNorm (with running statistics) in training: the update of the running estimates replays;
    after many steps the losses, parameters, buffers and their versions are eager's."""
    shape = (4, 3, 2, 2) if kind == "batch2d" else (4, 3, 5)

    def make():
        torch.manual_seed(0)
        norm = (torch.nn.BatchNorm1d(3) if kind == "batch1d" else torch.nn.BatchNorm2d(3) if kind == "batch2d" else
                torch.nn.InstanceNorm1d(3, affine=True, track_running_stats=True))
        return torch.nn.Sequential(torch.nn.Linear(shape[-1], shape[-1]), norm).to(dtype)
    m, m2 = make(), make()
    cm = torch.compile(m2)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1), torch.optim.SGD(m2.parameters(), lr=0.1)]
    torch.manual_seed(1)
    for _ in range(25):
        x = torch.randn(*shape).to(dtype)
        losses = []
        for model, o in zip((m, cm), opts):
            o.zero_grad()
            loss = (model(x) ** 2).sum()
            loss.backward()
            o.step()
            losses.append(loss)
        _same(losses[0], losses[1])
    for a, b in zip(m.state_dict().values(), m2.state_dict().values()):
        _same(a, b)
        assert a._version == b._version
    assert len(_replays(cm._compiled)) == 1, cm._compiled._reasons
    m.eval()
    cm.eval()
    x = torch.randn(*shape).to(dtype)
    _same(m(x), cm(x))


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_recurrent_modules_graph_break_as_pytorch(kind):
    """PyTorch's dynamo graph-breaks on nn.RNN/GRU/LSTM unless ``torch._dynamo.config.allow_rnn``: the call runs
    eagerly (the fused recurrent nodes), fullgraph=True raises Unsupported with torch's text; with allow_rnn the
    composite is traced. Results equal eager's to the bit either way."""
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(torch.nn, kind)(4, 8, num_layers=2)
            self.out = torch.nn.Linear(8, 3)

        def forward(self, x):
            return self.out(self.rnn(x)[0]).sum()

    net, x = Net(), torch.randn(5, 2, 4)
    want = net(x)
    want.backward()
    grads = [p.grad.clone() for p in net.parameters()]

    with pytest.raises(torch._dynamo.exc.Unsupported, match="Attempted to wrap RNN, GRU, or LSTM"):
        torch.compile(net, fullgraph=True)(x)
    explained = torch._dynamo.explain(net)(x)
    assert explained.graph_count == 0 and "Set torch._dynamo.config.allow_rnn=True" in explained.break_reasons[0]

    for allow in (False, True):
        torch.compiler.reset()
        torch._dynamo.config.allow_rnn = allow
        try:
            f = torch.compile(net)
            for _ in range(3):
                net.zero_grad()
                got = f(x)
                got.backward()
                assert torch.equal(got, want)
                assert all(torch.equal(p.grad, g) for p, g in zip(net.parameters(), grads))
            # after the first (traced) call: eager's fused nodes under a break, the compiled node when traced
            assert (type(got.grad_fn).__name__ == "CompiledFunctionBackward") == allow
        finally:
            torch._dynamo.config.allow_rnn = False
            torch.compiler.reset()
