"""RNN, LSTM, GRU, their cells and nn.utils.rnn against PyTorch: seed-exact initialisation, repr, state_dict keys
and shapes; with the same weights, outputs, final states, input/state/parameter gradients (plain, packed,
unbatched, batch_first, bidirectional, stacked, projected), double backward, forward mode, dropout between
layers drawn as PyTorch draws it, and the errors. The fused node (ember/ops/rnn.py): bit-identity with the
composite of ops it replaces, PyTorch's grad_fn names, gradcheck/gradgradcheck, its fallbacks and errors."""
import numpy as np
import pytest

import ember
import ember.nn.utils.rnn as ernn

from parity import same

torch = pytest.importorskip("torch")
import torch.nn.utils.rnn as trnn  # noqa: E402


def R(*shape, seed=0):
    return np.random.default_rng(seed + 7 * len(shape)).uniform(-1, 1, shape)


def _lib(nn):
    return torch if nn is torch.nn else ember


def _pair(ctor, dtype="float64"):
    """The module built in both libraries from the same seed, then cast."""
    torch.manual_seed(0)
    tm = ctor(torch.nn).to(getattr(torch, dtype))
    ember.manual_seed(0)
    em = ctor(ember.nn).to(getattr(ember, dtype))
    return tm, em


def _flat(x):
    """Tensors of a (nested) result, in order; PackedSequence -> its data."""
    if isinstance(x, (trnn.PackedSequence, ernn.PackedSequence)):
        return [x.data]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _flat(v)]
    return [x] if x is not None else []


def _close(a, b, what, atol=1e-10):
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-9, atol=atol, err_msg=what)


MODULES = [
    ("RNN", lambda nn: nn.RNN(3, 4)),
    ("RNN_relu_2l_bi", lambda nn: nn.RNN(3, 4, 2, "relu", bidirectional=True)),
    ("RNN_nobias_bf", lambda nn: nn.RNN(3, 4, bias=False, batch_first=True)),
    ("LSTM", lambda nn: nn.LSTM(3, 4)),
    ("LSTM_2l_bi_bf", lambda nn: nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)),
    ("LSTM_proj", lambda nn: nn.LSTM(3, 5, proj_size=2, num_layers=2)),
    ("LSTM_proj_bi_nobias", lambda nn: nn.LSTM(3, 5, proj_size=2, bidirectional=True, bias=False)),
    ("GRU", lambda nn: nn.GRU(3, 4)),
    ("GRU_3l_bi", lambda nn: nn.GRU(3, 4, num_layers=3, bidirectional=True)),
    ("GRU_bf_dropout_eval", lambda nn: nn.GRU(3, 4, num_layers=2, batch_first=True, dropout=0.5).eval()),
]
CELLS = [
    ("RNNCell", lambda nn: nn.RNNCell(3, 4)),
    ("RNNCell_relu_nobias", lambda nn: nn.RNNCell(3, 4, bias=False, nonlinearity="relu")),
    ("LSTMCell", lambda nn: nn.LSTMCell(3, 4)),
    ("GRUCell", lambda nn: nn.GRUCell(3, 4)),
    ("GRUCell_nobias", lambda nn: nn.GRUCell(3, 4, bias=False)),
]


@pytest.mark.parametrize("name,ctor", MODULES + CELLS, ids=[n for n, _ in MODULES + CELLS])
def test_init_repr_state_dict(name, ctor):
    tm, em = _pair(ctor, "float32")
    assert repr(em) == repr(tm)
    ts, es = tm.state_dict(), em.state_dict()
    assert [(k, tuple(v.shape)) for k, v in es.items()] == [(k, tuple(v.shape)) for k, v in ts.items()]
    for k in ts:
        np.testing.assert_array_equal(es[k].numpy(), ts[k].numpy(), err_msg=f"{name}.{k}")
    if hasattr(tm, "all_weights"):
        assert [[tuple(w.shape) for w in ws] for ws in em.all_weights] == \
               [[tuple(w.shape) for w in ws] for ws in tm.all_weights]
        assert em._flat_weights_names == tm._flat_weights_names
        em.flatten_parameters()


def test_reprs():
    for ctor in (lambda nn: nn.LSTM(10, 20, num_layers=2, batch_first=True),
                 lambda nn: nn.GRU(2, 3, bias=False, dropout=0.25, num_layers=2, bidirectional=True),
                 lambda nn: nn.RNN(2, 3, nonlinearity="relu"), lambda nn: nn.RNNCell(2, 3, nonlinearity="relu"),
                 lambda nn: nn.LSTMCell(2, 3, bias=False)):
        assert repr(ctor(ember.nn)) == repr(ctor(torch.nn))


def _run_both(ctor, make_inputs, grads_of, *, packed=None):
    """Runs the module on inputs made by ``make_inputs(lib)`` (a list of args), backpropagates a fixed function
    of every output and compares the outputs and the gradients of ``grads_of`` (input indices) and
    parameters."""
    tm, em = _pair(ctor)
    res = []
    for lib, m in ((torch, tm), (ember, em)):
        args = make_inputs(lib)
        outs = _flat(m(*args))
        loss = sum((o * (1.0 + 0.1 * k)).sin().sum() for k, o in enumerate(outs))
        loss.backward()
        leaves = [t for i in grads_of for t in _flat(args[i])] + list(m.parameters())
        res.append((outs, [t.grad for t in leaves]))
    (to, tg), (eo, eg) = res
    assert len(to) == len(eo)
    for i, (a, b) in enumerate(zip(to, eo)):
        assert tuple(a.shape) == tuple(b.shape), f"output {i}"
        _close(a, b, f"output {i}")
    for i, (a, b) in enumerate(zip(tg, eg)):
        assert (a is None) == (b is None), f"grad {i}"
        if a is not None:
            _close(a, b, f"grad {i}")


def _leaf(lib, a):
    return lib.tensor(a).requires_grad_(True)


def _hidden(name, m, batch, seed=3):
    """An initial state for module ``m`` (the torch one) with the given batch (None: unbatched)."""
    d = 2 if m.bidirectional else 1
    h = m.proj_size if getattr(m, "proj_size", 0) else m.hidden_size
    lead = (m.num_layers * d,) + ((batch,) if batch is not None else ())
    if "LSTM" in name:
        return [R(*lead, h, seed=seed), R(*lead, m.hidden_size, seed=seed + 1)]
    return [R(*lead, h, seed=seed)]


@pytest.mark.parametrize("name,ctor", MODULES, ids=[n for n, _ in MODULES])
@pytest.mark.parametrize("with_h", [False, True], ids=["h0=None", "h0"])
def test_forward_backward(name, ctor, with_h):
    tm = ctor(torch.nn)
    x = R(2, 5, 3) if tm.batch_first else R(5, 2, 3)
    hs = _hidden(name, tm, 2) if with_h else None

    def inputs(lib):
        args = [_leaf(lib, x)]
        if hs is not None:
            h = [_leaf(lib, a) for a in hs]
            args.append(tuple(h) if "LSTM" in name else h[0])
        return args
    _run_both(ctor, inputs, (0, 1) if with_h else (0,))


@pytest.mark.parametrize("name,ctor", [m for m in MODULES if m[0] in ("RNN", "LSTM_proj_bi_nobias", "GRU_3l_bi")],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_unbatched(name, ctor):
    tm = ctor(torch.nn)
    x = R(5, 3)
    hs = _hidden(name, tm, None)

    def inputs(lib):
        h = [_leaf(lib, a) for a in hs]
        return [_leaf(lib, x), tuple(h) if "LSTM" in name else h[0]]
    _run_both(ctor, inputs, (0, 1))
    _run_both(ctor, lambda lib: [_leaf(lib, x)], (0,))


@pytest.mark.parametrize("name,ctor", MODULES, ids=[n for n, _ in MODULES])
@pytest.mark.parametrize("sort", [True, False], ids=["sorted", "unsorted"])
def test_packed(name, ctor, sort):
    tm = ctor(torch.nn)
    lengths = [5, 3, 3, 1] if sort else [3, 5, 1, 4]
    x = R(4, 5, 3) if tm.batch_first else R(5, 4, 3)
    hs = _hidden(name, tm, 4)

    def inputs(lib):
        rnn = trnn if lib is torch else ernn
        xt = _leaf(lib, x)
        packed = rnn.pack_padded_sequence(xt, lengths, batch_first=tm.batch_first, enforce_sorted=sort)
        h = [_leaf(lib, a) for a in hs]
        return [packed, tuple(h) if "LSTM" in name else h[0], xt]
    tm_, em_ = _pair(ctor)

    def run(lib, m):
        rnn = trnn if lib is torch else ernn
        packed, h, xt = inputs(lib)
        out, hn = m(packed, h)
        assert isinstance(out, rnn.PackedSequence)
        padded, lens = rnn.pad_packed_sequence(out, batch_first=tm.batch_first)
        return padded, hn, lens, xt, h, m
    t, e = run(torch, tm_), run(ember, em_)
    assert t[2].tolist() == e[2].tolist()
    for a, b in zip(_flat(t[:2]), _flat(e[:2])):
        _close(a, b, "output")
    for r in (t, e):
        sum((o * o).sum() for o in _flat(r[:2])).backward()
    for a, b in zip([t[3]] + _flat(t[4]) + list(t[5].parameters()), [e[3]] + _flat(e[4]) + list(e[5].parameters())):
        _close(a.grad, b.grad, "grad")


def test_packed_no_hidden_and_sequence_helpers():
    seqs = [R(4, 3, seed=1), R(2, 3, seed=2), R(5, 3, seed=3)]

    def run(lib):
        rnn = trnn if lib is torch else ernn
        lib.manual_seed(0)
        m = lib.nn.LSTM(3, 4, bidirectional=True).double()
        xs = [lib.tensor(s, requires_grad=True) for s in seqs]
        out, (h, c) = m(rnn.pack_sequence(xs, enforce_sorted=False))
        back = rnn.unpack_sequence(out)
        (sum((b * b).sum() for b in back) + h.sum()).backward()
        return [*back, h, c, *[x.grad for x in xs]]
    for a, b in zip(run(torch), run(ember)):
        _close(a, b, "result")


def test_dropout_between_layers_is_seed_exact():
    for ctor in (lambda nn: nn.LSTM(3, 4, num_layers=3, dropout=0.4, bidirectional=True),
                 lambda nn: nn.GRU(3, 4, num_layers=2, dropout=0.6)):
        tm, em = _pair(ctor)
        x = R(5, 2, 3)
        torch.manual_seed(7)
        ember.manual_seed(7)
        outs = [_flat(m(lib.tensor(x))) for lib, m in ((torch, tm), (ember, em))]
        for a, b in zip(*outs):
            _close(a, b, "dropout output")
        # eval mode: no dropout at all
        tm.eval()
        em.eval()
        for a, b in zip(_flat(tm(torch.tensor(x))), _flat(em(ember.tensor(x)))):
            _close(a, b, "eval output")


def test_dropout_one_layer_warns():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        ember.nn.LSTM(3, 4, dropout=0.5)


def test_double_backward():
    x, h = R(4, 2, 3), R(1, 2, 4, seed=5)
    for ctor in (lambda nn: nn.LSTM(3, 4), lambda nn: nn.GRU(3, 4), lambda nn: nn.RNN(3, 4)):
        tm, em = _pair(ctor)
        res = []
        for lib, m in ((torch, tm), (ember, em)):
            xt, ht = _leaf(lib, x), _leaf(lib, h)
            out, _ = m(xt, (ht, ht * 0.5) if isinstance(m, lib.nn.LSTM) else ht)
            leaves = [xt, ht] + list(m.parameters())
            gs = lib.autograd.grad(out.pow(2).sum(), leaves, create_graph=True)
            s = sum((g * g).sum() for g in gs)
            res.append(lib.autograd.grad(s, leaves))
        for a, b in zip(*res):
            _close(a, b, "second derivative", atol=1e-9)


def test_forward_mode():
    x, tx = R(4, 2, 3), R(4, 2, 3, seed=9)
    tm, em = _pair(lambda nn: nn.LSTM(3, 4, num_layers=2))
    outs = []
    for lib, m in ((torch, tm), (ember, em)):
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level():
            dual = fwAD.make_dual(lib.tensor(x), lib.tensor(tx))
            out, (h, c) = m(dual)
            outs.append([fwAD.unpack_dual(t).tangent for t in (out, h, c)])
    for a, b in zip(*outs):
        _close(a, b, "tangent")


@pytest.mark.parametrize("name,ctor", CELLS, ids=[n for n, _ in CELLS])
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("with_h", [False, True], ids=["h=None", "h"])
def test_cells(name, ctor, batched, with_h):
    x = R(2, 3) if batched else R(3)
    hshape = (2, 4) if batched else (4,)
    hs = [R(*hshape, seed=4), R(*hshape, seed=5)]

    def inputs(lib):
        args = [_leaf(lib, x)]
        if with_h:
            h = [_leaf(lib, a) for a in hs]
            args.append(tuple(h) if "LSTM" in name else h[0])
        return args
    _run_both(ctor, inputs, (0, 1) if with_h else (0,))


def test_cell_sequence_and_double_backward():
    x = R(3, 2, 3)
    res = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        cell = lib.nn.GRUCell(3, 4).double()
        xt = _leaf(lib, x)
        h = None
        for t in range(3):
            h = cell(xt[t], h)
        g, = lib.autograd.grad(h.pow(3).sum(), xt, create_graph=True)
        res.append([h, g, lib.autograd.grad(g.sum(), cell.weight_hh)[0]])
    for a, b in zip(*res):
        _close(a, b, "cell")


def test_pad_sequence_variants():
    seqs = [R(2, 3, seed=1), R(4, 3, seed=2), R(1, 3, seed=3)]
    for bf in (False, True):
        for side in ("right", "left"):
            same(lambda lib: (trnn if lib is torch else ernn).pad_sequence(
                [lib.tensor(s) for s in seqs], batch_first=bf, padding_value=-2.0, padding_side=side))
    same(lambda lib: (trnn if lib is torch else ernn).pad_sequence([]))
    same(lambda lib: (trnn if lib is torch else ernn).pad_sequence([lib.tensor(seqs[0])], padding_side="up"))


def test_pack_pad_round_trip():
    x = R(5, 4, 2)
    for bf in (False, True):
        xx = x.transpose(1, 0, 2).copy() if bf else x
        for lengths, srt in (([5, 4, 2, 2], True), ([2, 5, 1, 4], False)):
            def fn(lib):
                rnn = trnn if lib is torch else ernn
                p = rnn.pack_padded_sequence(lib.tensor(xx), lib.tensor(lengths), batch_first=bf,
                                             enforce_sorted=srt)
                padded, lens = rnn.pad_packed_sequence(p, batch_first=bf, padding_value=9.0, total_length=7)
                return p.data, p.batch_sizes, p.sorted_indices, p.unsorted_indices, padded, lens
            same(fn, rtol=0, atol=0)
    for lengths in ([5, 4, 6, 2], [5, 4, 2, 0], [5, 4, 2]):
        same(lambda lib: (trnn if lib is torch else ernn).pack_padded_sequence(lib.tensor(x), lengths))
    same(lambda lib: (trnn if lib is torch else ernn).pad_packed_sequence(
        (trnn if lib is torch else ernn).pack_padded_sequence(lib.tensor(x), [5, 4, 2, 1]), total_length=3))


def test_unpad_sequence():
    def fn(lib):
        rnn = trnn if lib is torch else ernn
        x = lib.tensor(R(5, 3, 2))
        return rnn.unpad_sequence(x.clone(), lib.tensor([5, 2, 3]))
    same(fn)


def _module_call(ctor, *shapes, hx=None):
    def fn(lib):
        lib.manual_seed(0)
        m = ctor(lib.nn)
        h = None if hx is None else tuple(lib.zeros(s) for s in hx) if len(hx) > 1 else lib.zeros(hx[0])
        return m(lib.zeros(*shapes), h)
    return fn


def test_errors():
    same(_module_call(lambda nn: nn.LSTM(3, 4), 2, 3, 5), msg="input.size(-1) must be equal to input_size")
    same(_module_call(lambda nn: nn.GRU(3, 4), 2, 3, 3, 3), msg="Expected input to be 2D or 3D")
    same(_module_call(lambda nn: nn.RNN(3, 4), 2, 3, 3, 3), msg="Expected input to be 2D or 3D")
    same(_module_call(lambda nn: nn.GRU(3, 4), 5, 2, 3, hx=[(1, 3, 4)]), msg="Expected hidden size (1, 2, 4)")
    same(_module_call(lambda nn: nn.RNN(3, 4), 5, 2, 3, hx=[(2, 4)]), msg="hx should also be 3-D")
    same(_module_call(lambda nn: nn.LSTM(3, 4), 5, 2, 3, hx=[(1, 2, 4), (1, 2, 5)]),
         msg="Expected hidden[1] size (1, 2, 4), got [1, 2, 5]")
    same(_module_call(lambda nn: nn.LSTM(3, 4), 5, 3, hx=[(1, 2, 4), (1, 4)]), msg="hx and cx should also be 2-D")
    same(_module_call(lambda nn: nn.LSTMCell(3, 4), 2, 2, 3), msg="Expected input to be 1D or 2D")
    same(lambda lib: lib.nn.LSTM(3, 4)(lib.zeros(2, 1, 3, dtype=lib.float64)), msg="does not match weight dtype")
    same(lambda lib: lib.nn.LSTM(3, 4, proj_size=4), msg="proj_size has to be smaller than hidden_size")
    same(lambda lib: lib.nn.GRU(3, 4, proj_size=2), msg="proj_size argument is only supported for LSTM")
    same(lambda lib: lib.nn.RNN(3, 4, nonlinearity="gelu"), msg="Unknown nonlinearity 'gelu'")
    same(lambda lib: lib.nn.RNN(3, 4, dropout=1.5), msg="dropout should be a number in range [0, 1]")
    same(lambda lib: lib.nn.RNN(3, 0), msg="hidden_size must be greater than zero")
    same(lambda lib: lib.nn.RNN(3, 4, bias=1), msg="bias should be of type bool")


def test_module_machinery():
    m = ember.nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in torch.nn.LSTM(3, 4, 2, bidirectional=True)
                                                    .named_parameters()]
    # replacing a weight is seen by the next forward
    x = ember.randn(5, 2, 3)
    out0, _ = m(x)
    with ember.no_grad():
        m.weight_ih_l0.mul_(0)
        m.weight_hh_l0.mul_(0)
    out1, _ = m(x)
    assert not np.allclose(out0.detach().numpy(), out1.detach().numpy())
    m.weight_ih_l1 = ember.nn.Parameter(ember.zeros(16, 8))
    assert m._flat_weights[m._flat_weights_names.index("weight_ih_l1")] is m.weight_ih_l1
    m2 = ember.nn.GRU(3, 4).double()
    assert m2.weight_ih_l0.dtype == ember.float64
    assert m2(ember.randn(2, 1, 3, dtype=ember.float64))[0].dtype == ember.float64


def test_load_pytorch_state_dict():
    torch.manual_seed(1)
    tm = torch.nn.LSTM(3, 5, num_layers=2, proj_size=2, bidirectional=True, batch_first=True).double()
    em = ember.nn.LSTM(3, 5, num_layers=2, proj_size=2, bidirectional=True, batch_first=True).double()
    res = em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    assert not res.missing_keys and not res.unexpected_keys
    x = R(2, 4, 3)
    for a, b in zip(_flat(tm(torch.tensor(x))), _flat(em(ember.tensor(x)))):
        _close(a, b, "output after load_state_dict")


@pytest.mark.parametrize("cls", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("case", ["T0", "T0_batch_first", "T0_unbatched", "T0_no_batch", "T0_stacked_bidir",
                                  "T0_hx", "B0", "B0_batch_first", "packed_empty", "packed_empty_hx"])
def test_empty_sequences(cls, case):
    """An empty sequence is refused as PyTorch's kernel refuses it; an empty batch runs; an empty
    PackedSequence fails where PyTorch's does (reading batch_sizes[0])."""
    def fn(m):
        m.manual_seed(0)
        kw = {"batch_first": True} if "batch_first" in case else {}
        if "stacked" in case:
            kw.update(num_layers=2, bidirectional=True)
        mod = getattr(m.nn, cls)(3, 4, **kw)
        shape = {"T0": (0, 2, 3), "T0_batch_first": (2, 0, 3), "T0_unbatched": (0, 3), "T0_no_batch": (0, 0, 3),
                 "T0_stacked_bidir": (0, 2, 3), "T0_hx": (0, 2, 3), "B0": (5, 0, 3),
                 "B0_batch_first": (0, 5, 3)}.get(case)
        hx = None
        if case.endswith("hx"):
            h = m.zeros(1, 2, 4)
            hx = (h, h) if cls == "LSTM" else h
        if case.startswith("packed"):
            x = m.nn.utils.rnn.PackedSequence(m.randn(0, 3), m.tensor([], dtype=m.int64))
        else:
            x = m.randn(*shape)
        out, h = mod(x, hx)
        return out.shape, tuple(t.shape for t in (h if isinstance(h, tuple) else (h,)))
    same(fn, exact_msg=True)


# ----- the fused loop (ember/ops/rnn.py, ember/devices/cpu/nn_rnn.py) ------------------------------------------
from ember.ops import rnn as _fused  # noqa: E402

FUSED_CASES = [
    ("LSTM", lambda nn: nn.LSTM(3, 5)),
    ("LSTM_2l_bi", lambda nn: nn.LSTM(3, 5, num_layers=2, bidirectional=True)),
    ("LSTM_proj_bi", lambda nn: nn.LSTM(3, 5, num_layers=2, proj_size=2, bidirectional=True)),
    ("LSTM_nobias_bf", lambda nn: nn.LSTM(3, 5, bias=False, batch_first=True)),
    ("GRU", lambda nn: nn.GRU(3, 5)),
    ("GRU_2l_bi", lambda nn: nn.GRU(3, 5, num_layers=2, bidirectional=True)),
    ("GRU_nobias_bf", lambda nn: nn.GRU(3, 5, bias=False, batch_first=True)),
    ("RNN_tanh_bi", lambda nn: nn.RNN(3, 5, bidirectional=True)),
    ("RNN_relu_2l", lambda nn: nn.RNN(3, 5, 2, "relu")),
]


def _fused_run(ctor, dtype, packed, uses, seed=1):
    """Outputs and every gradient (input, states, parameters) of a module run, as float arrays."""
    ember.manual_seed(0)
    m = ctor(ember.nn).to(getattr(ember, dtype))
    rng = np.random.default_rng(seed)
    T, B = 5, 4
    x = ember.tensor(rng.standard_normal((B, T, 3) if m.batch_first else (T, B, 3)), dtype=m.weight_hh_l0.dtype,
                     requires_grad=True)
    d = 2 if m.bidirectional else 1
    h = ember.tensor(rng.standard_normal((m.num_layers * d, B, getattr(m, "proj_size", 0) or m.hidden_size)),
                     dtype=x.dtype, requires_grad=True)
    c = ember.tensor(rng.standard_normal((m.num_layers * d, B, m.hidden_size)), dtype=x.dtype, requires_grad=True)
    hx = (h, c) if isinstance(m, ember.nn.LSTM) else h
    inp = ernn.pack_padded_sequence(x, [5, 2, 4, 1], batch_first=m.batch_first, enforce_sorted=False) \
        if packed else x
    out, hn = m(inp, hx)
    out = out.data if packed else out
    hs = hn if isinstance(hn, tuple) else (hn,)
    loss = 0
    if "out" in uses:
        loss = loss + (out * out.detach().cos()).sum()
    if "h" in uses:
        loss = loss + (hs[0] * 1.5).sin().sum()
    if "c" in uses:
        loss = loss + (hs[-1] * 0.7).sin().sum()
    loss.backward()
    return [t.detach().numpy() for t in [out, *hs, x.grad, h.grad, c.grad, *[p.grad for p in m.parameters()]]
            if t is not None]


@pytest.mark.parametrize("name,ctor", FUSED_CASES, ids=[n for n, _ in FUSED_CASES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_fused_layers_are_the_composite_to_the_bit(name, ctor, dtype, packed, monkeypatch):
    """The fused node gives the composite's values and gradients bit for bit (signed zeros too), whichever
    outputs the loss reads."""
    for uses in (("out", "h", "c"), ("out",), ("h",), ("c",)):
        fused = _fused_run(ctor, dtype, packed, uses)
        with monkeypatch.context() as mp:
            mp.setattr(_fused, "fusable", lambda *a: False)
            composite = _fused_run(ctor, dtype, packed, uses)
        assert len(fused) == len(composite)
        for a, b in zip(fused, composite):
            np.testing.assert_array_equal(a, b, err_msg=f"{name} {uses}")
            assert np.array_equal(np.signbit(a), np.signbit(b)), f"{name} {uses}: signed zeros"


@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell", "RNNCell", "RNNCell_relu"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_cells_are_the_composite_to_the_bit(cls, dtype, monkeypatch):
    _cells_fused_vs_composite(cls, dtype, monkeypatch, sizes=(3, 5), shape=(4, 3, 3), seed=2)


def _cells_fused_vs_composite(cls, dtype, monkeypatch, sizes, shape, seed):
    """A cell run over ``shape[0]`` steps, fused and then composite: values and gradients equal to the bit."""
    def run():
        ember.manual_seed(0)
        m = (ember.nn.RNNCell(*sizes, nonlinearity="relu") if cls == "RNNCell_relu" else
             getattr(ember.nn, cls)(*sizes)).to(getattr(ember, dtype))
        rng = np.random.default_rng(seed)
        x = ember.tensor(rng.standard_normal(shape), dtype=m.weight_hh.dtype, requires_grad=True)
        st, loss = None, 0
        for t in range(shape[0]):
            st = m(x[t], st)
            h = st[0] if cls == "LSTMCell" else st
            loss = loss + (h * (t + 1)).sin().sum()
        if cls == "LSTMCell":
            loss = loss + st[1].cos().sum()
        loss.backward()
        return [h.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()]
    fused = run()
    monkeypatch.setattr(_fused, "fusable", lambda *a: False)
    for a, b in zip(fused, run(), strict=True):
        np.testing.assert_array_equal(a, b)


def _names(t):
    return [t.grad_fn.name()] if not isinstance(t, tuple) else [v.grad_fn.name() for v in t]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_grad_fn_names_are_torchs(dtype):
    """What a user sees: out.grad_fn and h_n.grad_fn (and the cells') carry PyTorch's names (float32 LSTM:
    MkldnnRnnLayerBackward0, PyTorch's oneDNN layer)."""
    cases = [(cls, kw) for cls in ("LSTM", "GRU", "RNN")
             for kw in ({}, {"batch_first": True}, {"num_layers": 2, "bidirectional": True}, {"num_layers": 2})]
    cases.append(("LSTM", {"proj_size": 2}))
    for cls, kw in cases:
        got = []
        for lib in (torch, ember):
            lib.manual_seed(0)
            m = getattr(lib.nn, cls)(3, 4, **kw).to(getattr(lib, dtype))
            x = lib.randn(*((2, 5, 3) if kw.get("batch_first") else (5, 2, 3)), dtype=getattr(lib, dtype))
            out, h = m(x)
            packed = (trnn if lib is torch else ernn).pack_padded_sequence(x, [5, 3], batch_first=m.batch_first)
            pout, ph = m(packed)
            got.append(_names(out) + _names(h) + _names(pout.data) + _names(ph))
        assert got[0] == got[1], (cls, kw)
    for cls in ("LSTMCell", "GRUCell", "RNNCell"):
        got = []
        for lib in (torch, ember):
            lib.manual_seed(0)
            m = getattr(lib.nn, cls)(3, 4).to(getattr(lib, dtype))
            got.append(_names(m(lib.randn(2, 3, dtype=getattr(lib, dtype)))))
        assert got[0] == got[1], cls
    assert isinstance(ember.nn.GRU(3, 4)(ember.randn(5, 2, 3))[0].grad_fn, _fused._RnnNode)


_FN_CASES = {   # name -> (function of the inputs, input shapes): ATen's flat-weight signatures
    "lstm": (lambda m, x, h, c, *w: m.lstm(x, (h, c), list(w), True, 1, 0.0, False, True, False),
             [(3, 2, 2), (2, 2, 2), (2, 2, 2)] + [(8, 2), (8, 2), (8,), (8,)] * 2),
    "lstm_proj": (lambda m, x, h, c, *w: m.lstm(x, (h, c), list(w), False, 1, 0.0, False, False, False),
                  [(3, 2, 2), (1, 2, 1), (1, 2, 2), (8, 2), (8, 1), (1, 2)]),
    "gru_packed": (lambda m, x, h, *w: m.gru(x, m.tensor([2, 1, 1]), h, list(w), True, 1, 0.0, False, True),
                   [(4, 2), (2, 2, 2)] + [(6, 2), (6, 2), (6,), (6,)] * 2),
    "rnn_tanh_2l": (lambda m, x, h, *w: m.rnn_tanh(x, h, list(w), True, 2, 0.0, False, False, True),
                    [(2, 3, 2), (2, 2, 2)] + [(2, 2), (2, 2), (2,), (2,)] * 2),
    "rnn_relu": (lambda m, x, h, *w: m.rnn_relu(x, h, list(w), False, 1, 0.0, False, False, False),
                 [(3, 2, 2), (1, 2, 2), (2, 2), (2, 2)]),
    "lstm_cell": (lambda m, x, h, c, *w: m.lstm_cell(x, (h, c), *w), [(2, 2), (2, 2), (2, 2), (8, 2), (8, 2),
                                                                      (8,), (8,)]),
    "gru_cell": (lambda m, x, h, *w: m.gru_cell(x, h, *w), [(2, 2), (2, 2), (6, 2), (6, 2), (6,), (6,)]),
}


@pytest.mark.parametrize("name", list(_FN_CASES))
def test_fused_gradcheck_and_gradgradcheck(name):
    """float64 central differences through the fused node: first derivatives (its reverse loop) and second
    (create_graph recomputes the composite)."""
    fn, shapes = _FN_CASES[name]
    rng = np.random.default_rng(5)
    args = [ember.tensor(rng.uniform(-1, 1, s), dtype=ember.float64, requires_grad=True) for s in shapes]

    def f(*a):
        r = fn(ember, *a)
        return tuple(r) if isinstance(r, (tuple, list)) else r
    out = f(*args)
    first = out[0] if isinstance(out, tuple) else out
    assert isinstance(first.grad_fn, _fused._RnnNode) or isinstance(first.grad_fn.next_functions[0][0],
                                                                      _fused._RnnNode), first.grad_fn
    assert ember.autograd.gradcheck(f, args)
    assert ember.autograd.gradgradcheck(f, args)


def test_fused_falls_back_to_the_composite():
    """Forward-mode tangents, saved-tensor hooks, vmap and float16 run the composite (ember's op nodes)."""
    import ember.autograd.forward_ad as fwAD
    m = ember.nn.LSTM(3, 4).double()
    x = ember.randn(4, 2, 3, dtype=ember.float64)
    assert isinstance(m(x)[0].grad_fn, _fused._RnnNode)
    with fwAD.dual_level():
        out, _ = m(fwAD.make_dual(x, ember.ones_like(x)))
        assert not isinstance(out.grad_fn, _fused._RnnNode) and fwAD.unpack_dual(out).tangent is not None
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        assert not isinstance(m(x)[0].grad_fn, _fused._RnnNode)
    assert not isinstance(m.half()(x.half())[0].grad_fn, _fused._RnnNode)
    cell = ember.nn.GRUCell(3, 4)
    xs = ember.randn(5, 2, 3)
    ys = ember.vmap(cell)(xs)
    for k in range(5):
        np.testing.assert_allclose(ys[k].detach().numpy(), cell(xs[k]).detach().numpy(), rtol=1e-6, atol=1e-7)


def test_fused_backward_errors_as_torchs():
    m = ember.nn.GRU(3, 4)
    x = ember.randn(5, 2, 3, requires_grad=True)
    out, _ = m(x)
    out.sum().backward(retain_graph=True)
    g1 = x.grad.clone()
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * g1.numpy())
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.sum().backward()
    out, _ = m(x)
    with ember.no_grad():
        m.weight_hh_l0.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_fused_mixed_dtypes_raise_as_torch():
    """Inputs of different dtypes take the composite, whose ops raise PyTorch's error."""
    def fn(m):
        x, h = m.randn(3, 2, 2), m.randn(1, 2, 2, dtype=m.float64)
        return m.rnn_tanh(x, h, [m.randn(2, 2), m.randn(2, 2)], False, 1, 0.0, False, False, False)
    same(fn, msg="to have the same dtype")


# sizes where the NumPy LSTM and GRU steps call BLAS directly (operand sizes' product over 4096) and where a gate block
# is just under elementwise._EXACT_MAX (32,768) elements while the four blocks together are over it
_NP_LSTM_SIZES = [(20, 64, 7, True, False), (20, 64, 7, False, True), (3, 40, 4, True, True),
                  (127, 256, 2, True, False), (128, 256, 2, True, False)]


@pytest.mark.parametrize("B,H,T,bias,bidir", _NP_LSTM_SIZES, ids=[f"B{b}H{h}T{t}{'' if bi else '_nobias'}"
                                                               f"{'_bi' if d else ''}"
                                                               for b, h, t, bi, d in _NP_LSTM_SIZES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_fused_layers_at_blas_sizes_are_the_composite_to_the_bit(B, H, T, bias, bidir, dtype, packed, mode,
                                                                 monkeypatch):
    """The LSTM's and GRU's NumPy steps (gate blocks joined per kernel, BLAS called directly) give the
    composite's values and gradients bit for bit at sizes where the products are BLAS calls, and around the
    float32 kernels' size threshold."""
    def run():
        ember.manual_seed(0)
        m = getattr(ember.nn, mode)(8, H, num_layers=2, bias=bias, bidirectional=bidir).to(getattr(ember, dtype))
        rng = np.random.default_rng(3)
        x = ember.tensor(rng.standard_normal((T, B, 8)), dtype=m.weight_hh_l0.dtype, requires_grad=True)
        d = 2 if bidir else 1
        h = ember.tensor(rng.standard_normal((2 * d, B, H)), dtype=x.dtype, requires_grad=True)
        c = ember.tensor(rng.standard_normal((2 * d, B, H)), dtype=x.dtype, requires_grad=True)
        lengths = sorted(rng.integers(1, T + 1, B).tolist(), reverse=True)
        lengths[0] = T
        inp = ernn.pack_padded_sequence(x, lengths) if packed else x
        out, hn = m(inp, (h, c) if mode == "LSTM" else h)
        hn, cn = hn if mode == "LSTM" else (hn, h * 0)
        out = out.data if packed else out
        loss = (out * out.detach().cos()).sum() + (hn * 1.5).sin().sum() + (cn * 0.7).sin().sum()
        loss.backward()
        grads = [x.grad, h.grad] + ([c.grad] if mode == "LSTM" else []) + [p.grad for p in m.parameters()]
        return [t.detach().numpy() for t in [out, hn, cn, *grads]]
    fused = run()
    monkeypatch.setattr(_fused, "fusable", lambda *a: False)
    for a, b in zip(fused, run(), strict=True):
        np.testing.assert_array_equal(a, b)
        assert np.array_equal(np.signbit(a), np.signbit(b))


@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_cells_at_blas_sizes_are_the_composite_to_the_bit(cls, dtype, monkeypatch):
    """The cells' NumPy steps at sizes where the products are BLAS calls (time_sequence_prediction's)."""
    _cells_fused_vs_composite(cls, dtype, monkeypatch, sizes=(7, 51), shape=(3, 97, 7), seed=4)
