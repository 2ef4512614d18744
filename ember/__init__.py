"""ember: PyTorch's autograd, rebuilt in readable Python on NumPy.

``import ember as torch`` runs autograd-centric PyTorch code unchanged.
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import _malloc
_malloc.tune()   # glibc heap thresholds for array-heavy backward passes (see ember/_malloc.py)
from . import _dtype
from ._device import device
from ._dtype import (bool, double, dtype, float, float16, float32, float64, get_default_dtype, half, int,
                     int8, int16, int32, int64, long, promote_types, result_type, set_default_dtype, short, uint8,
                     can_cast, finfo, iinfo, layout, strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr,
                     sparse_bsc)
from ._tensor import Size, Tensor
from . import autograd
from .autograd import enable_grad, inference_mode, no_grad, set_grad_enabled
from .autograd.grad_mode import is_grad_enabled, is_inference_mode_enabled
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled
from . import ops
from .autograd import forward_ad
from . import backends, cuda, nn
from ._settings import (are_deterministic_algorithms_enabled, get_float32_matmul_precision,
                        get_num_interop_threads, get_num_threads, is_deterministic_algorithms_warn_only_enabled,
                        set_float32_matmul_precision, set_num_interop_threads, set_num_threads,
                        use_deterministic_algorithms)
from .ops.creation import (
    BoolTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    tensor,
    zeros,
    zeros_like,
    logspace,
    tril_indices,
    triu_indices,
    asarray,
    frombuffer)
from .ops.random import (
    Generator,
    bernoulli,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    multinomial,
    normal,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    random,
    randperm,
    seed,
    set_rng_state)
from .ops import EXPORTS as _EXPORTS

# Every op is registered once, in its family file (ember/ops); its public names come from there.
globals().update(_EXPORTS)
from . import linalg, special  # noqa: E402  (the torch.linalg and torch.special namespaces)
from .ops.shape import (channels_last, channels_last_3d, contiguous_format, memory_format,  # noqa: E402
                        preserve_format)
from . import optim  # noqa: E402  (torch.optim; its optimizers load on first use)


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

from . import utils  # noqa: E402  (torch.utils.checkpoint; built on autograd)
from .serialization import load, save  # noqa: E402  (PyTorch's checkpoint format; zipfile/pickle load lazily)
from ._safetensors import load_safetensors, save_safetensors  # noqa: E402  (the safetensors package, lazily)
from . import func  # noqa: E402,F401  (torch.func.functional_call; a small module)
from .ops.foreach import *  # noqa: E402,F401,F403  (torch._foreach_*: loops over the per-tensor ops)
