"""ember.testing: PyTorch's ``torch.testing`` -- ``assert_close``, ``make_tensor`` and the deprecated
``assert_allclose`` (``FileCheck`` is TorchScript's and is not built)."""
from ._comparison import assert_allclose, assert_close
from ._creation import make_tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]
