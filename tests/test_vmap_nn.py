"""vmap over neural-network code: the nn families' batching rules (losses, pooling, normalisation, embedding,
prelu, padding, interpolation) against torch.func.vmap on the same inputs (values and dtypes), each input mapped
over alone and all together (batch dim first, and elsewhere), examples with and without their own N; and
per-example gradients through a small CNN and an MLP. None of these may take the per-example fallback (PyTorch's
"There is a performance drop" warning)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
import torch.func  # noqa: E402

B = 3
FALLBACK = "There is a performance drop"


def _f(shape, lo=-1.0, hi=1.0):
    return lambda rng, lead: rng.uniform(lo, hi, lead + shape)


def _i(shape, n, ignore=None):
    def make(rng, lead):
        t = rng.integers(0, n, lead + shape)
        if ignore is not None and t.size:
            t.reshape(-1)[0] = ignore
        return t
    return make


def _probs(shape):
    def make(rng, lead):
        e = np.exp(rng.normal(size=lead + shape))
        return e / e.sum(-1 if len(shape) == 1 else len(lead) + 1, keepdims=True)
    return make


def F(lib):
    return lib.nn.functional


# (id, function of (lib, *tensors), makers of each input's examples, dtype)
CASES = []


def case(name, fn, *makers, dtype="float64"):
    CASES.append((name, fn, makers, dtype))


W5 = np.linspace(0.5, 1.5, 5)
for red in ("none", "sum", "mean"):
    case(f"nll_loss-{red}", lambda m, x, t, red=red: F(m).nll_loss(x, t, reduction=red), _f((4, 5)), _i((4,), 5))
    case(f"nll_loss-weight-ignore-{red}",
         lambda m, x, t, red=red: F(m).nll_loss(x, t, m.tensor(W5), ignore_index=2, reduction=red),
         _f((4, 5)), _i((4,), 5, ignore=2))
    case(f"nll_loss-noN-{red}", lambda m, x, t, red=red: F(m).nll_loss(x, t, reduction=red), _f((5,)), _i((), 5))
    case(f"nll_loss-spatial-{red}", lambda m, x, t, red=red: F(m).nll_loss(x, t, m.tensor(W5), reduction=red),
         _f((2, 5, 3, 2)), _i((2, 3, 2), 5))
    case(f"cross_entropy-{red}", lambda m, x, t, red=red: F(m).cross_entropy(x, t, reduction=red),
         _f((4, 5)), _i((4,), 5))
    case(f"cross_entropy-smooth-weight-{red}",
         lambda m, x, t, red=red: F(m).cross_entropy(x, t, m.tensor(W5), ignore_index=1, reduction=red,
                                                     label_smoothing=0.2),
         _f((4, 5)), _i((4,), 5, ignore=1))
    case(f"cross_entropy-probs-{red}",
         lambda m, x, t, red=red: F(m).cross_entropy(x, t, m.tensor(W5), reduction=red, label_smoothing=0.1),
         _f((4, 5)), _probs((4, 5)))
    case(f"cross_entropy-noN-{red}", lambda m, x, t, red=red: F(m).cross_entropy(x, t, reduction=red),
         _f((5,)), _i((), 5))
    case(f"mse_loss-{red}", lambda m, x, t, red=red: F(m).mse_loss(x, t, reduction=red), _f((4, 3)), _f((4, 3)))
    case(f"l1_loss-{red}", lambda m, x, t, red=red: F(m).l1_loss(x, t, reduction=red), _f((4, 3)), _f((4, 3)))
    case(f"smooth_l1_loss-{red}", lambda m, x, t, red=red: F(m).smooth_l1_loss(x, t, reduction=red, beta=0.5),
         _f((4, 3)), _f((4, 3)))
    case(f"huber_loss-{red}", lambda m, x, t, red=red: F(m).huber_loss(x, t, reduction=red, delta=0.7),
         _f((4, 3)), _f((4, 3)))
    case(f"binary_cross_entropy-{red}",
         lambda m, x, t, red=red: F(m).binary_cross_entropy(x, t, m.tensor(np.full(3, 0.7)), reduction=red),
         _f((4, 3), 0.05, 0.95), _f((4, 3), 0.0, 1.0))
    case(f"bce_with_logits-{red}",
         lambda m, x, t, red=red: F(m).binary_cross_entropy_with_logits(
             x, t, reduction=red, pos_weight=m.tensor(np.array([1.0, 2.0, 0.5]))),
         _f((4, 3)), _f((4, 3), 0.0, 1.0))
case("binary_cross_entropy-weight", lambda m, x, t, w: F(m).binary_cross_entropy(x, t, w),
     _f((4, 3), 0.05, 0.95), _f((4, 3), 0.0, 1.0), _f((3,), 0.5, 1.5))
case("bce_with_logits-weights", lambda m, x, t, w, pw: F(m).binary_cross_entropy_with_logits(x, t, w, pos_weight=pw),
     _f((4, 3)), _f((4, 3), 0.0, 1.0), _f((4, 1), 0.5, 1.5), _f((3,), 0.5, 1.5))
case("kl_div-batchmean", lambda m, x, t: F(m).kl_div(x, t, reduction="batchmean", log_target=True),
     _f((4, 3)), _f((4, 3)))
for red in ("none", "mean"):
    case(f"nll_loss-own-weight-{red}", lambda m, x, t, w, red=red: F(m).nll_loss(x, t, w, ignore_index=0, reduction=red),
         _f((4, 5)), _i((4,), 5, ignore=0), _f((5,), 0.5, 1.5))
    case(f"cross_entropy-own-weight-{red}", lambda m, x, t, w, red=red: F(m).cross_entropy(x, t, w, reduction=red),
         _f((2, 5, 3)), _i((2, 3), 5), _f((5,), 0.5, 1.5))
    case(f"cross_entropy-own-weight-noN-{red}", lambda m, x, t, w, red=red: F(m).cross_entropy(x, t, w, reduction=red),
         _f((5,)), _i((), 5), _f((5,), 0.5, 1.5))
    case(f"cross_entropy-probs-own-weight-{red}",
         lambda m, x, t, w, red=red: F(m).cross_entropy(x, t, w, reduction=red, label_smoothing=0.3),
         _f((2, 5, 3)), _probs((2, 5, 3)), _f((5,), 0.5, 1.5))
    case(f"cross_entropy-probs-own-weight-noN-{red}",
         lambda m, x, t, w, red=red: F(m).cross_entropy(x, t, w, reduction=red), _f((5,)), _probs((5,)),
         _f((5,), 0.5, 1.5))
case("mse_loss-0d", lambda m, x, t: F(m).mse_loss(x, t), _f(()), _f(()))

for d in (1, 2, 3):
    sp = (5, 6, 4)[:d]
    for n in ((2, 3), (3,)):
        tag = "N" if len(n) == 2 else "noN"
        case(f"max_pool{d}d-{tag}", lambda m, x, d=d: getattr(F(m), f"max_pool{d}d")(x, 2, return_indices=True),
             _f(n + sp))
        case(f"max_pool{d}d-strided-{tag}",
             lambda m, x, d=d: getattr(F(m), f"max_pool{d}d")(x, 3, stride=2, padding=1, ceil_mode=True), _f(n + sp))
        case(f"avg_pool{d}d-{tag}", lambda m, x, d=d: getattr(F(m), f"avg_pool{d}d")(x, 2, padding=1), _f(n + sp))
        case(f"adaptive_avg_pool{d}d-{tag}", lambda m, x, d=d: getattr(F(m), f"adaptive_avg_pool{d}d")(x, 3),
             _f(n + sp))
        case(f"adaptive_max_pool{d}d-{tag}",
             lambda m, x, d=d: getattr(F(m), f"adaptive_max_pool{d}d")(x, 2, return_indices=True), _f(n + sp))

case("layer_norm", lambda m, x, w, b: F(m).layer_norm(x, (3, 4), w, b), _f((2, 3, 4)), _f((3, 4)), _f((3, 4)))
case("layer_norm-noaffine", lambda m, x: F(m).layer_norm(x, (4,)), _f((2, 3, 4)))
case("group_norm", lambda m, x, w, b: F(m).group_norm(x, 2, w, b), _f((2, 4, 3)), _f((4,)), _f((4,)))
case("batch_norm-train", lambda m, x, w, b: F(m).batch_norm(x, None, None, w, b, training=True),
     _f((4, 3, 2)), _f((3,)), _f((3,)))
case("batch_norm-eval", lambda m, x, rm, rv, w: F(m).batch_norm(x, rm, rv, w, None, training=False),
     _f((4, 3)), _f((3,)), _f((3,), 0.5, 2.0), _f((3,)))
case("instance_norm", lambda m, x: F(m).instance_norm(x), _f((2, 3, 5)))
case("embedding", lambda m, i, w: F(m).embedding(i, w), _i((4,), 6), _f((6, 3)))
case("embedding-2d-padding", lambda m, i: F(m).embedding(i, m.tensor(np.arange(18.0).reshape(6, 3)), padding_idx=0),
     _i((2, 4), 6))
case("prelu", lambda m, x, w: F(m).prelu(x, w), _f((2, 3, 4)), _f((3,), 0.0, 0.5))
case("prelu-noN", lambda m, x, w: F(m).prelu(x, w), _f((3,)), _f((1,), 0.0, 0.5))
for mode in ("constant", "reflect", "replicate", "circular"):
    case(f"pad-{mode}-2d-N", lambda m, x, mode=mode: F(m).pad(x, (1, 2, 2, 1), mode=mode), _f((2, 3, 4, 5)))
    case(f"pad-{mode}-1d-noN", lambda m, x, mode=mode: F(m).pad(x, (2, 1), mode=mode), _f((3, 5)))
case("interpolate-nearest", lambda m, x: F(m).interpolate(x, scale_factor=2), _f((2, 3, 4)))
case("interpolate-bilinear", lambda m, x: F(m).interpolate(x, size=(5, 7), mode="bilinear", align_corners=True),
     _f((2, 3, 4, 3)))
case("interpolate-trilinear", lambda m, x: F(m).interpolate(x, scale_factor=1.5, mode="trilinear"),
     _f((1, 2, 2, 3, 4)))
case("pixel_shuffle", lambda m, x: F(m).pixel_shuffle(x, 2), _f((2, 8, 3, 2)))
case("unfold-N", lambda m, x: F(m).unfold(x, 2, padding=1), _f((2, 3, 4, 5)))
case("unfold-noN", lambda m, x: F(m).unfold(x, (2, 3)), _f((3, 4, 5)))
case("fold-N", lambda m, x: F(m).fold(x, (3, 4), 2), _f((2, 8, 6)))
case("fold-noN", lambda m, x: F(m).fold(x, (3, 4), 2), _f((8, 6)))
case("channel_shuffle", lambda m, x: F(m).channel_shuffle(x, 2), _f((2, 4, 3)))
case("one_hot", lambda m, t: F(m).one_hot(t, 6), _i((2, 3), 6))
case("bilinear", lambda m, x, y, w: F(m).bilinear(x, y, w), _f((2, 3)), _f((2, 4)), _f((5, 3, 4)))
case("multi_margin_loss", lambda m, x, t: F(m).multi_margin_loss(x, t, p=2, weight=m.tensor(W5)), _f((4, 5)),
     _i((4,), 5))
case("multi_margin_loss-noN-sum", lambda m, x, t: F(m).multi_margin_loss(x, t, reduction="sum"), _f((5,)),
     _i((), 5))
case("multilabel_margin_loss", lambda m, x, t: F(m).multilabel_margin_loss(x, t), _f((4, 5)), _i((4, 5), 5))
case("soft_margin_loss", lambda m, x, t: F(m).soft_margin_loss(x, t), _f((4, 5)), _f((4, 5)))
case("max_unpool2d", lambda m, x: F(m).max_unpool2d(*F(m).max_pool2d(x, 2, return_indices=True), 2,
                                                    output_size=(2, 3, 5, 5)), _f((2, 3, 4, 5)))
case("max_unpool1d-noN", lambda m, x: F(m).max_unpool1d(*F(m).max_pool1d(x, 2, return_indices=True), 2),
     _f((3, 6)))
case("grid_sample-2d", lambda m, x, g: F(m).grid_sample(x, g, align_corners=False), _f((2, 3, 4, 5)),
     _f((2, 3, 2, 2), -1.1, 1.1))
case("grid_sample-3d-border", lambda m, x, g: F(m).grid_sample(x, g, padding_mode="border", align_corners=True),
     _f((1, 2, 3, 3, 4)), _f((1, 2, 2, 3, 3), -1.1, 1.1))
case("affine_grid", lambda m, t: F(m).affine_grid(t, (2, 1, 3, 4), align_corners=False), _f((2, 2, 3)))
case("aten-embedding", lambda m, w, i: m.embedding(w, i), _f((6, 3)), _i((4,), 6))
case("aten-bce_with_logits", lambda m, x, t: m.binary_cross_entropy_with_logits(x, t, reduction=2),
     _f((4, 3)), _f((4, 3), 0.0, 1.0))
case("aten-max_pool2d", lambda m, x: m.max_pool2d(x, 2), _f((2, 3, 4, 4)))
case("aten-batch_norm", lambda m, x, w: m.batch_norm(x, w, None, None, None, True, 0.1, 1e-5, False),
     _f((4, 3, 2)), _f((3,)))
case("aten-adaptive_max_pool1d", lambda m, x: m.adaptive_max_pool1d(x, 3), _f((2, 3, 7)))
case("float32-cross_entropy", lambda m, x, t: F(m).cross_entropy(x, t), _f((4, 5)), _i((4,), 5), dtype="float32")
case("float32-max_pool2d", lambda m, x: F(m).max_pool2d(x, 2), _f((2, 3, 4, 4)), dtype="float32")
case("float32-layer_norm", lambda m, x, w: F(m).layer_norm(x, (4,), w), _f((2, 4)), _f((4,)), dtype="float32")


def _variants():
    out = []
    for name, fn, makers, dtype in CASES:
        n = len(makers)
        for which in list(range(n)) + (["all", "moved"] if n > 1 else ["moved"]):
            out.append(pytest.param(fn, makers, dtype, which, id=f"{name}-in{which}"))
    return out


def _inputs(makers, dtype, which, seed):
    """Each input's array (batched ones with B examples) and its in_dim."""
    rng = np.random.default_rng(seed)
    arrays, dims = [], []
    for k, make in enumerate(makers):
        batched = which in ("all", "moved") or which == k
        a = make(rng, (B,) if batched else ())
        if a.dtype.kind == "f":
            a = a.astype(dtype)
        dim = None
        if batched:
            dim = 0
            if which == "moved" and a.ndim > 1:
                a = np.moveaxis(a, 0, -1).copy()
                dim = a.ndim - 1
        arrays.append(a)
        dims.append(dim)
    return arrays, tuple(dims)


def _run(lib, fn, arrays, dims):
    xs = [lib.tensor(a) for a in arrays]
    return lib.func.vmap(lambda *a: fn(lib, *a), in_dims=dims)(*xs)


def _loop(lib, fn, arrays, dims):
    rows = []
    for b in range(B):
        xs = [lib.tensor(a if d is None else np.take(a, b, axis=d)) for a, d in zip(arrays, dims)]
        rows.append(_flat(fn(lib, *xs)))
    return [lib.stack([r[k] for r in rows]) for k in range(len(rows[0]))]


def _flat(r):
    return [x for y in r for x in _flat(y)] if isinstance(r, (tuple, list)) else [r]


def _compare(got, ref, rtol):
    got, ref = _flat(got), _flat(ref)
    assert len(got) == len(ref)
    for k, (g, r) in enumerate(zip(got, ref)):
        assert str(g.dtype) == str(r.dtype), f"output {k}: dtype {g.dtype} vs torch's {r.dtype}"
        a, b = g.detach().numpy(), r.detach().numpy()
        assert a.shape == b.shape, f"output {k}: shape {a.shape} vs torch's {b.shape}"
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True, err_msg=f"output {k}")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"output {k}")


@pytest.mark.parametrize("fn,makers,dtype,which", _variants())
def test_vmap_nn_op(fn, makers, dtype, which):
    arrays, dims = _inputs(makers, dtype, which, seed=7)
    try:
        ref = _run(torch, fn, arrays, dims)
    except RuntimeError as e:
        # torch.func.vmap's own limits (label smoothing with a weight and only the target mapped writes in
        # place into an unmapped tensor): then torch's results one example at a time
        assert "vmap" in str(e)
        ref = _loop(torch, fn, arrays, dims)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _run(ember, fn, arrays, dims)
    slow = [str(w.message) for w in caught if FALLBACK in str(w.message)]
    assert not slow, slow[0]
    _compare(got, ref, 1e-5 if dtype == "float32" else 1e-10)


def test_nested_vmap():
    """Two levels: the rules run at the outer level on tensors still mapped at the inner one."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 2, 3, 4, 4))
    t = rng.integers(0, 3, (2, 3, 2, 4, 4))
    w = rng.normal(size=(3, 5, 2))
    idx = rng.integers(0, 5, (2, 3, 4))
    res = {}
    for lib in (torch, ember):
        X, T, W, I = (lib.tensor(a) for a in (x, t, w, idx))
        vm = lib.func.vmap
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res[lib] = (vm(vm(lambda a: F(lib).max_pool2d(a, 2)))(X),
                        vm(vm(lambda a, b: F(lib).cross_entropy(a, b)), in_dims=(0, 1))(X, T.movedim(0, 1)),
                        vm(vm(lambda i, e: F(lib).embedding(i, e), in_dims=(0, None)), in_dims=(1, 0))(
                            I.movedim(0, 1), W[:2]),
                        vm(vm(lambda a: F(lib).layer_norm(a, (4,))), in_dims=1)(X))
        if lib is ember:
            assert not [str(w.message) for w in caught if FALLBACK in str(w.message)]
    _compare(res[ember], res[torch], 1e-10)


def test_batch_norm_running_stats():
    """In training, each example updates its own running statistics (mapped over); unmapped ones are refused
    with PyTorch's error."""
    rng = np.random.default_rng(1)
    x, rm, rv = rng.normal(size=(B, 4, 3, 2)), rng.normal(size=(B, 3)), rng.uniform(0.5, 2, (B, 3))
    res = {}
    for lib in (torch, ember):
        X, RM, RV = (lib.tensor(a) for a in (x, rm, rv))
        out = lib.func.vmap(lambda a, m, v: F(lib).batch_norm(a, m, v, training=True, momentum=0.3))(X, RM, RV)
        res[lib] = (out, RM, RV)
        with pytest.raises(RuntimeError, match="running_mean or running_var, which will be updated in place"):
            lib.func.vmap(lambda a: F(lib).batch_norm(a, RM[0], RV[0], training=True))(X)
    _compare(res[ember], res[torch], 1e-10)


# ----- per-example gradients ------------------------------------------------------------------------------

def _cnn_params(rng):
    return [rng.normal(size=s) * 0.3 for s in ((4, 1, 3, 3), (4,), (3, 36), (3,))]


def _cnn_loss(lib):
    def loss(params, x, t):
        w1, b1, w2, b2 = params
        h = F(lib).relu(F(lib).conv2d(x.unsqueeze(0), w1, b1))        # (1, 4, 6, 6)
        h = F(lib).max_pool2d(h, 2).flatten(1)                          # (1, 36)
        return F(lib).cross_entropy(F(lib).linear(h, w2, b2), t.unsqueeze(0))
    return loss


def _mlp_params(rng):
    return [rng.normal(size=s) * 0.4 for s in ((6, 5), (6,), (6,), (6,), (2, 6), (2,))]


def _mlp_loss(lib):
    def loss(params, x, y):
        w1, b1, g, beta, w2, b2 = params
        h = F(lib).layer_norm(F(lib).linear(x, w1, b1), (6,), g, beta).tanh()
        return F(lib).mse_loss(F(lib).linear(h, w2, b2), y)
    return loss


@pytest.mark.parametrize("model", ["cnn", "mlp"])
def test_per_example_gradients(model):
    rng = np.random.default_rng(3)
    if model == "cnn":
        params, make = _cnn_params(rng), _cnn_loss
        data = (rng.normal(size=(5, 1, 8, 8)), rng.integers(0, 3, 5))
    else:
        params, make = _mlp_params(rng), _mlp_loss
        data = (rng.normal(size=(5, 5)), rng.normal(size=(5, 2)))
    res = {}
    for lib in (torch, ember):
        ps = tuple(lib.tensor(p) for p in params)
        xs = [lib.tensor(d) for d in data]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            grads = lib.func.vmap(lib.func.grad(make(lib)), in_dims=(None, 0, 0))(ps, *xs)
        if lib is ember:
            assert not [w for w in caught if FALLBACK in str(w.message)]
            # each example's gradient is the gradient of its own loss
            one = ember.func.grad(make(ember))(ps, xs[0][1], xs[1][1])
            for g, o in zip(grads, one):
                np.testing.assert_allclose(g[1].numpy(), o.numpy(), rtol=1e-12, atol=1e-12)
        res[lib] = grads
    _compare(res[ember], res[torch], 1e-10)


def _grad_variants():
    out = []
    for name, fn, makers, dtype in CASES:
        if dtype != "float64" or all(m(np.random.default_rng(0), ()).dtype.kind != "f" for m in makers):
            continue
        for which in (["all", 0] if len(makers) > 1 else ["all"]):
            out.append(pytest.param(fn, makers, which, id=f"{name}-in{which}"))
    return out


def _grad_run(lib, fn, arrays, dims, argnum, looped):
    def total(*a):
        outs = [o for o in _flat(fn(lib, *a)) if o.dtype.is_floating_point]
        return sum(o.sum() for o in outs)
    g = lib.func.grad(total, argnums=argnum)
    xs = [lib.tensor(a) for a in arrays]
    if not looped:
        return lib.func.vmap(g, in_dims=dims)(*xs)
    return lib.stack([g(*[x if d is None else x.select(d, b) for x, d in zip(xs, dims)]) for b in range(B)])


@pytest.mark.parametrize("fn,makers,which", _grad_variants())
def test_vmap_nn_grad(fn, makers, which):
    """Per-example gradients (vmap of grad) of each op with respect to its first floating input."""
    arrays, dims = _inputs(makers, "float64", which, seed=11)
    argnum = next(k for k, a in enumerate(arrays) if a.dtype.kind == "f")
    try:
        ref = _grad_run(torch, fn, arrays, dims, argnum, False)
    except RuntimeError as e:
        assert "vmap" in str(e) or "functorch" in str(e)
        ref = _grad_run(torch, fn, arrays, dims, argnum, True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _grad_run(ember, fn, arrays, dims, argnum, False)
    slow = [str(w.message) for w in caught if FALLBACK in str(w.message)]
    assert not slow, slow[0]
    _compare(got, ref, 1e-9)


def test_module_per_example_gradients():
    """nn.Module code through functional_call: Conv2d, BatchNorm2d (replace_all_batch_norm_modules_: batch
    statistics, no running ones), MaxPool2d, LayerNorm, Embedding-free MLP head, cross_entropy."""
    rng = np.random.default_rng(5)
    x, t = rng.normal(size=(4, 1, 10, 10)), rng.integers(0, 5, 4)
    grads = {}
    for lib in (torch, ember):
        nn = lib.nn
        model = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(48, 8), nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 5))
        lib.func.replace_all_batch_norm_modules_(model)
        p_rng = np.random.default_rng(6)
        params = {k: lib.tensor(p_rng.normal(size=tuple(v.shape)) * 0.3) for k, v in model.named_parameters()}

        def loss(p, xb, tb, lib=lib, model=model):
            out = lib.func.functional_call(model, p, (xb.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, tb.unsqueeze(0))
        model.double()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            grads[lib] = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, lib.tensor(x),
                                                                                 lib.tensor(t))
        if lib is ember:
            assert not [str(w.message) for w in caught if FALLBACK in str(w.message)]
    assert list(grads[ember]) == list(grads[torch])
    _compare([grads[ember][k] for k in grads[ember]], [grads[torch][k] for k in grads[torch]], 1e-10)


_JAC = {
    "jacrev-max_pool2d": lambda m, X: m.func.jacrev(lambda a: F(m).max_pool2d(a, 2))(X),
    "jacfwd-max_pool2d": lambda m, X: m.func.jacfwd(lambda a: F(m).max_pool2d(a, 2))(X),
    "jacrev-layer_norm": lambda m, X: m.func.jacrev(lambda a: F(m).layer_norm(a, (4,)))(X[0, 0]),
    "jacfwd-layer_norm": lambda m, X: m.func.jacfwd(lambda a: F(m).layer_norm(a, (4,)))(X[0, 0]),
    "hessian-cross_entropy": lambda m, X: m.func.hessian(
        lambda a: F(m).cross_entropy(a, m.tensor([2, 0])))(X[:, :, 0, 0]),
    "jacrev-avg_pool2d": lambda m, X: m.func.jacrev(lambda a: F(m).avg_pool2d(a, 2))(X[0]),
    "jacrev-mse_loss": lambda m, X: m.func.jacrev(lambda a: F(m).mse_loss(a, X * 0.5))(X),
    "jacrev-interpolate": lambda m, X: m.func.jacrev(
        lambda a: F(m).interpolate(a, scale_factor=2, mode="bilinear"))(X[:1, :1]),
    "jacrev-pad-reflect": lambda m, X: m.func.jacrev(lambda a: F(m).pad(a, (1, 1), mode="reflect"))(X[0]),
    "jacrev-group_norm": lambda m, X: m.func.jacrev(lambda a: F(m).group_norm(a, 3))(X[:1, :, :2, :2]),
    "jacrev-batch_norm": lambda m, X: m.func.jacrev(
        lambda a: F(m).batch_norm(a, None, None, training=True))(X[:, :, :2, :2]),
    "jacrev-embedding": lambda m, X: m.func.jacrev(lambda e: F(m).embedding(m.tensor([1, 0, 1]), e))(X[0, 0]),
    "jacrev-prelu": lambda m, X: m.func.jacrev(lambda a: F(m).prelu(a, X[0, :, 0, 0]))(X[0, :, :, 0].T),
}


@pytest.mark.parametrize("name", list(_JAC))
def test_jacobians(name):
    """jacrev / jacfwd / hessian (vmap over vjp and jvp) through the nn rules."""
    x = np.random.default_rng(0).normal(size=(2, 3, 4, 4))
    ref = _JAC[name](torch, torch.tensor(x))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _JAC[name](ember, ember.tensor(x))
    assert not [str(w.message) for w in caught if FALLBACK in str(w.message)]
    _compare(got, ref, 1e-10)


_PER_EXAMPLE = {
    # cases the rules leave to the per-example fallback: same values as torch, with the warning
    "embedding-own-weight-padding_idx": (lambda m, i, w: F(m).embedding(i, w, padding_idx=1),
                                         (_i((4,), 6), _f((6, 3)))),
    "cross_entropy-smoothing-own-weight": (lambda m, x, t, w: F(m).cross_entropy(x, t, w, label_smoothing=0.1),
                                           (_f((4, 5)), _i((4,), 5), _f((5,), 0.5, 1.5))),
    "nll_loss-1d-input-1-target": (lambda m, x, t: F(m).nll_loss(x, t), (_f((5,)), _i((1,), 5))),
}


@pytest.mark.parametrize("name", list(_PER_EXAMPLE))
def test_per_example_fallback_cases(name):
    fn, makers = _PER_EXAMPLE[name]
    arrays, dims = _inputs(makers, "float64", "all", seed=2)
    try:
        ref = _run(torch, fn, arrays, dims)
    except RuntimeError:
        ref = _loop(torch, fn, arrays, dims)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _run(ember, fn, arrays, dims)
    assert [w for w in caught if FALLBACK in str(w.message)]
    _compare(got, ref, 1e-10)


def test_one_hot_needs_num_classes():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="please provide an explicit positive num_classes"):
            lib.func.vmap(F(lib).one_hot)(lib.tensor(np.array([[0, 1], [2, 3]])))


def test_errors_inside_vmap():
    """Bad input reports the op's own error under vmap (a target or index out of range in some example)."""
    x = np.zeros((B, 4, 5))
    t = np.array([[0, 1, 2, 3], [0, 1, 7, 3], [0, 0, 0, 0]])
    for lib in (torch, ember):
        with pytest.raises((IndexError, RuntimeError), match="out of bounds"):
            lib.func.vmap(F(lib).nll_loss)(lib.tensor(x), lib.tensor(t))
    # an index past its own example's rows (torch.func.vmap reads the next example's rows there: ember checks)
    idx = np.array([[0, 1], [5, 6], [1, 1]])
    with pytest.raises(IndexError, match="index out of range in self"):
        ember.func.vmap(F(ember).embedding)(ember.tensor(idx), ember.tensor(np.zeros((B, 6, 2))))


def _modules(lib):
    nn = lib.nn
    return {
        "conv1d-batchnorm1d-avgpool": (nn.Sequential(nn.Conv1d(4, 6, 3), nn.BatchNorm1d(6, track_running_stats=False),
                                                     nn.AvgPool1d(2)), (2, 4, 8)),
        "embedding-layernorm": (nn.Sequential(nn.Embedding(10, 4), nn.LayerNorm(4)), None),
        "upsample-convtranspose": (nn.Sequential(nn.Upsample(scale_factor=2), nn.ConvTranspose2d(2, 3, 3)),
                                   (1, 2, 3, 3)),
        "groupnorm-prelu": (nn.Sequential(nn.GroupNorm(2, 4), nn.PReLU(4)), (2, 4, 5)),
        "instancenorm-maxpool-adaptive": (nn.Sequential(nn.InstanceNorm2d(3), nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1),
                                                        nn.Flatten()), (2, 3, 4, 4)),
        "reflectionpad-pixelshuffle": (nn.Sequential(nn.ReflectionPad2d(1), nn.PixelShuffle(2)), (2, 4, 3, 3)),
    }


@pytest.mark.parametrize("name", list(_modules(torch)))
def test_modules(name):
    """nn modules (evaluation mode, statistics from the batch where they have no running ones) under vmap."""
    tmod, shape = _modules(torch)[name]
    emod, _ = _modules(ember)[name]
    emod.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tmod.state_dict().items()})
    tmod.eval()
    emod.eval()
    rng = np.random.default_rng(4)
    x = rng.integers(0, 10, (B, 2, 3)) if shape is None else rng.normal(size=(B,) + shape).astype(np.float32)
    ref = torch.func.vmap(tmod)(torch.tensor(x))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = ember.func.vmap(emod)(ember.tensor(x))
    assert not [str(w.message) for w in caught if FALLBACK in str(w.message)]
    _compare(got, ref, 1e-5)
