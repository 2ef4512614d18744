"""ember: PyTorch's autograd, rebuilt in readable Python on NumPy.

``import ember as torch`` runs autograd-centric PyTorch code unchanged.
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import _dtype
from ._device import device
from ._dtype import (bool, double, dtype, float, float16, float32, float64, get_default_dtype, half, int,
                     int8, int16, int32, int64, long, promote_types, result_type, set_default_dtype, short, uint8)
from ._tensor import Size, Tensor
from . import autograd
from .autograd import enable_grad, inference_mode, no_grad, set_grad_enabled
from .autograd.grad_mode import is_grad_enabled, is_inference_mode_enabled
from . import ops
from .autograd import forward_ad
from . import cuda, nn
from ._creation import (BoolTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor,
                        arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like,
                        linspace, ones, ones_like, tensor, zeros, zeros_like)
from ._random import (Generator, bernoulli, default_generator, get_rng_state, initial_seed, manual_seed,
                      multinomial, normal, rand, rand_like, randint, randint_like, randn, randn_like, random,
                      randperm, seed, set_rng_state)
from .ops.elementwise import (abs, add, allclose, bitwise_and, bitwise_not, bitwise_or, clamp, clamp_max,
                              clamp_min, cos, div, eq, floor_divide, remainder, equal, exp, ge, gt, isclose, isfinite, isinf, isnan, le,
                              log, logical_not, lt, maximum, minimum, mul, ne, neg, pow, relu, round, sigmoid,
                              sign, sin, sqrt, sub, tanh, where)
from .ops.linalg import bmm, dot, matmul, mm, mv, outer
from .ops.reduction import amax, amin, argmax, argmin, max, mean, min, norm, std, sum
from .ops.shape import (broadcast_to, cat, clone, flatten, permute, reshape, squeeze, stack, t, transpose,
                        unsqueeze)

clip = clamp
concat = concatenate = cat
absolute = abs
multiply = mul
subtract = sub
divide = true_divide = div
negative = neg


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def numel(input: Tensor) -> int:
    return input.numel()


def any(input: Tensor, dim=None, keepdim=False) -> Tensor:
    return input.any(dim, keepdim)


def all(input: Tensor, dim=None, keepdim=False) -> Tensor:
    return input.all(dim, keepdim)
