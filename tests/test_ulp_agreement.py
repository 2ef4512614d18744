"""float32 elementwise functions agree with PyTorch's CPU kernels in the last bit (issue 16, item 7).

PyTorch computes exp, log, sin, tanh, ... of float32 with MKL's VML (within an ulp, mostly correctly rounded),
and sinh, cosh, atanh, exp2, asinh, acosh element by element with the C library on short tensors; NumPy's own
float32 kernels are an ulp off in up to 55% of inputs. ember computes in float64 and rounds once, or calls the
C library where PyTorch does. Each test here pins, per function, the fraction of inputs on short tensors (15
elements, PyTorch's scalar path) whose float32 value differs from PyTorch's: 0.1% or less where ember computes
what PyTorch computes; where PyTorch's MKL kernels are not correctly rounded (sin: 5% of inputs) the bound is
the distance of PyTorch itself from the correctly rounded value. bench/ulp_agreement.py measures the lot.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

N = 3000
SHORT = 15


def _pos(lo, hi):
    return ("log", lo, hi)


# name: (domain, largest % of inputs differing from PyTorch on short float32 tensors). The bounds above 0.1
# are PyTorch's own distance from the correctly rounded value (its MKL kernels), measured on 60,000 inputs
# (bench/ulp_agreement.py), with room for sampling noise; before this change all but rsqrt's, reciprocal's and
# erfinv's were exceeded.
CASES = {
    "tanh": ((-10, 10), 0.25),
    "exp": ((-80, 80), 2.0),
    "exp2": ((-120, 120), 0.1),
    "expm1": ((-20, 20), 3.0),
    "log": (_pos(1e-30, 1e30), 1.5),
    "log2": (_pos(1e-30, 1e30), 0.1),
    "log10": (_pos(1e-30, 1e30), 0.1),
    "log1p": ((-1, 100), 0.5),
    "sin": ((-100, 100), 7.0),
    "cos": ((-100, 100), 7.0),
    "tan": ((-10, 10), 21.0),
    "asin": ((-1, 1), 7.5),
    "acos": ((-1, 1), 11.0),
    "atan": ((-100, 100), 2.5),
    "sinh": ((-80, 80), 0.1),
    "cosh": ((-80, 80), 0.1),
    "asinh": ((-1e4, 1e4), 0.1),
    "acosh": (_pos(1, 1e4), 0.1),
    "atanh": ((-1, 1), 0.1),
    "sigmoid": ((-20, 20), 0.1),
    "rsqrt": (_pos(1e-30, 1e30), 0.1),
    "reciprocal": (_pos(1e-30, 1e30), 0.1),
    "erfinv": ((-1, 1), 0.1),
    "digamma": ((-20, 40), 0.15),   # PyTorch's float32 arithmetic (0.06%: its logf and fused steps)
}
F_CASES = {   # their scalar path: the C library's expf, expm1f, log1pf, tanhf inside PyTorch's formula
    "silu": ((-20, 20), 0.1),
    "elu": ((-20, 20), 0.1),
    "selu": ((-20, 20), 0.1),
    "softplus": ((-20, 20), 0.1),
    "mish": ((-20, 20), 0.1),
    "hardswish": ((-5, 5), 0.1),
}


def _inputs(domain, seed):
    rng = np.random.default_rng(seed)
    if domain[0] == "log":
        return np.exp(rng.uniform(np.log(domain[1]), np.log(domain[2]), N)).astype(np.float32)
    return rng.uniform(domain[0], domain[1], N).astype(np.float32)


def _short(fn, lib, x):
    return np.concatenate([fn(lib.tensor(x[i:i + SHORT])).detach().numpy() for i in range(0, x.size, SHORT)])


def _percent_differing(a, b):
    same = (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))
    return float(np.mean(~same) * 100)


@pytest.mark.parametrize("name", sorted(CASES))
def test_short_float32_agrees_with_torch(name):
    domain, bound = CASES[name]
    x = _inputs(domain, sorted(CASES).index(name))
    with np.errstate(all="ignore"):
        d = _percent_differing(_short(getattr(ember, name), ember, x), _short(getattr(torch, name), torch, x))
    assert d <= bound, f"{name}: {d:.3f}% of float32 inputs differ from torch (bound {bound}%)"


@pytest.mark.parametrize("name", sorted(F_CASES))
def test_short_float32_activation_agrees_with_torch(name):
    """torch.nn.functional's activations, short tensors (PyTorch's scalar path)."""
    domain, bound = F_CASES[name]
    x = _inputs(domain, 100 + sorted(F_CASES).index(name))
    d = _percent_differing(_short(getattr(ember.nn.functional, name), ember, x),
                           _short(getattr(torch.nn.functional, name), torch, x))
    assert d <= bound, f"F.{name}: {d:.3f}% of float32 inputs differ from torch (bound {bound}%)"


def test_short_float32_gelu_tanh_agrees_with_torch():
    x = _inputs((-10, 10), 200)
    gelu = ember.nn.functional.gelu
    d = _percent_differing(_short(lambda t: gelu(t, approximate="tanh"), ember, x),
                           _short(lambda t: torch.nn.functional.gelu(t, approximate="tanh"), torch, x))
    assert d <= 0.5   # 0.2%: PyTorch's x * x * x and float constants, glibc's tanhf


@pytest.mark.parametrize("name,domain", [("tanh", (-10, 10)), ("sigmoid", (-20, 20))])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_short_gradient_agrees_with_torch(name, domain, dtype):
    """tanh's and sigmoid's backward kernels: tanh's 1 - out^2 is one fused multiply-add in PyTorch."""
    x = _inputs(domain, 7)
    if dtype == "float16":
        x = x.astype(np.float16)

    def grads(lib):
        out = []
        for i in range(0, x.size, SHORT):
            t = lib.tensor(x[i:i + SHORT], requires_grad=True)
            getattr(lib, name)(t).sum().backward()
            out.append(t.grad.numpy())
        return np.concatenate(out)
    e, t = grads(ember), grads(torch)
    if dtype == "float16":
        assert np.mean(e.view(np.uint16) != t.view(np.uint16)) * 100 <= 0.1
    else:
        assert _percent_differing(e, t) <= (0.25 if name == "tanh" else 0.1)


def test_seed_003_tanh_gradient_allclose_prints_what_torch_prints():
    """Seed snippet 003: allclose(x.grad, 2x (1 - tanh(x^2)^2)) is False under torch (tanh(4.7471) correctly
    rounded, its backward's 1 - out^2 fused), so it must be under ember; the bits of y and x.grad match."""
    def run(lib):
        lib.manual_seed(0)
        x = lib.randn(3, requires_grad=True)
        y = lib.tanh(x ** 2)
        y.sum().backward()
        ok = lib.allclose(x.grad, 2 * x * (1 - lib.tanh(x ** 2) ** 2))
        return ok, y.detach().numpy(), x.grad.numpy()
    ok_e, y_e, g_e = run(ember)
    ok_t, y_t, g_t = run(torch)
    assert ok_t is False and ok_e is False
    assert y_e.view(np.uint32).tolist() == y_t.view(np.uint32).tolist()
    assert g_e.view(np.uint32).tolist() == g_t.view(np.uint32).tolist()


def test_create_graph_nodes_are_pytorchs():
    """tanh's and sigmoid's first derivatives are nodes of their own under create_graph, with their gradients."""
    for name, node in (("tanh", "TanhBackwardBackward0"), ("sigmoid", "SigmoidBackwardBackward0")):
        res = {}
        for lib in (ember, torch):
            x = lib.tensor([0.3, -1.2, 2.0], dtype=lib.float64, requires_grad=True)
            (g,) = lib.autograd.grad(getattr(lib, name)(x).sum(), x, create_graph=True)
            (gg,) = lib.autograd.grad((g * g).sum(), x)
            res[lib.__name__] = (type(g.grad_fn).__name__, gg.numpy())
        assert res["ember"][0] == res["torch"][0] == node
        np.testing.assert_allclose(res["ember"][1], res["torch"][1], rtol=1e-12)


_SIMD_SCRIPT = r"""
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
import ember
rng = np.random.default_rng(3)
x = rng.uniform(-30, 30, 20000).astype(np.float32)
p = np.exp(rng.uniform(-40, 40, 20000)).astype(np.float32)
out = []
for name in ("exp", "expm1", "sin", "cos", "tan", "atan", "tanh", "sinh", "cosh", "asinh", "sigmoid"):
    out.append(getattr(ember, name)(ember.tensor(x)).numpy())
for name in ("log", "log2", "log10", "log1p", "acosh"):
    out.append(getattr(ember, name)(ember.tensor(p)).numpy())
for name in ("asin", "acos", "atanh"):
    out.append(getattr(ember, name)(ember.tensor(x / 30)).numpy())
sys.stdout.buffer.write(np.concatenate(out).tobytes())
"""


def test_float32_results_do_not_depend_on_numpys_simd_dispatch():
    """The float64-then-round kernels give the same float32 bits with NumPy forced down to AVX2 (or to its
    baseline) as with its native (here AVX-512) dispatch."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    outs = []
    for disable in (None, "X86_V4 AVX512_ICL AVX512_SPR", "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"):
        env = dict(os.environ)
        env.pop("NPY_DISABLE_CPU_FEATURES", None)
        if disable:
            env["NPY_DISABLE_CPU_FEATURES"] = disable
        r = subprocess.run([sys.executable, "-c", _SIMD_SCRIPT, root], env=env, capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr.decode()[-2000:]
        outs.append(r.stdout)
    assert outs[0] == outs[1] == outs[2]


def test_float16_erf_is_pytorchs_polynomial_on_every_value():
    """PyTorch's float16 erf is its vectorized float32 polynomial (Abramowitz-Stegun 7.1.26), not the correctly
    rounded value (19% of float16 inputs differ): every finite float16, short and long tensors."""
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    x = x[np.isfinite(x)]
    t = torch.erf(torch.from_numpy(x)).numpy().view(np.uint16)
    assert (ember.erf(ember.tensor(x)).numpy().view(np.uint16) == t).all()
    short = np.concatenate([ember.erf(ember.tensor(x[i:i + SHORT])).numpy() for i in range(0, 6000, SHORT)])
    assert (short.view(np.uint16) == t[:short.size]).all()
