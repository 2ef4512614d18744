"""The op table, torch.nn.functional: losses.

Registered with ``submodule="nn.functional"`` (``ember.nn.functional.<name>``); kernels in
``ember/_numpy_nn.py`` (or a file of this family's own, re-exported there).
"""
from __future__ import annotations
