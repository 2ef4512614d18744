"""Activations and pointwise losses at exactly their kinks, against torch: the first derivative, its graph
(create_graph=True: PyTorch's node, differentiable again), the second derivative in the input and in the
upstream gradient, and the forward-mode tangent. The op database keeps its samples away from kinks (central
differences need that); these points are the ones it leaves out."""
import numpy as np
import pytest

import ember

from parity import same

torch = pytest.importorskip("torch")


def _arr(t):
    if t is None:
        return None
    if isinstance(t, torch.Tensor) and t._is_zerotensor():   # torch's second derivatives may be ZeroTensors
        return np.zeros(tuple(t.shape))
    return np.array(t.tolist(), dtype=np.float64)


def F(m):
    return m.nn.functional


def _w(m):
    return m.tensor([0.25], dtype=m.float64)


def _y(m, n):
    return m.zeros(n, dtype=m.float64)


# name: (function of (lib, x), points at and around the kinks, whether PyTorch's node name of the first
# derivative is compared: the piecewise-linear ops, elu, softplus, logsigmoid, gelu, softmax, log_softmax, mse,
# smooth_l1 and huber get PyTorch's own nodes; the in-place elu forms and l1 compose theirs from where/mul, with
# PyTorch's values)
CASES = {
    "relu": (lambda m, x: m.relu(x), [0.0, -1.0, 1.0, -0.0], True),
    "F.relu": (lambda m, x: F(m).relu(x), [0.0, -1.0, 1.0], True),
    "relu_": (lambda m, x: m.relu_(x * 1), [0.0, -1.0, 1.0], True),
    "relu6": (lambda m, x: F(m).relu6(x), [0.0, 6.0, 3.0, -1.0, 7.0], True),
    "leaky_relu": (lambda m, x: F(m).leaky_relu(x, 0.2), [0.0, -1.0, 1.0], True),
    "leaky_relu_neg": (lambda m, x: F(m).leaky_relu(x, -0.5), [0.0, -1.0, 1.0], True),
    "leaky_relu_": (lambda m, x: F(m).leaky_relu_(x * 1, 0.2), [0.0, -1.0, 1.0], True),
    "hardtanh": (lambda m, x: F(m).hardtanh(x), [-1.0, 1.0, 0.0, -2.0, 2.0], True),
    "hardtanh_": (lambda m, x: F(m).hardtanh_(x * 1, -0.5, 0.5), [-0.5, 0.5, 0.0], True),
    "threshold": (lambda m, x: F(m).threshold(x, 0.5, 2.0), [0.5, 0.4, 0.6], True),
    "threshold_": (lambda m, x: F(m).threshold_(x * 1, 0.5, 2.0), [0.5, 0.4, 0.6], True),
    "hardshrink": (lambda m, x: F(m).hardshrink(x, 0.5), [0.5, -0.5, 0.0, 1.0, -1.0], True),
    "softshrink": (lambda m, x: F(m).softshrink(x, 0.5), [0.5, -0.5, 0.0, 1.0, -1.0], True),
    "rrelu_eval": (lambda m, x: F(m).rrelu(x), [0.0, -1.0, 1.0], True),
    "rrelu_eval_": (lambda m, x: F(m).rrelu_(x * 1), [0.0, -1.0, 1.0], True),
    "prelu": (lambda m, x: F(m).prelu(x, _w(m)), [0.0, -1.0, 1.0], True),
    "hardswish": (lambda m, x: F(m).hardswish(x), [-3.0, 3.0, 0.0, -4.0, 4.0], True),
    "elu": (lambda m, x: F(m).elu(x), [0.0, -1.0, 1.0], True),
    "elu_alpha": (lambda m, x: F(m).elu(x, 0.5), [0.0, -1.0, 1.0], True),
    "elu_": (lambda m, x: F(m).elu_(x * 1, 0.5), [0.0, -1.0, 1.0], False),
    "selu": (lambda m, x: F(m).selu(x), [0.0, -1.0, 1.0], True),
    "selu_": (lambda m, x: F(m).selu(x * 1, inplace=True), [0.0, -1.0, 1.0], False),
    "celu": (lambda m, x: F(m).celu(x, 2.0), [0.0, -1.0, 1.0], True),
    "celu_": (lambda m, x: F(m).celu(x * 1, 2.0, inplace=True), [0.0, -1.0, 1.0], False),
    "softplus": (lambda m, x: F(m).softplus(x, 2.0, 3.0), [1.5, 1.0, 2.0], True),
    "softplus_default": (lambda m, x: F(m).softplus(x), [20.0, 19.0, 21.0], True),
    "smooth_l1": (lambda m, x: F(m).smooth_l1_loss(x, _y(m, 5), reduction="none", beta=0.5),
                  [0.5, -0.5, 0.0, 1.0, -1.0], True),
    "smooth_l1_mean": (lambda m, x: F(m).smooth_l1_loss(x, _y(m, 5), beta=0.5), [0.5, -0.5, 0.0, 1.0, -1.0],
                       True),
    "huber": (lambda m, x: F(m).huber_loss(x, _y(m, 5), reduction="none", delta=0.5),
              [0.5, -0.5, 0.0, 1.0, -1.0], True),
    "huber_sum": (lambda m, x: F(m).huber_loss(x, _y(m, 5), reduction="sum", delta=2.0),
                  [2.0, -2.0, 0.0, 3.0, -3.0], True),
    "l1": (lambda m, x: F(m).l1_loss(x, _y(m, 3), reduction="none"), [0.0, -0.5, 1.0], False),
    "logsigmoid": (lambda m, x: F(m).logsigmoid(x), [0.0, -30.0, 30.0, 1e4, -1e4], True),
    "mse": (lambda m, x: F(m).mse_loss(x, _y(m, 3), reduction="sum"), [0.0, -0.5, 1.0], True),
    "softmax": (lambda m, x: F(m).softmax(x, 0), [0.0, -1.0, 2.0, 0.5], True),
    "log_softmax": (lambda m, x: F(m).log_softmax(x, 0), [0.0, -1.0, 2.0, 0.5], True),
    "cross_entropy": (lambda m, x: F(m).cross_entropy(x.reshape(2, 2), m.tensor([1, 0])), [0.0, -1.0, 2.0, 0.5], True),
    "gelu": (lambda m, x: F(m).gelu(x), [0.0, -0.5, 1.0, -6.0, 6.0, 1e4, -1e4], True),
    "gelu_tanh": (lambda m, x: F(m).gelu(x, approximate="tanh"), [0.0, -0.5, 1.0, -6.0, 6.0, 1e4, -1e4], True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_derivatives_at_kinks(name):
    f, pts, compare_node = CASES[name]

    def fn(m):
        x = m.tensor(pts, dtype=m.float64, requires_grad=True)
        y = f(m, x)
        go = m.linspace(0.5, 1.5, y.numel(), dtype=m.float64).reshape(y.shape).requires_grad_()
        g, = m.autograd.grad(y, x, go, create_graph=True)
        node = type(g.grad_fn).__name__ if compare_node else g.grad_fn is not None
        w = m.linspace(-1.0, 2.0, len(pts), dtype=m.float64)
        gx, ggo = m.autograd.grad((g * w).sum(), (x, go), allow_unused=True)
        return _arr(g), node, _arr(gx), _arr(ggo)
    same(fn, rtol=1e-12, atol=1e-12)


# Forward mode ember has where PyTorch's raises NotImplementedError (no formula in derivatives.yaml): the in-place
# rrelu_with_noise_ (hessian, jacfwd of jacrev, goes through it). Its tangent is the out-of-place op's.
TANGENT_BEYOND_TORCH = {"rrelu_eval_": lambda m, x: F(m).rrelu(x)}


@pytest.mark.parametrize("name", list(CASES))
def test_tangents_at_kinks(name):
    f, pts, _ = CASES[name]

    def tangent(g):
        def fn(m):
            fw = m.autograd.forward_ad
            with fw.dual_level():
                x = fw.make_dual(m.tensor(pts, dtype=m.float64), m.linspace(-1.0, 2.0, len(pts), dtype=m.float64))
                return _arr(fw.unpack_dual(g(m, x)).tangent)
        return fn
    if name in TANGENT_BEYOND_TORCH:
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with"):
            tangent(f)(torch)
        np.testing.assert_allclose(tangent(f)(ember), tangent(TANGENT_BEYOND_TORCH[name])(torch), rtol=1e-12,
                                   atol=1e-12)
        return
    same(tangent(f), rtol=1e-12, atol=1e-12)


def test_prelu_weight_derivatives_at_kinks():
    # the weight's gradient and its derivatives, with one weight per channel
    def fn(m):
        x = m.tensor([[0.0, -1.0], [1.0, -0.0], [-2.0, 0.0]], dtype=m.float64, requires_grad=True)
        w = m.tensor([0.25, -0.5], dtype=m.float64, requires_grad=True)
        y = F(m).prelu(x, w)
        go = m.linspace(0.5, 1.5, 6, dtype=m.float64).reshape(3, 2).requires_grad_()
        gx, gw = m.autograd.grad(y, (x, w), go, create_graph=True)
        s = (gx * m.linspace(-1.0, 1.0, 6, dtype=m.float64).reshape(3, 2)).sum() + (gw * m.tensor([2.0, 3.0],
                                                                                            dtype=m.float64)).sum()
        second = m.autograd.grad(s, (x, w, go), allow_unused=True)
        fw = m.autograd.forward_ad
        with fw.dual_level():
            xd = fw.make_dual(x.detach(), m.ones(3, 2, dtype=m.float64))
            wd = fw.make_dual(w.detach(), m.tensor([1.0, -1.0], dtype=m.float64))
            tangent = fw.unpack_dual(F(m).prelu(xd, wd)).tangent
        return (_arr(gx), _arr(gw), type(gx.grad_fn).__name__, type(gw.grad_fn).__name__,
                [_arr(t) for t in second], _arr(tangent))
    same(fn, rtol=1e-12, atol=1e-12)


def test_relu_gradient_graph_backward():
    # the example: the gradient of relu has a graph; its backward gives zeros
    def fn(m):
        x = m.tensor([0.5, -1.0, 0.0, 2.0], requires_grad=True)
        g, = m.autograd.grad(F(m).relu(x).sum(), x, create_graph=True)
        g.sum().backward()
        return (type(g.grad_fn).__name__, [type(n).__name__ if n is not None else None
                                          for n, _ in g.grad_fn.next_functions], _arr(x.grad))
    same(fn)


def test_rrelu_training_gradient_graph():
    def fn(m):
        m.manual_seed(3)
        x = m.tensor([0.5, -1.0, 0.0, 2.0, -3.0], dtype=m.float64, requires_grad=True)
        g, = m.autograd.grad(F(m).rrelu(x, training=True).sum(), x, create_graph=True)
        gg, = m.autograd.grad(g.sum(), x)
        return _arr(g), type(g.grad_fn).__name__, _arr(gg)
    same(fn, rtol=1e-12, atol=1e-12)


def test_hardsigmoid_has_no_second_derivative():
    # PyTorch records a NotImplemented node for hardsigmoid's gradient: backward through it raises
    def node(m):
        x = m.tensor([-3.0, 0.0, 3.0, 1.0], requires_grad=True)
        g, = m.autograd.grad(F(m).hardsigmoid(x).sum(), x, create_graph=True)
        return type(g.grad_fn).__name__, _arr(g)
    same(node)

    def second(m):
        x = m.tensor([-3.0, 0.0, 3.0, 1.0], requires_grad=True)
        g, = m.autograd.grad(F(m).hardsigmoid(x).sum(), x, create_graph=True)
        return m.autograd.grad(g.sum(), x)
    same(second, msg="derivative for aten::hardsigmoid_backward is not implemented")


def test_plain_backward_makes_no_graph():
    import ember
    x = ember.tensor([0.5, -1.0, 0.0], requires_grad=True)
    for f in (ember.relu, ember.nn.functional.leaky_relu, ember.nn.functional.hardtanh,
              ember.nn.functional.hardshrink, ember.nn.functional.hardswish):
        g, = ember.autograd.grad(f(x).sum(), x)
        assert g.grad_fn is None and not g.requires_grad


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_gradient_graph(reduction):
    # nll_loss's gradient is constant in the input, but PyTorch's node for it has an edge to the input
    def fn(m):
        x = m.tensor([[0.5, -1.0, 0.0], [1.0, 2.0, -0.5]], dtype=m.float64, requires_grad=True)
        y = F(m).nll_loss(x, m.tensor([0, 2]), reduction=reduction)
        go = m.ones(y.shape, dtype=m.float64).requires_grad_()
        g, = m.autograd.grad(y, x, go, create_graph=True)
        gx, ggo = m.autograd.grad((g * m.arange(6.0, dtype=m.float64).reshape(2, 3)).sum(), (x, go))
        return (_arr(g), type(g.grad_fn).__name__, [n is None for n, _ in g.grad_fn.next_functions], _arr(gx),
                _arr(ggo))
    same(fn, rtol=1e-12, atol=1e-12)


def test_nll_loss_input_changed_in_place():
    # the input is saved for backward, as PyTorch's: changing it in place makes backward raise
    def fn(m):
        x = m.tensor([[0.5, -1.0, 0.0], [1.0, 2.0, -0.5]], requires_grad=True)
        y = x * 1
        loss = F(m).nll_loss(y, m.tensor([0, 2]))
        y.add_(1)
        loss.backward()
    same(fn, msg="modified by an inplace operation")


# ----- erf / erfc: vectorised (Cody's rational approximations), checked against the C library's ------------

def _erf_points():
    rng = np.random.default_rng(7)
    return np.concatenate([
        rng.standard_normal(40000) * 3, rng.uniform(-30.0, 30.0, 20000), np.linspace(-6.0, 6.0, 20001),
        rng.standard_normal(5000) * 1e-3, 10.0 ** rng.uniform(-310.0, 0.0, 5000) * rng.choice([-1.0, 1.0], 5000),
        # the ends of the approximation's ranges, and of float64
        np.nextafter(0.46875, [0.0, 1.0]), np.nextafter(-0.46875, [0.0, -1.0]), np.nextafter(4.0, [0.0, 8.0]),
        [0.0, -0.0, 0.46875, -0.46875, 4.0, -4.0, 26.0, 26.5, 26.6, 27.0, 27.3, 28.0, 40.0, 1e300, -1e300, 5e-324]])


def test_erf_erfc_match_math_to_a_few_ulps():
    import math
    from ember.devices.cpu.elementwise import erf, erfc
    x = _erf_points()
    for fn, ref_fn in ((erf, math.erf), (erfc, math.erfc)):
        got = fn(x)
        ref = np.array([ref_fn(v) for v in x])
        normal = np.abs(ref) >= np.finfo(np.float64).tiny
        rel = np.abs(got[normal] - ref[normal]) / np.abs(ref[normal])
        assert rel.max() < 2e-15, (fn.__name__, x[normal][np.argmax(rel)], rel.max())
        # erfc's far tail: subnormal or 0 as the C library's, never nan
        assert np.all(np.abs(got[~normal] - ref[~normal]) <= 1e-320), fn.__name__


def test_erf_erfc_special_values():
    from ember.devices.cpu.elementwise import erf, erfc
    x = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0])
    np.testing.assert_array_equal(erf(x), [1.0, -1.0, np.nan, -0.0, 0.0])
    assert np.signbit(erf(x)[3])
    np.testing.assert_array_equal(erfc(x), [0.0, 2.0, np.nan, 1.0, 1.0])
    # float16/32 inputs compute in float64 and round once; shapes and 0-d arrays are kept
    for dt in (np.float16, np.float32):
        a = np.linspace(-3, 3, 24, dtype=dt).reshape(2, 3, 4)
        assert erf(a).dtype == dt and erf(a).shape == (2, 3, 4)
        np.testing.assert_array_equal(erf(a), erf(a.astype(np.float64)).astype(dt))
    assert erf(np.array(0.5)).shape == ()
    # an array longer than one chunk, not contiguous
    big = np.linspace(-5, 5, 100000)[::3]
    np.testing.assert_array_equal(erf(big), np.concatenate([erf(big[:20000]), erf(big[20000:])]))


def test_erf_float32_fast_path_is_the_float64_kernel_rounded():
    """float32 erf takes a degree-8 polynomial in float64 with a guard near float32 rounding midpoints
    (elementwise._erf32); its values are _erf_in64's (Cody's ratio in float64, rounded once) bit for bit. Checked
    on all 2^32 float32 inputs once (bench/NOTES.md); here a sample: random bit patterns, the guard's near
    misses, the ends of its ranges (|x| = 1, the subnormal results), slices mostly beyond its range."""
    from ember.devices.cpu.elementwise import _erf32, _erf_in64, _ERF32_C
    rng = np.random.default_rng(11)
    parts = [rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32),
             (rng.standard_normal(300000) * 0.3).astype(np.float32), np.float32(rng.uniform(-1.2, 1.2, 9000)),
             np.nextafter(np.float32(1.0), np.float32([0, 2])), np.nextafter(np.float32(-1.0), np.float32([0, -2])),
             np.float32([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.0 ** -125, -(2.0 ** -125), 1e-45, -1e-45,
                         2.0 ** -149 * 3, 1e-38, 3.9, 4.0, -10.0])]
    # inputs whose polynomial value lies nearest a float32 midpoint (where the guard sends them to the old kernel)
    x = (rng.standard_normal(1 << 20) * 0.4).astype(np.float32)
    t = x.astype(np.float64)
    s = t * t
    p = np.full_like(s, _ERF32_C[-1])
    for c in _ERF32_C[-2::-1]:
        p = p * s + c
    low = (p * t).view(np.int64) & ((1 << 29) - 1)
    parts.append(x[np.argsort(np.abs(low - (1 << 28)))[:5000]])
    parts.append(np.float32(rng.uniform(-6, 6, 70000)))   # slices mostly beyond |x| = 1
    for a in parts:
        got = _erf32(a)
        assert got.dtype == np.float32 and got.shape == a.shape
        np.testing.assert_array_equal(got.view(np.uint32), _erf_in64(a).view(np.uint32))
    a = rng.standard_normal((3, 700, 50)).astype(np.float32)[:, ::2]   # shapes and strides kept
    np.testing.assert_array_equal(_erf32(a), _erf_in64(a))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exact_gelu_large_matches_torch(dtype):
    # more elements than one chunk of the erf kernel
    def fn(m):
        m.manual_seed(0)
        x = (m.randn(50000, dtype=getattr(m, dtype)) * 4).requires_grad_()
        y = F(m).gelu(x)
        y.sum().backward()
        return y, x.grad
    same(fn, rtol=1e-6, atol=1e-6)


# ----- losses on other dtypes: PyTorch's result dtype, or its exception type and message --------------------------

def _loss_calls(m, dx, dy):
    f = F(m)
    x = m.tensor([[0.2, -0.5, 0.9], [0.1, 0.4, -0.3]]).to(dx)
    p = m.tensor([[0.2, 0.5, 0.9], [0.1, 0.4, 0.3]]).to(dx)
    y = m.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]).to(dy)
    s = m.tensor([[1.0, -1.0, 1.0], [-1.0, 1.0, 1.0]]).to(dy)
    t = m.tensor([0, 2])
    lp = m.tensor([[[-1.2, -0.4, -2.0]], [[-0.3, -1.5, -2.2]]]).to(dx)
    return {
        "nll_loss": lambda: f.nll_loss(x, t), "cross_entropy": lambda: f.cross_entropy(x, t),
        "cross_entropy_probs": lambda: f.cross_entropy(x, y), "mse_loss": lambda: f.mse_loss(x, y),
        "l1_loss": lambda: f.l1_loss(x, y), "smooth_l1_loss": lambda: f.smooth_l1_loss(x, y),
        "huber_loss": lambda: f.huber_loss(x, y), "binary_cross_entropy": lambda: f.binary_cross_entropy(p, y),
        "bce_with_logits": lambda: f.binary_cross_entropy_with_logits(x, y),
        "bce_with_logits_weight": lambda: f.binary_cross_entropy_with_logits(x, y, weight=m.ones(3).to(dy)),
        "kl_div": lambda: f.kl_div(x, y, reduction="batchmean"), "poisson_nll_loss": lambda: f.poisson_nll_loss(x, y),
        "gaussian_nll_loss": lambda: f.gaussian_nll_loss(x, y, p.abs() + 0.1),
        "soft_margin_loss": lambda: f.soft_margin_loss(x, s),
        "multilabel_soft_margin_loss": lambda: f.multilabel_soft_margin_loss(x, y),
        "margin_ranking_loss": lambda: f.margin_ranking_loss(x[0], x[1], s[0]),
        "hinge_embedding_loss": lambda: f.hinge_embedding_loss(x, s),
        "hinge_embedding_loss_sum": lambda: f.hinge_embedding_loss(x, s, reduction="sum"),
        "cosine_embedding_loss": lambda: f.cosine_embedding_loss(x, y, m.tensor([1, -1])),
        "triplet_margin_loss": lambda: f.triplet_margin_loss(x, p, y),
        "multi_margin_loss": lambda: f.multi_margin_loss(x, t),
        "multilabel_margin_loss": lambda: f.multilabel_margin_loss(x, m.tensor([[0, -1, 1], [2, 1, -1]])),
        "ctc_loss": lambda: f.ctc_loss(lp, m.tensor([[1]]), [2], [1]),
    }


_LOSSES = list(_loss_calls(torch, torch.float32, torch.float32))
_DTYPE_PAIRS = [("float16", "float16"), ("int64", "int64"), ("int32", "int32"), ("bool", "bool"), ("uint8", "uint8"),
                ("float32", "float16"), ("float16", "float32"), ("float32", "float64"), ("float32", "int64"),
                ("int64", "float32"), ("float32", "bool")]


@pytest.mark.parametrize("dx,dy", _DTYPE_PAIRS)
@pytest.mark.parametrize("name", _LOSSES)
def test_loss_dtypes(name, dx, dy):
    import warnings

    def fn(m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _loss_calls(m, getattr(m, dx), getattr(m, dy))[name]()
        return str(out.dtype), out.detach().double()
    same(fn, exact_msg=True, rtol=2e-3, atol=2e-3)


# ----- float16 tensor with a Python number (PyTorch: a wrapped number, computed in float32 for * and /) ----------

@pytest.mark.parametrize("scalar", [0.3, 1e-5, 1 / 3, -7.77, 70000.0, 65519.0, 3, 70000, 1e-8, float("inf")])
def test_float16_with_python_number(scalar):
    vals = np.concatenate([np.random.default_rng(0).standard_normal(300) * 10, [1000.0, 0.1, 3.3, 0.7, 6e4, -6e4,
                                                                               1e-4, 0.0, -0.0]]).astype(np.float16)

    def fn(m):
        a = m.tensor(vals)
        g = m.tensor(np.linspace(0.1, 3.0, vals.size).astype(np.float16))
        outs = [a * scalar, scalar * a, a / scalar, scalar / a, a + scalar, a - scalar, scalar - a,
                m.mul(a, scalar), m.div(a, scalar), a.clone().mul_(scalar), a.clone().div_(scalar)]
        x = a.clone().requires_grad_()
        gx, = m.autograd.grad([(x * scalar), (x / scalar)], x, [g, g])
        return outs + [gx]
    rt = same(fn, rtol=0, atol=0)
    assert rt[0] == "ok"
