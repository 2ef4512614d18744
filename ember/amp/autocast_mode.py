"""torch.amp.autocast_mode: autocast regions, their state (``torch.is_autocast_enabled`` and the other
``torch.*autocast*`` functions) and ``custom_fwd``/``custom_bwd``.

Inside ``autocast("cpu")`` the ops of ATen's CPU autocast lists (aten/src/ATen/autocast_mode.cpp, as
torch 2.13 registers them for the AutocastCPU key) cast their floating tensor arguments first, with
PyTorch's policies:

* ``lower``  (``lower_precision_fp``): to the autocast dtype (bfloat16 by default, or float16);
* ``fp32``:  to float32;
* ``promote``: to the widest floating dtype among the arguments (float32 over the autocast dtype).

float64 tensors and tensors of other devices are never cast. The casts are ordinary differentiable
``Tensor.to`` calls (``ToCopyBackward0`` nodes, as PyTorch's), so gradients reach float32 parameters in
float32; a float32 leaf that requires grad is cast once per region and reused (PyTorch's weight cache).
As with PyTorch's dispatcher, an op's own body runs with autocast excluded, and ops outside the lists run
unchanged: ember's composites that PyTorch builds from a listed op (einsum from bmm, ...) are listed
under that op's policy (``ROUTES``).

How ember hooks them: an op is a Python function, called through its registered names, Tensor methods
and other modules' globals. Entering the first autocast region swaps the ``__code__`` of each listed
function for a small entry that casts and then calls a copy of the original; leaving the last region
swaps it back. Every reference to the function sees the swap, and nothing at all runs per op while no
autocast region is active (no flag to test on the hot path). The swap is process-wide; the state it
reads (enabled, dtype, cache) is thread-local, as PyTorch's, so another thread's ops run uncast.
"""
from __future__ import annotations

import collections.abc
import functools
import importlib
import inspect
import threading
import types
import warnings
from typing import Any, Callable

from .. import _dtype
from .._state import code_swaps
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, is_inference_mode_enabled
from ..ops._registry import EXPORTS, METHODS, SUBMODULES

__all__ = ["autocast_decorator", "autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

# ----- the device types PyTorch knows, and their autocast defaults -------------------------------------

_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                 "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
# get_autocast_dtype's default per device type (by name: bfloat16 is resolved when it is asked for)
_DEFAULT_DTYPE = {"cpu": "bfloat16", "cuda": "float16", "ipu": "float16", "xpu": "float16", "hip": "float16",
                  "maia": "bfloat16", "xla": "bfloat16", "mps": "float16", "hpu": "bfloat16", "mtia": "float16",
                  "privateuseone": "float16"}
_AVAILABLE = frozenset(_DEFAULT_DTYPE) - {"hip"}


def _device_type(device_type: Any, fn: str, position: int = 1) -> str:
    """The device type named by ``device_type`` ('cpu', 'cuda:0' -> 'cuda'), with PyTorch's errors."""
    if not isinstance(device_type, str):
        raise TypeError(f"{fn}(): argument 'device_type' (position {position}) must be str, not "
                        f"{type(device_type).__name__}")
    t = device_type.split(":", 1)[0]
    if t not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: "
                           f"{device_type}")
    return t


def _resolve(name_or_dtype):
    if not isinstance(name_or_dtype, str):
        return name_or_dtype
    dt = getattr(_dtype, name_or_dtype, None)
    if dt is None:   # bfloat16 is being added to ember/_dtype.py on another branch
        raise NotImplementedError(f"ember has no {name_or_dtype} yet: pass dtype=torch.float16 to autocast")
    return dt


class _State(threading.local):
    """The autocast state of one thread (PyTorch's is thread-local too)."""

    def __init__(self):
        self.enabled: dict = {}    # device type -> bool
        self.dtype: dict = {}      # device type -> dtype set by set_autocast_dtype
        self.nesting = 0
        self.cache_enabled = True
        self.cache: dict = {}      # id(float32 leaf) -> (leaf, its cast): the weight cache
        self.excluded = 0          # > 0 inside a listed op's body (PyTorch's ExcludeDispatchKeyGuard)


_state = _State()
_lock = threading.Lock()
_cpu_threads = [0]   # threads with CPU autocast enabled: the listed ops are swapped while it is > 0


# ----- torch.* autocast state functions ------------------------------------------------------------------

def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can be used on ``device_type`` (torch.amp.is_autocast_available)."""
    return _device_type(device_type, "_is_autocast_available") in _AVAILABLE


def _check_bool(value, fn: str, position: int) -> None:
    if type(value) is not bool:
        raise TypeError(f"{fn}(): argument 'enabled' (position {position}) must be bool, not {type(value).__name__}")


_NO_ARG = object()


def is_autocast_enabled(device_type: str = _NO_ARG) -> bool:
    """Whether autocast is enabled for ``device_type`` (no argument: 'cuda', PyTorch's legacy form)."""
    t = "cuda" if device_type is _NO_ARG else _device_type(device_type, "is_autocast_enabled")
    return _state.enabled.get(t, False)


def set_autocast_enabled(device_type, enabled=None) -> None:
    """``set_autocast_enabled(device_type, enabled)``, or the legacy ``set_autocast_enabled(enabled)`` for 'cuda'."""
    if enabled is None:
        _check_bool(device_type, "set_autocast_enabled", 1)
        device_type, enabled = "cuda", device_type
    else:
        t = _device_type(device_type, "set_autocast_enabled")
        _check_bool(enabled, "set_autocast_enabled", 2)
        device_type = t
    was = _state.enabled.get(device_type, False)
    _state.enabled[device_type] = enabled
    if device_type == "cpu" and was != enabled:
        with _lock:
            _cpu_threads[0] += 1 if enabled else -1
            _sync_swap(_cpu_threads[0] > 0)


def get_autocast_dtype(device_type: str):
    """The dtype autocast lowers to on ``device_type`` (bfloat16 for 'cpu', float16 for 'cuda', ...)."""
    t = _device_type(device_type, "get_autocast_dtype")
    dt = _state.dtype.get(t)
    if dt is not None:
        return dt
    if t not in _DEFAULT_DTYPE:
        raise RuntimeError("unsupported scalarType")
    return _resolve(_DEFAULT_DTYPE[t])


def set_autocast_dtype(device_type: str, dtype) -> None:
    t = _device_type(device_type, "set_autocast_dtype")
    if not isinstance(dtype, _dtype.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    _state.dtype[t] = dtype


def is_autocast_cache_enabled() -> bool:
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    if type(enabled) is not bool:
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
    _state.cache_enabled = enabled


def clear_autocast_cache() -> None:
    """Drop the cached casts of float32 weights (autocast does this on leaving its outermost region)."""
    _state.cache.clear()


def autocast_increment_nesting() -> int:
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    _state.nesting -= 1
    return _state.nesting


def _deprecated_alias(old: str, new: str, fn: Callable) -> Callable:
    """PyTorch's per-device forms (``torch.is_autocast_cpu_enabled()``): the same, with its DeprecationWarning."""
    @functools.wraps(fn)
    def alias(*args):
        warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=2)
        return fn(*args)
    alias.__name__ = alias.__qualname__ = old.partition("(")[0]
    return alias


def _per_device(device: str, prefix: str):
    """``is_autocast_<prefix>_enabled``, ``set_autocast_<prefix>_enabled``, ``get/set_autocast_<prefix>_dtype``."""
    def is_enabled():
        return is_autocast_enabled(device)

    def set_enabled(enabled):
        _check_bool(enabled, f"set_autocast_{prefix}_enabled", 1)
        set_autocast_enabled(device, enabled)

    def get_dtype():
        return get_autocast_dtype(device)

    def set_dtype(dtype):
        set_autocast_dtype(device, dtype)

    return (_deprecated_alias(f"is_autocast_{prefix}_enabled()", f"is_autocast_enabled('{device}')", is_enabled),
            _deprecated_alias(f"set_autocast_{prefix}_enabled(enabled)", f"set_autocast_enabled('{device}', enabled)",
                              set_enabled),
            _deprecated_alias(f"get_autocast_{prefix}_dtype()", f"get_autocast_dtype('{device}')", get_dtype),
            _deprecated_alias(f"set_autocast_{prefix}_dtype(dtype)", f"set_autocast_dtype('{device}', dtype)",
                              set_dtype))


is_autocast_cpu_enabled, set_autocast_cpu_enabled, get_autocast_cpu_dtype, set_autocast_cpu_dtype = \
    _per_device("cpu", "cpu")
_, _, get_autocast_gpu_dtype, set_autocast_gpu_dtype = _per_device("cuda", "gpu")
is_autocast_ipu_enabled, set_autocast_ipu_enabled, get_autocast_ipu_dtype, set_autocast_ipu_dtype = \
    _per_device("ipu", "ipu")
is_autocast_xla_enabled, set_autocast_xla_enabled, get_autocast_xla_dtype, set_autocast_xla_dtype = \
    _per_device("xla", "xla")

# the names torch exports (``[n for n in dir(torch) if 'autocast' in n]``, less torch.autocast itself)
TORCH_FUNCTIONS = (
    "autocast_decrement_nesting", "autocast_increment_nesting", "clear_autocast_cache", "get_autocast_cpu_dtype",
    "get_autocast_dtype", "get_autocast_gpu_dtype", "get_autocast_ipu_dtype", "get_autocast_xla_dtype",
    "is_autocast_cache_enabled", "is_autocast_cpu_enabled", "is_autocast_enabled", "is_autocast_ipu_enabled",
    "is_autocast_xla_enabled", "set_autocast_cache_enabled", "set_autocast_cpu_dtype", "set_autocast_cpu_enabled",
    "set_autocast_dtype", "set_autocast_enabled", "set_autocast_gpu_dtype", "set_autocast_ipu_dtype",
    "set_autocast_ipu_enabled", "set_autocast_xla_dtype", "set_autocast_xla_enabled")


# ----- the autocast context manager ----------------------------------------------------------------------

def autocast_decorator(autocast_instance: "autocast", func: Callable) -> Callable:
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)
    return decorate_autocast


class autocast:
    """A region (context manager or decorator) where the ops of PyTorch's autocast lists run in the op-specific
    dtype: see the module docstring. ``device_type``: 'cpu' or 'cuda' ('cuda' warns and disables itself: ember
    has no CUDA, as a CPU-only PyTorch); ``dtype``: the lower precision (default ``get_autocast_dtype``);
    ``enabled=False`` turns autocast off inside an enclosing region; ``cache_enabled``: the weight cache."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(self.device):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{self.device}'")
        supported = [_resolve("bfloat16") if hasattr(_dtype, "bfloat16") else "torch.bfloat16", _dtype.float16]
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            if self.device == "cuda":
                # as if amp_definitely_not_available(): CUDA's autocast lists are not built (issue 21)
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype not in supported:
                name = self.device.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of " + ", ".join(map(str, supported))
                              + " currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        st = _state
        self.prev_cache_enabled = st.cache_enabled
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = st.dtype.get(_device_type(self.device, "get_autocast_dtype"))
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        # Drop the cache when we exit to a nesting level that's outside any instance of autocast.
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        _state.dtype[_device_type(self.device, "set_autocast_dtype")] = self.prev_fastdtype
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func: Callable) -> Callable:
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                f"Did you mean to use autocast as a context manager? For example:\n"
                f"    with torch.autocast(device_type=...):\n"
                f"        output = model(input)")
        return autocast_decorator(self, func)


class _UnmanagedAutocast(autocast):
    pass


def _enter_autocast(*vals):
    mode = _UnmanagedAutocast(*vals)
    mode.__enter__()
    return mode


def _exit_autocast(mode) -> None:
    mode.__exit__(None, None, None)


# ----- custom_fwd / custom_bwd -----------------------------------------------------------------------------

def _cast(value, device_type: str, dtype):
    """Casts Tensors and containers of Tensors (strings and NumPy arrays pass through)."""
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not _dtype.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)) or type(value).__module__ == "numpy":
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        return type(value)(iterable) if isinstance(value, (list, tuple)) else iterable
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for the ``forward`` of a custom ``autograd.Function``: with ``cast_inputs``, inside an autocast
    region its floating tensor inputs are cast to that dtype and it runs with autocast off."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for the ``backward`` of a custom ``autograd.Function``: it runs with the autocast state its
    ``forward`` (decorated with ``custom_fwd``) ran with."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd


# ----- the op lists ----------------------------------------------------------------------------------------
# PyTorch 2.13's AutocastCPU registrations (aten/src/ATen/autocast_mode.cpp), by ATen name. Each name is looked
# up among ember's registered ops: torch.<name>, torch.nn.functional.<name>, Tensor.<name>; linalg_<x> and
# fft_<x> as torch.linalg.<x> and torch.fft.<x>; ATEN_NAMES maps the rest. Names ember lacks are skipped.
LOWER = ("conv1d", "conv2d", "conv3d", "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "_addmm_activation",
         "addbmm", "linear", "_convolution", "matmul", "conv_tbc", "mkldnn_rnn_layer", "conv_transpose1d",
         "conv_transpose2d", "conv_transpose3d", "prelu", "scaled_dot_product_attention",
         "_native_multi_head_attention")
FP32 = ("avg_pool3d", "binary_cross_entropy", "grid_sampler", "polar", "prod", "quantile", "nanquantile", "stft",
        "cdist", "grid_sampler_2d", "_grid_sampler_2d_cpu_fallback", "grid_sampler_3d", "trace", "view_as_complex",
        "cholesky", "cholesky_inverse", "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr", "pinverse",
        "max_pool3d", "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d", "reflection_pad1d", "reflection_pad2d",
        "replication_pad1d", "replication_pad2d", "replication_pad3d", "mse_loss", "cosine_embedding_loss",
        "nll_loss", "nll_loss2d", "hinge_embedding_loss", "poisson_nll_loss", "smooth_l1_loss", "cross_entropy_loss",
        "l1_loss", "huber_loss", "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss",
        "multi_margin_loss", "ctc_loss", "kl_div", "multilabel_margin_loss", "binary_cross_entropy_with_logits",
        "fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn", "fft_rfft", "fft_irfft",
        "fft_rfft2", "fft_irfft2", "fft_rfftn", "fft_irfftn", "fft_hfft", "fft_ihfft", "linalg_cond",
        "linalg_matrix_rank", "linalg_solve", "linalg_cholesky", "linalg_svdvals", "linalg_eigvals",
        "linalg_eigvalsh", "linalg_inv", "linalg_householder_product", "linalg_tensorinv", "linalg_tensorsolve",
        "fake_quantize_per_tensor_affine", "geqrf", "_lu_with_info", "qr", "svd", "triangular_solve",
        "fractional_max_pool2d", "fractional_max_pool3d", "adaptive_max_pool3d", "multilabel_margin_loss_forward",
        "linalg_qr", "linalg_cholesky_ex", "linalg_svd", "linalg_eig", "linalg_eigh", "linalg_lstsq",
        "linalg_inv_ex")
PROMOTE = ("stack", "cat", "index_copy")

# ATen names whose Python entry point has another name (torch.nn.functional.cross_entropy calls
# torch._C._nn.cross_entropy_loss, torch.lu calls torch._lu_with_info, torch.concat is cat, ...)
ATEN_NAMES = {"cross_entropy_loss": ("F.cross_entropy",), "grid_sampler": ("F.grid_sample",),
              "_lu_with_info": ("lu",), "cat": ("concat", "concatenate"),
              "adaptive_max_pool3d": ("F.adaptive_max_pool3d_with_indices",),
              "fractional_max_pool2d": ("F.fractional_max_pool2d_with_indices",),
              "fractional_max_pool3d": ("F.fractional_max_pool3d_with_indices",),
              "max_unpool2d": ("F.max_unpool1d",)}   # F.max_unpool1d is max_unpool2d on an unsqueezed input


def _arg(args, kwargs, name: str, pos: int, default=None):
    return kwargs[name] if name in kwargs else args[pos] if len(args) > pos else default


def _pad_policy(args, kwargs):
    """F.pad reaches reflection_pad1d/2d and replication_pad1d/2d/3d (fp32) in those modes."""
    mode, n = _arg(args, kwargs, "mode", 2, "constant"), len(_arg(args, kwargs, "pad", 1, ())) // 2
    return "fp32" if (mode == "reflect" and n in (1, 2)) or (mode == "replicate" and n in (1, 2, 3)) else None


def _max_pool3d_policy(args, kwargs):
    """max_pool3d is listed; max_pool3d_with_indices (return_indices=True) is not."""
    return None if _arg(args, kwargs, "return_indices", 6, False) else "fp32"


def _unweighted_loss(args, kwargs):
    """F.mse_loss and F.l1_loss reach their ATen op (fp32) only without ``weight`` (with it PyTorch computes them
    from elementwise ops in Python)."""
    return "fp32" if _arg(args, kwargs, "weight", 5) is None else None


def _inner_policy(args, kwargs):
    """inner is dot for two vectors, a product with a 0-d operand, and tensordot (mm) otherwise."""
    a, b = (_arg(args, kwargs, "input", 0), _arg(args, kwargs, "other", 1))
    return None if (a.dim() == b.dim() == 1) or a.dim() == 0 or b.dim() == 0 else "lower"


def _chain_matmul_policy(args, kwargs):
    """chain_matmul of one matrix is a copy; of more, mm."""
    return "lower" if len(args) >= 2 else None


def _einsum_policy(args, kwargs):
    """einsum reaches bmm (lower) only where two operands contract a label (one in both and not in the output);
    one operand is reduced in place, and operands that share no summed label are multiplied (mul)."""
    if args and isinstance(args[0], str):
        eq = args[0].replace(" ", "")
        ops = args[1] if len(args) == 2 and isinstance(args[1], (list, tuple)) else args[1:]
        lhs, arrow, rhs = eq.partition("->")
        terms = [set(t.replace(".", "")) for t in lhs.split(",")]
        if not arrow:   # implicit output: the labels that appear once
            rhs = "".join(c for c in set(lhs) if c.isalpha() and lhs.count(c) == 1)
        out = set(rhs.replace(".", ""))
    else:   # sublist format: op, sublist, op, sublist, ..., [output sublist]
        ops, terms = args[0::2][:len(args) // 2], [set(sub) for sub in args[1::2][:len(args) // 2]]
        out = set(args[-1]) if len(args) % 2 else {x for x in set().union(*terms)
                                                     if sum(x in t for t in terms) == 1}
    if len(ops) < 2:
        return None
    shared = {c for c in set().union(*terms) if sum(c in t for t in terms) >= 2}
    return "lower" if shared - out else None


def _matrix_power_policy(args, kwargs):
    """matrix_power multiplies (matmul: lower) for n >= 2, inverts (fp32) and then multiplies for n <= -2; n = 0, 1,
    -1 are eye, a copy, the inverse."""
    n = _arg(args, kwargs, "n", 1)
    return "lower" if n >= 2 else "fp32_lower" if n <= -2 else "fp32" if n == -1 else None


def _local_response_norm_policy(args, kwargs):
    """local_response_norm pools with avg_pool3d (fp32) for inputs of 4 or more dims, avg_pool2d otherwise."""
    return "fp32" if _arg(args, kwargs, "input", 0).dim() >= 4 else None


def _lstm_policy(args, kwargs):
    """On CPU, torch.lstm runs oneDNN's LSTM, one mkldnn_rnn_layer (lower) per layer and direction, for a padded
    non-empty float32 or bfloat16 input without projections (RNN.cpp's use_mkldnn): all of it, states included, in
    the lower precision. Packed input and projections take the generic recurrence, whose linears are cast."""
    if len(args) < 2 or isinstance(args[1], Tensor):   # the packed form: (data, batch_sizes, hx, ...)
        return None
    input, hx = args[0], args[1]
    if hx[0].shape[-1] != hx[1].shape[-1] or input.numel() == 0:
        return None
    return "lower" if input.dtype in (_dtype.float32, getattr(_dtype, "bfloat16", _dtype.float32)) else None


# ember's composites whose PyTorch counterparts reach a listed op through the dispatcher (so autocast applies
# to them there), under that op's policy or a function of the call's arguments that gives it (None: the call
# reaches no listed op). Two policies for composites that reach an fp32 op first and then a matmul (lower): ember runs
# them in float32 and casts a float32 result to the autocast dtype: "fp32_lower" casts the inputs to float32 first
# (matrix_power with n <= -2: linalg_inv), "lower_out" not (linalg.pinv refuses float16 before its SVD).
# "unlisted": ember's op calls a listed op where PyTorch's kernel calls an unlisted one (torch.convolution reaches
# the unlisted overload of _convolution, ember's conv1d/2d/3d): its body runs with autocast excluded, uncast.
ROUTES = {"einsum": _einsum_policy, "tensordot": "lower", "inner": _inner_policy, "linalg.multi_dot": "lower",
          "chain_matmul": _chain_matmul_policy, "linalg.matrix_power": _matrix_power_policy,
          "matrix_power": _matrix_power_policy, "cov": "lower", "corrcoef": "lower", "F.affine_grid": "lower",
          "linalg.pinv": "lower_out", "hstack": "promote", "vstack": "promote", "dstack": "promote",
          "column_stack": "promote", "row_stack": "promote",
          "F.pad": _pad_policy, "max_pool3d": _max_pool3d_policy, "F.max_pool3d": _max_pool3d_policy,
          "F.mse_loss": _unweighted_loss, "F.l1_loss": _unweighted_loss,
          "F.local_response_norm": _local_response_norm_policy, "lstm": _lstm_policy,
          "convolution": "unlisted"}


# ----- casting -----------------------------------------------------------------------------------------------

def _eligible(t) -> bool:
    """PyTorch's is_eligible for CPU autocast: a floating (not float64) CPU tensor."""
    return (isinstance(t, Tensor) and t.is_floating_point() and t.dtype is not _dtype.float64
            and t.device.type == "cpu")


def _cached_cast(to, t, lower):
    """``t`` cast to ``to`` if eligible (PyTorch's cached_cast): float32 leaves that require grad are cast once
    per region, the cast made with grad enabled so that it can serve in any grad mode."""
    if not _eligible(t) or t.dtype is to:
        return t
    st = _state
    if (to is lower and t.dtype is _dtype.float32 and t.requires_grad and t.grad_fn is None and t._base is None
            and st.cache_enabled and not is_inference_mode_enabled()):
        hit = st.cache.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        with enable_grad():
            c = t.to(to)
        st.cache[id(t)] = (t, c)
        return c
    return t.to(to)


def _tensors(args, kwargs):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a
    yield from kwargs.values()


def _promote_dtype(args, kwargs, lower):
    """PyTorch's promote_type: the autocast dtype, float32 if any eligible argument is float32."""
    current = lower
    for t in _tensors(args, kwargs):
        if not _eligible(t):
            continue
        d = t.dtype
        if d is _dtype.float32 or current is _dtype.float32:
            current = _dtype.float32
        elif not (current is lower and d is lower):
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current


def _cast_all(args, kwargs, to, lower):
    def one(a):
        if isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a):
            return type(a)(_cached_cast(to, x, lower) for x in a)
        return _cached_cast(to, a, lower)
    return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}


def _runner(orig: Callable, policy) -> Callable:
    """The body a listed op runs while autocast is on: cast per ``policy``, then the op with autocast excluded."""
    def run(args, kwargs):
        st = _state
        if st.excluded or not st.enabled.get("cpu", False):
            return orig(*args, **kwargs)
        # an out= call is another ATen overload (mm.out, ...), which no autocast list names: nothing is cast
        p = "unlisted" if kwargs.get("out") is not None else policy(args, kwargs) if callable(policy) else policy
        if p is None:   # a mode of the op that reaches no listed op (F.pad's constant mode)
            return orig(*args, **kwargs)
        lower = get_autocast_dtype("cpu")
        if p == "unlisted":
            pass
        elif p != "lower_out":
            to = (lower if p == "lower" else _dtype.float32 if p[:4] == "fp32" else
                  _promote_dtype(args, kwargs, lower))
            args, kwargs = _cast_all(args, kwargs, to, lower)
        st.excluded += 1
        try:
            out = orig(*args, **kwargs)
        finally:
            st.excluded -= 1
        if p in ("lower_out", "fp32_lower") and isinstance(out, Tensor) and out.dtype is _dtype.float32:
            out = out.to(lower)
        return out
    return run


# ----- swapping the listed functions' code in and out ----------------------------------------------------------

def _entry_code(code: types.CodeType) -> types.CodeType:
    """The code of an entry with the parameters of ``code`` (so that a call that does not bind fails in the caller's
    frame with Python's own message, as the original's would), plus a keyword-only ``_ember_autocast_run`` that
    receives the bound arguments as ``(args, kwargs)``, and as many unused free variables as ``code`` has (a
    function's ``__code__`` may only be replaced by code with as many free variables as its closure has cells)."""
    npos, nkw, names = code.co_argcount, code.co_kwonlyargcount, code.co_varnames
    pos, kwonly = names[:npos], names[npos:npos + nkw]
    i = npos + nkw
    star = names[i] if code.co_flags & inspect.CO_VARARGS else None
    dstar = names[i + bool(star)] if code.co_flags & inspect.CO_VARKEYWORDS else None
    nposonly = code.co_posonlyargcount
    params = list(pos[:nposonly]) + (["/"] if nposonly else []) + list(pos[nposonly:])
    params += [f"*{star}" if star else "*"] + list(kwonly) + ["_ember_autocast_run"] + ([f"**{dstar}"] if dstar else [])
    args = "(" + "".join(f"{p}, " for p in pos) + ")" + (f" + {star}" if star else "")
    kwargs = "{" + "".join(f"{k!r}: {k}, " for k in kwonly) + (f"**{dstar}" if dstar else "") + "}"
    cells = [f"_ember_cell{j}" for j in range(len(code.co_freevars))]
    src = (f"def _outer({', '.join(cells)}):\n"
           f"    def entry({', '.join(params)}):\n"
           + (f"        ({', '.join(cells)},)\n" if cells else "") +
           f"        return _ember_autocast_run({args}, {kwargs})\n"
           f"    return entry\n")
    ns: dict = {}
    exec(compile(src, "<ember autocast entry>", "exec"), ns)   # noqa: S102  (built from a code object's names)
    entry = ns["_outer"](*range(len(cells))).__code__
    rename = {"co_name": code.co_name}
    if hasattr(code, "co_qualname"):   # Python 3.11+
        rename["co_qualname"] = code.co_qualname
    return entry.replace(**rename)


class _Swap:
    """One listed function: its own code, and the entry's (same defaults, one keyword-only default more)."""

    __slots__ = ("fn", "code", "kwdefaults", "entry", "entry_kwdefaults")

    def __init__(self, fn: types.FunctionType, policy):
        self.fn = fn
        self.code, self.kwdefaults = fn.__code__, fn.__kwdefaults__
        orig = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        orig.__kwdefaults__ = fn.__kwdefaults__
        orig.__dict__.update(fn.__dict__)
        self.entry = _entry_code(fn.__code__)
        self.entry_kwdefaults = {**(fn.__kwdefaults__ or {}), "_ember_autocast_run": _runner(orig, policy)}

    def on(self) -> None:
        self.fn.__code__, self.fn.__kwdefaults__ = self.entry, self.entry_kwdefaults

    def off(self) -> None:
        self.fn.__code__, self.fn.__kwdefaults__ = self.code, self.kwdefaults


_SWAPS: list | None = None
_swapped = [False]


_ATEN_RNN = ("rnn_tanh", "rnn_relu", "lstm", "gru", "rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell")


def _lookup(path: str) -> list:
    """The function objects a public name calls: 'mm' -> torch.mm and Tensor.mm, 'F.pad', 'linalg.inv', ..."""
    if path.startswith("F."):
        found = [SUBMODULES["nn.functional"].get(path[2:])]
    elif "." in path:
        mod, _, name = path.partition(".")
        table = SUBMODULES.get(mod)
        if table is None:
            try:
                table = vars(importlib.import_module(f"{__package__.rpartition('.')[0]}.{mod}"))
            except ImportError:
                table = {}
        found = [table.get(name)]
    else:
        found = [EXPORTS.get(path), SUBMODULES["nn.functional"].get(path), METHODS.get(path)]
        if path in _ATEN_RNN:   # torch.lstm, ...: the layers' recurrences, exported beside the registry's ops
            found.append(getattr(importlib.import_module(f"{__package__.rpartition('.')[0]}.nn._aten_rnn"), path))
    out = []
    for f in found:
        # the registry's argument-error wrapper only forwards to the function: swap that function
        while isinstance(f, types.FunctionType) and getattr(f, "_ember_public", None) is not None and \
                getattr(f, "__wrapped__", None) is not None and f.__code__ is not f.__wrapped__.__code__:
            f = f.__wrapped__
        if isinstance(f, types.FunctionType):
            out.append(f)
    return out


def _paths(aten: str) -> tuple:
    if aten.startswith(("linalg_", "fft_")):
        mod, _, name = aten.partition("_")
        return (f"{mod}.{name}",)
    return (aten,) + ATEN_NAMES.get(aten, ())


def listed_ops() -> dict:
    """Every ember function autocast swaps, with its policy ('lower', 'fp32', 'promote', None or a function of the
    call's arguments), keyed by the public name it was found under."""
    table: dict = {}
    for names, policy in ((LOWER, "lower"), (FP32, "fp32"), (PROMOTE, "promote")):
        for aten in names:
            for path in _paths(aten):
                table[path] = policy
    table.update(ROUTES)
    return table


def _build() -> list:
    found: dict = {}   # id(function) -> (function, policy); a ROUTES entry overrides the lists' policy
    for path, policy in listed_ops().items():
        for fn in _lookup(path):
            found[id(fn)] = (fn, policy)
    return [_Swap(fn, policy) for fn, policy in found.values()]


def _sync_swap(on: bool) -> None:
    """Swap the listed ops in (``on``) or out; called with ``_lock`` held when a thread turns CPU autocast on/off."""
    global _SWAPS
    if on == _swapped[0]:
        return
    if _SWAPS is None:
        _SWAPS = _build()
    for s in _SWAPS:
        s.on() if on else s.off()
    _swapped[0] = on
    code_swaps[0] += 1
