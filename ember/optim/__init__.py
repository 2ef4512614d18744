"""ember.optim: PyTorch's optimizers and learning-rate schedulers (``torch.optim``).

The submodules load on first use, so ``import ember`` stays fast.
"""
import importlib

_WHERE = {
    "Optimizer": "optimizer", "SGD": "sgd", "Adam": "adam", "AdamW": "adamw", "RMSprop": "rmsprop",
    "Adagrad": "adagrad", "Adadelta": "adadelta", "Adamax": "adamax", "NAdam": "nadam", "RAdam": "radam",
    "ASGD": "asgd", "Rprop": "rprop", "LBFGS": "lbfgs", "Adafactor": "adafactor",
}
_SUBMODULES = ("optimizer", "sgd", "adam", "adamw", "rmsprop", "adagrad", "adadelta", "adamax", "nadam", "radam",
               "asgd", "rprop", "lbfgs", "adafactor",
               "lr_scheduler", "swa_utils")

__all__ = list(_WHERE) + ["lr_scheduler", "swa_utils"]


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module("." + _WHERE[name], __name__), name)
    if name in _SUBMODULES:
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ember.optim' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))
