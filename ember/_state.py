"""The autograd modes' state: grad mode and inference mode (thread-local), and the forward-AD level.

A module of its own, below Tensor and the ops, so that both can read it; ``ember.autograd.grad_mode``
and ``forward_ad`` are the public ways to change it.
"""
from __future__ import annotations

import threading
import weakref


class _State(threading.local):
    def __init__(self):
        self.enabled = True
        self.inference = False


_state = _State()


class _ForwardADState:
    """``level > 0`` inside ``forward_ad.dual_level()``, where ops propagate tangents.

    ``tensors`` holds weak references to every tensor given a tangent at this level, so that leaving
    the level takes all their tangents away (PyTorch: tangents do not outlive their level)."""

    level = 0
    tensors: list = []


fwd_state = _ForwardADState()


def track_tangent(t) -> None:
    """Record that tensor ``t`` got a tangent at the current level (forward mode only: not the hot path)."""
    fwd_state.tensors.append(weakref.ref(t))


# Bumped by every swapper of functions' code other than vmap's (autocast regions, the profiler): vmap's swap reuses
# the codes it saved at its previous install only while this count has not moved (ember/autograd/_batching.py)
code_swaps = [0]

# Set by ember.compile at import: called by the modules PyTorch's dynamo graph-breaks on (RNN, GRU, LSTM) with the
# module, so that a trace running through one stops there (a no-op when nothing traces)
module_break = [None]

# How many torch.func transforms (vmap, grad, vjp, jvp, ...) are running: Tensor.requires_grad_ is refused inside one,
# as PyTorch's (ember/autograd/_batching.py counts them).
func_depth = [0]
FUNC_RETAIN_GRAD = (
    "You are attempting to call Tensor.retain_grad() inside of a function being transformed by a functorch "
    "transform. This is unsupported, please attempt to use the functorch transforms (e.g. grad, vjp, jacrev, jacfwd, "
    "hessian) or call retain_grad() outside of a function being transformed instead.")
# Called with a tensor made a leaf that requires grad inside a transform (``t.requires_grad = True``, a factory's
# ``requires_grad=True``): it becomes a leaf of the innermost transform's level (ember/autograd/_levels.py sets it).
func_new_leaf: list = [None]
# ``Tensor.requires_grad`` of a tensor that requires grad, read inside a transform: what the innermost transform's
# level sees (ember/autograd/_levels.py sets it).
func_requires_grad: list = [None]
FUNC_REQUIRES_GRAD = (
    "You are attempting to call Tensor.requires_grad_() (or perhaps using torch.autograd.functional.* APIs) inside of a "
    "function being transformed by a functorch transform. This is unsupported, please attempt to use the functorch "
    "transforms (e.g. grad, vjp, jacrev, jacfwd, hessian) or call requires_grad_() outside of a function being "
    "transformed instead.")
