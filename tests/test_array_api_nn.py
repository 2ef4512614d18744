"""The nn layers on an array-API device: each layer, made on the CPU and moved with ``.to('strict')``, gives the
CPU's outputs, input gradients and parameter gradients (array-api-strict registered as device 'strict', as in
tests/test_array_api_device.py, which runs the op database there)."""
from __future__ import annotations

import copy

import numpy as np
import pytest

array_api_strict = pytest.importorskip("array_api_strict")

import ember  # noqa: E402
from ember import devices  # noqa: E402

NAME = "strict"
nn = ember.nn


@pytest.fixture(scope="module", autouse=True)
def _registered():
    """(Re)registered here: another test module may have taken the name."""
    devices.register(NAME, array_api_strict)


def _seq(*shape):
    return ember.randn(*shape, dtype=ember.float64)


# name -> (make the layer, make its inputs); float64 so that the two devices agree to ~1e-10
LAYERS = {
    "Linear": (lambda: nn.Linear(4, 3), lambda: (_seq(2, 4),)),
    "Bilinear": (lambda: nn.Bilinear(3, 4, 2), lambda: (_seq(2, 3), _seq(2, 4))),
    "Conv1d": (lambda: nn.Conv1d(2, 3, 3, padding=1), lambda: (_seq(2, 2, 7),)),
    "Conv2d": (lambda: nn.Conv2d(2, 4, 3, stride=2, padding=1, groups=2), lambda: (_seq(1, 2, 6, 5),)),
    "Conv3d": (lambda: nn.Conv3d(1, 2, 2), lambda: (_seq(1, 1, 3, 4, 3),)),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(2, 3, 3, stride=2), lambda: (_seq(1, 2, 3, 4),)),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(3), lambda: (_seq(5, 3),)),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(2), lambda: (_seq(3, 2, 4, 4),)),
    "LayerNorm": (lambda: nn.LayerNorm(4), lambda: (_seq(2, 3, 4),)),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), lambda: (_seq(2, 4, 3),)),
    "InstanceNorm1d": (lambda: nn.InstanceNorm1d(3, affine=True), lambda: (_seq(2, 3, 5),)),
    "RMSNorm": (lambda: nn.RMSNorm(4), lambda: (_seq(3, 4),)),
    "Embedding": (lambda: nn.Embedding(10, 3), lambda: (ember.tensor([[1, 2, 9], [0, 2, 2]]),)),
    "EmbeddingBag": (lambda: nn.EmbeddingBag(10, 3, mode="mean"), lambda: (ember.tensor([[1, 2, 9], [0, 2, 2]]),)),
    "RNN": (lambda: nn.RNN(3, 4, batch_first=True), lambda: (_seq(2, 5, 3),)),
    "LSTM": (lambda: nn.LSTM(3, 4, num_layers=2), lambda: (_seq(5, 2, 3),)),
    "GRU": (lambda: nn.GRU(3, 4, bidirectional=True), lambda: (_seq(5, 2, 3),)),
    "MultiheadAttention": (lambda: nn.MultiheadAttention(8, 2, batch_first=True),
                           lambda: (_seq(2, 3, 8), _seq(2, 4, 8), _seq(2, 4, 8))),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0),
                                lambda: (_seq(3, 2, 8),)),
    "MaxPool2d": (lambda: nn.MaxPool2d(2), lambda: (_seq(1, 2, 4, 6),)),
    "AvgPool2d": (lambda: nn.AvgPool2d(2, stride=1), lambda: (_seq(1, 2, 4, 5),)),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d((2, 3)), lambda: (_seq(1, 2, 5, 7),)),
    "Upsample": (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), lambda: (_seq(1, 2, 3, 4),)),
    "PReLU": (lambda: nn.PReLU(3), lambda: (_seq(2, 3, 4),)),
    "Softmax": (lambda: nn.Softmax(dim=1), lambda: (_seq(2, 5),)),
    "GELU": (lambda: nn.GELU(), lambda: (_seq(2, 5),)),
    "Dropout(eval)": (lambda: nn.Dropout(0.5).eval(), lambda: (_seq(2, 5),)),
    "Flatten": (lambda: nn.Flatten(), lambda: (_seq(2, 3, 4),)),
    "CrossEntropyLoss": (lambda: nn.CrossEntropyLoss(), lambda: (_seq(4, 5), ember.tensor([1, 0, 4, 2]))),
    "MSELoss": (lambda: nn.MSELoss(), lambda: (_seq(4, 5), _seq(4, 5))),
}
# layers whose kernels ember/devices/common does not have yet (strict xfails: remove one when it passes)
NOT_YET: dict = {
}


def _run(make, inputs, device):
    ember.manual_seed(0)
    layer = make()
    layer = layer.double() if hasattr(layer, "double") else layer
    xs = inputs()
    if device != "cpu":
        layer = copy.deepcopy(layer).to(device)
        xs = tuple(x.to(device) for x in xs)
    xs = tuple(x.requires_grad_() if x.is_floating_point() else x for x in xs)
    out = layer(*xs)
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if isinstance(o, ember.Tensor)]
    outs = [o for o in outs if o.requires_grad]
    ember.autograd.backward([(o * o).sum() for o in outs])
    grads = [x.grad for x in xs if x.is_floating_point()] + [p.grad for p in layer.parameters()]
    return [o.detach() for o in outs], grads


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=NOT_YET[n]))
                                  if n in NOT_YET else n for n in LAYERS])
def test_a_layer_on_the_device_matches_the_cpu(name):
    make, inputs = LAYERS[name]
    (ref_out, ref_grads), (out, grads) = _run(make, inputs, "cpu"), _run(make, inputs, NAME)
    assert len(out) == len(ref_out) and len(grads) == len(ref_grads)
    for what, got, ref in [("output", a, b) for a, b in zip(out, ref_out)] + \
                          [("gradient", a, b) for a, b in zip(grads, ref_grads)]:
        assert (got is None) == (ref is None), what
        if got is None:
            continue
        assert got.device.type == NAME, f"{name}: a {what} left the device"
        assert got.dtype == ref.dtype and got.shape == ref.shape, f"{name}: {what} {got.dtype}{got.shape}"
        np.testing.assert_allclose(got.cpu().numpy(), ref.numpy(), rtol=1e-9, atol=1e-10, err_msg=f"{name}: {what}")
