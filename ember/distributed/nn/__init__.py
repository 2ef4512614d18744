"""torch.distributed.nn: collectives that autograd differentiates (``functional``)."""
from . import functional  # noqa: F401
from .functional import all_gather, all_reduce, broadcast  # noqa: F401

__all__ = ["functional", "all_gather", "all_reduce", "broadcast"]
