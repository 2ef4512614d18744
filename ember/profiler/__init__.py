"""torch.profiler: ``profile`` (with ``schedule``, ``on_trace_ready`` and ``step``), ``record_function``,
``tensorboard_trace_handler``, ``ProfilerActivity``, ``ProfilerAction``; built on ``ember.autograd.profiler``.

ember records CPU activity: its ops (named as PyTorch's ATen ops), its backward nodes and ``record_function``
regions. The device activities are accepted and record nothing, with PyTorch's warning.
"""
from __future__ import annotations

import os
from typing import Any

from ..autograd.profiler import KinetoStepTracker, ProfilerActivity, kineto_available, record_function
from ..autograd.profiler_util import DeviceType
from ..optim.optimizer import Optimizer, register_optimizer_step_post_hook
from .profiler import (_KinetoProfile, ProfilerAction, RecordScope, is_fbcode, profile, schedule,  # noqa: F401
                       supported_activities, tensorboard_trace_handler)

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler", "ProfilerAction",
           "ProfilerActivity", "kineto_available", "DeviceType", "record_function"]


def _optimizer_post_hook(optimizer: Optimizer, args: tuple, kwargs: dict[str, Any]) -> None:
    KinetoStepTracker.increment_step("Optimizer")


if os.environ.get("KINETO_USE_DAEMON", ""):   # as PyTorch: optimizer steps advance the profiler's step count
    _ = register_optimizer_step_post_hook(_optimizer_post_hook)
