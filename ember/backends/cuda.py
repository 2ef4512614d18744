"""torch.backends.cuda: settable flags with PyTorch's defaults; ember has no CUDA backend."""
from __future__ import annotations

from enum import Enum
from typing import Any


class _Matmul:
    """``torch.backends.cuda.matmul``: plain settable attributes."""

    def __init__(self) -> None:
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __repr__(self) -> str:
        return "<ember.backends.cuda.matmul>"


matmul = _Matmul()

# Scaled-dot-product-attention backends (the *_sdp switches below, ember.nn.attention.sdpa_kernel). ember has one
# kernel, the math path; ops.nn_norm.scaled_dot_product_attention refuses where PyTorch's CPU dispatch (flash or
# math) would find no kernel, and otherwise computes with it.
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True, "overrideable": True}
_sdp_priority = [1, 2, 0, 3, 4]   # SDPBackend values in PyTorch's default order



def is_built() -> bool:
    return False


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = enabled


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = enabled


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = enabled


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdp["cudnn"] = enabled


class SDPBackend(Enum):
    """The scaled-dot-product-attention kernels PyTorch can choose from (ember computes every one with its
    math kernel; see ``ember.nn.attention.sdpa_kernel``).  As PyTorch's (a C++ enum), a member converts with
    ``int()`` but is not equal to its int."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __str__(self) -> str:
        return f"SDPBackend.{self.name}"

    def __int__(self) -> int:
        return self.value

    __index__ = __int__

    def __hash__(self) -> int:
        return hash(self.value)


class SDPAParams:
    """The arguments of one ``scaled_dot_product_attention`` call, as the ``can_use_*`` checks take them."""

    def __init__(self, query: Any, key: Any, value: Any, attn_mask: Any, dropout: float, is_causal: bool,
                 enable_gqa: bool) -> None:
        self.query, self.key, self.value, self.attn_mask = query, key, value, attn_mask
        self.dropout, self.is_causal, self.enable_gqa = dropout, is_causal, enable_gqa


def can_use_flash_attention(params: SDPAParams, debug: bool = False) -> bool:
    """False: flash attention is a CUDA kernel (PyTorch's CPU build also answers False, without warnings)."""
    return False


def can_use_efficient_attention(params: SDPAParams, debug: bool = False) -> bool:
    """False: memory-efficient attention is a CUDA kernel (as PyTorch's CPU build answers)."""
    return False


def can_use_cudnn_attention(params: SDPAParams, debug: bool = False) -> bool:
    """False: cuDNN attention is a CUDA kernel (as PyTorch's CPU build answers)."""
    return False
