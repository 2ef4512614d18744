"""nn.functional normalisation, distances and attention: what the op database cannot compare.

Side effects (running statistics updated in place), float16 and large-offset stability, dropout inside
attention drawn from the generator stream, torch's fused CPU attention kernel, and conventions where the
gradient is not the derivative of the value (cosine_similarity's clamp)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
torch.set_num_threads(1)


def both(arr, requires_grad=False, dtype=None):
    a = np.asarray(arr) if dtype is None else np.asarray(arr).astype(dtype)
    return (torch.tensor(a, requires_grad=requires_grad), ember.tensor(a, requires_grad=requires_grad))


def close(e, t, rtol=1e-6, atol=1e-6):
    assert str(e.dtype) == str(t.dtype), (e.dtype, t.dtype)
    np.testing.assert_allclose(e.detach().numpy().astype(np.float64), t.detach().numpy().astype(np.float64),
                               rtol=rtol, atol=atol, equal_nan=True)


RNG = np.random.default_rng(7)


# ----- running statistics ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 2), (2, 3, 2, 2)])
@pytest.mark.parametrize("momentum", [0.1, 0.5, 0.0, 1.0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_running_stats(shape, momentum, dtype):
    x = RNG.standard_normal(shape) * 3 + 1
    rm0, rv0 = RNG.standard_normal(shape[1]), RNG.uniform(0.5, 2, shape[1])
    (tx, ex), (trm, erm), (trv, erv) = both(x, dtype=dtype), both(rm0, dtype=dtype), both(rv0, dtype=dtype)
    for _ in range(2):   # twice: the second update starts from the first
        to = torch.nn.functional.batch_norm(tx, trm, trv, training=True, momentum=momentum)
        eo = ember.nn.functional.batch_norm(ex, erm, erv, training=True, momentum=momentum)
    tol = 1e-6 if dtype == "float32" else 1e-12
    close(eo, to, tol, tol)
    close(erm, trm, tol, tol)
    close(erv, trv, tol, tol)
    assert erm._version == trm._version and erv._version == trv._version


def test_batch_norm_eval_leaves_the_buffers_alone():
    x = RNG.standard_normal((4, 3))
    (tx, ex), (trm, erm) = both(x), both(np.zeros(3))
    for lib, t in ((torch, tx), (ember, ex)):   # one buffer without the other
        with pytest.raises(ValueError):
            lib.nn.functional.batch_norm(t, lib.zeros(3, dtype=lib.float64), None, training=True)
    (trv, erv) = both(np.ones(3))
    before = erm.numpy().copy()
    close(ember.nn.functional.batch_norm(ex, erm, erv), torch.nn.functional.batch_norm(tx, trm, trv), 1e-12, 1e-12)
    np.testing.assert_array_equal(erm.numpy(), before)


def test_batch_norm_half_input_float_stats():
    x = RNG.standard_normal((6, 3)).astype(np.float16)
    (tx, ex), (trm, erm), (trv, erv) = both(x), both(np.zeros(3, np.float32)), both(np.ones(3, np.float32))
    to = torch.nn.functional.batch_norm(tx, trm, trv, training=True)
    eo = ember.nn.functional.batch_norm(ex, erm, erv, training=True)
    close(eo, to, 1e-3, 1e-3)
    close(erm, trm, 1e-6, 1e-6)
    close(erv, trv, 1e-6, 1e-6)


def test_batch_norm_momentum_none_is_the_modules_business():
    # F.batch_norm takes a float momentum; the cumulative average (momentum=None) is computed by nn.BatchNorm
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.nn.functional.batch_norm(lib.ones(4, 3), lib.zeros(3), lib.ones(3), training=True, momentum=None)


@pytest.mark.parametrize("shape", [(2, 3, 4), (3, 2, 2, 3)])
def test_instance_norm_running_stats(shape):
    x = RNG.standard_normal(shape) * 2 - 1
    (tx, ex), (trm, erm), (trv, erv) = both(x), both(RNG.standard_normal(shape[1])), \
        both(RNG.uniform(0.5, 2, shape[1]))
    to = torch.nn.functional.instance_norm(tx, trm, trv, momentum=0.3)
    eo = ember.nn.functional.instance_norm(ex, erm, erv, momentum=0.3)
    close(eo, to, 1e-12, 1e-12)
    close(erm, trm, 1e-12, 1e-12)
    close(erv, trv, 1e-12, 1e-12)
    assert erm._version == trm._version and erv._version == trv._version


# ----- float16 and large offsets ------------------------------------------------------------------------------

def _norm_calls(F, x, w, b):
    return {
        "layer_norm": lambda: F.layer_norm(x, (4,), w, b),
        "group_norm": lambda: F.group_norm(x.reshape(2, 4, 3).transpose(1, 2).reshape(2, 4, 3), 2, w, b),
        "batch_norm": lambda: F.batch_norm(x.reshape(2, 4, 3).transpose(1, 2).reshape(2, 4, 3), None, None, w, b,
                                           True),
        "rms_norm": lambda: F.rms_norm(x, (4,), w),
    }


@pytest.mark.parametrize("name", ["layer_norm", "group_norm", "batch_norm", "rms_norm"])
def test_float16_computes_in_float32(name):
    x = (RNG.standard_normal((2, 3, 4)) * 2).astype(np.float16)
    w, b = RNG.standard_normal(4).astype(np.float16), RNG.standard_normal(4).astype(np.float16)
    res = {}
    for lib in (torch, ember):
        xs = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        out = _norm_calls(lib.nn.functional, *xs)[name]()
        g = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)).astype(np.float16))
        grads = lib.autograd.grad(out, xs, g, allow_unused=True)
        res[lib] = (out, grads)
    (to, tg), (eo, eg) = res[torch], res[ember]
    close(eo, to, 2e-3, 2e-3)
    for a, b_ in zip(eg, tg):
        if b_ is None:
            assert a is None or not np.any(a.numpy())
        else:
            close(a, b_, 1e-2, 1e-2)


@pytest.mark.parametrize("name", ["layer_norm", "group_norm", "batch_norm"])
def test_large_offset_float32(name):
    # mean 1e4: statistics accumulate in float64, so ember is at least as close to the exact answer as torch
    x = (1e4 + RNG.standard_normal((2, 3, 4))).astype(np.float32)
    w, b = RNG.standard_normal(4).astype(np.float32), RNG.standard_normal(4).astype(np.float32)
    exact = _norm_calls(torch.nn.functional, *[torch.tensor(a.astype(np.float64)) for a in (x, w, b)])[name]()
    to = _norm_calls(torch.nn.functional, *[torch.tensor(a) for a in (x, w, b)])[name]()
    eo = _norm_calls(ember.nn.functional, *[ember.tensor(a) for a in (x, w, b)])[name]()
    err_e = np.abs(eo.numpy() - exact.numpy()).max()
    err_t = np.abs(to.numpy() - exact.numpy()).max()
    assert np.isfinite(eo.numpy()).all() and err_e <= max(err_t, 1e-5), (err_e, err_t)


def test_large_offset_gradients_float64():
    x = 1e4 + RNG.standard_normal((3, 5))
    (tx, ex) = both(x, True)
    g = RNG.standard_normal((3, 5))
    tg, = torch.autograd.grad(torch.nn.functional.layer_norm(tx, (5,)), tx, torch.tensor(g))
    eg, = ember.autograd.grad(ember.nn.functional.layer_norm(ex, (5,)), ex, ember.tensor(g))
    close(eg, tg, 1e-7, 1e-9)


# ----- attention ---------------------------------------------------------------------------------------------

def _qkv(shapes, dtype=np.float64):
    return [RNG.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sdpa_fused_cpu_path_values_and_grads(dtype):
    # torch runs 4-d inputs without a mask through its fused CPU kernel: same values and gradients
    arrays = _qkv([(2, 2, 4, 3), (2, 2, 5, 3), (2, 2, 5, 3)], dtype)
    res = {}
    for lib in (torch, ember):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = lib.nn.functional.scaled_dot_product_attention(*xs, is_causal=True)
        res[lib] = (out, lib.autograd.grad(out.sum(), xs))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    close(res[ember][0], res[torch][0], tol, tol)
    for a, b in zip(res[ember][1], res[torch][1]):
        close(a, b, tol, tol)


def test_sdpa_dropout_draws_torchs_stream():
    arrays = _qkv([(2, 3, 4), (2, 5, 4), (2, 5, 4)])
    outs = []
    for lib in (torch, ember):
        lib.manual_seed(123)
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        outs.append(lib.nn.functional.scaled_dot_product_attention(*xs, dropout_p=0.4))
    close(outs[1], outs[0], 1e-12, 1e-12)
    # the dropped weights are zero and the kept ones scaled by 1 / (1 - p): the rows no longer sum to 1
    ember.manual_seed(5)
    q, k, v = (ember.tensor(a) for a in arrays)
    eye = ember.eye(5, dtype=ember.float64).expand(2, 5, 5)
    full = ember.nn.functional.scaled_dot_product_attention(q, k, eye, dropout_p=0.5)
    vals = np.unique(np.round(full.numpy(), 12))
    assert (full.numpy() == 0).any() and not np.allclose(full.numpy().sum(-1), 1)
    assert len(vals) > 1


def test_sdpa_fully_masked_rows_and_empty():
    arrays = _qkv([(2, 3, 4), (2, 5, 4), (2, 5, 4)])
    mask = np.ones((3, 5), bool)
    mask[0] = False
    res = []
    for lib in (torch, ember):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = lib.nn.functional.scaled_dot_product_attention(*xs, attn_mask=lib.tensor(mask))
        res.append((out, lib.autograd.grad(out.sum(), xs)))
    close(res[1][0], res[0][0], 1e-12, 1e-12)
    assert not res[1][0].detach().numpy()[:, 0].any()
    for a, b in zip(res[1][1], res[0][1]):
        close(a, b, 1e-12, 1e-12)
    # no queries at all
    arrays = _qkv([(2, 0, 4), (2, 5, 4), (2, 5, 4)])
    t = torch.nn.functional.scaled_dot_product_attention(*[torch.tensor(a) for a in arrays])
    e = ember.nn.functional.scaled_dot_product_attention(*[ember.tensor(a) for a in arrays])
    assert tuple(e.shape) == tuple(t.shape)


def test_sdpa_float16():
    arrays = _qkv([(2, 3, 4), (2, 5, 4), (2, 5, 4)], np.float16)
    t = torch.nn.functional.scaled_dot_product_attention(*[torch.tensor(a) for a in arrays])
    e = ember.nn.functional.scaled_dot_product_attention(*[ember.tensor(a) for a in arrays])
    close(e, t, 3e-3, 3e-3)


@pytest.mark.parametrize("call", [
    lambda L: L.nn.functional.scaled_dot_product_attention(L.ones(2, 3, 4), L.ones(2, 5, 4), L.ones(2, 5, 4),
                                                           attn_mask=L.ones(3, 5, dtype=L.int64)),
    lambda L: L.nn.functional.scaled_dot_product_attention(L.ones(1, 3, 3, 4), L.ones(1, 2, 5, 4),
                                                           L.ones(1, 2, 5, 4), enable_gqa=True),
    lambda L: L.nn.functional.scaled_dot_product_attention(L.ones(4), L.ones(4), L.ones(4)),
    lambda L: L.nn.functional.scaled_dot_product_attention(L.ones(2, 3), L.ones(2, 3, dtype=L.float64),
                                                           L.ones(2, 3)),
    lambda L: L.nn.functional.scaled_dot_product_attention(L.ones(2, 3, 4, dtype=L.float64),
                                                           L.ones(2, 5, 4, dtype=L.float64),
                                                           L.ones(2, 5, 4, dtype=L.float64),
                                                           attn_mask=L.ones(3, 5, dtype=L.bool), is_causal=True),
])
def test_sdpa_errors(call):
    with pytest.raises(Exception) as t:
        call(torch)
    with pytest.raises(Exception) as e:
        call(ember)
    assert e.type is t.type, (e.value, t.value)


# ----- distances ---------------------------------------------------------------------------------------------

def test_cosine_similarity_clamped_norm_gradient_is_torchs():
    # a norm below eps: the value uses eps, the gradient flows through the unclamped norm (PyTorch 2.x)
    a = RNG.standard_normal((3, 4)) * 0.1
    b = RNG.standard_normal((3, 4))
    res = []
    for lib in (torch, ember):
        xa, xb = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        out = lib.nn.functional.cosine_similarity(xa, xb, eps=0.3)
        res.append((out, lib.autograd.grad(out.sum(), (xa, xb))))
    close(res[1][0], res[0][0], 1e-12, 1e-12)
    for x, y in zip(res[1][1], res[0][1]):
        close(x, y, 1e-12, 1e-12)


def test_cosine_similarity_large_magnitudes():
    # each input is divided by its own norm first: no overflow of the product of norms in float32
    a = (RNG.standard_normal((2, 3)) * 1e25).astype(np.float32)
    b = (RNG.standard_normal((2, 3)) * 1e25).astype(np.float32)
    t = torch.nn.functional.cosine_similarity(torch.tensor(a), torch.tensor(b))
    e = ember.nn.functional.cosine_similarity(ember.tensor(a), ember.tensor(b))
    assert np.isfinite(e.numpy()).all()
    close(e, t, 1e-5, 1e-6)


@pytest.mark.parametrize("p", [2.0, 1.5, 3.0])
def test_pdist_double_backward_by_central_differences(p):
    # torch has no double backward for pdist; ember's rule is differentiable: check it numerically
    x0 = RNG.standard_normal((4, 3))
    v = RNG.standard_normal(6)
    w = RNG.standard_normal((4, 3))

    def vjp_dot(x):
        xt = ember.tensor(x, requires_grad=True)
        g, = ember.autograd.grad(ember.nn.functional.pdist(xt, p), xt, ember.tensor(v))
        return float((g.numpy() * w).sum())
    xt = ember.tensor(x0, requires_grad=True)
    g, = ember.autograd.grad(ember.nn.functional.pdist(xt, p), xt, ember.tensor(v), create_graph=True)
    gg, = ember.autograd.grad((g * ember.tensor(w)).sum(), xt)
    num = np.zeros_like(x0)
    eps = 1e-6
    for idx in np.ndindex(x0.shape):
        xp_, xm = x0.copy(), x0.copy()
        xp_[idx] += eps
        xm[idx] -= eps
        num[idx] = (vjp_dot(xp_) - vjp_dot(xm)) / (2 * eps)
    np.testing.assert_allclose(gg.numpy(), num, rtol=1e-4, atol=1e-5)


def test_registered_where_torch_has_them():
    for name in ("layer_norm", "group_norm", "rms_norm", "cosine_similarity", "pairwise_distance", "pdist"):
        assert getattr(ember, name) is getattr(ember.nn.functional, name)
    # torch.batch_norm / torch.instance_norm take ATen's argument order: other functions than F's
    assert ember.batch_norm is not ember.nn.functional.batch_norm
    assert ember.instance_norm is not ember.nn.functional.instance_norm
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not hasattr(ember, "scaled_dot_product_attention")


# ----- multi_head_attention_forward as nn.MultiheadAttention calls it ---------------------------------------

@pytest.mark.parametrize("kw", [{}, {"need_weights": False}, {"average_attn_weights": False},
                                {"key_padding_mask": np.array([[False, False, True], [False, False, False]])},
                                {"attn_mask": np.triu(np.ones((4, 3), bool), 1), "need_weights": False}])
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_mha_matches_torchs_module(kw, dropout):
    E, heads = 6, 3
    tm = torch.nn.MultiheadAttention(E, heads, dropout=dropout, bias=True, dtype=torch.float64)
    q, k = RNG.standard_normal((4, 2, E)), RNG.standard_normal((3, 2, E))
    tkw = {n: torch.tensor(v) for n, v in kw.items() if isinstance(v, np.ndarray)}
    tkw.update({n: v for n, v in kw.items() if not isinstance(v, np.ndarray)})
    ekw = {n: ember.tensor(v) for n, v in kw.items() if isinstance(v, np.ndarray)}
    ekw.update({n: v for n, v in kw.items() if not isinstance(v, np.ndarray)})
    torch.manual_seed(3)
    tq, tk = torch.tensor(q, requires_grad=True), torch.tensor(k)
    t_out, t_w = tm(tq, tk, tk, **tkw)
    params = {n: ember.tensor(p.detach().numpy(), requires_grad=True) for n, p in tm.named_parameters()}
    ember.manual_seed(3)
    eq, ek = ember.tensor(q, requires_grad=True), ember.tensor(k)
    e_out, e_w = ember.nn.functional.multi_head_attention_forward(
        eq, ek, ek, E, heads, params["in_proj_weight"], params["in_proj_bias"], None, None, False, dropout,
        params["out_proj.weight"], params["out_proj.bias"], training=True, **ekw)
    close(e_out, t_out, 1e-10, 1e-12)
    assert (e_w is None) == (t_w is None)
    if t_w is not None:
        close(e_w, t_w, 1e-10, 1e-12)
    g = RNG.standard_normal(tuple(t_out.shape))
    tg = torch.autograd.grad(t_out, [tq] + [p for _, p in tm.named_parameters()], torch.tensor(g))
    eg = ember.autograd.grad(e_out, [eq] + list(params.values()), ember.tensor(g))
    for a, b in zip(eg, tg):
        close(a, b, 1e-9, 1e-11)


# ----- edge cases against torch: same exception type, or the same values --------------------------------------

_A = np.random.default_rng(1).standard_normal((2, 3, 4))
_B = np.random.default_rng(2).standard_normal((3, 2))
EDGE = {
    "gn_groups_gt_C": lambda L: L.nn.functional.group_norm(L.ones(2, 4, 3), 8),
    "gn_neg": lambda L: L.nn.functional.group_norm(L.ones(2, 4, 3), -2),
    "gn_float_groups": lambda L: L.nn.functional.group_norm(L.ones(2, 4, 3), 2.0),
    "ln_size": lambda L: L.nn.functional.layer_norm(L.tensor(_A[0, :2, :3]), L.Size([3])),
    "ln_const_eps0": lambda L: L.nn.functional.layer_norm(L.ones(2, 3), (3,), eps=0.0),
    "ln_int_eps": lambda L: L.nn.functional.layer_norm(L.ones(2, 3), (3,), eps=1),
    "ln_weight_int": lambda L: L.nn.functional.layer_norm(L.ones(2, 3), (3,), L.ones(3, dtype=L.int64)),
    "bn_half_eval": lambda L: L.nn.functional.batch_norm(L.tensor(np.arange(6.).reshape(2, 3)).half(), L.zeros(3),
                                                         L.ones(3)),
    "bn_1d_eval": lambda L: L.nn.functional.batch_norm(L.ones(3), L.zeros(3), L.ones(3)),
    "in_weight_only": lambda L: L.nn.functional.instance_norm(L.tensor(_A), weight=L.ones(3) * 2),
    "in_bad_weight": lambda L: L.nn.functional.instance_norm(L.ones(2, 3, 4), weight=L.ones(4)),
    "sdpa_neg_scale": lambda L: L.nn.functional.scaled_dot_product_attention(*[L.tensor(_A)] * 3, scale=-0.5),
    "sdpa_zero_scale": lambda L: L.nn.functional.scaled_dot_product_attention(*[L.tensor(_A)] * 3, scale=0.0),
    "sdpa_gqa_3d": lambda L: L.nn.functional.scaled_dot_product_attention(L.ones(4, 3, 2), L.ones(2, 5, 2),
                                                                          L.ones(2, 5, 2), enable_gqa=True),
    "sdpa_heads_mismatch": lambda L: L.nn.functional.scaled_dot_product_attention(
        L.ones(1, 4, 3, 2), L.ones(1, 2, 5, 2), L.ones(1, 2, 5, 2)),
    "sdpa_mask_bad_shape": lambda L: L.nn.functional.scaled_dot_product_attention(
        L.ones(2, 3, 4), L.ones(2, 5, 4), L.ones(2, 5, 4), attn_mask=L.ones(4, 5, dtype=L.bool)),
    "sdpa_dropout_neg": lambda L: L.nn.functional.scaled_dot_product_attention(L.ones(2, 3, 4), L.ones(2, 5, 4),
                                                                               L.ones(2, 5, 4), dropout_p=-0.1),
    "sdpa_dropout_big": lambda L: L.nn.functional.scaled_dot_product_attention(L.ones(2, 3, 4), L.ones(2, 5, 4),
                                                                               L.ones(2, 5, 4), dropout_p=1.5),
    "sdpa_dropout_one": lambda L: L.nn.functional.scaled_dot_product_attention(L.ones(2, 3, 4), L.ones(2, 5, 4),
                                                                               L.ones(2, 5, 4), dropout_p=1.0),
    "cos_dim_oor": lambda L: L.nn.functional.cosine_similarity(L.ones(2, 3), L.ones(2, 3), dim=2),
    "cos_0d": lambda L: L.nn.functional.cosine_similarity(L.tensor(2.), L.tensor(3.), dim=0),
    "cos_int": lambda L: L.nn.functional.cosine_similarity(L.ones(2, 3, dtype=L.int64), L.ones(2, 3)),
    "pd_int": lambda L: L.nn.functional.pairwise_distance(L.ones(2, 3, dtype=L.int64), L.zeros(2, 3, dtype=L.int64)),
    "pd_bcast_err": lambda L: L.nn.functional.pairwise_distance(L.ones(2, 3), L.ones(4, 3)),
    "pdist_half": lambda L: L.nn.functional.pdist(L.ones(3, 2).half()),
    "pdist_p_int": lambda L: L.nn.functional.pdist(L.tensor(_B), 1),
    "rms_half_w_float": lambda L: L.nn.functional.rms_norm(L.ones(2, 3).half(), (3,), L.ones(3)),
    "rms_eps_int": lambda L: L.nn.functional.rms_norm(L.ones(2, 3), (3,), None, 1),
    "lrn_float_size": lambda L: L.nn.functional.local_response_norm(L.ones(1, 3, 2), 2.0),
    "lrn_int": lambda L: L.nn.functional.local_response_norm(L.ones(1, 3, 2, dtype=L.int64), 2),
    "mha_bad_embed": lambda L: L.nn.functional.multi_head_attention_forward(
        L.ones(3, 2, 4), L.ones(3, 2, 4), L.ones(3, 2, 4), 5, 2, L.ones(12, 4), None, None, None, False, 0.0,
        L.ones(4, 4), None)[0],
}


def _outcome(lib, fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(lib)
        return "ok", r.detach().numpy().astype(np.float64), str(r.dtype)
    except Exception as e:  # noqa: BLE001 - compared below
        return "err", type(e).__name__, str(e)


@pytest.mark.parametrize("name", list(EDGE))
def test_edge_case_parity(name):
    t, e = _outcome(torch, EDGE[name]), _outcome(ember, EDGE[name])
    assert t[0] == e[0], (t, e)
    if t[0] == "err":
        assert t[1] == e[1], (t, e)
    else:
        assert t[2] == e[2]
        np.testing.assert_allclose(e[1], t[1], rtol=1e-3, atol=1e-3, equal_nan=True)


def test_norm_backward_shares_the_normalised_input_within_one_node_only(monkeypatch):
    """A norm node's plain backward computes the normalised input once for its input and weight rules
    (ops/nn_norm._sharing_args); the gradients are those of the rules computing it each (the node's apply without
    the sharing), whichever inputs need them, and what is kept is only ever read by the apply that made it."""
    from ember.autograd._primitive import PrimNode
    from ember.ops import nn_norm as N
    F = ember.nn.functional
    x0 = RNG.standard_normal((4, 6, 10)).astype(np.float32) * 3 + 1
    w0 = RNG.standard_normal(10).astype(np.float32)
    b0 = RNG.standard_normal(10).astype(np.float32)
    g0 = RNG.standard_normal((4, 6, 10)).astype(np.float32)

    def grads(need, fn):
        ts = [ember.tensor(a, requires_grad=r) for a, r in zip((x0, w0, b0), need)]
        got = ember.autograd.grad(fn(*ts), [t for t in ts if t.requires_grad], ember.tensor(g0))
        assert getattr(N._SHARED, "memo", None) is None or not need[1]   # (taken by the weight rule)
        return [t.numpy() for t in got]

    def two(x, w, b):   # two nodes over the same input, different eps: each its own statistics
        return F.layer_norm(x, (10,), w, b, 1e-5) + F.layer_norm(x, (10,), w, None, 10.0)

    fns = [lambda x, w, b: F.layer_norm(x, (10,), w, b, 1e-3), two,
           lambda x, w, b: F.group_norm(x.transpose(1, 2), 2, w, b).transpose(1, 2),
           lambda x, w, b: F.batch_norm(x.transpose(1, 2), None, None, w, b, training=True).transpose(1, 2)]
    needs = ((True, True, True), (True, False, False), (False, True, False), (True, True, False))
    shared = [grads(need, fn) for fn in fns for need in needs]
    for prim in (N.layer_norm_p, N.group_norm_p, N.batch_norm_p):
        assert prim.node_cls._args is N._sharing_args and prim.node_cls.apply is PrimNode.apply   # (compilable)
        monkeypatch.setattr(prim.node_cls, "_args", PrimNode._args)
    unshared = [grads(need, fn) for fn in fns for need in needs]
    for a, b in zip(shared, unshared):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)
