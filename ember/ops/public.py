"""The op layer's public namespace: every name ``import torch`` gives that is not a package of its own (not nn,
optim, utils, ...): dtypes, Tensor, grad modes, creation, random and every registered op, under PyTorch's names.

ember's root package re-exports all of it; nn, optim, utils and func, which sit above the ops and below the root,
import it as ``from ..ops import public as torch`` (the root imports them, so they cannot import the root).
"""
from __future__ import annotations

from .._device import device
from .._dtype import (bfloat16, bool, double, dtype, float, float16, float32, float64, get_default_dtype, half, int,
                      int8, int16, int32, int64, long, promote_types, result_type, set_default_dtype, short, uint8,
                      can_cast, finfo, iinfo, layout, strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr,
                      sparse_bsc, channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format,
                      complex64, complex128, cfloat, cdouble, complex32, chalf,
                      float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu, uint16, uint32,
                      uint64)
from .._tensor import Size, Tensor
from .._storage import TypedStorage, UntypedStorage, is_storage
from ..autograd import enable_grad, inference_mode, no_grad, set_grad_enabled
from ..autograd.grad_mode import is_grad_enabled, is_inference_mode_enabled
from ..autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled
from .._settings import (are_deterministic_algorithms_enabled, get_float32_matmul_precision,
                         get_num_interop_threads, get_num_threads, is_deterministic_algorithms_warn_only_enabled,
                         set_float32_matmul_precision, set_num_interop_threads, set_num_threads,
                         use_deterministic_algorithms, set_deterministic_debug_mode, get_deterministic_debug_mode,
                         set_warn_always, is_warn_always_enabled, set_flush_denormal, init_num_threads,
                         compiled_with_cxx11_abi)
from .._formatting import set_printoptions
from .utility import *  # noqa: F401,F403  (typename, is_nonzero, range, set_default_device, compile, ...)
from .linalg.lowrank import pca_lowrank, svd_lowrank
from .linalg.lobpcg import lobpcg
from .creation import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, ShortTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor, arange, as_tensor,
                       asarray, empty, empty_like, eye, from_file, from_numpy, frombuffer, full, full_like, linspace, logspace,
                       ones, ones_like, tensor, tril_indices, triu_indices, zeros, zeros_like)
from .creation import bartlett_window, blackman_window, hamming_window, hann_window, kaiser_window
from .random import (Generator, _sample_dirichlet, _standard_gamma, bernoulli, binomial, default_generator,
                     get_rng_state, initial_seed, manual_seed, multinomial, normal, poisson, rand, rand_like, randint,
                     randint_like, randn, randn_like, random, randperm, seed, set_rng_state)
from . import EXPORTS as _EXPORTS
from .. import linalg, special  # noqa: F401  (the torch.linalg and torch.special namespaces)

# Every op is registered once, in its family file (ember/ops); its public names come from there.
globals().update(_EXPORTS)


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def _check(input, op: str) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input


def is_floating_point(input: Tensor) -> bool:
    return _check(input, "is_floating_point").is_floating_point()


def numel(input: Tensor) -> int:
    return _check(input, "numel").numel()
