"""Op database entries of torch.nn.functional: convolution, pooling, padding, interpolation, grid sampling, pixel shuffle, unfold/fold."""
from __future__ import annotations

import numpy as np  # noqa: F401

from op_db import FLOAT, OpInfo, Sample, draw  # noqa: F401

NO_GRAD = dict(supports_grad=False, supports_gradgrad=False, supports_fwd=False)
F_I = FLOAT + ("int64",)


def _shapes(*cases):
    """Samples from (shapes, kwargs) pairs, values from the 'real' domain."""
    def make(rng):
        return [Sample(tuple(draw(rng, s) for s in shapes), dict(kw)) for shapes, kw in cases]
    return make


def _f(name):
    """``m.nn.functional.<name>(*tensors, **kwargs)``."""
    return lambda m, *ts, **kw: getattr(m.nn.functional, name)(*ts, **kw)


def _errors(name, fn, cases, dtypes=FLOAT):
    return OpInfo(name, fn, _shapes(*cases), dtypes=dtypes, **NO_GRAD)


# ----- convolution --------------------------------------------------------------------------------------

CONV1D = [
    (((2, 3, 7), (4, 3, 3)), {}),
    (((2, 3, 7), (4, 3, 3), (4,)), {"stride": 2, "padding": 1}),
    (((1, 4, 9), (6, 2, 3), (6,)), {"stride": 2, "padding": 2, "dilation": 2, "groups": 2}),
    (((3, 6), (2, 3, 2)), {}),                                       # unbatched
    (((2, 2, 5), (3, 2, 3)), {"padding": "same"}),
    (((2, 2, 5), (3, 2, 3)), {"padding": "valid"}),
    (((2, 4, 6), (4, 1, 3)), {"groups": 4, "padding": (1,)}),        # depthwise
    (((0, 2, 5), (3, 2, 3)), {}),                                    # empty batch
]
CONV2D = [
    (((2, 3, 5, 6), (4, 3, 3, 2)), {}),
    (((2, 3, 6, 5), (4, 3, 3, 3), (4,)), {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2)}),
    (((1, 4, 5, 5), (4, 2, 2, 2), (4,)), {"groups": 2, "stride": 2}),
    (((3, 5, 4), (2, 3, 3, 3)), {"padding": 1}),                      # unbatched
    (((2, 2, 5, 5), (3, 2, 3, 3)), {"padding": "same", "dilation": 2}),
    (((2, 3, 4, 4), (2, 3, 1, 1), (2,)), {}),                         # 1x1
]
CONV3D = [
    (((1, 2, 4, 5, 4), (3, 2, 2, 3, 2)), {}),
    (((2, 2, 4, 4, 5), (2, 1, 3, 2, 3), (2,)), {"stride": (1, 2, 2), "padding": 1, "groups": 2}),
]
CONVT1D = [
    (((2, 4, 5), (4, 3, 3)), {}),
    (((2, 4, 5), (4, 3, 3), (6,)), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
    (((2, 3, 4), (3, 2, 2), (2,)), {"stride": 3, "dilation": 2, "output_padding": 1}),
    (((3, 4), (3, 2, 3)), {"padding": 1}),                            # unbatched
]
CONVT2D = [
    (((2, 3, 4, 3), (3, 2, 3, 2)), {}),
    (((1, 4, 3, 4), (4, 1, 2, 3), (2,)), {"stride": (2, 3), "padding": (1, 0), "groups": 2, "dilation": (2, 1),
                                          "output_padding": (1, 2)}),
]
CONVT3D = [
    (((1, 2, 3, 2, 3), (2, 2, 2, 2, 2), (2,)), {"stride": 2, "padding": 1}),
]

CONV_ERRORS = [
    (((2, 4, 8), (5, 3, 3)), {}),                                     # channels
    (((2, 4, 8), (5, 4, 3)), {"groups": 2}),                          # out channels not divisible
    (((2, 4, 8), (5, 4, 9)), {}),                                     # kernel bigger than input
    (((2, 4, 8), (5, 4, 3, 3)), {}),                                  # weight rank
    (((8,), (5, 4, 3)), {}),                                          # input rank
    (((2, 4, 8), (5, 4, 3)), {"stride": 2, "padding": "same"}),
    (((2, 4, 8), (5, 4, 3)), {"padding": "foo"}),
    (((2, 4, 8), (5, 4, 3)), {"stride": 0}),
    (((2, 4, 8), (5, 4, 3)), {"padding": -1}),
    (((2, 4, 8), (5, 4, 3), (4,)), {}),                               # bias size
    (((2, 4, 8), (5, 4, 3)), {"groups": 0}),
]
CONVT_ERRORS = [
    (((2, 4, 8), (4, 3, 3)), {"output_padding": 1}),
    (((2, 4, 8), (5, 3, 3)), {}),
]


def _conv_dtype_mismatch(m, a, b):
    return m.nn.functional.conv1d(a, b.double())


OPS = [
    OpInfo("nn.functional.conv1d", _f("conv1d"), _shapes(*CONV1D), dtypes=F_I),
    OpInfo("nn.functional.conv2d", _f("conv2d"), _shapes(*CONV2D), dtypes=F_I),
    OpInfo("nn.functional.conv3d", _f("conv3d"), _shapes(*CONV3D)),
    OpInfo("nn.functional.conv_transpose1d", _f("conv_transpose1d"), _shapes(*CONVT1D), dtypes=F_I),
    OpInfo("nn.functional.conv_transpose2d", _f("conv_transpose2d"), _shapes(*CONVT2D)),
    OpInfo("nn.functional.conv_transpose3d", _f("conv_transpose3d"), _shapes(*CONVT3D)),
    _errors("nn.functional.conv1d_errors", _f("conv1d"), CONV_ERRORS),
    _errors("nn.functional.conv_transpose1d_errors", _f("conv_transpose1d"), CONVT_ERRORS),
    OpInfo("nn.functional.conv1d_dtype_errors", _conv_dtype_mismatch, _shapes((((2, 4, 8), (5, 4, 3)), {})),
           dtypes=("float32",), **NO_GRAD),
]
HYP_BINARY: list = []
HYP_UNARY: list = []
