"""Op database entries of torch.nn.functional: normalisation, distances and attention.

Running statistics (batch_norm, instance_norm) are side effects the database cannot compare: the calls
here make fresh buffers each time; tests/test_nn_norm.py checks the updates against torch."""
from __future__ import annotations

import numpy as np

from op_db import OpInfo, Sample, XFail, draw

OPS: list = []
HYP_BINARY: list = []
HYP_UNARY: list = []


def _F(m):
    return m.nn.functional


def _samples(cases):
    """cases: (shapes, kwargs, domain per input or None); inputs drawn from ``domain`` (default real)."""
    def make(rng):
        out = []
        for shapes, kw, *dom in cases:
            doms = dom[0] if dom else ("real",) * len(shapes)
            out.append(Sample(tuple(draw(rng, s, d) for s, d in zip(shapes, doms)), dict(kw)))
        return out
    return make


def _offset(shape, mean, seed=0):
    rng = np.random.default_rng(seed)
    return mean + rng.uniform(-2, 2, shape)


# ----- layer_norm ---------------------------------------------------------------------------------------

def _layer_norm(m, x, *wb, shape, eps=1e-5, nw=None):
    w, b = (tuple(wb) + (None, None))[:2]
    if nw == "b":   # bias only
        w, b = None, wb[0]
    return _F(m).layer_norm(x, shape, w, b, eps)


OPS += [
    OpInfo("nn_layer_norm", _layer_norm, _samples([
        (((2, 3, 4), (4,), (4,)), {"shape": (4,)}),
        (((3, 4),), {"shape": (4,)}),
        (((2, 3, 2), (3, 2)), {"shape": (3, 2)}),
        (((2, 3),), {"shape": [2, 3], "eps": 1e-3}),
        (((3, 4), (4,)), {"shape": (4,), "nw": "b"}),
        (((5,), (5,), (5,)), {"shape": (5,)}),
        (((0, 3), (3,), (3,)), {"shape": (3,)}),
        (((2, 1), (1,), (1,)), {"shape": (1,)}),
    ]), xfails=(XFail("gradgrad", "torch 2.13's own double backward raises with a bias and no weight (\"Expected "
                                  "a proper Tensor but got None\"); the same rule is checked on the other samples",
                      "4:"),)),
    # large offsets: statistics stay exact (float64 values compared with torch's)
    OpInfo("nn_layer_norm_offset", lambda m, x, w, b: _F(m).layer_norm(x + 1e4, (4,), w, b),
           _samples([(((2, 4), (4,), (4,)), {})]), dtypes=("float64",), supports_gradgrad=False),
]


# ----- batch_norm -----------------------------------------------------------------------------------------

def _batch_norm(m, x, *wb, training, rm=None, rv=None, momentum=0.1, eps=1e-5, nw=False):
    w, b = (tuple(wb) + (None, None))[:2]
    dt = x.dtype
    rmt = None if rm is None else m.tensor(rm).to(dt)
    rvt = None if rv is None else m.tensor(rv).to(dt)
    return _F(m).batch_norm(x, rmt, rvt, w, b, training, momentum, eps)


def _bn_samples(rng):
    def rs(c):
        return {"rm": rng.uniform(-1, 1, c), "rv": rng.uniform(0.5, 2, c)}
    cases = [((4, 3), (3,), (3,), {"training": True, **rs(3)}),
             ((2, 3, 4), (3,), (3,), {"training": True, **rs(3), "momentum": 0.3}),
             ((2, 2, 2, 3), None, None, {"training": True}),
             ((3, 2), None, None, {"training": True, "eps": 1e-3}),
             ((2, 3, 2), (3,), (3,), {"training": False, **rs(3)}),
             ((4, 3), None, None, {"training": False, **rs(3)}),
             ((2, 2, 2, 2), (2,), (2,), {"training": False, **rs(2), "eps": 0.1})]
    out = []
    for xs, ws, bs, kw in cases:
        args = (draw(rng, xs),) + tuple(draw(rng, s) for s in (ws, bs) if s is not None)
        out.append(Sample(args, kw))
    return out


OPS += [
    OpInfo("nn_batch_norm", _batch_norm, _bn_samples),
]


# ----- group_norm -----------------------------------------------------------------------------------------

def _group_norm(m, x, *wb, groups, eps=1e-5):
    w, b = (tuple(wb) + (None, None))[:2]
    return _F(m).group_norm(x, groups, w, b, eps)


OPS += [
    OpInfo("nn_group_norm", _group_norm, _samples([
        (((2, 4, 3), (4,), (4,)), {"groups": 2}),
        (((2, 4), (4,), (4,)), {"groups": 2}),
        (((1, 6, 2, 2),), {"groups": 3}),
        (((2, 3, 2), (3,), (3,)), {"groups": 1, "eps": 1e-3}),
        (((2, 4, 2), (4,)), {"groups": 4}),
        (((0, 2, 3), (2,), (2,)), {"groups": 1}),
    ])),
]


# ----- instance_norm --------------------------------------------------------------------------------------

def _instance_norm(m, x, *wb, use_input_stats=True, rm=None, rv=None, momentum=0.1, eps=1e-5):
    w, b = (tuple(wb) + (None, None))[:2]
    dt = x.dtype
    rmt = None if rm is None else m.tensor(rm).to(dt)
    rvt = None if rv is None else m.tensor(rv).to(dt)
    return _F(m).instance_norm(x, rmt, rvt, w, b, use_input_stats, momentum, eps)


def _in_samples(rng):
    def rs(c):
        return {"rm": rng.uniform(-1, 1, c), "rv": rng.uniform(0.5, 2, c)}
    cases = [((2, 3, 4), (3,), (3,), {}),
             ((2, 2, 2, 3), None, None, {}),
             ((1, 3, 5), (3,), (3,), {**rs(3), "momentum": 0.2}),
             ((2, 3, 4), (3,), (3,), {**rs(3), "use_input_stats": False}),
             ((2, 2, 3), None, None, {**rs(2), "use_input_stats": False, "eps": 0.1})]
    out = []
    for xs, ws, bs, kw in cases:
        args = (draw(rng, xs),) + tuple(draw(rng, s) for s in (ws, bs) if s is not None)
        out.append(Sample(args, kw))
    return out


OPS += [
    OpInfo("nn_instance_norm", _instance_norm, _in_samples),
]


# ----- rms_norm, local_response_norm ---------------------------------------------------------------------

def _rms_norm(m, x, *w, shape, eps=None):
    return _F(m).rms_norm(x, shape, w[0] if w else None, eps)


OPS += [
    OpInfo("nn_rms_norm", _rms_norm, _samples([
        (((2, 3, 4), (4,)), {"shape": (4,)}),
        (((3, 4),), {"shape": [4]}),
        (((2, 3, 2), (3, 2)), {"shape": (3, 2), "eps": 1e-3}),
        (((5,),), {"shape": (5,), "eps": 0.5}),
        (((0, 3), (3,)), {"shape": (3,)}),
    ])),
    OpInfo("nn_local_response_norm", lambda m, x, **kw: _F(m).local_response_norm(x, **kw), _samples([
        (((2, 5, 3),), {"size": 3}),
        (((1, 4, 2, 2),), {"size": 2, "alpha": 0.1, "beta": 0.5, "k": 2.0}),
        (((2, 3, 2),), {"size": 1, "alpha": 0.5}),
        (((1, 3, 2, 1, 2),), {"size": 4, "alpha": 0.2}),
        (((2, 0, 3),), {"size": 2}),
    ])),
]


# ----- distances --------------------------------------------------------------------------------------------

def _pdist_tie_samples(rng):
    # inf-norm ties and a repeated row (zero distance): PyTorch's conventions for both
    x = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.5, 2.0]])
    return [Sample((x,), {"p": float("inf")})]


OPS += [
    OpInfo("nn_cosine_similarity", lambda m, a, b, **kw: _F(m).cosine_similarity(a, b, **kw), _samples([
        (((3, 4), (3, 4)), {}),
        (((2, 3, 4), (3, 4)), {"dim": -1}),
        (((3, 4), (4,)), {"dim": 1, "eps": 1e-6}),
        (((3, 2), (2, 3, 2)), {"dim": 0}),
        (((5,), (5,)), {"dim": 0}),
    ])),
    OpInfo("nn_pairwise_distance", lambda m, a, b, **kw: _F(m).pairwise_distance(a, b, **kw), _samples([
        (((3, 4), (3, 4)), {}),
        (((3, 4), (4,)), {"keepdim": True}),
        (((2, 3), (2, 3)), {"p": 1.0}),
        (((2, 3), (2, 3)), {"p": 3.0, "eps": 0.1}),
        (((4,), (4,)), {"p": 0.5}),
        (((2, 3), (1, 3)), {"p": float("inf")}),
        (((), ()), {}),
    ], ), domain=("grid_a", "grid_b")),
    OpInfo("nn_pdist", lambda m, a, **kw: _F(m).pdist(a, **kw), _samples([
        (((4, 3),), {}),
        (((3, 2),), {"p": 1.0}),
        (((4, 2),), {"p": 3.0}),
        (((3, 3),), {"p": 0.5}),
        (((3, 2),), {"p": float("inf")}, ("distinct",)),
        (((1, 3),), {}),
        (((3, 2),), {"p": 0.0}),
    ]), supports_gradgrad=False),   # torch has no double backward for pdist (_pdist_backward: not_implemented)
    OpInfo("nn_pdist_ties", lambda m, a, **kw: _F(m).pdist(a, **kw), _pdist_tie_samples, supports_gradgrad=False,
           xfails=(XFail("gradcheck", "ties of the inf-norm and a zero distance: not differentiable there; "
                                      "the gradient is PyTorch's convention (test_grad)"),
                   XFail("fwd_ad", "the same kinks: the tangent is PyTorch's convention, not the difference "
                                   "quotient"))),
]


# ----- scaled_dot_product_attention ------------------------------------------------------------------------

def _sdpa(m, q, k, v, *fmask, mask=None, **kw):
    if fmask:
        kw["attn_mask"] = fmask[0]
    elif mask is not None:
        kw["attn_mask"] = m.tensor(mask) if mask.dtype == np.bool_ else m.tensor(mask).to(q.dtype)
    return _F(m).scaled_dot_product_attention(q, k, v, **kw)


def _sdpa_samples(rng):
    bool_mask = rng.random((3, 5)) > 0.3
    bool_mask[:, 0] = True
    dead = bool_mask.copy()
    dead[1] = False                                   # a fully masked query row: zeros, as PyTorch's CPU
    inf_mask = np.where(rng.random((3, 5)) > 0.3, 0.0, -np.inf)
    inf_mask[2] = -np.inf
    cases = [(((2, 3, 4), (2, 5, 4), (2, 5, 4)), {}),
             (((3, 4), (5, 4), (5, 2)), {}),
             (((1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 3)), {"mask": bool_mask}),
             (((2, 3, 4), (2, 5, 4), (2, 5, 4)), {"mask": dead}),
             (((2, 3, 4), (2, 5, 4), (2, 5, 4)), {"mask": inf_mask}),
             (((2, 3, 4), (2, 5, 4), (2, 5, 4), (3, 5)), {}),                 # a float mask, differentiable
             (((1, 2, 4, 3), (1, 2, 4, 3), (1, 2, 4, 3)), {"is_causal": True}),
             (((2, 3, 4), (2, 5, 4), (2, 5, 4)), {"scale": 0.3}),
             (((1, 4, 3, 2), (1, 2, 5, 2), (1, 2, 5, 3)), {"enable_gqa": True}),
             (((2, 3, 4), (5, 4), (5, 4)), {})]                                # broadcast batch dims
    return [Sample(tuple(draw(rng, s) for s in shapes), kw) for shapes, kw in cases]


OPS += [
    # Sample 6 (4-d, causal, no mask): torch's CPU dispatch picks its fused flash kernel, whose node has another
    # name and no double backward; ember keeps the math path's graph (matmul, safe softmax, matmul).
    OpInfo("nn_scaled_dot_product_attention", _sdpa, _sdpa_samples, xfails=(
        XFail("grad_fn", "torch: ScaledDotProductFlashAttentionForCpuBackward0 (fused CPU kernel); ember: the "
                         "math path's graph", "6:"),
        XFail("gradgrad", "torch's fused CPU flash kernel has no double backward (ember's has)", "6:"))),
]


# ----- multi_head_attention_forward ------------------------------------------------------------------------

def _mha(m, q, k, v, w_in, b_in, w_out, b_out, *bias_kv, heads, kpm=None, mask=None, **kw):
    bk, bv = bias_kv if bias_kv else (None, None)
    if kpm is not None:
        kw["key_padding_mask"] = m.tensor(kpm) if kpm.dtype == np.bool_ else m.tensor(kpm).to(q.dtype)
    if mask is not None:
        kw["attn_mask"] = m.tensor(mask) if mask.dtype == np.bool_ else m.tensor(mask).to(q.dtype)
    out, weights = _F(m).multi_head_attention_forward(q, k, v, q.shape[-1], heads, w_in, b_in, bk, bv,
                                                      kw.pop("add_zero_attn", False), 0.0, w_out, b_out, **kw)
    return out if weights is None else (out, weights)


def _mha_samples(rng):
    E = 4
    L, S, N = 3, 2, 2
    kpm = np.array([[False, True], [False, False]])
    bmask = np.array([[False, True], [False, False], [True, False]])
    fmask = rng.uniform(-1, 1, (L, S))
    cases = [((L, N, E), (S, N, E), {"heads": 2}),
             ((L, N, E), (S, N, E), {"heads": 2, "need_weights": False}),
             ((L, N, E), (S, N, E), {"heads": 2, "kpm": kpm}),
             ((L, N, E), (S, N, E), {"heads": 1, "mask": bmask, "need_weights": False}),
             ((L, N, E), (S, N, E), {"heads": 2, "average_attn_weights": False, "mask": fmask}),
             ((L, E), (S, E), {"heads": 2}),
             ((L, N, E), (S, N, E), {"heads": 2, "bias_kv": True, "add_zero_attn": True, "kpm": kpm}),
             ((L, N, E), (S, N, E), {"heads": 2, "mask": fmask, "kpm": kpm, "need_weights": False}),
             ((L, N, E), (L, N, E), {"heads": 2, "mask": np.triu(np.ones((L, L), bool), 1), "is_causal": True,
                                     "need_weights": False})]
    out = []
    for qs, ks, kw in cases:
        kw = dict(kw)
        args = [draw(rng, qs), draw(rng, ks), draw(rng, ks), draw(rng, (3 * E, E)) * 0.5, draw(rng, (3 * E,)),
                draw(rng, (E, E)) * 0.5, draw(rng, (E,))]
        if kw.pop("bias_kv", False):
            args += [draw(rng, (1, 1, E)), draw(rng, (1, 1, E))]
        out.append(Sample(tuple(args), kw))
    return out


OPS += [
    # Samples 1, 3, 7 and 8 (need_weights=False) reach torch's fused CPU attention kernel, which has no double
    # backward.
    OpInfo("nn_multi_head_attention_forward", _mha, _mha_samples, xfails=tuple(
        XFail("gradgrad", "torch's fused CPU attention kernel has no double backward (ember's has)", f"{i}:")
        for i in (1, 3, 7, 8))),
]


# ----- torch.batch_norm and torch.instance_norm: ATen's argument order, no Python-level size checks ------

def _aten_norm(name):
    def op(m, x, *wb, training, rm=None, rv=None, momentum=0.1, eps=1e-5):
        w, b = (tuple(wb) + (None, None))[:2]
        rmt = None if rm is None else m.tensor(rm).to(x.dtype)
        rvt = None if rv is None else m.tensor(rv).to(x.dtype)
        return getattr(m, name)(x, w, b, rmt, rvt, training, momentum, eps, False)
    return op


def _aten_bn_samples(rng):
    cases = [((4, 3), (3,), (3,), {"training": True, "rm": np.zeros(3), "rv": np.ones(3)}),
             ((2, 3, 2), None, None, {"training": False, "rm": rng.uniform(-1, 1, 3), "rv": rng.uniform(0.5, 2, 3)}),
             ((2, 2, 2), (2,), (2,), {"training": True, "momentum": 0.5, "eps": 1e-3})]
    return [Sample((draw(rng, xs),) + tuple(draw(rng, s) for s in (ws, bs) if s is not None), kw)
            for xs, ws, bs, kw in cases]


def _aten_in_samples(rng):
    cases = [((2, 3, 4), (3,), (3,), {"training": True}),
             ((2, 2, 3), (2,), (2,), {"training": False, "rm": rng.uniform(-1, 1, 2), "rv": rng.uniform(0.5, 2, 2)})]
    return [Sample((draw(rng, xs),) + tuple(draw(rng, s) for s in (ws, bs) if s is not None), kw)
            for xs, ws, bs, kw in cases]


def _aten_single_samples(rng):
    # one value per channel: it normalises to 0 (F's Python-level check refuses it; ATen's functions do not)
    return [Sample((draw(rng, (1, 3)), draw(rng, (3,)), draw(rng, (3,))), {"name": "batch_norm", "training": True}),
            Sample((draw(rng, (2, 3)),), {"name": "instance_norm", "training": True})]


OPS += [
    OpInfo("batch_norm_aten", _aten_norm("batch_norm"), _aten_bn_samples),
    OpInfo("instance_norm_aten", _aten_norm("instance_norm"), _aten_in_samples),
    # float64 only: torch's float32 result there is rounding noise of size 1e-5
    OpInfo("norm_aten_single_value", lambda m, *a, name, **kw: _aten_norm(name)(m, *a, **kw), _aten_single_samples,
           dtypes=("float64",)),
]


# ----- torch.native_layer_norm, native_batch_norm, native_group_norm: (output, mean, rstd) --------------------
# The statistics of layer and batch norm have no gradient in PyTorch (grads: the "_out" entries, output 0 only);
# group norm's are differentiable.

def _native_ln(m, x, *wb, shape, eps=1e-5, only_out=False):
    w, b = (tuple(wb) + (None, None))[:2]
    res = m.native_layer_norm(x, list(shape), w, b, eps)
    return res[0] if only_out else res


_NATIVE_LN = [(((2, 3, 4), (4,), (4,)), {"shape": (4,)}),
              (((3, 4),), {"shape": (4,)}),
              (((2, 3, 2), (3, 2)), {"shape": (3, 2)}),
              (((2, 3),), {"shape": (2, 3), "eps": 1e-3}),
              (((0, 3), (3,), (3,)), {"shape": (3,)})]


def _native_bn(m, x, *wb, training, rm=None, rv=None, momentum=0.1, eps=1e-5, only_out=False):
    w, b = (tuple(wb) + (None, None))[:2]
    rmt = None if rm is None else m.tensor(rm).to(x.dtype)
    rvt = None if rv is None else m.tensor(rv).to(x.dtype)
    res = m.native_batch_norm(x, w, b, rmt, rvt, training, momentum, eps)
    if only_out:
        return res[0]
    return res + ((rmt, rvt) if rmt is not None else ())   # the running estimates after the update


def _native_bn_samples(rng):
    def rs(c):
        return {"rm": rng.uniform(-1, 1, c), "rv": rng.uniform(0.5, 2, c)}
    cases = [((4, 3), (3,), (3,), {"training": True, **rs(3)}),
             ((2, 3, 4), (3,), (3,), {"training": True, **rs(3), "momentum": 0.3}),
             ((2, 2, 2, 3), None, None, {"training": True}),
             ((2, 3, 2), (3,), (3,), {"training": False, **rs(3)}),
             ((4, 3), None, None, {"training": False, **rs(3), "eps": 0.1})]
    return [Sample((draw(rng, xs),) + tuple(draw(rng, s) for s in (ws, bs) if s is not None), kw)
            for xs, ws, bs, kw in cases]


def _native_gn(m, x, *wb, n, c, hxw, group, eps=1e-5):
    w, b = (tuple(wb) + (None, None))[:2]
    return m.native_group_norm(x, w, b, n, c, hxw, group, eps)


OPS += [
    OpInfo("native_layer_norm", _native_ln, _samples(_NATIVE_LN), supports_grad=False, supports_gradgrad=False,
           supports_fwd=False),
    OpInfo("native_layer_norm_out", lambda m, *a, **kw: _native_ln(m, *a, only_out=True, **kw),
           _samples(_NATIVE_LN[:4])),
    OpInfo("native_batch_norm", _native_bn, _native_bn_samples, supports_grad=False, supports_gradgrad=False,
           supports_fwd=False),
    OpInfo("native_batch_norm_out", lambda m, *a, **kw: _native_bn(m, *a, only_out=True, **kw),
           _native_bn_samples),
    OpInfo("native_group_norm", _native_gn, _samples([
        (((2, 4, 3), (4,), (4,)), {"n": 2, "c": 4, "hxw": 3, "group": 2}),
        (((2, 4),), {"n": 2, "c": 4, "hxw": 1, "group": 2}),
        (((1, 6, 2, 2), (6,)), {"n": 1, "c": 6, "hxw": 4, "group": 3}),
        (((2, 3, 2), (3,), (3,)), {"n": 2, "c": 3, "hxw": 2, "group": 1, "eps": 1e-3}),
        (((0, 2, 3), (2,), (2,)), {"n": 0, "c": 2, "hxw": 3, "group": 1}),
    ])),
]
