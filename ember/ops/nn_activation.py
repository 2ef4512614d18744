"""The op table, torch.nn.functional: activations, softmax family, linear/bilinear/embedding/one_hot, dropout.

Registered with ``submodule="nn.functional"`` (``ember.nn.functional.<name>``); kernels in
``ember/_numpy_nn.py`` (or a file of this family's own, re-exported there).
"""
from __future__ import annotations
