"""ember.nn: Module and its layers, Parameter/Buffer, ``functional``, ``init`` and ``utils``.

Layers are imported on first use (PEP 562 ``__getattr__``), so ``import ember`` stays fast.
"""
from __future__ import annotations

import importlib

from . import functional
from .parameter import Buffer, Parameter

# public name -> the module of ember.nn that defines it
_LAZY: dict[str, str] = {}


def _family(module: str, *names: str) -> None:
    for n in names:
        _LAZY[n] = module


_family("modules.module", "Module")
_family("modules.container", "Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict")
_family("modules.linear", "Identity", "Linear", "Bilinear")
_family("modules.linear", "LazyLinear")
_family("modules.conv", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
        "LazyConvTranspose3d")
_family("modules.batchnorm", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d")
_family("modules.instancenorm", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d")
_family("modules.flatten", "Flatten", "Unflatten")
_family("modules.activation", "Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh",
        "SiLU", "Mish", "Hardswish", "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink", "LeakyReLU", "LogSigmoid",
        "Softplus", "Softshrink", "PReLU", "Softsign", "Tanhshrink", "Softmin", "Softmax", "Softmax2d",
        "LogSoftmax", "MultiheadAttention")
_family("modules.loss", "L1Loss", "NLLLoss", "PoissonNLLLoss", "GaussianNLLLoss", "KLDivLoss", "MSELoss", "BCELoss",
        "BCEWithLogitsLoss", "HingeEmbeddingLoss", "MultiLabelMarginLoss", "SmoothL1Loss", "HuberLoss",
        "SoftMarginLoss", "CrossEntropyLoss", "MultiLabelSoftMarginLoss", "CosineEmbeddingLoss",
        "MarginRankingLoss", "MultiMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss", "CTCLoss",
        "NLLLoss2d")
_family("modules.dropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout")
_family("modules.conv", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
_family("modules.pooling", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
        "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
        "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d",
        "MaxUnpool3d")
_family("modules.normalization", "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm", "CrossMapLRN2d")
_family("modules.batchnorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm")
_family("modules.instancenorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d")
_family("modules.sparse", "Embedding", "EmbeddingBag")
_family("modules.distance", "PairwiseDistance", "CosineSimilarity")
_family("modules.padding", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
        "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
        "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d")
_family("modules.pixelshuffle", "PixelShuffle", "PixelUnshuffle")
_family("modules.channelshuffle", "ChannelShuffle")
_family("modules.upsampling", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d")
_family("modules.fold", "Fold", "Unfold")
_family("modules.adaptive", "AdaptiveLogSoftmaxWithLoss")
_family("modules.rnn", "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell")
_family("parallel.data_parallel", "DataParallel")
_family("modules.transformer", "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
        "TransformerDecoderLayer")

_SUBMODULES = ("init", "utils", "modules", "parallel", "attention")


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    mod = _LAZY.get(name)
    if mod is not None:
        value = globals()[name] = getattr(importlib.import_module(f".{mod}", __name__), name)
        return value
    raise AttributeError(f"module 'ember.nn' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))


def factory_kwargs(kwargs: dict | None) -> dict:
    """The factory arguments (device, dtype, memory_format) in ``kwargs``, checked, as a dict for ``empty(...)``;
    a ``factory_kwargs`` entry supplies them under that name (PyTorch's torch.nn.factory_kwargs)."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in simple_keys:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r


__all__ = ["Parameter", "Buffer", "functional", "factory_kwargs", *_LAZY]
