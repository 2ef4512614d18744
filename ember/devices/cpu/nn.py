"""NumPy kernels of torch.nn.functional's primitives (part of the raw namespace ``ember.devices.cpu.namespace``).

Each nn family keeps its kernels in a file of its own (``nn_<family>.py``), imported here."""
from __future__ import annotations

from .nn_activation import *  # noqa: F401,F403
from .nn_conv import *  # noqa: F401,F403
from .nn_pool import *  # noqa: F401,F403
from .nn_pad import *  # noqa: F401,F403
from .nn_resample import *  # noqa: F401,F403
from .nn_grid import *  # noqa: F401,F403
from .nn_loss import *  # noqa: F401,F403
from .nn_norm import *  # noqa: F401,F403
