"""torch.distributed's exception classes and its message for a program that never made a process group (light:
ember.distributed's package and ember.nn.parallel import it without loading the rest)."""
from __future__ import annotations

_NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."


class DistError(RuntimeError):
    """torch.distributed.DistError: an error of the distributed library."""


class DistBackendError(DistError):
    """torch.distributed.DistBackendError: an error of the transport (a timeout, a dead peer)."""


class DistNetworkError(DistError):
    pass


class DistStoreError(DistError):
    pass
