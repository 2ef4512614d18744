"""ember.nn.functional (torch.nn.functional): every function is registered in its family file
(``ember/ops/nn_*.py``) with ``submodule="nn.functional"``."""
from __future__ import annotations

from ..ops._registry import SUBMODULES as _SUBMODULES

globals().update(_SUBMODULES["nn.functional"])
