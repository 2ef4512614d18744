"""Op database entries of torch.nn.functional: convolution, pooling, padding, interpolation, grid sampling,
pixel shuffle, unfold/fold (the families of ember/ops/nn_conv.py, nn_pool.py, nn_pad.py, nn_resample.py and
nn_grid.py)."""
from __future__ import annotations

import numpy as np  # noqa: F401

from op_db import FLOAT, OpInfo, Sample, XFail, draw  # noqa: F401

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
    (((2, 2, 5, 4), (3, 2, 2, 3)), {"padding": "same"}),                # even kernel: constant_pad_nd first
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


# ----- pooling ------------------------------------------------------------------------------------------

def _d(shape_kw):
    """Samples of one input from the 'distinct' domain (max pooling: no ties, stable under perturbation)."""
    def make(rng):
        return [Sample((draw(rng, shape, "distinct"),), dict(kw)) for shape, kw in shape_kw]
    return make


def _pool_idx(name):
    """The pooled values, and the indices as a second output (compared, not differentiated)."""
    def op(m, x, **kw):
        out, idx = getattr(m.nn.functional, name)(x, return_indices=True, **kw)
        return out, idx
    return op


MAXPOOL2D = [((2, 3, 6, 5), {"kernel_size": 2}),
             ((2, 2, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
             ((1, 2, 7, 7), {"kernel_size": (2, 3), "stride": (1, 2), "dilation": (2, 1)}),
             ((3, 5, 5), {"kernel_size": 2, "stride": 1}),
             ((0, 2, 4, 4), {"kernel_size": 2})]
MAXPOOL1D = [((2, 3, 7), {"kernel_size": 2}), ((2, 3, 8), {"kernel_size": 3, "stride": 2, "padding": 1,
                                                            "ceil_mode": True, "dilation": 1}),
             ((3, 9), {"kernel_size": 3, "dilation": 2})]
MAXPOOL3D = [((1, 2, 4, 5, 4), {"kernel_size": 2}), ((2, 1, 5, 4, 5), {"kernel_size": (2, 3, 2), "stride": 2,
                                                                        "padding": 1})]
AVGPOOL2D = [((2, 3, 6, 5), {"kernel_size": 2}),
             ((2, 2, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
             ((2, 2, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False,
                             "ceil_mode": True}),
             ((1, 2, 5, 5), {"kernel_size": (2, 3), "divisor_override": 3, "padding": 1}),
             ((3, 4, 5), {"kernel_size": 2, "stride": 1})]
AVGPOOL1D = [((2, 3, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),
             ((3, 8), {"kernel_size": 3, "ceil_mode": True, "count_include_pad": False, "padding": 1})]
AVGPOOL3D = [((1, 2, 4, 5, 4), {"kernel_size": 2}), ((2, 1, 5, 4, 5), {"kernel_size": (2, 3, 2), "stride": 2,
                                                                        "padding": 1})]
ADAPTIVE2D = [((2, 3, 7, 6), {"output_size": (3, 4)}), ((2, 3, 5, 5), {"output_size": 5}),
              ((3, 5, 4), {"output_size": (2, None)}), ((1, 2, 3, 4), {"output_size": (5, 7)}),
              ((2, 3, 5, 4), {"output_size": 1})]   # output size 1: PyTorch's avg computes a mean
ADAPTIVE1D = [((2, 3, 7), {"output_size": 3}), ((3, 5), {"output_size": 5}), ((2, 2, 4), {"output_size": 6}),
              ((2, 3, 7), {"output_size": 1})]
ADAPTIVE3D = [((1, 2, 4, 5, 3), {"output_size": (2, 3, 2)}), ((1, 2, 4, 5, 3), {"output_size": 1})]

POOL_ERRORS = [
    (((1, 1, 4, 4),), {"kernel_size": 2, "padding": 2}),
    (((1, 1, 4, 4),), {"kernel_size": 5}),
    (((4, 4),), {"kernel_size": 2}),
    (((1, 1, 4, 4),), {"kernel_size": 0}),
    (((1, 1, 4, 4),), {"kernel_size": 2, "stride": 0}),
]


def _pool_ops(name, samples, idx=False, ints=True, domain="distinct"):
    mk = _d(samples) if domain == "distinct" else _shapes(*[((s,), kw) for s, kw in samples])
    out = [OpInfo(f"nn.functional.{name}", _f(name), mk, dtypes=F_I if ints else FLOAT)]
    if idx:
        out.append(OpInfo(f"nn.functional.{name}_indices", _pool_idx(name), mk))
    return out


def _ties(rng):
    """Few distinct values, so windows tie: the indices must be PyTorch's (first maximum)."""
    return [Sample((rng.integers(-1, 2, shape).astype(np.float64),), kw) for shape, kw in
            [((2, 3, 6, 6), {"kernel_size": 3, "stride": 2, "padding": 1}), ((2, 2, 5, 7), {"kernel_size": 2}),
             ((1, 2, 6, 6), {"kernel_size": 2, "dilation": 2, "ceil_mode": True, "stride": 3})]]


def _nan_inf(rng):
    """NaN and -inf in the windows: PyTorch's scan keeps the last NaN, and an all -inf window its first position."""
    n, i = np.nan, np.inf
    rows = [[n, 1.0, n, 2.0, -i, -i, 3.0, n], [-i, -i, -i, -i, 1.0, 1.0, n, 2.0]]
    return [Sample((np.array([rows]),), kw) for kw in
            [{"kernel_size": 4}, {"kernel_size": 3, "stride": 1, "padding": 1}, {"kernel_size": 2}]]


def _ties_adaptive(rng):
    return [Sample((rng.integers(-1, 2, (2, 3, 7, 5)).astype(np.float64),), {"output_size": (3, 4)})]


# ----- padding ------------------------------------------------------------------------------------------

def _pad(m, x, **kw):
    return m.nn.functional.pad(x, **kw)


PAD_CONSTANT = [((2, 3, 5), {"pad": (1, 2)}), ((2, 3, 4), {"pad": (2, 1, -1, 3), "value": 1.5}),
                ((1, 2, 3, 4, 3), {"pad": (1, 1, 2, 0, 1, 2, 1, 0)}), ((3,), {"pad": (0, 2)}),
                ((2, 5), {"pad": (-2, -1)}), ((0, 3), {"pad": (1, 1)})]
PAD_MODES = [((2, 3, 5), {"pad": (1, 2)}), ((2, 3, 5, 4), {"pad": (2, 1, -1, 3)}),
             ((1, 2, 3, 4, 5), {"pad": (1, 1, 2, 0, 1, 2)}), ((2, 4), {"pad": (2, 1)}),
             ((3, 4, 4), {"pad": (1, 1, 1, 1)}), ((1, 1, 2, 3, 4), {"pad": (-1, 2, 1, 1, 0, 1)})]
PAD_ERRORS = [((1, 2, 3), {"pad": (3, 3), "mode": "reflect"}), ((1, 2, 3), {"pad": (1,)}),
              ((1, 2, 3), {"pad": (1, 1, 1, 1, 1, 1, 1, 1)}), ((1, 2, 3), {"pad": (1, 1), "mode": "foo"}),
              ((1, 2, 3), {"pad": (4, 2), "mode": "circular"}), ((3,), {"pad": (1, 1), "mode": "reflect"}),
              ((1, 2, 3), {"pad": (1, 1), "mode": "reflect", "value": 2.5}),
              ((2, 3, 0), {"pad": (1, 1), "mode": "replicate"}), ((2, 3), {"pad": (-2, -2)}),
              ((2, 3), {"pad": (1, 1, 1, 1, 1, 1)})]
CIRCULAR = "torch pads circularly through slice copies (CopySlices nodes); ember gathers in one node"


# ----- unfold / fold, shuffles ---------------------------------------------------------------------------

UNFOLD = [((2, 3, 5, 6), {"kernel_size": (2, 3), "padding": 1, "stride": 2}),
          ((3, 5, 6), {"kernel_size": 2, "dilation": 2}), ((1, 2, 4, 4), {"kernel_size": 1})]
FOLD = [((2, 12, 12), {"output_size": (4, 5), "kernel_size": (2, 2)}),
        ((12, 9), {"output_size": 5, "kernel_size": 2, "stride": 2, "padding": 1}),
        ((1, 6, 2), {"output_size": (4, 5), "kernel_size": (1, 3), "dilation": (1, 2), "stride": (2, 1)})]
FOLD_ERRORS = [((2, 12, 7), {"output_size": (4, 5), "kernel_size": (2, 2)}),
               ((2, 11, 12), {"output_size": (4, 5), "kernel_size": (2, 2)}),
               ((2, 12, 12), {"output_size": (4, 5), "kernel_size": 0})]
UNFOLD_ERRORS = [((2, 3, 5), {"kernel_size": 2}), ((1, 2, 3, 3), {"kernel_size": 4}),
                 ((1, 2, 3, 3), {"kernel_size": 2, "stride": 0})]


def _fold(m, x, **kw):
    return m.nn.functional.fold(x, **kw)


# ----- interpolate ---------------------------------------------------------------------------------------

def _interp_samples(mode, shape, linear):
    kws = [{"size": tuple(2 * s - 1 for s in shape[2:])}, {"scale_factor": 1.7}, {"scale_factor": 0.6},
           {"scale_factor": 2.0}, {"scale_factor": 1.7, "recompute_scale_factor": True}]
    if linear:
        kws += [dict(kw, align_corners=True) for kw in kws[:3]]
    return [((shape,), dict(kw, mode=mode)) for kw in kws]


def _interp(m, x, **kw):
    return m.nn.functional.interpolate(x, **kw)


INTERP = {"nearest1d": _interp_samples("nearest", (2, 3, 7), False),
          "nearest2d": _interp_samples("nearest", (2, 2, 5, 6), False),
          "nearest3d": _interp_samples("nearest", (1, 2, 3, 4, 3), False),
          "nearest_exact": _interp_samples("nearest-exact", (2, 2, 5, 6), False),
          "linear": _interp_samples("linear", (2, 3, 7), True),
          "bilinear": _interp_samples("bilinear", (2, 2, 5, 6), True),
          "bicubic": _interp_samples("bicubic", (1, 2, 5, 6), True),
          "trilinear": _interp_samples("trilinear", (1, 2, 3, 4, 3), True),
          "area": [(((2, 2, 5, 6),), {"size": (3, 4), "mode": "area"}),
                   (((2, 2, 7),), {"scale_factor": 0.5, "mode": "area"})]}
INTERP_ERRORS = [(((2, 3, 7),), {"size": 4, "mode": "bilinear"}),
                 (((2, 3, 7),), {"size": 4, "mode": "nearest", "align_corners": True}),
                 (((2, 3, 7),), {"size": 4, "scale_factor": 2.0}), (((2, 3, 7),), {}),
                 (((2, 3, 7),), {"size": (4, 4)}), (((2, 3, 7),), {"size": 4, "mode": "foo"}),
                 (((2, 3, 7),), {"size": 4, "recompute_scale_factor": True})]


# ----- lp pooling, max unpooling ---------------------------------------------------------------------------

def _positive(cases):
    def make(rng):
        return [Sample((draw(rng, shape, "positive"),), dict(kw)) for shape, kw in cases]
    return make


def _unpool(name):
    def op(m, x, indices, **kw):
        return getattr(m.nn.functional, name)(x, m.tensor(indices), **kw)
    return op


def _unpool_samples(cases):
    """Values and the indices max pooling would give (distinct per row: windows do not overlap)."""
    def make(rng):
        out = []
        for in_shape, k, kw in cases:
            import torch
            pool = {1: torch.nn.functional.max_pool1d, 2: torch.nn.functional.max_pool2d,
                    3: torch.nn.functional.max_pool3d}[len(in_shape) - 2]
            _, idx = pool(torch.tensor(draw(rng, in_shape, "distinct")), k, return_indices=True)
            out.append(Sample((draw(rng, tuple(idx.shape)),), dict(kw, indices=idx.numpy(), kernel_size=k)))
        return out
    return make


# ----- grid_sample ------------------------------------------------------------------------------------------

def _grid_sample(m, x, grid, **kw):
    return m.nn.functional.grid_sample(x, grid, **kw)


def _grid_samples(mode):
    def make(rng):
        out = []
        for pm in ("zeros", "border", "reflection"):
            for ac in (False, True):
                out.append(Sample((draw(rng, (2, 3, 5, 6)), rng.uniform(-1.2, 1.2, (2, 4, 3, 2))),
                                  {"mode": mode, "padding_mode": pm, "align_corners": ac}))
        return out
    return make


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
    *_pool_ops("max_pool1d", MAXPOOL1D, idx=True),
    *_pool_ops("max_pool2d", MAXPOOL2D, idx=True),
    *_pool_ops("max_pool3d", MAXPOOL3D, idx=True),
    *_pool_ops("avg_pool1d", AVGPOOL1D, domain="real"),
    *_pool_ops("avg_pool2d", AVGPOOL2D, domain="real"),
    *_pool_ops("avg_pool3d", AVGPOOL3D, domain="real"),
    *_pool_ops("adaptive_avg_pool1d", ADAPTIVE1D, ints=False, domain="real"),
    *_pool_ops("adaptive_avg_pool2d", ADAPTIVE2D, ints=False, domain="real"),
    *_pool_ops("adaptive_avg_pool3d", ADAPTIVE3D, ints=False, domain="real"),
    *_pool_ops("adaptive_max_pool1d", ADAPTIVE1D, idx=True),
    *_pool_ops("adaptive_max_pool2d", ADAPTIVE2D, idx=True),
    *_pool_ops("adaptive_max_pool3d", ADAPTIVE3D, idx=True),
    OpInfo("nn.functional.max_pool1d_nan_inf", _pool_idx("max_pool1d"), _nan_inf, **NO_GRAD),
    OpInfo("nn.functional.max_pool2d_ties", _pool_idx("max_pool2d"), _ties, **NO_GRAD),
    OpInfo("nn.functional.adaptive_max_pool2d_ties", _pool_idx("adaptive_max_pool2d"), _ties_adaptive, **NO_GRAD),
    OpInfo("nn.functional.pad", _pad, _shapes(*[((sh,), kw) for sh, kw in PAD_CONSTANT]), dtypes=F_I),
    OpInfo("nn.functional.pad_reflect", _pad, _shapes(*[((sh,), dict(kw, mode="reflect")) for sh, kw in PAD_MODES]),
           dtypes=F_I),
    OpInfo("nn.functional.pad_replicate", _pad,
           _shapes(*[((sh,), dict(kw, mode="replicate")) for sh, kw in PAD_MODES]), dtypes=F_I),
    OpInfo("nn.functional.pad_circular", _pad,
           _shapes(*[((sh,), dict(kw, mode="circular")) for sh, kw in PAD_MODES]), dtypes=F_I,
           xfails=(XFail("grad_fn", CIRCULAR),)),  # structure: STRUCTURE_DIFFERS in test_ops.py
    _errors("nn.functional.pad_errors", _pad, [((sh,), kw) for sh, kw in PAD_ERRORS]),
    OpInfo("nn.functional.unfold", _f("unfold"), _shapes(*[((sh,), kw) for sh, kw in UNFOLD]), dtypes=F_I),
    OpInfo("nn.functional.fold", _fold, _shapes(*[((sh,), kw) for sh, kw in FOLD]), dtypes=F_I),
    _errors("nn.functional.unfold_errors", _f("unfold"), [((sh,), kw) for sh, kw in UNFOLD_ERRORS]),
    _errors("nn.functional.fold_errors", _fold, [((sh,), kw) for sh, kw in FOLD_ERRORS]),
    OpInfo("nn.functional.pixel_shuffle", _f("pixel_shuffle"),
           _shapes((((2, 8, 3, 3),), {"upscale_factor": 2}), (((4, 2, 3),), {"upscale_factor": 1}),
                   (((2, 1, 9, 2, 2),), {"upscale_factor": 3})), dtypes=F_I),
    OpInfo("nn.functional.pixel_unshuffle", _f("pixel_unshuffle"),
           _shapes((((2, 2, 4, 6),), {"downscale_factor": 2}), (((1, 3, 6),), {"downscale_factor": 3})), dtypes=F_I),
    OpInfo("nn.functional.channel_shuffle", _f("channel_shuffle"),
           _shapes((((2, 6, 3, 3),), {"groups": 2}), (((2, 6, 3),), {"groups": 3}), (((1, 4, 2, 2, 2),), {"groups": 4})),
           dtypes=F_I),
    _errors("nn.functional.shuffle_errors", lambda m, x, fn, **kw: getattr(m.nn.functional, fn)(x, **kw),
            [(((2, 5, 3, 3),), {"fn": "pixel_shuffle", "upscale_factor": 2}),
             (((2, 8, 3, 3),), {"fn": "pixel_shuffle", "upscale_factor": 0}),
             (((8, 3),), {"fn": "pixel_shuffle", "upscale_factor": 2}),
             (((2, 2, 5, 4),), {"fn": "pixel_unshuffle", "downscale_factor": 2}),
             (((2, 5, 3),), {"fn": "channel_shuffle", "groups": 2}),
             (((2, 6, 3),), {"fn": "channel_shuffle", "groups": 0}),
             (((2, 6),), {"fn": "channel_shuffle", "groups": 2})]),
    *[OpInfo(f"nn.functional.interpolate_{k}", _interp, _shapes(*v)) for k, v in INTERP.items()],
    _errors("nn.functional.interpolate_errors", _interp, INTERP_ERRORS),
    OpInfo("nn.functional.upsample", lambda m, x, **kw: m.nn.functional.upsample(x, **kw),
           _shapes((((2, 2, 4, 5),), {"scale_factor": 2.0, "mode": "bilinear", "align_corners": False}))),
    OpInfo("nn.functional.upsample_nearest", lambda m, x, **kw: m.nn.functional.upsample_nearest(x, **kw),
           _shapes((((2, 2, 4, 5),), {"size": (5, 7)}))),
    OpInfo("nn.functional.upsample_bilinear", lambda m, x, **kw: m.nn.functional.upsample_bilinear(x, **kw),
           _shapes((((2, 2, 4, 5),), {"scale_factor": 2.0}))),
    OpInfo("nn.functional.lp_pool2d", _f("lp_pool2d"),
           _positive([((2, 3, 6, 5), {"norm_type": 2, "kernel_size": 2}),
                      ((2, 2, 7, 6), {"norm_type": 3.0, "kernel_size": (3, 2), "stride": 2, "ceil_mode": True})])),
    OpInfo("nn.functional.lp_pool1d", _f("lp_pool1d"),
           _positive([((2, 3, 7), {"norm_type": 2, "kernel_size": 3}),
                      ((3, 8), {"norm_type": 1.5, "kernel_size": 2, "stride": 1})])),
    OpInfo("nn.functional.lp_pool_inf", _f("lp_pool2d"),
           _d([((2, 3, 6, 5), {"norm_type": float("inf"), "kernel_size": 2})])),
    OpInfo("nn.functional.max_unpool2d", _unpool("max_unpool2d"),
           _unpool_samples([((2, 3, 6, 4), 2, {}), ((2, 2, 7, 6), 2, {"output_size": (7, 6)}),
                            ((1, 3, 4, 4), 2, {"stride": 2})])),
    OpInfo("nn.functional.max_unpool1d", _unpool("max_unpool1d"),
           _unpool_samples([((2, 3, 8), 2, {}), ((2, 3, 7), 2, {"output_size": (7,)})])),
    OpInfo("nn.functional.max_unpool3d", _unpool("max_unpool3d"), _unpool_samples([((1, 2, 4, 4, 4), 2, {})])),
    OpInfo("nn.functional.affine_grid", _f("affine_grid"),
           _shapes((((2, 2, 3),), {"size": (2, 3, 4, 5)}), (((2, 2, 3),), {"size": (2, 1, 3, 2), "align_corners": True}),
                   (((2, 3, 4),), {"size": (2, 3, 2, 4, 3), "align_corners": False}),
                   (((1, 2, 3),), {"size": (1, 1, 1, 3), "align_corners": False}))),
    _errors("nn.functional.affine_grid_errors", _f("affine_grid"),
            [(((2, 2, 3),), {"size": (2, 3, 4)}), (((2, 3, 4),), {"size": (2, 3, 4, 5)}),
             (((2, 2, 3),), {"size": (2, 3, 0, 5)})]),
    *[OpInfo(f"nn.functional.grid_sample_{mode}", _grid_sample, _grid_samples(mode), supports_fwd=False)
      for mode in ("bilinear", "nearest")],
    _errors("nn.functional.grid_sample_errors", _grid_sample,
            [(((2, 3, 5, 6), (2, 4, 3, 1)), {}), (((2, 3, 5, 6), (1, 4, 3, 2)), {}),
             (((2, 3, 5, 6), (2, 4, 3, 2)), {"mode": "foo"}), (((2, 3, 5, 6), (2, 4, 3, 2)), {"padding_mode": "foo"}),
             (((2, 3, 5), (2, 4, 2)), {})]),
    _errors("nn.functional.max_pool2d_errors", _f("max_pool2d"), POOL_ERRORS),
    _errors("nn.functional.avg_pool2d_errors", _f("avg_pool2d"), POOL_ERRORS[1:]),
]
HYP_BINARY: list = []
HYP_UNARY: list = []


# ----- pooling with indices, lp_pool3d, fractional max pooling ------------------------------------------------

def _pair_op(fn_path):
    """``m.<fn_path>(x, **kw)``, a (values, indices) pair."""
    def op(m, x, **kw):
        f = m
        for part in fn_path.split("."):
            f = getattr(f, part)
        return f(x, **kw)
    return op


def _frac(name):
    """Fractional max pooling with the samples given (kwarg ``samples``, cast to the input's dtype)."""
    def op(m, x, samples=None, **kw):
        rs = None if samples is None else m.tensor(samples, dtype=x.dtype)
        return getattr(m.nn.functional, name)(x, _random_samples=rs, **kw)
    return op


def _frac_samples(d, cases, domain="distinct"):
    def make(rng):
        out = []
        for shape, kw in cases:
            n = shape[0] if len(shape) == d + 2 else 1
            out.append(Sample((draw(rng, shape, domain),),
                              dict(kw, samples=rng.uniform(0, 1, (n, shape[-d - 1], d)))))
        return out
    return make


FRAC2D = [((2, 3, 9, 8), {"kernel_size": 2, "output_size": 4}),
          ((2, 2, 9, 11), {"kernel_size": (3, 2), "output_size": (5, 7)}),
          ((2, 3, 10, 9), {"kernel_size": 2, "output_ratio": (0.5, 0.7)}),
          ((3, 7, 6), {"kernel_size": 3, "output_size": (1, 4)}),
          ((1, 2, 6, 6), {"kernel_size": 2, "output_size": 5})]     # overlapping windows
FRAC3D = [((2, 2, 6, 7, 5), {"kernel_size": 2, "output_size": 3}),
          ((1, 2, 7, 7, 8), {"kernel_size": (3, 2, 2), "output_size": (4, 5, 6)}),
          ((2, 6, 6, 7), {"kernel_size": 2, "output_ratio": 0.5})]
FRAC2D_ERRORS = [((2, 3, 7, 8), {"kernel_size": 2, "output_size": 7}),
                 ((2, 3, 7, 8), {"kernel_size": 2, "output_size": (3, 3, 3)}),
                 ((2, 3, 7, 8), {"kernel_size": (2, 2, 2), "output_size": 3}),
                 ((2, 3, 7, 8), {"kernel_size": 2}),
                 ((2, 3, 7, 8), {"kernel_size": 2, "output_ratio": (0.5, 0.5, 0.5)}),
                 ((2, 3, 7, 8), {"kernel_size": 2, "output_ratio": 0.5}),
                 ((1, 2, 3, 7, 8), {"kernel_size": 2, "output_size": 3}),
                 ((7, 8), {"kernel_size": 2, "output_size": 3}),
                 ((2, 0, 7, 8), {"kernel_size": 2, "output_size": 3}),
                 ((2, 3, 7, 8), {"kernel_size": 2, "output_size": -1})]


def _frac_bad_samples(d):
    """Samples of the wrong shape: PyTorch's checks of _random_samples."""
    shape = (2, 3, 7, 8) if d == 2 else (2, 3, 7, 8, 6)

    def make(rng):
        x = draw(rng, shape, "distinct")
        return [Sample((x,), {"kernel_size": 2, "output_size": 3, "samples": rng.uniform(0, 1, s)})
                for s in [(1, 3, d), (2, 4, d), (2, 3, d + 1), (2, 3), (3, 3, d), (2, 3, d, 1)]]
    return make


OPS += [
    OpInfo("nn.functional.max_pool1d_with_indices", _pair_op("nn.functional.max_pool1d_with_indices"), _d(MAXPOOL1D),
           dtypes=F_I),
    OpInfo("max_pool1d_with_indices", _pair_op("max_pool1d_with_indices"), _d(MAXPOOL1D), dtypes=F_I),
    OpInfo("nn.functional.max_pool2d_with_indices", _pair_op("nn.functional.max_pool2d_with_indices"),
           _d(MAXPOOL2D), dtypes=F_I),
    OpInfo("nn.functional.max_pool3d_with_indices", _pair_op("nn.functional.max_pool3d_with_indices"),
           _d(MAXPOOL3D)),
    OpInfo("nn.functional.adaptive_max_pool1d_with_indices",
           _pair_op("nn.functional.adaptive_max_pool1d_with_indices"), _d(ADAPTIVE1D)),
    OpInfo("adaptive_max_pool1d", _pair_op("adaptive_max_pool1d"), _d(ADAPTIVE1D)),
    OpInfo("nn.functional.adaptive_max_pool2d_with_indices",
           _pair_op("nn.functional.adaptive_max_pool2d_with_indices"), _d(ADAPTIVE2D)),
    OpInfo("nn.functional.adaptive_max_pool3d_with_indices",
           _pair_op("nn.functional.adaptive_max_pool3d_with_indices"), _d(ADAPTIVE3D)),
    OpInfo("nn.functional.lp_pool3d", _f("lp_pool3d"),
           _positive([((1, 2, 4, 5, 4), {"norm_type": 2, "kernel_size": 2}),
                      ((2, 1, 5, 4, 5), {"norm_type": 1.5, "kernel_size": (2, 3, 2), "stride": 2, "ceil_mode": True}),
                      ((2, 4, 4, 4), {"norm_type": 3.0, "kernel_size": 2, "stride": 1})])),
    OpInfo("nn.functional.lp_pool3d_inf", _f("lp_pool3d"),
           _d([((1, 2, 4, 5, 4), {"norm_type": float("inf"), "kernel_size": 2})])),
    OpInfo("nn.functional.fractional_max_pool2d", _frac("fractional_max_pool2d"), _frac_samples(2, FRAC2D)),
    OpInfo("nn.functional.fractional_max_pool2d_indices",
           lambda m, x, **kw: _frac("fractional_max_pool2d")(m, x, return_indices=True, **kw),
           _frac_samples(2, FRAC2D)),
    OpInfo("nn.functional.fractional_max_pool2d_with_indices", _frac("fractional_max_pool2d_with_indices"),
           _frac_samples(2, FRAC2D[:2])),
    OpInfo("nn.functional.fractional_max_pool3d", _frac("fractional_max_pool3d"), _frac_samples(3, FRAC3D)),
    OpInfo("nn.functional.fractional_max_pool3d_indices",
           lambda m, x, **kw: _frac("fractional_max_pool3d")(m, x, return_indices=True, **kw),
           _frac_samples(3, FRAC3D)),
    OpInfo("nn.functional.fractional_max_pool3d_with_indices", _frac("fractional_max_pool3d_with_indices"),
           _frac_samples(3, FRAC3D[:1])),
    _errors("nn.functional.fractional_max_pool2d_errors", _frac("fractional_max_pool2d"),
            [((sh,), kw) for sh, kw in FRAC2D_ERRORS]),
    OpInfo("nn.functional.fractional_max_pool2d_sample_errors", _frac("fractional_max_pool2d"),
           _frac_bad_samples(2), **NO_GRAD),
    OpInfo("nn.functional.fractional_max_pool3d_sample_errors", _frac("fractional_max_pool3d"),
           _frac_bad_samples(3), **NO_GRAD),
    _errors("nn.functional.fractional_max_pool3d_errors", _frac("fractional_max_pool3d"),
            [(((2, 3, 7, 8, 6),), {"kernel_size": 2, "output_size": 7}),
             (((2, 3, 7, 8, 6),), {"kernel_size": 2, "output_size": (3, 3)}),
             (((2, 3, 7, 8, 6),), {"kernel_size": (2, 2), "output_size": 3}),
             (((2, 3, 7, 8, 6),), {"kernel_size": 2, "output_ratio": (0.5, 0.5)}),
             (((3, 7, 8),), {"kernel_size": 2, "output_size": 3}),
             (((2, 0, 7, 8, 6),), {"kernel_size": 2, "output_size": 3})]),
]


# ----- interpolate with antialias (bilinear, bicubic, lanczos) ----------------------------------------------------

def _aa_samples(mode):
    kws = [{"size": (3, 4)}, {"scale_factor": 0.45}, {"scale_factor": (1.05, 0.5)}, {"size": (9, 5)}]
    if mode != "lanczos":
        kws.append({"size": (3, 4), "align_corners": True})
    return [(((2, 2, 7, 9),), dict(kw, mode=mode, antialias=True)) for kw in kws]


# sample 2 keeps the height (scale 1.05): PyTorch's forward copies that dim but its backward applies the
# antialiasing weights for the scale given, so the gradient is not the forward's derivative (ember follows PyTorch)
_AA_NOT_DERIVATIVE = "PyTorch's antialiased backward weights a dim its forward copied (scale_factor 1.05, same size)"
OPS += [
    *[OpInfo(f"nn.functional.interpolate_{m}_antialias", _interp, _shapes(*_aa_samples(m)),
             xfails=tuple(XFail(t, _AA_NOT_DERIVATIVE, "2:") for t in ("gradcheck", "gradgrad_numeric", "fwd_ad")))
      for m in ("bilinear", "bicubic", "lanczos")],
    _errors("nn.functional.interpolate_antialias_errors", _interp,
            [(((2, 3, 7),), {"size": 4, "mode": "linear", "antialias": True}),
             (((2, 3, 7, 6),), {"size": 4, "mode": "nearest", "antialias": True}),
             (((2, 3, 7, 6),), {"size": 4, "mode": "lanczos"}),
             (((2, 3, 7, 6),), {"size": 4, "mode": "lanczos", "antialias": True, "align_corners": True}),
             (((2, 3, 7),), {"size": 4, "mode": "lanczos", "antialias": True})]),
]


# ----- grid_sample on 5-d input (3-d sampling) ----------------------------------------------------------------

def _grid_samples3d(mode):
    def make(rng):
        out = []
        for pm in ("zeros", "border", "reflection"):
            for ac in (False, True):
                out.append(Sample((draw(rng, (2, 2, 3, 4, 5)), rng.uniform(-1.2, 1.2, (2, 2, 3, 2, 3))),
                                  {"mode": mode, "padding_mode": pm, "align_corners": ac}))
        return out
    return make


OPS += [
    *[OpInfo(f"nn.functional.grid_sample3d_{mode}", _grid_sample, _grid_samples3d(mode), supports_fwd=False)
      for mode in ("bilinear", "nearest")],
    _errors("nn.functional.grid_sample3d_errors", _grid_sample,
            [(((2, 3, 4, 5, 6), (2, 3, 4, 5, 3)), {"mode": "bicubic"}), (((2, 3, 4, 5, 6), (2, 3, 4, 3)), {}),
             (((2, 3, 4, 5, 6), (2, 3, 4, 5, 2)), {}), (((2, 3, 4, 5, 6), (1, 3, 4, 5, 3)), {}),
             (((2, 3, 0, 5, 6), (2, 3, 4, 5, 3)), {}), (((2, 3, 5), (2, 4, 1)), {})]),
]
OPS.append(OpInfo("nn.functional.grid_sample_bicubic", _grid_sample, _grid_samples("bicubic"), supports_fwd=False))
OPS += [OpInfo(f"max_pool{d}d", (lambda d: lambda m, x, **kw: getattr(m, f"max_pool{d}d")(x, **kw))(d), _d(cases),
               dtypes=F_I if d < 3 else FLOAT)
        for d, cases in ((1, MAXPOOL1D), (2, MAXPOOL2D), (3, MAXPOOL3D))]
