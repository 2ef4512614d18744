"""NumPy kernels of torch.nn.functional's primitives (part of the raw namespace ``_numpy_ns``).

Each nn family keeps its kernels in a file of its own (``_numpy_nn_<family>.py``), imported here."""
from __future__ import annotations

from ._numpy_nn_activation import *  # noqa: F401,F403
from ._numpy_nn_conv import *  # noqa: F401,F403
from ._numpy_nn_conv2 import *  # noqa: F401,F403
from ._numpy_nn_loss import *  # noqa: F401,F403
from ._numpy_nn_norm import *  # noqa: F401,F403
