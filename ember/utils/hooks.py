"""``torch.utils.hooks``: the handle every ``register_*hook`` returns."""
from .._hooks import RemovableHandle

__all__ = ["RemovableHandle"]
