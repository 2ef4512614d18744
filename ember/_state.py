"""The autograd modes' state: grad mode and inference mode (thread-local), and the forward-AD level.

A module of its own, below Tensor and the ops, so that both can read it; ``ember.autograd.grad_mode``
and ``forward_ad`` are the public ways to change it.
"""
from __future__ import annotations

import threading


class _State(threading.local):
    def __init__(self):
        self.enabled = True
        self.inference = False


_state = _State()


class _ForwardADState:
    """``level > 0`` inside ``forward_ad.dual_level()``, where ops propagate tangents."""

    level = 0


fwd_state = _ForwardADState()
