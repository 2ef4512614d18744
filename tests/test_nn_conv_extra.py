"""The convolution / pooling family's later additions, against torch: fractional max pooling with the random
windows drawn from the seed, pooling functions that return (values, indices), interpolate's nearest backward
(PyTorch's own index mapping), uint8 resizing, unfold's errors on low-rank inputs."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from parity import assert_same, raises_same, same

torch = pytest.importorskip("torch")


def _weighted_grad(m, x, y):
    """``x``'s gradient of ``sum(y * w)`` with distinct weights w (so a misrouted gradient shows)."""
    w = m.arange(y.numel(), dtype=y.dtype).reshape(tuple(y.shape)) % 7 + 1
    (y * w).sum().backward()
    return x.grad


# ----- fractional max pooling: the same seed gives PyTorch's windows ---------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("d,shape,kw", [
    (2, (2, 3, 11, 9), {"kernel_size": 2, "output_size": 4}),
    (2, (2, 3, 11, 9), {"kernel_size": (3, 2), "output_size": (5, 7)}),
    (2, (2, 3, 11, 9), {"kernel_size": 2, "output_ratio": (0.5, 0.7)}),
    (2, (3, 10, 12), {"kernel_size": 3, "output_size": (6, 1)}),
    (2, (1, 2, 40, 33), {"kernel_size": 2, "output_size": (39, 17)}),
    (3, (2, 2, 7, 8, 9), {"kernel_size": 2, "output_size": 3}),
    (3, (2, 2, 7, 8, 9), {"kernel_size": (3, 2, 2), "output_size": (4, 5, 6)}),
    (3, (2, 7, 8, 9), {"kernel_size": 2, "output_ratio": 0.5}),
])
def test_fractional_max_pool_seeded(dtype, d, shape, kw):
    x0 = np.random.default_rng(0).standard_normal(shape)

    def fn(m):
        m.manual_seed(7)
        x = m.tensor(x0, dtype=getattr(m, dtype), requires_grad=True)
        out, idx = getattr(m.nn.functional, f"fractional_max_pool{d}d")(x, return_indices=True, **kw)
        return out, idx, _weighted_grad(m, x, out), type(out.grad_fn).__name__, m.rand(3)   # the stream after it
    same(fn, rtol=0, atol=0)


def test_fractional_max_pool_without_indices_and_with_indices_variant():
    x0 = np.random.default_rng(1).standard_normal((2, 3, 9, 9))

    def fn(m):
        m.manual_seed(3)
        a = m.nn.functional.fractional_max_pool2d(m.tensor(x0), 3, output_size=4)
        m.manual_seed(3)
        b = m.nn.functional.fractional_max_pool2d_with_indices(m.tensor(x0), 3, output_size=4)
        return a, b
    same(fn, rtol=0, atol=0)


def test_fractional_max_pool_nan_and_ties():
    # NaN wins (the last NaN in the window), ties keep the first maximum, as ATen's scan
    x0 = np.random.default_rng(2).integers(-1, 2, (2, 2, 8, 8)).astype(np.float64)
    x0[0, 0, 1, 1] = x0[1, 1, 4, 5] = x0[1, 1, 5, 5] = np.nan
    s0 = np.random.default_rng(3).uniform(0, 1, (2, 2, 2))
    same(lambda m: m.nn.functional.fractional_max_pool2d(m.tensor(x0), 2, output_size=5, return_indices=True,
                                                         _random_samples=m.tensor(s0)), rtol=0, atol=0)


def test_fractional_max_pool_double_backward():
    x0 = np.random.default_rng(4).permutation(2 * 2 * 8 * 7).reshape(2, 2, 8, 7) * 0.1
    s0 = np.random.default_rng(5).uniform(0, 1, (2, 2, 2))

    def fn(m):
        x = m.tensor(x0, requires_grad=True)
        y = m.nn.functional.fractional_max_pool2d(x, 2, output_size=(5, 4), _random_samples=m.tensor(s0))
        gx, = m.autograd.grad((y * y).sum(), x, create_graph=True)
        ggx, = m.autograd.grad((gx * gx).sum(), x)
        return y, gx, ggx
    same(fn)


@pytest.mark.parametrize("case", [
    ({"output_size": 7}, None), ({"output_size": (3, 3, 3)}, None), ({}, None),
    ({"output_ratio": 0.5}, None), ({"output_ratio": (0.5, 0.5, 0.5)}, None),
    ({"output_size": 3}, (1, 3, 2)), ({"output_size": 3}, (2, 4, 2)), ({"output_size": 3}, (2, 3, 3)),
    ({"output_size": 3}, (2, 3)), ({"output_size": 3}, "double"),
])
def test_fractional_max_pool2d_errors(case):
    kw, samples = case
    x0 = np.random.default_rng(0).standard_normal((2, 3, 7, 8))

    def fn(m):
        x = m.tensor(x0, dtype=m.float32)
        if samples == "double":
            kw2 = dict(kw, _random_samples=m.rand(2, 3, 2, dtype=m.float64))
        elif samples is not None:
            kw2 = dict(kw, _random_samples=m.rand(*samples))
        else:
            kw2 = kw
        return m.nn.functional.fractional_max_pool2d(x, 2, **kw2)
    raises_same(fn)


def test_fractional_max_pool_integer_input():
    raises_same(lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 2, 6, 6, dtype=m.int64), 2, output_size=3),
                msg="not implemented for 'Long'")


# ----- (values, indices) pooling, lp_pool3d, torch-level names ----------------------------------------------------

@pytest.mark.parametrize("name,shape,kw", [
    ("nn.functional.max_pool1d_with_indices", (2, 3, 9), {"kernel_size": 3, "stride": 2}),
    ("nn.functional.max_pool1d_with_indices", (2, 3, 9), {"kernel_size": 2, "return_indices": False}),
    ("max_pool1d_with_indices", (2, 3, 9), {"kernel_size": 3, "padding": 1}),
    ("nn.functional.max_pool2d_with_indices", (2, 3, 6, 7), {"kernel_size": 2, "ceil_mode": True}),
    ("nn.functional.max_pool3d_with_indices", (1, 2, 4, 5, 6), {"kernel_size": 2}),
    ("nn.functional.adaptive_max_pool1d_with_indices", (2, 3, 9), {"output_size": 4}),
    ("adaptive_max_pool1d", (2, 3, 9), {"output_size": 4}),
    ("nn.functional.adaptive_max_pool2d_with_indices", (2, 3, 9, 7), {"output_size": (4, 3)}),
    ("nn.functional.adaptive_max_pool3d_with_indices", (1, 2, 5, 6, 7), {"output_size": 3}),
])
def test_pooling_pairs(name, shape, kw):
    x0 = np.random.default_rng(0).permutation(int(np.prod(shape))).reshape(shape) * 0.5

    def fn(m):
        f = m
        for part in name.split("."):
            f = getattr(f, part)
        x = m.tensor(x0, requires_grad=True)
        out = f(x, **kw)
        assert isinstance(out, tuple) and len(out) == 2
        return out, _weighted_grad(m, x, out[0]), type(out[0].grad_fn).__name__
    same(fn)


def test_torch_level_names_are_torchs():
    for n in ("max_pool1d_with_indices", "adaptive_max_pool1d"):
        assert hasattr(torch, n) and hasattr(ember, n)
    for n in ("max_pool2d_with_indices", "lp_pool3d", "fractional_max_pool2d"):
        assert not hasattr(torch, n) and not hasattr(ember, n)


@pytest.mark.parametrize("kw", [{"norm_type": 2, "kernel_size": 2}, {"norm_type": 1.5, "kernel_size": (2, 3, 2),
                                                                    "stride": 2, "ceil_mode": True},
                                {"norm_type": float("inf"), "kernel_size": 2}])
def test_lp_pool3d(kw):
    x0 = np.random.default_rng(0).uniform(0.5, 2.5, (2, 2, 5, 6, 5))

    def fn(m):
        x = m.tensor(x0, requires_grad=True)
        y = m.nn.functional.lp_pool3d(x, **kw)
        return y, _weighted_grad(m, x, y), type(y.grad_fn).__name__
    same(fn)


# ----- interpolate: nearest backward, uint8 ------------------------------------------------------------------------

NEAREST_CASES = [((1, 2, 5), 2.1), ((1, 2, 5), 1.1), ((1, 2, 7), 0.45), ((1, 2, 6), 1.7), ((1, 2, 4, 5), 2.1),
                 ((1, 2, 4, 5), 1.1), ((1, 2, 7, 6), 0.6), ((1, 1, 3, 4, 5), 2.3), ((1, 1, 3, 4, 5), 1.3),
                 ((1, 1, 4, 5, 6), 0.45), ((1, 1, 100, 30), 1.005), ((1, 1, 30, 34), 2.01), ((1, 1, 30, 35), 2.01)]


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("shape,sf", NEAREST_CASES)
def test_interpolate_nearest_gradients(mode, shape, sf):
    """PyTorch's nearest backward maps indices its own way (a same-size dim copies, a double-size dim halves,
    whatever scale_factor the forward used): its gradients, and their own gradient, exactly."""
    x0 = np.random.default_rng(0).standard_normal(shape)

    def fn(m):
        x = m.tensor(x0, requires_grad=True)
        y = m.nn.functional.interpolate(x, scale_factor=sf, mode=mode)
        w = m.tensor((np.arange(y.numel()).reshape(tuple(y.shape)) % 7) * 1.0, requires_grad=True)
        gx, = m.autograd.grad((y * w).sum(), x, create_graph=True)
        gw, = m.autograd.grad((gx * m.arange(gx.numel(), dtype=gx.dtype).reshape(tuple(gx.shape))).sum(), w)
        return y, gx, gw, type(y.grad_fn).__name__
    same(fn, rtol=0, atol=0)


UINT8_CASES = [{"size": (13, 7)}, {"scale_factor": 1.7}, {"size": (13, 7), "align_corners": True},
               {"size": (17, 23)}, {"size": (5, 4)}, {"size": (9, 20)}, {"size": (4, 11)},
               {"scale_factor": (0.45, 2.3)}, {"size": (9, 11)}, {"scale_factor": 3.3}]


@pytest.mark.parametrize("channels", [3, 5])   # PyTorch's AVX kernel (C <= 4) and its generic one
@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest", "nearest-exact"])
@pytest.mark.parametrize("kw", UINT8_CASES)
def test_interpolate_uint8(channels, mode, kw):
    if mode.startswith("nearest") and "align_corners" in kw:
        pytest.skip("align_corners is for the interpolating modes")
    u = np.random.default_rng(0).integers(0, 256, (2, channels, 9, 11)).astype(np.uint8)
    same(lambda m: m.nn.functional.interpolate(m.tensor(u), mode=mode, **kw), rtol=0, atol=0)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate_uint8_nearest_1d_3d(mode):
    u1 = np.random.default_rng(1).integers(0, 256, (2, 3, 9)).astype(np.uint8)
    u3 = np.random.default_rng(2).integers(0, 256, (1, 2, 4, 5, 6)).astype(np.uint8)
    same(lambda m: m.nn.functional.interpolate(m.tensor(u1), scale_factor=1.7, mode=mode), rtol=0, atol=0)
    same(lambda m: m.nn.functional.interpolate(m.tensor(u3), scale_factor=0.7, mode=mode), rtol=0, atol=0)


@pytest.mark.parametrize("mode,shape", [("linear", (2, 3, 7)), ("trilinear", (1, 2, 3, 4, 5)), ("area", (1, 2, 6, 6))])
def test_interpolate_uint8_refused_as_torch(mode, shape):
    u = np.ones(shape, dtype=np.uint8)
    raises_same(lambda m: m.nn.functional.interpolate(m.tensor(u), scale_factor=2.0, mode=mode))


# ----- unfold on low-rank inputs ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (6,), (5, 6), (0, 5), (4, 0), (2, 0, 5)])
def test_unfold_low_rank_errors(shape):
    raises_same(lambda m: m.nn.functional.unfold(m.ones(shape), 2), exact_msg=True)


def test_adaptive_avg_pool_integers_refused_as_torch():
    for d in (1, 2, 3):
        raises_same(lambda m: getattr(m.nn.functional, f"adaptive_avg_pool{d}d")(
            m.ones((1, 2) + (4,) * d, dtype=m.uint8), 2), exact_msg=True)


def test_results_are_arrays_not_views_of_the_input():
    # a copy for an unchanged uint8 size: writing to the result leaves the input alone
    u = ember.tensor(np.arange(12, dtype=np.uint8).reshape(1, 1, 3, 4))
    y = ember.nn.functional.interpolate(u, size=(3, 4), mode="bilinear")
    y[0, 0, 0, 0] = 99
    assert u[0, 0, 0, 0].item() == 0
    assert_same(y.shape, (1, 1, 3, 4))


# ----- interpolate(antialias=True): bilinear, bicubic, lanczos ------------------------------------------------------

AA_CASES = [{"size": (5, 7)}, {"size": (20, 9)}, {"scale_factor": 0.37}, {"size": (5, 7), "align_corners": True},
            {"scale_factor": (0.5, 1.3)}, {"size": (13, 4)}, {"scale_factor": 1.05}, {"scale_factor": (1.05, 0.5)},
            {"size": (1, 1)}]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("kw", AA_CASES)
def test_interpolate_antialias(dtype, mode, kw):
    """Values, gradients (PyTorch's backward weights even a dim its forward copied), their gradients, node names
    and what the node shows."""
    if mode == "lanczos" and kw.get("align_corners"):
        pytest.skip("lanczos refuses align_corners (tested below)")
    x0 = np.random.default_rng(0).standard_normal((2, 3, 13, 17))

    def fn(m):
        x = m.tensor(x0, dtype=getattr(m, dtype), requires_grad=True)
        y = m.nn.functional.interpolate(x, mode=mode, antialias=True, **kw)
        w = (m.arange(y.numel(), dtype=y.dtype).reshape(tuple(y.shape)) % 7).requires_grad_()
        gx, = m.autograd.grad((y * w).sum(), x, create_graph=True)
        gw, = m.autograd.grad((gx * gx).sum(), w)
        g = y.grad_fn
        return (y, gx, gw, type(g).__name__, type(gx.grad_fn).__name__, g._saved_output_size, g._saved_scales_h,
                g._saved_scales_w)
    same(fn, rtol=1e-4 if dtype == "float32" else 1e-7, atol=1e-5 if dtype == "float32" else 1e-9)


@pytest.mark.parametrize("kw", [{"mode": "lanczos", "size": 4}, {"mode": "lanczos", "size": (4, 4), "align_corners": True},
                                {"mode": "nearest", "size": (4, 4), "antialias": True},
                                {"mode": "trilinear", "size": (4, 4, 4), "antialias": True}])
def test_interpolate_antialias_errors(kw):
    x0 = np.zeros((1, 2, 6, 6, 6) if kw["mode"] == "trilinear" else (1, 2, 6, 6))
    raises_same(lambda m: m.nn.functional.interpolate(m.tensor(x0), **kw), exact_msg=True)


# ----- grid_sample on 5-d input ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grid_sample_3d(mode, padding_mode, align_corners, dtype):
    rng = np.random.default_rng(0)
    x0, g0 = rng.standard_normal((2, 3, 4, 5, 6)), rng.uniform(-1.2, 1.2, (2, 3, 4, 2, 3))

    def fn(m):
        x = m.tensor(x0, dtype=getattr(m, dtype), requires_grad=True)
        g = m.tensor(g0, dtype=getattr(m, dtype), requires_grad=True)
        y = m.nn.functional.grid_sample(x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
        w = m.arange(y.numel(), dtype=y.dtype).reshape(tuple(y.shape)) % 5
        gx, gg = m.autograd.grad((y * w).sum(), (x, g), create_graph=True)
        out = [y, gx, gg, type(y.grad_fn).__name__, y.grad_fn._saved_interpolation_mode,
               y.grad_fn._saved_padding_mode]
        if mode == "bilinear" and dtype == "float64":   # float32: sums of ~1e3 terms cancel to ~1
            out.append(m.autograd.grad((gx * gx).sum() + (gg * gg).sum(), (x, g)))
        return out
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {"rtol": 1e-7, "atol": 1e-9}
    same(fn, **tol)


@pytest.mark.parametrize("xs,gs,kw", [((2, 3, 4, 5, 6), (2, 3, 4, 5, 3), {"mode": "bicubic"}),
                                      ((2, 3, 4, 5, 6), (2, 3, 4, 3), {}), ((2, 3, 5, 6), (2, 3, 4, 5, 2), {}),
                                      ((2, 3, 0, 5, 6), (2, 3, 4, 5, 3), {}), ((2, 3, 5), (2, 4, 1), {})])
def test_grid_sample_3d_errors(xs, gs, kw):
    raises_same(lambda m: m.nn.functional.grid_sample(m.zeros(xs), m.zeros(gs), align_corners=False, **kw),
                exact_msg=True)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grid_sample_bicubic(padding_mode, align_corners, dtype):
    """16 taps, each padded on its own; values, both gradients and (float64) their gradients."""
    rng = np.random.default_rng(1)
    x0, g0 = rng.standard_normal((2, 3, 5, 6)), rng.uniform(-1.3, 1.3, (2, 4, 3, 2))

    def fn(m):
        x = m.tensor(x0, dtype=getattr(m, dtype), requires_grad=True)
        g = m.tensor(g0, dtype=getattr(m, dtype), requires_grad=True)
        y = m.nn.functional.grid_sample(x, g, mode="bicubic", padding_mode=padding_mode, align_corners=align_corners)
        w = m.arange(y.numel(), dtype=y.dtype).reshape(tuple(y.shape)) % 5
        gx, gg = m.autograd.grad((y * w).sum(), (x, g), create_graph=True)
        out = [y, gx, gg, type(y.grad_fn).__name__, y.grad_fn._saved_interpolation_mode]
        if dtype == "float64":
            out.append(m.autograd.grad((gx * gx).sum() + (gg * gg).sum(), (x, g)))
        return out
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {"rtol": 1e-7, "atol": 1e-9}
    same(fn, **tol)


@pytest.mark.parametrize("channels", [3, 5])   # PyTorch's AVX kernel (C <= 4) and its generic one
@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("kw", [{"size": (5, 7)}, {"scale_factor": 0.37}, {"size": (5, 7), "align_corners": True},
                                {"size": (20, 9)}, {"scale_factor": (1.05, 0.5)}, {"size": (13, 17)},
                                {"size": (40, 50)}])
def test_interpolate_antialias_uint8(channels, mode, kw):
    if mode == "lanczos" and kw.get("align_corners"):
        pytest.skip("lanczos refuses align_corners")
    u = np.random.default_rng(0).integers(0, 256, (2, channels, 13, 17)).astype(np.uint8)
    same(lambda m: m.nn.functional.interpolate(m.tensor(u), mode=mode, antialias=True, **kw), rtol=0, atol=0)


@pytest.mark.parametrize("d,ks,size", [(2, (2, 2, 2), 3), (2, 2, (3, 3, 3)), (3, (2, 2), 3), (3, 2, (3, 3)),
                                       (2, (2,), (3,)), (3, (2,), (3,)), (2, 2, (3,)), (2, (), 3)])
def test_fractional_max_pool_argument_lengths(d, ks, size):
    shape = (1, 2, 7, 8) if d == 2 else (1, 2, 7, 8, 9)
    raises_same(lambda m: getattr(m.nn.functional, f"fractional_max_pool{d}d")(m.ones(shape), ks, output_size=size),
                exact_msg=True)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("kw", [{"scale_factor": (1.0, 1.5)}, {"scale_factor": (1.05, 1.5)}, {"scale_factor": (1.5, 1.1)},
                                {"size": (5, 9)}, {"size": (5, 9), "align_corners": True},
                                {"scale_factor": (1.05, 0.6), "align_corners": True}])
def test_interpolate_gradient_along_an_unchanged_dim(mode, kw):
    """A dim whose size does not change (whatever scale_factor says): PyTorch's values and gradients."""
    x0 = np.random.default_rng(3).standard_normal((2, 2, 5, 6))

    def fn(m):
        x = m.tensor(x0, requires_grad=True)
        y = m.nn.functional.interpolate(x, mode=mode, **kw)
        return y, _weighted_grad(m, x, y)
    same(fn, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64", "uint8"])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("shape,sf", [((1, 1, 70), 2.3), ((1, 1, 97, 70), 2.3), ((1, 1, 70, 4, 5), 2.3),
                                      ((1, 1, 49, 70), 10 / 7), ((1, 1, 13, 5), 2.3)])
def test_interpolate_nearest_index_precision(dtype, mode, shape, sf):
    """PyTorch's generic nearest kernel computes source indices in the input's precision (float64 for float64),
    its small 2-d kernel and every backward in float32: exact values and gradients."""
    x0 = np.random.default_rng(0).standard_normal(shape) * 50 + 100

    def fn(m):
        x = m.tensor(x0, dtype=getattr(m, dtype), requires_grad=dtype != "uint8")
        y = m.nn.functional.interpolate(x, scale_factor=sf, mode=mode)
        return (y,) if dtype == "uint8" else (y, _weighted_grad(m, x, y))
    same(fn, rtol=0, atol=0)


# ----- the families' op files reach arrays through the device only --------------------------------------------

_SPATIAL_FAMILIES = ("nn_conv", "nn_pool", "nn_pad", "nn_resample", "nn_grid", "_nn_spatial")


@pytest.mark.parametrize("family", _SPATIAL_FAMILIES)
def test_spatial_family_calls_no_array_library(family):
    """ember/ops/<family>.py imports neither NumPy nor a device's kernel file nor the root package: its array work
    goes through the device namespace of the data (``xp``, ``NAMESPACES[type(t._data)]``)."""
    import ast
    import importlib
    import inspect
    mod = importlib.import_module(f"ember.ops.{family}")
    tree = ast.parse(inspect.getsource(mod))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert not any(a.name.split(".")[0] == "numpy" for a in node.names), ast.unparse(node)
        elif isinstance(node, ast.ImportFrom):
            assert not (node.module or "").startswith(("numpy", "devices.cpu")), ast.unparse(node)
            assert not (node.level == 2 and node.module is None and any(a.name[0] != "_" for a in node.names)), \
                ast.unparse(node)   # from .. import <a name of the root package>
        elif isinstance(node, ast.Name):
            assert node.id != "np", f"{family}: line {node.lineno}"


def test_not_differentiable_kernels_have_graph_twins():
    """The kernels only the public functions call (window indices, weight matrices) are in both namespaces; under
    graph_ns they run the device's raw kernel on the Tensor's data."""
    from ember.devices.cpu import namespace as raw
    from ember.ops import graph_ns
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6))
    t = ember.tensor(x)
    args = ((3, 2), (2, 2), ((1, 1), (0, 1)), (1, 1), (4, 3))
    np.testing.assert_array_equal(graph_ns.max_pool_indices(t, *args), raw.max_pool_indices(x, *args))
    for a, b in zip(graph_ns.interpolate_matrices(t, "linear", (9, 4), None, False),
                    raw.interpolate_matrices(x, "linear", (9, 4), None, False)):
        np.testing.assert_array_equal(a, b)
    grid = np.random.default_rng(1).uniform(-1.2, 1.2, (2, 4, 5, 2))
    points, maps = graph_ns.grid_sample_plan(x.shape, ember.tensor(grid), "bilinear", "reflection", False)
    raw_points, raw_maps = raw.grid_sample_plan(x.shape, grid, "bilinear", "reflection", False)
    for (idx, mask, offs), (ridx, rmask, roffs) in zip(points, raw_points):
        assert type(idx) is np.ndarray and isinstance(mask, ember.Tensor) and offs == roffs   # constants as Tensors
        np.testing.assert_array_equal(idx, ridx)
        np.testing.assert_array_equal(mask.numpy(), rmask)
    for m, rm in zip(maps, raw_maps):
        for a, b in zip(m, rm):
            np.testing.assert_array_equal(a.numpy(), b)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_double_backward_through_the_grid(mode):
    """grid_sample's rules are written with xp, so under create_graph its gradients are differentiable in the grid
    and the input: PyTorch's second derivatives."""
    rng = np.random.default_rng(5)
    x0, g0 = rng.standard_normal((1, 2, 5, 6)), rng.uniform(-1.1, 1.1, (1, 3, 4, 2))

    def fn(m):
        x = m.tensor(x0, requires_grad=True)
        g = m.tensor(g0, requires_grad=True)
        y = m.nn.functional.grid_sample(x, g, mode=mode, padding_mode="border", align_corners=False)
        gx, gg = m.autograd.grad((y * y).sum(), (x, g), create_graph=True)
        return m.autograd.grad((gx * gx).sum() + (gg * gg).sum(), (x, g))
    same(fn, rtol=1e-9, atol=1e-10)
