"""torch.binomial, torch.poisson, torch._standard_gamma and torch._sample_dirichlet against PyTorch: the samplers
whose rejection loops draw a varying number of values per element. Same seed, same inputs: the very same numbers
(and the generator left in the same state, checked by a draw after)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import ember  # noqa: E402
from test_random import SEEDS, same  # noqa: E402

DTYPES = ["float32", "float64"]
_rng = np.random.default_rng(18)
COUNTS = np.concatenate([_rng.integers(0, 30, 40), _rng.integers(0, 3000, 40),
                         [0, 1, 5.5, 1e6, 2e7, 17.3, -3, np.inf, np.inf, np.inf]]).astype(float)
PROBS = np.concatenate([_rng.random(40), _rng.random(40) * 0.02, [0.5, 0.999, 1e-6, 0.3, 0.7, 0.5, 0.4, 0.3, 0.7, 0]])
ALPHAS = np.concatenate([_rng.random(20) * 0.2, _rng.random(20), _rng.random(20) * 10, _rng.random(10) * 1e4,
                         [0, 1e-8, 1, 3, 1e9, -1, np.nan, 1e-40, np.inf]])


def _sampled(fn, *arrays, dtype, seed):
    def case(T):
        T.manual_seed(seed)
        out = fn(T)(*(T.tensor(a, dtype=getattr(T, dtype)) for a in arrays))
        return [out, T.rand(3)]
    return case


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_binomial(dtype, seed):
    same(_sampled(lambda T: T.binomial, COUNTS, PROBS, dtype=dtype, seed=seed))


@pytest.mark.parametrize("dtype", DTYPES)
def test_binomial_shapes_and_generator(dtype):
    def case(T):
        g = T.Generator().manual_seed(7)
        c = T.tensor([[10.0, 200.0, 3.0], [50.0, 1.0, 1000.0]], dtype=getattr(T, dtype))
        p = T.tensor([0.2, 0.6, 0.95], dtype=getattr(T, dtype))
        out = [T.binomial(c, p, generator=g), T.binomial(c.t(), p[:2], g)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # count broadcast up: PyTorch resizes its output, with a warning
            out.append(T.binomial(c[:1, :1], p, g))
        out.append(T.binomial(c[:, :0], p[:0], g))
        return out + [T.rand(2, generator=g)]
    same(case)


def test_binomial_resize_warns():
    with pytest.warns(UserWarning, match="resized since it had shape"):
        ember.binomial(ember.tensor([5.0]), ember.tensor([0.5, 0.2]))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_standard_gamma(dtype, seed):
    same(_sampled(lambda T: T._standard_gamma, ALPHAS, dtype=dtype, seed=seed))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7,), (5, 7), (2, 3, 33), (4, 1), (3, 100)])
def test_sample_dirichlet(dtype, seed, shape):
    conc = np.random.default_rng(len(shape)).random(shape) * np.geomspace(0.05, 1000, shape[-1])
    same(_sampled(lambda T: T._sample_dirichlet, conc, dtype=dtype, seed=seed))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", DTYPES + ["float16", "bfloat16"])
def test_poisson(dtype, seed):
    rates = np.concatenate([_rng.random(20) * 5, _rng.random(20) * 100, [0, 6e4, 9.99, 10, 1e-30]])
    same(_sampled(lambda T: lambda x: T.poisson(x).float(), rates, dtype=dtype, seed=seed))   # bfloat16: via float32


@pytest.mark.parametrize("dtype", DTYPES)
def test_standard_gamma_gradient(dtype):
    """StandardGammaBackward0: grad * _standard_gamma_grad(alpha, sample), bit for bit (all three regimes)."""
    alphas = np.concatenate([_rng.random(50) * 0.5, _rng.random(50) * 8, _rng.random(50) * 100 + 8, [1e-3, 1, 8]])

    def case(T):
        T.manual_seed(5)
        a = T.tensor(alphas, dtype=getattr(T, dtype), requires_grad=True)
        y = T._standard_gamma(a)
        w = T.linspace(-1, 2, len(alphas), dtype=getattr(T, dtype))
        (g,) = T.autograd.grad((y * w).sum(), a)
        return [y, g, type(y.grad_fn).__name__]
    same(case)


def test_standard_gamma_grad_has_no_derivative():
    for T in (torch, ember):
        a = T.tensor([0.5, 2.0], requires_grad=True)
        r = T._standard_gamma_grad(a, T.tensor([0.3, 2.5]))
        assert type(r.grad_fn).__name__ == "StandardGammaGradBackward0"
        with pytest.raises(NotImplementedError, match="the derivative for '_standard_gamma_grad' is not implemented"):
            r.sum().backward()


@pytest.mark.parametrize("dtype", DTYPES)
def test_dirichlet_grad(dtype):
    """torch._dirichlet_grad bit for bit over many Beta samples (all four regimes), and no derivative of its own."""
    rng = np.random.default_rng(19)
    n = 400
    alpha = np.concatenate([rng.random(n) * 3, rng.random(n) * 30 + 6, rng.random(n) * 0.5])
    total = alpha + np.concatenate([rng.random(n) * 3, rng.random(n) * 30 + 6, rng.random(n) * 10])
    x = np.clip(rng.beta(alpha, total - alpha), 1e-30, 1 - 1e-7)

    def case(T):
        a = T.tensor(alpha, dtype=getattr(T, dtype), requires_grad=True)
        r = T._dirichlet_grad(T.tensor(x, dtype=getattr(T, dtype)), a, T.tensor(total, dtype=getattr(T, dtype)))
        with pytest.raises(RuntimeError, match="derivative for aten::_dirichlet_grad is not implemented"):
            r.sum().backward()
        return r
    same(case)


def test_gradients():
    """binomial and _sample_dirichlet have no derivative (backward raises); _standard_gamma and poisson have."""
    def case(T):
        c = T.tensor([5.0, 20.0], requires_grad=True)
        p = T.tensor([0.3, 0.9], requires_grad=True)
        a = T.tensor([0.5, 2.0], requires_grad=True)
        out = []
        for y in (T.binomial(c, p), T._sample_dirichlet(a)):
            out.append((y.requires_grad, type(y.grad_fn).__name__))
            with pytest.raises(RuntimeError) as e:
                y.sum().backward()
            out.append(str(e.value))
        y = T.poisson(a)
        out.append(type(y.grad_fn).__name__)
        (g,) = T.autograd.grad(y.sum(), a)
        return out + [g]
    same(case)


ERRORS = [
    (lambda T: T.binomial(T.tensor([1.0]), T.tensor([0.5], dtype=T.float64)), RuntimeError),
    (lambda T: T.binomial(T.tensor([1.0], dtype=T.float64), T.tensor([0.5])), RuntimeError),
    (lambda T: T.binomial(T.tensor([1]), T.tensor([0.5])), ValueError),
    (lambda T: T.binomial(T.tensor([1.0]), T.tensor([1])), ValueError),
    (lambda T: T.binomial(T.tensor([1.0]).half(), T.tensor([0.5]).half()), NotImplementedError),
    (lambda T: T.binomial(T.tensor([1.0]), 0.5), TypeError),
    (lambda T: T.binomial(T.tensor([1.0]), T.tensor([0.5]), 3), TypeError),
    (lambda T: T._standard_gamma(T.tensor([1])), NotImplementedError),
    (lambda T: T._standard_gamma(T.tensor([1.0]).half()), NotImplementedError),
    (lambda T: T._sample_dirichlet(T.tensor([1])), NotImplementedError),
    (lambda T: T._sample_dirichlet(T.tensor([1.0]).bfloat16()), NotImplementedError),
    (lambda T: T.poisson(T.tensor([1.0], dtype=T.int32)), NotImplementedError),
    (lambda T: T.poisson(T.tensor([-1.0])), RuntimeError),
    (lambda T: T._standard_gamma_grad(T.tensor([1.0]), T.tensor([1.0], dtype=T.float64)), RuntimeError),
    (lambda T: T._standard_gamma_grad(T.tensor([1]), T.tensor([1])), NotImplementedError),
    (lambda T: T._dirichlet_grad(T.tensor([0.5]), T.tensor([1.0]), T.tensor([2.0], dtype=T.float64)), RuntimeError),
    (lambda T: T._dirichlet_grad(T.tensor([1]), T.tensor([1]), T.tensor([2])), NotImplementedError),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    fn, exc = ERRORS[i]
    with pytest.raises(exc) as want:
        fn(torch)
    with pytest.raises(exc) as got:
        fn(ember)
    assert str(got.value) == str(want.value)
