"""MultiheadAttention, TransformerEncoder/DecoderLayer, TransformerEncoder/Decoder and Transformer against
PyTorch: seed-exact initialisation, repr, state_dict keys and shapes; with the same weights, outputs, attention
weights, input and parameter gradients (masks bool and float, key padding, causal, batch_first, unbatched,
norm_first, bias=False), train and eval, dropout drawn as PyTorch draws it, double backward, and the errors."""
import warnings

import numpy as np
import pytest

import ember

from parity import same

torch = pytest.importorskip("torch")


def R(*shape, seed=0):
    return np.random.default_rng(seed + 11 * len(shape)).uniform(-1, 1, shape)


def _pair(ctor, dtype="float64"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        tm = ctor(torch.nn).to(getattr(torch, dtype))
        ember.manual_seed(0)
        em = ctor(ember.nn).to(getattr(ember, dtype))
    return tm, em


def _close(a, b, what, atol=1e-10):
    assert (a is None) == (b is None), what
    if a is not None:
        assert tuple(a.shape) == tuple(b.shape), what
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-9, atol=atol, err_msg=what)


MODULES = [
    ("MHA", lambda nn: nn.MultiheadAttention(8, 2)),
    ("MHA_nobias_bf", lambda nn: nn.MultiheadAttention(8, 4, bias=False, batch_first=True)),
    ("MHA_bias_kv_zero_attn", lambda nn: nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True)),
    ("MHA_kdim_vdim", lambda nn: nn.MultiheadAttention(8, 2, kdim=3, vdim=5)),
    ("EncLayer", lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)),
    ("EncLayer_gelu_normfirst_bf", lambda nn: nn.TransformerEncoderLayer(8, 2, 12, 0.0, "gelu", batch_first=True,
                                                                         norm_first=True)),
    ("EncLayer_module_act_nobias", lambda nn: nn.TransformerEncoderLayer(8, 2, 12, 0.0, nn.GELU(approximate="tanh"),
                                                                         layer_norm_eps=1e-3, bias=False)),
    ("DecLayer", lambda nn: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)),
    ("DecLayer_normfirst_bf", lambda nn: nn.TransformerDecoderLayer(8, 4, 16, 0.0, "gelu", batch_first=True,
                                                                    norm_first=True)),
    ("Encoder", lambda nn: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, 0.0), 2, nn.LayerNorm(8))),
    ("Decoder", lambda nn: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, 0.0), 2)),
    ("Transformer", lambda nn: nn.Transformer(8, 2, 2, 1, 16, dropout=0.0)),
    ("Transformer_bf_normfirst", lambda nn: nn.Transformer(8, 2, 1, 2, 16, 0.0, "gelu", batch_first=True,
                                                           norm_first=True)),
]


@pytest.mark.parametrize("name,ctor", MODULES, ids=[n for n, _ in MODULES])
def test_init_repr_state_dict(name, ctor):
    tm, em = _pair(ctor, "float32")
    assert repr(em) == repr(tm)
    ts, es = tm.state_dict(), em.state_dict()
    assert [(k, tuple(v.shape)) for k, v in es.items()] == [(k, tuple(v.shape)) for k, v in ts.items()]
    for k in ts:
        np.testing.assert_array_equal(es[k].numpy(), ts[k].numpy(), err_msg=f"{name}.{k}")
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]


def _run(lib, m, args, kwargs, grad_idx):
    """Forward, then backward of a fixed function of every output; returns outputs and gradients."""
    ins = [lib.tensor(a).requires_grad_(i in grad_idx) if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
    kw = {k: (lib.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    out = m(*ins, **kw)
    outs = [o for o in (out if isinstance(out, tuple) else (out,))]
    loss = sum((o * (1.0 + 0.5 * k)).sin().sum() for k, o in enumerate(outs) if o is not None)
    loss.backward()
    return outs, [ins[i].grad for i in grad_idx] + [p.grad for p in m.parameters()]


def _compare(ctor, args, kwargs=None, grad_idx=(0,), train=True, atol=1e-10):
    tm, em = _pair(ctor)
    tm.train(train)
    em.train(train)
    (to, tg), (eo, eg) = _run(torch, tm, args, kwargs or {}, grad_idx), _run(ember, em, args, kwargs or {}, grad_idx)
    assert len(to) == len(eo)
    for i, (a, b) in enumerate(zip(to, eo)):
        _close(a, b, f"output {i}", atol)
    for i, (a, b) in enumerate(zip(tg, eg)):
        _close(a, b, f"gradient {i}", atol)


# ----- MultiheadAttention -------------------------------------------------------------------------------------

def _causal_bool(n, s=None):
    return np.triu(np.ones((n, s or n), dtype=bool), 1)


def _kpm(batch, s, seed=0):
    m = np.zeros((batch, s), dtype=bool)
    m[0, -2:] = True
    m[-1, -1] = True
    return m


@pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "no_weights"])
@pytest.mark.parametrize("name,ctor", MODULES[:4], ids=[n for n, _ in MODULES[:4]])
def test_mha(name, ctor, need_weights):
    bf = "bf" in name
    q = R(3, 4, 8) if bf else R(4, 3, 8)
    kd, vd = (3, 5) if "kdim" in name else (8, 8)
    k = R(3, 6, kd, seed=1) if bf else R(6, 3, kd, seed=1)
    v = R(3, 6, vd, seed=2) if bf else R(6, 3, vd, seed=2)
    kw = {"need_weights": need_weights}
    _compare(ctor, [q, k, v], kw, grad_idx=(0, 1, 2))
    if need_weights:   # the weights of each head
        _compare(ctor, [q, k, v], {"average_attn_weights": False, "attn_mask": _causal_bool(4, 6)}, (0, 1, 2))
    # masks: bool and float attention masks, 3-D per-head masks, key padding (bool and float)
    _compare(ctor, [q, k, v], {**kw, "attn_mask": _causal_bool(4, 6), "key_padding_mask": _kpm(3, 6)}, (0, 1, 2))
    fmask = R(4, 6, seed=5)
    _compare(ctor, [q, k, v], {**kw, "attn_mask": fmask}, (0, 1, 2))
    heads = 4 if "nobias" in name else 2
    _compare(ctor, [q, k, v], {**kw, "attn_mask": R(3 * heads, 4, 6, seed=6),
                               "key_padding_mask": np.where(_kpm(3, 6), -1e9, 0.0)}, (0, 1, 2))


def test_mha_self_attention_causal_and_eval():
    ctor = MODULES[0][1]
    x = R(5, 2, 8)
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    for nw in (False, True):
        _compare(ctor, [x, x, x], {"attn_mask": mask, "is_causal": True, "need_weights": nw})
    _compare(ctor, [x, x, x], {"attn_mask": _causal_bool(5)}, train=False)


def test_mha_unbatched():
    for ctor in (MODULES[0][1], MODULES[1][1], MODULES[3][1]):
        tm = ctor(torch.nn)
        q, k, v = R(4, 8), R(6, tm.kdim, seed=1), R(6, tm.vdim, seed=2)
        _compare(ctor, [q, k, v], {"key_padding_mask": np.array([0, 0, 0, 0, 1, 1], dtype=bool)}, (0, 1, 2))
        _compare(ctor, [q, k, v], {"attn_mask": _causal_bool(4, 6), "need_weights": False}, (0, 1, 2))


def _weight_path(out, weight):
    """Node names from ``out``'s grad_fn down to the AccumulateGrad of ``weight`` (the first path found)."""
    def walk(fn, path):
        if fn is None:
            return None
        if type(fn).__name__ == "AccumulateGrad":
            return path if fn.variable is weight else None
        for nxt, _ in fn.next_functions:
            found = walk(nxt, path + [type(fn).__name__])
            if found:
                return found
        return None
    return walk(out.grad_fn, [])


@pytest.mark.parametrize("kind", ["self", "encdec", "qkv"])
def test_mha_in_projection_is_pytorchs_linear(kind):
    """The packed in-projection is F.linear as PyTorch's _in_projection_packed calls it: for self-attention one
    addmm of the whole (3E, E) weight on the folded rows (its input gradient one GEMM over 3E, as PyTorch's),
    for encoder-decoder attention one of its key/value rows; the nodes from the weight up to the split are
    PyTorch's (ember then splits by views where PyTorch copies and selects)."""
    paths = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        m = lib.nn.MultiheadAttention(8, 2)
        x = lib.tensor(R(5, 3, 8), dtype=lib.float32, requires_grad=True)
        y = lib.tensor(R(4, 3, 8, seed=1), dtype=lib.float32)
        q, k, v = {"self": (x, x, x), "encdec": (x, y, y), "qkv": (x, y, y.clone())}[kind]
        out = m(q, k, v, need_weights=False)[0]
        path = _weight_path(out, m.in_proj_weight)
        # from the product's view down (above it PyTorch copies and selects where ember splits by views)
        paths.append(path[len(path) - 1 - path[::-1].index("AddmmBackward0") - 1:])
    assert paths[1] == paths[0], paths


def test_mha_separate_weight_shapes():
    """PyTorch's _in_projection checks the separate weights' shapes (AssertionError), before any product."""
    def bad(lib):
        lib.manual_seed(0)
        m = lib.nn.MultiheadAttention(8, 2, kdim=5, vdim=6)
        x, kv = lib.tensor(R(4, 2, 8)), lib.tensor(R(3, 2, 5, seed=1))
        return m(x, kv, kv)   # value's 5 features against v_proj_weight's 6
    same(bad, msg="expecting value weights shape of (8, 5), but got")


def test_mha_dropout_seed_exact():
    x = R(5, 3, 8)
    for nw in (True, False):
        tm, em = _pair(lambda nn: nn.MultiheadAttention(8, 2, dropout=0.4))
        res = []
        for lib, m in ((torch, tm), (ember, em)):
            lib.manual_seed(11)
            t = lib.tensor(x)
            res.append(m(t, t, t, need_weights=nw))
        for a, b in zip(*res):
            _close(a, b, "dropout")


def test_mha_double_backward():
    x = R(4, 2, 8)
    res = []
    tm, em = _pair(lambda nn: nn.MultiheadAttention(8, 2, add_bias_kv=True))
    for lib, m in ((torch, tm), (ember, em)):
        t = lib.tensor(x, requires_grad=True)
        out, w = m(t, t, t)
        leaves = [t] + list(m.parameters())
        gs = lib.autograd.grad(out.pow(2).sum() + w.pow(2).sum(), leaves, create_graph=True)
        res.append(lib.autograd.grad(sum((g * g).sum() for g in gs), leaves))
    for a, b in zip(*res):
        _close(a, b, "second derivative", atol=1e-9)


# ----- Transformer layers and stacks -----------------------------------------------------------------------

def _seq(name, n, batch=3, seed=0):
    return R(batch, n, 8, seed=seed) if "bf" in name else R(n, batch, 8, seed=seed)


ENC = [m for m in MODULES if m[0].startswith(("EncLayer", "Encoder"))]
DEC = [m for m in MODULES if m[0].startswith(("DecLayer", "Decoder"))]
TRF = [m for m in MODULES if m[0].startswith("Transformer")]


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("name,ctor", ENC, ids=[n for n, _ in ENC])
def test_encoder(name, ctor, train):
    x = _seq(name, 5)
    mask_kw = "src_mask" if "Layer" in name else "mask"
    _compare(ctor, [x], train=train)
    _compare(ctor, [x], {mask_kw: _causal_bool(5), "src_key_padding_mask": _kpm(3, 5)}, train=train)
    _compare(ctor, [x], {mask_kw: np.triu(np.full((5, 5), -np.inf), 1), "is_causal": True}, train=train)
    _compare(ctor, [x], {"src_key_padding_mask": np.where(_kpm(3, 5), -np.inf, 0.0)}, train=train)


@pytest.mark.parametrize("name,ctor", DEC, ids=[n for n, _ in DEC])
def test_decoder(name, ctor):
    tgt, mem = _seq(name, 4), _seq(name, 6, seed=3)
    _compare(ctor, [tgt, mem], grad_idx=(0, 1))
    causal = np.triu(np.full((4, 4), -np.inf), 1)
    _compare(ctor, [tgt, mem], {"tgt_mask": causal, "memory_mask": _causal_bool(4, 6),
                                "tgt_key_padding_mask": _kpm(3, 4), "memory_key_padding_mask": _kpm(3, 6)},
             grad_idx=(0, 1))
    _compare(ctor, [tgt, mem], {"tgt_mask": causal, "tgt_is_causal": True}, grad_idx=(0, 1), train=False)


@pytest.mark.parametrize("name,ctor", TRF, ids=[n for n, _ in TRF])
def test_transformer(name, ctor):
    src, tgt = _seq(name, 6), _seq(name, 4, seed=3)
    _compare(ctor, [src, tgt], grad_idx=(0, 1))
    mask = np.asarray(torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64))
    _compare(ctor, [src, tgt], {"tgt_mask": mask, "src_key_padding_mask": _kpm(3, 6),
                                "memory_key_padding_mask": _kpm(3, 6)}, grad_idx=(0, 1))


def test_unbatched_layers():
    _compare(MODULES[4][1], [R(5, 8)], {"src_mask": _causal_bool(5)})
    _compare(MODULES[7][1], [R(4, 8), R(6, 8, seed=3)], grad_idx=(0, 1))


def test_transformer_dropout_seed_exact():
    src, tgt = R(5, 2, 8), R(3, 2, 8, seed=4)
    tm, em = _pair(lambda nn: nn.Transformer(8, 2, 2, 2, 16, dropout=0.3))
    res = []
    for lib, m in ((torch, tm), (ember, em)):
        lib.manual_seed(5)
        res.append(m(lib.tensor(src), lib.tensor(tgt)))
        res.append(lib.rand(3))   # the generators end in the same state
    for a, b in zip(res[:2], res[2:]):
        _close(a, b, "dropout")


def test_eval_without_grad_matches_pytorch_fast_path():
    # PyTorch takes its fused kernels here; ember's general path must give the same values
    x = R(2, 5, 8)
    tm, em = _pair(lambda nn: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2),
                   "float32")
    tm.eval()
    em.eval()
    with torch.no_grad(), ember.no_grad():
        a = tm(torch.tensor(x, dtype=torch.float32))
        b = em(ember.tensor(x, dtype=ember.float32))
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-5)


def test_generate_square_subsequent_mask():
    same(lambda lib: lib.nn.Transformer.generate_square_subsequent_mask(4), rtol=0, atol=0)
    same(lambda lib: lib.nn.Transformer.generate_square_subsequent_mask(3, dtype=lib.float64), rtol=0, atol=0)


def _causal_masks():
    c = np.triu(np.full((4, 4), -np.inf), 1)
    off = c.copy()
    off[3, 1] = -np.inf
    neg0 = np.where(c == 0, -0.0, c)
    nan = c.copy()
    nan[0, 0] = np.nan
    return [(c, "float32"), (c, "float64"), (off, "float32"), (neg0, "float32"), (nan, "float64"),
            (np.zeros((4, 4)), "float32"), (c[:3], "float32"), (np.triu(np.ones((4, 4)), 1) > 0, "bool")]


@pytest.mark.parametrize("case", range(8))
@pytest.mark.parametrize("ops_path", [False, True])
def test_detect_is_causal_mask_like_torch(case, ops_path, monkeypatch):
    """The encoder's causal-mask check (on the raw arrays, or through the ops when something watches them)
    answers as PyTorch's for exact, near, signed-zero, NaN, non-square and bool masks."""
    from torch.nn.modules.transformer import _detect_is_causal_mask as t_detect
    from ember.nn.modules import transformer as et
    if ops_path:
        monkeypatch.setattr(et, "_PLAIN_RESULT", None)
    m, dt = _causal_masks()[case]
    size = m.shape[-2]
    tm = torch.tensor(m).to(getattr(torch, dt))
    em = ember.tensor(m).to(getattr(ember, dt))
    assert et._detect_is_causal_mask(em, None, size) == t_detect(tm, None, size)
    assert et._detect_is_causal_mask(em, True, size) is True and et._detect_is_causal_mask(None, None, 4) is False


def test_nested_tensor_warning():
    for kw in ({}, {"batch_first": True}, {"batch_first": True, "norm_first": True}):
        msgs = []
        for lib in (torch, ember):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(8, 2, 16, **kw), 1)
            msgs.append([str(x.message) for x in w if "nested" in str(x.message)])
        assert msgs[0] == msgs[1]


def test_errors():
    same(lambda lib: lib.nn.MultiheadAttention(8, 3))
    same(lambda lib: lib.nn.MultiheadAttention(0, 2), msg="embed_dim and num_heads must be greater than 0")
    same(lambda lib: lib.nn.TransformerEncoderLayer(8, 2, activation="tanh"), msg="activation should be relu/gelu")
    x = R(5, 2, 8).astype(np.float32)

    def bad_batch(lib):
        lib.manual_seed(0)
        return lib.nn.Transformer(8, 2, 1, 1, 16)(lib.tensor(x), lib.tensor(R(4, 3, 8).astype(np.float32)))
    same(bad_batch, msg="the batch number of src and tgt must be equal")

    def bad_mask(lib):
        lib.manual_seed(0)
        t = lib.tensor(x)
        return lib.nn.MultiheadAttention(8, 2)(t, t, t, attn_mask=lib.zeros(5, 5, dtype=lib.int64))
    same(bad_mask, msg="only bool and floating types of attn_mask are supported")

    def bad_shape(lib):
        lib.manual_seed(0)
        t = lib.tensor(x)
        return lib.nn.MultiheadAttention(8, 2)(t, t, t, attn_mask=lib.zeros(4, 5))
    same(bad_shape, msg="The shape of the 2D attn_mask is")


def test_load_pytorch_state_dict():
    torch.manual_seed(1)
    tm = torch.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True).double()
    em = ember.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True).double()
    res = em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    assert not res.missing_keys and not res.unexpected_keys
    src, tgt = R(2, 5, 8), R(2, 3, 8, seed=1)
    _close(tm(torch.tensor(src), torch.tensor(tgt)), em(ember.tensor(src), ember.tensor(tgt)), "after load")


def test_double_backward_encoder_layer():
    # PyTorch's fused CPU attention has no double backward: compare with its math kernel
    from torch.nn.attention import SDPBackend, sdpa_kernel
    x = R(2, 4, 8)
    tm, em = _pair(MODULES[5][1])
    res = []
    for lib, m in ((torch, tm), (ember, em)):
        t = lib.tensor(x, requires_grad=True)
        leaves = [t] + list(m.parameters())
        with sdpa_kernel(SDPBackend.MATH):
            out = m(t, is_causal=True, src_mask=lib.tensor(_causal_bool(4)))
            gs = lib.autograd.grad(out.pow(2).sum(), leaves, create_graph=True)
            res.append(lib.autograd.grad(sum((g * g).sum() for g in gs), leaves))
    for a, b in zip(*res):
        _close(a, b, "second derivative", atol=1e-8)
