"""Gradients at ties and kinks, where PyTorch picks a convention: ember must pick the same one."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

DATA = [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]

CASES = {
    "max_all": lambda m, x: x.max(),
    "min_all": lambda m, x: x.min(),
    "amax_dim": lambda m, x: x.amax(1),
    "amin_dims": lambda m, x: x.amin((0, 1)),
    "max_dim": lambda m, x: x.max(1).values,
    "maximum": lambda m, x: m.maximum(x, m.full_like(x, 2.0)),
    "minimum": lambda m, x: m.minimum(x, m.full_like(x, 2.0)),
    "clamp": lambda m, x: x.clamp(2.0, 3.0),
    "relu": lambda m, x: (x - 2.0).relu(),
    "abs": lambda m, x: (x - 2.0).abs(),
    "norm_zero": lambda m, x: (x * 0).norm(),
    # ties the op database cannot test (central differences fail where one index takes the whole gradient)
    "cummax": lambda m, x: x.cummax(1).values,
    "cummin": lambda m, x: x.cummin(1).values,
    "cummax_dim0": lambda m, x: x.t().cummax(0).values,
    "aminmax": lambda m, x: sum(m.aminmax(x, dim=1)),
    "sort": lambda m, x: x.sort(1).values,
    "topk": lambda m, x: x.topk(2, 1).values,
    "kthvalue": lambda m, x: x.kthvalue(2, 1).values,
    "median_all": lambda m, x: x.median(),
    "median_dim": lambda m, x: x.median(1).values,
    "mode": lambda m, x: x.mode(1).values,
    "scatter_reduce_amax": lambda m, x: m.zeros(2, 2, dtype=x.dtype).scatter_reduce(
        1, m.tensor([[0, 1, 1], [0, 0, 1]]), x, "amax", include_self=False),
    "prod_zero": lambda m, x: (x - 2.0).prod(1),
    "cumprod_zero": lambda m, x: (x - 2.0).cumprod(1),
}
# At the norm's singular point PyTorch's second derivative is nan (0/0); ember's rule masks it to 0.
FIRST_ORDER_ONLY = {"norm_zero"}


def _np(t):
    return None if t is None else np.array(t.detach().clone().tolist())


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_and_second_order_at_ties(name):
    grads = []
    for m in (torch, ember):
        x = m.tensor(DATA, dtype=m.float64, requires_grad=True)
        y = CASES[name](m, x)
        w = m.tensor(np.linspace(0.5, 1.5, y.numel()).reshape(tuple(y.shape)).tolist(), dtype=m.float64)
        g, = m.autograd.grad((y * w).sum(), x, create_graph=True)
        gg = None
        if g.requires_grad and name not in FIRST_ORDER_ONLY:
            gg = m.autograd.grad((g * g).sum(), x, allow_unused=True)[0]
        grads.append((_np(g), g.requires_grad, _np(gg)))
    (tg, trg, tgg), (eg, erg, egg) = grads
    np.testing.assert_allclose(eg, tg, rtol=1e-12, atol=1e-12)
    if tgg is None or egg is None:
        # piecewise-linear ops: the gradient is constant in x, so no second derivative (or zero)
        assert tgg is None or not tgg.any()
        assert egg is None or not egg.any()
    else:
        np.testing.assert_allclose(egg, tgg, rtol=1e-12, atol=1e-12)


NAN_DATA = [[1.0, float("nan"), 3.0], [2.0, 2.0, float("nan")]]
NAN_CASES = ["max_all", "min_all", "max_dim", "amax_dim", "maximum", "minimum", "relu", "abs", "cummax",
             "cummin", "sort", "topk", "median_dim", "clamp"]


@pytest.mark.parametrize("name", NAN_CASES)
def test_first_order_with_nan(name):
    grads = []
    for m in (torch, ember):
        x = m.tensor(NAN_DATA, dtype=m.float64, requires_grad=True)
        y = CASES[name](m, x)
        g, = m.autograd.grad(y.sum(), x)
        grads.append(_np(g))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-12, equal_nan=True)
